"""Papers 004 and 000, the generation side: the checks the two generation notebooks report.

* ``summarise_procedural`` builds what ``reports/metrics/synthetic.json`` and
  ``synthetic_details.json`` hold (notebooks/synthetic_faces.py: the procedural generator,
  whose truth checks every manipulation).
* ``summarise_backend`` builds what ``reports/metrics/synthetic_dcgan.json`` holds
  (notebooks/gan_faces.py: a generator without truth, labelled by machine annotators).

Their pieces: ``normal_cosines`` (entanglement of the fitted normals), ``transect_range`` (a
true attribute's range along a transect stepped on the raw normal vs the orthogonalised
direction), ``transect_check`` (mean true value per intended level), ``pair_counts`` (000's
pairs), ``acceptance_metrics`` (the metric part of :func:`facebias.generate.checks.acceptance_report`),
``labeller_spearman`` (machine labellers against each other), ``gender_lever_rows``,
``strongest_drift`` and ``backend_measurements`` (the rows and numbers the backend's
acceptance table reads). The dual-basis error is :func:`facebias.latent.orthogonality_error`;
the real-model measurements and the target verdicts are :mod:`facebias.generate.checks`.

Conventions: normals are unit rows (:class:`facebias.generate.hyperplanes.Hyperplanes`), so
their inner products are cosines; decision values and drifts as in :mod:`facebias.latent` and
:func:`facebias.generate.checks.orthogonalisation_drift` (drifts in SDs of the labeller).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.machine import agreement
from facebias.validate import require_columns

__all__ = ["normal_cosines", "transect_range", "transect_check", "pair_counts", "acceptance_metrics",
           "summarise_procedural", "labeller_spearman", "gender_lever_rows", "strongest_drift",
           "backend_measurements", "summarise_backend"]

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
    checks did not run (``synthetic.check_models: false``): then the headline has no
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


def strongest_drift(drift: pd.DataFrame) -> pd.Series:
    """The row of :func:`facebias.generate.checks.orthogonalisation_drift` whose attribute
    moves most along the raw normal (largest ``|drift_raw|``, NaN skipped; first on ties):
    the stepped attribute's "second attribute".

    Parameters
    ----------
    drift : pandas.DataFrame
        One row per attribute with ``drift_raw`` (labeller SDs).

    Returns
    -------
    pandas.Series
        The chosen row.

    Raises
    ------
    ValueError
        For a missing column or no finite ``drift_raw``.

    Examples
    --------
    >>> drift = pd.DataFrame({"attribute": ["age", "gender"], "drift_raw": [0.2, -0.9]})
    >>> strongest_drift(drift)["attribute"]
    'gender'
    """
    require_columns(drift, ["drift_raw"], "drift")
    if not drift["drift_raw"].notna().any():
        raise ValueError("drift: no finite drift_raw in any row")
    return drift.loc[drift["drift_raw"].abs().idxmax()]


def backend_measurements(detection: Mapping[str, Any], main: Mapping[str, Any], best: Mapping[str, Any],
                         leak: Mapping[str, Any], sequence_auc: pd.DataFrame) -> dict[str, Any]:
    """The measured values the backend's acceptance table
    (:func:`facebias.generate.checks.target_table`) reads: ``detect_rate`` and
    ``median_impostor`` from ``detection`` (:func:`~facebias.generate.checks.detection_and_impostors`),
    ``gender_spearman`` and ``gender_spearman_within_seed`` of the default fit ``main`` and
    ``gender_spearman_best`` of ``best`` (:func:`gender_lever_rows`), ``drift_reduction`` of
    ``leak`` (:func:`strongest_drift`), and ``<attribute>_auc`` per row of ``sequence_auc``
    (:func:`~facebias.generate.checks.sequence_auc`).

    Parameters
    ----------
    detection : mapping
        With ``detect_rate`` (fraction) and ``median_impostor`` (cosine similarity).
    main, best : mapping
        Rows of the gender levers (:func:`gender_lever_rows`).
    leak : mapping
        A drift row with ``reduction``.
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
    ...                          {"spearman": 0.8, "spearman_within_seed": 0.7},
    ...                          {"spearman": 0.9}, {"reduction": 0.5},
    ...                          pd.DataFrame({"attribute": ["pose"], "auc": [0.99]}))
    >>> m["gender_spearman_best"], m["pose_auc"]
    (0.9, 0.99)
    """
    require_columns(sequence_auc, ["attribute", "auc"], "sequence_auc")
    return {"detect_rate": detection["detect_rate"], "median_impostor": detection["median_impostor"],
            "gender_spearman": main["spearman"], "gender_spearman_best": best["spearman"],
            "gender_spearman_within_seed": main["spearman_within_seed"],
            "drift_reduction": leak["reduction"],
            **{f"{r['attribute']}_auc": r["auc"] for _, r in sequence_auc.iterrows()}}


def summarise_backend(*, backend: str, hyperplanes: Any, transect_images: pd.DataFrame,
                      hcic_images: pd.DataFrame, groups: Sequence[str], orthogonality_error: float,
                      table: pd.DataFrame, detection: Mapping[str, Any], levers: pd.DataFrame,
                      drift: pd.DataFrame, sequence_auc: pd.DataFrame,
                      labeller_rho: pd.DataFrame) -> dict[str, Any]:
    """What ``reports/metrics/<name>.json`` holds (notebooks/gan_faces.py).

    ``hyperplanes``: the fitted :class:`~facebias.generate.hyperplanes.Hyperplanes` (their
    label sources, labelled counts and fit scores); ``transect_images`` / ``hcic_images``:
    the products' image tables; ``groups``: the prototype groups in order;
    ``orthogonality_error``: :func:`facebias.latent.orthogonality_error`; ``table``: the
    acceptance table (:func:`facebias.generate.checks.target_table` of
    :func:`backend_measurements`), keyed by its ``key`` column; ``detection``, ``levers``,
    ``drift``, ``sequence_auc``: the :mod:`facebias.generate.checks` results, stored as
    they are (frames as records); ``labeller_rho``: :func:`labeller_spearman` (rounded to 4
    decimals here).

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
    levers, drift, sequence_auc : pandas.DataFrame
        The other :mod:`facebias.generate.checks` results.
    labeller_rho : pandas.DataFrame
        :func:`labeller_spearman`.

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
        "sequence_auc": sequence_auc.to_dict("records"),
        "labeller_spearman": labeller_rho.round(4).to_dict(),
    }
