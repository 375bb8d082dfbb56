"""Paper 002 study on the known-truth world: planted subgroup effects are found, nulls are not."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from facebias import metrics
from facebias.datasets.bfw import BFW_GROUPS
from facebias.studies import bfw as study
from facebias.worlds.bfw import SIM_A, BFWWorldConfig, SystemSpec, make_bfw_world

FARS = [0.1, 0.01, 0.001]


@pytest.fixture(scope="module")
def default_world():
    return make_bfw_world(BFWWorldConfig())


@pytest.fixture(scope="module")
def cv_default(default_world):
    return study.fold_average(study.cross_validated_rates(default_world, "sim_a", FARS))


def test_subgroup_thresholds_level_held_out_fmr_at_1e3(cv_default):
    """Done-when check: per-group thresholds bring every subgroup within +-15% of FAR 1e-3."""
    grp = study.fpr_deviation_table(cv_default, "group")[0.001]
    assert len(grp) == 8
    assert grp.abs().max() <= 15, grp


def test_global_threshold_shows_the_planted_deviation(cv_default):
    glob = study.fpr_deviation_table(cv_default, "global")[0.001]
    rho = pd.Series(SIM_A.group_similarity)
    # the planted identity similarity orders the subgroups' FPR deviations
    assert spearmanr(rho[glob.index], glob).statistic > 0.8
    assert glob["AF"] > 30 and glob["WM"] < -30  # the most and least similar subgroups
    fmr = cv_default.query("policy == 'global' and fmr_target == 0.001")["fmr"]
    assert metrics.max_min_ratio(fmr) > 2.5


def test_null_world_shows_no_deviation_at_a_global_threshold():
    """Equal rho and noise in every subgroup: one global threshold is already fair."""
    null = SystemSpec("null", dict.fromkeys(BFW_GROUPS, 0.2), 0.9)
    df = make_bfw_world(BFWWorldConfig(systems=(null,), seed=11))
    avg = study.fold_average(study.cross_validated_rates(df, "null", [0.01]))
    glob = study.fpr_deviation_table(avg, "global")[0.01]
    assert glob.abs().max() < 25, glob  # identity-correlated noise only, no planted shift
    planted = make_bfw_world(BFWWorldConfig(systems=(SIM_A,), seed=11))
    avg_p = study.fold_average(study.cross_validated_rates(planted, "sim_a", [0.01]))
    assert study.fpr_deviation_table(avg_p, "global")[0.01].abs().max() > 2 * glob.abs().max()


def test_thresholds_are_fitted_on_other_folds_only():
    df = make_bfw_world(BFWWorldConfig(identities_per_group=10, images_per_identity=5, seed=3))
    cv = study.cross_validated_rates(df, "sim_a", [0.01], grouping="intra")
    intra = df[df.a1.astype(str) == df.a2.astype(str)]
    for k in (1, 3):
        train = intra[(intra.fold != k) & (intra.label == 0)]
        expect_glob = metrics.threshold_at_fmr(train["sim_a"], 0.01)
        expect_af = metrics.threshold_at_fmr(train.loc[train.a1 == "AF", "sim_a"], 0.01)
        rows = cv[(cv.fold == k) & (cv.group == "AF")].set_index("policy")
        assert rows.loc["global", "threshold"] == pytest.approx(expect_glob)
        assert rows.loc["group", "threshold"] == pytest.approx(expect_af)
        test_af = intra[(intra.fold == k) & (intra.a1 == "AF")]
        imp = test_af.loc[test_af.label == 0, "sim_a"]
        assert rows.loc["group", "fmr"] == pytest.approx(np.mean(imp > expect_af))


def test_tar_at_far_table_is_one_minus_fnmr(cv_default):
    t = study.tar_at_far_table(cv_default)
    row = cv_default.query("policy == 'group' and fmr_target == 0.01 and group == 'BF'").iloc[0]
    assert t.loc["BF", ("group", 0.01)] == pytest.approx(1 - row.fnmr)
    assert t.loc["Avg", ("global", 0.1)] == pytest.approx(t.drop("Avg")[("global", 0.1)].mean())


def test_legacy_tar_hand_computed():
    # one group, decision threshold 0.5: rejected pairs are those <= 0.5
    df = pd.DataFrame({"a1": ["AF"] * 6, "a2": ["AF"] * 6, "fold": [1] * 6, "label": [0] * 6,
                       "s": [-0.2, 0.0, 0.05, 0.2, 0.4, 0.9]})
    t = study.legacy_tar_table(df, "s", [0.1, 0.3], 0.5, {"AF": 0.3})
    # global: rejected {-0.2, 0, .05, .2, .4}; share > 0.1 is 2/5 -> 0.6; share > 0.3 is 1/5 -> 0.8
    assert t.loc[("global", "AF"), 0.1] == pytest.approx(0.6)
    assert t.loc[("global", "AF"), 0.3] == pytest.approx(0.8)
    # per group t = 0.3: rejected {-0.2, 0, .05, .2}; share > 0.3 is 0 -> exactly 1.0
    assert t.loc[("group", "AF"), 0.3] == 1.0


def test_accuracy_optimal_threshold_brute_force():
    rng = np.random.default_rng(0)
    s = np.r_[rng.normal(1, 1, 300), rng.normal(-1, 1, 700)].round(2)
    y = np.r_[np.ones(300), np.zeros(700)]
    grid = np.linspace(-2, 2, 401)
    acc = np.array([np.mean((s > t) == y) for t in grid])
    expect = grid[np.flatnonzero(acc == acc.max())[-1]]
    assert study.accuracy_optimal_threshold(s, y, grid) == expect


def test_bad_grouping_is_an_error():
    with pytest.raises(ValueError, match="grouping"):
        study.select_pairs(pd.DataFrame({"a1": ["AF"], "a2": ["AF"]}), "both")


def _legacy_pairs(seed=0, n=400, shift=0.0):
    """Intra-subgroup pairs of AF and WM over 5 folds (WM's scores are AF's plus ``shift``:
    the same pairs, moved), and cross-subgroup AF-WM pairs that the "intra" grouping drops."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    s = np.where(label == 1, rng.normal(0.5, 0.15, n), rng.normal(0.1, 0.15, n)).round(3)
    fold = np.tile(np.arange(1, 6), n // 5)
    af = pd.DataFrame({"fold": fold, "label": label, "a1": "AF", "a2": "AF", "s": s})
    wm = af.assign(a1="WM", a2="WM", s=s + shift)
    cross = pd.DataFrame({"fold": fold[:50], "label": 1 - label[:50], "a1": "AF", "a2": "WM",
                          "s": np.where(label[:50] == 1, -1.0, 2.0)})  # would pull any threshold
    return pd.concat([af, wm, cross], ignore_index=True)


def test_legacy_decision_thresholds_match_a_brute_force_loop():
    """Per fold, the accuracy-optimal threshold (largest on ties) on the other folds' intra
    pairs, over n_grid points from the 0.1% to the 99.9% score quantile; then the mean over
    folds. A loop over folds, groups and grid points gives the same numbers."""
    df = _legacy_pairs(seed=1, shift=0.2)
    n_grid = 200
    got_glob, got_grp = study.legacy_decision_thresholds(df, "s", "intra", n_grid=n_grid)
    intra = df[df["a1"] == df["a2"]]
    s, y = intra["s"].to_numpy(), intra["label"].to_numpy() == 1
    fold, group = intra["fold"].to_numpy(), intra["a1"].to_numpy()
    grid = np.linspace(np.quantile(s, 0.001), np.quantile(s, 0.999), n_grid)

    def best(mask):
        acc = [np.mean((s[mask] > t) == y[mask]) for t in grid]
        return grid[max(i for i, a in enumerate(acc) if a == max(acc))]

    want_glob = np.mean([best(fold != k) for k in range(1, 6)])
    want_grp = {g: np.mean([best((fold != k) & (group == g)) for k in range(1, 6)]) for g in ("AF", "WM")}
    assert got_glob == pytest.approx(want_glob, abs=1e-12)
    assert got_grp == pytest.approx(want_grp, abs=1e-12)
    # the cross-subgroup pairs take no part: without them, the same thresholds
    assert study.legacy_decision_thresholds(intra, "s", "intra", n_grid=n_grid) == (got_glob, got_grp)


def test_legacy_decision_thresholds_follow_a_planted_shift_and_not_a_null():
    """WM's pairs are AF's with every score moved by +0.3: WM's threshold moves by 0.3 (to
    within one grid step per fold), and the global one lies between them. With no shift the
    two subgroups hold the same scores, so their thresholds are equal."""
    shifted = _legacy_pairs(seed=2, shift=0.3)
    t_glob, t_grp = study.legacy_decision_thresholds(shifted, "s", "intra")
    intra = shifted[shifted["a1"] == shifted["a2"]]["s"]
    step = (np.quantile(intra, 0.999) - np.quantile(intra, 0.001)) / 999
    assert abs(t_grp["WM"] - t_grp["AF"] - 0.3) <= step
    assert t_grp["AF"] < t_glob < t_grp["WM"]
    _, null = study.legacy_decision_thresholds(_legacy_pairs(seed=2), "s", "intra")
    assert null["AF"] == null["WM"]


# --------------------------------------------------------------------------- the study's steps
def test_bfw_config_parses_params_and_rejects_bad_keys():
    from pathlib import Path

    from facebias.io import load_params

    cfg = study.BFWConfig.from_params(load_params(Path(__file__).resolve().parents[1] / "params.yaml", "bfw"))
    assert cfg.grouping in study.GROUPINGS and all(0 < f <= 1 for f in cfg.fmr)
    for bad, match in (({"fmrs": [0.1]}, "unknown key"), ({"fmr": [0.1, 0]}, r"bfw.fmr\[1\]"),
                       ({"grouping": "pair"}, "bfw.grouping"), ({"n_boot": "5"}, "bfw.n_boot"),
                       ({"systems": "sim_a"}, "bfw.systems must be a list"),
                       ({"real": {"v1": {"datatable": "x.csv"}}}, "bfw.real.v1")):
        with pytest.raises(ValueError, match=match):
            study.BFWConfig.from_params(bad)


def test_subgroup_curves_agree_with_metrics_per_group(default_world):
    pairs = study.select_pairs(default_world, "query")
    sg = study.subgroup_curves(pairs, ["sim_a"], ["AF", "WM"])
    for g in ("AF", "WM"):
        sub = pairs[pairs["group"] == g]
        gen, imp = sub.loc[sub["label"] == 1, "sim_a"], sub.loc[sub["label"] == 0, "sim_a"]
        assert sg.eer["sim_a"][g] == metrics.eer(gen, imp)
        assert sg.d_prime["sim_a"][g] == metrics.d_prime(gen, imp)
        c = metrics.det_curve(gen, imp)
        np.testing.assert_array_equal(sg.curves["sim_a"][g].fmr, c.fmr)
    t = sg.table()
    assert list(t.index) == [("sim_a", "AF"), ("sim_a", "WM")] and t.loc[("sim_a", "AF"), "EER"] == sg.eer["sim_a"]["AF"]
    det = study.det_plot_table(sg.curves, n=20)
    assert list(det.columns) == ["system", "subgroup", "fmr", "fnmr"]
    assert det.groupby("subgroup").size().max() <= 22 and set(det["subgroup"]) == {"AF", "WM"}


def test_summarise_headline_is_derived_from_the_details(default_world, cv_default, tmp_path):
    cfg = study.BFWConfig(fmr=(0.01, 0.001), report_fmr=(0.01,), n_boot=0)
    pairs = study.select_pairs(default_world, cfg.grouping)
    sg = study.subgroup_curves(pairs, ["sim_a"], list(BFW_GROUPS))
    avg = {"sim_a": study.fold_average(study.cross_validated_rates(default_world, "sim_a", cfg.fmr))}
    t_glob, t_grp = study.legacy_decision_thresholds(default_world, "sim_a", "intra")
    legacy = {"sim_a": study.legacy_tar_table(default_world, "sim_a", cfg.fmr, t_glob, t_grp, "intra")}
    rep = {"sim_a": metrics.group_report(pairs, "sim_a", "label", "group", [0.01], ids=("id1", "id2"), n_boot=0)}
    head, details = study.summarise(source="synthetic", provenance="p", datatable="w.parquet", config=cfg,
                                    systems=["sim_a"], fold_averages=avg, curves=sg, legacy=legacy, reports=rep)
    h, d = head["systems"]["sim_a"], details["systems"]["sim_a"]
    assert h["eer_max"] == max(d["eer"].values()) and h["eer_min"] == min(d["eer"].values())
    for policy in ("global", "group"):
        for f in ("0.01", "0.001"):
            assert h["max_abs_fmr_dev_pct"][policy][f] == max(abs(v) for v in d["fmr_dev_pct"][policy][f].values())
    sub = avg["sim_a"][(avg["sim_a"]["policy"] == "global") & (avg["sim_a"]["fmr_target"] == 0.01)]
    assert h["fmr_ratio_global"]["0.01"] == pytest.approx(sub["fmr"].max() / sub["fmr"].min())
    # the group thresholds level the held-out FMR better than the global one (the planted effect)
    assert h["max_abs_fmr_dev_pct"]["group"]["0.01"] < h["max_abs_fmr_dev_pct"]["global"]["0.01"]
    written = study.write_det_csv(study.det_plot_table(sg.curves, n=10), tmp_path / "det.csv")
    assert written.read_text().splitlines()[0] == "system,subgroup,fmr,fnmr"
