"""Statistical helpers shared by every study: bootstrap, intervals.

One bootstrap for the whole project: ``bootstrap_weights`` yields, per replicate, a
multiplicity for every row (pair). Estimators take the weights, so a replicate never
copies the data, and resampling *identities* instead of pairs is a change of weights.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = ["bootstrap_weights", "identity_bootstrap", "percentile_interval", "excludes_estimate", "wilson_interval"]


def bootstrap_weights(
    n: int,
    n_boot: int,
    seed: int,
    *,
    id1: Any = None,
    id2: Any = None,
) -> Iterator[np.ndarray]:
    """Yield ``n_boot`` weight vectors (float64, length ``n``) of a nonparametric bootstrap.

    Without identities, rows are resampled with replacement (weight = how often a row was
    drawn). With ``id1``/``id2`` (the two identity columns of a pair table) identities are
    resampled with replacement instead (a cluster bootstrap): identity ``i`` drawn ``m_i``
    times gives a pair ``(a, b)`` the weight ``m_a * m_b``, and a same-identity pair
    ``(a, a)`` the weight ``m_a``. Deterministic given ``seed``.

    Parameters
    ----------
    n : int
        Number of rows (pairs) of the table being resampled.
    n_boot : int
        Number of replicates to yield (>= 0).
    seed : int
        Seed of the ``numpy.random.default_rng`` that draws every replicate.
    id1, id2 : array_like of length ``n``, optional
        The two identity columns of a pair table; give both for the identity (cluster)
        bootstrap, or neither for the row bootstrap.

    Yields
    ------
    numpy.ndarray
        (n,) float64 multiplicities, one per row, for one replicate.

    Raises
    ------
    ValueError
        If ``n_boot < 0``; if only one identity column is given, or either has a length
        other than ``n`` or a missing value.

    Examples
    --------
    >>> next(bootstrap_weights(4, n_boot=1, seed=0))
    array([0., 1., 2., 1.])
    >>> w = next(bootstrap_weights(3, 1, seed=0, id1=["a", "a", "b"], id2=["a", "b", "b"]))
    >>> w.shape
    (3,)
    """
    if n_boot < 0:
        raise ValueError(f"n_boot: must be >= 0, got {n_boot}")
    rng = np.random.default_rng(seed)
    if id1 is None and id2 is None:
        for _ in range(n_boot):
            yield np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        return
    if id1 is None or id2 is None:
        raise ValueError("bootstrap_weights: give both identity columns id1 and id2, or neither")
    ca, cb, draws = identity_bootstrap(n, n_boot, seed, id1, id2)  # a fresh rng of the same seed
    for m in draws:
        yield m[ca] * m[cb]


def identity_bootstrap(n: int, n_boot: int, seed: int, id1: Any, id2: Any
                       ) -> tuple[np.ndarray, np.ndarray, Iterator[np.ndarray]]:
    """The identity (cluster) bootstrap of :func:`bootstrap_weights` in two parts, for
    estimators that need the weights of a few rows only.

    Row ``i``'s weight in a replicate is ``m[ca[i]] * m[cb[i]]``, exactly what
    :func:`bootstrap_weights` yields for it (same seed, same draws, same float64 product);
    ``m`` holds each identity's multiplicity and a final 1 (where ``cb`` points for a
    same-identity pair).

    Parameters
    ----------
    n, n_boot, seed, id1, id2
        As :func:`bootstrap_weights` (both identity columns required).

    Returns
    -------
    ca, cb : numpy.ndarray
        (n,) int32 positions into ``m``.
    draws : iterator of numpy.ndarray
        ``n_boot`` multiplicity vectors ``m`` (float64, length identities + 1). The same
        array is refilled for every replicate: use it before drawing the next.

    Examples
    --------
    >>> ca, cb, draws = identity_bootstrap(3, 1, 0, id1=["a", "a", "b"], id2=["a", "b", "b"])
    >>> m = next(draws)
    >>> bool((m[ca] * m[cb] == next(bootstrap_weights(3, 1, 0, id1=["a", "a", "b"], id2=["a", "b", "b"]))).all())
    True
    """
    if n_boot < 0:
        raise ValueError(f"n_boot: must be >= 0, got {n_boot}")
    a, b = np.asarray(id1), np.asarray(id2)
    if a.shape != (n,) or b.shape != (n,):
        raise ValueError(f"identity columns must have length {n}, got {a.shape} and {b.shape}")
    rng = np.random.default_rng(seed)
    codes, uniques = pd.factorize(np.concatenate([a, b]))
    if (codes < 0).any():
        raise ValueError("identity columns contain missing values")
    k = len(uniques)
    ca = codes[:n].astype(np.int32)
    # a same-identity pair counts its identity once: point its second index at a constant 1
    cb = np.where(codes[:n] == codes[n:], k, codes[n:]).astype(np.int32)

    def draws() -> Iterator[np.ndarray]:
        m = np.ones(k + 1)
        for _ in range(n_boot):
            m[:k] = np.bincount(rng.integers(0, k, k), minlength=k)
            yield m

    return ca, cb, draws()


def percentile_interval(replicates: np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval over axis 0, ignoring replicates that are NaN.

    The bounds are order statistics (the outer ones, no interpolation), so infinite
    replicates such as an unbounded max/min ratio are handled.

    Parameters
    ----------
    replicates : array_like
        Bootstrap replicates, one per row (axis 0); further axes are separate statistics.
    ci : float, default 0.95
        Coverage of the two-sided interval; ``(1 - ci) / 2`` is cut from each tail.

    Returns
    -------
    lo, hi : numpy.ndarray
        Lower and upper bounds with the shape of ``replicates[0]``; NaN where every
        replicate is NaN.

    Examples
    --------
    >>> reps = np.arange(1.0, 101.0)[:, None]  # 100 replicates of one statistic
    >>> percentile_interval(reps, ci=0.9)
    (array([5.]), array([96.]))
    """
    r = np.asarray(replicates, dtype=np.float64)
    q = [(1 - ci) / 2, 1 - (1 - ci) / 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN
        lo = np.nanquantile(r, q[0], axis=0, method="lower")
        hi = np.nanquantile(r, q[1], axis=0, method="higher")
    return lo, hi


def excludes_estimate(estimate: Any, lo: Any, hi: Any) -> np.ndarray:
    """Where a known estimate lies outside its known interval ``[lo, hi]``.

    A percentile bootstrap interval can: for a statistic at or near a bound of its range
    (a max/min ratio of 1, a gap of 0) every replicate lies on one side of the estimate
    (bootstrap bias). Callers flag such intervals instead of printing them silently.

    Parameters
    ----------
    estimate, lo, hi : array_like
        Point estimates and interval bounds, broadcastable; NaN = unknown.

    Returns
    -------
    numpy.ndarray
        Bool, False wherever any of the three is NaN.

    Examples
    --------
    >>> excludes_estimate([1.0, 0.5, np.nan], [1.04, 0.4, 0.1], [np.inf, 0.6, 0.2])
    array([ True, False, False])
    """
    est, a, b = (np.asarray(v, dtype=np.float64) for v in (estimate, lo, hi))
    with np.errstate(invalid="ignore"):
        return ~np.isnan(est) & ~np.isnan(a) & ~np.isnan(b) & ((est < a) | (est > b))


def wilson_interval(successes: Any, n: Any, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion ``successes / n`` (vectorised).

    Parameters
    ----------
    successes : array_like
        Number of successes, ``0 <= successes <= n``.
    n : array_like
        Number of trials (> 0); broadcasts against ``successes``.
    ci : float, default 0.95
        Coverage of the two-sided interval.

    Returns
    -------
    lo, hi : numpy.ndarray
        Lower and upper bounds of the proportion, in [0, 1].

    Raises
    ------
    ValueError
        If any ``n <= 0`` or ``successes`` lies outside ``0..n``.

    Examples
    --------
    >>> lo, hi = wilson_interval(8, 10)
    >>> print(f"{lo:.3f} {hi:.3f}")
    0.490 0.943
    """
    x = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if np.any(m <= 0) or np.any(x < 0) or np.any(x > m):
        raise ValueError("wilson_interval: need 0 <= successes <= n and n > 0")
    z = _st.norm.ppf(1 - (1 - ci) / 2)
    p = x / m
    centre = (p + z**2 / (2 * m)) / (1 + z**2 / m)
    half = z * np.sqrt(p * (1 - p) / m + z**2 / (4 * m**2)) / (1 + z**2 / m)
    return centre - half, centre + half
