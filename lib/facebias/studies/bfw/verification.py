"""Paper 002, Sec. 4 (verification): TAR@FAR (Table 3, the standard definition), the
percent deviation of each subgroup's FPR from the target (Fig. 6), and the DET curves per
subgroup (Fig. 3, 5-fold averaged; Fig. 7) with their EER and d'.

The rates come from :mod:`facebias.studies.bfw.thresholds` (held-out, fold-averaged);
Table 3 as the released code computes it is :mod:`facebias.studies.bfw.legacy`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from facebias import metrics
from facebias.io import atomic_path
from facebias.metrics import check_rates, enough_impostors, fmr_at, fnmr_at, threshold_at_fmr
from facebias.studies.bfw.pairs import select_pairs

__all__ = [
    "tar_at_far_table",
    "fpr_deviation_table",
    "DET_BY",
    "fold_averaged_det",
    "SubgroupCurves",
    "subgroup_curves",
    "det_plot_table",
    "write_det_csv",
]


def tar_at_far_table(avg: pd.DataFrame) -> pd.DataFrame:
    """TAR@FAR (standard definition) as a groups × (policy, FAR) table with an ``Avg`` row.

    Parameters
    ----------
    avg : pandas.DataFrame
        :func:`fold_average` output.

    Returns
    -------
    pandas.DataFrame
        TAR (fraction) per subgroup and an ``Avg`` row (mean over subgroups); columns
        (policy, fmr_target), policies ``group`` before ``global``, FARs descending. NaN
        where unresolved (:func:`cross_validated_rates`); ``Avg`` is NaN where a subgroup is.
    """
    t = avg.pivot(index="group", columns=["policy", "fmr_target"], values="tar")
    t = t.sort_index(axis=1, level=[0, 1], ascending=[False, False])
    t.loc["Avg"] = t.mean(skipna=False)
    return t


def fpr_deviation_table(avg: pd.DataFrame, policy: str) -> pd.DataFrame:
    """Percent deviation of each subgroup's held-out FPR from the target (groups × FAR).

    Parameters
    ----------
    avg : pandas.DataFrame
        :func:`fold_average` output.
    policy : {"global", "group"}
        The thresholding policy.

    Returns
    -------
    pandas.DataFrame
        ``fmr_dev_pct`` = 100 (FMR - target) / target, rows subgroups, columns target
        FMRs descending; NaN where unresolved (:func:`cross_validated_rates`).
    """
    sub = avg[avg["policy"] == policy]
    return sub.pivot(index="group", columns="fmr_target", values="fmr_dev_pct").sort_index(
        axis=1, ascending=False)


#: Fig. 3's three panels: a pair's group is its query's subgroup, gender or ethnicity
DET_BY = {"subgroup": "a1", "gender": "g1", "ethnicity": "e1"}


def fold_averaged_det(
    df: pd.DataFrame,
    score: str,
    by: str = "subgroup",
    fmr_grid: Sequence[float] | None = None,
    threshold: float | None = None,
    grouping: str = "query",
    min_impostor_factor: float = 10.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Paper 002 Fig. 3: DET curves per group, averaged over the folds (not pooled).

    In each fold and group, FNMR at each FMR of ``fmr_grid`` (threshold
    :func:`facebias.metrics.threshold_at_fmr` of that fold's impostors); the curve is the
    mean over folds at each grid point (vertical averaging, notes A.2 #10). With
    ``threshold``, each group's (FMR, FNMR) at that one constant score threshold, averaged
    over folds: the points the paper joins by the line of one global threshold.

    A grid point whose fold and group has fewer than ``min_impostor_factor / fmr``
    impostors (:func:`facebias.metrics.enough_impostors`) is NaN in that fold, so its
    mean is NaN and ``resolved`` False: the curve stops where the data cannot resolve it.

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table with ``fold``, ``label`` (1 = genuine), the group columns and
        ``score``.
    score : str
        The system's similarity column.
    by : {"subgroup", "gender", "ethnicity"}, default "subgroup"
        The panel: the query's ``a1``, ``g1`` or ``e1`` (:data:`DET_BY`).
    fmr_grid : sequence of float, optional
        FMR points, fractions in (0, 1); default 41 log-spaced from 1e-4 to 1.
    threshold : float, optional
        A constant score threshold (pair matches iff ``score > threshold``).
    grouping : {"query", "intra"}, default "query"
        See :func:`select_pairs`.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / fmr`` (0 = report every point).

    Returns
    -------
    curves : pandas.DataFrame
        Columns ``group, fmr, fnmr, fnmr_sd, n_folds, resolved`` (fractions; ``fnmr_sd``
        across folds), ``fmr`` ascending within each group.
    at_threshold : pandas.DataFrame
        Columns ``group, fmr, fnmr`` at ``threshold`` (mean over folds); empty without it.

    Raises
    ------
    ValueError
        For an unknown ``by`` or grouping, a grid point outside (0, 1), or a group
        without genuine or impostor pairs in a fold.

    Examples
    --------
    >>> df = pd.DataFrame({"fold": [1] * 4 + [2] * 4, "label": [1, 1, 0, 0] * 2,
    ...                    "a1": "AF", "a2": "AF", "s": [0.9, 0.4, 0.5, 0.1, 0.8, 0.7, 0.6, 0.2]})
    >>> curves, at = fold_averaged_det(df, "s", fmr_grid=[0.5], threshold=0.45, min_impostor_factor=1)
    >>> curves[["group", "fmr", "fnmr"]].to_dict("records")  # fold 1: t=0.1, FNMR 0; fold 2: t=0.2, 0
    [{'group': 'AF', 'fmr': 0.5, 'fnmr': 0.0}]
    >>> at[["fmr", "fnmr"]].to_dict("records")  # fold 1: FMR 1/2, FNMR 1/2; fold 2: FMR 1/2, FNMR 0
    [{'fmr': 0.5, 'fnmr': 0.25}]
    """
    if by not in DET_BY:
        raise ValueError(f"by: expected one of {sorted(DET_BY)}, got {by!r}")
    grid = np.sort(check_rates(np.geomspace(1e-4, 0.999, 41) if fmr_grid is None else fmr_grid, "fmr_grid")[0])
    pairs = select_pairs(df, grouping)
    s, is_gen = pairs[score].to_numpy(), pairs["label"].to_numpy() == 1
    fold, group = pairs["fold"].to_numpy(), pairs[DET_BY[by]].astype(str).to_numpy()
    rows, at = [], []
    for g in sorted(set(group)):
        per_fold, points = [], []
        for k in np.unique(fold):
            m = (group == g) & (fold == k)
            imp, gen = s[m & ~is_gen], s[m & is_gen]
            if imp.size == 0 or gen.size == 0:
                raise ValueError(f"fold {k}: group {g!r} has no genuine or impostor pairs")
            ok = np.asarray(enough_impostors(imp.size, grid, min_impostor_factor))
            per_fold.append(np.where(ok, fnmr_at(gen, np.atleast_1d(threshold_at_fmr(imp, grid))), np.nan))
            if threshold is not None:
                points.append((fmr_at(imp, threshold), fnmr_at(gen, threshold)))
        fn = np.asarray(per_fold)
        sd = fn.std(axis=0, ddof=1) if len(fn) > 1 else np.full(grid.size, np.nan)
        rows += [(g, f, m_, d, len(fn), not np.isnan(m_))
                 for f, m_, d in zip(grid, fn.mean(axis=0), sd, strict=True)]
        if points:
            at.append((g, *np.mean(points, axis=0)))
    return (pd.DataFrame(rows, columns=["group", "fmr", "fnmr", "fnmr_sd", "n_folds", "resolved"]),
            pd.DataFrame(at, columns=["group", "fmr", "fnmr"]))


