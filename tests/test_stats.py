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
