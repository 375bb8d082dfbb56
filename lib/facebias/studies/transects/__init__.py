"""Paper 004 (Balakrishnan et al., *Towards causal benchmarking of bias in face analysis
algorithms*): gender-classifier errors on transects vs an observational sample, in two
studies: a procedural generator with known truth (notebooks/transects.py) and a learned
generator without truth (the DCGAN, StyleGAN2; notebooks/transects_dcgan.py). Sections are
those of ``docs/specs/transects.md``.

=====================  =================================================================
module                 implements
=====================  =================================================================
``config``             :class:`TransectsConfig`, :class:`NoTruthTransectsConfig` (params.yaml)
``pruning``            A1.10 Pruning; A1.13 binning of covariates, the 17-column design
``error_model``        A1.12 Error definition; A1.13 (c) logistic error model + bootstrap
                       (Fig. 15)
``additivity``         A1.13 (g′) interaction terms: likelihood-ratio tests of additivity
``group_tables``       A1.13 (d)-(i): Figs 8, 11-12, 13, 14, 16, 17
``renders``            A1.11 the shortcut CNN's training set, a factorial test set, the
                       pixel signal
``known_truth``        the procedural study: error models per classifier, recovery of the
                       planted causes, the latent-only known-truth check (A5)
``no_truth``           the study without truth: labeller-perceived gender, intended levels,
                       the planted shortcut's error models and recovery flags
``confounds``          the confounds of the study without truth (issue 29): gender x tone,
                       tone x incongruence, tone contrasts by gender
``labellers``          the machine labellers against the intended levels (Fig. 9b)
``accuracy``           the shortcut classifiers' training and held-out accuracy
``released``           A3 Released data: the authors' scores with grid cells, pruned
``summary``            the metrics files (reports/metrics/transects.json,
                       transects_dcgan.json)
=====================  =================================================================

The worlds these studies sample (the observational confounded samples, the rated samples)
are in :mod:`facebias.worlds.transects`; the planted classifier in
:mod:`facebias.worlds.gender_classifier`. Every public name is re-exported here.
"""

from __future__ import annotations

from facebias.annotate.simulate import PERCEIVED_ATTRIBUTES, perceived_truth
from facebias.studies.transects.accuracy import accuracy_rows, held_out_accuracy, training_accuracy
from facebias.studies.transects.additivity import interaction_test, nested_lr_test
from facebias.studies.transects.config import NoTruthTransectsConfig, TransectsConfig
from facebias.studies.transects.confounds import (
    CONFOUND_TERMS,
    confound_analysis,
    confound_design,
    confound_tests,
    pattern_without_cause,
    tone_by_gender,
)
from facebias.studies.transects.error_model import (
    ErrorModelResult,
    best_threshold,
    bootstrap_error_model,
    coef_row,
    errors,
    fit_error_model,
    fit_if_possible,
)
from facebias.studies.transects.group_tables import (
    age_gender_errors,
    annotation_sd,
    attribute_distributions,
    group_errors,
    largest_errors,
    paired_groups,
)
from facebias.studies.transects.known_truth import (
    EXPERIMENTAL_HEADLINE,
    KnownTruthCheck,
    classifier_headline,
    experimental_error_models,
    known_truth_check,
    planted_recovered,
)
from facebias.studies.transects.labellers import (
    observational_labeller_agreement,
    paired_direction,
    transect_labeller_agreement,
    within_group_correlation,
)
from facebias.studies.transects.no_truth import (
    PLANTED_SHORTCUT_EFFECT,
    RESERVED_CLASSIFIER_NAMES,
    STUDY_CLASSIFIERS,
    TONE_LABELS,
    no_truth_analysis_frame,
    no_truth_design,
    no_truth_levels,
    pruning_by_level,
    shortcut_error_models,
    shortcut_headline,
    shortcut_incongruent,
    shortcut_recovered,
    tone_labels,
)
from facebias.studies.transects.pruning import (
    AGE_NAMES,
    AMBIGUOUS,
    BINARY,
    CHILD_MAX,
    COVARIATES,
    FAKE_RULES,
    SCORE_COLUMNS,
    bin_covariates,
    design_matrix,
    perceived_matches_intended,
    prune,
    pruned_share,
    pruning_counts,
    truth_scores,
)
from facebias.studies.transects.released import released_transects
from facebias.studies.transects.renders import (
    hair_test_set,
    make_shortcut_training_set,
    pixel_signal,
)
from facebias.studies.transects.summary import no_truth_params, summarise, summarise_no_truth
from facebias.worlds.transects import (
    confounded_latents,
    observational_rated,
    observational_sample,
    rated_sample,
)

__all__ = [
    "SCORE_COLUMNS",
    "COVARIATES",
    "truth_scores",
    "prune",
    "bin_covariates",
    "design_matrix",
    "errors",
    "best_threshold",
    "fit_error_model",
    "ErrorModelResult",
    "bootstrap_error_model",
    "group_errors",
    "paired_groups",
    "age_gender_errors",
    "observational_sample",
    "attribute_distributions",
    "make_shortcut_training_set",
    "hair_test_set",
    "pixel_signal",
    "PLANTED_SHORTCUT_EFFECT",
    "STUDY_CLASSIFIERS",
    "RESERVED_CLASSIFIER_NAMES",
    "no_truth_levels",
    "tone_labels",
    "TONE_LABELS",
    "no_truth_design",
    "no_truth_analysis_frame",
    "pruning_by_level",
    "fit_if_possible",
    "coef_row",
    "shortcut_error_models",
    "shortcut_headline",
    "shortcut_recovered",
    "confounded_latents",
    "within_group_correlation",
    "paired_direction",
    "transect_labeller_agreement",
    "observational_labeller_agreement",
    "TransectsConfig",
    "pruning_counts",
    "perceived_matches_intended",
    "PERCEIVED_ATTRIBUTES",
    "perceived_truth",
    "rated_sample",
    "interaction_test",
    "pruned_share",
    "annotation_sd",
    "largest_errors",
    "observational_rated",
    "experimental_error_models",
    "planted_recovered",
    "classifier_headline",
    "KnownTruthCheck",
    "known_truth_check",
    "summarise",
    "released_transects",
    "NoTruthTransectsConfig",
    "no_truth_params",
    "training_accuracy",
    "accuracy_rows",
    "held_out_accuracy",
    "shortcut_incongruent",
    "CONFOUND_TERMS",
    "confound_design",
    "nested_lr_test",
    "confound_tests",
    "tone_by_gender",
    "confound_analysis",
    "pattern_without_cause",
    "summarise_no_truth",
    "AMBIGUOUS",
    "BINARY",
    "AGE_NAMES",
    "FAKE_RULES",
    "CHILD_MAX",
    "EXPERIMENTAL_HEADLINE",
]
