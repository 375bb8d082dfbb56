"""The headline numbers the study notebooks report, computed by the studies modules (issue 16,
"studies compute; notebooks show"): paper 003's relative gap error
(``studies.batest.gap_rel_error_mean``) and paper 001's voting ablation, partial-annotation
curve, p sweep and breakdown p (``studies.rapid``), on hand-made tables and small
known-truth worlds."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from facebias.studies import batest as bt
from facebias.studies import rapid as R
from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world


# --------------------------------------------------------------------------- paper 003
def _gaps(sets: dict[str, dict[str, float]]) -> pd.DataFrame:
    return pd.concat({k: pd.DataFrame({"gap_genuine": pd.Series(v)}).rename_axis("race")
                      for k, v in sets.items()}, names=["set"])


def test_gap_rel_error_mean_hand_computed():
    gaps = _gaps({"original": {"A": 0.06, "B": 0.10},      # mean 0.08: twice the truth
                  "balanced": {"A": 0.03, "B": 0.05},      # mean 0.04: the truth
                  "nfh": {"A": 0.01, "B": np.nan}})        # NaN skipped: mean 0.01
    planted = {"A": 0.04, "B": 0.04}
    got = bt.gap_rel_error_mean(gaps, planted)
    assert list(got) == ["original", "balanced", "nfh"]  # in order of appearance
    assert got == pytest.approx({"original": 1.0, "balanced": 0.0, "nfh": 0.75}, abs=1e-12)
    # the planted mean is over every planted race: (0.02 + 0.06) / 2 = 0.04 again
    assert bt.gap_rel_error_mean(gaps, {"A": 0.02, "B": 0.06}) == pytest.approx(got, abs=1e-12)
    # a negative planted gap: relative to its size, |0.08 - (-0.04)| / 0.04 = 3
    assert bt.gap_rel_error_mean(gaps, {"A": -0.04})["original"] == pytest.approx(3.0)
    # the same as the notebook's formula on a gender_gap-shaped frame
    gaps["other"] = 1.0
    assert bt.gap_rel_error_mean(gaps, planted, column="other")["balanced"] == pytest.approx(24.0)


def test_gap_rel_error_mean_rejects_bad_inputs():
    gaps = _gaps({"original": {"A": 0.06}})
    with pytest.raises(ValueError, match="non-zero"):
        bt.gap_rel_error_mean(gaps, {"A": 0.0})
    with pytest.raises(ValueError, match="no planted"):
        bt.gap_rel_error_mean(gaps, {})
    with pytest.raises(ValueError, match="MultiIndex"):
        bt.gap_rel_error_mean(gaps.droplevel("set"), {"A": 0.04})
    with pytest.raises(ValueError, match="gap_genuine"):
        bt.gap_rel_error_mean(gaps.rename(columns={"gap_genuine": "x"}), {"A": 0.04})


# --------------------------------------------------------------------------- paper 001: breakdown
def _sweep(rows, fmr="0.01"):
    """A hand-made p-sweep table: (p, seed, method_worst, naive_min) rows."""
    return pd.DataFrame(rows, columns=["p", "seed", f"method_worst@{fmr}", f"naive_min@{fmr}"])


def test_breakdown_p_finds_a_planted_break():
    sweep = _sweep([(0.3, 1, 0.80, 0.60),   # broken: worse than naive
                    (0.4, 1, 0.50, 0.50),   # broken: equal counts as no better
                    (0.5, 1, 0.06, 0.52),
                    (0.9, 1, 0.00, 0.15)])
    assert R.breakdown_p(sweep) == 0.4
    assert R.breakdown_p(sweep.iloc[::-1]) == 0.4  # row order does not matter
    # the largest broken p is returned, even below a p where the method works
    non_monotone = _sweep([(0.3, 1, 0.8, 0.6), (0.5, 1, 0.1, 0.5), (0.6, 1, 0.7, 0.4), (0.9, 1, 0.0, 0.2)])
    assert R.breakdown_p(non_monotone) == 0.6


def test_breakdown_p_averages_seeds_and_skips_nan():
    # p = 0.3: seed means 0.55 (method) vs 0.50 (naive): broken, though seed 2 alone is not
    sweep = _sweep([(0.3, 1, 0.70, 0.40), (0.3, 2, 0.40, 0.60),
                    (0.4, 1, 0.30, 0.50), (0.4, 2, 0.30, 0.50),
                    (0.5, 1, np.nan, 0.10), (0.5, 2, np.nan, 0.20)])  # not judged
    assert R.breakdown_p(sweep) == 0.3
    means = R.sweep_by_p(sweep)
    assert means.index.tolist() == [0.3, 0.4, 0.5] and "seed" not in means
    assert means.loc[0.3].tolist() == pytest.approx([0.55, 0.50])
    assert np.isnan(means.loc[0.5, "method_worst@0.01"])
    # the FMR picks the columns
    assert R.breakdown_p(_sweep([(0.3, 1, 0.9, 0.5)], fmr="0.001"), fmr=0.001) == 0.3
    with pytest.raises(ValueError, match="method_worst@0.001"):
        R.breakdown_p(sweep, fmr=0.001)


def test_breakdown_p_is_none_when_the_method_never_breaks():
    assert R.breakdown_p(_sweep([(0.3, 1, 0.2, 0.6), (0.6, 1, 0.01, 0.4), (0.9, 1, 0.0, 0.1)])) is None
    assert R.breakdown_p(_sweep([(0.3, 1, np.nan, 0.6), (0.6, 1, 0.5, np.nan)])) is None
    assert R.breakdown_p(_sweep([])) is None


# --------------------------------------------------------------------------- paper 001: small worlds
SMALL = dict(queries_per_group=8, seed=5)


@pytest.fixture(scope="module")
def small():
    """A small known-truth world at p = 0.7, its estimate and its true pairs."""
    w = make_rapid_world(RapidWorldConfig(p=0.7, **SMALL))
    est = R.estimate(w.scores, fit_scores=w.cross_scores)
    return w, est, R.true_pairs(w.faces, w.scores, w.cross_scores)


def test_voting_ablation_columns_and_sources(small):
    w, est, truth = small
    ab = R.voting_ablation(w, est, fmr=0.01, true=truth)
    single = R.single_best_system_labels(w.scores)
    assert list(ab.columns) == ["majority vote", "own labels (no MV)",
                                f"single system ({single.attrs['system']})", "connected components", "naive"]
    assert ab.index.tolist() == sorted(w.truth["system"])
    assert ab.notna().all().all()

    def d(labels):
        return R.delta_fnmr_by_system(R.world_pairs(w, labels), truth, [0.01])[0.01]

    pd.testing.assert_series_equal(ab["majority vote"], d(est.labels), check_names=False)
    pd.testing.assert_series_equal(ab["naive"], d(R.naive_labels(w.scores)), check_names=False)
    # a system's own labels, scored on its own pairs, by hand for one system
    sl = est.system_labels
    own = sl.loc[sl["system"] == "sys_e", ["query", "face", "label"]]
    want = R.delta_fnmr_by_system(R.world_pairs(w, own, "sys_e"), truth[truth["system"] == "sys_e"], [0.01])
    assert ab.loc["sys_e", "own labels (no MV)"] == want.loc["sys_e", 0.01]
    # the method is far closer to the truth than the naive labels, for every system
    assert (ab["majority vote"] < 0.25 * ab["naive"]).all()
    assert R.voting_ablation(w, est, fmr=0.01).equals(ab)  # true pairs computed when not given


def test_voting_ablation_unanimous_systems_vote_like_each_one():
    """Three copies of one system: every vote is unanimous, so the majority vote's labels are
    each system's own labels and the two columns are equal."""
    w = make_rapid_world(RapidWorldConfig(p=0.7, **SMALL))

    def copies(df):
        one = df[df["system"] == "sys_a"]
        return pd.concat([one.assign(system=s) for s in ("a1", "a2", "a3")], ignore_index=True)

    w3 = SimpleNamespace(faces=w.faces, scores=copies(w.scores), cross_scores=copies(w.cross_scores))
    est = R.estimate(w3.scores, fit_scores=w3.cross_scores)
    assert (est.labels["n_systems_agree"][est.labels["label"] != -1] == 3).all()
    ab = R.voting_ablation(w3, est, fmr=0.01)
    assert ab.index.tolist() == ["a1", "a2", "a3"] and ab["majority vote"].notna().all()
    pd.testing.assert_series_equal(ab["majority vote"], ab["own labels (no MV)"], check_names=False)
    assert ab["majority vote"].nunique() == 1  # the same scores give the same error


