"""Paper 002 (Robinson et al., BFW): global vs subgroup-specific thresholds.

Works on a pair table in the BFW datatable schema (``fold, p1, p2, label, id1, id2,
att1, att2, a1, a2, g1, g2, e1, e2`` + one score column per system), real or from
``facebias.worlds.bfw``. Scores are similarities; a pair is a match iff ``score > t``.

Protocol (corrected, see ``../shared/notes/seeds_002_003.md`` A.2/A.7): thresholds are
fitted on 4 folds and evaluated on the held-out fold; results are averaged over the 5
folds. The released notebook evaluated on the folds it fitted on; we do not.
A pair's subgroup is its query's (``a1``, ``grouping="query"``) or, for intra-subgroup
analyses, only pairs with ``a1 == a2`` (``grouping="intra"``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from facebias import metrics
from facebias.io import (
    atomic_path,
    config_from_params,
    param_float,
    param_int,
    param_list,
    param_str,
)
from facebias.metrics import check_rates, enough_impostors, fmr_at, fnmr_at, threshold_at_fmr

if TYPE_CHECKING:
    from facebias.worlds.bfw import BFWWorldConfig

__all__ = [
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

GROUPINGS = ("query", "intra")


def select_pairs(df: pd.DataFrame, grouping: str = "query") -> pd.DataFrame:
    """The pairs that take part, with a ``group`` column (the query's subgroup ``a1``).

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table (needs ``a1`` and ``a2``).
    grouping : {"query", "intra"}, default "query"
        ``"query"`` keeps every pair; ``"intra"`` keeps only ``a1 == a2`` pairs.

    Returns
    -------
    pandas.DataFrame
        The kept rows (original index) with a str ``group`` column.

    Raises
    ------
    ValueError
        For an unknown ``grouping``.

    Examples
    --------
    >>> df = pd.DataFrame({"a1": ["AF", "AF", "BM"], "a2": ["AF", "BM", "BM"]})
    >>> select_pairs(df, "intra")
       a1  a2 group
    0  AF  AF    AF
    2  BM  BM    BM
    """
    if grouping not in GROUPINGS:
        raise ValueError(f"grouping: expected one of {GROUPINGS}, got {grouping!r}")
    a1 = df["a1"].astype(str)
    out = df if grouping == "query" else df[a1 == df["a2"].astype(str)]
    return out.assign(group=a1.loc[out.index])


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


def accuracy_optimal_threshold(
    scores: np.ndarray, labels: np.ndarray, grid: np.ndarray, early_stop: int | None = None
) -> float:
    """Threshold on ``grid`` maximising ``mean((score > t) == label)``; ties go to the larger t.

    The BFW repository's ``find_best_threshold`` rule; with ``early_stop`` also its early
    stop: the grid is scanned upwards and the scan ends once the accuracy has fallen
    more than ``early_stop`` times in a row (the repository uses 5).

    Parameters
    ----------
    scores : numpy.ndarray
        Similarity scores.
    labels : numpy.ndarray
        1/True = genuine.
    grid : numpy.ndarray
        Candidate thresholds.
    early_stop : int, optional
        Stop scanning after more than this many consecutive decreases of the accuracy;
        ``None`` (default) scans the whole grid.

    Returns
    -------
    float
        The best threshold on ``grid`` (among the points scanned).

    Examples
    --------
    >>> accuracy_optimal_threshold([0.9, 0.6, 0.4, 0.1], [1, 1, 0, 0], [0.0, 0.2, 0.5, 0.7])
    0.5
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    grid = np.sort(np.asarray(grid, dtype=np.float64))
    # accuracy(t) = (#genuine > t + #impostor <= t) / n, from two sorted arrays
    gen, imp = np.sort(s[y]), np.sort(s[~y])
    correct = (gen.size - np.searchsorted(gen, grid, side="right")) + np.searchsorted(
        imp, grid, side="right")
    if early_stop is not None:
        falls = 0
        for i in range(1, correct.size):
            falls = falls + 1 if correct[i] < correct[i - 1] else 0
            if falls > early_stop:
                correct = correct[: i + 1]
                break
    best = np.flatnonzero(correct == correct.max())[-1]
    return float(grid[best])


def legacy_decision_thresholds(
    df: pd.DataFrame, score: str, grouping: str = "intra", n_grid: int = 1000, grid: str = "quantile"
) -> tuple[float, dict[str, float]]:
    """Accuracy-optimal decision thresholds as the BFW repository fits them for Table 3.

    For each fold, the best threshold on the other folds (globally, and per subgroup); the
    thresholds are the means over folds. With ``grid="quantile"`` (default, ours) the grid
    spans the 0.1–99.9% score quantiles and is scanned whole; with ``grid="released"`` it
    is the released code's ``numpy.linspace(0.18, 0.40, n_grid)`` (500 or 5000 points
    there) with its early stop after more than 5 consecutive accuracy decreases
    (:func:`accuracy_optimal_threshold`), which only suits SphereFace-like scores.

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table.
    score : str
        The system's similarity column.
    grouping : {"query", "intra"}, default "intra"
        See :func:`select_pairs`.
    n_grid : int, default 1000
        Grid points.
    grid : {"quantile", "released"}, default "quantile"
        The threshold grid (see above).

    Returns
    -------
    threshold_global : float
        Mean over folds of the best global threshold.
    threshold_group : dict of str to float
        Subgroup -> mean over folds of its best threshold.

    Raises
    ------
    ValueError
        For an unknown ``grouping`` or ``grid``.
    """
    if grid not in ("quantile", "released"):
        raise ValueError(f"grid: expected 'quantile' or 'released', got {grid!r}")
    pairs = select_pairs(df, grouping)
    s, y, fold = pairs[score].to_numpy(), pairs["label"].to_numpy() == 1, pairs["fold"].to_numpy()
    if grid == "released":
        points, stop = np.linspace(0.18, 0.40, n_grid), 5
    else:
        points, stop = np.linspace(*np.quantile(s, [0.001, 0.999]), n_grid), None
    groups = np.sort(pairs["group"].unique())
    group = pairs["group"].to_numpy()
    t_glob, t_grp = [], {g: [] for g in groups}
    for k in np.unique(fold):
        train = fold != k
        t_glob.append(accuracy_optimal_threshold(s[train], y[train], points, stop))
        for g in groups:
            m = train & (group == g)
            t_grp[g].append(accuracy_optimal_threshold(s[m], y[m], points, stop))
    return float(np.mean(t_glob)), {g: float(np.mean(v)) for g, v in t_grp.items()}


def legacy_tar_table(
    df: pd.DataFrame,
    score: str,
    far: Sequence[float],
    threshold_global: float,
    threshold_group: dict[str, float],
    grouping: str = "intra",
) -> pd.DataFrame:
    """Paper 002's Table 3 as the released code computes it (NOT a TAR@FAR).

    For subgroup g, decision threshold t (global or the subgroup's) and FAR value x:
    ``legacy(g, x) = 1 - #{pairs in g: s <= t and s > x} / #{pairs in g: s <= t}``.
    The FAR value is used as a *score* threshold on the pairs predicted non-match, so the
    "TAR gain" of subgroup thresholds in the paper is an artefact of the metric.

    Parameters
    ----------
    df : pandas.DataFrame
        A BFW pair table.
    score : str
        The system's similarity column.
    far : sequence of float
        The "FAR" values (used as score thresholds, as the released code does).
    threshold_global : float
        Decision threshold of the global policy.
    threshold_group : dict of str to float
        Decision threshold of each subgroup.
    grouping : {"query", "intra"}, default "intra"
        See :func:`select_pairs`.

    Returns
    -------
    pandas.DataFrame
        Rows (policy, group), one column per ``far`` value; NaN where no pair is rejected.

    Raises
    ------
    ValueError
        For an unknown ``grouping``.

    Examples
    --------
    >>> df = pd.DataFrame({"a1": "AF", "a2": "AF", "s": [0.9, 0.3, 0.25, 0.1]})
    >>> legacy_tar_table(df, "s", [0.2], 0.3, {"AF": 0.3})  # rejected 0.3, 0.25, 0.1: 1 - 2/3
                       0.2
    policy group
    global AF     0.333333
    group  AF     0.333333
    """
    pairs = select_pairs(df, grouping)
    rows = {}
    for policy in ("global", "group"):
        for g, sub in pairs.groupby("group", sort=True):
            t = threshold_global if policy == "global" else threshold_group[g]
            s = sub[score].to_numpy()
            rejected = s[s <= t]
            rows[(policy, g)] = {x: (1 - np.mean(rejected > x)) if rejected.size else np.nan
                                 for x in far}
    out = pd.DataFrame(rows).T
    out.index.names = ["policy", "group"]
    return out


def rank1_confusion(
    embeddings: np.ndarray,
    groups: Sequence[str],
    ids: Sequence[Any],
    subgroups: Sequence[str] | None = None,
    chunk: int = 1024,
) -> pd.DataFrame:
    """Paper 002 Fig. 5: the subgroup of each probe's nearest other-identity neighbour.

    Every image is a probe; its neighbour is the image of *another* identity with the
    largest cosine similarity (images of the probe's own identity are excluded; ties go to
    the lowest index). Cell (g, h) is the share of subgroup g's probes whose neighbour is in
    subgroup h, so every row sums to 1. With no subgroup structure and equal subgroup sizes
    the rows are near uniform (1/8 each for BFW's 8); planted within-subgroup similarity
    puts mass on the diagonal. (The released notebook counts only rank-1 *errors* of a
    search over all images; here every probe's nearest impostor counts.)

    Parameters
    ----------
    embeddings : numpy.ndarray
        Shape (n, d), one row per image; rows are normalised to unit length here.
    groups : sequence of str
        Subgroup of each image (length n).
    ids : sequence
        Identity of each image (length n); at least two identities.
    subgroups : sequence of str, optional
        Row and column order; default the sorted distinct ``groups``.
    chunk : int, default 1024
        Probes per block of the similarity matrix (memory: ``chunk * n`` floats).

    Returns
    -------
    pandas.DataFrame
        Rows: probe subgroup (index name ``probe``); columns: neighbour subgroup (name
        ``neighbour``); row-normalised shares (fractions); NaN rows for subgroups without
        probes.

    Raises
    ------
    ValueError
        For mismatched lengths, a non-2-D or non-finite embedding matrix, a zero row, fewer
        than two identities, or a group not in ``subgroups``.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> t = rank1_confusion(x, ["A", "A", "B", "B"], [0, 1, 2, 3])
    >>> t.to_dict("index")  # each probe's nearest other identity is in its own group
    {'A': {'A': 1.0, 'B': 0.0}, 'B': {'A': 0.0, 'B': 1.0}}
    """
    x = np.asarray(embeddings, dtype=np.float64)
    grp = np.asarray(groups).astype(str)
    ident = pd.factorize(np.asarray(ids))[0]
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"embeddings: need a finite 2-D array, got shape {x.shape}")
    if not (x.shape[0] == grp.size == ident.size):
        raise ValueError(f"embeddings, groups and ids differ in length: {x.shape[0]}, {grp.size}, {ident.size}")
    if ident.size and ident.max() < 1:
        raise ValueError("ids: need at least two identities")
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    if (norm == 0).any():
        raise ValueError("embeddings: a row is zero")
    x = x / norm
    order = list(subgroups) if subgroups is not None else sorted(set(grp))
    unknown = sorted(set(grp) - set(order))
    if unknown:
        raise ValueError(f"groups {unknown} are not in subgroups {order}")
    nn = np.empty(x.shape[0], dtype=np.int64)
    for start in range(0, x.shape[0], chunk):
        sim = x[start:start + chunk] @ x.T
        sim[ident[start:start + chunk, None] == ident[None, :]] = -np.inf
        nn[start:start + chunk] = np.argmax(sim, axis=1)
    counts = pd.crosstab(pd.Categorical(grp, categories=order), pd.Categorical(grp[nn], categories=order),
                         dropna=False)
    shares = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).astype(float)
    shares.index = pd.Index(order, name="probe")
    shares.columns = pd.Index(order, name="neighbour")
    return shares


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


