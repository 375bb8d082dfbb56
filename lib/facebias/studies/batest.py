"""Paper 003 (Wu & Bowyer, BA-test): what should be balanced in a face dataset.

Pure functions on pandas/numpy; see ``../shared/notes/seeds_002_003.md`` PART B.

* Settings: ``BATestConfig`` (``params.yaml`` section ``batest``; unknown or mistyped
  keys raise).
* Selection (B.1): ``BA_FILTERS`` / ``apply_filters`` with per-group accounting.
* Balancing across groups on image factors: ``balance`` (exact strata matching or
  nearest-neighbour matching with a caliper) and ``balance_report`` (SMD, KS).
* Pair-level controls (B.2): ``mask_iou_filter``, ``exclude_facial_hair``.
* Reports: ``dprime_by_group``, ``gender_gap`` (Table 1; ``gender_gaps`` for several
  evaluation sets), ``gap_rel_error_mean`` (the gap against a planted truth),
  ``fmr_at_reference`` (Table 3), ``tpr_at_fmr`` (Table 4); rates from fewer than
  10 / FMR impostors are NaN, labelled "too few impostors".
* Identity-noise cleaning (Fig. 6a): ``identity_outliers`` (per-identity DBSCAN).
* Identity count vs accuracy (Fig. 9, section 3.2): ``identity_count_experiment``
  (``identity_count_subset``, ``dprime_identity_bootstrap``, ``score_ks``).
* The challenging subset (section 5): ``challenging_subset``.
* Face-area mask heatmaps (Fig. 16): ``mask_heatmap``.
* Metrics: ``summarise`` builds what ``reports/metrics/batest.json`` and
  ``batest_details.json`` hold (notebooks/ba_test.py).

Conventions: scores are similarities and a pair is a match iff ``score > t``; rates are
fractions; ``label`` is 1 (genuine) / 0 (impostor). Group codes are two letters, race
then gender (``"AF"``, ``"WM"``, ...). Pair tables have columns ``id1, id2, group,
label, score`` (+ optional ``mask_iou``, ``facial_hair1``, ``facial_hair2``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats as _st
from scipy.spatial import cKDTree

from facebias.io import config_from_params, param_float, param_int, param_list, param_str
from facebias.metrics import (
    TOO_FEW_IMPOSTORS,
    _SortedScores,
    check_labels,
    check_rates,
    check_scores,
    d_prime,
    enough_impostors,
    fmr_at,
    threshold_at_fmr,
)
from facebias.stats import (
    bootstrap_weights,
    identity_bootstrap,
    percentile_interval,
    percentile_mc_error,
)
from facebias.validate import require_columns

if TYPE_CHECKING:
    from facebias.worlds.batest import BAWorldConfig

__all__ = [
    "BA_FILTERS",
    "BATestConfig",
    "check_filters",
    "apply_filters",
    "passes_filters",
    "balance",
    "balance_within",
    "balance_report",
    "mask_iou_filter",
    "exclude_facial_hair",
    "table1_pair_sets",
    "images_in_pairs",
    "pairs_among",
    "face_area_by_gender",
    "fmr_at_reference_table",
    "table1_measured",
    "dprime_by_group",
    "gender_gap",
    "gender_gaps",
    "gap_rel_error_mean",
    "fmr_at_reference",
    "tpr_at_fmr",
    "identity_outliers",
    "IDENTITY_COUNT_DESIGNS",
    "identity_count_subset",
    "dprime_identity_bootstrap",
    "score_ks",
    "identity_count_experiment",
    "challenging_subset",
    "mask_heatmap",
    "TABLE1_PUBLISHED",
    "table1_published",
    "table1_percentages",
    "summarise",
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


def check_filters(filters: Any, name: str = "filters") -> dict[str, dict[str, Any]]:
    """``filters`` (the :data:`BA_FILTERS` layout) checked and copied: each a mapping with
    ``columns`` (a non-empty list of column names) and optional bounds ``max_abs``, ``min``,
    ``max`` (a number or ``None``), returned as ``columns`` tuple and float bounds. An
    unknown key or a mistyped value raises ``ValueError`` naming ``name.<filter>``.

    Parameters
    ----------
    filters : mapping
        Filter name -> spec (``columns`` and optional ``max_abs``, ``min``, ``max``).
    name : str, default "filters"
        Prefix of error messages (``batest.filters`` for the config).

    Returns
    -------
    dict
        Filter name -> ``{"columns": tuple of str, <bound>: float or None, ...}``, in the
        order of ``filters``.

    Raises
    ------
    ValueError
        If ``filters`` or a spec is not a mapping, a spec has an unknown key or no
        ``columns``, or a bound is not a number or ``None``.

    Examples
    --------
    >>> check_filters({"pose": {"columns": ["yaw"], "max_abs": 20}})
    {'pose': {'columns': ('yaw',), 'max_abs': 20.0}}
    """
    if not isinstance(filters, Mapping):
        raise ValueError(f"{name} must be a mapping of filter name -> spec, got {filters!r}")
    out: dict[str, dict[str, Any]] = {}
    for fname, spec in filters.items():
        where = f"{name}.{fname}"
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be a mapping with columns and bounds, got {spec!r}")
        unknown = sorted(set(spec) - {"columns", *_BOUNDS}, key=str)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; known keys are {['columns', *_BOUNDS]}")
        if "columns" not in spec:
            raise ValueError(f"{where}: no 'columns' (the columns the filter reads)")
        out[fname] = {"columns": param_list(spec["columns"], f"{where}.columns", param_str)}
        for b in _BOUNDS:
            if b in spec:
                v = spec[b]
                out[fname][b] = None if v is None else param_float(v, f"{where}.{b}")
    return out


@dataclass(frozen=True)
class BATestConfig:
    """Settings of the balancing study (``params.yaml`` section ``batest``; its world is
    ``batest_world``, :class:`facebias.worlds.batest.BAWorldConfig`). Defaults: the committed study.

    Selection: ``filters`` (:func:`check_filters`; degrees, face-skin gray 0-255, fraction
    of the crop). Table 1 (the paper's method): pairs with face-mask IoU >
    ``iou_threshold`` (:func:`table1_pair_sets`). Extension (ours, labelled so): image-level
    matching of the genders within each race on ``balance_on`` with ``method``
    ``"strata"`` | ``"nn"``, ``bins`` (strata: pooled-quantile bins per factor), ``caliper``
    (nn: pooled SD units); see :func:`balance`. Table 3: ``reference_group`` and
    ``reference_fmr`` (:func:`fmr_at_reference`) on ``table3_identities`` identities per
    group with all their within-group impostors. Table 4: ``tpr_fmr`` (:func:`tpr_at_fmr`,
    one threshold over all impostors of the challenging subset of ``table4_subjects``
    subjects x ``table4_images`` images per group; the paper's 90 x 5). ``impostors_per_genuine``
    (impostor pairs drawn per genuine pair for d'), ``n_boot`` (identity-bootstrap
    replicates, 0 = none), ``seed`` (balancing, pair drawing and bootstrap). Seed sweep
    (:func:`facebias.studies.seeds.batest_seed_tables`): Table 1 on ``world_seeds`` world
    seeds, Tables 3 and 4 (each seed builds about 17 million all-pairs scores, about a minute)
    on ``world_seeds_tables34``, both from ``batest_world.seed`` on. Rates are fractions in
    (0, 1).
    """

    filters: dict[str, dict[str, Any]] = field(default_factory=lambda: {
        "pose": {"columns": ("yaw", "pitch", "roll"), "max_abs": 20.0},
        "brightness": {"columns": ("brightness",), "min": 115.86, "max": 198.75},
        "face_area": {"columns": ("face_area",), "min": 0.20}})
    balance_on: tuple[str, ...] = ("face_area", "quality")
    method: str = "strata"
    bins: int = 4
    caliper: float = 0.2
    reference_group: str = "WM"
    reference_fmr: tuple[float, ...] = (0.001, 0.0001)
    tpr_fmr: float = 1e-5
    table4_subjects: int = 90
    table4_images: int = 5
    iou_threshold: float = 0.9
    table3_identities: int = 100
    impostors_per_genuine: float = 2.0
    n_boot: int = 200
    seed: int = 11
    world_seeds: int = 10
    world_seeds_tables34: int = 3

    def __post_init__(self) -> None:
        rate = partial(param_float, low=0.0, high=1.0, open_low=True, open_high=True)
        typed = {
            "filters": check_filters(self.filters, "batest.filters"),
            "balance_on": param_list(self.balance_on, "batest.balance_on", param_str),
            "method": param_str(self.method, "batest.method", ("strata", "nn")),
            "bins": param_int(self.bins, "batest.bins", 1),
            "caliper": param_float(self.caliper, "batest.caliper", 0.0, open_low=True),
            "reference_group": param_str(self.reference_group, "batest.reference_group"),
            "reference_fmr": param_list(self.reference_fmr, "batest.reference_fmr", rate),
            "tpr_fmr": rate(self.tpr_fmr, "batest.tpr_fmr"),
            "table4_subjects": param_int(self.table4_subjects, "batest.table4_subjects", 2),
            "table4_images": param_int(self.table4_images, "batest.table4_images", 2),
            "iou_threshold": param_float(self.iou_threshold, "batest.iou_threshold", 0.0, 1.0, open_high=True),
            "table3_identities": param_int(self.table3_identities, "batest.table3_identities", 2),
            "impostors_per_genuine": param_float(self.impostors_per_genuine, "batest.impostors_per_genuine",
                                                 0.0, open_low=True),
            "n_boot": param_int(self.n_boot, "batest.n_boot", 0),
            "seed": param_int(self.seed, "batest.seed", 0),
            "world_seeds": param_int(self.world_seeds, "batest.world_seeds", 1),
            "world_seeds_tables34": param_int(self.world_seeds_tables34, "batest.world_seeds_tables34", 1),
        }
        for key, value in typed.items():
            object.__setattr__(self, key, value)

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> BATestConfig:
        """Build from the ``params.yaml`` ``batest`` section (missing keys: defaults).

        Parameters
        ----------
        d : mapping
            The section's keys and values.

        Returns
        -------
        BATestConfig
            The checked settings.

        Raises
        ------
        ValueError
            For an unknown key or a mistyped or out-of-range value.

        Examples
        --------
        >>> cfg = BATestConfig.from_params({"bins": 5})
        >>> cfg.bins, cfg.method
        (5, 'strata')
        """
        return config_from_params(cls, dict(d), "batest")


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

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with the ``by`` column and every column an active filter reads.
    filters : mapping, optional
        :data:`BA_FILTERS` layout (:func:`check_filters`); default :data:`BA_FILTERS`.
        Filters with no bound set are skipped.
    by : str, default "group"
        Column whose levels the accounting is broken down by.

    Returns
    -------
    kept : pandas.DataFrame
        The rows of ``images`` that pass every filter (original index and order).
    accounting : pandas.DataFrame
        Columns ``filter, <by>, n_before, n_unmeasured, n_out_of_range, n_after``.

    Raises
    ------
    ValueError
        For a bad filter spec, a missing column, or a missing value in ``by``.

    Examples
    --------
    >>> images = pd.DataFrame({"group": ["AF", "AF", "AM"], "yaw": [5.0, 30.0, np.nan]})
    >>> kept, acc = apply_filters(images, {"pose": {"columns": ["yaw"], "max_abs": 20}})
    >>> kept.index.tolist()
    [0]
    >>> acc[["group", "n_unmeasured", "n_out_of_range", "n_after"]].to_numpy().tolist()
    [['AF', 0, 1, 1], ['AM', 1, 0, 0]]
    """
    filters = check_filters(BA_FILTERS if filters is None else filters)
    require_columns(images, [by], "images")
    missing = images[by].isna().to_numpy()
    if missing.any():
        raise ValueError(f"column {by!r}: missing group in row {images.index[missing][0]!r}")
    kept = images
    groups = sorted(images[by].unique())
    rows = []
    for name, spec in filters.items():
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

def passes_filters(images: pd.DataFrame, filters: Mapping[str, Mapping[str, Any]] | None = None,
                   id_col: str = "id") -> pd.Series:
    """Per row of ``images``: does it survive every filter of :func:`apply_filters` (a row
    with an unmeasured value a filter reads does not)? Rows are matched by ``id_col``.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``id_col``, ``group`` and the filtered columns.
    filters : mapping, optional
        As in :func:`apply_filters` (default :data:`BA_FILTERS`).
    id_col : str, default "id"
        Column identifying an image.

    Returns
    -------
    pandas.Series
        Bool per row of ``images`` (same index), named ``passes_filters``.

    Raises
    ------
    ValueError
        As :func:`apply_filters`.

    Examples
    --------
    >>> images = pd.DataFrame({"id": ["a", "b", "c"], "group": ["AF", "AF", "AM"],
    ...                        "yaw": [5.0, 30.0, np.nan]})
    >>> passes_filters(images, {"pose": {"columns": ["yaw"], "max_abs": 20}}).tolist()
    [True, False, False]
    """
    kept, _ = apply_filters(images, filters)
    return images[id_col].isin(kept[id_col]).rename("passes_filters")


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

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with the ``by`` column and the ``factors`` (finite numbers).
    factors : sequence of str
        Columns to balance on.
    by : str, default "group"
        Column of the groups to make alike.
    method : {"strata", "nn"}, default "strata"
        Exact strata matching or nearest-neighbour matching.
    bins : int, default 5
        Strata: pooled-quantile bins per factor (>= 1).
    caliper : float, default 0.2
        NN: largest match distance, in pooled-SD units (> 0).
    seed : int, default 0
        Seed of the random draws (which rows a stratum keeps; NN visiting order).

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``images``.

    Raises
    ------
    ValueError
        For a missing column, a missing or non-finite factor value, an unknown
        ``method``, ``bins < 1`` or ``caliper <= 0``.

    Examples
    --------
    >>> images = pd.DataFrame({"group": ["F"] * 4 + ["M"] * 2, "x": [1.0, 2, 3, 4, 3, 4]})
    >>> balance(images, ["x"], bins=2).index.tolist()  # F's rows 0-1 have no M counterpart
    [2, 3, 4, 5]
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
    more images than balancing all eight groups jointly. ``kwargs`` go to :func:`balance`.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image (unique index) with ``within``, ``by`` and the ``factors``.
    factors : sequence of str
        Columns to balance on.
    within : str, default "race"
        Column whose levels are balanced separately.
    by : str, default "gender"
        Column of the groups made alike inside each level of ``within``.
    **kwargs
        ``method``, ``bins``, ``caliper``, ``seed`` of :func:`balance`.

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``images``, in their original order.

    Raises
    ------
    ValueError
        For a missing column, a non-unique index, or as :func:`balance`.

    Examples
    --------
    >>> images = pd.DataFrame({"race": ["A"] * 6, "gender": ["F"] * 4 + ["M"] * 2,
    ...                        "x": [1.0, 2, 3, 4, 3, 4]})
    >>> balance_within(images, ["x"], bins=2).index.tolist()
    [2, 3, 4, 5]
    """
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

    Parameters
    ----------
    before, after : pandas.DataFrame
        Images before and after balancing, with ``by`` and the ``factors``.
    factors : sequence of str
        Columns to compare.
    by : str, default "group"
        Group column; the groups are those of ``before``.
    reference : str, optional
        Group every group is compared with (default: all other groups pooled).

    Returns
    -------
    pandas.DataFrame
        One row per (group, factor): ``<by>, factor`` and, for ``before`` and ``after``,
        ``n_*``, ``mean_*`` (factor units), ``smd_*`` (NaN with fewer than two rows on a
        side or zero spread) and ``ks_*`` (in [0, 1]).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> before = pd.DataFrame({"group": ["F"] * 4 + ["M"] * 2, "x": [1.0, 2, 3, 4, 3, 4]})
    >>> after = balance(before, ["x"], bins=2)
    >>> report = balance_report(before, after, ["x"])
    >>> report[["group", "smd_before", "smd_after"]].round(2).to_numpy().tolist()
    [['F', -0.96, 0.0], ['M', 0.96, 0.0]]
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
    """Pairs whose face-mask IoU is strictly above ``threshold`` (B.2); NaN IoU raises.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the IoU column (a fraction in [0, 1]).
    iou_col : str, default "mask_iou"
        The IoU column.
    threshold : float, default 0.9
        Pairs with IoU > threshold are kept.

    Returns
    -------
    pandas.DataFrame
        The kept rows of ``pairs``.

    Raises
    ------
    ValueError
        For a missing column or a missing IoU value.

    Examples
    --------
    >>> pairs = pd.DataFrame({"mask_iou": [0.95, 0.9, 0.5]})
    >>> mask_iou_filter(pairs).index.tolist()
    [0]
    """
    require_columns(pairs, [iou_col], "pairs")
    iou = pairs[iou_col].to_numpy(dtype=np.float64)
    if np.isnan(iou).any():
        raise ValueError(f"column {iou_col!r}: {int(np.isnan(iou).sum())} missing IoU values")
    return pairs[iou > threshold]


def exclude_facial_hair(
    pairs: pd.DataFrame, col1: str = "facial_hair1", col2: str = "facial_hair2"
) -> pd.DataFrame:
    """Drop pairs where either image has facial hair (NFH, B.2); flags are 0/1 or bool.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the two facial-hair flags.
    col1, col2 : str, default "facial_hair1", "facial_hair2"
        Flag columns of the pair's two images (1/True = facial hair).

    Returns
    -------
    pandas.DataFrame
        The pairs where neither image has facial hair.

    Raises
    ------
    ValueError
        For a missing column or a flag that is not 0/1 or bool.

    Examples
    --------
    >>> pairs = pd.DataFrame({"facial_hair1": [0, 1, 0], "facial_hair2": [0, 0, 1]})
    >>> exclude_facial_hair(pairs).index.tolist()
    [0]
    """
    require_columns(pairs, [col1, col2], "pairs")
    h1 = check_labels(pairs[col1], f"column {col1!r}")
    h2 = check_labels(pairs[col2], f"column {col2!r}")
    return pairs[~(h1 | h2)]


def table1_pair_sets(
    pairs: pd.DataFrame, threshold: float = 0.9, iou_col: str = "mask_iou",
    hair: tuple[str, str] = ("facial_hair1", "facial_hair2"),
) -> dict[str, pd.DataFrame]:
    """Paper 003's Table 1 evaluation sets from one pair table (B.2): ``original`` (all
    pairs), ``balanced`` (face-mask IoU > ``threshold``, :func:`mask_iou_filter`) and
    ``balanced_nfh`` (balanced, then no image with facial hair, :func:`exclude_facial_hair`).

    Parameters
    ----------
    pairs : pandas.DataFrame
        Genuine and impostor pairs within race x gender groups, with the IoU and the two
        facial-hair columns.
    threshold : float, default 0.9
        The paper's IoU cut.
    iou_col : str, default "mask_iou"
        The IoU column.
    hair : tuple of str
        The facial-hair flag columns of the pair's two images.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``{"original", "balanced", "balanced_nfh"}`` in that order.

    Raises
    ------
    ValueError
        As :func:`mask_iou_filter` and :func:`exclude_facial_hair`.

    Examples
    --------
    >>> pairs = pd.DataFrame({"mask_iou": [0.95, 0.95, 0.5], "facial_hair1": [0, 1, 0],
    ...                       "facial_hair2": [0, 1, 0]})
    >>> {k: v.index.tolist() for k, v in table1_pair_sets(pairs).items()}
    {'original': [0, 1, 2], 'balanced': [0, 1], 'balanced_nfh': [0]}
    """
    balanced = mask_iou_filter(pairs, iou_col, threshold)
    return {"original": pairs, "balanced": balanced,
            "balanced_nfh": exclude_facial_hair(balanced, *hair)}


def images_in_pairs(images: pd.DataFrame, pairs: pd.DataFrame, image_col: str = "image",
                    pos: tuple[str, str] = ("a", "b")) -> pd.DataFrame:
    """The rows of ``images`` that appear in at least one pair (the images a pair-level
    balancing keeps, for Fig. 16's "after" panels).

    ``pairs[pos]`` are image positions encoded in the names ``synNNNNNN.png`` (the BA-test
    world) when ``image_col`` holds such names, else row labels of ``images``.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image.
    pairs : pandas.DataFrame
        One row per pair with the two position columns.
    image_col : str, default "image"
        Image-name column of ``images``.
    pos : tuple of str, default ("a", "b")
        The pairs' image columns.

    Returns
    -------
    pandas.DataFrame
        The used rows of ``images``, in their order.

    Examples
    --------
    >>> images = pd.DataFrame({"image": ["syn000000.png", "syn000001.png", "syn000002.png"]})
    >>> images_in_pairs(images, pd.DataFrame({"a": [0], "b": [2]}))["image"].tolist()
    ['syn000000.png', 'syn000002.png']
    """
    require_columns(pairs, list(pos), "pairs")
    used = np.union1d(pairs[pos[0]].to_numpy(), pairs[pos[1]].to_numpy())
    return images[np.isin(_image_keys(images, image_col), used)]


def _image_keys(images: pd.DataFrame, image_col: str) -> np.ndarray:
    """The position a pair table uses for each image: NNNNNN of ``synNNNNNN.png`` names (the
    BA-test world), else the row label."""
    names = images[image_col].astype(str) if image_col in images else None
    if names is not None and names.str.fullmatch(r"syn\d{6}\.png").all():
        return names.str.slice(3, 9).astype(np.int64).to_numpy()
    return images.index.to_numpy()


def pairs_among(pairs: pd.DataFrame, images: pd.DataFrame, image_col: str = "image",
                pos: tuple[str, str] = ("a", "b")) -> pd.DataFrame:
    """The pairs whose two images are both in ``images`` (a selection applied to a pair
    table; a pair keeps its score, so no re-scoring is needed). Positions as
    :func:`images_in_pairs` reads them.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with the two position columns.
    images : pandas.DataFrame
        The selected images.
    image_col : str, default "image"
        Image-name column of ``images``.
    pos : tuple of str, default ("a", "b")
        The pairs' image columns.

    Returns
    -------
    pandas.DataFrame
        The rows of ``pairs`` inside the selection.

    Examples
    --------
    >>> images = pd.DataFrame({"image": ["syn000000.png", "syn000002.png"]})
    >>> pairs_among(pd.DataFrame({"a": [0, 0], "b": [1, 2]}), images).index.tolist()
    [1]
    """
    require_columns(pairs, list(pos), "pairs")
    keys = _image_keys(images, image_col)
    inside = np.isin(pairs[pos[0]].to_numpy(), keys) & np.isin(pairs[pos[1]].to_numpy(), keys)
    return pairs[inside]


def face_area_by_gender(image_sets: Mapping[str, pd.DataFrame], area: str = "face_area",
                        group: str = "group") -> pd.DataFrame:
    """Fig. 16 (top) in numbers: per evaluation set and race, the mean face area of each
    gender, the gap M - F, its standardized mean difference and the two-sample KS
    statistic (fractions of the crop; group codes are race letter + ``F``/``M``).

    Parameters
    ----------
    image_sets : mapping
        Set name -> images with the area and group columns.
    area, group : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        Index (``set``, ``race``): ``n_F, n_M, mean_F, mean_M, gap, smd, ks``.

    Raises
    ------
    ValueError
        For a missing column or no image sets.

    Examples
    --------
    >>> im = pd.DataFrame({"group": ["AF", "AF", "AM", "AM"], "face_area": [0.3, 0.32, 0.36, 0.38]})
    >>> face_area_by_gender({"all": im})[["mean_F", "mean_M", "gap", "ks"]].round(3)
              mean_F  mean_M   gap   ks
    set race
    all A       0.31    0.37  0.06  1.0
    """
    if not image_sets:
        raise ValueError("image_sets: no sets")
    rows = []
    for name, df in image_sets.items():
        require_columns(df, [area, group], name)
        codes = df[group].astype(str)
        x = df[area].to_numpy(np.float64)
        for r in sorted(codes.str[0].unique()):
            f, m = x[(codes == r + "F").to_numpy()], x[(codes == r + "M").to_numpy()]
            both = f.size > 0 and m.size > 0
            rows.append({"set": name, "race": r, "n_F": f.size, "n_M": m.size,
                         "mean_F": f.mean() if f.size else np.nan, "mean_M": m.mean() if m.size else np.nan,
                         "gap": m.mean() - f.mean() if both else np.nan,
                         "smd": _smd(m, f) if both else np.nan, "ks": _ks(m, f) if both else np.nan})
    return pd.DataFrame(rows).set_index(["set", "race"])


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


# --------------------------------------------------------------------------- reports
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


def gender_gap(
    pairs: pd.DataFrame, score: str = "score", group: str = "group", label: str = "label"
) -> pd.DataFrame:
    """Table 1 gender gap per race: ``dprime_genuine`` = d'(female genuine, male genuine)
    and ``dprime_impostor`` likewise, plus the signed mean differences ``gap_genuine`` and
    ``gap_impostor`` (male mean - female mean, score units); group codes are race letter +
    ``F``/``M``.

    Parameters
    ----------
    pairs : pandas.DataFrame
        One row per pair with score (similarity), group (race letter + ``F``/``M``) and
        label (1 genuine, 0 impostor).
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        Indexed by race letter: ``dprime_genuine``, ``gap_genuine``, ``n_genuine_F``,
        ``n_genuine_M`` and the same for ``impostor``; NaN d' and gap where a gender has
        no pairs of that kind.

    Raises
    ------
    ValueError
        For a missing column, a bad score or label, or a group code that is not a race
        letter + ``F``/``M``.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> gender_gap(pairs)[["dprime_genuine", "gap_genuine", "n_genuine_F"]].round(3)
          dprime_genuine  gap_genuine  n_genuine_F
    race
    A                1.0          0.1            2
    """
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


def gender_gaps(
    pair_sets: Mapping[str, pd.DataFrame], planted: Mapping[str, float] | None = None, **kwargs: Any
) -> pd.DataFrame:
    """:func:`gender_gap` of each evaluation set, stacked: index (``set``, ``race``), sets in
    the order of ``pair_sets`` (set name -> pair table). With ``planted`` (race -> true gap
    M - F in score units, a known-truth world) a ``planted_gap`` column is added; a race
    without a planted gap raises. ``kwargs`` go to :func:`gender_gap`. The layout
    :func:`gap_rel_error_mean` and :func:`summarise` read.

    Parameters
    ----------
    pair_sets : mapping
        Evaluation-set name -> pair table (as :func:`gender_gap` reads).
    planted : mapping, optional
        Race letter -> true gap M - F (score units).
    **kwargs
        Column names for :func:`gender_gap`.

    Returns
    -------
    pandas.DataFrame
        :func:`gender_gap` columns (+ ``planted_gap``), index (``set``, ``race``).

    Raises
    ------
    ValueError
        If ``pair_sets`` is empty, a race has no planted gap, or as :func:`gender_gap`.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> gaps = gender_gaps({"original": pairs}, planted={"A": 0.2})
    >>> gaps[["gap_genuine", "planted_gap"]].round(3)
                   gap_genuine  planted_gap
    set      race
    original A             0.1          0.2
    """
    if not pair_sets:
        raise ValueError("pair_sets: no evaluation sets")
    gaps = pd.concat({k: gender_gap(p, **kwargs) for k, p in pair_sets.items()}, names=["set"])
    if planted is not None:
        races = gaps.index.get_level_values("race")
        missing = sorted(set(races) - set(planted))
        if missing:
            raise ValueError(f"planted: no planted gap for race(s) {missing}")
        gaps["planted_gap"] = [planted[r] for r in races]
    return gaps


def gap_rel_error_mean(
    gaps: pd.DataFrame, planted: Mapping[str, float], column: str = "gap_genuine"
) -> dict[Any, float]:
    """How far each evaluation set's mean gender gap is from the planted one, relative.

    ``gaps``: :func:`gender_gap` frames stacked with the set name as the first index level
    (:func:`gender_gaps`); ``planted``: race ->
    true gap (known-truth world). For each set ``s`` (in order of appearance)::

        |mean_r gaps[s, r][column] - mean(planted)| / |mean(planted)|

    with the mean over the set's races (NaN gaps skipped, pandas ``mean``) and over all
    of ``planted``'s values. 0 means the set's gap is the planted one on average.

    Parameters
    ----------
    gaps : pandas.DataFrame
        :func:`gender_gaps` output, index (set, race).
    planted : mapping
        Race -> true gap M - F (score units); the mean must be finite and non-zero.
    column : str, default "gap_genuine"
        The gap column compared.

    Returns
    -------
    dict
        Set name -> relative error (a fraction; 0.5 = off by half the planted gap).

    Raises
    ------
    ValueError
        For a missing column, an index that is not a MultiIndex, no planted gaps, or a
        mean planted gap that is zero or not finite.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> err = gap_rel_error_mean(gender_gaps({"original": pairs}), {"A": 0.2})
    >>> {k: round(v, 3) for k, v in err.items()}  # measured 0.1 vs planted 0.2
    {'original': 0.5}
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


# --------------------------------------------------------------------------- identity noise
def identity_outliers(
    embeddings: Any,
    identities: Any,
    eps: float = 0.6,
    min_samples: int | None = None,
) -> np.ndarray:
    """Identity-noise cleaning (paper 003, intra-class noise, Fig. 6a): per identity,
    DBSCAN (``sklearn.cluster.DBSCAN``, cosine distance ``1 - cos``) on that identity's
    embeddings; an image is an outlier (to drop) when it is DBSCAN noise or outside the
    identity's largest cluster.

    The paper runs DBSCAN on ArcFace and MagFace features but gives no parameters; the
    defaults are the notes' suggestion (``../shared/notes/seeds_002_003.md`` B.6 item 6):
    ``eps = 0.6`` (neighbours have cosine >= 0.4) and ``min_samples = max(3, 5 % of the
    identity's images)``. Ties for the largest cluster keep the one DBSCAN found first; an
    identity where DBSCAN finds no cluster at all has every image flagged. To combine two
    matchers as the notes suggest, OR their masks.

    Parameters
    ----------
    embeddings : array_like
        (n_images, dim) features, finite, no zero row (the cosine needs a direction).
    identities : array_like
        (n_images,) identity label of each image (the folder it was filed under).
    eps : float, default 0.6
        DBSCAN neighbourhood radius in cosine distance, in (0, 2).
    min_samples : int, optional
        DBSCAN core-point count (the point itself included); default
        ``max(3, ceil(0.05 * n))`` per identity of ``n`` images.

    Returns
    -------
    numpy.ndarray
        (n_images,) bool, True = outlier (drop), in the input order.

    Raises
    ------
    ValueError
        For a non-2-D, non-finite or zero-norm ``embeddings``, ``identities`` of another
        length or with missing values, ``eps`` outside (0, 2) or ``min_samples < 1``.

    Examples
    --------
    >>> emb = np.array([[1, 0], [0.99, 0.1], [0.98, -0.1], [0, 1.0]])
    >>> identity_outliers(emb, ["a"] * 4)  # the 4th is 90 degrees off the other three
    array([False, False, False,  True])
    """
    from sklearn.cluster import DBSCAN

    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"embeddings: must be a finite 2-D array, got shape {x.shape}")
    if (np.linalg.norm(x, axis=1) == 0).any():
        raise ValueError("embeddings: a row has zero norm (no direction for the cosine)")
    ids = pd.Series(np.asarray(identities, dtype=object))
    if len(ids) != len(x) or ids.isna().any():
        raise ValueError(f"identities: need {len(x)} labels without missing values, got {len(ids)}")
    if not 0 < eps < 2:
        raise ValueError(f"eps: must lie in (0, 2), got {eps!r}")
    if min_samples is not None and min_samples < 1:
        raise ValueError(f"min_samples: must be >= 1, got {min_samples!r}")
    drop = np.zeros(len(x), dtype=bool)
    for rows in ids.groupby(ids, sort=False).indices.values():
        ms = min_samples if min_samples is not None else max(3, int(np.ceil(0.05 * rows.size)))
        lab = DBSCAN(eps=eps, min_samples=ms, metric="cosine").fit_predict(x[rows])
        clustered = lab[lab >= 0]
        if clustered.size == 0:
            drop[rows] = True
            continue
        drop[rows] = lab != np.bincount(clustered).argmax()
    return drop


# --------------------------------------------------------------------------- Fig. 9
#: Paper 003 Fig. 9 / section 3.2: (identities, images per identity) per group subset.
IDENTITY_COUNT_DESIGNS: tuple[tuple[int, int], ...] = ((200, 15), (100, 20), (50, 25))


def identity_count_subset(images: pd.DataFrame, n_identities: int, n_images: int, seed: int = 0,
                          identity: str = "identity", group: str = "group") -> pd.DataFrame:
    """Per group, ``n_identities`` random identities with ``n_images`` random images each
    (paper 003 Fig. 9: "AF-200-15" = 200 identities x 15 images of AF).

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``identity`` and ``group`` columns.
    n_identities, n_images : int
        Subset size per group (>= 1 and >= 2).
    seed : int, default 0
        Seeds the draw.
    identity, group : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        The chosen rows of ``images`` (original index), group by group.

    Raises
    ------
    ValueError
        For a missing column, or a group with fewer than ``n_identities`` identities
        that have at least ``n_images`` images.

    Examples
    --------
    >>> imgs = pd.DataFrame({"group": "AF", "identity": np.repeat(np.arange(4), 3)})
    >>> identity_count_subset(imgs, 2, 2).groupby("identity").size().tolist()
    [2, 2]
    """
    require_columns(images, [identity, group], "images")
    if n_identities < 1 or n_images < 2:
        raise ValueError(f"need n_identities >= 1 and n_images >= 2, got {n_identities}, {n_images}")
    rng = np.random.default_rng(seed)
    keep = []
    for g in sorted(pd.unique(images[group].astype(str))):
        sub = images[images[group].astype(str) == g]
        sizes = sub.groupby(identity, sort=True).size()
        ok = sizes.index[sizes >= n_images].to_numpy()
        if ok.size < n_identities:
            raise ValueError(f"group {g!r}: {ok.size} identities have >= {n_images} images, "
                             f"need {n_identities}")
        for i in rng.choice(ok, n_identities, replace=False):
            rows = sub.index[sub[identity].to_numpy() == i].to_numpy()
            keep.append(rng.choice(rows, n_images, replace=False))
    return images.loc[np.concatenate(keep)]


def _weighted_dprime(s: np.ndarray, gen: np.ndarray, w: np.ndarray) -> float:
    def mv(m: np.ndarray) -> tuple[float, float]:
        ww = w[m]
        if ww.sum() <= 0:
            return np.nan, np.nan
        mu = float(np.average(s[m], weights=ww))
        return mu, float(np.average((s[m] - mu) ** 2, weights=ww))

    (mg, vg), (mi, vi) = mv(gen), mv(~gen)
    spread = np.sqrt((vg + vi) / 2)
    return float(abs(mg - mi) / spread) if spread > 0 else np.nan


def dprime_identity_bootstrap(pairs: pd.DataFrame, n_boot: int = 200, seed: int = 0, ci: float = 0.95,
                              ids: tuple[str, str] = ("id1", "id2"), score: str = "score",
                              group: str = "group", label: str = "label") -> pd.DataFrame:
    """d' per group with a percentile interval from the identity (cluster) bootstrap of
    :func:`facebias.stats.bootstrap_weights` (each replicate a weighted d').

    Parameters
    ----------
    pairs : pandas.DataFrame
        Pair table (``ids``, group, label, score; similarities).
    n_boot : int, default 200
        Replicates per group (0 = no interval: NaN bounds).
    seed : int, default 0
        Bootstrap seed.
    ci : float, default 0.95
        Interval coverage.
    ids : tuple of str, default ("id1", "id2")
        Identity columns resampled.
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        Indexed by group: ``n_genuine, n_impostor, dprime, dprime_lo, dprime_hi`` and the
        bounds' Monte Carlo errors ``dprime_lo_mcse, dprime_hi_mcse`` (NaN without replicates).

    Raises
    ------
    ValueError
        As :func:`dprime_by_group`, or a missing identity column.
    """
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group, *ids], "pairs")
    g = pairs[group].astype(str).to_numpy()
    rows = []
    for grp in sorted(pd.unique(g)):
        m = g == grp
        sg, gg = s[m], gen[m]
        point = d_prime(sg[gg], sg[~gg])
        lo = hi = lo_se = hi_se = np.nan
        if n_boot:
            reps = np.array([_weighted_dprime(sg, gg, w) for w in bootstrap_weights(
                int(m.sum()), n_boot, seed, id1=pairs[ids[0]].to_numpy()[m], id2=pairs[ids[1]].to_numpy()[m])])
            lo, hi = (float(v) for v in percentile_interval(reps, ci))
            lo_se, hi_se = (float(v) for v in percentile_mc_error(reps, ci))
        rows.append({group: grp, "n_genuine": int(gg.sum()), "n_impostor": int((~gg).sum()),
                     "dprime": point, "dprime_lo": lo, "dprime_hi": hi,
                     "dprime_lo_mcse": lo_se, "dprime_hi_mcse": hi_se})
    return pd.DataFrame(rows).set_index(group)


