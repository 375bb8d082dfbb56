"""Paper 003 verification rates: d' per group (``docs/specs/batest.md`` B.2), Table 3
(section 4.1: every group's FMR at the White-male threshold, :func:`fmr_at_reference`,
:func:`fmr_at_reference_table`) and Table 4 (section 4.2: TPR per group at FMR = 1e-5 on
the challenging subset, :func:`tpr_at_fmr` with an identity bootstrap,
:func:`challenging_subset`).

Rates from fewer than 10 / FMR impostors are NaN, labelled "too few impostors".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import (
    TOO_FEW_IMPOSTORS,
    check_labels,
    check_rates,
    check_scores,
    d_prime,
    enough_impostors,
    fmr_at,
    threshold_at_fmr,
)
from facebias.metrics.weighted import _SortedScores
from facebias.stats import (
    bootstrap_weights,
    identity_bootstrap,
    percentile_interval,
    percentile_mc_error,
)
from facebias.validate import require_columns

__all__ = ["dprime_by_group", "fmr_at_reference", "fmr_at_reference_table", "tpr_at_fmr",
           "challenging_subset"]


def _scores_labels(pairs: pd.DataFrame, score: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    require_columns(pairs, [score, label], "pairs")
    s = check_scores(pairs[score].to_numpy(), f"column {score!r}", pairs.index)
    return s, check_labels(pairs[label], f"column {label!r}")


def dprime_by_group(
    pairs: pd.DataFrame, score: str = "score", group: str = "group", label: str = "label"
) -> pd.Series:
    """d' of genuine vs impostor scores per group (``metrics.d_prime``).

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with score (similarity), group and label (1 genuine, 0 impostor).
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.Series
        d' per group (sorted), named ``d_prime``; larger = genuine and impostor scores
        further apart.

    Raises
    ------
    ValueError
        For a missing column, a non-finite score or a label that is not 0/1.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> dprime_by_group(pairs).round(2).to_dict()
    {'AF': 5.83, 'AM': 5.0}
    """
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    g = pairs[group].to_numpy()
    out = {}
    for grp in sorted(pd.unique(g)):
        m = g == grp
        out[grp] = d_prime(s[m & gen], s[m & ~gen])
    return pd.Series(out, name="d_prime").rename_axis(group)


def fmr_at_reference_table(
    pair_sets: Mapping[str, pd.DataFrame], reference: str = "WM", fmrs: Sequence[float] = (1e-3, 1e-4),
    **kwargs: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 over evaluation sets: :func:`fmr_at_reference` of every set at every FMR.

    Parameters
    ----------
    pair_sets : mapping
        Set name -> pair table (within-group pairs; all impostors, as the paper).
    reference : str, default "WM"
        Group whose impostors set each set's threshold.
    fmrs : sequence of float
        Target FMRs of the reference group.
    **kwargs
        Passed to :func:`fmr_at_reference` (column names, ``min_impostor_factor``).

    Returns
    -------
    fmr, note : pandas.DataFrame
        Indexed by group, columns (set, FMR): the FMR at the reference threshold (NaN when
        too few impostors) and its note ("" or "too few impostors").

    Raises
    ------
    ValueError
        As :func:`fmr_at_reference`, or for no sets.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> fmr, note = fmr_at_reference_table({"all": pairs}, "AM", [0.5], min_impostor_factor=1)
    >>> fmr[("all", 0.5)].tolist()
    [1.0, 0.5]
    """
    if not pair_sets:
        raise ValueError("pair_sets: no evaluation sets")
    tables = {(k, f): fmr_at_reference(p, reference, f, **kwargs) for k, p in pair_sets.items() for f in fmrs}
    fmr = pd.DataFrame({key: t["fmr"] for key, t in tables.items()})
    note = pd.DataFrame({key: t["note"] for key, t in tables.items()})
    return fmr, note


