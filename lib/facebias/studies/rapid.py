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
* inclusion (5 #4, #5): a query is kept iff its common face set (faces scored by every
  system) has at least ``min_faces_query`` faces, its matrices are complete, and for
  *every* system ``K == 1`` with at least ``min_faces_cluster`` members (checked per
  system, before the vote).
* final label: strict majority ``votes > S / 2`` over the systems (5 #21); excluded faces
  get -1.

Conventions: scores are similarities (a pair matches iff ``score > t``); rates are
fractions. Score tables have columns ``query, face_a, face_b, system, score`` (one row
per within-query pair and system); cross-query tables add ``query_b`` (the query of
``face_b``). Label tables have ``query, face, label`` with label 1 (the queried person),
0 (someone else) or -1 (excluded). Face tables have ``face, query, group`` (+
``is_target`` in the synthetic world, :func:`facebias.world.make_rapid_world`).

API: :class:`RapidConfig`; :func:`normalise_scores`, :func:`gmm_modes`,
:func:`query_matrix`, :func:`cluster_count`, :func:`membership`, :func:`majority_vote`;
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from facebias.io import config_from_params
from facebias.metrics import (
    DetCurve,
    check_scores,
    det_curve,
    eer,
    fnmr_at,
    require_columns,
    threshold_at_fmr,
)
from facebias.stats import wilson_interval

__all__ = [
    "ALL",
    "RapidConfig",
    "RapidEstimate",
    "SCORE_COLUMNS",
    "gmm_modes",
    "normalise_scores",
    "query_matrix",
    "cluster_count",
    "membership",
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

    ``eig_threshold`` T (paper: 4), ``gap_ratio`` (authors' code: 1.5), ``rule`` "gap"
    (code) or "strict" (paper: exactly one eigenvalue > T), ``tau`` (0.2) on ``z``,
    ``min_faces_query`` (8, common face set), ``min_faces_cluster`` (5, per system),
    ``normalise`` "gmm" | "none" (scores already in [0, 1]-like units: only clipped),
    ``modes``: system -> [lo, hi] fixed by hand (skips the GMM for that system),
    ``gmm_seed`` (42), ``gmm_max_fit``: the GMM is fit on at most this many scores per
    system (a seeded subsample; 0 = all).
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
        if self.rule not in ("gap", "strict"):
            raise ValueError(f"rapid.rule must be 'gap' or 'strict', got {self.rule!r}")
        if self.normalise not in ("gmm", "none"):
            raise ValueError(f"rapid.normalise must be 'gmm' or 'none', got {self.normalise!r}")
        if not self.eig_threshold >= 0 or not self.gap_ratio >= 1:
            raise ValueError("rapid: need eig_threshold >= 0 and gap_ratio >= 1")
        for key in ("min_faces_query", "min_faces_cluster", "gmm_max_fit"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise ValueError(f"rapid.{key} must be an integer >= 0, got {v!r}")
        for s, m in self.modes.items():
            if len(m) != 2 or not float(m[0]) < float(m[1]):
                raise ValueError(f"rapid.modes.{s} must be [lo, hi] with lo < hi, got {m!r}")

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> RapidConfig:
        """Build from the ``params.yaml`` ``rapid`` section (missing keys: defaults)."""
        return config_from_params(cls, dict(d), "rapid")


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

    ``scores``: columns ``system, score``. ``fit_scores`` (optional, same columns): more
    scores of the same systems (e.g. the cross-query pairs) to fit the modes on as well,
    as the authors' code does. Returns a float64 Series aligned with ``scores``.
    """
    cfg = cfg or RapidConfig()
    require_columns(scores, ["system", "score"], "scores")
    raw = check_scores(scores["score"].to_numpy(), "scores.score", scores.index)
    out = np.empty(raw.size)
    codes, systems = pd.factorize(scores["system"], sort=True)
    extra_sys = extra = None
    if fit_scores is not None:
        require_columns(fit_scores, ["system", "score"], "fit_scores")
        extra = check_scores(fit_scores["score"].to_numpy(), "fit_scores.score")
        extra_sys = fit_scores["system"].astype(str).to_numpy()
    for k, s in enumerate(systems):
        rows = codes == k
        v = raw[rows].astype(np.float64)
        if cfg.normalise == "none":
            out[rows] = np.clip(v, 0.0, 1.0)
            continue
        if s in cfg.modes:
            lo, hi = (float(m) for m in cfg.modes[s])
        else:
            fit = v if extra is None else np.r_[v, extra[extra_sys == str(s)]]
            lo, hi = gmm_modes(fit, cfg.gmm_seed, cfg.gmm_max_fit)
        out[rows] = np.clip((v - lo) / (hi - lo), 0.0, 1.0)
    return pd.Series(out, index=scores.index, name="score_norm")


# --------------------------------------------------------------------------- spectral step
def query_matrix(scores: pd.DataFrame, fill: float = np.nan) -> tuple[list, np.ndarray]:
    """The symmetric matrix of one (query, system): ``(faces, C)`` with ``C[i, j]`` the
    score of ``faces[i], faces[j]``, diagonal 1, missing pairs ``fill``.

    ``scores``: columns ``face_a, face_b, score`` (already normalised for estimation).
    Faces are in order of first appearance.
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
    w, v = np.linalg.eigh(mats)
    order = np.argsort(-np.abs(w), axis=-1, kind="stable")
    s = np.take_along_axis(np.abs(w), order, axis=-1)
    u = np.take_along_axis(v, order[..., None, :1], axis=-1)[..., 0]
    return s, u


def cluster_count(eigenvalues: np.ndarray, threshold: float = 4.0, gap_ratio: float = 1.5,
                  rule: str = "gap") -> np.ndarray | int:
    """How many identities a query holds, from its eigenvalues (any order, any sign;
    the absolute values are used, as the code's SVD does). Works on the last axis.

    ``rule="gap"`` (authors' code): with ``S`` descending, the largest ``i`` such that
    ``S[i-1] / S[i] > gap_ratio`` and ``S[i-1] > threshold``, else 0. ``rule="strict"``
    (paper): the number of eigenvalues ``> threshold``.
    """
    s = -np.sort(-np.abs(np.asarray(eigenvalues, dtype=np.float64)), axis=-1)
    scalar = s.ndim == 1
    s = np.atleast_2d(s)
    if rule == "strict":
        k = np.count_nonzero(s > threshold, axis=-1)
    elif rule == "gap":
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = s[:, :-1] / s[:, 1:]
        ok = (ratio > gap_ratio) & (s[:, :-1] > threshold)
        n = ok.shape[-1]
        last = n - 1 - np.argmax(ok[:, ::-1], axis=-1)
        k = np.where(ok.any(axis=-1), last + 1, 0)
    else:
        raise ValueError(f"cluster_count: rule must be 'gap' or 'strict', got {rule!r}")
    return int(k[0]) if scalar else k


def _z(s1: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``z = s1 u^2 sign(u)`` with the sign of ``u`` fixed by its mean (batched)."""
    flip = np.where(u.mean(axis=-1, keepdims=True) < 0, -1.0, 1.0)
    u = u * flip
    return s1[..., None] * u * u * np.sign(u)


def membership(matrix: np.ndarray, cfg: RapidConfig | None = None) -> tuple[int, np.ndarray]:
    """``(n_clusters, z)`` for one normalised symmetric matrix (diagonal 1); a face is a
    member of the prevalent identity iff ``z > cfg.tau``."""
    cfg = cfg or RapidConfig()
    c = np.asarray(matrix, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.isfinite(c).all():
        raise ValueError(f"membership: expected a finite square matrix, got shape {c.shape}")
    s, u = _sorted_spectrum(c)
    k = cluster_count(s, cfg.eig_threshold, cfg.gap_ratio, cfg.rule)
    return int(k), _z(np.asarray(s[0]), u)


def majority_vote(member: np.ndarray) -> np.ndarray:
    """Strict majority over the last axis (systems): 1 iff more than half say member."""
    m = np.asarray(member, dtype=bool)
    return (2 * m.sum(axis=-1) > m.shape[-1]).astype(np.int8)


# --------------------------------------------------------------------------- estimation
@dataclass
class RapidEstimate:
    """The method's output.

    ``labels``: one row per (query, face): ``query, face, label`` (1/0/-1), ``votes``
    (systems with ``z > tau``), ``n_systems_agree`` (systems whose own label equals the
    final one; 0 when excluded), ``ambiguity`` (``min_s |z_s - tau|``, NaN when no z),
    ``reason`` ("" if included, else why excluded). ``system_labels``: ``query, face,
    system, label, z`` (the per-system labels on the same inclusion set: the "no MV"
    estimate). ``queries``: ``query, n_faces, n_common, min_clusters, max_clusters,
    min_cluster_size, included, n_positive, reason``.
    """

    labels: pd.DataFrame
    system_labels: pd.DataFrame
    queries: pd.DataFrame


_REASONS = ("", "missing_system", "too_few_faces", "missing_pairs", "no_cluster",
            "multiple_clusters", "small_cluster")


def estimate(scores: pd.DataFrame, cfg: RapidConfig | None = None,
             fit_scores: pd.DataFrame | None = None) -> RapidEstimate:
    """Estimate identity labels from within-query pair scores (spec 1.4-1.5), vectorised.

    ``scores``: ``query, face_a, face_b, system, score`` (raw similarities, one row per
    within-query pair and system; extra columns ignored; self pairs ignored; if a pair
    appears twice, the later row wins). ``fit_scores``: optional extra scores for the
    GMM fit (see :func:`normalise_scores`). Matrices of one size are stacked and
    eigendecomposed in one batched ``numpy.linalg.eigh`` call.
    """
    from threadpoolctl import threadpool_limits

    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    # thousands of small eigh calls: BLAS threads only add overhead (x80 when cores are busy)
    with threadpool_limits(1):
        return _estimate(scores, cfg, fit_scores)


def _estimate(scores: pd.DataFrame, cfg: RapidConfig,
              fit_scores: pd.DataFrame | None) -> RapidEstimate:
    if "query_b" in scores.columns:
        qb = scores["query_b"].astype(object).to_numpy()
        if (qb != scores["query"].astype(object).to_numpy()).any():
            raise ValueError("scores: estimation uses within-query pairs only; rows with "
                             "query_b != query found (pass them as fit_scores instead)")
    norm = normalise_scores(scores, cfg, fit_scores).to_numpy()
    q_codes, q_names = pd.factorize(scores["query"], sort=True)
    s_codes, s_names = pd.factorize(scores["system"], sort=True)
    n_sys = len(s_names)
    fa_fb = pd.concat([scores["face_a"], scores["face_b"]], ignore_index=True)
    f_codes, f_names = pd.factorize(fa_fb, sort=False)
    n_rows, n_f = len(scores), len(f_names)
    key = np.r_[q_codes, q_codes].astype(np.int64) * n_f + f_codes
    nodes, inv = np.unique(key, return_inverse=True)  # node = (query, face), query-major
    ia, ib = inv[:n_rows], inv[n_rows:]
    node_q = nodes // n_f
    n_nodes, n_q = nodes.size, len(q_names)

    present = np.zeros((n_sys, n_nodes), bool)
    present[s_codes, ia] = True
    present[s_codes, ib] = True
    common = present.all(axis=0)
    n_faces = np.bincount(node_q, minlength=n_q)
    n_common = np.bincount(node_q[common], minlength=n_q)
    # local index of each common node within its query
    csum = np.cumsum(common) - 1
    first_common = np.r_[0, np.cumsum(n_common)[:-1]]
    local = np.where(common, csum - first_common[node_q], -1)

    reason = np.zeros(n_q, np.int8)
    reason[n_common < cfg.min_faces_query] = _REASONS.index("too_few_faces")
    keep = common[ia] & common[ib] & (ia != ib) & (reason[q_codes] == 0)
    rows = np.flatnonzero(keep)
    row_n = n_common[q_codes[rows]]
    order = rows[np.argsort(row_n, kind="stable")]
    row_n = n_common[q_codes[order]]

    z_all = np.full((n_sys, n_nodes), np.nan)
    k_all = np.full((n_q, n_sys), -1, np.int64)
    cut = np.flatnonzero(np.r_[True, row_n[1:] != row_n[:-1], True]) if order.size else [0]
    for lo, hi in zip(cut[:-1], cut[1:], strict=True):
        r = order[lo:hi]
        n = int(row_n[lo])
        qs = np.unique(q_codes[r])
        slot = np.searchsorted(qs, q_codes[r])
        la, lb = local[ia[r]], local[ib[r]]
        mats = np.zeros((qs.size, n_sys, n, n))
        filled = np.zeros((qs.size, n_sys, n, n), bool)
        sc = s_codes[r]
        mats[slot, sc, la, lb] = norm[r]
        mats[slot, sc, lb, la] = norm[r]
        filled[slot, sc, la, lb] = True
        filled[slot, sc, lb, la] = True
        idx = np.arange(n)
        mats[:, :, idx, idx] = 1.0
        filled[:, :, idx, idx] = True
        complete = filled.all(axis=(-1, -2)).all(axis=-1)  # per query
        s, u = _sorted_spectrum(mats)
        k = cluster_count(s.reshape(-1, n), cfg.eig_threshold, cfg.gap_ratio, cfg.rule)
        k_all[qs] = k.reshape(qs.size, n_sys)
        z = _z(s[..., 0], u)  # (queries, systems, n)
        reason[qs[~complete]] = _REASONS.index("missing_pairs")
        # scatter z back to nodes: the common nodes of query qs[j], in local order
        q_start = first_common[qs]
        common_nodes = np.flatnonzero(common)
        node_idx = common_nodes[(q_start[:, None] + idx[None, :]).ravel()]
        z_all[:, node_idx] = z.transpose(1, 0, 2).reshape(n_sys, -1)

    member = z_all > cfg.tau  # NaN -> False
    csize = np.zeros((n_q, n_sys), np.int64)
    np.add.at(csize, (np.repeat(node_q, n_sys), np.tile(np.arange(n_sys), n_nodes)),
              member.T.ravel())
    reason[(reason == 0) & (k_all < 0).any(axis=1)] = _REASONS.index("missing_pairs")
    ok = reason == 0
    kmin = np.where(k_all >= 0, k_all, 10**9).min(axis=1)
    kmax = k_all.max(axis=1)
    reason[ok & (kmin == 0)] = _REASONS.index("no_cluster")
    ok = reason == 0
    reason[ok & (kmax > 1)] = _REASONS.index("multiple_clusters")
    ok = reason == 0
    reason[ok & (csize.min(axis=1) < cfg.min_faces_cluster)] = _REASONS.index("small_cluster")
    included = reason == 0

    node_in = included[node_q] & common
    mv = majority_vote(member.T)
    label = np.where(node_in, mv, -1).astype(np.int8)
    votes = member.sum(axis=0)
    agree = np.where(node_in, (member.T == (label[:, None] == 1)).sum(axis=1), 0)
    with np.errstate(invalid="ignore"):
        amb = np.abs(z_all - cfg.tau).min(axis=0) if n_sys else np.full(n_nodes, np.nan)
    node_reason = np.where(common, reason[node_q], _REASONS.index("missing_system"))
    node_reason = np.where(included[node_q] & ~common, _REASONS.index("missing_system"),
                           node_reason)
    reasons = np.array(_REASONS, dtype=object)

    q_col = q_names[node_q]
    face_col = f_names[nodes % n_f]
    labels = pd.DataFrame({
        "query": q_col, "face": face_col, "label": label, "votes": votes.astype(np.int64),
        "n_systems_agree": agree.astype(np.int64), "ambiguity": amb,
        "reason": reasons[node_reason],
    })
    sys_label = np.where(node_in[None, :], member, -1).astype(np.int8)
    system_labels = pd.DataFrame({
        "query": np.tile(q_col, n_sys), "face": np.tile(face_col, n_sys),
        "system": np.repeat(np.asarray(s_names, dtype=object), n_nodes),
        "label": sys_label.ravel(), "z": z_all.ravel(),
    })
    n_pos = np.bincount(node_q, weights=(label == 1), minlength=n_q).astype(np.int64)
    queries = pd.DataFrame({
        "query": q_names, "n_faces": n_faces, "n_common": n_common,
        "min_clusters": np.where(kmin == 10**9, -1, kmin), "max_clusters": kmax,
        "min_cluster_size": csize.min(axis=1) if n_sys else 0,
        "included": included, "n_positive": n_pos, "reason": reasons[reason],
    })
    labels.attrs["n_systems"] = n_sys
    return RapidEstimate(labels, system_labels, queries)


def estimate_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                    fit_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """The method's final labels: one row per (query, face) with ``label`` in {1, 0, -1}
    (strict majority vote across systems; -1 = excluded), ``votes``,
    ``n_systems_agree``, ``ambiguity`` and ``reason``. See :func:`estimate`."""
    return estimate(scores, cfg, fit_scores).labels


def estimate_system_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                           fit_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-system labels (no majority vote, same inclusion set): ``query, face, system,
    label, z``. See :func:`estimate`."""
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
    person). Returns ``query, face, label``."""
    f = _faces_of(scores)
    f["label"] = np.int8(1)
    return f


def single_best_system_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                              system: Any = None) -> pd.DataFrame:
    """The method run on one system's scores alone (its own inclusion set, no vote).

    ``system=None`` picks, without truth, the system whose own labels (on the vote's
    inclusion set) agree most often with the majority vote. ``attrs["system"]`` names it.
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
    ``cfg.min_faces_cluster``, get -1. Returns ``query, face, label, reason``.
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
    :func:`true_labels`). Returns ``labels`` with ``label`` updated and ``annotated``.
    At ``fraction = 1`` every label is the true one.
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
    """Ground truth as a label table ``query, face, label`` (1 iff ``is_target``)."""
    require_columns(faces, ["query", "face", "is_target"], "faces")
    return pd.DataFrame({"query": faces["query"].astype(object).to_numpy(),
                         "face": faces["face"].to_numpy(),
                         "label": faces["is_target"].to_numpy().astype(np.int8)})


def oracle_labels(labels: pd.DataFrame, faces: pd.DataFrame) -> pd.DataFrame:
    """Spec B2: the true labels on the estimated test set (faces with ``label != -1``),
    -1 elsewhere; only Type-A (exclusion) error remains."""
    y = _lookup(true_labels(faces), labels["query"], labels["face"], "faces")
    out = labels[["query", "face"]].copy()
    out["label"] = np.where(labels["label"].to_numpy() == -1, -1, y).astype(np.int8)
    return out


def label_agreement(labels: pd.DataFrame, faces: pd.DataFrame) -> dict[str, float]:
    """Estimated vs true labels: ``agreement`` (share of included faces, ``label != -1``,
    whose label is right), ``coverage`` (share of faces not -1), ``accuracy_all``
    (share right with -1 counted wrong), ``n_faces``, ``n_included``, and the error
    types ``type_a`` (share excluded) and ``type_b`` (share wrong among all faces)."""
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

    Returns ``system, group, query, query_b, face_a, face_b, score, genuine`` (bool).
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
    true targets (all queries, nothing excluded)."""
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
    genuine or no impostor pair are left out."""
    return {(s, g): det_curve(gen, imp) for s, g, gen, imp in _split(pairs)
            if gen.size and imp.size}


def fnmr_table(pairs: pd.DataFrame, fmr: Sequence[float] = (0.01, 0.001),
               min_impostor_factor: float = 10.0, by_group: bool = True) -> pd.DataFrame:
    """FNMR at each target FMR per system and group (``"all"`` = pooled), with Wilson 95 %
    intervals (n = genuine pairs). NaN when there are fewer than
    ``min_impostor_factor / fmr`` impostors (spec 1.6) or no genuine pairs.
    Columns: ``system, group, fmr, threshold, fnmr, fnmr_lo, fnmr_hi, n_genuine,
    n_impostor``."""
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
    """Estimated vs true FNMR at fixed FMR: ``system, group, fmr, fnmr_est, fnmr_true,
    delta`` (``|est - true|``)."""
    cols = ["system", "group", "fmr"]
    e = fnmr_table(est_pairs, fmr, min_impostor_factor, by_group)[[*cols, "fnmr"]]
    t = fnmr_table(true_pairs, fmr, min_impostor_factor, by_group)[[*cols, "fnmr"]]
    out = e.merge(t, on=cols, how="outer", suffixes=("_est", "_true"))
    out["delta"] = (out["fnmr_est"] - out["fnmr_true"]).abs()
    return out


def eer_by_group(pairs: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """EER per system and group (and ``"all"``), with a Wilson interval computed with
    ``n = min(n_genuine, n_impostor)`` (the conservative side; pairs are not independent,
    spec 5 #13). Columns: ``system, group, eer, eer_lo, eer_hi, n_genuine, n_impostor``."""
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
    """Systems ordered best first by FNMR at ``fmr`` in ``group`` (``"all"`` = pooled):
    ``system, fnmr, rank`` (1 = best; ties share the smaller rank)."""
    t = fnmr_table(pairs, [fmr], by_group=group != ALL)
    t = t[t["group"] == group].sort_values(["fnmr", "system"], kind="stable")
    t["rank"] = t["fnmr"].rank(method="min").astype("Int64")
    return t[["system", "fnmr", "rank"]].reset_index(drop=True)


# --------------------------------------------------------------------------- study summaries
# What notebooks/rapid_test.py reports, as functions of a world. ``world``: anything with
# ``faces``, ``scores`` and ``cross_scores`` (:class:`facebias.world.RapidWorld`).
def world_pairs(world: Any, labels: pd.DataFrame, system: Any = None) -> pd.DataFrame:
    """:func:`genuine_impostor_pairs` of ``labels`` on ``world`` (raw scores, within- and
    cross-query pairs), of one ``system`` only when given."""
    s, c = world.scores, world.cross_scores
    if system is not None:
        s, c = s[s["system"] == system], c[c["system"] == system]
    return genuine_impostor_pairs(labels, world.faces, s, c)


def delta_fnmr_by_system(est_pairs: pd.DataFrame, true_pairs: pd.DataFrame,
                         fmr: Sequence[float] = (0.01, 0.001)) -> pd.DataFrame:
    """``|FNMR_est - FNMR_true|`` of the pooled groups (:func:`delta_fnmr`) as a table:
    one row per system (sorted), one column per FMR; NaN where either FNMR is undefined."""
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

    ``est``: :func:`estimate` of ``world.scores`` with ``cfg``; ``true``: the true pairs
    (:func:`true_pairs` of the world; computed when ``None``).
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
    ``seed``). One row per (p, seed): ``p, seed`` then the :func:`sweep_point` keys."""
    return pd.DataFrame([{"p": p, "seed": seed, **sweep_point(make_world(p, seed), cfg, fmr)}
                         for p in p_values for seed in seeds])


def sweep_by_p(sweep: pd.DataFrame) -> pd.DataFrame:
    """The :func:`p_sweep` table averaged over seeds: one row per ``p`` (the index,
    ascending), the mean of every other column except ``seed`` (NaN skipped)."""
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
    """
    worst, naive = f"method_worst@{fmr:g}", f"naive_min@{fmr:g}"
    require_columns(sweep, ["p", worst, naive], "sweep")
    by_p = sweep_by_p(sweep[["p", worst, naive]])
    broken = by_p.index[(by_p[worst] >= by_p[naive]).to_numpy()]  # NaN compares False
    return float(broken.max()) if len(broken) else None
