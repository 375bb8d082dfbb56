"""Paper 000 (Liang et al., HCIC): face recognition on synthetic prototypes, judged by humans.

Measurement side of ``docs/specs/hcic.md`` Part B (B1.5-B1.12b, B5). Tables follow the
``data/synthetic/hcic`` schema: ``images`` (one row per image: ``image_id, seed, group,
prototype_id, attribute, level, ...``) and ``pairs`` (``pair_id, image_a, image_b,
prototype_a, prototype_b, seed_a, seed_b, group, attribute, level, label, is_self_pair,
b_is_prototype``).

Contents (module: paper section)
--------------------------------
* :mod:`~facebias.studies.hcic.pairs`: sequence slots, cross-group pairs, relations
  (Sec. 3.2, 3.4; B1.3, B1.5).
* :mod:`~facebias.studies.hcic.similarity`: cosine scores, the FR models, Fig. 5's
  attribute effects (Sec. 4; B1.9, B1.11; Supp. Figs. 10-12).
* :mod:`~facebias.studies.hcic.ground_truth`: HCIC labels, realism filter, self pairs
  (Sec. 4.1.1; B1.5, B1.7, B1.8).
* :mod:`~facebias.studies.hcic.fnmr`: FNMR / FMR by attribute and group (Fig. 6; B1.10,
  B1.12b).
* :mod:`~facebias.studies.hcic.group_tests`: group differences, tested (B1.12b [REC], B1.13).
* :mod:`~facebias.studies.hcic.validation`: annotation validation (Figs. 3, 4; Supp. Figs.
  9, 13, 14, 17, 18; B1.6, B1.12).
* :mod:`~facebias.studies.hcic.own_group`: own-group checks on simulated panels (B1.12;
  the panels are :mod:`facebias.worlds.hcic`).
* :mod:`~facebias.studies.hcic.seed_filter`: the seed filter and its funnel (Sec. 3.1,
  Supp. Alg. 1; B1.2).
* :mod:`~facebias.studies.hcic.config`: :class:`HCICConfig` (``params.yaml`` ``hcic``,
  ``hcic_dcgan``).
* :mod:`~facebias.studies.hcic.summary`: the metrics JSON of ``notebooks/hcic.py`` (B2, B5).

Conventions
-----------
* Scores are cosine **similarities** of L2-normalised embeddings (higher = more alike).
* Decisions follow :mod:`facebias.metrics`: a pair **matches iff score > t**, so
  ``FNMR(t) = mean(genuine <= t)``, ``FMR(t) = mean(impostor > t)``. The paper writes
  ``s >= t``; on continuous scores the two agree except at exact ties. A self pair
  (s = 1 up to float error) is a non-match only at t >= 1.
* HCIC (B1.7) is a **dissimilarity** in [0, 1]; a pair is labelled *same* (1) iff
  ``HCIC <= t_hcic``. Raw identity responses are 0 = likely same ... 4 = likely different.
* Uncanny filter (B1.8): a pair is kept iff **both** images' normalised uncanny score
  (mean / 4) is below 0.8.
* Sequence levels are the 0-based slot index. Procedural renders: pose 0..4 = yaw -30,
  -15, 0, 15, 30 (centre 2), age/expression 0..4 with the prototype at 2, light 0 = original
  and 1..4 = up, down, left, right (unordered). Backends without pose/light controls (the
  DCGAN) step along learned yaw / light directions, so their light sequence is ordered with
  the prototype at 2 like the others. :func:`centre_levels` reads each sequence's centre
  from the images table (the level no image has: the prototype stands there).
* Groups are whatever the ``group`` column holds (000's race x gender on the procedural
  renders; lighter / darker face x gender on the DCGAN): nothing here names a group.
"""

