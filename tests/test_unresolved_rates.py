"""Issue 19, defects 4 and 5: rates the data cannot resolve are NaN and flagged (one rule,
``metrics.enough_impostors``), and bootstrap intervals agree with a brute-force loop and
never silently exclude their own estimate."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from facebias import metrics as M  # noqa: E402
from facebias import plots  # noqa: E402
from facebias.cli import main  # noqa: E402
from facebias.stats import bootstrap_weights, percentile_interval, percentile_mc_error  # noqa: E402
from facebias.studies import bfw as study  # noqa: E402

SUMMARY_STATS = ("fmr_ratio", "fnmr_ratio", "fdr", "garbe", "inequity_rate")
TABLE_STATS = ("fmr_global", "fnmr_global", "threshold_group", "fmr_group", "fnmr_group")


def boundary_pairs(n_a: int = 1000, n_b: int = 999) -> pd.DataFrame:
    """Group A: n_a impostors at 0, 1/n_a, ..., B: n_b; each 10 genuine scores 1.0 .. 1.45."""
    gen = 1.0 + 0.05 * np.arange(10)
    rows = []
    for g, n in (("A", n_a), ("B", n_b)):
        rows.append(pd.DataFrame({"score": np.r_[np.arange(n) / n, gen], "label": np.r_[np.zeros(n), np.ones(10)],
                                  "group": g}))
    return pd.concat(rows, ignore_index=True)


# --------------------------------------------------------------------------- defect 4: the rule
def test_group_report_resolves_at_exactly_10_over_fmr_and_not_one_fewer():
    f = 0.01  # 10 / f = 1000 impostors
    assert M.enough_impostors(1000, f) and not M.enough_impostors(999, f)
    df = boundary_pairs(1000, 999)
    rep = M.group_report(df, "score", "label", "group", f, n_boot=0)
    t = rep.table.set_index("group")
    assert t["resolved"].tolist() == [True, False]
    # A by hand: 10 of its 1000 impostors may exceed t -> t = 989/1000; genuine all above it
    assert t.loc["A", "threshold_group"] == pytest.approx(0.989)
    assert t.loc["A", "fmr_group"] == pytest.approx(0.01) and t.loc["A", "fnmr_group"] == 0.0
    # B (999 impostors) is unresolved: NaN, never a number, and labelled
    for c in ("threshold_group", "fmr_group", "fnmr_group", "fmr_global", "fmr_dev_global_pct", "fmr_dev_group_pct"):
        assert np.isnan(t.loc["B", c]), c
    assert t.loc["B", "note"] == M.TOO_FEW_IMPOSTORS and t.loc["A", "note"] == ""
    # the pooled threshold (1999 impostors) is resolved, so is B's FNMR at it
    assert np.isfinite(t.loc["B", "threshold_global"]) and np.isfinite(t.loc["B", "fnmr_global"])
    # a summary across groups with an unresolved group is unresolved
    s = rep.summary
    assert not s["resolved"].any()
    assert s[list(SUMMARY_STATS)].isna().all().all()
    # JSON: null plus the flag
    d = json.loads(rep.to_json())
    row_b = next(r for r in d["groups"] if r["group"] == "B")
    assert row_b["resolved"] is False and row_b["fmr_group"] is None
    # one more impostor in B: everything resolved, nothing NaN
    ok = M.group_report(boundary_pairs(1000, 1000), "score", "label", "group", f, n_boot=0)
    assert ok.table["resolved"].all() and ok.summary["resolved"].all()
    assert not ok.table[list(TABLE_STATS)].isna().any().any()


def test_group_report_pooled_threshold_unresolved_makes_every_rate_nan():
    df = boundary_pairs(400, 400)  # 800 pooled < 1000
    rep = M.group_report(df, "score", "label", "group", [0.01, 0.1], n_boot=20)
    t = rep.table
    low = t[t.fmr_target == 0.01]
    assert not low["resolved"].any()
    assert low[["threshold_global", "fnmr_global", "fnmr_global_lo", "fnmr_global_hi"]].isna().all().all()
    high = t[t.fmr_target == 0.1]  # 400 >= 10 / 0.1: resolved, intervals too
    assert high["resolved"].all() and high[["fmr_group", "fnmr_group_lo"]].notna().all().all()


def test_cli_warns_and_prints_nan_for_an_unresolvable_fmr(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = []
    for g in "AB":
        rows.append(pd.DataFrame({"score": np.r_[rng.normal(0, 1, 1200), rng.normal(3, 1, 100)],
                                  "genuine": np.r_[np.zeros(1200, int), np.ones(100, int)], "grp": g}))
    path = tmp_path / "small.csv"
    pd.concat(rows).to_csv(path, index=False)
    base = ["metrics", str(path), "--score-col", "score", "--label-col", "genuine", "--group-col", "grp",
            "--n-boot", "10"]
    assert main([*base, "--fmr", "1e-9", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "warning" in err and "too few impostors" in err and "1e-09" in err and "1200" in err
    rep = json.loads(out)
    assert all(r["resolved"] is False and r["fmr_group"] is None and r["fnmr_group"] is None for r in rep["groups"])
    assert all(r["fnmr_ratio"] is None and r["fdr"] is None for r in rep["summary"])
    assert main([*base, "--fmr", "1e-9"]) == 0
    out, err = capsys.readouterr()
    assert "nan" in out and "too few impostors" in out and "warning" in err
    assert main([*base, "--fmr", "0.1"]) == 0  # 1200 >= 100: resolved, no warning
    out, err = capsys.readouterr()
    assert err == ""


def small_bfw_table(n_per_fold: int) -> pd.DataFrame:
    """Two subgroups, 5 folds, n_per_fold impostors and 20 genuine pairs per subgroup and fold."""
    rng = np.random.default_rng(1)
    rows = []
    for k in range(1, 6):
        for g in ("AF", "WM"):
            s = np.r_[rng.normal(0, 1, n_per_fold), rng.normal(3, 1, 20)]
            rows.append(pd.DataFrame({"fold": k, "a1": g, "a2": g, "label": np.r_[np.zeros(n_per_fold, int),
                                                                                  np.ones(20, int)], "s": s}))
    return pd.concat(rows, ignore_index=True)


def test_cross_validated_rates_resolve_at_10_over_fmr_held_out_and_trained():
    f = 0.01
    cv = study.cross_validated_rates(small_bfw_table(1000), "s", [f])  # held out 1000, trained >= 4000
    assert cv["resolved"].all() and cv[["fmr", "fnmr"]].notna().all().all()
    cv = study.cross_validated_rates(small_bfw_table(999), "s", [f, 0.1])
    low, high = cv[cv.fmr_target == f], cv[cv.fmr_target == 0.1]
    assert not low["resolved"].any() and low[["fmr", "fnmr"]].isna().all().all()
    assert high["resolved"].all() and high[["fmr", "fnmr"]].notna().all().all()
    avg = study.fold_average(cv)
    assert avg.loc[avg.fmr_target == f, ["fmr", "fnmr", "tar", "fmr_dev_pct"]].isna().all().all()
    assert not avg.loc[avg.fmr_target == f, "resolved"].any()
    dev = study.fpr_deviation_table(avg, "global")
    assert dev[f].isna().all() and dev[0.1].notna().all()
    tar = study.tar_at_far_table(avg)
    assert tar[("global", f)].isna().all() and tar[("global", 0.1)].notna().all()


def test_bfw_real_like_small_table_reports_no_deviation_at_1e4():
    """The bfw_real notebook's '4,551 % deviation' at FMR 1e-4 on a 2,400-row datatable."""
    avg = study.fold_average(study.cross_validated_rates(small_bfw_table(220), "s", [0.1, 1e-4]))
    dev = study.fpr_deviation_table(avg, "global")
    assert dev[1e-4].isna().all() and dev[0.1].notna().all()


