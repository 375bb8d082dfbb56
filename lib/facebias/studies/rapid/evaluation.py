"""Paper 001, service evaluation from labels (``docs/specs/rapid.md`` section 1.6): the
genuine and impostor pairs (:func:`genuine_impostor_pairs`, :func:`true_pairs`,
:func:`world_pairs`), DET curves, FNMR at fixed FMR, EER per group and the system ranking;
and the estimate against the truth (:func:`delta_fnmr`, :func:`delta_fnmr_by_system`,
:func:`ranking_agreement`: Kendall's tau of the ranking, :func:`eer_comparison`).

``world``: anything with ``faces``, ``scores`` and ``cross_scores``
(:class:`facebias.worlds.rapid.RapidWorld`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import DetCurve, det_curve, eer, fnmr_at, threshold_at_fmr
from facebias.stats import wilson_interval
from facebias.studies.rapid.tables import ALL, _check_scores_frame
from facebias.studies.rapid.truth import _shared_codes, true_labels
from facebias.validate import require_columns


class UnresolvedRateWarning(UserWarning):
    """:func:`fnmr_table` left a rate NaN (too few impostor pairs, or no genuine pair)."""


def genuine_impostor_pairs(labels: pd.DataFrame, faces: pd.DataFrame, scores: pd.DataFrame,
                           cross_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """The evaluation pairs of spec 1.6, with raw scores.

    Genuine: within-query pairs (rows of ``scores`` and of ``cross_scores`` with
    ``query_b == query`` or no ``query_b``) whose two faces are both labelled 1.
    Impostor: cross-query pairs (``query_b != query``) of the same group (the queries'
    ``group`` in ``faces``) whose two faces are both labelled 1. Self pairs are dropped;
    within-query wrong-identity pairs are never impostors.

    Parameters
    ----------
    labels : pandas.DataFrame
        Labels (``query, face, label``), e.g. the method's or :func:`true_labels`.
    faces : pandas.DataFrame
        ``query, group`` (one group per query).
    scores : pandas.DataFrame
        Within-query scores (:data:`SCORE_COLUMNS`).
    cross_scores : pandas.DataFrame, optional
        Cross-query scores (+ ``query_b``).

    Returns
    -------
    pandas.DataFrame
        ``system, group, query, query_b, face_a, face_b, score`` (raw similarity),
        ``genuine`` (bool).

    Raises
    ------
    ValueError
        For a missing column, a non-finite score, a query with several groups, or
        duplicate (query, face) labels.
    """
    require_columns(faces, ["query", "group"], "faces")
    frames = [scores] if cross_scores is None else [scores, cross_scores]
    for k, df in enumerate(frames):
        _check_scores_frame(df, "scores" if k == 0 else "cross_scores")
    q_cols = [df["query"] for df in frames]
    qb_cols = [df["query_b"] if "query_b" in df.columns else df["query"] for df in frames]
    codes, qv = _shared_codes(faces["query"], labels["query"], *q_cols, *qb_cols)
    fq, lq = codes[0], codes[1]
    qa = np.concatenate(codes[2 : 2 + len(frames)])
    qb = np.concatenate(codes[2 + len(frames):])
    gcode, gv = pd.factorize(faces["group"])
    qgroup = np.full(len(qv), -1, np.int64)
    qgroup[fq] = gcode
    clash = np.zeros(len(qv), bool)
    clash[fq[qgroup[fq] != gcode]] = True
    if clash.any():
        raise ValueError(f"faces: query {qv[np.flatnonzero(clash)[0]]!r} has more than one group")
    (lf, fa, fb), _ = _shared_codes(labels["face"], *(pd.concat([df[c] for df in frames],
                                                                ignore_index=True)
                                                      for c in ("face_a", "face_b")))
    nf = int(max(lf.max(initial=0), fa.max(initial=0), fb.max(initial=0))) + 2
    lk = lq.astype(np.int64) * nf + lf
    order = np.argsort(lk, kind="stable")
    sk = lk[order]
    if (sk[1:] == sk[:-1]).any():
        raise ValueError("labels: (query, face) keys must be unique")
    pos_lab = (labels["label"].to_numpy() == 1)[order]

    def is_one(q: np.ndarray, f: np.ndarray) -> np.ndarray:
        if not sk.size:
            return np.zeros(q.size, bool)
        k = q.astype(np.int64) * nf + f
        pos = np.clip(np.searchsorted(sk, k), 0, sk.size - 1)
        return (sk[pos] == k) & pos_lab[pos] & (q >= 0) & (f >= 0)

    same_q = qa == qb
    ga, gb = qgroup[qa], qgroup[qb]
    keep = (same_q | ((ga == gb) & (ga >= 0))) & ~(same_q & (fa == fb))
    keep &= is_one(qa, fa)
    keep[keep] &= is_one(qb[keep], fb[keep])
    idx = np.flatnonzero(keep)
    cat = pd.concat([df[["system", "face_a", "face_b", "score"]] for df in frames],
                    ignore_index=True).iloc[idx].reset_index(drop=True)
    out = pd.DataFrame({
        "system": cat["system"].to_numpy(), "group": np.asarray(gv)[ga[idx]],
        "query": qv[qa[idx]], "query_b": qv[qb[idx]],
        "face_a": cat["face_a"].to_numpy(), "face_b": cat["face_b"].to_numpy(),
        "score": cat["score"].to_numpy(), "genuine": same_q[idx],
    })
    return out


def true_pairs(faces: pd.DataFrame, scores: pd.DataFrame,
               cross_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`genuine_impostor_pairs` from the world's truth (``is_target``): genuine =
    same-query pairs of two true targets; impostor = cross-query same-group pairs of two
    true targets (all queries, nothing excluded).

    Parameters
    ----------
    faces : pandas.DataFrame
        The world's faces (``query, face, group, is_target``).
    scores : pandas.DataFrame
        Within-query scores.
    cross_scores : pandas.DataFrame, optional
        Cross-query scores.

    Returns
    -------
    pandas.DataFrame
        As :func:`genuine_impostor_pairs`.

    Raises
    ------
    ValueError
        As :func:`genuine_impostor_pairs`.
    """
    return genuine_impostor_pairs(true_labels(faces), faces, scores, cross_scores)


