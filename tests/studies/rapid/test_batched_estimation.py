"""Issue 20, the rapid test row: the optimised ``facebias.studies.rapid.estimate`` (no sort
of the score rows, one scatter into every size's stack of matrices, one ``eigh`` per matrix)
gives bit for bit the tables of a plain per-query loop (``tests/rapid_reference.py``, which
follows the authors' code: issue 28 item 8, faces of a missing pair dropped and the
inclusion test on the cluster labels), on the default world, on random worlds of mixed query
sizes, on messy score tables (rows shuffled, dropped, duplicated with the faces swapped,
self pairs, faces missing from a system, string face ids repeated across queries) and on
hand-built worlds with holes and queries whose second cluster is empty."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import rapid_reference as REF
from rapid_fixtures import random_matrix_world

from facebias.studies import rapid as R
from facebias.studies.rapid import estimation as RE
from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world


def assert_same(scores: pd.DataFrame, cfg: R.RapidConfig | None = None,
                fit_scores: pd.DataFrame | None = None) -> R.RapidEstimate:
    """The three tables of :func:`R.estimate` equal the reference's exactly (values, dtypes,
    order, index, ``attrs``)."""
    new = R.estimate(scores, cfg, fit_scores)
    old = REF.estimate(scores, cfg, fit_scores)
    for name in ("labels", "system_labels", "queries"):
        pd.testing.assert_frame_equal(getattr(new, name), getattr(old, name), check_exact=True,
                                      obj=name)
    assert new.labels.attrs == old.labels.attrs
    return new


def small_world(seed: int, **kw) -> object:
    base = {"seed": seed, "groups": ("AF", "BM"), "queries_per_group": 6, "faces_min": 8,
            "faces_max": 30}
    return make_rapid_world(RapidWorldConfig(**{**base, **kw}))


def test_default_world_with_the_gmm_matches_the_reference():
    w = make_rapid_world(RapidWorldConfig())
    est = assert_same(w.scores, R.RapidConfig(), w.cross_scores)
    assert est.queries["included"].any() and (est.labels["label"] == 1).any()


@pytest.mark.parametrize("seed, p, cfg", [
    (3, 0.7, R.RapidConfig()),
    (11, 0.5, R.RapidConfig(rule="strict", eig_threshold=3.0)),
    (29, 0.9, R.RapidConfig(normalise="none", min_faces_cluster=3)),
    (47, 0.3, R.RapidConfig(tau=0.4, gap_ratio=1.2, min_faces_query=12)),
])
def test_random_worlds_of_mixed_sizes_match_the_reference(seed, p, cfg):
    w = small_world(seed, p=p)
    assert w.scores.groupby("query", observed=True)["face_a"].nunique().nunique() > 3  # mixed n
    est = assert_same(w.scores, cfg)
    assert est.queries["included"].any()


def test_one_size_per_query_and_fixed_modes_match_the_reference():
    """The benchmark's case: every query has the same n, the GMM replaced by fixed modes."""
    w = small_world(5, faces_min=40, faces_max=41)
    modes = {str(s): [float(v.quantile(0.05)), float(v.quantile(0.95))]
             for s, v in w.scores.groupby("system", observed=True)["score"]}
    assert_same(w.scores, R.RapidConfig(modes=modes))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_messy_score_tables_match_the_reference(seed):
    """Rows shuffled, some dropped (holes and faces missing from a system), some repeated
    with the faces swapped and a new score (the later row wins), self pairs, plain object
    columns, and string face ids shared by two queries."""
    rng = np.random.default_rng(seed)
    s = small_world(100 + seed, queries_per_group=4).scores
    s = s.astype({"query": object, "system": object})
    s = s.iloc[rng.permutation(len(s))]
    drop = rng.random(len(s)) < 0.0003
    # drop every row of one face in one system: the face is missing from that system
    face = s["face_a"].iloc[0]
    drop |= ((s["face_a"] == face) | (s["face_b"] == face)).to_numpy() & (s["system"] == s["system"].iloc[0]).to_numpy()
    s = s[~drop]
    dup = s.sample(frac=0.01, random_state=seed)
    dup = dup.assign(face_a=dup["face_b"], face_b=dup["face_a"], score=rng.random(len(dup)))
    same = s.sample(frac=0.005, random_state=seed + 1)
    same = same.assign(face_b=same["face_a"])
    s = pd.concat([s, dup, same], ignore_index=True)
    cfg = R.RapidConfig(modes={str(k): [0.0, 1.0] for k in s["system"].unique()}, min_faces_cluster=3)
    assert_same(s, cfg)
    # categorical columns: categories not sorted, one never used (the codes are read directly)
    cats = s.assign(query=pd.Categorical(s["query"], categories=["zz", *sorted(s["query"].unique())[::-1]]),
                    system=pd.Categorical(s["system"], categories=sorted(s["system"].unique())[::-1]))
    assert_same(cats, cfg)
    # face ids shifted far from 0, and in a narrower integer type
    assert_same(s.assign(face_a=(s["face_a"] - 10**6).astype(np.int32),
                         face_b=(s["face_b"] - 10**6).astype(np.int32)), cfg)
    # sparse integer ids (a range far wider than the rows: hashed)
    assert_same(s.assign(face_a=s["face_a"] * 10**9, face_b=s["face_b"] * 10**9), cfg)
    # string ids: two queries name their faces alike
    names = s.assign(face_a=s["face_a"].map(lambda f: f"{f % 40:03d}.jpg"),
                     face_b=s["face_b"].map(lambda f: f"{f % 40:03d}.jpg"))
    assert_same(names, cfg)


