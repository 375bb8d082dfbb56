"""Paper 002, Fig. 5 (identification): the rank-1 confusion matrix, the subgroup of each
probe's nearest other-identity neighbour (``docs/specs/bfw.md`` A.2, "Rank-1 confusion")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["rank1_confusion"]


def rank1_confusion(
    embeddings: np.ndarray,
    groups: Sequence[str],
    ids: Sequence[Any],
    subgroups: Sequence[str] | None = None,
    chunk: int = 1024,
) -> pd.DataFrame:
    """Paper 002 Fig. 5: the subgroup of each probe's nearest other-identity neighbour.

    Every image is a probe; its neighbour is the image of *another* identity with the
    largest cosine similarity (images of the probe's own identity are excluded; ties go to
    the lowest index). Cell (g, h) is the share of subgroup g's probes whose neighbour is in
    subgroup h, so every row sums to 1. With no subgroup structure and equal subgroup sizes
    the rows are near uniform (1/8 each for BFW's 8); planted within-subgroup similarity
    puts mass on the diagonal. (The released notebook counts only rank-1 *errors* of a
    search over all images; here every probe's nearest impostor counts.)

    Parameters
    ----------
    embeddings : numpy.ndarray
        Shape (n, d), one row per image; rows are normalised to unit length here.
    groups : sequence of str
        Subgroup of each image (length n).
    ids : sequence
        Identity of each image (length n); at least two identities.
    subgroups : sequence of str, optional
        Row and column order; default the sorted distinct ``groups``.
    chunk : int, default 1024
        Probes per block of the similarity matrix (memory: ``chunk * n`` floats).

    Returns
    -------
    pandas.DataFrame
        Rows: probe subgroup (index name ``probe``); columns: neighbour subgroup (name
        ``neighbour``); row-normalised shares (fractions); NaN rows for subgroups without
        probes.

    Raises
    ------
    ValueError
        For mismatched lengths, a non-2-D or non-finite embedding matrix, a zero row, fewer
        than two identities, or a group not in ``subgroups``.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> t = rank1_confusion(x, ["A", "A", "B", "B"], [0, 1, 2, 3])
    >>> t.to_dict("index")  # each probe's nearest other identity is in its own group
    {'A': {'A': 1.0, 'B': 0.0}, 'B': {'A': 0.0, 'B': 1.0}}
    """
    x = np.asarray(embeddings, dtype=np.float64)
    grp = np.asarray(groups).astype(str)
    ident = pd.factorize(np.asarray(ids))[0]
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"embeddings: need a finite 2-D array, got shape {x.shape}")
    if not (x.shape[0] == grp.size == ident.size):
        raise ValueError(f"embeddings, groups and ids differ in length: {x.shape[0]}, {grp.size}, {ident.size}")
    if ident.size and ident.max() < 1:
        raise ValueError("ids: need at least two identities")
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    if (norm == 0).any():
        raise ValueError("embeddings: a row is zero")
    x = x / norm
    order = list(subgroups) if subgroups is not None else sorted(set(grp))
    unknown = sorted(set(grp) - set(order))
    if unknown:
        raise ValueError(f"groups {unknown} are not in subgroups {order}")
    nn = np.empty(x.shape[0], dtype=np.int64)
    for start in range(0, x.shape[0], chunk):
        sim = x[start:start + chunk] @ x.T
        sim[ident[start:start + chunk, None] == ident[None, :]] = -np.inf
        nn[start:start + chunk] = np.argmax(sim, axis=1)
    counts = pd.crosstab(pd.Categorical(grp, categories=order), pd.Categorical(grp[nn], categories=order),
                         dropna=False)
    shares = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).astype(float)
    shares.index = pd.Index(order, name="probe")
    shares.columns = pd.Index(order, name="neighbour")
    return shares
