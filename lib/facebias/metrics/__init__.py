"""Verification error rates of face recognition systems.

Conventions (used everywhere in facebias)
-----------------------------------------
* Scores are **similarities**: higher means more alike.
* At threshold ``t`` a pair is a **match** iff ``score > t``.
* ``FMR(t) = mean(impostor > t)``   false match rate (FAR, FPR).
* ``FNMR(t) = mean(genuine <= t)``  false non-match rate (FRR, FNR); ``TAR = 1 - FNMR``.
* Rates are fractions in [0, 1], never percentages.
* ``threshold_at_fmr(impostor, f)`` is the smallest impostor score ``t`` with
  ``FMR(t) <= f``; the achieved FMR can be below ``f`` when scores tie or ``f * n``
  is not an integer.

Every function validates its input and raises ``ValueError`` naming the argument (or
DataFrame column) and the problem: NaN or infinite scores, labels that are not 0/1,
an empty group, rates outside (0, 1). Nothing is silently dropped.

Everything is vectorised and sort based, O(n log n) in the number of scores.

Contents (module -> job)
------------------------
* :mod:`~facebias.metrics.checks`      validation of scores, target rates and labels
* :mod:`~facebias.metrics.direction`   whether scores run the declared way
  (:func:`direction_problem`; ``higher_is_match=False`` for distances)
* :mod:`~facebias.metrics.resolution`  whether enough impostors resolve a rate
  (:func:`enough_impostors`, :data:`TOO_FEW_IMPOSTORS`)
* :mod:`~facebias.metrics.rates`       FMR/FNMR at thresholds, thresholds at FMR, TAR at FAR,
  operating points
* :mod:`~facebias.metrics.det`         DET curves and their thinning
* :mod:`~facebias.metrics.separation`  EER, d', ROC AUC
* :mod:`~facebias.metrics.fairness`    max/min ratio, Gini, FDR, GARBE, inequity rate
* :mod:`~facebias.metrics.weighted`    rates and thresholds under bootstrap weights
* :mod:`~facebias.metrics.groups`      :func:`group_report` / :class:`GroupReport`: per-group
  rates with (identity) bootstrap intervals and fairness summaries, in sample; warns
  :class:`UnresolvedRatesWarning` for unresolved rates
* :mod:`~facebias.metrics.heldout`     held-out rates: thresholds fitted on the other folds
  (:func:`heldout_rates`, :func:`fold_average`, :func:`identity_folds`, :func:`heldout_report`)
* :mod:`~facebias.metrics.enrolment`   failure-to-enrol tables
"""

from __future__ import annotations

from facebias.metrics.checks import check_labels, check_rates, check_scores
from facebias.metrics.det import DetCurve, det_curve, thin_det
from facebias.metrics.direction import direction_problem
from facebias.metrics.enrolment import failure_to_enrol
from facebias.metrics.fairness import fdr, garbe, gini, inequity_rate, max_min_ratio
from facebias.metrics.groups import (
    EXCLUDES_ESTIMATE,
    IN_SAMPLE,
    GroupReport,
    UnresolvedRatesWarning,
    group_report,
)
from facebias.metrics.heldout import fold_average, heldout_rates, heldout_report, identity_folds
from facebias.metrics.rates import (
    fmr_at,
    fnmr_at,
    fnmr_at_fmr,
    operating_points,
    tar_at_far,
    threshold_at_fmr,
)
from facebias.metrics.resolution import TOO_FEW_IMPOSTORS, enough_impostors
from facebias.metrics.separation import d_prime, eer, roc_auc

__all__ = [
    "DetCurve",
    "GroupReport",
    "check_scores",
    "check_rates",
    "check_labels",
    "TOO_FEW_IMPOSTORS",
    "EXCLUDES_ESTIMATE",
    "enough_impostors",
    "threshold_at_fmr",
    "fmr_at",
    "fnmr_at",
    "fnmr_at_fmr",
    "tar_at_far",
    "operating_points",
    "det_curve",
    "thin_det",
    "eer",
    "d_prime",
    "roc_auc",
    "max_min_ratio",
    "gini",
    "fdr",
    "garbe",
    "inequity_rate",
    "group_report",
    "IN_SAMPLE",
    "UnresolvedRatesWarning",
    "direction_problem",
    "heldout_rates",
    "fold_average",
    "identity_folds",
    "heldout_report",
    "failure_to_enrol",
]
