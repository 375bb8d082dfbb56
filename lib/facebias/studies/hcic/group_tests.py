"""Group differences, tested (``docs/specs/hcic.md`` B1.12b [REC], B1.13).

The paper's "significantly worse" is a visual judgement of the Fig. 6 curves; no test is
named. Here every pair of groups is compared on FNMR at a target FMR and on FNMR and FMR at a
fixed threshold with a prototype-cluster bootstrap of the difference, Holm-adjusted over the
pairs of groups, with the (optimistic) two-proportion z test beside it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import (
    check_labels,
    check_rates,
    check_scores,
    enough_impostors,
    fnmr_at_fmr,
    threshold_at_fmr,
)
from facebias.stats import (
    bootstrap_weights,
    percentile_interval,
    percentile_mc_error,
    wilson_interval,
)
from facebias.studies.hcic.fnmr import _finite
from facebias.validate import require_columns

__all__ = [
    "DIFFERENCE_STATISTICS",
    "two_proportion_test",
    "holm_adjust",
    "GroupTests",
    "group_rate_tests",
]


#: The statistics :func:`group_rate_tests` compares between groups.
DIFFERENCE_STATISTICS = ("fnmr_at_fmr", "fnmr_at_threshold", "fmr_at_threshold")


def two_proportion_test(x1: Any, n1: Any, x2: Any, n2: Any, ci: float = 0.95) -> pd.DataFrame:
    """Two-sided two-proportion z test of ``x1 / n1 == x2 / n2`` (pooled variance) and the
    Wald interval of the difference ``x1 / n1 - x2 / n2`` (unpooled), vectorised.

    It treats every trial as independent. Pairs of one prototype are not (they share the
    prototype), so on pair tables this p-value is optimistic; :func:`group_rate_tests`
    decides on the prototype-cluster bootstrap and reports this beside it.

    Parameters
    ----------
    x1, n1, x2, n2 : array_like
        Errors and trials of the two groups (``0 <= x <= n``, ``n > 0``); broadcast together.
    ci : float, default 0.95
        Coverage of the interval, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        ``diff`` (a fraction), ``lo``, ``hi``, ``z`` and ``p`` (two-sided); ``z`` and ``p``
        are NaN where the pooled rate is 0 or 1 (no errors, or only errors, in both groups:
        the test is undefined).

    Raises
    ------
    ValueError
        If an ``n`` is not positive, an ``x`` lies outside ``0..n``, or ``ci`` is outside (0, 1).

    Examples
    --------
    >>> two_proportion_test(30, 300, 12, 300).round(4)
       diff      lo      hi       z      p
    0  0.06  0.0195  0.1005  2.8801  0.004
    """
    from scipy.stats import norm

    a1, m1, a2, m2 = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in (x1, n1, x2, n2)))
    if (m1 <= 0).any() or (m2 <= 0).any() or (a1 < 0).any() or (a2 < 0).any() or (a1 > m1).any() or (a2 > m2).any():
        raise ValueError("two_proportion_test: need n > 0 and 0 <= x <= n in both groups")
    if not 0 < ci < 1:
        raise ValueError(f"ci: must lie in (0, 1), got {ci!r}")
    p1, p2 = a1 / m1, a2 / m2
    pooled = (a1 + a2) / (m1 + m2)
    se0 = np.sqrt(pooled * (1 - pooled) * (1 / m1 + 1 / m2))
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se0 > 0, (p1 - p2) / se0, np.nan)
    p = 2 * norm.sf(np.abs(z))
    half = norm.ppf(1 - (1 - ci) / 2) * np.sqrt(p1 * (1 - p1) / m1 + p2 * (1 - p2) / m2)
    return pd.DataFrame({"diff": p1 - p2, "lo": p1 - p2 - half, "hi": p1 - p2 + half, "z": z, "p": p})


def holm_adjust(p: Any) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), NaN left out of the family
    and kept NaN.

    Parameters
    ----------
    p : array_like
        Raw p-values in [0, 1] (NaN = no test).

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, each >= its raw value, at most 1.

    Raises
    ------
    ValueError
        For a p-value outside [0, 1].

    Examples
    --------
    >>> holm_adjust([0.01, 0.04, np.nan, 0.03])
    array([0.03, 0.06,  nan, 0.06])
    """
    a = np.asarray(p, dtype=np.float64).ravel()
    ok = ~np.isnan(a)
    if ((a[ok] < 0) | (a[ok] > 1)).any():
        raise ValueError("holm_adjust: p-values must lie in [0, 1]")
    out = np.full(a.shape, np.nan)
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(a[idx], kind="stable")]
    m = order.size
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * a[order]))
    return out


