"""Per-group error rates with bootstrap intervals: :func:`group_report` and its
:class:`GroupReport` (FMR/FNMR per group at one global and at per-group thresholds, fairness
summaries across groups, identity- or pair-bootstrap percentile intervals with the Monte
Carlo errors of their bounds).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from facebias.io import jsonable, write_text_atomic
from facebias.metrics.checks import _row, check_labels, check_rates, check_scores
from facebias.metrics.direction import direction_problem
from facebias.metrics.fairness import _summaries, _zero_rate_notes
from facebias.metrics.resolution import TOO_FEW_IMPOSTORS, enough_impostors
from facebias.metrics.weighted import _pooled_threshold, _SortedScores
from facebias.stats import (
    MC_ERROR_OF_WIDTH,
    bootstrap_weights,
    excludes_estimate,
    identity_bootstrap,
    mc_error_report,
    percentile_interval,
    percentile_mc_error,
)
from facebias.validate import require_columns

__all__ = ["EXCLUDES_ESTIMATE", "IN_SAMPLE", "GroupReport", "UnresolvedRatesWarning", "group_report"]


#: Note on a statistic whose percentile interval excludes its estimate (see :func:`group_report`).
EXCLUDES_ESTIMATE = "interval excludes the estimate (bootstrap bias)"

#: ``meta["thresholds"]`` of an in-sample report (set by the ``facebias metrics`` command; the
#: library leaves the key out so that existing reports stay byte-identical).
IN_SAMPLE = ("in-sample: each threshold is fitted on the pairs it is measured on, so fmr_group is at "
             "its target by construction; held-out rates: facebias.metrics.heldout_report (CLI: --folds K)")


class UnresolvedRatesWarning(UserWarning):
    """A table came back with unresolved (NaN) rates: too few impostors for a target FMR
    (:func:`facebias.metrics.enough_impostors`) or, held out, no genuine pairs. The message
    names the rule, the targets and the groups."""


@dataclass
class GroupReport:
    """Per-group error rates at global and per-group thresholds, with fairness summaries.

    Made by :func:`group_report`; ``str(report)`` prints both tables with intervals.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (fmr_target, group). ``*_global`` columns use one threshold set on
        all impostors pooled (NIST style); ``*_group`` columns use each group's own
        threshold (BFW style). ``*_lo``/``*_hi`` are bootstrap percentile intervals and
        ``*_lo_mcse``/``*_hi_mcse`` the Monte Carlo standard errors of those bounds
        (:func:`facebias.stats.percentile_mc_error`; :func:`facebias.stats.mc_error_summary`
        reads them).
        ``fmr_dev_*_pct`` = 100 (FMR - target) / target. ``resolved``: the group has at
        least ``min_impostor_factor / fmr_target`` impostors (else its rates are NaN);
        ``note``: "too few impostors" and any interval that excludes its estimate.
    summary : pandas.DataFrame
        One row per (fmr_target, policy) with max/min FMR and FNMR ratios, FDR, GARBE and
        the inequity rate across groups, with intervals and their bounds' Monte Carlo
        errors; ``resolved`` (every group is) and
        ``note`` (why a value is NaN or inf, or an interval excludes its estimate).
    meta : dict
        Column names, counts, bootstrap settings and the conventions used; ``thresholds``
        (when set) says where the thresholds were fitted (in-sample or held out, and how the
        folds were made), ``scores`` (when set) that the scores are distances.
    folds : pandas.DataFrame or None
        Held-out reports only (:func:`facebias.metrics.heldout_report`): the per-fold rows
        of :func:`facebias.metrics.heldout_rates` behind ``table``.
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    folds: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN becomes null, infinities the strings "inf"/"-inf").

        Returns
        -------
        dict
            ``{"meta": ..., "groups": [table rows], "summary": [summary rows]}``, and
            ``"folds": [per-fold rows]`` for a held-out report.
        """
        out = {"meta": self.meta, "groups": self.table.to_dict(orient="records"),
               "summary": self.summary.to_dict(orient="records")}
        if self.folds is not None:
            out["folds"] = self.folds.to_dict(orient="records")
        return jsonable(out)

    def to_json(self, path: str | os.PathLike | None = None, indent: int = 2) -> str:
        """The report as strict JSON; written atomically to ``path`` when given.

        Parameters
        ----------
        path : str or os.PathLike, optional
            File to write (with a trailing newline); nothing is written without it.
        indent : int, default 2
            JSON indentation.

        Returns
        -------
        str
            The JSON text of :meth:`to_dict`.
        """
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            write_text_atomic(path, text + "\n")
        return text

    @property
    def mc_error(self) -> pd.DataFrame:
        """How precise the bootstrap bounds are: :func:`facebias.stats.mc_error_summary` of
        :attr:`table` and of :attr:`summary` (column ``source``); empty without a bootstrap."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no bootstrap: an empty table is the answer
            return mc_error_report({"table": (self.table, self.meta["n_boot"]),
                                    "summary": (self.summary, self.meta["n_boot"])})

    def __str__(self) -> str:
        m = self.meta
        boot = (f"{m['n_boot']} bootstrap replicates resampling {m['bootstrap_unit']}, "
                f"{m['ci']:.0%} CI" if m["n_boot"] else "no bootstrap intervals")
        mc = self.mc_error if m["n_boot"] else None
        if mc is not None and mc["max_mcse_of_width"].notna().any():
            boot += (f"; Monte Carlo error of a bound at most {mc['max_mcse_of_width'].max():.1%} of its "
                     f"interval's width ({mc['n_boot_needed'].max()} replicates keep it within "
                     f"{MC_ERROR_OF_WIDTH:.0%})")
        head = (
            f"group report: score={m['score']!r} label={m['label']!r} group={m['group']!r} "
            f"| {m['n_genuine']} genuine, {m['n_impostor']} impostor pairs | {boot}"
        )
        for key in ("scores", "thresholds"):
            if key in m:
                head += f"\n{key}: {m[key]}"

        def with_ci(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
            """Numbers as text, ``value [lo, hi]`` where an interval exists."""
            out = pd.DataFrame(index=df.index)
            for c in cols:
                v = df[c]
                if pd.api.types.is_float_dtype(v) and c != "fmr_target":
                    text = v.map(lambda x: f"{x:.4g}")
                    if f"{c}_lo" in df:
                        text = text + " [" + df[f"{c}_lo"].map(lambda x: f"{x:.4g}") + ", " + \
                            df[f"{c}_hi"].map(lambda x: f"{x:.4g}") + "]"
                    out[c] = text
                else:
                    out[c] = v.map(lambda x: f"{x:g}" if isinstance(x, float) else str(x))
            return out

        spread = [c for c in ("fmr_global_sd", "fmr_group_sd") if c in self.table]  # held out: across folds
        groups = with_ci(self.table, ["fmr_target", "group", "n_genuine", "n_impostor", "fmr_global",
                                      "fnmr_global", "fmr_group", "fnmr_group", *spread, "resolved", "note"])
        summary = with_ci(self.summary, ["fmr_target", "policy", "fmr_ratio", "fnmr_ratio", "fdr",
                                         "garbe", "inequity_rate", "resolved", "note"])
        return (f"{head}\n{groups.to_string(index=False)}\n\nfairness across groups "
                f"(global: one threshold for all; group: each group's own)\n"
                f"{summary.to_string(index=False)}")


def _column(pairs: pd.DataFrame, name: str, role: str) -> pd.Series:
    require_columns(pairs, [name], role)
    return pairs[name]


def group_report(
    pairs: pd.DataFrame,
    score: str,
    label: str,
    group: str,
    fmr: float | Sequence[float] = (1e-3,),
    *,
    ids: tuple[str, str] | None = None,
    n_boot: int = 200,
    ci: float = 0.95,
    seed: int = 0,
    alpha: float = 0.5,
    min_impostor_factor: float = 10.0,
    higher_is_match: bool = True,
) -> GroupReport:
    """Per-group FMR/FNMR at a global and at per-group thresholds, with bootstrap CIs.

    The global threshold is :func:`threshold_at_fmr` on all impostors pooled; each
    group's threshold uses that group's impostors only. Thresholds are re-estimated in
    every bootstrap replicate, each replicate exactly as the estimate (the estimate on
    the rows repeated by their bootstrap weights).

    **Resolution** (:func:`enough_impostors`): a rate at target ``f`` computed from fewer
    than ``min_impostor_factor / f`` impostors is NaN, never a number, and its row has
    ``resolved`` False and ``note`` "too few impostors": ``threshold_global`` and
    ``fnmr_global`` need that many impostors pooled; ``fmr_global`` and every
    ``*_group`` value need that many in the group. A fairness summary over an unresolved
    group is NaN (``resolved`` False). Unresolved rates also raise an
    :class:`UnresolvedRatesWarning` (one per target) naming the rule and the groups.

    **In sample.** Each threshold is fitted on the pairs it is then measured on, so
    ``fmr_group`` is at its target by construction (and the global FMRs average to it);
    for rates on pairs the thresholds never saw use :func:`facebias.metrics.heldout_report`.

    **Direction.** Scores are similarities by default. A table whose genuine pairs score
    lower than its impostors on average is refused (``ValueError`` naming
    ``higher_is_match=False``); with ``higher_is_match=False`` the scores are distances (a
    match iff ``score < t``): every rate is computed on ``-score`` and the thresholds and
    their intervals are given back as distances.

    **Intervals** are percentile intervals of the replicates. A max/min ratio with a zero
    minimum is inf, or NaN when every rate is 0 (0/0, undefined), with the reason in
    ``note``; a NaN estimate has NaN bounds. Where a percentile interval excludes its
    estimate, ``note`` says so (``"<stat>: interval excludes the estimate (bootstrap
    bias)"``): it happens for statistics at or near a bound of their range (a max/min
    ratio of 1, an FDR near 1, an FMR at its own threshold, which never exceeds the
    target) or an extreme order statistic, whose replicates lie on one side.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per comparison.
    score : str
        Similarity column (match iff score > t).
    label : str
        Label column: 1/True = genuine, 0/False = impostor.
    group : str
        The pair's group (e.g. the query's subgroup).
    fmr : float or sequence of float, default (1e-3,)
        Target FMR(s), fractions in (0, 1).
    ids : tuple of str, optional
        The two identity columns; when given, the bootstrap resamples identities (a
        pair's weight is the product of its identities' multiplicities; a genuine pair's
        is its identity's), otherwise pairs.
    n_boot : int, default 200
        Bootstrap replicates; 0 = no intervals.
    ci : float, default 0.95
        Coverage of the percentile intervals, in (0, 1).
    seed : int, default 0
        Seed of the bootstrap.
    alpha : float, default 0.5
        Weight of FMR against FNMR in FDR, GARBE and the inequity rate.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / f``, for a rate at target ``f`` (0 = report every
        rate).
    higher_is_match : bool, default True
        True: similarities (a match iff ``score > t``); False: distances (a match iff
        ``score < t``; ``meta`` then has ``higher_is_match`` and ``scores``).

    Returns
    -------
    GroupReport
        ``table`` (per fmr_target and group), ``summary`` (fairness across groups per
        policy) and ``meta``; both tables have the columns ``resolved`` (bool) and
        ``note`` (reasons for NaN, inf and intervals that exclude their estimate).

    Raises
    ------
    ValueError
        If ``pairs`` is not a non-empty DataFrame, a column is missing, a score is
        non-finite, a label is not 0/1, a group is missing or lacks genuine or impostor
        pairs, a target lies outside (0, 1), ``ci`` outside (0, 1), ``n_boot < 0`` or
        ``min_impostor_factor < 0``; or if the scores run the other way than
        ``higher_is_match`` says (:func:`facebias.metrics.direction_problem`).

    Warns
    -----
    UnresolvedRatesWarning
        For each target with unresolved groups (too few impostors).

    Examples
    --------
    >>> pairs = pd.DataFrame({"score": [0.9, 0.8, 0.1, 0.3, 0.7, 0.4, 0.2, 0.6],
    ...                       "label": [1, 1, 0, 0, 1, 1, 0, 0], "group": list("aaaabbbb")})
    >>> r = group_report(pairs, "score", "label", "group", fmr=0.25, n_boot=0, min_impostor_factor=0)
    >>> r.table[["group", "threshold_global", "fmr_global", "threshold_group", "fnmr_group"]]
      group  threshold_global  fmr_global  threshold_group  fnmr_group
    0     a               0.3         0.0              0.3         0.0
    1     b               0.3         0.5              0.6         0.5
    >>> r.summary[["policy", "fmr_ratio", "fnmr_ratio"]]  # one threshold: FMR differs
       policy  fmr_ratio  fnmr_ratio
    0  global        inf         NaN
    1   group        NaN         inf
    >>> print(r.summary["note"][0])  # x/0 is inf, 0/0 undefined: said, not hidden
    fmr_ratio: inf, a group's FMR is 0; fnmr_ratio: undefined, every group's FNMR is 0
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     group_report(pairs, "score", "label", "group", fmr=0.25, n_boot=0).table.resolved.tolist()
    [False, False]
    >>> print(w[0].message)
    fmr 0.25: too few impostors in a (2), b (2): fewer than min_impostor_factor/FMR = 10/0.25 = 40; those rates are NaN (resolved false)
    >>> distances = pairs.assign(score=1 - pairs["score"])
    >>> group_report(distances, "score", "label", "group", fmr=0.25, n_boot=0, min_impostor_factor=0)
    Traceback (most recent call last):
    ...
    ValueError: genuine pairs score lower than impostors on average (mean 0.3 vs 0.7): these look like distances; pass higher_is_match=False
    >>> group_report(distances, "score", "label", "group", fmr=0.25, n_boot=0, min_impostor_factor=0,
    ...              higher_is_match=False).table[["group", "threshold_global", "fnmr_group"]]
      group  threshold_global  fnmr_group
    0     a               0.7         0.0
    1     b               0.7         0.5
    """
    s, is_gen, g, rates = _group_report_inputs(pairs, score, label, group, fmr, ci, n_boot)
    wrong = direction_problem(s, is_gen, higher_is_match)
    if wrong:
        raise ValueError(wrong)
    if not higher_is_match:
        s = -s
    sets = _GroupSets.of(s, is_gen, g, label, group)
    n_imp = np.array([x.values.size for x in sets.imp])
    ok_pool = np.asarray(enough_impostors(n_imp.sum(), rates, min_impostor_factor))
    ok_grp = np.asarray(enough_impostors(n_imp[None, :], rates[:, None], min_impostor_factor))

    def resolved_only(est: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """NaN where the impostors behind a value are too few (the pooled ones for the
        global threshold and FNMR, the group's for the rest)."""
        return {k: np.where(ok_pool[:, None] if k in ("threshold_global", "fnmr_global") else ok_grp, v, np.nan)
                for k, v in est.items()}

    point = resolved_only(sets.evaluate(None, rates))
    boots: dict[str, list[np.ndarray]] = {k: [] for k in point}
    # the weights of a brute-force resample in input row order, laid out in sorted order
    if ids is not None:  # identity multiplicities read straight into sorted order
        id1 = _column(pairs, ids[0], "identity").to_numpy()
        id2 = _column(pairs, ids[1], "identity").to_numpy()
        unit = "identities"
        ca, cb, draws = identity_bootstrap(len(pairs), n_boot, seed, id1, id2)
        ca, cb = ca[sets.order], cb[sets.order]
        replicates = (m[ca] * m[cb] for m in draws)
    else:
        unit = "pairs"
        replicates = (w[sets.order] for w in bootstrap_weights(len(pairs), n_boot, seed))
    for w in replicates:
        for k, v in resolved_only(sets.evaluate(w, rates)).items():
            boots[k].append(v)
    meta = {
        "score": score, "label": label, "group": group, "fmr": rates.tolist(),
        "n_genuine": int(is_gen.sum()), "n_impostor": int((~is_gen).sum()),
        "n_boot": int(n_boot), "ci": ci, "seed": seed, "alpha": alpha, "bootstrap_unit": unit,
        "min_impostor_factor": min_impostor_factor,
        "conventions": "scores are similarities; match iff score > t; rates are fractions; a rate at "
                       f"target f from fewer than {min_impostor_factor:g}/f impostors is NaN (resolved false)",
    }
    table = _group_table(sets, rates, point, boots, n_boot, ci, ok_grp)
    if not higher_is_match:
        meta["conventions"] = meta["conventions"].replace("scores are similarities; match iff score > t",
                                                          "scores are distances; match iff score < t")
        meta.update(higher_is_match=False, scores="distances: a match iff distance < threshold")
        _thresholds_as_distances(table)
    warn_unresolved(table, min_impostor_factor)
    return GroupReport(table, _fairness_summary(rates, point, boots, n_boot, ci, alpha, ok_grp), meta)


def _thresholds_as_distances(table: pd.DataFrame) -> None:
    """Thresholds set on ``-distance`` given back as distances, in place: negated, and the
    bootstrap bounds (and their Monte Carlo errors) swapped, since negation reverses order."""
    for col in ("threshold_global", "threshold_group"):
        table[col] = -table[col]
    if "threshold_group_lo" in table:  # no bounds with n_boot = 0
        table["threshold_group_lo"], table["threshold_group_hi"] = (-table["threshold_group_hi"],
                                                                    -table["threshold_group_lo"])
        table["threshold_group_lo_mcse"], table["threshold_group_hi_mcse"] = (table["threshold_group_hi_mcse"],
                                                                              table["threshold_group_lo_mcse"])


def warn_unresolved(table: pd.DataFrame, min_impostor_factor: float) -> None:
    """One :class:`UnresolvedRatesWarning` per target FMR whose rows of ``table`` (a
    :attr:`GroupReport.table`: ``fmr_target``, ``group``, ``n_impostor``, ``resolved``)
    are unresolved, naming the rule and each group with its impostor count."""
    for f, rows in table[~table["resolved"]].groupby("fmr_target", sort=False):
        f = float(f)
        groups = ", ".join(f"{g!s} ({n})" for g, n in zip(rows["group"], rows["n_impostor"], strict=True))
        warnings.warn(f"fmr {f:g}: too few impostors in {groups}: fewer than min_impostor_factor/FMR = "
                      f"{min_impostor_factor:g}/{f:g} = {min_impostor_factor / f:g}; those rates are NaN "
                      "(resolved false)", UnresolvedRatesWarning, stacklevel=3)


def _group_report_inputs(
    pairs: pd.DataFrame, score: str, label: str, group: str, fmr: float | Sequence[float],
    ci: float, n_boot: int,
) -> tuple[np.ndarray, np.ndarray, pd.Series, np.ndarray]:
    """:func:`group_report`'s checked inputs: ``(scores, is_genuine, groups, fmr targets)``."""
    if not isinstance(pairs, pd.DataFrame):
        raise ValueError(f"pairs: expected a pandas DataFrame, got {type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs: the table has no rows")
    s = check_scores(_column(pairs, score, "score").to_numpy(), f"column {score!r}", pairs.index)
    is_gen = check_labels(_column(pairs, label, "label"), f"column {label!r}")
    g = _column(pairs, group, "group")
    if g.isna().any():
        first = _row(g.index[g.isna().to_numpy()][0])
        raise ValueError(f"column {group!r}: missing group in row {first!r}")
    rates, _ = check_rates(fmr, "fmr")
    if not 0 < ci < 1:
        raise ValueError(f"ci: must lie in (0, 1), got {ci!r}")
    if n_boot < 0:
        raise ValueError(f"n_boot: must be >= 0, got {n_boot!r}")
    return s, is_gen, g, rates


@dataclass
class _GroupSets:
    """The scores as one sorted array with a contiguous run per (group, label): run 2k
    holds group k's impostors, run 2k + 1 its genuine pairs. ``order`` maps the sorted
    layout to the input rows (bootstrap weights are laid out in it); ``candidates``: all
    impostor scores sorted (the pooled threshold's search space)."""

    names: pd.Index
    order: np.ndarray
    gen: list[_SortedScores]
    imp: list[_SortedScores]
    candidates: np.ndarray

    @classmethod
    def of(cls, s: np.ndarray, is_gen: np.ndarray, g: pd.Series, label: str,
           group: str) -> _GroupSets:
        """Sort ``s`` into runs; ``ValueError`` when a label or a group's label is absent
        (``label``, ``group``: the column names, for the message)."""
        codes, names = pd.factorize(g, sort=True)
        if not (~is_gen).any() or not is_gen.any():
            raise ValueError(f"column {label!r}: needs both genuine (1) and impostor (0) pairs")
        set_id = 2 * codes + is_gen
        order = np.lexsort((s, set_id))
        s_sorted = s[order]
        bounds = np.searchsorted(set_id[order], np.arange(2 * len(names) + 1))
        gen_sets, imp_sets = [], []
        for k, name in enumerate(names):
            for sets, j, what in ((imp_sets, 2 * k, "impostor"), (gen_sets, 2 * k + 1, "genuine")):
                if bounds[j + 1] == bounds[j]:
                    raise ValueError(f"column {group!r}: group {name!r} has no {what} pairs")
                sets.append(_SortedScores(s_sorted, bounds[j], bounds[j + 1]))
        return cls(names, order, gen_sets, imp_sets, np.sort(s[~is_gen]))

    def evaluate(self, weights: np.ndarray | None, rates: np.ndarray) -> dict[str, np.ndarray]:
        """All estimates for one weighting (rows in sorted order; None = unweighted):
        arrays (n_fmr, n_groups) keyed ``threshold_global``, ``fmr_global``,
        ``fnmr_global``, ``threshold_group``, ``fmr_group``, ``fnmr_group``."""
        cws_imp = [im.weigh(weights) for im in self.imp]
        t_glob = _pooled_threshold(self.candidates, self.imp, cws_imp, rates)
        out = {"threshold_global": np.repeat(t_glob[:, None], len(self.names), axis=1)}
        cols = {k: [] for k in ("fmr_global", "fnmr_global", "threshold_group", "fmr_group", "fnmr_group")}
        for gs, im, cw_imp in zip(self.gen, self.imp, cws_imp, strict=True):
            cw_gen = gs.weigh(weights)
            t_g = im.threshold(rates, cw_imp)
            cols["fmr_global"].append(im.fraction_above(t_glob, cw_imp))
            cols["fnmr_global"].append(1 - gs.fraction_above(t_glob, cw_gen))
            cols["threshold_group"].append(t_g)
            cols["fmr_group"].append(im.fraction_above(t_g, cw_imp))
            cols["fnmr_group"].append(1 - gs.fraction_above(t_g, cw_gen))
        out.update({k: np.stack(v, axis=1) for k, v in cols.items()})
        return out


def _group_table(sets: _GroupSets, rates: np.ndarray, point: dict[str, np.ndarray],
                 boots: dict[str, list[np.ndarray]], n_boot: int, ci: float,
                 resolved: np.ndarray) -> pd.DataFrame:
    """:attr:`GroupReport.table`: one row per (fmr_target, group); percentile intervals of
    the ``n_boot`` replicates in ``boots`` when ``n_boot > 0``; ``resolved`` (n_fmr,
    n_groups): whether the group has enough impostors; ``note``: why a value is NaN or an
    interval excludes its estimate."""
    n_gen = np.array([x.values.size for x in sets.gen])
    n_imp = np.array([x.values.size for x in sets.imp])
    table = []
    for f in rates:
        for j, name in enumerate(sets.names):
            table.append({"fmr_target": f, "group": name, "n_genuine": int(n_gen[j]),
                          "n_impostor": int(n_imp[j])})
    table = pd.DataFrame(table)
    table["resolved"] = resolved.reshape(-1)
    notes = [[] if ok else [TOO_FEW_IMPOSTORS] for ok in table["resolved"]]
    for k, v in point.items():
        table[k] = v.reshape(-1)
        if n_boot and k != "threshold_global":
            reps = np.stack(boots[k])
            lo, hi = percentile_interval(reps, ci)
            table[f"{k}_lo"], table[f"{k}_hi"] = lo.reshape(-1), hi.reshape(-1)
            lo_se, hi_se = percentile_mc_error(reps, ci)
            table[f"{k}_lo_mcse"], table[f"{k}_hi_mcse"] = lo_se.reshape(-1), hi_se.reshape(-1)
            for i in np.flatnonzero(excludes_estimate(table[k], table[f"{k}_lo"], table[f"{k}_hi"])):
                notes[i].append(f"{k}: {EXCLUDES_ESTIMATE}")
    for pol in ("global", "group"):
        table[f"fmr_dev_{pol}_pct"] = 100 * (table[f"fmr_{pol}"] - table["fmr_target"]) / table["fmr_target"]
    table["note"] = ["; ".join(n) for n in notes]
    return table


def _fairness_summary(rates: np.ndarray, point: dict[str, np.ndarray],
                      boots: dict[str, list[np.ndarray]], n_boot: int, ci: float,
                      alpha: float, resolved: np.ndarray) -> pd.DataFrame:
    """:attr:`GroupReport.summary`: one row per (fmr_target, policy) of :func:`_summaries`
    across groups; percentile intervals of the replicates when ``n_boot > 0`` (NaN where
    the estimate is NaN); ``resolved``: every group resolved (``resolved`` is (n_fmr,
    n_groups)); ``note``: why a value is NaN or inf, or an interval excludes it."""
    summary = []
    for pol in ("global", "group"):
        est = _summaries(point[f"fmr_{pol}"], point[f"fnmr_{pol}"], alpha)
        zero_notes = _zero_rate_notes(point[f"fmr_{pol}"], point[f"fnmr_{pol}"])
        if n_boot:
            reps = _summaries(np.stack(boots[f"fmr_{pol}"]), np.stack(boots[f"fnmr_{pol}"]), alpha)
            intervals = {k: (*percentile_interval(v, ci), *percentile_mc_error(v, ci)) for k, v in reps.items()}
        for i, f in enumerate(rates):
            ok = bool(resolved[i].all())
            row = {"fmr_target": f, "policy": pol, "resolved": ok}
            notes = ([] if ok else [TOO_FEW_IMPOSTORS]) + zero_notes[i]
            for k, v in est.items():
                row[k] = float(v[i])
                if n_boot:
                    lo, hi, lo_se, hi_se = (float(x[i]) if not np.isnan(v[i]) else np.nan for x in intervals[k])
                    row[f"{k}_lo"], row[f"{k}_hi"] = lo, hi
                    row[f"{k}_lo_mcse"], row[f"{k}_hi_mcse"] = lo_se, hi_se
                    if excludes_estimate(v[i], lo, hi):
                        notes.append(f"{k}: {EXCLUDES_ESTIMATE}")
            row["note"] = "; ".join(notes)
            summary.append(row)
    return pd.DataFrame(summary)
