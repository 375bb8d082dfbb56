"""How well the machine labellers read what the GAN study's generator was asked for
(``docs/specs/transects.md`` A2 Fig. 9b: annotations against the generator's intent; the
study without truth has machine labellers in place of raters).

:func:`transect_labeller_agreement` / :func:`paired_direction` on the transects,
:func:`observational_labeller_agreement` on the observational sample, and
:func:`within_group_correlation` of its decision values (the planted confounding).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["within_group_correlation", "paired_direction", "transect_labeller_agreement",
           "observational_labeller_agreement"]


def within_group_correlation(values: pd.DataFrame, x: str, y: str, given: str) -> dict[str, float]:
    """Pearson correlation of ``values[x]`` and ``values[y]`` within each side of
    ``values[given]`` (decision value <= 0: ``"low"``, > 0: ``"high"``).

    Parameters
    ----------
    values : pandas.DataFrame
        Decision values per latent.
    x, y, given : str
        Column names.

    Returns
    -------
    dict
        ``{"low": r, "high": r}``; NaN for a side with fewer than 3 rows.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> v = pd.DataFrame({"skin": [0.0, 1, 2, 0, 1, 2], "light": [0.0, 1, 2, 2, 1, 0],
    ...                   "gender": [-1.0, -1, -1, 1, 1, 1]})
    >>> within_group_correlation(v, "skin", "light", "gender")
    {'low': 1.0, 'high': -1.0}
    """
    require_columns(values, [x, y, given], "within_group_correlation")
    side = values[given].to_numpy(float) > 0
    out = {}
    for name, m in (("low", ~side), ("high", side)):
        out[name] = float(np.corrcoef(values.loc[m, x], values.loc[m, y])[0, 1]) if m.sum() > 2 else float("nan")
    return out


def paired_direction(table: pd.DataFrame, reading: str, axis: str, sign: float = 1.0,
                     cluster_col: str = "transect") -> dict[str, Any]:
    """Does a labeller's reading move the way a transect axis was asked to? Pairs of images
    of one transect that differ only in ``axis`` (same ``cluster_col`` and every other
    ``*_idx``); for each, ``sign * (reading at the higher <axis>_c - reading at the lower)``.
    Returns ``n_pairs`` (both readings finite), ``share_intended`` (difference > 0),
    ``mean_difference`` (in the reading's unit, times ``sign``) and ``n_missing`` (pairs
    with a NaN reading). ``sign = -1`` for a reading that points the other way (ITA:
    higher = lighter, the skin axis: higher = darker).

    Parameters
    ----------
    table : pandas.DataFrame
        A transect table with ``reading``, ``<axis>_c``, ``cluster_col`` and ``*_idx``.
    reading : str
        The labeller's column.
    axis : str
        The transect axis.
    sign : float, default 1.0
        +1 if the reading grows with the axis, -1 if it shrinks.
    cluster_col : str, default "transect"
        Transect ids.

    Returns
    -------
    dict
        ``n_pairs``, ``share_intended`` (a fraction), ``mean_difference``, ``n_missing``.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> table = pd.DataFrame({"transect": [0, 0, 1, 1], "skin_tone_idx": [0, 1, 0, 1],
    ...                       "skin_tone_c": [-1.5, 1.5, -1.5, 1.5],
    ...                       "ita": [40.0, 10.0, 30.0, np.nan]})
    >>> paired_direction(table, "ita", "skin_tone", sign=-1)
    {'n_pairs': 1, 'share_intended': 1.0, 'mean_difference': 30.0, 'n_missing': 1}
    """
    idx = [c for c in table.columns if c.endswith("_idx") and c != f"{axis}_idx"]
    require_columns(table, [reading, f"{axis}_c", cluster_col], "paired_direction")
    diffs, missing = [], 0
    for _, grp in table.groupby([cluster_col, *idx], sort=True):
        if grp[f"{axis}_c"].nunique() < 2:
            continue
        g = grp.sort_values(f"{axis}_c")
        lo, hi = float(g[reading].iloc[0]), float(g[reading].iloc[-1])
        if np.isfinite(lo) and np.isfinite(hi):
            diffs.append(sign * (hi - lo))
        else:
            missing += 1
    d = np.asarray(diffs)
    return {"n_pairs": len(d), "share_intended": float((d > 0).mean()) if len(d) else float("nan"),
            "mean_difference": float(d.mean()) if len(d) else float("nan"), "n_missing": missing}


def transect_labeller_agreement(table: pd.DataFrame, kept: pd.DataFrame,
                                readings: Mapping[str, tuple]) -> dict[str, Any]:
    """How well the machine labellers read the levels a transect asked for.

    ``gender_perceived_matches_intended``: share of the kept rows of
    :func:`no_truth_analysis_frame` whose perceived gender equals the side of the intended
    gender decision value; then, per entry of ``readings`` (key -> (reading column of
    ``table``, sign: +1 if the reading grows with the axis[, axis]); the axis defaults to the
    key), :func:`paired_direction` with the labeller's column named.

    Parameters
    ----------
    table : pandas.DataFrame
        The transect table with the labellers' readings.
    kept : pandas.DataFrame
        :func:`no_truth_analysis_frame` rows (``gender_male``, ``gender_intended``).
    readings : mapping
        Key -> (reading column, sign[, axis]).

    Returns
    -------
    dict
        ``gender_perceived_matches_intended`` (a fraction), ``n_kept`` and one
        :func:`paired_direction` dict per key.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> table = pd.DataFrame({"transect": [0, 0], "skin_tone_idx": [0, 1],
    ...                       "skin_tone_c": [-1.5, 1.5], "ita": [40.0, 10.0]})
    >>> kept = pd.DataFrame({"gender_male": [0, 1, 1], "gender_intended": [0, 1, 0]})
    >>> out = transect_labeller_agreement(table, kept, {"skin_tone": ("ita", -1)})
    >>> round(out["gender_perceived_matches_intended"], 3), out["skin_tone"]["share_intended"]
    (0.667, 1.0)
    """
    require_columns(kept, ["gender_male", "gender_intended"], "transect_labeller_agreement")
    g = kept["gender_male"].to_numpy() == kept["gender_intended"].to_numpy()
    out: dict[str, Any] = {"gender_perceived_matches_intended": float(g.mean()) if len(g) else float("nan"),
                           "n_kept": len(kept)}
    for key, spec in readings.items():
        col, sign = spec[0], float(spec[1])
        axis = spec[2] if len(spec) > 2 else key
        out[key] = {"reading": col, "axis": axis, "sign": sign, **paired_direction(table, col, axis, sign)}
    return out


def observational_labeller_agreement(values: pd.DataFrame, readings: pd.DataFrame,
                                     attributes: Mapping[str, tuple[str, float]]) -> dict[str, Any]:
    """Per attribute (-> (reading column of ``readings``, sign)): agreement
    (:func:`facebias.annotate.machine.agreement`: n, Spearman, Pearson) between ``sign`` x
    the labeller's reading and the latent's decision value ``values[attribute]``.

    Parameters
    ----------
    values : pandas.DataFrame
        Decision values per latent.
    readings : pandas.DataFrame
        The labellers' readings, row-aligned with ``values``.
    attributes : mapping
        Attribute -> (reading column, sign).

    Returns
    -------
    dict
        Attribute -> ``reading``, ``sign`` and the agreement keys.

    Raises
    ------
    ValueError
        If the two tables have different lengths.

    Examples
    --------
    >>> values = pd.DataFrame({"skin_tone": [-1.0, 0.0, 1.0, 2.0]})
    >>> readings = pd.DataFrame({"ita": [50.0, 40.0, 20.0, 10.0]})  # ITA: higher = lighter
    >>> out = observational_labeller_agreement(values, readings, {"skin_tone": ("ita", -1)})
    >>> out["skin_tone"]["spearman"]
    1.0
    """
    from facebias.annotate.machine import agreement

    if len(values) != len(readings):
        raise ValueError(f"values ({len(values)}) and readings ({len(readings)}) must be aligned row by row")
    out = {}
    for attr, (col, sign) in attributes.items():
        out[attr] = {"reading": col, "sign": float(sign),
                     **agreement(float(sign) * readings[col].to_numpy(float), values[attr].to_numpy(float))}
    return out