def test_semi_supervised_curve_ends_at_the_estimate_and_at_the_truth(small):
    w, est, truth = small
    fr = [0.0, 0.5, 1.0]
    table, curves = R.semi_supervised_curve(w, est.labels, fr, fmr=0.01, seed=3, true=truth)
    assert table.index.tolist() == fr and table.index.name == "fraction annotated"
    assert table.columns.tolist() == sorted(w.truth["system"])
    # f = 0: nothing annotated, the unsupervised estimate's error
    unsup = R.delta_fnmr_by_system(R.world_pairs(w, est.labels), truth, [0.01])[0.01]
    np.testing.assert_array_equal(table.loc[0.0].to_numpy(), unsup.to_numpy())
    assert (table.loc[0.0] > 0).any()
    # f = 1: every label is the true one, so the curves are the true curves and the error is 0
    assert (table.loc[1.0] == 0).all()
    true_curves = R.curves_by_system_group(truth)
    for s, c in curves[1.0].items():
        np.testing.assert_array_equal(c.fmr, true_curves[s, R.ALL].fmr)
        np.testing.assert_array_equal(c.fnmr, true_curves[s, R.ALL].fnmr)
    # f = 0.5 annotates the excluded faces first: no worse than the estimate on average
    assert table.loc[0.5].mean() <= table.loc[0.0].mean()
    assert set(curves) == set(fr) and set(curves[0.5]) == set(table.columns)


def test_p_sweep_rows_are_sweep_points():
    def make(p, seed):
        return make_rapid_world(RapidWorldConfig(p=p, queries_per_group=6, seed=seed))

    sweep = R.p_sweep(make, [0.3, 0.9], [2], fmr=[0.01])
    assert sweep.columns.tolist() == ["p", "seed", "agreement", "queries_included", "type_a", "type_b",
                                      "method_worst@0.01", "method_mean@0.01", "naive_min@0.01"]
    assert sweep[["p", "seed"]].values.tolist() == [[0.3, 2], [0.9, 2]]
    point = R.sweep_point(make(0.9, 2), fmr=[0.01])
    assert sweep.iloc[1, 2:].to_dict() == point
    hi = sweep.set_index("p").loc[0.9]
    assert hi["agreement"] >= 0.98 and hi["method_worst@0.01"] < hi["naive_min@0.01"]
    assert hi["method_mean@0.01"] <= hi["method_worst@0.01"]
    # low p: the queried person is no longer the prevalent identity, agreement falls and the method breaks
    # (this world, seed 2: agreement 0.63, worst |dFNMR| 0.72 against the naive labels' 0.61)
    lo = sweep.set_index("p").loc[0.3]
    assert lo["agreement"] < 0.8 and lo["method_worst@0.01"] >= lo["naive_min@0.01"]
    assert R.breakdown_p(sweep) == 0.3
