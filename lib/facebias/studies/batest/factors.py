"""Paper 003 section 3.1 (BA-toolkit, image selection) and section 3.3 (factors known to
impact accuracy): the image filters on head pose, face-skin brightness, face area and
quality (``docs/specs/batest.md`` B.1 steps 4-7), with per-group accounting of what each
filter removes.

:data:`BA_FILTERS` (the paper's bounds), :func:`check_filters` (the layout checked),
:func:`apply_filters` (kept rows + accounting) and :func:`passes_filters` (a flag per row).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.config import param_float, param_list, param_str
from facebias.validate import require_columns

__all__ = ["BA_FILTERS", "check_filters", "apply_filters", "passes_filters"]


#: Paper defaults (B.1 steps 4-7). Each filter: ``columns`` it reads, and bounds applied to
#: every column: ``max_abs`` (|x| <= max_abs), ``min`` (x >= min), ``max`` (x <= max), all
#: inclusive; ``None`` = no bound. A filter with no bound set is skipped (its columns are
#: then not needed). Quality filters are off by default; the paper's were FaceQnet > 0.3
#: and MagFace magnitude >= 20 (set ``min`` to use them; bounds here are inclusive).
BA_FILTERS: dict[str, dict[str, Any]] = {
    "pose": {"columns": ("yaw", "pitch", "roll"), "max_abs": 20.0},
    "brightness": {"columns": ("brightness",), "min": 115.86, "max": 198.75},
    "face_area": {"columns": ("face_area",), "min": 0.20},
    "faceqnet": {"columns": ("faceqnet",), "min": None, "max": None},
    "magface": {"columns": ("magface",), "min": None, "max": None},
    "sharpness": {"columns": ("sharpness",), "min": None, "max": None},
    "brisque": {"columns": ("brisque",), "min": None, "max": None},
}

_BOUNDS = ("max_abs", "min", "max")


def check_filters(filters: Any, name: str = "filters") -> dict[str, dict[str, Any]]:
    """``filters`` (the :data:`BA_FILTERS` layout) checked and copied: each a mapping with
    ``columns`` (a non-empty list of column names) and optional bounds ``max_abs``, ``min``,
    ``max`` (a number or ``None``), returned as ``columns`` tuple and float bounds. An
    unknown key or a mistyped value raises ``ValueError`` naming ``name.<filter>``.

    Parameters
    ----------
    filters : mapping
        Filter name -> spec (``columns`` and optional ``max_abs``, ``min``, ``max``).
    name : str, default "filters"
        Prefix of error messages (``batest.filters`` for the config).

    Returns
    -------
    dict
        Filter name -> ``{"columns": tuple of str, <bound>: float or None, ...}``, in the
        order of ``filters``.

    Raises
    ------
    ValueError
        If ``filters`` or a spec is not a mapping, a spec has an unknown key or no
        ``columns``, or a bound is not a number or ``None``.

    Examples
    --------
    >>> check_filters({"pose": {"columns": ["yaw"], "max_abs": 20}})
    {'pose': {'columns': ('yaw',), 'max_abs': 20.0}}
    """
    if not isinstance(filters, Mapping):
        raise ValueError(f"{name} must be a mapping of filter name -> spec, got {filters!r}")
    out: dict[str, dict[str, Any]] = {}
    for fname, spec in filters.items():
        where = f"{name}.{fname}"
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be a mapping with columns and bounds, got {spec!r}")
        unknown = sorted(set(spec) - {"columns", *_BOUNDS}, key=str)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; known keys are {['columns', *_BOUNDS]}")
        if "columns" not in spec:
            raise ValueError(f"{where}: no 'columns' (the columns the filter reads)")
        out[fname] = {"columns": param_list(spec["columns"], f"{where}.columns", param_str)}
        for b in _BOUNDS:
            if b in spec:
                v = spec[b]
                out[fname][b] = None if v is None else param_float(v, f"{where}.{b}")
    return out


def apply_filters(
    images: pd.DataFrame,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
    by: str = "group",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Apply ``filters`` in order; return ``(kept rows, accounting)``.

    A row whose value for any column a filter reads is NaN is removed by that filter and
    counted as ``n_unmeasured`` (never dropped silently); a measured row outside the
    bounds counts as ``n_out_of_range``. Removals are attributed sequentially: a row is
    counted by the first filter that removes it. ``accounting`` has one row per (filter,
    group) with ``n_before, n_unmeasured, n_out_of_range, n_after``.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with the ``by`` column and every column an active filter reads.
    filters : mapping, optional
        :data:`BA_FILTERS` layout (:func:`check_filters`); default :data:`BA_FILTERS`.
        Filters with no bound set are skipped.
    by : str, default "group"
        Column whose levels the accounting is broken down by.

    Returns
    -------
    kept : pandas.DataFrame
        The rows of ``images`` that pass every filter (original index and order).
    accounting : pandas.DataFrame
        Columns ``filter, <by>, n_before, n_unmeasured, n_out_of_range, n_after``.

    Raises
    ------
    ValueError
        For a bad filter spec, a missing column, or a missing value in ``by``.

    Examples
    --------
    >>> images = pd.DataFrame({"group": ["AF", "AF", "AM"], "yaw": [5.0, 30.0, np.nan]})
    >>> kept, acc = apply_filters(images, {"pose": {"columns": ["yaw"], "max_abs": 20}})
    >>> kept.index.tolist()
    [0]
    >>> acc[["group", "n_unmeasured", "n_out_of_range", "n_after"]].to_numpy().tolist()
    [['AF', 0, 1, 1], ['AM', 1, 0, 0]]
    """
    filters = check_filters(BA_FILTERS if filters is None else filters)
    require_columns(images, [by], "images")
    missing = images[by].isna().to_numpy()
    if missing.any():
        raise ValueError(f"column {by!r}: missing group in row {images.index[missing][0]!r}")
    kept = images
    groups = sorted(images[by].unique())
    rows = []
    for name, spec in filters.items():
        bounds = {k: spec.get(k) for k in _BOUNDS}
        if all(v is None for v in bounds.values()):
            continue
        cols = list(spec["columns"])
        require_columns(kept, cols, f"filter {name!r}")
        x = kept[cols].apply(pd.to_numeric, errors="coerce")
        unmeasured = x.isna().any(axis=1).to_numpy()
        ok = np.ones(len(kept), dtype=bool)
        v = x.to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            if bounds["max_abs"] is not None:
                ok &= (np.abs(v) <= bounds["max_abs"]).all(axis=1)
            if bounds["min"] is not None:
                ok &= (v >= bounds["min"]).all(axis=1)
            if bounds["max"] is not None:
                ok &= (v <= bounds["max"]).all(axis=1)
        ok &= ~unmeasured
        g = kept[by].to_numpy()
        for grp in groups:
            in_g = g == grp
            rows.append({
                "filter": name, by: grp, "n_before": int(in_g.sum()),
                "n_unmeasured": int((in_g & unmeasured).sum()),
                "n_out_of_range": int((in_g & ~unmeasured & ~ok).sum()),
                "n_after": int((in_g & ok).sum()),
            })
        kept = kept[ok]
    cols = ["filter", by, "n_before", "n_unmeasured", "n_out_of_range", "n_after"]
    return kept, pd.DataFrame(rows, columns=cols)


def passes_filters(images: pd.DataFrame, filters: Mapping[str, Mapping[str, Any]] | None = None,
                   id_col: str = "id") -> pd.Series:
    """Per row of ``images``: does it survive every filter of :func:`apply_filters` (a row
    with an unmeasured value a filter reads does not)? Rows are matched by ``id_col``.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``id_col``, ``group`` and the filtered columns.
    filters : mapping, optional
        As in :func:`apply_filters` (default :data:`BA_FILTERS`).
    id_col : str, default "id"
        Column identifying an image.

    Returns
    -------
    pandas.Series
        Bool per row of ``images`` (same index), named ``passes_filters``.

    Raises
    ------
    ValueError
        As :func:`apply_filters`.

    Examples
    --------
    >>> images = pd.DataFrame({"id": ["a", "b", "c"], "group": ["AF", "AF", "AM"],
    ...                        "yaw": [5.0, 30.0, np.nan]})
    >>> passes_filters(images, {"pose": {"columns": ["yaw"], "max_abs": 20}}).tolist()
    [True, False, False]
    """
    kept, _ = apply_filters(images, filters)
    return images[id_col].isin(kept[id_col]).rename("passes_filters")
