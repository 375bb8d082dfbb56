"""Tests for facebias.studies.batest (paper 003, BA-test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp

from facebias.io import load_params
from facebias.metrics import d_prime, tar_at_far
from facebias.studies import batest as bt

ROOT = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- selection
def _images() -> pd.DataFrame:
    ok = {"yaw": 0.0, "pitch": 5.0, "roll": -3.0, "brightness": 150.0, "face_area": 0.3}
    rows = [
        ("A", {}),                             # 0 kept
        ("A", {"yaw": 25.0}),                  # 1 pose out
        ("A", {"roll": -20.0}),                # 2 kept (bound inclusive)
        ("A", {"pitch": np.nan}),              # 3 pose unmeasured
        ("A", {"brightness": 100.0}),          # 4 brightness out
        ("B", {"brightness": 198.75}),         # 5 kept (inclusive)
        ("B", {"brightness": 199.0}),          # 6 brightness out
        ("B", {"brightness": np.nan}),         # 7 brightness unmeasured
        ("B", {"face_area": 0.19}),            # 8 face area out
        ("B", {"yaw": -30.0, "face_area": 0.1}),  # 9 pose out (first filter wins)
    ]
    return pd.DataFrame([{"group": g, **ok, **d} for g, d in rows])


def test_apply_filters_exact_rows_and_accounting():
    kept, acc = bt.apply_filters(_images())
    assert kept.index.tolist() == [0, 2, 5]
    acc = acc.set_index(["filter", "group"])
    assert acc.loc[("pose", "A")].tolist() == [5, 1, 1, 3]
    assert acc.loc[("pose", "B")].tolist() == [5, 0, 1, 4]
    assert acc.loc[("brightness", "A")].tolist() == [3, 0, 1, 2]
    assert acc.loc[("brightness", "B")].tolist() == [4, 1, 1, 2]
    assert acc.loc[("face_area", "A")].tolist() == [2, 0, 0, 2]
    assert acc.loc[("face_area", "B")].tolist() == [2, 0, 1, 1]
    # quality filters are off by default: no rows, their columns not required
    assert set(acc.index.get_level_values("filter")) == {"pose", "brightness", "face_area"}
    # every removed row is accounted for
    assert acc["n_unmeasured"].sum() + acc["n_out_of_range"].sum() == len(_images()) - len(kept)
    flags = bt.passes_filters(_images().assign(id=[f"i{k}" for k in range(len(_images()))]))
    assert flags[flags].index.tolist() == [0, 2, 5]  # the rows apply_filters keeps, by id


def test_apply_filters_missing_column_and_quality():
    df = _images().drop(columns="face_area")
    with pytest.raises(ValueError, match="face_area"):
        bt.apply_filters(df)
    f = dict(bt.BA_FILTERS, sharpness={"columns": ("sharpness",), "min": 10.0, "max": None})
    df = _images().assign(sharpness=[20.0] * 9 + [5.0])
    kept, acc = bt.apply_filters(df, {"sharpness": f["sharpness"]})
    assert kept.index.tolist() == list(range(9))
    with pytest.raises(ValueError, match="sharpness"):
        bt.apply_filters(_images(), {"sharpness": f["sharpness"]})


# --------------------------------------------------------------------------- balancing
@pytest.fixture(scope="module")
def two_groups() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 2000
    return pd.DataFrame({
        "group": ["A"] * n + ["B"] * n,
        "brightness": np.r_[rng.normal(140, 15, n), rng.normal(170, 15, n)],
        "yaw": rng.normal(0, 8, 2 * n),
    })


@pytest.mark.parametrize("kw", [{"method": "strata", "bins": 20}, {"method": "nn", "caliper": 0.2}])
def test_balance_matches_distributions(two_groups, kw):
    after = bt.balance(two_groups, ["brightness"], seed=3, **kw)
    assert set(after.index) <= set(two_groups.index)
    assert after.index.is_monotonic_increasing
    counts = after["group"].value_counts()
    assert counts["A"] == counts["B"] > 200
    rep = bt.balance_report(two_groups, after, ["brightness"]).set_index("group")
    assert (rep["smd_before"].abs() > 1).all()
    assert (rep["smd_after"].abs() < 0.1).all()
    assert (rep["ks_after"] < 0.1).all()
    assert (rep["ks_before"] > 0.5).all()
    again = bt.balance(two_groups, ["brightness"], seed=3, **kw)
    assert again.index.equals(after.index)
    other = bt.balance(two_groups, ["brightness"], seed=4, **kw)
    assert not other.index.equals(after.index)


def test_balance_nn_caliper_and_two_factors(two_groups):
    cal = 0.1
    after = bt.balance(two_groups, ["brightness", "yaw"], method="nn", caliper=cal, seed=0)
    a, b = after[after.group == "A"], after[after.group == "B"]
    assert len(a) == len(b)
    rep = bt.balance_report(two_groups, after, ["brightness", "yaw"], reference="A")
    rep = rep.set_index(["group", "factor"])
    assert np.isnan(rep.loc[("A", "brightness"), "smd_after"])
    assert abs(rep.loc[("B", "brightness"), "smd_after"]) < 0.1
    assert abs(rep.loc[("B", "yaw"), "smd_after"]) < 0.1
    # strata with one stratum per factor keeps min(count) per group
    one = bt.balance(two_groups.iloc[:2500], ["brightness"], bins=1)
    assert one["group"].value_counts().tolist() == [500, 500]


def test_balance_rejects_nan_and_bad_method(two_groups):
    df = two_groups.copy()
    df.loc[5, "brightness"] = np.nan
    with pytest.raises(ValueError, match="row 5"):
        bt.balance(df, ["brightness"])
    with pytest.raises(ValueError, match="method"):
        bt.balance(two_groups, ["brightness"], method="x")


# --------------------------------------------------------------------------- pair controls
def test_pair_controls():
    p = pd.DataFrame({"mask_iou": [0.95, 0.9, 0.5, 0.91],
                      "facial_hair1": [0, 1, 0, 0], "facial_hair2": [False, False, False, True]})
    assert bt.mask_iou_filter(p).index.tolist() == [0, 3]
    assert bt.exclude_facial_hair(p).index.tolist() == [0, 2]
    with pytest.raises(ValueError, match="mask_iou"):
        bt.mask_iou_filter(p.assign(mask_iou=[0.95, np.nan, 0.5, 0.91]))


# --------------------------------------------------------------------------- reports
def _pairs(rng, groups, n_gen, n_imp, gen_mu=None, imp_mu=None, n_ids=50):
    gen_mu = gen_mu or {}
    imp_mu = imp_mu or {}
    parts = []
    for k, grp in enumerate(groups):
        base = 1000 * k
        ig = rng.integers(0, n_ids, n_gen) + base
        ia = rng.integers(0, n_ids, n_imp) + base
        ib = (ia - base + rng.integers(1, n_ids, n_imp)) % n_ids + base
        parts.append(pd.DataFrame({
            "id1": np.r_[ig, ia], "id2": np.r_[ig, ib], "group": grp,
            "label": np.r_[np.ones(n_gen, int), np.zeros(n_imp, int)],
            "score": np.r_[rng.normal(gen_mu.get(grp, 0.6), 0.1, n_gen),
                           rng.normal(imp_mu.get(grp, 0.0), 0.1, n_imp)],
        }))
    return pd.concat(parts, ignore_index=True)


def test_dprime_by_group_matches_formula():
    rng = np.random.default_rng(0)
    p = _pairs(rng, ["AF", "WM", "BM"], 300, 2000, gen_mu={"BM": 0.4})
    got = bt.dprime_by_group(p)
    for grp, sub in p.groupby("group"):
        gen = sub.loc[sub.label == 1, "score"].to_numpy()
        imp = sub.loc[sub.label == 0, "score"].to_numpy()
        ref = abs(gen.mean() - imp.mean()) / np.sqrt((gen.var() + imp.var()) / 2)
        assert got[grp] == pytest.approx(ref, rel=1e-12)
    assert got["BM"] < got["AF"]
    x = pd.DataFrame({"group": "G", "label": np.r_[np.ones(20000), np.zeros(20000)],
                      "score": np.r_[rng.normal(1, 1, 20000), rng.normal(0, 1, 20000)]})
    assert bt.dprime_by_group(x)["G"] == pytest.approx(1.0, abs=0.05)


def test_gender_gap_planted():
    rng = np.random.default_rng(2)
    delta, sigma = 0.05, 0.1
    p = _pairs(rng, ["AF", "AM", "WF", "WM", "BF", "BM"], 20000, 20000,
               gen_mu={"AF": 0.6 - delta})
    gap = bt.gender_gap(p)
    assert list(gap.index) == ["A", "B", "W"]
    assert gap.loc["A", "dprime_genuine"] == pytest.approx(delta / sigma, abs=0.05)
    assert gap.loc[["B", "W"], "dprime_genuine"].max() < 0.05
    assert gap["dprime_impostor"].max() < 0.05
    sub = p[p.group.isin(["AF", "AM"])]
    f = sub.loc[(sub.group == "AF") & (sub.label == 1), "score"]
    m = sub.loc[(sub.group == "AM") & (sub.label == 1), "score"]
    assert gap.loc["A", "dprime_genuine"] == pytest.approx(d_prime(f, m))
    with pytest.raises(ValueError, match="race letter"):
        bt.gender_gap(p.assign(group="X"))


def test_fmr_at_reference():
    rng = np.random.default_rng(3)
    p = _pairs(rng, ["WM", "AF", "BF"], 100, 20000, imp_mu={"AF": 0.1})
    res = bt.fmr_at_reference(p, reference="WM", fmr=1e-3)
    assert res.loc["WM", "fmr"] <= 1e-3
    assert res.loc["WM", "fmr"] >= 1e-3 - 1 / 20000
    assert res.loc["AF", "fmr"] > 10 * res.loc["WM", "fmr"]
    assert res.loc["BF", "fmr"] < 5e-3
    # brute force on a small example
    small = _pairs(rng, ["WM", "AF"], 10, 200, imp_mu={"AF": 0.05})
    res = bt.fmr_at_reference(small, reference="WM", fmr=0.05)
    ref = np.sort(small.loc[(small.group == "WM") & (small.label == 0), "score"].to_numpy())
    t = min(c for c in ref if np.mean(ref > c) <= 0.05)
    assert res.loc["WM", "threshold"] == t
    for grp in ["WM", "AF"]:
        imp = small.loc[(small.group == grp) & (small.label == 0), "score"].to_numpy()
        assert res.loc[grp, "fmr"] == np.mean(imp > t)
    with pytest.raises(ValueError, match="reference"):
        bt.fmr_at_reference(p, reference="IM")


def test_tpr_at_fmr_matches_metrics_and_intervals():
    rng = np.random.default_rng(4)
    p = _pairs(rng, ["AF", "AM", "WM"], 90, 3400, gen_mu={"AF": 0.3, "AM": 0.35}, n_ids=30)
    res = bt.tpr_at_fmr(p, fmr=1e-3, n_boot=100, seed=1)
    imp = p.loc[p.label == 0, "score"].to_numpy()
    for grp in ["AF", "AM", "WM"]:
        gen = p.loc[(p.group == grp) & (p.label == 1), "score"].to_numpy()
        assert res.loc[grp, "tpr"] == pytest.approx(tar_at_far(gen, imp, 1e-3), abs=1e-12)
        assert res.loc[grp, "n_genuine"] == 90
        assert (res.loc[grp, "tpr"] * 90) == pytest.approx(round(res.loc[grp, "tpr"] * 90))
    assert (res["tpr_lo"] <= res["tpr"]).all() and (res["tpr"] <= res["tpr_hi"]).all()
    assert (res["tpr_hi"] > res["tpr_lo"]).any()
    # more identities (and pairs) -> narrower intervals
    big = _pairs(rng, ["AF", "AM", "WM"], 900, 30000, gen_mu={"AF": 0.3, "AM": 0.35}, n_ids=300)
    res_big = bt.tpr_at_fmr(big, fmr=1e-3, n_boot=100, seed=1)
    w_small = (res["tpr_hi"] - res["tpr_lo"]).loc[["AF", "AM"]]
    w_big = (res_big["tpr_hi"] - res_big["tpr_lo"]).loc[["AF", "AM"]]
    assert (w_big < w_small).all()
    # impostor-only groups (cross-group pairs) join the threshold but are not reported
    mixed = pd.concat([p, pd.DataFrame({"id1": [1, 2], "id2": [1001, 2002], "group": "mixed",
                                        "label": 0, "score": [0.9, 0.95]})], ignore_index=True)
    res_mixed = bt.tpr_at_fmr(mixed, fmr=1e-3, n_boot=0)
    assert "mixed" not in res_mixed.index
    imp = mixed.loc[mixed.label == 0, "score"].to_numpy()
    gen = mixed.loc[(mixed.group == "AF") & (mixed.label == 1), "score"].to_numpy()
    assert res_mixed.loc["AF", "tpr"] == pytest.approx(tar_at_far(gen, imp, 1e-3))


def test_tpr_identity_bootstrap_equals_weighting_every_pair():
    """The identity bootstrap's replicates (top impostor weights and a total over identity
    pairs) equal, bit for bit, weighting every pair by stats.bootstrap_weights and reading the
    threshold off all the cumulative weights: the reference below."""
    from facebias.metrics.weighted import _SortedScores
    from facebias.stats import bootstrap_weights, percentile_interval, percentile_mc_error

    rng = np.random.default_rng(8)
    p = _pairs(rng, ["AF", "AM", "WM"], 120, 20000, gen_mu={"AF": 0.3, "AM": 0.35}, n_ids=40)
    for fmr in (1e-3, 1e-2):
        res = bt.tpr_at_fmr(p, fmr=fmr, n_boot=60, seed=5, ci=0.9)
        s, gen, g = p["score"].to_numpy(), p["label"].to_numpy() == 1, p["group"].to_numpy()
        imp_order = np.flatnonzero(~gen)[np.argsort(s[~gen], kind="stable")]
        imp = _SortedScores(s[imp_order])
        rows = [np.flatnonzero(gen & (g == grp)) for grp in res.index]
        rows = [r[np.argsort(s[r], kind="stable")] for r in rows]
        reps = []
        for w in bootstrap_weights(len(p), 60, 5, id1=p["id1"].to_numpy(), id2=p["id2"].to_numpy()):
            t = imp.threshold(np.array([fmr]), imp.weigh(w[imp_order]))
            reps.append([_SortedScores(s[r]).fraction_above(t, np.cumsum(w[r]))[0] for r in rows])
        lo, hi = percentile_interval(np.array(reps), 0.9)
        np.testing.assert_array_equal(res["tpr_lo"].to_numpy(), lo)
        np.testing.assert_array_equal(res["tpr_hi"].to_numpy(), hi)
        assert (hi > lo).any()
        lo_se, hi_se = percentile_mc_error(np.array(reps), 0.9)
        np.testing.assert_array_equal(res["tpr_lo_mcse"].to_numpy(), lo_se)
        np.testing.assert_array_equal(res["tpr_hi_mcse"].to_numpy(), hi_se)
        assert (hi_se > 0).any()


def _brute_threshold(imp: np.ndarray, f: float) -> float:
    """Smallest impostor score t with mean(imp > t) <= f, by trying every score."""
    return min(c for c in imp if np.mean(imp > c) <= f)


def test_tables_3_and_4_too_few_impostors_are_nan_and_labelled():
    """A rate from fewer than 10 / FMR impostors is NaN with the note, never 0; with enough
    impostors it is the brute-force rate (hand-sized case, FMR 0.1 -> at least 100)."""
    rng = np.random.default_rng(11)

    def pairs(n_imp: dict[str, int]) -> pd.DataFrame:
        rows = [pd.DataFrame({"group": g, "label": 0, "score": rng.normal(0.1 * k, 0.2, n),
                              "id1": np.arange(n) % 7, "id2": np.arange(n) % 7 + 100})
                for k, (g, n) in enumerate(n_imp.items())]
        rows += [pd.DataFrame({"group": g, "label": 1, "score": rng.normal(0.5, 0.2, 20),
                               "id1": np.arange(20) % 7, "id2": np.arange(20) % 7}) for g in n_imp]
        return pd.concat(rows, ignore_index=True)

    # Table 3: the reference WM has 99 < 100 impostors: every group NaN, threshold NaN
    p = pairs({"WM": 99, "AF": 300})
    res = bt.fmr_at_reference(p, reference="WM", fmr=0.1)
    assert res["fmr"].isna().all() and res["threshold"].isna().all()
    assert (res["note"] == "too few impostors").all() and res.loc["AF", "n_impostor"] == 300
    # WM has 100 (enough) and AF 60 (too few): WM is the brute-force rate, AF NaN
    p = pairs({"WM": 100, "AF": 60})
    res = bt.fmr_at_reference(p, reference="WM", fmr=0.1)
    wm = p.loc[(p.group == "WM") & (p.label == 0), "score"].to_numpy()
    t = _brute_threshold(wm, 0.1)
    assert res.loc["WM", "threshold"] == t and res.loc["WM", "fmr"] == np.mean(wm > t)
    assert res.loc["WM", "note"] == "" and 0 < res.loc["WM", "fmr"] <= 0.1
    assert np.isnan(res.loc["AF", "fmr"]) and res.loc["AF", "note"] == "too few impostors"
    # Table 4: 99 pooled impostors -> NaN TPRs and intervals; 100 -> brute force
    for n_boot in (0, 20):
        res = bt.tpr_at_fmr(pairs({"WM": 50, "AF": 49}), fmr=0.1, n_boot=n_boot)
        assert res["tpr"].isna().all() and (res["note"] == "too few impostors").all()
        if n_boot:
            assert res[["tpr_lo", "tpr_hi"]].isna().all().all()
    p = pairs({"WM": 50, "AF": 50})
    res = bt.tpr_at_fmr(p, fmr=0.1, n_boot=20)
    t = _brute_threshold(p.loc[p.label == 0, "score"].to_numpy(), 0.1)
    for g in ("WM", "AF"):
        gen = p.loc[(p.group == g) & (p.label == 1), "score"].to_numpy()
        assert res.loc[g, "threshold"] == t and res.loc[g, "tpr"] == np.mean(gen > t)
        assert res.loc[g, "note"] == "" and res.loc[g, "tpr_lo"] <= res.loc[g, "tpr"] <= res.loc[g, "tpr_hi"]


# --------------------------------------------------------------------------- Table 1 text
def test_table1_percentages_reproduce_text():
    pct = bt.table1_percentages(bt.table1_published())
    pct = pct.set_index(["kind", "condition", "race"])
    gb, ib = ("genuine", "balanced"), ("impostor", "balanced")
    assert pct.loc[(*gb, "Asian"), "rom_pct"] == pytest.approx(-45.3, abs=0.05)
    assert pct.loc[(*gb, "all"), "rom_pct"] == pytest.approx(-24.11, abs=0.005)
    assert pct.loc[(*gb, "Indian"), "rom_pct"] == pytest.approx(0.3, abs=0.05)
    assert pct.loc[(*ib, "Black"), "rom_pct"] == pytest.approx(-27.22, abs=0.005)
    assert pct.loc[(*ib, "White"), "rom_pct"] == pytest.approx(88.35, abs=0.005)
    assert pct.loc[(*ib, "Indian"), "rom_pct"] == pytest.approx(145.9, abs=0.05)
    assert pct.loc[(*ib, "Indian"), "mor_pct"] == pytest.approx(145.3, abs=0.05)
    assert pct.loc[(*ib, "Asian"), "pct_ArcFace"] == pytest.approx(-29, abs=0.5)
    assert pct.loc[(*ib, "Asian"), "pct_MagFace"] == pytest.approx(322, abs=0.5)
    gn, inf = ("genuine", "balanced_nfh"), ("impostor", "balanced_nfh")
    assert pct.loc[(*gn, "Black"), "rom_pct"] == pytest.approx(116, abs=0.5)
    assert pct.loc[(*gn, "Indian"), "rom_pct"] == pytest.approx(75, abs=0.5)
    assert pct.loc[(*inf, "Indian"), "mor_pct"] == pytest.approx(222, abs=0.5)
    assert pct.loc[(*inf, "Indian"), "rom_pct"] == pytest.approx(220.5, abs=0.05)
    assert pct.loc[(*inf, "White"), "mor_pct"] == pytest.approx(189, abs=0.5)
    assert pct.loc[(*inf, "White"), "rom_pct"] == pytest.approx(185.6, abs=0.05)


def test_apply_filters_missing_group_raises():
    df = _images().astype({"group": object})
    df.loc[4, "group"] = None
    with pytest.raises(ValueError, match="row 4"):
        bt.apply_filters(df)


# --------------------------------------------------------------------------- config
def test_config_parses_the_committed_params_section():
    section = load_params(ROOT / "params.yaml", "batest")
    cfg = bt.BATestConfig.from_params(section)
    assert set(vars(cfg)) == set(section)  # every key of the section is a field
    assert cfg.balance_on == tuple(section["balance_on"]) and cfg.method == section["method"]
    assert cfg.reference_fmr == tuple(section["reference_fmr"]) and cfg.seed == section["seed"]
    # the typed filters select the rows the section's raw filters select
    raw_kept, raw_acc = bt.apply_filters(_images(), section["filters"])
    kept, acc = bt.apply_filters(_images(), cfg.filters)
    assert kept.index.tolist() == raw_kept.index.tolist() and acc.equals(raw_acc)


def test_config_rejects_an_unknown_key():
    with pytest.raises(ValueError, match=r"batest: unknown key\(s\) \['n_bootstrap'\]"):
        bt.BATestConfig.from_params({"n_bootstrap": 10})
    with pytest.raises(ValueError, match=r"batest.filters.pose: unknown key\(s\) \['maxabs'\]"):
        bt.BATestConfig.from_params({"filters": {"pose": {"columns": ["yaw"], "maxabs": 20}}})


@pytest.mark.parametrize("key, value, match", [
    ("bins", "4", "batest.bins must be an integer"),
    ("bins", 4.0, "batest.bins must be an integer"),
    ("bins", True, "batest.bins must be an integer"),
    ("bins", 0, "batest.bins must be >= 1"),
    ("n_boot", -1, "batest.n_boot must be >= 0"),
    ("seed", 1.5, "batest.seed must be an integer"),
    ("caliper", "0.2", "batest.caliper must be a number"),
    ("caliper", 0.0, r"batest.caliper must lie in \(0.0, inf\]"),
    ("method", "exact", "batest.method must be one of"),
    ("reference_group", 1, "batest.reference_group must be a string"),
    ("reference_fmr", 0.001, "batest.reference_fmr must be a list"),
    ("reference_fmr", [], "batest.reference_fmr needs at least 1"),
    ("reference_fmr", [0.001, 1.0], r"batest.reference_fmr\[1\] must lie in \(0, 1\)"),
    ("tpr_fmr", "1e-4", "batest.tpr_fmr must be a number"),
    ("impostors_per_genuine", -2, "batest.impostors_per_genuine must lie in"),
    ("balance_on", "face_area", "batest.balance_on must be a list"),
    ("filters", {"pose": {"max_abs": 20}}, "batest.filters.pose: no 'columns'"),
    ("filters", {"pose": {"columns": "yaw", "max_abs": 20}}, "batest.filters.pose.columns must be a list"),
    ("filters", {"pose": {"columns": ["yaw"], "max_abs": "20"}}, "batest.filters.pose.max_abs must be a number"),
])
def test_config_rejects_a_mistyped_value(key, value, match):
    with pytest.raises(ValueError, match=match):
        bt.BATestConfig.from_params({key: value})


# --------------------------------------------------------------------------- known truth
# The BA-test world (facebias.worlds.batest) plants a genuine gender gap M - F of 0.04 per race
# and the two confounds paper 003 describes: female pairs' face masks overlap less (mask-IoU
# effect b_iou = 0.03 per 0.1 of IoU: it overstates the gap, by about 0.009 on the default
# world) and bearded males score lower (2 b_hair = 0.06 per genuine pair: it understates the
# gap by 0.06 x the bearded share of male identities, A 15 %, B 50 %, I 40 %, W 30 %).


@pytest.fixture(scope="module")
def ba_world():
    from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world

    c = BAWorldConfig()
    kept, accounting = bt.apply_filters(make_batest_world(c))
    pairs = batest_pairs(kept, c, 2.0, seed=11)
    return c, kept, accounting, pairs


def test_table1_directions_follow_the_plant_by_construction(ba_world):
    """By construction, not agreement with the paper: Table 1's directions on the world, each
    following from the plant: the IoU cut removes the female pairs whose masks differ, so
    balanced < original (Δd′ and mean gap) in every race; dropping facial hair then removes the bearded males' 0.06, so
    balanced + NFH > balanced in every race; and in B and I, where the beard understatement
    (0.03, 0.024) exceeds the morphology effect (0.009), balanced + NFH > original by more than
    30 % (expected about +110 % and +60 %; the paper: +116 % and +75 %)."""
    c, _, _, pairs = ba_world
    gaps = bt.gender_gaps(bt.table1_pair_sets(pairs), planted=c.true_gender_gap())
    for col in ("dprime_genuine", "gap_genuine"):
        orig, bal, nfh = (gaps.loc[k, col] for k in ("original", "balanced", "balanced_nfh"))
        assert (bal < orig).all(), (col, bal, orig)
        assert (nfh > bal).all(), (col, nfh, bal)
        for r in "BI":
            assert nfh[r] > 1.3 * orig[r], (col, r, nfh[r], orig[r])
    pct = bt.table1_percentages(bt.table1_measured(gaps))
    gen = pct[(pct["kind"] == "genuine") & (pct["race"] != "all")].set_index(["condition", "race"])["rom_pct"]
    assert (gen["balanced"] < 0).all() and gen.loc[("balanced_nfh", "Black")] > 30


def test_only_balanced_nfh_recovers_the_planted_gap(ba_world):
    """Relative error of the mean gap against the planted 0.04, expected from the plant:
    original |0.009 - 0.06 x 0.34| / 0.04 = 0.28, balanced (morphology gone, beard left)
    0.47, balanced + NFH (both gone) about 0. The IoU cut and the NFH exclusion are
    measurements on pairs: each could leave the confound in, which these bounds would see."""
    c, _, _, pairs = ba_world
    truth = c.true_gender_gap()
    gaps = bt.gender_gaps(bt.table1_pair_sets(pairs), planted=truth)
    err = bt.gap_rel_error_mean(gaps, truth)
    assert err["original"] > 0.2 and err["balanced"] > 0.3 and err["balanced_nfh"] < 0.15, err
    nfh = gaps.loc["balanced_nfh", "gap_genuine"]
    for r in "ABIW":
        assert abs(nfh[r] - truth[r]) <= 0.25 * truth[r], (r, nfh[r])


def test_null_worlds_invent_no_confound_and_no_gap():
    """(a) The same morphology for both genders and no facial hair: every Table 1 set gives the
    planted gap (nothing to remove, and the cut must not create a difference). (b) Planted
    gap 0 with both confounds: balanced + NFH finds no gap in any race."""
    from facebias.datasets.bfw import BFW_GROUPS
    from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world

    same = {"mask_top": dict.fromkeys(BFW_GROUPS, 0.12), "mask_top_sd": dict.fromkeys(BFW_GROUPS, 0.025),
            "mask_chin": dict.fromkeys(BFW_GROUPS, 0.88), "mask_width": dict.fromkeys(BFW_GROUPS, 0.31),
            "facial_hair_rate": dict.fromkeys(BFW_GROUPS, 0.0)}
    c = BAWorldConfig(**same)
    kept, _ = bt.apply_filters(make_batest_world(c))
    gaps = bt.gender_gaps(bt.table1_pair_sets(batest_pairs(kept, c, seed=11)), planted=c.true_gender_gap())
    err = bt.gap_rel_error_mean(gaps, c.true_gender_gap())
    assert max(err.values()) < 0.15, err
    c0 = BAWorldConfig(genuine_mean=dict.fromkeys(BFW_GROUPS, 0.62))
    kept0, _ = bt.apply_filters(make_batest_world(c0))
    nfh = bt.gender_gap(bt.table1_pair_sets(batest_pairs(kept0, c0, seed=11))["balanced_nfh"])["gap_genuine"]
    assert (nfh.abs() < 0.012).all(), nfh


@pytest.mark.parametrize(("method", "kw"), [("strata", {"bins": 4}), ("nn", {"caliper": 0.2})])
def test_extension_matching_balances_the_image_factors(ba_world, method, kw):
    """The extension (image-level matching of the genders per race) balances what it is asked
    to: facial hair (no female has any, so no bearded male is kept) and quality's SMD shrinks
    to below 0.2 of its size, or stays small when the world has none."""
    c, kept, _, _ = ba_world
    factors = ["face_area", "facial_hair", "quality"]
    matched = bt.balance_within(kept, factors, method=method, **kw)
    rep = bt.balance_report(kept, matched, factors, by="gender")
    hair = rep["factor"] == "facial_hair"
    assert (rep.loc[hair, "mean_after"] == 0).all() and (rep.loc[hair, "mean_before"] > 0).any()
    area = rep["factor"] == "face_area"  # males' masks are larger: SMD about 1 before
    assert (rep.loc[area, "smd_before"].abs() > 0.5).any()
    assert (rep.loc[area, "smd_after"].abs() < 0.2).all()
    assert (rep.loc[~hair, "smd_after"].abs() < 0.2).all()


# --------------------------------------------------------------------------- metrics (summarise)
@pytest.fixture(scope="module")
def ba_summary(ba_world):
    """The notebook's pipeline on the default world at a small bootstrap, then summarise."""
    from facebias.worlds.batest import batest_pairs, make_batest_world

    c, kept, accounting, pairs = ba_world
    cfg = bt.BATestConfig(n_boot=10)
    images = make_batest_world(c)
    pair_sets = bt.table1_pair_sets(pairs, cfg.iou_threshold)
    balanced = bt.balance_within(kept, list(cfg.balance_on), method=cfg.method, bins=cfg.bins, seed=cfg.seed)
    report = bt.balance_report(kept, balanced, list(cfg.balance_on), by="gender")
    pair_sets = {**pair_sets, "extension_strata": batest_pairs(balanced, c, seed=cfg.seed)}
    gaps = bt.gender_gaps(pair_sets, planted=c.true_gender_gap())
    dprimes = pd.DataFrame({k: bt.dprime_by_group(p) for k, p in pair_sets.items() if k != "extension_strata"})
    t3_images = bt.identity_count_subset(images, 30, c.images_per_identity, seed=cfg.seed)
    t3_all = batest_pairs(t3_images, c, impostors="all", factors=False)
    t3_sets = {"unfiltered": t3_all, "filtered": bt.pairs_among(t3_all, kept)}
    fmr_ref, _ = bt.fmr_at_reference_table(t3_sets, cfg.reference_group, cfg.reference_fmr)
    tpr_table = pd.concat({k: bt.tpr_at_fmr(p, 1e-3, n_boot=cfg.n_boot, seed=cfg.seed)
                           for k, p in t3_sets.items()}, names=["set"])
    lfw_pairs = pd.DataFrame({"a": [0, 0, 1, 1], "b": [1, 2, 2, 3], "mask_iou": [0.95, 0.9, 0.5, 0.91]})
    table1 = bt.table1_measured(gaps)
    face_area = bt.face_area_by_gender({"before": kept, "after": bt.images_in_pairs(kept, pair_sets["balanced"])})
    head, details = bt.summarise(
        provenance="p", config=cfg, world=c, images=images, kept=kept, balanced=balanced, accounting=accounting,
        report=report, gaps=gaps, dprimes=dprimes, fmr_ref=fmr_ref, tpr_table=tpr_table, lfw_pairs=lfw_pairs,
        table1=table1, face_area=face_area, n_balanced_pairs=len(pair_sets["balanced"]))
    return {"cfg": cfg, "world": c, "images": images, "kept": kept, "balanced": balanced,
            "pair_sets": pair_sets, "t3_sets": t3_sets, "gaps": gaps,
            "head": head, "details": details}


