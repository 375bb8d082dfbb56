"""DET curves: every distinct operating point of a score set (:func:`det_curve`,
:class:`DetCurve`), and thinning a curve to a few points that keep its shape and the
operating points at target FMRs (:func:`thin_det`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from facebias.metrics.checks import check_rates, check_scores
from facebias.metrics.rates import _thresholds_sorted, fnmr_at_fmr  # noqa: F401  (fnmr_at_fmr: det_curve's example)

__all__ = ["DetCurve", "det_curve", "thin_det"]


class DetCurve(NamedTuple):
    """Every distinct operating point, thresholds ascending (returned by :func:`det_curve`).

    Attributes
    ----------
    thresholds : numpy.ndarray
        ``thresholds[0] = -inf`` (everything matches: FMR 1, FNMR 0); every later
        threshold is a distinct score value.
    fmr : numpy.ndarray
        float64, ``fmr[i] = FMR(thresholds[i]) = mean(impostor > thresholds[i])``;
        non-increasing.
    fnmr : numpy.ndarray
        float64, ``fnmr[i] = FNMR(thresholds[i]) = mean(genuine <= thresholds[i])``;
        non-decreasing.
    """

    thresholds: np.ndarray
    fmr: np.ndarray
    fnmr: np.ndarray


def det_curve(genuine: Any, impostor: Any, chunk: int | None = None, *,
              max_points: int | None = None, fmr: float | Sequence[float] | None = None) -> DetCurve:
    """DET curve at every distinct threshold (the ROC is ``(fmr, 1 - fnmr)``), or at most
    ``max_points`` of its points.

    Scores keep their float dtype (float32 input gives float32 thresholds; mixed float32
    and float64 give float64); the rates are float64. Work: one sort of each score set, a
    binary search of the genuine scores among the impostors, then linear passes (a merge by
    position, the distinct values, one cumulative count). With ``max_points`` only the two
    sorts and a binary search per kept point: the curve is never built in full.

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.
    chunk : None
        Deprecated, no effect (the counts come from one cumulative sum); passing it warns.
    max_points : int, optional
        Keep at most this many points, each exactly a point of the full curve (same
        threshold, same rates): the two end points, the operating point of every ``fmr``
        and two log grids, as :func:`thin_det` picks them from the full curve (equal to
        ``thin_det(det_curve(genuine, impostor), max_points, fmr)`` whenever the full curve
        has more than ``max_points`` points). ``None`` (default): every distinct point. The
        full curve is returned when ``len(genuine) + len(impostor) + 1 <= max_points``.
    fmr : float or sequence of float, optional
        Target FMRs whose operating points a thinned curve keeps: the point at
        ``threshold_at_fmr(impostor, f)``, whose ``fnmr`` is ``fnmr_at_fmr(genuine,
        impostor, f)``. Only with ``max_points`` (the full curve has them all).

    Returns
    -------
    DetCurve
        ``thresholds`` (``-inf`` first, then distinct scores ascending), ``fmr`` and ``fnmr``.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite, ``fmr`` is given without ``max_points``
        or lies outside (0, 1), or ``max_points`` is below ``4 + len(fmr)``.

    Examples
    --------
    >>> c = det_curve([0.9, 0.4], [0.1, 0.4])
    >>> c.thresholds, c.fmr, c.fnmr
    (array([-inf, 0.1, 0.4, 0.9]), array([1. , 0.5, 0. , 0. ]), array([0. , 0. , 0.5, 1. ]))
    >>> rng = np.random.default_rng(0)
    >>> gen, imp = rng.normal(2, 1, 10_000), rng.normal(0, 1, 100_000)
    >>> thin = det_curve(gen, imp, max_points=200, fmr=1e-3)
    >>> thin.fmr.size <= 200, float(thin.fnmr[thin.fmr <= 1e-3][0]) == fnmr_at_fmr(gen, imp, 1e-3)
    (True, True)
    """
    if chunk is not None:
        warnings.warn("det_curve: chunk has no effect and will be removed", DeprecationWarning,
                      stacklevel=2)
    imp = check_scores(impostor, "impostor")
    gen = check_scores(genuine, "genuine")
    targets = _thinning_targets(max_points, fmr)
    dtype = np.result_type(imp, gen)  # mixed float32/float64: compare in float64, losslessly
    imp = np.sort(imp.astype(dtype, copy=False))
    gen = np.sort(gen.astype(dtype, copy=False))
    if max_points is not None and imp.size + gen.size + 1 > max_points:
        return _det_thinned(gen, imp, max_points, targets)
    n, m = imp.size, gen.size
    # merge by position: genuine j goes after the impostors <= it, i.e. at
    # searchsorted(imp, gen[j], "right") + j; equal values end up adjacent either way
    gpos = np.searchsorted(imp, gen, side="right")
    gpos += np.arange(m, dtype=gpos.dtype)
    is_gen = np.zeros(n + m, dtype=bool)
    is_gen[gpos] = True
    merged = np.empty(n + m, dtype=dtype)
    merged[gpos] = gen
    merged[~is_gen] = imp
    del gpos
    last = np.empty(n + m, dtype=bool)  # the last of each run of equal scores
    np.not_equal(merged[1:], merged[:-1], out=last[:-1])
    last[-1] = True
    idx = np.flatnonzero(last)
    del last
    k = idx.size
    thresholds = np.empty(k + 1, dtype=dtype)
    thresholds[0] = -np.inf
    np.take(merged, idx, out=thresholds[1:])
    del merged
    # genuine scores <= each position (int32 counts are 4x faster to accumulate than float64)
    gen_le = np.cumsum(is_gen, dtype=np.int32 if n + m < 2**31 else np.int64)
    del is_gen
    gen_le = np.take(gen_le, idx)  # genuine <= t
    fmr_ = np.empty(k + 1)
    fnmr_ = np.empty(k + 1)
    fmr_[0], fnmr_[0] = 1.0, 0.0
    # impostors > t = n - (idx + 1 - genuine <= t): exact integers in float64, then one division
    f, g = fmr_[1:], fnmr_[1:]
    np.subtract(gen_le, idx, out=f)
    f += n - 1
    f /= n
    np.divide(gen_le, m, out=g)
    return DetCurve(thresholds, fmr_, fnmr_)


# --------------------------------------------------------------------------- thinning
# One rule, applied to a built curve (thin_det) and to sorted scores (det_curve max_points):
# the end points; for each target FMR f (the requested ones and a log grid) the first point
# with FMR <= f, i.e. the threshold threshold_at_fmr(impostor, f); for each level q of a log
# grid of FNMR the first point with FNMR >= q. The grids run from the smallest positive rate
# on the full curve up to 1 (excluded), evenly in log10, each with (max_points - 2 - len(fmr))
# // 2 levels.
def _thinning_targets(max_points: int | None, fmr: Any) -> np.ndarray:
    """The requested FMRs (validated; empty for None), after checking ``max_points``."""
    if max_points is None:
        if fmr is not None:
            raise ValueError("fmr: operating points to keep need max_points (the full curve "
                             "has every point)")
        return np.empty(0)
    targets = np.empty(0) if fmr is None else check_rates(fmr, "fmr")[0]
    least = 4 + targets.size
    if isinstance(max_points, bool) or not isinstance(max_points, (int, np.integer)) \
            or max_points < least:
        raise ValueError(f"max_points: must be an integer >= {least} (2 end points, "
                         f"{targets.size} requested FMRs and 1 point per log grid), got {max_points!r}")
    return targets


def _log_levels(lo: float, max_points: int, n_fixed: int) -> np.ndarray:
    """The log grid of rates in [lo, 1): ``(max_points - 2 - n_fixed) // 2`` levels."""
    count = (max_points - 2 - n_fixed) // 2
    return np.logspace(np.log10(lo), 0.0, count + 1)[:-1]


