"""Hyperplane algebra on latents: decision values, the dual basis and projections.

Implements ``docs/specs/transects.md`` A1.5-A1.7 (paper 004): decision values
``normals @ z + offsets``, the dual basis :func:`orthogonalize` that corrects the paper's
Algorithm 2 (kept as printed in :func:`orthogonalize_printed`), its error
:func:`orthogonality_error`, and the closest point on the intersection of the hyperplanes
in closed form (:func:`project_to_intersection`) and by 004's alternating projections
(:func:`project_alternating`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from facebias.latent.checks import _check_latents, check_hyperplanes, finite_array


def decision_values(z: Any, normals: Any, offsets: Any) -> np.ndarray:
    """Decision values ``z @ normals.T + offsets``: ``(..., D)`` latents -> ``(..., K)``.

    Positive = more of the attribute; for unit normals the value is the signed Euclidean
    distance to the hyperplane.

    Parameters
    ----------
    z : array_like
        Latents ``(..., D)``, any leading shape (e.g. the ``(L1, ..., LK, D)`` output of
        :func:`transect`).
    normals : array_like
        (K, D) attribute normals, one per row (a (D,) normal is one attribute).
    offsets : array_like
        (K,) offsets.

    Returns
    -------
    numpy.ndarray
        ``(..., K)`` float64 decision values.

    Raises
    ------
    ValueError
        If the last axis of ``z`` is not D, ``z`` holds a NaN/inf, or the hyperplanes are
        invalid (see :func:`check_hyperplanes`).

    Examples
    --------
    >>> decision_values([1.0, 2.0, 3.0], [[1, 0, 0], [1, 1, 0]], [0, -1])
    array([1., 2.])
    """
    n, b = check_hyperplanes(normals, offsets, check_rank=False)
    a = np.asarray(z, dtype=np.float64)
    if a.ndim == 0 or a.shape[-1] != n.shape[1]:
        raise ValueError(f"z: last axis must be the latent dimension {n.shape[1]}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("z: contains non-finite values (NaN or inf)")
    return a @ n.T + b


def orthogonalize(normals: Any) -> np.ndarray:
    """Dual basis of the attribute normals: ``directions`` (K, D) in their span with
    ``directions[j] @ normals[k] == (j == k)``.

    ``directions = (N Nᵀ)⁻¹ N`` for row normals ``N`` (``Ñ = N (NᵀN)⁻¹`` of
    ``docs/specs/transects.md`` A1.7, in column layout), computed from the SVD
    ``N = U S Vᵀ`` as ``U S⁻¹ Vᵀ``. Moving a latent by ``c * directions[j]`` changes
    attribute ``j``'s decision value by exactly ``c`` and no other attribute's. ``directions[j]`` is ``normals[j]`` minus its projection on the
    span of the other normals, rescaled. This corrects the paper's Algorithm 2 (see
    :func:`orthogonalize_printed`).

    Parameters
    ----------
    normals : array_like
        (K, D) linearly independent attribute normals, one per row.

    Returns
    -------
    numpy.ndarray
        (K, D) float64 directions, one per row.

    Raises
    ------
    ValueError
        For non-finite or rank-deficient normals.

    Examples
    --------
    >>> normals = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])  # correlated attributes
    >>> d = orthogonalize(normals)
    >>> np.round(d, 6) + 0.0
    array([[ 1., -1.,  0.],
           [ 0.,  1.,  0.]])
    >>> np.round(d @ normals.T, 6) + 0.0  # each direction moves one decision value by 1
    array([[1., 0.],
           [0., 1.]])
    """
    n, _ = check_hyperplanes(normals)
    u, s, vt = np.linalg.svd(n, full_matrices=False)
    return (u / s) @ vt


def orthogonalize_printed(normals: Any) -> np.ndarray:
    """The paper's Algorithm 2 exactly as printed (for comparison only; do not use).

    ``Q, R = QR([n_1 … n_K])``; ``ñ_i = n_i - Σ_{j≠i} Q_j <Q_j, ñ_i> / <Q_j, Q_j>``
    (sequentially). Since Q spans the normals this leaves ``ñ_i = R_ii Q_i``, which is
    orthogonal to the *earlier* normals ``n_k, k < i`` but not to the later ones:
    ``<ñ_i, n_k> = R_ii R_ik ≠ 0`` for ``k > i``.

    Parameters
    ----------
    normals : array_like
        (K, D) linearly independent attribute normals, one per row.

    Returns
    -------
    numpy.ndarray
        (K, D) float64 rows ``ñ_i``.

    Raises
    ------
    ValueError
        For non-finite or rank-deficient normals.

    Examples
    --------
    >>> normals = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    >>> np.abs(orthogonalize_printed(normals) @ normals.T)  # leaks: entry (0, 1) is not 0
    array([[1., 1.],
           [0., 1.]])
    """
    n, _ = check_hyperplanes(normals)
    q, _ = np.linalg.qr(n.T)  # (D, K)
    out = n.copy()
    for i in range(n.shape[0]):
        v = out[i]
        for j in range(n.shape[0]):
            if j != i:
                qj = q[:, j]
                v = v - qj * (qj @ v) / (qj @ qj)
        out[i] = v
    return out


def orthogonality_error(normals: Any, directions: Any = None) -> float:
    """How far ``directions`` are from the dual basis of ``normals``:
    ``max_jk |directions[j] @ normals[k] - [j == k]|``.

    0 for an exact dual basis (:func:`orthogonalize`); for it, float64 round-off (about
    1e-15 for well-conditioned normals). Units: decision value per unit step along a
    direction, so the error is how much stepping one attribute by 1 moves another
    (off-diagonal) or itself by other than 1 (diagonal).

    Parameters
    ----------
    normals : array_like
        (K, D) attribute normals, one per row; a single (D,) normal is promoted to (1, D).
    directions : array_like, optional
        (K, D) directions to check, one per row; default :func:`orthogonalize` ``(normals)``
        (then the normals must be linearly independent).

    Returns
    -------
    float
        The largest absolute deviation from the identity.

    Raises
    ------
    ValueError
        For empty or non-finite input, or ``directions`` whose shape differs from the
        normals'.
    """
    n, _ = check_hyperplanes(normals, check_rank=directions is None)
    if directions is None:
        d = orthogonalize(n)
    else:
        d = finite_array(directions, "directions", (1, 2))
        if d.ndim == 1:
            d = d[None, :]
        if d.shape != n.shape:
            raise ValueError(f"directions: expected shape {n.shape} to match normals, got {d.shape}")
    return float(np.abs(d @ n.T - np.eye(n.shape[0])).max())


def project_to_intersection(z: Any, normals: Any, offsets: Any) -> np.ndarray:
    """Closest point to ``z`` on the intersection of the K hyperplanes (all decision values 0).

    Closed form ``z0 = z - N (NᵀN)⁻¹ (Nᵀ z + b)`` in column layout, i.e.
    ``z0 = z - decision_values(z) @ orthogonalize(normals)`` for row normals. The
    intersection is a (D - K)-dimensional affine subspace (not a point, as 004 says); this
    is the orthogonal projection onto it, the limit of :func:`project_alternating`.

    Parameters
    ----------
    z : array_like
        One latent ``(D,)`` or a batch ``(n, D)``.
    normals : array_like
        (K, D) linearly independent attribute normals, one per row.
    offsets : array_like
        (K,) offsets.

    Returns
    -------
    numpy.ndarray
        Projected latents, the shape of ``z``.

    Raises
    ------
    ValueError
        For non-finite input, a latent dimension other than D, offsets whose length is
        not K, or rank-deficient normals.

    Examples
    --------
    >>> normals, offsets = [[1, 0, 0], [1, 1, 0]], [0, -1]
    >>> z0 = project_to_intersection([1.0, 2.0, 3.0], normals, offsets)
    >>> np.round(z0, 6) + 0.0, np.round(decision_values(z0, normals, offsets), 6) + 0.0
    (array([0., 1., 3.]), array([0., 0.]))
    """
    n, b = check_hyperplanes(normals, offsets)
    a = _check_latents(z, n.shape[1])
    return a - (a @ n.T + b) @ orthogonalize(n)


def project_alternating(z: Any, normals: Any, offsets: Any, n_iter: int = 50,
                        tol: float = 0.0) -> np.ndarray:
    """004's iterative projection: sweeps of sequential projections onto each hyperplane,
    ``z <- z - (n_k·z + b_k) / ||n_k||² n_k`` for k = 1..K (POCS).

    Runs ``n_iter`` sweeps, or stops early once a sweep moves every latent by at most
    ``tol`` (Euclidean). Converges to :func:`project_to_intersection`; exact after one
    sweep if the normals are orthogonal. Kept as a cross-check; the closed form is exact.

    Parameters
    ----------
    z : array_like
        One latent ``(D,)`` or a batch ``(n, D)``.
    normals : array_like
        (K, D) attribute normals, one per row (rank is not checked).
    offsets : array_like
        (K,) offsets.
    n_iter : int, default 50
        Maximum number of sweeps (>= 1).
    tol : float, default 0.0
        Stop once a sweep moves every latent by at most ``tol``; 0 = run all sweeps.

    Returns
    -------
    numpy.ndarray
        Projected latents, the shape of ``z``.

    Raises
    ------
    ValueError
        For non-finite input, a latent dimension other than D, offsets whose length is
        not K, ``n_iter`` not a positive integer, a negative ``tol``, or a zero normal.

    Examples
    --------
    >>> z = project_alternating([1.0, 2.0, 3.0], [[1, 0, 0], [1, 1, 0]], [0, -1], n_iter=200)
    >>> np.round(z, 6) + 0.0  # = project_to_intersection
    array([0., 1., 3.])
    """
    n, b = check_hyperplanes(normals, offsets, check_rank=False)
    a = _check_latents(z, n.shape[1]).copy()
    if int(n_iter) != n_iter or n_iter < 1:
        raise ValueError(f"n_iter: expected a positive integer, got {n_iter!r}")
    if not tol >= 0:
        raise ValueError(f"tol: expected a non-negative number, got {tol!r}")
    sq = np.einsum("kd,kd->k", n, n)
    if (sq == 0).any():
        raise ValueError(f"normals: row {int(np.flatnonzero(sq == 0)[0])} is the zero vector")
    for _ in range(int(n_iter)):
        before = a.copy()
        for k in range(n.shape[0]):
            a = a - np.multiply.outer((a @ n[k] + b[k]) / sq[k], n[k])
        if tol > 0 and np.max(np.linalg.norm(np.atleast_2d(a - before), axis=-1)) <= tol:
            break
    return a
