"""The rapid-test known-truth world (facebias.worlds.rapid.make_rapid_world): noisy queries with a
planted fraction p of target faces, systems of different quality and score scale, and
cross-query pairs of the same group; deterministic given the seed."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.worlds.rapid import RAPID_TRANSFORMS, RapidWorldConfig, make_rapid_world

SMALL = RapidWorldConfig(queries_per_group=10, faces_min=15, faces_max=40, p=0.6, seed=3)


@pytest.fixture(scope="module")
def world():
    return make_rapid_world(SMALL)


def test_deterministic_columns_and_source(world):
    faces, scores, cross, truth = world  # unpacks like a tuple
    again = make_rapid_world(SMALL)
    for a, b in zip(world, again, strict=True):
        assert a.equals(b) and list(a.dtypes) == list(b.dtypes)
        assert a.attrs["source"] == "synthetic"
    assert list(faces.columns[:5]) == ["face", "query", "group", "true_identity", "is_target"]
    assert list(scores.columns) == ["query", "face_a", "face_b", "system", "score"]
    assert list(cross.columns) == [*scores.columns, "query_b"]
    assert (faces["face"].to_numpy() == np.arange(len(faces))).all()
    other = make_rapid_world(RapidWorldConfig(**{**SMALL.__dict__, "seed": 4}))
    assert not other.scores["score"].equals(scores["score"])


def test_queries_hold_a_fraction_p_of_targets_and_the_rest_are_others(world):
    faces = world.faces
    frac = faces.groupby("query", observed=True)["is_target"].mean()
    assert abs(frac.mean() - SMALL.p) < 0.06
    assert (faces.groupby("query", observed=True).size().between(15, 39)).all()
    tgt = faces[faces["is_target"]]
    assert (tgt.groupby("query", observed=True)["true_identity"].nunique() == 1).all()
    # distractors are never a queried person, and some repeat within a query (co-occurring)
    dis = faces[~faces["is_target"]]
    assert not dis["true_identity"].isin(tgt["true_identity"]).any()
    assert dis.groupby("query", observed=True)["true_identity"].apply(
        lambda s: s.duplicated().any()).any()
    same = (dis["identity_group"].astype(str) == dis["group"].astype(str)).mean()
    assert 0.6 < same < 0.85  # same_group = 0.7 (plus chance)
    hi = make_rapid_world(RapidWorldConfig(**{**SMALL.__dict__, "p": 0.9})).faces
    assert hi["is_target"].mean() > faces["is_target"].mean() + 0.2


def test_pairs_are_within_query_and_cross_pairs_are_same_group(world):
    faces, scores, cross, _ = world
    q = faces.set_index("face")["query"].astype(str)
    g = faces.set_index("face")["group"].astype(str)
    assert (scores["face_a"] < scores["face_b"]).all()
    assert (scores["face_a"].map(q) == scores["query"].astype(str)).all()
    assert (scores["face_b"].map(q) == scores["query"].astype(str)).all()
    sizes = faces.groupby("query", observed=True).size()
    assert len(scores) == 5 * (sizes * (sizes - 1) // 2).sum()
    assert (cross["query"] != cross["query_b"]).all()
    assert (cross["face_b"].map(q) == cross["query_b"].astype(str)).all()
    assert (cross["face_a"].map(g) == cross["face_b"].map(g)).all()
    one = cross[cross["system"] == "sys_a"]
    assert not one.duplicated(["face_a", "face_b"]).any()
    per_group_within = scores[scores["system"] == "sys_a"]["face_a"].map(g).value_counts()
    per_group_cross = one["face_a"].map(g).value_counts()
    pd.testing.assert_series_equal(per_group_within.sort_index(), per_group_cross.sort_index(),
                                   check_names=False)


def test_systems_differ_in_quality_and_scale(world):
    faces, scores, _, truth = world
    tgt = faces.set_index("face")["is_target"]
    both = scores["face_a"].map(tgt).to_numpy() & scores["face_b"].map(tgt).to_numpy()
    ranges = scores.groupby("system", observed=True)["score"].agg(["min", "max"])
    assert ranges.loc["sys_b", "min"] > 1 and ranges.loc["sys_e", "max"] > 10  # 0-100 scales
    assert ranges.loc["sys_d", "max"] <= 1 and ranges.loc["sys_c", "min"] < -1  # prob., logit
    dprime = {}
    for s, d in scores.groupby("system", observed=True):
        m = both[d.index]
        x = d["score"].to_numpy(np.float64)
        dprime[s] = (x[m].mean() - x[~m].mean()) / np.sqrt((x[m].var() + x[~m].var()) / 2)
    order = sorted(dprime, key=dprime.get, reverse=True)
    assert order[0] == "sys_a" and order[-1] == "sys_e"  # least noise separates best
    assert truth.sort_values("rank")["system"].tolist() == [f"sys_{c}" for c in "abcde"]
    assert set(truth["transform"]) <= set(RAPID_TRANSFORMS)


def test_bias_injection_lowers_one_groups_genuine_scores():
    cfg = RapidWorldConfig(**{**SMALL.__dict__, "bias": {"sys_a": {"AF": 2.0}}})
    faces, scores, _, _ = make_rapid_world(cfg)
    base = make_rapid_world(SMALL).scores
    tgt = faces.set_index("face")["is_target"]
    grp = faces.set_index("face")["group"].astype(str)
    gen = scores["face_a"].map(tgt) & scores["face_b"].map(tgt)

    def mean(df, s, g):
        m = gen & (df["system"] == s) & (df["face_a"].map(grp) == g)
        return df.loc[m, "score"].mean()

    assert mean(scores, "sys_a", "AF") < mean(base, "sys_a", "AF") - 0.1
    assert mean(scores, "sys_a", "AM") == pytest.approx(mean(base, "sys_a", "AM"))
    assert mean(scores, "sys_b", "AF") == pytest.approx(mean(base, "sys_b", "AF"))


def test_config_validation():
    with pytest.raises(ValueError, match="faces_min"):
        RapidWorldConfig(faces_min=10, faces_max=10)
    with pytest.raises(ValueError, match="transform"):
        RapidWorldConfig(systems={"s": {"noise": 0.5, "transform": "cube"}})
    with pytest.raises(ValueError, match="bias"):
        RapidWorldConfig(bias={"nope": {"AF": 1.5}})
    with pytest.raises(ValueError, match="p must lie in"):
        RapidWorldConfig(p=1.5)
    with pytest.raises(ValueError, match="unknown key"):
        RapidWorldConfig.from_params({"queries": 3})
    assert RapidWorldConfig.from_params({"p": 0.5, "groups": ["X", "Y"]}).groups == ("X", "Y")


def test_the_committed_world_plants_a_bias_in_one_system_and_group():
    """params.yaml's rapid_world plants a per-group bias (a noise factor > 1 on one group of
    one system), so the notebook's Fig. 5 analysis has something to detect; the dataclass
    default stays the null world."""
    from facebias.io import load_params

    cfg = RapidWorldConfig.from_params(load_params(Path(__file__).resolve().parents[2] / "params.yaml",
                                                   "rapid_world"))
    assert len(cfg.bias) == 1
    (system, per), = cfg.bias.items()
    assert system in cfg.systems and len(per) == 1
    (group, factor), = per.items()
    assert group in cfg.groups and factor > 1
    assert RapidWorldConfig().bias == {}
