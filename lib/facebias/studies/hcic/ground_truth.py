"""Ground truth of the error rates (Sec. 4.1.1; ``docs/specs/hcic.md`` B1.5, B1.7, B1.8).

HCIC labels from the 9 identity votes per pair (B1.7: trimmed mean / 4, a dissimilarity; a
pair is *same* iff HCIC <= t_hcic), the realism (uncanny) filter (B1.8: a pair is kept iff
both images score below 0.8) with its accounting beside the paper's drop rates, the self
pairs of B1.5 (an image with itself), and the labelled, filtered pairs the error rates use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.labels import label_pairs
from facebias.metrics import check_labels
from facebias.studies.hcic.similarity import human_levels
from facebias.validate import require_columns

__all__ = [
    "pair_item_ids",
    "pair_vote_matrix",
    "pair_hcic",
    "hcic_labels",
    "label_counts",
    "uncanny_pair_keep",
    "PAPER_FILTER_DROP_RATES",
    "self_pair_mask",
    "self_pair_summary",
    "filter_drop_rates",
    "PairLabels",
    "pair_labels",
    "kept_pair_scores",
]


def pair_item_ids(pairs: pd.DataFrame) -> pd.Series:
    """Annotation item id of each pair (:func:`facebias.annotate.pair_item_ids`).

    Parameters
    ----------
    pairs : pandas.DataFrame
        A table with a ``pair_id`` column.

    Returns
    -------
    pandas.Series
        ``pair_<pair_id:05d>``, indexed like ``pairs``, named ``item_id``.

    Raises
    ------
    ValueError
        For a missing ``pair_id`` column.

    Examples
    --------
    >>> pair_item_ids(pd.DataFrame({"pair_id": [0, 12]})).tolist()
    ['pair_00000', 'pair_00012']
    """
    from facebias.annotate import pair_item_ids as ids

    require_columns(pairs, ["pair_id"], "pairs")
    return pd.Series(ids(pairs["pair_id"]), index=pairs.index, name="item_id")


def pair_vote_matrix(pair_votes: pd.DataFrame, pairs: pd.DataFrame, n: int = 9,
                     question: str = "identity") -> pd.DataFrame:
    """Raw identity responses (0 = likely same .. 4 = likely different) as a pairs x n
    matrix (``facebias.annotate.votes_matrix``).

    Parameters
    ----------
    pair_votes : pandas.DataFrame
        Votes in the store's schema (``store.votes()`` columns).
    pairs : pandas.DataFrame
        The pairs (needs ``pair_id``).
    n : int, default 9
        Vote slots per pair.
    question : str, default "identity"
        The identity question.

    Returns
    -------
    pandas.DataFrame
        float, indexed like ``pairs``, columns ``r0..r{n-1}``, NaN where a pair has
        fewer votes.

    Raises
    ------
    ValueError
        If a pair has no votes, or as ``votes_matrix``.
    """
    from facebias.annotate import votes_matrix

    ids, mat = votes_matrix(pair_votes, question, n=n)
    table = pd.DataFrame(mat, index=pd.Index(np.asarray(ids).astype(str)),
                         columns=[f"r{i}" for i in range(mat.shape[1])])
    items = pair_item_ids(pairs).to_numpy()
    missing = ~pd.Index(items).isin(table.index)
    if missing.any():
        raise ValueError(f"pair_votes: no {question!r} votes for item {items[missing][0]!r}")
    out = table.loc[items]
    out.index = pairs.index
    return out


def pair_hcic(matrix: pd.DataFrame | np.ndarray) -> np.ndarray:
    """HCIC of each row of a (pairs x 9) raw response matrix (``facebias.annotate.hcic``).

    HCIC is a dissimilarity: a pair is "same identity" iff ``HCIC <= t``.

    Parameters
    ----------
    matrix : pandas.DataFrame or numpy.ndarray
        (n_pairs, 9) raw identity votes 0..4, no NaN.

    Returns
    -------
    numpy.ndarray
        (n_pairs,) HCIC in [0, 1], higher = more likely different.

    Raises
    ------
    ValueError
        As ``facebias.annotate.hcic`` (not 9 votes, a missing vote, a vote outside 0..4).

    Examples
    --------
    >>> pair_hcic([[0, 0, 0, 1, 1, 1, 2, 4, 4]])  # middle five 0, 1, 1, 1, 2: mean 1, / 4
    array([0.25])
    """
    from facebias.annotate import hcic

    return np.asarray(hcic(np.asarray(matrix)), dtype=np.float64)


def hcic_labels(pairs: pd.DataFrame, pair_votes: pd.DataFrame, t_hcic: Sequence[float] = (0.3,),
                n: int = 9) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HCIC ground truth from identity votes in the store's schema
    (:meth:`facebias.annotate.AnnotationStore.votes` columns; human or simulated).

    Parameters
    ----------
    pairs : pandas.DataFrame
        The pairs (needs ``pair_id``).
    pair_votes : pandas.DataFrame
        Identity votes in the store's schema.
    t_hcic : sequence of float, default (0.3,)
        Label thresholds in [0, 1].
    n : int, default 9
        Votes per pair.

    Returns
    -------
    labels : pandas.DataFrame
        Indexed like ``pairs``: ``hcic`` and one ``label_{t:g}`` column per threshold
        (1 = same iff HCIC <= t).
    matrix : pandas.DataFrame
        The raw (pairs x ``n``) responses (:func:`pair_vote_matrix`).

    Raises
    ------
    ValueError
        If a pair has no votes or not ``n`` of them, or a threshold lies outside [0, 1].
    """
    matrix = pair_vote_matrix(pair_votes, pairs, n=n)
    h = pair_hcic(matrix)
    out = pd.DataFrame({"hcic": h}, index=pairs.index)
    for t in t_hcic:
        out[f"label_{t:g}"] = label_pairs(pairs, h, t).to_numpy()
    return out, matrix


