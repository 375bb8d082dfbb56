"""Error rates by group and attribute (Sec. 4.1.1, Fig. 6; ``docs/specs/hcic.md`` B1.10, B1.12b).

FNMR-vs-FMR curves per attribute x group (Fig. 6's curves), the (FMR, FNMR) operating point
at one similarity threshold (Fig. 6's triangles), FNMR over a range of thresholds, and the
per-group (and per-cell) FNMR at a target FMR with a prototype-cluster bootstrap interval
(B1.12b [REC]). A pair matches iff score > t (:mod:`facebias.metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from facebias.metrics import (
    DetCurve,
    check_labels,
    check_scores,
    det_curve,
    fmr_at,
    fnmr_at,
    group_report,
)
from facebias.validate import require_columns

__all__ = [
    "error_curves",
    "fixed_threshold_points",
    "fnmr_by_threshold",
    "fnmr_at_fmr_by_group",
    "fnmr_at_fmr_by_cell",
]


def _finite(pairs: pd.DataFrame, score_col: str, missing: str) -> pd.DataFrame:
    if missing not in ("error", "drop"):
        raise ValueError(f"missing: expected 'error' or 'drop', got {missing!r}")
    if missing == "drop":
        return pairs[np.isfinite(pairs[score_col].to_numpy(dtype=np.float64))]
    return pairs


def error_curves(pairs: pd.DataFrame, score_col: str, label_col: str,
                 by: Sequence[str] = ("attribute", "group"), missing: str = "error",
                 ) -> dict[tuple, DetCurve]:
    """FNMR-vs-FMR curve (``facebias.metrics.det_curve``) per cell of ``by`` (Fig. 6).

    Cells without both genuine (label 1) and impostor (0) pairs are left out.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column (match iff score > t).
    label_col : str
        Label column, 1 = same identity.
    by : sequence of str, default ("attribute", "group")
        Cell columns.
    missing : {"error", "drop"}, default "error"
        ``"drop"`` leaves out NaN scores (failures to enrol); by default they raise.

    Returns
    -------
    dict of tuple to DetCurve
        Cell key (a tuple of ``by`` values) -> curve.

    Raises
    ------
    ValueError
        For a missing column, a bad ``missing``, a label that is not 0/1, or (with
        ``missing="error"``) a NaN score.
    """
    require_columns(pairs, [score_col, label_col, *by], "pairs")
    df = _finite(pairs, score_col, missing)
    out: dict[tuple, DetCurve] = {}
    for key, sub in df.groupby(list(by), sort=True, observed=True):
        lab = check_labels(sub[label_col], f"column {label_col!r}")
        s = check_scores(sub[score_col].to_numpy(), f"column {score_col!r}", sub.index)
        if lab.any() and (~lab).any():
            out[key if isinstance(key, tuple) else (key,)] = det_curve(s[lab], s[~lab])
    return out


def fixed_threshold_points(pairs: pd.DataFrame, score_col: str, label_col: str, t: float = 0.6,
                           by: Sequence[str] = ("attribute", "group"), missing: str = "error",
                           ) -> pd.DataFrame:
    """(FMR, FNMR) at one similarity threshold ``t`` per cell (Fig. 6's triangles).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column; a pair matches iff score > t.
    label_col : str
        Label column, 1 = same identity.
    t : float, default 0.6
        The threshold.
    by : sequence of str, default ("attribute", "group")
        Cell columns.
    missing : {"error", "drop"}, default "error"
        As in :func:`error_curves`.

    Returns
    -------
    pandas.DataFrame
        Columns ``*by, threshold, fmr, fnmr, n_genuine, n_impostor`` (rates are
        fractions; NaN where a cell has no pairs of that kind).

    Raises
    ------
    ValueError
        As :func:`error_curves`.

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.5, 0.7, 0.2], "label": [1, 1, 0, 0], "group": "WM"})
    >>> fixed_threshold_points(pairs, "score", "label", t=0.6, by=("group",))
      group  threshold  fmr  fnmr  n_genuine  n_impostor
    0    WM        0.6  0.5   0.5          2           2
    """
    require_columns(pairs, [score_col, label_col, *by], "pairs")
    df = _finite(pairs, score_col, missing)
    rows = []
    for key, sub in df.groupby(list(by), sort=True, observed=True):
        lab = check_labels(sub[label_col], f"column {label_col!r}")
        s = check_scores(sub[score_col].to_numpy(), f"column {score_col!r}", sub.index)
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), "threshold": float(t),
                     "fmr": float(fmr_at(s[~lab], t)) if (~lab).any() else np.nan,
                     "fnmr": float(fnmr_at(s[lab], t)) if lab.any() else np.nan,
                     "n_genuine": int(lab.sum()), "n_impostor": int((~lab).sum())})
    return pd.DataFrame(rows)


def fnmr_by_threshold(pairs: pd.DataFrame, score_col: str, label_col: str, thresholds: Sequence[float],
                      by: Sequence[str] = ("group",)) -> pd.DataFrame:
    """FNMR per cell of ``by`` at each similarity threshold; with ``match iff s > t`` it
    can only fall as the threshold falls.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column.
    label_col : str
        Label column, 1 = same identity (only these pairs are used).
    thresholds : sequence of float
        Similarity thresholds.
    by : sequence of str, default ("group",)
        Cell columns.

    Returns
    -------
    pandas.DataFrame
        FNMR (fraction), rows = cells, columns = thresholds.

    Raises
    ------
    ValueError
        For a missing column, a label that is not 0/1, or a non-finite genuine score.

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.5, 0.7, 0.2], "label": [1, 1, 0, 0], "group": "WM"})
    >>> fnmr_by_threshold(pairs, "score", "label", [0.4, 0.6])
    threshold  0.4  0.6
    WM         0.0  0.5
    """
    require_columns(pairs, [score_col, label_col, *by], "pairs")
    gen = pairs[check_labels(pairs[label_col], f"column {label_col!r}")]
    t = np.asarray(thresholds, dtype=np.float64)
    rows = {key: np.atleast_1d(fnmr_at(sub[score_col].to_numpy(), t))
            for key, sub in gen.groupby(list(by) if len(by) > 1 else by[0], sort=True, observed=True)}
    return pd.DataFrame(rows, index=pd.Index(t, name="threshold")).T


def fnmr_at_fmr_by_group(pairs: pd.DataFrame, score_col: str, label_col: str, fmr: float = 1e-2,
                         group: str = "group", cluster: str = "prototype_a", n_boot: int = 200,
                         ci: float = 0.95, seed: int = 0, missing: str = "error") -> pd.DataFrame:
    """Per-group FNMR at a target FMR with a prototype-cluster bootstrap CI.

    Wraps :func:`facebias.metrics.group_report` with ``ids=(cluster, cluster)``: each
    bootstrap replicate resamples the anchor prototypes (``cluster``) with replacement,
    a pair's weight is its prototype's multiplicity, and thresholds are re-estimated per
    replicate. ``fnmr_group`` reads each group's own curve at ``fmr`` (Fig. 6);
    ``fnmr_global`` uses one threshold from all impostors pooled.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col : str
        Similarity column (match iff score > t).
    label_col : str
        Label column, 1 = same identity.
    fmr : float, default 0.01
        Target FMR, a fraction in (0, 1).
    group : str, default "group"
        Group column.
    cluster : str, default "prototype_a"
        Bootstrap cluster column.
    n_boot : int, default 200
        Bootstrap replicates (0 = no interval).
    ci : float, default 0.95
        Interval coverage.
    seed : int, default 0
        Bootstrap seed.
    missing : {"error", "drop"}, default "error"
        As in :func:`error_curves`.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``n_genuine, n_impostor``, the group policy's
        ``threshold_group, fmr_group, fnmr_group`` (+ ``_lo``/``_hi``), the pooled
        policy's ``threshold_global, fmr_global, fnmr_global`` (+ ``_lo``/``_hi``),
        ``resolved`` (the group has at least 10 / ``fmr`` impostors,
        :func:`facebias.metrics.enough_impostors`; else its rates are NaN) and ``note``
        (why a value is NaN). Groups without genuine or without impostor pairs are left out
        and listed in ``result.attrs["skipped"]``.

    Raises
    ------
    ValueError
        If no group has both kinds of pairs, or as
        :func:`facebias.metrics.group_report`.
    """
    require_columns(pairs, [score_col, label_col, group, cluster], "pairs")
    df = _finite(pairs, score_col, missing)
    lab = pd.Series(check_labels(df[label_col], f"column {label_col!r}"), index=df.index)
    both = lab.groupby(df[group], observed=True).agg(lambda x: bool(x.any() and (~x).any()))
    skipped = sorted(both.index[~both.to_numpy(dtype=bool)])
    if skipped:
        df = df[~df[group].isin(skipped)]
    if df.empty:
        raise ValueError(f"pairs: no group has both genuine and impostor pairs in {label_col!r}")
    rep = group_report(df, score_col, label_col, group, fmr=(fmr,), ids=(cluster, cluster),
                       n_boot=n_boot, ci=ci, seed=seed)
    keep = ["group", "n_genuine", "n_impostor", "threshold_group", "fmr_group", "fnmr_group",
            "fnmr_group_lo", "fnmr_group_hi", "threshold_global", "fmr_global", "fnmr_global",
            "fnmr_global_lo", "fnmr_global_hi", "resolved", "note",
            "fnmr_group_lo_mcse", "fnmr_group_hi_mcse", "fnmr_global_lo_mcse", "fnmr_global_hi_mcse"]
    out = rep.table[[c for c in keep if c in rep.table.columns]].reset_index(drop=True)
    out.attrs = {"skipped": skipped}
    return out


def fnmr_at_fmr_by_cell(pairs: pd.DataFrame, score_col: str, label_col: str, fmr: float = 1e-2,
                        by: Sequence[str] = ("attribute", "group"), cluster: str = "prototype_a",
                        n_boot: int = 200, ci: float = 0.95, seed: int = 0, missing: str = "error",
                        ) -> pd.DataFrame:
    """FNMR at a target FMR in every cell of ``by`` (default attribute x group: Fig. 6 read
    at one FMR), each cell on its own threshold, with the prototype-cluster bootstrap CI of
    :func:`fnmr_at_fmr_by_group` (one joint bootstrap over all cells).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs.
    score_col, label_col, fmr, cluster, n_boot, ci, seed, missing
        As in :func:`fnmr_at_fmr_by_group`.
    by : sequence of str, default ("attribute", "group")
        Cell columns (no missing values).

    Returns
    -------
    pandas.DataFrame
        Columns ``*by`` then those of :func:`fnmr_at_fmr_by_group` less ``group``; cells
        without genuine or without impostor pairs are left out and listed (as tuples) in
        ``result.attrs["skipped"]``.

    Raises
    ------
    ValueError
        For a missing column or cell value, or as :func:`fnmr_at_fmr_by_group`.
    """
    require_columns(pairs, [score_col, label_col, cluster, *by], "pairs")
    by = list(by)
    if pairs[by].isna().any().any():
        raise ValueError(f"pairs: a missing value in the cell columns {by}")
    grouped = pairs.groupby(by, sort=True, observed=True)
    keys = grouped.size().index.to_frame(index=False)  # row i = cell code i of ngroup()
    df = pairs[[score_col, label_col, cluster]].assign(_cell=grouped.ngroup().to_numpy())
    tab = fnmr_at_fmr_by_group(df, score_col, label_col, fmr=fmr, group="_cell", cluster=cluster,
                               n_boot=n_boot, ci=ci, seed=seed, missing=missing)
    cells = keys.iloc[tab["group"].to_numpy(dtype=np.int64)].reset_index(drop=True)
    out = pd.concat([cells, tab.drop(columns="group").reset_index(drop=True)], axis=1)
    out.attrs = {"skipped": [tuple(keys.iloc[int(c)]) for c in tab.attrs["skipped"]]}
    return out
