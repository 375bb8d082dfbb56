"""Loader of the released BA-test label lists (paper 003, GitHub ``HaiyuWu/BA-test-dataset``).

Published schema (``benchmark/benchmark_labels.csv`` and ``BA-test/labels.csv``)::

    Filename, Identity, Male, Young, Middle_Aged, Senior, White, Black, Indian, Asian

``Filename`` is a VGGFace2 relative path ``nXXXXXX/XXXX_YY.jpg``; ``Identity`` the integer
of the n-id. Attributes are coded **+1 / -1**. Race is one-hot per image and constant per
identity, as is gender; age is per image (an identity may be Young in one image and
Middle_Aged in another). The images themselves are licensed and not downloadable here.

:func:`load_batest_labels` validates all of that and adds the derived columns ``race``
(``W``/``B``/``I``/``A``), ``gender`` (``F``/``M``), ``group`` (race + gender, the BFW
codes ``AF`` ... ``WM``) and ``age`` (``Young``/``Middle_Aged``/``Senior``).
Errors name the file, the 1-based CSV line and the column.
"""

from __future__ import annotations

import os
from math import comb
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.datasets.bfw import BFW_GROUPS, GROUP_DTYPE
from facebias.validate import require_columns

__all__ = ["BATEST_COLUMNS", "RACES", "AGES", "load_batest_labels", "batest_summary",
           "benchmark_pairs", "pair_counts"]

BATEST_COLUMNS: tuple[str, ...] = (
    "Filename", "Identity", "Male", "Young", "Middle_Aged", "Senior",
    "White", "Black", "Indian", "Asian",
)  # fmt: skip
#: race one-hot column -> the race letter of the BFW group codes
RACES: dict[str, str] = {"White": "W", "Black": "B", "Indian": "I", "Asian": "A"}
AGES: tuple[str, ...] = ("Young", "Middle_Aged", "Senior")
_CODED = ("Male", *AGES, *RACES)


def _line(df: pd.DataFrame, i: int) -> int:
    return int(df.index[i]) + 2  # header is line 1


def _fail(path: Path, df: pd.DataFrame, i: int, column: str, problem: str) -> None:
    raise ValueError(f"{path}: line {_line(df, i)}, column {column!r}: {problem}")


def load_batest_labels(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate a BA-test label list; add ``race, gender, group, age``.

    Raises ``FileNotFoundError`` with instructions when the file is absent and
    ``ValueError`` naming file, line and column for any schema violation.

    Parameters
    ----------
    path : str or os.PathLike
        A label list CSV in the published schema (:data:`BATEST_COLUMNS`).

    Returns
    -------
    pandas.DataFrame
        The :data:`BATEST_COLUMNS` (``Identity`` int64, attributes +1/-1) plus ``race``
        (``W``/``B``/``I``/``A``), ``gender`` (``F``/``M``), categorical ``group`` (the
        BFW codes) and ``age``; ``attrs["source"]`` names the file.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        For a missing column, no rows, a missing or non-integer ``Identity``, an attribute
        other than +1/-1, a duplicate ``Filename``, race or age not one-hot, or an
        identity with more than one race or gender.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no BA-test label list here. The lists are in GitHub "
            "HaiyuWu/BA-test-dataset (benchmark/benchmark_labels.csv, BA-test/labels.csv); "
            "download them by hand (nothing is fetched at run time)."
        )
    df = pd.read_csv(path, dtype={"Filename": str})
    require_columns(df, BATEST_COLUMNS, str(path))
    if df.empty:
        raise ValueError(f"{path}: no rows")
    for col in ("Filename", "Identity", *_CODED):
        bad = df[col].isna().to_numpy()
        if bad.any():
            _fail(path, df, int(np.argmax(bad)), col, "missing value")
    ident = pd.to_numeric(df["Identity"], errors="coerce")
    bad = (ident.isna() | (ident != ident.round())).to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        _fail(path, df, i, "Identity", f"not an integer: {df['Identity'].iloc[i]!r}")
    for col in _CODED:
        v = pd.to_numeric(df[col], errors="coerce")
        bad = ~v.isin([1, -1]).to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            _fail(path, df, i, col, f"attributes are coded +1/-1, got {df[col].iloc[i]!r}")
    dup = df["Filename"].duplicated().to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        _fail(path, df, i, "Filename", f"duplicate file {df['Filename'].iloc[i]!r}")
    race_hot = df[list(RACES)].to_numpy() == 1
    bad = race_hot.sum(axis=1) != 1
    if bad.any():
        _fail(path, df, int(np.argmax(bad)), "White/Black/Indian/Asian",
              "race must be one-hot (exactly one +1)")
    age_hot = df[list(AGES)].to_numpy() == 1
    bad = age_hot.sum(axis=1) != 1
    if bad.any():
        _fail(path, df, int(np.argmax(bad)), "Young/Middle_Aged/Senior",
              "age must be one-hot (exactly one +1)")

    out = df[list(BATEST_COLUMNS)].copy()
    out["Identity"] = ident.astype(np.int64)
    race = np.array(list(RACES.values()))[race_hot.argmax(axis=1)]
    gender = np.where(df["Male"].to_numpy() == 1, "M", "F")
    out["race"] = race
    out["gender"] = gender
    out["group"] = pd.Categorical(np.char.add(race, gender), dtype=GROUP_DTYPE)
    out["age"] = np.array(AGES)[age_hot.argmax(axis=1)]
    for col in ("race", "gender"):
        n = out.groupby("Identity")[col].nunique()
        if (n > 1).any():
            who = n.index[n > 1][0]
            i = int(np.flatnonzero(out["Identity"].to_numpy() == who)[0])
            _fail(path, out, i, col, f"identity {who} has more than one {col}")
    out.attrs["source"] = f"BA-test labels {path.name}"
    return out


