"""One-number summaries of how well genuine and impostor scores separate: the equal error
rate (:func:`eer`, on the DET polyline), decidability (:func:`d_prime`) and the area under
the ROC curve (:func:`roc_auc`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from facebias.metrics.checks import check_scores
from facebias.metrics.det import DetCurve, det_curve

__all__ = ["eer", "d_prime", "roc_auc"]


def _eer_from_curve(curve: DetCurve) -> float:
    d = curve.fmr - curve.fnmr  # non-increasing, starts at 1, ends at -1
    k = int(np.argmax(d <= 0))
    alpha = d[k - 1] / (d[k - 1] - d[k])
    return float(curve.fmr[k - 1] + alpha * (curve.fmr[k] - curve.fmr[k - 1]))


def eer(genuine: Any, impostor: Any) -> float:
    """Equal error rate: where FMR = FNMR on the DET polyline, linearly interpolated.

    The crossing lies on the segment between the last point with FMR > FNMR and the
    first with FMR <= FNMR; the result is the common rate at the intersection.

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.

    Returns
    -------
    float
        The EER, a fraction in [0, 1].

    Raises
    ------
    ValueError
        If either score set is empty or non-finite.

    Examples
    --------
    >>> eer([0.9, 0.8, 0.7, 0.4], [0.1, 0.2, 0.3, 0.5, 0.6])
    0.25
    """
    return _eer_from_curve(det_curve(genuine, impostor))


def d_prime(genuine: Any, impostor: Any) -> float:
    """Decidability ``d' = |mu_g - mu_i| / sqrt((var_g + var_i) / 2)`` (population variances).

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.

    Returns
    -------
    float
        d' >= 0, in units of the pooled standard deviation; larger = better separated.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite, or both are constant.

    Examples
    --------
    >>> d_prime([1.0, 3.0], [-1.0, 1.0])  # means 2 and 0, both variances 1
    2.0
    """
    gen = check_scores(genuine, "genuine").astype(np.float64, copy=False)
    imp = check_scores(impostor, "impostor").astype(np.float64, copy=False)
    spread = np.sqrt((gen.var() + imp.var()) / 2)
    if spread == 0:
        raise ValueError("d_prime: both score sets are constant (zero variance)")
    return float(abs(gen.mean() - imp.mean()) / spread)


def roc_auc(genuine: Any, impostor: Any) -> float:
    """Area under the ROC curve: P(genuine > impostor) + 0.5 P(tie), for similarity
    scores (higher = more alike); the Mann-Whitney U statistic / (n_genuine n_impostor).

    Parameters
    ----------
    genuine, impostor : array_like
        1-D similarity scores of genuine and impostor pairs.

    Returns
    -------
    float
        AUC in [0, 1]; 0.5 = chance, 1 = every genuine score above every impostor score.

    Raises
    ------
    ValueError
        If either score set is empty or non-finite.

    Examples
    --------
    >>> roc_auc([0.9, 0.5], [0.1, 0.5])  # 3 of 4 pairs ordered, 1 tie: (3 + 0.5) / 4
    0.875
    """
    from scipy.stats import rankdata

    gen = check_scores(genuine, "genuine").astype(np.float64, copy=False)
    imp = check_scores(impostor, "impostor").astype(np.float64, copy=False)
    ranks = rankdata(np.concatenate([gen, imp]))
    return float((ranks[: gen.size].sum() - gen.size * (gen.size + 1) / 2) / (gen.size * imp.size))
