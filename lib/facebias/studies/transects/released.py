"""Paper 004's released scores (``docs/specs/transects.md`` A3 Released data): the authors'
per-image scores with their transect grid cells attached (:mod:`facebias.datasets.transects`),
pruned as in A1.10 (:func:`released_transects`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from facebias.datasets.transects import DEFAULT_ORDERING, GRID_AXES, grid_cells, infer_grid_order
from facebias.studies.transects.pruning import prune

__all__ = ["released_transects"]


def released_transects(scores: pd.DataFrame, ordering: Sequence[str] | str = DEFAULT_ORDERING,
                   fakeness_rule: str | None = "paper", drop_children: bool = False,
                   per_transect: int = 8) -> tuple[pd.DataFrame, dict[str, object]]:
    """The released 004 scores (``item_id`` = image index; :mod:`facebias.datasets.transects`)
    with grid cells attached, pruned (:func:`prune`).

    ``ordering``: a bit order for :func:`~facebias.datasets.transects.grid_cells` (default:
    the assumed (skin, hair, gender)), or ``"infer"`` to take
    :func:`~facebias.datasets.transects.infer_grid_order`'s best order and polarities.
    Returns ``(kept, info)``: the pruned frame with ``image_index, transect, skin_idx,
    hair_idx, gender_idx`` and the binned covariates, and ``info`` = the pruning counts plus
    the ordering used and whether it was inferred.

    Parameters
    ----------
    scores : pandas.DataFrame
        Released scores in [0, 1], index = image index (``'0000'`` ...).
    ordering : sequence of str or "infer", default ("skin", "hair", "gender")
        Grid bit order, most significant first.
    fakeness_rule : {"paper", "repo"} or None, default "paper"
        As in :func:`prune`.
    drop_children : bool, default False
        As in :func:`prune`.
    per_transect : int, default 8
        Images per transect.

    Returns
    -------
    kept : pandas.DataFrame
        The pruned rows, sorted by image index.
    info : dict
        Pruning counts, ``ordering``, ``ordering_inferred`` and ``polarity``.

    Raises
    ------
    ValueError
        If the index is not image indices, or as
        :func:`~facebias.datasets.transects.grid_cells` and :func:`prune`.

    Examples
    --------
    >>> from facebias.datasets.transects import grid_cells
    >>> cells = grid_cells(range(8))
    >>> scores = pd.DataFrame({"gender": np.where(cells["gender_idx"] == 1, 0.9, 0.1),
    ...                        "skin_color": np.where(cells["skin_idx"] == 1, 0.8, 0.2),
    ...                        "hair_length": np.where(cells["hair_idx"] == 1, 0.9, 0.1),
    ...                        "uncanny": 0.0}, index=[f"{i:04d}" for i in range(8)])
    >>> kept, info = released_transects(scores, ordering="infer")
    >>> info["kept"], info["ordering"], info["ordering_inferred"]
    (8, ['skin', 'hair', 'gender'], True)
    >>> bool((kept["gender_male"] == kept["gender_idx"]).all())
    True
    """
    df = scores.copy()
    idx = pd.to_numeric(pd.Series(df.index, index=df.index), errors="coerce")
    if idx.isna().any() or (idx != np.floor(idx)).any():
        raise ValueError("scores: the index (item_id) must be image indices such as '0000'")
    df = df.assign(image_index=idx.astype(int).to_numpy()).sort_values("image_index")
    polarity = None
    inferred = ordering == "infer"
    if inferred:
        table = infer_grid_order(df.reset_index(drop=True), per_transect)
        best = table.iloc[0]
        ordering = best["ordering"]
        polarity = {a: int(best[f"polarity_{a}"]) for a in GRID_AXES}
    cells = grid_cells(df["image_index"].to_numpy(), ordering, per_transect, polarity)
    for c in cells.columns:
        df[c] = cells[c].to_numpy()
    kept, counts = prune(df, fakeness_rule=fakeness_rule, drop_children=drop_children)
    info: dict[str, object] = {**counts, "ordering": list(ordering), "ordering_inferred": inferred,
                               "polarity": polarity or {a: 1 for a in GRID_AXES}}
    return kept, info
