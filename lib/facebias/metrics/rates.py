"""Error rates at thresholds and thresholds at target rates: FMR/FNMR at a threshold,
the threshold at a target FMR, FNMR (TAR) at a target FMR (FAR), operating-point tables.

Conventions: scores are similarities, a pair matches iff ``score > t``,
``FMR(t) = mean(impostor > t)``, ``FNMR(t) = mean(genuine <= t)``; see :mod:`facebias.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics.checks import check_rates, check_scores

__all__ = ["threshold_at_fmr", "fmr_at", "fnmr_at", "fnmr_at_fmr", "tar_at_far", "operating_points"]


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