# --------------------------------------------------------------------------- the study (notebooks/bfw_thresholds.py)
@dataclass(frozen=True)
class BFWConfig:
    """Parameters of the study (``params.yaml`` section ``bfw``).

    Parameters
    ----------
    systems : tuple of str, default ("sim_a", "sim_b")
        Score columns of the synthetic world.
    fmr : tuple of float, default (0.3, 0.1, 0.01, 0.001, 0.0001)
        The FAR grid of the threshold analysis (fractions, descending as in the paper).
    grouping : {"query", "intra"}, default "query"
        A pair's subgroup (``query`` = its query's ``a1``; ``intra`` keeps ``a1 == a2``
        only).
    grouping_legacy : {"query", "intra"}, default "intra"
        The same for the released Table 3 computation.
    report_fmr : tuple of float, default (0.01, 0.001)
        FMRs of the group report.
    n_boot : int, default 200
        Identity-bootstrap replicates (>= 0).
    seed : int, default 7
        Bootstrap seed (>= 0).
    world_seeds : int, default 10
        World seeds of the seed sweep (:func:`facebias.studies.seeds.bfw_seed_table`): the
        held-out FPR deviations are recomputed on the world under this many seeds, from the
        world's own seed on (1 = the committed world only).
    real : dict, default {}
        The opt-in released datatables, name -> ``{datatable: path, systems: "a,b"}``
        (one DVC stage ``bfw_real@<name>`` each).

    Raises
    ------
    ValueError
        For a mistyped value, a rate outside (0, 1], an unknown grouping, a negative
        count, or a malformed ``real`` entry.
    """

    systems: tuple[str, ...] = ("sim_a", "sim_b")
    fmr: tuple[float, ...] = (0.3, 0.1, 0.01, 0.001, 0.0001)
    grouping: str = "query"
    grouping_legacy: str = "intra"
    report_fmr: tuple[float, ...] = (0.01, 0.001)
    n_boot: int = 200
    seed: int = 7
    world_seeds: int = 10
    real: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        rate = partial(param_float, low=0, high=1, open_low=True)
        put("systems", param_list(self.systems, "bfw.systems", param_str))
        put("fmr", param_list(self.fmr, "bfw.fmr", rate))
        put("report_fmr", param_list(self.report_fmr, "bfw.report_fmr", rate))
        put("grouping", param_str(self.grouping, "bfw.grouping", GROUPINGS))
        put("grouping_legacy", param_str(self.grouping_legacy, "bfw.grouping_legacy", GROUPINGS))
        put("n_boot", param_int(self.n_boot, "bfw.n_boot", minimum=0))
        put("seed", param_int(self.seed, "bfw.seed", minimum=0))
        put("world_seeds", param_int(self.world_seeds, "bfw.world_seeds", minimum=1))
        if not isinstance(self.real, Mapping):
            raise ValueError(f"bfw.real must be a mapping name -> {{datatable, systems}}, got {self.real!r}")
        for name, entry in self.real.items():
            if not isinstance(entry, Mapping) or set(entry) != {"datatable", "systems"}:
                raise ValueError(f"bfw.real.{name} must have exactly the keys datatable and systems, got {entry!r}")
            param_str(entry["datatable"], f"bfw.real.{name}.datatable")
            param_str(entry["systems"], f"bfw.real.{name}.systems")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> BFWConfig:
        """Build from the ``bfw`` section: unknown keys and mistyped values raise.

        Parameters
        ----------
        params : mapping
            The section's keys and values.

        Returns
        -------
        BFWConfig
            The validated config.

        Raises
        ------
        ValueError
            For an unknown key or an invalid value.

        Examples
        --------
        >>> BFWConfig.from_params({"n_boot": 0}).n_boot
        0
        >>> BFWConfig.from_params({"fmr": [5]})  # a percentage, not a fraction
        Traceback (most recent call last):
        ...
        ValueError: bfw.fmr[0] must lie in (0, 1], got 5
        """
        return config_from_params(cls, dict(params), "bfw")