def fmr_at_reference(
    pairs: pd.DataFrame,
    reference: str = "WM",
    fmr: float = 1e-3,
    score: str = "score",
    group: str = "group",
    label: str = "label",
    min_impostor_factor: float = 10.0,
) -> pd.DataFrame:
    """Table 3: per-group FMR at the threshold where the ``reference`` group's impostor
    FMR is ``<= fmr`` (``metrics.threshold_at_fmr``). Columns ``n_impostor, threshold,
    fmr, note``, indexed by group.

    A rate computed from fewer than ``min_impostor_factor / fmr`` impostors
    (:func:`facebias.metrics.enough_impostors`) is NaN with ``note`` "too few impostors",
    never 0: every group's when the reference group has too few (the threshold is NaN
    too), else that group's own.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with score (similarity; match iff score > t), group and label.
    reference : str, default "WM"
        Group whose impostors set the threshold.
    fmr : float, default 1e-3
        Target FMR of the reference group, a fraction in (0, 1).
    score, group, label : str
        Column names.
    min_impostor_factor : float, default 10.0
        Least impostors, times ``1 / fmr``, of the reference group and of each group.

    Returns
    -------
    pandas.DataFrame
        Indexed by group (those with impostor pairs): ``n_impostor``, ``threshold`` (the
        same for every row), ``fmr`` (fraction of the group's impostors > threshold) and
        ``note`` ("" or "too few impostors").

    Raises
    ------
    ValueError
        For a bad ``fmr``, score, label or column, or a reference group without
        impostor pairs.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> fmr_at_reference(pairs, reference="AM", fmr=0.5, min_impostor_factor=1)
           n_impostor  threshold  fmr note
    group
    AF              2        0.2  1.0
    AM              2        0.2  0.5
    >>> fmr_at_reference(pairs, reference="AM", fmr=0.5)["note"].tolist()  # 2 < 10 / 0.5
    ['too few impostors', 'too few impostors']
    """
    check_rates(fmr, "fmr")
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    g = pairs[group].to_numpy()
    ref_imp = s[(g == reference) & ~gen]
    if ref_imp.size == 0:
        raise ValueError(f"reference: group {reference!r} has no impostor pairs")
    ref_ok = enough_impostors(ref_imp.size, fmr, min_impostor_factor)
    t = float(threshold_at_fmr(ref_imp, fmr)) if ref_ok else np.nan
    rows = []
    for grp in sorted(pd.unique(g)):
        imp = s[(g == grp) & ~gen]
        if imp.size:
            ok = ref_ok and enough_impostors(imp.size, fmr, min_impostor_factor)
            rows.append({group: grp, "n_impostor": int(imp.size), "threshold": t,
                         "fmr": float(fmr_at(imp, t)) if ok else np.nan,
                         "note": "" if ok else TOO_FEW_IMPOSTORS})
    return pd.DataFrame(rows).set_index(group)


