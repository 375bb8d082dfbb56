"""Paper 003 Table 1 (section 3.4): the gender gap per race, Δd' between the female and
male genuine (and impostor) score distributions, on each evaluation set
(``docs/specs/batest.md`` B.2 and B.5).

Measured: :func:`gender_gap`, :func:`gender_gaps` (several sets, with the planted gap of a
known-truth world), :func:`gap_rel_error_mean` (the gap against the planted one) and
:func:`table1_measured` (the published layout). Published: :data:`TABLE1_PUBLISHED`,
:func:`table1_published`; the text's percentages: :func:`table1_percentages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import d_prime
from facebias.studies.batest.verification import _scores_labels
from facebias.validate import require_columns

__all__ = ["gender_gap", "gender_gaps", "gap_rel_error_mean", "TABLE1_PUBLISHED", "table1_published",
           "table1_percentages", "table1_measured"]


def gender_gap(
    pairs: pd.DataFrame, score: str = "score", group: str = "group", label: str = "label"
) -> pd.DataFrame:
    """Table 1 gender gap per race: ``dprime_genuine`` = d'(female genuine, male genuine)
    and ``dprime_impostor`` likewise, plus the signed mean differences ``gap_genuine`` and
    ``gap_impostor`` (male mean - female mean, score units); group codes are race letter +
    ``F``/``M``.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with score (similarity), group (race letter + ``F``/``M``) and
        label (1 genuine, 0 impostor).
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        Indexed by race letter: ``dprime_genuine``, ``gap_genuine``, ``n_genuine_F``,
        ``n_genuine_M`` and the same for ``impostor``; NaN d' and gap where a gender has
        no pairs of that kind.

    Raises
    ------
    ValueError
        For a missing column, a bad score or label, or a group code that is not a race
        letter + ``F``/``M``.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> gender_gap(pairs)[["dprime_genuine", "gap_genuine", "n_genuine_F"]].round(3)
          dprime_genuine  gap_genuine  n_genuine_F
    race
    A                1.0          0.1            2
    """
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    codes = pairs[group].astype(str)
    if not (codes.str.len() == 2).all() or not codes.str[1].isin(["F", "M"]).all():
        bad = codes[(codes.str.len() != 2) | ~codes.str[1].isin(["F", "M"])].iloc[0]
        raise ValueError(f"column {group!r}: expected race letter + F/M, got {bad!r}")
    race, sex = codes.str[0].to_numpy(), codes.str[1].to_numpy()
    rows = []
    for r in sorted(pd.unique(race)):
        row: dict[str, Any] = {"race": r}
        for kind, lab in (("genuine", gen), ("impostor", ~gen)):
            f = s[(race == r) & (sex == "F") & lab]
            m = s[(race == r) & (sex == "M") & lab]
            both = f.size and m.size
            row[f"dprime_{kind}"] = d_prime(f, m) if both else float("nan")
            row[f"gap_{kind}"] = float(m.mean() - f.mean()) if both else float("nan")
            row[f"n_{kind}_F"], row[f"n_{kind}_M"] = int(f.size), int(m.size)
        rows.append(row)
    return pd.DataFrame(rows).set_index("race")


def gender_gaps(
    pair_sets: Mapping[str, pd.DataFrame], planted: Mapping[str, float] | None = None, **kwargs: Any
) -> pd.DataFrame:
    """:func:`gender_gap` of each evaluation set, stacked: index (``set``, ``race``), sets in
    the order of ``pair_sets`` (set name -> pair table). With ``planted`` (race -> true gap
    M - F in score units, a known-truth world) a ``planted_gap`` column is added; a race
    without a planted gap raises. ``kwargs`` go to :func:`gender_gap`. The layout
    :func:`gap_rel_error_mean` and :func:`summarise` read.

    Parameters
    ----------
    pair_sets : mapping
        Evaluation-set name -> pair table (as :func:`gender_gap` reads).
    planted : mapping, optional
        Race letter -> true gap M - F (score units).
    **kwargs
        Column names for :func:`gender_gap`.

    Returns
    -------
    pandas.DataFrame
        :func:`gender_gap` columns (+ ``planted_gap``), index (``set``, ``race``).

    Raises
    ------
    ValueError
        If ``pair_sets`` is empty, a race has no planted gap, or as :func:`gender_gap`.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> gaps = gender_gaps({"original": pairs}, planted={"A": 0.2})
    >>> gaps[["gap_genuine", "planted_gap"]].round(3)
                   gap_genuine  planted_gap
    set      race
    original A             0.1          0.2
    """
    if not pair_sets:
        raise ValueError("pair_sets: no evaluation sets")
    gaps = pd.concat({k: gender_gap(p, **kwargs) for k, p in pair_sets.items()}, names=["set"])
    if planted is not None:
        races = gaps.index.get_level_values("race")
        missing = sorted(set(races) - set(planted))
        if missing:
            raise ValueError(f"planted: no planted gap for race(s) {missing}")
        gaps["planted_gap"] = [planted[r] for r in races]
    return gaps


def gap_rel_error_mean(
    gaps: pd.DataFrame, planted: Mapping[str, float], column: str = "gap_genuine"
) -> dict[Any, float]:
    """How far each evaluation set's mean gender gap is from the planted one, relative.

    ``gaps``: :func:`gender_gap` frames stacked with the set name as the first index level
    (:func:`gender_gaps`); ``planted``: race ->
    true gap (known-truth world). For each set ``s`` (in order of appearance)::

        |mean_r gaps[s, r][column] - mean(planted)| / |mean(planted)|

    with the mean over the set's races (NaN gaps skipped, pandas ``mean``) and over all
    of ``planted``'s values. 0 means the set's gap is the planted one on average.

    Parameters
    ----------
    gaps : pandas.DataFrame
        :func:`gender_gaps` output, index (set, race).
    planted : mapping
        Race -> true gap M - F (score units); the mean must be finite and non-zero.
    column : str, default "gap_genuine"
        The gap column compared.

    Returns
    -------
    dict
        Set name -> relative error (a fraction; 0.5 = off by half the planted gap).

    Raises
    ------
    ValueError
        For a missing column, an index that is not a MultiIndex, no planted gaps, or a
        mean planted gap that is zero or not finite.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> err = gap_rel_error_mean(gender_gaps({"original": pairs}), {"A": 0.2})
    >>> {k: round(v, 3) for k, v in err.items()}  # measured 0.1 vs planted 0.2
    {'original': 0.5}
    """
    require_columns(gaps, [column], "gaps")
    if not isinstance(gaps.index, pd.MultiIndex):
        raise ValueError("gaps: expected a (set, race) MultiIndex (pd.concat of gender_gap frames)")
    if not planted:
        raise ValueError("planted: no planted gaps")
    truth = np.mean(list(planted.values()))
    if not np.isfinite(truth) or truth == 0:
        raise ValueError(f"planted: the mean planted gap must be finite and non-zero, got {truth}")
    sets = gaps.index.get_level_values(0).unique()
    return {k: float(abs(gaps.loc[k, column].mean() - truth) / abs(truth)) for k in sets}


_RACES = ("Asian", "Black", "Indian", "White")
#: Paper Table 1 as transcribed in B.5: (condition, kind, matcher) -> values per race.
TABLE1_PUBLISHED: dict[tuple[str, str, str], tuple[float, float, float, float]] = {
    ("original", "genuine", "ArcFace"): (0.5336, 0.3146, 0.5094, 0.4115),
    ("original", "genuine", "MagFace"): (0.5008, 0.3393, 0.5030, 0.4164),
    ("balanced", "genuine", "ArcFace"): (0.2678, 0.2447, 0.5028, 0.2840),
    ("balanced", "genuine", "MagFace"): (0.2980, 0.2824, 0.5127, 0.2856),
    ("balanced_nfh", "genuine", "ArcFace"): (0.3901, 0.6813, 0.8819, 0.3719),
    ("balanced_nfh", "genuine", "MagFace"): (0.4028, 0.7288, 0.8901, 0.4095),
    ("original", "impostor", "ArcFace"): (0.0211, 0.1511, 0.0745, 0.0241),
    ("original", "impostor", "MagFace"): (0.0125, 0.0917, 0.0981, 0.0420),
    ("balanced", "impostor", "ArcFace"): (0.0150, 0.1262, 0.1790, 0.0398),
    ("balanced", "impostor", "MagFace"): (0.0528, 0.0505, 0.2455, 0.0847),
    ("balanced_nfh", "impostor", "ArcFace"): (0.0040, 0.0377, 0.2491, 0.0732),
    ("balanced_nfh", "impostor", "MagFace"): (0.0448, 0.0733, 0.3040, 0.1156),
}


def table1_published() -> pd.DataFrame:
    """``TABLE1_PUBLISHED`` as a frame: index (condition, kind, matcher), columns races.

    Returns
    -------
    pandas.DataFrame
        12 rows (3 conditions x genuine/impostor x ArcFace/MagFace), columns ``Asian,
        Black, Indian, White``: the paper's d' gender gaps.

    Examples
    --------
    >>> table1_published().loc[("original", "genuine", "ArcFace"), "White"]
    np.float64(0.4115)
    """
    idx = pd.MultiIndex.from_tuples(list(TABLE1_PUBLISHED), names=["condition", "kind", "matcher"])
    return pd.DataFrame(list(TABLE1_PUBLISHED.values()), index=idx, columns=list(_RACES))


def table1_percentages(table: pd.DataFrame, baseline: str = "original") -> pd.DataFrame:
    """Percent change of each condition vs ``baseline`` in a Table 1 frame (B.5).

    ``table``: index (condition, kind, matcher), one column per race (``table1_published``
    layout). One row per (kind, condition != baseline, race) with ``rom_pct`` = 100 (ratio
    of the two-matcher means - 1), ``mor_pct`` = 100 (mean of per-matcher ratios - 1) and
    ``pct_<matcher>`` per matcher; race ``"all"`` pools every race and matcher (RoM over
    all values, the paper's "average" convention). The paper mixes RoM and MoR.

    Parameters
    ----------
    table : pandas.DataFrame
        Index (condition, kind, matcher), one column per race.
    baseline : str, default "original"
        The condition the others are compared with.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind, condition, race, rom_pct, mor_pct, pct_<matcher>...`` (percent;
        ``mor_pct`` and ``pct_*`` are NaN for race ``"all"``).

    Raises
    ------
    ValueError
        If the index levels are not (condition, kind, matcher).

    Examples
    --------
    >>> pct = table1_percentages(table1_published())
    >>> pooled = pct[pct["race"] == "all"].set_index(["kind", "condition"])["rom_pct"]
    >>> pooled.round(1).to_dict()
    {('genuine', 'balanced'): -24.1, ('genuine', 'balanced_nfh'): 34.8,
     ('impostor', 'balanced'): 54.0, ('impostor', 'balanced_nfh'): 75.1}
    """
    if list(table.index.names) != ["condition", "kind", "matcher"]:
        raise ValueError("table: index must be (condition, kind, matcher)")
    rows = []
    for kind in table.index.unique("kind"):
        base = table.xs((baseline, kind), level=("condition", "kind"))
        for cond in table.index.unique("condition"):
            if cond == baseline or (cond, kind) not in table.index.droplevel("matcher"):
                continue
            cur = table.xs((cond, kind), level=("condition", "kind")).loc[base.index]
            for race in list(table.columns) + ["all"]:
                b = base.to_numpy().ravel() if race == "all" else base[race].to_numpy()
                c = cur.to_numpy().ravel() if race == "all" else cur[race].to_numpy()
                row: dict[str, Any] = {"kind": kind, "condition": cond, "race": race,
                                       "rom_pct": 100 * (c.mean() / b.mean() - 1)}
                row["mor_pct"] = 100 * (np.mean(c / b) - 1) if race != "all" else float("nan")
                if race != "all":
                    for m, pct in zip(base.index, 100 * (c / b - 1), strict=True):
                        row[f"pct_{m}"] = pct
                rows.append(row)
    return pd.DataFrame(rows)


def table1_measured(gaps: pd.DataFrame, matcher: str = "world") -> pd.DataFrame:
    """Our Table 1 in the published layout: Δd' (female vs male d') per race of each set.

    Parameters
    ----------
    gaps : pandas.DataFrame
        :func:`gender_gaps` output (index ``set, race``; races A, B, I, W).
    matcher : str, default "world"
        The name of the matcher level (the paper's are ArcFace and MagFace).

    Returns
    -------
    pandas.DataFrame
        Index (condition, kind, matcher), columns ``Asian, Black, Indian, White`` (as
        :func:`table1_published`, so :func:`table1_percentages` reads it).

    Raises
    ------
    ValueError
        For a missing column or race.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> t = table1_measured(gender_gaps({"original": pairs}))
    >>> round(float(t.loc[("original", "genuine", "world"), "Asian"]), 6)
    1.0
    """
    require_columns(gaps, ["dprime_genuine", "dprime_impostor"], "gaps")
    letters = {name[0]: name for name in _RACES}
    rows, index = [], []
    for cond in gaps.index.get_level_values("set").unique():
        sub = gaps.loc[cond]
        for kind in ("genuine", "impostor"):
            index.append((cond, kind, matcher))
            rows.append([float(sub[f"dprime_{kind}"].get(r, np.nan)) for r in letters])
    idx = pd.MultiIndex.from_tuples(index, names=["condition", "kind", "matcher"])
    return pd.DataFrame(rows, index=idx, columns=[letters[r] for r in letters])