def _bootstrap_p(reps: np.ndarray) -> float:
    """Two-sided percentile-bootstrap p-value of ``difference == 0`` from its replicates
    (NaN ones dropped): ``2 min(#(d <= 0) + 1, #(d >= 0) + 1) / (n + 1)``, at most 1."""
    d = reps[~np.isnan(reps)]
    if d.size == 0:
        return np.nan
    return float(min(1.0, 2 * (min((d <= 0).sum(), (d >= 0).sum()) + 1) / (d.size + 1)))


@dataclass(frozen=True)
class GroupTests:
    """Per-group error rates with their counts, and every pair of groups tested
    (:func:`group_rate_tests`).

    Attributes
    ----------
    rates : pandas.DataFrame
        One row per group (see :func:`group_rate_tests`).
    differences : pandas.DataFrame
        One row per (statistic, group pair).
    meta : dict
        Settings and the method, in words.
    """

    rates: pd.DataFrame
    differences: pd.DataFrame
    meta: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{**meta, "rates": {group: row}, "tests": {statistic: {"a-b": row}}}``
        (NaN stays NaN here; the metrics writer turns it into null)."""
        rates = {str(r.pop("group")): r for r in self.rates.to_dict(orient="records")}
        tests: dict[str, dict[str, Any]] = {s: {} for s in DIFFERENCE_STATISTICS}
        for r in self.differences.to_dict(orient="records"):
            tests[r.pop("statistic")][f"{r['group_a']}-{r['group_b']}"] = r
        return {**self.meta, "rates": rates, "tests": tests}


def group_rate_tests(pairs: pd.DataFrame, score_col: str, label_col: str, fmr: float = 1e-2,
                     threshold: float = 0.6, group: str = "group", cluster: str = "prototype_a",
                     order: Sequence[str] | None = None, n_boot: int = 2000, ci: float = 0.95,
                     alpha: float = 0.05, seed: int = 0, missing: str = "error",
                     min_impostor_factor: float = 10.0) -> GroupTests:
    """Per-group FNMR and FMR with their counts and resolution, and the difference of every
    pair of groups **tested**, not read off overlapping intervals.

    Three statistics per group (matches iff score > t, :mod:`facebias.metrics`):

    * ``fnmr_at_fmr``: FNMR at the group's own threshold for FMR ``fmr`` (Fig. 6 read at
      one FMR, as :func:`fnmr_at_fmr_by_group`); **resolved** iff the group has at least
      ``min_impostor_factor / fmr`` impostors (:func:`facebias.metrics.enough_impostors`, the
      rule of :func:`facebias.metrics.group_report`), else NaN.
    * ``fnmr_at_threshold`` and ``fmr_at_threshold``: FNMR and FMR at the fixed similarity
      ``threshold`` (e.g. the model's published one), with the error counts and Wilson
      intervals (:func:`facebias.stats.wilson_interval`). The FMR is resolved iff the group
      has enough impostors for the target ``fmr`` (the same rule: with fewer, an FMR of 0
      cannot be told from one above the target); the FNMR needs only a genuine pair.

    Every pair of groups (``a`` before ``b`` in ``order``) is tested on each statistic with
    a **prototype-cluster bootstrap** of the difference ``a - b`` (``n_boot`` replicates of
    :func:`facebias.stats.bootstrap_weights` with ``ids=(cluster, cluster)``, the
    bootstrap of :func:`fnmr_at_fmr_by_group`: each replicate resamples prototypes and
    re-estimates each group's threshold): the percentile interval of the difference and the
    two-sided bootstrap p-value ``2 min(#(d* <= 0) + 1, #(d* >= 0) + 1) / (n_boot + 1)``.
    p-values are Holm-adjusted (:func:`holm_adjust`) over the resolved pairs of each
    statistic, and a pair ``differs`` iff it is resolved and its adjusted p < ``alpha``.
    The fixed-threshold rows also carry the pooled two-proportion z test
    (:func:`two_proportion_test`, ``p_z``), which treats pairs as independent (they are
    clustered by prototype): shown for comparison, not used to decide.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Scored, labelled pairs with ``group`` and ``cluster``.
    score_col : str
        Similarity column.
    label_col : str
        Label column, 1 = same identity.
    fmr : float, default 0.01
        Target FMR, a fraction in (0, 1).
    threshold : float, default 0.6
        Fixed similarity threshold.
    group : str, default "group"
        Group column.
    cluster : str, default "prototype_a"
        Bootstrap cluster column (the anchor prototype).
    order : sequence of str, optional
        Group order (differences are earlier minus later); default sorted. Groups of
        ``order`` absent from the pairs are left out.
    n_boot : int, default 2000
        Bootstrap replicates (>= 1; the smallest p-value is ``2 / (n_boot + 1)``, so a
        warning says when even it cannot pass Holm's adjustment at ``alpha``).
    ci : float, default 0.95
        Interval coverage, in (0, 1).
    alpha : float, default 0.05
        Family-wise level of the Holm-adjusted tests, in (0, 1).
    seed : int, default 0
        Bootstrap seed.
    missing : {"error", "drop"}, default "error"
        As in :func:`error_curves`.
    min_impostor_factor : float, default 10.0
        As in :func:`facebias.metrics.group_report`.

    Returns
    -------
    GroupTests
        ``rates``: one row per group with ``group, n_genuine, n_impostor``, then
        ``fnmr_at_fmr`` (+ ``_lo``/``_hi``, bootstrap), ``threshold_group``,
        ``resolved_fnmr_at_fmr``; ``n_false_non_match``, ``fnmr_at_threshold`` (+ Wilson
        ``_lo``/``_hi``), ``resolved_fnmr_at_threshold``; ``n_false_match``,
        ``fmr_at_threshold`` (+ Wilson ``_lo``/``_hi``), ``resolved_fmr_at_threshold``.
        ``differences``: one row per statistic and pair with ``statistic, group_a, group_b,
        diff, lo, hi, p, p_holm, resolved, differs`` and ``p_z`` (NaN for ``fnmr_at_fmr``).
        Rates are fractions.

    Raises
    ------
    ValueError
        For a missing column, labels that are not 0/1, a NaN score with ``missing="error"``,
        fewer than two groups with both kinds of pairs, or a setting out of range.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> n = 40
    >>> df = pd.DataFrame({"score": np.r_[rng.normal(2, 1, 2 * n), rng.normal(0, 1, 2 * n)],
    ...                    "label": [1] * (2 * n) + [0] * (2 * n), "group": list("ab" * n) * 2,
    ...                    "prototype_a": [f"p{i % 10}" for i in range(4 * n)]})
    >>> t = group_rate_tests(df, "score", "label", fmr=0.25, threshold=1.0, n_boot=50)
    >>> t.differences[["statistic", "group_a", "group_b"]].values.tolist()[0]
    ['fnmr_at_fmr', 'a', 'b']
    """
    require_columns(pairs, [score_col, label_col, group, cluster], "pairs")
    target, scalar = check_rates(fmr, "fmr")
    if not scalar:
        raise ValueError(f"fmr: expected one target FMR, got {fmr!r}")
    f = float(target[0])
    if int(n_boot) < 1:
        raise ValueError(f"n_boot: must be >= 1 (the tests are bootstrap tests), got {n_boot!r}")
    for name, v in (("ci", ci), ("alpha", alpha)):
        if not 0 < v < 1:
            raise ValueError(f"{name}: must lie in (0, 1), got {v!r}")
    df = _finite(pairs, score_col, missing)
    lab = check_labels(df[label_col], f"column {label_col!r}")
    s = check_scores(df[score_col].to_numpy(), f"column {score_col!r}", df.index)
    g = df[group].astype(str).to_numpy()
    present = [x for x in (sorted(set(g)) if order is None else [str(o) for o in order]) if x in set(g)]
    groups = [x for x in present if (lab & (g == x)).any() and (~lab & (g == x)).any()]
    if len(groups) < 2:
        raise ValueError(f"pairs: fewer than two groups with both genuine and impostor pairs ({groups})")
    gen = {x: np.flatnonzero(lab & (g == x)) for x in groups}
    imp = {x: np.flatnonzero(~lab & (g == x)) for x in groups}
    n_pairs = len(groups) * (len(groups) - 1) // 2
    if n_pairs * 2 / (int(n_boot) + 1) >= alpha:  # Holm's smallest adjusted p with the smallest bootstrap p
        warnings.warn(f"group_rate_tests: {n_boot} replicates cannot reject at {alpha:g} over {n_pairs} pairs "
                      f"(smallest Holm-adjusted p is {n_pairs} x 2 / (n_boot + 1)); raise n_boot above "
                      f"{int(np.ceil(2 * n_pairs / alpha))}", stacklevel=2)

    def stats(w: np.ndarray | None) -> np.ndarray:
        """(3, n_groups): FNMR at the FMR target, FNMR and FMR at ``threshold`` under weights ``w``."""
        out = np.full((3, len(groups)), np.nan)
        for j, x in enumerate(groups):
            sg, si = s[gen[x]], s[imp[x]]
            if w is not None:
                wg, wi = w[gen[x]], w[imp[x]]
                if wg.sum() == 0 or wi.sum() == 0:
                    continue
                out[1, j] = wg @ (sg <= threshold) / wg.sum()
                out[2, j] = wi @ (si > threshold) / wi.sum()
                sg, si = np.repeat(sg, wg.astype(np.int64)), np.repeat(si, wi.astype(np.int64))
            else:
                out[1, j], out[2, j] = np.mean(sg <= threshold), np.mean(si > threshold)
            out[0, j] = fnmr_at_fmr(sg, si, f)
        return out

    n_gen = np.array([gen[x].size for x in groups])
    n_imp = np.array([imp[x].size for x in groups])
    ok_imp = np.asarray(enough_impostors(n_imp, f, min_impostor_factor))
    resolved = np.stack([ok_imp, n_gen > 0, ok_imp])  # (3, n_groups), per statistic
    point = np.where(resolved, stats(None), np.nan)
    ids = df[cluster].to_numpy()
    reps = np.stack([np.where(resolved, stats(w), np.nan)
                     for w in bootstrap_weights(len(df), int(n_boot), seed, id1=ids, id2=ids)])
    lo, hi = percentile_interval(reps[:, 0, :], ci)
    lo_se, hi_se = percentile_mc_error(reps[:, 0, :], ci)
    thresholds = [float(threshold_at_fmr(s[imp[x]], f)) for x in groups]
    x_fnm = np.array([(s[gen[x]] <= threshold).sum() for x in groups])
    x_fm = np.array([(s[imp[x]] > threshold).sum() for x in groups])
    w_fnm, w_fm = wilson_interval(x_fnm, n_gen, ci), wilson_interval(x_fm, n_imp, ci)
    rates = pd.DataFrame({
        "group": groups, "n_genuine": n_gen, "n_impostor": n_imp,
        "fnmr_at_fmr": point[0], "fnmr_at_fmr_lo": lo, "fnmr_at_fmr_hi": hi,
        "fnmr_at_fmr_lo_mcse": lo_se, "fnmr_at_fmr_hi_mcse": hi_se,
        "threshold_group": np.where(ok_imp, thresholds, np.nan), "resolved_fnmr_at_fmr": ok_imp,
        "n_false_non_match": x_fnm, "fnmr_at_threshold": point[1], "fnmr_at_threshold_lo": w_fnm[0],
        "fnmr_at_threshold_hi": w_fnm[1], "resolved_fnmr_at_threshold": n_gen > 0,
        "n_false_match": x_fm, "fmr_at_threshold": point[2],
        "fmr_at_threshold_lo": np.where(ok_imp, w_fm[0], np.nan), "fmr_at_threshold_hi": np.where(ok_imp, w_fm[1], np.nan),
        "resolved_fmr_at_threshold": ok_imp})
    rows = []
    for k, stat in enumerate(DIFFERENCE_STATISTICS):
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                both = bool(resolved[k, i] and resolved[k, j])
                d = reps[:, k, i] - reps[:, k, j]
                dlo, dhi = percentile_interval(d[:, None], ci)
                dlo_se, dhi_se = percentile_mc_error(d[:, None], ci)
                p_z = np.nan
                if k and both:
                    x, n = (x_fnm, n_gen) if k == 1 else (x_fm, n_imp)
                    p_z = float(two_proportion_test(x[i], n[i], x[j], n[j])["p"].iloc[0])
                p = _bootstrap_p(d) if both else np.nan
                rows.append({"statistic": stat, "group_a": groups[i], "group_b": groups[j],
                             "diff": float(point[k, i] - point[k, j]) if both else np.nan,
                             "lo": float(dlo[0]) if both else np.nan, "hi": float(dhi[0]) if both else np.nan,
                             "lo_mcse": float(dlo_se[0]) if both else np.nan,
                             "hi_mcse": float(dhi_se[0]) if both else np.nan,
                             "p": p, "p_z": p_z, "resolved": both and not np.isnan(p)})
    diffs = pd.DataFrame(rows)
    diffs["p_holm"] = np.nan
    for _, sub in diffs.groupby("statistic", sort=False):
        diffs.loc[sub.index, "p_holm"] = holm_adjust(sub["p"].where(sub["resolved"]))
    diffs["differs"] = diffs["resolved"] & (diffs["p_holm"] < alpha)
    diffs = diffs[["statistic", "group_a", "group_b", "diff", "lo", "hi", "p", "p_holm", "resolved", "differs", "p_z",
                   "lo_mcse", "hi_mcse"]]
    meta = {"fmr_target": f, "fixed_threshold": float(threshold), "n_boot": int(n_boot), "ci": ci,
            "alpha": alpha, "seed": seed, "min_impostor_factor": min_impostor_factor, "groups": groups,
            "method": (f"difference of each pair of groups (earlier minus later) with a prototype-cluster bootstrap "
                       f"({int(n_boot)} replicates, thresholds re-estimated per replicate): {ci:.0%} percentile "
                       f"interval and two-sided bootstrap p-value, Holm-adjusted over the pairs of each statistic; "
                       f"differs iff resolved and adjusted p < {alpha:g}. p_z: pooled two-proportion z test "
                       "(pairs as independent; for comparison). A rate needs at least "
                       f"{min_impostor_factor:g}/FMR impostors (FNMR at the FMR target, FMR at the fixed threshold)")}
    return GroupTests(rates, diffs, meta)