def test_tiny_tables_match_the_reference():
    """One query of 2 faces, one system, a query of only self pairs; an empty table is
    refused by both."""
    one = pd.DataFrame({"query": ["q", "q", "r"], "face_a": [1, 1, 5], "face_b": [2, 1, 5],
                        "system": ["a", "a", "a"], "score": [0.9, 1.0, 1.0]})
    assert_same(one, R.RapidConfig(normalise="none", min_faces_query=0, min_faces_cluster=0,
                                   eig_threshold=0.5))
    assert_same(one, R.RapidConfig(normalise="none"))
    with pytest.raises(ValueError, match="no scores"):
        R.estimate(one.iloc[:0], R.RapidConfig(normalise="none"))


@pytest.mark.parametrize("chunk", [None, 1])
def test_each_matrix_is_decomposed_once(monkeypatch, chunk):
    """Every (query, system) matrix goes through ``eigh`` exactly once, sizes ascending, in
    stacks of at most ``_EIGH_CHUNK`` bytes (``chunk=1``: one query per call), with the
    reference's results."""
    w = small_world(7)
    cfg = R.RapidConfig(modes={s: [0.0, 1.0] for s in w.scores["system"].unique()})
    if chunk:
        monkeypatch.setattr(RE, "_EIGH_CHUNK", chunk)
    calls = []
    eigh = np.linalg.eigh

    def counting(a, *args, **kw):
        calls.append(a.shape)
        return eigh(a, *args, **kw)

    monkeypatch.setattr(np.linalg, "eigh", counting)
    est = R.estimate(w.scores, cfg)
    monkeypatch.setattr(np.linalg, "eigh", eigh)
    n = est.queries.set_index("query")["n_common"]
    sizes = [c[-1] for c in calls]
    assert sizes == sorted(sizes) and set(sizes) == set(n)
    assert sum(c[0] * c[1] for c in calls) == len(n) * w.scores["system"].nunique()
    assert len(calls) == (len(n) if chunk else n.nunique())
    assert_same(w.scores, cfg)


def test_many_small_queries_match_the_reference():
    """Many queries of few faces (as at Athletes scale): the (query, face) keys are hashed,
    their range being much wider than the rows."""
    w = make_rapid_world(RapidWorldConfig(seed=8, queries_per_group=30, faces_min=8, faces_max=11))
    n_q, n_f = w.scores["query"].nunique(), w.faces["face"].nunique()
    assert n_q * n_f > 4 * len(w.scores) + 1024  # the hashed branch of _sorted_codes
    assert_same(w.scores, R.RapidConfig(min_faces_query=8, min_faces_cluster=4))


