"""Loader for paper 004's released annotations (processed pickle and raw SageMaker layout)."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from facebias.annotate import SCALES_TRANSECTS
from facebias.datasets import transects as D
from facebias.studies import transects as T

REPO_KEYS = {"age": "age", "facial-hair": "facial_hair", "gender": "gender",
             "hair-length": "hair_length", "makeup": "makeup", "skin-color": "skin_color",
             "smile": "smile", "uncanny": "uncanny"}
TRUE_ORDER = ("gender", "skin", "hair")  # the fixture's layout: not the loader's default


def fixture_responses(n_transects: int = 6, order=TRUE_ORDER, seed: int = 0):
    """(responses per repo key (N, 5) level indices, true cells): votes follow each image's
    cell (bit 1 = male / dark / long) with some annotator noise."""
    rng = np.random.default_rng(seed)
    n = 8 * n_transects
    cells = {}
    for pos, axis in enumerate(order):
        cells[axis] = ((np.arange(n) % 8) >> (2 - pos)) & 1
    centre = {"gender": np.where(cells["gender"] == 1, 3.7, 0.3),
              "skin-color": np.where(cells["skin"] == 1, 4.6, 0.5),
              "hair-length": np.where(cells["hair"] == 1, 3.2, 0.6)}
    resp = {}
    for key, q in REPO_KEYS.items():
        k = SCALES_TRANSECTS[q].k
        c = centre.get(key, np.full(n, rng.uniform(0, k - 1)))
        if key == "age":
            c = np.where(np.arange(n) < 8, 0.5, 3.0)  # transect 0: children
        if key == "uncanny":
            c = np.where(np.arange(n) % 16 == 15, 4.0, 0.5)  # some fakes
        resp[key] = np.clip(np.rint(c[:, None] + rng.normal(0, 0.6, (n, 5))), 0, k - 1).astype(np.int64)
    return resp, pd.DataFrame({"transect": np.arange(n) // 8, **{f"{a}_idx": v for a, v in cells.items()}})


@pytest.fixture
def pkl(tmp_path):
    resp, cells = fixture_responses()
    keys = sorted(REPO_KEYS)
    data = {"attributes": keys, "responses": [resp[k] for k in keys],
            "attribute_levels": [list(SCALES_TRANSECTS[REPO_KEYS[k]].levels) for k in keys]}
    path = tmp_path / "annotations.pkl"
    path.write_bytes(pickle.dumps(data))
    return path, resp, cells


def test_pickle_scores_are_trimmed_means(pkl):
    path, resp, _ = pkl
    s = D.load_annotations_pkl(path)
    assert list(s.index[:3]) == ["0000", "0001", "0002"] and len(s) == 48
    assert set(s.columns) == set(REPO_KEYS.values())
    for key, q in REPO_KEYS.items():
        k = SCALES_TRANSECTS[q].k
        expect = np.sort(resp[key], axis=1)[:, 1:4].mean(axis=1) / (k - 1)
        np.testing.assert_allclose(s[q].to_numpy(), expect)
    m = D.load_annotations_pkl(path, agg="mean")
    np.testing.assert_allclose(m["gender"].to_numpy(), resp["gender"].mean(axis=1) / 4)


def test_grid_cells_default_layout_hand_case():
    c = D.grid_cells([0, 5, 13, 15])
    assert c["transect"].tolist() == [0, 0, 1, 1]
    # 5 = 0b101 -> skin 1, hair 0, gender 1 (default (skin, hair, gender) order)
    assert c.loc[1, ["skin_idx", "hair_idx", "gender_idx"]].tolist() == [1, 0, 1]
    assert c.loc[3, ["skin_idx", "hair_idx", "gender_idx"]].tolist() == [1, 1, 1]
    flipped = D.grid_cells([5], polarity={"gender": -1})
    assert flipped.loc[0, "gender_idx"] == 0
    with pytest.raises(ValueError, match="permutation"):
        D.grid_cells([0], ("skin", "skin", "gender"))


def test_the_ordering_is_inferred_from_the_annotations(pkl):
    path, _, cells = pkl
    scores = D.load_annotations_pkl(path)
    table = D.infer_grid_order(scores)
    assert len(table) == 6 and tuple(table.loc[0, "ordering"]) == TRUE_ORDER
    assert table.loc[0, "score"] > 0.9 > table.loc[1, "score"]
    assert (table.loc[0, ["polarity_skin", "polarity_hair", "polarity_gender"]] == 1).all()
    kept, info = T.released_transects(scores, ordering="infer")
    assert info["ordering"] == list(TRUE_ORDER) and info["ordering_inferred"]
    truth = cells.set_index(pd.Index([f"{i:04d}" for i in range(len(cells))]))
    for axis in ("transect", "skin_idx", "hair_idx", "gender_idx"):
        assert (kept[axis] == truth.loc[kept.index, axis]).all()
    # the annotations agree with the grid wherever they are unambiguous
    assert (kept["gender_male"] == kept["gender_idx"]).all()
    assert (kept["skin_dark"] == kept["skin_idx"]).all()


def test_the_default_ordering_is_an_assumption(pkl):
    """On data laid out differently, the assumed order puts the cells in the wrong place."""
    path, _, cells = pkl
    kept, info = T.released_transects(D.load_annotations_pkl(path))
    assert info["ordering"] == list(D.DEFAULT_ORDERING) and not info["ordering_inferred"]
    assert (kept["gender_male"] != kept["gender_idx"]).any()


def test_pruning_counts_match_prune(pkl):
    path, _, _ = pkl
    scores = D.load_annotations_pkl(path)
    kept, info = T.released_transects(scores, drop_children=True)
    _, counts = T.prune(scores, drop_children=True)
    assert {k: info[k] for k in counts} == counts
    assert info["children"] > 0 and info["fake"] > 0
    assert (kept["age"] >= 0.4).all() and (kept["uncanny"] < 0.75).all()
    assert not kept["gender"].between(0.4, 0.6).any() and not kept["hair_length"].between(0.3, 0.5).any()
    _, repo = T.released_transects(scores, fakeness_rule="repo")
    assert repo["fake"] <= info["fake"]


def write_sagemaker(root, key, levels, responses):
    """One attribute folder in the authors' raw SageMaker layout."""
    d = root / key
    (d / "annotation-tool").mkdir(parents=True)
    (d / "annotation-tool" / "data.json").write_text(json.dumps({"labels": [{"label": x} for x in levels]}))
    (d / "manifests" / "output").mkdir(parents=True)
    (d / "manifests" / "output" / "output.manifest").write_text(
        "\n".join(json.dumps({"source-ref": f"s3://bucket/transects/{i:04d}.jpg"}) for i in range(len(responses))))
    for i, row in enumerate(responses):
        f = d / "annotations" / "worker-response" / "iteration-1" / str(i)
        f.mkdir(parents=True)
        answers = [{"workerId": f"w{j}", "answerContent": {"crowd-image-classifier": {"label": levels[v]}}}
                   for j, v in enumerate(row)]
        (f / "2020-01-01.json").write_text(json.dumps({"answers": answers}))


def test_sagemaker_layout_gives_the_same_scores(tmp_path, pkl):
    path, resp, _ = pkl
    root = tmp_path / "sagemaker"
    for key in ("gender", "skin-color"):
        write_sagemaker(root, key, SCALES_TRANSECTS[REPO_KEYS[key]].levels, resp[key][:16])
    s = D.load_sagemaker(root)
    ref = D.load_annotations_pkl(path).iloc[:16]
    assert list(s.index) == list(ref.index)
    np.testing.assert_allclose(s[["gender", "skin_color"]].to_numpy(), ref[["gender", "skin_color"]].to_numpy())


def test_scores_from_votes_rejects_incomplete_items():
    votes = pd.DataFrame({"annotator": ["a", "b", "a"], "item_id": ["0000", "0000", "0001"],
                          "question": "gender", "value": [0, 4, 2]})
    with pytest.raises(ValueError, match="fewer than 2 votes"):
        D.scores_from_votes(votes)
    ok = D.scores_from_votes(votes.iloc[:2], agg="mean")
    assert ok.loc["0000", "gender"] == 0.5
    with pytest.raises(ValueError, match="no scale"):
        D.scores_from_votes(votes.assign(question="mood"))