def test_summarise_headline_gaps_are_the_details_gaps(ba_summary):
    """The headline's per-set gaps and relative errors are recomputed from the details'
    gender-gap rows; the planted gap of every row is the world's."""
    head, details, truth = ba_summary["head"], ba_summary["details"], ba_summary["world"].true_gender_gap()
    assert head["planted_gap_genuine"] == truth and list(head["gap_genuine"]) == list(ba_summary["pair_sets"])
    rows = pd.DataFrame(details["gender_gap"])
    assert len(rows) == 4 * len(truth) and (rows["planted_gap"] == rows["race"].map(truth)).all()
    true_mean = np.mean(list(truth.values()))
    for s, sub in rows.groupby("set", sort=False):
        assert head["gap_genuine"][s] == dict(zip(sub["race"], sub["gap_genuine"], strict=True))
        assert head["gap_rel_error_mean"][s] == pytest.approx(abs(sub["gap_genuine"].mean() - true_mean) / true_mean)
        # and from the pairs themselves: male minus female mean genuine score, race by race
        p = ba_summary["pair_sets"][s]
        gen = p[p["label"] == 1]
        for r in truth:
            m = gen.loc[gen["group"] == f"{r}M", "score"].mean()
            f = gen.loc[gen["group"] == f"{r}F", "score"].mean()
            assert head["gap_genuine"][s][r] == pytest.approx(m - f)
    assert head["n_pairs_iou_balanced"] == len(ba_summary["pair_sets"]["balanced"])