def tpr_at_fmr(
    pairs: pd.DataFrame,
    fmr: float = 1e-5,
    n_boot: int = 200,
    seed: int = 0,
    ids: tuple[str, str] | None = ("id1", "id2"),
    ci: float = 0.95,
    score: str = "score",
    group: str = "group",
    label: str = "label",
    min_impostor_factor: float = 10.0,
) -> pd.DataFrame:
    """Table 4: per-group TPR = mean(genuine > t) at one global threshold t set on all
    impostors pooled (FMR <= ``fmr``), with percentile bootstrap intervals.

    With fewer than ``min_impostor_factor / fmr`` pooled impostors
    (:func:`facebias.metrics.enough_impostors`) the threshold, every TPR and interval are
    NaN and ``note`` is "too few impostors", never a rate of 0 or 1.

    The bootstrap resamples identities (``ids``; pairs if ``None``) via
    ``stats.bootstrap_weights``; each replicate re-estimates t from weighted impostor
    counts. Groups without genuine pairs (e.g. cross-group impostors) are not reported.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with score (similarity; match iff score > t), group, label and,
        for the identity bootstrap, the ``ids`` columns.
    fmr : float, default 1e-5
        Target pooled FMR, a fraction in (0, 1).
    n_boot : int, default 200
        Bootstrap replicates (0 = no interval).
    seed : int, default 0
        Bootstrap seed.
    ids : tuple of str or None, default ("id1", "id2")
        Identity columns resampled by the bootstrap; ``None`` resamples pairs.
    ci : float, default 0.95
        Coverage of the percentile interval.
    score, group, label : str
        Column names.
    min_impostor_factor : float, default 10.0
        Least pooled impostors, times ``1 / fmr``.

    Returns
    -------
    pandas.DataFrame
        Indexed by group: ``n_genuine``, ``threshold``, ``tpr`` (a fraction), ``note``
        ("" or "too few impostors") and, with ``n_boot > 0``, ``tpr_lo`` and ``tpr_hi`` with
        their Monte Carlo errors ``tpr_lo_mcse``, ``tpr_hi_mcse`` (:func:`percentile_mc_error`).

    Raises
    ------
    ValueError
        For a bad ``fmr``, score, label or column, or no impostor pairs.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> tpr_at_fmr(pairs, fmr=0.5, n_boot=0, min_impostor_factor=1)
           n_genuine  threshold  tpr note
    group
    AF             2       0.25  1.0
    AM             2       0.25  1.0
    >>> tpr_at_fmr(pairs, fmr=0.5, n_boot=0)["tpr"].tolist()  # 4 impostors < 10 / 0.5
    [nan, nan]
    """
    rate = float(check_rates(fmr, "fmr")[0][0])
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    if not (~gen).any():
        raise ValueError(f"column {label!r}: no impostor pairs")
    g = pairs[group].to_numpy()
    imp_order = np.flatnonzero(~gen)[np.argsort(s[~gen], kind="stable")]
    imp = _SortedScores(s[imp_order])
    groups = [grp for grp in sorted(pd.unique(g)) if (gen & (g == grp)).any()]
    gen_rows = [np.flatnonzero(gen & (g == grp)) for grp in groups]
    gen_rows = [r[np.argsort(s[r], kind="stable")] for r in gen_rows]
    gen_sets = [_SortedScores(s[r]) for r in gen_rows]

    def tpr_at(t: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        return np.array([
            gs.fraction_above(t, gs.weigh(None if w is None else w[r]))[0]
            for gs, r in zip(gen_sets, gen_rows, strict=True)
        ])

    def estimate(w: np.ndarray) -> np.ndarray:
        return tpr_at(imp.threshold(np.array([rate]), imp.weigh(w[imp_order])), w)

    ok = enough_impostors(int((~gen).sum()), rate, min_impostor_factor)
    t_point = imp.threshold(np.array([rate]))
    point, t0 = tpr_at(t_point, None), float(t_point[0])
    if not ok:
        point, t0 = np.full(len(groups), np.nan), np.nan
    out = pd.DataFrame({
        group: groups, "n_genuine": [r.size for r in gen_rows], "threshold": t0, "tpr": point,
        "note": "" if ok else TOO_FEW_IMPOSTORS,
    })
    if n_boot and not ok:
        out["tpr_lo"] = out["tpr_hi"] = out["tpr_lo_mcse"] = out["tpr_hi_mcse"] = np.nan
    elif n_boot:
        if ids is None:
            reps = np.stack([estimate(w) for w in bootstrap_weights(len(pairs), n_boot, seed)])
        else:
            require_columns(pairs, list(ids), "pairs")
            reps = _identity_bootstrap_tpr(imp, imp_order, gen_sets, gen_rows, rate, n_boot, seed,
                                           pairs[ids[0]].to_numpy(), pairs[ids[1]].to_numpy())
        out["tpr_lo"], out["tpr_hi"] = percentile_interval(reps, ci)
        out["tpr_lo_mcse"], out["tpr_hi_mcse"] = percentile_mc_error(reps, ci)
    return out.set_index(group)


def _top_weights(m: np.ndarray, ia: np.ndarray, ib: np.ndarray, k: int) -> np.ndarray:
    """The weights ``m[ia] * m[ib]`` of the last ``k`` rows."""
    return m[ia[ia.size - k:]] * m[ib[ib.size - k:]]


def _identity_bootstrap_tpr(imp: _SortedScores, imp_order: np.ndarray, gen_sets: list[_SortedScores],
                            gen_rows: list[np.ndarray], rate: float, n_boot: int, seed: int,
                            id1: np.ndarray, id2: np.ndarray) -> np.ndarray:
    """:func:`tpr_at_fmr`'s identity-bootstrap replicates, (n_boot, groups), equal bit for bit
    to weighting every pair by ``stats.bootstrap_weights``: a replicate needs the impostors'
    total weight (summed over distinct identity pairs, each weight times its number of
    pairs: exact integers) and the weights of the top impostor scores only
    (``_SortedScores.threshold_from_top``), not a weight per pair of millions."""
    ca, cb, draws = identity_bootstrap(len(id1), n_boot, seed, id1, id2)
    ia, ib = ca[imp_order], cb[imp_order]
    base = int(max(ca.max(), cb.max())) + 1
    keys, counts = np.unique(ia.astype(np.int64) * base + ib, return_counts=True)
    pa, pb = np.divmod(keys, base)
    fmr = np.array([rate])
    gen_codes = [(ca[r], cb[r]) for r in gen_rows]
    reps = []
    for m in draws:
        total = float(np.sum(counts * (m[pa] * m[pb])))
        t = imp.threshold_from_top(fmr, total, partial(_top_weights, m, ia, ib))
        reps.append([gs.fraction_above(t, gs.weigh(m[a] * m[b]))[0]
                     for gs, (a, b) in zip(gen_sets, gen_codes, strict=True)])
    return np.array(reps, dtype=np.float64).reshape(n_boot, len(gen_sets))


def challenging_subset(
    images: pd.DataFrame,
    quality: Sequence[str] = ("quality",),
    n_subjects: int = 90,
    n_images: int = 5,
    seed: int = 0,
    allow_fewer: bool = False,
    identity: str = "identity",
    group: str = "group",
) -> pd.DataFrame:
    """Paper 003 section 5, the challenging subset: each ``quality`` column is min-max
    normalised to [0, 1] over all ``images``, the columns are averaged (``docs/specs/batest.md`` B.6 item 10:
    the mean ranks like the paper's sum), and per group ``n_subjects`` random identities
    with ``n_images`` random images each are drawn among the images strictly below that
    group's median aggregated quality (paper: 90 subjects x 5 images per group).

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``identity``, ``group`` and the ``quality`` columns
        (higher = better, finite).
    quality : sequence of str, default ("quality",)
        Quality columns (the paper's FaceQnet and MagFace).
    n_subjects, n_images : int, default 90, 5
        Identities per group and images per identity.
    seed : int, default 0
        Seeds the draw.
    allow_fewer : bool, default False
        Take every eligible identity of a group that has fewer than ``n_subjects`` (else
        raise).
    identity, group : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        The chosen rows (original index) with ``quality_norm`` (the aggregated normalised
        quality) and ``quality_median`` (its group median) added.

    Raises
    ------
    ValueError
        For a missing or non-finite quality column, sizes below 1, or (unless
        ``allow_fewer``) a group with fewer than ``n_subjects`` identities having
        ``n_images`` images below the median.

    Examples
    --------
    >>> imgs = pd.DataFrame({"group": "AF", "identity": np.repeat([0, 1, 2], 4),
    ...                      "quality": [1, 2, 9, 9, 1, 9, 9, 9, 1, 2, 3, 9.0]})
    >>> sorted(challenging_subset(imgs, n_subjects=2, n_images=2)["identity"])  # median 6: id 1 has 1 below
    [0, 0, 2, 2]
    """
    require_columns(images, [identity, group, *quality], "images")
    if n_subjects < 1 or n_images < 1:
        raise ValueError(f"need n_subjects >= 1 and n_images >= 1, got {n_subjects}, {n_images}")
    q = np.column_stack([check_scores(images[c], c) for c in quality]).astype(np.float64)
    span = q.max(axis=0) - q.min(axis=0)
    qn = ((q - q.min(axis=0)) / np.where(span > 0, span, 1.0)).mean(axis=1)
    out = images.assign(quality_norm=qn)
    out["quality_median"] = out.groupby(out[group].astype(str))["quality_norm"].transform("median")
    rng = np.random.default_rng(seed)
    keep = []
    for g in sorted(pd.unique(out[group].astype(str))):
        poor = out[(out[group].astype(str) == g) & (out["quality_norm"] < out["quality_median"])]
        sizes = poor.groupby(identity, sort=True).size()
        ok = sizes.index[sizes >= n_images].to_numpy()
        if ok.size < n_subjects and not allow_fewer:
            raise ValueError(f"group {g!r}: {ok.size} identities have >= {n_images} images below "
                             f"the median quality, need {n_subjects}")
        for i in rng.choice(ok, min(n_subjects, ok.size), replace=False):
            rows = poor.index[poor[identity].to_numpy() == i].to_numpy()
            keep.append(rng.choice(rows, n_images, replace=False))
    return out.loc[np.concatenate(keep) if keep else []]
