"""Papers 004 and 000, the generation side: the checks the two generation notebooks report
(notebooks/synthetic_faces.py: the procedural generator, whose truth checks every
manipulation; notebooks/synthetic_faces_dcgan.py: a learned generator without truth, labelled
by machine annotators). Sections are those of ``docs/specs/transects.md`` (paper 004) and
``docs/specs/hcic.md`` (paper 000).

===================  =================================================================
module               implements
===================  =================================================================
``procedural``       the known-truth checks: normal cosines, a true attribute's range
                     along raw vs orthogonalised transects (A1.7, Fig. 5), the
                     transects' manipulation check (A1.8), 000's pair counts (B1.5),
                     the acceptance report's metrics
``backend``          a generator without truth: labeller agreement, the gender levers'
                     rows (A1.4-A1.5), the acceptance table's measured values (A5)
``drift``            the orthogonalisation in full (A1.7; A5.3-4b): every attribute
                     along every axis, raw vs orthogonalised, bootstrap intervals over
                     seeds, the acceptance numbers and where a drift grew
``summary``          the metrics files (reports/metrics/synthetic_faces.json,
                     synthetic_faces_details.json, synthetic_faces_dcgan.json)
``labeller_checks``  the machine labellers' offline checks: stability under resampling,
                     related labellers, no-face rates and the selection they cause
``palette_checks``   the Monk Skin Tone palette against ITA and face luminance
                     (re-exported by ``labeller_checks``)
``skin_axis``        is a learned skin-tone direction skin tone? readings along
                     candidate directions and the gate declared in advance
===================  =================================================================

Every public name of ``procedural``, ``backend``, ``drift`` and ``summary`` is re-exported
here (``from facebias.studies import synthetic_faces as S; S.drift_table``);
``labeller_checks``, ``palette_checks`` and ``skin_axis`` are imported on their own
(``from facebias.studies.synthetic_faces import skin_axis``). The dual-basis error is
:func:`facebias.latent.orthogonality_error`; the real-model measurements and the target
verdicts are :mod:`facebias.generate.checks`.

Conventions: normals are unit rows (:class:`facebias.generate.hyperplanes.Hyperplanes`), so
their inner products are cosines; decision values and drifts as in :mod:`facebias.latent` and
:func:`drift_table` (drifts in SDs of the labeller).
"""

from __future__ import annotations

from facebias.studies.synthetic_faces.backend import (
    backend_measurements,
    gender_lever_rows,
    labeller_spearman,
)
from facebias.studies.synthetic_faces.drift import (
    DRIFT_COLUMNS,
    drift_acceptance,
    drift_rise_notes,
    drift_table,
)
from facebias.studies.synthetic_faces.procedural import (
    NOT_METRICS,
    acceptance_metrics,
    normal_cosines,
    pair_counts,
    transect_check,
    transect_range,
)
from facebias.studies.synthetic_faces.summary import summarise_backend, summarise_procedural

__all__ = ["normal_cosines", "transect_range", "transect_check", "pair_counts", "acceptance_metrics",
           "summarise_procedural", "labeller_spearman", "gender_lever_rows", "DRIFT_COLUMNS",
           "drift_table", "drift_acceptance", "drift_rise_notes", "backend_measurements", "summarise_backend",
           "NOT_METRICS"]
