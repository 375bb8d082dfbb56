"""Loader of the released CausalFace data (paper 000: 10,200 synthetic faces, 48,000 pairs,
555,000 human annotations; project page ``hliang2/BenchmarkingReco``, a university Box share).

The release's file layout and column names are undocumented (notes B3), so the loader is
schema-flexible: a ``mapping`` says which source column holds each canonical column, and
nothing here downloads anything. Canonical tables (B3), with facebias's names:

* ``images``: ``image_id, seed_id, group`` (WM WF BM BF AM AF) ``, attribute`` (prototype,
  pose, light, age, expression) ``, level_raw`` (pose -30..30 degrees, light
  orig/up/down/left/right, age/expression step -2..2, prototype 0) ``, level`` (0-based slot
  index as in ``data/synthetic/hcic``: pose 0..4 with the prototype at 2, light 0 = orig,
  1..4 = up/down/left/right, step + 2) ``, path``.
* ``single_annotations``: ``image_id, attribute`` (age, expression, gender, skin_color,
  uncanny) ``, r1..r9`` (raw responses 0..4).
* ``pairs``: ``pair_id, image_a`` (the prototype) ``, image_b, intended`` (pos/neg)
  ``, label`` (1 = intended same) ``, attribute`` (the varied attribute) ``, level_raw,
  level, r1..r9`` (raw identity responses, 0 = likely same ... 4 = likely different).

Derived (:func:`derive`): per image the mean raw score of each single-image attribute, the
normalised uncanny score (mean / 4, B4.13: plain mean of 9), the realism flag
(``uncanny < 0.8``) and the annotated age/expression bins (0.8 wide, Supp. E); per pair
HCIC (``facebias.annotate.hcic``), the label at ``t_hcic`` and the uncanny-filter flag
(both images realistic).

Responses may be wide (nine columns, listed in ``mapping[table]["responses"]``) or long
(one row per response: ``mapping[table]["responses"]`` is a single column name and the
other mapped columns repeat); text answers are translated with ``response_labels``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["DEFAULT_MAPPING", "DEFAULT_FILES", "RESPONSE_LABELS", "CausalFace", "canonicalise",
           "derive", "load_causalface", "group_code"]

N_RESPONSES = 9
RESPONSES = tuple(f"r{i}" for i in range(1, N_RESPONSES + 1))
GROUP_CODES = ("WM", "WF", "BM", "BF", "AM", "AF")
IMAGE_ATTRIBUTES = ("prototype", "pose", "light", "age", "expression")
SINGLE_ATTRIBUTES = ("age", "expression", "gender", "skin_color", "uncanny")

#: canonical column -> source column, per table (defaults: the canonical names themselves).
DEFAULT_MAPPING: dict[str, dict[str, Any]] = {
    "images": {"image_id": "image_id", "seed_id": "seed_id", "group": "group",
               "attribute": "attribute", "level_raw": "level", "path": "path"},
    "single_annotations": {"image_id": "image_id", "attribute": "attribute", "responses": list(RESPONSES)},
    "pairs": {"pair_id": "pair_id", "image_a": "image_a", "image_b": "image_b", "intended": "intended",
              "attribute": "varied_attribute", "level_raw": "level", "responses": list(RESPONSES)},
}
#: default file names under the release folder (.csv, .parquet or .json lines by suffix).
DEFAULT_FILES = {"images": "images.csv", "single_annotations": "single_annotations.csv",
                 "pairs": "pairs.csv"}
#: text answers -> raw level (lower-cased, spaces/underscores/hyphens removed before lookup).
RESPONSE_LABELS: dict[str, int] = {
    "likelysame": 0, "possiblysame": 1, "notsure": 2, "possiblydifferent": 3, "likelydifferent": 4,
    "realforsure": 0, "likelyreal": 1, "likelyfake": 3, "fakeforsure": 4,
}
#: spellings of categorical values -> facebias's names.
ATTRIBUTE_ALIASES: dict[str, str] = {
    "lighting": "light", "illumination": "light", "relight": "light", "smile": "expression",
    "skin": "skin_color", "skincolor": "skin_color", "skin_type": "skin_color", "skintype": "skin_color",
    "skin_tone": "skin_color", "fake": "uncanny", "uncanniness": "uncanny", "realism": "uncanny",
    "proto": "prototype", "original": "prototype", "yaw": "pose",
}
LIGHT_LEVELS = ("orig", "up", "down", "left", "right")
POSE_LEVELS = (-30, -15, 0, 15, 30)


@dataclass
class CausalFace:
    """Canonical tables plus derived per-image scores (``image_scores``: one row per
    image_id, columns ``mean_<attribute>`` raw 0..4, ``uncanny`` normalised, ``realistic``,
    ``age_bin``, ``expression_bin``)."""

    images: pd.DataFrame
    single_annotations: pd.DataFrame
    pairs: pd.DataFrame
    image_scores: pd.DataFrame
    t_hcic: float


def group_code(value: Any) -> str:
    """Two-letter group code from ``'WM'``, ``'White Male'``, ``'east_asian-female'`` ...

    Parameters
    ----------
    value : object
        A code (any case) or words naming a race (white/caucasian, black/african, asian)
        and a gender (female/woman/f, male/man/m).

    Returns
    -------
    str
        One of ``WM WF BM BF AM AF``.

    Raises
    ------
    ValueError
        If no race or no gender can be read.

    Examples
    --------
    >>> group_code("wm"), group_code("White Male"), group_code("east_asian-female")
    ('WM', 'WM', 'AF')
    """
    text = str(value).strip()
    if text.upper() in GROUP_CODES:
        return text.upper()
    words = [w for w in re.split(r"[\s_\-/]+", text.lower()) if w]
    race = next((c for w, c in (("white", "W"), ("caucasian", "W"), ("black", "B"), ("african", "B"),
                                ("asian", "A")) if w in words), None)
    gender = "F" if ({"female", "woman", "f"} & set(words)) else ("M" if ({"male", "man", "m"} & set(words))
                                                                 else None)
    if race is None or gender is None:
        raise ValueError(f"group: cannot read a race and gender from {value!r}; expected one of "
                         f"{GROUP_CODES} or words like 'White Male'")
    return race + gender


def _alias(value: Any) -> str:
    key = str(value).strip().lower()
    return ATTRIBUTE_ALIASES.get(key, ATTRIBUTE_ALIASES.get(key.replace(" ", "_"), key))


def _response_level(value: Any, labels: Mapping[str, int]) -> float:
    if isinstance(value, str):
        key = re.sub(r"[\s_\-]+", "", value.lower())
        if key in labels:
            return float(labels[key])
        try:
            return float(value)
        except ValueError:
            return np.nan
    return np.nan if value is None else float(value)


def _read(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix in (".json", ".jsonl"):
        return pd.read_json(path, lines=suffix == ".jsonl")
    raise ValueError(f"{path}: unsupported file type {suffix!r}; use .csv, .parquet, .json or .jsonl")


def _responses(df: pd.DataFrame, spec: Any, keys: Sequence[str], table: str,
               labels: Mapping[str, int]) -> pd.DataFrame:
    """Wide (pairs x 9) raw responses r1..r9 from wide or long source columns, validated."""
    if isinstance(spec, str):  # long: one row per response
        require_columns(df, [spec], table, kind="response column")
        vals = df[spec].map(lambda v: _response_level(v, labels))
        slot = df.groupby(list(keys), sort=False).cumcount()
        counts = slot.groupby([df[k] for k in keys], sort=False).max() + 1
        if (counts != N_RESPONSES).any():
            bad = counts[counts != N_RESPONSES]
            raise ValueError(f"{table}: item {bad.index[0]!r} has {int(bad.iloc[0])} responses, "
                             f"expected {N_RESPONSES}")
        raw = df.assign(_v=vals, _s=slot.to_numpy(), _raw=df[spec])
        check = raw[["_v", "_raw"]].assign(_where=[f"row {i}, column {spec!r}" for i in range(len(raw))])
        wide = raw.pivot_table(index=list(keys), columns="_s", values="_v", aggfunc="first", sort=False)
        wide.columns = list(RESPONSES)
        out = wide.reset_index()
    else:
        cols = list(spec)
        if len(cols) != N_RESPONSES:
            raise ValueError(f"{table}: mapping['responses'] must list {N_RESPONSES} columns, got {len(cols)}")
        require_columns(df, cols, table, kind="response column")
        vals = df[cols].apply(lambda s: s.map(lambda v: _response_level(v, labels)))
        check = pd.DataFrame({"_v": vals.to_numpy().ravel(), "_raw": df[cols].to_numpy().ravel(),
                              "_where": [f"row {i}, column {c!r}" for i in range(len(df)) for c in cols]})
        out = df[list(keys)].copy()
        out[list(RESPONSES)] = vals.to_numpy()
    v = check["_v"].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(v) | (v < 0) | (v > 4) | (v != np.round(v))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = check["_raw"].iloc[i]
        value = value.item() if isinstance(value, np.generic) else value
        raise ValueError(f"{table}: response {value!r} ({check['_where'].iloc[i]}) is not a raw level "
                         f"0..4 (or a known answer text); {int(bad.sum())} bad response(s)")
    out[list(RESPONSES)] = out[list(RESPONSES)].astype(np.int64)
    return out


def _level_index(attribute: str, raw: Any) -> int:
    """0-based slot index of a released level (see module docstring)."""
    if attribute == "prototype":
        return 0
    if attribute == "light":
        key = str(raw).strip().lower()
        key = "orig" if key in ("orig", "original", "none", "0", "front", "prototype") else key
        if key not in LIGHT_LEVELS:
            raise ValueError(f"light level {raw!r}: expected one of {LIGHT_LEVELS}")
        return LIGHT_LEVELS.index(key)
    x = float(raw)
    if attribute == "pose":
        if x not in POSE_LEVELS:
            raise ValueError(f"pose level {raw!r}: expected one of {POSE_LEVELS} (degrees)")
        return POSE_LEVELS.index(int(x))
    if x not in (-2, -1, 0, 1, 2):
        raise ValueError(f"{attribute} level {raw!r}: expected a step in -2..2")
    return int(x) + 2


def canonicalise(df: pd.DataFrame, table: str, mapping: Mapping[str, Any] | None = None,
                 response_labels: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One released table in canonical form (see the module docstring); ``mapping``:
    canonical column -> source column (missing keys take :data:`DEFAULT_MAPPING`'s).

    Parameters
    ----------
    df : pandas.DataFrame
        The table as released.
    table : {"images", "single_annotations", "pairs"}
        Which table it is.
    mapping : mapping, optional
        Canonical column -> source column; ``"responses"``: nine wide columns or one
        long column.
    response_labels : mapping, optional
        Extra answer texts -> raw level 0..4 (added to :data:`RESPONSE_LABELS`).

    Returns
    -------
    pandas.DataFrame
        The canonical columns (ids as str, groups as codes, attributes in facebias's
        names, ``level`` = 0-based slot, raw responses ``r1..r9`` int64 in 0..4; pairs also
        ``label``, 1 = intended same).

    Raises
    ------
    ValueError
        For an unknown table, a missing column, an unknown attribute, group, level or
        ``intended`` value, a response that is not 0..4, an item without nine responses,
        or a duplicate key.

    Examples
    --------
    >>> images = pd.DataFrame({"image_id": [1, 2], "seed_id": [7, 7], "group": ["White Male"] * 2,
    ...                        "attribute": ["prototype", "yaw"], "level": [0, -15]})
    >>> canonicalise(images, "images")
      image_id  seed_id group  attribute  level_raw  level
    0        1        7    WM  prototype          0      0
    1        2        7    WM       pose        -15      1
    """
    if table not in DEFAULT_MAPPING:
        raise ValueError(f"table: expected one of {list(DEFAULT_MAPPING)}, got {table!r}")
    m = {**DEFAULT_MAPPING[table], **dict(mapping or {})}
    labels = {**RESPONSE_LABELS, **dict(response_labels or {})}
    optional = {"path"} if table == "images" else set()
    plain = [k for k in m if k != "responses"]
    for k in plain:
        if k not in optional:
            require_columns(df, [m[k]], table, hint=f"canonical {k!r} reads it; pass "
                            f"mapping={{'{table}': {{'{k}': <source column>}}}}")
    out = pd.DataFrame({k: df[m[k]].to_numpy() for k in plain if m[k] in df.columns})
    if "attribute" in out:
        out["attribute"] = out["attribute"].map(_alias)
        allowed = {"images": IMAGE_ATTRIBUTES, "pairs": IMAGE_ATTRIBUTES[1:],
                   "single_annotations": SINGLE_ATTRIBUTES}[table]
        bad = ~out["attribute"].isin(allowed)
        if bad.any():
            raise ValueError(f"{table}: attribute {df[m['attribute']].iloc[int(np.flatnonzero(bad)[0])]!r} "
                             f"is not one of {allowed}")
    if "group" in out:
        out["group"] = out["group"].map(group_code)
    for col in ("image_id", "image_a", "image_b"):
        if col in out:
            out[col] = out[col].astype(str)
    if "responses" in m:
        keys = [k for k in plain if k in out.columns]
        src = df.rename(columns={m[k]: f"__{k}" for k in keys})
        resp = _responses(src, m["responses"], [f"__{k}" for k in keys], table, labels)
        resp = resp.rename(columns={f"__{k}": k for k in keys})
        if isinstance(m["responses"], str):  # long input: one canonical row per item
            for k in ("attribute",):
                if k in resp:
                    resp[k] = resp[k].map(_alias)
            for col in ("image_id", "image_a", "image_b"):
                if col in resp:
                    resp[col] = resp[col].astype(str)
            out = resp
        else:
            out[list(RESPONSES)] = resp[list(RESPONSES)].to_numpy()
    if "level_raw" in out:
        out["level"] = [_level_index(a, r) for a, r in zip(out["attribute"], out["level_raw"], strict=True)]
    if table == "pairs":
        intended = out["intended"].astype(str).str.strip().str.lower()
        lab = intended.map({"pos": 1, "positive": 1, "same": 1, "1": 1, "true": 1,
                            "neg": 0, "negative": 0, "different": 0, "0": 0, "false": 0})
        if lab.isna().any():
            raise ValueError(f"pairs: intended {out['intended'].iloc[int(np.flatnonzero(lab.isna())[0])]!r} "
                             "is not pos/neg")
        out["intended"] = np.where(lab == 1, "pos", "neg")
        out["label"] = lab.astype(np.int64)
    key = {"images": ["image_id"], "pairs": ["pair_id"], "single_annotations": ["image_id", "attribute"]}[table]
    dup = out.duplicated(key)
    if dup.any():
        raise ValueError(f"{table}: duplicate {key} {tuple(out.loc[dup, key].iloc[0])!r}")
    return out.reset_index(drop=True)