def _split(pairs: pd.DataFrame, by_group: bool = True):
    """Yield ``(system, group, genuine, impostor)`` raw score arrays; group ``"all"`` pools."""
    require_columns(pairs, ["system", "group", "score", "genuine"], "pairs")
    for s, ps in pairs.groupby("system", sort=True):
        subsets = [(ALL, ps)]
        if by_group:
            subsets += list(ps.groupby("group", sort=True))
        for g, pg in subsets:
            gen = pg["genuine"].to_numpy(bool)
            yield s, g, pg["score"].to_numpy()[gen], pg["score"].to_numpy()[~gen]


def curves_by_system_group(pairs: pd.DataFrame) -> dict[tuple[Any, Any], DetCurve]:
    """DET curves (raw scores) per ``(system, group)`` and ``(system, "all")``; cells with no
    genuine or no impostor pair are left out.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` output.

    Returns
    -------
    dict of tuple to DetCurve
        ``(system, group)`` -> curve.

    Raises
    ------
    ValueError
        For a missing column or a non-finite score.
    """
    return {(s, g): det_curve(gen, imp) for s, g, gen, imp in _split(pairs)
            if gen.size and imp.size}


def fnmr_table(pairs: pd.DataFrame, fmr: Sequence[float] = (0.01, 0.001),
               min_impostor_factor: float = 10.0, by_group: bool = True) -> pd.DataFrame:
    """FNMR at each target FMR per system and group (``"all"`` = pooled), with Wilson 95 %
    intervals (n = genuine pairs). NaN when there are fewer than
    ``min_impostor_factor / fmr`` impostors (spec 1.6) or no genuine pairs. The threshold
    is :func:`facebias.metrics.threshold_at_fmr`; a pair matches iff score > t.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` output.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs, fractions in (0, 1).
    min_impostor_factor : float, default 10.0
        Least impostors per target, times ``1 / fmr``.
    by_group : bool, default True
        Also one row per group (else only ``"all"``).

    Returns
    -------
    pandas.DataFrame
        ``system, group, fmr, threshold, fnmr, fnmr_lo, fnmr_hi, n_genuine,
        n_impostor`` (rates are fractions).

    Raises
    ------
    ValueError
        For a missing column, a non-finite score or a target outside (0, 1).

    Warns
    -----
    UnresolvedRateWarning
        One per target FMR with a NaN rate, naming the cells and the rule
        (:func:`unresolved_messages`); the table is returned unchanged.

    Examples
    --------
    >>> pairs = pd.DataFrame({"system": "s1", "group": "AF",
    ...                       "score": [0.9, 0.8, 0.3, 0.2, 0.1, 0.4, 0.7],
    ...                       "genuine": [True] * 3 + [False] * 4})
    >>> t = fnmr_table(pairs, [0.25], min_impostor_factor=1, by_group=False)
    >>> t[["group", "threshold", "fnmr", "n_genuine", "n_impostor"]].round(4)  # 1 of 4 impostors > 0.4
      group  threshold    fnmr  n_genuine  n_impostor
    0   all        0.4  0.3333          3           4
    """
    table = _fnmr_table(pairs, fmr, min_impostor_factor, by_group)
    for msg in unresolved_messages(table, min_impostor_factor):
        warnings.warn(f"fnmr_table: {msg}", UnresolvedRateWarning, stacklevel=2)
    return table


