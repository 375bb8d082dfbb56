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

from facebias.annotate.scales import SCALES_004, Scale

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

    ``votes``: items x n. A row with NaN raises ``ValueError`` unless ``allow_missing``; then
    the NaNs are dropped first and rows with fewer than ``2*trim + 1`` values give NaN.
    ``trim=0`` is the plain mean.
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
    and 2 highest, mean of the middle 5, /4. In [0, 1]; higher = more different."""
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
    """Per-item SD of the votes, population form (ddof=0), divided by K-1 (NaNs ignored)."""
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
    ``(MSB - MSW) / (MSB + (n - 1) MSW)`` from the one-way ANOVA with items as groups."""
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
    1 = fake for sure) is ``< threshold``. NaN scores raise ``ValueError``."""
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
    :data:`~facebias.annotate.SCALES_004`). Every item needs the same number of votes per
    question (``n``, default the largest count); a missing vote raises ``ValueError``.
    """
    if scales is None:
        scales = votes.attrs.get("scales") or SCALES_004
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
