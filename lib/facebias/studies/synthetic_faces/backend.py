"""Paper 004 and 000, a learned generator without truth (notebooks/synthetic_faces_dcgan.py):
the machine labellers against each other and the numbers the backend's acceptance table reads.

* :func:`labeller_spearman`: Spearman's rho between every two machine labellers;
* :func:`gender_lever_rows`: the default and the best fit of
  :func:`facebias.generate.checks.gender_levers` (``docs/specs/transects.md`` section A1.4-A1.5:
  the latent-to-attribute models and their hyperplanes);
* :func:`backend_measurements`: the measured values of
  :func:`facebias.generate.checks.target_table` (section A5, acceptance checks 4 and 4b, on a
  generator without truth), the drift numbers from :mod:`.drift`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.machine import agreement
from facebias.validate import require_columns

__all__ = ["labeller_spearman", "gender_lever_rows", "backend_measurements"]


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
