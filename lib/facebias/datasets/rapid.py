"""Inputs of the rapid test (paper 001): the names list and scores tables.

Two entry points (the image-folder path that produces scores from photos is
:mod:`facebias.studies.rapid.images`):

* :func:`load_names` reads the frt-rapid-test ``names.csv`` (``person_id,name,race,gender``
  plus an optional ``upload_path``; ``person_id`` may be omitted, as in the authors'
  docstring, and is then numbered 0..n-1). The demographic key is
  ``group = race + " " + gender`` (the authors' ``race_gender``).
* :func:`load_scores` / :func:`validate_scores` check a scores table in the contract:
  ``query, face_a, face_b, system, score`` (raw similarities, higher = more alike; one row
  per unordered within-query pair and system). A cross-query table (impostor pairs, used
  for evaluation only) has the extra column ``query_b``: the query of ``face_b``.

Row numbers in error messages are 0-based data rows; for a CSV file also its line.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = [
    "NAMES_COLUMNS",
    "SCORES_COLUMNS",
    "load_names",
    "validate_names",
    "load_scores",
    "validate_scores",
]

NAMES_COLUMNS: tuple[str, ...] = ("person_id", "name", "race", "gender")
SCORES_COLUMNS: tuple[str, ...] = ("query", "face_a", "face_b", "system", "score")


# --------------------------------------------------------------------------- names.csv
def _where(i: int, csv: bool) -> str:
    return f"row {i} (line {i + 2})" if csv else f"row {i}"


def validate_names(df: pd.DataFrame, source: str = "names", min_per_group: int = 2,
                   on_small_group: str = "error", csv: bool = False) -> pd.DataFrame:
    """Check and normalise a names table; see :func:`load_names` for the rules.

    Returns a new frame with columns ``person_id, name, race, gender, group`` and
    ``upload_path`` (None where empty), in input order.

    Parameters
    ----------
    df : pandas.DataFrame
        The names table as read (column names are stripped of spaces).
    source : str, default "names"
        What error messages call the table (the file name for :func:`load_names`).
    min_per_group : int, default 2
        Fewest names a race/gender group may have.
    on_small_group : {"error", "warn"}, default "error"
        Raise or warn when a group has fewer names.
    csv : bool, default False
        Error messages also give the CSV line of a row.

    Returns
    -------
    pandas.DataFrame
        ``person_id`` (str), ``name``, ``race``, ``gender``, ``group`` (``race + " " +
        gender``) and ``upload_path``.

    Raises
    ------
    ValueError
        For a bad ``on_small_group``, a missing column, no rows, an empty value, a
        duplicate ``person_id`` or name, or (``on_small_group="error"``) a small group.

    Examples
    --------
    >>> names = pd.DataFrame({"name": ["Ann Lee", "Bo Kim", "Cy Ode", "Di Fox"],
    ...                       "race": ["Asian", "Asian", "White", "White"], "gender": ["F"] * 4})
    >>> validate_names(names)[["person_id", "group"]].to_numpy().tolist()
    [['0', 'Asian F'], ['1', 'Asian F'], ['2', 'White F'], ['3', 'White F']]
    """
    if on_small_group not in ("error", "warn"):
        raise ValueError(f"on_small_group must be 'error' or 'warn', got {on_small_group!r}")
    df = df.reset_index(drop=True)
    df.columns = [str(c).strip() for c in df.columns]
    require_columns(df, ("name", "race", "gender"), source,
                    hint=f"names.csv needs {list(NAMES_COLUMNS)} (person_id optional) and "
                         f"optionally upload_path")
    if len(df) == 0:
        raise ValueError(f"{source}: no names")
    out = pd.DataFrame(index=df.index)
    if "person_id" in df.columns:
        pid = df["person_id"]
        bad = pid.isna() | (pid.astype(str).str.strip() == "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{source}: column 'person_id': empty value at {_where(i, csv)}")
        out["person_id"] = pid.astype(str).str.strip()
    else:
        out["person_id"] = [str(i) for i in range(len(df))]
    for col in ("name", "race", "gender"):
        val = df[col]
        text = val.astype(str).str.strip()
        bad = val.isna() | (text == "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{source}: column {col!r}: empty value at {_where(i, csv)} "
                             f"(person_id {out['person_id'].iloc[i]!r})")
        out[col] = text
    for col, what in (("person_id", "person_id"), ("name", "name")):
        key = out[col] if col == "person_id" else out[col].str.casefold().str.split().str.join(" ")
        dup = key.duplicated(keep=False).to_numpy()
        if dup.any():
            rows = np.flatnonzero(dup)
            first = rows[key.iloc[rows] == key.iloc[rows[0]]][:2]
            hint = (" (a person listed twice makes one identity two queries, and the method "
                    "then underestimates accuracy)") if col == "name" else ""
            raise ValueError(f"{source}: duplicate {what} {out[col].iloc[first[0]]!r} at "
                             f"{_where(int(first[0]), csv)} and {_where(int(first[1]), csv)}{hint}")
    out["group"] = out["race"] + " " + out["gender"]
    if "upload_path" in df.columns:
        up = df["upload_path"]
        text = up.astype(str).str.strip()
        vals = [None if (pd.isna(v) or t == "") else t for v, t in zip(up, text, strict=True)]
    else:
        vals = [None] * len(out)
    out["upload_path"] = pd.Series(vals, index=out.index, dtype=object)
    counts = out["group"].value_counts()
    small = counts[counts < min_per_group]
    if len(small):
        found = {str(k): int(v) for k, v in small.sort_index().items()}
        msg = (f"{source}: fewer than {min_per_group} names in race/gender group(s) {found}; "
               f"cross-query (impostor) pairs need at least {min_per_group} names per group "
               f"(the frt-rapid-test tool refuses such lists)")
        if on_small_group == "error":
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)
    return out.reset_index(drop=True)


def load_names(path: str | os.PathLike, min_per_group: int = 2,
               on_small_group: str = "error") -> pd.DataFrame:
    """Read a frt-rapid-test ``names.csv``.

    Columns: ``name, race, gender`` (required), ``person_id`` (optional; numbered 0..n-1
    when absent) and ``upload_path`` (optional; a folder of the person's images, relative
    to the images root or absolute; empty = the folder named after the person).
    Values are stripped of surrounding spaces. Errors (``ValueError`` naming the file, the
    column and the row): a missing column, an empty value, a duplicate ``person_id``, a
    duplicate name (compared case- and whitespace-insensitively: the paper's name hygiene).
    Every race/gender group must have at least ``min_per_group`` names (the authors'
    tool asserts 2; cross-query impostor pairs need 2 queries per group):
    ``on_small_group="error"`` (default) raises, ``"warn"`` only warns.

    Returns ``person_id, name, race, gender, group, upload_path`` with ``person_id`` as str
    and ``group = race + " " + gender``.

    Parameters
    ----------
    path : str or os.PathLike
        The ``names.csv`` file.
    min_per_group : int, default 2
        Fewest names a race/gender group may have.
    on_small_group : {"error", "warn"}, default "error"
        Raise or warn when a group has fewer names.

    Returns
    -------
    pandas.DataFrame
        As :func:`validate_names`.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        For an unreadable or empty CSV, or as :func:`validate_names`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"names file {path} not found")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""],
                         skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc})") from exc
    except pd.errors.EmptyDataError as exc:
        raise ValueError(f"{path}: empty file") from exc
    return validate_names(df, str(path), min_per_group, on_small_group, csv=True)


