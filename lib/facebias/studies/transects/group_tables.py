"""Descriptive tables of paper 004's figures (``docs/specs/transects.md`` A1.13 (d)-(i), A2).

* :func:`group_errors`: error rate per intersectional group with Wilson intervals (Fig. 13);
  :func:`paired_groups`: pairs of groups that differ in one attribute (Fig. 14);
  :func:`age_gender_errors`: error by gender x age at each threshold (Fig. 16).
* :func:`attribute_distributions`: the violin plots' long frame (Figs 11-12).
* :func:`annotation_sd`: the raters' disagreement per image (Fig. 8, top left);
  :func:`largest_errors`: the errors farthest from the human score (Fig. 17).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.config import param_int
from facebias.stats import wilson_interval
from facebias.studies.transects.error_model import errors
from facebias.studies.transects.pruning import AGE_NAMES, BINARY, _half_up, _scores
from facebias.validate import require_columns

__all__ = ["group_errors", "paired_groups", "age_gender_errors", "attribute_distributions", "annotation_sd",
           "largest_errors"]


def _group_label(letters: Mapping[str, str]) -> str:
    """'DF-s' style: skin (or a GAN study's tone axis) + gender, then '-' + the other
    attributes' letters (hair, or a GAN study's shortcut attribute; parts absent from
    ``letters`` dropped)."""
    head = letters.get("skin", "") + letters.get("tone", "") + letters.get("gender", "")
    tail = "".join(v for k, v in letters.items() if k not in ("skin", "tone", "gender"))
    return head + ("-" + tail if tail and head else tail)


def _levels(levels: Mapping[str, tuple[str, tuple[str, str]]] | None) -> dict[str, tuple[str, tuple[str, str]]]:
    """Binary attributes of a group table: name -> (0/1 column, letters of level 0 / 1);
    default the procedural study's gender / skin / hair (:data:`BINARY`)."""
    if levels is None:
        return {k: (col, letters) for k, (_src, col, letters) in BINARY.items()}
    return {k: (str(v[0]), (str(v[1][0]), str(v[1][1]))) for k, v in levels.items()}