def _needed_count(rate: np.ndarray, n: int) -> np.ndarray:
    """Smallest integer ``c`` in [1, n] with ``c / n >= rate`` in floating point (vectorised)."""
    c = np.ceil(rate * n).astype(np.int64)
    c = np.where(c / n < rate, c + 1, c)
    c = np.where((c - 1) / n >= rate, c - 1, c)
    return np.clip(c, 1, n)


def _det_thinned(gen: np.ndarray, imp: np.ndarray, max_points: int,
                 targets: np.ndarray) -> DetCurve:
    """The thinning rule on sorted score sets (the full curve has > ``max_points`` points)."""
    n, m = imp.size, gen.size
    lo_fmr = (n - int(np.searchsorted(imp, imp[-1], side="left"))) / n
    lo_fnmr = int(np.searchsorted(gen, gen[0], side="right")) / m
    at_fmr = _thresholds_sorted(imp, np.r_[_log_levels(lo_fmr, max_points, targets.size), targets])
    at_fnmr = gen[_needed_count(_log_levels(lo_fnmr, max_points, targets.size), m) - 1]
    t = np.unique(np.r_[at_fmr, at_fnmr, max(imp[-1], gen[-1])].astype(imp.dtype))
    thresholds = np.r_[np.array([-np.inf], dtype=imp.dtype), t]
    fmr = np.r_[1.0, (n - np.searchsorted(imp, t, side="right")) / n]
    fnmr = np.r_[0.0, np.searchsorted(gen, t, side="right") / m]
    return DetCurve(thresholds, fmr, fnmr)


