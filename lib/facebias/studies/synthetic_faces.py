"""Papers 004 and 000, the generation side: the checks the two generation notebooks report.

* ``summarise_procedural`` builds what ``reports/metrics/synthetic_faces.json`` and
  ``synthetic_faces_details.json`` hold (notebooks/synthetic_faces.py: the procedural generator,
  whose truth checks every manipulation).
* ``summarise_backend`` builds what ``reports/metrics/synthetic_faces_dcgan.json`` holds
  (notebooks/synthetic_faces_dcgan.py: a generator without truth, labelled by machine annotators).

Their pieces: ``normal_cosines`` (entanglement of the fitted normals), ``transect_range`` (a
true attribute's range along a transect stepped on the raw normal vs the orthogonalised
direction), ``transect_check`` (mean true value per intended level), ``pair_counts`` (000's
pairs), ``acceptance_metrics`` (the metric part of :func:`facebias.generate.checks.acceptance_report`),
``labeller_spearman`` (machine labellers against each other), ``gender_lever_rows`` and
``backend_measurements`` (the rows and numbers the backend's acceptance table reads), and
the orthogonalisation in full: ``drift_table`` (every measured attribute along every axis,
raw vs orthogonalised, bootstrap intervals over seeds), ``drift_acceptance`` (its acceptance
numbers: the smallest reduction, never the best case) and ``drift_rise_notes`` (where a drift
grew, and why it can). The dual-basis error is :func:`facebias.latent.orthogonality_error`;
the real-model measurements and the target verdicts are :mod:`facebias.generate.checks`.

Conventions: normals are unit rows (:class:`facebias.generate.hyperplanes.Hyperplanes`), so
their inner products are cosines; decision values and drifts as in :mod:`facebias.latent` and
:func:`drift_table` (drifts in SDs of the labeller).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.machine import agreement
from facebias.validate import require_columns

__all__ = ["normal_cosines", "transect_range", "transect_check", "pair_counts", "acceptance_metrics",
           "summarise_procedural", "labeller_spearman", "gender_lever_rows", "DRIFT_COLUMNS",
           "drift_table", "drift_acceptance", "drift_rise_notes", "backend_measurements", "summarise_backend"]

#: Keys of :func:`facebias.generate.checks.acceptance_report` that are not metrics: render
#: speed is a benchmark (``make bench``) and would change the metrics file on every run.
NOT_METRICS = ("render_ids_per_s",)


# --------------------------------------------------------------------------- procedural (known truth)
def normal_cosines(normals: Any, names: Sequence[str]) -> pd.DataFrame:
    """Cosines between unit attribute normals: ``normals @ normals.T`` labelled by ``names``
    on both axes. ``normals``: (K, D), unit rows (within 1e-6); a row of another length
    raises ``ValueError``, as do ``names`` of another length than K.

    Parameters
    ----------
    normals : array_like
        (K, D) unit attribute normals.
    names : sequence of str
        K attribute names, in the order of the rows.

    Returns
    -------
    pandas.DataFrame
        (K, K) cosines in [-1, 1] (1 on the diagonal; 0 = orthogonal normals).

    Raises
    ------
    ValueError
        For an empty or non-2-D array, a name count other than K, or a row whose length
        is not 1 within 1e-6.

    Examples
    --------
    >>> normal_cosines([[1.0, 0.0], [0.6, 0.8]], ["hair", "gender"])
            hair  gender
    hair     1.0     0.6
    gender   0.6     1.0
    """
    n = np.asarray(normals, dtype=np.float64)
    if n.ndim != 2 or not n.size:
        raise ValueError(f"normals: expected a non-empty (K, D) array, got shape {n.shape}")
    if len(names) != n.shape[0]:
        raise ValueError(f"names: {len(names)} names for {n.shape[0]} normals")
    norms = np.linalg.norm(n, axis=1)
    if not np.all(np.abs(norms - 1.0) <= 1e-6):
        bad = int(np.argmax(np.abs(norms - 1.0)))
        raise ValueError(f"normals: row {names[bad]!r} has length {norms[bad]:.6g}, expected unit rows")
    return pd.DataFrame(n @ n.T, index=list(names), columns=list(names))


def transect_range(raw: Any, orthogonal: Any) -> dict[str, float]:
    """Range (max - min) of one true attribute value along a transect stepped on the raw
    normal (``raw``) and along the orthogonalised direction (``orthogonal``), in that
    attribute's units: how much stepping *another* attribute leaks into it (004 Fig. 5:
    the generator's true gender along a hair-length transect). ``{"raw", "orthogonal"}``.

    Parameters
    ----------
    raw, orthogonal : array_like
        1-D true values of the attribute at each step of the two transects.

    Returns
    -------
    dict
        ``{"raw": float, "orthogonal": float}``: the two ranges (attribute units).

    Raises
    ------
    ValueError
        If either input is empty, not 1-D, or has a non-finite value.

    Examples
    --------
    >>> r = transect_range([0.1, 0.5, 0.9], [0.45, 0.5, 0.55])
    >>> {k: round(v, 3) for k, v in r.items()}
    {'raw': 0.8, 'orthogonal': 0.1}
    """
    out = {}
    for key, values in (("raw", raw), ("orthogonal", orthogonal)):
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or not v.size or not np.isfinite(v).all():
            raise ValueError(f"{key}: expected a non-empty 1-D array of finite values, got {v!r}")
        out[key] = float(np.ptp(v))
    return out


def transect_check(images: pd.DataFrame, axes: Sequence[str]) -> dict[str, pd.Series]:
    """The manipulation check of the transects: for each axis ``a`` the mean of the
    generator's true value ``true_<a>`` at each intended level ``<a>_idx`` (a Series
    indexed by level), from the transects' ``images.parquet`` table.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``<a>_idx`` and ``true_<a>`` for every axis.
    axes : sequence of str
        The transect axes.

    Returns
    -------
    dict
        Axis -> Series of the mean true value (the generator's units) per level.

    Raises
    ------
    ValueError
        If ``axes`` is empty or a column is missing.

    Examples
    --------
    >>> images = pd.DataFrame({"hair_idx": [0, 0, 1, 1], "true_hair": [0.1, 0.3, 0.6, 0.8]})
    >>> transect_check(images, ["hair"])["hair"].round(3).to_dict()
    {0: 0.2, 1: 0.7}
    """
    if not len(axes):
        raise ValueError("axes: no transect axes")
    require_columns(images, [c for a in axes for c in (f"{a}_idx", f"true_{a}")], "images")
    return {a: images.groupby(f"{a}_idx")[f"true_{a}"].mean() for a in axes}


def pair_counts(images: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, int]:
    """Paper 000's counts (Sec. 3.4): ``prototypes`` (images with ``is_prototype``),
    ``images``, ``positive`` / ``negative`` pairs (``label`` 1 / 0) and ``self_pairs``
    (positives of a prototype with itself, ``is_self_pair``).

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with a bool ``is_prototype``.
    pairs : pandas.DataFrame
        One row per pair with ``label`` (1 same, 0 different) and bool ``is_self_pair``.

    Returns
    -------
    dict
        ``prototypes``, ``images``, ``positive``, ``negative``, ``self_pairs`` (ints).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> images = pd.DataFrame({"is_prototype": [True, False, False]})
    >>> pairs = pd.DataFrame({"label": [1, 1, 0], "is_self_pair": [True, False, False]})
    >>> pair_counts(images, pairs)
    {'prototypes': 1, 'images': 3, 'positive': 2, 'negative': 1, 'self_pairs': 1}
    """
    require_columns(images, ["is_prototype"], "images")
    require_columns(pairs, ["label", "is_self_pair"], "pairs")
    return {"prototypes": int(images["is_prototype"].sum()), "images": len(images),
            "positive": int((pairs["label"] == 1).sum()), "negative": int((pairs["label"] == 0).sum()),
            "self_pairs": int(pairs["is_self_pair"].sum())}


def acceptance_metrics(report: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar entries of :func:`facebias.generate.checks.acceptance_report` (in its
    order), without those in :data:`NOT_METRICS`.

    Parameters
    ----------
    report : mapping
        The acceptance report.

    Returns
    -------
    dict
        Its scalar entries, minus render speed.

    Examples
    --------
    >>> acceptance_metrics({"detect_rate": 0.98, "render_ids_per_s": 40.0, "table": [1, 2]})
    {'detect_rate': 0.98}
    """
    return {k: v for k, v in report.items() if np.isscalar(v) and k not in NOT_METRICS}


def summarise_procedural(*, backend: str, provenance: str, summary: pd.Series | Mapping[str, Any],
                         transect_images: pd.DataFrame, hcic_images: pd.DataFrame, counts: Mapping[str, int],
                         orthogonality_error: float, gender_range: Mapping[str, float],
                         cosines: pd.DataFrame, check: Mapping[str, pd.Series],
                         acceptance: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(headline, details)``: what ``reports/metrics/<name>.json`` and
    ``<name>_details.json`` hold (notebooks/synthetic_faces.py).

    ``summary``: the synth product's ``summary.json``; ``transect_images`` / ``hcic_images``:
    the products' image tables; ``counts``: :func:`pair_counts`; ``orthogonality_error``:
    :func:`facebias.latent.orthogonality_error`; ``gender_range``: :func:`transect_range` of
    the true gender along a hair transect; ``cosines``: :func:`normal_cosines` (rounded to 4
    decimals here); ``check``: :func:`transect_check`; ``acceptance``:
    :func:`facebias.generate.checks.acceptance_report`, or ``None`` when the real-model
    checks did not run (``synthetic_faces.check_models: false``): then the headline has no
    ``acceptance`` key.

    Parameters
    ----------
    backend : str
        Generator name (``"procedural"``, ...).
    provenance : str
        Where the products came from (written to the details).
    summary : pandas.Series or mapping
        The synth product's ``summary.json``.
    transect_images, hcic_images : pandas.DataFrame
        The two products' image tables.
    counts : mapping
        :func:`pair_counts`.
    orthogonality_error : float
        Largest dual-basis error.
    gender_range : mapping
        :func:`transect_range` of the true gender along a hair transect.
    cosines : pandas.DataFrame
        :func:`normal_cosines`.
    check : mapping
        :func:`transect_check`.
    acceptance : mapping, optional
        The real-model acceptance report, ``None`` when not run.

    Returns
    -------
    headline : dict
        Image counts, pair counts, orthogonality error, gender range and (when run) the
        acceptance metrics.
    details : dict
        Papers, provenance, summary, rounded cosines and the transect check.
    """
    head: dict[str, Any] = {
        "source": f"synthetic ({backend} generator)",
        "n_transect_images": len(transect_images),
        "n_hcic_images": len(hcic_images),
        "pairs": dict(counts),
        "orthogonality_max_error": float(orthogonality_error),
        "hair_transect_gender_range": dict(gender_range),
    }
    if acceptance is not None:
        head["acceptance"] = acceptance_metrics(acceptance)
    details: dict[str, Any] = {
        "paper": ["004", "000"], "provenance": provenance,
        "summary": summary.to_dict() if isinstance(summary, pd.Series) else dict(summary),
        "normal_cosines": cosines.round(4).to_dict(),
        "transect_check": {a: v.to_dict() for a, v in check.items()},
    }
    return head, details


# --------------------------------------------------------------------------- a backend without truth
def labeller_spearman(labels: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rho between every two label columns (machine labellers), each over the
    rows both measured (:func:`facebias.annotate.machine.agreement`; NaN with fewer than 3
    such rows or a constant side). Square, columns in ``labels``' order, 1 on the diagonal
    of a non-constant labeller.

    Parameters
    ----------
    labels : pandas.DataFrame
        One row per image, one column per labeller (NaN = not measured).

    Returns
    -------
    pandas.DataFrame
        Symmetric matrix of Spearman's rho in [-1, 1] (NaN where undefined).

    Raises
    ------
    ValueError
        If ``labels`` has no columns.

    Examples
    --------
    >>> labels = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [2.0, 1, 4, 3], "c": [4.0, 3, 2, 1]})
    >>> labeller_spearman(labels).round(2)
         a    b    c
    a  1.0  0.6 -1.0
    b  0.6  1.0 -0.6
    c -1.0 -0.6  1.0
    """
    cols = list(labels.columns)
    if not cols:
        raise ValueError("labels: no label columns")
    rho = pd.DataFrame(np.nan, index=cols, columns=cols)
    for a in cols:
        for b in cols:
            rho.loc[a, b] = agreement(labels[a], labels[b])["spearman"]
    return rho


def gender_lever_rows(levers: pd.DataFrame, default_kind: str) -> tuple[pd.Series, pd.Series]:
    """``(main, best)`` rows of :func:`facebias.generate.checks.gender_levers`: ``main`` is
    the default fit (the most labels, hyperplane kind ``default_kind``, orthogonalised; the
    first such row), ``best`` the row with the highest ``spearman`` (NaN skipped; first on
    ties).

    Parameters
    ----------
    levers : pandas.DataFrame
        Rows with ``n_labels``, ``kind``, bool ``orthogonal`` and ``spearman``.
    default_kind : str
        Hyperplane kind of the default fit.

    Returns
    -------
    main, best : pandas.Series
        The two rows (``.name`` is the row label).

    Raises
    ------
    ValueError
        For a missing column, no finite ``spearman``, or no default row.

    Examples
    --------
    >>> levers = pd.DataFrame({"n_labels": [100, 200, 200], "kind": ["svm", "svm", "ridge"],
    ...                        "orthogonal": [True, True, True], "spearman": [0.9, 0.7, 0.8]})
    >>> main, best = gender_lever_rows(levers, "svm")
    >>> main.name, best.name
    (1, 0)
    """
    require_columns(levers, ["n_labels", "kind", "orthogonal", "spearman"], "levers")
    if not levers["spearman"].notna().any():
        raise ValueError("levers: no finite spearman in any row")
    best = levers.loc[levers["spearman"].idxmax()]
    main = levers[(levers["n_labels"] == levers["n_labels"].max()) & (levers["kind"] == default_kind)
                  & levers["orthogonal"]]
    if main.empty:
        raise ValueError(f"levers: no orthogonalised row of kind {default_kind!r} with the most labels")
    return main.iloc[0], best


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


def backend_measurements(detection: Mapping[str, Any], main: Mapping[str, Any], best: Mapping[str, Any],
                         drift: Mapping[str, Any], sequence_auc: pd.DataFrame) -> dict[str, Any]:
    """The measured values the backend's acceptance table
    (:func:`facebias.generate.checks.target_table`) reads: ``detect_rate`` and
    ``median_impostor`` from ``detection`` (:func:`~facebias.generate.checks.detection_and_impostors`),
    ``gender_spearman`` and ``gender_spearman_within_seed`` of the default fit ``main`` and
    ``gender_spearman_best`` of ``best`` (:func:`gender_lever_rows`), the ``drift_*`` numbers
    of the full drift table (:func:`drift_acceptance`: the smallest reduction over every
    resolved drift, never a picked row), and ``<attribute>_auc`` per row of ``sequence_auc``
    (:func:`~facebias.generate.checks.sequence_auc`).

    Parameters
    ----------
    detection : mapping
        With ``detect_rate`` (fraction) and ``median_impostor`` (cosine similarity).
    main, best : mapping
        Rows of the gender levers (:func:`gender_lever_rows`).
    drift : mapping
        :func:`drift_acceptance` of the full drift table.
    sequence_auc : pandas.DataFrame
        Rows with ``attribute`` and ``auc``.

    Returns
    -------
    dict
        Measured value by target key.

    Raises
    ------
    ValueError
        If ``sequence_auc`` lacks a column.

    Examples
    --------
    >>> m = backend_measurements({"detect_rate": 0.95, "median_impostor": 0.1},
    ...                          {"spearman": 0.8, "spearman_within_seed": 0.7}, {"spearman": 0.9},
    ...                          {"drift_reduction": -0.6, "drift_halved_share": 0.8, "drift_n_rose": 1},
    ...                          pd.DataFrame({"attribute": ["pose"], "auc": [0.99]}))
    >>> m["gender_spearman_best"], m["drift_reduction"], m["pose_auc"]
    (0.9, -0.6, 0.99)
    """
    require_columns(sequence_auc, ["attribute", "auc"], "sequence_auc")
    return {"detect_rate": detection["detect_rate"], "median_impostor": detection["median_impostor"],
            "gender_spearman": main["spearman"], "gender_spearman_best": best["spearman"],
            "gender_spearman_within_seed": main["spearman_within_seed"],
            **{k: drift[k] for k in ("drift_reduction", "drift_halved_share", "drift_n_rose")},
            **{f"{r['attribute']}_auc": r["auc"] for _, r in sequence_auc.iterrows()}}


def summarise_backend(*, backend: str, hyperplanes: Any, transect_images: pd.DataFrame,
                      hcic_images: pd.DataFrame, groups: Sequence[str], orthogonality_error: float,
                      table: pd.DataFrame, detection: Mapping[str, Any], levers: pd.DataFrame,
                      drift: pd.DataFrame, sequence_auc: pd.DataFrame, labeller_rho: pd.DataFrame,
                      drift_on_axis: pd.DataFrame | None = None, drift_params: Mapping[str, Any] | None = None,
                      labeller_checks: Mapping[str, Any] | None = None,
                      skin_gate: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What ``reports/metrics/<name>.json`` holds (notebooks/synthetic_faces_dcgan.py).

    ``hyperplanes``: the fitted :class:`~facebias.generate.hyperplanes.Hyperplanes` (their
    label sources, labelled counts and fit scores); ``transect_images`` / ``hcic_images``:
    the products' image tables; ``groups``: the prototype groups in order;
    ``orthogonality_error``: :func:`facebias.latent.orthogonality_error`; ``table``: the
    acceptance table (:func:`facebias.generate.checks.target_table` of
    :func:`backend_measurements`), keyed by its ``key`` column; ``detection``, ``levers``,
    ``sequence_auc``: the :mod:`facebias.generate.checks` results, stored as they are
    (frames as records); ``drift``: the full :func:`drift_table` (every axis x every other
    attribute), ``drift_on_axis`` its axes' own responses and ``drift_params`` how it was
    measured (ends, seeds, replicates), both under ``orthogonalisation``; ``labeller_rho``:
    :func:`labeller_spearman` (rounded to 4 decimals here); ``labeller_checks``: the
    labellers' offline checks (:mod:`facebias.studies.labeller_checks`), JSON-ready.

    Parameters
    ----------
    backend : str
        Generator name (``"dcgan"``, ...).
    hyperplanes : facebias.generate.hyperplanes.Hyperplanes
        The fitted hyperplanes.
    transect_images, hcic_images : pandas.DataFrame
        The two products' image tables.
    groups : sequence of str
        Prototype groups in order.
    orthogonality_error : float
        Largest dual-basis error.
    table : pandas.DataFrame
        Acceptance table with ``key, measured, target, met``.
    detection : mapping
        :func:`~facebias.generate.checks.detection_and_impostors`.
    levers, sequence_auc : pandas.DataFrame
        The other :mod:`facebias.generate.checks` results.
    drift : pandas.DataFrame
        :func:`drift_table`, off-axis rows.
    labeller_rho : pandas.DataFrame
        :func:`labeller_spearman`.
    drift_on_axis : pandas.DataFrame, optional
        :func:`drift_table` rows of each axis' own attribute (default: none).
    drift_params : mapping, optional
        How the drift was measured (default: empty).
    labeller_checks : mapping, optional
        The labeller checks, JSON-ready (default: empty).
    skin_gate : mapping, optional
        The skin-axis gate's record (:func:`facebias.studies.skin_axis.gate_metrics`).

    Returns
    -------
    dict
        The metrics file's content (JSON-ready).

    Raises
    ------
    ValueError
        If ``table`` lacks a column.
    """
    require_columns(table, ["key", "measured", "target", "met"], "table")
    return {
        "backend": backend,
        "source": f"synthetic ({backend} generator, no truth; machine labels)",
        "n_transect_images": len(transect_images),
        "n_hcic_images": len(hcic_images),
        "groups": list(groups),
        "hyperplane_sources": dict(hyperplanes.sources),
        "n_labelled": {k: int(v) for k, v in hyperplanes.n_labelled.items()},
        "hyperplane_r2": {k: float(v) for k, v in hyperplanes.scores.items()},
        "orthogonality_max_error": float(orthogonality_error),
        "acceptance": {r["key"]: {"measured": r["measured"], "target": r["target"], "met": r["met"]}
                       for _, r in table.iterrows()},
        "detection": dict(detection),
        "gender_levers": levers.to_dict("records"),
        "drift": drift.to_dict("records"),
        "orthogonalisation": {**dict(drift_params or {}),
                              "on_axis": [] if drift_on_axis is None else drift_on_axis.to_dict("records")},
        "sequence_auc": sequence_auc.to_dict("records"),
        "labeller_spearman": labeller_rho.round(4).to_dict(),
        "labeller_checks": dict(labeller_checks or {}),
        "skin_gate": dict(skin_gate or {}),
    }
