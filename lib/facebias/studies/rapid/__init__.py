"""Paper 001 (Knott, Serna, Mann, Perona, WACV 2025): a rapid test for the accuracy and bias
of face recognition systems, from noisy web-search labels and no human annotation.

Spec: ``docs/specs/rapid.md`` (sections 1.4-1.9, 2 and 5). Where the paper and the authors'
code (``frt-rapid-test``) differ, this follows the spec's choice; each module says which.
One module per section of the paper:

=================  ======================================================================
module             paper 001 / ``docs/specs/rapid.md``
=================  ======================================================================
``config``         the parameters: :class:`RapidConfig` (the method, ``params.yaml``
                   ``rapid``), :class:`RapidExperimentConfig` (the notebook's experiment)
``tables``         1.0 data model: the score, label and face tables (:data:`SCORE_COLUMNS`)
``normalise``      1.4 score normalisation (:func:`normalise_scores`, :func:`gmm_modes`)
``spectral``       1.5 the spectral step on one query: :func:`query_matrix`,
                   :func:`cluster_count`, :func:`membership`, :func:`cluster_labels`,
                   :func:`majority_vote`
``nodes``          1.5 integer codes of a scores table (the (query, face) nodes)
``estimation``     1.5 and 5: label estimation over every query, batched (:func:`estimate`,
                   :func:`estimate_labels`, :func:`estimate_system_labels`)
``baselines``      2: :func:`naive_labels`, :func:`single_best_system_labels`,
                   :func:`connected_components_labels`
``truth``          1.7: :func:`true_labels`, :func:`oracle_labels`, :func:`label_agreement`
``evaluation``     1.6: :func:`genuine_impostor_pairs`, :func:`true_pairs`, FNMR at FMR,
                   EER, ranking, and the estimate against the truth (:func:`delta_fnmr`,
                   :func:`ranking_agreement`, :func:`eer_comparison`)
``semisup``        1.8 (App. G, Fig. S.15): :func:`semi_supervised`,
                   :func:`semi_supervised_curve`
``experiments``    1.9 the known-truth world: Fig. S.7 :func:`voting_ablation`, the p sweep
                   and :func:`breakdown_p`, Figs. S.6, S.13, S.14
``bias``           Fig. 5: :func:`group_bias`, :func:`bias_recovery`, :func:`bias_summary`
``summary``        ``reports/metrics/rapid.json`` (:func:`summarise`)
``images``         1.1-1.3 the image path: photo folders -> scores
                   (:func:`facebias.studies.rapid.images.image_folder_study`)
``faceid``         1.2 (paper §4, App. B): the FaceID box grouping and Algorithm 1
                   (single-face images), used by ``images``
``folders``        the whole test on the user's photo folders, ``FOLDER/<query>/*.jpg``
                   -> labels, FNMR per model and group, dropped photos, figure, summary
                   (:func:`facebias.studies.rapid.folders.run_rapid_folders`;
                   ``facebias rapid``)
``example``        an example folder with a known truth for it
                   (:func:`facebias.studies.rapid.example.make_example_folder`;
                   ``facebias rapid-example``)
``seeds``          the study over world seeds
                   (:func:`facebias.studies.rapid.seeds.rapid_seed_table`)
=================  ======================================================================

The known-truth world is :func:`facebias.worlds.rapid.make_rapid_world` (1.9). A table that
comes back empty or with unresolved rates warns: :class:`NoQueryIncludedWarning`
(:func:`estimate_labels`), :class:`UnresolvedRateWarning` (:func:`fnmr_table`). ``images``,
``folders`` and ``example`` read or write image files and are imported by name, not here.
"""

from __future__ import annotations

from facebias.studies.rapid.baselines import (
    connected_components_labels,
    naive_labels,
    single_best_system_labels,
)
from facebias.studies.rapid.bias import bias_recovery, bias_summary, group_bias
from facebias.studies.rapid.config import RapidConfig, RapidExperimentConfig
from facebias.studies.rapid.estimation import (
    NoQueryIncludedWarning,
    RapidEstimate,
    estimate,
    estimate_labels,
    estimate_system_labels,
    exclusion_message,
)
from facebias.studies.rapid.evaluation import (
    UnresolvedRateWarning,
    curves_by_system_group,
    delta_fnmr,
    delta_fnmr_by_system,
    eer_by_group,
    eer_comparison,
    fnmr_table,
    genuine_impostor_pairs,
    ranking_agreement,
    system_ranking,
    true_pairs,
    unresolved_messages,
    world_pairs,
)
from facebias.studies.rapid.experiments import (
    breakdown_p,
    model_change,
    p_sweep,
    query_counts,
    sweep_by_p,
    sweep_point,
    system_subsets,
    voting_ablation,
)
from facebias.studies.rapid.normalise import gmm_modes, normalise_scores
from facebias.studies.rapid.semisup import semi_supervised, semi_supervised_curve
from facebias.studies.rapid.spectral import (
    cluster_count,
    cluster_labels,
    majority_vote,
    membership,
    query_matrix,
)
from facebias.studies.rapid.summary import summarise
from facebias.studies.rapid.tables import ALL, SCORE_COLUMNS
from facebias.studies.rapid.truth import label_agreement, oracle_labels, true_labels

__all__ = [
    "ALL",
    "RapidConfig",
    "RapidExperimentConfig",
    "RapidEstimate",
    "SCORE_COLUMNS",
    "gmm_modes",
    "normalise_scores",
    "query_matrix",
    "cluster_count",
    "membership",
    "cluster_labels",
    "majority_vote",
    "estimate",
    "estimate_labels",
    "estimate_system_labels",
    "exclusion_message",
    "NoQueryIncludedWarning",
    "naive_labels",
    "single_best_system_labels",
    "connected_components_labels",
    "semi_supervised",
    "true_labels",
    "oracle_labels",
    "label_agreement",
    "genuine_impostor_pairs",
    "true_pairs",
    "curves_by_system_group",
    "fnmr_table",
    "unresolved_messages",
    "UnresolvedRateWarning",
    "delta_fnmr",
    "eer_by_group",
    "system_ranking",
    "world_pairs",
    "delta_fnmr_by_system",
    "voting_ablation",
    "semi_supervised_curve",
    "sweep_point",
    "p_sweep",
    "sweep_by_p",
    "breakdown_p",
    "ranking_agreement",
    "eer_comparison",
    "query_counts",
    "system_subsets",
    "model_change",
    "group_bias",
    "bias_recovery",
    "bias_summary",
    "summarise",
]
