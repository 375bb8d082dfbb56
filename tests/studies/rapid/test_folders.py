"""The rapid test on photo folders (:mod:`facebias.studies.rapid.folders`), its example folder
with a known truth (:mod:`facebias.studies.rapid.example`), and the warnings of the library's
empty or unresolved tables (``estimate_labels``, ``fnmr_table``)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.studies.rapid import RapidConfig, estimate, estimate_labels, fnmr_table
from facebias.studies.rapid.estimation import NoQueryIncludedWarning
from facebias.studies.rapid.evaluation import UnresolvedRateWarning, _fnmr_table
from facebias.studies.rapid.example import TRUTH_COLUMNS, make_example_folder
from facebias.studies.rapid.folders import (
    RapidFolderWarning,
    list_query_folders,
    rapid_folder_study,
    read_groups,
    run_rapid_folders,
)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """4 queries (2 female, 2 male) x 10 photos, 2 planted of other people in each, plus a
    near-duplicate copy in the first folder and a photo without a face in the second."""
    return make_example_folder(tmp_path_factory.mktemp("rapid_ex") / "ex", queries=4, photos=10,
                               others=2, seed=0)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("rapid_cache")


@pytest.fixture(scope="module")
def result(example, cache, tmp_path_factory):
    out = tmp_path_factory.mktemp("rapid_out")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = run_rapid_folders(example.root, out, ["sface", "dlib"], groups=example.root / "groups.csv",
                                truth=example.root / "truth.csv", cache_dir=cache, fmr=(0.1, 0.01))
    return res


# --------------------------------------------------------------------------- the example folder
def test_example_folder_layout_and_truth(example):
    t = pd.read_csv(example.root / "truth.csv")
    assert list(t.columns) == list(TRUTH_COLUMNS)
    files = sorted(f"{p.parent.name}/{p.name}" for p in example.root.glob("*/*") if p.is_file())
    assert sorted(t["face"]) == files  # every photo listed, nothing else
    per_query = t[t["kind"].isin(["person", "other"])].groupby("query")["is_target"].agg(["size", "sum"])
    assert (per_query["size"] == 10).all() and (per_query["sum"] == 8).all()
    others = t[t["kind"] == "other"]
    assert others["identity"].is_unique  # each planted photo is a different person
    assert not set(others["identity"]) & set(t.loc[t["is_target"] == 1, "identity"])
    g = pd.read_csv(example.root / "groups.csv")
    assert g["group"].tolist() == ["female", "male", "female", "male"]
    assert set(t["kind"]) == {"person", "other", "copy", "no_face"}


def test_example_folder_refuses_a_non_empty_folder_and_bad_counts(example, tmp_path):
    with pytest.raises(ValueError, match="exists and is not empty"):
        make_example_folder(example.root)
    with pytest.raises(ValueError, match="others: must be fewer than photos=3"):
        make_example_folder(tmp_path / "x", photos=3, others=3)
    with pytest.raises(ValueError, match="queries: must be an integer >= 2"):
        make_example_folder(tmp_path / "x", queries=1)


# --------------------------------------------------------------------------- the planted truth
def test_planted_photos_are_found(result):
    """A real test: the planted photos of other people must be labelled 0 and the queried
    person's 1, by the method's vote across sface and dlib, with no annotation."""
    t = result.truth
    assert t["planted"]["n"] == 9  # 4 x 2 planted + the photo without a face
    labelled_planted = t["planted"]["labelled_other"] + t["planted"]["labelled_person"]
    assert labelled_planted >= 6 and t["planted"]["labelled_other"] >= 0.75 * labelled_planted
    assert t["person"]["labelled_person"] >= 0.9 * t["person"]["n"] - 2
    assert t["label_accuracy"] >= 0.9
    # the summary agrees with a plain join of the written label table and truth.csv
    joined = result.labels.merge(pd.read_csv(Path(result.settings["folder"]) / "truth.csv"), on="face")
    lab = joined[joined["label"] >= 0]
    assert t["label_accuracy"] == pytest.approx((lab["label"] == lab["is_target"]).mean())
    assert t["planted"]["labelled_other"] == int(((lab["is_target"] == 0) & (lab["label"] == 0)).sum())


def test_dropped_photos_are_reported_per_query(result):
    d = result.dropped.assign(file=result.dropped["path"].map(lambda p: Path(p).name))
    copy = d[d["file"].str.endswith("_copy.jpg")]
    assert copy["stage"].tolist() == ["duplicate"] and copy["query"].tolist() == ["person_00"]
    noface = d[(d["query"] == "person_01") & (d["stage"] == "detect")]
    assert noface["reason"].str.startswith("no face").any()
    q = result.queries.set_index("query")
    assert q.loc["person_00", "dropped_duplicate"] == 1
    assert "near duplicate" in q.loc["person_00", "dropped_why"]
    stages = ["dropped_read", "dropped_query", "dropped_detect", "dropped_duplicate", "dropped_embed"]
    assert (q[stages].sum(axis=1) == q["n_dropped"]).all()
    assert (q["n_files"] == q["n_dropped"] + q["n_faces"]).all()
    # every photo is accounted for: kept as a face, or dropped with a stage
    assert q["n_files"].sum() == len(result.labels) + (result.dropped["stage"] != "estimate").sum()


def test_rates_agree_with_a_brute_force_count(result):
    """n_genuine, the threshold and the measured FMR of each resolved rate, recomputed from
    the written pairs and labels by plain loops."""
    labels = result.labels
    r = result.rates
    for s in ("sface", "dlib"):
        # genuine pairs: every pair of faces labelled 1 within a query
        k = labels[labels["label"] == 1].groupby("query").size()
        assert r.loc[(r["system"] == s) & (r["group"] == "all"), "n_genuine"].iloc[0] == int((k * (k - 1) // 2).sum())
    ok = r[r["resolved"]]
    assert len(ok) and not r["resolved"].all()  # FMR 0.1 pooled resolves here, 0.01 does not
    for row in ok.itertuples():
        p = result.pairs[result.pairs["system"] == row.system]
        if row.group != "all":
            p = p[p["group"] == row.group]
        imp = p.loc[~p["genuine"], "score"].to_numpy()
        gen = p.loc[p["genuine"], "score"].to_numpy()
        above = sum(1 for x in imp if x > row.threshold)
        assert above <= row.fmr * len(imp) < above + sum(1 for x in imp if x == row.threshold) + 1
        assert row.fmr_measured == pytest.approx(above / len(imp))
        assert row.fnmr == pytest.approx(sum(1 for x in gen if x <= row.threshold) / len(gen))
        assert row.n_impostor == len(imp) and row.n_impostor >= row.min_impostors
    bad = r[~r["resolved"]]
    assert (bad["n_impostor"] < bad["min_impostors"]).all() and bad["fnmr"].isna().all()
    assert any("FNMR at FMR 0.01 unresolved" in w and "< 1000" in w for w in result.warnings)


def test_outputs_and_their_columns(result):
    out = Path(result.settings["out"])
    for name in ("labels.csv", "queries.csv", "rates.csv", "dropped.csv", "pairs.csv", "rates.png",
                 "summary.json", "truth_check.csv"):
        assert (out / name).is_file(), name
    labels = pd.read_csv(out / "labels.csv")
    assert {"query", "group", "face", "path", "label", "votes", "reason", "label_sface",
            "label_dlib"} <= set(labels.columns)
    assert set(labels["label"]) <= {-1, 0, 1}
    rates = pd.read_csv(out / "rates.csv")
    assert list(rates.columns) == ["system", "group", "fmr", "threshold", "fnmr", "fnmr_lo", "fnmr_hi",
                                   "fmr_measured", "n_genuine", "n_impostor", "min_impostors", "resolved"]
    assert set(rates["group"]) == {"all", "female", "male"} and len(rates) == 2 * 3 * 2
    assert list(pd.read_csv(out / "dropped.csv").columns) == ["query", "path", "stage", "reason"]
    s = json.loads((out / "summary.json").read_text())
    assert set(s["models"]) == {"sface", "dlib"}
    assert s["models"]["sface"]["spec"] == "sface" and s["models"]["dlib"]["model_id"].startswith("dlib-")
    assert s["minimums"]["min_impostors"] == {"0.1": 100, "0.01": 1000}
    assert s["settings"]["method"]["min_faces_query"] == 8 and s["truth"]["label_accuracy"] >= 0.9
    assert s["warnings"] == result.warnings and len(s["warnings"]) >= 1


# --------------------------------------------------------------------------- guards
def _recorded(fn, *args, **kwargs):
    """``fn``'s result and its warnings as ``(category, message)``."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fn(*args, **kwargs)
    return res, [(w.category, str(w.message)) for w in rec]


