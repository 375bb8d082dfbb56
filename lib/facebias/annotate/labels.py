"""Paper 000's labels from annotation consensus values: the HCIC ground truth of a pair
(:func:`label_pairs`; same identity iff HCIC <= t) and the annotated level of an image's
age or expression (:func:`annotated_bins`). HCIC itself is :func:`facebias.annotate.hcic`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["BIN_EDGES", "annotated_bins", "label_pairs"]

#: Edges of the annotated age / expression bins on the raw 0-4 response scale (width 0.8, Supp. E).
BIN_EDGES = (0.0, 0.8, 1.6, 2.4, 3.2, 4.0)


def annotated_bins(mean_raw: Any) -> np.ndarray:
    """Human-annotated level 0..4 of a mean raw 0-4 score, edges :data:`BIN_EDGES`
    (left-closed, 4 itself in the top bin).

    Parameters
    ----------
    mean_raw : array_like
        Mean raw responses on the 0-4 scale.

    Returns
    -------
    numpy.ndarray
        int64 levels 0..4, the shape of ``mean_raw``.

    Raises
    ------
    ValueError
        For NaN, inf or a value outside [0, 4].

    Examples
    --------
    >>> annotated_bins([0.0, 0.79, 0.8, 2.5, 4.0])
    array([0, 0, 1, 3, 4])
    """
    x = np.asarray(mean_raw, dtype=np.float64)
    bad = ~np.isfinite(x) | (x < 0) | (x > 4)
    if bad.any():
        raise ValueError(f"mean_raw: values must be finite and within [0, 4], got {x[bad].ravel()[0]!r}")
    return np.digitize(x, BIN_EDGES[1:-1], right=False).astype(np.int64)


def label_pairs(pairs: pd.DataFrame, hcic_values: Any, t_hcic: float) -> pd.Series:
    """HCIC ground truth: 1 (same identity) iff ``hcic <= t_hcic``, else 0.

    HCIC is a dissimilarity (higher = more likely different), so low values are positives.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair; needs a ``pair_id`` column when ``hcic_values`` is a Series.
    hcic_values : array_like or pandas.Series
        HCIC in [0, 1]: an array aligned with ``pairs`` rows or a Series indexed by
        pair_id.
    t_hcic : float
        Threshold in [0, 1] (paper 000's main setting 0.3).

    Returns
    -------
    pandas.Series
        int64 labels (1 = same identity) on ``pairs``' index, named ``label_hcic_<t>``.

    Raises
    ------
    ValueError
        If ``t_hcic`` lies outside [0, 1], the values do not match the pairs, or a value
        is missing or outside [0, 1].

    Examples
    --------
    >>> pairs = pd.DataFrame({"pair_id": ["p0", "p1", "p2"]})
    >>> label_pairs(pairs, [0.1, 0.3, 0.35], t_hcic=0.3)  # 0.3 itself is "same"
    0    1
    1    1
    2    0
    Name: label_hcic_0.3, dtype: int64
    """
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
