"""The slow, plain reference that tests/studies/rapid/test_batched_estimation.py compares the optimised
``facebias.studies.rapid.estimate`` with, bit for bit: one query at a time, one system at a
time, in Python loops, following the authors' code (GitHub ``caltechvisionlab/frt-rapid-test``)
step by step rather than the library's vectorised layout.

What it mirrors (issue 28, item 8):

* missing pairs (``cfro/analyzer/utils/affinity_methods.py``, ``calculate_confidence_matrix``):
  per query and system, a matrix over the faces that system scored (NaN where a pair has no
  row, diagonal 1); every face whose row holds a NaN is dropped; the query keeps the faces
  scored by every system and dropped by none (``cfro/analyzer/gt_estimation.py``, ``main``:
  the intersection of the providers' face sets);
* cluster labels (``cfro/analyzer/utils/spectral_factorization.py``,
  ``SpectralFactorizationClustering.cluster``): for ``j < K`` (the gap rule), faces with
  ``S[j] u_j^2 sign(u_j) > tau`` (``u_j`` times the sign of its mean) get label ``j``, a
  later ``j`` overwriting an earlier one;
* inclusion (``gt_estimation.py``, ``Person.include``): for every system ``labels.max() + 1
  == 1`` and at least ``min_faces_cluster`` labelled faces, at least ``min_faces_query``
  faces.

Conventions of the library it shares: a pair scored twice is written as the fast code writes
it (first every row's ``(a, b)`` entry in row order, then every row's ``(b, a)`` entry; self
pairs skipped), faces in order of their codes, ``eigh`` on the lower triangle; the output
tables are built as the library builds them. ``cluster_count``, ``gmm_modes``,
``RapidConfig``, ``RapidEstimate`` and the input checks are imported from the library."""

# ruff: noqa

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from facebias.metrics import check_scores
from facebias.studies.rapid import RapidConfig, RapidEstimate, cluster_count, gmm_modes
from facebias.studies.rapid.tables import _check_scores_frame
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
    """Estimate identity labels from within-query pair scores, one query at a time (see the
    module's docstring); the same tables as ``facebias.studies.rapid.estimate``."""
    from threadpoolctl import threadpool_limits

    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    with threadpool_limits(1):
        return _estimate(scores, cfg, fit_scores)