def test_summarise_counts_agree_with_the_frames(ba_summary):
    head, details = ba_summary["head"], ba_summary["details"]
    n = head["n_images"]
    assert n == {"all": len(ba_summary["images"]), "filtered": len(ba_summary["kept"]),
                 "matched_extension": len(ba_summary["balanced"])}
    assert n["all"] > n["filtered"] > n["matched_extension"] > 0
    acc = pd.DataFrame(details["accounting"])
    first, last = acc["filter"].iloc[0], acc["filter"].iloc[-1]
    assert acc.loc[acc["filter"] == first, "n_before"].sum() == n["all"]
    assert acc.loc[acc["filter"] == last, "n_after"].sum() == n["filtered"]
    rep = pd.DataFrame(details["balance_report"])
    for _, sub in rep.groupby("factor"):  # one row per gender and factor
        assert sub["n_before"].sum() == n["filtered"] and sub["n_after"].sum() == n["matched_extension"]
    assert details["factors"] == list(ba_summary["cfg"].balance_on) and details["world"] == {"seed": 3003}


def test_summarise_tables_keep_their_values(ba_summary):
    """d', FMR at the reference's threshold and TPR rows are the study functions' values; the
    reference group sits at (or below) its target FMR; pair IoUs count strictly above 0.9."""
    details, pair_sets, cfg = ba_summary["details"], ba_summary["pair_sets"], ba_summary["cfg"]
    for s in ("original", "balanced", "balanced_nfh"):
        assert details["dprime"][s] == bt.dprime_by_group(pair_sets[s]).to_dict()
    assert list(details["fmr_at_reference"]) == ["unfiltered@0.001", "unfiltered@0.0001", "filtered@0.001",
                                                 "filtered@0.0001"]
    for key, by_group in details["fmr_at_reference"].items():
        s, f = key.split("@")
        table = bt.fmr_at_reference(ba_summary["t3_sets"][s], cfg.reference_group, float(f))
        assert list(by_group) == table.index.tolist()
        np.testing.assert_array_equal(list(by_group.values()), table["fmr"].to_numpy())  # NaN == NaN here
        ref = by_group[cfg.reference_group]
        assert np.isnan(ref) or ref <= float(f)
        # NaN exactly where the table says too few impostors, never a 0 in their place
        assert (table["fmr"].isna() == (table["note"] == "too few impostors")).all()
    tpr = pd.DataFrame(details["tpr_at_fmr"])
    assert set(tpr["set"]) == {"unfiltered", "filtered"}
    assert ((tpr["tpr_lo"] <= tpr["tpr"]) | tpr["tpr"].isna()).all()
    assert (tpr["tpr"].isna() == (tpr["note"] == "too few impostors")).all()
    assert details["lfw_pair_mask_iou"] == {"n_pairs": 4, "n_above_0.9": 2, "median": pytest.approx(0.905)}
    for k in ("real_images", "real_images_fte", "lfw_fte", "lfw_accounting", "lfw_balance_report",
              "identity_count", "identity_noise", "challenging", "table3_impostors"):
        assert details[k] is None  # not run
    t1 = pd.DataFrame(details["table1"]).set_index(["condition", "kind", "matcher"])
    gaps = ba_summary["gaps"]
    for (cond, kind, _), row in t1.iterrows():  # Δd' of each set, race by race
        for race, letter in (("Asian", "A"), ("Black", "B"), ("Indian", "I"), ("White", "W")):
            assert row[race] == pytest.approx(gaps.loc[(cond, letter), f"dprime_{kind}"])
    fa = pd.DataFrame(details["face_area"])
    assert set(fa["set"]) == {"before", "after"} and (fa["gap"] == fa["mean_M"] - fa["mean_F"]).all()


