"""Paper 002 (Robinson et al., BFW): global vs subgroup-specific thresholds.

Works on a pair table in the BFW datatable schema (``fold, p1, p2, label, id1, id2,
att1, att2, a1, a2, g1, g2, e1, e2`` + one score column per system), real or from
``facebias.world``. Scores are similarities; a pair is a match iff ``score > t``.

Protocol (corrected, see ``../shared/notes/seeds_002_003.md`` A.2/A.7): thresholds are
fitted on 4 folds and evaluated on the held-out fold; results are averaged over the 5
folds. The released notebook evaluated on the folds it fitted on; we do not.
A pair's subgroup is its query's (``a1``, ``grouping="query"``) or, for intra-subgroup
analyses, only pairs with ``a1 == a2`` (``grouping="intra"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from facebias.metrics import check_rates, fmr_at, fnmr_at, threshold_at_fmr

__all__ = [
    "select_pairs",
    "cross_validated_rates",
    "fold_average",
    "tar_at_far_table",
    "fpr_deviation_table",
    "accuracy_optimal_threshold",
    "legacy_decision_thresholds",
    "legacy_tar_table",
]

GROUPINGS = ("query", "intra")


def select_pairs(df: pd.DataFrame, grouping: str = "query") -> pd.DataFrame:
    """The pairs that take part, with a ``group`` column (the query's subgroup ``a1``).

    ``grouping="query"`` keeps every pair; ``"intra"`` keeps only ``a1 == a2`` pairs.
    """
    if grouping not in GROUPINGS:
        raise ValueError(f"grouping: expected one of {GROUPINGS}, got {grouping!r}")
    a1 = df["a1"].astype(str)
    out = df if grouping == "query" else df[a1 == df["a2"].astype(str)]
    return out.assign(group=a1.loc[out.index])


def cross_validated_rates(
    df: pd.DataFrame, score: str, fmr: Sequence[float], grouping: str = "query"
) -> pd.DataFrame:
    """Held-out FMR and FNMR per fold, subgroup, target FMR and thresholding policy.

    For each fold k, thresholds come from the other folds' impostor scores: one pooled
    over all subgroups (``policy="global"``) and one per subgroup (``policy="group"``).
    Returns one row per (fold, fmr_target, group, policy) with the threshold, the held-out
    ``fmr`` and ``fnmr`` and the numbers of held-out pairs.
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
    for k in folds:
        train, test = fold != k, fold == k
        t_glob = np.atleast_1d(threshold_at_fmr(s[train & ~is_gen], rates))
        for g in groups:
            in_g = group == g
            imp_test, gen_test = s[test & in_g & ~is_gen], s[test & in_g & is_gen]
            if imp_test.size == 0 or gen_test.size == 0:
                raise ValueError(f"fold {k}: subgroup {g!r} has no held-out genuine or impostor pairs")
            t_grp = np.atleast_1d(threshold_at_fmr(s[train & in_g & ~is_gen], rates))
            for policy, t in (("global", t_glob), ("group", t_grp)):
                for f, ti, fm, fn in zip(rates, t, fmr_at(imp_test, t), fnmr_at(gen_test, t), strict=True):
                    rows.append((int(k), f, g, policy, float(ti), fm, fn, imp_test.size, gen_test.size))
    return pd.DataFrame(rows, columns=["fold", "fmr_target", "group", "policy", "threshold",
                                       "fmr", "fnmr", "n_impostor", "n_genuine"])


def fold_average(cv: pd.DataFrame) -> pd.DataFrame:
    """Mean over folds of ``cross_validated_rates``, with TAR and the FMR deviation.

    ``fmr_dev_pct = 100 (FMR - target) / target`` (paper 002, Fig. 6).
    """
    out = (cv.groupby(["policy", "fmr_target", "group"], sort=True)
           .agg(fmr=("fmr", "mean"), fnmr=("fnmr", "mean"), fmr_sd=("fmr", "std"),
                threshold=("threshold", "mean"), n_impostor=("n_impostor", "sum"),
                n_genuine=("n_genuine", "sum"))
           .reset_index())
    out["tar"] = 1 - out["fnmr"]
    out["fmr_dev_pct"] = 100 * (out["fmr"] - out["fmr_target"]) / out["fmr_target"]
    return out


def tar_at_far_table(avg: pd.DataFrame) -> pd.DataFrame:
    """TAR@FAR (standard definition) as a groups × (policy, FAR) table with an ``Avg`` row."""
    t = avg.pivot_table(index="group", columns=["policy", "fmr_target"], values="tar")
    t = t.sort_index(axis=1, level=[0, 1], ascending=[False, False])
    t.loc["Avg"] = t.mean()
    return t


def fpr_deviation_table(avg: pd.DataFrame, policy: str) -> pd.DataFrame:
    """Percent deviation of each subgroup's held-out FPR from the target (groups × FAR)."""
    sub = avg[avg["policy"] == policy]
    return sub.pivot(index="group", columns="fmr_target", values="fmr_dev_pct").sort_index(
        axis=1, ascending=False)


def accuracy_optimal_threshold(scores: np.ndarray, labels: np.ndarray, grid: np.ndarray) -> float:
    """Threshold on ``grid`` maximising ``mean((score > t) == label)``; ties go to the larger t.

    The BFW repository's ``find_best_threshold`` rule (without its early stop).
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    grid = np.sort(np.asarray(grid, dtype=np.float64))
    # accuracy(t) = (#genuine > t + #impostor <= t) / n, from two sorted arrays
    gen, imp = np.sort(s[y]), np.sort(s[~y])
    correct = (gen.size - np.searchsorted(gen, grid, side="right")) + np.searchsorted(
        imp, grid, side="right")
    best = np.flatnonzero(correct == correct.max())[-1]
    return float(grid[best])


def legacy_decision_thresholds(
    df: pd.DataFrame, score: str, grouping: str = "intra", n_grid: int = 1000
) -> tuple[float, dict[str, float]]:
    """Accuracy-optimal decision thresholds as the BFW repository fits them for Table 3.

    For each fold, the best threshold on the other folds (globally, and per subgroup); the
    thresholds are the means over folds. The grid spans the 0.1–99.9% score quantiles
    (the repository's ``linspace(0.18, 0.40)`` only suits SphereFace scores).
    """
    pairs = select_pairs(df, grouping)
    s, y, fold = pairs[score].to_numpy(), pairs["label"].to_numpy() == 1, pairs["fold"].to_numpy()
    grid = np.linspace(*np.quantile(s, [0.001, 0.999]), n_grid)
    groups = np.sort(pairs["group"].unique())
    group = pairs["group"].to_numpy()
    t_glob, t_grp = [], {g: [] for g in groups}
    for k in np.unique(fold):
        train = fold != k
        t_glob.append(accuracy_optimal_threshold(s[train], y[train], grid))
        for g in groups:
            m = train & (group == g)
            t_grp[g].append(accuracy_optimal_threshold(s[m], y[m], grid))
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