def test_too_few_photos_warns_naming_the_rule(example, cache):
    res, rec = _recorded(rapid_folder_study, example.root, ["sface", "dlib"], min_photos=12,
                         cache_dir=cache)
    assert (RapidFolderWarning, "no face left to label: every query was dropped before estimation "
            "(query: 42 in a query with fewer than min_photos=12 readable photos)") in rec
    assert res.labels.empty and not res.rates["resolved"].any()
    assert (res.queries["reason"] == "dropped").all()
    assert res.warnings == [m for _, m in rec]


def test_every_query_excluded_warns_naming_the_rule(example, cache):
    cfg = RapidConfig(min_faces_query=20)
    res, rec = _recorded(rapid_folder_study, example.root, ["sface", "dlib"], cfg=cfg, cache_dir=cache)
    assert (NoQueryIncludedWarning, "all 4 queries excluded: too_few_faces in 4 (fewer than "
            "min_faces_query=20 faces scored by every system)") in rec
    assert (res.labels["label"] == -1).all() and len(res.labels) > 0
    assert (res.dropped["stage"] == "estimate").sum() == len(res.labels)
    assert any(w.startswith("rates: no genuine or impostor pairs") for w in res.warnings)


def test_bad_specs_fail_before_any_photo_is_read(example, monkeypatch):
    import facebias.faces

    def no_read(*a, **k):
        raise AssertionError("a photo was read before the models were checked")

    monkeypatch.setattr(facebias.faces, "read_image", no_read)
    with pytest.raises(ValueError, match=r"^model 'arcface': unknown model"):
        rapid_folder_study(example.root, ["sface", "arcface"])
    with pytest.raises(ValueError, match=r"^model 'onnx:missing/me.onnx'.*missing/me.onnx"):
        rapid_folder_study(example.root, ["sface", "onnx:missing/me.onnx"])
    with pytest.raises(ValueError, match="two models are named 'sface'"):
        rapid_folder_study(example.root, ["sface", "onnx:x/sface.onnx"])


