"""Paper 001, identity label estimation over every query (``docs/specs/rapid.md`` sections
1.4-1.5 and 5): :func:`estimate` (one pass: labels, per-system labels, per-query table) and
the wrappers :func:`estimate_labels`, :func:`estimate_system_labels`.

The spectral step of :mod:`facebias.studies.rapid.spectral` runs batched: the normalised
matrices of all queries of one size are stacked and eigendecomposed together. Where the
paper and the authors' code (``frt-rapid-test``) differ, this follows the spec's choice:

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

Limitation (spec 5 #22): the method labels the *prevalent* identity; when a wrong
identity outnumbers the queried one (p below ~0.4 with a co-occurring identity) it
confidently labels the wrong person.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.rapid.config import RapidConfig
from facebias.studies.rapid.nodes import _NodeIndex
from facebias.studies.rapid.normalise import _rescale, _system_modes
from facebias.studies.rapid.spectral import (
    _column_hits,
    _count_sorted,
    _eig_sorted,
    _last_hit,
    _leading,
    _z,
    majority_vote,
)
from facebias.studies.rapid.tables import _check_scores_frame


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


class NoQueryIncludedWarning(UserWarning):
    """:func:`estimate_labels` excluded every query: no face has a label 1 or 0."""


#: What each query reason means, with the :class:`RapidConfig` key that sets its rule.
QUERY_RULES: dict[str, str] = {
    "too_few_faces": "fewer than min_faces_query={min_faces_query} faces scored by every system",
    "no_cluster": "some system puts no face in the queried person's cluster (no z > tau={tau})",
    "multiple_clusters": "some system finds a second identity cluster",
    "small_cluster": "some system's cluster has fewer than min_faces_cluster={min_faces_cluster} faces",
}


def exclusion_message(queries: pd.DataFrame, cfg: RapidConfig | None = None) -> str | None:
    """One line naming the rules that excluded every query, or ``None`` if some query is in.

    Parameters
    ----------
    queries : pandas.DataFrame
        :attr:`RapidEstimate.queries` (``query, included, reason``).
    cfg : RapidConfig, optional
        The parameters the estimate used (for the numbers in the rules); default
        ``RapidConfig()``.

    Returns
    -------
    str or None
        E.g. ``"all 2 queries excluded: too_few_faces in 2 (fewer than min_faces_query=8
        faces scored by every system)"``; ``"no queries to estimate (no scores)"`` for an
        empty table.

    Examples
    --------
    >>> q = pd.DataFrame({"query": ["a", "b"], "included": [False, False],
    ...                   "reason": ["too_few_faces", "too_few_faces"]})
    >>> exclusion_message(q)
    'all 2 queries excluded: too_few_faces in 2 (fewer than min_faces_query=8 faces scored by every system)'
    >>> exclusion_message(q.assign(included=[True, False])) is None
    True
    """
    cfg = cfg or RapidConfig()
    if len(queries) == 0:
        return "no queries to estimate (no scores)"
    if queries["included"].astype(bool).any():
        return None
    counts = queries["reason"].value_counts(sort=False)
    rule_values = {"min_faces_query": cfg.min_faces_query, "tau": cfg.tau,
                   "min_faces_cluster": cfg.min_faces_cluster}
    rules = "; ".join(
        f"{r} in {int(counts[r])} ({QUERY_RULES[r].format(**rule_values)})" if r in QUERY_RULES
        else f"{r} in {int(counts[r])}" for r in [r for r in _REASONS if r in counts.index])
    n = len(queries)
    return f"all {n} {'query' if n == 1 else 'queries'} excluded: {rules}"


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
    >>> from facebias.studies.rapid import label_agreement
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

    Warns
    -----
    NoQueryIncludedWarning
        When every query is excluded (every label is -1), naming the rules that excluded
        them (:func:`exclusion_message`); the table is returned unchanged.
    """
    est = estimate(scores, cfg, fit_scores)
    msg = exclusion_message(est.queries, cfg)
    if msg is not None:
        warnings.warn(f"estimate_labels: {msg}", NoQueryIncludedWarning, stacklevel=2)
    return est.labels


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
