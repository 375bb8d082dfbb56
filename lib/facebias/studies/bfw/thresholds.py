"""Paper 002, Sec. 4 (subgroup-specific thresholds): one global threshold vs one per
subgroup, each at a target FPR, fitted on held-out folds.

Protocol (corrected, see ``docs/specs/bfw.md`` A.2/A.7): thresholds are fitted on 4 folds
and evaluated on the held-out fold; results are averaged over the 5 folds
(:func:`cross_validated_rates`, :func:`fold_average`). The released notebook evaluated on
the folds it fitted on; we do not. :func:`null_fmr_ratio` is the chance yardstick for the
global threshold's FPR max/min ratio (Fig. 3's "2x"), on null worlds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from facebias import metrics
from facebias.metrics import check_rates, enough_impostors, fmr_at, fnmr_at, threshold_at_fmr
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
        For a target outside (0, 1), an unknown grouping, fewer than 2 folds, or a
        subgroup without held-out genuine or impostor pairs in a fold.

    Examples
    --------
    >>> from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world
    >>> world = make_bfw_world(BFWWorldConfig(identities_per_group=4, images_per_identity=2,
    ...                                       n_folds=2, dim=8))
    >>> cv = cross_validated_rates(world, "sim_a", [0.1])
    >>> len(cv)  # 2 folds x 1 target x 8 subgroups x 2 policies
    32
    """
    rates, _ = check_rates(fmr, "fmr")
    pairs = select_pairs(df, grouping)
    folds = np.sort(pairs["fold"].unique())
    if folds.size < 2:
        raise ValueError(f"column 'fold': need at least 2 folds, got {folds.tolist()}")
    is_gen = pairs["label"].to_numpy() == 1
    s = pairs[score].to_numpy()
    fold = pairs["fold"].to_numpy()
    group = pairs["group"].to_numpy()
    groups = np.unique(group)
    rows = []
    def fitted(imp_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Thresholds on ``imp_train`` (NaN where too few) and where they are resolved."""
        ok = np.asarray(enough_impostors(imp_train.size, rates, min_impostor_factor))
        if not imp_train.size:
            return np.full(rates.shape, np.nan), ok
        return np.where(ok, np.atleast_1d(threshold_at_fmr(imp_train, rates)), np.nan), ok

    for k in folds:
        train, test = fold != k, fold == k
        t_glob = fitted(s[train & ~is_gen])
        for g in groups:
            in_g = group == g
            imp_test, gen_test = s[test & in_g & ~is_gen], s[test & in_g & is_gen]
            if imp_test.size == 0 or gen_test.size == 0:
                raise ValueError(f"fold {k}: subgroup {g!r} has no held-out genuine or impostor pairs")
            ok_test = np.asarray(enough_impostors(imp_test.size, rates, min_impostor_factor))
            for policy, (t, ok_t) in (("global", t_glob), ("group", fitted(s[train & in_g & ~is_gen]))):
                ok = ok_t & ok_test
                fm = np.where(ok, fmr_at(imp_test, t), np.nan)
                fn = np.where(ok, fnmr_at(gen_test, t), np.nan)
                for f, ti, fm_i, fn_i, ok_i in zip(rates, t, fm, fn, ok, strict=True):
                    rows.append((int(k), f, g, policy, float(ti), fm_i, fn_i, imp_test.size, gen_test.size,
                                 bool(ok_i)))
    return pd.DataFrame(rows, columns=["fold", "fmr_target", "group", "policy", "threshold",
                                       "fmr", "fnmr", "n_impostor", "n_genuine", "resolved"])


def fold_average(cv: pd.DataFrame) -> pd.DataFrame:
    """Mean over folds of :func:`cross_validated_rates`, with TAR and the FMR deviation.

    Parameters
    ----------
    cv : pandas.DataFrame
        :func:`cross_validated_rates` output.

    Returns
    -------
    pandas.DataFrame
        One row per (policy, fmr_target, group): mean ``fmr``, ``fnmr``, ``threshold``,
        ``fmr_sd`` across folds, summed pair counts, ``tar = 1 - fnmr`` and
        ``fmr_dev_pct = 100 (FMR - target) / target`` (paper 002, Fig. 6; percent);
        ``resolved``: every fold's row is (a NaN fold makes the mean NaN, never a mean of
        the other folds). Without a ``resolved`` column in ``cv``, a row is resolved
        where its ``fmr`` and ``fnmr`` are known.

    Examples
    --------
    >>> cv = pd.DataFrame({"fold": [1, 2], "fmr_target": 0.1, "group": "AF", "policy": "global",
    ...                    "threshold": [0.5, 0.52], "fmr": [0.10, 0.14], "fnmr": [0.2, 0.3],
    ...                    "n_impostor": 50, "n_genuine": 10})
    >>> fold_average(cv)[["fmr", "tar", "fmr_dev_pct"]].round(6)  # FMR 0.12 is 20 % above 0.1
        fmr   tar  fmr_dev_pct
    0  0.12  0.75         20.0
    """
    resolved = cv["resolved"] if "resolved" in cv else cv["fmr"].notna() & cv["fnmr"].notna()
    out = (cv.assign(resolved=resolved.astype(bool))
           .groupby(["policy", "fmr_target", "group"], sort=True)
           .agg(fmr=("fmr", "mean"), fnmr=("fnmr", "mean"), fmr_sd=("fmr", "std"),
                threshold=("threshold", lambda x: x.mean(skipna=False)), n_impostor=("n_impostor", "sum"),
                n_genuine=("n_genuine", "sum"), resolved=("resolved", "all"))
           .reset_index())
    out.loc[~out["resolved"], ["fmr", "fnmr", "fmr_sd"]] = np.nan
    out["tar"] = 1 - out["fnmr"]
    out["fmr_dev_pct"] = 100 * (out["fmr"] - out["fmr_target"]) / out["fmr_target"]
    return out


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