def derive(images: pd.DataFrame, single: pd.DataFrame, pairs: pd.DataFrame, t_hcic: float = 0.3,
           uncanny_threshold: float = 0.8, missing_uncanny: str = "keep") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Derived columns: ``(image_scores, pairs)``, pairs with ``hcic, label_hcic,
    uncanny_a, uncanny_b, keep``. ``missing_uncanny``: what the filter does with an image
    that has no uncanny votes: ``"keep"`` it (counted in ``pairs.attrs``), ``"drop"`` or
    ``"error"``.

    Parameters
    ----------
    images, single, pairs : pandas.DataFrame
        Canonical tables (:func:`canonicalise`).
    t_hcic : float, default 0.3
        A pair is labelled same (1) iff HCIC <= ``t_hcic`` (HCIC: dissimilarity in [0, 1]).
    uncanny_threshold : float, default 0.8
        An image is realistic iff its normalised uncanny score (mean / 4) is below it.
    missing_uncanny : {"keep", "drop", "error"}, default "keep"
        What the filter does with an image without uncanny votes.

    Returns
    -------
    image_scores : pandas.DataFrame
        One row per image: ``image_id``, ``mean_<attribute>`` (raw 0..4), ``uncanny``,
        ``realistic``, ``age_bin``, ``expression_bin``.
    pairs : pandas.DataFrame
        ``pairs`` plus ``hcic``, ``label_hcic``, ``uncanny_a``, ``uncanny_b``, ``keep``;
        ``attrs``: ``n_unknown_uncanny``, ``t_hcic``, ``uncanny_threshold``.

    Raises
    ------
    ValueError
        For a bad ``missing_uncanny``, or with ``"error"`` a pair whose image has no
        uncanny votes.
    """
    from facebias.annotate import hcic, uncanny_keep
    from facebias.annotate.labels import annotated_bins, label_pairs

    if missing_uncanny not in ("keep", "drop", "error"):
        raise ValueError(f"missing_uncanny: expected 'keep', 'drop' or 'error', got {missing_uncanny!r}")
    means = single.assign(mean=single[list(RESPONSES)].mean(axis=1)).pivot(
        index="image_id", columns="attribute", values="mean")
    scores = pd.DataFrame(index=pd.Index(images["image_id"], name="image_id"))
    for attr in means.columns:
        scores[f"mean_{attr}"] = means[attr].reindex(scores.index)
    if "mean_uncanny" in scores:
        scores["uncanny"] = scores["mean_uncanny"] / 4
        known = scores["uncanny"].notna()
        scores["realistic"] = pd.Series(pd.NA, index=scores.index, dtype="boolean")
        scores.loc[known, "realistic"] = uncanny_keep(scores.loc[known, "uncanny"].to_numpy(), uncanny_threshold)
    for attr in ("age", "expression"):
        col = f"mean_{attr}"
        if col in scores:
            b = pd.Series(pd.NA, index=scores.index, dtype="Int64")
            ok = scores[col].notna()
            b[ok] = annotated_bins(scores.loc[ok, col].to_numpy())
            scores[f"{attr}_bin"] = b
    p = pairs.copy()
    p["hcic"] = hcic(p[list(RESPONSES)].to_numpy())
    p["label_hcic"] = label_pairs(p, p["hcic"].to_numpy(), t_hcic)
    if "uncanny" in scores:
        p["uncanny_a"] = scores["uncanny"].reindex(p["image_a"]).to_numpy()
        p["uncanny_b"] = scores["uncanny"].reindex(p["image_b"]).to_numpy()
    else:
        p["uncanny_a"] = p["uncanny_b"] = np.nan
    unknown = p[["uncanny_a", "uncanny_b"]].isna().any(axis=1)
    if unknown.any() and missing_uncanny == "error":
        raise ValueError(f"pairs: {int(unknown.sum())} pair(s) have an image without uncanny votes, "
                         f"first pair_id {p.loc[unknown, 'pair_id'].iloc[0]!r}")
    ok = (p[["uncanny_a", "uncanny_b"]].fillna(0.0) < uncanny_threshold).all(axis=1)
    p["keep"] = ok & ~unknown if missing_uncanny == "drop" else ok
    p.attrs = {"n_unknown_uncanny": int(unknown.sum()), "t_hcic": t_hcic,
               "uncanny_threshold": uncanny_threshold}
    return scores.reset_index(), p


def load_causalface(root: str | Path | None = None, *, files: Mapping[str, str | Path] | None = None,
                    tables: Mapping[str, pd.DataFrame] | None = None,
                    mapping: Mapping[str, Mapping[str, Any]] | None = None,
                    response_labels: Mapping[str, int] | None = None, t_hcic: float = 0.3,
                    uncanny_threshold: float = 0.8, missing_uncanny: str = "keep") -> CausalFace:
    """Load a CausalFace release into canonical tables with derived columns.

    Sources, per table: ``tables[name]`` (a DataFrame already in memory), else
    ``files[name]`` (a path, relative to ``root`` unless absolute), else
    ``root / DEFAULT_FILES[name]``. ``mapping[name]``: canonical column -> source column
    (see :data:`DEFAULT_MAPPING`). Image paths are made absolute against ``root``.
    Every pair's images and every annotated image must be in ``images``.

    Parameters
    ----------
    root : str or pathlib.Path, optional
        The release folder.
    files : mapping, optional
        Table name -> file (.csv, .parquet, .json, .jsonl).
    tables : mapping, optional
        Table name -> DataFrame already loaded.
    mapping : mapping, optional
        Table name -> canonical column -> source column.
    response_labels : mapping, optional
        Extra answer texts -> raw level.
    t_hcic, uncanny_threshold, missing_uncanny
        As in :func:`derive`.

    Returns
    -------
    CausalFace
        The canonical tables, the per-image scores and ``t_hcic``.

    Raises
    ------
    ValueError
        For a table with neither a source nor a root, a missing file, an unsupported file
        type, an image id not in ``images``, or as :func:`canonicalise` and :func:`derive`.
    """
    root = None if root is None else Path(root)
    raw: dict[str, pd.DataFrame] = {}
    for name in DEFAULT_MAPPING:
        if tables and name in tables:
            raw[name] = tables[name]
            continue
        f = Path((files or {}).get(name, DEFAULT_FILES[name]))
        if not f.is_absolute():
            if root is None:
                raise ValueError(f"{name}: no table given and no root folder to find {f} in")
            f = root / f
        if not f.is_file():
            raise ValueError(f"{name}: file {f} not found; CausalFace is distributed by the authors "
                             "(project page hliang2/BenchmarkingReco); pass files= or mapping=")
        raw[name] = _read(f)
    canon = {name: canonicalise(df, name, (mapping or {}).get(name), response_labels)
             for name, df in raw.items()}
    images, single, pairs = canon["images"], canon["single_annotations"], canon["pairs"]
    if "path" in images and root is not None:
        images["path"] = [str(p) if Path(str(p)).is_absolute() else str(root / str(p)) for p in images["path"]]
    known = set(images["image_id"])
    for name, df, cols in (("pairs", pairs, ("image_a", "image_b")), ("single_annotations", single, ("image_id",))):
        for c in cols:
            miss = ~df[c].isin(known)
            if miss.any():
                raise ValueError(f"{name}: {c} {df.loc[miss, c].iloc[0]!r} is not in images")
    scores, pairs = derive(images, single, pairs, t_hcic, uncanny_threshold, missing_uncanny)
    return CausalFace(images, single, pairs, scores, t_hcic)