def _rates(k: np.ndarray, n: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    rate = np.full(k.shape, np.nan)
    lo = np.full(k.shape, np.nan)
    hi = np.full(k.shape, np.nan)
    ok = n > 0
    if ok.any():
        rate[ok] = k[ok] / n[ok]
        lo[ok], hi[ok] = wilson_interval(k[ok], n[ok], ci)
    return rate, lo, hi


def group_errors(df: pd.DataFrame, error_col: str, by: Sequence[str] = ("gender", "skin", "hair"),
                 ci: float = 0.95, levels: Mapping[str, tuple[str, tuple[str, str]]] | None = None
                 ) -> pd.DataFrame:
    """Error rate per intersectional group (Fig. 13): ``group`` ('DF-s' = dark female,
    short hair), one letter column per attribute of ``by`` (gender F/M, skin L/D, hair s/l),
    ``k`` errors of ``n`` images, ``rate``, Wilson ``lo``/``hi``. Every combination is
    listed (``n = 0`` gives NaN rates). Rows with a NaN error are left out.

    ``levels``: the binary attributes, name -> (0/1 column, (letter 0, letter 1)); default
    gender / skin / hair (:data:`BINARY`). A GAN study adds its shortcut attribute, e.g.
    :func:`no_truth_levels`.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per image with ``error_col`` (0/1, NaN = no face) and the 0/1 columns of
        ``by`` (``gender_male``, ``skin_dark``, ``hair_long`` by default).
    error_col : str
        The error column.
    by : sequence of str, default ("gender", "skin", "hair")
        Attributes crossed.
    ci : float, default 0.95
        Coverage of the Wilson interval.
    levels : mapping, optional
        The binary attributes (see above).

    Returns
    -------
    pandas.DataFrame
        2 ** len(by) rows: ``group``, the letter columns, ``k``, ``n``, ``rate`` (a
        fraction), ``lo``, ``hi``.

    Raises
    ------
    ValueError
        For an attribute not in ``levels`` or a missing column.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 0, 1, 1], "skin_dark": [1, 1, 0, 0],
    ...                    "e": [1.0, 0.0, 0.0, np.nan]})
    >>> group_errors(df, "e", by=("gender", "skin")).round(3)
      group gender skin  k  n  rate     lo     hi
    0    LF      F    L  0  0   NaN    NaN    NaN
    1    DF      F    D  1  2   0.5  0.095  0.905
    2    LM      M    L  0  1   0.0  0.000  0.793
    3    DM      M    D  0  0   NaN    NaN    NaN
    """
    lv = _levels(levels)
    by = list(by)
    for b in by:
        if b not in lv:
            raise ValueError(f"by: {b!r} is not one of {list(lv)}")
    require_columns(df, [error_col] + [lv[b][0] for b in by], "group_errors")
    d = df[df[error_col].notna()]
    e = d[error_col].to_numpy(dtype=float)
    rows = []
    for levels in np.ndindex(*(2,) * len(by)):
        mask = np.ones(len(d), dtype=bool)
        letters = {}
        for b, lev in zip(by, levels, strict=True):
            mask &= d[lv[b][0]].to_numpy() == lev
            letters[b] = lv[b][1][lev]
        rows.append({"group": _group_label(letters), **letters, "k": int(e[mask].sum()),
                     "n": int(mask.sum())})
    out = pd.DataFrame(rows)
    out["rate"], out["lo"], out["hi"] = _rates(out["k"], out["n"], ci)
    return out


def paired_groups(table: pd.DataFrame, levels: Mapping[str, tuple[str, tuple[str, str]]] | None = None
                  ) -> pd.DataFrame:
    """Pairs of groups of :func:`group_errors` that differ in exactly one attribute (Fig. 14).

    One row per pair: ``attribute`` (the one that differs), ``shared`` (label of the
    attributes they share, e.g. 'F-s' for a skin pair), ``x_group``/``y_group`` (level 0 /
    level 1 of the differing attribute: F/M, L/D, s/l), ``x``/``y`` the error rates, with
    their Wilson bounds and counts. A point on y = x: the attribute has no effect there.
    ``levels``: as in :func:`group_errors` (the same mapping the table was made with).

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`group_errors` table.
    levels : mapping, optional
        The binary attributes.

    Returns
    -------
    pandas.DataFrame
        Columns ``attribute, shared, x_group, y_group, x, y, x_lo, x_hi, y_lo, y_hi, x_n,
        y_n`` (rates are fractions).

    Raises
    ------
    ValueError
        If ``table`` lacks a column.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 0, 1, 1], "skin_dark": [1, 1, 0, 0],
    ...                    "e": [1.0, 0.0, 0.0, np.nan]})
    >>> pairs = paired_groups(group_errors(df, "e", by=("gender", "skin")))
    >>> pairs[["attribute", "shared", "x_group", "y_group", "x", "y"]]
      attribute shared x_group y_group    x    y
    0    gender      L      LF      LM  NaN  0.0
    1    gender      D      DF      DM  0.5  NaN
    2      skin      F      LF      DF  NaN  0.5
    3      skin      M      LM      DM  0.0  NaN
    """
    lv = _levels(levels)
    attrs = [b for b in lv if b in table.columns]
    require_columns(table, ["group", "rate", "lo", "hi", "n"], "paired_groups")
    idx = {tuple(r[a] for a in attrs): r for _, r in table.iterrows()}
    rows = []
    for a in attrs:
        others = [o for o in attrs if o != a]
        for key, r0 in idx.items():
            letters = dict(zip(attrs, key, strict=True))
            if letters[a] != lv[a][1][0]:
                continue
            k1 = tuple(lv[a][1][1] if o == a else letters[o] for o in attrs)
            r1 = idx.get(k1)
            if r1 is None:
                continue
            rows.append({"attribute": a, "shared": _group_label({o: letters[o] for o in others}),
                         "x_group": r0["group"], "y_group": r1["group"],
                         "x": r0["rate"], "y": r1["rate"], "x_lo": r0["lo"], "x_hi": r0["hi"],
                         "y_lo": r1["lo"], "y_hi": r1["hi"], "x_n": r0["n"], "y_n": r1["n"]})
    return pd.DataFrame(rows)


def age_gender_errors(df: pd.DataFrame, p_male: Any, thresholds: Sequence[float] = (0.5, 0.8),
                      ci: float = 0.95) -> pd.DataFrame:
    """Error by gender x 6 age levels at each threshold (Fig. 16): long frame with
    ``threshold, gender (F/M), age_level (round(5 * age), 0 child .. 5 senior), age_name,
    k, n, rate, lo, hi``. Needs the set with children (prune without ``drop_children``).
    ``p_male``: a column name of ``df`` or an array aligned with it; NaN rows are dropped.

    Parameters
    ----------
    df : pandas.DataFrame
        Pruned images with ``gender_male`` (0/1) and the ``age`` score in [0, 1].
    p_male : str or array_like
        P(male) per row (male iff P(male) > threshold).
    thresholds : sequence of float, default (0.5, 0.8)
        Thresholds on P(male).
    ci : float, default 0.95
        Coverage of the Wilson interval.

    Returns
    -------
    pandas.DataFrame
        ``len(thresholds) x 2 x 6`` rows (rates are fractions, NaN where ``n = 0``).

    Raises
    ------
    ValueError
        For a missing column, a ``p_male`` of the wrong length or a bad age score.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 1, 1], "age": [0.0, 0.6, 0.6]})
    >>> out = age_gender_errors(df, np.array([0.7, 0.9, 0.6]))
    >>> out[out["n"] > 0][["threshold", "gender", "age_name", "k", "n", "rate"]]
        threshold gender age_name  k  n  rate
    0         0.5      F    child  1  1   1.0
    9         0.5      M    adult  0  2   0.0
    12        0.8      F    child  0  1   0.0
    21        0.8      M    adult  1  2   0.5
    """
    require_columns(df, ["gender_male", "age"], "age_gender_errors")
    p = df[p_male].to_numpy(float) if isinstance(p_male, str) else np.asarray(p_male, dtype=float)
    if p.shape != (len(df),):
        raise ValueError(f"p_male must have one value per row ({len(df)}), got shape {p.shape}")
    y = df["gender_male"].to_numpy()
    level = _half_up(5 * _scores(df, "age", "age_gender_errors"))
    ok = ~np.isnan(p)
    rows = []
    for t in thresholds:
        e = errors(p, y, t)
        for g, name in enumerate(BINARY["gender"][2]):
            for lev in range(6):
                m = ok & (y == g) & (level == lev)
                rows.append({"threshold": float(t), "gender": name, "age_level": lev,
                             "age_name": AGE_NAMES[lev], "k": int(e[m].sum()), "n": int(m.sum())})
    out = pd.DataFrame(rows)
    out["rate"], out["lo"], out["hi"] = _rates(out["k"], out["n"], ci)
    return out


def attribute_distributions(frames: Mapping[str, pd.DataFrame],
                            attributes: Sequence[str] = ("age", "facial_hair", "hair_length", "makeup",
                                                         "skin_color", "smile")) -> pd.DataFrame:
    """Long frame for the violin plots of Figs 11-12: ``dataset, gender ('female' score <=
    0.4 / 'male' >= 0.6, as the authors' code; others dropped), skin ('light' < 0.4,
    'dark' > 0.6, else 'medium'), attribute, value``.

    Parameters
    ----------
    frames : mapping
        Data-set name -> scores (``gender``, ``skin_color`` and the attributes, in [0, 1]).
    attributes : sequence of str
        Score columns to stack (those absent from a frame are skipped).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, gender, skin, attribute, value`` (value: score in [0, 1]).

    Raises
    ------
    ValueError
        If a frame's ``gender`` or ``skin_color`` is missing or outside [0, 1].

    Examples
    --------
    >>> frames = {"transects": pd.DataFrame({"gender": [0.1, 0.5, 0.9], "skin_color": [0.2, 0.5, 0.9],
    ...                                      "age": [0.3, 0.4, 0.5]})}
    >>> attribute_distributions(frames, ["age"])
         dataset  gender   skin attribute  value
    0  transects  female  light       age    0.3
    1  transects    male   dark       age    0.5
    """
    parts = []
    for name, df in frames.items():
        g = _scores(df, "gender", f"attribute_distributions[{name}]")
        s = _scores(df, "skin_color", f"attribute_distributions[{name}]")
        gender = np.where(g <= 0.4, "female", np.where(g >= 0.6, "male", ""))
        skin = np.where(s < 0.4, "light", np.where(s > 0.6, "dark", "medium"))
        keep = gender != ""
        for a in attributes:
            if a not in df.columns:
                continue
            parts.append(pd.DataFrame({"dataset": name, "gender": gender[keep], "skin": skin[keep],
                                       "attribute": a, "value": df[a].to_numpy(float)[keep]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["dataset", "gender", "skin", "attribute", "value"])


def annotation_sd(votes: pd.DataFrame, scales: Mapping[str, Any]) -> pd.DataFrame:
    """004 Fig. 8 (top left): per image and question, the SD (ddof 0) of the raw votes
    divided by ``K - 1`` (the scale's levels), i.e. the raters' disagreement in score units.

    Parameters
    ----------
    votes : pandas.DataFrame
        ``item_id``, ``question``, ``value`` (level index 0..K-1).
    scales : mapping
        Question -> scale with ``k`` levels (e.g. :data:`facebias.annotate.SCALES_TRANSECTS`);
        questions without a scale are ignored.

    Returns
    -------
    pandas.DataFrame
        ``item_id``, ``question``, ``n`` (votes), ``sd`` (in [0, 0.5]).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> from facebias.annotate.scales import Scale
    >>> v = pd.DataFrame({"item_id": ["a"] * 4 + ["b"] * 2, "question": "smile",
    ...                   "value": [0, 2, 0, 2, 1, 1]})
    >>> annotation_sd(v, {"smile": Scale("smile", ("Frown", "Neutral", "Smile"))})["sd"].tolist()
    [0.5, 0.0]
    """
    require_columns(votes, ["item_id", "question", "value"], "votes")
    v = votes[votes["question"].isin(list(scales))]
    g = v.groupby(["item_id", "question"], sort=True)["value"]
    out = g.agg(n="size", sd=lambda x: float(np.std(x.to_numpy(dtype=float)))).reset_index()
    k = out["question"].map({q: scales[q].k for q in scales}).to_numpy(dtype=float)
    out["sd"] = out["sd"].to_numpy(dtype=float) / (k - 1)
    return out


def largest_errors(frame: pd.DataFrame, p_male: str, k: int = 4, threshold: float = 0.5,
                   score: str = "gender", label: str = "gender_male") -> pd.DataFrame:
    """004 Fig. 17: for each direction of misclassification, the ``k`` errors where the
    classifier's P(male) is farthest from the mean human gender score.

    ``M->F``: perceived male (``label`` 1) called female (``P(male) <= threshold``);
    ``F->M``: perceived female called male. Within each, rows sorted by
    ``gap = |P(male) - score|`` (largest first; ties by index order). NaN P(male) is skipped.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per image: ``p_male``, ``score`` (gender score in [0, 1]), ``label`` (0/1).
    p_male : str
        Column of P(male).
    k : int, default 4
        Images per direction (fewer when fewer errors exist).
    threshold : float, default 0.5
        The classifier says male iff ``P(male) > threshold``.
    score, label : str, default "gender", "gender_male"
        Perceived gender score and binary label columns.

    Returns
    -------
    pandas.DataFrame
        ``direction``, ``rank`` (0 = largest), ``index`` (the row label in ``frame``),
        ``p_male``, ``score``, ``gap``.

    Raises
    ------
    ValueError
        For a missing column or ``k < 1``.

    Examples
    --------
    >>> f = pd.DataFrame({"p": [0.1, 0.4, 0.9, 0.2, 0.95], "gender": [0.9, 0.8, 0.1, 0.1, 0.3],
    ...                   "gender_male": [1, 1, 0, 0, 0]}, index=list("abcde"))
    >>> largest_errors(f, "p", k=2)[["direction", "index", "gap"]].round(2).values.tolist()
    [['M->F', 'a', 0.8], ['M->F', 'b', 0.4], ['F->M', 'c', 0.8], ['F->M', 'e', 0.65]]
    """
    require_columns(frame, [p_male, score, label], "largest_errors")
    k = param_int(k, "k", minimum=1)
    p = frame[p_male].to_numpy(dtype=float)
    y = frame[label].to_numpy(dtype=float)
    gap = np.abs(p - frame[score].to_numpy(dtype=float))
    rows = []
    for direction, sel in (("M->F", (y == 1) & (p <= threshold)), ("F->M", (y == 0) & (p > threshold))):
        idx = np.flatnonzero(sel & np.isfinite(p))
        order = idx[np.argsort(-gap[idx], kind="stable")][:k]
        rows += [{"direction": direction, "rank": r, "index": frame.index[i], "p_male": float(p[i]),
                  "score": float(frame[score].iat[i]), "gap": float(gap[i])} for r, i in enumerate(order)]
    return pd.DataFrame(rows, columns=["direction", "rank", "index", "p_male", "score", "gap"])
