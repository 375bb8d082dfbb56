"""Paper 004, the orthogonalisation in full (``docs/specs/transects.md`` section A1.7, Fig. 5;
acceptance checks A5.3-4b): every measured attribute's drift along every transect axis, raw
normal vs orthogonalised direction, on a learned generator read by machine labellers.

* :func:`drift_table`: the full table (columns :data:`DRIFT_COLUMNS`), bootstrap intervals over
  seeds, no row picked;
* :func:`drift_acceptance`: its acceptance numbers (the smallest reduction, never the best case);
* :func:`drift_rise_notes`: where a drift grew after orthogonalising, and why it can.

Conventions: drifts in SDs of the labeller; the raw readings are
:func:`facebias.generate.checks.drift_readings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["DRIFT_COLUMNS", "drift_table", "drift_acceptance", "drift_rise_notes"]

#: Columns of :func:`drift_table`.
DRIFT_COLUMNS = ("axis", "lo", "hi", "attribute", "labeller", "on_axis", "sd", "fit_r2", "cos_raw_orthogonal",
                 "drift_raw", "drift_raw_lo", "drift_raw_hi", "n_raw", "drift_orthogonal", "drift_orthogonal_lo",
                 "drift_orthogonal_hi", "n_orthogonal", "change", "change_lo", "change_hi", "reduction",
                 "raw_resolved", "verdict", "predicted_raw", "predicted_orthogonal")


def _weighted_means(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per replicate (row of ``weights``, (B, n)) and column of ``x`` ((n, k), NaN = not
    measured): the weighted mean over the finite entries; NaN where they get no weight."""
    ok = np.isfinite(x)
    num = weights @ np.where(ok, x, 0.0)
    den = weights @ ok.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def drift_table(readings: pd.DataFrame, sd: Mapping[str, float], fit_r2: Mapping[str, float] | None = None,
                n_boot: int = 1000, seed: int = 0, ci: float = 0.95, include_axis: bool = False) -> pd.DataFrame:
    """Every attribute's drift along every axis, raw normal vs orthogonalised direction, with
    percentile bootstrap intervals over seeds: the full table, no row picked.

    Drift of an attribute along an axis = mean over seeds of (reading at the axis' ``hi`` -
    reading at ``lo``) / ``sd[labeller]`` (seeds where the labeller measured both ends). The
    seeds are resampled with :func:`facebias.stats.bootstrap_weights` (one set of weights for
    every cell, so raw and orthogonalised are paired), intervals by
    :func:`facebias.stats.percentile_interval`. ``change = |drift_orthogonal| - |drift_raw|``
    (its interval from the same replicates): positive = orthogonalising *added* drift.

    Parameters
    ----------
    readings : pandas.DataFrame
        :func:`facebias.generate.checks.drift_readings`: one row per (axis, direction, seed,
        attribute) with ``axis, lo, hi, direction, cos_raw_orthogonal, seed, attribute,
        labeller, on_axis, diff, predicted``.
    sd : mapping
        Labeller -> its SD over a reference set (the fit set's labels): the drift unit.
    fit_r2 : mapping, optional
        Attribute -> its hyperplane's fit score (``Hyperplanes.scores``: training R^2 of a
        ridge fit), shown beside the drift: how much of the attribute the normal captures.
    n_boot : int, default 1000
        Bootstrap replicates over seeds.
    seed : int, default 0
        Seed of the bootstrap.
    ci : float, default 0.95
        Coverage of the intervals.
    include_axis : bool, default False
        Also return the axis' own attribute (its response to the step; ``on_axis`` True).

    Returns
    -------
    pandas.DataFrame
        One row per (axis, attribute), columns :data:`DRIFT_COLUMNS`: drifts and change in SD
        of the labeller with ``_lo`` / ``_hi`` bounds, ``n_raw`` / ``n_orthogonal`` seeds
        measured, ``reduction = 1 - |orth| / |raw|``, ``raw_resolved`` (the raw interval
        excludes 0: a drift that exists), ``verdict`` (``"rose"``: change interval above 0;
        ``"fell"``: below 0; else ``"unchanged"``), ``predicted_raw`` /
        ``predicted_orthogonal`` (mean hyperplane prediction, fitted-label units).

    Raises
    ------
    ValueError
        For a missing column, a labeller without a positive finite ``sd``, ``n_boot < 1``,
        or a direction other than raw / orthogonal.

    Examples
    --------
    >>> r = pd.DataFrame({"axis": "g", "lo": -1.0, "hi": 1.0, "cos_raw_orthogonal": 0.9, "seed": [0, 1, 0, 1],
    ...                   "direction": ["raw", "raw", "orthogonal", "orthogonal"], "attribute": "a",
    ...                   "labeller": "la", "on_axis": False, "diff": [2.0, 4.0, 0.0, 1.0], "predicted": 0.0})
    >>> t = drift_table(r, {"la": 2.0}, n_boot=50)
    >>> t[["drift_raw", "drift_orthogonal", "reduction"]].round(2).to_dict("records")
    [{'drift_raw': 1.5, 'drift_orthogonal': 0.25, 'reduction': 0.83}]
    """
    from facebias.stats import bootstrap_weights, percentile_interval, percentile_mc_error

    require_columns(readings, ["axis", "lo", "hi", "direction", "cos_raw_orthogonal", "seed", "attribute",
                               "labeller", "on_axis", "diff", "predicted"], "readings")
    if n_boot < 1:
        raise ValueError(f"n_boot: must be >= 1, got {n_boot}")
    bad_dir = set(readings["direction"]) - {"raw", "orthogonal"}
    if bad_dir:
        raise ValueError(f"readings: direction must be 'raw' or 'orthogonal', got {sorted(bad_dir)}")
    for lab in readings["labeller"].unique():
        v = sd.get(lab)
        if v is None or not np.isfinite(v) or v <= 0:
            raise ValueError(f"sd: labeller {lab!r} needs a positive finite SD, got {v!r}")
    r = readings if include_axis else readings[~readings["on_axis"].astype(bool)]
    keys = ["axis", "attribute"]
    cells = r[keys + ["lo", "hi", "labeller", "on_axis", "cos_raw_orthogonal"]].drop_duplicates(keys)
    seeds = np.sort(r["seed"].unique())
    cols = pd.MultiIndex.from_frame(cells[keys])
    wide = {d: (r[r["direction"] == d].assign(x=lambda f: f["diff"] / f["labeller"].map(dict(sd)))
                .set_index(["seed", *keys])["x"].unstack(keys).reindex(index=seeds, columns=cols))
            for d in ("raw", "orthogonal")}
    pred = r.groupby(keys + ["direction"])["predicted"].mean()
    w = np.stack(list(bootstrap_weights(len(seeds), n_boot, seed)))
    x_raw, x_orth = wide["raw"].to_numpy(float), wide["orthogonal"].to_numpy(float)
    rep_raw, rep_orth = _weighted_means(x_raw, w), _weighted_means(x_orth, w)
    rep_change = np.abs(rep_orth) - np.abs(rep_raw)
    (raw_lo, raw_hi), (orth_lo, orth_hi), (ch_lo, ch_hi) = (percentile_interval(rep, ci)
                                                            for rep in (rep_raw, rep_orth, rep_change))
    mcse = {k: percentile_mc_error(rep, ci) for k, rep in
            (("drift_raw", rep_raw), ("drift_orthogonal", rep_orth), ("change", rep_change))}
    with np.errstate(invalid="ignore"):
        est_raw, est_orth = np.nanmean(x_raw, axis=0), np.nanmean(x_orth, axis=0)
    rows = []
    for j, (_, c) in enumerate(cells.iterrows()):
        dr, do = float(est_raw[j]), float(est_orth[j])
        ch = abs(do) - abs(dr)
        rows.append({
            "axis": c["axis"], "lo": float(c["lo"]), "hi": float(c["hi"]), "attribute": c["attribute"],
            "labeller": c["labeller"], "on_axis": bool(c["on_axis"]), "sd": float(sd[c["labeller"]]),
            "fit_r2": float((fit_r2 or {}).get(c["attribute"], np.nan)),
            "cos_raw_orthogonal": float(c["cos_raw_orthogonal"]),
            "drift_raw": dr, "drift_raw_lo": float(raw_lo[j]), "drift_raw_hi": float(raw_hi[j]),
            "n_raw": int(np.isfinite(x_raw[:, j]).sum()),
            "drift_orthogonal": do, "drift_orthogonal_lo": float(orth_lo[j]),
            "drift_orthogonal_hi": float(orth_hi[j]), "n_orthogonal": int(np.isfinite(x_orth[:, j]).sum()),
            "change": ch, "change_lo": float(ch_lo[j]), "change_hi": float(ch_hi[j]),
            "reduction": (1 - abs(do) / abs(dr)) if np.isfinite(dr) and dr != 0 and np.isfinite(do) else np.nan,
            "raw_resolved": bool(raw_lo[j] > 0 or raw_hi[j] < 0),
            "verdict": "rose" if ch_lo[j] > 0 else ("fell" if ch_hi[j] < 0 else "unchanged"),
            "predicted_raw": float(pred.get((c["axis"], c["attribute"], "raw"), np.nan)),
            "predicted_orthogonal": float(pred.get((c["axis"], c["attribute"], "orthogonal"), np.nan)),
            **{f"{k}_{b}_mcse": float(v[i][j]) for k, v in mcse.items() for i, b in enumerate(("lo", "hi"))},
        })
    return pd.DataFrame(rows, columns=list(DRIFT_COLUMNS))


