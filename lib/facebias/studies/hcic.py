"""Paper 000 (Liang et al., HCIC): face recognition on synthetic prototypes, judged by humans.

Measurement side of ``../shared/notes/seeds_004_000.md`` Part B (B1.5-B1.12b, B5). Tables
follow the ``data/synthetic/hcic`` schema: ``images`` (one row per image: ``image_id, seed,
group, prototype_id, attribute, level, ...``) and ``pairs`` (``pair_id, image_a, image_b,
prototype_a, prototype_b, seed_a, seed_b, group, attribute, level, label, is_self_pair,
b_is_prototype``).

Conventions
-----------
* Scores are cosine **similarities** of L2-normalised embeddings (higher = more alike).
* Decisions follow :mod:`facebias.metrics`: a pair **matches iff score > t**, so
  ``FNMR(t) = mean(genuine <= t)``, ``FMR(t) = mean(impostor > t)``. The paper writes
  ``s >= t``; on continuous scores the two agree except at exact ties. A self pair
  (s = 1 up to float error) is a non-match only at t >= 1.
* HCIC (B1.7) is a **dissimilarity** in [0, 1]; a pair is labelled *same* (1) iff
  ``HCIC <= t_hcic``. Raw identity responses are 0 = likely same ... 4 = likely different.
* Uncanny filter (B1.8): a pair is kept iff **both** images' normalised uncanny score
  (mean / 4) is below 0.8.
* Sequence levels are the 0-based slot index. Procedural renders: pose 0..4 = yaw -30,
  -15, 0, 15, 30 (centre 2), age/expression 0..4 with the prototype at 2, light 0 = original
  and 1..4 = up, down, left, right (unordered). Backends without pose/light controls (the
  DCGAN) step along learned yaw / light directions, so their light sequence is ordered with
  the prototype at 2 like the others. :func:`centre_levels` reads each sequence's centre
  from the images table (the level no image has: the prototype stands there).
* Groups are whatever the ``group`` column holds (000's race x gender on the procedural
  renders; lighter / darker face x gender on the DCGAN): nothing here names a group.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.labels import annotated_bins, label_pairs
from facebias.annotate.seed_filter import (  # 000's seed filter, run by the generation stage; re-exported
    FACE_SCORE_THRESHOLD,
    SEED_FILTER_SCALES,
    face_confidence,
    human_seed_filter,
    intended_group_agreement,
    measured_seed_filter,
    seed_filter_rule,
)
from facebias.faces.embed import PUBLISHED_THRESHOLDS
from facebias.io import config_from_params, param_float, param_int, param_list, param_str
from facebias.metrics import (
    DetCurve,
    check_labels,
    check_rates,
    check_scores,
    det_curve,
    enough_impostors,
    fmr_at,
    fnmr_at,
    fnmr_at_fmr,
    group_report,
    threshold_at_fmr,
)
from facebias.stats import (
    bootstrap_weights,
    percentile_interval,
    percentile_mc_error,
    wilson_interval,
)
from facebias.validate import require_columns

__all__ = [
    "RELATIONS",
    "ATTRIBUTES",
    "MODEL_THRESHOLDS",
    "cosine",
    "pair_scores",
    "centre_levels",
    "group_order",
    "slots_from_images",
    "cross_group_pairs",
    "relation",
    "human_levels",
    "similarity_summary",
    "pair_item_ids",
    "pair_hcic",
    "uncanny_pair_keep",
    "self_pair_mask",
    "self_pair_summary",
    "filter_drop_rates",
    "PAPER_FILTER_DROP_RATES",
    "error_curves",
    "fixed_threshold_points",
    "fnmr_by_threshold",
    "fnmr_at_fmr_by_group",
    "fnmr_at_fmr_by_cell",
    "DIFFERENCE_STATISTICS",
    "two_proportion_test",
    "holm_adjust",
    "GroupTests",
    "group_rate_tests",
    "relation_medians",
    "hcic_labels",
    "label_counts",
    "delta_attr",
    "pair_vote_matrix",
    "annotator_consistency",
    "response_histogram",
    "group_independence_test",
    "own_group_check",
    "own_group_image_check",
    "same_pair_examples",
    "SEED_FILTER_SCALES",
    "intended_group_agreement",
    "human_seed_filter",
    "seed_filter_rule",
    "FACE_SCORE_THRESHOLD",
    "face_confidence",
    "measured_seed_filter",
    "seed_filter_funnel",
    "uncanny_examples",
    "embed_images",
    "HCICConfig",
    "GROUP_DESCRIPTIONS",
    "SIMULATION_LABEL",
    "annotator_description",
    "PairLabels",
    "pair_labels",
    "kept_pair_scores",
    "summarise",
]

RELATIONS = ("same_prototype", "same_group", "different_group")
ATTRIBUTES = ("pose", "light", "age", "expression")
#: Centre (prototype) slot of each sequence on the procedural renderer (original light at 0).
CENTRE_LEVEL = {"pose": 2, "light": 0, "age": 2, "expression": 2}
#: Published verification thresholds as cosine similarities (match iff s > t):
#: :data:`facebias.faces.embed.PUBLISHED_THRESHOLDS` (SFace 0.363, dlib 0.82 = distance 0.6).
MODEL_THRESHOLDS = PUBLISHED_THRESHOLDS
PAIR_COLUMNS = ("pair_id", "image_a", "image_b", "prototype_a", "prototype_b", "seed_a", "seed_b",
                "group", "attribute", "level", "label", "is_self_pair", "b_is_prototype")
IMAGE_COLUMNS = ("image_id", "seed", "group", "prototype_id", "attribute", "level", "is_prototype")


# --------------------------------------------------------------------------- similarities
def cosine(a: Any, b: Any) -> np.ndarray:
    """Row-wise cosine similarity of two (n, d) arrays (or two (d,) vectors), clipped to
    [-1, 1]. Rows with a NaN or a zero norm give NaN.

    Parameters
    ----------
    a, b : array_like
        (n, d) arrays or (d,) vectors of the same shape.

    Returns
    -------
    numpy.ndarray
        (n,) similarities (higher = more alike), or a 0-d array for two vectors.

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> cosine([[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]])  # a zero vector gives NaN
    array([ 0., nan])
    >>> round(float(cosine([1.0, 0.0], [1.0, 1.0])), 6)
    0.707107
    """
    x = np.atleast_2d(np.asarray(a, dtype=np.float64))
    y = np.atleast_2d(np.asarray(b, dtype=np.float64))
    if x.shape != y.shape:
        raise ValueError(f"cosine: shapes differ, {x.shape} vs {y.shape}")
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.einsum("ij,ij->i", x, y) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    s = np.where(np.isfinite(s), np.clip(s, -1.0, 1.0), np.nan)
    return s if np.ndim(a) > 1 or np.ndim(b) > 1 else s[:1].reshape(())


def _vector_table(vectors: pd.DataFrame | Mapping[str, Any]) -> tuple[pd.Index, np.ndarray]:
    if isinstance(vectors, pd.DataFrame):
        return pd.Index(vectors.index.astype(str)), vectors.to_numpy(dtype=np.float64)
    if isinstance(vectors, Mapping):
        keys = list(vectors)
        mat = np.asarray([np.asarray(vectors[k], dtype=np.float64) for k in keys])
        if mat.ndim != 2:
            raise ValueError("vectors: every entry must be a 1-D vector of the same length")
        return pd.Index([str(k) for k in keys]), mat
    raise ValueError(f"vectors: expected a DataFrame (index image_id) or a dict, got {type(vectors).__name__}")


def pair_scores(pairs: pd.DataFrame, vectors: pd.DataFrame | Mapping[str, Any],
                col_a: str = "image_a", col_b: str = "image_b") -> pd.Series:
    """Cosine similarity of every pair (index = ``pairs.index``, name ``score``).

    ``vectors``: DataFrame indexed by image_id (one column per dimension) or a dict
    image_id -> vector; a NaN row is an image that failed to enrol and gives a NaN score.
    An image missing from ``vectors`` is an error.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the two image-id columns.
    vectors : pandas.DataFrame or mapping
        Embeddings by image id.
    col_a, col_b : str, default "image_a", "image_b"
        The image-id columns.

    Returns
    -------
    pandas.Series
        Cosine similarities (NaN where an image failed to enrol). ``result.attrs`` holds
        the counts ``n_pairs``, ``n_missing`` (NaN scores) and ``n_images_failed``
        (distinct images of the pairs with a NaN vector).

    Raises
    ------
    ValueError
        For a missing column, duplicate image ids, ragged vectors, or an image without a
        vector.

    Examples
    --------
    >>> pairs = pd.DataFrame({"image_a": ["a", "a"], "image_b": ["b", "c"]})
    >>> s = pair_scores(pairs, {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [np.nan, np.nan]})
    >>> s.round(6).tolist(), s.attrs["n_missing"]
    ([0.707107, nan], 1)
    """
    require_columns(pairs, [col_a, col_b], "pairs")
    index, mat = _vector_table(vectors)
    if not index.is_unique:
        raise ValueError("vectors: duplicate image ids")
    ia = index.get_indexer(pairs[col_a].astype(str))
    ib = index.get_indexer(pairs[col_b].astype(str))
    for col, idx in ((col_a, ia), (col_b, ib)):
        if (idx < 0).any():
            first = pairs[col].to_numpy()[np.flatnonzero(idx < 0)[0]]
            raise ValueError(f"pairs: column {col!r} image {first!r} has no vector")
    s = cosine(mat[ia], mat[ib]) if len(pairs) else np.zeros(0)
    out = pd.Series(s, index=pairs.index, name="score")
    failed = ~np.isfinite(mat).all(axis=1)
    used = np.unique(np.concatenate([ia, ib]))
    out.attrs = {"n_pairs": len(pairs), "n_missing": int(np.isnan(s).sum()),
                 "n_images_failed": int(failed[used].sum())}
    return out


# --------------------------------------------------------------------------- pair sets
def centre_levels(images: pd.DataFrame) -> dict[str, int]:
    """Each sequence's centre level (where the prototype stands), read from the images
    table: the one level of 0..4 that no image of that attribute has. Where that is not
    one level (no such images, or a subset with several levels missing) the procedural
    layout :data:`CENTRE_LEVEL` applies (pose 2, light 0, age 2, expression 2); the DCGAN's
    learned light direction gives light 2.

    Parameters
    ----------
    images : pandas.DataFrame
        The images table (needs ``attribute`` and ``level``).

    Returns
    -------
    dict of str to int
        Attribute -> centre level (0-based slot index).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> images = pd.DataFrame({"attribute": "light", "level": [0, 1, 3, 4]})
    >>> centre_levels(images)  # light has no image at 2: an ordered (learned) light sequence
    {'pose': 2, 'light': 2, 'age': 2, 'expression': 2}
    """
    require_columns(images, ["attribute", "level"], "images")
    out = dict(CENTRE_LEVEL)
    for attr in ATTRIBUTES:
        have = set(images.loc[images["attribute"] == attr, "level"].astype(int))
        free = [lv for lv in range(5) if lv not in have]
        if len(free) == 1 and have <= set(range(5)):
            out[attr] = free[0]
    return out


def group_order(images: pd.DataFrame, prefer: Sequence[str] = ()) -> list[str]:
    """The groups of the ``group`` column, in figure order. Groups come from the data;
    ``prefer`` only orders them.

    Parameters
    ----------
    images : pandas.DataFrame
        A table with a ``group`` column.
    prefer : sequence of str, default ()
        Groups to put first, in that order (a preferred group absent from the data is
        left out); the rest follow in order of first appearance.

    Returns
    -------
    list of str
        The groups.

    Raises
    ------
    ValueError
        For a missing ``group`` column.

    Examples
    --------
    >>> group_order(pd.DataFrame({"group": ["WM", "BF", "WM", "AF"]}), prefer=("AF", "XX"))
    ['AF', 'WM', 'BF']
    """
    require_columns(images, ["group"], "images")
    seen = [str(g) for g in pd.unique(images["group"].astype(str))]
    return [g for g in prefer if g in seen] + [g for g in seen if g not in set(prefer)]


def slots_from_images(images: pd.DataFrame, centre: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The 20 sequence slots per prototype from the images table; the centre slot of each
    sequence is the prototype image.

    Parameters
    ----------
    images : pandas.DataFrame
        The images table (``image_id, seed, group, prototype_id, attribute, level,
        is_prototype``).
    centre : mapping of str to int, optional
        Centre level per attribute; default :func:`centre_levels` of ``images``.

    Returns
    -------
    pandas.DataFrame
        ``prototype_id, attribute, level, image_id, is_self``, 4 attributes x 5 levels
        per prototype.

    Raises
    ------
    ValueError
        For a missing column, or a prototype without an image at a non-centre level.
    """
    require_columns(images, IMAGE_COLUMNS, "images")
    centre = centre_levels(images) if centre is None else {**CENTRE_LEVEL, **centre}
    protos = images[images["is_prototype"].astype(bool)].set_index("prototype_id")["image_id"]
    rows = []
    seq = images[images["attribute"].isin(ATTRIBUTES)]
    lookup = {(p, a, int(lv)): i for p, a, lv, i in
              zip(seq["prototype_id"], seq["attribute"], seq["level"], seq["image_id"], strict=True)}
    for pid, pimg in protos.items():
        for attr in ATTRIBUTES:
            for level in range(5):
                iid = lookup.get((pid, attr, level))
                if iid is None and level != centre[attr]:
                    raise ValueError(f"images: prototype {pid!r} has no {attr} image at level {level}")
                rows.append({"prototype_id": pid, "attribute": attr, "level": level,
                             "image_id": pimg if iid is None else iid, "is_self": iid is None})
    return pd.DataFrame(rows)


