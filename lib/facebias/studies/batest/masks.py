"""Paper 003 section 3.4 (further analysis on gender bias) and Fig. 16: face-area masks and
facial hair at the pair level (``docs/specs/batest.md`` B.2).

Pair controls: :func:`mask_iou_filter` (face-mask IoU > 0.9), :func:`exclude_facial_hair`
(NFH) and :func:`table1_pair_sets` (Table 1's original / balanced / balanced + NFH sets);
selections between image and pair tables: :func:`images_in_pairs`, :func:`pairs_among`;
Fig. 16: :func:`face_area_by_gender` (top, in numbers) and :func:`mask_heatmap` (bottom).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import check_labels
from facebias.studies.batest.balancing import _ks, _smd
from facebias.validate import require_columns

__all__ = ["mask_iou_filter", "exclude_facial_hair", "table1_pair_sets", "images_in_pairs", "pairs_among",
           "face_area_by_gender", "mask_heatmap"]


def mask_iou_filter(
    pairs: pd.DataFrame, iou_col: str = "mask_iou", threshold: float = 0.9
) -> pd.DataFrame:
    """Pairs whose face-mask IoU is strictly above ``threshold`` (B.2); NaN IoU raises.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the IoU column (a fraction in [0, 1]).
    iou_col : str, default "mask_iou"
        The IoU column.
    threshold : float, default 0.9
        Pairs with IoU > threshold are kept.

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``pairs``.

    Raises
    ------
    ValueError
        For a missing column or a missing IoU value.

    Examples
    --------
    >>> pairs = pd.DataFrame({"mask_iou": [0.95, 0.9, 0.5]})
    >>> mask_iou_filter(pairs).index.tolist()
    [0]
    """
    require_columns(pairs, [iou_col], "pairs")
    iou = pairs[iou_col].to_numpy(dtype=np.float64)
    if np.isnan(iou).any():
        raise ValueError(f"column {iou_col!r}: {int(np.isnan(iou).sum())} missing IoU values")
    return pairs[iou > threshold]


def exclude_facial_hair(
    pairs: pd.DataFrame, col1: str = "facial_hair1", col2: str = "facial_hair2"
) -> pd.DataFrame:
    """Drop pairs where either image has facial hair (NFH, B.2); flags are 0/1 or bool.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the two facial-hair flags.
    col1, col2 : str, default "facial_hair1", "facial_hair2"
        Flag columns of the pair's two images (1/True = facial hair).

    Returns
    -------
    pandas.DataFrame
        The pairs where neither image has facial hair.

    Raises
    ------
    ValueError
        For a missing column or a flag that is not 0/1 or bool.

    Examples
    --------
    >>> pairs = pd.DataFrame({"facial_hair1": [0, 1, 0], "facial_hair2": [0, 0, 1]})
    >>> exclude_facial_hair(pairs).index.tolist()
    [0]
    """
    require_columns(pairs, [col1, col2], "pairs")
    h1 = check_labels(pairs[col1], f"column {col1!r}")
    h2 = check_labels(pairs[col2], f"column {col2!r}")
    return pairs[~(h1 | h2)]


def table1_pair_sets(
    pairs: pd.DataFrame, threshold: float = 0.9, iou_col: str = "mask_iou",
    hair: tuple[str, str] = ("facial_hair1", "facial_hair2"),
) -> dict[str, pd.DataFrame]:
    """Paper 003's Table 1 evaluation sets from one pair table (B.2): ``original`` (all
    pairs), ``balanced`` (face-mask IoU > ``threshold``, :func:`mask_iou_filter`) and
    ``balanced_nfh`` (balanced, then no image with facial hair, :func:`exclude_facial_hair`).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Genuine and impostor pairs within race x gender groups, with the IoU and the two
        facial-hair columns.
    threshold : float, default 0.9
        The paper's IoU cut.
    iou_col : str, default "mask_iou"
        The IoU column.
    hair : tuple of str
        The facial-hair flag columns of the pair's two images.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``{"original", "balanced", "balanced_nfh"}`` in that order.

    Raises
    ------
    ValueError
        As :func:`mask_iou_filter` and :func:`exclude_facial_hair`.

    Examples
    --------
    >>> pairs = pd.DataFrame({"mask_iou": [0.95, 0.95, 0.5], "facial_hair1": [0, 1, 0],
    ...                       "facial_hair2": [0, 1, 0]})
    >>> {k: v.index.tolist() for k, v in table1_pair_sets(pairs).items()}
    {'original': [0, 1, 2], 'balanced': [0, 1], 'balanced_nfh': [0]}
    """
    balanced = mask_iou_filter(pairs, iou_col, threshold)
    return {"original": pairs, "balanced": balanced,
            "balanced_nfh": exclude_facial_hair(balanced, *hair)}


def images_in_pairs(images: pd.DataFrame, pairs: pd.DataFrame, image_col: str = "image",
                    pos: tuple[str, str] = ("a", "b")) -> pd.DataFrame:
    """The rows of ``images`` that appear in at least one pair (the images a pair-level
    balancing keeps, for Fig. 16's "after" panels).

    ``pairs[pos]`` are image positions encoded in the names ``synNNNNNN.png`` (the BA-test
    world) when ``image_col`` holds such names, else row labels of ``images``.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image.
    pairs : pandas.DataFrame
        One row per pair with the two position columns.
    image_col : str, default "image"
        Image-name column of ``images``.
    pos : tuple of str, default ("a", "b")
        The pairs' image columns.

    Returns
    -------
    pandas.DataFrame
        The used rows of ``images``, in their order.

    Examples
    --------
    >>> images = pd.DataFrame({"image": ["syn000000.png", "syn000001.png", "syn000002.png"]})
    >>> images_in_pairs(images, pd.DataFrame({"a": [0], "b": [2]}))["image"].tolist()
    ['syn000000.png', 'syn000002.png']
    """
    require_columns(pairs, list(pos), "pairs")
    used = np.union1d(pairs[pos[0]].to_numpy(), pairs[pos[1]].to_numpy())
    return images[np.isin(_image_keys(images, image_col), used)]


def _image_keys(images: pd.DataFrame, image_col: str) -> np.ndarray:
    """The position a pair table uses for each image: NNNNNN of ``synNNNNNN.png`` names (the
    BA-test world), else the row label."""
    names = images[image_col].astype(str) if image_col in images else None
    if names is not None and names.str.fullmatch(r"syn\d{6}\.png").all():
        return names.str.slice(3, 9).astype(np.int64).to_numpy()
    return images.index.to_numpy()


def pairs_among(pairs: pd.DataFrame, images: pd.DataFrame, image_col: str = "image",
                pos: tuple[str, str] = ("a", "b")) -> pd.DataFrame:
    """The pairs whose two images are both in ``images`` (a selection applied to a pair
    table; a pair keeps its score, so no re-scoring is needed). Positions as
    :func:`images_in_pairs` reads them.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the two position columns.
    images : pandas.DataFrame
        The selected images.
    image_col : str, default "image"
        Image-name column of ``images``.
    pos : tuple of str, default ("a", "b")
        The pairs' image columns.

    Returns
    -------
    pandas.DataFrame
        The rows of ``pairs`` inside the selection.

    Examples
    --------
    >>> images = pd.DataFrame({"image": ["syn000000.png", "syn000002.png"]})
    >>> pairs_among(pd.DataFrame({"a": [0, 0], "b": [1, 2]}), images).index.tolist()
    [1]
    """
    require_columns(pairs, list(pos), "pairs")
    keys = _image_keys(images, image_col)
    inside = np.isin(pairs[pos[0]].to_numpy(), keys) & np.isin(pairs[pos[1]].to_numpy(), keys)
    return pairs[inside]


def face_area_by_gender(image_sets: Mapping[str, pd.DataFrame], area: str = "face_area",
                        group: str = "group") -> pd.DataFrame:
    """Fig. 16 (top) in numbers: per evaluation set and race, the mean face area of each
    gender, the gap M - F, its standardized mean difference and the two-sample KS
    statistic (fractions of the crop; group codes are race letter + ``F``/``M``).

    Parameters
    ----------
    image_sets : mapping
        Set name -> images with the area and group columns.
    area, group : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        Index (``set``, ``race``): ``n_F, n_M, mean_F, mean_M, gap, smd, ks``.

    Raises
    ------
    ValueError
        For a missing column or no image sets.

    Examples
    --------
    >>> im = pd.DataFrame({"group": ["AF", "AF", "AM", "AM"], "face_area": [0.3, 0.32, 0.36, 0.38]})
    >>> face_area_by_gender({"all": im})[["mean_F", "mean_M", "gap", "ks"]].round(3)
              mean_F  mean_M   gap   ks
    set race
    all A       0.31    0.37  0.06  1.0
    """
    if not image_sets:
        raise ValueError("image_sets: no sets")
    rows = []
    for name, df in image_sets.items():
        require_columns(df, [area, group], name)
        codes = df[group].astype(str)
        x = df[area].to_numpy(np.float64)
        for r in sorted(codes.str[0].unique()):
            f, m = x[(codes == r + "F").to_numpy()], x[(codes == r + "M").to_numpy()]
            both = f.size > 0 and m.size > 0
            rows.append({"set": name, "race": r, "n_F": f.size, "n_M": m.size,
                         "mean_F": f.mean() if f.size else np.nan, "mean_M": m.mean() if m.size else np.nan,
                         "gap": m.mean() - f.mean() if both else np.nan,
                         "smd": _smd(m, f) if both else np.nan, "ks": _ks(m, f) if both else np.nan})
    return pd.DataFrame(rows).set_index(["set", "race"])


def mask_heatmap(masks: Any, groups: Any, first: str, second: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paper 003 Fig. 16 (bottom): pixelwise mean face-area mask of two groups and their
    difference ``mean(first) - mean(second)`` (positive = more often face in ``first``).

    Parameters
    ----------
    masks : array_like
        (n, H, W) bool (or 0/1) face-area masks of aligned crops.
    groups : array_like
        (n,) group label of each mask.
    first, second : str
        The two groups compared (e.g. a race's female and male groups).

    Returns
    -------
    diff, mean_first, mean_second : numpy.ndarray
        (H, W) float64: the difference and the two mean masks (fractions of images).

    Raises
    ------
    ValueError
        For masks that are not (n, H, W) 0/1, ``groups`` of another length, or a group
        without masks.

    Examples
    --------
    >>> m = np.array([[[1, 1], [0, 0]], [[1, 0], [0, 0]], [[0, 0], [1, 1]]])
    >>> mask_heatmap(m, ["F", "F", "M"], "F", "M")[0]
    array([[ 1. ,  0.5],
           [-1. , -1. ]])
    """
    m = np.asarray(masks)
    if m.ndim != 3 or not np.isin(m, (0, 1)).all():
        raise ValueError(f"masks: need an (n, H, W) array of 0/1, got shape {m.shape}")
    g = np.asarray(groups).astype(str)
    if g.shape != (m.shape[0],):
        raise ValueError(f"groups: need {m.shape[0]} labels, got shape {g.shape}")
    means = []
    for name in (first, second):
        sel = g == str(name)
        if not sel.any():
            raise ValueError(f"groups: no masks of group {name!r}")
        means.append(m[sel].astype(np.float64).mean(axis=0))
    return means[0] - means[1], means[0], means[1]
