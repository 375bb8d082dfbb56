"""Balancing across groups on image factors (paper 003 section 3, "what matters for a
balanced test set"; our extension, labelled so: image-level matching of the groups on
measured factors such as face area and quality).

:func:`balance` (exact strata matching or nearest-neighbour matching with a caliper),
:func:`balance_within` (the genders of each race, the comparison behind Table 1) and
:func:`balance_report` (SMD and KS of each factor before and after).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st
from scipy.spatial import cKDTree

from facebias.validate import require_columns

__all__ = ["balance", "balance_within", "balance_report"]


def _factor_matrix(images: pd.DataFrame, factors: Sequence[str]) -> np.ndarray:
    require_columns(images, factors, "images")
    x = images[list(factors)].to_numpy(dtype=np.float64)
    if not np.isfinite(x).all():
        bad = images.index[~np.isfinite(x).all(axis=1)][0]
        raise ValueError(f"factors: missing or non-finite value in row {bad!r}; filter first")
    return x


def balance(
    images: pd.DataFrame,
    factors: Sequence[str],
    by: str = "group",
    method: str = "strata",
    bins: int = 5,
    caliper: float = 0.2,
    seed: int = 0,
) -> pd.DataFrame:
    """A subset of ``images`` whose ``factors`` are distributed alike in every group.

    ``"strata"``: each factor is cut into ``bins`` pooled-quantile bins (a factor with at
    most ``bins`` distinct values, such as a facial-hair flag, is stratified by value); in every joint
    stratum each group keeps ``min over groups`` of the stratum's counts, drawn at random
    (seeded), so the binned joint distribution is identical across groups. Within a bin
    the groups can still differ: for two groups N(140, 15) and N(170, 15) one factor with
    5 bins leaves |SMD| ~ 0.2, 20 bins ~ 0.01 (more factors need fewer bins each).
    ``"nn"``: factors are standardised by their pooled SD; every other group is matched
    to the smallest group (ties: first in sorted order) by greedy nearest-neighbour
    matching without replacement, reference rows in random (seeded) order. A match
    needs Euclidean distance <= ``caliper`` (pooled-SD units); a reference row is kept
    only if it is matched in every group, so all groups end with equal counts. Tolerance:
    every matched row lies within ``caliper`` pooled SDs of its reference row (in the
    N(140, 15) vs N(170, 15) example the default 0.2 leaves |SMD| ~ 0.05).
    Rows keep their original index and order.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with the ``by`` column and the ``factors`` (finite numbers).
    factors : sequence of str
        Columns to balance on.
    by : str, default "group"
        Column of the groups to make alike.
    method : {"strata", "nn"}, default "strata"
        Exact strata matching or nearest-neighbour matching.
    bins : int, default 5
        Strata: pooled-quantile bins per factor (>= 1).
    caliper : float, default 0.2
        NN: largest match distance, in pooled-SD units (> 0).
    seed : int, default 0
        Seed of the random draws (which rows a stratum keeps; NN visiting order).

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``images``.

    Raises
    ------
    ValueError
        For a missing column, a missing or non-finite factor value, an unknown
        ``method``, ``bins < 1`` or ``caliper <= 0``.

    Examples
    --------
    >>> images = pd.DataFrame({"group": ["F"] * 4 + ["M"] * 2, "x": [1.0, 2, 3, 4, 3, 4]})
    >>> balance(images, ["x"], bins=2).index.tolist()  # F's rows 0-1 have no M counterpart
    [2, 3, 4, 5]
    """
    require_columns(images, [by], "images")
    x = _factor_matrix(images, factors)
    g = images[by].to_numpy()
    groups = sorted(pd.unique(g))
    rng = np.random.default_rng(seed)
    keep = np.zeros(len(images), dtype=bool)
    if method == "strata":
        if bins < 1:
            raise ValueError(f"bins: must be >= 1, got {bins}")
        codes = np.zeros(len(images), dtype=np.int64)
        for j in range(x.shape[1]):
            values = np.unique(x[:, j])
            if values.size <= bins:  # discrete factor (e.g. facial hair): one stratum per value
                c = np.searchsorted(values, x[:, j])
            else:
                c = pd.qcut(x[:, j], bins, labels=False, duplicates="drop")
            c = np.asarray(c, dtype=np.int64)
            codes = codes * (int(c.max()) + 1) + c
        for s in np.unique(codes):
            members = [np.flatnonzero((codes == s) & (g == grp)) for grp in groups]
            n = min(m.size for m in members)
            for m in members:
                if n:
                    keep[rng.choice(m, n, replace=False)] = True
    elif method == "nn":
        if caliper <= 0:
            raise ValueError(f"caliper: must be > 0, got {caliper}")
        sd = x.std(axis=0)
        z = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        sizes = {grp: int((g == grp).sum()) for grp in groups}
        ref = min(groups, key=lambda k: (sizes[k], groups.index(k)))
        ref_rows = np.flatnonzero(g == ref)
        order = rng.permutation(ref_rows.size)
        matched = {}
        ok = np.ones(ref_rows.size, dtype=bool)
        for grp in groups:
            if grp == ref:
                continue
            rows = np.flatnonzero(g == grp)
            match = _greedy_match(z[ref_rows], z[rows], order, caliper)
            ok &= match >= 0
            matched[grp] = (rows, match)
        keep[ref_rows[ok]] = True
        for rows, match in matched.values():
            keep[rows[match[ok]]] = True
    else:
        raise ValueError(f"method: expected 'strata' or 'nn', got {method!r}")
    return images[keep]


def balance_within(
    images: pd.DataFrame, factors: Sequence[str], within: str = "race", by: str = "gender",
    **kwargs: Any,
) -> pd.DataFrame:
    """:func:`balance` across ``by`` separately inside each level of ``within`` (default:
    the two genders of each race, the comparison behind paper 003's Table 1). Keeps far
    more images than balancing all eight groups jointly. ``kwargs`` go to :func:`balance`.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image (unique index) with ``within``, ``by`` and the ``factors``.
    factors : sequence of str
        Columns to balance on.
    within : str, default "race"
        Column whose levels are balanced separately.
    by : str, default "gender"
        Column of the groups made alike inside each level of ``within``.
    **kwargs
        ``method``, ``bins``, ``caliper``, ``seed`` of :func:`balance`.

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``images``, in their original order.

    Raises
    ------
    ValueError
        For a missing column, a non-unique index, or as :func:`balance`.

    Examples
    --------
    >>> images = pd.DataFrame({"race": ["A"] * 6, "gender": ["F"] * 4 + ["M"] * 2,
    ...                        "x": [1.0, 2, 3, 4, 3, 4]})
    >>> balance_within(images, ["x"], bins=2).index.tolist()
    [2, 3, 4, 5]
    """
    require_columns(images, [within, by], "images")
    parts = [balance(sub, factors, by=by, **kwargs)
             for _, sub in images.groupby(within, observed=True, sort=True)]
    if not images.index.is_unique:
        raise ValueError("images: the index must be unique (rows are identified by it)")
    kept = pd.concat(parts).index if parts else images.index[:0]
    return images[images.index.isin(kept)]  # original order


def _greedy_match(
    ref: np.ndarray, pool: np.ndarray, order: np.ndarray, caliper: float
) -> np.ndarray:
    """For each reference row (visited in ``order``) the nearest unused pool row within
    ``caliper``, or -1."""
    match = np.full(ref.shape[0], -1, dtype=np.int64)
    if pool.shape[0] == 0:
        return match
    tree = cKDTree(pool)
    used = np.zeros(pool.shape[0], dtype=bool)
    for i in order:
        k = 8
        while True:
            kk = min(k, pool.shape[0])
            d, j = tree.query(ref[i], k=kk, distance_upper_bound=caliper)
            d, j = np.atleast_1d(d), np.atleast_1d(j)
            valid = np.isfinite(d) & (d <= caliper)
            free = valid & ~used[np.minimum(j, pool.shape[0] - 1)]
            if free.any():
                pick = j[np.argmax(free)]
                used[pick] = True
                match[i] = pick
                break
            if valid.all() and kk < pool.shape[0]:
                k *= 4  # every candidate so far is used: look further
                continue
            break
    return match


def _smd(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or b.size < 2:
        return float("nan")
    spread = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    return float((a.mean() - b.mean()) / spread) if spread > 0 else float("nan")


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(_st.ks_2samp(a, b).statistic)


def balance_report(
    before: pd.DataFrame,
    after: pd.DataFrame,
    factors: Sequence[str],
    by: str = "group",
    reference: str | None = None,
) -> pd.DataFrame:
    """Per (group, factor): mean, SMD and KS statistic before and after balancing.

    Each group is compared with all other groups pooled, or with ``reference`` when given
    (the reference's own row then has NaN SMD/KS). ``SMD = (m_g - m_rest) /
    sqrt((v_g + v_rest) / 2)`` (sample variances); KS = ``scipy.stats.ks_2samp`` statistic.

    Parameters
    ----------
    before, after : pandas.DataFrame
        Images before and after balancing, with ``by`` and the ``factors``.
    factors : sequence of str
        Columns to compare.
    by : str, default "group"
        Group column; the groups are those of ``before``.
    reference : str, optional
        Group every group is compared with (default: all other groups pooled).

    Returns
    -------
    pandas.DataFrame
        One row per (group, factor): ``<by>, factor`` and, for ``before`` and ``after``,
        ``n_*``, ``mean_*`` (factor units), ``smd_*`` (NaN with fewer than two rows on a
        side or zero spread) and ``ks_*`` (in [0, 1]).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> before = pd.DataFrame({"group": ["F"] * 4 + ["M"] * 2, "x": [1.0, 2, 3, 4, 3, 4]})
    >>> after = balance(before, ["x"], bins=2)
    >>> report = balance_report(before, after, ["x"])
    >>> report[["group", "smd_before", "smd_after"]].round(2).to_numpy().tolist()
    [['F', -0.96, 0.0], ['M', 0.96, 0.0]]
    """
    require_columns(before, [by, *factors], "before")
    require_columns(after, [by, *factors], "after")
    groups = sorted(pd.unique(before[by]))
    frames = {tag: (df[by].to_numpy(), {f: df[f].to_numpy(dtype=np.float64) for f in factors})
              for tag, df in (("before", before), ("after", after))}
    rows = []
    for grp in groups:
        for f in factors:
            row: dict[str, Any] = {by: grp, "factor": f}
            for tag, (gg, values) in frames.items():
                v = values[f]
                mine = v[gg == grp]
                other = v[gg != grp] if reference is None else v[gg == reference]
                if reference is not None and grp == reference:
                    other = np.array([])
                row[f"n_{tag}"] = int(mine.size)
                row[f"mean_{tag}"] = float(mine.mean()) if mine.size else float("nan")
                row[f"smd_{tag}"] = _smd(mine, other)
                row[f"ks_{tag}"] = _ks(mine, other)
            rows.append(row)
    return pd.DataFrame(rows)
