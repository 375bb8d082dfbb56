"""Aggregation rules (HCIC, 004 score, SD) and agreement statistics (alpha, ICC)."""

from __future__ import annotations

import krippendorff  # independent implementation (PyPI `krippendorff`)
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from facebias.annotate import (
    hcic,
    icc,
    item_sd,
    krippendorff_alpha,
    score,
    trimmed_mean,
    uncanny_keep,
    votes_matrix,
)

nan = np.nan


# --------------------------------------------------------------------------- trimmed mean
def test_trimmed_mean_hand_cases():
    np.testing.assert_allclose(trimmed_mean([[1, 5, 2, 9, 3]], 1), [10 / 3])
    np.testing.assert_allclose(trimmed_mean([[4, 0, 0, 1, 1, 1, 2, 4, 0]], 2), [(0 + 1 + 1 + 1 + 2) / 5])
    np.testing.assert_allclose(trimmed_mean([[1, 2, 6]], 0), [3.0])
    with pytest.raises(ValueError, match="NaN"):
        trimmed_mean([[1, nan, 2]], 0)
    with pytest.raises(ValueError, match="at least 5"):
        trimmed_mean([[1, 2, 3, 4]], 2)
    # allow_missing: trim among the present votes; too few -> NaN
    out = trimmed_mean([[1, nan, 5, 2, 9], [1, nan, nan, nan, 2]], 1, allow_missing=True)
    np.testing.assert_allclose(out, [(2 + 5) / 2, nan])


@pytest.mark.parametrize("n, trim", [(5, 1), (9, 2), (7, 3), (10, 2), (6, 0)])
def test_trimmed_mean_matches_scipy(n, trim):
    rng = np.random.default_rng(n * 10 + trim)
    m = rng.integers(0, 5, size=(200, n)).astype(float) + rng.normal(0, 0.1, size=(200, n))
    # scipy cuts int(proportion * n) values from each end; (trim + 0.5)/n gives exactly `trim`
    ref = stats.trim_mean(m, (trim + 0.5) / n, axis=1)
    np.testing.assert_allclose(trimmed_mean(m, trim), ref, rtol=1e-12)


# --------------------------------------------------------------------------- HCIC
def test_hcic_hand_cases_and_validation():
    np.testing.assert_allclose(hcic([[0, 0, 0, 1, 1, 1, 2, 4, 4]]), [0.25])
    np.testing.assert_allclose(hcic([[4, 4, 4, 4, 3, 0, 0, 0, 0]]), [(0 + 0 + 3 + 4 + 4) / 20])
    with pytest.raises(ValueError, match="9 votes"):
        hcic([[0] * 8])
    with pytest.raises(ValueError, match="0..4"):
        hcic([[0] * 8 + [5]])
    with pytest.raises(ValueError, match="0..4"):
        hcic([[0] * 8 + [1.5]])
    with pytest.raises(ValueError, match="NaN"):
        hcic([[0] * 8 + [nan]])


def test_hcic_invariants():
    rng = np.random.default_rng(0)
    v = rng.integers(0, 5, size=(2000, 9))
    h = hcic(v)
    assert h.min() >= 0 and h.max() <= 1
    np.testing.assert_allclose(h * 20, np.round(h * 20), atol=1e-9)       # 0.05 grid
    # 9 identical responses r -> r / 4
    np.testing.assert_allclose(hcic(np.repeat(np.arange(5)[:, None], 9, axis=1)), np.arange(5) / 4)
    # the 2 lowest and 2 highest responses do not matter, as long as they stay extreme
    s = np.sort(v, axis=1)
    changed = s.copy()
    changed[:, :2] = rng.integers(0, s[:, 2:3] + 1, size=(2000, 2))   # any value <= 3rd lowest
    changed[:, 7:] = rng.integers(s[:, 6:7], 5, size=(2000, 2))       # any value >= 3rd highest
    assert (changed != s).any()
    perm = rng.permuted(changed, axis=1)                                # order is irrelevant
    np.testing.assert_allclose(hcic(perm), h)
    # changing a middle response changes HCIC (it is not a median)
    mid = s.copy()
    up = mid[:, 4] < mid[:, 6]
    mid[up, 4] += 1
    assert (hcic(mid[up]) > h[up]).all()


# --------------------------------------------------------------------------- 004 score, SD
def test_score_and_item_sd_hand_cases():
    v = [[0, 1, 5, 2, 2], [3, 3, 3, 3, 3]]
    np.testing.assert_allclose(score(v, 6), [(1 + 2 + 2) / 3 / 5, 3 / 5])
    np.testing.assert_allclose(score(v, 6, agg="mean"), [10 / 5 / 5, 3 / 5])
    np.testing.assert_allclose(item_sd(v, 6), [np.std([0, 1, 5, 2, 2]) / 5, 0.0])
    np.testing.assert_allclose(item_sd([[0, 4, nan]], 5), [0.5])
    with pytest.raises(ValueError, match="0..4"):
        score([[0, 1, 5, 2, 2]], 5)
    with pytest.raises(ValueError, match="agg"):
        score(v, 6, agg="median")
    # trimmed score lies on a 1/(3(K-1)) grid and in [0, 1]
    rng = np.random.default_rng(1)
    s = score(rng.integers(0, 4, size=(500, 5)), 4)
    np.testing.assert_allclose(s * 9, np.round(s * 9), atol=1e-9)
    assert s.min() >= 0 and s.max() <= 1