def test_folder_layout_errors(tmp_path):
    with pytest.raises(ValueError, match="no such folder"):
        list_query_folders(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="the folder is empty; put each searched name's photos"):
        list_query_folders(tmp_path / "empty")
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "a.jpg").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"no query sub-folders \(1 image files directly in it\)"):
        list_query_folders(loose)
    (tmp_path / "noimg" / "ann").mkdir(parents=True)
    (tmp_path / "noimg" / "ann" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="none of its 1 query folders holds an image file"):
        list_query_folders(tmp_path / "noimg")
    with pytest.raises(ValueError, match="is a file"):
        list_query_folders(loose / "a.jpg")


def test_read_groups_checks(tmp_path):
    f = tmp_path / "g.csv"
    f.write_text("query,group\na,F\na,M\n")
    with pytest.raises(ValueError, match="query 'a' is listed twice"):
        read_groups(f, ["a"])
    f.write_text("name,group\na,F\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['query'\]"):
        read_groups(f, ["a"])
    with pytest.raises(ValueError, match="group name 'all' is reserved"):
        read_groups({"a": "all"}, ["a"])
    with pytest.raises(ValueError, match=r"no group for 2 query folder\(s\): 'b', 'c'"):
        read_groups({"a": "F"}, ["a", "b", "c"])
    with pytest.warns(RapidFolderWarning, match="1 listed query.*no folder.*'z'"):
        assert read_groups({"a": "F", "z": "M"}, ["a"]).to_dict() == {"a": "F"}
    with pytest.raises(ValueError, match="no such file"):
        read_groups(tmp_path / "none.csv", ["a"])


