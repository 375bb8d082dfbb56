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
  renders; measured skin tone x gender on the DCGAN): nothing here names a group.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.faces.embed import PUBLISHED_THRESHOLDS
from facebias.metrics import (
    DetCurve,
    check_labels,
    check_scores,
    det_curve,
    fmr_at,
    fnmr_at,
    group_report,
    require_columns,
)

__all__ = [
    "RELATIONS",
    "ATTRIBUTES",
    "BIN_EDGES",
    "MODEL_THRESHOLDS",
    "cosine",
    "pair_scores",
    "centre_levels",
    "group_order",
    "slots_from_images",
    "cross_group_pairs",
    "relation",
    "annotated_bins",
    "human_levels",
    "similarity_summary",
    "pair_item_ids",
    "pair_hcic",
    "label_pairs",
    "uncanny_pair_keep",
    "error_curves",
    "fixed_threshold_points",
    "fnmr_by_threshold",
    "fnmr_at_fmr_by_group",
    "fnmr_at_fmr_by_cell",
    "relation_medians",
    "hcic_labels",
    "label_counts",
    "delta_attr",
    "pair_vote_matrix",
    "annotator_consistency",
    "response_histogram",
    "group_independence_test",
    "simulate_embeddings",
    "embed_images",
]

RELATIONS = ("same_prototype", "same_group", "different_group")
ATTRIBUTES = ("pose", "light", "age", "expression")
#: Human-annotated bins of a mean raw 0-4 score (Supp. E): [0,.8) [.8,1.6) [1.6,2.4) [2.4,3.2) [3.2,4].
BIN_EDGES = (0.0, 0.8, 1.6, 2.4, 3.2, 4.0)
#: Published verification thresholds as cosine similarities (match iff s > t):
#: :data:`facebias.faces.embed.PUBLISHED_THRESHOLDS` (SFace 0.363, dlib 0.82 = distance 0.6).
MODEL_THRESHOLDS = PUBLISHED_THRESHOLDS
#: Centre (prototype) slot of each sequence.
CENTRE_LEVEL = {"pose": 2, "light": 0, "age": 2, "expression": 2}
PAIR_COLUMNS = ("pair_id", "image_a", "image_b", "prototype_a", "prototype_b", "seed_a", "seed_b",
                "group", "attribute", "level", "label", "is_self_pair", "b_is_prototype")
IMAGE_COLUMNS = ("image_id", "seed", "group", "prototype_id", "attribute", "level", "is_prototype")