def cross_group_pairs(images: pd.DataFrame, n_per_prototype: int = 1, seed: int = 0,
                      start_id: int = 0) -> pd.DataFrame:
    """Model-only pairs of Fig. 5's third panel: each prototype with the 20 sequence slots
    of ``n_per_prototype`` prototypes of a **different group and a different seed**, drawn
    uniformly without replacement (``default_rng(seed)``, prototypes in sorted order).

    Parameters
    ----------
    images : pandas.DataFrame
        The images table (see :func:`slots_from_images`).
    n_per_prototype : int, default 1
        Partner prototypes per prototype (>= 1).
    seed : int, default 0
        Seeds the choice of partners.
    start_id : int, default 0
        First ``pair_id``.

    Returns
    -------
    pandas.DataFrame
        The columns of ``pairs.parquet`` (``group`` = prototype A's group, ``label`` 0)
        plus ``group_a, group_b, relation`` (= ``different_group``); ``pair_id`` from
        ``start_id``.

    Raises
    ------
    ValueError
        For a bad ``n_per_prototype``, too few prototypes of another group and seed, or
        as :func:`slots_from_images`.
    """
    if int(n_per_prototype) != n_per_prototype or n_per_prototype < 1:
        raise ValueError(f"n_per_prototype: expected a positive integer, got {n_per_prototype!r}")
    slots = slots_from_images(images)
    protos = (images[images["is_prototype"].astype(bool)][["prototype_id", "image_id", "seed", "group"]]
              .sort_values("prototype_id", kind="mergesort").reset_index(drop=True))
    rng = np.random.default_rng(seed)
    seeds, groups = protos["seed"].to_numpy(), protos["group"].to_numpy()
    a_idx, b_idx = [], []
    for i in range(len(protos)):
        ok = np.flatnonzero((groups != groups[i]) & (seeds != seeds[i]))
        if ok.size < n_per_prototype:
            raise ValueError(f"prototype {protos['prototype_id'].iloc[i]!r}: only {ok.size} prototypes of "
                             f"another group and seed, {n_per_prototype} wanted")
        a_idx += [i] * n_per_prototype
        b_idx += list(np.sort(rng.choice(ok, n_per_prototype, replace=False)))
    a = protos.iloc[a_idx].reset_index(drop=True)
    b = protos.iloc[b_idx].reset_index(drop=True)
    partner = pd.DataFrame({"image_a": a["image_id"], "prototype_a": a["prototype_id"],
                            "prototype_b": b["prototype_id"], "seed_a": a["seed"].astype(np.int64),
                            "seed_b": b["seed"].astype(np.int64), "group": a["group"],
                            "group_a": a["group"], "group_b": b["group"]})
    sl = slots.rename(columns={"prototype_id": "prototype_b", "image_id": "image_b",
                               "is_self": "b_is_prototype"})
    out = partner.merge(sl, on="prototype_b", how="left", sort=False)
    out["level"] = out["level"].astype(np.int64)
    out["label"] = 0
    out["is_self_pair"] = False
    out = out[[c for c in PAIR_COLUMNS if c != "pair_id"] + ["group_a", "group_b"]]
    out.insert(0, "pair_id", np.arange(start_id, start_id + len(out)))
    out["relation"] = "different_group"
    return out


def relation(pairs: pd.DataFrame) -> pd.Series:
    """How the two images of each pair are related.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``prototype_a``, ``prototype_b`` and optionally ``group_a``/``group_b`` (where
        those are missing the pair's ``group`` applies to both images, as in
        ``pairs.parquet``; without them every pair is within one group).

    Returns
    -------
    pandas.Series
        ``same_prototype`` (same seed and group), ``same_group`` (other seed, same group)
        or ``different_group``, named ``relation``.

    Raises
    ------
    ValueError
        For a missing prototype column.

    Examples
    --------
    >>> pairs = pd.DataFrame({"prototype_a": "p0", "prototype_b": ["p0", "p1", "p2"],
    ...                       "group_a": "WM", "group_b": ["WM", "WM", "BF"]})
    >>> relation(pairs).tolist()
    ['same_prototype', 'same_group', 'different_group']
    """
    require_columns(pairs, ["prototype_a", "prototype_b"], "pairs")
    same_p = (pairs["prototype_a"] == pairs["prototype_b"]).to_numpy()
    if "group_a" in pairs.columns and "group_b" in pairs.columns:
        ga, gb = pairs["group_a"], pairs["group_b"]
        if "group" in pairs.columns:  # rows of pairs.parquet concatenated with cross pairs
            ga, gb = ga.fillna(pairs["group"]), gb.fillna(pairs["group"])
        same_g = (ga == gb).to_numpy()
    else:
        same_g = np.ones(len(pairs), bool)
    rel = np.where(same_p, RELATIONS[0], np.where(same_g, RELATIONS[1], RELATIONS[2]))
    return pd.Series(rel, index=pairs.index, name="relation")


# --------------------------------------------------------------------------- summaries
def human_levels(pairs: pd.DataFrame, image_means: Mapping[str, pd.Series],
                 attributes: Sequence[str] = ("age", "expression")) -> pd.Series:
    """Level of each pair for box plots: the intended level, replaced for ``attributes``
    by the annotated bin of image B's mean raw score (:func:`facebias.annotate.labels.annotated_bins`).

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``image_b``, ``attribute`` and ``level`` (intended, 0-based).
    image_means : mapping of str to pandas.Series
        Attribute -> Series image_id -> mean of the raw 0-4 responses.
    attributes : sequence of str, default ("age", "expression")
        Attributes whose level is the annotated one.

    Returns
    -------
    pandas.Series
        int64 levels 0..4, named ``level_human``.

    Raises
    ------
    ValueError
        For a missing column, an attribute without means, or an image without a mean.
    """
    require_columns(pairs, ["image_b", "attribute", "level"], "pairs")
    out = pairs["level"].astype(np.int64).copy()
    for attr in attributes:
        m = (pairs["attribute"] == attr).to_numpy()
        if not m.any():
            continue
        if attr not in image_means:
            raise ValueError(f"image_means: no scores for attribute {attr!r}")
        means = image_means[attr].reindex(pairs.loc[m, "image_b"].astype(str).to_numpy())
        if means.isna().any():
            raise ValueError(f"image_means[{attr!r}]: no score for image {means.index[means.isna()][0]!r}")
        out.loc[m] = annotated_bins(means.to_numpy())
    return out.rename("level_human")


def similarity_summary(df: pd.DataFrame, score_col: str = "score",
                       by: Sequence[str] = ("relation", "attribute", "level", "group"),
                       q: tuple[float, float] = (0.15, 0.85)) -> pd.DataFrame:
    """Median and the 15-85 % percentile range of ``score_col`` per cell of ``by`` (the
    box plots of Fig. 5 and Supp. 10-12).

    Parameters
    ----------
    df : pandas.DataFrame
        Scored pairs.
    score_col : str, default "score"
        Similarity column.
    by : sequence of str, default ("relation", "attribute", "level", "group")
        Cell columns.
    q : tuple of float, default (0.15, 0.85)
        Lower and upper quantiles.

    Returns
    -------
    pandas.DataFrame
        Columns ``*by, median, q15, q85, n, n_missing``: NaN scores (failures to enrol)
        are left out and counted in ``n_missing``.

    Raises
    ------
    ValueError
        For a missing column.
    """
    require_columns(df, [score_col, *by], "df")
    s = df[score_col].astype(float)
    g = s.groupby([df[c] for c in by], observed=True, sort=True)
    lo, hi = (f"q{round(100 * x)}" for x in q)
    out = pd.DataFrame({"median": g.median(), lo: g.quantile(q[0]), hi: g.quantile(q[1]),
                        "n": g.count(), "n_missing": g.size() - g.count()})
    return out.reset_index()


# --------------------------------------------------------------------------- HCIC labels
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


# --------------------------------------------------------------------------- error rates
def _finite(pairs: pd.DataFrame, score_col: str, missing: str) -> pd.DataFrame:
    if missing not in ("error", "drop"):
        raise ValueError(f"missing: expected 'error' or 'drop', got {missing!r}")
    if missing == "drop":
        return pairs[np.isfinite(pairs[score_col].to_numpy(dtype=np.float64))]
    return pairs


def error_curves(pairs: pd.DataFrame, score_col: str, label_col: str,
                 by: Sequence[str] = ("attribute", "group"), missing: str = "error",
                 ) -> dict[tuple, DetCurve]:
    """FNMR-vs-FMR curve (``facebias.metrics.det_curve``) per cell of ``by`` (Fig. 6).

    Cells without both genuine (label 1) and impostor (0) pairs are left out.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column (match iff score > t).
    label_col : str
        Label column, 1 = same identity.
    by : sequence of str, default ("attribute", "group")
        Cell columns.
    missing : {"error", "drop"}, default "error"
        ``"drop"`` leaves out NaN scores (failures to enrol); by default they raise.

    Returns
    -------
    dict of tuple to DetCurve
        Cell key (a tuple of ``by`` values) -> curve.

    Raises
    ------
    ValueError
        For a missing column, a bad ``missing``, a label that is not 0/1, or (with
        ``missing="error"``) a NaN score.
    """
    require_columns(pairs, [score_col, label_col, *by], "pairs")
    df = _finite(pairs, score_col, missing)
    out: dict[tuple, DetCurve] = {}
    for key, sub in df.groupby(list(by), sort=True, observed=True):
        lab = check_labels(sub[label_col], f"column {label_col!r}")
        s = check_scores(sub[score_col].to_numpy(), f"column {score_col!r}", sub.index)
        if lab.any() and (~lab).any():
            out[key if isinstance(key, tuple) else (key,)] = det_curve(s[lab], s[~lab])
    return out


