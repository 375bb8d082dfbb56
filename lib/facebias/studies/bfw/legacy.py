"""Paper 002, Table 3 as the released code computes it (``docs/specs/bfw.md`` A.2, "Table 3
'TAR' as the repo computes it", and A.7 #1): the accuracy-optimal decision thresholds of
the BFW repository's ``find_best_threshold`` and its "TAR" that uses the FAR value as a
score threshold (NOT a TAR@FAR; the standard one is
:func:`facebias.studies.bfw.verification.tar_at_far_table`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from facebias.studies.bfw.pairs import select_pairs

__all__ = ["accuracy_optimal_threshold", "legacy_decision_thresholds", "legacy_tar_table"]


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
