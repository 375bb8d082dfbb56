"""The rapid test's image path (paper 001): folders of photos -> scores tables
(:mod:`facebias.studies.rapid.images`), with its near-duplicate and cross-query pair steps."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.datasets.rapid import SCORES_COLUMNS, load_names, validate_scores
from facebias.studies.rapid.images import (
    cross_query_pairs,
    duplicate_groups,
    image_folder_scores,
    image_folder_study,
    perceptual_hash,
)

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "rapid"


def test_cross_query_pairs_match_within_counts_per_group():
    faces = pd.DataFrame({"face": [f"f{i}" for i in range(30)],
                          "query": np.repeat(["q0", "q1", "q2", "q3", "q4"], 6),
                          "group": np.repeat(["g1", "g1", "g1", "g2", "g2"], 6)})
    pairs = cross_query_pairs(faces, seed=2022)
    # g1: 3 queries x 15 within pairs = 45; g2: 2 x 15 = 30
    assert pairs.groupby("group").size().to_dict() == {"g1": 45, "g2": 30}
    assert (pairs["query"] != pairs["query_b"]).all()
    owner = faces.set_index("face")
    assert (owner.loc[pairs["face_a"], "group"].to_numpy() == owner.loc[pairs["face_b"], "group"].to_numpy()).all()
    assert pairs.equals(cross_query_pairs(faces, seed=2022))
    assert not pairs.equals(cross_query_pairs(faces, seed=1))


def test_duplicate_groups_link_any_hash_kind():
    h = np.zeros((2, 4, 63), bool)
    h[0, 1, :2] = True  # 0 ~ 1 by the first kind (2 bits)
    h[1, 2, :] = True  # 2 far from all in kind 1
    h[0, 2, :] = True
    h[1, 3, :3] = True  # 3 ~ 0, 1 by the second kind (3 bits), not by the first
    h[0, 3, 10:] = True
    labels = duplicate_groups(h, 3)
    assert labels[0] == labels[1] == labels[3] != labels[2]
    assert duplicate_groups(h[0], 3).tolist() == [0, 0, 1, 2]


# --------------------------------------------------------------------------- images
def _write_png(path: Path, image: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory):
    """4 rendered identities x 4 yaws, plus a flat colour, a two-face image, an exact
    duplicate, a re-encoded JPEG copy and a non-image file in the first person's folder."""
    from PIL import Image

    from facebias.generate.procedural import ProceduralGenerator

    root = tmp_path_factory.mktemp("rapid_images")
    names = load_names(FIX / "names.csv")
    gen = ProceduralGenerator(128)
    z = gen.sample(4, seed=11)
    yaws = [-30, -10, 10, 30]
    imgs = gen.synthesize(np.repeat(z, len(yaws), axis=0), yaw=np.tile(yaws, 4))
    folders = [root / "Alice Example", root / "photos" / "bea", root / "Carl Example",
               root / "Dan Example"]
    for k, folder in enumerate(folders):
        for j in range(len(yaws)):
            _write_png(folder / f"img{j}.png", imgs[k * len(yaws) + j])
    alice = folders[0]
    _write_png(alice / "flat.png", np.full((128, 128, 3), (90, 140, 200), np.uint8))
    _write_png(alice / "two_faces.png", np.concatenate([imgs[0], imgs[len(yaws) * 2 + 1]], axis=1))
    shutil.copy(alice / "img1.png", alice / "img1_copy.png")
    Image.fromarray(imgs[2]).save(alice / "img2_recoded.jpg", quality=70)
    (alice / "broken.jpg").write_bytes(b"not an image")
    (alice / "notes.txt").write_text("ignored: not an image extension")
    return names, root


@pytest.fixture(scope="module")
def study(image_tree, tmp_path_factory):
    names, root = image_tree
    cache = tmp_path_factory.mktemp("emb_cache")
    res = image_folder_study(names, root, systems=("dlib", "sface"), cache_dir=cache, min_photos=3)
    res.settings["cache"] = cache
    return res


def test_image_path_exactly_one_face_rule_and_duplicates(study):
    d = study.dropped.assign(file=study.dropped["path"].map(lambda p: Path(p).name))
    reason = dict(zip(d["file"], d["reason"], strict=True))
    stage = dict(zip(d["file"], d["stage"], strict=True))
    assert stage["flat.png"] == "detect" and reason["flat.png"].startswith("no face (yunet: 0, dlib_hog: 0)")
    assert stage["two_faces.png"] == "detect" and "not exactly one face (yunet: 2" in reason["two_faces.png"]
    assert stage["broken.jpg"] == "read" and "not an image or corrupt" in reason["broken.jpg"]
    dups = d[d["stage"] == "duplicate"]
    # the exact copy and the re-encoded JPEG are removed; their originals are kept
    assert sorted(dups["file"]) == ["img1_copy.png", "img2_recoded.jpg"]
    assert reason["img1_copy.png"].startswith("near-duplicate of img1.png")
    assert "notes.txt" not in reason
    kept = study.faces.groupby("query")["face"].apply(list).to_dict()
    assert kept["0"] == [f"0/img{j}.png" for j in range(4)]
    assert all(len(v) == 4 for v in kept.values()) and set(kept) == {"0", "1", "2", "3"}
    assert study.faces.loc[study.faces["query"] == "1", "path"].str.contains("photos/bea").all()


