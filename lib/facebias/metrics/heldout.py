"""Held-out error rates: thresholds fitted on the other folds, rates measured on the held-out
fold, averaged over folds (paper 002's corrected protocol, ``docs/specs/bfw.md`` A.2/A.7).

A per-group threshold fitted and measured on the same pairs puts that group's FMR at its
target by construction (the in-sample leak of :func:`facebias.metrics.group_report`); held
out, it scatters around the target as it would on new pairs.

* :func:`heldout_rates`   one row per (fold, target, group, policy) for any pairs table with
  score, label, group and fold columns (the BFW study's ``cross_validated_rates`` is it on
  the BFW schema)
* :func:`fold_average`    the mean over folds, NaN unless every fold is resolved
* :func:`identity_folds`  identity-disjoint folds dealt by a seeded permutation
* :func:`heldout_report`  a :class:`~facebias.metrics.GroupReport` of held-out rates (the
  ``facebias metrics --folds K`` command)

Scores are similarities (a match iff ``score > t``) unless ``higher_is_match=False``;
rates are fractions.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics.checks import check_labels, check_rates, check_scores
from facebias.metrics.direction import direction_problem
from facebias.metrics.fairness import _summaries, _zero_rate_notes
from facebias.metrics.groups import GroupReport, UnresolvedRatesWarning
from facebias.metrics.rates import fmr_at, fnmr_at, threshold_at_fmr
from facebias.metrics.resolution import enough_impostors
from facebias.validate import require_columns

__all__ = ["CV_COLUMNS", "fold_average", "heldout_rates", "heldout_report", "identity_folds"]

#: The columns of :func:`heldout_rates` that the BFW study's ``cross_validated_rates`` returns.
CV_COLUMNS = ["fold", "fmr_target", "group", "policy", "threshold", "fmr", "fnmr", "n_impostor",
              "n_genuine", "resolved"]

_HELD_OUT_FEW = "too few held-out impostors"
_NO_GENUINE = "no held-out genuine pairs"
_TRAIN_FEW = {"global": "too few training impostors for the global threshold",
              "group": "too few training impostors for the group's threshold"}


def heldout_rates(
    pairs: pd.DataFrame,
    score: str,
    label: str,
    group: str,
    fold: str,
    fmr: float | Sequence[float],
    *,
    higher_is_match: bool = True,
    min_impostor_factor: float = 10.0,
    missing: str = "nan",
) -> pd.DataFrame:
    """Held-out FMR and FNMR per fold, group, target FMR and thresholding policy.

    For each fold k, thresholds come from the other folds' impostor scores: one pooled over
    all groups (``policy="global"``) and one per group (``policy="group"``), each
    :func:`facebias.metrics.threshold_at_fmr`; they are applied to fold k's pairs of each
    group (a match iff ``score > t``).

    Resolution (:func:`facebias.metrics.enough_impostors`): a threshold fitted on fewer than
    ``min_impostor_factor / f`` impostors is NaN; a row's ``fmr`` and ``fnmr`` are NaN, and
    ``resolved`` False, unless both its threshold's training impostors and the group's
    held-out impostors are that many and the group has held-out genuine pairs (``note``
    says which rule failed). Unresolved rows raise an :class:`UnresolvedRatesWarning`.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per comparison.
    score : str
        Score column: a similarity (match iff ``score > t``), or a distance with
        ``higher_is_match=False``.
    label : str
        Label column: 1/True = genuine, 0/False = impostor.
    group : str
        The pair's group.
    fold : str
        The pair's fold (any sortable values; at least 2 distinct).
    fmr : float or sequence of float
        Target FMRs, fractions in (0, 1).
    higher_is_match : bool, default True
        False: the scores are distances (match iff ``score < t``): thresholds are fitted on
        ``-score`` and given back as distances.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / f`` (0 = report every rate).
    missing : {"nan", "raise"}, default "nan"
        A group without held-out genuine or impostor pairs in a fold: NaN rows (resolved
        False, with a warning) or a ``ValueError``.

    Returns
    -------
    pandas.DataFrame
        One row per (fold, fmr_target, group, policy), folds and groups sorted, targets
        in the given order: ``threshold``, the held-out ``fmr`` and ``fnmr`` (fractions),
        ``n_impostor`` and ``n_genuine`` held out, ``resolved`` (bool),
        ``n_impostor_train`` (the impostors the threshold was fitted on) and ``note``
        (why a row is unresolved; empty if it is not).

    Raises
    ------
    ValueError
        For a missing column, a non-finite score, a label other than 0/1, a missing group
        or fold, a target outside (0, 1), fewer than 2 folds, scores that run the other way
        than ``higher_is_match`` says, an unknown ``missing``, or (``missing="raise"``) a
        group without held-out genuine or impostor pairs in a fold.

    Warns
    -----
    UnresolvedRatesWarning
        Per target with unresolved rows, naming the groups, folds and rules.

    Examples
    --------
    >>> pairs = pd.DataFrame({"s": [0.9, 0.2, 0.1, 0.8, 0.3, 0.4], "y": [1, 0, 0, 1, 0, 0],
    ...                       "g": "a", "k": [1, 1, 1, 2, 2, 2]})
    >>> cv = heldout_rates(pairs, "s", "y", "g", "k", 0.5, min_impostor_factor=0)
    >>> cv[["fold", "policy", "threshold", "fmr", "fnmr", "n_impostor", "resolved"]]
       fold  policy  threshold  fmr  fnmr  n_impostor  resolved
    0     1  global        0.3  0.0   0.0           2      True
    1     1   group        0.3  0.0   0.0           2      True
    2     2  global        0.1  1.0   0.0           2      True
    3     2   group        0.1  1.0   0.0           2      True
    """
    if missing not in ("nan", "raise"):
        raise ValueError(f"missing: expected 'nan' or 'raise', got {missing!r}")
    rates, _ = check_rates(fmr, "fmr")
    require_columns(pairs, [score, label, group, fold], "pairs")
    for col, what in ((group, "group"), (fold, "fold")):
        bad = pairs[col].isna().to_numpy()
        if bad.any():
            raise ValueError(f"column {col!r}: missing {what} in row {pairs.index[bad][0]!r}")
    f_code, folds = pd.factorize(pairs[fold].to_numpy(), sort=True)
    if folds.size < 2:
        raise ValueError(f"column {fold!r}: need at least 2 folds, got {folds.tolist()}")
    s = check_scores(pairs[score].to_numpy(), f"column {score!r}", pairs.index)
    is_gen = check_labels(pairs[label], f"column {label!r}")
    wrong = direction_problem(s, is_gen, higher_is_match)
    if wrong:
        raise ValueError(wrong)
    if not higher_is_match:
        s = -s
    sign = 1.0 if higher_is_match else -1.0
    g_code, groups = pd.factorize(pairs[group].to_numpy(), sort=True)
    # one run of scores per (fold, group, label): run (k * n_groups + j) * 2 + is_gen
    run = (f_code.astype(np.int64) * groups.size + g_code) * 2 + is_gen
    order = np.argsort(run, kind="stable")
    bounds = np.searchsorted(run[order], np.arange(2 * folds.size * groups.size + 1))
    s_sorted = s[order]

    def scores(k: int, j: int, genuine: bool) -> np.ndarray:
        r = (k * groups.size + j) * 2 + int(genuine)
        return s_sorted[bounds[r]:bounds[r + 1]]

    def fitted(imp_train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Thresholds on ``imp_train`` (NaN where too few) and where they are resolved."""
        ok = np.asarray(enough_impostors(imp_train.size, rates, min_impostor_factor))
        if not imp_train.size:
            return np.full(rates.shape, np.nan), ok
        return np.where(ok, np.atleast_1d(threshold_at_fmr(imp_train, rates)), np.nan), ok

    rows = []
    for k, fk in enumerate(folds):
        others = [i for i in range(folds.size) if i != k]
        t_glob = fitted(np.concatenate([scores(i, j, False) for i in others for j in range(groups.size)]))
        n_glob = sum(scores(i, j, False).size for i in others for j in range(groups.size))
        for j, g in enumerate(groups):
            imp_test, gen_test = scores(k, j, False), scores(k, j, True)
            if imp_test.size == 0 or gen_test.size == 0:
                if missing == "raise":
                    raise ValueError(f"fold {fk}: subgroup {g!r} has no held-out genuine or impostor pairs")
            ok_test = np.asarray(enough_impostors(imp_test.size, rates, min_impostor_factor)) & (imp_test.size > 0)
            imp_train_g = np.concatenate([scores(i, j, False) for i in others])
            for policy, (t, ok_t), n_train in (("global", t_glob, n_glob),
                                               ("group", fitted(imp_train_g), imp_train_g.size)):
                ok = ok_t & ok_test & (gen_test.size > 0)
                fm = np.where(ok, fmr_at(imp_test, t), np.nan) if imp_test.size else np.full(rates.shape, np.nan)
                fn = np.where(ok, fnmr_at(gen_test, t), np.nan) if gen_test.size else np.full(rates.shape, np.nan)
                for f, ti, fm_i, fn_i, ok_i, ok_ti, ok_si in zip(rates, t, fm, fn, ok, ok_t, ok_test, strict=True):
                    why = [w for w, bad in ((_HELD_OUT_FEW, not ok_si), (_NO_GENUINE, gen_test.size == 0),
                                            (_TRAIN_FEW[policy], not ok_ti)) if bad]
                    rows.append((_plain(fk), f, g, policy, sign * float(ti), fm_i, fn_i, imp_test.size,
                                 gen_test.size, bool(ok_i), n_train, "; ".join(why)))
    out = pd.DataFrame(rows, columns=[*CV_COLUMNS, "n_impostor_train", "note"])
    _warn_heldout(out, min_impostor_factor)
    return out