def fixed_threshold_points(pairs: pd.DataFrame, score_col: str, label_col: str, t: float = 0.6,
                           by: Sequence[str] = ("attribute", "group"), missing: str = "error",
                           ) -> pd.DataFrame:
    """(FMR, FNMR) at one similarity threshold ``t`` per cell (Fig. 6's triangles).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column; a pair matches iff score > t.
    label_col : str
        Label column, 1 = same identity.
    t : float, default 0.6
        The threshold.
    by : sequence of str, default ("attribute", "group")
        Cell columns.
    missing : {"error", "drop"}, default "error"
        As in :func:`error_curves`.

    Returns
    -------
    pandas.DataFrame
        Columns ``*by, threshold, fmr, fnmr, n_genuine, n_impostor`` (rates are
        fractions; NaN where a cell has no pairs of that kind).

    Raises
    ------
    ValueError
        As :func:`error_curves`.

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.5, 0.7, 0.2], "label": [1, 1, 0, 0], "group": "WM"})
    >>> fixed_threshold_points(pairs, "score", "label", t=0.6, by=("group",))
      group  threshold  fmr  fnmr  n_genuine  n_impostor
    0    WM        0.6  0.5   0.5          2           2
    """
    require_columns(pairs, [score_col, label_col, *by], "pairs")
    df = _finite(pairs, score_col, missing)
    rows = []
    for key, sub in df.groupby(list(by), sort=True, observed=True):
        lab = check_labels(sub[label_col], f"column {label_col!r}")
        s = check_scores(sub[score_col].to_numpy(), f"column {score_col!r}", sub.index)
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), "threshold": float(t),
                     "fmr": float(fmr_at(s[~lab], t)) if (~lab).any() else np.nan,
                     "fnmr": float(fnmr_at(s[lab], t)) if lab.any() else np.nan,
                     "n_genuine": int(lab.sum()), "n_impostor": int((~lab).sum())})
    return pd.DataFrame(rows)


def fnmr_by_threshold(pairs: pd.DataFrame, score_col: str, label_col: str, thresholds: Sequence[float],
                      by: Sequence[str] = ("group",)) -> pd.DataFrame:
    """FNMR per cell of ``by`` at each similarity threshold; with ``match iff s > t`` it
    can only fall as the threshold falls.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column.
    label_col : str
        Label column, 1 = same identity (only these pairs are used).
    thresholds : sequence of float
        Similarity thresholds.
    by : sequence of str, default ("group",)
        Cell columns.

    Returns
    -------
    pandas.DataFrame
        FNMR (fraction), rows = cells, columns = thresholds.

    Raises
    ------
    ValueError
        For a missing column, a label that is not 0/1, or a non-finite genuine score.

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.5, 0.7, 0.2], "label": [1, 1, 0, 0], "group": "WM"})
    >>> fnmr_by_threshold(pairs, "score", "label", [0.4, 0.6])
    threshold  0.4  0.6
    WM         0.0  0.5
    """
    require_columns(pairs, [score_col, label_col, *by], "pairs")
    gen = pairs[check_labels(pairs[label_col], f"column {label_col!r}")]
    t = np.asarray(thresholds, dtype=np.float64)
    rows = {key: np.atleast_1d(fnmr_at(sub[score_col].to_numpy(), t))
            for key, sub in gen.groupby(list(by) if len(by) > 1 else by[0], sort=True, observed=True)}
    return pd.DataFrame(rows, index=pd.Index(t, name="threshold")).T


def fnmr_at_fmr_by_group(pairs: pd.DataFrame, score_col: str, label_col: str, fmr: float = 1e-2,
                         group: str = "group", cluster: str = "prototype_a", n_boot: int = 200,
                         ci: float = 0.95, seed: int = 0, missing: str = "error") -> pd.DataFrame:
    """Per-group FNMR at a target FMR with a prototype-cluster bootstrap CI.

    Wraps :func:`facebias.metrics.group_report` with ``ids=(cluster, cluster)``: each
    bootstrap replicate resamples the anchor prototypes (``cluster``) with replacement,
    a pair's weight is its prototype's multiplicity, and thresholds are re-estimated per
    replicate. ``fnmr_group`` reads each group's own curve at ``fmr`` (Fig. 6);
    ``fnmr_global`` uses one threshold from all impostors pooled.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column (match iff score > t).
    label_col : str
        Label column, 1 = same identity.
    fmr : float, default 0.01
        Target FMR, a fraction in (0, 1).
    group : str, default "group"
        Group column.
    cluster : str, default "prototype_a"
        Bootstrap cluster column.
    n_boot : int, default 200
        Bootstrap replicates (0 = no interval).
    ci : float, default 0.95
        Interval coverage.
    seed : int, default 0
        Bootstrap seed.
    missing : {"error", "drop"}, default "error"
        As in :func:`error_curves`.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``n_genuine, n_impostor``, the group policy's
        ``threshold_group, fmr_group, fnmr_group`` (+ ``_lo``/``_hi``), the pooled
        policy's ``threshold_global, fmr_global, fnmr_global`` (+ ``_lo``/``_hi``),
        ``resolved`` (the group has at least 10 / ``fmr`` impostors,
        :func:`facebias.metrics.enough_impostors`; else its rates are NaN) and ``note``
        (why a value is NaN). Groups without genuine or without impostor pairs are left out
        and listed in ``result.attrs["skipped"]``.

    Raises
    ------
    ValueError
        If no group has both kinds of pairs, or as
        :func:`facebias.metrics.group_report`.
    """
    require_columns(pairs, [score_col, label_col, group, cluster], "pairs")
    df = _finite(pairs, score_col, missing)
    lab = pd.Series(check_labels(df[label_col], f"column {label_col!r}"), index=df.index)
    both = lab.groupby(df[group], observed=True).agg(lambda x: bool(x.any() and (~x).any()))
    skipped = sorted(both.index[~both.to_numpy(dtype=bool)])
    if skipped:
        df = df[~df[group].isin(skipped)]
    if df.empty:
        raise ValueError(f"pairs: no group has both genuine and impostor pairs in {label_col!r}")
    rep = group_report(df, score_col, label_col, group, fmr=(fmr,), ids=(cluster, cluster),
                       n_boot=n_boot, ci=ci, seed=seed)
    keep = ["group", "n_genuine", "n_impostor", "threshold_group", "fmr_group", "fnmr_group",
            "fnmr_group_lo", "fnmr_group_hi", "threshold_global", "fmr_global", "fnmr_global",
            "fnmr_global_lo", "fnmr_global_hi", "resolved", "note",
            "fnmr_group_lo_mcse", "fnmr_group_hi_mcse", "fnmr_global_lo_mcse", "fnmr_global_hi_mcse"]
    out = rep.table[[c for c in keep if c in rep.table.columns]].reset_index(drop=True)
    out.attrs = {"skipped": skipped}
    return out


def fnmr_at_fmr_by_cell(pairs: pd.DataFrame, score_col: str, label_col: str, fmr: float = 1e-2,
                        by: Sequence[str] = ("attribute", "group"), cluster: str = "prototype_a",
                        n_boot: int = 200, ci: float = 0.95, seed: int = 0, missing: str = "error",
                        ) -> pd.DataFrame:
    """FNMR at a target FMR in every cell of ``by`` (default attribute x group: Fig. 6 read
    at one FMR), each cell on its own threshold, with the prototype-cluster bootstrap CI of
    :func:`fnmr_at_fmr_by_group` (one joint bootstrap over all cells).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col, label_col, fmr, cluster, n_boot, ci, seed, missing
        As in :func:`fnmr_at_fmr_by_group`.
    by : sequence of str, default ("attribute", "group")
        Cell columns (no missing values).

    Returns
    -------
    pandas.DataFrame
        Columns ``*by`` then those of :func:`fnmr_at_fmr_by_group` less ``group``; cells
        without genuine or without impostor pairs are left out and listed (as tuples) in
        ``result.attrs["skipped"]``.

    Raises
    ------
    ValueError
        For a missing column or cell value, or as :func:`fnmr_at_fmr_by_group`.
    """
    require_columns(pairs, [score_col, label_col, cluster, *by], "pairs")
    by = list(by)
    if pairs[by].isna().any().any():
        raise ValueError(f"pairs: a missing value in the cell columns {by}")
    grouped = pairs.groupby(by, sort=True, observed=True)
    keys = grouped.size().index.to_frame(index=False)  # row i = cell code i of ngroup()
    df = pairs[[score_col, label_col, cluster]].assign(_cell=grouped.ngroup().to_numpy())
    tab = fnmr_at_fmr_by_group(df, score_col, label_col, fmr=fmr, group="_cell", cluster=cluster,
                               n_boot=n_boot, ci=ci, seed=seed, missing=missing)
    cells = keys.iloc[tab["group"].to_numpy(dtype=np.int64)].reset_index(drop=True)
    out = pd.concat([cells, tab.drop(columns="group").reset_index(drop=True)], axis=1)
    out.attrs = {"skipped": [tuple(keys.iloc[int(c)]) for c in tab.attrs["skipped"]]}
    return out


# --------------------------------------------------------------------------- group differences, tested
#: The statistics :func:`group_rate_tests` compares between groups.
DIFFERENCE_STATISTICS = ("fnmr_at_fmr", "fnmr_at_threshold", "fmr_at_threshold")


def two_proportion_test(x1: Any, n1: Any, x2: Any, n2: Any, ci: float = 0.95) -> pd.DataFrame:
    """Two-sided two-proportion z test of ``x1 / n1 == x2 / n2`` (pooled variance) and the
    Wald interval of the difference ``x1 / n1 - x2 / n2`` (unpooled), vectorised.

    It treats every trial as independent. Pairs of one prototype are not (they share the
    prototype), so on pair tables this p-value is optimistic; :func:`group_rate_tests`
    decides on the prototype-cluster bootstrap and reports this beside it.

    Parameters
    ----------
    x1, n1, x2, n2 : array_like
        Errors and trials of the two groups (``0 <= x <= n``, ``n > 0``); broadcast together.
    ci : float, default 0.95
        Coverage of the interval, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        ``diff`` (a fraction), ``lo``, ``hi``, ``z`` and ``p`` (two-sided); ``z`` and ``p``
        are NaN where the pooled rate is 0 or 1 (no errors, or only errors, in both groups:
        the test is undefined).

    Raises
    ------
    ValueError
        If an ``n`` is not positive, an ``x`` lies outside ``0..n``, or ``ci`` is outside (0, 1).

    Examples
    --------
    >>> two_proportion_test(30, 300, 12, 300).round(4)
       diff      lo      hi       z      p
    0  0.06  0.0195  0.1005  2.8801  0.004
    """
    from scipy.stats import norm

    a1, m1, a2, m2 = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in (x1, n1, x2, n2)))
    if (m1 <= 0).any() or (m2 <= 0).any() or (a1 < 0).any() or (a2 < 0).any() or (a1 > m1).any() or (a2 > m2).any():
        raise ValueError("two_proportion_test: need n > 0 and 0 <= x <= n in both groups")
    if not 0 < ci < 1:
        raise ValueError(f"ci: must lie in (0, 1), got {ci!r}")
    p1, p2 = a1 / m1, a2 / m2
    pooled = (a1 + a2) / (m1 + m2)
    se0 = np.sqrt(pooled * (1 - pooled) * (1 / m1 + 1 / m2))
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se0 > 0, (p1 - p2) / se0, np.nan)
    p = 2 * norm.sf(np.abs(z))
    half = norm.ppf(1 - (1 - ci) / 2) * np.sqrt(p1 * (1 - p1) / m1 + p2 * (1 - p2) / m2)
    return pd.DataFrame({"diff": p1 - p2, "lo": p1 - p2 - half, "hi": p1 - p2 + half, "z": z, "p": p})