def test_summarise_writes_strict_json(ba_summary, tmp_path):
    import json

    from facebias.io import write_json_atomic

    for part in ("head", "details"):
        path = write_json_atomic(tmp_path / f"{part}.json", ba_summary[part])
        assert json.loads(path.read_text())["source"] == "synthetic"


def test_gender_gaps_stack_the_sets_and_check_the_planted_races(ba_summary):
    pair_sets = ba_summary["pair_sets"]
    gaps = bt.gender_gaps(pair_sets)
    assert "planted_gap" not in gaps and list(gaps.index.names) == ["set", "race"]
    pd.testing.assert_frame_equal(gaps.loc["balanced"], bt.gender_gap(pair_sets["balanced"]))
    with pytest.raises(ValueError, match=r"no planted gap for race\(s\) \['W'\]"):
        bt.gender_gaps(pair_sets, planted={"A": 0.04, "B": 0.04, "I": 0.04})
    with pytest.raises(ValueError, match="no evaluation sets"):
        bt.gender_gaps({})


# --------------------------------------------------------------------------- identity noise (Fig. 6a)
def test_identity_outliers_find_the_planted_mislabelled_images():
    """Recall and precision of the dropped images on a world with 15 % planted label noise
    (two seeds); a clean world drops (almost) nothing."""
    from facebias.worlds.batest import identity_noise_world

    for seed in (1, 2):
        emb, imgs = identity_noise_world(noise_rate=0.15, spread=1.1, seed=seed)
        drop, bad = bt.identity_outliers(emb, imgs["identity"]), imgs["mislabelled"].to_numpy()
        assert bad.sum() == 150
        assert (drop & bad).sum() / bad.sum() >= 0.95  # recall
        assert (drop & bad).sum() / drop.sum() >= 0.95  # precision
        emb0, imgs0 = identity_noise_world(noise_rate=0.0, spread=1.1, seed=seed)
        assert bt.identity_outliers(emb0, imgs0["identity"]).mean() <= 0.01


