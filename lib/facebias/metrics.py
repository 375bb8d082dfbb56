"""Verification error rates of face recognition systems.

Conventions (used everywhere in facebias)
-----------------------------------------
* Scores are **similarities**: higher means more alike.
* At threshold ``t`` a pair is a **match** iff ``score > t``.
* ``FMR(t) = mean(impostor > t)``   false match rate (FAR, FPR).
* ``FNMR(t) = mean(genuine <= t)``  false non-match rate (FRR, FNR); ``TAR = 1 - FNMR``.
* Rates are fractions in [0, 1], never percentages.
* ``threshold_at_fmr(impostor, f)`` is the smallest impostor score ``t`` with
  ``FMR(t) <= f``; the achieved FMR can be below ``f`` when scores tie or ``f * n``
  is not an integer.

Every function validates its input and raises ``ValueError`` naming the argument (or
DataFrame column) and the problem: NaN or infinite scores, labels that are not 0/1,
an empty group, rates outside (0, 1). Nothing is silently dropped.

Everything is vectorised and sort based, O(n log n) in the number of scores.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from facebias.io import jsonable, write_text_atomic
from facebias.stats import (
    MC_ERROR_OF_WIDTH,
    bootstrap_weights,
    excludes_estimate,
    identity_bootstrap,
    mc_error_report,
    percentile_interval,
    percentile_mc_error,
    wilson_interval,
)
from facebias.validate import require_columns

__all__ = [
    "DetCurve",
    "GroupReport",
    "check_scores",
    "check_rates",
    "check_labels",
    "TOO_FEW_IMPOSTORS",
    "EXCLUDES_ESTIMATE",
    "enough_impostors",
    "threshold_at_fmr",
    "fmr_at",
    "fnmr_at",
    "fnmr_at_fmr",
    "tar_at_far",
    "operating_points",
    "det_curve",
    "thin_det",
    "eer",
    "d_prime",
    "roc_auc",
    "max_min_ratio",
    "gini",
    "fdr",
    "garbe",
    "inequity_rate",
    "group_report",
    "failure_to_enrol",
]


# --------------------------------------------------------------------------- validation
def _row(label: Any) -> Any:
    """A row label as plain Python (numpy 2 would print ``np.int64(7)``)."""
    return label.item() if isinstance(label, np.generic) else label


def check_scores(scores: Any, name: str = "scores", index: Any = None) -> np.ndarray:
    """Return ``scores`` as a non-empty 1-D float array of finite similarity scores.

    float32 input stays float32 (no copy); integers and bools become float64.

    Parameters
    ----------
    scores : array_like
        1-D similarity scores (higher = more alike).
    name : str, default "scores"
        Name of the argument or column, used in error messages.
    index : sequence, optional
        Row labels used in error messages (e.g. a DataFrame's index); without it the
        message names the position.

    Returns
    -------
    numpy.ndarray
        The scores as a 1-D float array (float32 kept, anything else float64).

    Raises
    ------
    ValueError
        If ``scores`` is not 1-D, is empty, is not real numbers, or holds a NaN or an
        infinity (never dropped silently).

    Examples
    --------
    >>> check_scores([1, 2])
    array([1., 2.])
    >>> check_scores([0.5, float("nan")], "genuine")
    Traceback (most recent call last):
    ...
    ValueError: genuine: 1 non-finite score(s) (NaN or inf), first in position 1 ...
    """
    a = np.asarray(scores)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of scores, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name}: no scores (empty array)")
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: scores must be real numbers, got dtype {a.dtype}") from exc
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    finite = np.isfinite(a)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        where = f"row {_row(index[bad[0]])!r}" if index is not None else f"position {bad[0]}"
        raise ValueError(
            f"{name}: {bad.size} non-finite score(s) (NaN or inf), first in {where} "
            f"(value {a[bad[0]]}); scores are never dropped silently"
        )
    return a


def check_rates(rates: Any, name: str = "fmr") -> tuple[np.ndarray, bool]:
    """Validate target rates: fractions in the open interval (0, 1), never percentages.

    Parameters
    ----------
    rates : float or sequence of float
        One target rate or a 1-D list of them.
    name : str, default "fmr"
        Name of the argument, used in error messages.

    Returns
    -------
    rates : numpy.ndarray
        The rates as a 1-D float64 array.
    scalar : bool
        Whether the input was a single number.

    Raises
    ------
    ValueError
        If the input is empty or not 1-D, or a rate lies outside (0, 1).

    Examples
    --------
    >>> check_rates(0.1)
    (array([0.1]), True)
    >>> check_rates([1e-3, 1e-2])
    (array([0.001, 0.01 ]), False)
    >>> check_rates(5)  # a percentage, not a fraction
    Traceback (most recent call last):
    ...
    ValueError: fmr: target rates must lie in (0, 1), got 5.0
    """
    a = np.asarray(rates, dtype=np.float64)
    scalar = a.ndim == 0
    a = np.atleast_1d(a)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name}: expected a number or a 1-D list of numbers, got {rates!r}")
    bad = ~((a > 0) & (a < 1))
    if bad.any():
        raise ValueError(f"{name}: target rates must lie in (0, 1), got {float(a[bad][0])!r}")
    return a, scalar


def check_labels(labels: Any, name: str = "label") -> np.ndarray:
    """Return pair labels as a bool array (True = genuine, False = impostor).

    Parameters
    ----------
    labels : array_like or pandas.Series
        One label per pair: 0/1 (1 = genuine) or bool. A Series' index names the row in
        error messages.
    name : str, default "label"
        Name of the argument or column, used in error messages.

    Returns
    -------
    numpy.ndarray
        1-D bool array, True for genuine pairs.

    Raises
    ------
    ValueError
        If a label is missing or is anything other than 0/1 or bool.

    Examples
    --------
    >>> check_labels([1, 0, True])
    array([ True, False,  True])
    >>> check_labels([1, 2])
    Traceback (most recent call last):
    ...
    ValueError: label: labels must be 0/1 or bool (1 = genuine), got 2 in row 1
    """
    s = pd.Series(labels) if not isinstance(labels, pd.Series) else labels
    if s.isna().any():
        raise ValueError(f"{name}: missing label in row {_row(s.index[s.isna().to_numpy()][0])!r}")
    if s.dtype == bool:
        return s.to_numpy()
    values = pd.to_numeric(s, errors="coerce")
    ok = values.isin([0, 1]).to_numpy()
    if not ok.all():
        row = s.index[~ok][0]
        raise ValueError(
            f"{name}: labels must be 0/1 or bool (1 = genuine), got {_row(s.loc[row])!r} "
            f"in row {_row(row)!r}"
        )
    return values.to_numpy() == 1


# --------------------------------------------------------------------------- operating points
def _allowed_false_matches(fmr: np.ndarray, n: int) -> np.ndarray:
    """Largest integer k with ``k / n <= fmr`` in floating point (vectorised)."""
    k = np.floor(fmr * n).astype(np.int64)
    k = np.where(k / n > fmr, k - 1, k)
    k = np.where((k + 1) / n <= fmr, k + 1, k)
    return np.clip(k, 0, n - 1)


def _thresholds_sorted(sorted_impostor: np.ndarray, fmr: np.ndarray) -> np.ndarray:
    """``threshold_at_fmr`` on impostor scores already sorted ascending."""
    n = sorted_impostor.size
    return sorted_impostor[n - 1 - _allowed_false_matches(fmr, n)]


def _maybe_scalar(values: np.ndarray, scalar: bool):
    return values[0].item() if scalar else values


#: Label of a rate left NaN by :func:`enough_impostors` (too few impostors for its FMR).
TOO_FEW_IMPOSTORS = "too few impostors"


def enough_impostors(n_impostor: Any, fmr: Any, factor: float = 10.0) -> bool | np.ndarray:
    """Whether ``n_impostor`` impostor scores are enough to measure a rate at ``fmr``:
    ``n_impostor >= factor / fmr`` (at least ``factor`` expected false matches; the rule of
    ``studies.rapid.fnmr_table``). A rate that fails it is reported NaN and labelled
    :data:`TOO_FEW_IMPOSTORS`, never 0.

    Parameters
    ----------
    n_impostor : int or array_like
        Number of impostor scores the rate (or its threshold) is computed from.
    fmr : float or array_like
        Target (or reference) FMR, a fraction in (0, 1); broadcasts against ``n_impostor``.
    factor : float, default 10.0
        Least expected false matches, ``n_impostor * fmr``.

    Returns
    -------
    bool or numpy.ndarray
        A bool for scalar inputs, else a bool array.

    Raises
    ------
    ValueError
        For an ``fmr`` outside (0, 1) or a ``factor`` < 0.

    Examples
    --------
    >>> enough_impostors(9999, 1e-3), enough_impostors(10000, 1e-3)
    (False, True)
    """
    rates = np.asarray(fmr, dtype=np.float64)
    if not ((rates > 0) & (rates < 1)).all():
        raise ValueError(f"fmr: must lie in (0, 1), got {fmr!r}")
    if factor < 0:
        raise ValueError(f"factor: must be >= 0, got {factor!r}")
    ok = np.asarray(n_impostor) >= factor / rates
    return bool(ok) if ok.ndim == 0 else ok


def threshold_at_fmr(impostor: Any, fmr: float | Sequence[float]) -> float | np.ndarray:
    """Smallest impostor score ``t`` with ``FMR(t) = mean(impostor > t) <= fmr``.

    With n impostors at most ``floor(fmr * n)`` of them exceed ``t``, so the achieved
    FMR can be below the target when scores tie or ``fmr * n`` is not an integer.

    Parameters
    ----------
    impostor : array_like
        1-D similarity scores of impostor (different-identity) pairs.
    fmr : float or sequence of float
        Target false match rate(s), fractions in (0, 1).

    Returns
    -------
    float or numpy.ndarray
        The threshold: a float for a scalar ``fmr``, otherwise an array of the impostor
        dtype, one threshold per target. A pair matches iff ``score > t``.

    Raises
    ------
    ValueError
        If the scores are empty or non-finite, or a target lies outside (0, 1).

    Examples
    --------
    >>> impostor = [0.1, 0.2, 0.3, 0.5, 0.6]
    >>> threshold_at_fmr(impostor, 0.2)  # one of five impostors (0.6) lies above 0.5
    0.5
    >>> threshold_at_fmr(impostor, [0.2, 0.5])
    array([0.5, 0.3])
    """
    imp = check_scores(impostor, "impostor")
    rates, scalar = check_rates(fmr, "fmr")
    kth = imp.size - 1 - _allowed_false_matches(rates, imp.size)
    return _maybe_scalar(_upper_order_statistics(imp, kth), scalar)


def _upper_order_statistics(a: np.ndarray, kth: np.ndarray) -> np.ndarray:
    """``np.sort(a)[kth]`` without sorting ``a``: every wanted order statistic lies in the
    upper tail ``sort(a)[kth.min():]``, which is selected and then ordered at the kth only.

    For large ``a`` with a small tail, a bound ``v`` read off a strided sample (with a
    margin of 4 binomial SDs) gives the tail as ``a[a >= v]`` in two linear passes; if fewer
    than the needed scores reach ``v`` (an unlucky sample, ordered input) one
    ``np.partition`` selects it instead. Exact in every case.
    """
    n, lo = a.size, int(kth.min())
    need = n - lo  # scores in the tail
    tail = None
    if n >= 1 << 16 and need <= n // 4:
        sample = a[:: n >> 16]
        share = need / n
        share += 4 * np.sqrt(share * (1 - share) / sample.size) + 2 / sample.size
        j = int((1 - min(share, 1.0)) * (sample.size - 1))
        above = a >= np.partition(sample, j)[j]
        count = int(np.count_nonzero(above))
        if count >= need:
            tail, lo = a[above], n - count
    if tail is None:
        tail = np.partition(a, lo)[lo:]
    pos = kth - lo
    if pos.size <= 8:  # a few order statistics: selection beats a sort of the tail
        tail = np.partition(tail, np.unique(pos))
    else:
        tail.sort()
    return tail[pos]


def fmr_at(impostor: Any, threshold: float | Sequence[float]) -> float | np.ndarray:
    """False match rate ``FMR(t) = mean(impostor > t)`` (also FAR, FPR).

    Parameters
    ----------
    impostor : array_like
        1-D similarity scores of impostor pairs.
    threshold : float or sequence of float
        Decision threshold(s) ``t``; a pair matches iff ``score > t``.

    Returns
    -------
    float or numpy.ndarray
        The fraction of impostor scores above each threshold, in [0, 1]: a float for a
        scalar threshold, otherwise a float64 array.

    Raises
    ------
    ValueError
        If the scores are empty or non-finite.

    Examples
    --------
    >>> fmr_at([0.1, 0.2, 0.3, 0.5, 0.6], 0.5)  # a score equal to t does not match
    0.2
    >>> fmr_at([0.1, 0.2, 0.3, 0.5, 0.6], [0.3, 0.5])
    array([0.4, 0.2])
    """
    imp = check_scores(impostor, "impostor")
    t = np.atleast_1d(np.asarray(threshold, dtype=np.float64))
    above = imp.size - np.searchsorted(np.sort(imp), t, side="right")
    return _maybe_scalar(above / imp.size, np.ndim(threshold) == 0)


def fnmr_at(genuine: Any, threshold: float | Sequence[float]) -> float | np.ndarray:
    """False non-match rate ``FNMR(t) = mean(genuine <= t)`` (also FRR, FNR; TAR = 1 - FNMR).

    Parameters
    ----------
    genuine : array_like
        1-D similarity scores of genuine (same-identity) pairs.
    threshold : float or sequence of float
        Decision threshold(s) ``t``; a pair matches iff ``score > t``.

    Returns
    -------
    float or numpy.ndarray
        The fraction of genuine scores at or below each threshold, in [0, 1]: a float
        for a scalar threshold, otherwise a float64 array.

    Raises
    ------
    ValueError
        If the scores are empty or non-finite.

    Examples
    --------
    >>> fnmr_at([0.9, 0.8, 0.7, 0.4], 0.4)  # a score equal to t is a non-match
    0.25
    """
    gen = check_scores(genuine, "genuine")
    t = np.atleast_1d(np.asarray(threshold, dtype=np.float64))
    if t.size <= 8:  # a few thresholds: one counting pass each beats a sort
        at_most = np.array([np.count_nonzero(gen <= x) for x in t], dtype=np.int64)
    else:
        at_most = np.searchsorted(np.sort(gen), t, side="right")
    return _maybe_scalar(at_most / gen.size, np.ndim(threshold) == 0)


def fnmr_at_fmr(genuine: Any, impostor: Any, fmr: float | Sequence[float]) -> float | np.ndarray:
    """FNMR at the threshold ``threshold_at_fmr(impostor, fmr)``.

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.
    fmr : float or sequence of float
        Target false match rate(s), fractions in (0, 1).

    Returns
    -------
    float or numpy.ndarray
        ``mean(genuine <= t)`` at each target's threshold ``t``: a float for a scalar
        ``fmr``, otherwise a float64 array.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite, or a target lies outside (0, 1).

    Examples
    --------
    >>> fnmr_at_fmr([0.9, 0.8, 0.7, 0.4], [0.1, 0.2, 0.3, 0.5, 0.6], 0.2)  # t = 0.5
    0.25
    """
    gen = check_scores(genuine, "genuine")
    t = threshold_at_fmr(impostor, fmr)
    return fnmr_at(gen, t)


def tar_at_far(genuine: Any, impostor: Any, far: float | Sequence[float]) -> float | np.ndarray:
    """True accept rate ``1 - FNMR`` at the threshold where ``FMR <= far`` (standard TAR@FAR).

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.
    far : float or sequence of float
        Target false accept (= false match) rate(s), fractions in (0, 1).

    Returns
    -------
    float or numpy.ndarray
        ``mean(genuine > t)`` at ``t = threshold_at_fmr(impostor, far)``: a float for a
        scalar ``far``, otherwise a float64 array.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite, or a target lies outside (0, 1).

    Examples
    --------
    >>> tar_at_far([0.9, 0.8, 0.7, 0.4], [0.1, 0.2, 0.3, 0.5, 0.6], 0.2)
    0.75
    """
    fnmr = fnmr_at_fmr(genuine, impostor, far)
    return 1.0 - fnmr


def operating_points(genuine: Any, impostor: Any, fmr: Sequence[float]) -> pd.DataFrame:
    """Operating points at target false match rates.

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.
    fmr : sequence of float
        Target false match rates, fractions in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per target, columns ``fmr_target``, ``threshold``
        (:func:`threshold_at_fmr`), ``fmr`` (achieved, <= target), ``fnmr`` and
        ``tar = 1 - fnmr``.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite, or a target lies outside (0, 1).

    Examples
    --------
    >>> operating_points([0.9, 0.8, 0.7, 0.4], [0.1, 0.2, 0.3, 0.5, 0.6], [0.2, 0.5])
       fmr_target  threshold  fmr  fnmr   tar
    0         0.2        0.5  0.2  0.25  0.75
    1         0.5        0.3  0.4  0.00  1.00
    """
    gen = check_scores(genuine, "genuine")
    imp = check_scores(impostor, "impostor")
    rates, _ = check_rates(fmr, "fmr")
    t = np.asarray(threshold_at_fmr(imp, rates), dtype=np.float64)
    fnmr = np.asarray(fnmr_at(gen, t))
    return pd.DataFrame(
        {"fmr_target": rates, "threshold": t, "fmr": fmr_at(imp, t), "fnmr": fnmr, "tar": 1 - fnmr}
    )


# --------------------------------------------------------------------------- curves
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


def _eer_from_curve(curve: DetCurve) -> float:
    d = curve.fmr - curve.fnmr  # non-increasing, starts at 1, ends at -1
    k = int(np.argmax(d <= 0))
    alpha = d[k - 1] / (d[k - 1] - d[k])
    return float(curve.fmr[k - 1] + alpha * (curve.fmr[k] - curve.fmr[k - 1]))


def eer(genuine: Any, impostor: Any) -> float:
    """Equal error rate: where FMR = FNMR on the DET polyline, linearly interpolated.

    The crossing lies on the segment between the last point with FMR > FNMR and the
    first with FMR <= FNMR; the result is the common rate at the intersection.

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.

    Returns
    -------
    float
        The EER, a fraction in [0, 1].

    Raises
    ------
    ValueError
        If either score set is empty or non-finite.

    Examples
    --------
    >>> eer([0.9, 0.8, 0.7, 0.4], [0.1, 0.2, 0.3, 0.5, 0.6])
    0.25
    """
    return _eer_from_curve(det_curve(genuine, impostor))


def d_prime(genuine: Any, impostor: Any) -> float:
    """Decidability ``d' = |mu_g - mu_i| / sqrt((var_g + var_i) / 2)`` (population variances).

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.

    Returns
    -------
    float
        d' >= 0, in units of the pooled standard deviation; larger = better separated.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite, or both are constant.

    Examples
    --------
    >>> d_prime([1.0, 3.0], [-1.0, 1.0])  # means 2 and 0, both variances 1
    2.0
    """
    gen = check_scores(genuine, "genuine").astype(np.float64, copy=False)
    imp = check_scores(impostor, "impostor").astype(np.float64, copy=False)
    spread = np.sqrt((gen.var() + imp.var()) / 2)
    if spread == 0:
        raise ValueError("d_prime: both score sets are constant (zero variance)")
    return float(abs(gen.mean() - imp.mean()) / spread)


def roc_auc(genuine: Any, impostor: Any) -> float:
    """Area under the ROC curve: P(genuine > impostor) + 0.5 P(tie), for similarity
    scores (higher = more alike); the Mann-Whitney U statistic / (n_genuine n_impostor).

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.

    Returns
    -------
    float
        AUC in [0, 1]; 0.5 = chance, 1 = every genuine score above every impostor score.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite.

    Examples
    --------
    >>> roc_auc([0.9, 0.5], [0.1, 0.5])  # 3 of 4 pairs ordered, 1 tie: (3 + 0.5) / 4
    0.875
    """
    from scipy.stats import rankdata

    gen = check_scores(genuine, "genuine").astype(np.float64, copy=False)
    imp = check_scores(impostor, "impostor").astype(np.float64, copy=False)
    ranks = rankdata(np.concatenate([gen, imp]))
    return float((ranks[: gen.size].sum() - gen.size * (gen.size + 1) / 2) / (gen.size * imp.size))


# --------------------------------------------------------------------------- fairness summaries
def max_min_ratio(rates: Any) -> np.ndarray | float:
    """Ratio max / min of a rate across groups (last axis); 1 = all groups equal.

    Parameters
    ----------
    rates : array_like
        Rates (fractions), groups on the last axis.

    Returns
    -------
    float or numpy.ndarray
        max / min per row: x/0 gives inf (unbounded), 0/0 (every rate 0) gives NaN: the
        ratio is undefined there, not 1. NaN where a rate is NaN. A float for 1-D input.

    Examples
    --------
    >>> max_min_ratio([0.01, 0.02, 0.04])
    4.0
    >>> max_min_ratio([0.0, 0.0]), max_min_ratio([0.0, 0.1])
    (nan, inf)
    """
    x = np.asarray(rates, dtype=np.float64)
    hi, lo = x.max(axis=-1), x.min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(hi == 0, np.nan, hi / lo)
    return r if r.ndim else float(r)


def gini(rates: Any) -> np.ndarray | float:
    """Gini coefficient across groups (last axis), with the n/(n-1) correction of GARBE.

    ``G(x) = n/(n-1) * sum_i sum_j |x_i - x_j| / (2 n^2 mean(x))``; 0 when all equal.

    Parameters
    ----------
    rates : array_like
        Non-negative rates (fractions), groups on the last axis.

    Returns
    -------
    float or numpy.ndarray
        Gini per row, in [0, 1]: 0 = all equal (also when every rate is 0). A float for
        1-D input.

    Raises
    ------
    ValueError
        If there are fewer than two groups.

    Examples
    --------
    >>> gini([0.1, 0.1])
    0.0
    >>> round(gini([0.0, 0.1]), 6)  # all of the rate in one group of two
    1.0
    """
    x = np.asarray(rates, dtype=np.float64)
    n = x.shape[-1]
    if n < 2:
        raise ValueError("gini: needs at least two groups")
    diff = np.abs(x[..., :, None] - x[..., None, :]).sum(axis=(-1, -2))
    mean = x.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(mean == 0, 0.0, n / (n - 1) * diff / (2 * n**2 * mean))
    return g if g.ndim else float(g)


def fdr(fmr_groups: Any, fnmr_groups: Any, alpha: float = 0.5) -> np.ndarray | float:
    """Fairness Discrepancy Rate (de Freitas Pereira & Marcel): 1 = fair.

    ``1 - (alpha * max|FMR_i - FMR_j| + (1 - alpha) * max|FNMR_i - FNMR_j|)``.

    Parameters
    ----------
    fmr_groups, fnmr_groups : array_like
        Per-group FMR and FNMR (fractions) at one threshold policy, groups on the last
        axis.
    alpha : float, default 0.5
        Weight of the FMR gap; ``1 - alpha`` weighs the FNMR gap.

    Returns
    -------
    float or numpy.ndarray
        FDR in [0, 1], 1 = no gap; a float for 1-D input.

    Examples
    --------
    >>> round(fdr([0.01, 0.03], [0.1, 0.2]), 6)  # 1 - (0.5 * 0.02 + 0.5 * 0.1)
    0.94
    """
    a = np.ptp(np.asarray(fmr_groups, dtype=np.float64), axis=-1)
    b = np.ptp(np.asarray(fnmr_groups, dtype=np.float64), axis=-1)
    r = 1 - (alpha * a + (1 - alpha) * b)
    return r if np.ndim(r) else float(r)


def garbe(fmr_groups: Any, fnmr_groups: Any, alpha: float = 0.5) -> np.ndarray | float:
    """Gini Aggregation Rate for Biometric Equitability (Howard et al.): 0 = fair.

    ``alpha * gini(FMR) + (1 - alpha) * gini(FNMR)`` with :func:`gini` across groups.

    Parameters
    ----------
    fmr_groups, fnmr_groups : array_like
        Per-group FMR and FNMR (fractions), groups on the last axis.
    alpha : float, default 0.5
        Weight of the FMR Gini; ``1 - alpha`` weighs the FNMR Gini.

    Returns
    -------
    float or numpy.ndarray
        GARBE in [0, 1], 0 = all groups equal; a float for 1-D input.

    Raises
    ------
    ValueError
        If there are fewer than two groups.

    Examples
    --------
    >>> garbe([0.1, 0.1], [0.2, 0.2])
    0.0
    """
    r = alpha * np.asarray(gini(fmr_groups)) + (1 - alpha) * np.asarray(gini(fnmr_groups))
    return r if np.ndim(r) else float(r)


def inequity_rate(fmr_groups: Any, fnmr_groups: Any, alpha: float = 0.5) -> np.ndarray | float:
    """Inequity rate ``(max/min FMR)^alpha * (max/min FNMR)^(1-alpha)``: 1 = fair.

    Infinite when some group has a zero rate and another does not; NaN (undefined) when
    every group's rate is 0 and its exponent is not 0 (see :func:`max_min_ratio`).

    Parameters
    ----------
    fmr_groups, fnmr_groups : array_like
        Per-group FMR and FNMR (fractions), groups on the last axis.
    alpha : float, default 0.5
        Exponent of the FMR ratio; ``1 - alpha`` is the FNMR ratio's.

    Returns
    -------
    float or numpy.ndarray
        Inequity rate >= 1 (or inf); a float for 1-D input.

    Examples
    --------
    >>> inequity_rate([0.01, 0.04], [0.1, 0.1])  # FMR ratio 4, FNMR ratio 1: sqrt(4)
    2.0
    """
    r = np.asarray(max_min_ratio(fmr_groups)) ** alpha * np.asarray(
        max_min_ratio(fnmr_groups)
    ) ** (1 - alpha)
    return r if np.ndim(r) else float(r)


def _summaries(fmr_g: np.ndarray, fnmr_g: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    """All fairness summaries across groups (last axis); NaN (undefined) for a single group."""
    if fmr_g.shape[-1] < 2:
        nan = np.full(fmr_g.shape[:-1], np.nan)
        return dict.fromkeys(("fmr_ratio", "fnmr_ratio", "fdr", "garbe", "inequity_rate"), nan)
    return {
        "fmr_ratio": np.asarray(max_min_ratio(fmr_g)),
        "fnmr_ratio": np.asarray(max_min_ratio(fnmr_g)),
        "fdr": np.asarray(fdr(fmr_g, fnmr_g, alpha)),
        "garbe": np.asarray(garbe(fmr_g, fnmr_g, alpha)),
        "inequity_rate": np.asarray(inequity_rate(fmr_g, fnmr_g, alpha)),
    }


def _zero_rate_notes(fmr_g: np.ndarray, fnmr_g: np.ndarray) -> list[list[str]]:
    """Per row (leading axis of ``(n, n_groups)`` rates): why a max/min ratio is inf or NaN
    although every rate is known (a zero denominator), e.g. ``"fnmr_ratio: inf, a group's
    FNMR is 0"``."""
    notes: list[list[str]] = [[] for _ in range(fmr_g.shape[0])]
    if fmr_g.shape[-1] < 2:
        return notes
    for name, x in (("fmr", fmr_g), ("fnmr", fnmr_g)):
        known = ~np.isnan(x).any(axis=-1)
        for i in np.flatnonzero(known & (x.max(axis=-1) == 0)):
            notes[i].append(f"{name}_ratio: undefined, every group's {name.upper()} is 0")
        for i in np.flatnonzero(known & (x.max(axis=-1) > 0) & (x.min(axis=-1) == 0)):
            notes[i].append(f"{name}_ratio: inf, a group's {name.upper()} is 0")
    return notes


#: Note on a statistic whose percentile interval excludes its estimate (see :func:`group_report`).
EXCLUDES_ESTIMATE = "interval excludes the estimate (bootstrap bias)"


# --------------------------------------------------------------------------- weighted rates
class _SortedScores:
    """A contiguous run ``[start, stop)`` of scores sorted ascending, for rates and
    thresholds under many weightings without copying or gathering.

    Weights are per-row multiplicities from a bootstrap replicate, laid out in the same
    order as the scores (``weights=None`` means 1). ``weigh`` returns the cumulative
    weights, which ``threshold`` and ``count_above`` take, so one replicate sums each
    run's weights once.
    """

    def __init__(self, sorted_scores: np.ndarray, start: int = 0, stop: int | None = None):
        self.start = start
        self.stop = sorted_scores.size if stop is None else stop
        self.values = sorted_scores[self.start : self.stop]

    def weigh(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Cumulative weights in score order (1, 2, 3, ... without weights)."""
        if weights is None:
            return np.arange(1, self.values.size + 1, dtype=np.float64)
        return np.cumsum(weights[self.start : self.stop], dtype=np.float64)

    def threshold(self, fmr: np.ndarray, cw: np.ndarray | None = None) -> np.ndarray:
        """Smallest score t with weighted FMR(t) <= fmr (NaN if the total weight is 0).

        The first position j with ``(total - cw[j]) / total <= fmr`` starts the first tie
        run that satisfies the rule (the share above a run is read at its last element,
        where it is smallest), so no run bookkeeping is needed.
        """
        cw = self.weigh() if cw is None else cw
        total = cw[-1]
        if total == 0:
            return np.full(fmr.shape, np.nan)
        above = (total - cw) / total  # non-increasing
        j = np.searchsorted(-above, -fmr, side="left")
        return self.values[j].astype(np.float64)

    def threshold_from_top(self, fmr: np.ndarray, total: float,
                           top: Callable[[int], np.ndarray]) -> np.ndarray:
        """``threshold(fmr, cw)`` from the total weight and the weights of the highest scores
        alone, for integer-valued weights (bootstrap multiplicities).

        ``top(k)`` returns the weights of the ``k`` highest scores, ascending by score. With
        integer weights the weight above a position is the same exact integer whether summed
        from the top or as ``total - cw``, so the shares, and the threshold, are the same
        floats as :meth:`threshold`'s; only the top is read (doubled until the position
        below it fails every target, which proves the answer lies inside).
        """
        n = self.values.size
        if total == 0:
            return np.full(fmr.shape, np.nan)
        hi = float(np.max(fmr))
        k = min(n, 64 + int(4 * hi * n))
        while True:
            w = top(k)
            above = np.cumsum(w[::-1])[::-1]  # above[i]: weight of the top k - i scores
            if k == n or above[0] / total > hi:
                break
            k = min(n, 2 * k)
        share = np.r_[above[1:], 0.0] / total  # share above position n - k + i
        j = n - k + np.searchsorted(-share, -fmr, side="left")
        return self.values[j].astype(np.float64)

    def count_above(self, t: np.ndarray, cw: np.ndarray | None = None) -> np.ndarray:
        """Weighted number of scores > t."""
        cw = self.weigh() if cw is None else cw
        i = np.searchsorted(self.values, t, side="right")
        return cw[-1] - np.where(i > 0, cw[np.maximum(i - 1, 0)], 0.0)

    def fraction_above(self, t: np.ndarray, cw: np.ndarray | None = None) -> np.ndarray:
        """Weighted share of scores > t (NaN where t is NaN or the total weight is 0)."""
        cw = self.weigh() if cw is None else cw
        if cw[-1] == 0:
            return np.full(np.shape(t), np.nan)
        return np.where(np.isnan(t), np.nan, self.count_above(t, cw) / cw[-1])


def _pooled_threshold(
    candidates: np.ndarray, sets: Sequence[_SortedScores], cws: Sequence[np.ndarray],
    fmr: np.ndarray,
) -> np.ndarray:
    """``threshold`` on the union of several weighted score sets, without merging them.

    ``candidates`` are all their scores sorted. Binary search for the smallest candidate
    t with ``sum_g count_above_g(t) / sum_g total_g <= fmr``: O(log n) per set and
    target instead of gathering every weight into pooled order.
    """
    total = float(sum(cw[-1] for cw in cws))
    if total == 0:
        return np.full(fmr.shape, np.nan)
    lo = np.zeros(fmr.size, dtype=np.int64)
    hi = np.full(fmr.size, candidates.size - 1)  # the largest score always qualifies
    while (lo < hi).any():
        mid = (lo + hi) // 2
        t = candidates[mid]
        above = sum(st.count_above(t, cw) for st, cw in zip(sets, cws, strict=True))
        ok = above / total <= fmr
        hi = np.where(ok, mid, hi)  # hi always qualifies, so a converged entry stays put
        lo = np.where(ok, lo, mid + 1)
    return candidates[lo].astype(np.float64)


# --------------------------------------------------------------------------- group report
@dataclass
class GroupReport:
    """Per-group error rates at global and per-group thresholds, with fairness summaries.

    Made by :func:`group_report`; ``str(report)`` prints both tables with intervals.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (fmr_target, group). ``*_global`` columns use one threshold set on
        all impostors pooled (NIST style); ``*_group`` columns use each group's own
        threshold (BFW style). ``*_lo``/``*_hi`` are bootstrap percentile intervals and
        ``*_lo_mcse``/``*_hi_mcse`` the Monte Carlo standard errors of those bounds
        (:func:`facebias.stats.percentile_mc_error`; :func:`facebias.stats.mc_error_summary`
        reads them).
        ``fmr_dev_*_pct`` = 100 (FMR - target) / target. ``resolved``: the group has at
        least ``min_impostor_factor / fmr_target`` impostors (else its rates are NaN);
        ``note``: "too few impostors" and any interval that excludes its estimate.
    summary : pandas.DataFrame
        One row per (fmr_target, policy) with max/min FMR and FNMR ratios, FDR, GARBE and
        the inequity rate across groups, with intervals and their bounds' Monte Carlo
        errors; ``resolved`` (every group is) and
        ``note`` (why a value is NaN or inf, or an interval excludes its estimate).
    meta : dict
        Column names, counts, bootstrap settings and the conventions used.
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN becomes null, infinities the strings "inf"/"-inf").

        Returns
        -------
        dict
            ``{"meta": ..., "groups": [table rows], "summary": [summary rows]}``.
        """
        return jsonable({"meta": self.meta, "groups": self.table.to_dict(orient="records"),
                         "summary": self.summary.to_dict(orient="records")})

    def to_json(self, path: str | os.PathLike | None = None, indent: int = 2) -> str:
        """The report as strict JSON; written atomically to ``path`` when given.

        Parameters
        ----------
        path : str or os.PathLike, optional
            File to write (with a trailing newline); nothing is written without it.
        indent : int, default 2
            JSON indentation.

        Returns
        -------
        str
            The JSON text of :meth:`to_dict`.
        """
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            write_text_atomic(path, text + "\n")
        return text

    @property
    def mc_error(self) -> pd.DataFrame:
        """How precise the bootstrap bounds are: :func:`facebias.stats.mc_error_summary` of
        :attr:`table` and of :attr:`summary` (column ``source``); empty without a bootstrap."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no bootstrap: an empty table is the answer
            return mc_error_report({"table": (self.table, self.meta["n_boot"]),
                                    "summary": (self.summary, self.meta["n_boot"])})

    def __str__(self) -> str:
        m = self.meta
        boot = (f"{m['n_boot']} bootstrap replicates resampling {m['bootstrap_unit']}, "
                f"{m['ci']:.0%} CI" if m["n_boot"] else "no bootstrap intervals")
        mc = self.mc_error if m["n_boot"] else None
        if mc is not None and mc["max_mcse_of_width"].notna().any():
            boot += (f"; Monte Carlo error of a bound at most {mc['max_mcse_of_width'].max():.1%} of its "
                     f"interval's width ({mc['n_boot_needed'].max()} replicates keep it within "
                     f"{MC_ERROR_OF_WIDTH:.0%})")
        head = (
            f"group report: score={m['score']!r} label={m['label']!r} group={m['group']!r} "
            f"| {m['n_genuine']} genuine, {m['n_impostor']} impostor pairs | {boot}"
        )

        def with_ci(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
            """Numbers as text, ``value [lo, hi]`` where an interval exists."""
            out = pd.DataFrame(index=df.index)
            for c in cols:
                v = df[c]
                if pd.api.types.is_float_dtype(v) and c != "fmr_target":
                    text = v.map(lambda x: f"{x:.4g}")
                    if f"{c}_lo" in df:
                        text = text + " [" + df[f"{c}_lo"].map(lambda x: f"{x:.4g}") + ", " + \
                            df[f"{c}_hi"].map(lambda x: f"{x:.4g}") + "]"
                    out[c] = text
                else:
                    out[c] = v.map(lambda x: f"{x:g}" if isinstance(x, float) else str(x))
            return out

        groups = with_ci(self.table, ["fmr_target", "group", "n_genuine", "n_impostor", "fmr_global",
                                      "fnmr_global", "fmr_group", "fnmr_group", "resolved", "note"])
        summary = with_ci(self.summary, ["fmr_target", "policy", "fmr_ratio", "fnmr_ratio", "fdr",
                                         "garbe", "inequity_rate", "resolved", "note"])
        return (f"{head}\n{groups.to_string(index=False)}\n\nfairness across groups "
                f"(global: one threshold for all; group: each group's own)\n"
                f"{summary.to_string(index=False)}")


def _column(pairs: pd.DataFrame, name: str, role: str) -> pd.Series:
    require_columns(pairs, [name], role)
    return pairs[name]


def group_report(
    pairs: pd.DataFrame,
    score: str,
    label: str,
    group: str,
    fmr: float | Sequence[float] = (1e-3,),
    *,
    ids: tuple[str, str] | None = None,
    n_boot: int = 200,
    ci: float = 0.95,
    seed: int = 0,
    alpha: float = 0.5,
    min_impostor_factor: float = 10.0,
) -> GroupReport:
    """Per-group FMR/FNMR at a global and at per-group thresholds, with bootstrap CIs.

    The global threshold is :func:`threshold_at_fmr` on all impostors pooled; each
    group's threshold uses that group's impostors only. Thresholds are re-estimated in
    every bootstrap replicate, each replicate exactly as the estimate (the estimate on
    the rows repeated by their bootstrap weights).

    **Resolution** (:func:`enough_impostors`): a rate at target ``f`` computed from fewer
    than ``min_impostor_factor / f`` impostors is NaN, never a number, and its row has
    ``resolved`` False and ``note`` "too few impostors": ``threshold_global`` and
    ``fnmr_global`` need that many impostors pooled; ``fmr_global`` and every
    ``*_group`` value need that many in the group. A fairness summary over an unresolved
    group is NaN (``resolved`` False).

    **Intervals** are percentile intervals of the replicates. A max/min ratio with a zero
    minimum is inf, or NaN when every rate is 0 (0/0, undefined), with the reason in
    ``note``; a NaN estimate has NaN bounds. Where a percentile interval excludes its
    estimate, ``note`` says so (``"<stat>: interval excludes the estimate (bootstrap
    bias)"``): it happens for statistics at or near a bound of their range (a max/min
    ratio of 1, an FDR near 1, an FMR at its own threshold, which never exceeds the
    target) or an extreme order statistic, whose replicates lie on one side.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per comparison.
    score : str
        Similarity column (match iff score > t).
    label : str
        Label column: 1/True = genuine, 0/False = impostor.
    group : str
        The pair's group (e.g. the query's subgroup).
    fmr : float or sequence of float, default (1e-3,)
        Target FMR(s), fractions in (0, 1).
    ids : tuple of str, optional
        The two identity columns; when given, the bootstrap resamples identities (a
        pair's weight is the product of its identities' multiplicities; a genuine pair's
        is its identity's), otherwise pairs.
    n_boot : int, default 200
        Bootstrap replicates; 0 = no intervals.
    ci : float, default 0.95
        Coverage of the percentile intervals, in (0, 1).
    seed : int, default 0
        Seed of the bootstrap.
    alpha : float, default 0.5
        Weight of FMR against FNMR in FDR, GARBE and the inequity rate.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / f``, for a rate at target ``f`` (0 = report every
        rate).

    Returns
    -------
    GroupReport
        ``table`` (per fmr_target and group), ``summary`` (fairness across groups per
        policy) and ``meta``; both tables have the columns ``resolved`` (bool) and
        ``note`` (reasons for NaN, inf and intervals that exclude their estimate).

    Raises
    ------
    ValueError
        If ``pairs`` is not a non-empty DataFrame, a column is missing, a score is
        non-finite, a label is not 0/1, a group is missing or lacks genuine or impostor
        pairs, a target lies outside (0, 1), ``ci`` outside (0, 1), ``n_boot < 0`` or
        ``min_impostor_factor < 0``.

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.8, 0.1, 0.3, 0.7, 0.4, 0.2, 0.6],
    ...                       "label": [1, 1, 0, 0, 1, 1, 0, 0], "group": list("aaaabbbb")})
    >>> r = group_report(pairs, "score", "label", "group", fmr=0.25, n_boot=0, min_impostor_factor=0)
    >>> r.table[["group", "threshold_global", "fmr_global", "threshold_group", "fnmr_group"]]
      group  threshold_global  fmr_global  threshold_group  fnmr_group
    0     a               0.3         0.0              0.3         0.0
    1     b               0.3         0.5              0.6         0.5
    >>> r.summary[["policy", "fmr_ratio", "fnmr_ratio"]]  # one threshold: FMR differs
       policy  fmr_ratio  fnmr_ratio
    0  global        inf         NaN
    1   group        NaN         inf
    >>> print(r.summary["note"][0])  # x/0 is inf, 0/0 undefined: said, not hidden
    fmr_ratio: inf, a group's FMR is 0; fnmr_ratio: undefined, every group's FNMR is 0
    >>> group_report(pairs, "score", "label", "group", fmr=0.25, n_boot=0).table.resolved.tolist()
    [False, False]
    """
    s, is_gen, g, rates = _group_report_inputs(pairs, score, label, group, fmr, ci, n_boot)
    sets = _GroupSets.of(s, is_gen, g, label, group)
    n_imp = np.array([x.values.size for x in sets.imp])
    ok_pool = np.asarray(enough_impostors(n_imp.sum(), rates, min_impostor_factor))
    ok_grp = np.asarray(enough_impostors(n_imp[None, :], rates[:, None], min_impostor_factor))

    def resolved_only(est: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """NaN where the impostors behind a value are too few (the pooled ones for the
        global threshold and FNMR, the group's for the rest)."""
        return {k: np.where(ok_pool[:, None] if k in ("threshold_global", "fnmr_global") else ok_grp, v, np.nan)
                for k, v in est.items()}

    point = resolved_only(sets.evaluate(None, rates))
    boots: dict[str, list[np.ndarray]] = {k: [] for k in point}
    # the weights of a brute-force resample in input row order, laid out in sorted order
    if ids is not None:  # identity multiplicities read straight into sorted order
        id1 = _column(pairs, ids[0], "identity").to_numpy()
        id2 = _column(pairs, ids[1], "identity").to_numpy()
        unit = "identities"
        ca, cb, draws = identity_bootstrap(len(pairs), n_boot, seed, id1, id2)
        ca, cb = ca[sets.order], cb[sets.order]
        replicates = (m[ca] * m[cb] for m in draws)
    else:
        unit = "pairs"
        replicates = (w[sets.order] for w in bootstrap_weights(len(pairs), n_boot, seed))
    for w in replicates:
        for k, v in resolved_only(sets.evaluate(w, rates)).items():
            boots[k].append(v)
    meta = {
        "score": score, "label": label, "group": group, "fmr": rates.tolist(),
        "n_genuine": int(is_gen.sum()), "n_impostor": int((~is_gen).sum()),
        "n_boot": int(n_boot), "ci": ci, "seed": seed, "alpha": alpha, "bootstrap_unit": unit,
        "min_impostor_factor": min_impostor_factor,
        "conventions": "scores are similarities; match iff score > t; rates are fractions; a rate at "
                       f"target f from fewer than {min_impostor_factor:g}/f impostors is NaN (resolved false)",
    }
    return GroupReport(_group_table(sets, rates, point, boots, n_boot, ci, ok_grp),
                       _fairness_summary(rates, point, boots, n_boot, ci, alpha, ok_grp), meta)


def _group_report_inputs(
    pairs: pd.DataFrame, score: str, label: str, group: str, fmr: float | Sequence[float],
    ci: float, n_boot: int,
) -> tuple[np.ndarray, np.ndarray, pd.Series, np.ndarray]:
    """:func:`group_report`'s checked inputs: ``(scores, is_genuine, groups, fmr targets)``."""
    if not isinstance(pairs, pd.DataFrame):
        raise ValueError(f"pairs: expected a pandas DataFrame, got {type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs: the table has no rows")
    s = check_scores(_column(pairs, score, "score").to_numpy(), f"column {score!r}", pairs.index)
    is_gen = check_labels(_column(pairs, label, "label"), f"column {label!r}")
    g = _column(pairs, group, "group")
    if g.isna().any():
        first = _row(g.index[g.isna().to_numpy()][0])
        raise ValueError(f"column {group!r}: missing group in row {first!r}")
    rates, _ = check_rates(fmr, "fmr")
    if not 0 < ci < 1:
        raise ValueError(f"ci: must lie in (0, 1), got {ci!r}")
    if n_boot < 0:
        raise ValueError(f"n_boot: must be >= 0, got {n_boot!r}")
    return s, is_gen, g, rates


@dataclass
class _GroupSets:
    """The scores as one sorted array with a contiguous run per (group, label): run 2k
    holds group k's impostors, run 2k + 1 its genuine pairs. ``order`` maps the sorted
    layout to the input rows (bootstrap weights are laid out in it); ``candidates``: all
    impostor scores sorted (the pooled threshold's search space)."""

    names: pd.Index
    order: np.ndarray
    gen: list[_SortedScores]
    imp: list[_SortedScores]
    candidates: np.ndarray

    @classmethod
    def of(cls, s: np.ndarray, is_gen: np.ndarray, g: pd.Series, label: str,
           group: str) -> _GroupSets:
        """Sort ``s`` into runs; ``ValueError`` when a label or a group's label is absent
        (``label``, ``group``: the column names, for the message)."""
        codes, names = pd.factorize(g, sort=True)
        if not (~is_gen).any() or not is_gen.any():
            raise ValueError(f"column {label!r}: needs both genuine (1) and impostor (0) pairs")
        set_id = 2 * codes + is_gen
        order = np.lexsort((s, set_id))
        s_sorted = s[order]
        bounds = np.searchsorted(set_id[order], np.arange(2 * len(names) + 1))
        gen_sets, imp_sets = [], []
        for k, name in enumerate(names):
            for sets, j, what in ((imp_sets, 2 * k, "impostor"), (gen_sets, 2 * k + 1, "genuine")):
                if bounds[j + 1] == bounds[j]:
                    raise ValueError(f"column {group!r}: group {name!r} has no {what} pairs")
                sets.append(_SortedScores(s_sorted, bounds[j], bounds[j + 1]))
        return cls(names, order, gen_sets, imp_sets, np.sort(s[~is_gen]))

    def evaluate(self, weights: np.ndarray | None, rates: np.ndarray) -> dict[str, np.ndarray]:
        """All estimates for one weighting (rows in sorted order; None = unweighted):
        arrays (n_fmr, n_groups) keyed ``threshold_global``, ``fmr_global``,
        ``fnmr_global``, ``threshold_group``, ``fmr_group``, ``fnmr_group``."""
        cws_imp = [im.weigh(weights) for im in self.imp]
        t_glob = _pooled_threshold(self.candidates, self.imp, cws_imp, rates)
        out = {"threshold_global": np.repeat(t_glob[:, None], len(self.names), axis=1)}
        cols = {k: [] for k in ("fmr_global", "fnmr_global", "threshold_group", "fmr_group", "fnmr_group")}
        for gs, im, cw_imp in zip(self.gen, self.imp, cws_imp, strict=True):
            cw_gen = gs.weigh(weights)
            t_g = im.threshold(rates, cw_imp)
            cols["fmr_global"].append(im.fraction_above(t_glob, cw_imp))
            cols["fnmr_global"].append(1 - gs.fraction_above(t_glob, cw_gen))
            cols["threshold_group"].append(t_g)
            cols["fmr_group"].append(im.fraction_above(t_g, cw_imp))
            cols["fnmr_group"].append(1 - gs.fraction_above(t_g, cw_gen))
        out.update({k: np.stack(v, axis=1) for k, v in cols.items()})
        return out


def _group_table(sets: _GroupSets, rates: np.ndarray, point: dict[str, np.ndarray],
                 boots: dict[str, list[np.ndarray]], n_boot: int, ci: float,
                 resolved: np.ndarray) -> pd.DataFrame:
    """:attr:`GroupReport.table`: one row per (fmr_target, group); percentile intervals of
    the ``n_boot`` replicates in ``boots`` when ``n_boot > 0``; ``resolved`` (n_fmr,
    n_groups): whether the group has enough impostors; ``note``: why a value is NaN or an
    interval excludes its estimate."""
    n_gen = np.array([x.values.size for x in sets.gen])
    n_imp = np.array([x.values.size for x in sets.imp])
    table = []
    for f in rates:
        for j, name in enumerate(sets.names):
            table.append({"fmr_target": f, "group": name, "n_genuine": int(n_gen[j]),
                          "n_impostor": int(n_imp[j])})
    table = pd.DataFrame(table)
    table["resolved"] = resolved.reshape(-1)
    notes = [[] if ok else [TOO_FEW_IMPOSTORS] for ok in table["resolved"]]
    for k, v in point.items():
        table[k] = v.reshape(-1)
        if n_boot and k != "threshold_global":
            reps = np.stack(boots[k])
            lo, hi = percentile_interval(reps, ci)
            table[f"{k}_lo"], table[f"{k}_hi"] = lo.reshape(-1), hi.reshape(-1)
            lo_se, hi_se = percentile_mc_error(reps, ci)
            table[f"{k}_lo_mcse"], table[f"{k}_hi_mcse"] = lo_se.reshape(-1), hi_se.reshape(-1)
            for i in np.flatnonzero(excludes_estimate(table[k], table[f"{k}_lo"], table[f"{k}_hi"])):
                notes[i].append(f"{k}: {EXCLUDES_ESTIMATE}")
    for pol in ("global", "group"):
        table[f"fmr_dev_{pol}_pct"] = 100 * (table[f"fmr_{pol}"] - table["fmr_target"]) / table["fmr_target"]
    table["note"] = ["; ".join(n) for n in notes]
    return table


def _fairness_summary(rates: np.ndarray, point: dict[str, np.ndarray],
                      boots: dict[str, list[np.ndarray]], n_boot: int, ci: float,
                      alpha: float, resolved: np.ndarray) -> pd.DataFrame:
    """:attr:`GroupReport.summary`: one row per (fmr_target, policy) of :func:`_summaries`
    across groups; percentile intervals of the replicates when ``n_boot > 0`` (NaN where
    the estimate is NaN); ``resolved``: every group resolved (``resolved`` is (n_fmr,
    n_groups)); ``note``: why a value is NaN or inf, or an interval excludes it."""
    summary = []
    for pol in ("global", "group"):
        est = _summaries(point[f"fmr_{pol}"], point[f"fnmr_{pol}"], alpha)
        zero_notes = _zero_rate_notes(point[f"fmr_{pol}"], point[f"fnmr_{pol}"])
        if n_boot:
            reps = _summaries(np.stack(boots[f"fmr_{pol}"]), np.stack(boots[f"fnmr_{pol}"]), alpha)
            intervals = {k: (*percentile_interval(v, ci), *percentile_mc_error(v, ci)) for k, v in reps.items()}
        for i, f in enumerate(rates):
            ok = bool(resolved[i].all())
            row = {"fmr_target": f, "policy": pol, "resolved": ok}
            notes = ([] if ok else [TOO_FEW_IMPOSTORS]) + zero_notes[i]
            for k, v in est.items():
                row[k] = float(v[i])
                if n_boot:
                    lo, hi, lo_se, hi_se = (float(x[i]) if not np.isnan(v[i]) else np.nan for x in intervals[k])
                    row[f"{k}_lo"], row[f"{k}_hi"] = lo, hi
                    row[f"{k}_lo_mcse"], row[f"{k}_hi_mcse"] = lo_se, hi_se
                    if excludes_estimate(v[i], lo, hi):
                        notes.append(f"{k}: {EXCLUDES_ESTIMATE}")
            row["note"] = "; ".join(notes)
            summary.append(row)
    return pd.DataFrame(summary)


# --------------------------------------------------------------------------- enrolment
def failure_to_enrol(enrolled: Any, groups: Any = None, reasons: Any = None,
                     ci: float = 0.95) -> pd.DataFrame:
    """Failure-to-enrol table (NIST practice: report it beside every error rate).

    Parameters
    ----------
    enrolled : array_like of bool
        Per image, whether a template was made (``EmbedResult.enrolled``); 0/1 accepted.
    groups : array_like, optional
        A label per image: one row per group plus ``"all"``; without it one row ``"all"``.
    reasons : array_like of str, optional
        Failure reason per image (None where enrolled); the most frequent is shown.
    ci : float, default 0.95
        Coverage of the Wilson interval.

    Returns
    -------
    pandas.DataFrame
        Indexed by group, columns ``n, n_fte, fte_rate`` (a fraction), ``fte_lo, fte_hi``
        (Wilson interval at ``ci``) and ``top_reason``.

    Raises
    ------
    ValueError
        If ``enrolled`` holds a missing or non-0/1 value, or ``groups``/``reasons`` do not
        have one entry per image.

    Examples
    --------
    >>> t = failure_to_enrol([True, False, True, True], groups=["a", "a", "b", "b"],
    ...                      reasons=[None, "no face", None, None])
    >>> t[["n", "n_fte", "fte_rate", "top_reason"]]
         n  n_fte  fte_rate top_reason
    a    2      1      0.50    no face
    b    2      0      0.00        NaN
    all  4      1      0.25    no face
    """
    ok = check_labels(pd.Series(np.asarray(enrolled)), "enrolled")
    n = ok.size
    g = np.full(n, "all", dtype=object) if groups is None else np.asarray(groups, dtype=object)
    if g.shape != (n,):
        raise ValueError(f"groups: expected {n} labels, got shape {g.shape}")
    r = np.full(n, None, dtype=object) if reasons is None else np.asarray(reasons, dtype=object)
    if r.shape != (n,):
        raise ValueError(f"reasons: expected {n} entries, got shape {r.shape}")
    rows = {}
    levels = [*pd.unique(g)] + (["all"] if groups is not None else [])
    for level in levels:
        m = np.ones(n, bool) if (level == "all" and groups is not None) else g == level
        fails = ~ok & m
        top = pd.Series(r[fails]).dropna().value_counts()
        rows[level] = {"n": int(m.sum()), "n_fte": int(fails.sum()),
                       "top_reason": top.index[0] if len(top) else None}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.insert(2, "fte_rate", table["n_fte"] / table["n"])
    lo, hi = wilson_interval(table["n_fte"].to_numpy(), table["n"].to_numpy(), ci)
    table.insert(3, "fte_lo", lo)
    table.insert(4, "fte_hi", hi)
    return table