def unresolved_messages(table: pd.DataFrame, min_impostor_factor: float = 10.0) -> list[str]:
    """One line per target FMR of ``table`` with NaN rates, naming its cells and why.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`fnmr_table` output (``system, group, fmr, fnmr, n_genuine, n_impostor``).
    min_impostor_factor : float, default 10.0
        The factor the table was computed with.

    Returns
    -------
    list of str
        Empty when every rate is resolved.

    Examples
    --------
    >>> t = pd.DataFrame({"system": "sface", "group": ["all", "F"], "fmr": 0.01,
    ...                   "fnmr": [np.nan, np.nan], "n_genuine": [40, 0], "n_impostor": [113, 60]})
    >>> unresolved_messages(t)
    ['FNMR at FMR 0.01 unresolved (NaN) for sface/all: 113 impostor pairs < 1000 (min_impostor_factor 10 / FMR 0.01); for sface/F: no genuine pairs']
    """
    out = []
    for a, t in table[table["fnmr"].isna()].groupby("fmr", sort=False):
        need = min_impostor_factor / a
        none = t[t["n_genuine"] == 0]  # no FNMR without genuine pairs, whatever the impostors
        few = t[(t["n_genuine"] > 0) & (t["n_impostor"] < need)]
        parts = []
        if len(few):
            cells = ", ".join(f"{s}/{g}" + (f" ({n})" if len(few) > 1 else "")
                              for s, g, n in zip(few["system"], few["group"], few["n_impostor"], strict=True))
            counts = (f"{int(few['n_impostor'].iloc[0])} impostor pairs" if len(few) == 1
                      else "impostor pairs")
            parts.append(f"for {cells}: {counts} < {need:g} (min_impostor_factor "
                         f"{min_impostor_factor:g} / FMR {a:g})")
        if len(none):
            parts.append("for " + ", ".join(f"{s}/{g}" for s, g in zip(none["system"], none["group"], strict=True))
                         + ": no genuine pairs")
        out.append(f"FNMR at FMR {a:g} unresolved (NaN) " + "; ".join(parts))
    return out


def _fnmr_table(pairs: pd.DataFrame, fmr: Sequence[float], min_impostor_factor: float,
                by_group: bool) -> pd.DataFrame:
    """:func:`fnmr_table` without its warning (the study's comparisons report NaN as such)."""
    rows = []
    for s, g, gen, imp in _split(pairs, by_group):
        for a in fmr:
            t = fnmr_v = lo = hi = np.nan
            if gen.size and imp.size >= min_impostor_factor / a:
                t = float(threshold_at_fmr(imp, a))
                fnmr_v = float(fnmr_at(gen, t))
                lo, hi = (float(x) for x in wilson_interval(round(fnmr_v * gen.size), gen.size))
                lo, hi = min(max(lo, 0.0), fnmr_v), max(min(hi, 1.0), fnmr_v)
            rows.append((s, g, a, t, fnmr_v, lo, hi, gen.size, imp.size))
    return pd.DataFrame(rows, columns=["system", "group", "fmr", "threshold", "fnmr",
                                       "fnmr_lo", "fnmr_hi", "n_genuine", "n_impostor"])


