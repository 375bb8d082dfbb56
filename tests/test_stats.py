"""facebias.stats: bootstrap weights and intervals against independent implementations."""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from facebias.stats import bootstrap_weights, percentile_interval, wilson_interval


def test_wilson_agrees_with_statsmodels():
    x = np.array([0, 1, 5, 50, 99, 100])
    n = np.array([100, 100, 100, 100, 100, 100])
    lo, hi = wilson_interval(x, n, ci=0.95)
    ref_lo, ref_hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose(lo, ref_lo, atol=1e-12)
    np.testing.assert_allclose(hi, ref_hi, atol=1e-12)


def test_wilson_rejects_impossible_counts():
    with pytest.raises(ValueError):
        wilson_interval(5, 3)


def test_pair_bootstrap_weights_are_multinomial_counts():
    ws = list(bootstrap_weights(50, 200, seed=1))
    assert len(ws) == 200
    assert all(w.sum() == 50 and (w >= 0).all() for w in ws)
    # each row is drawn 1 time on average
    assert np.mean(ws, axis=0).mean() == pytest.approx(1.0)
    # deterministic given the seed
    np.testing.assert_array_equal(ws[3], list(bootstrap_weights(50, 200, seed=1))[3])


def test_identity_bootstrap_weights_hand_computed():
    # pairs: (a,a) genuine, (a,b), (b,c) impostors
    id1, id2 = np.array(["a", "a", "b"]), np.array(["a", "b", "c"])
    # the same draws by hand: identities a, b, c (first-seen order) drawn m_a, m_b, m_c times
    rng = np.random.default_rng(2)
    ws = list(bootstrap_weights(3, 20, seed=2, id1=id1, id2=id2))
    for w in ws:
        m = np.bincount(rng.integers(0, 3, 3), minlength=3)
        np.testing.assert_array_equal(w, [m[0], m[0] * m[1], m[1] * m[2]])
    assert len({tuple(w) for w in ws}) > 3  # the replicates differ


def test_percentile_interval_covers_the_truth_for_a_mean():
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(200):
        x = rng.normal(0, 1, 100)
        reps = np.array([x @ w / 100 for w in bootstrap_weights(100, 300, seed=int(rng.integers(1e9)))])
        lo, hi = percentile_interval(reps[:, None], 0.9)
        hits += lo[0] <= 0 <= hi[0]
    assert 0.82 <= hits / 200 <= 0.97  # nominal 90%


def test_excludes_estimate_hand_cases():
    from facebias.stats import excludes_estimate

    # the cases: fnmr_ratio 1 [1.04, inf] and FDR 0.99917 [.., 0.99899]
    got = excludes_estimate([1.0, 0.99917, 0.5, 1.0, np.inf, np.nan], [1.04, 0.99, 0.5, np.nan, 2.0, 0.0],
                            [np.inf, 0.99899, 0.5, 2.0, np.inf, 1.0])
    assert got.tolist() == [True, True, False, False, False, False]


@pytest.mark.parametrize("n_boot", [200, 1000])
@pytest.mark.parametrize("dist", ["normal", "exponential", "uniform"])
def test_percentile_mc_error_matches_the_spread_of_bounds_over_repeated_bootstraps(dist, n_boot):
    """Brute force: draw 2,000 independent sets of ``n_boot`` replicates from a known
    distribution, read the bounds from each set, and compare their standard deviation (the
    true Monte Carlo error) with the average estimate from single sets. A formula missing
    the binomial rank spread, or the 1 / sqrt(B) shrinkage, is off by a factor of 2 or more."""
    from facebias.stats import percentile_mc_error

    rng = np.random.default_rng(7)
    draw = {"normal": rng.standard_normal, "exponential": rng.exponential, "uniform": rng.uniform}[dist]
    sets = draw(size=(n_boot, 2000))  # column j: one bootstrap's replicates
    lo, hi = percentile_interval(sets, 0.95)
    se_lo, se_hi = percentile_mc_error(sets, 0.95)
    for bound, se in ((lo, se_lo), (hi, se_hi)):
        assert 0.85 <= se.mean() / bound.std(ddof=1) <= 1.25