def test_fold_averaged_det_is_nan_below_the_resolvable_fmr():
    df = small_bfw_table(500)  # 500 per fold: resolved down to FMR 0.02
    curves, _ = study.fold_averaged_det(df, "s", fmr_grid=[0.019, 0.02, 0.1])
    c = curves.set_index(["group", "fmr"])
    for g in ("AF", "WM"):
        assert np.isnan(c.loc[(g, 0.019), "fnmr"]) and not c.loc[(g, 0.019), "resolved"]
        assert np.isfinite(c.loc[(g, 0.02), "fnmr"]) and c.loc[(g, 0.02), "resolved"]


def test_heatmap_greys_and_labels_unresolved_cells():
    fig, ax = plt.subplots()
    plots.heatmap(ax, pd.DataFrame({0.1: [5.0, -3.0], 1e-4: [np.nan, 4551.0]}, index=["AF", "WM"]))
    texts = [t.get_text() for t in ax.texts]
    assert "unresolved" in texts and not any("nan" in t for t in texts)
    assert any(p.get_hatch() for p in ax.patches)
    plt.close(fig)


# --------------------------------------------------------------------------- defect 5: intervals
def test_bootstrap_agrees_with_a_brute_force_loop():
    """Each replicate of group_report = group_report on the rows repeated by their bootstrap
    weights (input row order), so the intervals are percentiles of estimates made exactly
    like the point estimate."""
    rng = np.random.default_rng(3)
    rows = []
    for g, shift in (("A", 0.0), ("B", 0.4)):
        ids = [f"{g}{i}" for i in range(30)]
        i1, i2 = rng.choice(ids, 1500), rng.choice(ids, 1500)
        gid = rng.choice(ids, 150)
        rows.append(pd.DataFrame({"id1": np.r_[i1, gid], "id2": np.r_[i2, gid],
                                  "score": np.r_[rng.normal(shift, 1, 1500), rng.normal(2.5, 1, 150)],
                                  "label": np.r_[np.zeros(1500, int), np.ones(150, int)], "group": g}))
    df = pd.concat(rows, ignore_index=True).sample(frac=1, random_state=0).reset_index(drop=True)
    for ids in (None, ("id1", "id2")):
        rep = M.group_report(df, "score", "label", "group", [0.05, 0.01], ids=ids, n_boot=15, seed=4, ci=0.8)
        idw = {} if ids is None else {"id1": df["id1"].to_numpy(), "id2": df["id2"].to_numpy()}
        tabs, sums = [], []
        for w in bootstrap_weights(len(df), 15, 4, **idw):
            r = M.group_report(df.iloc[np.repeat(np.arange(len(df)), w.astype(int))], "score", "label", "group",
                               [0.05, 0.01], n_boot=0, min_impostor_factor=0)  # resolved on the sample
            tabs.append(r.table[list(TABLE_STATS)].to_numpy())
            sums.append(r.summary[list(SUMMARY_STATS)].to_numpy())
        for frame, names, reps in ((rep.table, TABLE_STATS, tabs), (rep.summary, SUMMARY_STATS, sums)):
            reps = np.stack(reps)
            for end, want in zip(("lo", "hi", "lo_mcse", "hi_mcse"),
                                 (*percentile_interval(reps, 0.8), *percentile_mc_error(reps, 0.8)), strict=True):
                got = frame[[f"{c}_{end}" for c in names]].to_numpy(float)
                if frame is rep.summary:  # the summary leaves a bound NaN where its estimate is
                    want = np.where(np.isnan(frame[list(names)].to_numpy(float)), np.nan, want)
                np.testing.assert_allclose(got, want, rtol=1e-12)
        mc = rep.mc_error
        assert set(mc["source"]) == {"table", "summary"} and (mc["n_bounds"] > 0).all()
        assert (mc["n_boot"] == 15).all() and set(mc["interval"]) >= set(TABLE_STATS) - {"threshold_global"}


