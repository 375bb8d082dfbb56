"""Papers 004 and 000, the generation side: what the two generation notebooks write as metrics files.

* :func:`summarise_procedural`: ``reports/metrics/synthetic_faces.json`` and
  ``synthetic_faces_details.json`` (notebooks/synthetic_faces.py: the procedural generator,
  whose truth checks every manipulation; ``docs/specs/transects.md`` section A5 and
  ``docs/specs/hcic.md`` section B5);
* :func:`summarise_backend`: ``reports/metrics/synthetic_faces_dcgan.json``
  (notebooks/synthetic_faces_dcgan.py: a generator without truth, labelled by machine
  annotators).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from facebias.studies.synthetic_faces.procedural import acceptance_metrics
from facebias.validate import require_columns

__all__ = ["summarise_procedural", "summarise_backend"]


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
    labellers' offline checks (:mod:`facebias.studies.synthetic_faces.labeller_checks`), JSON-ready.

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
        The skin-axis gate's record (:func:`facebias.studies.synthetic_faces.skin_axis.gate_metrics`).

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