def load_pair_table(path: str | os.PathLike, source: str, systems: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """The pair table and a provenance line.

    Parameters
    ----------
    path : str or os.PathLike
        The table's file.
    source : {"synthetic", "real"}
        ``"synthetic"``: a world written by :func:`facebias.worlds.bfw.write_world`;
        ``"real"``: a released BFW datatable (:func:`facebias.datasets.bfw.load_bfw`).
    systems : sequence of str
        Score columns that must exist (at least one).

    Returns
    -------
    df : pandas.DataFrame
        The pair table.
    provenance : str
        One line naming the backend and systems.

    Raises
    ------
    ValueError
        For no systems, an unknown source or a missing score column.
    FileNotFoundError
        If the synthetic world file does not exist.
    """
    from facebias.datasets.bfw import load_bfw
    from facebias.worlds.bfw import read_world

    path = Path(path)
    if not systems:
        raise ValueError("systems: name at least one score column")
    if source == "synthetic":
        df = read_world(path)
        provenance = (f"backend: synthetic world (facebias.worlds.bfw, seed {df.attrs['world']['seed']}), "
                      f"simulated systems {', '.join(systems)} — not the paper's data")
    elif source == "real":
        df = load_bfw(path)
        provenance = f"backend: real BFW datatable {path.name}, systems {', '.join(systems)}"
    else:
        raise ValueError(f"source must be 'synthetic' or 'real', got {source!r}")
    missing = [s for s in systems if s not in df.columns]
    if missing:
        raise ValueError(f"{path}: no score column(s) {missing}; columns are {list(df.columns)}")
    return df, provenance


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


def _by_far(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    return {f"{c:g}": {g: float(v) for g, v in table[c].items()} for c in table.columns}


def summarise(*, source: str, provenance: str, datatable: str, config: BFWConfig, systems: Sequence[str],
              fold_averages: Mapping[str, pd.DataFrame], curves: SubgroupCurves,
              legacy: Mapping[str, pd.DataFrame], reports: Mapping[str, Any],
              rank1: Mapping[str, pd.DataFrame] | None = None) -> tuple[dict, dict]:
    """What ``reports/metrics/<name>.json`` and ``<name>_details.json`` hold.

    Deviation and TAR tables are derived here (:func:`fpr_deviation_table`,
    :func:`tar_at_far_table`).

    Parameters
    ----------
    source : str
        ``"synthetic"`` or ``"real"``.
    provenance : str
        :func:`load_pair_table`'s provenance line.
    datatable : str
        The pair table's path.
    config : BFWConfig
        The study's parameters.
    systems : sequence of str
        Score columns evaluated.
    fold_averages : mapping
        System -> :func:`fold_average` of :func:`cross_validated_rates`.
    curves : SubgroupCurves
        :func:`subgroup_curves` output.
    legacy : mapping
        System -> :func:`legacy_tar_table`.
    reports : mapping
        System -> :func:`facebias.metrics.group_report`.
    rank1 : mapping, optional
        System -> :func:`rank1_confusion` (the world's embeddings; absent on a real
        datatable, which has no features). Its diagonal becomes ``rank1_diagonal``.

    Returns
    -------
    headline : dict
        The ``bfw`` metrics (schema :data:`facebias.schema.SCHEMAS` ``["bfw"]``): per
        system the max |FMR deviation| (percent), the global-threshold FMR max/min
        ratio, the average TAR per policy and the EER range; NaN (null) where a subgroup is
        unresolved (too few impostors for the FAR, :func:`cross_validated_rates`).
    details : dict
        The ``bfw_details`` metrics: per-subgroup EER, d', deviations, TAR@FAR, legacy
        Table 3 values, ``resolved`` (policy -> FAR -> subgroup -> bool: whether the
        deviation and TAR are resolved, :func:`cross_validated_rates`; unresolved values are
        null) and the group report; with ``rank1``, ``rank1_diagonal``: system ->
        subgroup -> share of its probes whose nearest other identity is in the same
        subgroup (fraction).
    """
    head: dict[str, Any] = {"source": source, "systems": {}}
    details: dict[str, Any] = {"paper": "002", "source": source, "provenance": provenance, "datatable": str(datatable),
                               "grouping": config.grouping, "fmr": list(config.fmr), "systems": {}}
    for s in systems:
        avg = fold_averages[s]
        d_glob, d_grp = fpr_deviation_table(avg, "global"), fpr_deviation_table(avg, "group")
        tar = tar_at_far_table(avg)

        def fmr_ratio_global(f: float, avg: pd.DataFrame = avg) -> float:
            sub = avg[(avg["policy"] == "global") & (avg["fmr_target"] == f)]
            return float(metrics.max_min_ratio(sub["fmr"]))

        head["systems"][s] = {  # NaN (null) where a subgroup is unresolved, never a max of the others
            "max_abs_fmr_dev_pct": {"global": {f"{c:g}": float(d_glob[c].abs().max(skipna=False)) for c in d_glob},
                                    "group": {f"{c:g}": float(d_grp[c].abs().max(skipna=False)) for c in d_grp}},
            "fmr_ratio_global": {f"{f:g}": fmr_ratio_global(f) for f in config.fmr},
            "tar_avg": {p: {f"{c:g}": float(v) for c, v in tar.loc["Avg", p].items()} for p in ("global", "group")},
            "eer_max": max(curves.eer[s].values()),
            "eer_min": min(curves.eer[s].values()),
        }
        details["systems"][s] = {
            "eer": curves.eer[s],
            "d_prime": curves.d_prime[s],
            "fmr_dev_pct": {"global": _by_far(d_glob), "group": _by_far(d_grp)},
            "tar_at_far": {p: _by_far(tar[p]) for p in ("global", "group")},
            "legacy_tar": {p: _by_far(legacy[s].loc[p]) for p in ("global", "group")},
            "resolved": {p: {f"{c:g}": {g: bool(v) for g, v in col.items()} for c, col in
                             avg[avg["policy"] == p].pivot(index="group", columns="fmr_target",
                                                           values="resolved").items()}
                         for p in ("global", "group")},
            "group_report": reports[s].to_dict(),
        }
    if rank1:
        details["rank1_diagonal"] = {s: {str(g): float(t.loc[g, g]) for g in t.index} for s, t in rank1.items()}
    return head, details