def _check_interval_or_flag(frame: pd.DataFrame, stats) -> int:
    """Every finite estimate lies in its interval, or the row's note says which interval
    excludes it; returns how many were flagged."""
    flagged = 0
    for _, row in frame.iterrows():
        for k in stats:
            est, lo, hi = row[k], row[f"{k}_lo"], row[f"{k}_hi"]
            if np.isfinite(est) and not lo <= est <= hi:
                assert f"{k}: interval excludes the estimate" in row["note"], (k, est, lo, hi, row["note"])
                flagged += 1
            elif f"{k}: interval excludes" in row["note"]:
                raise AssertionError(f"{k} flagged but {lo} <= {est} <= {hi}")
    return flagged


def test_ratio_at_its_bound_with_an_interval_above_it_is_flagged():
    """The reported case: a max/min ratio of 1 (every group's FMR at its own threshold is
    exactly the target) with a percentile interval [1.0004, ...] above it: replicates of a
    statistic bounded below by 1 lie above the bound (bootstrap bias), so the output says so."""
    rng = np.random.default_rng(0)
    df = pd.concat([pd.DataFrame({"score": np.r_[rng.normal(0, 1, 5000), rng.normal(3, 1, 300)],
                                  "label": np.r_[np.zeros(5000, int), np.ones(300, int)], "group": g})
                    for g in "AB"], ignore_index=True)
    rep = M.group_report(df, "score", "label", "group", 0.01, n_boot=100, seed=0)
    grp = rep.summary.set_index("policy").loc["group"]
    assert grp["fmr_ratio"] == 1.0 and grp["fmr_ratio_lo"] > 1.0  # the case reproduced
    assert "fmr_ratio: interval excludes the estimate" in grp["note"]
    assert _check_interval_or_flag(rep.summary, SUMMARY_STATS) >= 1
    _check_interval_or_flag(rep.table, TABLE_STATS)
    assert "interval excludes the estimate" in str(rep)


