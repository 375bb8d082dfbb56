"""Paper 001 (Knott, Serna, Mann, Perona, WACV 2025): a rapid test for the accuracy and bias
of face recognition systems, from noisy web-search labels and no human annotation.

Spec: ``../shared/notes/seed_001.md`` (sections 1.4-1.9, 2 and 5). Where the paper and the
authors' code (``frt-rapid-test``) differ, this follows the spec's choice:

* normalisation (1.4): per system a 2-component Gaussian mixture (``random_state = 42``)
  on that system's scores; its two means ``lo < hi`` map to 0 and 1, then clip to [0, 1]
  (monotone). Used for estimation only; every curve uses the raw scores.
* cluster count (1.5, 5 #1): the code's gap rule. With ``S`` the absolute eigenvalues of
  the query's normalised matrix in descending order (= its singular values), ``K`` is the
  largest ``i`` with ``S[i-1] / S[i] > gap_ratio`` and ``S[i-1] > eig_threshold``, else 0.
  ``rule="strict"`` (the paper's wording) counts the eigenvalues above the threshold.
* membership (5 #2): ``z = lambda_1 u_1^2 sign(u_1)`` (the signed diagonal of the rank-1
  reconstruction, ~1 for members), the sign of ``u_1`` fixed by its mean; member iff
  ``z > tau``.
* missing pair scores: as the authors' code, a face with a missing pair score in some
  system (no row for that pair) is dropped from its query, not the query itself; the
  query is estimated on the faces left (see :func:`estimate`).
* inclusion (5 #4, #5): a query is kept iff its common face set (faces scored by every
  system, with every pair scored) has at least ``min_faces_query`` faces and for
  *every* system the authors' cluster labels (:func:`cluster_labels`) put some face in
  the first cluster and none in a later one, with at least ``min_faces_cluster``
  members (checked per system, before the vote). A query where the gap rule finds
  ``K >= 2`` but no face reaches ``z > tau`` on a later eigenvector is kept, as the
  authors' code keeps it.
* final label: strict majority ``votes > S / 2`` over the systems (5 #21); excluded faces
  get -1.

Conventions: scores are similarities (a pair matches iff ``score > t``); rates are
fractions. Score tables have columns ``query, face_a, face_b, system, score`` (one row
per within-query pair and system); cross-query tables add ``query_b`` (the query of
``face_b``). Label tables have ``query, face, label`` with label 1 (the queried person),
0 (someone else) or -1 (excluded). Face tables have ``face, query, group`` (+
``is_target`` in the synthetic world, :func:`facebias.worlds.rapid.make_rapid_world`).

API: :class:`RapidConfig` (the method) and :class:`RapidExperimentConfig` (the notebook's
experiment); :func:`normalise_scores`, :func:`gmm_modes`,
:func:`query_matrix`, :func:`cluster_count`, :func:`membership`, :func:`cluster_labels`,
:func:`majority_vote`;
:func:`estimate` (one pass: labels, per-system labels, per-query table) and the wrappers
:func:`estimate_labels`, :func:`estimate_system_labels`; baselines :func:`naive_labels`,
:func:`single_best_system_labels`, :func:`connected_components_labels`;
:func:`semi_supervised`; truth helpers :func:`true_labels`, :func:`oracle_labels`,
:func:`label_agreement`, :func:`true_pairs`; evaluation :func:`genuine_impostor_pairs`,
:func:`curves_by_system_group`, :func:`fnmr_table`, :func:`delta_fnmr`,
:func:`eer_by_group`, :func:`system_ranking`; the notebook's summaries of a world
:func:`world_pairs`, :func:`delta_fnmr_by_system`, :func:`voting_ablation`,
:func:`semi_supervised_curve`, :func:`sweep_point`, :func:`p_sweep`, :func:`sweep_by_p` and
:func:`breakdown_p` (where the method stops beating the naive labels).

Limitation (spec 5 #22): the method labels the *prevalent* identity; when a wrong
identity outnumbers the queried one (p below ~0.4 with a co-occurring identity) it
confidently labels the wrong person.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import numpy as np
import pandas as pd

from facebias.io import config_from_params, param_float, param_int, param_list, param_str
from facebias.metrics import (
    DetCurve,
    check_scores,
    det_curve,
    eer,
    fnmr_at,
    threshold_at_fmr,
)
from facebias.stats import percentile_mc_error, wilson_interval
from facebias.validate import require_columns

__all__ = [
    "ALL",
    "RapidConfig",
    "RapidExperimentConfig",
    "RapidEstimate",
    "SCORE_COLUMNS",
    "gmm_modes",
    "normalise_scores",
    "query_matrix",
    "cluster_count",
    "membership",
    "cluster_labels",
    "majority_vote",
    "estimate",
    "estimate_labels",
    "estimate_system_labels",
    "naive_labels",
    "single_best_system_labels",
    "connected_components_labels",
    "semi_supervised",
    "true_labels",
    "oracle_labels",
    "label_agreement",
    "genuine_impostor_pairs",
    "true_pairs",
    "curves_by_system_group",
    "fnmr_table",
    "delta_fnmr",
    "eer_by_group",
    "system_ranking",
    "world_pairs",
    "delta_fnmr_by_system",
    "voting_ablation",
    "semi_supervised_curve",
    "sweep_point",
    "p_sweep",
    "sweep_by_p",
    "breakdown_p",
]

SCORE_COLUMNS: tuple[str, ...] = ("query", "face_a", "face_b", "system", "score")
ALL = "all"  # the group name of the pooled curves


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class RapidConfig:
    """Parameters of the method (``params.yaml`` section ``rapid``).

    Parameters
    ----------
    eig_threshold : float, default 4.0
        Eigenvalue threshold T (paper: 4), >= 0.
    gap_ratio : float, default 1.5
        Eigen-gap ratio of the ``"gap"`` rule (authors' code: 1.5), >= 1.
    rule : {"gap", "strict"}, default "gap"
        Cluster count rule: ``"gap"`` (code) or ``"strict"`` (paper: exactly one
        eigenvalue > T); see :func:`cluster_count`.
    tau : float, default 0.2
        Membership threshold on ``z``: member iff ``z > tau``.
    min_faces_query : int, default 8
        Least faces in a query's common face set.
    min_faces_cluster : int, default 5
        Least members per system.
    normalise : {"gmm", "none"}, default "gmm"
        Per-system GMM mode normalisation, or ``"none"`` (scores already in [0, 1]-like
        units: only clipped).
    modes : dict, default {}
        System -> [lo, hi] fixed by hand (skips the GMM for that system).
    gmm_seed : int, default 42
        Seed of the GMM and its subsample.
    gmm_max_fit : int, default 50000
        The GMM is fit on at most this many scores per system (a seeded subsample; 0 =
        all).

    Raises
    ------
    ValueError
        For an unknown rule or normalisation, a value out of range or mistyped, or a
        mode pair that is not ``lo < hi``.
    """

    eig_threshold: float = 4.0
    gap_ratio: float = 1.5
    rule: str = "gap"
    tau: float = 0.2
    min_faces_query: int = 8
    min_faces_cluster: int = 5
    normalise: str = "gmm"
    modes: dict[str, Sequence[float]] = field(default_factory=dict)
    gmm_seed: int = 42
    gmm_max_fit: int = 50_000

    def __post_init__(self) -> None:
        param_str(self.rule, "rapid.rule", ("gap", "strict"))
        param_str(self.normalise, "rapid.normalise", ("gmm", "none"))
        for key, low in (("eig_threshold", 0.0), ("gap_ratio", 1.0), ("tau", None)):
            object.__setattr__(self, key, param_float(getattr(self, key), f"rapid.{key}", low))
        for key in ("min_faces_query", "min_faces_cluster", "gmm_max_fit", "gmm_seed"):
            param_int(getattr(self, key), f"rapid.{key}", 0)
        if not isinstance(self.modes, Mapping):
            raise ValueError(f"rapid.modes must be a mapping system -> [lo, hi], got {self.modes!r}")
        for s, m in self.modes.items():
            if len(m) != 2 or not float(m[0]) < float(m[1]):
                raise ValueError(f"rapid.modes.{s} must be [lo, hi] with lo < hi, got {m!r}")

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> RapidConfig:
        """Build from the ``params.yaml`` ``rapid`` section (missing keys: defaults).

        Parameters
        ----------
        d : mapping
            The section's keys and values.

        Returns
        -------
        RapidConfig
            The validated config.

        Raises
        ------
        ValueError
            For an unknown key or an invalid value.

        Examples
        --------
        >>> RapidConfig.from_params({"tau": 0.3}).tau
        0.3
        >>> RapidConfig.from_params({"threshold": 4})
        Traceback (most recent call last):
        ...
        ValueError: rapid: unknown key(s) ['threshold']; known keys are [...]
        """
        return config_from_params(cls, dict(d), "rapid")


@dataclass(frozen=True)
class RapidExperimentConfig:
    """What ``notebooks/rapid_test.py`` measures on the known-truth world (``params.yaml``
    section ``rapid_experiment``; the method is :class:`RapidConfig`, the world
    ``rapid_world``). Defaults: the committed study.

    Parameters
    ----------
    fmr : tuple of float, default (0.01, 0.001)
        FMRs at which FNMR is read (the first is the headline), fractions in (0, 1).
    p_sweep : tuple of float
        Shares p in (0, 1] of a query's faces that show the queried person, one world
        each (:func:`p_sweep`).
    sweep_seeds : tuple of int, default (1001,)
        World seeds per p.
    sweep_queries_per_group : int, default 25
        Queries per group of each sweep world (>= 1).
    semi_p : float, default 0.5
        p of the partial-annotation world, in (0, 1].
    semi_fractions : tuple of float
        Annotated fractions of its faces, in [0, 1] (:func:`semi_supervised_curve`).
    semi_seed : int, default 0
        Their order.
    bias_boot : int, default 200
        Query-bootstrap resamples of the per-group bias test (:func:`group_bias`, >= 2).
    bias_seed : int, default 0
        Its seed.
    world_seeds : int, default 10
        World seeds of the seed sweep (:func:`facebias.studies.rapid_seeds.rapid_seed_table`),
        from ``rapid_world.seed`` on (1 = the committed world only).

    Raises
    ------
    ValueError
        For a mistyped value or one out of range.
    """

    fmr: tuple[float, ...] = (0.01, 0.001)
    p_sweep: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    sweep_seeds: tuple[int, ...] = (1001,)
    sweep_queries_per_group: int = 25
    semi_p: float = 0.5
    semi_fractions: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0)
    semi_seed: int = 0
    bias_boot: int = 200
    bias_seed: int = 0
    world_seeds: int = 10

    def __post_init__(self) -> None:
        rate = partial(param_float, low=0.0, high=1.0, open_low=True, open_high=True)
        share = partial(param_float, low=0.0, high=1.0, open_low=True)
        seed = partial(param_int, minimum=0)
        name = "rapid_experiment."
        typed = {
            "fmr": param_list(self.fmr, name + "fmr", rate),
            "p_sweep": param_list(self.p_sweep, name + "p_sweep", share),
            "sweep_seeds": param_list(self.sweep_seeds, name + "sweep_seeds", seed),
            "sweep_queries_per_group": param_int(self.sweep_queries_per_group,
                                                 name + "sweep_queries_per_group", 1),
            "semi_p": share(self.semi_p, name + "semi_p"),
            "semi_fractions": param_list(self.semi_fractions, name + "semi_fractions",
                                         partial(param_float, low=0.0, high=1.0)),
            "semi_seed": seed(self.semi_seed, name + "semi_seed"),
            "bias_boot": param_int(self.bias_boot, name + "bias_boot", 2),
            "bias_seed": seed(self.bias_seed, name + "bias_seed"),
            "world_seeds": param_int(self.world_seeds, name + "world_seeds", 1),
        }
        for key, value in typed.items():
            object.__setattr__(self, key, value)

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> RapidExperimentConfig:
        """Build from the ``params.yaml`` ``rapid_experiment`` section (missing keys: defaults).

        Parameters
        ----------
        d : mapping
            The section's keys and values.

        Returns
        -------
        RapidExperimentConfig
            The validated config.

        Raises
        ------
        ValueError
            For an unknown key or an invalid value.
        """
        return config_from_params(cls, dict(d), "rapid_experiment")


def _check_scores_frame(scores: pd.DataFrame, what: str = "scores") -> np.ndarray:
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"{what}: expected a DataFrame, got {type(scores).__name__}")
    require_columns(scores, SCORE_COLUMNS, what)
    return check_scores(scores["score"].to_numpy(), f"{what}.score", scores.index)


# --------------------------------------------------------------------------- normalisation
def gmm_modes(values: np.ndarray, seed: int = 42, max_fit: int = 50_000) -> tuple[float, float]:
    """The two means ``(lo, hi)`` of a 2-component 1-D Gaussian mixture fit to ``values``.

    At most ``max_fit`` values (a seeded subsample; 0 = all) are used. If the modes are
    closer than 0.1 x the score range, the 1st and 99th percentiles are returned instead.

    Parameters
    ----------
    values : numpy.ndarray
        1-D finite scores of one system.
    seed : int, default 42
        ``random_state`` of the mixture and seed of the subsample.
    max_fit : int, default 50000
        Largest number of values fitted.

    Returns
    -------
    lo, hi : float
        The impostor and genuine modes, in score units, ``lo < hi``.

    Raises
    ------
    ValueError
        For non-finite values or fewer than two distinct scores.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> v = np.r_[rng.normal(0.0, 0.05, 200), rng.normal(0.7, 0.05, 100)]
    >>> [round(m, 1) for m in gmm_modes(v)]
    [0.0, 0.7]
    """
    from sklearn.mixture import GaussianMixture

    v = check_scores(values, "values").astype(np.float64)
    if v.size < 2 or v.max() == v.min():
        raise ValueError("gmm_modes: need at least two distinct scores")
    fit = v
    if max_fit and v.size > max_fit:
        fit = np.random.default_rng(seed).choice(v, max_fit, replace=False)
    gm = GaussianMixture(n_components=2, random_state=seed).fit(fit[:, None])
    lo, hi = np.sort(gm.means_.ravel())
    if hi - lo < 0.1 * (v.max() - v.min()):
        lo, hi = np.percentile(v, [1, 99])
    return float(lo), float(hi)


def normalise_scores(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                     fit_scores: pd.DataFrame | None = None) -> pd.Series:
    """Scores mapped per system so that the impostor mode is 0 and the genuine mode 1,
    clipped to [0, 1] (monotone within a system). Estimation only; curves use raw scores.

    Parameters
    ----------
    scores : pandas.DataFrame
        Columns ``system, score`` (raw similarities).
    cfg : RapidConfig, optional
        ``normalise``, ``modes`` and the GMM settings; default ``RapidConfig()``.
    fit_scores : pandas.DataFrame, optional
        More scores of the same systems (columns ``system, score``; e.g. the cross-query
        pairs) to fit the modes on as well, as the authors' code does.

    Returns
    -------
    pandas.Series
        float64 in [0, 1], aligned with ``scores``, named ``score_norm``.

    Raises
    ------
    ValueError
        For a missing column, a non-finite score, a missing system name, or a system
        the GMM cannot fit.

    Examples
    --------
    >>> scores = pd.DataFrame({"system": ["a", "a", "b", "b"], "score": [20.0, 80.0, 0.2, 0.9]})
    >>> normalise_scores(scores, RapidConfig(modes={"a": [20, 80], "b": [0.2, 0.8]})).tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    cfg = cfg or RapidConfig()
    require_columns(scores, ["system", "score"], "scores")
    raw = check_scores(scores["score"].to_numpy(), "scores.score", scores.index)
    codes, systems = _factorize_sorted(scores["system"])
    lo, hi = _system_modes(raw, codes, systems, cfg, fit_scores)
    out = _rescale(raw, lo[codes], (hi - lo)[codes], np.empty(raw.size))
    return pd.Series(out, index=scores.index, name="score_norm")


def _system_modes(raw: np.ndarray, codes: np.ndarray, systems: pd.Index, cfg: RapidConfig,
                  fit_scores: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """The modes ``lo``, ``hi`` (float64, one per system of ``systems``) that
    :func:`normalise_scores` maps to 0 and 1: ``cfg.modes``, else the GMM's, fitted on the
    system's checked scores in ``raw`` (row ``i`` of system ``systems[codes[i]]``, codes of
    ``pd.factorize(system, sort=True)``) and its ``fit_scores``; 0 and 1 for
    ``normalise="none"`` (then the scores are only clipped)."""
    extra_sys = extra = None
    if fit_scores is not None:
        require_columns(fit_scores, ["system", "score"], "fit_scores")
        extra = check_scores(fit_scores["score"].to_numpy(), "fit_scores.score")
        extra_sys = fit_scores["system"].astype(str).to_numpy()
    lo, hi = np.zeros(len(systems)), np.ones(len(systems))
    if cfg.normalise == "none":
        return lo, hi
    for k, s in enumerate(np.asarray(systems, dtype=object)):  # CategoricalIndex.tolist: ~0.2 ms
        if s in cfg.modes:
            lo[k], hi[k] = (float(m) for m in cfg.modes[s])
        else:
            v = raw[codes == k].astype(np.float64)
            fit = v if extra is None else np.r_[v, extra[extra_sys == str(s)]]
            lo[k], hi[k] = gmm_modes(fit, cfg.gmm_seed, cfg.gmm_max_fit)
    return lo, hi


def _rescale(x: np.ndarray, lo: np.ndarray, scale: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``clip((x - lo) / scale, 0, 1)`` into ``out`` (float64; ``lo`` and ``scale = hi - lo``
    broadcast against ``x``): the normalisation's arithmetic, the same bits whether applied
    row by row or to the matrices the rows fill (with 0 and 1, ``x`` clipped)."""
    np.subtract(x, lo, out=out)
    np.divide(out, scale, out=out)
    return np.clip(out, 0.0, 1.0, out=out)


# --------------------------------------------------------------------------- spectral step
def query_matrix(scores: pd.DataFrame, fill: float = np.nan) -> tuple[list, np.ndarray]:
    """The symmetric matrix of one (query, system): ``(faces, C)`` with ``C[i, j]`` the
    score of ``faces[i], faces[j]``, diagonal 1, missing pairs ``fill``.

    Parameters
    ----------
    scores : pandas.DataFrame
        Columns ``face_a, face_b, score`` of one query and system (already normalised
        for estimation).
    fill : float, default NaN
        Value of pairs without a score.

    Returns
    -------
    faces : list
        The face ids, in order of first appearance.
    C : numpy.ndarray
        (n_faces, n_faces) float64 symmetric matrix, diagonal 1.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> faces, c = query_matrix(pd.DataFrame({"face_a": [7, 7, 3], "face_b": [3, 5, 5],
    ...                                       "score": [0.9, 0.1, 0.2]}))
    >>> [int(f) for f in faces], c
    ([7, 3, 5], array([[1. , 0.9, 0.1],
           [0.9, 1. , 0.2],
           [0.1, 0.2, 1. ]]))
    """
    require_columns(scores, ["face_a", "face_b", "score"], "scores")
    faces, codes = np.unique(np.r_[scores["face_a"].to_numpy(), scores["face_b"].to_numpy()],
                             return_inverse=True)
    order = pd.unique(np.r_[scores["face_a"].to_numpy(), scores["face_b"].to_numpy()])
    pos = np.searchsorted(faces, order)
    rank = np.empty(faces.size, np.int64)
    rank[pos] = np.arange(faces.size)
    a, b = rank[codes[: len(scores)]], rank[codes[len(scores):]]
    c = np.full((faces.size, faces.size), fill, dtype=np.float64)
    v = scores["score"].to_numpy(np.float64)
    c[a, b] = v
    c[b, a] = v
    np.fill_diagonal(c, 1.0)
    return list(order), c


def _sorted_spectrum(mats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched: absolute eigenvalues descending (the singular values of a symmetric
    matrix) and the leading eigenvector, for matrices of shape (..., n, n)."""
    s, order, v = _eig_sorted(mats)
    return s, _leading(v, order)


def _eig_sorted(mats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched ``eigh``: the absolute eigenvalues descending ``s``, the ``order`` that sorts
    them (indices of ``eigh``'s columns) and ``eigh``'s eigenvectors ``v`` (columns)."""
    w, v = np.linalg.eigh(mats)
    order = np.argsort(-np.abs(w), axis=-1, kind="stable")
    return np.take_along_axis(np.abs(w), order, axis=-1), order, v


def _leading(v: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The eigenvector of the largest absolute eigenvalue (:func:`_eig_sorted`), (..., n)."""
    return np.take_along_axis(v, order[..., None, :1], axis=-1)[..., 0]


def cluster_count(eigenvalues: np.ndarray, threshold: float = 4.0, gap_ratio: float = 1.5,
                  rule: str = "gap") -> np.ndarray | int:
    """How many identities a query holds, from its eigenvalues (any order, any sign;
    the absolute values are used, as the code's SVD does). Works on the last axis.

    ``rule="gap"`` (authors' code): with ``S`` descending, the largest ``i`` such that
    ``S[i-1] / S[i] > gap_ratio`` and ``S[i-1] > threshold``, else 0. ``rule="strict"``
    (paper): the number of eigenvalues ``> threshold``.

    Parameters
    ----------
    eigenvalues : numpy.ndarray
        Eigenvalues on the last axis (any leading shape).
    threshold : float, default 4.0
        Eigenvalue threshold T.
    gap_ratio : float, default 1.5
        Gap ratio of the ``"gap"`` rule.
    rule : {"gap", "strict"}, default "gap"
        The rule.

    Returns
    -------
    int or numpy.ndarray
        The count: an int for 1-D input, else an array of the leading shape.

    Raises
    ------
    ValueError
        For an unknown ``rule``.

    Examples
    --------
    >>> cluster_count([9.0, 2.0, 1.0]), cluster_count([9.0, 8.0, 1.0]), cluster_count([3.0, 1.0])
    (1, 2, 0)
    """
    s = -np.sort(-np.abs(np.asarray(eigenvalues, dtype=np.float64)), axis=-1)
    k = _count_sorted(np.atleast_2d(s), threshold, gap_ratio, rule)
    return int(k[0]) if s.ndim == 1 else k


def _count_sorted(s: np.ndarray, threshold: float, gap_ratio: float, rule: str) -> np.ndarray:
    """:func:`cluster_count` of each row of ``s`` (rows, n): absolute eigenvalues already in
    descending order (as :func:`_sorted_spectrum` gives them)."""
    if rule == "strict":
        k = np.count_nonzero(s > threshold, axis=-1)
    elif rule == "gap" and s.shape[-1] < 2:  # one face: no gap (the authors' loop is empty)
        k = np.zeros(s.shape[:-1], np.intp)
    elif rule == "gap":
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = s[:, :-1] / s[:, 1:]
        ok = (ratio > gap_ratio) & (s[:, :-1] > threshold)
        n = ok.shape[-1]
        last = n - 1 - np.argmax(ok[:, ::-1], axis=-1)
        k = np.where(ok.any(axis=-1), last + 1, 0)
    else:
        raise ValueError(f"cluster_count: rule must be 'gap' or 'strict', got {rule!r}")
    return k


def _z(s1: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``z = s1 u^2 sign(u)`` with the sign of ``u`` fixed by its mean (batched)."""
    flip = np.where(u.mean(axis=-1, keepdims=True) < 0, -1.0, 1.0)
    u = u * flip
    return s1[..., None] * u * u * np.sign(u)


def _column_hits(pending: list[tuple[np.ndarray, ...]], threshold: float,
                 tau: float) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Whether some face has ``z_j > tau`` on the ``j``-th eigenvector (0-based, by absolute
    eigenvalue) of the matrices of ``pending``: per batch ``(systems, queries, s, cols)``
    (``s`` (m, c) the leading absolute eigenvalues, ``cols`` (m, n, c) their eigenvectors,
    from :func:`_spectral_step`), ``(systems, queries, hit)`` with ``hit`` (m, c), False
    for the columns whose eigenvalue is not over ``threshold`` (a cluster count never
    reaches them); the batches of one ``c`` are joined. ``z_j = s_j u_j^2 sign(u_j)`` with
    ``u_j`` times the sign of its mean (``numpy.sign``: a mean of exactly 0 zeroes
    ``u_j``), as the authors' code does for every column
    (``caltechvisionlab/frt-rapid-test``, ``cfro/analyzer/utils/spectral_factorization.py``,
    ``SpectralFactorizationClustering.cluster``)."""
    out = []
    for c in sorted({p[2].shape[-1] for p in pending}):
        batch = [p for p in pending if p[2].shape[-1] == c]
        sys_i, q_i, s, u = (np.concatenate(x) for x in zip(*batch, strict=True))
        u = np.ascontiguousarray(np.swapaxes(u, -1, -2))  # (m, columns, faces): means along rows
        u *= np.sign(u.mean(axis=-1, keepdims=True))
        z = s[..., None] * u * u * np.sign(u)
        out.append((sys_i, q_i, (z > tau).any(axis=-1) & (s > threshold)))
    return out


def _last_hit(hit: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per row of ``hit`` (:func:`_column_hits`): the largest column ``j`` in ``1 .. k-1``
    that is hit, else 0 (the authors' last cluster label, when it is not the first)."""
    col = np.arange(hit.shape[-1])
    hit = hit & (col >= 1) & (col < k[:, None])
    return np.where(hit.any(axis=-1), hit.shape[-1] - 1 - np.argmax(hit[:, ::-1], axis=-1), 0)


def cluster_labels(matrix: np.ndarray, cfg: RapidConfig | None = None) -> np.ndarray:
    """The authors' cluster label of each face of one normalised symmetric matrix: -1 (no
    cluster) or the index ``j < K`` of the last eigenvector (by absolute eigenvalue, ``K``
    of :func:`cluster_count`) on which the face has ``z_j > cfg.tau``.

    This is the labelling of the authors' code (``caltechvisionlab/frt-rapid-test``,
    ``cfro/analyzer/utils/spectral_factorization.py``,
    ``SpectralFactorizationClustering.cluster`` with its default ``method="regular"``):
    every column of the SVD's ``U`` is multiplied by the sign of its mean; then for ``j =
    0 .. K-1`` in turn, the faces with ``S[j] U[:, j]^2 sign(U[:, j]) > 0.2`` get label
    ``j`` (a later ``j`` overwrites an earlier one). Their inclusion test
    (``cfro/analyzer/gt_estimation.py``, ``ProviderResults.n_clusters = cluster_labels.max()
    + 1`` and ``Person.include``: ``n_clusters == 1`` for every provider) is on these
    labels, not on ``K``: :func:`estimate` keeps a query iff every system's labels have
    maximum 0.

    Parameters
    ----------
    matrix : numpy.ndarray
        (n, n) finite normalised scores (:func:`query_matrix`).
    cfg : RapidConfig, optional
        Rule, thresholds and ``tau``; default ``RapidConfig()``.

    Returns
    -------
    numpy.ndarray
        (n,) int64 labels in ``-1 .. K-1``; ``labels.max() + 1`` is the authors' cluster
        count.

    Raises
    ------
    ValueError
        For a matrix that is not finite and square.

    Examples
    --------
    >>> c = np.full((60, 60), 0.0)
    >>> c[:12, :12] = 1.0   # faces 0-11: one identity (eigenvalue 12)
    >>> c[12:, 12:] = 0.08  # 48 weakly similar faces: eigenvalue 1 + 47 * 0.08 = 4.76
    >>> np.fill_diagonal(c, 1.0)
    >>> cluster_count(np.linalg.eigvalsh(c))  # the gap rule sees two clusters ...
    2
    >>> lab = cluster_labels(c)  # ... but z = 4.76 / 48 < 0.2 on the second: none in it
    >>> int(lab.max() + 1), lab[:12].tolist() == [0] * 12, bool((lab[12:] == -1).all())
    (1, True, True)
    """
    cfg = cfg or RapidConfig()
    c = np.asarray(matrix, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.isfinite(c).all():
        raise ValueError(f"cluster_labels: expected a finite square matrix, got shape {c.shape}")
    s, order, v = _eig_sorted(c)
    k = int(_count_sorted(s[None, :], cfg.eig_threshold, cfg.gap_ratio, cfg.rule)[0])
    labels = np.full(c.shape[0], -1, np.int64)
    for j in range(k):
        u = v[:, order[j]] * np.sign(v[:, order[j]].mean())
        labels[s[j] * u * u * np.sign(u) > cfg.tau] = j
    return labels


def membership(matrix: np.ndarray, cfg: RapidConfig | None = None) -> tuple[int, np.ndarray]:
    """Cluster count and membership scores of one normalised symmetric matrix (diagonal 1).

    Parameters
    ----------
    matrix : numpy.ndarray
        (n, n) finite normalised scores (:func:`query_matrix`).
    cfg : RapidConfig, optional
        Rule, thresholds and ``tau``; default ``RapidConfig()``.

    Returns
    -------
    n_clusters : int
        :func:`cluster_count` of the eigenvalues (``K``; the inclusion test of
        :func:`estimate` is on the faces' clusters, :func:`cluster_labels`, not on ``K``).
    z : numpy.ndarray
        (n,) membership scores, ~1 for members: a face is a member of the prevalent
        identity iff ``z > cfg.tau``.

    Raises
    ------
    ValueError
        For a matrix that is not finite and square.

    Examples
    --------
    >>> c = np.full((6, 6), 0.05)
    >>> c[:4, :4] = 0.9  # faces 0-3: one identity
    >>> np.fill_diagonal(c, 1.0)
    >>> k, z = membership(c, RapidConfig(eig_threshold=2.0))
    >>> k, (z > 0.2).astype(int)
    (1, array([1, 1, 1, 1, 0, 0]))
    """
    cfg = cfg or RapidConfig()
    c = np.asarray(matrix, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.isfinite(c).all():
        raise ValueError(f"membership: expected a finite square matrix, got shape {c.shape}")
    s, u = _sorted_spectrum(c)
    k = cluster_count(s, cfg.eig_threshold, cfg.gap_ratio, cfg.rule)
    return int(k), _z(np.asarray(s[0]), u)


def majority_vote(member: np.ndarray) -> np.ndarray:
    """Strict majority over the last axis (systems): 1 iff more than half say member.

    Parameters
    ----------
    member : array_like of bool
        Per-system membership, systems on the last axis.

    Returns
    -------
    numpy.ndarray
        int8 0/1, the leading shape of ``member``.

    Examples
    --------
    >>> majority_vote([[1, 1, 0], [1, 0, 0]])  # 2 of 3, 1 of 3
    array([1, 0], dtype=int8)
    """
    m = np.asarray(member, dtype=bool)
    return (2 * m.sum(axis=-1) > m.shape[-1]).astype(np.int8)


# --------------------------------------------------------------------------- estimation
@dataclass
class RapidEstimate:
    """The method's output (:func:`estimate`).

    Attributes
    ----------
    labels : pandas.DataFrame
        One row per (query, face): ``query, face, label`` (1 = the queried person, 0 =
        someone else, -1 = excluded), ``votes`` (systems with ``z > tau``),
        ``n_systems_agree`` (systems whose own label equals the final one; 0 when
        excluded), ``ambiguity`` (``min_s |z_s - tau|``, NaN when no z), ``reason`` (""
        if included, else why excluded: the query's reason, or for the face alone
        ``missing_system`` (not scored by every system) or ``missing_pairs`` (a pair
        score of the face is missing in some system: the face is dropped and its query
        estimated without it)). ``attrs["n_systems"]``: the number of systems.
    system_labels : pandas.DataFrame
        ``query, face, system, label, z`` (the per-system labels on the same inclusion
        set: the "no MV" estimate).
    queries : pandas.DataFrame
        ``query, n_faces, n_common, n_dropped, min_clusters, max_clusters, max_assigned,
        min_cluster_size, included, n_positive, reason``: ``n_common`` faces estimated on
        (scored by every system, every pair scored), ``n_dropped`` faces scored by every
        system but dropped for a missing pair (0 when the query had too few faces
        anyway), ``min_clusters``/``max_clusters`` the least/largest :func:`cluster_count`
        ``K`` over the systems, ``max_assigned`` the largest authors' cluster count
        (``cluster_labels(...).max() + 1``, :func:`cluster_labels`; -1 where not
        computed). Query reasons: ``too_few_faces``, ``no_cluster`` (some system puts no
        face in any cluster: ``K == 0``, or no face with ``z > tau``),
        ``multiple_clusters`` (some system puts a face in a cluster after the first),
        ``small_cluster``.
    """

    labels: pd.DataFrame
    system_labels: pd.DataFrame
    queries: pd.DataFrame


# "missing_system" and "missing_pairs" are reasons of a face alone, the others of a query
_REASONS = ("", "missing_system", "too_few_faces", "missing_pairs", "no_cluster",
            "multiple_clusters", "small_cluster")


def estimate(scores: pd.DataFrame, cfg: RapidConfig | None = None,
             fit_scores: pd.DataFrame | None = None) -> RapidEstimate:
    """Estimate identity labels from within-query pair scores (spec 1.4-1.5), vectorised.

    ``scores``: ``query, face_a, face_b, system, score`` (raw similarities, one row per
    within-query pair and system; extra columns ignored; self pairs ignored; if a pair
    appears twice, the later row wins). ``fit_scores``: optional extra scores for the
    GMM fit (see :func:`normalise_scores`). Matrices of one size are stacked and
    eigendecomposed in batched ``numpy.linalg.eigh`` calls of about 256 kB, each matrix
    once; the score rows are never sorted (per-query cost: about 1.3-1.5x the ``eigh``
    alone at 25 to 200 faces per query, ``benchmarks/bench_rapid.py``).

    Faces and missing pairs, as the authors' code (``caltechvisionlab/frt-rapid-test``):
    there, ``cfro/analyzer/utils/affinity_methods.py`` (``calculate_confidence_matrix``)
    pivots one provider's scores of a person into a matrix over the faces that provider
    scored, fills a missing ``(a, b)`` from ``(b, a)``, sets the diagonal to 1 and then
    removes every row and column that holds a NaN: the faces of a pair with no score are
    dropped (a one-shot filter on that provider's matrix), the person is not.
    ``cfro/analyzer/gt_estimation.py`` (``main``) then estimates the person on the
    intersection of the providers' remaining face sets. Here likewise: a pair is missing
    when a system that scored both faces (each appears in a row of that system and
    query) has no row for the pair; every face of such a pair is dropped from the query
    for all systems (face reason ``missing_pairs``) and the query is estimated on the
    faces scored by every system and not dropped (``n_common``). A query with fewer than
    ``min_faces_query`` such faces (or none) is excluded as ``too_few_faces``
    (``MIN_FACES`` in the authors' ``Person.include``); ``n_dropped`` says whether
    dropped faces brought it there. (A NaN score is refused as an input error: leave
    the row out to mark a pair as missing.)

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores (:data:`SCORE_COLUMNS`).
    cfg : RapidConfig, optional
        The method's parameters; default ``RapidConfig()``.
    fit_scores : pandas.DataFrame, optional
        Extra scores for the GMM fit (e.g. the cross-query pairs).

    Returns
    -------
    RapidEstimate
        Final labels, per-system labels and the per-query table.

    Raises
    ------
    ValueError
        For a non-DataFrame, a missing column, a non-finite score, a missing query,
        face or system name, or rows with ``query_b != query`` (pass those as
        ``fit_scores``).

    Examples
    --------
    >>> from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world
    >>> world = make_rapid_world(RapidWorldConfig(
    ...     groups=("AF", "AM"), queries_per_group=3, faces_min=10, faces_max=14,
    ...     systems={"s1": {"noise": 0.3}, "s2": {"noise": 0.5}, "s3": {"noise": 0.7}}))
    >>> est = estimate(world.scores)
    >>> sorted(set(est.labels["label"]) - {-1, 0, 1})  # 1 = queried person, -1 = excluded
    []
    >>> bool(label_agreement(est.labels, world.faces)["agreement"] > 0.9)
    True
    """
    cfg = cfg or RapidConfig()
    raw = _check_scores_frame(scores)
    # thousands of small eigh calls: BLAS threads only add overhead (x80 when cores are busy)
    with _thread_pools(cfg.normalise == "gmm").limit(limits=1):
        return _estimate(scores, raw, cfg, fit_scores)


@cache
def _thread_pools(gmm: bool) -> Any:
    """The process's thread pools (a ``threadpoolctl.ThreadpoolController``), found once:
    scanning the loaded libraries costs about 8 ms, as much as a few queries. With
    ``gmm`` (the GMM may be fitted), scikit-learn and its OpenMP runtime are loaded first so
    that their pools are limited too."""
    from threadpoolctl import ThreadpoolController

    if gmm:
        import sklearn.mixture  # noqa: F401
    return ThreadpoolController()


def _estimate(scores: pd.DataFrame, raw: np.ndarray, cfg: RapidConfig,
              fit_scores: pd.DataFrame | None) -> RapidEstimate:
    """:func:`estimate` after its input checks (``raw``: the checked scores), in named steps.

    1. index the nodes, one per (query, face), and each query's common face set
       (:class:`_NodeIndex`);
    2. the normalisation's modes per system (:func:`normalise_scores`);
    3. the normalised matrices of the queries with enough common faces
       (:func:`_stacked_matrices`); the faces of a missing pair are dropped and the
       matrices of their queries built again without them (:func:`_drop_missing_pairs`);
       the rows' codes are not needed past this step, and are freed (it lowers the peak
       memory, and the time spent mapping fresh pages);
    4. the spectral step on every (query, system) matrix: cluster counts, membership
       scores ``z`` and the authors' cluster counts (:func:`_spectral_step`);
    5. the inclusion rules per query (:func:`_include_queries`);
    6. the vote and the three output tables (:func:`_estimate_tables`).
    """
    _reject_cross_query_rows(scores)
    ix, s_codes, sa, sb = _NodeIndex.of(scores)
    modes = _system_modes(raw, s_codes, ix.s_names, cfg, fit_scores)
    del s_codes
    reason = np.zeros(ix.n_q, np.int8)
    least = max(cfg.min_faces_query, 1)  # a query with no common face has nothing to estimate
    reason[ix.n_common < least] = _REASONS.index("too_few_faces")
    stacks = _stacked_matrices(ix, sa, sb, raw, modes, reason)
    drop = _missing_pair_faces(ix, stacks, sa, sb, reason)
    if drop.any():
        ix, stacks = _drop_missing_pairs(ix, drop, stacks, sa, sb, raw, modes, reason, least)
    del sa, sb
    z_all, k_all, assigned = _spectral_step(ix, stacks, cfg)
    member = z_all > cfg.tau  # NaN -> False
    csize = _cluster_sizes(ix, member)
    kmin, kmax = _include_queries(reason, k_all, assigned, csize, cfg)
    return _estimate_tables(ix, cfg, reason, z_all, member, kmin, kmax, assigned, csize)


def _reject_cross_query_rows(scores: pd.DataFrame) -> None:
    """``ValueError`` if ``scores`` has a ``query_b`` column that differs from ``query``:
    estimation uses within-query pairs only (cross-query pairs go to ``fit_scores``)."""
    if "query_b" in scores.columns:
        qb = scores["query_b"].astype(object).to_numpy()
        if (qb != scores["query"].astype(object).to_numpy()).any():
            raise ValueError("scores: estimation uses within-query pairs only; rows with "
                             "query_b != query found (pass them as fit_scores instead)")


@dataclass(frozen=True)
class _NodeIndex:
    """Integer codes of a scores table for :func:`estimate`.

    A node is a (query, face) pair, numbered query-major; ``nodes`` holds ``query * n_f +
    face`` (query codes of the sorted names ``q_names``, face codes of ``f_names`` in
    first-appearance order), ``node_q`` its query; systems are codes of the sorted names
    ``s_names``. ``present`` (n_sys, n_nodes): the node appears in a row of the system.
    ``common``: the node is scored by every system and not ``dropped`` (for a missing
    pair, :meth:`without`); per query ``n_faces``, ``n_common`` and ``first_common``
    (rank of its first common node among all common nodes); per node ``local``: its index
    within its query's common set (-1 if not common).
    """

    q_names: pd.Index
    s_names: pd.Index
    f_names: pd.Index
    nodes: np.ndarray
    node_q: np.ndarray
    present: np.ndarray
    common: np.ndarray
    dropped: np.ndarray
    n_faces: np.ndarray
    n_common: np.ndarray
    first_common: np.ndarray
    local: np.ndarray

    @property
    def n_q(self) -> int:
        return len(self.q_names)

    @property
    def n_sys(self) -> int:
        return len(self.s_names)

    @property
    def n_nodes(self) -> int:
        return self.nodes.size

    @classmethod
    def of(cls, scores: pd.DataFrame) -> tuple[_NodeIndex, np.ndarray, np.ndarray, np.ndarray]:
        """Index ``scores`` (columns ``query, system, face_a, face_b``): the index, and per
        row its system ``s_codes`` and the cells ``sa``, ``sb`` of its two faces (a cell is
        a (system, node) pair, numbered ``system * n_nodes + node``), kept out of the index
        so that they can be freed before it is."""
        q_codes, q_names = _factorize_sorted(scores["query"])
        s_codes, s_names = _factorize_sorted(scores["system"])
        n_sys = len(s_names)
        # the rows' arrays are updated in place: each is a fresh array of the row count
        ka, kb, f_names = _face_codes(scores["face_a"], scores["face_b"])
        n_f, n_q = len(f_names), len(q_names)
        qf = q_codes.astype(np.int64)
        qf *= n_f
        ka += qf  # node keys: query * n_f + face
        kb += qf
        del qf
        nodes, sa, sb = _sorted_codes(ka, kb, n_q * n_f)  # the rows' nodes ...
        del ka, kb
        node_q = nodes // n_f
        n_nodes = nodes.size
        cell = s_codes.astype(np.int64)
        cell *= n_nodes
        sa += cell  # ... and their cells
        sb += cell
        del cell
        present = np.zeros(n_sys * n_nodes, bool)
        present[sa] = True
        present[sb] = True
        present = present.reshape(n_sys, n_nodes)
        common = present.all(axis=0)
        n_faces = np.bincount(node_q, minlength=n_q)
        ix = cls(q_names, s_names, f_names, nodes, node_q, present, common,
                 np.zeros(n_nodes, bool), n_faces, *_common_layout(common, node_q, n_q))
        return ix, s_codes, sa, sb

    def without(self, drop: np.ndarray) -> _NodeIndex:
        """The index with the nodes ``drop`` (bool per node) out of the common sets."""
        common = self.common & ~drop
        return dataclasses.replace(self, common=common, dropped=self.dropped | (drop & self.common),
                                   **dict(zip(("n_common", "first_common", "local"),
                                              _common_layout(common, self.node_q, self.n_q),
                                              strict=True)))


def _common_layout(common: np.ndarray, node_q: np.ndarray,
                   n_q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query ``n_common`` and ``first_common``, per node ``local`` (see
    :class:`_NodeIndex`) of the common nodes ``common``."""
    n_common = np.bincount(node_q[common], minlength=n_q)
    # local index of each common node within its query
    csum = np.cumsum(common) - 1
    first_common = np.cumsum(n_common) - n_common
    local = np.where(common, csum - first_common[node_q], -1)
    return n_common, first_common, local


def _factorize_sorted(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(values, sort=True)``; for a categorical column without missing values
    read from its codes (no hashing of the rows; then the codes may be a narrower integer
    type, and read-only). ``ValueError`` for a missing value."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.array.codes
        if codes.size and codes.min() >= 0:
            used = np.bincount(codes, minlength=len(values.cat.categories)) > 0
            rank = codes if used.all() else (np.cumsum(used) - 1)[codes]
            return rank, pd.CategoricalIndex(
                pd.Categorical.from_codes(np.flatnonzero(used), dtype=values.dtype))
    codes, names = pd.factorize(values, sort=True)
    _require_no_missing(codes, values.name)
    return codes, names


def _require_no_missing(codes: np.ndarray, column: Any) -> None:
    """``ValueError`` if ``pd.factorize`` codes hold -1 (a missing value in ``column``)."""
    if codes.size and codes.min() < 0:
        raise ValueError(f"scores.{column}: missing values (NaN/None) in row(s) {np.flatnonzero(codes < 0)[:5].tolist()}")


def _face_codes(face_a: pd.Series, face_b: pd.Series) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """``pd.factorize`` of ``face_a`` then ``face_b`` concatenated: the codes of ``face_a``,
    of ``face_b`` (in order of first appearance; two new writable ``intp`` arrays) and the
    names; without hashing the rows when the ids are integers of a range at most twice the
    rows (then by first positions in a table over that range)."""
    a, b = face_a.to_numpy(), face_b.to_numpy()
    n = a.size
    lo = hi = 0
    if a.dtype == b.dtype and a.dtype.kind in "iu" and n:
        lo, hi = int(min(a.min(), b.min())), int(max(a.max(), b.max()))
        lo = 0 if 0 <= lo and hi <= 2 * n + 1024 else lo  # ids from 0: no shift
    if hi - lo > 2 * n + 1024 or not (a.dtype == b.dtype and a.dtype.kind in "iu" and n):
        codes, names = pd.factorize(pd.concat([face_a, face_b], ignore_index=True), sort=False)
        _require_no_missing(codes[:n], face_a.name)
        _require_no_missing(codes[n:], face_b.name)
        return codes[:n], codes[n:], names
    if lo:
        a, b = a - lo, b - lo
    first = np.full(hi - lo + 1, 2 * n, np.int64)  # first position in a ++ b of each id
    np.minimum.at(first, b, np.arange(n, 2 * n))
    np.minimum.at(first, a, np.arange(n))
    ids = np.flatnonzero(first < 2 * n)
    ids = ids[np.argsort(first[ids])]
    code = np.empty(hi - lo + 1, np.intp)
    code[ids] = np.arange(ids.size)
    return code[a], code[b], pd.Index((ids + lo).astype(face_a.dtype))


def _sorted_codes(key_a: np.ndarray, key_b: np.ndarray,
                  domain: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``numpy.unique(np.r_[key_a, key_b], return_inverse=True)`` for non-negative integer
    keys below ``domain``, the inverse split back into ``key_a``'s and ``key_b``'s (two new
    writable ``intp`` arrays), without sorting the keys: a table over ``range(domain)``
    when that is at most twice the keys, else a hash table (``pandas.factorize``)."""
    n = key_a.size
    if domain > 4 * n + 1024:
        inv, uniq = pd.factorize(np.concatenate([key_a, key_b]), sort=True)
        return np.asarray(uniq, np.int64), inv[:n], inv[n:]
    seen = np.zeros(domain, bool)
    seen[key_a] = True
    seen[key_b] = True
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen), rank[key_a], rank[key_b]


def _spectral_step(ix: _NodeIndex, stacks: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                   cfg: RapidConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cluster counts and membership scores of every (query, system) matrix of ``stacks``
    (:func:`_stacked_matrices`, all complete).

    Each stack is eigendecomposed in batched calls of at most ``_EIGH_CHUNK`` bytes of
    matrices (or one query's, if larger), each matrix once: its eigenvalues give the
    count ``K``, its leading eigenvector ``z``, and where ``K >= 2`` its next ``K - 1``
    eigenvectors whether a face is in a later cluster (:func:`_later_clusters`). Returns
    ``z_all`` (n_sys, n_nodes; NaN where not computed), ``k_all`` and ``assigned`` (n_q,
    n_sys; -1 where not computed): ``K`` and the authors' cluster count (the largest
    cluster label + 1 of :func:`cluster_labels`: 0 if no face has a cluster).
    """
    n_sys = ix.n_sys
    z_all = np.full((n_sys, ix.n_nodes), np.nan)
    k_all = np.full((ix.n_q, n_sys), -1, np.int64)
    assigned = np.full((ix.n_q, n_sys), -1, np.int64)
    common_nodes = np.flatnonzero(ix.common)
    for qs, mats, _ in stacks:
        n = mats.shape[-1]
        shape = mats.shape[:-1]  # (systems, queries, n)
        s, u = np.empty(shape), np.empty(shape)
        later, pending = np.zeros(shape[:-1], np.int64), []
        # a few matrices per call: eigh's outputs (all eigenvectors) stay small, and reuse
        # the memory freed by the last call (no fresh pages to map)
        step = max(1, _EIGH_CHUNK // (8 * n_sys * n * n))
        for lo in range(0, qs.size, step):
            at = slice(lo, lo + step)
            s_c, order, v = _eig_sorted(mats[:, at])
            s[:, at], u[:, at] = s_c, _leading(v, order)
            # K >= 2 needs a second eigenvalue over T (either rule): only then are the later
            # eigenvectors kept (the columns over T), to be looked at after the loop
            if n > 1 and (two := s_c[..., 1] > cfg.eig_threshold).any():
                n_col = int(np.count_nonzero(s_c[two] > cfg.eig_threshold, axis=-1).max())
                sys_i, q_i = np.nonzero(two)
                cols = np.take_along_axis(v, order[..., None, :n_col], axis=-1)[sys_i, q_i]
                pending.append((sys_i, q_i + lo, s_c[sys_i, q_i, :n_col], cols))
            del s_c, order, v  # freed before the next call, which then reuses the memory
        k = _count_sorted(s.reshape(-1, n), cfg.eig_threshold, cfg.gap_ratio,
                          cfg.rule).reshape(shape[:-1])
        for sys_i, q_i, hit in _column_hits(pending, cfg.eig_threshold, cfg.tau):
            later[sys_i, q_i] = _last_hit(hit, k[sys_i, q_i])
        z = _z(s[..., 0], u)
        first = (k >= 1) & (z > cfg.tau).any(axis=-1)  # some face in the first cluster
        k_all[qs] = k.T
        assigned[qs] = np.where(later > 0, later + 1, first).T
        # scatter z back to nodes: the common nodes of query qs[j], in local order
        node_idx = common_nodes[(ix.first_common[qs][:, None] + np.arange(n)[None, :]).ravel()]
        z_all[:, node_idx] = z.reshape(n_sys, -1)
    return z_all, k_all, assigned


_EIGH_CHUNK = 2**18  # bytes of matrices per eigh call in _spectral_step
_ROW_CHUNK = 2**15  # score rows per step of the scatter in _stacked_matrices


def _stacked_matrices(ix: _NodeIndex, sa: np.ndarray, sb: np.ndarray, raw: np.ndarray,
                      modes: tuple[np.ndarray, np.ndarray],
                      reason: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The normalised matrices of the queries whose ``reason`` is 0 (each with at least one
    common face) on their common faces, from the rows' cells ``sa``, ``sb``
    (:meth:`_NodeIndex.of`), raw scores ``raw`` and the systems' ``modes``
    (:func:`_system_modes`; self pairs and faces not common ignored), one stack per size
    ``n``, sizes ascending:
    ``(qs, mats, complete)`` with ``qs`` the sorted query codes of that size, ``mats``
    (systems, queries, n, n) with diagonal 1 and 0 for a missing pair, and ``complete``
    (queries, n) per face (every system scored its pairs with every common face of its
    query). A pair scored twice: the later row wins.

    No sort of the rows: one system-major buffer holds every stack (per system, every
    query's matrix, sizes ascending; ``mats`` are views of it), each row's two entries are
    found from per-cell offsets and its raw score written by one scatter for all sizes, and
    the buffer is normalised in place, a system at a time (as :func:`normalise_scores`
    does row by row: the same bits, without a normalised copy of the rows).
    """
    n_sys = ix.n_sys
    keep = sa != sb
    ok = ix.common & (reason[ix.node_q] == 0)  # per node; a row's two nodes share a query
    if not ok.all():  # else these gathers exclude nothing
        ok = np.tile(ok, n_sys)  # per cell
        keep &= ok[sa] & ok[sb]
    v = raw
    if not keep.all():
        r = np.flatnonzero(keep)
        sa, sb, v = sa[r], sb[r], raw[r]
    wanted = reason == 0
    n_of_q = ix.n_common.astype(np.int64)
    first = np.zeros(ix.n_q, np.int64)  # offset of each query's matrix in a system's part
    stacks, size = [], 0  # size: a system's part of the buffer
    for n in np.unique(n_of_q[wanted]).tolist():
        qs = np.flatnonzero(wanted & (n_of_q == n))
        first[qs] = size + n * n * np.arange(qs.size)
        stacks.append((qs, n, size))
        size += qs.size * n * n
    # per cell (system, node): the offset of the node's row in its (query, system) matrix,
    # and the node's column
    row = first[ix.node_q] + ix.local * n_of_q[ix.node_q]
    row = (size * np.arange(n_sys)[:, None] + row).ravel()
    col = np.tile(ix.local, n_sys)
    buf = np.zeros(n_sys * size)
    filled = np.zeros(n_sys * size, bool)
    for x, y in ((sa, sb), (sb, sa)):  # every (a, b) entry, then every (b, a) ...
        for lo in range(0, x.size, _ROW_CHUNK):  # ... in chunks of rows: small temporaries
            rows = slice(lo, lo + _ROW_CHUNK)
            at = row[x[rows]]
            at += col[y[rows]]
            buf[at] = v[rows]
            filled[at] = True
    buf, filled = buf.reshape(n_sys, size), filled.reshape(n_sys, size)
    lo, hi = modes
    _rescale(buf, lo[:, None], (hi - lo)[:, None], out=buf)
    stacked = []
    for qs, n, off in stacks:
        shape = (n_sys, qs.size, n, n)
        mats = buf[:, off:off + qs.size * n * n].reshape(shape)
        fill = filled[:, off:off + qs.size * n * n].reshape(shape)
        idx = np.arange(n)
        fill[:, :, idx, idx] = True
        complete = fill.all(axis=-1).all(axis=0)
        if not complete.all():
            np.copyto(mats, 0.0, where=~fill)  # a missing pair: 0 (the rescaled 0 may not be)
        mats[:, :, idx, idx] = 1.0
        stacked.append((qs, mats, complete))
    return stacked


def _missing_pair_faces(ix: _NodeIndex, stacks: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                        sa: np.ndarray, sb: np.ndarray, reason: np.ndarray) -> np.ndarray:
    """The common nodes of the queries still in (``reason`` 0) that miss a pair score in
    some system, with a face that system scored (bool per node): with another common face
    (from the ``complete`` flags of ``stacks``, :func:`_stacked_matrices`) or with a face
    that only some systems scored (from the rows ``sa``, ``sb`` that link the two: such
    faces are rare, and the rows are read only if there are any)."""
    drop = np.zeros(ix.n_nodes, bool)
    common_nodes = np.flatnonzero(ix.common)
    for qs, mats, complete in stacks:
        if not complete.all():
            n = mats.shape[-1]
            at = ix.first_common[qs][:, None] + np.arange(n)[None, :]
            drop[common_nodes[at[~complete]]] = True
    n_sys, n_nodes = ix.n_sys, ix.n_nodes
    into = (reason[ix.node_q] == 0)[None, :]
    extra = (ix.present & ~ix.common[None, :] & into).ravel()  # per cell: not common
    if not extra.any():
        return drop
    # per common cell of such a (system, query): how many of its not-common faces it was
    # scored with (distinct), against how many that system scored in that query
    is_common = np.tile(ix.common, n_sys)
    r = np.flatnonzero((extra[sa] & is_common[sb]) | (extra[sb] & is_common[sa]))
    c = np.where(is_common[sa[r]], sa[r], sb[r])
    f = np.where(is_common[sa[r]], sb[r], sa[r])
    c = np.unique(c * (n_sys * n_nodes) + f) // (n_sys * n_nodes)
    partners = np.bincount(c, minlength=n_sys * n_nodes)
    sq = (np.arange(n_sys)[:, None] * ix.n_q + ix.node_q[None, :]).ravel()  # per cell
    need = np.bincount(sq, weights=extra, minlength=n_sys * ix.n_q)[sq]
    short = is_common & into.repeat(n_sys, axis=0).ravel() & (partners < need)
    return drop | short.reshape(n_sys, n_nodes).any(axis=0)


def _drop_missing_pairs(ix: _NodeIndex, drop: np.ndarray,
                        stacks: list[tuple[np.ndarray, np.ndarray, np.ndarray]], sa: np.ndarray,
                        sb: np.ndarray, raw: np.ndarray, modes: tuple[np.ndarray, np.ndarray],
                        reason: np.ndarray,
                        least: int) -> tuple[_NodeIndex, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Drop the nodes ``drop`` (:func:`_missing_pair_faces`) from their queries' common
    sets: the new index, and the stacks with those queries' matrices built again without
    them (every one complete; sizes ascending). A query left with fewer than ``least``
    faces gets reason ``too_few_faces`` (``reason`` is updated in place)."""
    hit = np.zeros(ix.n_q, bool)
    hit[ix.node_q[drop]] = True
    ix = ix.without(drop)
    reason[hit & (reason == 0) & (ix.n_common < least)] = _REASONS.index("too_few_faces")
    kept = []
    for qs, mats, complete in stacks:
        stay = ~hit[qs]
        if stay.all():
            kept.append((qs, mats, complete))
        elif stay.any():
            kept.append((qs[stay], mats[:, stay], complete[stay]))
    redo = np.where(hit & (reason == 0), 0, 1).astype(np.int8)
    if (redo == 0).any():
        kept += _stacked_matrices(ix, sa, sb, raw, modes, redo)
    return ix, sorted(kept, key=lambda t: t[1].shape[-1])


def _cluster_sizes(ix: _NodeIndex, member: np.ndarray) -> np.ndarray:
    """Members per (query, system), int64 (n_q, n_sys): ``member`` (n_sys, n_nodes) summed
    over each query's nodes."""
    ends = np.cumsum(ix.n_faces)  # nodes are numbered query-major: query q's are a run
    total = np.zeros((ix.n_sys, ix.n_nodes + 1), np.int64)
    np.cumsum(member, axis=1, out=total[:, 1:])
    return (total[:, ends] - total[:, ends - ix.n_faces]).T


_NO_COUNT = 10**9  # stands for "no cluster count" when taking the least count per query


def _include_queries(reason: np.ndarray, k_all: np.ndarray, assigned: np.ndarray,
                     csize: np.ndarray, cfg: RapidConfig) -> tuple[np.ndarray, np.ndarray]:
    """The inclusion rules (spec 5 #4, #5), in order, on the queries still included
    (``reason`` 0; updated in place), on the authors' cluster counts ``assigned``
    (:func:`_spectral_step`): every system puts some face in a cluster (else
    ``no_cluster``), none in a cluster after the first (else ``multiple_clusters``), and
    at least ``min_faces_cluster`` in the first (else ``small_cluster``).

    As the authors' code (``caltechvisionlab/frt-rapid-test``,
    ``cfro/analyzer/gt_estimation.py``): ``Person.include`` requires ``n_clusters == 1``
    for every provider, where ``ProviderResults.n_clusters`` is ``cluster_labels.max() +
    1``, the labels of :func:`cluster_labels`; the gap rule's ``K`` itself is not tested,
    so a query with ``K == 2`` whose second eigenvector gives no face ``z > tau`` is kept.
    Its ``MIN_POS_FACES`` is ``min_faces_cluster`` (``(cluster_labels > -1).sum()``, the
    first cluster's size on a kept query).

    Returns the least and the largest ``K`` per query (``_NO_COUNT`` / -1 where no
    system has one)."""
    ok = reason == 0
    kmin = np.where(k_all >= 0, k_all, _NO_COUNT).min(axis=1)
    kmax = k_all.max(axis=1)
    reason[ok & (assigned.min(axis=1) <= 0)] = _REASONS.index("no_cluster")
    ok = reason == 0
    reason[ok & (assigned.max(axis=1) > 1)] = _REASONS.index("multiple_clusters")
    ok = reason == 0
    reason[ok & (csize.min(axis=1) < cfg.min_faces_cluster)] = _REASONS.index("small_cluster")
    return kmin, kmax


def _estimate_tables(ix: _NodeIndex, cfg: RapidConfig, reason: np.ndarray, z_all: np.ndarray,
                     member: np.ndarray, kmin: np.ndarray, kmax: np.ndarray,
                     assigned: np.ndarray, csize: np.ndarray) -> RapidEstimate:
    """The majority vote on the included queries' common faces, and the
    :class:`RapidEstimate` tables (``labels``, ``system_labels``, ``queries``)."""
    n_sys, n_nodes, node_q = ix.n_sys, ix.n_nodes, ix.node_q
    included = reason == 0
    node_in = included[node_q] & ix.common
    mv = majority_vote(member.T)
    label = np.where(node_in, mv, -1).astype(np.int8)
    votes = member.sum(axis=0)
    agree = np.where(node_in, (member.T == (label[:, None] == 1)).sum(axis=1), 0)
    with np.errstate(invalid="ignore"):
        amb = np.abs(z_all - cfg.tau).min(axis=0) if n_sys else np.full(n_nodes, np.nan)
    node_reason = np.where(ix.dropped, _REASONS.index("missing_pairs"), reason[node_q])
    node_reason = np.where(ix.common | ix.dropped, node_reason, _REASONS.index("missing_system"))
    reasons = np.array(_REASONS, dtype=object)
    face_codes = ix.nodes % len(ix.f_names)
    labels = pd.DataFrame({
        "query": ix.q_names[node_q], "face": ix.f_names[face_codes], "label": label,
        "votes": votes.astype(np.int64), "n_systems_agree": agree.astype(np.int64),
        "ambiguity": amb, "reason": _take_column(reasons, node_reason),
    }, copy=False)
    sys_label = np.where(node_in[None, :], member, -1).astype(np.int8)
    system_labels = pd.DataFrame({
        "query": _take_column(np.asarray(ix.q_names), np.tile(node_q, n_sys)),
        "face": _take_column(np.asarray(ix.f_names), np.tile(face_codes, n_sys)),
        "system": _take_column(np.asarray(ix.s_names, dtype=object),
                               np.repeat(np.arange(n_sys), n_nodes)),
        "label": sys_label.ravel(), "z": z_all.ravel(),
    }, copy=False)
    n_pos = np.bincount(node_q, weights=(label == 1), minlength=ix.n_q).astype(np.int64)
    queries = pd.DataFrame({
        "query": ix.q_names, "n_faces": ix.n_faces, "n_common": ix.n_common,
        "n_dropped": np.bincount(node_q, weights=ix.dropped, minlength=ix.n_q).astype(np.int64),
        "min_clusters": np.where(kmin == _NO_COUNT, -1, kmin), "max_clusters": kmax,
        "max_assigned": assigned.max(axis=1) if n_sys else np.full(ix.n_q, -1, np.int64),
        "min_cluster_size": csize.min(axis=1) if n_sys else 0,
        "included": included, "n_positive": n_pos, "reason": _take_column(reasons, reason),
    }, copy=False)
    labels.attrs["n_systems"] = n_sys
    return RapidEstimate(labels, system_labels, queries)


def _take_column(values: np.ndarray, codes: np.ndarray) -> Any:
    """``values[codes]`` as the column pandas infers from that array (``str`` for Python
    strings), the type inferred once on ``values`` (a few names), not on every row. The
    same column provided ``codes`` takes every element of ``values`` or the values are all
    of one type (pandas infers a column's type from the set of its values' types)."""
    return pd.Series(values, copy=False).array.take(codes)


def estimate_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                    fit_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """The method's final labels (strict majority vote across systems).

    Parameters
    ----------
    scores, cfg, fit_scores
        As in :func:`estimate`.

    Returns
    -------
    pandas.DataFrame
        :attr:`RapidEstimate.labels`: one row per (query, face) with ``label`` in
        {1, 0, -1} (-1 = excluded), ``votes``, ``n_systems_agree``, ``ambiguity`` and
        ``reason``.

    Raises
    ------
    ValueError
        As :func:`estimate`.
    """
    return estimate(scores, cfg, fit_scores).labels


def estimate_system_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                           fit_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-system labels (no majority vote, same inclusion set).

    Parameters
    ----------
    scores, cfg, fit_scores
        As in :func:`estimate`.

    Returns
    -------
    pandas.DataFrame
        :attr:`RapidEstimate.system_labels`: ``query, face, system, label, z``.

    Raises
    ------
    ValueError
        As :func:`estimate`.
    """
    return estimate(scores, cfg, fit_scores).system_labels


# --------------------------------------------------------------------------- baselines
def _faces_of(scores: pd.DataFrame) -> pd.DataFrame:
    require_columns(scores, ["query", "face_a", "face_b"], "scores")
    f = pd.DataFrame({"query": np.r_[scores["query"].astype(object).to_numpy(),
                                     scores["query"].astype(object).to_numpy()],
                      "face": np.r_[scores["face_a"].to_numpy(), scores["face_b"].to_numpy()]})
    return f.drop_duplicates().sort_values(["query"], kind="stable").reset_index(drop=True)


def naive_labels(scores: pd.DataFrame) -> pd.DataFrame:
    """The "no cleaning" baseline: every face of every query is labelled 1 (the queried
    person).

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores (needs ``query, face_a, face_b``).

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (all 1, int8), one row per distinct (query, face).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> scores = pd.DataFrame({"query": "q0", "face_a": [0, 0, 1], "face_b": [1, 2, 2]})
    >>> naive_labels(scores)["label"].tolist()
    [1, 1, 1]
    """
    f = _faces_of(scores)
    f["label"] = np.int8(1)
    return f


def single_best_system_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                              system: Any = None) -> pd.DataFrame:
    """The method run on one system's scores alone (its own inclusion set, no vote).

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores of every system.
    cfg : RapidConfig, optional
        The method's parameters.
    system : Any, optional
        The system; ``None`` picks, without truth, the system whose own labels (on the
        vote's inclusion set) agree most often with the majority vote.

    Returns
    -------
    pandas.DataFrame
        :func:`estimate_labels` of that system's scores; ``attrs["system"]`` names it.

    Raises
    ------
    ValueError
        If there are no scores for ``system``, or as :func:`estimate`.
    """
    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    if system is None:
        est = estimate(scores, cfg)
        final = np.tile(est.labels["label"].to_numpy(), est.labels.attrs["n_systems"])
        sl = est.system_labels.assign(same=(est.system_labels["label"].to_numpy() == final)
                                      & (final != -1))
        system = sl.groupby("system", sort=True)["same"].sum().idxmax()
    one = scores[scores["system"].astype(object).to_numpy() == system]
    if one.empty:
        raise ValueError(f"single_best_system_labels: no scores for system {system!r}")
    out = estimate_labels(one, cfg)
    out.attrs["system"] = system
    return out


def connected_components_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                                threshold: float = 0.5) -> pd.DataFrame:
    """Graph baseline (spec 2): per query, link faces whose normalised score, averaged over
    the systems that scored the pair, exceeds ``threshold``; the largest connected
    component is labelled 1, the other faces 0. Queries with fewer than
    ``cfg.min_faces_query`` faces, or whose largest component is tied or smaller than
    ``cfg.min_faces_cluster``, get -1.

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores (:data:`SCORE_COLUMNS`).
    cfg : RapidConfig, optional
        Normalisation and the face minimums.
    threshold : float, default 0.5
        Link threshold on the mean normalised score.

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (1/0/-1), ``reason`` ("" if included).

    Raises
    ------
    ValueError
        As :func:`estimate`.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    norm = normalise_scores(scores, cfg).to_numpy()
    q_codes, q_names = pd.factorize(scores["query"], sort=True)
    f_codes, f_names = pd.factorize(pd.concat([scores["face_a"], scores["face_b"]],
                                              ignore_index=True), sort=False)
    n = len(scores)
    key = np.r_[q_codes, q_codes].astype(np.int64) * len(f_names) + f_codes
    nodes, inv = np.unique(key, return_inverse=True)
    ia, ib = inv[:n], inv[n:]
    pair = np.minimum(ia, ib) * nodes.size + np.maximum(ia, ib)
    pk, pinv = np.unique(pair, return_inverse=True)
    mean = np.bincount(pinv, weights=norm) / np.bincount(pinv)
    edge = (mean > threshold) & (pk // nodes.size != pk % nodes.size)
    a, b = pk[edge] // nodes.size, pk[edge] % nodes.size
    graph = coo_matrix((np.ones(a.size), (a, b)), shape=(nodes.size, nodes.size))
    _, comp = connected_components(graph, directed=False)
    node_q = nodes // len(f_names)
    size = np.bincount(comp)[comp]
    frame = pd.DataFrame({"q": node_q, "comp": comp, "size": size})
    best = frame.groupby("q")["size"].max()
    n_best = frame[frame["size"] == frame["q"].map(best)].groupby("q")["comp"].nunique()
    n_faces = np.bincount(node_q, minlength=len(q_names))
    best_size = best.reindex(range(len(q_names)), fill_value=0).to_numpy()
    ties = n_best.reindex(range(len(q_names)), fill_value=0).to_numpy()
    why = np.full(len(q_names), "", dtype=object)
    why[best_size < cfg.min_faces_cluster] = "small_cluster"
    why[ties > 1] = "tie"
    why[n_faces < cfg.min_faces_query] = "too_few_faces"
    ok = why[node_q] == ""
    label = np.where(ok, (size == best_size[node_q]).astype(np.int8), -1).astype(np.int8)
    return pd.DataFrame({"query": q_names[node_q], "face": f_names[nodes % len(f_names)],
                         "label": label, "reason": why[node_q]})


# --------------------------------------------------------------------------- semi-supervised
def semi_supervised(labels: pd.DataFrame, truth: pd.DataFrame, fraction: float,
                    seed: int = 0) -> pd.DataFrame:
    """Paper App. G (spec 1.8): spend a budget of ``round(fraction x n_faces)`` human labels.

    1. Type-A first: faces with ``label == -1`` get their true label, whole queries at a
       time in a seeded random order (the last one may be partial).
    2. Then Type-B: the most ambiguous remaining faces (smallest ``ambiguity`` =
       ``min_s |z_s - tau|``, ties by the smaller vote margin ``|votes - S/2|``) get
       their true label.

    ``labels``: :func:`estimate_labels` output (``ambiguity``/``votes`` optional: without
    them phase 2 goes in row order). ``truth``: ``query, face, label`` (true 1/0, e.g.
    :func:`true_labels`). At ``fraction = 1`` every label is the true one.

    Parameters
    ----------
    labels : pandas.DataFrame
        Estimated labels.
    truth : pandas.DataFrame
        True labels of every face of ``labels``.
    fraction : float
        Share of faces annotated, in [0, 1].
    seed : int, default 0
        Order of the Type-A queries.

    Returns
    -------
    pandas.DataFrame
        ``labels`` with ``label`` updated and a bool ``annotated`` column.

    Raises
    ------
    ValueError
        For ``fraction`` outside [0, 1], a missing column, duplicate truth keys, or a
        face without a true label.

    Examples
    --------
    >>> labels = pd.DataFrame({"query": "q0", "face": [0, 1, 2, 3], "label": [1, 1, -1, 1]})
    >>> truth = pd.DataFrame({"query": "q0", "face": [0, 1, 2, 3], "label": [1, 1, 1, 0]})
    >>> semi_supervised(labels, truth, 0.25)  # one annotation: the excluded face first
      query  face  label  annotated
    0    q0     0      1      False
    1    q0     1      1      False
    2    q0     2      1       True
    3    q0     3      1      False
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"semi_supervised: fraction must be in [0, 1], got {fraction}")
    require_columns(labels, ["query", "face", "label"], "labels")
    y = _lookup(truth, labels["query"], labels["face"], "truth")
    if (y < 0).any():
        raise ValueError("semi_supervised: truth has no label for some faces of labels")
    out = labels.copy()
    lab = out["label"].to_numpy().astype(np.int8)
    n = lab.size
    budget = int(round(fraction * n))
    rng = np.random.default_rng(seed)
    excluded = np.flatnonzero(lab == -1)
    qcodes = pd.factorize(out["query"])[0]
    qs = np.unique(qcodes[excluded])
    rng.shuffle(qs)
    rank_q = np.empty(qcodes.max() + 1 if n else 0, np.int64)
    rank_q[qs] = np.arange(qs.size)
    phase_a = excluded[np.lexsort((excluded, rank_q[qcodes[excluded]]))]
    rest = np.flatnonzero(lab != -1)
    amb = out["ambiguity"].to_numpy(np.float64) if "ambiguity" in out else np.zeros(n)
    amb = np.where(np.isnan(amb), np.inf, amb)
    if "votes" in out and "ambiguity" in out:
        n_sys = out.attrs.get("n_systems")
        votes = out["votes"].to_numpy(np.float64)
        half = (n_sys if n_sys else max(votes.max(initial=0), 1)) / 2
        margin = np.abs(votes - half)
    else:
        margin = np.zeros(n)
    phase_b = rest[np.lexsort((rest, margin[rest], amb[rest]))]
    chosen = np.r_[phase_a, phase_b][:budget]
    annotated = np.zeros(n, bool)
    annotated[chosen] = True
    lab[chosen] = y[chosen]
    out["label"] = lab
    out["annotated"] = annotated
    return out


# --------------------------------------------------------------------------- truth helpers
def _shared_codes(*columns: Any) -> tuple[list[np.ndarray], pd.Index]:
    """Integer codes of several columns over one shared set of values (-1: missing).

    Each column is factorised on its own (categoricals by their codes), and only the
    small sets of distinct values are matched, so large string columns are not copied.
    """
    facts = []
    for c in columns:
        s = c if isinstance(c, pd.Series) else pd.Series(np.asarray(c, dtype=object))
        if isinstance(s.dtype, pd.CategoricalDtype):
            facts.append((s.cat.codes.to_numpy().astype(np.int64), s.cat.categories))
        else:
            codes, uniq = pd.factorize(s)
            facts.append((codes.astype(np.int64), uniq))
    objs = [np.asarray(u, dtype=object) for _, u in facts]
    values = pd.Index(pd.unique(np.concatenate(objs)) if objs else [], dtype=object)
    out = []
    for (codes, _), u in zip(facts, objs, strict=True):
        m = values.get_indexer(u) if u.size else np.zeros(1, np.int64)
        out.append(np.where(codes >= 0, m[np.maximum(codes, 0)], -1))
    return out, values


def _lookup(table: pd.DataFrame, query: Any, face: Any, what: str = "labels",
            column: str = "label") -> np.ndarray:
    """``table[column]`` at the (query, face) keys; -1 where the key is absent."""
    require_columns(table, ["query", "face", column], what)
    (tq, q), qv = _shared_codes(table["query"], query)
    (tf, f), fv = _shared_codes(table["face"], face)
    tk = tq.astype(np.int64) * (len(fv) + 1) + tf
    k = q.astype(np.int64) * (len(fv) + 1) + f
    order = np.argsort(tk, kind="stable")
    sk = tk[order]
    if (sk[1:] == sk[:-1]).any():
        raise ValueError(f"{what}: (query, face) keys must be unique")
    pos = np.clip(np.searchsorted(sk, k), 0, max(sk.size - 1, 0))
    vals = table[column].to_numpy().astype(np.int64)[order]
    hit = (sk.size > 0) & (sk[pos] == k) & (q >= 0) & (f >= 0) if sk.size else np.zeros(k.size, bool)
    return np.where(hit, vals[pos] if sk.size else -1, -1)


def true_labels(faces: pd.DataFrame) -> pd.DataFrame:
    """Ground truth as a label table (1 iff ``is_target``).

    Parameters
    ----------
    faces : pandas.DataFrame
        ``query, face, is_target`` (the synthetic world's face table).

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (int8 1/0).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> faces = pd.DataFrame({"face": [0, 1], "query": "q0", "is_target": [True, False]})
    >>> true_labels(faces)
      query  face  label
    0    q0     0      1
    1    q0     1      0
    """
    require_columns(faces, ["query", "face", "is_target"], "faces")
    return pd.DataFrame({"query": faces["query"].astype(object).to_numpy(),
                         "face": faces["face"].to_numpy(),
                         "label": faces["is_target"].to_numpy().astype(np.int8)})


def oracle_labels(labels: pd.DataFrame, faces: pd.DataFrame) -> pd.DataFrame:
    """Spec B2: the true labels on the estimated test set (faces with ``label != -1``),
    -1 elsewhere; only Type-A (exclusion) error remains.

    Parameters
    ----------
    labels : pandas.DataFrame
        Estimated labels (``query, face, label``).
    faces : pandas.DataFrame
        The world's faces (``query, face, is_target``).

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (int8 1/0/-1; -1 also for a face missing from ``faces``).

    Raises
    ------
    ValueError
        For a missing column or duplicate (query, face) keys in ``faces``.

    Examples
    --------
    >>> faces = pd.DataFrame({"face": [0, 1, 2], "query": "q0", "is_target": [True, True, False]})
    >>> labels = pd.DataFrame({"query": "q0", "face": [0, 1, 2], "label": [1, -1, 1]})
    >>> oracle_labels(labels, faces)["label"].tolist()
    [1, -1, 0]
    """
    y = _lookup(true_labels(faces), labels["query"], labels["face"], "faces")
    out = labels[["query", "face"]].copy()
    out["label"] = np.where(labels["label"].to_numpy() == -1, -1, y).astype(np.int8)
    return out


def label_agreement(labels: pd.DataFrame, faces: pd.DataFrame) -> dict[str, float]:
    """Estimated vs true labels.

    Parameters
    ----------
    labels : pandas.DataFrame
        Estimated labels (``query, face, label``).
    faces : pandas.DataFrame
        The world's faces (``query, face, is_target``).

    Returns
    -------
    dict
        Shares (fractions): ``agreement`` (of included faces, ``label != -1``, whose label
        is right), ``coverage`` (faces not -1), ``accuracy_all`` (right with -1 counted
        wrong), the error types ``type_a`` (excluded) and ``type_b`` (wrong among all
        faces); counts ``n_faces``, ``n_included``.

    Raises
    ------
    ValueError
        For a missing column or a labelled face that is not in ``faces``.

    Examples
    --------
    >>> faces = pd.DataFrame({"face": [0, 1, 2, 3], "query": "q0",
    ...                       "is_target": [True, True, True, False]})
    >>> labels = pd.DataFrame({"query": "q0", "face": [0, 1, 2, 3], "label": [1, 1, -1, 1]})
    >>> a = label_agreement(labels, faces)
    >>> a["coverage"], a["type_a"], a["type_b"]  # face 2 excluded, face 3 wrong
    (0.75, 0.25, 0.25)
    """
    require_columns(labels, ["query", "face", "label"], "labels")
    y = _lookup(true_labels(faces), labels["query"], labels["face"], "faces")
    if (y < 0).any():
        raise ValueError("label_agreement: some labelled faces are not in faces")
    est = labels["label"].to_numpy()
    inc = est != -1
    n, k = est.size, int(inc.sum())
    right = est == y
    return {
        "agreement": float(right[inc].mean()) if k else float("nan"),
        "coverage": k / n if n else float("nan"),
        "accuracy_all": float(right.mean()) if n else float("nan"),
        "n_faces": int(n), "n_included": k,
        "type_a": float((~inc).mean()) if n else float("nan"),
        "type_b": float((inc & ~right).mean()) if n else float("nan"),
    }


# --------------------------------------------------------------------------- evaluation
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
    e = fnmr_table(est_pairs, fmr, min_impostor_factor, by_group)[[*cols, "fnmr"]]
    t = fnmr_table(true_pairs, fmr, min_impostor_factor, by_group)[[*cols, "fnmr"]]
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
    t = fnmr_table(pairs, [fmr], by_group=group != ALL)
    t = t[t["group"] == group].sort_values(["fnmr", "system"], kind="stable")
    t["rank"] = t["fnmr"].rank(method="min").astype("Int64")
    return t[["system", "fnmr", "rank"]].reset_index(drop=True)


# --------------------------------------------------------------------------- study summaries
# What notebooks/rapid_test.py reports, as functions of a world. ``world``: anything with
# ``faces``, ``scores`` and ``cross_scores`` (:class:`facebias.worlds.rapid.RapidWorld`).
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


def voting_ablation(world: Any, est: RapidEstimate, cfg: RapidConfig | None = None,
                    fmr: float = 0.01, true: pd.DataFrame | None = None) -> pd.DataFrame:
    """Fig. S.7: ``|FNMR_est - FNMR_true|`` at ``fmr`` per system (rows) for five label
    sources (columns, in this order):

    * ``"majority vote"``: the method's labels (``est.labels``);
    * ``"own labels (no MV)"``: each system's own labels on the vote's inclusion set
      (``est.system_labels``), scored on that system's pairs only;
    * ``"single system (<name>)"``: :func:`single_best_system_labels` (the method run on
      the best-separated system alone, chosen without truth);
    * ``"connected components"``: :func:`connected_components_labels`;
    * ``"naive"``: :func:`naive_labels`.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``.
    est : RapidEstimate
        :func:`estimate` of ``world.scores`` with ``cfg``.
    cfg : RapidConfig, optional
        The method's parameters.
    fmr : float, default 0.01
        Target FMR.
    true : pandas.DataFrame, optional
        The true pairs (:func:`true_pairs` of the world; computed when ``None``).

    Returns
    -------
    pandas.DataFrame
        Rows systems, columns the five label sources; fractions.

    Raises
    ------
    ValueError
        As :func:`estimate` and :func:`fnmr_table`.
    """
    cfg = cfg or RapidConfig()
    if true is None:
        true = true_pairs(world.faces, world.scores, world.cross_scores)

    def delta(labels: pd.DataFrame, system: Any = None) -> pd.Series:
        t = true if system is None else true.loc[true["system"] == system]
        return delta_fnmr_by_system(world_pairs(world, labels, system), t, [fmr])[fmr]

    sl = est.system_labels
    own = {s: delta(sl.loc[sl["system"] == s, ["query", "face", "label"]], s).loc[s]
           for s in pd.unique(sl["system"])}
    single = single_best_system_labels(world.scores, cfg)
    return pd.DataFrame({
        "majority vote": delta(est.labels),
        "own labels (no MV)": pd.Series(own, dtype=np.float64),
        f"single system ({single.attrs['system']})": delta(single),
        "connected components": delta(connected_components_labels(world.scores, cfg)),
        "naive": delta(naive_labels(world.scores)),
    })


def semi_supervised_curve(world: Any, labels: pd.DataFrame, fractions: Sequence[float],
                          fmr: float = 0.01, seed: int = 0, true: pd.DataFrame | None = None,
                          ) -> tuple[pd.DataFrame, dict[float, dict[Any, DetCurve]]]:
    """App. G / Fig. S.15: the error left after annotating a fraction of the faces.

    For each ``f`` in ``fractions``: :func:`semi_supervised` labels (``labels`` = the
    method's :func:`estimate_labels` output, the world's true labels, budget ``f``,
    ``seed``), then ``|FNMR_est - FNMR_true|`` at ``fmr`` per system. Returns ``(table,
    curves)``: ``table`` indexed by ``"fraction annotated"`` with one column per system;
    ``curves[f][system]``: the pooled DET curve (raw scores) of the labels at ``f`` (systems
    with no genuine or no impostor pair left out). At ``f = 0`` the labels are ``labels``;
    at ``f = 1`` every label is the true one, so the error is 0 wherever it is defined.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``.
    labels : pandas.DataFrame
        The method's :func:`estimate_labels` output.
    fractions : sequence of float
        Annotated fractions, in [0, 1].
    fmr : float, default 0.01
        Target FMR.
    seed : int, default 0
        Seed of :func:`semi_supervised`.
    true : pandas.DataFrame, optional
        The true pairs; computed when ``None``.

    Returns
    -------
    table : pandas.DataFrame
        ``|FNMR_est - FNMR_true|``, rows fractions, columns systems.
    curves : dict
        Fraction -> system -> pooled DET curve.

    Raises
    ------
    ValueError
        As :func:`semi_supervised` and :func:`fnmr_table`.
    """
    if true is None:
        true = true_pairs(world.faces, world.scores, world.cross_scores)
    truth = true_labels(world.faces)
    rows, curves = {}, {}
    for f in fractions:
        p_f = world_pairs(world, semi_supervised(labels, truth, f, seed=seed))
        rows[f] = delta_fnmr_by_system(p_f, true, [fmr])[fmr]
        curves[f] = {s: det_curve(gen, imp) for s, _, gen, imp in _split(p_f, by_group=False)
                     if gen.size and imp.size}
    table = pd.DataFrame(rows).T
    table.index.name = "fraction annotated"
    return table, curves


def sweep_point(world: Any, cfg: RapidConfig | None = None,
                fmr: Sequence[float] = (0.01, 0.001)) -> dict[str, float]:
    """One point of the p sweep: the method on ``world`` (GMM also fit on the cross pairs).

    Keys: ``agreement``, ``type_a``, ``type_b`` (:func:`label_agreement`),
    ``queries_included`` (share of queries kept), and per FMR ``f``:
    ``method_worst@f`` / ``method_mean@f`` (the largest / mean ``|FNMR_est - FNMR_true|``
    over the systems) and ``naive_min@f`` (the smallest over systems with the naive
    labels). A statistic over systems skips NaN systems and is NaN if all are NaN.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``.
    cfg : RapidConfig, optional
        The method's parameters.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs.

    Returns
    -------
    dict of str to float
        The keys above; shares and |ΔFNMR| are fractions.

    Raises
    ------
    ValueError
        As :func:`estimate` and :func:`fnmr_table`.
    """
    e = estimate(world.scores, cfg, fit_scores=world.cross_scores)
    tp = true_pairs(world.faces, world.scores, world.cross_scores)
    a = label_agreement(e.labels, world.faces)
    dm = delta_fnmr_by_system(world_pairs(world, e.labels), tp, fmr)
    dn = delta_fnmr_by_system(world_pairs(world, naive_labels(world.scores)), tp, fmr)
    return {"agreement": a["agreement"], "queries_included": float(e.queries["included"].mean()),
            "type_a": a["type_a"], "type_b": a["type_b"],
            **{f"method_worst@{f:g}": float(dm[f].max()) for f in fmr},
            **{f"method_mean@{f:g}": float(dm[f].mean()) for f in fmr},
            **{f"naive_min@{f:g}": float(dn[f].min()) for f in fmr}}


def p_sweep(make_world: Any, p_values: Sequence[float], seeds: Sequence[int],
            cfg: RapidConfig | None = None, fmr: Sequence[float] = (0.01, 0.001)) -> pd.DataFrame:
    """:func:`sweep_point` for every ``p`` in ``p_values`` and ``seed`` in ``seeds``, on
    ``make_world(p, seed)`` (e.g. ``make_rapid_world`` of a config with that ``p`` and
    ``seed``).

    Parameters
    ----------
    make_world : callable
        ``(p, seed)`` -> a world.
    p_values : sequence of float
        Shares of a query's faces that show the queried person.
    seeds : sequence of int
        World seeds per ``p``.
    cfg : RapidConfig, optional
        The method's parameters.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs.

    Returns
    -------
    pandas.DataFrame
        One row per (p, seed): ``p, seed`` then the :func:`sweep_point` keys.
    """
    return pd.DataFrame([{"p": p, "seed": seed, **sweep_point(make_world(p, seed), cfg, fmr)}
                         for p in p_values for seed in seeds])


def sweep_by_p(sweep: pd.DataFrame) -> pd.DataFrame:
    """The :func:`p_sweep` table averaged over seeds.

    Parameters
    ----------
    sweep : pandas.DataFrame
        :func:`p_sweep` rows (needs ``p``).

    Returns
    -------
    pandas.DataFrame
        One row per ``p`` (the index, ascending), the mean of every other column except
        ``seed`` (NaN skipped).

    Raises
    ------
    ValueError
        For a missing ``p`` column.

    Examples
    --------
    >>> sweep = pd.DataFrame({"p": [0.3, 0.3, 0.7], "seed": [1, 2, 1],
    ...                       "method_worst@0.01": [0.2, 0.3, 0.01]})
    >>> sweep_by_p(sweep)
         method_worst@0.01
    p
    0.3               0.25
    0.7               0.01
    """
    require_columns(sweep, ["p"], "sweep")
    return sweep.drop(columns="seed", errors="ignore").groupby("p").mean()


def breakdown_p(sweep: pd.DataFrame, fmr: float = 0.01) -> float | None:
    """Where the method breaks in a p sweep: the **largest** swept ``p`` at which its curve
    error is no better than the naive labels', or ``None`` if there is none.

    ``sweep``: :func:`p_sweep` rows (several seeds per ``p`` are averaged first, as in
    :func:`sweep_by_p`) with columns ``p``, ``method_worst@<fmr>`` and
    ``naive_min@<fmr>`` (``<fmr>`` formatted ``{:g}``). The method is *broken* at ``p`` iff

        mean over seeds of max_s |dFNMR_method(s)|  >=  mean over seeds of min_s |dFNMR_naive(s)|

    at ``fmr``: its worst system's curve is at least as far from the truth as the naive
    labels' best. A ``p`` where either number is NaN (too few pairs) is not judged. So the
    method beats the naive labels at every judged ``p`` above the returned value; a break
    below a working ``p`` still counts (the largest broken ``p`` is returned).

    Parameters
    ----------
    sweep : pandas.DataFrame
        :func:`p_sweep` rows.
    fmr : float, default 0.01
        The FMR whose columns are compared.

    Returns
    -------
    float or None
        The largest broken ``p`` (a fraction), or ``None``.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> sweep = pd.DataFrame({"p": [0.3, 0.3, 0.5, 0.7], "seed": [1, 2, 1, 1],
    ...                       "method_worst@0.01": [0.2, 0.3, 0.05, 0.01],
    ...                       "naive_min@0.01": [0.2, 0.2, 0.3, 0.2]})
    >>> breakdown_p(sweep)  # at p = 0.3 the method (0.25) is no better than naive (0.2)
    0.3
    """
    worst, naive = f"method_worst@{fmr:g}", f"naive_min@{fmr:g}"
    require_columns(sweep, ["p", worst, naive], "sweep")
    by_p = sweep_by_p(sweep[["p", worst, naive]])
    broken = by_p.index[(by_p[worst] >= by_p[naive]).to_numpy()]  # NaN compares False
    return float(broken.max()) if len(broken) else None


# --------------------------------------------------------------------------- the study's summary (notebooks/rapid_test.py)
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

    est = fnmr_table(est_pairs, [fmr], by_group=False)
    true = fnmr_table(true_pairs, [fmr], by_group=False)
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


# --------------------------------------------------------------------------- Figs. S.6, S.13, S.14
def query_counts(labels: pd.DataFrame, faces: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """Per query, the true and the estimated number and share of faces of the queried
    person, and whether the query was included (Fig. S.6).

    Parameters
    ----------
    labels : pandas.DataFrame
        The method's labels ``query, face, label`` (1, 0, -1 = excluded).
    faces : pandas.DataFrame
        ``query, face, is_target`` (the world's truth, or a human annotation).
    queries : pandas.DataFrame
        :attr:`RapidEstimate.queries` (``query, included``).

    Returns
    -------
    pandas.DataFrame
        One row per query of ``faces``: ``query, n_faces, n_true, share_true, n_est``
        (faces labelled 1; 0 for an excluded query), ``included`` (bool).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> faces = pd.DataFrame({"query": ["a"] * 3 + ["b"] * 2, "face": [0, 1, 2, 3, 4],
    ...                       "is_target": [True, True, False, True, False]})
    >>> labels = pd.DataFrame({"query": ["a"] * 3 + ["b"] * 2, "face": [0, 1, 2, 3, 4],
    ...                        "label": [1, 1, 1, -1, -1]})
    >>> queries = pd.DataFrame({"query": ["a", "b"], "included": [True, False]})
    >>> query_counts(labels, faces, queries)
      query  n_faces  n_true  share_true  n_est  included
    0     a        3       2    0.666667      3      True
    1     b        2       1    0.500000      0     False
    """
    require_columns(labels, ["query", "face", "label"], "labels")
    require_columns(faces, ["query", "face", "is_target"], "faces")
    require_columns(queries, ["query", "included"], "queries")
    f = faces.astype({"query": str}).groupby("query", sort=True)["is_target"].agg(["size", "sum"])
    est = (labels.astype({"query": str}).assign(one=lambda d: d["label"] == 1)
           .groupby("query", sort=True)["one"].sum())
    inc = queries.astype({"query": str}).set_index("query")["included"]
    out = pd.DataFrame({"query": f.index, "n_faces": f["size"].to_numpy(),
                        "n_true": f["sum"].to_numpy().astype(int)})
    out["share_true"] = out["n_true"] / out["n_faces"]
    out["n_est"] = est.reindex(out["query"]).fillna(0).astype(int).to_numpy()
    out["included"] = inc.reindex(out["query"]).fillna(False).astype(bool).to_numpy()
    return out


def system_subsets(world: Any, cfg: RapidConfig | None = None, fmr: Sequence[float] = (0.01, 0.001),
                   sizes: Sequence[int] = (3, 4, 5), true: pd.DataFrame | None = None) -> pd.DataFrame:
    """The method run on each subset of the systems (Fig. S.13): which systems vote changes
    every system's |ΔFNMR|.

    Parameters
    ----------
    world : Any
        ``faces, scores, cross_scores`` (:class:`facebias.worlds.rapid.RapidWorld`).
    cfg : RapidConfig, optional
        The method (default ``RapidConfig()``).
    fmr : sequence of float, default (0.01, 0.001)
        FMRs at which |ΔFNMR| is read.
    sizes : sequence of int, default (3, 4, 5)
        Subset sizes (each in 1 .. number of systems).
    true : pandas.DataFrame, optional
        :func:`true_pairs` of the world (computed when not given).

    Returns
    -------
    pandas.DataFrame
        One row per subset and member system: ``subset`` ("+"-joined names), ``size``,
        ``system``, ``queries_included`` and one column per FMR (|ΔFNMR|, fractions).

    Raises
    ------
    ValueError
        For a size outside 1 .. number of systems, or as :func:`estimate`.
    """
    from itertools import combinations

    names = sorted(pd.unique(world.scores["system"]).tolist())
    if any(not 1 <= int(k) <= len(names) for k in sizes):
        raise ValueError(f"sizes must be in 1..{len(names)}, got {list(sizes)}")
    true = true_pairs(world.faces, world.scores, world.cross_scores) if true is None else true
    rows = []
    for k in sizes:
        for sub in combinations(names, int(k)):
            s = world.scores[world.scores["system"].isin(sub)]
            c = world.cross_scores[world.cross_scores["system"].isin(sub)]
            est = estimate(s, cfg, fit_scores=c)
            pairs = genuine_impostor_pairs(est.labels, world.faces, s, c)
            d = delta_fnmr_by_system(pairs, true[true["system"].isin(sub)], fmr)
            for sys_name in sub:
                rows.append({"subset": "+".join(sub), "size": int(k), "system": sys_name,
                             "queries_included": float(est.queries["included"].mean()),
                             **{f: float(d.loc[sys_name, f]) for f in d.columns}})
    return pd.DataFrame(rows)


def model_change(world_before: Any, world_after: Any, system: Any, cfg: RapidConfig | None = None,
                 fmr: Sequence[float] = (0.01, 0.001)) -> pd.DataFrame:
    """A system's model replaced on the same images (Fig. S.14): its FNMR before and after,
    estimated by the method on each world and from the truth.

    Parameters
    ----------
    world_before, world_after : Any
        Two worlds with the same faces whose ``system`` scores differ (e.g. the noise of that
        system changed; :func:`facebias.worlds.rapid.make_rapid_world` with the same seed).
    system : Any
        The changed system.
    cfg : RapidConfig, optional
        The method.
    fmr : sequence of float, default (0.01, 0.001)
        FMRs.

    Returns
    -------
    pandas.DataFrame
        One row per FMR: ``fmr, est_before, est_after, true_before, true_after,
        est_change, true_change`` (after − before; negative = the model improved;
        fractions).

    Raises
    ------
    ValueError
        If the worlds' faces differ, or as :func:`estimate`.
    """
    if not world_before.faces.equals(world_after.faces):
        raise ValueError("model_change: both worlds must hold the same faces")
    out = {}
    for when, w in (("before", world_before), ("after", world_after)):
        est = estimate(w.scores, cfg, fit_scores=w.cross_scores)
        for kind, pairs in (("est", world_pairs(w, est.labels, system)),
                            ("true", genuine_impostor_pairs(true_labels(w.faces), w.faces,
                                                            w.scores[w.scores["system"] == system],
                                                            w.cross_scores[w.cross_scores["system"] == system]))):
            t = fnmr_table(pairs, fmr, by_group=False)
            out[f"{kind}_{when}"] = t.set_index("fmr")["fnmr"]
    res = pd.DataFrame(out).rename_axis("fmr").reset_index()
    res["est_change"] = res["est_after"] - res["est_before"]
    res["true_change"] = res["true_after"] - res["true_before"]
    return res


# --------------------------------------------------------------------------- bias detection (Fig. 5)
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


def _per_fmr(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    return {f"{f:g}": {s: float(v) for s, v in table[f].items()} for f in table.columns}


def summarise(*, provenance: str, world_config: Any, world: Any, estimate: RapidEstimate,
              agreement: Mapping[str, float], deltas: Mapping[str, pd.DataFrame], kendall_tau: float,
              eer: pd.DataFrame, voting: pd.DataFrame, semi: pd.DataFrame, semi_p: float,
              fmr: Sequence[float], by_p: pd.DataFrame, breakdown: float | None,
              bias: Mapping[str, Any], subsets: pd.DataFrame, model_change: pd.DataFrame,
              model_change_system: Any) -> dict[str, Any]:
    """What ``reports/metrics/rapid.json`` holds (no run times: same params, same bytes).

    ``deltas``: ``method``, ``naive``, ``type_a``, ``type_b`` -> :func:`delta_fnmr_by_system`
    tables (|ΔFNMR| per system x FMR); ``eer``: :func:`eer_comparison`; ``voting``:
    :func:`voting_ablation`; ``semi``: :func:`semi_supervised_curve`'s table (fraction x
    system); ``by_p``: :func:`sweep_by_p`; ``breakdown``: :func:`breakdown_p` at ``fmr[0]``.

    Parameters
    ----------
    provenance : str
        Provenance line.
    world_config : Any
        The world's :class:`facebias.worlds.rapid.RapidWorldConfig`.
    world : Any
        The world (``faces``, ``scores``, ``cross_scores``).
    estimate : RapidEstimate
        The method's output on the world.
    agreement : mapping
        :func:`label_agreement` of the estimated labels.
    deltas, eer, voting, semi, by_p, breakdown
        As above.
    kendall_tau : float
        :func:`ranking_agreement`.
    semi_p : float
        p of the partial-annotation world.
    fmr : sequence of float
        Target FMRs; the first is the headline.
    bias : mapping
        :func:`bias_summary` (per-group bias detection, Fig. 5).
    subsets : pandas.DataFrame
        :func:`system_subsets` (Fig. S.13); stored as the mean |ΔFNMR| at ``fmr[0]`` per
        subset size, and the largest of any member.
    model_change : pandas.DataFrame
        :func:`model_change` (Fig. S.14), of ``model_change_system``.
    model_change_system : Any
        The system whose model was changed.

    Returns
    -------
    dict
        The ``rapid`` metrics (schema ``SCHEMAS["rapid"]`` of :mod:`facebias.schema`);
        rates and shares are fractions.
    """
    f0 = fmr[0]
    return {
        "paper": "001",
        "provenance": provenance,
        "world": {"seed": world_config.seed, "p": world_config.p, "groups": list(world_config.groups),
                  "queries_per_group": world_config.queries_per_group, "systems": list(world_config.systems),
                  "bias": {str(s): {str(g): float(f) for g, f in per.items()}
                           for s, per in world_config.bias.items()}},
        "n_faces": int(len(world.faces)),
        "queries_included": float(estimate.queries["included"].mean()),
        "label_agreement": agreement["agreement"],
        "coverage": agreement["coverage"],
        "type_a": agreement["type_a"],
        "type_b": agreement["type_b"],
        "kendall_tau_fnmr": float(kendall_tau),
        "delta_fnmr": _per_fmr(deltas["method"]),
        "delta_fnmr_naive": _per_fmr(deltas["naive"]),
        "delta_fnmr_type_a": _per_fmr(deltas["type_a"]),
        "delta_fnmr_type_b": _per_fmr(deltas["type_b"]),
        "eer_abs_error_max": float(eer["delta"].max()),
        "voting": {c: {s: float(v) for s, v in voting[c].items()} for c in voting.columns},
        "semi_supervised": {"p": semi_p, "fmr": f0,
                            "delta_mean": {f"{f:g}": float(semi.loc[f].mean()) for f in semi.index}},
        "p_sweep": by_p.reset_index().to_dict(orient="records"),
        # the largest swept p where the method's worst |ΔFNMR| >= the naive best
        "breakdown": {"p": breakdown, "fmr": f0,
                      "agreement": None if breakdown is None else float(by_p.loc[breakdown, "agreement"])},
        "bias": dict(bias),
        "subsets": {"fmr": f0, "mean_delta_by_size": {str(k): float(v) for k, v in
                                                      subsets.groupby("size")[f0].mean().items()},
                    "max_delta_by_size": {str(k): float(v) for k, v in subsets.groupby("size")[f0].max().items()}},
        "model_change": {"system": str(model_change_system),
                         **{f"{r['fmr']:g}": {c: float(r[c]) for c in ("est_before", "est_after", "true_before",
                                                                       "true_after", "est_change", "true_change")}
                            for _, r in model_change.iterrows()}},
    }
