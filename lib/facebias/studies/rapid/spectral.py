"""Paper 001, the spectral step on one query's matrix (``docs/specs/rapid.md`` section 1.5):
:func:`query_matrix`, :func:`cluster_count`, :func:`membership`, the authors' cluster labels
(:func:`cluster_labels`) and :func:`majority_vote`. The batched form run on every query at
once by :func:`facebias.studies.rapid.estimate` (:mod:`facebias.studies.rapid.estimation`)
shares the helpers here.

* cluster count (1.5, 5 #1): the code's gap rule. With ``S`` the absolute eigenvalues of
  the query's normalised matrix in descending order (= its singular values), ``K`` is the
  largest ``i`` with ``S[i-1] / S[i] > gap_ratio`` and ``S[i-1] > eig_threshold``, else 0.
  ``rule="strict"`` (the paper's wording) counts the eigenvalues above the threshold.
* membership (5 #2): ``z = lambda_1 u_1^2 sign(u_1)`` (the signed diagonal of the rank-1
  reconstruction, ~1 for members), the sign of ``u_1`` fixed by its mean; member iff
  ``z > tau``.
* final label: strict majority ``votes > S / 2`` over the systems (5 #21).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from facebias.studies.rapid.config import RapidConfig
from facebias.validate import require_columns


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