def test_one_face_queries_are_excluded_not_lost(example, cache, tmp_path):
    """A query folder left with one face has no pair to score: its face is reported as
    excluded (too_few_faces), not silently missing from the tables."""
    root = tmp_path / "f"
    for q in ("person_02", "person_03"):
        shutil.copytree(example.root / q, root / q)
    for p in sorted((root / "person_03").iterdir())[1:]:
        p.unlink()
    res, rec = _recorded(rapid_folder_study, root, ["sface", "dlib"], min_photos=1, cache_dir=cache,
                         cfg=RapidConfig(min_faces_query=5, min_faces_cluster=3))
    assert {c for c, _ in rec} == {UnresolvedRateWarning}  # one group: 2 queries, no impostors
    q = res.queries.set_index("query")
    assert q.loc["person_03", "n_faces"] == 1 and q.loc["person_03", "reason"] == "too_few_faces"
    assert (res.labels.loc[res.labels["query"] == "person_03", "label"] == -1).all()
    assert bool(q.loc["person_02", "included"])


# --------------------------------------------------------------------------- library warnings
def _world():
    from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world

    return make_rapid_world(RapidWorldConfig(
        groups=("AF", "AM"), queries_per_group=3, faces_min=10, faces_max=14,
        systems={"s1": {"noise": 0.3}, "s2": {"noise": 0.5}, "s3": {"noise": 0.7}}))


def test_estimate_labels_warns_when_every_query_is_excluded_and_keeps_its_values():
    w = _world()
    cfg = RapidConfig(min_faces_query=50)
    with pytest.warns(NoQueryIncludedWarning, match=r"all 6 queries excluded: too_few_faces in 6 "
                                                    r"\(fewer than min_faces_query=50"):
        got = estimate_labels(w.scores, cfg)
    pd.testing.assert_frame_equal(got, estimate(w.scores, cfg).labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate_labels(w.scores)  # some query included: no warning


def test_fnmr_table_warns_on_unresolved_rates_and_keeps_its_values():
    rng = np.random.default_rng(0)
    pairs = pd.DataFrame({"system": "s1", "group": np.repeat(["A", "B"], 150),
                          "score": rng.random(300), "genuine": np.tile([True] * 20 + [False] * 130, 2)})
    with pytest.warns(UnresolvedRateWarning) as rec:
        t = fnmr_table(pairs, [0.1, 0.01])
    msgs = [str(r.message) for r in rec]
    # FMR 0.1: the groups (130 impostors each) resolve, FMR 0.01 needs 1000: nothing does
    assert msgs == ["fnmr_table: FNMR at FMR 0.01 unresolved (NaN) for s1/all (260), s1/A (130), "
                    "s1/B (130): impostor pairs < 1000 (min_impostor_factor 10 / FMR 0.01)"]
    pd.testing.assert_frame_equal(t, _fnmr_table(pairs, [0.1, 0.01], 10.0, True))
    assert t.loc[t["fmr"] == 0.1, "fnmr"].notna().all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fnmr_table(pairs, [0.1])
