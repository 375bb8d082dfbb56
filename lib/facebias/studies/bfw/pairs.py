"""Paper 002, Sec. 3 (the BFW benchmark): the pair table and a pair's subgroup.

A pair table is in the BFW datatable schema (``fold, p1, p2, label, id1, id2, att1, att2,
a1, a2, g1, g2, e1, e2`` + one score column per system), real (the released datatable,
:mod:`facebias.datasets.bfw`) or from :mod:`facebias.worlds.bfw` (:func:`load_pair_table`).
Scores are similarities; a pair is a match iff ``score > t``.

A pair's subgroup (``docs/specs/bfw.md`` A.2, A.7 #2) is its query's (``a1``,
``grouping="query"``) or, for intra-subgroup analyses, only pairs with ``a1 == a2`` count
(``grouping="intra"``): :func:`select_pairs`, used by every analysis of the package.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["GROUPINGS", "select_pairs", "load_pair_table"]


GROUPINGS = ("query", "intra")


def select_pairs(df: pd.DataFrame, grouping: str = "query") -> pd.DataFrame:
    """The pairs that take part, with a ``group`` column (the query's subgroup ``a1``).

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table (needs ``a1`` and ``a2``).
    grouping : {"query", "intra"}, default "query"
        ``"query"`` keeps every pair; ``"intra"`` keeps only ``a1 == a2`` pairs.

    Returns
    -------
    pandas.DataFrame
        The kept rows (original index) with a str ``group`` column.

    Raises
    ------
    ValueError
        For an unknown ``grouping``.

    Examples
    --------
    >>> df = pd.DataFrame({"a1": ["AF", "AF", "BM"], "a2": ["AF", "BM", "BM"]})
    >>> select_pairs(df, "intra")
       a1  a2 group
    0  AF  AF    AF
    2  BM  BM    BM
    """
    if grouping not in GROUPINGS:
        raise ValueError(f"grouping: expected one of {GROUPINGS}, got {grouping!r}")
    a1 = df["a1"].astype(str)
    out = df if grouping == "query" else df[a1 == df["a2"].astype(str)]
    return out.assign(group=a1.loc[out.index])


def load_pair_table(path: str | os.PathLike, source: str, systems: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """The pair table and a provenance line.

    Parameters
    ----------
    path : str or os.PathLike
        The table's file.
    source : {"synthetic", "real"}
        ``"synthetic"``: a world written by :func:`facebias.worlds.bfw.write_world`;
        ``"real"``: a released BFW datatable (:func:`facebias.datasets.bfw.load_bfw`).
    systems : sequence of str
        Score columns that must exist (at least one).

    Returns
    -------
    df : pandas.DataFrame
        The pair table.
    provenance : str
        One line naming the backend and systems.

    Raises
    ------
    ValueError
        For no systems, an unknown source or a missing score column.
    FileNotFoundError
        If the synthetic world file does not exist.
    """
    from facebias.datasets.bfw import load_bfw
    from facebias.worlds.bfw import read_world

    path = Path(path)
    if not systems:
        raise ValueError("systems: name at least one score column")
    if source == "synthetic":
        df = read_world(path)
        provenance = (f"backend: synthetic world (facebias.worlds.bfw, seed {df.attrs['world']['seed']}), "
                      f"simulated systems {', '.join(systems)} — not the paper's data")
    elif source == "real":
        df = load_bfw(path)
        provenance = f"backend: real BFW datatable {path.name}, systems {', '.join(systems)}"
    else:
        raise ValueError(f"source must be 'synthetic' or 'real', got {source!r}")
    missing = [s for s in systems if s not in df.columns]
    if missing:
        raise ValueError(f"{path}: no score column(s) {missing}; columns are {list(df.columns)}")
    return df, provenance
