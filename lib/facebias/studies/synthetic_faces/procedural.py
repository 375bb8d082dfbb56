"""Paper 004 and 000, the procedural generator (known truth): the checks notebooks/synthetic_faces.py reports.

* :func:`normal_cosines`: entanglement of the fitted unit normals (``docs/specs/transects.md``
  section A1.7: why the normals are orthogonalised);
* :func:`transect_range`: a true attribute's range along a transect stepped on the raw normal
  vs the orthogonalised direction (section A1.7, Fig. 5; acceptance check A5.4b);
* :func:`transect_check`: mean true value per intended level, the transects' manipulation
  check (section A1.8; A5.3);
* :func:`pair_counts`: paper 000's image and pair counts (``docs/specs/hcic.md`` section B1.5;
  acceptance checks B5.1-2);
* :func:`acceptance_metrics`: the metric part of
  :func:`facebias.generate.checks.acceptance_report` (render speed left out,
  :data:`NOT_METRICS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["NOT_METRICS", "normal_cosines", "transect_range", "transect_check", "pair_counts", "acceptance_metrics"]

#: Keys of :func:`facebias.generate.checks.acceptance_report` that are not metrics: render
#: speed is a benchmark (``make bench``) and would change the metrics file on every run.
NOT_METRICS = ("render_ids_per_s",)


# --------------------------------------------------------------------------- procedural (known truth)
def normal_cosines(normals: Any, names: Sequence[str]) -> pd.DataFrame:
    """Cosines between unit attribute normals: ``normals @ normals.T`` labelled by ``names``
    on both axes. ``normals``: (K, D), unit rows (within 1e-6); a row of another length
    raises ``ValueError``, as do ``names`` of another length than K.

    Parameters
    ----------
    normals : array_like
        (K, D) unit attribute normals.
    names : sequence of str
        K attribute names, in the order of the rows.

    Returns
    -------
    pandas.DataFrame
        (K, K) cosines in [-1, 1] (1 on the diagonal; 0 = orthogonal normals).

    Raises
    ------
    ValueError
        For an empty or non-2-D array, a name count other than K, or a row whose length
        is not 1 within 1e-6.

    Examples
    --------
    >>> normal_cosines([[1.0, 0.0], [0.6, 0.8]], ["hair", "gender"])
            hair  gender
    hair     1.0     0.6
    gender   0.6     1.0
    """
    n = np.asarray(normals, dtype=np.float64)
    if n.ndim != 2 or not n.size:
        raise ValueError(f"normals: expected a non-empty (K, D) array, got shape {n.shape}")
    if len(names) != n.shape[0]:
        raise ValueError(f"names: {len(names)} names for {n.shape[0]} normals")
    norms = np.linalg.norm(n, axis=1)
    if not np.all(np.abs(norms - 1.0) <= 1e-6):
        bad = int(np.argmax(np.abs(norms - 1.0)))
        raise ValueError(f"normals: row {names[bad]!r} has length {norms[bad]:.6g}, expected unit rows")
    return pd.DataFrame(n @ n.T, index=list(names), columns=list(names))


def transect_range(raw: Any, orthogonal: Any) -> dict[str, float]:
    """Range (max - min) of one true attribute value along a transect stepped on the raw
    normal (``raw``) and along the orthogonalised direction (``orthogonal``), in that
    attribute's units: how much stepping *another* attribute leaks into it (004 Fig. 5:
    the generator's true gender along a hair-length transect). ``{"raw", "orthogonal"}``.

    Parameters
    ----------
    raw, orthogonal : array_like
        1-D true values of the attribute at each step of the two transects.

    Returns
    -------
    dict
        ``{"raw": float, "orthogonal": float}``: the two ranges (attribute units).

    Raises
    ------
    ValueError
        If either input is empty, not 1-D, or has a non-finite value.

    Examples
    --------
    >>> r = transect_range([0.1, 0.5, 0.9], [0.45, 0.5, 0.55])
    >>> {k: round(v, 3) for k, v in r.items()}
    {'raw': 0.8, 'orthogonal': 0.1}
    """
    out = {}
    for key, values in (("raw", raw), ("orthogonal", orthogonal)):
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or not v.size or not np.isfinite(v).all():
            raise ValueError(f"{key}: expected a non-empty 1-D array of finite values, got {v!r}")
        out[key] = float(np.ptp(v))
    return out


def transect_check(images: pd.DataFrame, axes: Sequence[str]) -> dict[str, pd.Series]:
    """The manipulation check of the transects: for each axis ``a`` the mean of the
    generator's true value ``true_<a>`` at each intended level ``<a>_idx`` (a Series
    indexed by level), from the transects' ``images.parquet`` table.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``<a>_idx`` and ``true_<a>`` for every axis.
    axes : sequence of str
        The transect axes.

    Returns
    -------
    dict
        Axis -> Series of the mean true value (the generator's units) per level.

    Raises
    ------
    ValueError
        If ``axes`` is empty or a column is missing.

    Examples
    --------
    >>> images = pd.DataFrame({"hair_idx": [0, 0, 1, 1], "true_hair": [0.1, 0.3, 0.6, 0.8]})
    >>> transect_check(images, ["hair"])["hair"].round(3).to_dict()
    {0: 0.2, 1: 0.7}
    """
    if not len(axes):
        raise ValueError("axes: no transect axes")
    require_columns(images, [c for a in axes for c in (f"{a}_idx", f"true_{a}")], "images")
    return {a: images.groupby(f"{a}_idx")[f"true_{a}"].mean() for a in axes}


def pair_counts(images: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, int]:
    """Paper 000's counts (Sec. 3.4): ``prototypes`` (images with ``is_prototype``),
    ``images``, ``positive`` / ``negative`` pairs (``label`` 1 / 0) and ``self_pairs``
    (positives of a prototype with itself, ``is_self_pair``).

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with a bool ``is_prototype``.
    pairs : pandas.DataFrame
        One row per pair with ``label`` (1 same, 0 different) and bool ``is_self_pair``.

    Returns
    -------
    dict
        ``prototypes``, ``images``, ``positive``, ``negative``, ``self_pairs`` (ints).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> images = pd.DataFrame({"is_prototype": [True, False, False]})
    >>> pairs = pd.DataFrame({"label": [1, 1, 0], "is_self_pair": [True, False, False]})
    >>> pair_counts(images, pairs)
    {'prototypes': 1, 'images': 3, 'positive': 2, 'negative': 1, 'self_pairs': 1}
    """
    require_columns(images, ["is_prototype"], "images")
    require_columns(pairs, ["label", "is_self_pair"], "pairs")
    return {"prototypes": int(images["is_prototype"].sum()), "images": len(images),
            "positive": int((pairs["label"] == 1).sum()), "negative": int((pairs["label"] == 0).sum()),
            "self_pairs": int(pairs["is_self_pair"].sum())}


def acceptance_metrics(report: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar entries of :func:`facebias.generate.checks.acceptance_report` (in its
    order), without those in :data:`NOT_METRICS`.

    Parameters
    ----------
    report : mapping
        The acceptance report.

    Returns
    -------
    dict
        Its scalar entries, minus render speed.

    Examples
    --------
    >>> acceptance_metrics({"detect_rate": 0.98, "render_ids_per_s": 40.0, "table": [1, 2]})
    {'detect_rate': 0.98}
    """
    return {k: v for k, v in report.items() if np.isscalar(v) and k not in NOT_METRICS}