def label_counts(pairs: pd.DataFrame, label_col: str, keep: Any = None,
                 intended_col: str = "label") -> dict[str, int]:
    """Counts of one label column beside the intended labels.

    Parameters
    ----------
    pairs : pandas.DataFrame
        The two label columns (0/1 or bool, 1 = same identity).
    label_col : str
        The label set counted (e.g. ``"label_0.3"``).
    keep : array_like of bool, optional
        Pairs kept by the realism filter; all when None.
    intended_col : str, default "label"
        The intended labels (same seed = same identity).

    Returns
    -------
    dict of str to int
        ``positive_all, negative_all, positive_kept, negative_kept`` and
        ``intended_same_judged_different, intended_different_judged_same``.

    Raises
    ------
    ValueError
        For a missing column, a label that is not 0/1, or ``keep`` of the wrong length.

    Examples
    --------
    >>> pairs = pd.DataFrame({"label": [1, 1, 0, 0], "label_0.3": [1, 0, 0, 1]})
    >>> label_counts(pairs, "label_0.3")["intended_same_judged_different"]
    1
    """
    require_columns(pairs, [label_col, intended_col], "pairs")
    lab = pd.Series(check_labels(pairs[label_col], f"column {label_col!r}"), index=pairs.index)
    want = pd.Series(check_labels(pairs[intended_col], f"column {intended_col!r}"), index=pairs.index)
    k = np.ones(len(pairs), bool) if keep is None else np.asarray(keep, dtype=bool)
    if k.shape != (len(pairs),):
        raise ValueError(f"keep: expected {len(pairs)} values, got shape {k.shape}")
    return {"positive_all": int(lab.sum()), "negative_all": int((~lab).sum()),
            "positive_kept": int(lab[k].sum()), "negative_kept": int((~lab)[k].sum()),
            "intended_same_judged_different": int((want & ~lab).sum()),
            "intended_different_judged_same": int((~want & lab).sum())}