def delta_fnmr(est_pairs: pd.DataFrame, true_pairs: pd.DataFrame,
               fmr: Sequence[float] = (0.01, 0.001), by_group: bool = False,
               min_impostor_factor: float = 10.0) -> pd.DataFrame:
    """Estimated vs true FNMR at fixed FMR (each on its own pairs' threshold).

    Parameters
    ----------
    est_pairs, true_pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` of the estimated and of the true labels.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs.
    by_group : bool, default False
        Also per group (else only ``"all"``).
    min_impostor_factor : float, default 10.0
        As in :func:`fnmr_table`.

    Returns
    -------
    pandas.DataFrame
        ``system, group, fmr, fnmr_est, fnmr_true, delta`` (``|est - true|``, a
        fraction).

    Raises
    ------
    ValueError
        As :func:`fnmr_table`.
    """
    cols = ["system", "group", "fmr"]
    e = _fnmr_table(est_pairs, fmr, min_impostor_factor, by_group)[[*cols, "fnmr"]]
    t = _fnmr_table(true_pairs, fmr, min_impostor_factor, by_group)[[*cols, "fnmr"]]
    out = e.merge(t, on=cols, how="outer", suffixes=("_est", "_true"))
    out["delta"] = (out["fnmr_est"] - out["fnmr_true"]).abs()
    return out


