"""Acceptance checks of a face generator against real, offline face models, by kind, and the
acceptance tables (targets and verdicts) the notebooks and tests print.

* :mod:`facebias.generate.checks_truth`: a generator with truth (the procedural
  renderer): :func:`acceptance_report` (detection, identity, gender along the true gender
  direction; definitions in that module's docstring);
* :mod:`facebias.generate.checks_no_truth`: a generator without truth (the DCGAN,
  StyleGAN2), measured against the fitted hyperplanes: :func:`detection_and_impostors`,
  :func:`gender_spearman`, :func:`gender_levers`, :func:`drift_readings`,
  :func:`sequence_auc`;
* here: the targets (:data:`PROCEDURAL_TARGETS`, :data:`BACKEND_TARGETS`) and the tables
  (:func:`with_targets`, :func:`target_table`).

Every public name of the two modules is re-exported here, so
``from facebias.generate.checks import X`` works for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from facebias.generate.checks_no_truth import (
    LABELLER_OF,
    detection_and_impostors,
    drift_readings,
    gender_levers,
    gender_spearman,
    machine_measure,
    move_to,
    sequence_auc,
    sface_embed,
)
from facebias.generate.checks_truth import (
    PUBLISHED_THRESHOLDS,
    IdentityRenders,
    acceptance_report,
    detection_report,
    gender_report,
    identity_renders,
    identity_report,
    p_male,
)

__all__ = ["acceptance_report", "IdentityRenders", "identity_renders", "detection_report",
           "identity_report", "gender_report", "p_male", "PUBLISHED_THRESHOLDS", "LABELLER_OF", "machine_measure",
           "sface_embed", "detection_and_impostors", "move_to", "gender_spearman", "gender_levers",
           "drift_readings", "sequence_auc", "target_table", "PROCEDURAL_TARGETS", "BACKEND_TARGETS",
           "with_targets"]


#: Acceptance targets of the procedural renderer against the real models (key of
#: :func:`acceptance_report` -> (op, value)): the one source for notebooks/synthetic_faces.py's
#: acceptance table and tests/generate/test_realmodels.py.
PROCEDURAL_TARGETS: dict[str, tuple[str, float]] = {
    "detect_rate": (">=", 0.98), "sface_enrol_rate": (">=", 0.98), "dlib_enrol_rate": (">=", 0.98),
    "sface_auc": (">=", 0.97), "dlib_auc": (">=", 0.97), "sface_median_impostor": ("<=", 0.6),
    "dlib_median_impostor": (">=", 0.5), "gender_spearman_transect_pooled": (">=", 0.7),
    "gender_spearman_within_identity": (">=", 0.7), "p_male_female_end": ("<=", 0.4),
    "p_male_male_end": (">=", 0.8)}
#: Issue 15's targets for a generator without truth (key of the backend measurements ->
#: (op, value)): notebooks/synthetic_faces_dcgan.py's acceptance table. ``drift_reduction`` is read over
#: the full drift table (every axis x every other attribute whose raw drift is resolved:
#: :func:`facebias.studies.synthetic_faces.drift_acceptance`), its smallest reduction: "every
#: unwanted drift at least halved", never the best case.
BACKEND_TARGETS: dict[str, tuple[str, float]] = {
    "detect_rate": (">=", 0.95), "median_impostor": ("<=", 0.30), "gender_spearman": (">=", 0.85),
    "gender_spearman_best": (">=", 0.85), "drift_reduction": (">=", 0.5), "yaw_auc": (">=", 0.9),
    "light_auc": (">=", 0.9)}


def with_targets(labels: Mapping[str, str], targets: Mapping[str, tuple[str, float]]
                 ) -> list[tuple[str, str, float | None, str]]:
    """``(key, label, target, op)`` rows for :func:`target_table`: each key of ``labels`` (in
    order) with its target from ``targets``, or reported only (target None) if it has none.

    Parameters
    ----------
    labels : mapping
        Measurement key -> row label, in table order.
    targets : mapping
        Key -> ``(op, value)`` with op ``">="`` or ``"<="``
        (:data:`PROCEDURAL_TARGETS`, :data:`BACKEND_TARGETS`).

    Returns
    -------
    list of tuple
        ``(key, label, target, op)``; ``(key, label, None, "")`` for a reported-only key.

    Examples
    --------
    >>> with_targets({"detect_rate": "faces found", "n": "renders"}, {"detect_rate": (">=", 0.95)})
    [('detect_rate', 'faces found', 0.95, '>='), ('n', 'renders', None, '')]
    """
    return [(k, lab, *(targets[k][::-1] if k in targets else (None, ""))) for k, lab in labels.items()]


def target_table(measured: Any, targets: Any) -> Any:
    """The acceptance table: one row per ``(key, label, target, op)`` in ``targets`` with
    ``measured = measured[key]`` (NaN if absent), ``target`` as text and ``met``: None for a
    reported-only row (target None), else ``measured >= target`` (op ``">="``) or ``<=``;
    a NaN measurement never meets a target.

    Parameters
    ----------
    measured : mapping
        Key -> measured value.
    targets : iterable of tuple
        ``(key, label, target, op)`` rows (:func:`with_targets`).

    Returns
    -------
    pandas.DataFrame
        Columns ``key, check, measured, target, met``.

    Raises
    ------
    ValueError
        If a row with a target has an op other than ``">="`` or ``"<="``.

    Examples
    --------
    >>> rows = with_targets({"detect_rate": "faces found", "n": "renders"},
    ...                     {"detect_rate": (">=", 0.95)})
    >>> target_table({"detect_rate": 0.97}, rows)
               key        check  measured   target   met
    0  detect_rate  faces found      0.97  >= 0.95  True
    1            n      renders       NaN   report  None
    """
    import pandas as pd

    rows = []
    for key, label, target, op in targets:
        if target is not None and op not in (">=", "<="):
            raise ValueError(f"target {key!r}: op must be '>=' or '<=', got {op!r}")
        v = float(measured.get(key, np.nan))
        met = None if target is None else bool(np.isfinite(v) and (v >= target if op == ">=" else v <= target))
        rows.append({"key": key, "check": label, "measured": v,
                     "target": "report" if target is None else f"{op} {target}", "met": met})
    return pd.DataFrame(rows)
