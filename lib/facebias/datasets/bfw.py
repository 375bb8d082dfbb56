"""Loader of the published BFW pair table (``bfw-v0.1.5-datatable.{csv,pkl}``).

The table comes from the authors (GitHub ``visionjo/facerec-bias-bfw``) through a
registration form; nothing here downloads it. Published column order::

    fold, p1, p2, label, id1, id2, att1, att2, vgg16, resnet50, senet50,
    a1, a2, g1, g2, e1, e2, sphereface

Score columns are cosine similarities, one per model. Every numeric column outside
the 14 schema columns is taken as a score column (except the notebook helper
columns ``ids1``/``ids2`` and a written-out index such as ``Unnamed: 0``).
Row numbers in error messages are 0-based data rows (for a CSV file also its line).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.io import file_sha256, read_parquet, read_pickle_frame
from facebias.validate import require_columns

__all__ = [
    "BFW_GROUPS",
    "BFW_ETHNICITIES",
    "BFW_GENDERS",
    "BFW_FOLDERS",
    "BFW_COLUMNS",
    "BFW_PUBLISHED_SCORE_COLUMNS",
    "GROUP_DTYPE",
    "ATT_DTYPE",
    "GENDER_DTYPE",
    "ETHNICITY_DTYPE",
    "load_bfw",
    "bfw_summary",
    "score_columns",
]

#: the 8 subgroups, ethnicity letter + gender letter (``a1``/``a2``), in schema order
BFW_GROUPS: tuple[str, ...] = ("AF", "AM", "BF", "BM", "IF", "IM", "WF", "WM")
BFW_ETHNICITIES: tuple[str, ...] = ("A", "B", "I", "W")  # e1/e2
BFW_GENDERS: tuple[str, ...] = ("F", "M")  # g1/g2
#: image folders (``att1``/``att2``), one per subgroup, in :data:`BFW_GROUPS` order
BFW_FOLDERS: tuple[str, ...] = (
    "asian_females", "asian_males", "black_females", "black_males",
    "indian_females", "indian_males", "white_females", "white_males",
)  # fmt: skip
#: the 14 columns of the published BFW datatable, scores excluded (the synthetic world's order)
BFW_COLUMNS: tuple[str, ...] = (
    "fold", "p1", "p2", "label", "id1", "id2", "att1", "att2",
    "a1", "a2", "g1", "g2", "e1", "e2",
)  # fmt: skip

#: categorical dtypes of the string columns (categories in the orders above)
GROUP_DTYPE = pd.CategoricalDtype(list(BFW_GROUPS))
ATT_DTYPE = pd.CategoricalDtype(list(BFW_FOLDERS))
GENDER_DTYPE = pd.CategoricalDtype(list(BFW_GENDERS))
ETHNICITY_DTYPE = pd.CategoricalDtype(list(BFW_ETHNICITIES))

BFW_PUBLISHED_SCORE_COLUMNS: tuple[str, ...] = ("vgg16", "resnet50", "senet50", "sphereface")
_NOT_SCORES = {"ids1", "ids2"}
_HOW_TO_GET = (
    "The BFW datatable (bfw-v0.1.5-datatable.csv or .pkl) is obtained through the authors' "
    "registration form linked from GitHub visionjo/facerec-bias-bfw; put it under data/real/bfw/ "
    "and list it under `bfw.real` in params.yaml, e.g. `v015: {datatable: "
    "data/real/bfw/bfw-v0.1.5-datatable.pkl}` (see the README, 'Real data and models')."
)


def _read(path: Path) -> tuple[pd.DataFrame, dict]:
    """The raw table and, for parquet written by ``facebias.worlds.bfw.write_world``, its attrs."""
    suffix = path.suffix.lower()
    attrs: dict = {}
    if suffix == ".csv":
        return pd.read_csv(path, low_memory=False), attrs
    if suffix in (".pkl", ".pickle"):
        df = read_pickle_frame(path)  # restricted: a crafted pickle cannot run code
        attrs = dict(getattr(df, "attrs", {}))
    elif suffix == ".parquet":
        df = read_parquet(path)
        attrs = dict(df.attrs)
    else:
        raise ValueError(f"{path}: unsupported file type {suffix!r}; use .csv, .pkl or .parquet")
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{path}: expected a pandas DataFrame, got {type(df).__name__}")
    return df.reset_index(drop=True), attrs


def score_columns(df: pd.DataFrame) -> list[str]:
    """Numeric, non-boolean columns outside the schema, in table order.

    The helper columns ``ids1``/``ids2`` and written-out indexes (``Unnamed: ...``) are
    not scores.

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table.

    Returns
    -------
    list of str
        The score columns (cosine similarities, one per model).

    Examples
    --------
    >>> df = pd.DataFrame({"fold": [1], "label": [1], "vgg16": [0.5], "ids1": [0],
    ...                    "flag": [True], "Unnamed: 0": [0]})
    >>> score_columns(df)
    ['vgg16']
    """
    return [
        c
        for c in df.columns
        if c not in BFW_COLUMNS
        and c not in _NOT_SCORES
        and not str(c).startswith("Unnamed:")
        and pd.api.types.is_numeric_dtype(df[c])
        and not pd.api.types.is_bool_dtype(df[c])
    ]


class _Checker:
    """Raises ``ValueError`` naming the file, the column and the first offending row."""

    def __init__(self, path: Path, df: pd.DataFrame):
        self.path, self.df = path, df
        self.csv = path.suffix.lower() == ".csv"

    def row(self, i: int) -> str:
        return f"row {i} (line {i + 2})" if self.csv else f"row {i}"

    def fail(self, column: str, problem: str, bad: np.ndarray | None = None) -> None:
        where = ""
        if bad is not None:
            i = int(np.flatnonzero(bad)[0])
            value = self.df[column].iloc[i]
            value = value.item() if isinstance(value, np.generic) else value
            where = f"; first offending {self.row(i)}: {value!r}"
        raise ValueError(f"{self.path}: column {column!r}: {problem}{where}")

    def integers(self, column: str) -> np.ndarray:
        """The column as float64, failing on non-numbers and non-integers."""
        x = pd.to_numeric(self.df[column], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(x) | (x != np.round(x))
        if bad.any():
            self.fail(column, "not an integer", bad)
        return x


def _validate(path: Path, df: pd.DataFrame) -> list[str]:
    """Check the BFW schema; return the score columns."""
    chk = _Checker(path, df)
    require_columns(df, BFW_COLUMNS, str(path), hint=f"the BFW schema is {list(BFW_COLUMNS)}")
    if len(df) == 0:
        raise ValueError(f"{path}: the table has no rows")

    fold = chk.integers("fold")
    found = np.unique(fold)
    k = found.size
    if ((fold < 1) | (fold > k)).any():
        values = ", ".join(str(int(v)) for v in found[:12])
        chk.fail("fold", f"folds must be numbered 1..{k}, found {values}", (fold < 1) | (fold > k))
    label = pd.to_numeric(df["label"], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isin(label, (0.0, 1.0)).all():
        chk.fail("label", "not 0/1", ~np.isin(label, (0.0, 1.0)))
    ids = {c: chk.integers(c) for c in ("id1", "id2")}
    for c, x in ids.items():
        if (x < 0).any():
            chk.fail(c, "negative subject id", x < 0)
    for c in ("p1", "p2"):
        if df[c].isna().any():
            chk.fail(c, "missing image path", df[c].isna().to_numpy())
    for side in ("1", "2"):
        a = df["a" + side].astype(object)
        ok = a.isin(BFW_GROUPS).to_numpy()
        if not ok.all():
            chk.fail("a" + side, f"not one of {list(BFW_GROUPS)}", ~ok)
        eg = df["e" + side].astype(str) + df["g" + side].astype(str)
        bad = (eg != a.astype(str)).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{path}: columns 'e{side}', 'g{side}' inconsistent with 'a{side}' "
                f"(a{side} must equal e{side} + g{side}); first offending {chk.row(i)}: "
                f"a{side}={a.iloc[i]!r}, e{side}={df['e' + side].iloc[i]!r}, "
                f"g{side}={df['g' + side].iloc[i]!r}"
            )

    scores = score_columns(df)
    if not scores:
        raise ValueError(
            f"{path}: no score column (a numeric column besides {list(BFW_COLUMNS)}); "
            f"the published ones are {list(BFW_PUBLISHED_SCORE_COLUMNS)}"
        )
    for c in scores:
        x = df[c].to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.isfinite(x).all():
            chk.fail(c, "non-finite score", ~np.isfinite(x))

    # each subject in exactly one fold (row order: id1 before id2 within a row)
    subj = np.column_stack([ids["id1"], ids["id2"]]).ravel()
    folds = np.repeat(fold, 2)
    first_fold = pd.Series(folds).groupby(subj).transform("first").to_numpy()
    moved = folds != first_fold
    if moved.any():
        j = int(np.flatnonzero(moved)[0])
        col, i = ("id1", "id2")[j % 2], j // 2
        raise ValueError(
            f"{path}: column {col!r}: subject id {int(subj[j])} appears in folds "
            f"{int(first_fold[j])} and {int(folds[j])} (folds must not share identities); "
            f"first offending {chk.row(i)}"
        )
    same = ids["id1"] == ids["id2"]
    for lab, bad, what in ((1, ~same, "id1 != id2"), (0, same, "id1 == id2")):
        bad = bad & (label == lab)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{path}: column 'label': a label-{lab} pair with {what}; first offending "
                f"{chk.row(i)}: id1={int(ids['id1'][i])}, id2={int(ids['id2'][i])}"
            )
    return scores


def _typed(df: pd.DataFrame, scores: list[str]) -> pd.DataFrame:
    """Schema columns typed like ``facebias.worlds.bfw``; then scores, then any other columns."""
    paths = pd.unique(pd.concat([df["p1"].astype(str), df["p2"].astype(str)], ignore_index=True))
    path_dtype = pd.CategoricalDtype(np.sort(np.asarray(paths, dtype=object)))
    out = {
        "fold": pd.to_numeric(df["fold"]).astype(np.int8),
        "p1": df["p1"].astype(str).astype(path_dtype),
        "p2": df["p2"].astype(str).astype(path_dtype),
        "label": pd.to_numeric(df["label"]).astype(np.int8),
        "id1": pd.to_numeric(df["id1"]).astype(np.int32),
        "id2": pd.to_numeric(df["id2"]).astype(np.int32),
    }
    for side in ("1", "2"):
        att = df["att" + side].astype(str)
        out["att" + side] = att.astype(ATT_DTYPE if att.isin(BFW_FOLDERS).all() else "category")
    for name, dtype in (("a", GROUP_DTYPE), ("g", GENDER_DTYPE), ("e", ETHNICITY_DTYPE)):
        for side in ("1", "2"):
            out[name + side] = df[name + side].astype(str).astype(dtype)
    for c in scores:
        out[c] = df[c].astype(np.float64) if df[c].dtype != np.float32 else df[c]
    for c in df.columns:
        if c not in out:
            out[c] = df[c]
    return pd.DataFrame(out)


def load_bfw(path: str | os.PathLike, sha256: str | None = None) -> pd.DataFrame:
    """Read and validate the BFW pair table from ``.csv``, ``.pkl``/``.pickle`` or ``.parquet``.

    Raises ``FileNotFoundError`` (with how to obtain the table) when ``path`` is missing,
    ``ValueError`` on a checksum mismatch or a schema violation (naming file, column and
    first offending row). Returns the schema columns (typed as in ``facebias.worlds.bfw``:
    int8 ``fold``/``label``, int32 ids, categorical strings) followed by the score
    columns; ``attrs["source"] = "real"`` (``"synthetic"`` for a table saved by
    ``facebias.worlds.bfw.write_world``, whose attrs are kept) and ``attrs["path"]``.
    A pickle is read by :func:`facebias.io.read_pickle_frame`, a restricted unpickler that
    resolves only what a DataFrame is rebuilt from, so a crafted file cannot run code.

    Parameters
    ----------
    path : str or os.PathLike
        The datatable file.
    sha256 : str, optional
        Expected SHA-256 hex digest of the file.

    Returns
    -------
    pandas.DataFrame
        The validated, typed table (scores are cosine similarities, match iff score > t).

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        For a checksum mismatch, an unsupported file type, a pickle that is not a
        DataFrame or names anything else (e.g. ``os.system``), or a schema violation:
        a missing column, no rows, folds not numbered 1..k or sharing a subject, a label
        not 0/1 or inconsistent with the ids, a negative id, a missing path, a group code
        inconsistent with ``e``/``g``, no score column or a non-finite score.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"BFW datatable not found: {path}. {_HOW_TO_GET}")
    if sha256 is not None:
        actual = file_sha256(path)
        if actual != sha256.strip().lower():
            raise ValueError(f"{path}: sha256 mismatch: expected {sha256}, actual {actual}")
    raw, attrs = _read(path)
    scores = _validate(path, raw)
    df = _typed(raw, scores)
    # a table that says it is synthetic (a saved facebias world) stays labelled synthetic
    synthetic = attrs.get("source") == "synthetic"
    df.attrs = {**(attrs if synthetic else {}), "source": "synthetic" if synthetic else "real"}
    df.attrs["path"] = str(path)
    return df