def test_identity_outliers_hand_cases_and_sklearn():
    """A second identity's images filed in one folder form their own DBSCAN cluster: they
    still go, as they are outside the largest one; the mask is sklearn's DBSCAN, folder by
    folder; eps too small for any cluster flags the whole folder."""
    from sklearn.cluster import DBSCAN

    rng = np.random.default_rng(5)
    a, b = np.eye(8)[0], np.eye(8)[1]
    emb = np.r_[a + 0.1 * rng.normal(size=(10, 8)), b + 0.1 * rng.normal(size=(4, 8))]
    folder = np.r_[["x"] * 14]
    lab = DBSCAN(eps=0.6, min_samples=3, metric="cosine").fit_predict(emb)
    assert len(set(lab[:10])) == 1 and len(set(lab[10:])) == 1 and lab[0] != lab[10] >= 0
    drop = bt.identity_outliers(emb, folder)
    assert drop.tolist() == [False] * 10 + [True] * 4
    # folders are cleaned separately: the same rows filed as two folders drop nothing
    assert not bt.identity_outliers(emb, np.r_[["x"] * 10, ["y"] * 4]).any()
    assert bt.identity_outliers(emb, folder, eps=1e-9).all()
    with pytest.raises(ValueError, match="zero norm"):
        bt.identity_outliers(np.zeros((3, 2)), ["x"] * 3)
    with pytest.raises(ValueError, match="identities"):
        bt.identity_outliers(emb, ["x"] * 3)
    with pytest.raises(ValueError, match="eps"):
        bt.identity_outliers(emb, folder, eps=2.5)