def drift_acceptance(table: pd.DataFrame, target: float = 0.5) -> dict[str, Any]:
    """The acceptance numbers of a full :func:`drift_table` (off-axis rows): over the cells
    whose raw drift exists (``raw_resolved``), the *smallest* reduction (``drift_reduction``:
    "every unwanted drift at least ``target`` removed" holds iff it is >= ``target``) and its
    cell, how many cells there are, the share of them reduced by at least ``target``, and the
    number of cells (of all) whose drift rose (``verdict == "rose"``).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`drift_table` rows (``on_axis`` rows are left out).
    target : float, default 0.5
        Reduction a cell must reach (:data:`facebias.generate.checks.BACKEND_TARGETS`).

    Returns
    -------
    dict
        ``drift_reduction`` (NaN without a resolved cell), ``drift_reduction_cell``
        (``"<attribute> along <axis>"`` or None), ``drift_n_resolved``, ``drift_n_cells``,
        ``drift_halved_share`` (fraction; NaN without a resolved cell), ``drift_n_rose``.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> t = pd.DataFrame({"axis": "g", "attribute": ["a", "b", "c"], "on_axis": False,
    ...                   "raw_resolved": [True, True, False], "reduction": [0.9, -0.6, 0.0],
    ...                   "verdict": ["fell", "rose", "unchanged"]})
    >>> d = drift_acceptance(t)
    >>> d["drift_reduction"], d["drift_reduction_cell"], d["drift_halved_share"], d["drift_n_rose"]
    (-0.6, 'b along g', 0.5, 1)
    """
    require_columns(table, ["axis", "attribute", "on_axis", "raw_resolved", "reduction", "verdict"], "table")
    off = table[~table["on_axis"].astype(bool)]
    res = off[off["raw_resolved"].astype(bool) & off["reduction"].notna()]
    out: dict[str, Any] = {"drift_reduction": float("nan"), "drift_reduction_cell": None,
                           "drift_n_resolved": len(res), "drift_n_cells": len(off),
                           "drift_halved_share": float("nan"), "drift_n_rose": int((off["verdict"] == "rose").sum())}
    if len(res):
        worst = res.loc[res["reduction"].idxmin()]
        out.update(drift_reduction=float(worst["reduction"]),
                   drift_reduction_cell=f"{worst['attribute']} along {worst['axis']}",
                   drift_halved_share=float((res["reduction"] >= target).mean()))
    return out


