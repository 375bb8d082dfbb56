"""Paper 003 (Wu & Bowyer, BA-test): what should be balanced in a face dataset.

Pure functions on pandas/numpy; see ``../shared/notes/seeds_002_003.md`` PART B.

* Selection (B.1): ``BA_FILTERS`` / ``apply_filters`` with per-group accounting.
* Balancing across groups on image factors: ``balance`` (exact strata matching or
  nearest-neighbour matching with a caliper) and ``balance_report`` (SMD, KS).
* Pair-level controls (B.2): ``mask_iou_filter``, ``exclude_facial_hair``.
* Reports: ``dprime_by_group``, ``gender_gap`` (Table 1), ``gap_rel_error_mean`` (the
  gap against a planted truth), ``fmr_at_reference`` (Table 3), ``tpr_at_fmr`` (Table 4).

Conventions: scores are similarities and a pair is a match iff ``score > t``; rates are
fractions; ``label`` is 1 (genuine) / 0 (impostor). Group codes are two letters, race
then gender (``"AF"``, ``"WM"``, ...). Pair tables have columns ``id1, id2, group,
label, score`` (+ optional ``mask_iou``, ``facial_hair1``, ``facial_hair2``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st
from scipy.spatial import cKDTree

from facebias.metrics import (
    _SortedScores,
    check_labels,
    check_rates,
    check_scores,
    d_prime,
    fmr_at,
    require_columns,
    threshold_at_fmr,
)
from facebias.stats import bootstrap_weights, percentile_interval

__all__ = [
    "BA_FILTERS",
    "apply_filters",
    "balance",
    "balance_within",
    "balance_report",
    "mask_iou_filter",
    "exclude_facial_hair",
    "dprime_by_group",
    "gender_gap",
    "gap_rel_error_mean",
    "fmr_at_reference",
    "tpr_at_fmr",
    "TABLE1_PUBLISHED",
    "table1_published",
    "table1_percentages",
]

#: Paper defaults (B.1 steps 4-7). Each filter: ``columns`` it reads, and bounds applied to
#: every column: ``max_abs`` (|x| <= max_abs), ``min`` (x >= min), ``max`` (x <= max), all
#: inclusive; ``None`` = no bound. A filter with no bound set is skipped (its columns are
#: then not needed). Quality filters are off by default; the paper's were FaceQnet > 0.3
#: and MagFace magnitude >= 20 (set ``min`` to use them; bounds here are inclusive).
BA_FILTERS: dict[str, dict[str, Any]] = {
    "pose": {"columns": ("yaw", "pitch", "roll"), "max_abs": 20.0},
    "brightness": {"columns": ("brightness",), "min": 115.86, "max": 198.75},
    "face_area": {"columns": ("face_area",), "min": 0.20},
    "faceqnet": {"columns": ("faceqnet",), "min": None, "max": None},
    "magface": {"columns": ("magface",), "min": None, "max": None},
    "sharpness": {"columns": ("sharpness",), "min": None, "max": None},
    "brisque": {"columns": ("brisque",), "min": None, "max": None},
}

_BOUNDS = ("max_abs", "min", "max")


# --------------------------------------------------------------------------- selection
def apply_filters(
    images: pd.DataFrame,
    filters: Mapping[str, Mapping[str, Any]] | None = None,
    by: str = "group",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Apply ``filters`` in order; return ``(kept rows, accounting)``.

    A row whose value for any column a filter reads is NaN is removed by that filter and
    counted as ``n_unmeasured`` (never dropped silently); a measured row outside the
    bounds counts as ``n_out_of_range``. Removals are attributed sequentially: a row is
    counted by the first filter that removes it. ``accounting`` has one row per (filter,
    group) with ``n_before, n_unmeasured, n_out_of_range, n_after``.
    """
    filters = BA_FILTERS if filters is None else filters
    require_columns(images, [by], "images")
    missing = images[by].isna().to_numpy()
    if missing.any():
        raise ValueError(f"column {by!r}: missing group in row {images.index[missing][0]!r}")
    kept = images
    groups = sorted(images[by].unique())
    rows = []
    for name, spec in filters.items():
        unknown = set(spec) - {"columns", *_BOUNDS}
        if unknown:
            raise ValueError(f"filter {name!r}: unknown keys {sorted(unknown)}")
        bounds = {k: spec.get(k) for k in _BOUNDS}
        if all(v is None for v in bounds.values()):
            continue
        cols = list(spec["columns"])
        require_columns(kept, cols, f"filter {name!r}")
        x = kept[cols].apply(pd.to_numeric, errors="coerce")
        unmeasured = x.isna().any(axis=1).to_numpy()
        ok = np.ones(len(kept), dtype=bool)
        v = x.to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            if bounds["max_abs"] is not None:
                ok &= (np.abs(v) <= bounds["max_abs"]).all(axis=1)
            if bounds["min"] is not None:
                ok &= (v >= bounds["min"]).all(axis=1)
            if bounds["max"] is not None:
                ok &= (v <= bounds["max"]).all(axis=1)
        ok &= ~unmeasured
        g = kept[by].to_numpy()
        for grp in groups:
            in_g = g == grp
            rows.append({
                "filter": name, by: grp, "n_before": int(in_g.sum()),
                "n_unmeasured": int((in_g & unmeasured).sum()),
                "n_out_of_range": int((in_g & ~unmeasured & ~ok).sum()),
                "n_after": int((in_g & ok).sum()),
            })
        kept = kept[ok]
    cols = ["filter", by, "n_before", "n_unmeasured", "n_out_of_range", "n_after"]
    return kept, pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------- balancing