def test_image_path_scores_are_within_query_and_separate_identities(study):
    s = validate_scores(study.scores)
    assert list(s.columns) == list(SCORES_COLUMNS)
    assert set(s["system"]) == {"dlib", "sface"}
    assert len(s) == 2 * 4 * 6  # 2 systems x 4 queries x C(4, 2)
    assert (s["face_a"].str.split("/").str[0] == s["query"]).all()
    assert (s["face_b"].str.split("/").str[0] == s["query"]).all()
    c = validate_scores(study.cross_scores, cross=True)
    groups = study.faces.set_index("query")["group"].groupby(level=0).first()
    assert (groups[c["query"]].to_numpy() == groups[c["query_b"]].to_numpy()).all()
    assert len(c) == len(s)  # as many cross-query as within-query pairs, per group
    for system in ("dlib", "sface"):
        same = s.loc[s["system"] == system, "score"]
        diff = c.loc[c["system"] == system, "score"]
        assert same.mean() > diff.mean() + 0.02, system
        assert np.all(np.abs(study.embeddings[system] @ study.embeddings[system].T).max() <= 1.0001)


def test_image_path_reuses_the_cache_and_checks_folders(study, image_tree, tmp_path):
    names, root = image_tree
    again = image_folder_scores(names, root, systems=("sface",), cache_dir=study.settings["cache"],
                                min_photos=3)
    first = study.scores[study.scores["system"] == "sface"].reset_index(drop=True)
    pd.testing.assert_frame_equal(again, first)
    with pytest.raises(ValueError, match=r"names row 0 \(person_id '0', name 'Alice Example'\): "
                                         r"image folder .* does not exist"):
        image_folder_study(names, tmp_path, systems=("sface",), detectors=("yunet",))
    few = image_folder_study(names.iloc[2:], root, systems=("sface",), detectors=("yunet",),
                             min_photos=5)
    assert few.faces.empty and few.scores.empty
    assert few.dropped["reason"].str.contains("4 readable photos < min_photos=5").all()


def test_perceptual_hash_is_stable_under_reencoding():
    rng = np.random.default_rng(0)
    base = (rng.random((8, 8, 3)) * 255).astype(np.uint8).repeat(16, 0).repeat(16, 1)
    h = perceptual_hash(base)
    assert h.shape == (63,) and h.dtype == bool
    brighter = np.clip(base.astype(int) + 10, 0, 255).astype(np.uint8)
    assert (perceptual_hash(brighter) != h).sum() <= 2
    other = (rng.random((8, 8, 3)) * 255).astype(np.uint8).repeat(16, 0).repeat(16, 1)
    assert (perceptual_hash(other) != h).sum() > 10


# --------------------------------------------------------------------------- the paper's FaceID rules
def test_face_id_groups_spec_cases():
    """Spec item 7: three services' boxes on one face (pairwise IoU 0.5-0.6) form one group;
    two faces far apart form two groups; one service's two overlapping boxes never merge."""
    from facebias.studies.rapid.faceid import _iou, face_id_groups

    a, b, c = (0, 0, 30, 30), (5, 0, 30, 30), (0, 5, 30, 30)
    assert min(_iou(a, b), _iou(a, c), _iou(b, c)) >= 0.5
    far = [(200 + x, y, w, h) for x, y, w, h in (a, b, c)]
    g = face_id_groups([a, b, c, *far], ["S1", "S2", "S3"] * 2)
    assert g.tolist() == [0, 0, 0, 1, 1, 1]
    assert face_id_groups([a, b], ["S1", "S1"]).tolist() == [0, 1]  # same service: never merged
    assert face_id_groups([a, (25, 25, 30, 30)], ["S1", "S2"]).tolist() == [0, 1]  # IoU < 0.2


def test_face_id_groups_takes_the_largest_iou_first_and_keeps_one_box_per_service():
    from facebias.studies.rapid.faceid import _iou, face_id_groups

    a1 = (0, 0, 30, 30)
    b_near, b_far = (2, 0, 30, 30), (14, 0, 30, 30)
    assert _iou(a1, b_near) > _iou(a1, b_far) >= 0.2
    # a1 pairs with b_near (higher IoU); b_far cannot join: service B is already there
    assert face_id_groups([b_far, a1, b_near], ["B", "A", "B"]).tolist() == [0, 1, 1]


def test_face_id_groups_with_two_detectors_is_the_folder_paths_iou_rule():
    """For one box per detector, two detectors: one FaceID iff IoU >= 0.2 (brute force)."""
    from facebias.studies.rapid.faceid import _iou, face_id_groups

    rng = np.random.default_rng(0)
    for _ in range(300):
        x = rng.uniform(0, 40, (2, 2))
        wh = rng.uniform(10, 40, (2, 2))
        boxes = [tuple(np.r_[x[i], wh[i]]) for i in range(2)]
        one = face_id_groups(boxes, ["yunet", "dlib_hog"]).max() == 0
        assert one == (_iou(*boxes) >= 0.2)


def test_single_face_images_follows_algorithm_1_on_a_scripted_matcher():
    """The paper's Algorithm 1 with a matcher that answers "invalid" when either image shows
    several faces: the multi-face image is marked only once its partner is known valid,
    later pairs with it are skipped (never compared), and a first pair of two unknown images
    answered "invalid" marks nothing."""
    from facebias.studies.rapid.faceid import single_face_images

    multi = {"m"}
    calls = []

    def compare(i1, i2):
        calls.append((i1, i2))
        return "invalid" if i1 in multi or i2 in multi else 0.1 * len(calls)

    pairs = [("m", "x"), ("a", "b"), ("a", "m"), ("m", "b"), ("b", "x")]
    valid, invalid, conf = single_face_images(pairs, compare)
    assert calls == [("m", "x"), ("a", "b"), ("a", "m"), ("b", "x")]  # ("m", "b") skipped
    assert valid == {"a", "b", "x"} and invalid == {"m"}
    assert conf == {("a", "b"): pytest.approx(0.2), ("b", "x"): pytest.approx(0.4)}
    assert single_face_images([("m", "x")], compare)[:2] == (set(), set())