# --------------------------------------------------------------------------- similarities
def cosine(a: Any, b: Any) -> np.ndarray:
    """Row-wise cosine similarity of two (n, d) arrays (or two (d,) vectors), clipped to
    [-1, 1]. Rows with a NaN or a zero norm give NaN."""
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
    An image missing from ``vectors`` is an error. ``result.attrs`` holds the counts
    ``n_pairs``, ``n_missing`` (NaN scores) and ``n_images_failed`` (distinct images of
    the pairs with a NaN vector).
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
    learned light direction gives light 2."""
    require_columns(images, ["attribute", "level"], "images")
    out = dict(CENTRE_LEVEL)
    for attr in ATTRIBUTES:
        have = set(images.loc[images["attribute"] == attr, "level"].astype(int))
        free = [lv for lv in range(5) if lv not in have]
        if len(free) == 1 and have <= set(range(5)):
            out[attr] = free[0]
    return out


def group_order(images: pd.DataFrame, prefer: Sequence[str] = ()) -> list[str]:
    """The groups of the ``group`` column: those in ``prefer`` first (in that order; a
    preferred group absent from the data is left out), then the rest in order of first
    appearance. Groups come from the data; ``prefer`` only orders them."""
    require_columns(images, ["group"], "images")
    seen = [str(g) for g in pd.unique(images["group"].astype(str))]
    return [g for g in prefer if g in seen] + [g for g in seen if g not in set(prefer)]


def slots_from_images(images: pd.DataFrame, centre: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The 20 sequence slots per prototype from the images table: ``prototype_id,
    attribute, level, image_id, is_self``; the centre slot of each sequence
    (:func:`centre_levels` unless ``centre`` is given) is the prototype image."""
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

    Columns: those of ``pairs.parquet`` (``group`` = prototype A's group, ``label`` 0)
    plus ``group_a, group_b, relation`` (= ``different_group``); ``pair_id`` from
    ``start_id``.
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
    """``same_prototype`` (same seed and group), ``same_group`` (other seed, same group) or
    ``different_group``. Groups come from ``group_a``/``group_b`` when present; where they
    are missing the pair's ``group`` applies to both images (as in ``pairs.parquet``)."""
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
def annotated_bins(mean_raw: Any) -> np.ndarray:
    """Human-annotated level 0..4 of a mean raw 0-4 score, edges :data:`BIN_EDGES`
    (left-closed, 4 itself in the top bin). NaN or values outside [0, 4] raise."""
    x = np.asarray(mean_raw, dtype=np.float64)
    bad = ~np.isfinite(x) | (x < 0) | (x > 4)
    if bad.any():
        raise ValueError(f"mean_raw: values must be finite and within [0, 4], got {x[bad].ravel()[0]!r}")
    return np.digitize(x, BIN_EDGES[1:-1], right=False).astype(np.int64)


def human_levels(pairs: pd.DataFrame, image_means: Mapping[str, pd.Series],
                 attributes: Sequence[str] = ("age", "expression")) -> pd.Series:
    """Level of each pair for box plots: the intended level, replaced for ``attributes``
    by the annotated bin of image B's mean raw score (``image_means[attribute]``:
    Series image_id -> mean of the raw 0-4 responses)."""
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
    box plots of Fig. 5 and Supp. 10-12). NaN scores (failures to enrol) are left out and
    counted in ``n_missing``; columns ``*by, median, q15, q85, n, n_missing``."""
    require_columns(df, [score_col, *by], "df")
    s = df[score_col].astype(float)
    g = s.groupby([df[c] for c in by], observed=True, sort=True)
    lo, hi = (f"q{round(100 * x)}" for x in q)
    out = pd.DataFrame({"median": g.median(), lo: g.quantile(q[0]), hi: g.quantile(q[1]),
                        "n": g.count(), "n_missing": g.size() - g.count()})
    return out.reset_index()


# --------------------------------------------------------------------------- HCIC labels
def pair_item_ids(pairs: pd.DataFrame) -> pd.Series:
    """Annotation item id of each pair (:func:`facebias.annotate.pair_item_ids`)."""
    from facebias.annotate import pair_item_ids as ids

    require_columns(pairs, ["pair_id"], "pairs")
    return pd.Series(ids(pairs["pair_id"]), index=pairs.index, name="item_id")


def pair_vote_matrix(pair_votes: pd.DataFrame, pairs: pd.DataFrame, n: int = 9,
                     question: str = "identity") -> pd.DataFrame:
    """Raw identity responses (0-4) as a (pairs x n) float frame indexed like ``pairs``
    (columns ``r0..r{n-1}``, NaN where a pair has fewer votes); uses
    ``facebias.annotate.votes_matrix`` on a votes frame (``store.votes()`` columns)."""
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
    """HCIC of each row of a (pairs x 9) raw response matrix (``facebias.annotate.hcic``)."""
    from facebias.annotate import hcic

    return np.asarray(hcic(np.asarray(matrix)), dtype=np.float64)


def label_pairs(pairs: pd.DataFrame, hcic_values: Any, t_hcic: float) -> pd.Series:
    """HCIC ground truth: 1 (same identity) iff ``hcic <= t_hcic``, else 0.

    ``hcic_values``: an array aligned with ``pairs`` rows or a Series indexed by pair_id.
    Values must lie in [0, 1] (HCIC is a dissimilarity)."""
    if not 0 <= t_hcic <= 1:
        raise ValueError(f"t_hcic: must lie in [0, 1], got {t_hcic!r}")
    if isinstance(hcic_values, pd.Series):
        require_columns(pairs, ["pair_id"], "pairs")
        h = hcic_values.reindex(pairs["pair_id"].to_numpy()).to_numpy(dtype=np.float64)
    else:
        h = np.asarray(hcic_values, dtype=np.float64)
    if h.shape != (len(pairs),):
        raise ValueError(f"hcic_values: expected {len(pairs)} values, got shape {h.shape}")
    bad = ~np.isfinite(h) | (h < 0) | (h > 1)
    if bad.any():
        raise ValueError(f"hcic_values: {int(bad.sum())} value(s) missing or outside [0, 1] "
                         f"(first in row {pairs.index[np.flatnonzero(bad)[0]]!r})")
    return pd.Series((h <= t_hcic).astype(np.int64), index=pairs.index, name=f"label_hcic_{t_hcic:g}")


def hcic_labels(pairs: pd.DataFrame, pair_votes: pd.DataFrame, t_hcic: Sequence[float] = (0.3,),
                n: int = 9) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HCIC ground truth from identity votes in the store's schema
    (:meth:`facebias.annotate.AnnotationStore.votes` columns; human or simulated).

    Returns ``(labels, matrix)``: ``labels`` indexed like ``pairs`` with ``hcic`` and one
    ``label_{t:g}`` column per threshold (1 = same iff HCIC <= t); ``matrix`` the raw
    (pairs x ``n``) responses (:func:`pair_vote_matrix`). A pair without votes raises."""
    matrix = pair_vote_matrix(pair_votes, pairs, n=n)
    h = pair_hcic(matrix)
    out = pd.DataFrame({"hcic": h}, index=pairs.index)
    for t in t_hcic:
        out[f"label_{t:g}"] = label_pairs(pairs, h, t).to_numpy()
    return out, matrix