def uncanny_pair_keep(pairs: pd.DataFrame, uncanny: pd.Series, threshold: float = 0.8) -> pd.Series:
    """Realism filter (B1.8): keep a pair iff **both** images' normalised uncanny score is
    below ``threshold`` (``facebias.annotate.uncanny_keep``).

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``image_a`` and ``image_b``.
    uncanny : pandas.Series
        Image id -> normalised uncanny score in [0, 1] (mean raw / 4; higher = less
        realistic).
    threshold : float, default 0.8
        An image is kept iff its score < threshold.

    Returns
    -------
    pandas.Series
        bool, indexed like ``pairs``, named ``keep``.

    Raises
    ------
    ValueError
        For a missing column or an image without a score.

    Examples
    --------
    >>> pairs = pd.DataFrame({"image_a": ["a", "a"], "image_b": ["b", "c"]})
    >>> uncanny_pair_keep(pairs, pd.Series({"a": 0.1, "b": 0.85, "c": 0.5})).tolist()
    [False, True]
    """
    from facebias.annotate import uncanny_keep

    require_columns(pairs, ["image_a", "image_b"], "pairs")
    keep_img = pd.Series(np.asarray(uncanny_keep(uncanny.to_numpy(dtype=np.float64), threshold), bool),
                         index=uncanny.index.astype(str))
    out = np.ones(len(pairs), bool)
    for col in ("image_a", "image_b"):
        k = keep_img.reindex(pairs[col].astype(str).to_numpy())
        if k.isna().any():
            raise ValueError(f"uncanny: no score for image {k.index[k.isna().to_numpy()][0]!r} ({col})")
        out &= k.to_numpy(dtype=bool)
    return pd.Series(out, index=pairs.index, name="keep")


#: Paper 000's realism filter on its intended labels: 318 of 12,000 same-identity pairs and
#: 594 of 36,000 different-identity pairs dropped.
PAPER_FILTER_DROP_RATES = {"positive": 318 / 12_000, "negative": 594 / 36_000}


def self_pair_mask(pairs: pd.DataFrame) -> np.ndarray:
    """Which pairs hold one image twice (the prototype paired with itself at its sequence's
    centre): the ``is_self_pair`` column where present, else ``image_a == image_b``.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``is_self_pair`` or ``image_a`` and ``image_b``.

    Returns
    -------
    numpy.ndarray
        bool, one per pair.

    Raises
    ------
    ValueError
        Without ``is_self_pair`` and without the two image columns.

    Examples
    --------
    >>> self_pair_mask(pd.DataFrame({"image_a": ["a", "a"], "image_b": ["a", "b"]}))
    array([ True, False])
    """
    if "is_self_pair" in pairs:
        return pairs["is_self_pair"].to_numpy(dtype=bool)
    require_columns(pairs, ["image_a", "image_b"], "pairs")
    return (pairs["image_a"].astype(str) == pairs["image_b"].astype(str)).to_numpy()


def self_pair_summary(pairs: pd.DataFrame, t_hcic: Sequence[float] = (0.3,)) -> dict[str, Any]:
    """What the self pairs (an image with itself) are, reported apart from the error rates:
    their number (all and kept by the realism filter) and, with an ``hcic`` column, their
    HCIC median and maximum and the share judged *different* (HCIC > t) at each threshold.

    Parameters
    ----------
    pairs : pandas.DataFrame
        The pairs (:func:`self_pair_mask` columns), optionally ``keep`` and ``hcic``.
    t_hcic : sequence of float, default (0.3,)
        Label thresholds.

    Returns
    -------
    dict
        ``n_self_pairs, n_self_pairs_kept`` and, with HCIC, ``hcic_median, hcic_max`` and
        ``judged_different`` (threshold -> fraction of self pairs with HCIC > t; None when
        there are no self pairs).

    Raises
    ------
    ValueError
        As :func:`self_pair_mask`.

    Examples
    --------
    >>> p = pd.DataFrame({"image_a": ["a", "a", "b"], "image_b": ["a", "b", "b"], "hcic": [0.0, 0.9, 0.35]})
    >>> self_pair_summary(p)["judged_different"]
    {'0.3': 0.5}
    """
    m = self_pair_mask(pairs)
    keep = pairs["keep"].to_numpy(dtype=bool) if "keep" in pairs else np.ones(len(pairs), bool)
    out: dict[str, Any] = {"n_self_pairs": int(m.sum()), "n_self_pairs_kept": int((m & keep).sum())}
    if "hcic" in pairs:
        h = pairs["hcic"].to_numpy(dtype=np.float64)[m]
        out["hcic_median"] = float(np.median(h)) if h.size else None
        out["hcic_max"] = float(h.max()) if h.size else None
        out["judged_different"] = {f"{t:g}": float((h > t).mean()) if h.size else None for t in t_hcic}
    return out