# --------------------------------------------------------------------------- scores
def validate_scores(scores: pd.DataFrame, source: str = "scores", cross: bool = False,
                    csv: bool = False) -> pd.DataFrame:
    """Check a scores table in the contract and return it (row order kept, index reset).

    ``cross=False`` (within-query pairs): columns :data:`SCORES_COLUMNS`; every face belongs
    to one query only. ``cross=True`` (cross-query impostor pairs): also ``query_b`` (the
    query of ``face_b``), which must differ from ``query``. Always: no missing values,
    numeric finite scores, ``face_a != face_b``, and no unordered pair twice for the same
    system. Raises ``ValueError`` naming the source, the column and the first bad row.

    Parameters
    ----------
    scores : pandas.DataFrame
        ``query, face_a, face_b, system, score`` (+ ``query_b`` when ``cross``); scores
        are raw similarities (higher = more alike).
    source : str, default "scores"
        What error messages call the table.
    cross : bool, default False
        A cross-query (impostor) table.
    csv : bool, default False
        Error messages also give the CSV line of a row.

    Returns
    -------
    pandas.DataFrame
        A copy with a fresh index and ``score`` as float64.

    Raises
    ------
    ValueError
        If ``scores`` is not a DataFrame, lacks a column or rows, has a missing value,
        a boolean or non-finite score, a face paired with itself, a face under several
        queries, the same query on both sides of a cross pair, or a pair scored twice
        by one system.

    Examples
    --------
    >>> scores = pd.DataFrame({"query": ["q0", "q0"], "face_a": ["a1", "a1"],
    ...                        "face_b": ["a2", "a3"], "system": ["s", "s"], "score": [0.7, "0.2"]})
    >>> validate_scores(scores)["score"].tolist()
    [0.7, 0.2]
    """
    need = list(SCORES_COLUMNS) + (["query_b"] if cross else [])
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"{source}: expected a pandas DataFrame, got {type(scores).__name__}")
    require_columns(scores, need, source,
                    hint=f"a scores table has {need} (raw similarities, one row per pair and "
                         f"system)")
    df = scores.reset_index(drop=True)
    if len(df) == 0:
        raise ValueError(f"{source}: the table has no rows")

    def fail(col: str, problem: str, bad: np.ndarray) -> None:
        i = int(np.flatnonzero(bad)[0])
        v = df[col].iloc[i]
        v = v.item() if isinstance(v, np.generic) else v
        raise ValueError(f"{source}: column {col!r}: {problem}; first offending "
                         f"{_where(i, csv)}: {v!r}")

    for c in need:
        bad = df[c].isna().to_numpy()
        if c != "score" and not pd.api.types.is_numeric_dtype(df[c]):
            bad = bad | (df[c].astype(str).str.strip() == "").to_numpy()
        if bad.any():
            fail(c, "missing value", bad)
    if pd.api.types.is_bool_dtype(df["score"]):
        raise ValueError(f"{source}: column 'score' is boolean; scores are raw similarities")
    s = pd.to_numeric(df["score"], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(s).all():
        fail("score", "not a finite number", ~np.isfinite(s))
    df["score"] = s
    a, b = df["face_a"].astype(str).to_numpy(), df["face_b"].astype(str).to_numpy()
    if (a == b).any():
        fail("face_b", "a face paired with itself (face_a == face_b)", a == b)
    q = df["query"].astype(str).to_numpy()
    if cross:
        qb = df["query_b"].astype(str).to_numpy()
        if (q == qb).any():
            fail("query_b", "same query on both sides of a cross-query pair", q == qb)
        owner = pd.DataFrame({"face": np.r_[a, b], "query": np.r_[q, qb]})
    else:
        owner = pd.DataFrame({"face": np.r_[a, b], "query": np.r_[q, q]})
    n_q = owner.drop_duplicates().groupby("face")["query"].nunique()
    if (n_q > 1).any():
        face = n_q.index[(n_q > 1).to_numpy()][0]
        qs = sorted(owner.loc[owner["face"] == face, "query"].unique())[:3]
        rows = np.flatnonzero((a == face) | (b == face))[:2]
        raise ValueError(f"{source}: face {face!r} appears under several queries {qs} "
                         f"(e.g. {_where(int(rows[0]), csv)}); a photo belongs to exactly one "
                         f"query (the search that returned it)")
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = pd.DataFrame({"s": df["system"].astype(str).to_numpy(), "lo": lo, "hi": hi})
    dup = key.duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        r0 = rows[0]
        same = rows[(key.iloc[rows] == key.iloc[r0]).all(axis=1).to_numpy()]
        raise ValueError(f"{source}: pair ({lo[r0]!r}, {hi[r0]!r}) scored twice by system "
                         f"{key['s'].iloc[r0]!r}: {_where(int(same[0]), csv)} and "
                         f"{_where(int(same[1]), csv)} (one row per unordered pair and system)")
    return df


def load_scores(path: str | os.PathLike, cross: bool = False) -> pd.DataFrame:
    """Read and validate a scores table (``.csv`` or ``.parquet``); see
    :func:`validate_scores`. ``query``, ``face_*`` and ``system`` are read as strings.

    Parameters
    ----------
    path : str or os.PathLike
        The table file.
    cross : bool, default False
        A cross-query (impostor) table with ``query_b``.

    Returns
    -------
    pandas.DataFrame
        As :func:`validate_scores`.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        For an unsupported suffix, an unreadable CSV, or as :func:`validate_scores`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"scores file {path} not found")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        keys = {c: str for c in ("query", "query_b", "face_a", "face_b", "system")}
        try:
            df = pd.read_csv(path, dtype=keys)
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise ValueError(f"{path}: not a readable CSV file ({exc})") from exc
        return validate_scores(df, str(path), cross=cross, csv=True)
    if suffix == ".parquet":
        return validate_scores(pd.read_parquet(path), str(path), cross=cross)
    raise ValueError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")