def batest_summary(labels: pd.DataFrame) -> pd.DataFrame:
    """Per-group accounting: images, identities, Young / Middle_Aged / Senior images.

    Parameters
    ----------
    labels : pandas.DataFrame
        :func:`load_batest_labels` output (``Identity``, ``group``, ``age``).

    Returns
    -------
    pandas.DataFrame
        int64 columns ``images, identities, Young, Middle_Aged, Senior``, one row per
        group category and a ``total`` row.

    Examples
    --------
    >>> labels = pd.DataFrame({"Identity": [1, 1, 2, 3],
    ...                        "group": pd.Categorical(["AF", "AF", "AF", "WM"]),
    ...                        "age": ["Young", "Senior", "Young", "Young"]})
    >>> batest_summary(labels)
           images  identities  Young  Middle_Aged  Senior
    group
    AF          3           2      2            0       1
    WM          1           1      1            0       0
    total       4           3      3            0       1
    """
    g = labels.groupby("group", observed=False)
    table = pd.DataFrame({"images": g.size(), "identities": g["Identity"].nunique()})
    for age in AGES:
        table[age] = g["age"].apply(lambda s, a=age: int((s == a).sum()))
    table.loc["total"] = [len(labels), labels["Identity"].nunique(),
                          *[int((labels["age"] == a).sum()) for a in AGES]]
    return table.astype(np.int64)


def pair_counts(labels: pd.DataFrame) -> dict[str, int]:
    """Closed-form pair counts (paper 003, Table 4 protocol): genuine, all cross-identity
    impostors, and within-group cross-identity impostors.

    Parameters
    ----------
    labels : pandas.DataFrame
        One row per image with ``Identity`` and ``group``.

    Returns
    -------
    dict
        ``genuine``, ``impostor`` and ``impostor_within_group`` (unordered image pairs).

    Examples
    --------
    >>> labels = pd.DataFrame({"Identity": [1, 1, 2, 3], "group": ["AF", "AF", "AF", "WM"]})
    >>> pair_counts(labels)
    {'genuine': 1, 'impostor': 5, 'impostor_within_group': 2}
    """
    per_id = labels.groupby("Identity").size().to_numpy()
    genuine = int(sum(comb(int(k), 2) for k in per_id))
    impostor = comb(len(labels), 2) - genuine
    within = sum(comb(int(n), 2) for n in labels.groupby("group", observed=True).size()) - genuine
    return {"genuine": genuine, "impostor": int(impostor), "impostor_within_group": int(within)}


def benchmark_pairs(labels: pd.DataFrame, impostors: str = "within_group") -> pd.DataFrame:
    """Pair list ``i, j, id1, id2, group1, group2, label`` over the rows of ``labels``.

    Genuine: every same-identity pair. Impostors: ``"within_group"`` (same race x gender,
    different identity) or ``"all"`` (every cross-identity pair; 6,471,000 for the
    benchmark, so about 100 MB here). ``i < j`` index rows of ``labels``.

    Parameters
    ----------
    labels : pandas.DataFrame
        One row per image with ``Identity`` and ``group`` (BFW codes).
    impostors : {"within_group", "all"}, default "within_group"
        Which cross-identity pairs to list.

    Returns
    -------
    pandas.DataFrame
        Columns ``i, j`` (int32 row positions), ``id1, id2``, categorical ``group1,
        group2`` and ``label`` (int8, 1 genuine, 0 impostor).

    Raises
    ------
    ValueError
        For an unknown ``impostors``.

    Examples
    --------
    >>> labels = pd.DataFrame({"Identity": [1, 1, 2, 3], "group": ["AF", "AF", "AF", "WM"]})
    >>> benchmark_pairs(labels)[["i", "j", "label"]].to_numpy().tolist()
    [[0, 1, 1], [0, 2, 0], [1, 2, 0]]
    """
    if impostors not in ("within_group", "all"):
        raise ValueError(f"impostors must be 'within_group' or 'all', got {impostors!r}")
    ident = labels["Identity"].to_numpy()
    group = labels["group"].astype(str).to_numpy()
    if impostors == "all":
        i, j = np.triu_indices(len(labels), k=1)
    else:
        parts = []
        for g in BFW_GROUPS:
            rows = np.flatnonzero(group == g)
            if rows.size > 1:
                a, b = np.triu_indices(rows.size, k=1)
                parts.append((rows[a], rows[b]))
        i = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        j = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    label = (ident[i] == ident[j]).astype(np.int8)
    return pd.DataFrame({
        "i": i.astype(np.int32), "j": j.astype(np.int32),
        "id1": ident[i], "id2": ident[j],
        "group1": pd.Categorical(group[i], dtype=GROUP_DTYPE),
        "group2": pd.Categorical(group[j], dtype=GROUP_DTYPE),
        "label": label,
    })