def filter_drop_rates(pairs: pd.DataFrame, keep: Any, label_col: str = "label") -> dict[str, Any]:
    """Share of positive and of negative pairs that the realism filter drops, under one label
    set (the paper reports them under its intended labels: :data:`PAPER_FILTER_DROP_RATES`).

    Parameters
    ----------
    pairs : pandas.DataFrame
        The label column (0/1, 1 = same identity).
    keep : array_like of bool
        Pairs kept by the filter.
    label_col : str, default "label"
        The labels (``"label"``: intended; ``"label_0.3"``: HCIC).

    Returns
    -------
    dict
        ``positive, negative``: each ``{"n", "dropped", "rate"}`` (rate a fraction; None
        for no pairs of that kind).

    Raises
    ------
    ValueError
        For a missing column, labels not 0/1, or ``keep`` of the wrong length.

    Examples
    --------
    >>> p = pd.DataFrame({"label": [1, 1, 0, 0, 0]})
    >>> filter_drop_rates(p, [True, False, True, True, False])["positive"]
    {'n': 2, 'dropped': 1, 'rate': 0.5}
    """
    require_columns(pairs, [label_col], "pairs")
    lab = np.asarray(check_labels(pairs[label_col], f"column {label_col!r}"), dtype=bool)
    k = np.asarray(keep, dtype=bool)
    if k.shape != (len(pairs),):
        raise ValueError(f"keep: expected {len(pairs)} values, got shape {k.shape}")
    out = {}
    for name, sel in (("positive", lab), ("negative", ~lab)):
        n, dropped = int(sel.sum()), int((sel & ~k).sum())
        out[name] = {"n": n, "dropped": dropped, "rate": dropped / n if n else None}
    return out


@dataclass
class PairLabels:
    """The ground truth of the error rates (:func:`pair_labels`).

    Attributes
    ----------
    pairs : pandas.DataFrame
        The input pairs with ``keep`` (realism filter) and, with pair votes, ``hcic`` and
        one ``label_<t>`` column per threshold (1 = same iff HCIC <= t).
    label_sets : dict of str to str
        Label set name -> column (``{"intended": "label"}`` without pair votes).
    main : str
        The main label set.
    kind : str
        ``"hcic"`` or ``"intended"``.
    matrix : pandas.DataFrame or None
        Raw identity responses (None without pair votes).
    image_means : dict or None
        Question -> Series image_id -> mean raw 0-4 response (None without image votes).
    realism_filter : dict or None
        Accounting of the realism filter (None without image votes).
    label_counts : dict
        Label set -> :func:`label_counts`.
    skipped : dict of str to str
        Analysis -> why it was skipped.
    """

    pairs: pd.DataFrame
    label_sets: dict[str, str]
    main: str
    kind: str
    matrix: pd.DataFrame | None
    image_means: dict[str, pd.Series] | None
    realism_filter: dict[str, Any] | None
    label_counts: dict[str, dict[str, int]]
    skipped: dict[str, str]

    def levels(self, pairs: pd.DataFrame) -> pd.Series:
        """Each pair's level for the box plots: the annotated bin of age / expression with
        image votes (:func:`human_levels`), else the intended level.

        Parameters
        ----------
        pairs : pandas.DataFrame
            Pairs with ``level`` (and ``image_b``, ``attribute`` with image votes).

        Returns
        -------
        pandas.Series
            int64 levels, named ``level_human``.
        """
        if self.image_means is None:
            return pairs["level"].astype(np.int64).rename("level_human")
        return human_levels(pairs, self.image_means)


