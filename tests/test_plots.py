"""Figure helpers: hand-computed cases."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from facebias import plots  # noqa: E402


def test_interval_err_hand_case_and_estimates_outside_the_interval():
    est = [0.5, 1.0, 0.0]
    lo = [0.4, 0.7, 0.1]  # the last interval lies above its estimate
    hi = [0.8, 0.9, 0.3]  # the middle one lies below its estimate
    err = plots.interval_err(est, lo, hi)
    np.testing.assert_allclose(err, [[0.1, 0.3, 0.0], [0.3, 0.0, 0.3]])
    assert err.shape == (2, 3) and (err >= 0).all()
    fig, ax = plt.subplots()
    try:  # matplotlib rejects negative lengths; these draw
        ax.errorbar([0, 1, 2], est, yerr=err)
    finally:
        plt.close(fig)


def test_paired_groups_one_point_per_pair_of_the_attribute_with_its_bars_and_labels():
    import pandas as pd
    from matplotlib.container import ErrorbarContainer

    pairs = pd.DataFrame({
        "attribute": ["skin", "skin", "gender", "skin"],
        "shared": ["F-s", "M-l", "D-s", "F-l"],
        "x": [0.1, 0.3, 0.5, np.nan], "y": [0.2, 0.6, 0.4, 0.3],
        "x_lo": [0.05, 0.2, 0.4, np.nan], "x_hi": [0.2, 0.35, 0.6, np.nan],
        "y_lo": [0.1, 0.5, 0.3, 0.2], "y_hi": [0.25, 0.7, 0.5, 0.4],
    })
    fig, (ax, empty) = plt.subplots(1, 2)
    try:
        assert plots.paired_groups(ax, pairs, "skin", ("light", "dark"), title="CNN: skin") is ax
        (bars,) = ax.containers  # one errorbar series: the two skin pairs with both rates
        assert isinstance(bars, ErrorbarContainer) and bars.has_xerr and bars.has_yerr
        np.testing.assert_allclose(bars.lines[0].get_xydata(), [[0.1, 0.2], [0.3, 0.6]])
        # x bars from x_lo to x_hi, y bars from y_lo to y_hi (one segment per point)
        xbar, ybar = (np.asarray(c.get_segments()) for c in bars.lines[2])
        np.testing.assert_allclose(xbar[:, :, 0], [[0.05, 0.2], [0.2, 0.35]])
        np.testing.assert_allclose(ybar[:, :, 1], [[0.1, 0.25], [0.5, 0.7]])
        assert [(t.get_text(), t.xy) for t in ax.texts] == [("F-s", (0.1, 0.2)), ("M-l", (0.3, 0.6))]
        diagonal = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert len(diagonal) == 1 and diagonal[0].get_color() == "k"
        np.testing.assert_allclose(diagonal[0].get_xydata(), [[0, 0], [1, 1]])
        assert ax.get_xlim() == (-0.02, 1.02) and ax.get_ylim() == (-0.02, 1.02)
        assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("error, light", "error, dark", "CNN: skin")
        # an empty table: the diagonal and labels only, no title unless given
        plots.paired_groups(empty, pd.DataFrame(), "hair", ("short hair", "long hair"))
        assert not empty.containers and not empty.texts and len(empty.lines) == 1
        assert (empty.get_xlabel(), empty.get_ylabel(), empty.get_title()) == (
            "error, short hair", "error, long hair", "")
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------- thin_curve
def _curve(fmr, fnmr):
    from facebias.metrics import DetCurve

    m = len(fmr)
    return DetCurve(np.r_[-np.inf, np.arange(1.0, m)], np.asarray(fmr, float), np.asarray(fnmr, float))


def test_thin_curve_hand_case():
    """n = 6: (6 - 2) // 2 = 2 log-spaced levels per rate in [smallest positive value, 1)
    (0.001 and 0.0316 for both here). Kept: the ends (0, 9); for FNMR the first point at or
    above each level (2: 0.001, 5: 0.05); for FMR the first point at or below each level, the
    point threshold_at_fmr picks (8: 0.001, 5: 0.02)."""
    from facebias.metrics import thin_det

    fmr = [1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001, 0]
    fnmr = [0, 0, 0.001, 0.002, 0.01, 0.05, 0.1, 0.3, 0.6, 1]
    curve = _curve(fmr, fnmr)
    t = plots.thin_curve(curve, n=6)
    np.testing.assert_array_equal(t.thresholds, [-np.inf, 2, 5, 8, 9])
    np.testing.assert_array_equal(t.fmr, [1, 0.2, 0.02, 0.001, 0])
    np.testing.assert_array_equal(t.fnmr, [0, 0.001, 0.05, 0.6, 1])
    # n = 4: one level per rate (the smallest positive value)
    np.testing.assert_array_equal(plots.thin_curve(curve, n=4).thresholds, [-np.inf, 2, 8, 9])
    # a requested FMR keeps its operating point (the first FMR <= 0.07 is 0.05, point 4)
    np.testing.assert_array_equal(thin_det(curve, 7, fmr=0.07).thresholds, [-np.inf, 2, 4, 5, 8, 9])
    # a curve of at most n points is returned as it is
    assert plots.thin_curve(curve, n=10) is curve


def test_thin_curve_matches_a_brute_force_selection():
    """A DET curve of 20,000 distinct thresholds thinned to at most 400 points: a subsequence
    of the curve's own points (rows unchanged, order kept), both ends kept, and exactly the
    points picked by a direct search: for each of (n - 2) // 2 log-spaced levels from the
    smallest positive rate up to 1 (excluded), the first point whose FNMR reaches it and the
    first point whose FMR is at or below it."""
    from facebias.metrics import det_curve

    rng = np.random.default_rng(0)
    curve = det_curve(rng.normal(2, 1, 4000), rng.normal(0, 1, 16000))
    n = 400
    t = plots.thin_curve(curve, n=n)
    m = curve.fmr.size
    assert m > 10 * n and t.fmr.size <= n
    idx = np.searchsorted(curve.thresholds, t.thresholds)
    assert idx[0] == 0 and idx[-1] == m - 1 and (np.diff(idx) > 0).all()
    for a, b in zip(t, curve, strict=True):
        np.testing.assert_array_equal(a, b[idx])
    want = {0, m - 1}
    for rate, reaches in ((curve.fnmr, np.greater_equal), (curve.fmr, np.less_equal)):
        for v in np.logspace(np.log10(rate[rate > 0].min()), 0, (n - 2) // 2 + 1)[:-1]:
            want.add(int(np.flatnonzero(reaches(rate, v))[0]))
    assert set(idx.tolist()) == want