def eer_by_group(pairs: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """EER per system and group (and ``"all"``), with a Wilson interval computed with
    ``n = min(n_genuine, n_impostor)`` (the conservative side; pairs are not independent,
    spec 5 #13).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` output.
    ci : float, default 0.95
        Interval coverage.

    Returns
    -------
    pandas.DataFrame
        ``system, group, eer, eer_lo, eer_hi, n_genuine, n_impostor`` (rates are
        fractions); cells without genuine or impostor pairs are left out.

    Raises
    ------
    ValueError
        For a missing column or a non-finite score.

    Examples
    --------
    >>> pairs = pd.DataFrame({"system": "s1", "group": "AF",
    ...                       "score": [0.9, 0.8, 0.3, 0.2, 0.1, 0.4, 0.7],
    ...                       "genuine": [True] * 3 + [False] * 4})
    >>> eer_by_group(pairs)[["group", "eer", "n_genuine", "n_impostor"]].round(4)
      group     eer  n_genuine  n_impostor
    0   all  0.3333          3           4
    1    AF  0.3333          3           4
    """
    rows = []
    for s, g, gen, imp in _split(pairs):
        if not (gen.size and imp.size):
            continue
        e = eer(gen, imp)
        n = min(gen.size, imp.size)
        lo, hi = (float(x) for x in wilson_interval(min(max(e * n, 0.0), n), n, ci))
        lo, hi = min(max(lo, 0.0), e), max(min(hi, 1.0), e)  # float noise at k = 0 or n
        rows.append((s, g, e, lo, hi, gen.size, imp.size))
    return pd.DataFrame(rows, columns=["system", "group", "eer", "eer_lo", "eer_hi",
                                       "n_genuine", "n_impostor"])


def system_ranking(pairs: pd.DataFrame, fmr: float = 0.01, group: Any = ALL) -> pd.DataFrame:
    """Systems ordered best first by FNMR at ``fmr`` in ``group`` (``"all"`` = pooled).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` output.
    fmr : float, default 0.01
        Target FMR.
    group : Any, default "all"
        The group, or :data:`ALL` for the pooled pairs.

    Returns
    -------
    pandas.DataFrame
        ``system, fnmr, rank`` (1 = best; ties share the smaller rank; NaN FNMR last,
        without a rank).

    Raises
    ------
    ValueError
        As :func:`fnmr_table`.
    """
    t = _fnmr_table(pairs, [fmr], 10.0, group != ALL)
    t = t[t["group"] == group].sort_values(["fnmr", "system"], kind="stable")
    t["rank"] = t["fnmr"].rank(method="min").astype("Int64")
    return t[["system", "fnmr", "rank"]].reset_index(drop=True)


def world_pairs(world: Any, labels: pd.DataFrame, system: Any = None) -> pd.DataFrame:
    """:func:`genuine_impostor_pairs` of ``labels`` on ``world`` (raw scores, within- and
    cross-query pairs), of one ``system`` only when given.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``
        (:class:`facebias.worlds.rapid.RapidWorld`).
    labels : pandas.DataFrame
        ``query, face, label``.
    system : Any, optional
        Keep only this system's scores.

    Returns
    -------
    pandas.DataFrame
        As :func:`genuine_impostor_pairs`.

    Raises
    ------
    ValueError
        As :func:`genuine_impostor_pairs`.
    """
    s, c = world.scores, world.cross_scores
    if system is not None:
        s, c = s[s["system"] == system], c[c["system"] == system]
    return genuine_impostor_pairs(labels, world.faces, s, c)


def delta_fnmr_by_system(est_pairs: pd.DataFrame, true_pairs: pd.DataFrame,
                         fmr: Sequence[float] = (0.01, 0.001)) -> pd.DataFrame:
    """``|FNMR_est - FNMR_true|`` of the pooled groups (:func:`delta_fnmr`) as a table.

    Parameters
    ----------
    est_pairs, true_pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` of the estimated and of the true labels.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs.

    Returns
    -------
    pandas.DataFrame
        One row per system (sorted), one column per FMR; fractions, NaN where either
        FNMR is undefined.

    Raises
    ------
    ValueError
        As :func:`fnmr_table`.
    """
    d = delta_fnmr(est_pairs, true_pairs, fmr)
    return d.pivot(index="system", columns="fmr", values="delta")


def ranking_agreement(est_pairs: pd.DataFrame, true_pairs: pd.DataFrame, fmr: float = 0.01) -> float:
    """Kendall's tau between the systems' FNMR at ``fmr`` from estimated pairs and from true
    pairs (all groups): 1 when the estimate ranks the systems exactly as the truth does.

    Parameters
    ----------
    est_pairs, true_pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` of the estimated and of the true labels.
    fmr : float, default 0.01
        Target FMR.

    Returns
    -------
    float
        Kendall's tau in [-1, 1] (NaN where an FNMR is undefined).

    Raises
    ------
    ValueError
        If fewer than 2 systems are in both tables, or as :func:`fnmr_table`.
    """
    from scipy.stats import kendalltau

    est = _fnmr_table(est_pairs, [fmr], 10.0, False)
    true = _fnmr_table(true_pairs, [fmr], 10.0, False)
    merged = est.merge(true, on=["system", "fmr"], suffixes=("_est", "_true"))
    if len(merged) < 2:
        raise ValueError(f"ranking_agreement needs at least 2 systems, got {len(merged)}")
    return float(kendalltau(merged["fnmr_est"], merged["fnmr_true"]).statistic)


def eer_comparison(est_pairs: pd.DataFrame, true_pairs: pd.DataFrame) -> pd.DataFrame:
    """EER per system and group from estimated and from true pairs.

    Parameters
    ----------
    est_pairs, true_pairs : pandas.DataFrame
        :func:`genuine_impostor_pairs` of the estimated and of the true labels.

    Returns
    -------
    pandas.DataFrame
        ``system, group`` and the :func:`eer_by_group` columns suffixed ``_est`` /
        ``_true``, and ``delta`` = |EER_est − EER_true| (fractions).

    Raises
    ------
    ValueError
        As :func:`eer_by_group`.
    """
    out = eer_by_group(est_pairs).merge(eer_by_group(true_pairs), on=["system", "group"], suffixes=("_est", "_true"))
    out["delta"] = (out["eer_est"] - out["eer_true"]).abs()
    return out