def test_fdr_near_one_with_an_interval_below_it_is_flagged():
    """FDR 1 - gap: replicates of a gap between equal groups are larger than the observed
    one, so the FDR interval can lie below an estimate near 1 (FDR 0.99917, upper 0.99899).
    Two groups with the same scores: the estimate is exactly 1, every replicate below."""
    rng = np.random.default_rng(2)
    one = pd.DataFrame({"score": np.r_[rng.normal(0, 1, 4000), rng.normal(2, 1, 400)],
                        "label": np.r_[np.zeros(4000, int), np.ones(400, int)]})
    df = pd.concat([one.assign(group=g) for g in "AB"], ignore_index=True)
    rep = M.group_report(df, "score", "label", "group", 0.01, n_boot=100, seed=1)
    grp = rep.summary.set_index("policy").loc["group"]
    assert grp["fdr"] == 1.0 and grp["fdr_hi"] < 1.0  # the case reproduced ...
    assert "fdr: interval excludes the estimate" in grp["note"]  # ... and said
    _check_interval_or_flag(rep.summary, SUMMARY_STATS)


def test_zero_rates_give_no_ratio_of_one():
    """FNMR 0 in every group: max/min is 0/0, undefined (NaN with a reason), not 1; FNMR 0
    in one group only: inf, with a reason."""
    assert np.isnan(M.max_min_ratio([0.0, 0.0])) and M.max_min_ratio([0.0, 0.1]) == np.inf
    df = boundary_pairs(1000, 1000)  # every genuine score above every threshold: FNMR 0
    rep = M.group_report(df, "score", "label", "group", 0.01, n_boot=20)
    for _, row in rep.summary.iterrows():
        assert np.isnan(row["fnmr_ratio"]) and np.isnan(row["fnmr_ratio_lo"]) and np.isnan(row["fnmr_ratio_hi"])
        assert "fnmr_ratio: undefined, every group's FNMR is 0" in row["note"]
        assert np.isnan(row["inequity_rate"])
    one = df.copy()
    one.loc[(one.group == "B") & (one.label == 1), "score"] -= 0.2  # B's 0.8 .. 0.95 <= t = 0.989
    rep = M.group_report(one, "score", "label", "group", 0.01, n_boot=0)
    row = rep.summary.set_index("policy").loc["group"]
    assert row["fnmr_ratio"] == np.inf and "fnmr_ratio: inf, a group's FNMR is 0" in row["note"]


def test_det_plot_greys_the_unresolved_tail():
    rng = np.random.default_rng(0)
    imp, gen = rng.normal(0, 1, 500), rng.normal(2, 1, 500)
    curve = M.det_curve(gen, imp)
    ok = plots.resolved_points(curve.fmr, 500)
    # hand rule: FMR f is resolved iff 500 >= 10 / f, i.e. f >= 0.02
    np.testing.assert_array_equal(ok, (curve.fmr >= 0.02))
    fig, ax = plt.subplots()
    plots.plot_det(ax, {"AF": curve}, n_impostor={"AF": 500})
    coloured, grey = ax.lines[0], ax.lines[-1]
    assert np.min(coloured.get_xdata()) >= 0.02 and np.min(grey.get_xdata()) < 0.02
    assert "unresolved" in grey.get_label()
    plt.close(fig)


def test_bfw_summarise_reports_unresolved_as_null_with_a_flag():
    from facebias.io import jsonable

    df = small_bfw_table(220)  # 5 folds x 220 impostors per subgroup: FAR 0.1 resolved, 1e-4 not
    cfg = study.BFWConfig(fmr=(0.1, 1e-4), report_fmr=(0.1,), n_boot=0)
    pairs = study.select_pairs(df, cfg.grouping)
    sg = study.subgroup_curves(pairs, ["s"], ["AF", "WM"])
    avg = {"s": study.fold_average(study.cross_validated_rates(df, "s", cfg.fmr))}
    t_glob, t_grp = study.legacy_decision_thresholds(df, "s", "intra")
    legacy = {"s": study.legacy_tar_table(df, "s", cfg.fmr, t_glob, t_grp, "intra")}
    rep = {"s": M.group_report(pairs, "s", "label", "group", [0.1], n_boot=0)}
    head, details = study.summarise(source="real", provenance="p", datatable="x", config=cfg, systems=["s"],
                                    fold_averages=avg, curves=sg, legacy=legacy, reports=rep)
    h, d = jsonable(head)["systems"]["s"], jsonable(details)["systems"]["s"]
    for p in ("global", "group"):
        assert h["max_abs_fmr_dev_pct"][p]["0.0001"] is None  # was a number such as 4,551 %
        assert h["max_abs_fmr_dev_pct"][p]["0.1"] is not None
        assert d["resolved"][p]["0.0001"] == {"AF": False, "WM": False}
        assert d["resolved"][p]["0.1"] == {"AF": True, "WM": True}
        assert d["fmr_dev_pct"][p]["0.0001"] == {"AF": None, "WM": None}
        assert h["tar_avg"][p]["0.0001"] is None and h["tar_avg"][p]["0.1"] is not None
    assert h["fmr_ratio_global"]["0.0001"] is None
