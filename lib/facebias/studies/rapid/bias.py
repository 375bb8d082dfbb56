"""Paper 001, bias detection (Fig. 5; ``docs/specs/rapid.md`` M8): per-group error rates
and a system-specific bias test with a query bootstrap (:func:`group_bias`), whether the
estimate ranks and flags the groups as the truth does (:func:`bias_recovery`), and the
``bias`` entry of the metrics (:func:`bias_summary`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import eer, fnmr_at, threshold_at_fmr
from facebias.stats import percentile_mc_error
from facebias.studies.rapid.truth import _shared_codes
from facebias.validate import require_columns


def _group_metric(gen: np.ndarray, imp: np.ndarray, metric: str, fmr: float) -> float:
    if not (gen.size and imp.size):
        return np.nan
    if metric == "eer":
        return float(eer(gen, imp))
    if imp.size < 10.0 / fmr:  # as fnmr_table: at least 10 / fmr impostors (spec 1.6)
        return np.nan
    return float(fnmr_at(gen, threshold_at_fmr(imp, fmr)))


def group_bias(pairs: pd.DataFrame, fmr: float = 0.01, n_boot: int = 200, seed: int = 0,
               alpha: float = 0.05) -> pd.DataFrame:
    """Per-group error rates and a system-specific bias test (Fig. 5, spec M8).

    For each system s, group g and metric m (``"eer"``, and ``"fnmr"`` = FNMR at ``fmr``):
    the rate m_sg, its excess over the system's pooled rate, e_sg = m_sg - m_s,all, and the
    **interaction** b_sg = e_sg - median over the other systems s' of e_s'g. Label errors of
    the rapid test are shared by all systems (one majority-vote label set): a wrongly
    labelled "genuine" pair scores like an impostor under every system, so it raises every
    system's FNMR (and EER) in that group by about the same amount. The interaction cancels
    that shared part, and is large only when one system is worse on one group than the
    other systems are. Intervals come from a **query bootstrap**: queries are resampled with
    replacement within each group (the same draw for every system), a pair counted
    ``w(query) x w(query_b)`` times (genuine pairs: ``w(query)``), so the dependence of
    pairs sharing a query is kept. ``flagged``: b_sg > z * SD_boot(b_sg) with z the
    one-sided normal quantile at ``alpha / (n_systems x n_groups)`` (Bonferroni over the
    cells of one metric), so a world without any system-specific bias flags a cell of a
    metric with probability about ``alpha`` or less.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` output (columns ``system, group, query, query_b,
        score, genuine``), from estimated or from true labels.
    fmr : float, default 0.01
        FMR at which FNMR is read.
    n_boot : int, default 200
        Bootstrap resamples (>= 2).
    seed : int, default 0
        Seed of the resampling.
    alpha : float, default 0.05
        Family-wise level per metric, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        One row per ``system, group, metric`` (groups only, not ``"all"``): ``value``,
        ``lo, hi`` (bootstrap percentile interval of the rate at level ``1 - alpha``),
        ``excess``, ``interaction``, ``interaction_sd``, ``z``, ``flagged`` (bool), and
        ``rank`` (1 = the system's worst group on that metric), and ``lo_mcse, hi_mcse``
        (Monte Carlo errors of the bounds, :func:`facebias.stats.percentile_mc_error`; the
        bounds interpolate between replicates). Rates are fractions; a
        rate is NaN (and never flagged) where a cell lacks genuine pairs, or has fewer than
        ``10 / fmr`` impostors for FNMR (as :func:`fnmr_table`).

    Raises
    ------
    ValueError
        For a missing column, fewer than 2 systems, ``n_boot < 2`` or ``alpha`` or
        ``fmr`` outside (0, 1).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> rows = []
    >>> for s in ("s1", "s2", "s3", "s4"):
    ...     for g in ("A", "B"):
    ...         for q in range(6):
    ...             shift = 1.5 if (s, g) == ("s1", "A") else 3.0  # s1 is worse on A
    ...             rows += [(s, g, f"{g}{q}", f"{g}{q}", x, True) for x in rng.normal(shift, 1, 40)]
    ...             rows += [(s, g, f"{g}{q}", f"{g}{(q + 1) % 6}", x, False) for x in rng.normal(0, 1, 40)]
    >>> pairs = pd.DataFrame(rows, columns=["system", "group", "query", "query_b", "score", "genuine"])
    >>> t = group_bias(pairs, fmr=0.05, n_boot=50)
    >>> t[t["flagged"]][["system", "group", "metric"]].values.tolist()
    [['s1', 'A', 'eer'], ['s1', 'A', 'fnmr']]
    """
    require_columns(pairs, ["system", "group", "query", "query_b", "score", "genuine"], "pairs")
    if not 0 < fmr < 1 or not 0 < alpha < 1:
        raise ValueError(f"fmr and alpha must be in (0, 1), got {fmr}, {alpha}")
    if int(n_boot) < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    from scipy.stats import norm

    systems = sorted(pd.unique(pairs["system"]))
    groups = sorted(pd.unique(pairs["group"]))
    if len(systems) < 2:
        raise ValueError(f"group_bias needs at least 2 systems, got {len(systems)}")
    (qa, qb), qv = _shared_codes(pairs["query"], pairs["query_b"])
    qgroup = np.full(len(qv), -1, np.int64)
    gcode = pd.Categorical(pairs["group"], categories=groups).codes
    qgroup[qa] = gcode
    qgroup[qb] = gcode  # impostor pairs are within one group
    sc = pairs["score"].to_numpy(float)
    gen = pairs["genuine"].to_numpy(bool)
    sys_codes = pd.Categorical(pairs["system"], categories=systems).codes
    cells = {}
    for si in range(len(systems)):
        for gi in range(len(groups)):
            m = (sys_codes == si) & (gcode == gi)
            cells[si, gi] = (sc[m & gen], qa[m & gen], sc[m & ~gen], qa[m & ~gen], qb[m & ~gen])
    metrics = ("eer", "fnmr")

    def table(w: np.ndarray | None) -> np.ndarray:
        """rates[metric, system, group + 1] (the last column pooled) under query weights w."""
        out = np.full((len(metrics), len(systems), len(groups) + 1), np.nan)
        for si in range(len(systems)):
            pooled_g, pooled_i = [], []
            for gi in range(len(groups)):
                g_s, g_q, i_s, i_a, i_b = cells[si, gi]
                if w is not None:
                    g_s, i_s = np.repeat(g_s, w[g_q]), np.repeat(i_s, w[i_a] * w[i_b])
                pooled_g.append(g_s)
                pooled_i.append(i_s)
                for k, name in enumerate(metrics):
                    out[k, si, gi] = _group_metric(g_s, i_s, name, fmr)
            gp, ip = np.concatenate(pooled_g), np.concatenate(pooled_i)
            for k, name in enumerate(metrics):
                out[k, si, -1] = _group_metric(gp, ip, name, fmr)
        return out

    def interaction(rates: np.ndarray) -> np.ndarray:
        exc = rates[:, :, :-1] - np.median(rates[:, :, :-1], axis=2, keepdims=True)
        b = np.empty_like(exc)
        for si in range(len(systems)):
            others = np.delete(exc, si, axis=1)
            b[:, si] = exc[:, si] - np.median(others, axis=1)
        return exc, b

    point = table(None)
    exc, b = interaction(point)
    rng = np.random.default_rng(seed)
    boot_rates, boot_b = [], []
    members = [np.flatnonzero(qgroup == gi) for gi in range(len(groups))]
    for _ in range(int(n_boot)):
        w = np.zeros(len(qv), np.int64)
        for mem in members:
            if mem.size:
                np.add.at(w, rng.choice(mem, mem.size), 1)
        r = table(w)
        boot_rates.append(r[:, :, :-1])
        boot_b.append(interaction(r)[1])
    boot_rates, boot_b = np.array(boot_rates), np.array(boot_b)
    lo, hi = np.nanquantile(boot_rates, [alpha / 2, 1 - alpha / 2], axis=0)
    lo_se, hi_se = percentile_mc_error(boot_rates, 1 - alpha)
    sd = np.nanstd(boot_b, axis=0, ddof=1)
    z = float(norm.ppf(1 - alpha / (len(systems) * len(groups))))
    rows = []
    for k, name in enumerate(metrics):
        for si, s in enumerate(systems):
            rank = pd.Series(-point[k, si, :-1]).rank(method="min").to_numpy()
            for gi, g in enumerate(groups):
                rows.append((s, g, name, point[k, si, gi], lo[k, si, gi], hi[k, si, gi], exc[k, si, gi],
                             b[k, si, gi], sd[k, si, gi], z, bool(b[k, si, gi] > z * sd[k, si, gi]),
                             rank[gi], lo_se[k, si, gi], hi_se[k, si, gi]))
    out = pd.DataFrame(rows, columns=["system", "group", "metric", "value", "lo", "hi", "excess",
                                      "interaction", "interaction_sd", "z", "flagged", "rank", "lo_mcse", "hi_mcse"])
    out["rank"] = out["rank"].astype("Int64")  # <NA> where the rate is undefined
    return out


def bias_recovery(est: pd.DataFrame, true: pd.DataFrame) -> pd.DataFrame:
    """Does the estimate rank and flag the groups as the truth does? (Fig. 5, spec M8.)

    Parameters
    ----------
    est, true : pandas.DataFrame
        :func:`group_bias` of the estimated and of the true pairs (same systems, groups).

    Returns
    -------
    pandas.DataFrame
        One row per ``system, metric``: ``worst_est``, ``worst_true`` (the group with the
        largest rate; None when every rate is NaN), ``kendall_tau`` (groups ordered by the estimated vs the true rate;
        NaN when a side is constant), ``order_agree`` (the share of group pairs whose true
        rates differ by 2x or more that the estimate orders the same way, spec M8; NaN when
        there is no such pair), ``flagged_est``, ``flagged_true`` (the flagged groups,
        comma-separated, "" for none) and ``flags_agree`` (the same set).

    Raises
    ------
    ValueError
        For a missing column or tables that do not cover the same cells.
    """
    from scipy.stats import kendalltau

    cols = ["system", "group", "metric"]
    for name, t in (("est", est), ("true", true)):
        require_columns(t, [*cols, "value", "flagged"], name)
    m = est.merge(true, on=cols, how="outer", suffixes=("_est", "_true"), indicator=True)
    if (m["_merge"] != "both").any():
        raise ValueError("bias_recovery: est and true must cover the same system x group x metric cells")
    rows = []
    for (s, metric), d in m.groupby(["system", "metric"], sort=True):
        d = d.sort_values("group")
        tau = np.nan
        if d["value_est"].nunique() > 1 and d["value_true"].nunique() > 1:
            tau = float(kendalltau(d["value_est"], d["value_true"]).statistic)
        ve, vt = d["value_est"].to_numpy(float), d["value_true"].to_numpy(float)
        i, j = np.triu_indices(len(d), 1)
        big = np.maximum(vt[i], vt[j]) >= 2 * np.minimum(vt[i], vt[j])
        order = np.mean(np.sign(ve[i] - ve[j])[big] == np.sign(vt[i] - vt[j])[big]) if big.any() else np.nan
        fe = ",".join(d.loc[d["flagged_est"].astype(bool), "group"].astype(str))
        ft = ",".join(d.loc[d["flagged_true"].astype(bool), "group"].astype(str))
        worst = [d.loc[d[c].idxmax(), "group"] if d[c].notna().any() else None
                 for c in ("value_est", "value_true")]
        rows.append((s, metric, *worst, tau, float(order), fe, ft, fe == ft))
    return pd.DataFrame(rows, columns=["system", "metric", "worst_est", "worst_true", "kendall_tau",
                                       "order_agree", "flagged_est", "flagged_true", "flags_agree"])


def bias_summary(est: pd.DataFrame, true: pd.DataFrame, fmr: float,
                 planted: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """The ``bias`` entry of the rapid metrics: the planted bias, the flags of
    :func:`group_bias` from estimated and from true labels, :func:`bias_recovery`, and
    each cell's rate (estimate with its bootstrap interval, truth).

    Parameters
    ----------
    est, true : pandas.DataFrame
        :func:`group_bias` of the estimated and of the true pairs.
    fmr : float
        The FMR at which ``"fnmr"`` was read.
    planted : mapping
        The world's ``bias`` (system -> group -> noise factor).

    Returns
    -------
    dict
        ``fmr, planted, flagged_est, flagged_true`` (``"system/group/metric"`` strings),
        ``recovery`` (metric -> system -> ``worst_est, worst_true, order_agree,
        flags_agree``; NaN as None) and ``rates`` (metric -> system -> group ->
        ``[est, est_lo, est_hi, true, true_lo, true_hi]``, fractions).

    Raises
    ------
    ValueError
        As :func:`bias_recovery`.
    """
    rec = bias_recovery(est, true)
    m = est.merge(true, on=["system", "group", "metric"], suffixes=("_est", "_true"))

    def flags(t: pd.DataFrame) -> list[str]:
        return [f"{s}/{g}/{k}" for s, g, k in t.loc[t["flagged"], ["system", "group", "metric"]].values]

    def num(v: Any) -> float | None:
        return None if pd.isna(v) else float(v)

    return {
        "fmr": float(fmr),
        "planted": {str(s): {str(g): float(f) for g, f in per.items()} for s, per in planted.items()},
        "flagged_est": flags(est), "flagged_true": flags(true),
        "recovery": {k: {str(r.system): {"worst_est": None if r.worst_est is None else str(r.worst_est),
                                         "worst_true": None if r.worst_true is None else str(r.worst_true),
                                         "order_agree": num(r.order_agree), "flags_agree": bool(r.flags_agree)}
                         for r in d.itertuples()} for k, d in rec.groupby("metric", sort=True)},
        "rates": {k: {str(s): {str(r.group): [num(r.value_est), num(r.lo_est), num(r.hi_est),
                                              num(r.value_true), num(r.lo_true), num(r.hi_true)]
                               for r in ds.itertuples()} for s, ds in d.groupby("system", sort=True)}
                  for k, d in m.groupby("metric", sort=True)},
    }