def _plain(x: Any) -> Any:
    """A numpy scalar as plain Python (an int8 fold as int)."""
    return x.item() if isinstance(x, np.generic) else x


def _reasons(folds: pd.Series, notes: pd.Series, n_folds: int) -> str:
    """The rules that left rows unresolved, each with its folds ("every fold" when all
    ``n_folds`` of them): ``folds`` and ``notes`` are columns of :func:`heldout_rates` rows."""
    reasons: dict[str, list[Any]] = {}
    for k, note in zip(folds, notes, strict=True):
        for why in filter(None, note.split("; ")):
            ks = reasons.setdefault(why, [])
            if k not in ks:
                ks.append(k)
    return "; ".join(f"{why} in " + ("every fold" if len(ks) == n_folds else
                                     f"fold{'s' if len(ks) > 1 else ''} {', '.join(map(str, sorted(ks)))}")
                     for why, ks in reasons.items())


def _warn_heldout(cv: pd.DataFrame, min_impostor_factor: float) -> None:
    """One :class:`UnresolvedRatesWarning` per target with unresolved rows of ``cv``
    (:func:`heldout_rates`): the groups (those with the same reasons together), the reasons
    with their folds, and the rule."""
    n_folds = cv["fold"].nunique()
    for f, rows in cv[~cv["resolved"]].groupby("fmr_target", sort=False):
        f = float(f)
        by_reason: dict[str, list[str]] = {}
        for g, by_g in rows.groupby("group", sort=True):
            by_reason.setdefault(_reasons(by_g["fold"], by_g["note"], n_folds), []).append(str(g))
        where = "; ".join(f"{', '.join(gs)} ({why})" for why, gs in by_reason.items())
        warnings.warn(f"held-out fmr {f:g}: unresolved rates (NaN, resolved false) in {where}; a rate needs at "
                      f"least min_impostor_factor/FMR = {min_impostor_factor:g}/{f:g} = {min_impostor_factor / f:g} "
                      "impostors held out in its fold and behind its threshold in the training folds, and "
                      "held-out genuine pairs", UnresolvedRatesWarning, stacklevel=3)