def _ks_stats(x: np.ndarray, sides: np.ndarray) -> np.ndarray:
    """KS statistic of ``x[side]`` vs ``x[~side]`` for each row of bool ``sides``."""
    order = np.argsort(x, kind="stable")
    last = np.r_[x[order][1:] != x[order][:-1], True]  # compare the CDFs after each tie run
    a = sides[:, order]
    ca = np.cumsum(a, axis=1)[:, last] / a.sum(axis=1, keepdims=True)
    cb = np.cumsum(~a, axis=1)[:, last] / (~a).sum(axis=1, keepdims=True)
    return np.abs(ca - cb).max(axis=1)


def score_ks(pairs_a: pd.DataFrame, pairs_b: pd.DataFrame, n_perm: int = 0, seed: int = 0,
             block: str = "id1", score: str = "score", group: str = "group",
             label: str = "label") -> pd.DataFrame:
    """Two-sample KS test (``scipy.stats.ks_2samp``) of the genuine and of the impostor
    score distributions of each group between two pair tables.

    ``ks_2samp`` treats pairs as independent, but pairs of one identity share its images
    (their factor effects), so its ``p_value`` is anti-conservative on pair tables: in a
    null world it rejects at a KS distance of a few hundredths with ~20,000 pairs. With
    ``n_perm > 0`` a permutation p-value that respects the clustering is added: whole
    identity blocks (pairs grouped by ``block``, per table) are reassigned between the
    two tables, keeping each table's number of blocks, and the KS statistic recomputed:
    ``p_perm = (1 + #{ks_perm >= ks}) / (1 + n_perm)``.

    Parameters
    ----------
    pairs_a, pairs_b : pandas.DataFrame
        Pair tables (group, label, score, and ``block`` for the permutation).
    n_perm : int, default 0
        Identity-block permutations (0 = no ``p_perm`` column).
    seed : int, default 0
        Permutation seed.
    block : str, default "id1"
        Column whose values define the blocks (an impostor pair goes with its first
        identity).
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        ``group, kind`` ("genuine" / "impostor"), ``n_a, n_b, ks, p_value`` (and
        ``p_perm``), for the groups with such pairs in both tables.

    Raises
    ------
    ValueError
        For a missing column, a bad label or a non-finite score.

    Examples
    --------
    >>> a = pd.DataFrame({"group": "AF", "label": [1, 1, 0, 0], "score": [0.8, 0.7, 0.1, 0.2]})
    >>> b = a.assign(score=[0.6, 0.5, 0.1, 0.2])
    >>> score_ks(a, b)[["kind", "ks"]].values.tolist()
    [['genuine', 1.0], ['impostor', 0.0]]
    """
    sa, ga = _scores_labels(pairs_a, score, label)
    sb, gb = _scores_labels(pairs_b, score, label)
    cols = [group, block] if n_perm else [group]
    require_columns(pairs_a, cols, "pairs_a")
    require_columns(pairs_b, cols, "pairs_b")
    grp_a, grp_b = pairs_a[group].astype(str).to_numpy(), pairs_b[group].astype(str).to_numpy()
    rng = np.random.default_rng(seed)
    rows = []
    for grp in sorted(set(grp_a) & set(grp_b)):
        for kind, want in (("genuine", True), ("impostor", False)):
            ma, mb = (grp_a == grp) & (ga == want), (grp_b == grp) & (gb == want)
            xa, xb = sa[ma], sb[mb]
            if not (xa.size and xb.size):
                continue
            res = _st.ks_2samp(xa, xb)
            row = {"group": grp, "kind": kind, "n_a": xa.size, "n_b": xb.size,
                   "ks": float(res.statistic), "p_value": float(res.pvalue)}
            if n_perm:
                ca = pd.factorize(pairs_a[block].to_numpy()[ma])[0]
                cb = pd.factorize(pairs_b[block].to_numpy()[mb])[0]
                ka, kb = ca.max() + 1, cb.max() + 1
                codes, x = np.r_[ca, cb + ka], np.r_[xa, xb]
                sides = np.zeros((n_perm, ka + kb), dtype=bool)
                for r in range(n_perm):
                    sides[r, rng.permutation(ka + kb)[:ka]] = True
                perm = np.concatenate([_ks_stats(x, sides[i:i + 25, codes]) for i in range(0, n_perm, 25)])
                row["p_perm"] = float((1 + np.sum(perm >= row["ks"] - 1e-12)) / (1 + n_perm))
            rows.append(row)
    return pd.DataFrame(rows, columns=["group", "kind", "n_a", "n_b", "ks", "p_value"]
                        + (["p_perm"] if n_perm else []))