@pytest.mark.parametrize("column", ["face_a", "face_b", "query", "system"])
def test_a_missing_id_is_refused(column):
    """A missing face, query or system name is an error (the old code crashed or mislabelled)."""
    df = pd.DataFrame({"query": ["q", "q", "r"], "face_a": [1.0, 1.0, 5.0], "face_b": [2.0, 3.0, 6.0],
                       "system": ["a", "a", "a"], "score": [0.9, 0.8, 0.7]})
    df.loc[2, column] = None
    with pytest.raises(ValueError, match=f"scores.{column}: missing values"):
        R.estimate(df, R.RapidConfig(normalise="none"))


def test_integer_and_mixed_names_match_the_reference():
    """Query and system names that are not strings (integers; queries named by a mix of
    strings and integers): the name columns keep the type pandas infers for them (the
    tables take the names by code, their type inferred once)."""
    s = small_world(13).scores
    q = s["query"].cat.codes.astype(np.int64)
    cfg = R.RapidConfig(normalise="none", min_faces_cluster=3)
    ints = assert_same(s.assign(query=q, system=s["system"].cat.codes.astype(np.int64) + 7), cfg)
    assert ints.system_labels["query"].dtype == np.int64 and ints.queries["included"].any()
    mixed = assert_same(s.assign(query=s["query"].astype(object).where(q % 2 == 0, q)), cfg)
    assert mixed.system_labels["query"].dtype == object


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("seed, hole_rate, min_q", [(0, 0.0, 8), (2, 0.0005, 8), (3, 0.002, 8),
                                                     (4, 0.004, 12), (5, 0.003, 0)])
def test_missing_pairs_and_empty_second_clusters_match_the_reference(seed, hole_rate, min_q):
    """Hand-built worlds (``rapid_fixtures.random_matrix_world``): holes (their faces
    dropped, queries rebuilt without them, some falling below ``min_faces_query``), a face
    scored by one system with a third of the faces only, a face missing from a system, and
    queries kept with K = 2; also with ``min_faces_query = 0``."""
    s = random_matrix_world(seed, hole_rate=hole_rate)
    est = assert_same(s, R.RapidConfig(normalise="none", min_faces_query=min_q))
    q = est.queries
    assert q["n_dropped"].sum() > 0 and (q["included"] & (q["max_clusters"] > 1)).any()
    if min_q > 8:
        assert ((q["reason"] == "too_few_faces") & (q["n_dropped"] > 0)).any()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("chunk", [None, 1])
def test_each_matrix_is_decomposed_once_when_faces_are_dropped(monkeypatch, chunk):
    """With missing pairs the queries that lose faces are built again without them: still
    every computed (query, system) matrix goes through ``eigh`` once, at its final size,
    sizes ascending, and never a matrix with a hole."""
    s = random_matrix_world(6, hole_rate=0.003)
    cfg = R.RapidConfig(normalise="none")
    if chunk:
        monkeypatch.setattr(RE, "_EIGH_CHUNK", chunk)
    calls = []
    eigh = np.linalg.eigh

    def counting(a, *args, **kw):
        calls.append(a.shape)
        return eigh(a, *args, **kw)

    monkeypatch.setattr(np.linalg, "eigh", counting)
    est = R.estimate(s, cfg)
    monkeypatch.setattr(np.linalg, "eigh", eigh)
    q = est.queries
    done = q[q["min_clusters"] >= 0]  # the queries decomposed
    assert (q["n_dropped"] > 0).sum() > 10 and len(done) < len(q)
    sizes = [c[-1] for c in calls]
    assert sizes == sorted(sizes) and set(sizes) == set(done["n_common"])
    assert sum(c[0] * c[1] for c in calls) == len(done) * s["system"].nunique()
    assert_same(s, cfg)