def test_uncanny_keep_boundary():
    np.testing.assert_array_equal(uncanny_keep([0.0, 0.79, 0.8, 0.81, 1.0]),
                                  [True, True, False, False, False])
    np.testing.assert_array_equal(uncanny_keep([0.5], threshold=0.5), [False])
    with pytest.raises(ValueError, match="NaN"):
        uncanny_keep([nan])


# --------------------------------------------------------------------------- Krippendorff
# Krippendorff (2011) "Computing Krippendorff's alpha-reliability", example C (also the
# Wikipedia example): 4 observers x 12 units, values 1..5, missing data.
TEXTBOOK = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]).T  # items x coders


@pytest.mark.parametrize("level, expected", [("nominal", 0.743), ("ordinal", 0.815),
                                             ("interval", 0.849)])
def test_krippendorff_textbook(level, expected):
    assert krippendorff_alpha(TEXTBOOK, level) == pytest.approx(expected, abs=5e-4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_matches_package(level):
    rng = np.random.default_rng({"nominal": 0, "ordinal": 1, "interval": 2}[level])
    for _ in range(5):
        truth = rng.integers(0, 5, size=(60, 1))
        m = np.clip(truth + rng.integers(-1, 2, size=(60, 7)), 0, 4).astype(float)
        m[rng.random(m.shape) < 0.25] = nan       # missing votes, some units unpairable
        ours = krippendorff_alpha(m, level)
        ref = krippendorff.alpha(reliability_data=m.T, level_of_measurement=level)
        assert ours == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_krippendorff_planted_agreement():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 5, size=(300, 1))
    good = np.clip(truth + rng.normal(0, 0.3, size=(300, 5)).round(), 0, 4)
    noise = rng.integers(0, 5, size=(300, 5)).astype(float)
    assert krippendorff_alpha(good) > 0.8
    assert abs(krippendorff_alpha(noise)) < 0.05
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(good, "ratio-ish")


# --------------------------------------------------------------------------- ICC(1)
def _icc1_brute(m: np.ndarray) -> float:
    """One-way ANOVA with explicit loops: ICC(1) = (MSB - MSW) / (MSB + (k-1) MSW)."""
    n, k = m.shape
    grand = 0.0
    for i in range(n):
        for j in range(k):
            grand += m[i, j]
    grand /= n * k
    ssb = ssw = 0.0
    for i in range(n):
        mean_i = sum(m[i, j] for j in range(k)) / k
        ssb += k * (mean_i - grand) ** 2
        for j in range(k):
            ssw += (m[i, j] - mean_i) ** 2
    msb, msw = ssb / (n - 1), ssw / (n * (k - 1))
    return (msb - msw) / (msb + (k - 1) * msw)


def test_icc_matches_brute_force_anova():
    rng = np.random.default_rng(4)
    for shape in [(10, 3), (40, 9), (7, 5)]:
        m = rng.integers(0, 5, size=shape).astype(float) + rng.normal(0, 1, size=(shape[0], 1))
        assert icc(m) == pytest.approx(_icc1_brute(m), rel=1e-12)
    # hand case: items (1,1) and (3,3): MSW = 0 -> ICC = 1; (1,3),(3,1): MSB = 0 -> -1
    assert icc([[1, 1], [3, 3]]) == pytest.approx(1.0)
    assert icc([[1, 3], [3, 1]]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="complete"):
        icc([[1, nan], [2, 3]])


# --------------------------------------------------------------------------- votes_matrix
def test_votes_matrix_order_and_padding():
    df = pd.DataFrame({
        "item_id": ["b", "a", "b", "a", "c", "b", "x"],
        "question": ["q", "q", "q", "q", "q", "q", "other"],
        "value": [1, 2, 3, 4, 0, 2, 9],
    })
    ids, m = votes_matrix(df, "q")
    assert ids.tolist() == ["b", "a", "c"]
    np.testing.assert_array_equal(m, [[1, 3, 2], [2, 4, nan], [0, nan, nan]])
    ids, m = votes_matrix(df, "q", n=4)
    assert m.shape == (3, 4)
    with pytest.raises(ValueError, match="more than n=2"):
        votes_matrix(df, "q", n=2)
    with pytest.raises(ValueError, match="no votes"):
        votes_matrix(df, "nope")
