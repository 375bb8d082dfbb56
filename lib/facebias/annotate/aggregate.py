"""Aggregating annotation votes: the two studies' consensus rules and agreement statistics.

Votes are 0-based level indices (0..K-1). Matrices are ``items x votes`` (one row per item,
one column per vote slot), NaN where a vote is missing.

* :func:`trimmed_mean` is the ONE trimmed mean of the project (sort each row, drop ``trim``
  lowest and ``trim`` highest, average the rest).
* :func:`hcic`: HCIC paper (000) Human Consensus Identity Confidence: 9 raw identity votes
  0..4 (0 = likely same), drop 2 lowest and 2 highest, mean of the middle 5, divided by 4. In
  [0, 1] on a 0.05 grid; higher = more likely *different* (a dissimilarity). Positive pair
  iff HCIC <= t (t = 0.3 main).
* :func:`score`: Transects paper (004) per-image attribute score: drop the min and the max of
  the 5 votes, mean of the middle 3, divided by K-1 (``agg='trimmed'``, authors' code), or the
  plain mean / (K-1) (``agg='mean'``, paper text; also the HCIC paper's single-image rule).
* :func:`item_sd`: per-item disagreement ``np.std(ddof=0) / (K-1)``.
* :func:`krippendorff_alpha`, :func:`icc` (ICC(1), one-way random effects): agreement.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from facebias.annotate.scales import SCALES_TRANSECTS, Scale

__all__ = ["scores_from_votes", "trimmed_mean", "hcic", "score", "item_sd", "krippendorff_alpha", "icc",
           "uncanny_keep", "votes_matrix", "HCIC_THRESHOLD", "UNCANNY_THRESHOLD"]

HCIC_THRESHOLD = 0.3     # pair is "same identity" iff HCIC <= 0.3 (paper 000 main setting)
UNCANNY_THRESHOLD = 0.8  # image kept iff normalised uncanny score < 0.8 (paper 000)


def _matrix(votes, what: str = "votes") -> np.ndarray:
    m = np.asarray(votes, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D items x votes array, got shape {m.shape}")
    if np.isinf(m).any():
        raise ValueError(f"{what}: infinite values")
    return m


def _check_levels(m: np.ndarray, k: int, what: str) -> None:
    """Non-missing entries must be integers in 0..k-1."""
    if not isinstance(k, int | np.integer) or k < 2:
        raise ValueError(f"{what}: k must be an integer >= 2, got {k!r}")
    v = m[~np.isnan(m)]
    if v.size and (v.min() < 0 or v.max() > k - 1 or not np.all(v == np.round(v))):
        bad = v[(v < 0) | (v > k - 1) | (v != np.round(v))][0]
        raise ValueError(f"{what}: votes must be integer levels 0..{k - 1}, found {bad}")


def trimmed_mean(votes, trim: int, allow_missing: bool = False) -> np.ndarray:
    """Per row: sort, drop the ``trim`` smallest and ``trim`` largest values, mean of the rest.

    ``trim=0`` is the plain mean.

    Parameters
    ----------
    votes : array_like
        Items x n matrix of votes (any numbers, e.g. level indices).
    trim : int
        Number of values dropped at each end of every row (>= 0).
    allow_missing : bool, default False
        Drop NaNs first instead of raising; rows with fewer than ``2*trim + 1`` values then
        give NaN.

    Returns
    -------
    numpy.ndarray
        (items,) float64 trimmed means.

    Raises
    ------
    ValueError
        If ``votes`` is not 2-D or holds an infinity, ``trim`` is not a non-negative
        integer, or (without ``allow_missing``) a row holds NaN or has fewer than
        ``2*trim + 1`` votes.

    Examples
    --------
    >>> trimmed_mean([[1, 2, 3, 10], [4, 4, 5, 6]], trim=1)
    array([2.5, 4.5])
    >>> trimmed_mean([[1, 2, np.nan], [1, np.nan, np.nan]], trim=0, allow_missing=True)
    array([1.5, 1. ])
    """
    m = _matrix(votes)
    if not isinstance(trim, int | np.integer) or trim < 0:
        raise ValueError(f"trim must be a non-negative integer, got {trim!r}")
    n = m.shape[1]
    missing = np.isnan(m)
    if not allow_missing:
        if missing.any():
            row = int(np.flatnonzero(missing.any(axis=1))[0])
            raise ValueError(f"votes row {row} has missing (NaN) votes; pass allow_missing=True")
        if n < 2 * trim + 1:
            raise ValueError(f"need at least {2 * trim + 1} votes per row to trim {trim} from each "
                             f"end, got {n}")
        s = np.sort(m, axis=1)
        return s[:, trim:n - trim].mean(axis=1)
    s = np.sort(m, axis=1)                      # NaNs sort last
    cnt = (~missing).sum(axis=1)
    out = np.full(m.shape[0], np.nan)
    col = np.arange(n)[None, :]
    keep = (col >= trim) & (col < (cnt - trim)[:, None])
    ok = cnt >= 2 * trim + 1
    sums = np.where(keep, np.nan_to_num(s), 0.0).sum(axis=1)
    out[ok] = sums[ok] / (cnt[ok] - 2 * trim)
    return out


def hcic(votes) -> np.ndarray:
    """HCIC per pair from an (n_pairs, 9) array of raw identity votes 0..4: drop the 2 lowest
    and 2 highest, mean of the middle 5, /4. In [0, 1]; higher = more different.

    HCIC is a dissimilarity: a pair is "same identity" iff ``HCIC <= t``
    (:data:`HCIC_THRESHOLD` = 0.3, paper 000's main setting).

    Parameters
    ----------
    votes : array_like
        (n_pairs, 9) identity votes on :data:`~facebias.annotate.scales.PAIR_SCALE`,
        0 = likely same .. 4 = likely different; no NaN.

    Returns
    -------
    numpy.ndarray
        (n_pairs,) float64 in [0, 1], on a 0.05 grid.

    Raises
    ------
    ValueError
        If a row does not hold exactly 9 votes, a vote is missing, or a vote is not an
        integer in 0..4.

    Examples
    --------
    >>> hcic([[0, 0, 0, 1, 1, 1, 2, 4, 4]])  # middle five 0, 1, 1, 1, 2: mean 1, / 4
    array([0.25])
    """
    m = _matrix(votes, "hcic votes")
    if m.shape[1] != 9:
        raise ValueError(f"hcic: expected 9 votes per pair, got shape {m.shape}")
    if np.isnan(m).any():
        raise ValueError("hcic: missing (NaN) votes; HCIC needs all 9 votes of a pair")
    _check_levels(m, 5, "hcic votes")
    return trimmed_mean(m, 2) / 4.0


def score(votes, k: int, agg: str = "trimmed", allow_missing: bool = False) -> np.ndarray:
    """Normalised per-item score in [0, 1] from items x n votes on a K-level scale.

    ``agg='trimmed'`` (Transects authors' code): drop 1 min and 1 max, mean of the rest, /(K-1);
    ``agg='mean'``: plain mean / (K-1).

    Parameters
    ----------
    votes : array_like
        Items x n matrix of level indices 0..K-1 (NaN = missing).
    k : int
        Number of levels K of the scale (>= 2).
    agg : {"trimmed", "mean"}, default "trimmed"
        The aggregation rule.
    allow_missing : bool, default False
        Drop missing votes instead of raising (see :func:`trimmed_mean`).

    Returns
    -------
    numpy.ndarray
        (items,) float64 in [0, 1]; 0 = the scale's first level.

    Raises
    ------
    ValueError
        For a vote outside the integer levels 0..K-1, an unknown ``agg``, or missing or
        too few votes (see :func:`trimmed_mean`).

    Examples
    --------
    >>> score([[0, 1, 2, 4, 4]], k=5)  # middle three 1, 2, 4: mean 7/3, / 4
    array([0.58333333])
    >>> score([[0, 1, 2, 4, 4]], k=5, agg="mean")
    array([0.55])
    """
    m = _matrix(votes)
    _check_levels(m, k, "score votes")
    if agg == "trimmed":
        trim = 1
    elif agg == "mean":
        trim = 0
    else:
        raise ValueError(f"agg must be 'trimmed' or 'mean', got {agg!r}")
    return trimmed_mean(m, trim, allow_missing=allow_missing) / (k - 1)


def item_sd(votes, k: int) -> np.ndarray:
    """Per-item SD of the votes, population form (ddof=0), divided by K-1 (NaNs ignored).

    Parameters
    ----------
    votes : array_like
        Items x n matrix of level indices 0..K-1 (NaN = missing).
    k : int
        Number of levels K of the scale (>= 2).

    Returns
    -------
    numpy.ndarray
        (items,) float64 in [0, 0.5]; NaN for an item without votes.

    Raises
    ------
    ValueError
        For a vote outside the integer levels 0..K-1.

    Examples
    --------
    >>> item_sd([[0, 4], [2, 2]], k=5)
    array([0.5, 0. ])
    """
    m = _matrix(votes)
    _check_levels(m, k, "item_sd votes")
    cnt = (~np.isnan(m)).sum(axis=1)
    out = np.full(m.shape[0], np.nan)
    ok = cnt > 0
    out[ok] = np.nanstd(m[ok], axis=1, ddof=0) / (k - 1)
    return out


def krippendorff_alpha(votes, level: str = "interval") -> float:
    """Krippendorff's alpha for an items x coders matrix (NaN = missing).

    ``level``: 'interval' (squared difference), 'ordinal' (rank-based, over the observed values)
    or 'nominal'. Units with fewer than 2 votes are not pairable and are ignored. Computed from
    the coincidence matrix ``o``: ``alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck``.

    Parameters
    ----------
    votes : array_like
        Items (units) x coders matrix of values, NaN = missing.
    level : {"interval", "ordinal", "nominal"}, default "interval"
        Level of measurement, which sets the distance ``d``.

    Returns
    -------
    float
        Alpha: 1 = perfect agreement, 0 = chance, negative = systematic disagreement.

    Raises
    ------
    ValueError
        For an unknown ``level``, no votes, no unit with 2 or more votes, or pairable votes
        that all take one value (alpha undefined).

    Examples
    --------
    >>> krippendorff_alpha([[1, 1], [2, 2], [3, 3]])
    1.0
    >>> krippendorff_alpha([[1, 2], [2, 3], [3, 1]])
    -0.25
    """
    m = _matrix(votes)
    if level not in ("interval", "ordinal", "nominal"):
        raise ValueError(f"level must be 'interval', 'ordinal' or 'nominal', got {level!r}")
    present = ~np.isnan(m)
    values = np.unique(m[present])
    if values.size == 0:
        raise ValueError("krippendorff_alpha: no votes")
    idx = np.searchsorted(values, np.where(present, m, values[0]))
    counts = np.zeros((m.shape[0], values.size))          # units x values
    for j in range(m.shape[1]):
        np.add.at(counts, (np.arange(m.shape[0])[present[:, j]], idx[present[:, j], j]), 1.0)
    mu = counts.sum(axis=1)
    pairable = mu >= 2
    if not pairable.any():
        raise ValueError("krippendorff_alpha: no unit has 2 or more votes")
    c = counts[pairable]
    w = 1.0 / (mu[pairable] - 1.0)
    o = (c * w[:, None]).T @ c - np.diag((c * w[:, None]).sum(axis=0))   # coincidences
    nc = o.sum(axis=1)
    n = nc.sum()
    if level == "nominal":
        d = 1.0 - np.eye(values.size)
    elif level == "interval":
        d = (values[:, None] - values[None, :]) ** 2
    else:  # ordinal: (sum_{g=c..k} n_g - (n_c + n_k)/2)^2
        cum = np.cumsum(nc)
        lo = np.minimum.outer(np.arange(values.size), np.arange(values.size))
        hi = np.maximum.outer(np.arange(values.size), np.arange(values.size))
        between = cum[hi] - cum[lo] + nc[lo]
        d = (between - (nc[:, None] + nc[None, :]) / 2.0) ** 2
    expected = (nc[:, None] * nc[None, :] * d).sum()
    if expected == 0:
        raise ValueError("krippendorff_alpha: undefined, all pairable votes take one value")
    return float(1.0 - (n - 1.0) * (o * d).sum() / expected)


def icc(votes) -> float:
    """ICC(1) (one-way random effects, single rating) of a complete items x n matrix:
    ``(MSB - MSW) / (MSB + (n - 1) MSW)`` from the one-way ANOVA with items as groups.

    Parameters
    ----------
    votes : array_like
        Items x n matrix without NaN (n votes per item).

    Returns
    -------
    float
        ICC(1), at most 1 (1 = the votes of an item always agree).

    Raises
    ------
    ValueError
        For a NaN, fewer than 2 items or 2 votes per item, or all votes equal (undefined).

    Examples
    --------
    >>> icc([[1, 2], [3, 3], [5, 4]])
    0.8620689655172415
    """
    m = _matrix(votes)
    if np.isnan(m).any():
        raise ValueError("icc: needs a complete matrix (no NaN)")
    n_items, n = m.shape
    if n_items < 2 or n < 2:
        raise ValueError(f"icc: need at least 2 items and 2 votes per item, got shape {m.shape}")
    row_means = m.mean(axis=1)
    msb = n * ((row_means - m.mean()) ** 2).sum() / (n_items - 1)
    msw = ((m - row_means[:, None]) ** 2).sum() / (n_items * (n - 1))
    denom = msb + (n - 1) * msw
    if denom == 0:
        raise ValueError("icc: undefined, all votes are equal")
    return float((msb - msw) / denom)


def uncanny_keep(scores, threshold: float = UNCANNY_THRESHOLD) -> np.ndarray:
    """Realism filter: keep an image iff its normalised uncanny score (0 = real for sure,
    1 = fake for sure) is ``< threshold``.

    Parameters
    ----------
    scores : array_like
        Normalised uncanny scores in [0, 1] (e.g. from :func:`score`).
    threshold : float, default UNCANNY_THRESHOLD
        0.8, paper 000's cut-off.

    Returns
    -------
    numpy.ndarray
        Bool mask, True = keep.

    Raises
    ------
    ValueError
        If a score is NaN.

    Examples
    --------
    >>> uncanny_keep([0.1, 0.8, 0.95])
    array([ True, False, False])
    """
    s = np.asarray(scores, dtype=float)
    if np.isnan(s).any():
        raise ValueError("uncanny_keep: NaN scores (image without uncanny votes?)")
    return s < threshold


def votes_matrix(votes: pd.DataFrame, question: str,
                 n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pivot store votes of one ``question`` to ``(item_ids, items x n matrix)``.

    Items appear in order of their first vote, each row holds that item's votes in insertion
    order, NaN padded to ``n`` (default: the largest count). An item with more than ``n`` votes
    raises ``ValueError`` (nothing is dropped silently).

    Parameters
    ----------
    votes : pandas.DataFrame
        Store votes with columns ``item_id``, ``question`` and ``value`` (level index).
    question : str
        The question to pivot.
    n : int, optional
        Number of vote slots per item.

    Returns
    -------
    item_ids : numpy.ndarray
        (items,) object array, in order of first vote.
    matrix : numpy.ndarray
        (items, n) float64 votes, NaN padded.

    Raises
    ------
    ValueError
        If a column is missing, ``question`` has no votes, or an item has more than ``n``.

    Examples
    --------
    >>> votes = pd.DataFrame({"item_id": ["a", "b", "a", "b", "a"], "question": "smile",
    ...                       "value": [0, 4, 1, 3, 2]})
    >>> ids, mat = votes_matrix(votes, "smile")
    >>> ids, mat
    (array(['a', 'b'], dtype=object), array([[ 0.,  1.,  2.],
           [ 4.,  3., nan]]))
    """
    for col in ("item_id", "question", "value"):
        if col not in votes.columns:
            raise ValueError(f"votes: column {col!r} not found; columns are {list(votes.columns)}")
    sub = votes[votes["question"] == question]
    if sub.empty:
        raise ValueError(f"votes_matrix: no votes for question {question!r}; questions are "
                         f"{sorted(pd.unique(votes['question']))}")
    codes, item_ids = pd.factorize(sub["item_id"], sort=False)
    slot = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    most = int(slot.max()) + 1
    if n is None:
        n = most
    elif most > n:
        worst = item_ids[np.bincount(codes).argmax()]
        raise ValueError(f"votes_matrix: item {worst!r} has {most} votes for {question!r}, "
                         f"more than n={n}")
    mat = np.full((len(item_ids), n), np.nan)
    mat[codes, slot] = sub["value"].to_numpy(dtype=float)
    return np.asarray(item_ids, dtype=object), mat


def scores_from_votes(votes: pd.DataFrame, scales: Mapping[str, Scale] | None = None,
                      agg: str = "trimmed", n: int | None = None) -> pd.DataFrame:
    """Per-item scores in [0, 1]: one column per question, index ``item_id`` (first-vote
    order). Each question's votes are pivoted with :func:`votes_matrix`
    and aggregated with :func:`score` on its scale's K levels.

    ``scales``: per question (default ``votes.attrs['scales']`` if set, else
    :data:`~facebias.annotate.SCALES_TRANSECTS`). Every item needs the same number of votes per
    question (``n``, default the largest count); a missing vote raises ``ValueError``.

    Parameters
    ----------
    votes : pandas.DataFrame
        Store votes with columns ``item_id``, ``question`` and ``value`` (level index).
    scales : Mapping of str to Scale, optional
        The scale of each question.
    agg : {"trimmed", "mean"}, default "trimmed"
        The rule of :func:`score`.
    n : int, optional
        Votes per item and question.

    Returns
    -------
    pandas.DataFrame
        One row per item, one column per question, scores in [0, 1].

    Raises
    ------
    ValueError
        For a question without a scale, an item with missing votes, or invalid votes.

    Examples
    --------
    >>> votes = pd.DataFrame({"item_id": list("aaabbb"), "question": "smile",
    ...                       "value": [0, 1, 2, 4, 3, 4]})
    >>> scores_from_votes(votes)  # smile has K = 5 levels
             smile
    item_id
    a         0.25
    b         1.00
    """
    if scales is None:
        scales = votes.attrs.get("scales") or SCALES_TRANSECTS
    cols: dict[str, pd.Series] = {}
    for q in pd.unique(votes["question"]):
        if q not in scales:
            raise ValueError(f"question {q!r} has no scale; scales are {sorted(scales)}")
        ids, mat = votes_matrix(votes, q, n)
        if np.isnan(mat).any():
            bad = ids[np.isnan(mat).any(axis=1)]
            raise ValueError(f"question {q!r}: {len(bad)} item(s) with fewer than {mat.shape[1]} "
                             f"votes, e.g. {bad[0]!r}")
        cols[q] = pd.Series(score(mat, scales[q].k, agg=agg), index=pd.Index(ids, name="item_id"))
    out = pd.DataFrame(cols)
    out.index.name = "item_id"
    return out