def test_percentile_mc_error_hand_cases_and_invariants():
    from facebias.stats import percentile_mc_error

    # sorted replicates 1..100 are one apart, so the error is the rank spread s = sqrt(B q (1-q))
    lo_se, hi_se = percentile_mc_error(np.arange(1.0, 101.0)[:, None], 0.9)
    assert lo_se[0] == pytest.approx(np.sqrt(100 * 0.05 * 0.95)) and hi_se[0] == pytest.approx(lo_se[0])
    # affine invariance: the error is in the replicates' units and ignores a shift
    reps = np.random.default_rng(0).gamma(2.0, size=(300, 3))
    a = percentile_mc_error(reps, 0.95)
    b = percentile_mc_error(-4.0 * reps + 7.0, 0.95)
    np.testing.assert_allclose(a[0], b[1] / 4.0) and np.testing.assert_allclose(a[1], b[0] / 4.0)
    # NaN replicates are dropped column by column; infinite bounds and tiny samples give NaN
    with_nan = np.vstack([reps, np.full((50, 3), np.nan)])
    np.testing.assert_allclose(percentile_mc_error(with_nan, 0.95)[0], a[0])
    se = percentile_mc_error(np.array([[1.0, np.nan], [2.0, np.nan], [np.inf, 3.0]]), 0.9)
    assert np.isfinite(se[0][0]) and np.isnan(se[1][0]) and np.isnan(se[0][1])
    assert np.isnan(percentile_mc_error(np.zeros((1, 2)))[0]).all()
    # four times the replicates halve the error (1 / sqrt(B)), averaged over many sets
    rng = np.random.default_rng(1)
    small = percentile_mc_error(rng.standard_normal((250, 500)), 0.95)[0].mean()
    large = percentile_mc_error(rng.standard_normal((1000, 500)), 0.95)[0].mean()
    assert 1.7 <= small / large <= 2.3
    with pytest.raises(ValueError, match="ci"):
        percentile_mc_error(reps, 1.5)


def test_n_boot_for_mc_error_scales_with_the_squared_error_ratio():
    from facebias.stats import MC_ERROR_OF_WIDTH, n_boot_for_mc_error

    assert n_boot_for_mc_error(200, [0.1, 0.2], [4.0, 4.0]) == 200  # the worst bound is exactly at 5 %
    assert n_boot_for_mc_error(200, 0.4, 4.0) == 800  # twice the tolerated error: 4x the replicates
    assert n_boot_for_mc_error(1000, 0.02, 4.0) == 10  # a tenth of the tolerated error: 1 % of them
    assert n_boot_for_mc_error(100, [np.nan, 0.5], [1.0, 0.0]) == 100  # nothing assessable
    assert n_boot_for_mc_error(100, 0.0, 1.0) == 2
    assert MC_ERROR_OF_WIDTH == pytest.approx(0.05)


def test_mc_error_summary_reads_every_interval_of_a_table_by_hand():
    import pandas as pd

    from facebias.stats import mc_error_report, mc_error_summary

    t = pd.DataFrame({
        "tpr": [0.8, 0.7], "tpr_lo": [0.7, 0.6], "tpr_hi": [0.9, 0.8],  # widths 0.2
        "tpr_lo_mcse": [0.004, 0.02], "tpr_hi_mcse": [0.01, 0.001],  # worst: 0.02 / 0.2 = 10 %
        "lo": [1.0, np.nan], "hi": [3.0, np.nan], "lo_mcse": [0.05, np.nan], "hi_mcse": [0.02, np.nan],
        "ci_low": [np.nan, np.nan], "ci_high": [np.nan, np.nan],
        "ci_low_mcse": [np.nan, np.nan], "ci_high_mcse": [np.nan, np.nan]})
    s = mc_error_summary(t, 200).set_index("interval")
    assert list(s.index) == ["tpr", "", "ci"]
    assert s.loc["tpr", "n_bounds"] == 4 and s.loc["tpr", "max_mcse"] == pytest.approx(0.02)
    assert s.loc["tpr", "max_mcse_of_width"] == pytest.approx(0.10)
    assert s.loc["tpr", "n_boot_needed"] == 800 and not s.loc["tpr", "meets_rule"]  # 2x the error: 4x B
    assert s.loc["", "n_bounds"] == 2 and s.loc["", "max_mcse_of_width"] == pytest.approx(0.025)
    assert s.loc["", "n_boot_needed"] == 50 and s.loc["", "meets_rule"]
    assert s.loc["ci", "n_bounds"] == 0 and pd.isna(s.loc["ci", "meets_rule"])  # nothing to assess
    r = mc_error_report({"a": (t, 200), "b": (t.iloc[:1], 100)})
    assert list(r["source"]) == ["a"] * 3 + ["b"] * 3 and list(r["n_boot"]) == [200] * 3 + [100] * 3
    with pytest.warns(RuntimeWarning, match="no bootstrap bound"):
        mc_error_report({"empty": (t[["ci_low", "ci_high", "ci_low_mcse", "ci_high_mcse"]], 200)})