def drift_rise_notes(table: pd.DataFrame) -> list[str]:
    """One sentence per off-axis cell of :func:`drift_table` whose drift *grew* after
    orthogonalising (``change > 0``) where a drift exists (the raw or the orthogonalised
    interval excludes 0, or the change's interval is above 0: ``verdict == "rose"``), saying by
    how much, whether the rise is beyond the bootstrap noise, and why it can happen: the
    orthogonalised direction holds the attribute's *hyperplane* fixed (its predicted change
    is 0 by construction), so whatever the labeller reads that the hyperplane does not
    capture (1 - its fit R^2 of the label's variance) is free to move, and the
    orthogonalised direction leaves the raw normal (cosine below 1) into those parts, with a
    step ``1 / cosine`` times as long (it moves the axis' decision value by 1 per unit step,
    as the unit normal does).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`drift_table` rows.

    Returns
    -------
    list of str
        Markdown sentences, in table order (empty when no drift grew).

    Examples
    --------
    >>> t = pd.DataFrame({"axis": ["gender"], "attribute": ["age"], "labeller": ["age_years"], "on_axis": [False],
    ...     "verdict": ["unchanged"], "raw_resolved": [True], "drift_raw": [0.4], "drift_raw_lo": [0.1],
    ...     "drift_raw_hi": [0.7], "drift_orthogonal": [0.65], "drift_orthogonal_lo": [0.3],
    ...     "drift_orthogonal_hi": [1.0], "change": [0.25], "change_lo": [-0.05], "change_hi": [0.55],
    ...     "n_raw": [36], "n_orthogonal": [36], "fit_r2": [0.23], "predicted_orthogonal": [0.0],
    ...     "cos_raw_orthogonal": [0.8]})
    >>> drift_rise_notes(t)[0][:60]
    '**age along gender** (read by age_years, 36 seeds): |drift| '
    """
    require_columns(table, ["axis", "attribute", "labeller", "on_axis", "verdict", "raw_resolved", "drift_raw",
                            "drift_raw_lo", "drift_raw_hi", "drift_orthogonal", "drift_orthogonal_lo",
                            "drift_orthogonal_hi", "change", "change_lo", "change_hi", "n_raw", "n_orthogonal",
                            "fit_r2", "predicted_orthogonal", "cos_raw_orthogonal"], "table")
    orth_resolved = (table["drift_orthogonal_lo"] > 0) | (table["drift_orthogonal_hi"] < 0)
    grew = (~table["on_axis"].astype(bool) & (table["change"] > 0)
            & (table["raw_resolved"].astype(bool) | orth_resolved | (table["verdict"] == "rose")))
    notes = []
    for _, r in table[grew].iterrows():
        r2 = r["fit_r2"]
        fit = (f"its hyperplane's fit R² is {r2:.2f}: the normal captures {r2:.0%} of the variance of the "
               f"{r['attribute']} label in the fit set, and removing it cannot remove the {1 - r2:.0%} it does not "
               "capture" if np.isfinite(r2) else "its hyperplane's fit quality is not known")
        noise = ("beyond the bootstrap noise (the change's interval is above 0)" if r["verdict"] == "rose" else
                 "within the bootstrap noise (the change's interval covers 0)")
        notes.append(
            f"**{r['attribute']} along {r['axis']}** (read by {r['labeller']}, {min(r['n_raw'], r['n_orthogonal'])} "
            f"seeds): |drift| rose from {r['drift_raw']:+.2f} SD [{r['drift_raw_lo']:+.2f}, {r['drift_raw_hi']:+.2f}] "
            f"on the raw normal to {r['drift_orthogonal']:+.2f} SD [{r['drift_orthogonal_lo']:+.2f}, "
            f"{r['drift_orthogonal_hi']:+.2f}] orthogonalised (change {r['change']:+.2f} "
            f"[{r['change_lo']:+.2f}, {r['change_hi']:+.2f}], {noise}). The orthogonalised step holds the "
            f"{r['attribute']} *hyperplane* fixed (predicted change {r['predicted_orthogonal']:+.1e}, zero by "
            f"construction), but {fit}; the orthogonalised direction is not the raw normal (cosine "
            f"{r['cos_raw_orthogonal']:.2f}, so its step is {1 / r['cos_raw_orthogonal']:.1f}x as long in the "
            f"latent for the same change of {r['axis']}), and it moves the latent along parts the hyperplane does "
            "not model.")
    return notes
