"""Fairness summaries of error rates across groups: the max/min ratio, the Gini
coefficient, FDR (de Freitas Pereira & Marcel), GARBE (Howard et al.) and the inequity
rate, with the notes that explain an infinite or undefined ratio.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["max_min_ratio", "gini", "fdr", "garbe", "inequity_rate"]


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
