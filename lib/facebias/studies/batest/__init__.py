"""Paper 003 (Wu & Bowyer, BA-test): what should be balanced in a face dataset.

Pure functions on pandas/numpy; see ``docs/specs/batest.md`` PART B. The known-truth world
is :mod:`facebias.worlds.batest`.

Contents (module -> paper section):

* :mod:`~facebias.studies.batest.config`: ``BATestConfig``, the settings (``params.yaml``
  section ``batest``; unknown or mistyped keys raise).
* :mod:`~facebias.studies.batest.factors`: section 3.1 image selection and section 3.3
  factors (B.1 steps 4-7): ``BA_FILTERS`` / ``check_filters`` / ``apply_filters`` with
  per-group accounting, ``passes_filters``.
* :mod:`~facebias.studies.batest.balancing`: balancing across groups on image factors (our
  extension): ``balance`` (exact strata matching or nearest-neighbour matching with a
  caliper), ``balance_within``, ``balance_report`` (SMD, KS).
* :mod:`~facebias.studies.batest.masks`: section 3.4 and Fig. 16, face-area masks and
  facial hair (B.2): ``mask_iou_filter``, ``exclude_facial_hair``, ``table1_pair_sets``,
  ``images_in_pairs``, ``pairs_among``, ``face_area_by_gender``, ``mask_heatmap``.
* :mod:`~facebias.studies.batest.table1`: Table 1 (section 3.4), the gender gap Δd' per
  race: ``gender_gap``, ``gender_gaps`` (several evaluation sets), ``gap_rel_error_mean``
  (the gap against a planted truth), ``table1_measured``, ``TABLE1_PUBLISHED`` /
  ``table1_published``, ``table1_percentages``.
* :mod:`~facebias.studies.batest.verification`: d' per group (``dprime_by_group``), Table 3
  (section 4.1: ``fmr_at_reference``, ``fmr_at_reference_table``) and Table 4 (section 4.2:
  ``tpr_at_fmr`` on the ``challenging_subset``); rates from fewer than 10 / FMR impostors
  are NaN, labelled "too few impostors".
* :mod:`~facebias.studies.batest.identities`: section 3.2, identity-noise cleaning (Fig. 6a:
  ``identity_outliers``, per-identity DBSCAN) and identity count vs accuracy (Fig. 9:
  ``identity_count_experiment``, ``identity_count_subset``, ``dprime_identity_bootstrap``,
  ``score_ks``, ``IDENTITY_COUNT_DESIGNS``).
* :mod:`~facebias.studies.batest.summary`: ``summarise`` builds what
  ``reports/metrics/batest.json`` and ``batest_details.json`` hold (notebooks/batest.py).
* :mod:`~facebias.studies.batest.seeds`: Tables 1, 3 and 4 over world seeds (not
  re-exported here; import the submodule).

Conventions: scores are similarities and a pair is a match iff ``score > t``; rates are
fractions; ``label`` is 1 (genuine) / 0 (impostor). Group codes are two letters, race
then gender (``"AF"``, ``"WM"``, ...). Pair tables have columns ``id1, id2, group,
label, score`` (+ optional ``mask_iou``, ``facial_hair1``, ``facial_hair2``).
"""

from __future__ import annotations

from facebias.studies.batest.balancing import balance, balance_report, balance_within
from facebias.studies.batest.config import BATestConfig
from facebias.studies.batest.factors import BA_FILTERS, apply_filters, check_filters, passes_filters
from facebias.studies.batest.identities import (
    IDENTITY_COUNT_DESIGNS,
    dprime_identity_bootstrap,
    identity_count_experiment,
    identity_count_subset,
    identity_outliers,
    score_ks,
)
from facebias.studies.batest.masks import (
    exclude_facial_hair,
    face_area_by_gender,
    images_in_pairs,
    mask_heatmap,
    mask_iou_filter,
    pairs_among,
    table1_pair_sets,
)
from facebias.studies.batest.summary import summarise
from facebias.studies.batest.table1 import (
    TABLE1_PUBLISHED,
    gap_rel_error_mean,
    gender_gap,
    gender_gaps,
    table1_measured,
    table1_percentages,
    table1_published,
)
from facebias.studies.batest.verification import (
    challenging_subset,
    dprime_by_group,
    fmr_at_reference,
    fmr_at_reference_table,
    tpr_at_fmr,
)

__all__ = [
    "BA_FILTERS",
    "BATestConfig",
    "check_filters",
    "apply_filters",
    "passes_filters",
    "balance",
    "balance_within",
    "balance_report",
    "mask_iou_filter",
    "exclude_facial_hair",
    "table1_pair_sets",
    "images_in_pairs",
    "pairs_among",
    "face_area_by_gender",
    "fmr_at_reference_table",
    "table1_measured",
    "dprime_by_group",
    "gender_gap",
    "gender_gaps",
    "gap_rel_error_mean",
    "fmr_at_reference",
    "tpr_at_fmr",
    "identity_outliers",
    "IDENTITY_COUNT_DESIGNS",
    "identity_count_subset",
    "dprime_identity_bootstrap",
    "score_ks",
    "identity_count_experiment",
    "challenging_subset",
    "mask_heatmap",
    "TABLE1_PUBLISHED",
    "table1_published",
    "table1_percentages",
    "summarise",
]