def label_counts(pairs: pd.DataFrame, label_col: str, keep: Any = None,
                 intended_col: str = "label") -> dict[str, int]:
    """Counts of one label column beside the intended labels: positives / negatives over
    all pairs and over the pairs kept (``keep``: bool per row; all when None), and how many
    intended-same pairs it calls different and intended-different pairs it calls same."""
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
    """Realism filter (B1.8): keep a pair iff **both** images' normalised uncanny score
    (``uncanny``: Series image_id -> score in [0, 1], i.e. mean raw / 4) is below
    ``threshold`` (``facebias.annotate.uncanny_keep``). An image without a score raises."""
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
    ``missing="drop"`` leaves out NaN scores (failures to enrol); by default they raise.
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
    """(FMR, FNMR) at one similarity threshold ``t`` per cell (Fig. 6's triangles):
    columns ``*by, threshold, fmr, fnmr, n_genuine, n_impostor`` (NaN rate where a cell
    has no pairs of that kind)."""
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
    """FNMR per cell of ``by`` at each similarity threshold (rows = cells, columns =
    thresholds); with ``match iff s > t`` it can only fall as the threshold falls."""
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
    ``fnmr_global`` uses one threshold from all impostors pooled. Groups without genuine
    or without impostor pairs are left out and listed in ``result.attrs["skipped"]``.
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
            "fnmr_global_lo", "fnmr_global_hi"]
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

    Columns ``*by`` then those of :func:`fnmr_at_fmr_by_group` less ``group``; cells
    without genuine or without impostor pairs are left out and listed (as tuples) in
    ``result.attrs["skipped"]``.
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