def pair_labels(pairs: pd.DataFrame, pair_votes: pd.DataFrame | None, image_votes: pd.DataFrame | None,
                t_hcic: Sequence[float], t_hcic_main: float) -> PairLabels:
    """HCIC labels from pair votes (one label set per ``t_hcic``, main ``t_hcic_main``) or the
    intended ones; the realism filter from image votes (single-image scores are the plain
    mean of the responses, B4.13, normalised to [0, 1]; a pair is kept iff both images score
    below 0.8) or every pair kept. Votes are in the store's schema.

    Parameters
    ----------
    pairs : pandas.DataFrame
        The pairs (``pairs.parquet`` schema).
    pair_votes : pandas.DataFrame or None
        Identity votes; None = intended labels.
    image_votes : pandas.DataFrame or None
        Single-image votes on :data:`facebias.annotate.SCALES_HCIC`; None = keep every pair.
    t_hcic : sequence of float
        HCIC label thresholds in [0, 1].
    t_hcic_main : float
        The main threshold.

    Returns
    -------
    PairLabels
        Labels, filter and accounting.

    Raises
    ------
    ValueError
        If a pair lacks votes or an image lacks an uncanny score, or as
        :func:`hcic_labels`.
    """
    from facebias.annotate import SCALES_HCIC, scores_from_votes

    out = pairs.copy()
    skipped: dict[str, str] = {}
    if pair_votes is not None:
        hl, matrix = hcic_labels(out, pair_votes, t_hcic)
        out = out.join(hl)
        label_sets, main, kind = {f"{t:g}": f"label_{t:g}" for t in t_hcic}, f"{t_hcic_main:g}", "hcic"
    else:
        matrix = None
        label_sets, main, kind = {"intended": "label"}, "intended", "intended"
        skipped["hcic"] = "no pair votes: labels are the intended ones (same seed = same identity)"
    means = filt = None
    if image_votes is not None:
        image_scores = scores_from_votes(image_votes, SCALES_HCIC, agg="mean")  # plain mean / 4, in [0, 1]
        means = {q: image_scores[q] * 4 for q in image_scores}  # raw 0-4 means (the annotated bins)
        uncanny = image_scores["uncanny"]
        out["keep"] = uncanny_pair_keep(out, uncanny)
        kept = out.loc[out["keep"], "label"]
        filt = {"intended_positive_kept": int(kept.sum()), "intended_negative_kept": int((1 - kept).sum()),
                "images_uncanny": int((uncanny >= 0.8).sum()), "images_realistic_share": float((uncanny < 0.8).mean()),
                # like with like: the paper's rates are on its intended labels
                "drop_rates": {k: filter_drop_rates(out, out["keep"], col)
                               for k, col in {"intended": "label", **label_sets}.items()},
                "paper_intended_drop_rates": dict(PAPER_FILTER_DROP_RATES)}
    else:
        out["keep"] = True
        skipped["realism_filter"] = "no image votes: every pair is kept; age / expression levels are intended steps"
    counts = {k: label_counts(out, col, out["keep"]) for k, col in label_sets.items() if k != "intended"}
    return PairLabels(pairs=out, label_sets=label_sets, main=main, kind=kind, matrix=matrix, image_means=means,
                      realism_filter=filt, label_counts=counts, skipped=skipped)


def kept_pair_scores(pairs: pd.DataFrame, scored: pd.DataFrame, score_cols: Sequence[str],
                     exclude_self: bool = False) -> pd.DataFrame:
    """The pairs kept by the realism filter with their scores, optionally without the self
    pairs (an image with itself, :func:`self_pair_mask`): their similarity is 1 whatever the
    model, so as genuine pairs they only dilute the FNMR, and where annotators judge one
    *different* it becomes an impostor at similarity 1 that sets the threshold at low FMR.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``pair_id`` and ``keep`` (e.g. :attr:`PairLabels.pairs`).
    scored : pandas.DataFrame
        The pairs plus the cross-group pairs, one row per ``pair_id``, with
        ``score_cols``.
    score_cols : sequence of str
        Score columns to look up by ``pair_id``.
    exclude_self : bool, default False
        Drop the self pairs too.

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``pairs`` with the score columns.

    Raises
    ------
    ValueError
        For a missing column, duplicate pair ids in ``scored``, or a kept pair without a
        row there.

    Examples
    --------
    >>> pairs = pd.DataFrame({"pair_id": [0, 1], "keep": [True, False]})
    >>> kept_pair_scores(pairs, pd.DataFrame({"pair_id": [1, 0], "score_toy": [0.2, 0.9]}),
    ...                  ["score_toy"])
       pair_id  keep  score_toy
    0        0  True        0.9
    """
    require_columns(pairs, ["pair_id", "keep"], "pairs")
    require_columns(scored, ["pair_id", *score_cols], "scored pairs")
    if scored["pair_id"].duplicated().any():
        raise ValueError("scored pairs: pair_id must be unique")
    sel = pairs["keep"].to_numpy(bool)
    if exclude_self:
        sel = sel & ~self_pair_mask(pairs)
    kept = pairs[sel].copy()
    table = scored.set_index("pair_id")
    missing = ~kept["pair_id"].isin(table.index)
    if missing.any():
        raise ValueError(f"scored pairs: no row for pair_id {kept.loc[missing, 'pair_id'].iloc[0]!r}")
    for c in score_cols:
        kept[c] = table.loc[kept["pair_id"].to_numpy(), c].to_numpy()
    return kept