@dataclass
class SubgroupCurves:
    """Per system and subgroup: the DET curve, the EER and d' (:func:`subgroup_curves`).

    Attributes
    ----------
    curves : dict
        System -> subgroup -> :class:`facebias.metrics.DetCurve`.
    eer : dict
        System -> subgroup -> EER (fraction).
    d_prime : dict
        System -> subgroup -> d'.
    """

    curves: dict[str, dict[str, metrics.DetCurve]]
    eer: dict[str, dict[str, float]]
    d_prime: dict[str, dict[str, float]]

    def table(self) -> pd.DataFrame:
        """EER and d' with rows (system, subgroup).

        Returns
        -------
        pandas.DataFrame
            Columns ``EER`` and ``d'``, sorted by (system, subgroup).
        """
        return pd.DataFrame({"EER": pd.DataFrame(self.eer).stack(), "d'": pd.DataFrame(self.d_prime).stack()}
                            ).swaplevel().sort_index()


def subgroup_curves(pairs: pd.DataFrame, systems: Sequence[str], groups: Sequence[str]) -> SubgroupCurves:
    """DET curve, EER and d' of each system on each subgroup's pairs.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`select_pairs` output: ``group``, ``label`` (1 = genuine) and one
        similarity column per system.
    systems : sequence of str
        Score columns.
    groups : sequence of str
        Subgroups to evaluate.

    Returns
    -------
    SubgroupCurves
        The curves, EERs and d' values.

    Raises
    ------
    ValueError
        If a subgroup lacks genuine or impostor pairs, or a score is non-finite.
    """
    out = SubgroupCurves({}, {}, {})
    for system in systems:
        out.curves[system], out.eer[system], out.d_prime[system] = {}, {}, {}
        for g in groups:
            sub = pairs[pairs["group"] == g]
            gen, imp = sub.loc[sub["label"] == 1, system], sub.loc[sub["label"] == 0, system]
            out.curves[system][g] = metrics.det_curve(gen, imp)
            out.eer[system][g] = metrics.eer(gen, imp)
            out.d_prime[system][g] = metrics.d_prime(gen, imp)
    return out


def det_plot_table(curves: Mapping[str, Mapping[str, metrics.DetCurve]], n: int = 198) -> pd.DataFrame:
    """The DET curves as one tidy table for a DVC data plot.

    Parameters
    ----------
    curves : mapping
        System -> subgroup -> :class:`facebias.metrics.DetCurve` (e.g.
        :attr:`SubgroupCurves.curves`).
    n : int, default 198
        Each curve is thinned to at most ``n`` + 2 points spaced on a log grid
        (:func:`facebias.plots.thin_curve`).

    Returns
    -------
    pandas.DataFrame
        Columns ``system, subgroup, fmr, fnmr`` (fractions).
    """
    from facebias.plots import thin_curve

    return pd.concat(
        [pd.DataFrame({"system": s, "subgroup": g, "fmr": c.fmr, "fnmr": c.fnmr})
         for s, by_group in curves.items() for g, curve in by_group.items() for c in [thin_curve(curve, n=n)]],
        ignore_index=True)


def write_det_csv(table: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write :func:`det_plot_table` output as CSV (6 significant digits), atomically.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`det_plot_table` output.
    path : str or os.PathLike
        The CSV file.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    with atomic_path(path) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    return Path(path)