def relation_medians(pairs: pd.DataFrame, score_col: str, relation_col: str = "relation") -> dict[str, Any]:
    """Median score per relation (Fig. 5's ordering claim): ``{relation: median, ...,
    "ordered": same_prototype > same_group > different_group}``; NaN scores (failures to
    enrol) are left out; a relation without pairs is NaN and makes ``ordered`` False."""
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

    Uses same-prototype pairs; ``s(P, P)`` is the prototype's self-pair score. Columns
    ``*by, delta, se, n`` (se = SD / sqrt(n) over prototypes), ``estimator``.
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
    ``by`` (Supp. Fig. 13). ``matrix``: from :func:`pair_vote_matrix` (index = pairs').
    Returns ``(per_pair_sd, summary)``."""
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
    level. Shares per row when ``normalise``."""
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
    independent; read p-values as approximate. Columns ``*by, chi2, dof, p, p_bonferroni,
    reject, n_responses``."""
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


# --------------------------------------------------------------------------- toy FR system
#: Edit strength per unit of |level - centre| in the toy system (pose strongest).
TOY_EDIT_STRENGTH = {"pose": 0.6, "expression": 0.36, "age": 0.27, "light": 0.36}


def _rng(seed: int, *keys: Any) -> np.random.Generator:
    codes = [zlib.crc32(str(k).encode()) for k in keys]
    return np.random.default_rng([int(seed), *codes])


def simulate_embeddings(images: pd.DataFrame, dim: int = 64, group_noise: Mapping[str, float] | None = None,
                        edit_scale: float = 1.0, seed: int = 0, *, identity: float = 1.0,
                        group_offset: float = 0.6, prototype_jitter: float = 0.3,
                        noise: float = 0.5, centre: Mapping[str, int] | None = None) -> pd.DataFrame:
    """A toy face-recognition system for planted-effect checks (B5.11): unit vectors,
    DataFrame indexed by image_id (columns ``e0..``).

    Embedding of an image of prototype (seed s, group g) at attribute level l:
    ``identity * u_s + group_offset * v_g + prototype_jitter * w_(s,g)
    + edit_scale * TOY_EDIT_STRENGTH[attr] * |l - centre| * r_image + sigma_g * n_image``,
    then L2-normalised. ``u, v, w, r, n`` are N(0, I/dim) draws (norm ~1) keyed by their
    entity's id and ``seed`` (independent of row order); ``centre``: each sequence's centre
    level (default :func:`centre_levels` of ``images``). A light sequence centred at level
    0 is the renderer's four unordered lights, each one step from the original; any other
    sequence (the DCGAN's learned light direction too) is ``|l - centre|`` steps.
    ``sigma_g = noise + group_noise.get(g, 0)`` plants worse recognition of some groups
    (groups not in the data are ignored). Same image id -> same vector, so self pairs
    score 1.
    """
    require_columns(images, ["image_id", "seed", "group", "attribute", "level"], "images")
    if dim < 2:
        raise ValueError(f"dim: must be >= 2, got {dim}")
    group_noise = dict(group_noise or {})
    centre = centre_levels(images) if centre is None else {**CENTRE_LEVEL, **centre}
    scale = 1.0 / np.sqrt(dim)
    cache: dict[tuple, np.ndarray] = {}

    def draw(*keys: Any) -> np.ndarray:
        if keys not in cache:
            cache[keys] = _rng(seed, *keys).standard_normal(dim) * scale
        return cache[keys]

    out = np.empty((len(images), dim))
    for i, (iid, s, g, attr, level) in enumerate(zip(images["image_id"], images["seed"], images["group"],
                                                      images["attribute"], images["level"], strict=True)):
        e = identity * draw("seed", s) + group_offset * draw("group", g) + prototype_jitter * draw("proto", s, g)
        edit, eps = _rng(seed, "image", iid).standard_normal((2, dim)) * scale
        if attr in TOY_EDIT_STRENGTH:
            c = centre[attr]
            steps = (level != 0) if (attr == "light" and c == 0) else abs(int(level) - c)
            e = e + edit_scale * TOY_EDIT_STRENGTH[attr] * steps * edit
        e = e + (noise + float(group_noise.get(g, 0.0))) * eps
        out[i] = e / np.linalg.norm(e)
    return pd.DataFrame(out.astype(np.float32), index=pd.Index(images["image_id"].astype(str), name="image_id"),
                        columns=[f"e{j}" for j in range(dim)])


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