def bfw_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per subgroup (pairs grouped by ``a1``, the query) the paper's Table 1 accounting.

    Columns: ``subjects`` and ``images`` (distinct ids / paths of that subgroup, from
    both sides of the pairs), ``genuine``, ``impostor``, ``pairs`` (rows with that
    ``a1``) and ``duplicate_pairs`` (rows repeating an earlier unordered image pair).
    Index: the eight subgroups, then ``All``.

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table (``a1, a2, p1, p2, id1, id2, label``).

    Returns
    -------
    pandas.DataFrame
        Integer counts per subgroup and ``All``.

    Examples
    --------
    >>> df = pd.DataFrame({"a1": ["AF", "AF", "WM"], "a2": ["AF", "AF", "WM"],
    ...                    "p1": ["x1", "x2", "y1"], "p2": ["x2", "x1", "y2"],
    ...                    "id1": [1, 1, 5], "id2": [1, 1, 6], "label": [1, 1, 0]})
    >>> bfw_summary(df).loc[["AF", "WM", "All"]]
         subjects  images  genuine  impostor  pairs  duplicate_pairs
    AF          1       2        2         0      2                1
    WM          2       2        0         1      1                0
    All         3       4        2         1      3                1
    """
    a1 = df["a1"].astype(str).to_numpy()
    a2 = df["a2"].astype(str).to_numpy()
    codes, _ = pd.factorize(
        np.concatenate([df["p1"].astype(str).to_numpy(), df["p2"].astype(str).to_numpy()])
    )
    c1, c2 = codes[: len(df)].astype(np.int64), codes[len(df) :].astype(np.int64)
    key = np.minimum(c1, c2) * (codes.max() + 1) + np.maximum(c1, c2)
    dup = pd.Series(key).duplicated().to_numpy()
    both = pd.DataFrame(
        {
            "a": np.concatenate([a1, a2]),
            "id": np.concatenate([df["id1"].to_numpy(), df["id2"].to_numpy()]),
            "p": codes,
        }
    )
    label = df["label"].to_numpy()
    rows = {}
    for g in (*BFW_GROUPS, "All"):
        side = both if g == "All" else both[both["a"] == g]
        sel = np.ones(len(df), dtype=bool) if g == "All" else a1 == g
        rows[g] = {
            "subjects": side["id"].nunique(),
            "images": side["p"].nunique(),
            "genuine": int(np.count_nonzero(sel & (label == 1))),
            "impostor": int(np.count_nonzero(sel & (label == 0))),
            "pairs": int(np.count_nonzero(sel)),
            "duplicate_pairs": int(np.count_nonzero(sel & dup)),
        }
    return pd.DataFrame.from_dict(rows, orient="index")