def identity_count_experiment(
    images: pd.DataFrame,
    pairs_fn: Any,
    designs: Sequence[tuple[int, int]] = IDENTITY_COUNT_DESIGNS,
    n_boot: int = 200,
    seed: int = 0,
    ci: float = 0.95,
    n_perm: int = 200,
) -> dict[str, pd.DataFrame]:
    """Paper 003 Fig. 9 / section 3.2: per group, subsets of identities x images per
    identity (default 200 x 15, 100 x 20, 50 x 25); d' per subset with identity-bootstrap
    intervals (:func:`dprime_identity_bootstrap`) and the KS test (:func:`score_ks`) of
    genuine and impostor scores between every two subsets. The paper's claim ("identity
    count is not what drives accuracy") is that the distributions coincide.

    Subsets are drawn independently (each with its own seed), so they may share
    identities and pairs; shared pairs make the KS test conservative.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image (``identity``, ``group``).
    pairs_fn : callable
        Maps an image subset to its scored pair table (``id1, id2, group, label, score``),
        e.g. ``functools.partial(facebias.worlds.batest.batest_pairs, config=...)``.
    designs : sequence of (int, int), default :data:`IDENTITY_COUNT_DESIGNS`
        (identities, images per identity) per subset.
    n_boot : int, default 200
        Bootstrap replicates per subset and group.
    seed : int, default 0
        Seeds the subsets (``seed + k`` for the k-th) and the bootstrap.
    ci : float, default 0.95
        Interval coverage.
    n_perm : int, default 200
        Identity-block permutations of :func:`score_ks` (its ``p_perm``; ``p_value`` from
        ``ks_2samp`` assumes independent pairs and is anti-conservative here).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"dprime"``: ``design`` (e.g. ``"200x15"``), ``n_identities, n_images, group,
        n_genuine, n_impostor, dprime, dprime_lo, dprime_hi, dprime_lo_mcse, dprime_hi_mcse``;
        ``"ks"``: ``design_a,
        design_b`` and the :func:`score_ks` columns.

    Raises
    ------
    ValueError
        As :func:`identity_count_subset` (world too small for a design) and
        :func:`dprime_identity_bootstrap`.
    """
    pair_sets, rows = {}, []
    for k, (n_ids, n_img) in enumerate(designs):
        name = f"{n_ids}x{n_img}"
        pairs = pairs_fn(identity_count_subset(images, n_ids, n_img, seed=seed + k))
        pair_sets[name] = pairs
        d = dprime_identity_bootstrap(pairs, n_boot=n_boot, seed=seed, ci=ci).reset_index()
        rows.append(d.assign(design=name, n_identities=n_ids, n_images=n_img))
    dp = pd.concat(rows, ignore_index=True)
    dp = dp[["design", "n_identities", "n_images", "group", "n_genuine", "n_impostor", "dprime",
             "dprime_lo", "dprime_hi", "dprime_lo_mcse", "dprime_hi_mcse"]]
    names = list(pair_sets)
    ks = [score_ks(pair_sets[a], pair_sets[b], n_perm=n_perm, seed=seed).assign(design_a=a, design_b=b)
          for i, a in enumerate(names) for b in names[i + 1:]]
    ks_cols = ["design_a", "design_b", "group", "kind", "n_a", "n_b", "ks", "p_value"] + (
        ["p_perm"] if n_perm else [])
    ks = pd.concat(ks, ignore_index=True)[ks_cols] if ks else pd.DataFrame(columns=ks_cols)
    return {"dprime": dp, "ks": ks}


