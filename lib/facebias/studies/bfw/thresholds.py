"""Paper 002, Sec. 4 (subgroup-specific thresholds): one global threshold vs one per
subgroup, each at a target FPR, fitted on held-out folds.

Protocol (corrected, see ``docs/specs/bfw.md`` A.2/A.7): thresholds are fitted on 4 folds
and evaluated on the held-out fold; results are averaged over the 5 folds
(:func:`cross_validated_rates`, :func:`fold_average`: the generic
:func:`facebias.metrics.heldout_rates` and :func:`facebias.metrics.fold_average` on the BFW
schema). The released notebook evaluated on the folds it fitted on; we do not.
:func:`null_fmr_ratio` is the chance yardstick for the global threshold's FPR max/min ratio
(Fig. 3's "2x"), on null worlds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from facebias import metrics
from facebias.metrics import check_rates
from facebias.metrics.heldout import CV_COLUMNS, fold_average, heldout_rates
from facebias.studies.bfw.pairs import select_pairs

if TYPE_CHECKING:
    from facebias.worlds.bfw import BFWWorldConfig

__all__ = ["cross_validated_rates", "fold_average", "null_fmr_ratio"]


def cross_validated_rates(
    df: pd.DataFrame, score: str, fmr: Sequence[float], grouping: str = "query",
    min_impostor_factor: float = 10.0,
) -> pd.DataFrame:
    """Held-out FMR and FNMR per fold, subgroup, target FMR and thresholding policy.

    For each fold k, thresholds come from the other folds' impostor scores: one pooled
    over all subgroups (``policy="global"``) and one per subgroup (``policy="group"``),
    each :func:`facebias.metrics.threshold_at_fmr`; a pair matches iff ``score > t``.

    Resolution (:func:`facebias.metrics.enough_impostors`, the rule of every study): a
    threshold fitted on fewer than ``min_impostor_factor / f`` impostors is NaN; a row's
    ``fmr`` and ``fnmr`` are NaN, and ``resolved`` False, unless both its threshold's
    training impostors and the subgroup's held-out impostors are that many.

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table with ``fold``, ``label`` (1 = genuine) and the ``score`` column.
    score : str
        The system's similarity column.
    fmr : sequence of float
        Target FMRs, fractions in (0, 1).
    grouping : {"query", "intra"}, default "query"
        See :func:`select_pairs`.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / f`` (0 = report every rate).

    Returns
    -------
    pandas.DataFrame
        One row per (fold, fmr_target, group, policy): ``threshold``, the held-out
        ``fmr`` and ``fnmr`` (fractions), ``n_impostor`` and ``n_genuine`` held out, and
        ``resolved`` (bool).

    Raises
    ------
    ValueError
        For a target outside (0, 1), an unknown grouping, fewer than 2 folds, a
        subgroup without held-out genuine or impostor pairs in a fold, or as
        :func:`facebias.metrics.heldout_rates` (non-finite scores, labels other than 0/1,
        genuine pairs scoring below impostors on average).

    Warns
    -----
    facebias.metrics.UnresolvedRatesWarning
        Per target with unresolved rows (:func:`facebias.metrics.heldout_rates`).

    Examples
    --------
    >>> from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world
    >>> world = make_bfw_world(BFWWorldConfig(identities_per_group=4, images_per_identity=2,
    ...                                       n_folds=2, dim=8))
    >>> cv = cross_validated_rates(world, "sim_a", [0.1])
    >>> len(cv)  # 2 folds x 1 target x 8 subgroups x 2 policies
    32
    """
    check_rates(fmr, "fmr")  # before select_pairs, as always: a bad target is named first
    cv = heldout_rates(select_pairs(df, grouping), score, "label", "group", "fold", fmr,
                       min_impostor_factor=min_impostor_factor, missing="raise")
    return cv[CV_COLUMNS]


def null_fmr_ratio(
    config: BFWWorldConfig, seeds: Sequence[int], fars: Sequence[float], grouping: str = "query"
) -> pd.DataFrame:
    """Max/min held-out FMR across subgroups at one global threshold, in null worlds.

    For each seed, the world ``config`` with that seed (:func:`facebias.worlds.bfw.make_bfw_world`)
    is scored by :func:`cross_validated_rates` and :func:`fold_average`; the ratio is
    :func:`facebias.metrics.max_min_ratio` of the subgroups' fold-averaged FMR under the
    ``global`` policy. In a null world (every system plants the same ``rho`` and ``sigma``
    in every subgroup) any ratio above 1 arises by chance: it is the yardstick for reading
    an observed ratio (README, "Two cautions").

    Parameters
    ----------
    config : facebias.worlds.bfw.BFWWorldConfig
        The null world's size and systems (its ``seed`` is replaced by each of ``seeds``).
    seeds : sequence of int
        World seeds (at least one).
    fars : sequence of float
        Target FMRs, fractions in (0, 1).
    grouping : {"query", "intra"}, default "query"
        See :func:`select_pairs`.

    Returns
    -------
    pandas.DataFrame
        One row per (seed, system, fmr_target): ``ratio`` (max/min FMR, >= 1),
        ``fmr_min`` and ``fmr_max`` (fractions).

    Raises
    ------
    ValueError
        If ``seeds`` is empty, or a system of ``config`` plants a subgroup difference
        (``rho`` or ``sigma`` not the same in every subgroup).
    """
    from dataclasses import replace

    from facebias.worlds.bfw import make_bfw_world

    if not len(seeds):
        raise ValueError("seeds: name at least one seed")
    for spec in config.systems:
        groups = list(spec.group_similarity)
        if len({spec.rho(g) for g in groups}) > 1 or len({spec.sigma(g) for g in groups}) > 1:
            raise ValueError(f"system {spec.name!r} plants subgroup differences: not a null world")
    rows = []
    for seed in seeds:
        df = make_bfw_world(replace(config, seed=int(seed)))
        for spec in config.systems:
            avg = fold_average(cross_validated_rates(df, spec.name, fars, grouping))
            for f, sub in avg[avg["policy"] == "global"].groupby("fmr_target", sort=False):
                rows.append((int(seed), spec.name, float(f), float(metrics.max_min_ratio(sub["fmr"])),
                             float(sub["fmr"].min()), float(sub["fmr"].max())))
    out = pd.DataFrame(rows, columns=["seed", "system", "fmr_target", "ratio", "fmr_min", "fmr_max"])
    return out.sort_values(["seed", "system", "fmr_target"], ascending=[True, True, False], ignore_index=True)