from facebias.studies.hcic.config import HCICConfig, HCICDcganConfig
from facebias.studies.hcic.fnmr import (
    error_curves,
    fixed_threshold_points,
    fnmr_at_fmr_by_cell,
    fnmr_at_fmr_by_group,
    fnmr_by_threshold,
)
from facebias.studies.hcic.ground_truth import (
    PAPER_FILTER_DROP_RATES,
    PairLabels,
    filter_drop_rates,
    hcic_labels,
    kept_pair_scores,
    label_counts,
    pair_hcic,
    pair_item_ids,
    pair_labels,
    pair_vote_matrix,
    self_pair_mask,
    self_pair_summary,
    uncanny_pair_keep,
)
from facebias.studies.hcic.group_tests import (
    DIFFERENCE_STATISTICS,
    GroupTests,
    group_rate_tests,
    holm_adjust,
    two_proportion_test,
)
from facebias.studies.hcic.own_group import own_group_check, own_group_image_check
from facebias.studies.hcic.pairs import (
    ATTRIBUTES,
    CENTRE_LEVEL,
    IMAGE_COLUMNS,
    PAIR_COLUMNS,
    RELATIONS,
    centre_levels,
    cross_group_pairs,
    group_order,
    relation,
    slots_from_images,
)
from facebias.studies.hcic.seed_filter import (
    FACE_SCORE_THRESHOLD,
    SEED_FILTER_SCALES,
    face_confidence,
    human_seed_filter,
    intended_group_agreement,
    measured_seed_filter,
    seed_filter_funnel,
    seed_filter_rule,
)
from facebias.studies.hcic.similarity import (
    MODEL_THRESHOLDS,
    cosine,
    delta_attr,
    embed_images,
    fixed_thresholds,
    human_levels,
    pair_scores,
    relation_medians,
    similarity_summary,
)
from facebias.studies.hcic.summary import (
    GROUP_DESCRIPTIONS,
    SIMULATION_LABEL,
    annotator_description,
    summarise,
)
from facebias.studies.hcic.validation import (
    annotator_consistency,
    group_independence_test,
    response_histogram,
    same_pair_examples,
    uncanny_examples,
)

__all__ = [
    "RELATIONS",
    "ATTRIBUTES",
    "MODEL_THRESHOLDS",
    "fixed_thresholds",
    "cosine",
    "pair_scores",
    "centre_levels",
    "group_order",
    "slots_from_images",
    "cross_group_pairs",
    "relation",
    "human_levels",
    "similarity_summary",
    "pair_item_ids",
    "pair_hcic",
    "uncanny_pair_keep",
    "self_pair_mask",
    "self_pair_summary",
    "filter_drop_rates",
    "PAPER_FILTER_DROP_RATES",
    "error_curves",
    "fixed_threshold_points",
    "fnmr_by_threshold",
    "fnmr_at_fmr_by_group",
    "fnmr_at_fmr_by_cell",
    "DIFFERENCE_STATISTICS",
    "two_proportion_test",
    "holm_adjust",
    "GroupTests",
    "group_rate_tests",
    "relation_medians",
    "hcic_labels",
    "label_counts",
    "delta_attr",
    "pair_vote_matrix",
    "annotator_consistency",
    "response_histogram",
    "group_independence_test",
    "own_group_check",
    "own_group_image_check",
    "same_pair_examples",
    "SEED_FILTER_SCALES",
    "intended_group_agreement",
    "human_seed_filter",
    "seed_filter_rule",
    "FACE_SCORE_THRESHOLD",
    "face_confidence",
    "measured_seed_filter",
    "seed_filter_funnel",
    "uncanny_examples",
    "embed_images",
    "HCICConfig",
    "HCICDcganConfig",
    "GROUP_DESCRIPTIONS",
    "SIMULATION_LABEL",
    "annotator_description",
    "PairLabels",
    "pair_labels",
    "kept_pair_scores",
    "summarise",
    "CENTRE_LEVEL",
    "PAIR_COLUMNS",
    "IMAGE_COLUMNS",
]