# --------------------------------------------------------------------------- section 5
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
    normalised to [0, 1] over all ``images``, the columns are averaged (notes B.6 item 10:
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


# --------------------------------------------------------------------------- Fig. 16
def mask_heatmap(masks: Any, groups: Any, first: str, second: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paper 003 Fig. 16 (bottom): pixelwise mean face-area mask of two groups and their
    difference ``mean(first) - mean(second)`` (positive = more often face in ``first``).

    Parameters
    ----------
    masks : array_like
        (n, H, W) bool (or 0/1) face-area masks of aligned crops.
    groups : array_like
        (n,) group label of each mask.
    first, second : str
        The two groups compared (e.g. a race's female and male groups).

    Returns
    -------
    diff, mean_first, mean_second : numpy.ndarray
        (H, W) float64: the difference and the two mean masks (fractions of images).

    Raises
    ------
    ValueError
        For masks that are not (n, H, W) 0/1, ``groups`` of another length, or a group
        without masks.

    Examples
    --------
    >>> m = np.array([[[1, 1], [0, 0]], [[1, 0], [0, 0]], [[0, 0], [1, 1]]])
    >>> mask_heatmap(m, ["F", "F", "M"], "F", "M")[0]
    array([[ 1. ,  0.5],
           [-1. , -1. ]])
    """
    m = np.asarray(masks)
    if m.ndim != 3 or not np.isin(m, (0, 1)).all():
        raise ValueError(f"masks: need an (n, H, W) array of 0/1, got shape {m.shape}")
    g = np.asarray(groups).astype(str)
    if g.shape != (m.shape[0],):
        raise ValueError(f"groups: need {m.shape[0]} labels, got shape {g.shape}")
    means = []
    for name in (first, second):
        sel = g == str(name)
        if not sel.any():
            raise ValueError(f"groups: no masks of group {name!r}")
        means.append(m[sel].astype(np.float64).mean(axis=0))
    return means[0] - means[1], means[0], means[1]


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
    """``TABLE1_PUBLISHED`` as a frame: index (condition, kind, matcher), columns races.

    Returns
    -------
    pandas.DataFrame
        12 rows (3 conditions x genuine/impostor x ArcFace/MagFace), columns ``Asian,
        Black, Indian, White``: the paper's d' gender gaps.

    Examples
    --------
    >>> table1_published().loc[("original", "genuine", "ArcFace"), "White"]
    np.float64(0.4115)
    """
    idx = pd.MultiIndex.from_tuples(list(TABLE1_PUBLISHED), names=["condition", "kind", "matcher"])
    return pd.DataFrame(list(TABLE1_PUBLISHED.values()), index=idx, columns=list(_RACES))


def table1_percentages(table: pd.DataFrame, baseline: str = "original") -> pd.DataFrame:
    """Percent change of each condition vs ``baseline`` in a Table 1 frame (B.5).

    ``table``: index (condition, kind, matcher), one column per race (``table1_published``
    layout). One row per (kind, condition != baseline, race) with ``rom_pct`` = 100 (ratio
    of the two-matcher means - 1), ``mor_pct`` = 100 (mean of per-matcher ratios - 1) and
    ``pct_<matcher>`` per matcher; race ``"all"`` pools every race and matcher (RoM over
    all values, the paper's "average" convention). The paper mixes RoM and MoR.

    Parameters
    ----------
    table : pandas.DataFrame
        Index (condition, kind, matcher), one column per race.
    baseline : str, default "original"
        The condition the others are compared with.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind, condition, race, rom_pct, mor_pct, pct_<matcher>...`` (percent;
        ``mor_pct`` and ``pct_*`` are NaN for race ``"all"``).

    Raises
    ------
    ValueError
        If the index levels are not (condition, kind, matcher).

    Examples
    --------
    >>> pct = table1_percentages(table1_published())
    >>> pooled = pct[pct["race"] == "all"].set_index(["kind", "condition"])["rom_pct"]
    >>> pooled.round(1).to_dict()
    {('genuine', 'balanced'): -24.1, ('genuine', 'balanced_nfh'): 34.8,
     ('impostor', 'balanced'): 54.0, ('impostor', 'balanced_nfh'): 75.1}
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


def table1_measured(gaps: pd.DataFrame, matcher: str = "world") -> pd.DataFrame:
    """Our Table 1 in the published layout: Δd' (female vs male d') per race of each set.

    Parameters
    ----------
    gaps : pandas.DataFrame
        :func:`gender_gaps` output (index ``set, race``; races A, B, I, W).
    matcher : str, default "world"
        The name of the matcher level (the paper's are ArcFace and MagFace).

    Returns
    -------
    pandas.DataFrame
        Index (condition, kind, matcher), columns ``Asian, Black, Indian, White`` (as
        :func:`table1_published`, so :func:`table1_percentages` reads it).

    Raises
    ------
    ValueError
        For a missing column or race.

    Examples
    --------
    >>> pairs = pd.DataFrame({"group": ["AF"] * 4 + ["AM"] * 4, "label": [1, 1, 0, 0] * 2,
    ...                       "score": [0.8, 0.6, 0.3, 0.25, 0.9, 0.7, 0.4, 0.2]})
    >>> t = table1_measured(gender_gaps({"original": pairs}))
    >>> round(float(t.loc[("original", "genuine", "world"), "Asian"]), 6)
    1.0
    """
    require_columns(gaps, ["dprime_genuine", "dprime_impostor"], "gaps")
    letters = {name[0]: name for name in _RACES}
    rows, index = [], []
    for cond in gaps.index.get_level_values("set").unique():
        sub = gaps.loc[cond]
        for kind in ("genuine", "impostor"):
            index.append((cond, kind, matcher))
            rows.append([float(sub[f"dprime_{kind}"].get(r, np.nan)) for r in letters])
    idx = pd.MultiIndex.from_tuples(index, names=["condition", "kind", "matcher"])
    return pd.DataFrame(rows, index=idx, columns=[letters[r] for r in letters])


# --------------------------------------------------------------------------- metrics
def _records(df: pd.DataFrame | None) -> list[dict[str, Any]] | None:
    return None if df is None else df.to_dict(orient="records")


def _mask_iou_summary(pairs: pd.DataFrame, iou_col: str = "mask_iou") -> dict[str, Any]:
    """Pair count, pairs above paper 003's IoU cut (> 0.9, B.2) and the median IoU."""
    require_columns(pairs, [iou_col], "pairs")
    iou = pairs[iou_col]
    return {"n_pairs": len(pairs), "n_above_0.9": int((iou > 0.9).sum()), "median": float(iou.median())}


def summarise(*, provenance: str, config: BATestConfig, world: BAWorldConfig, images: pd.DataFrame,
              kept: pd.DataFrame, balanced: pd.DataFrame, accounting: pd.DataFrame, report: pd.DataFrame,
              gaps: pd.DataFrame, dprimes: pd.DataFrame, fmr_ref: pd.DataFrame, tpr_table: pd.DataFrame,
              real_factors: pd.DataFrame | None = None, real_fte: pd.DataFrame | None = None,
              lfw_fte: pd.DataFrame | None = None, lfw_accounting: pd.DataFrame | None = None,
              lfw_report: pd.DataFrame | None = None, lfw_pairs: pd.DataFrame | None = None,
              identity_count: Mapping[str, pd.DataFrame] | None = None,
              identity_noise: Mapping[str, Any] | None = None,
              challenging: pd.DataFrame | None = None,
              table1: pd.DataFrame | None = None, face_area: pd.DataFrame | None = None,
              table3_impostors: pd.DataFrame | None = None, n_balanced_pairs: int | None = None,
              table3_gamma: pd.DataFrame | None = None,
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(headline, details)``: what ``reports/metrics/<name>.json`` and
    ``<name>_details.json`` hold (notebooks/ba_test.py).

    ``world``: the known-truth world (its seed and planted gaps, M - F score units);
    ``images`` / ``kept`` / ``balanced``: all, filtered (:func:`apply_filters`, whose
    ``accounting`` this is) and image-matched (:func:`balance_within`, the extension)
    images; ``report``: :func:`balance_report`; ``gaps``: :func:`gender_gaps` (sets in
    evaluation order: Table 1's, then the extension's); ``dprimes``: set ->
    :func:`dprime_by_group` as columns; ``fmr_ref``: columns (set, FMR) of
    :func:`fmr_at_reference_table`; ``tpr_table``: :func:`tpr_at_fmr` tables stacked with
    index level ``set``; ``table1``: :func:`table1_measured` (its percentages vs the
    original are derived here); ``face_area``: :func:`face_area_by_gender`;
    ``table3_impostors``: impostor pairs per group (rows) and Table 3 set (columns);
    ``n_balanced_pairs``: pairs with IoU above the cut. The real-image parts are ``None`` when not run:
    ``real_factors`` (:func:`facebias.faces.factor_table` rows), ``real_fte`` / ``lfw_fte``
    (:func:`facebias.metrics.failure_to_enrol`), ``lfw_accounting``, ``lfw_report`` and
    ``lfw_pairs`` (one row per pair with ``mask_iou``). The headline's per-set gaps and
    :func:`gap_rel_error_mean` are derived here from ``gaps``.

    Parameters
    ----------
    provenance : str
        Where the images came from (written to the details).
    config : BATestConfig
        The study settings.
    world : facebias.worlds.batest.BAWorldConfig
        The known-truth world.
    images, kept, balanced : pandas.DataFrame
        All, filtered and balanced images.
    accounting, report, gaps : pandas.DataFrame
        :func:`apply_filters` accounting, :func:`balance_report`, :func:`gender_gaps`.
    dprimes, fmr_ref, tpr_table : pandas.DataFrame
        Per-set d', :func:`fmr_at_reference` FMRs, stacked :func:`tpr_at_fmr` tables.
    real_factors, real_fte, lfw_fte : pandas.DataFrame, optional
        Real-image factors and failure-to-enrol tables (``None`` when not run).
    lfw_accounting, lfw_report, lfw_pairs : pandas.DataFrame, optional
        LFW filter accounting, balance report and pairs (``None`` when not run).
    identity_count : dict of str to pandas.DataFrame, optional
        :func:`identity_count_experiment` output (Fig. 9), stored as records.
    identity_noise : dict, optional
        JSON-ready summary of :func:`identity_outliers` runs (Fig. 6a), stored as given.
    challenging : pandas.DataFrame, optional
        Per-group table of the :func:`challenging_subset` evaluation (columns
        ``(subset, quantity)``), stored as ``subset -> quantity -> group``.
    table1, face_area, table3_impostors : pandas.DataFrame, optional
        Table 1 (Δd'), Fig. 16's face-area table and Table 3's impostor counts.
    n_balanced_pairs : int, optional
        Pairs kept by the IoU cut.
    table3_gamma : pandas.DataFrame, optional
        :func:`fmr_at_reference_table` FMRs of a world whose factors raise impostor scores
        (``gamma < 0``), stored like ``fmr_ref``.

    Returns
    -------
    headline : dict
        ``source``, ``planted_gap_genuine``, ``gap_genuine`` (set -> race -> gap),
        ``gap_rel_error_mean`` (set -> fraction) and ``n_images``.
    details : dict
        JSON-ready records of every table (``None`` for parts not run).

    Raises
    ------
    ValueError
        As :func:`gap_rel_error_mean`.
    """
    truth = world.true_gender_gap()
    sets = gaps.index.get_level_values("set").unique()
    head: dict[str, Any] = {
        "source": "synthetic",
        "planted_gap_genuine": truth,
        "gap_genuine": {k: gaps.loc[k, "gap_genuine"].to_dict() for k in sets},
        "gap_rel_error_mean": gap_rel_error_mean(gaps, truth),
        "n_images": {"all": len(images), "filtered": len(kept), "matched_extension": len(balanced)},
    }
    if n_balanced_pairs is not None:
        head["n_pairs_iou_balanced"] = int(n_balanced_pairs)
    details: dict[str, Any] = {
        "paper": "003", "source": "synthetic", "provenance": provenance, "factors": list(config.balance_on),
        "method": config.method, "world": {"seed": world.seed},
        "accounting": _records(accounting),
        "balance_report": _records(report),
        "gender_gap": _records(gaps.reset_index()),
        "dprime": dprimes.to_dict(),
        "fmr_at_reference": {f"{s}@{f:g}": v.to_dict() for (s, f), v in fmr_ref.items()},
        "tpr_fmr": config.tpr_fmr,
        "tpr_at_fmr": _records(tpr_table.reset_index()),
        "real_images": _records(real_factors),
        "real_images_fte": None if real_fte is None else real_fte.to_dict(orient="index"),
        "lfw_fte": None if lfw_fte is None else lfw_fte.to_dict(orient="index"),
        "lfw_accounting": _records(lfw_accounting),
        "lfw_balance_report": _records(lfw_report),
        "lfw_pair_mask_iou": None if lfw_pairs is None else _mask_iou_summary(lfw_pairs),
        "identity_count": None if identity_count is None else {
            k: _records(v) for k, v in identity_count.items()},
        "identity_noise": None if identity_noise is None else dict(identity_noise),
        "challenging": None if challenging is None else {
            k: challenging[k].to_dict() for k in challenging.columns.get_level_values(0).unique()},
        "table1": None if table1 is None else _records(table1.reset_index()),
        "table1_pct": None if table1 is None else _records(table1_percentages(table1)),
        "face_area": None if face_area is None else _records(face_area.reset_index()),
        "table3_impostors": None if table3_impostors is None else table3_impostors.to_dict(),
        "fmr_at_reference_gamma_negative": None if table3_gamma is None else {
            f"{s}@{f:g}": v.to_dict() for (s, f), v in table3_gamma.items()},
    }
    return head, details
