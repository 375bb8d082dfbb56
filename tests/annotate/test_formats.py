"""Readers for released annotation formats (fixtures: tests/fixtures/annotate/, made by
make_annotate_fixtures.py with hand-written values)."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.annotate import (
    SCALES_TRANSECTS,
    AnnotationStore,
    read_sagemaker,
    read_transects_pkl,
    read_votes_csv,
    score,
    votes_matrix,
)

FIX = Path(__file__).parents[1] / "fixtures" / "annotate"
GENDER = FIX / "sagemaker" / "gender"


def _fixture_module():
    spec = importlib.util.spec_from_file_location("make_annotate_fixtures",
                                                  FIX / "make_annotate_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def sm_copy(tmp_path):
    """A writable copy of the SageMaker folder, to break."""
    dst = tmp_path / "gender"
    shutil.copytree(GENDER, dst)
    return dst


def test_fixtures_are_what_the_script_writes(tmp_path):
    mod = _fixture_module()
    fresh = mod.write_sagemaker(tmp_path)
    for f in sorted(p for p in GENDER.rglob("*") if p.is_file()):
        assert (fresh / f.relative_to(GENDER)).read_bytes() == f.read_bytes(), f
    assert (FIX / "votes.csv").read_text() == mod.CSV


def test_read_sagemaker_votes_and_scale():
    votes, scale = read_sagemaker(GENDER)
    assert scale.name == "gender" and scale.levels == SCALES_TRANSECTS["gender"].levels
    assert list(votes.columns) == ["annotator", "item_id", "question", "value"]
    assert votes["value"].dtype == np.int64
    # image 0000 (manifest line 0) has answers in two iteration folders: 3 + 2 votes
    first = votes[votes["item_id"] == "0000"]
    assert first["annotator"].tolist() == ["W1", "W2", "W3", "W4", "W5"]
    assert first["value"].tolist() == [4, 3, 4, 4, 2]
    assert votes[votes["item_id"] == "0001"]["value"].tolist() == [0, 0, 1, 0, 0]
    assert votes[votes["item_id"] == "0002"]["value"].tolist() == [2, 3, 2, 1, 2]
    assert set(votes["question"]) == {"gender"}
    ids, m = votes_matrix(votes, "gender")
    assert ids.tolist() == ["0000", "0001", "0002"]
    # trimmed scores: mean(4,4,3)/4, mean(0,0,0)/4, mean(2,2,2)/4
    np.testing.assert_allclose(score(m, scale.k), [11 / 12, 0.0, 0.5])
    votes2, scale2 = read_sagemaker(GENDER, attribute="perceived_gender")
    assert set(votes2["question"]) == {"perceived_gender"} and scale2.name == "perceived_gender"


def test_read_sagemaker_dash_names(tmp_path):
    shutil.copytree(GENDER, tmp_path / "skin-color")
    votes, scale = read_sagemaker(tmp_path / "skin-color")
    assert set(votes["question"]) == {"skin_color"} and scale.name == "skin_color"


def test_read_sagemaker_errors(sm_copy):
    resp = sm_copy / "annotations" / "worker-response" / "iteration-1" / "1"
    f = next(resp.glob("*.json"))
    data = json.loads(f.read_text())
    data["answers"][2]["answerContent"]["crowd-image-classifier"]["label"] = "Mostly male"
    f.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"(?s)2020-03-01_11-00-00\.json.*unknown label 'Mostly male'"):
        read_sagemaker(sm_copy)
    f.write_text('{"answers": [')
    with pytest.raises(ValueError, match=r"2020-03-01_11-00-00\.json: malformed JSON"):
        read_sagemaker(sm_copy)
    f.write_text(json.dumps({"answers": [{"answerContent": {}}]}))
    with pytest.raises(ValueError, match="lacks workerId"):
        read_sagemaker(sm_copy)
    f.unlink()
    (sm_copy / "annotations" / "worker-response" / "iteration-1" / "7").mkdir()
    (sm_copy / "annotations" / "worker-response" / "iteration-1" / "7" / "x.json").write_text(
        '{"answers": []}')
    with pytest.raises(ValueError, match="index 7 but the manifest has 3"):
        read_sagemaker(sm_copy)
    (sm_copy / "manifests" / "output" / "output.manifest").write_text('{"source-ref": "a.jpg"}\n{oops\n')
    with pytest.raises(ValueError, match=r"output\.manifest: line 2: malformed JSON"):
        read_sagemaker(sm_copy)
    (sm_copy / "annotation-tool" / "data.json").unlink()
    with pytest.raises(FileNotFoundError, match="data.json"):
        read_sagemaker(sm_copy)
    with pytest.raises(FileNotFoundError, match="not found"):
        read_sagemaker(sm_copy.parent / "nope")


def test_read_votes_csv_and_import_into_store(tmp_path):
    votes = read_votes_csv(FIX / "votes.csv", SCALES_TRANSECTS)
    assert votes["item_id"].tolist() == ["0001", "0002", "0001", "0001", "0003", "0002"]
    assert votes["value"].tolist() == [4, 0, 3, 4, 5, 1]     # 'Broad smile' -> 4
    assert votes["value"].dtype == np.int64
    assert votes["time"].iloc[1] == 1583056801.5 and np.isnan(votes["time"].iloc[5])
    with AnnotationStore(tmp_path / "s.sqlite") as store:
        store.add_items(pd.DataFrame({"item_id": ["0001", "0002", "0003"], "kind": "image"}))
        assert store.add_votes(votes, SCALES_TRANSECTS, source="imported") == 6
        back = store.votes()
        assert back["vote_id"].tolist() == ["c1", "c2", "c3", "c4", "c5", "c6"]
        assert (back["source"] == "imported").all()
        assert back["time"].iloc[0] == 1583056800.0


def test_read_votes_csv_errors(tmp_path):
    p = tmp_path / "v.csv"
    p.write_text("annotator,item_id,value\na,1,2\n")
    with pytest.raises(ValueError, match="column 'question' not found"):
        read_votes_csv(p)
    p.write_text("annotator,item_id,question,value\na,1,gender,2\na,1,gender,2.5\n")
    with pytest.raises(ValueError, match="line 3: value '2.5'"):
        read_votes_csv(p)
    p.write_text("annotator,item_id,question,value\na,1,gender,Male\n")
    with pytest.raises(ValueError, match="line 2"):
        read_votes_csv(p)                       # level names need scales
    assert read_votes_csv(p, SCALES_TRANSECTS)["value"].tolist() == [4]
    p.write_text("annotator,item_id,question,value\na,1,gender,5\n")
    with pytest.raises(ValueError, match="line 2: value 5 outside"):
        read_votes_csv(p, SCALES_TRANSECTS)
    p.write_text("annotator,item_id,question,value\n,1,gender,1\n")
    with pytest.raises(ValueError, match="line 2: empty annotator"):
        read_votes_csv(p)
    with pytest.raises(FileNotFoundError):
        read_votes_csv(tmp_path / "missing.csv")


def test_read_transects_pkl():
    votes = read_transects_pkl(FIX / "annotations.pkl")
    src = _fixture_module().PKL
    assert set(votes["question"]) == {"facial_hair", "gender"}
    scales = votes.attrs["scales"]
    assert scales["facial_hair"].levels == ("None", "Minimal", "Regular", "Heavy")
    for attr, resp in zip(src["attributes"], src["responses"], strict=True):
        ids, m = votes_matrix(votes, attr.replace("-", "_"))
        assert ids.tolist() == ["0000", "0001", "0002"]
        np.testing.assert_array_equal(m, resp)
    g = votes[votes["question"] == "gender"]
    assert g["annotator"].tolist()[:5] == ["slot0", "slot1", "slot2", "slot3", "slot4"]
    # the authors' trimmed score on this format
    _, m = votes_matrix(votes, "gender")
    np.testing.assert_allclose(score(m, 5), [(3 + 4 + 4) / 3 / 4, 0.0, 2 / 4])


def test_read_transects_pkl_errors(tmp_path):
    bad = tmp_path / "bad.pkl"
    src = _fixture_module().PKL
    bad.write_bytes(pickle.dumps({k: v for k, v in src.items() if k != "responses"}))
    with pytest.raises(ValueError, match="'responses' missing"):
        read_transects_pkl(bad)
    broken = dict(src, responses=[src["responses"][0], src["responses"][1] + 1])  # gender 5
    bad.write_bytes(pickle.dumps(broken))
    with pytest.raises(ValueError, match="gender.*0..4"):
        read_transects_pkl(bad)
    bad.write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="not a readable pickle"):
        read_transects_pkl(bad)


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_read_transects_pkl_refuses_code(tmp_path):
    """A pickle naming any global besides numpy's array rebuilders is refused, unexecuted."""
    bad = tmp_path / "evil.pkl"
    bad.write_bytes(pickle.dumps({"attributes": ["age"], "responses": [_Boom()],
                                  "attribute_levels": [["a", "b"]]}))
    with pytest.raises(ValueError, match="refusing to load .*system"):
        read_transects_pkl(bad)
    # numpy arrays, in both pickle protocols, still load
    for proto in (2, 5):
        ok = tmp_path / f"ok{proto}.pkl"
        ok.write_bytes(pickle.dumps({"attributes": ["age"], "responses": [np.array([[0, 1], [2, 3]])],
                                     "attribute_levels": [list("abcdef")]}, protocol=proto))
        assert list(read_transects_pkl(ok)["value"]) == [0, 1, 2, 3]