def fold_average(cv: pd.DataFrame) -> pd.DataFrame:
    """Mean over folds of :func:`heldout_rates`, with TAR and the FMR deviation.

    Parameters
    ----------
    cv : pandas.DataFrame
        :func:`heldout_rates` output (or the BFW study's ``cross_validated_rates``).

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


def identity_folds(id1: Any, id2: Any, k: int, seed: int = 0) -> np.ndarray:
    """Identity-disjoint folds: identities dealt to ``k`` folds, a pair in a fold iff both
    its identities are.

    The distinct identities (of both columns, sorted) are put in the order of a
    permutation seeded ``seed`` (:func:`numpy.random.default_rng`) and dealt round robin
    to folds 1..k, so fold sizes differ by at most one identity. A pair whose identities
    lie in different folds belongs to none (-1): a held-out fold then shares no identity
    with its training folds.

    Parameters
    ----------
    id1, id2 : array_like
        The pair's two identities (1-D, equal length, no missing values).
    k : int
        Number of folds, 2 .. the number of identities.
    seed : int, default 0
        Seed of the permutation.

    Returns
    -------
    numpy.ndarray
        int64 fold per pair in 1..k, or -1 for a pair spanning two folds.

    Raises
    ------
    ValueError
        For ``k`` < 2, more folds than identities, unequal lengths or a missing identity.

    Examples
    --------
    >>> folds = identity_folds(["a", "b", "a", "c"], ["a", "b", "b", "d"], k=2, seed=0)
    >>> folds.tolist()  # genuine pairs always stay; a-b and c-d only if dealt together
    [2, 1, -1, -1]
    """
    a, b = np.asarray(id1), np.asarray(id2)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"ids: expected two 1-D columns of equal length, got shapes {a.shape} and {b.shape}")
    both = pd.Series(np.concatenate([a, b]))
    if both.isna().any():
        raise ValueError("ids: missing identity")
    codes, uniques = pd.factorize(both, sort=True)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k: need at least 2 folds, got {k!r}")
    if k > uniques.size:
        raise ValueError(f"k: {uniques.size} identities cannot be dealt to {k} folds; use at most {uniques.size}")
    perm = np.random.default_rng(seed).permutation(uniques.size)
    fold_of = np.empty(uniques.size, dtype=np.int64)
    fold_of[perm] = np.arange(uniques.size) % k + 1
    fa, fb = fold_of[codes[:a.size]], fold_of[codes[a.size:]]
    return np.where(fa == fb, fa, -1)


def heldout_report(
    pairs: pd.DataFrame,
    score: str,
    label: str,
    group: str,
    fmr: float | Sequence[float] = (1e-3,),
    *,
    fold: str | None = None,
    ids: tuple[str, str] | None = None,
    k: int | None = None,
    seed: int = 0,
    alpha: float = 0.5,
    min_impostor_factor: float = 10.0,
    higher_is_match: bool = True,
) -> GroupReport:
    """Per-group held-out FMR/FNMR at a global and at per-group thresholds, averaged over folds.

    The held-out counterpart of :func:`facebias.metrics.group_report`, with the same
    table and summary columns: :func:`heldout_rates` (thresholds fitted on the other folds,
    applied to the held-out fold) averaged by :func:`fold_average`. The folds are the
    ``fold`` column's, or (``ids`` and ``k``) identity-disjoint folds of
    :func:`identity_folds`, dropping the pairs that span two folds. There are no bootstrap
    intervals; ``fmr_global_sd`` and ``fmr_group_sd`` give the spread across folds.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per comparison.
    score, label, group : str
        As in :func:`facebias.metrics.group_report`.
    fmr : float or sequence of float, default (1e-3,)
        Target FMRs, fractions in (0, 1).
    fold : str, optional
        The fold column; ``k``, if given too, must be its number of folds.
    ids : tuple of str, optional
        The two identity columns to deal to ``k`` folds when ``fold`` is not given.
    k : int, optional
        Number of folds (at least 2).
    seed : int, default 0
        Seed of :func:`identity_folds`.
    alpha : float, default 0.5
        Weight of FMR against FNMR in FDR, GARBE and the inequity rate.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / f`` (0 = report every rate).
    higher_is_match : bool, default True
        False: distances (match iff ``score < t``); thresholds are given as distances.

    Returns
    -------
    GroupReport
        ``table``: one row per (fmr_target, group) with held-out ``n_genuine`` and
        ``n_impostor`` (each held-out pair once), and per policy (``global``, ``group``)
        the fold means ``threshold_*``, ``fmr_*``, ``fnmr_*``, ``fmr_*_sd`` and
        ``fmr_dev_*_pct``; ``resolved`` (every fold, both policies) and ``note``.
        ``summary``: fairness across groups of the fold-averaged rates per policy.
        ``folds``: the :func:`heldout_rates` rows. ``meta["thresholds"]`` says that the
        rates are held out, over how many folds and how the folds were made
        (``meta["folds"]``: ``k``, ``source``, ``values``, ``n_dropped``).

    Raises
    ------
    ValueError
        Without ``fold`` or ``ids`` and ``k``; for ``k`` not matching the fold column, and
        as :func:`heldout_rates` and :func:`identity_folds`.

    Warns
    -----
    UnresolvedRatesWarning
        As :func:`heldout_rates`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pairs = pd.DataFrame({"s": np.r_[rng.normal(0, 1, 4000), rng.normal(3, 1, 400)],
    ...                       "y": np.repeat([0, 1], [4000, 400]), "g": np.tile(["a", "b"], 2200),
    ...                       "k": np.tile([1, 1, 2, 2, 3, 3, 4, 4], 550)})
    >>> r = heldout_report(pairs, "s", "y", "g", 0.05, fold="k")
    >>> r.meta["thresholds"]
    "held-out: thresholds fitted on 3 of 4 folds, rates measured on the 4th, averaged over the 4 folds (column 'k')"
    >>> r.table[["group", "n_impostor", "fmr_group", "fmr_group_sd"]].round(4)  # held out: scatters
      group  n_impostor  fmr_group  fmr_group_sd
    0     a        2000      0.051        0.0099
    1     b        2000      0.050        0.0264
    >>> from facebias.metrics import group_report
    >>> group_report(pairs, "s", "y", "g", 0.05, n_boot=0).table["fmr_group"].tolist()  # in sample: at 0.05
    [0.05, 0.05]
    """
    if not isinstance(pairs, pd.DataFrame):
        raise ValueError(f"pairs: expected a pandas DataFrame, got {type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs: the table has no rows")
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2):
        raise ValueError(f"k: need at least 2 folds, got {k!r}")
    n_dropped = 0
    if fold is not None:
        require_columns(pairs, [fold], "fold")
        n = pairs[fold].nunique()
        if k is not None and k != n:
            raise ValueError(f"k: column {fold!r} has {n} folds, not {k}; pass k={n} or leave k out")
        source = f"column {fold!r}"
        work, fold_col = pairs, fold
    elif ids is not None and k is not None:
        require_columns(pairs, list(ids), "identity")
        folds = identity_folds(pairs[ids[0]].to_numpy(), pairs[ids[1]].to_numpy(), k, seed)
        keep = folds >= 0
        n_dropped = int((~keep).sum())
        fold_col = next(c for c in ("fold", "_fold", "__fold") if c not in pairs.columns)
        work = pairs[keep].assign(**{fold_col: folds[keep]})
        if work.empty:
            raise ValueError(f"ids: every pair spans two of the {k} identity folds; use fewer folds")
        source = (f"identities of {ids[0]!r} and {ids[1]!r} dealt to {k} folds by a permutation seeded "
                  f"{seed}; a pair is in a fold iff both its identities are; {n_dropped} pairs spanning "
                  "two folds dropped")
    else:
        raise ValueError("fold: name a fold column (fold=...), or the identity columns and a number of "
                         "folds (ids=(id1, id2), k=K) to deal identities to folds")
    rates, _ = check_rates(fmr, "fmr")
    cv = heldout_rates(work, score, label, group, fold_col, rates, higher_is_match=higher_is_match,
                       min_impostor_factor=min_impostor_factor)
    n_folds = int(cv["fold"].nunique())
    table = _wide(cv, rates)
    summary = _fold_summary(table, rates, alpha)
    is_gen = check_labels(work[label], f"column {label!r}")
    meta = {
        "score": score, "label": label, "group": group, "fmr": rates.tolist(),
        "n_genuine": int(is_gen.sum()), "n_impostor": int((~is_gen).sum()),
        "n_boot": 0, "alpha": alpha, "min_impostor_factor": min_impostor_factor,
        "thresholds": (f"held-out: thresholds fitted on {n_folds - 1} of {n_folds} folds, rates measured on "
                       f"the {_ordinal(n_folds)}, averaged over the {n_folds} folds ({source})"),
        "folds": {"k": n_folds, "source": source, "values": [_plain(v) for v in np.sort(cv["fold"].unique())],
                  "n_dropped": n_dropped},
        "conventions": ("scores are similarities; match iff score > t" if higher_is_match else
                        "scores are distances; match iff score < t")
                       + "; rates are fractions, means over the held-out folds; a rate at target f "
                       f"from fewer than {min_impostor_factor:g}/f impostors (held out, or behind its threshold "
                       "in the training folds) is NaN in its fold and then in the mean (resolved false)",
    }
    if not higher_is_match:
        meta.update(higher_is_match=False, scores="distances: a match iff distance < threshold")
    return GroupReport(table, summary, meta, folds=cv)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _wide(cv: pd.DataFrame, rates: np.ndarray) -> pd.DataFrame:
    """:func:`fold_average` of ``cv`` as one row per (fmr_target, group), targets in the
    order of ``rates``, with ``*_global`` and ``*_group`` columns and the folds' notes."""
    avg = fold_average(cv)
    cols = ["threshold", "fmr", "fnmr", "fmr_sd", "fmr_dev_pct"]
    parts = []
    for pol in ("global", "group"):
        p = avg[avg["policy"] == pol].set_index(["fmr_target", "group"])
        parts.append(p[cols].rename(columns={"threshold": f"threshold_{pol}", "fmr": f"fmr_{pol}",
                                             "fnmr": f"fnmr_{pol}", "fmr_sd": f"fmr_{pol}_sd",
                                             "fmr_dev_pct": f"fmr_dev_{pol}_pct"}))
        parts.append(p[["resolved"]].rename(columns={"resolved": f"resolved_{pol}"}))
        if pol == "global":
            parts.insert(0, p[["n_genuine", "n_impostor"]])
    wide = pd.concat(parts, axis=1)
    wide["resolved"] = wide["resolved_global"] & wide["resolved_group"]
    wide = wide.drop(columns=["resolved_global", "resolved_group"])
    n_folds = cv["fold"].nunique()
    notes = {fg: _reasons(rows["fold"], rows["note"], n_folds)
             for fg, rows in cv[cv["note"] != ""].groupby(["fmr_target", "group"], sort=False)}
    wide["note"] = [notes.get(ix, "") for ix in wide.index]
    wide = wide.reset_index()
    wide["fmr_target"] = wide["fmr_target"].astype(np.float64)
    order = {float(f): i for i, f in enumerate(rates)}
    return wide.sort_values(["fmr_target", "group"], key=lambda c: c.map(order) if c.name == "fmr_target" else c,
                            kind="stable", ignore_index=True)


def _fold_summary(table: pd.DataFrame, rates: np.ndarray, alpha: float) -> pd.DataFrame:
    """Fairness across groups of the fold-averaged rates in ``table`` (:func:`_wide`), one
    row per (fmr_target, policy) as :attr:`GroupReport.summary` (no intervals)."""
    n_groups = table["group"].nunique()
    rows = []
    for pol in ("global", "group"):
        fm = table[f"fmr_{pol}"].to_numpy().reshape(rates.size, n_groups)
        fn = table[f"fnmr_{pol}"].to_numpy().reshape(rates.size, n_groups)
        known = ~(np.isnan(fm) | np.isnan(fn))
        est = _summaries(fm, fn, alpha)
        zero = _zero_rate_notes(fm, fn)
        for i, f in enumerate(rates):
            ok = bool(known[i].all())
            row = {"fmr_target": float(f), "policy": pol, "resolved": ok}
            row.update({name: float(v[i]) for name, v in est.items()})
            row["note"] = "; ".join(([] if ok else ["a group's held-out rate is unresolved"]) + zero[i])
            rows.append(row)
    return pd.DataFrame(rows)