def holm_adjust(p: Any) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), NaN left out of the family
    and kept NaN.

    Parameters
    ----------
    p : array_like
        Raw p-values in [0, 1] (NaN = no test).

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, each >= its raw value, at most 1.

    Raises
    ------
    ValueError
        For a p-value outside [0, 1].

    Examples
    --------
    >>> holm_adjust([0.01, 0.04, np.nan, 0.03])
    array([0.03, 0.06,  nan, 0.06])
    """
    a = np.asarray(p, dtype=np.float64).ravel()
    ok = ~np.isnan(a)
    if ((a[ok] < 0) | (a[ok] > 1)).any():
        raise ValueError("holm_adjust: p-values must lie in [0, 1]")
    out = np.full(a.shape, np.nan)
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(a[idx], kind="stable")]
    m = order.size
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * a[order]))
    return out


def _bootstrap_p(reps: np.ndarray) -> float:
    """Two-sided percentile-bootstrap p-value of ``difference == 0`` from its replicates
    (NaN ones dropped): ``2 min(#(d <= 0) + 1, #(d >= 0) + 1) / (n + 1)``, at most 1."""
    d = reps[~np.isnan(reps)]
    if d.size == 0:
        return np.nan
    return float(min(1.0, 2 * (min((d <= 0).sum(), (d >= 0).sum()) + 1) / (d.size + 1)))


@dataclass(frozen=True)
class GroupTests:
    """Per-group error rates with their counts, and every pair of groups tested
    (:func:`group_rate_tests`).

    Attributes
    ----------
    rates : pandas.DataFrame
        One row per group (see :func:`group_rate_tests`).
    differences : pandas.DataFrame
        One row per (statistic, group pair).
    meta : dict
        Settings and the method, in words.
    """

    rates: pd.DataFrame
    differences: pd.DataFrame
    meta: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{**meta, "rates": {group: row}, "tests": {statistic: {"a-b": row}}}``
        (NaN stays NaN here; the metrics writer turns it into null)."""
        rates = {str(r.pop("group")): r for r in self.rates.to_dict(orient="records")}
        tests: dict[str, dict[str, Any]] = {s: {} for s in DIFFERENCE_STATISTICS}
        for r in self.differences.to_dict(orient="records"):
            tests[r.pop("statistic")][f"{r['group_a']}-{r['group_b']}"] = r
        return {**self.meta, "rates": rates, "tests": tests}


def group_rate_tests(pairs: pd.DataFrame, score_col: str, label_col: str, fmr: float = 1e-2,
                     threshold: float = 0.6, group: str = "group", cluster: str = "prototype_a",
                     order: Sequence[str] | None = None, n_boot: int = 2000, ci: float = 0.95,
                     alpha: float = 0.05, seed: int = 0, missing: str = "error",
                     min_impostor_factor: float = 10.0) -> GroupTests:
    """Per-group FNMR and FMR with their counts and resolution, and the difference of every
    pair of groups **tested**, not read off overlapping intervals.

    Three statistics per group (matches iff score > t, :mod:`facebias.metrics`):

    * ``fnmr_at_fmr``: FNMR at the group's own threshold for FMR ``fmr`` (Fig. 6 read at
      one FMR, as :func:`fnmr_at_fmr_by_group`); **resolved** iff the group has at least
      ``min_impostor_factor / fmr`` impostors (:func:`facebias.metrics.enough_impostors`, the
      rule of :func:`facebias.metrics.group_report`), else NaN.
    * ``fnmr_at_threshold`` and ``fmr_at_threshold``: FNMR and FMR at the fixed similarity
      ``threshold`` (e.g. the model's published one), with the error counts and Wilson
      intervals (:func:`facebias.stats.wilson_interval`). The FMR is resolved iff the group
      has enough impostors for the target ``fmr`` (the same rule: with fewer, an FMR of 0
      cannot be told from one above the target); the FNMR needs only a genuine pair.

    Every pair of groups (``a`` before ``b`` in ``order``) is tested on each statistic with
    a **prototype-cluster bootstrap** of the difference ``a - b`` (``n_boot`` replicates of
    :func:`facebias.stats.bootstrap_weights` with ``ids=(cluster, cluster)``, the
    bootstrap of :func:`fnmr_at_fmr_by_group`: each replicate resamples prototypes and
    re-estimates each group's threshold): the percentile interval of the difference and the
    two-sided bootstrap p-value ``2 min(#(d* <= 0) + 1, #(d* >= 0) + 1) / (n_boot + 1)``.
    p-values are Holm-adjusted (:func:`holm_adjust`) over the resolved pairs of each
    statistic, and a pair ``differs`` iff it is resolved and its adjusted p < ``alpha``.
    The fixed-threshold rows also carry the pooled two-proportion z test
    (:func:`two_proportion_test`, ``p_z``), which treats pairs as independent (they are
    clustered by prototype): shown for comparison, not used to decide.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs with ``group`` and ``cluster``.
    score_col : str
        Similarity column.
    label_col : str
        Label column, 1 = same identity.
    fmr : float, default 0.01
        Target FMR, a fraction in (0, 1).
    threshold : float, default 0.6
        Fixed similarity threshold.
    group : str, default "group"
        Group column.
    cluster : str, default "prototype_a"
        Bootstrap cluster column (the anchor prototype).
    order : sequence of str, optional
        Group order (differences are earlier minus later); default sorted. Groups of
        ``order`` absent from the pairs are left out.
    n_boot : int, default 2000
        Bootstrap replicates (>= 1; the smallest p-value is ``2 / (n_boot + 1)``, so a
        warning says when even it cannot pass Holm's adjustment at ``alpha``).
    ci : float, default 0.95
        Interval coverage, in (0, 1).
    alpha : float, default 0.05
        Family-wise level of the Holm-adjusted tests, in (0, 1).
    seed : int, default 0
        Bootstrap seed.
    missing : {"error", "drop"}, default "error"
        As in :func:`error_curves`.
    min_impostor_factor : float, default 10.0
        As in :func:`facebias.metrics.group_report`.

    Returns
    -------
    GroupTests
        ``rates``: one row per group with ``group, n_genuine, n_impostor``, then
        ``fnmr_at_fmr`` (+ ``_lo``/``_hi``, bootstrap), ``threshold_group``,
        ``resolved_fnmr_at_fmr``; ``n_false_non_match``, ``fnmr_at_threshold`` (+ Wilson
        ``_lo``/``_hi``), ``resolved_fnmr_at_threshold``; ``n_false_match``,
        ``fmr_at_threshold`` (+ Wilson ``_lo``/``_hi``), ``resolved_fmr_at_threshold``.
        ``differences``: one row per statistic and pair with ``statistic, group_a, group_b,
        diff, lo, hi, p, p_holm, resolved, differs`` and ``p_z`` (NaN for ``fnmr_at_fmr``).
        Rates are fractions.

    Raises
    ------
    ValueError
        For a missing column, labels that are not 0/1, a NaN score with ``missing="error"``,
        fewer than two groups with both kinds of pairs, or a setting out of range.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = 40
    >>> df = pd.DataFrame({"score": np.r_[rng.normal(2, 1, 2 * n), rng.normal(0, 1, 2 * n)],
    ...                    "label": [1] * (2 * n) + [0] * (2 * n), "group": list("ab" * n) * 2,
    ...                    "prototype_a": [f"p{i % 10}" for i in range(4 * n)]})
    >>> t = group_rate_tests(df, "score", "label", fmr=0.25, threshold=1.0, n_boot=50)
    >>> t.differences[["statistic", "group_a", "group_b"]].values.tolist()[0]
    ['fnmr_at_fmr', 'a', 'b']
    """
    require_columns(pairs, [score_col, label_col, group, cluster], "pairs")
    target, scalar = check_rates(fmr, "fmr")
    if not scalar:
        raise ValueError(f"fmr: expected one target FMR, got {fmr!r}")
    f = float(target[0])
    if int(n_boot) < 1:
        raise ValueError(f"n_boot: must be >= 1 (the tests are bootstrap tests), got {n_boot!r}")
    for name, v in (("ci", ci), ("alpha", alpha)):
        if not 0 < v < 1:
            raise ValueError(f"{name}: must lie in (0, 1), got {v!r}")
    df = _finite(pairs, score_col, missing)
    lab = check_labels(df[label_col], f"column {label_col!r}")
    s = check_scores(df[score_col].to_numpy(), f"column {score_col!r}", df.index)
    g = df[group].astype(str).to_numpy()
    present = [x for x in (sorted(set(g)) if order is None else [str(o) for o in order]) if x in set(g)]
    groups = [x for x in present if (lab & (g == x)).any() and (~lab & (g == x)).any()]
    if len(groups) < 2:
        raise ValueError(f"pairs: fewer than two groups with both genuine and impostor pairs ({groups})")
    gen = {x: np.flatnonzero(lab & (g == x)) for x in groups}
    imp = {x: np.flatnonzero(~lab & (g == x)) for x in groups}
    n_pairs = len(groups) * (len(groups) - 1) // 2
    if n_pairs * 2 / (int(n_boot) + 1) >= alpha:  # Holm's smallest adjusted p with the smallest bootstrap p
        warnings.warn(f"group_rate_tests: {n_boot} replicates cannot reject at {alpha:g} over {n_pairs} pairs "
                      f"(smallest Holm-adjusted p is {n_pairs} x 2 / (n_boot + 1)); raise n_boot above "
                      f"{int(np.ceil(2 * n_pairs / alpha))}", stacklevel=2)

    def stats(w: np.ndarray | None) -> np.ndarray:
        """(3, n_groups): FNMR at the FMR target, FNMR and FMR at ``threshold`` under weights ``w``."""
        out = np.full((3, len(groups)), np.nan)
        for j, x in enumerate(groups):
            sg, si = s[gen[x]], s[imp[x]]
            if w is not None:
                wg, wi = w[gen[x]], w[imp[x]]
                if wg.sum() == 0 or wi.sum() == 0:
                    continue
                out[1, j] = wg @ (sg <= threshold) / wg.sum()
                out[2, j] = wi @ (si > threshold) / wi.sum()
                sg, si = np.repeat(sg, wg.astype(np.int64)), np.repeat(si, wi.astype(np.int64))
            else:
                out[1, j], out[2, j] = np.mean(sg <= threshold), np.mean(si > threshold)
            out[0, j] = fnmr_at_fmr(sg, si, f)
        return out

    n_gen = np.array([gen[x].size for x in groups])
    n_imp = np.array([imp[x].size for x in groups])
    ok_imp = np.asarray(enough_impostors(n_imp, f, min_impostor_factor))
    resolved = np.stack([ok_imp, n_gen > 0, ok_imp])  # (3, n_groups), per statistic
    point = np.where(resolved, stats(None), np.nan)
    ids = df[cluster].to_numpy()
    reps = np.stack([np.where(resolved, stats(w), np.nan)
                     for w in bootstrap_weights(len(df), int(n_boot), seed, id1=ids, id2=ids)])
    lo, hi = percentile_interval(reps[:, 0, :], ci)
    lo_se, hi_se = percentile_mc_error(reps[:, 0, :], ci)
    thresholds = [float(threshold_at_fmr(s[imp[x]], f)) for x in groups]
    x_fnm = np.array([(s[gen[x]] <= threshold).sum() for x in groups])
    x_fm = np.array([(s[imp[x]] > threshold).sum() for x in groups])
    w_fnm, w_fm = wilson_interval(x_fnm, n_gen, ci), wilson_interval(x_fm, n_imp, ci)
    rates = pd.DataFrame({
        "group": groups, "n_genuine": n_gen, "n_impostor": n_imp,
        "fnmr_at_fmr": point[0], "fnmr_at_fmr_lo": lo, "fnmr_at_fmr_hi": hi,
        "fnmr_at_fmr_lo_mcse": lo_se, "fnmr_at_fmr_hi_mcse": hi_se,
        "threshold_group": np.where(ok_imp, thresholds, np.nan), "resolved_fnmr_at_fmr": ok_imp,
        "n_false_non_match": x_fnm, "fnmr_at_threshold": point[1], "fnmr_at_threshold_lo": w_fnm[0],
        "fnmr_at_threshold_hi": w_fnm[1], "resolved_fnmr_at_threshold": n_gen > 0,
        "n_false_match": x_fm, "fmr_at_threshold": point[2],
        "fmr_at_threshold_lo": np.where(ok_imp, w_fm[0], np.nan), "fmr_at_threshold_hi": np.where(ok_imp, w_fm[1], np.nan),
        "resolved_fmr_at_threshold": ok_imp})
    rows = []
    for k, stat in enumerate(DIFFERENCE_STATISTICS):
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                both = bool(resolved[k, i] and resolved[k, j])
                d = reps[:, k, i] - reps[:, k, j]
                dlo, dhi = percentile_interval(d[:, None], ci)
                dlo_se, dhi_se = percentile_mc_error(d[:, None], ci)
                p_z = np.nan
                if k and both:
                    x, n = (x_fnm, n_gen) if k == 1 else (x_fm, n_imp)
                    p_z = float(two_proportion_test(x[i], n[i], x[j], n[j])["p"].iloc[0])
                p = _bootstrap_p(d) if both else np.nan
                rows.append({"statistic": stat, "group_a": groups[i], "group_b": groups[j],
                             "diff": float(point[k, i] - point[k, j]) if both else np.nan,
                             "lo": float(dlo[0]) if both else np.nan, "hi": float(dhi[0]) if both else np.nan,
                             "lo_mcse": float(dlo_se[0]) if both else np.nan,
                             "hi_mcse": float(dhi_se[0]) if both else np.nan,
                             "p": p, "p_z": p_z, "resolved": both and not np.isnan(p)})
    diffs = pd.DataFrame(rows)
    diffs["p_holm"] = np.nan
    for _, sub in diffs.groupby("statistic", sort=False):
        diffs.loc[sub.index, "p_holm"] = holm_adjust(sub["p"].where(sub["resolved"]))
    diffs["differs"] = diffs["resolved"] & (diffs["p_holm"] < alpha)
    diffs = diffs[["statistic", "group_a", "group_b", "diff", "lo", "hi", "p", "p_holm", "resolved", "differs", "p_z",
                   "lo_mcse", "hi_mcse"]]
    meta = {"fmr_target": f, "fixed_threshold": float(threshold), "n_boot": int(n_boot), "ci": ci,
            "alpha": alpha, "seed": seed, "min_impostor_factor": min_impostor_factor, "groups": groups,
            "method": (f"difference of each pair of groups (earlier minus later) with a prototype-cluster bootstrap "
                       f"({int(n_boot)} replicates, thresholds re-estimated per replicate): {ci:.0%} percentile "
                       f"interval and two-sided bootstrap p-value, Holm-adjusted over the pairs of each statistic; "
                       f"differs iff resolved and adjusted p < {alpha:g}. p_z: pooled two-proportion z test "
                       "(pairs as independent; for comparison). A rate needs at least "
                       f"{min_impostor_factor:g}/FMR impostors (FNMR at the FMR target, FMR at the fixed threshold)")}
    return GroupTests(rates, diffs, meta)


def relation_medians(pairs: pd.DataFrame, score_col: str, relation_col: str = "relation") -> dict[str, Any]:
    """Median score per relation (Fig. 5's ordering claim).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored pairs with a relation column (:func:`relation`).
    score_col : str
        Similarity column; NaN scores (failures to enrol) are left out.
    relation_col : str, default "relation"
        The relation column.

    Returns
    -------
    dict
        ``{relation: median, ..., "ordered": same_prototype > same_group >
        different_group}``; a relation without pairs makes ``ordered`` False.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.95, 0.5, 0.6, 0.1],
    ...                       "relation": ["same_prototype"] * 2 + ["same_group"] * 2 + ["different_group"]})
    >>> relation_medians(pairs, "score")
    {'different_group': 0.1, 'same_group': 0.55, 'same_prototype': 0.925, 'ordered': True}
    """
    require_columns(pairs, [score_col, relation_col], "pairs")
    med = pairs[score_col].astype(float).groupby(pairs[relation_col]).median()
    out: dict[str, Any] = {str(k): float(v) for k, v in med.items()}
    vals = [out.get(r, np.nan) for r in RELATIONS]
    out["ordered"] = bool(np.isfinite(vals).all() and vals[0] > vals[1] > vals[2])
    return out


def delta_attr(pairs: pd.DataFrame, score_col: str = "score",
               by: Sequence[str] = ("attribute", "level")) -> pd.DataFrame:
    """Extension (B1.11 [REC], not in the paper): expected similarity drop from changing
    one attribute, ``mean over prototypes of s(P, P) - s(P, seq[level])``.

    Uses same-prototype pairs; ``s(P, P)`` is the prototype's self-pair score.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored pairs (``prototype_a, prototype_b, is_self_pair`` and the ``by`` columns).
    score_col : str, default "score"
        Similarity column.
    by : sequence of str, default ("attribute", "level")
        Cell columns.

    Returns
    -------
    pandas.DataFrame
        Columns ``*by, delta`` (similarity units; positive = the edit lowers the
        similarity), ``se`` (SD / sqrt(n) over prototypes), ``n``, ``estimator``.

    Raises
    ------
    ValueError
        For a missing column or no self pairs.
    """
    require_columns(pairs, ["prototype_a", "prototype_b", "is_self_pair", score_col, *by], "pairs")
    pos = pairs[pairs["prototype_a"] == pairs["prototype_b"]]
    selfs = pos[pos["is_self_pair"].astype(bool)].groupby("prototype_a")[score_col].mean()
    if selfs.empty:
        raise ValueError("pairs: no self pairs (is_self_pair) to give s(P, P)")
    d = selfs.reindex(pos["prototype_a"]).to_numpy() - pos[score_col].to_numpy(dtype=np.float64)
    g = pd.Series(d, index=pos.index).groupby([pos[c] for c in by], sort=True, observed=True)
    out = pd.DataFrame({"delta": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count()), "n": g.count()})
    out["estimator"] = "extension: mean_P[s(P,P) - s(P,seq)]"
    return out.reset_index()


# --------------------------------------------------------------------------- annotations
def annotator_consistency(matrix: pd.DataFrame, pairs: pd.DataFrame,
                          by: Sequence[str] = ("attribute",)) -> tuple[pd.Series, pd.DataFrame]:
    """Per-pair SD of the raw identity responses normalised to [0, 1] (``item_sd`` with
    k = 5: population SD / 4), and its median, 15th and 85th percentile per cell of
    ``by`` (Supp. Fig. 13).

    Parameters
    ----------
    matrix : pandas.DataFrame
        :func:`pair_vote_matrix` output (index = ``pairs.index``).
    pairs : pandas.DataFrame
        The pairs with the ``by`` columns.
    by : sequence of str, default ("attribute",)
        Cell columns.

    Returns
    -------
    per_pair_sd : pandas.Series
        Normalised SD per pair, in [0, 0.5].
    summary : pandas.DataFrame
        ``*by, median, q15, q85, n``.

    Raises
    ------
    ValueError
        For a missing column or a ``matrix`` index other than ``pairs.index``.
    """
    from facebias.annotate import item_sd

    require_columns(pairs, list(by), "pairs")
    if not matrix.index.equals(pairs.index):
        raise ValueError("matrix: index must equal pairs.index (use pair_vote_matrix)")
    sd = pd.Series(np.asarray(item_sd(matrix.to_numpy(dtype=np.float64), 5), dtype=np.float64),
                   index=pairs.index, name="sd")
    g = sd.groupby([pairs[c] for c in by], sort=True, observed=True)
    summary = pd.DataFrame({"median": g.median(), "q15": g.quantile(0.15), "q85": g.quantile(0.85),
                            "n": g.count()}).reset_index()
    return sd, summary


def response_histogram(image_votes: pd.DataFrame, images: pd.DataFrame, question: str,
                       by: str = "step", normalise: bool = True) -> pd.DataFrame:
    """Histogram of the raw responses to ``question`` (Fig. 3, Supp. 9): rows = intended
    step 0..4 of the ``question`` sequence (``by="step"``, the prototype is step 2; for
    age and expression) or the image's ``group`` (``by="group"``); columns = response
    level.

    Parameters
    ----------
    image_votes : pandas.DataFrame
        Single-image votes (``item_id, question, value``; value = raw level 0..4).
    images : pandas.DataFrame
        The images table.
    question : str
        The question, e.g. ``"age"``.
    by : {"step", "group"}, default "step"
        Rows: intended step or image group.
    normalise : bool, default True
        Shares per row (fractions) instead of counts.

    Returns
    -------
    pandas.DataFrame
        Rows ``by``, columns ``response``.

    Raises
    ------
    ValueError
        For a missing column, no votes for ``question``, or an unknown ``by``.
    """
    require_columns(image_votes, ["item_id", "question", "value"], "image_votes")
    require_columns(images, ["image_id", "group", "attribute", "level", "is_prototype"], "images")
    v = image_votes[image_votes["question"] == question]
    if v.empty:
        raise ValueError(f"image_votes: no votes for question {question!r}")
    info = images.set_index("image_id")
    if by == "step":
        seq = info[(info["attribute"] == question) | info["is_prototype"].astype(bool)]
        step = pd.Series(np.where(seq["is_prototype"].astype(bool), CENTRE_LEVEL.get(question, 2),
                                  seq["level"]), index=seq.index)
        key = v["item_id"].map(step)
    elif by == "group":
        key = v["item_id"].map(info["group"])
    else:
        raise ValueError(f"by: expected 'step' or 'group', got {by!r}")
    v = v[key.notna()]
    tab = pd.crosstab(key[key.notna()].rename(by), v["value"].astype(int).rename("response"))
    return tab.div(tab.sum(axis=1), axis=0) if normalise else tab


def group_independence_test(matrix: pd.DataFrame, pairs: pd.DataFrame,
                            by: Sequence[str] = ("attribute", "label"), group: str = "group",
                            alpha: float = 0.05) -> pd.DataFrame:
    """Chi-square test of independence of demographic group x the 5 identity responses
    (B1.12 [REC]; Fig. 4 / Supp. 14), one test per cell of ``by`` (default: attribute x
    intended label, i.e. same-seed and different-seed pairs), Bonferroni-corrected over
    the tests. Responses are pooled over annotators (9 per pair), which treats them as
    independent; read p-values as approximate.

    Parameters
    ----------
    matrix : pandas.DataFrame
        :func:`pair_vote_matrix` output (index = ``pairs.index``).
    pairs : pandas.DataFrame
        The pairs with the ``group`` and ``by`` columns.
    by : sequence of str, default ("attribute", "label")
        One test per cell.
    group : str, default "group"
        Group column.
    alpha : float, default 0.05
        Family-wise significance level.

    Returns
    -------
    pandas.DataFrame
        Columns ``*by, chi2, dof, p, n_responses, p_bonferroni, reject``; cells with
        fewer than 2 groups or 2 responses are not tested; empty if none is.

    Raises
    ------
    ValueError
        For a missing column or a ``matrix`` index other than ``pairs.index``.
    """
    from scipy.stats import chi2_contingency

    require_columns(pairs, [group, *by], "pairs")
    if not matrix.index.equals(pairs.index):
        raise ValueError("matrix: index must equal pairs.index (use pair_vote_matrix)")
    long = pd.DataFrame(matrix.to_numpy(dtype=np.float64), index=pairs.index).stack().rename("value")
    long = long.reset_index(level=1, drop=True).to_frame()
    long = long.join(pairs[[group, *by]])
    rows = []
    for key, sub in long.groupby(list(by), sort=True, observed=True):
        tab = pd.crosstab(sub[group], sub["value"].astype(int)).reindex(columns=range(5), fill_value=0)
        tab = tab.loc[:, tab.sum(axis=0) > 0]
        if tab.shape[0] < 2 or tab.shape[1] < 2:
            continue
        chi2, p, dof, _ = chi2_contingency(tab.to_numpy())
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), "chi2": float(chi2), "dof": int(dof),
                     "p": float(p), "n_responses": int(tab.to_numpy().sum())})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_bonferroni"] = np.minimum(out["p"] * len(out), 1.0)
    out["reject"] = out["p_bonferroni"] < alpha
    return out


def _panel_shares(group: pd.Series, majority: str | None, majority_share: float,
                  who: str) -> tuple[list[str], str, dict[str, float]]:
    """The groups (sorted), the majority group (default the first) and each group's share of
    a simulated panel: ``majority_share`` for the majority, the rest split evenly."""
    groups = sorted(pd.unique(group.astype(str)))
    if len(groups) < 2:
        raise ValueError(f"{who}: need at least 2 groups, got {groups}")
    majority = groups[0] if majority is None else str(majority)
    if majority not in groups:
        raise ValueError(f"{who}: majority {majority!r} is not one of {groups}")
    if not 0 <= majority_share <= 1:
        raise ValueError(f"majority_share must lie in [0, 1], got {majority_share}")
    rest = (1.0 - majority_share) / (len(groups) - 1)
    return groups, majority, {g: majority_share if g == majority else rest for g in groups}


def own_group_check(pairs: pd.DataFrame, dissimilarity: Any, effects: Sequence[float] = (0.0, 0.5),
                    majority: str | None = None, majority_share: float = 0.8, n_votes: int = 9,
                    noise: float = 1.7, seed: int = 0,
                    alpha: float = 0.05) -> tuple[pd.DataFrame, dict[float, pd.DataFrame]]:
    """Exercise :func:`group_independence_test` on simulated panels with a known own-group
    effect (Fig. 4 / Supp. 14 and the chi-square test are otherwise circular on a simulated
    panel: its votes come from truth, and with no planted effect the groups cannot differ
    beyond the truth itself).

    For each ``effect`` a :class:`facebias.annotate.Panel` with that ``own_group_effect``
    (other-group pairs perceived shrunk toward the scale middle) and an unbalanced
    composition (``majority_share`` of annotators from ``majority``, the rest spread evenly
    over the other groups) votes on ``pairs`` (:func:`facebias.annotate.simulate_pair_votes`,
    ``noise``); the test then runs on those votes. An even panel would show no group
    difference even with the effect: every group would meet the same share of own-group
    annotators. ``effect = 0`` is the null: responses depend on the truth only, so a test that
    rejects there is finding group differences of the faces themselves (or is miscalibrated).

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``pair_id``, ``group`` and the test's ``attribute`` and ``label`` columns.
    dissimilarity : array_like
        Each pair's perceived-identity truth in [0, 1]
        (:func:`facebias.annotate.simulate.pair_dissimilarity`).
    effects : sequence of float, default (0.0, 0.5)
        Own-group effects in [0, 1] to simulate.
    majority : str, optional
        The panel's majority group; default the first group in sorted order.
    majority_share : float, default 0.8
        Its share of the panel, in [0, 1].
    n_votes : int, default 9
        Votes per pair.
    noise : float, default 1.7
        Per-vote SD of the identity answers in raw levels.
    seed : int, default 0
        Panel seed (the same panel members for every effect).
    alpha : float, default 0.05
        Family-wise level of the test.

    Returns
    -------
    tests : pandas.DataFrame
        :func:`group_independence_test` rows with ``effect`` and ``majority`` columns.
    matrices : dict of float to pandas.DataFrame
        Effect -> the raw (pairs x ``n_votes``) responses, for the figures.

    Raises
    ------
    ValueError
        For a missing column, fewer than 2 groups, an unknown ``majority``, an effect or
        share outside [0, 1], or as the simulator.
    """
    from facebias.annotate.simulate import Panel, simulate_pair_votes

    require_columns(pairs, ["pair_id", "group"], "pairs")
    groups, majority, shares = _panel_shares(pairs["group"], majority, majority_share, "own_group_check")
    truth = pd.DataFrame({"item_id": pair_item_ids(pairs).to_numpy(),
                          "dissimilarity": np.asarray(dissimilarity, dtype=np.float64),
                          "group": pairs["group"].astype(str).to_numpy()})
    rows, matrices = [], {}
    for effect in effects:
        panel = Panel(own_group_effect=float(effect), group_shares=shares, seed=seed)
        votes = simulate_pair_votes(truth, n_votes, panel, noise=noise).assign(source="simulated")
        matrix = pair_vote_matrix(votes, pairs, n=n_votes)
        matrices[float(effect)] = matrix
        rows.append(group_independence_test(matrix, pairs, alpha=alpha)
                    .assign(effect=float(effect), majority=majority))
    return pd.concat(rows, ignore_index=True), matrices


def own_group_image_check(images: pd.DataFrame, effects: Sequence[float] = (0.0, 0.5),
                          majority: str | None = None, majority_share: float = 0.8,
                          question: str = "gender", truth_col: str = "true_gender", n_votes: int = 9,
                          seed: int = 0, alpha: float = 0.05) -> tuple[pd.DataFrame, dict[float, pd.DataFrame]]:
    """Fig. 3 (c) exercised: gender votes by group from simulated panels with a known
    own-group effect, and a Kruskal-Wallis test of agreement with the intended gender across
    groups.

    For each ``effect`` a :class:`facebias.annotate.Panel` with that ``own_group_effect``
    (another group's face perceived shrunk toward the scale middle) and ``majority_share`` of
    its members from ``majority`` (the rest spread evenly) answers ``question`` on every image
    (:func:`facebias.annotate.simulate_image_votes`, truth ``truth_col`` = P(male)). Each
    response ``r`` (0 = female ... 4 = male) is recoded as agreement with the intended gender
    (``r`` for male images, ``4 - r`` for female), averaged per image, and within each
    intended gender the groups' image means are compared (:func:`scipy.stats.kruskal`;
    Bonferroni over the genders). The image is the unit and the comparison stays within a
    gender: a chi-square test on the pooled group x response table treats one (biased)
    annotator's votes as independent, and across genders the panel's mean lean toward "male"
    alone separates male from female groups (both rejected null panels in trials).
    ``effect = 0`` is the null: a rejection there means the faces' own gender truth differs
    by group. The votes serve this check only.

    Parameters
    ----------
    images : pandas.DataFrame
        ``image_id``, ``group``, ``gender``, ``attribute``, ``level``, ``is_prototype`` and
        ``truth_col`` (in [0, 1]).
    effects : sequence of float, default (0.0, 0.5)
        Own-group effects in [0, 1].
    majority : str, optional
        The panel's majority group; default the first in sorted order.
    majority_share : float, default 0.8
        Its share of the panel, in [0, 1].
    question : str, default "gender"
        A 5-level question of :data:`facebias.annotate.SCALES_000` oriented like ``truth_col``.
    truth_col : str, default "true_gender"
        The truth column (P(male) for gender).
    n_votes : int, default 9
        Votes per image.
    seed : int, default 0
        Panel seed (the same members for every effect).
    alpha : float, default 0.05
        Level of each effect's test.

    Returns
    -------
    tests : pandas.DataFrame
        One row per effect: ``effect, majority, stratum`` (the gender with the smallest
        p), ``h`` (its Kruskal-Wallis statistic), ``p`` (Bonferroni-adjusted), ``reject, n_votes,
        majority_agreement, other_agreement`` (mean agreement level / 4 of the majority's
        images and of the rest).
    histograms : dict of float to pandas.DataFrame
        Effect -> :func:`response_histogram` of the raw responses by group (Fig. 3 c).

    Raises
    ------
    ValueError
        For a missing column, fewer than 2 groups, an unknown ``majority``, a share or
        effect outside [0, 1], or as the simulator.
    """
    from scipy.stats import kruskal

    from facebias.annotate import SCALES_000, Panel, simulate_image_votes

    require_columns(images, ["image_id", "group", "gender", truth_col], "images")
    groups, majority, shares = _panel_shares(images["group"], majority, majority_share, "own_group_image_check")
    truth = pd.DataFrame({"item_id": images["image_id"].astype(str).to_numpy(),
                          "truth": images[truth_col].to_numpy(dtype=np.float64),
                          "group": images["group"].astype(str).to_numpy()})
    info = images.assign(image_id=images["image_id"].astype(str)).set_index("image_id")
    male = info["gender"].astype(str).str.lower().eq("male")
    rows, hists = [], {}
    for effect in effects:
        panel = Panel(own_group_effect=float(effect), group_shares=shares, seed=seed)
        votes = simulate_image_votes(truth, {question: SCALES_000[question]}, n_votes, panel,
                                     {question: "truth"})
        r = votes["value"].to_numpy(dtype=np.int64)
        agree = np.where(votes["item_id"].map(male).to_numpy(dtype=bool), r, 4 - r)
        grp = votes["item_id"].map(info["group"]).astype(str).to_numpy()
        per_image = pd.DataFrame({"item": votes["item_id"].to_numpy(), "group": grp, "agree": agree}).groupby(
            "item", sort=True).agg(group=("group", "first"), agree=("agree", "mean"))
        per_image["gender"] = per_image.index.map(info["gender"].astype(str).str.lower())
        strata = {}
        for sex, part in per_image.groupby("gender", sort=True):
            gs = sorted(pd.unique(part["group"]))
            if len(gs) >= 2:
                strata[sex] = kruskal(*[part.loc[part["group"] == g, "agree"].to_numpy() for g in gs])
        if not strata:
            raise ValueError("own_group_image_check: no gender with at least 2 groups")
        worst = min(strata, key=lambda k: strata[k][1])
        p = min(1.0, float(strata[worst][1]) * len(strata))
        rows.append({"effect": float(effect), "majority": majority, "stratum": worst,
                     "h": float(strata[worst][0]), "p": p, "reject": bool(p < alpha), "n_votes": len(votes),
                     "majority_agreement": float(agree[grp == majority].mean() / 4),
                     "other_agreement": float(agree[grp != majority].mean() / 4)})
        hists[float(effect)] = response_histogram(votes, images.assign(image_id=images["image_id"].astype(str)),
                                                  question, by="group")
    return pd.DataFrame(rows), hists


def same_pair_examples(pairs: pd.DataFrame, matrix: pd.DataFrame, t_hcic: float = 0.3,
                       n_rows: int = 4) -> pd.DataFrame:
    """Supp. Fig. 17: intended-same pairs (self pairs left out) with their mean raw identity
    score (0-4, high = more likely different). Rows: the ``n_rows`` prototypes with the most
    intended-same pairs judged different (HCIC > ``t_hcic``; ties by prototype id); columns:
    each attribute's pair at the extreme level farthest from the prototype (the largest
    change), plus the prototype's pair with the highest HCIC (``column = "judged
    different"``), as in the paper's last column.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``prototype_a, attribute, level, label, hcic`` and the self-pair columns.
    matrix : pandas.DataFrame
        Raw responses (:func:`pair_vote_matrix`, index = ``pairs.index``).
    t_hcic : float, default 0.3
        Judged different iff HCIC > t.
    n_rows : int, default 4
        Prototypes shown.

    Returns
    -------
    pandas.DataFrame
        ``row, column, prototype_a, image_a, image_b, attribute, level, mean_raw, hcic,
        judged_different``, one row per shown pair.

    Raises
    ------
    ValueError
        For a missing column or a ``matrix`` index other than ``pairs.index``.

    Examples
    --------
    >>> p = pd.DataFrame({"prototype_a": "P", "image_a": "P", "image_b": ["P", "x", "y"],
    ...                   "attribute": "pose", "level": [2, 0, 4], "label": 1, "hcic": [0.0, 0.1, 0.6]})
    >>> m = pd.DataFrame([[0] * 9, [0] * 9, [3] * 9])
    >>> same_pair_examples(p, m)[["column", "image_b", "mean_raw"]].values.tolist()
    [['pose', 'x', 0.0], ['judged different', 'y', 3.0]]
    """
    require_columns(pairs, ["prototype_a", "image_a", "image_b", "attribute", "level", "label", "hcic"], "pairs")
    if not matrix.index.equals(pairs.index):
        raise ValueError("matrix: index must equal pairs.index (use pair_vote_matrix)")
    same = pairs[(pairs["label"].to_numpy() == 1) & ~self_pair_mask(pairs)].copy()
    same["mean_raw"] = matrix.loc[same.index].to_numpy(dtype=np.float64).mean(axis=1)
    same["judged_different"] = same["hcic"] > t_hcic
    n_diff = same.groupby("prototype_a")["judged_different"].sum()
    order = sorted(n_diff.index, key=lambda p: (-int(n_diff[p]), str(p)))[:n_rows]
    rows = []
    for r, proto in enumerate(order):
        sub = same[same["prototype_a"] == proto]
        for attr in ATTRIBUTES:
            a = sub[sub["attribute"] == attr]
            if a.empty:
                continue
            centre = pairs.loc[(pairs["attribute"] == attr) & self_pair_mask(pairs), "level"]
            c = int(centre.iloc[0]) if len(centre) else CENTRE_LEVEL.get(attr, 2)
            pick = a.loc[(a["level"] - c).abs().sort_values(ascending=False, kind="stable").index[0]]
            rows.append({"row": r, "column": attr, **pick.to_dict()})
        top = sub.loc[sub["hcic"].sort_values(ascending=False, kind="stable").index[0]]
        rows.append({"row": r, "column": "judged different", **top.to_dict()})
    cols = ["row", "column", "prototype_a", "image_a", "image_b", "attribute", "level", "mean_raw", "hcic",
            "judged_different"]
    return pd.DataFrame(rows, columns=cols).reset_index(drop=True)[cols]


def uncanny_examples(uncanny: pd.Series, threshold: float = 0.8, n: int = 16) -> pd.Series:
    """Supp. Fig. 18: the images the realism filter removes (normalised uncanny score >=
    ``threshold``), most uncanny first, at most ``n``. The paper sorts them into four causes
    by eye (hairstyle, ring artefacts, background separation, other); that step is human
    judgement and is not reproduced.

    Parameters
    ----------
    uncanny : pandas.Series
        Image id -> normalised uncanny score in [0, 1].
    threshold : float, default 0.8
        Removed iff score >= threshold.
    n : int, default 16
        At most this many.

    Returns
    -------
    pandas.Series
        The removed images' scores, descending (ties by image id).

    Examples
    --------
    >>> uncanny_examples(pd.Series({"a": 0.9, "b": 0.5, "c": 0.8, "d": 0.95}), n=2).to_dict()
    {'d': 0.95, 'a': 0.9}
    """
    u = uncanny[uncanny >= threshold]
    order = sorted(u.index, key=lambda i: (-float(u[i]), str(i)))[:n]
    return u.loc[order]


def seed_filter_funnel(hcic_summary: Mapping[str, Any], paper: Sequence[int] = (1000, 300, 100)) -> dict[str, Any]:
    """The seed filter the synth stage ran before max-min (``summary.json``'s ``hcic``
    section, :func:`facebias.generate.build.candidate_seed_filter`), with the funnel's sizes
    beside the paper's.

    Parameters
    ----------
    hcic_summary : mapping
        ``n_candidates``, ``selected_seeds`` and ``seed_filter`` (with ``n_kept_by_filter``,
        ``kept_seeds`` and the counts).
    paper : sequence of int, default (1000, 300, 100)
        The paper's candidates, kept by the filter, selected by max-min.

    Returns
    -------
    dict
        The stage's ``seed_filter`` record plus ``n_selected``, ``keep_ratio`` (kept /
        candidates), ``select_ratio`` (selected / kept), ``paper`` (the same three sizes and
        two ratios) and ``selected_within_kept`` (every selected seed was kept). A record
        made before the stage recorded its realism signal (the simulated panel on every
        backend, the DCGAN's too) gets ``realism_source`` "simulated", ``simulated`` True and
        a ``realism_signal`` that says so.

    Raises
    ------
    ValueError
        Without a ``seed_filter`` record, or for a paper funnel that is not decreasing.

    Examples
    --------
    >>> f = seed_filter_funnel({"n_candidates": 10, "selected_seeds": [4, 1],
    ...                         "seed_filter": {"n_kept_by_filter": 3, "kept_seeds": [1, 4, 7]}})
    >>> f["keep_ratio"], round(f["select_ratio"], 3), f["selected_within_kept"], f["paper"]["keep_ratio"]
    (0.3, 0.667, True, 0.3)
    >>> f["simulated"], f["realism_signal"].split(":")[0]  # an old record: the simulated panel
    (True, 'SIMULATION')
    """
    if "seed_filter" not in hcic_summary:
        raise ValueError("no seed_filter record: the products were made before the synth stage ran the filter")
    n_cand, n_keep, n_sel = (int(x) for x in paper)
    if not n_cand >= n_keep >= n_sel >= 1:
        raise ValueError(f"paper funnel must decrease, got {paper}")
    sf = dict(hcic_summary["seed_filter"])
    if "realism_source" not in sf:  # products of the stage before it measured anything: the simulated panel
        sf.update(realism_source="simulated", simulated=True,
                  realism_signal=("SIMULATION: a simulated panel's uncanny votes, drawn from "
                                  f"{sf.get('realism_truth', 'a realism truth')} (recorded before the stage "
                                  "measured realism on backends without truth)"))
    selected = [int(x) for x in hcic_summary["selected_seeds"]]
    n_c, n_k = int(hcic_summary["n_candidates"]), int(sf["n_kept_by_filter"])
    return {**sf, "n_candidates": n_c, "n_selected": len(selected), "keep_ratio": n_k / n_c,
            "select_ratio": len(selected) / n_k,
            "selected_within_kept": set(selected) <= {int(x) for x in sf["kept_seeds"]},
            "paper": {"n_candidates": n_cand, "n_kept_by_filter": n_keep, "n_selected": n_sel,
                      "keep_ratio": n_keep / n_cand, "select_ratio": n_sel / n_keep}}


# --------------------------------------------------------------------------- real FR models
def embed_images(paths: Sequence[str | Path], backend: str = "sface", cache_dir: str | Path | None = None,
                 progress: bool = False, compute: Any = None, min_size: int = 0,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Embed image files with a built-in model (``facebias.faces.embed.load_embedder``:
    ``"sface"`` or ``"dlib"``; YuNet detection, model-specific alignment).

    Returns ``(vectors (n, d) float32 unit rows, NaN rows for failures to enrol;
    enrolled (n,) bool)``. With ``cache_dir`` the embeddings are memoised on disk
    (``facebias.faces.cache.EmbeddingCache``, keyed by pixels and model); an unreadable
    file is a failure to enrol either way. ``compute`` (:mod:`facebias.compute`; ``None``
    = this process) runs the embedding on Dask workers, with identical results.

    ``min_size`` > 0: an image whose shorter side is below it is first enlarged with
    bicubic interpolation to exactly ``min_size`` on that side (aspect kept), the machine
    annotators' :func:`facebias.annotate.machine.upscale`; images at least that large are
    embedded as read. The cache is keyed by the pixels embedded (the enlarged image).

    Parameters
    ----------
    paths : sequence of str or pathlib.Path
        Image files.
    backend : {"sface", "dlib"}, default "sface"
        The model.
    cache_dir : str or pathlib.Path, optional
        Embedding cache folder.
    progress : bool, default False
        Show a progress bar.
    compute : Any, optional
        :mod:`facebias.compute` setting; None = this process.
    min_size : int, default 0
        Shorter-side size below which images are enlarged (0 = never).

    Returns
    -------
    vectors : numpy.ndarray
        (n, d) float32 unit rows (cosine = dot product), NaN rows for failures to enrol.
    enrolled : numpy.ndarray
        (n,) bool.

    Raises
    ------
    ValueError
        For a negative or non-integer ``min_size`` or an unknown backend.
    """
    from facebias.faces.embed import embed_many, load_embedder

    if int(min_size) != min_size or min_size < 0:
        raise ValueError(f"min_size: expected a non-negative integer, got {min_size!r}")
    embedder = load_embedder(backend)
    paths = [Path(p) for p in paths]
    if cache_dir is None and not min_size:
        res = embed_many(embedder, paths, compute, progress=progress)
        return res.vectors, res.enrolled
    from facebias.faces.images import ImageReadError, read_image

    imgs, ok = [], []
    for p in paths:
        try:
            img = read_image(p)
            if min_size:
                from facebias.annotate.machine import upscale

                img = upscale(img, int(min_size))
            imgs.append(img)
            ok.append(True)
        except ImageReadError:
            ok.append(False)
    if cache_dir is None:
        res = embed_many(embedder, imgs, compute, progress=progress)
    else:
        from facebias.faces.cache import EmbeddingCache

        res = EmbeddingCache(cache_dir).embed(embedder, imgs, progress=progress, compute=compute)
    vectors = np.full((len(paths), embedder.dim), np.nan, np.float32)
    enrolled = np.zeros(len(paths), bool)
    idx = np.flatnonzero(ok)
    vectors[idx], enrolled[idx] = res.vectors, res.enrolled
    return vectors, enrolled


# --------------------------------------------------------------------------- the study (notebooks/hcic.py)
@dataclass(frozen=True)
class HCICConfig:
    """Parameters of the study (``params.yaml`` sections ``hcic``, ``hcic_dcgan``).

    Parameters
    ----------
    models : tuple of str, default ("sface", "dlib")
        Real FR models run on the renders (:data:`MODEL_THRESHOLDS` keys).
    t_hcic : tuple of float, default (0.2, 0.3, 0.4)
        Label thresholds in [0, 1] (same identity iff HCIC <= t).
    t_main : float, default 0.3
        The main label threshold (one of ``t_hcic``).
    t_fixed : float, default 0.6
        The paper's similarity threshold, used for the toy system (in [-1, 1]).
    fmr : float, default 0.01
        Target FMR of the per-group FNMR tables, a fraction in (0, 1).
    n_boot : int, default 200
        Prototype-cluster bootstrap replicates (>= 0).
    n_boot_test : int, default 2000
        Replicates of the group-difference tests (:func:`group_rate_tests`; >= 1; with 4
        groups (6 pairs) more than 240 are needed for any pair to pass Holm at 5 %).
    alpha : float, default 0.05
        Family-wise level of those tests (Holm over the pairs of groups), in (0, 1).
    toy_noise : dict of str to float, default {}
        Group -> planted extra embedding noise of the toy system (>= 0).
    n_cross : int, default 1
        Cross-group partner prototypes per prototype (>= 0).
    seed : int, default 0
        Seed (>= 0).
    min_size : int, default 0
        Faces with a shorter side below it are enlarged (bicubic; 0 = as drawn).
    group_order : tuple of str, default ()
        Figure order of the groups (the groups themselves come from the data).
    own_group_effects : tuple of float, default (0.0, 0.25, 0.5)
        Own-group effects in [0, 1] of the simulated panels of :func:`own_group_check`
        (0 = the null).
    own_group_majority_share : float, default 0.8
        Share of those panels from the first group of the figure order, in [0, 1].
    seed_filter_candidates, seed_filter_keep : int, default 1000, 300
        The paper's human seed filter (candidate seeds and seeds kept, 000: 1,000 and 300),
        beside which the notebook sets the one the synth stage ran
        (:func:`seed_filter_funnel`; the stage's share is ``generate.seed_filter_keep``).
    section : str, default "hcic"
        The ``params.yaml`` section, for messages (not a key of it).

    Raises
    ------
    ValueError
        For a mistyped value or one out of range, or ``t_main`` not in ``t_hcic``.
    """

    models: tuple[str, ...] = ("sface", "dlib")
    t_hcic: tuple[float, ...] = (0.2, 0.3, 0.4)
    t_main: float = 0.3
    t_fixed: float = 0.6
    fmr: float = 0.01
    n_boot: int = 200
    n_boot_test: int = 2000
    alpha: float = 0.05
    toy_noise: dict[str, float] = field(default_factory=dict)
    n_cross: int = 1
    seed: int = 0
    min_size: int = 0
    group_order: tuple[str, ...] = ()
    own_group_effects: tuple[float, ...] = (0.0, 0.25, 0.5)
    own_group_majority_share: float = 0.8
    seed_filter_candidates: int = 1000
    seed_filter_keep: int = 300
    section: str = field(default="hcic", compare=False, repr=False)

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        k = self.section
        put("models", param_list(self.models, f"{k}.models",
                                 partial(param_str, choices=tuple(MODEL_THRESHOLDS)), min_len=0))
        unit = partial(param_float, low=0, high=1)
        put("t_hcic", param_list(self.t_hcic, f"{k}.t_hcic", unit))
        put("t_main", unit(self.t_main, f"{k}.t_main"))
        if self.t_main not in self.t_hcic:
            raise ValueError(f"{k}.t_main must be one of t_hcic {list(self.t_hcic)}, got {self.t_main!r}")
        put("t_fixed", param_float(self.t_fixed, f"{k}.t_fixed", -1, 1))
        put("fmr", param_float(self.fmr, f"{k}.fmr", 0, 1, open_low=True, open_high=True))
        put("n_boot", param_int(self.n_boot, f"{k}.n_boot", minimum=0))
        put("n_boot_test", param_int(self.n_boot_test, f"{k}.n_boot_test", minimum=1))
        put("alpha", param_float(self.alpha, f"{k}.alpha", 0, 1, open_low=True, open_high=True))
        put("n_cross", param_int(self.n_cross, f"{k}.n_cross", minimum=0))
        put("seed", param_int(self.seed, f"{k}.seed", minimum=0))
        put("min_size", param_int(self.min_size, f"{k}.min_size", minimum=0))
        put("group_order", param_list(self.group_order, f"{k}.group_order", param_str, min_len=0))
        put("own_group_effects", param_list(self.own_group_effects, f"{k}.own_group_effects", unit, min_len=0))
        put("own_group_majority_share", unit(self.own_group_majority_share, f"{k}.own_group_majority_share"))
        put("seed_filter_candidates", param_int(self.seed_filter_candidates, f"{k}.seed_filter_candidates",
                                                minimum=1))
        put("seed_filter_keep", param_int(self.seed_filter_keep, f"{k}.seed_filter_keep", minimum=1))
        if self.seed_filter_keep > self.seed_filter_candidates:
            raise ValueError(f"{k}.seed_filter_keep must be <= seed_filter_candidates, got "
                             f"{self.seed_filter_keep} > {self.seed_filter_candidates}")
        if not isinstance(self.toy_noise, Mapping):
            raise ValueError(f"{k}.toy_noise must be a mapping group -> noise, got {self.toy_noise!r}")
        put("toy_noise", {param_str(g, f"{k}.toy_noise key"): param_float(v, f"{k}.toy_noise.{g}", low=0)
                          for g, v in self.toy_noise.items()})

    @classmethod
    def from_params(cls, params: Mapping[str, Any], section: str = "hcic") -> HCICConfig:
        """Build from a ``params.yaml`` section: unknown keys and mistyped values raise.

        Parameters
        ----------
        params : mapping
            The section's keys and values.
        section : str, default "hcic"
            Its name (``"hcic"`` or ``"hcic_dcgan"``), for messages.

        Returns
        -------
        HCICConfig
            The validated config.

        Raises
        ------
        ValueError
            For an unknown key (``section`` included) or an invalid value.

        Examples
        --------
        >>> HCICConfig.from_params({"t_hcic": [0.3], "t_main": 0.3}).t_hcic
        (0.3,)
        >>> HCICConfig.from_params({"t_main": 0.5})
        Traceback (most recent call last):
        ...
        ValueError: hcic.t_main must be one of t_hcic [0.2, 0.3, 0.4], got 0.5
        """
        if "section" in params:  # a field, but not a key of the section
            raise ValueError(f"{section}: unknown key(s) ['section']")
        return config_from_params(cls, {**params, "section": section}, section)


#: How the own-group checks (:func:`own_group_check`, :func:`own_group_image_check`) are
#: labelled in the metrics: their votes come from simulated panels with a planted effect,
#: never from people, on any backend (on the DCGAN, a truth computed from its latents).
SIMULATION_LABEL = {"simulated": True,
                    "evidence": "SIMULATION: simulated panels with a planted own-group effect (a check of the "
                                "test's power and calibration, not a finding about annotators or faces)"}

#: What the groups are, by the ``groups`` entry of the synth summary (``group_kind``).
GROUP_DESCRIPTIONS = {
    "race_gender": "race x gender (000's six groups)",
    "tone_gender": ("lighter / darker side of the synth stage's tone axis (a hyperplane fitted to a machine "
                    "labeller; summary.json config tone_axis; on the DCGAN face darkness, -ITA, which fails the "
                    "skin gate: not skin tone) x gender (p_male): not race, no race labeller ships offline"),
}


def annotator_description(votes: pd.DataFrame | None) -> str:
    """Who cast a votes table (store schema), from its ``source`` and ``annotator`` columns.

    Parameters
    ----------
    votes : pandas.DataFrame or None
        Votes with ``source`` and ``annotator`` columns.

    Returns
    -------
    str
        E.g. ``"simulated panel N=9"`` (N = distinct annotators); ``"none"`` for no table.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> annotator_description(pd.DataFrame({"source": "simulated",
    ...                                     "annotator": ["sim001", "sim002", "sim001"]}))
    'simulated panel N=2'
    """
    if votes is None:
        return "none"
    require_columns(votes, ["source", "annotator"], "votes")
    kinds = {"simulated": "simulated panel", "human": "human annotators", "imported": "imported votes"}
    src = ", ".join(kinds.get(s, s) for s in sorted(votes["source"].astype(str).unique()))
    return f"{src} N={votes['annotator'].nunique()}"


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
                t_hcic: Sequence[float], t_main: float) -> PairLabels:
    """HCIC labels from pair votes (one label set per ``t_hcic``, main ``t_main``) or the
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
        Single-image votes on :data:`facebias.annotate.SCALES_000`; None = keep every pair.
    t_hcic : sequence of float
        HCIC label thresholds in [0, 1].
    t_main : float
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
    from facebias.annotate import SCALES_000, scores_from_votes

    out = pairs.copy()
    skipped: dict[str, str] = {}
    if pair_votes is not None:
        hl, matrix = hcic_labels(out, pair_votes, t_hcic)
        out = out.join(hl)
        label_sets, main, kind = {f"{t:g}": f"label_{t:g}" for t in t_hcic}, f"{t_main:g}", "hcic"
    else:
        matrix = None
        label_sets, main, kind = {"intended": "label"}, "intended", "intended"
        skipped["hcic"] = "no pair votes: labels are the intended ones (same seed = same identity)"
    means = filt = None
    if image_votes is not None:
        image_scores = scores_from_votes(image_votes, SCALES_000, agg="mean")  # plain mean / 4, in [0, 1]
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


def _fnmr_json(tab: pd.DataFrame) -> dict[str, Any]:
    return {r["group"]: {"fnmr": r["fnmr_group"], "lo": r.get("fnmr_group_lo"), "hi": r.get("fnmr_group_hi"),
                         "threshold": r["threshold_group"], "n_genuine": int(r["n_genuine"]),
                         "n_impostor": int(r["n_impostor"]), "resolved": bool(r.get("resolved", True))}
            for _, r in tab.iterrows()}


def _fte_json(table: pd.DataFrame) -> dict[str, Any]:
    return {str(g): {"n": int(r["n"]), "n_fte": int(r["n_fte"]), "rate": float(r["fte_rate"])}
            for g, r in table.iterrows()}


def summarise(*, backend: str, provenance: str, config: HCICConfig, labels: PairLabels, pair_annotators: str,
              label_description: str, groups: Sequence[str], group_kind: str, group_description: str,
              n_images: int, n_cross: int, fixed: Mapping[str, float], upscale_description: str,
              fte: Mapping[str, pd.DataFrame], ordering: Mapping[str, Any],
              fnmr_tables: Mapping[tuple[str, str], pd.DataFrame], intended_tables: Mapping[str, pd.DataFrame],
              cell_tables: Mapping[str, pd.DataFrame], kept: pd.DataFrame, delta: Mapping[str, pd.DataFrame],
              consistency: tuple[pd.Series, pd.DataFrame] | None = None,
              independence: pd.DataFrame | None = None,
              self_pairs: Mapping[str, Any] | None = None,
              own_group: Mapping[str, Any] | None = None,
              seed_filter: Mapping[str, Any] | None = None,
              own_group_image: Mapping[str, Any] | None = None,
              group_tests: Mapping[str, GroupTests] | None = None) -> dict[str, Any]:
    """What ``reports/metrics/<name>.json`` holds (schema ``SCHEMAS["hcic"]`` of
    :mod:`facebias.schema`).

    Parameters
    ----------
    backend : str
        The generator backend.
    provenance : str
        Provenance line.
    config : HCICConfig
        The study's parameters.
    labels : PairLabels
        :func:`pair_labels` output.
    pair_annotators : str
        :func:`annotator_description` of the pair votes.
    label_description : str
        What the labels are.
    groups : sequence of str
        The groups, in figure order.
    group_kind, group_description : str
        What the groups are (:data:`GROUP_DESCRIPTIONS`).
    n_images, n_cross : int
        Numbers of images and cross-group pairs.
    fixed : mapping of str to float
        System -> fixed similarity threshold.
    upscale_description : str
        How small faces were enlarged.
    fte : mapping
        Model -> failure-to-enrol table by group (row ``all`` included).
    ordering : mapping
        System -> :func:`relation_medians`.
    fnmr_tables : mapping
        (system, label set) -> :func:`fnmr_at_fmr_by_group`.
    intended_tables : mapping
        System -> the same on the intended labels.
    cell_tables : mapping
        System -> :func:`fnmr_at_fmr_by_cell`.
    kept : pandas.DataFrame
        :func:`kept_pair_scores` (``score_<system>`` columns).
    delta : mapping
        System -> :func:`delta_attr`.
    consistency : tuple, optional
        :func:`annotator_consistency` (with pair votes).
    independence : pandas.DataFrame, optional
        :func:`group_independence_test` (with pair votes).
    self_pairs : mapping, optional
        :func:`self_pair_summary` (the self pairs, left out of every error rate).
    own_group : mapping, optional
        Summary of :func:`own_group_check` (cells rejected per planted effect).
    seed_filter : mapping, optional
        :func:`seed_filter_funnel` (the synth stage's seed filter before max-min).
    own_group_image : mapping, optional
        Summary of :func:`own_group_image_check` (Fig. 3 c with a planted own-group effect).
    group_tests : mapping, optional
        System -> :func:`group_rate_tests` on the main labels: written as
        ``group_differences`` (per group rates with counts and ``resolved`` flags, every
        pair of groups tested).

    Returns
    -------
    dict
        The metrics; rates are fractions.
    """
    systems = list(ordering)
    main_col = labels.label_sets[labels.main]
    delta_ext = {s: d[d["level"].isin([0, 4])].set_index(["attribute", "level"])["delta"].to_dict()
                 for s, d in delta.items()}
    head: dict[str, Any] = {
        "backend": backend,
        "source": (f"synthetic ({backend} generator, "
                   f"{'annotators: ' + pair_annotators if labels.kind == 'hcic' else 'no annotators'})"),
        "provenance": provenance,
        "labels": labels.kind,  # intended | hcic: the ground truth of every error rate below
        "label_description": label_description,
        "groups": list(groups), "group_kind": group_kind, "group_description": group_description,
        "n_images": int(n_images), "n_pairs": len(labels.pairs), "n_cross_group_pairs": int(n_cross),
        "fmr_target": config.fmr, "n_boot": config.n_boot, "bootstrap_unit": "prototype (anchor) clusters",
        "fixed_thresholds": dict(fixed),
        "upscale": {"min_size": config.min_size, "interpolation": "bicubic (cv2.INTER_CUBIC)",
                    "description": upscale_description},
        "failure_to_enrol": {m: int(f.loc["all", "n_fte"]) for m, f in fte.items()},
        "failure_to_enrol_by_group": {m: _fte_json(f) for m, f in fte.items()},
        "similarity_by_relation": dict(ordering),
        "fnmr_at_fmr": {s: {key: _fnmr_json(fnmr_tables[(s, key)]) for key in labels.label_sets} for s in systems},
        "fnmr_at_fmr_intended_labels": {s: _fnmr_json(t) for s, t in intended_tables.items()},
        "fnmr_at_fmr_by_attribute": {s: {a: _fnmr_json(t[t["attribute"] == a]) for a in ATTRIBUTES}
                                     for s, t in cell_tables.items()},
        "fixed_threshold_rates": {s: fixed_threshold_points(kept, f"score_{s}", main_col, t=fixed[s],
                                                            by=("group",), missing="drop")
                                  .set_index("group")[["fmr", "fnmr"]].to_dict(orient="index") for s in systems},
        "delta_attr_extension": {s: {f"{a}_{lv}": v for (a, lv), v in d.items()} for s, d in delta_ext.items()},
        "skipped": dict(labels.skipped),
    }
    if labels.kind == "hcic":
        head["hcic_label_counts"] = labels.label_counts
    if labels.realism_filter is not None:
        head["realism_filter"] = labels.realism_filter
    if consistency is not None:
        sd, table = consistency
        head["per_pair_sd"] = {"median": float(sd.median()),
                               "by_attribute": table.set_index("attribute")["median"].to_dict()}
    if self_pairs is not None:
        head["self_pairs"] = dict(self_pairs)
    if own_group is not None:
        head["own_group_check"] = {**dict(own_group), **SIMULATION_LABEL}
    if seed_filter is not None:
        head["seed_filter"] = dict(seed_filter)
    if own_group_image is not None:
        head["own_group_image_check"] = {**dict(own_group_image), **SIMULATION_LABEL}
    if group_tests is not None:
        head["group_differences"] = {sys_: {"labels": labels.main, **t.to_dict()} for sys_, t in group_tests.items()}
    if independence is not None:
        head["group_independence"] = {"n_tests": len(independence),
                                      "n_rejected_bonferroni": int(independence["reject"].sum())
                                      if len(independence) else 0}
    return head

