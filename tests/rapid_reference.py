"""A frozen copy of ``facebias.studies.rapid.estimate`` as it was before issue 20 (commit
af23be8): the reference that tests/test_study_rapid_fast.py compares the optimised code with,
bit for bit. Do not edit or "fix" it: it is the old behaviour, kept only as a test oracle.
Public helpers that issue 20 does not touch (``cluster_count``, ``gmm_modes``,
``RapidConfig``, ``RapidEstimate``) are imported from the library."""

# ruff: noqa

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from facebias.metrics import check_scores
from facebias.studies.rapid import (RapidConfig, RapidEstimate, _check_scores_frame, cluster_count,
                                    gmm_modes)
from facebias.validate import require_columns

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
        For a missing column, a non-finite score, or a system the GMM cannot fit.

    Examples
    --------
    >>> scores = pd.DataFrame({"system": ["a", "a", "b", "b"], "score": [20.0, 80.0, 0.2, 0.9]})
    >>> normalise_scores(scores, RapidConfig(modes={"a": [20, 80], "b": [0.2, 0.8]})).tolist()
    [0.0, 1.0, 0.0, 1.0]
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

def _sorted_spectrum(mats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched: absolute eigenvalues descending (the singular values of a symmetric
    matrix) and the leading eigenvector, for matrices of shape (..., n, n)."""
    w, v = np.linalg.eigh(mats)
    order = np.argsort(-np.abs(w), axis=-1, kind="stable")
    s = np.take_along_axis(np.abs(w), order, axis=-1)
    u = np.take_along_axis(v, order[..., None, :1], axis=-1)[..., 0]
    return s, u

def _z(s1: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``z = s1 u^2 sign(u)`` with the sign of ``u`` fixed by its mean (batched)."""
    flip = np.where(u.mean(axis=-1, keepdims=True) < 0, -1.0, 1.0)
    u = u * flip
    return s1[..., None] * u * u * np.sign(u)

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
        For a non-DataFrame, a missing column, a non-finite score, or rows with
        ``query_b != query`` (pass those as ``fit_scores``).

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
    from threadpoolctl import threadpool_limits

    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    # thousands of small eigh calls: BLAS threads only add overhead (x80 when cores are busy)
    with threadpool_limits(1):
        return _estimate(scores, cfg, fit_scores)

def _estimate(scores: pd.DataFrame, cfg: RapidConfig,
              fit_scores: pd.DataFrame | None) -> RapidEstimate:
    """:func:`estimate` after its input checks, in named steps.

    1. normalise the scores per system (:func:`normalise_scores`);
    2. index the nodes, one per (query, face), and each query's common face set
       (:class:`_NodeIndex`);
    3. the spectral step on every complete (query, system) matrix: cluster counts and
       membership scores ``z`` (:func:`_spectral_step`);
    4. the inclusion rules per query (:func:`_include_queries`);
    5. the vote and the three output tables (:func:`_estimate_tables`).
    """
    _reject_cross_query_rows(scores)
    norm = normalise_scores(scores, cfg, fit_scores).to_numpy()
    ix = _NodeIndex.of(scores)
    reason = np.zeros(ix.n_q, np.int8)
    reason[ix.n_common < cfg.min_faces_query] = _REASONS.index("too_few_faces")
    z_all, k_all = _spectral_step(ix, norm, reason, cfg)
    member = z_all > cfg.tau  # NaN -> False
    csize = _cluster_sizes(ix, member)
    kmin, kmax = _include_queries(reason, k_all, csize, cfg)
    return _estimate_tables(ix, cfg, reason, z_all, member, kmin, kmax, csize)

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

    Per row: ``q_codes``, ``s_codes`` (query and system, codes of the sorted names
    ``q_names``, ``s_names``) and the nodes ``ia``, ``ib`` of its two faces. A node is a
    (query, face) pair, numbered query-major; ``nodes`` holds ``query * n_f + face`` (face
    codes of ``f_names``, first-appearance order), ``node_q`` its query. ``common``: the
    node is scored by every system; per query ``n_faces``, ``n_common`` and
    ``first_common`` (rank of its first common node among all common nodes); per node
    ``local``: its index within its query's common set (-1 if not common).
    """

    q_codes: np.ndarray
    q_names: pd.Index
    s_codes: np.ndarray
    s_names: pd.Index
    f_names: pd.Index
    nodes: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    node_q: np.ndarray
    common: np.ndarray
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
    def of(cls, scores: pd.DataFrame) -> _NodeIndex:
        """Index ``scores`` (columns ``query, system, face_a, face_b``)."""
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
        return cls(q_codes, q_names, s_codes, s_names, f_names, nodes, ia, ib, node_q, common,
                   n_faces, n_common, first_common, local)

def _spectral_step(ix: _NodeIndex, norm: np.ndarray, reason: np.ndarray,
                   cfg: RapidConfig) -> tuple[np.ndarray, np.ndarray]:
    """Cluster counts and membership scores of every (query, system) matrix on the
    query's common faces, for the queries whose ``reason`` is still 0.

    ``norm``: the normalised score of each row. Matrices of one size are stacked and
    eigendecomposed in one batched call. Returns ``z_all`` (n_sys, n_nodes; NaN where not
    computed) and ``k_all`` (n_q, n_sys; -1 where not computed). A query whose matrices
    miss a pair gets reason ``missing_pairs`` (``reason`` is updated in place).
    """
    n_sys = ix.n_sys
    keep = ix.common[ix.ia] & ix.common[ix.ib] & (ix.ia != ix.ib) & (reason[ix.q_codes] == 0)
    rows = np.flatnonzero(keep)
    row_n = ix.n_common[ix.q_codes[rows]]
    order = rows[np.argsort(row_n, kind="stable")]
    row_n = ix.n_common[ix.q_codes[order]]

    z_all = np.full((n_sys, ix.n_nodes), np.nan)
    k_all = np.full((ix.n_q, n_sys), -1, np.int64)
    common_nodes = np.flatnonzero(ix.common)
    cut = np.flatnonzero(np.r_[True, row_n[1:] != row_n[:-1], True]) if order.size else [0]
    for lo, hi in zip(cut[:-1], cut[1:], strict=True):
        n = int(row_n[lo])
        qs, mats, complete = _stacked_matrices(ix, norm, order[lo:hi], n)
        s, u = _sorted_spectrum(mats)
        k = cluster_count(s.reshape(-1, n), cfg.eig_threshold, cfg.gap_ratio, cfg.rule)
        k_all[qs] = k.reshape(qs.size, n_sys)
        z = _z(s[..., 0], u)  # (queries, systems, n)
        reason[qs[~complete]] = _REASONS.index("missing_pairs")
        # scatter z back to nodes: the common nodes of query qs[j], in local order
        node_idx = common_nodes[(ix.first_common[qs][:, None] + np.arange(n)[None, :]).ravel()]
        z_all[:, node_idx] = z.transpose(1, 0, 2).reshape(n_sys, -1)
    return z_all, k_all

def _stacked_matrices(ix: _NodeIndex, norm: np.ndarray, r: np.ndarray,
                      n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The normalised matrices of the queries of rows ``r`` (all with ``n`` common faces):
    ``(qs, mats, complete)`` with ``qs`` the sorted query codes, ``mats`` (queries,
    systems, n, n) with diagonal 1 and 0 for a missing pair, and ``complete`` per query
    (every system scored every pair)."""
    n_sys = ix.n_sys
    qs = np.unique(ix.q_codes[r])
    slot = np.searchsorted(qs, ix.q_codes[r])
    la, lb = ix.local[ix.ia[r]], ix.local[ix.ib[r]]
    mats = np.zeros((qs.size, n_sys, n, n))
    filled = np.zeros((qs.size, n_sys, n, n), bool)
    sc = ix.s_codes[r]
    mats[slot, sc, la, lb] = norm[r]
    mats[slot, sc, lb, la] = norm[r]
    filled[slot, sc, la, lb] = True
    filled[slot, sc, lb, la] = True
    idx = np.arange(n)
    mats[:, :, idx, idx] = 1.0
    filled[:, :, idx, idx] = True
    complete = filled.all(axis=(-1, -2)).all(axis=-1)  # per query
    return qs, mats, complete

def _cluster_sizes(ix: _NodeIndex, member: np.ndarray) -> np.ndarray:
    """Members per (query, system): ``member`` (n_sys, n_nodes) summed per query."""
    n_sys = ix.n_sys
    csize = np.zeros((ix.n_q, n_sys), np.int64)
    np.add.at(csize, (np.repeat(ix.node_q, n_sys), np.tile(np.arange(n_sys), ix.n_nodes)),
              member.T.ravel())
    return csize

_NO_COUNT = 10**9  # stands for "no cluster count" when taking the least count per query

def _include_queries(reason: np.ndarray, k_all: np.ndarray, csize: np.ndarray,
                     cfg: RapidConfig) -> tuple[np.ndarray, np.ndarray]:
    """The inclusion rules (spec 5 #4, #5), in order, on the queries still included
    (``reason`` 0; updated in place): every system has a cluster count (else
    ``missing_pairs``), at least one cluster (``no_cluster``), at most one
    (``multiple_clusters``), and ``min_faces_cluster`` members (``small_cluster``).
    Returns the least and the largest cluster count per query (``_NO_COUNT`` / -1 where
    no system has one)."""
    reason[(reason == 0) & (k_all < 0).any(axis=1)] = _REASONS.index("missing_pairs")
    ok = reason == 0
    kmin = np.where(k_all >= 0, k_all, _NO_COUNT).min(axis=1)
    kmax = k_all.max(axis=1)
    reason[ok & (kmin == 0)] = _REASONS.index("no_cluster")
    ok = reason == 0
    reason[ok & (kmax > 1)] = _REASONS.index("multiple_clusters")
    ok = reason == 0
    reason[ok & (csize.min(axis=1) < cfg.min_faces_cluster)] = _REASONS.index("small_cluster")
    return kmin, kmax

def _estimate_tables(ix: _NodeIndex, cfg: RapidConfig, reason: np.ndarray, z_all: np.ndarray,
                     member: np.ndarray, kmin: np.ndarray, kmax: np.ndarray,
                     csize: np.ndarray) -> RapidEstimate:
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
    node_reason = np.where(ix.common, reason[node_q], _REASONS.index("missing_system"))
    node_reason = np.where(included[node_q] & ~ix.common, _REASONS.index("missing_system"),
                           node_reason)
    reasons = np.array(_REASONS, dtype=object)

    q_col = ix.q_names[node_q]
    face_col = ix.f_names[ix.nodes % len(ix.f_names)]
    labels = pd.DataFrame({
        "query": q_col, "face": face_col, "label": label, "votes": votes.astype(np.int64),
        "n_systems_agree": agree.astype(np.int64), "ambiguity": amb,
        "reason": reasons[node_reason],
    })
    sys_label = np.where(node_in[None, :], member, -1).astype(np.int8)
    system_labels = pd.DataFrame({
        "query": np.tile(q_col, n_sys), "face": np.tile(face_col, n_sys),
        "system": np.repeat(np.asarray(ix.s_names, dtype=object), n_nodes),
        "label": sys_label.ravel(), "z": z_all.ravel(),
    })
    n_pos = np.bincount(node_q, weights=(label == 1), minlength=ix.n_q).astype(np.int64)
    queries = pd.DataFrame({
        "query": ix.q_names, "n_faces": ix.n_faces, "n_common": ix.n_common,
        "min_clusters": np.where(kmin == _NO_COUNT, -1, kmin), "max_clusters": kmax,
        "min_cluster_size": csize.min(axis=1) if n_sys else 0,
        "included": included, "n_positive": n_pos, "reason": reasons[reason],
    })
    labels.attrs["n_systems"] = n_sys
    return RapidEstimate(labels, system_labels, queries)
