"""Paper 002 (Robinson et al., BFW): global vs subgroup-specific thresholds.

Works on a pair table in the BFW datatable schema, real or from ``facebias.worlds.bfw``;
thresholds are fitted on 4 folds and evaluated on the held-out fold (``docs/specs/bfw.md``
A.2/A.7). One module per section of the paper:

=====================  ====================================================================
module                 paper 002
=====================  ====================================================================
``pairs``              Sec. 3: the pair table (:func:`load_pair_table`) and a pair's
                       subgroup (:func:`select_pairs`, query vs intra)
``config``             the study's parameters (:class:`BFWConfig`, ``params.yaml`` ``bfw``)
``thresholds``         Sec. 4: global vs subgroup thresholds at a target FPR, held-out
                       folds (:func:`cross_validated_rates`, :func:`fold_average`), and
                       the null-world yardstick of the FPR ratio (:func:`null_fmr_ratio`)
``verification``       Table 3 TAR@FAR, Fig. 6 FPR deviation, Fig. 3 / 7 DET per subgroup
                       (:func:`fold_averaged_det`, :func:`subgroup_curves`), EER and d'
``legacy``             Table 3 as the released code computes it (:func:`legacy_tar_table`)
``identification``     Fig. 5: rank-1 confusion between subgroups (:func:`rank1_confusion`)
``seeds``              Fig. 6 deviations over world seeds
                       (:func:`facebias.studies.bfw.seeds.bfw_seed_table`)
``summary``            ``reports/metrics/bfw.json`` and ``bfw_details.json``
                       (:func:`summarise`)
=====================  ====================================================================
"""

from __future__ import annotations

from facebias.studies.bfw.config import BFWConfig
from facebias.studies.bfw.identification import rank1_confusion
from facebias.studies.bfw.legacy import (
    accuracy_optimal_threshold,
    legacy_decision_thresholds,
    legacy_tar_table,
)
from facebias.studies.bfw.pairs import GROUPINGS, load_pair_table, select_pairs
from facebias.studies.bfw.summary import summarise
from facebias.studies.bfw.thresholds import cross_validated_rates, fold_average, null_fmr_ratio
from facebias.studies.bfw.verification import (
    DET_BY,
    SubgroupCurves,
    det_plot_table,
    fold_averaged_det,
    fpr_deviation_table,
    subgroup_curves,
    tar_at_far_table,
    write_det_csv,
)

__all__ = [
    "GROUPINGS",
    "select_pairs",
    "cross_validated_rates",
    "fold_average",
    "null_fmr_ratio",
    "tar_at_far_table",
    "fpr_deviation_table",
    "accuracy_optimal_threshold",
    "legacy_decision_thresholds",
    "legacy_tar_table",
    "rank1_confusion",
    "DET_BY",
    "fold_averaged_det",
    "BFWConfig",
    "load_pair_table",
    "SubgroupCurves",
    "subgroup_curves",
    "det_plot_table",
    "write_det_csv",
    "summarise",
]
