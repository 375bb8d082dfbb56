"""Scoring the pairs and the attribute effects on model similarity (Sec. 4; ``docs/specs/hcic.md``
B1.9, B1.11; Fig. 5 and Supp. Figs. 10-12).

Cosine similarities of embeddings (higher = more alike), the built-in face recognition models
that embed the renders (the paper's SFNet / ResNet models are not available), the box-plot
summaries of Fig. 5 (median and 15-85 % range per relation, attribute, level and group, with
age and expression at their human-annotated level), the ordering of the relations' medians,
and the attribute-effect estimator the paper promises but does not give (B1.11 [REC], an
extension).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.labels import annotated_bins
from facebias.faces.embed import PUBLISHED_THRESHOLDS
from facebias.studies.hcic.pairs import RELATIONS
from facebias.validate import require_columns

__all__ = [
    "MODEL_THRESHOLDS",
    "fixed_thresholds",
    "cosine",
    "pair_scores",
    "embed_images",
    "human_levels",
    "similarity_summary",
    "relation_medians",
    "delta_attr",
]


#: Published verification thresholds as cosine similarities (match iff s > t):
#: :data:`facebias.faces.embed.PUBLISHED_THRESHOLDS` (SFace 0.363, dlib 0.82 = distance 0.6).
MODEL_THRESHOLDS = PUBLISHED_THRESHOLDS


def fixed_thresholds(specs: Mapping[str, str], pairs: pd.DataFrame, fmr: float,
                     label_col: str = "label") -> tuple[dict[str, float], dict[str, str]]:
    """Each model's fixed threshold (Fig. 6's triangles) and where it comes from.

    A built-in model, or a user model with ``threshold=`` in its spec, keeps that one; a user
    model without it gets the threshold at ``fmr`` on the table's impostor pairs
    (:func:`facebias.metrics.threshold_at_fmr`; match iff score > t). That one is fitted on
    the pairs it is then applied to, so its FMR is at ``fmr`` by construction: the source
    says so.

    Parameters
    ----------
    specs : mapping of str to str
        System name -> model spec (:mod:`facebias.faces.specs`).
    pairs : pandas.DataFrame
        ``score_<name>`` similarity columns and ``label_col`` (1 = same identity, 0 = not).
    fmr : float
        Target FMR, a fraction in (0, 1), for the models without a threshold.
    label_col : str, default "label"
        The label column.

    Returns
    -------
    thresholds : dict of str to float
        Name -> threshold (cosine similarity).
    sources : dict of str to str
        Name -> one line saying where the threshold comes from.

    Raises
    ------
    ValueError
        For a bad spec, or a user model without ``threshold=`` and too few impostor scores
        for ``fmr`` (:func:`facebias.metrics.enough_impostors`).

    Examples
    --------
    40 impostors scoring 0, 1/40, ..., 39/40: at FMR 0.25 the 10 above t = 29/40 match.

    >>> pairs = pd.DataFrame({"label": [1] + [0] * 40, "score_me": [0.99] + [i / 40 for i in range(40)]})
    >>> t, why = fixed_thresholds({"sface": "sface", "me": "onnx:me.onnx"}, pairs, 0.25)
    >>> t
    {'sface': 0.363, 'me': 0.725}
    >>> why["me"]
    'set at FMR 0.25 on the 40 intended impostor pairs scored (in-sample: its FMR there is the target by construction)'
    """
    from facebias.faces.specs import parse_model_spec
    from facebias.metrics import enough_impostors, threshold_at_fmr

    thresholds, sources = {}, {}
    for name, spec in specs.items():
        s = parse_model_spec(spec)
        if s.threshold is not None:
            thresholds[name] = float(s.threshold)
            sources[name] = "published" if s.builtin else "given in the model spec (threshold=)"
            continue
        scores = pairs[f"score_{name}"].to_numpy(np.float64)
        imp = scores[(pairs[label_col].to_numpy() == 0) & np.isfinite(scores)]
        if not enough_impostors(len(imp), fmr):
            raise ValueError(f"model {spec!r}: no threshold= in its spec and {len(imp)} impostor scores are too "
                             f"few to set one at FMR {fmr:g}; add ?threshold=T (a cosine similarity)")
        thresholds[name] = float(threshold_at_fmr(imp, fmr))
        sources[name] = (f"set at FMR {fmr:g} on the {len(imp)} intended impostor pairs scored "
                         "(in-sample: its FMR there is the target by construction)")
    return thresholds, sources


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