def _estimate(scores: pd.DataFrame, cfg: RapidConfig,
              fit_scores: pd.DataFrame | None) -> RapidEstimate:
    _reject_cross_query_rows(scores)
    norm = normalise_scores(scores, cfg, fit_scores).to_numpy()
    ix = _NodeIndex.of(scores)
    n_q, n_sys, n_nodes = ix.n_q, ix.n_sys, ix.n_nodes
    least = max(cfg.min_faces_query, 1)
    reason = np.zeros(n_q, np.int8)
    z_all = np.full((n_sys, n_nodes), np.nan)
    k_all = np.full((n_q, n_sys), -1, np.int64)
    n_clusters = np.full((n_q, n_sys), -1, np.int64)  # the authors' labels.max() + 1
    by_all = np.zeros(n_nodes, bool)    # scored by every system
    kept = np.zeros(n_nodes, bool)      # estimated on
    dropped = np.zeros(n_nodes, bool)   # scored by every system, dropped for a missing pair
    n_common = np.zeros(n_q, np.int64)
    rows_of = [[] for _ in range(n_q)]
    for r in range(len(scores)):
        rows_of[ix.q_codes[r]].append(r)
    for q in range(n_q):
        nodes = np.flatnonzero(ix.node_q == q)  # the query's faces, in the order of their codes
        m = nodes.size
        where = {int(node): i for i, node in enumerate(nodes)}
        # one matrix per system over the query's faces: NaN = no score
        mat = np.full((n_sys, m, m), np.nan)
        present = np.zeros((n_sys, m), bool)
        for r in rows_of[q]:
            s, a, b = ix.s_codes[r], where[int(ix.ia[r])], where[int(ix.ib[r])]
            present[s, a] = present[s, b] = True
            if a != b:
                mat[s, a, b] = norm[r]
        for r in rows_of[q]:
            s, a, b = ix.s_codes[r], where[int(ix.ia[r])], where[int(ix.ib[r])]
            if a != b:
                mat[s, b, a] = norm[r]
        for s in range(n_sys):
            for i in range(m):
                if present[s, i]:
                    mat[s, i, i] = 1.0
        everyone = present.all(axis=0)
        by_all[nodes[everyone]] = True
        if everyone.sum() < least:
            reason[q] = _REASONS.index("too_few_faces")
            n_common[q] = everyone.sum()
            continue
        # the authors' filter, per system: a face with a NaN among that system's faces goes
        ok = everyone.copy()
        for s in range(n_sys):
            faces_s = np.flatnonzero(present[s])
            for i in faces_s:
                if np.isnan(mat[s, i, faces_s]).any():
                    ok[i] = False
        dropped[nodes[everyone & ~ok]] = True
        n_common[q] = ok.sum()
        if ok.sum() < least:
            reason[q] = _REASONS.index("too_few_faces")
            continue
        kept[nodes[ok]] = True
        idx = np.flatnonzero(ok)
        for s in range(n_sys):
            c = mat[s][np.ix_(idx, idx)]
            assert np.isfinite(c).all()
            w, v = np.linalg.eigh(c)
            order = np.argsort(-np.abs(w), kind="stable")
            sv = np.abs(w)[order]  # the singular values of the symmetric c
            k = int(cluster_count(sv, cfg.eig_threshold, cfg.gap_ratio, cfg.rule))
            k_all[q, s] = k
            u = v[:, order[0]]
            u = -u if u.mean() < 0 else u
            z_all[s, nodes[idx]] = sv[0] * u * u * np.sign(u)
            labels = np.full(idx.size, -1)
            for j in range(k):
                u = v[:, order[j]] * np.sign(v[:, order[j]].mean())
                labels[sv[j] * u * u * np.sign(u) > cfg.tau] = j
            n_clusters[q, s] = labels.max() + 1
    member = z_all > cfg.tau  # NaN -> False
    csize = np.zeros((n_q, n_sys), np.int64)
    for node in range(n_nodes):
        for s in range(n_sys):
            csize[ix.node_q[node], s] += member[s, node]
    for q in range(n_q):
        if reason[q] != 0:
            continue
        if any(n_clusters[q, s] == 0 for s in range(n_sys)):
            reason[q] = _REASONS.index("no_cluster")
        elif any(n_clusters[q, s] > 1 for s in range(n_sys)):
            reason[q] = _REASONS.index("multiple_clusters")
        elif any(csize[q, s] < cfg.min_faces_cluster for s in range(n_sys)):
            reason[q] = _REASONS.index("small_cluster")
    kmin = np.array([min([k for k in k_all[q] if k >= 0], default=-1) for q in range(n_q)], np.int64)
    kmax = k_all.max(axis=1)
    node_reason = np.array([_REASONS.index("missing_system") if not by_all[i]
                            else _REASONS.index("missing_pairs") if dropped[i]
                            else reason[ix.node_q[i]] for i in range(n_nodes)], np.int64)
    n_dropped = np.array([dropped[ix.node_q == q].sum() for q in range(n_q)], np.int64)
    return _estimate_tables(ix, cfg, reason, node_reason, kept, z_all, member, kmin, kmax,
                            n_clusters, csize, n_common, n_dropped)

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
    """Integer codes of a scores table. Per row: ``q_codes``, ``s_codes`` (query and system,
    codes of the sorted names ``q_names``, ``s_names``) and the nodes ``ia``, ``ib`` of its
    two faces. A node is a (query, face) pair, numbered query-major; ``nodes`` holds ``query
    * n_f + face`` (face codes of ``f_names``, first-appearance order), ``node_q`` its
    query; ``n_faces`` per query."""

    q_codes: np.ndarray
    q_names: pd.Index
    s_codes: np.ndarray
    s_names: pd.Index
    f_names: pd.Index
    nodes: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    node_q: np.ndarray
    n_faces: np.ndarray

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
        fa_fb = pd.concat([scores["face_a"], scores["face_b"]], ignore_index=True)
        f_codes, f_names = pd.factorize(fa_fb, sort=False)
        n_rows, n_f = len(scores), len(f_names)
        key = np.r_[q_codes, q_codes].astype(np.int64) * n_f + f_codes
        nodes, inv = np.unique(key, return_inverse=True)  # node = (query, face), query-major
        node_q = nodes // n_f
        return cls(q_codes, q_names, s_codes, s_names, f_names, nodes, inv[:n_rows], inv[n_rows:],
                   node_q, np.bincount(node_q, minlength=len(q_names)))

def _estimate_tables(ix: _NodeIndex, cfg: RapidConfig, reason: np.ndarray, node_reason: np.ndarray,
                     kept: np.ndarray, z_all: np.ndarray, member: np.ndarray, kmin: np.ndarray,
                     kmax: np.ndarray, n_clusters: np.ndarray, csize: np.ndarray,
                     n_common: np.ndarray, n_dropped: np.ndarray) -> RapidEstimate:
    """The majority vote on the included queries' common faces, and the
    :class:`RapidEstimate` tables (``labels``, ``system_labels``, ``queries``)."""
    n_sys, n_nodes, node_q = ix.n_sys, ix.n_nodes, ix.node_q
    included = reason == 0
    node_in = included[node_q] & kept
    mv = majority_vote(member.T)
    label = np.where(node_in, mv, -1).astype(np.int8)
    votes = member.sum(axis=0)
    agree = np.where(node_in, (member.T == (label[:, None] == 1)).sum(axis=1), 0)
    with np.errstate(invalid="ignore"):
        amb = np.abs(z_all - cfg.tau).min(axis=0) if n_sys else np.full(n_nodes, np.nan)
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
        "query": ix.q_names, "n_faces": ix.n_faces, "n_common": n_common,
        "n_dropped": n_dropped, "min_clusters": kmin, "max_clusters": kmax,
        "max_assigned": n_clusters.max(axis=1),
        "min_cluster_size": csize.min(axis=1) if n_sys else 0,
        "included": included, "n_positive": n_pos, "reason": reasons[reason],
    })
    labels.attrs["n_systems"] = n_sys
    return RapidEstimate(labels, system_labels, queries)