# --------------------------------------------------------------------------- identity count (Fig. 9)
def _count_world(**kw):
    from functools import partial

    from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world

    c = BAWorldConfig(identities_per_group=60, images_per_identity=16, **kw)
    return make_batest_world(c), partial(batest_pairs, config=c)


DESIGNS = ((60, 8), (30, 11), (15, 16))  # the paper's 200x15, 100x20, 50x25 scaled to a 60 x 16 world


def test_identity_count_subsets_have_the_asked_sizes():
    images, _ = _count_world()
    sub = bt.identity_count_subset(images, 30, 11, seed=4)
    per = sub.groupby(["group", "identity"], observed=True).size()
    assert (per == 11).all() and (per.groupby(level="group").size() == 30).all()
    assert not sub.index.duplicated().any()
    with pytest.raises(ValueError, match="identities have >= 17 images"):
        bt.identity_count_subset(images, 10, 17)


def test_identity_count_null_world_shows_no_difference():
    """Subsets of one world: every two designs' d' intervals overlap in every group, and the
    identity-block KS permutation test rejects at about its nominal rate."""
    images, pairs_fn = _count_world()
    res = bt.identity_count_experiment(images, pairs_fn, designs=DESIGNS, n_boot=100, n_perm=100)
    dp = res["dprime"]
    assert list(dp["design"].unique()) == ["60x8", "30x11", "15x16"] and len(dp) == 24
    assert (dp["n_genuine"] == dp["n_identities"] * dp["n_images"] * (dp["n_images"] - 1) // 2).all()
    assert ((dp["dprime_lo"] <= dp["dprime"]) & (dp["dprime"] <= dp["dprime_hi"])).all()
    for _, sub in dp.groupby("group"):
        assert sub["dprime_lo"].max() <= sub["dprime_hi"].min()  # all three intervals overlap
    ks = res["ks"]
    assert len(ks) == 3 * 8 * 2 and ks["p_perm"].between(1 / 101, 1).all()
    assert (ks["p_perm"] < 0.05).mean() <= 0.2  # 48 tests, expected 5 % of them
    # the KS statistic is scipy's on the same scores
    p1 = pairs_fn(bt.identity_count_subset(images, 60, 8, seed=0))
    p2 = pairs_fn(bt.identity_count_subset(images, 30, 11, seed=1))
    row = ks[(ks.design_a == "60x8") & (ks.design_b == "30x11") & (ks.group == "BF") & (ks.kind == "genuine")]
    ref = ks_2samp(p1.loc[(p1.group == "BF") & (p1.label == 1), "score"],
                   p2.loc[(p2.group == "BF") & (p2.label == 1), "score"])
    assert row["ks"].item() == pytest.approx(ref.statistic) and row["p_value"].item() == pytest.approx(ref.pvalue)


def test_identity_count_planted_harder_group_differs():
    """A subset from a world whose AF genuine mean is 0.08 lower (a harder group, about 0.8 of
    the genuine-score SD: noise 0.08, identities 0.02, image factors) differs
    from the same design drawn from the default world: AF's d' intervals are disjoint and
    the KS permutation test rejects; the other groups' intervals still overlap."""
    from facebias.worlds.batest import BAWorldConfig

    images, pairs_fn = _count_world()
    hard = dict(BAWorldConfig().genuine_mean, AF=0.52)
    images_h, pairs_fn_h = _count_world(genuine_mean=hard, seed=77)
    pa = pairs_fn(bt.identity_count_subset(images, 30, 11, seed=0))
    pb = pairs_fn_h(bt.identity_count_subset(images_h, 30, 11, seed=0))
    da, db = bt.dprime_identity_bootstrap(pa, n_boot=100), bt.dprime_identity_bootstrap(pb, n_boot=100)
    assert db.loc["AF", "dprime_hi"] < da.loc["AF", "dprime_lo"]
    others = [g for g in da.index if g != "AF"]
    assert (np.maximum(da.loc[others, "dprime_lo"], db.loc[others, "dprime_lo"])
            <= np.minimum(da.loc[others, "dprime_hi"], db.loc[others, "dprime_hi"])).all()
    ks = bt.score_ks(pa, pb, n_perm=100).set_index(["group", "kind"])
    assert ks.loc[("AF", "genuine"), "p_perm"] == pytest.approx(1 / 101)
    assert ks.loc[("AF", "genuine"), "ks"] > 3 * ks.drop(("AF", "genuine"))["ks"].median()


# --------------------------------------------------------------------------- challenging subset (section 5)
def test_challenging_subset_hand_case_and_sizes():
    """Min-max normalised qualities averaged over columns; per group n_subjects x n_images
    drawn strictly below the group's median; too few eligible identities raise."""
    imgs = pd.DataFrame({"group": np.repeat(["AF", "WM"], 12), "identity": np.repeat(np.arange(6), 4),
                         "q1": np.r_[[1, 2, 9, 9, 1, 9, 9, 9, 1, 2, 3, 9], np.arange(12)].astype(float),
                         "q2": 5.0})
    sub = bt.challenging_subset(imgs, ["q1", "q2"], n_subjects=2, n_images=2, seed=3)
    qn = (imgs["q1"] - 0) / 11 / 2  # q1 spans 0..11; constant q2 normalises to 0
    assert np.allclose(sub["quality_norm"], qn.loc[sub.index])
    assert (sub["quality_norm"] < sub["quality_median"]).all()
    af = sub[sub.group == "AF"]
    assert sorted(af["identity"]) == [0, 0, 2, 2]  # identity 1 has one image below the median
    assert af["quality_median"].iloc[0] == pytest.approx(6 / 22)  # median of AF's normalised q1
    wm = sub[sub.group == "WM"]  # WM qualities 0..11: median 5.5, identity 3 (0-3) and 4 (4-7)
    assert sorted(wm["identity"]) == [3, 3, 4, 4] and set(wm.index) <= set(range(12, 18))
    with pytest.raises(ValueError, match="1 identities have >= 3 images"):
        bt.challenging_subset(imgs, ["q1"], n_subjects=2, n_images=3)
    few = bt.challenging_subset(imgs, ["q1"], n_subjects=2, n_images=3, allow_fewer=True)
    assert few.groupby("group").size().to_dict() == {"AF": 3, "WM": 3}


def test_challenging_subset_finds_the_planted_quality_effect():
    """With a planted quality effect b = 0.3 on genuine scores (per image), the challenging
    subset's mean genuine score is below a random 90 x 5 subset's by about
    2 b sd sqrt(2 / pi) = 0.072 (quality sd 0.15); with b = 0 it is not."""
    from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world

    def gap(b):
        c = BAWorldConfig(identities_per_group=100, effects={"quality": b})
        images = make_batest_world(c)
        ch = bt.challenging_subset(images, n_subjects=90, n_images=5, seed=1)
        assert (ch.groupby("group", observed=True)["identity"].nunique() == 90).all() and len(ch) == 8 * 450
        rnd = bt.identity_count_subset(images, 90, 5, seed=1)
        g = lambda p: p[p.label == 1].groupby("group", observed=True)["score"].mean()  # noqa: E731
        return g(batest_pairs(ch, c)) - g(batest_pairs(rnd, c))

    expected = -2 * 0.3 * 0.15 * np.sqrt(2 / np.pi)
    assert (gap(0.3) - expected).abs().max() < 0.02
    assert gap(0.0).abs().max() < 0.01


# --------------------------------------------------------------------------- Fig. 16 heatmaps
def test_mask_heatmap_planted_morphology():
    """Planted: female masks reach two rows higher (upper face), male masks two rows lower
    (chin); the difference is +1 / -1 on exactly those rows, 0 elsewhere, and equals the
    brute-force pixel means. A null (same masks in both groups) gives 0 everywhere."""
    rng = np.random.default_rng(2)
    base = np.zeros((20, 10, 10), dtype=bool)
    base[:, 3:7, 2:8] = True
    f, m = base[:10].copy(), base[10:].copy()
    f[:, 1:3, 2:8] = True
    m[:, 7:9, 2:8] = True
    masks = np.r_[f, m]
    groups = np.array(["F"] * 10 + ["M"] * 10)
    order = rng.permutation(20)
    diff, mf, mm = bt.mask_heatmap(masks[order], groups[order], "F", "M")
    assert np.array_equal(mf, f.mean(axis=0)) and np.array_equal(mm, m.mean(axis=0))
    assert (diff[1:3, 2:8] == 1).all() and (diff[7:9, 2:8] == -1).all()
    assert np.count_nonzero(diff) == 2 * 2 * 6
    null = np.r_[base[:10], base[:10]]
    assert not bt.mask_heatmap(null, groups, "F", "M")[0].any()
    with pytest.raises(ValueError, match="no masks of group 'X'"):
        bt.mask_heatmap(masks, groups, "F", "X")
    with pytest.raises(ValueError, match="0/1"):
        bt.mask_heatmap(masks * 2.5, groups, "F", "M")