def _factor_matrix(images: pd.DataFrame, factors: Sequence[str]) -> np.ndarray:
    require_columns(images, factors, "images")
    x = images[list(factors)].to_numpy(dtype=np.float64)
    if not np.isfinite(x).all():
        bad = images.index[~np.isfinite(x).all(axis=1)][0]
        raise ValueError(f"factors: missing or non-finite value in row {bad!r}; filter first")
    return x


def balance(
    images: pd.DataFrame,
    factors: Sequence[str],
    by: str = "group",
    method: str = "strata",
    bins: int = 5,
    caliper: float = 0.2,
    seed: int = 0,
) -> pd.DataFrame:
    """A subset of ``images`` whose ``factors`` are distributed alike in every group.

    ``"strata"``: each factor is cut into ``bins`` pooled-quantile bins (a factor with at
    most ``bins`` distinct values, such as a facial-hair flag, is stratified by value); in every joint
    stratum each group keeps ``min over groups`` of the stratum's counts, drawn at random
    (seeded), so the binned joint distribution is identical across groups. Within a bin
    the groups can still differ: for two groups N(140, 15) and N(170, 15) one factor with
    5 bins leaves |SMD| ~ 0.2, 20 bins ~ 0.01 (more factors need fewer bins each).
    ``"nn"``: factors are standardised by their pooled SD; every other group is matched
    to the smallest group (ties: first in sorted order) by greedy nearest-neighbour
    matching without replacement, reference rows in random (seeded) order. A match
    needs Euclidean distance <= ``caliper`` (pooled-SD units); a reference row is kept
    only if it is matched in every group, so all groups end with equal counts. Tolerance:
    every matched row lies within ``caliper`` pooled SDs of its reference row (in the
    N(140, 15) vs N(170, 15) example the default 0.2 leaves |SMD| ~ 0.05).
    Rows keep their original index and order.
    """
    require_columns(images, [by], "images")
    x = _factor_matrix(images, factors)
    g = images[by].to_numpy()
    groups = sorted(pd.unique(g))
    rng = np.random.default_rng(seed)
    keep = np.zeros(len(images), dtype=bool)
    if method == "strata":
        if bins < 1:
            raise ValueError(f"bins: must be >= 1, got {bins}")
        codes = np.zeros(len(images), dtype=np.int64)
        for j in range(x.shape[1]):
            values = np.unique(x[:, j])
            if values.size <= bins:  # discrete factor (e.g. facial hair): one stratum per value
                c = np.searchsorted(values, x[:, j])
            else:
                c = pd.qcut(x[:, j], bins, labels=False, duplicates="drop")
            c = np.asarray(c, dtype=np.int64)
            codes = codes * (int(c.max()) + 1) + c
        for s in np.unique(codes):
            members = [np.flatnonzero((codes == s) & (g == grp)) for grp in groups]
            n = min(m.size for m in members)
            for m in members:
                if n:
                    keep[rng.choice(m, n, replace=False)] = True
    elif method == "nn":
        if caliper <= 0:
            raise ValueError(f"caliper: must be > 0, got {caliper}")
        sd = x.std(axis=0)
        z = (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        sizes = {grp: int((g == grp).sum()) for grp in groups}
        ref = min(groups, key=lambda k: (sizes[k], groups.index(k)))
        ref_rows = np.flatnonzero(g == ref)
        order = rng.permutation(ref_rows.size)
        matched = {}
        ok = np.ones(ref_rows.size, dtype=bool)
        for grp in groups:
            if grp == ref:
                continue
            rows = np.flatnonzero(g == grp)
            match = _greedy_match(z[ref_rows], z[rows], order, caliper)
            ok &= match >= 0
            matched[grp] = (rows, match)
        keep[ref_rows[ok]] = True
        for rows, match in matched.values():
            keep[rows[match[ok]]] = True
    else:
        raise ValueError(f"method: expected 'strata' or 'nn', got {method!r}")
    return images[keep]


def balance_within(
    images: pd.DataFrame, factors: Sequence[str], within: str = "race", by: str = "gender",
    **kwargs: Any,
) -> pd.DataFrame:
    """:func:`balance` across ``by`` separately inside each level of ``within`` (default:
    the two genders of each race, the comparison behind paper 003's Table 1). Keeps far
    more images than balancing all eight groups jointly. ``kwargs`` go to :func:`balance`."""
    require_columns(images, [within, by], "images")
    parts = [balance(sub, factors, by=by, **kwargs)
             for _, sub in images.groupby(within, observed=True, sort=True)]
    if not images.index.is_unique:
        raise ValueError("images: the index must be unique (rows are identified by it)")
    kept = pd.concat(parts).index if parts else images.index[:0]
    return images[images.index.isin(kept)]  # original order


def _greedy_match(
    ref: np.ndarray, pool: np.ndarray, order: np.ndarray, caliper: float
) -> np.ndarray:
    """For each reference row (visited in ``order``) the nearest unused pool row within
    ``caliper``, or -1."""
    match = np.full(ref.shape[0], -1, dtype=np.int64)
    if pool.shape[0] == 0:
        return match
    tree = cKDTree(pool)
    used = np.zeros(pool.shape[0], dtype=bool)
    for i in order:
        k = 8
        while True:
            kk = min(k, pool.shape[0])
            d, j = tree.query(ref[i], k=kk, distance_upper_bound=caliper)
            d, j = np.atleast_1d(d), np.atleast_1d(j)
            valid = np.isfinite(d) & (d <= caliper)
            free = valid & ~used[np.minimum(j, pool.shape[0] - 1)]
            if free.any():
                pick = j[np.argmax(free)]
                used[pick] = True
                match[i] = pick
                break
            if valid.all() and kk < pool.shape[0]:
                k *= 4  # every candidate so far is used: look further
                continue
            break
    return match


def _smd(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or b.size < 2:
        return float("nan")
    spread = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    return float((a.mean() - b.mean()) / spread) if spread > 0 else float("nan")


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0 or b.size == 0:
        return float("nan")
    return float(_st.ks_2samp(a, b).statistic)


def balance_report(
    before: pd.DataFrame,
    after: pd.DataFrame,
    factors: Sequence[str],
    by: str = "group",
    reference: str | None = None,
) -> pd.DataFrame:
    """Per (group, factor): mean, SMD and KS statistic before and after balancing.

    Each group is compared with all other groups pooled, or with ``reference`` when given
    (the reference's own row then has NaN SMD/KS). ``SMD = (m_g - m_rest) /
    sqrt((v_g + v_rest) / 2)`` (sample variances); KS = ``scipy.stats.ks_2samp`` statistic.
    """
    require_columns(before, [by, *factors], "before")
    require_columns(after, [by, *factors], "after")
    groups = sorted(pd.unique(before[by]))
    frames = {tag: (df[by].to_numpy(), {f: df[f].to_numpy(dtype=np.float64) for f in factors})
              for tag, df in (("before", before), ("after", after))}
    rows = []
    for grp in groups:
        for f in factors:
            row: dict[str, Any] = {by: grp, "factor": f}
            for tag, (gg, values) in frames.items():
                v = values[f]
                mine = v[gg == grp]
                other = v[gg != grp] if reference is None else v[gg == reference]
                if reference is not None and grp == reference:
                    other = np.array([])
                row[f"n_{tag}"] = int(mine.size)
                row[f"mean_{tag}"] = float(mine.mean()) if mine.size else float("nan")
                row[f"smd_{tag}"] = _smd(mine, other)
                row[f"ks_{tag}"] = _ks(mine, other)
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- pair controls
def mask_iou_filter(
    pairs: pd.DataFrame, iou_col: str = "mask_iou", threshold: float = 0.9
) -> pd.DataFrame:
    """Pairs whose face-mask IoU is strictly above ``threshold`` (B.2); NaN IoU raises."""
    require_columns(pairs, [iou_col], "pairs")
    iou = pairs[iou_col].to_numpy(dtype=np.float64)
    if np.isnan(iou).any():
        raise ValueError(f"column {iou_col!r}: {int(np.isnan(iou).sum())} missing IoU values")
    return pairs[iou > threshold]


def exclude_facial_hair(
    pairs: pd.DataFrame, col1: str = "facial_hair1", col2: str = "facial_hair2"
) -> pd.DataFrame:
    """Drop pairs where either image has facial hair (NFH, B.2); flags are 0/1 or bool."""
    require_columns(pairs, [col1, col2], "pairs")
    h1 = check_labels(pairs[col1], f"column {col1!r}")
    h2 = check_labels(pairs[col2], f"column {col2!r}")
    return pairs[~(h1 | h2)]


# --------------------------------------------------------------------------- reports
def _scores_labels(pairs: pd.DataFrame, score: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    require_columns(pairs, [score, label], "pairs")
    s = check_scores(pairs[score].to_numpy(), f"column {score!r}", pairs.index)
    return s, check_labels(pairs[label], f"column {label!r}")


def dprime_by_group(
    pairs: pd.DataFrame, score: str = "score", group: str = "group", label: str = "label"
) -> pd.Series:
    """d' of genuine vs impostor scores per group (``metrics.d_prime``)."""
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    g = pairs[group].to_numpy()
    out = {}
    for grp in sorted(pd.unique(g)):
        m = g == grp
        out[grp] = d_prime(s[m & gen], s[m & ~gen])
    return pd.Series(out, name="d_prime").rename_axis(group)


def gender_gap(
    pairs: pd.DataFrame, score: str = "score", group: str = "group", label: str = "label"
) -> pd.DataFrame:
    """Table 1 gender gap per race: ``dprime_genuine`` = d'(female genuine, male genuine)
    and ``dprime_impostor`` likewise, plus the signed mean differences ``gap_genuine`` and
    ``gap_impostor`` (male mean - female mean, score units); group codes are race letter +
    ``F``/``M``."""
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    codes = pairs[group].astype(str)
    if not (codes.str.len() == 2).all() or not codes.str[1].isin(["F", "M"]).all():
        bad = codes[(codes.str.len() != 2) | ~codes.str[1].isin(["F", "M"])].iloc[0]
        raise ValueError(f"column {group!r}: expected race letter + F/M, got {bad!r}")
    race, sex = codes.str[0].to_numpy(), codes.str[1].to_numpy()
    rows = []
    for r in sorted(pd.unique(race)):
        row: dict[str, Any] = {"race": r}
        for kind, lab in (("genuine", gen), ("impostor", ~gen)):
            f = s[(race == r) & (sex == "F") & lab]
            m = s[(race == r) & (sex == "M") & lab]
            both = f.size and m.size
            row[f"dprime_{kind}"] = d_prime(f, m) if both else float("nan")
            row[f"gap_{kind}"] = float(m.mean() - f.mean()) if both else float("nan")
            row[f"n_{kind}_F"], row[f"n_{kind}_M"] = int(f.size), int(m.size)
        rows.append(row)
    return pd.DataFrame(rows).set_index("race")


def gap_rel_error_mean(
    gaps: pd.DataFrame, planted: Mapping[str, float], column: str = "gap_genuine"
) -> dict[Any, float]:
    """How far each evaluation set's mean gender gap is from the planted one, relative.

    ``gaps``: :func:`gender_gap` frames stacked with the set name as the first index level
    (``pd.concat({set: gender_gap(pairs), ...}, names=["set"])``); ``planted``: race ->
    true gap (known-truth world). For each set ``s`` (in order of appearance)::

        |mean_r gaps[s, r][column] - mean(planted)| / |mean(planted)|

    with the mean over the set's races (NaN gaps skipped, pandas ``mean``) and over all
    of ``planted``'s values. 0 means the set's gap is the planted one on average.
    """
    require_columns(gaps, [column], "gaps")
    if not isinstance(gaps.index, pd.MultiIndex):
        raise ValueError("gaps: expected a (set, race) MultiIndex (pd.concat of gender_gap frames)")
    if not planted:
        raise ValueError("planted: no planted gaps")
    truth = np.mean(list(planted.values()))
    if not np.isfinite(truth) or truth == 0:
        raise ValueError(f"planted: the mean planted gap must be finite and non-zero, got {truth}")
    sets = gaps.index.get_level_values(0).unique()
    return {k: float(abs(gaps.loc[k, column].mean() - truth) / abs(truth)) for k in sets}


def fmr_at_reference(
    pairs: pd.DataFrame,
    reference: str = "WM",
    fmr: float = 1e-3,
    score: str = "score",
    group: str = "group",
    label: str = "label",
) -> pd.DataFrame:
    """Table 3: per-group FMR at the threshold where the ``reference`` group's impostor
    FMR is ``<= fmr`` (``metrics.threshold_at_fmr``). Columns ``n_impostor, threshold,
    fmr``, indexed by group."""
    check_rates(fmr, "fmr")
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group], "pairs")
    g = pairs[group].to_numpy()
    ref_imp = s[(g == reference) & ~gen]
    if ref_imp.size == 0:
        raise ValueError(f"reference: group {reference!r} has no impostor pairs")
    t = float(threshold_at_fmr(ref_imp, fmr))
    rows = []
    for grp in sorted(pd.unique(g)):
        imp = s[(g == grp) & ~gen]
        if imp.size:
            rows.append({group: grp, "n_impostor": int(imp.size), "threshold": t,
                         "fmr": float(fmr_at(imp, t))})
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
) -> pd.DataFrame:
    """Table 4: per-group TPR = mean(genuine > t) at one global threshold t set on all
    impostors pooled (FMR <= ``fmr``), with percentile bootstrap intervals.

    The bootstrap resamples identities (``ids``; pairs if ``None``) via
    ``stats.bootstrap_weights``; each replicate re-estimates t from weighted impostor
    counts. Groups without genuine pairs (e.g. cross-group impostors) are not reported.
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

    t_point = imp.threshold(np.array([rate]))
    point, t0 = tpr_at(t_point, None), float(t_point[0])
    out = pd.DataFrame({
        group: groups, "n_genuine": [r.size for r in gen_rows], "threshold": t0, "tpr": point,
    })
    if n_boot:
        if ids is not None:
            require_columns(pairs, list(ids), "pairs")
            id1, id2 = pairs[ids[0]].to_numpy(), pairs[ids[1]].to_numpy()
        else:
            id1 = id2 = None
        reps = np.stack([estimate(w) for w in
                         bootstrap_weights(len(pairs), n_boot, seed, id1=id1, id2=id2)])
        out["tpr_lo"], out["tpr_hi"] = percentile_interval(reps, ci)
    return out.set_index(group)


# --------------------------------------------------------------------------- Table 1 text
_RACES = ("Asian", "Black", "Indian", "White")
#: Paper Table 1 as transcribed in B.5: (condition, kind, matcher) -> values per race.
TABLE1_PUBLISHED: dict[tuple[str, str, str], tuple[float, float, float, float]] = {
    ("original", "genuine", "ArcFace"): (0.5336, 0.3146, 0.5094, 0.4115),
    ("original", "genuine", "MagFace"): (0.5008, 0.3393, 0.5030, 0.4164),
    ("balanced", "genuine", "ArcFace"): (0.2678, 0.2447, 0.5028, 0.2840),
    ("balanced", "genuine", "MagFace"): (0.2980, 0.2824, 0.5127, 0.2856),
    ("balanced_nfh", "genuine", "ArcFace"): (0.3901, 0.6813, 0.8819, 0.3719),
    ("balanced_nfh", "genuine", "MagFace"): (0.4028, 0.7288, 0.8901, 0.4095),
    ("original", "impostor", "ArcFace"): (0.0211, 0.1511, 0.0745, 0.0241),
    ("original", "impostor", "MagFace"): (0.0125, 0.0917, 0.0981, 0.0420),
    ("balanced", "impostor", "ArcFace"): (0.0150, 0.1262, 0.1790, 0.0398),
    ("balanced", "impostor", "MagFace"): (0.0528, 0.0505, 0.2455, 0.0847),
    ("balanced_nfh", "impostor", "ArcFace"): (0.0040, 0.0377, 0.2491, 0.0732),
    ("balanced_nfh", "impostor", "MagFace"): (0.0448, 0.0733, 0.3040, 0.1156),
}


def table1_published() -> pd.DataFrame:
    """``TABLE1_PUBLISHED`` as a frame: index (condition, kind, matcher), columns races."""
    idx = pd.MultiIndex.from_tuples(list(TABLE1_PUBLISHED), names=["condition", "kind", "matcher"])
    return pd.DataFrame(list(TABLE1_PUBLISHED.values()), index=idx, columns=list(_RACES))


def table1_percentages(table: pd.DataFrame, baseline: str = "original") -> pd.DataFrame:
    """Percent change of each condition vs ``baseline`` in a Table 1 frame (B.5).

    ``table``: index (condition, kind, matcher), one column per race (``table1_published``
    layout). One row per (kind, condition != baseline, race) with ``rom_pct`` = 100 (ratio
    of the two-matcher means - 1), ``mor_pct`` = 100 (mean of per-matcher ratios - 1) and
    ``pct_<matcher>`` per matcher; race ``"all"`` pools every race and matcher (RoM over
    all values, the paper's "average" convention). The paper mixes RoM and MoR.
    """
    if list(table.index.names) != ["condition", "kind", "matcher"]:
        raise ValueError("table: index must be (condition, kind, matcher)")
    rows = []
    for kind in table.index.unique("kind"):
        base = table.xs((baseline, kind), level=("condition", "kind"))
        for cond in table.index.unique("condition"):
            if cond == baseline or (cond, kind) not in table.index.droplevel("matcher"):
                continue
            cur = table.xs((cond, kind), level=("condition", "kind")).loc[base.index]
            for race in list(table.columns) + ["all"]:
                b = base.to_numpy().ravel() if race == "all" else base[race].to_numpy()
                c = cur.to_numpy().ravel() if race == "all" else cur[race].to_numpy()
                row: dict[str, Any] = {"kind": kind, "condition": cond, "race": race,
                                       "rom_pct": 100 * (c.mean() / b.mean() - 1)}
                row["mor_pct"] = 100 * (np.mean(c / b) - 1) if race != "all" else float("nan")
                if race != "all":
                    for m, pct in zip(base.index, 100 * (c / b - 1), strict=True):
                        row[f"pct_{m}"] = pct
                rows.append(row)
    return pd.DataFrame(rows)