def thin_det(curve: DetCurve, max_points: int, fmr: float | Sequence[float] | None = None) -> DetCurve:
    """At most ``max_points`` points of a DET curve, every one exactly a point of ``curve``:
    both end points, the operating point of each ``fmr`` (the first point with FMR <= f,
    i.e. at ``threshold_at_fmr``) and two grids spaced evenly in log FMR and log FNMR (from
    the smallest positive rate on the curve up to 1), for plots and compact tables.

    Parameters
    ----------
    curve : DetCurve
        A full curve from :func:`det_curve`.
    max_points : int
        Most points kept; at least ``4 + len(fmr)``.
    fmr : float or sequence of float, optional
        Target FMRs whose operating points are kept.

    Returns
    -------
    DetCurve
        ``curve`` itself when it has at most ``max_points`` points.

    Raises
    ------
    ValueError
        If ``max_points`` is below ``4 + len(fmr)`` or an ``fmr`` lies outside (0, 1).

    Examples
    --------
    >>> t = np.linspace(0, 1, 1001)
    >>> curve = DetCurve(np.r_[-np.inf, t[1:]], 1 - t, t)
    >>> thin = thin_det(curve, 20, fmr=0.5)
    >>> thin.fmr.size <= 20, float(thin.fmr[0]), float(thin.fnmr[-1]), 0.5 in thin.fmr
    (True, 1.0, 1.0, True)
    """
    if max_points is None:
        raise ValueError("max_points: must be an integer, got None")
    targets = _thinning_targets(max_points, fmr)
    size = curve.fmr.size
    if size <= max_points:
        return curve
    fmr_, fnmr_ = curve.fmr, curve.fnmr  # non-increasing, non-decreasing
    lo_fmr = fmr_[np.count_nonzero(fmr_ > 0) - 1]
    lo_fnmr = fnmr_[np.count_nonzero(fnmr_ <= 0)] if fnmr_[-1] > 0 else 1.0
    keep = np.zeros(size, dtype=bool)
    keep[[0, -1]] = True
    levels = np.r_[_log_levels(lo_fmr, max_points, targets.size), targets]
    keep[np.minimum(np.searchsorted(-fmr_, -levels, side="left"), size - 1)] = True
    levels = _log_levels(lo_fnmr, max_points, targets.size)
    keep[np.minimum(np.searchsorted(fnmr_, levels, side="left"), size - 1)] = True
    return DetCurve(*(a[keep] for a in curve))
