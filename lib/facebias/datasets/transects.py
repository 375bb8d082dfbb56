"""Paper 004's released annotations (``balakg/transects-eccv2020``; notes A3).

Two layouts, both read by :mod:`facebias.annotate.formats`:

* the processed ``annotations.pkl`` (``attributes``, ``responses`` (N, 5) level indices per
  attribute, ``attribute_levels``): :func:`load_annotations_pkl`;
* the raw SageMaker Ground Truth folders ``sagemaker/<attr>/...``: :func:`load_sagemaker`.

Votes become per-image scores in [0, 1] with :func:`facebias.annotate.score` (trimmed mean
of the 5 votes, min and max dropped, / (K - 1), as the authors' code; or the plain mean),
one column per question (``skin-color`` -> ``skin_color``), indexed by item id (the 4-digit
image index, ``'0000'``). :func:`facebias.studies.transects.released_transects` then
attaches each image's transect and grid cell (:func:`grid_cells`) and prunes (004 A1.10).

**Grid ordering is an assumption.** Neither the paper nor the repository documents how an
image index maps to (transect, skin, hair, gender). The default assumes 8 consecutive indices
per transect, the cell bits in (skin, hair, gender) order with gender the fastest (index
``8 t + 4 skin + 2 hair + gender``), as the synthetic transects here are written.
:func:`infer_grid_order` scores all 6 bit orders against the annotations (the bit that
flips gender must agree with the gender scores, etc.); use it on the real data and pass its
winner as ``ordering``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.annotate import read_sagemaker, read_transects_pkl, scores_from_votes

__all__ = ["GRID_AXES", "DEFAULT_ORDERING", "scores_from_votes", "load_annotations_pkl",
           "load_sagemaker", "grid_cells", "infer_grid_order"]

#: Transect axis -> the score column that should follow it.
GRID_AXES = {"skin": "skin_color", "hair": "hair_length", "gender": "gender"}
#: Default (assumed) bit order within a block of 8, most significant first.
DEFAULT_ORDERING = ("skin", "hair", "gender")


def load_annotations_pkl(path: str | os.PathLike, agg: str = "trimmed") -> pd.DataFrame:
    """Scores of the processed ``annotations.pkl`` (:func:`facebias.annotate.read_transects_pkl`,
    a restricted unpickler: only containers and numpy arrays load, no code runs), sorted by
    image index.

    Parameters
    ----------
    path : str or os.PathLike
        The ``annotations.pkl`` file.
    agg : {"trimmed", "mean"}, default "trimmed"
        Vote aggregation of :func:`facebias.annotate.score`.

    Returns
    -------
    pandas.DataFrame
        One row per image (index: item id), one score column per question in [0, 1]
        (0 = the scale's first level).
    """
    votes = read_transects_pkl(path)
    return scores_from_votes(votes, votes.attrs["scales"], agg=agg).sort_index()


def load_sagemaker(root: str | os.PathLike, attributes: Sequence[str] | None = None,
                   agg: str = "trimmed") -> pd.DataFrame:
    """Scores from raw SageMaker folders ``root/<attr>/`` (one per attribute, e.g.
    ``skin-color``; default: every sub-folder), read with
    :func:`facebias.annotate.read_sagemaker`; sorted by item id.

    Parameters
    ----------
    root : str or os.PathLike
        Folder holding one sub-folder per attribute.
    attributes : sequence of str, optional
        Sub-folders to read (default: all).
    agg : {"trimmed", "mean"}, default "trimmed"
        Vote aggregation of :func:`facebias.annotate.score`.

    Returns
    -------
    pandas.DataFrame
        One row per item, one score column per question in [0, 1] (0 = the scale's first
        level).

    Raises
    ------
    FileNotFoundError
        If ``root`` has no attribute folder.
    """
    root = Path(root)
    dirs = [root / a for a in attributes] if attributes else sorted(p for p in root.iterdir() if p.is_dir())
    if not dirs:
        raise FileNotFoundError(f"no attribute folders under {root}")
    frames, scales = [], {}
    for d in dirs:
        votes, scale = read_sagemaker(d)
        frames.append(votes)
        scales[scale.name] = scale
    return scores_from_votes(pd.concat(frames, ignore_index=True), scales, agg=agg).sort_index()


def grid_cells(index: Sequence[int] | np.ndarray, ordering: Sequence[str] = DEFAULT_ORDERING,
               per_transect: int = 8, polarity: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Transect id and 2x2x2 grid cell of each image index (**assumed** layout, see the
    module doc): ``transect = index // per_transect``; within the block, ``ordering[0]`` is
    the most significant bit. ``polarity[axis] = -1`` flips that axis (bit 1 = level 0).
    Returns ``transect, skin_idx, hair_idx, gender_idx`` (0 = light / short / female).

    Parameters
    ----------
    index : sequence of int
        Image indices (>= 0).
    ordering : sequence of str, default ("skin", "hair", "gender")
        A permutation of the three axes, most significant bit first.
    per_transect : int, default 8
        Images per transect (must be 8).
    polarity : mapping, optional
        Axis -> +1 or -1.

    Returns
    -------
    pandas.DataFrame
        One row per index.

    Raises
    ------
    ValueError
        If ``ordering`` is not a permutation of the axes, ``per_transect`` is not 8 or an
        index is negative.

    Examples
    --------
    >>> grid_cells([0, 1, 2, 4, 8])
       transect  skin_idx  hair_idx  gender_idx
    0         0         0         0           0
    1         0         0         0           1
    2         0         0         1           0
    3         0         1         0           0
    4         1         0         0           0
    """
    ordering = tuple(ordering)
    if sorted(ordering) != sorted(GRID_AXES):
        raise ValueError(f"ordering must be a permutation of {tuple(GRID_AXES)}, got {ordering}")
    if per_transect != 2 ** len(ordering):
        raise ValueError(f"per_transect must be {2 ** len(ordering)} for a 2x2x2 grid, got {per_transect}")
    i = np.asarray(index, dtype=int)
    if (i < 0).any():
        raise ValueError("image indices must be >= 0")
    cell = i % per_transect
    out = {"transect": i // per_transect}
    for pos, axis in enumerate(ordering):
        bit = (cell >> (len(ordering) - 1 - pos)) & 1
        if polarity and polarity.get(axis, 1) < 0:
            bit = 1 - bit
        out[f"{axis}_idx"] = bit
    return pd.DataFrame(out)[["transect", "skin_idx", "hair_idx", "gender_idx"]]


def infer_grid_order(scores: pd.DataFrame, per_transect: int = 8) -> pd.DataFrame:
    """Which bit order within a block of ``per_transect`` consecutive indices explains the
    annotations: for each of the 6 orders, the correlation of each axis's bit with its score
    column (:data:`GRID_AXES`). Rows sorted best first by the mean |correlation|; the
    columns ``polarity_<axis>`` give the sign to pass to :func:`grid_cells`. Scores are
    taken in row order, row ``i`` = image index ``i`` (sort by item id first).

    Parameters
    ----------
    scores : pandas.DataFrame
        Per-image scores with the :data:`GRID_AXES` columns, in image-index order.
    per_transect : int, default 8
        Images per transect.

    Returns
    -------
    pandas.DataFrame
        Six rows: ``ordering``, ``corr_<axis>`` (Pearson r), ``polarity_<axis>`` and
        ``score`` (mean |r|, 1 = the bits explain the scores exactly).

    Raises
    ------
    ValueError
        If a score column is missing or there are fewer than ``per_transect`` rows.

    Examples
    --------
    >>> cells = grid_cells(range(16), ordering=("hair", "skin", "gender"))
    >>> scores = pd.DataFrame({"skin_color": cells["skin_idx"], "hair_length": cells["hair_idx"],
    ...                        "gender": 1 - cells["gender_idx"]}, dtype=float)
    >>> best = infer_grid_order(scores).iloc[0]
    >>> best["ordering"], int(best["polarity_gender"]), float(best["score"])
    (('hair', 'skin', 'gender'), -1, 1.0)
    """
    missing = [c for c in GRID_AXES.values() if c not in scores.columns]
    if missing:
        raise ValueError(f"infer_grid_order: score column(s) {missing} missing")
    n = len(scores)
    if n < per_transect:
        raise ValueError(f"need at least one block of {per_transect} images, got {n}")
    rows = []
    for order in itertools.permutations(GRID_AXES):
        cells = grid_cells(np.arange(n), order, per_transect)
        row: dict[str, object] = {"ordering": order}
        total = 0.0
        for axis, col in GRID_AXES.items():
            bit = cells[f"{axis}_idx"].to_numpy(float)
            r = float(np.corrcoef(bit, scores[col].to_numpy(float))[0, 1])
            row[f"corr_{axis}"] = r
            row[f"polarity_{axis}"] = 1 if r >= 0 else -1
            total += abs(r)
        row["score"] = total / len(GRID_AXES)
        rows.append(row)
    return pd.DataFrame(rows).sort_values("score", ascending=False, kind="stable").reset_index(drop=True)
