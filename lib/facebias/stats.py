"""Statistical helpers shared by every study: bootstrap, intervals.

One bootstrap for the whole project: ``bootstrap_weights`` yields, per replicate, a
multiplicity for every row (pair). Estimators take the weights, so a replicate never
copies the data, and resampling *identities* instead of pairs is a change of weights.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = ["bootstrap_weights", "identity_bootstrap", "percentile_interval", "percentile_mc_error",
           "n_boot_for_mc_error", "mc_error_summary", "mc_error_report", "MC_ERROR_OF_WIDTH", "excludes_estimate", "wilson_interval"]

#: The bootstrap-size rule: a displayed percentile bound is precise enough when its Monte Carlo
#: standard error (:func:`percentile_mc_error`) is at most this fraction of its interval's width.
MC_ERROR_OF_WIDTH = 0.05


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


def percentile_mc_error(replicates: np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo standard error of each bound of :func:`percentile_interval`.

    A percentile bound read from B replicates is itself random: another B replicates give
    another bound. Its standard error is that of a sample quantile, sqrt(q (1 - q) / B) / f(x_q)
    with f the density of the replicates at the bound. Distribution-free form used here: the
    rank of the bound has binomial standard deviation s = sqrt(B q (1 - q)), and 1 / (B f) is
    the spacing of the sorted replicates near the bound, read as the slope between the
    replicates s ranks either side (linearly interpolated, clipped to the sample). So the
    error is about ``(x[k + s] - x[k - s]) / 2``, in the units of the replicates; it shrinks as
    1 / sqrt(B).

    Parameters
    ----------
    replicates : array_like
        Bootstrap replicates, one per row (axis 0), as for :func:`percentile_interval`;
        NaN replicates are ignored column by column.
    ci : float, default 0.95
        Coverage of the interval whose bounds are assessed.

    Returns
    -------
    lo_se, hi_se : numpy.ndarray
        Standard errors of the lower and upper bound, shape ``replicates[0]``; NaN where a
        column has fewer than 2 finite replicates or its bound is not finite.

    Raises
    ------
    ValueError
        For ``ci`` outside (0, 1).

    Examples
    --------
    >>> reps = np.arange(1.0, 101.0)[:, None]  # spacing 1: the error is s = sqrt(100 * 0.05 * 0.95)
    >>> [round(float(x[0]), 3) for x in percentile_mc_error(reps, ci=0.9)]
    [2.179, 2.179]
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci: must lie in (0, 1), got {ci!r}")
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim == 0 or len(r) < 2:
        nan = np.full(r.shape[1:], np.nan)
        return nan, nan.copy()
    flat = r.reshape(len(r), -1)
    x = np.sort(flat, axis=0)  # NaN sort last
    b = (~np.isnan(flat)).sum(axis=0)
    col = np.arange(x.shape[1])
    top = np.maximum(b - 1, 0)

    def at(pos: np.ndarray) -> np.ndarray:  # the sorted replicates at fractional ranks
        i = np.floor(pos).astype(np.int64)
        j, f = np.minimum(i + 1, top), pos - i
        with np.errstate(invalid="ignore"):
            return x[i, col] * (1 - f) + x[j, col] * f

    out = []
    for q in ((1 - ci) / 2, 1 - (1 - ci) / 2):
        pos = q * top
        k = np.floor(pos) if q < 0.5 else np.ceil(pos)  # the rank percentile_interval reads
        s = np.sqrt(b * q * (1 - q))
        p1, p2 = np.clip(k - s, 0, top), np.clip(k + s, 0, top)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = s * (at(p2) - at(p1)) / (p2 - p1)
        bound = x[k.astype(np.int64), col]
        se[(b < 2) | ~np.isfinite(bound) | (p2 == p1)] = np.nan
        out.append(se.reshape(r.shape[1:]))
    return out[0], out[1]


def n_boot_for_mc_error(n_boot: int, mc_error: Any, width: Any, of_width: float = MC_ERROR_OF_WIDTH) -> int:
    """Replicates needed for every bound's Monte Carlo error to be at most ``of_width`` x width.

    The error shrinks as 1 / sqrt(B), so B bounds with errors ``mc_error`` and interval widths
    ``width`` need ``B x max (mc_error / (of_width x width))^2`` replicates.

    Parameters
    ----------
    n_boot : int
        Replicates the errors were measured with.
    mc_error, width : array_like
        Monte Carlo errors of the bounds (:func:`percentile_mc_error`) and the widths
        ``hi - lo`` of their intervals, broadcastable; pairs with a NaN, or a width of 0, are
        left out.
    of_width : float, default :data:`MC_ERROR_OF_WIDTH`
        Tolerated error as a fraction of the width.

    Returns
    -------
    int
        The number of replicates (at least 2); ``n_boot`` where no bound is assessable.

    Examples
    --------
    >>> n_boot_for_mc_error(200, [0.1, 0.2], [4.0, 4.0])  # 0.2 / (0.05 x 4) = 1 -> 200 suffices
    200
    >>> n_boot_for_mc_error(200, 0.4, 4.0)  # twice the tolerated error -> 4 x the replicates
    800
    """
    e, w = np.broadcast_arrays(np.asarray(mc_error, float), np.asarray(width, float))
    ok = np.isfinite(e) & np.isfinite(w) & (w > 0)
    if not ok.any():
        return int(n_boot)
    ratio = float(np.max(e[ok] / (of_width * w[ok])))
    return max(2, int(np.ceil(n_boot * ratio ** 2 - 1e-9)))


def mc_error_summary(table: pd.DataFrame, n_boot: int, of_width: float = MC_ERROR_OF_WIDTH) -> pd.DataFrame:
    """How precise the bootstrap bounds of a table are, one row per interval.

    An interval is a pair of columns ``{p}_lo, {p}_hi`` (or ``lo, hi``; or ``{p}_low,
    {p}_high``) that comes with the Monte Carlo errors ``{p}_lo_mcse, {p}_hi_mcse`` (``..._low_mcse,
    ..._high_mcse``) of :func:`percentile_mc_error`.

    Parameters
    ----------
    table : pandas.DataFrame
        A result table with bootstrap intervals and their Monte Carlo errors.
    n_boot : int
        Replicates behind the intervals.
    of_width : float, default :data:`MC_ERROR_OF_WIDTH`
        The rule: every bound's error at most this fraction of its interval's width.

    Returns
    -------
    pandas.DataFrame
        One row per interval: ``interval`` (the column prefix, "" for ``lo, hi``),
        ``n_bounds`` (finite bounds with an error), ``max_mcse`` (largest error, units of
        the statistic), ``max_mcse_of_width`` (largest error / width of its interval),
        ``n_boot``, ``n_boot_needed`` (:func:`n_boot_for_mc_error`) and ``meets_rule``
        (nullable bool: NA where no bound is assessable, e.g. every rate unresolved).

    Examples
    --------
    >>> t = pd.DataFrame({"tpr_lo": [0.8], "tpr_hi": [0.9], "tpr_lo_mcse": [0.004], "tpr_hi_mcse": [0.002]})
    >>> s = mc_error_summary(t, 200)  # the worst bound: 0.004 / 0.1 = 4 % of the width
    >>> s["interval"].tolist(), round(float(s["max_mcse_of_width"].iloc[0]), 6), s["n_boot_needed"].tolist(), s["meets_rule"].tolist()
    (['tpr'], 0.04, [128], [True])
    """
    rows = []
    for col in map(str, table.columns):
        low, high = next(((lo, hi) for lo, hi in (("lo", "hi"), ("low", "high")) if col.endswith(f"{lo}_mcse")),
                         (None, None))
        if low is None:
            continue
        p = col[: -len(f"{low}_mcse")]
        need = [f"{p}{low}", f"{p}{high}", f"{p}{high}_mcse"]
        if not all(c in table.columns for c in need):
            continue
        width = (table[f"{p}{high}"] - table[f"{p}{low}"]).to_numpy(float)
        err = np.stack([table[col].to_numpy(float), table[f"{p}{high}_mcse"].to_numpy(float)])
        ok = np.isfinite(err) & np.isfinite(width) & (width > 0)
        rel = np.where(ok, err / np.where(ok, width, 1.0), np.nan)
        any_ok = bool(ok.any())
        rows.append({"interval": p.rstrip("_"), "n_bounds": int(ok.sum()),
                     "max_mcse": float(np.nanmax(np.where(ok, err, np.nan))) if any_ok else np.nan,
                     "max_mcse_of_width": float(np.nanmax(rel)) if any_ok else np.nan,
                     "n_boot": int(n_boot),
                     "n_boot_needed": n_boot_for_mc_error(n_boot, err, width, of_width),
                     "meets_rule": bool(np.nanmax(rel) <= of_width) if any_ok else pd.NA})
    out = pd.DataFrame(rows, columns=["interval", "n_bounds", "max_mcse", "max_mcse_of_width", "n_boot",
                                      "n_boot_needed", "meets_rule"])
    out["meets_rule"] = out["meets_rule"].astype("boolean")
    return out


def mc_error_report(tables: Mapping[str, tuple[pd.DataFrame, int]],
                    of_width: float = MC_ERROR_OF_WIDTH) -> pd.DataFrame:
    """:func:`mc_error_summary` of several result tables, stacked (column ``source``).

    Parameters
    ----------
    tables : mapping of str to (pandas.DataFrame, int)
        Name -> (table with ``*_lo_mcse``-style columns, the replicates behind it).
    of_width : float, default :data:`MC_ERROR_OF_WIDTH`
        The rule's tolerated error, a fraction of the interval's width.

    Returns
    -------
    pandas.DataFrame
        ``source`` and the columns of :func:`mc_error_summary`; a warning is issued when no
        table holds an assessable interval.
    """
    parts = [mc_error_summary(t, n, of_width).assign(source=name) for name, (t, n) in tables.items()]
    cols = ["source", "interval", "n_bounds", "max_mcse", "max_mcse_of_width", "n_boot", "n_boot_needed",
            "meets_rule"]
    out = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else \
        pd.DataFrame(columns=cols)
    if not (out["n_bounds"] > 0).any():
        warnings.warn("mc_error_report: no bootstrap bound with a Monte Carlo error in "
                      f"{sorted(tables)}", RuntimeWarning, stacklevel=2)
    return out[cols]


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
