"""Generator-agnostic latent-space algebra for synthetic-face bias studies (papers 004, 000).

Everything here is pure numpy / pandas on latent vectors: no generator, no images, no I/O.
A generator (StyleGAN2 ``w``, EG3D ``w``, a toy linear model) maps the latents this module
produces to images; see ``docs/specs/transects.md`` A1.4-A1.8 and ``docs/specs/hcic.md``
B1.2-B1.5.

Conventions (used everywhere in this module)
--------------------------------------------
* Latents are rows: one latent is ``(D,)``, a batch is ``(n, D)``.
* K attribute hyperplanes are ``normals`` ``(K, D)`` (one normal per **row**) and
  ``offsets`` ``(K,)``. The **decision value** of latent ``z`` for attribute ``k`` is
  ``normals[k] @ z + offsets[k]``; the hyperplane is where it is 0. Normals are *not*
  assumed to be unit length; :func:`fit_hyperplane` returns unit normals, for which the
  decision value is the signed Euclidean distance to the hyperplane (A1.5).
* Sign: positive = more of the attribute (higher level on the annotation scale; male for
  gender, the target class for a one-vs-all race SVM).
* Grid values ``c`` (transects; 000's prototypes in :mod:`facebias.generate.plan`) are
  decision values, i.e. latent-space distances for unit normals. They are generator
  specific and must be re-tuned.
* The "dual basis" ``orthogonalize(normals)`` (rows ``d_j`` with ``d_j @ n_k = [j == k]``)
  moves one attribute's decision value by exactly 1 per unit step and leaves the others
  unchanged. The paper's printed Algorithm 2 does not (:func:`orthogonalize_printed`).

Every function validates its input and raises ``ValueError`` naming the argument and the
problem (shape mismatch, NaN/inf, rank-deficient normals, empty grids, missing columns).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = [
    "AGE_TARGET",
    "EXPRESSION_TARGET",
    "SEQUENCE_N",
    "MAX_CONDITION",
    "Hyperplane",
    "Calibration",
    "SequenceCalibrationWarning",
    "finite_array",
    "check_hyperplanes",
    "decision_values",
    "orthogonalize",
    "orthogonalize_printed",
    "orthogonality_error",
    "project_to_intersection",
    "project_alternating",
    "transect_frame",
    "transect",
    "fit_hyperplane",
    "fit_hyperplanes",
    "calibrate_distance",
    "attribute_sequence",
]

# --------------------------------------------------------------------------- constants
#: Normalised score the age / expression traversal must reach at offset +d (B1.3).
AGE_TARGET: float = 0.8
EXPRESSION_TARGET: float = 0.9
#: Steps on each side of the prototype in an age / expression sequence (2n + 1 = 5 images).
SEQUENCE_N: int = 2
#: Normals whose condition number (largest / smallest singular value) exceeds this are
#: treated as rank deficient: the dual basis and the projection would be meaningless.
MAX_CONDITION: float = 1e8


# --------------------------------------------------------------------------- validation
def finite_array(x: Any, name: str, ndim: tuple[int, ...]) -> np.ndarray:
    """``x`` as a non-empty, finite float64 array with one of the dimensionalities ``ndim``.

    Parameters
    ----------
    x : array_like
        Real numbers.
    name : str
        Name of the argument, used in error messages.
    ndim : tuple of int
        Accepted numbers of dimensions, e.g. ``(1, 2)``.

    Returns
    -------
    numpy.ndarray
        ``x`` as float64.

    Raises
    ------
    ValueError
        Naming ``name``: for non-numbers, a dimensionality not in ``ndim``, an empty
        array, or a NaN/inf (with the index of the first).

    Examples
    --------
    >>> finite_array([1, 2], "z", (1,))
    array([1., 2.])
    >>> finite_array([1.0, np.inf], "z", (1,))
    Traceback (most recent call last):
    ...
    ValueError: z: 1 non-finite value(s) (NaN or inf), first at index (1,)
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected real numbers, got {type(x).__name__}") from exc
    if a.ndim not in ndim:
        want = " or ".join(f"{d}-D" for d in ndim)
        raise ValueError(f"{name}: expected a {want} array, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name}: empty array (shape {a.shape})")
    bad = ~np.isfinite(a)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name}: {int(bad.sum())} non-finite value(s) (NaN or inf), first at index {pos}"
        )
    return a


def _check_rank(normals: np.ndarray, name: str, max_condition: float = MAX_CONDITION) -> None:
    k, d = normals.shape
    if k > d:
        raise ValueError(
            f"{name}: {k} hyperplanes in {d} dimensions are rank deficient (need K <= D)"
        )
    s = np.linalg.svd(normals, compute_uv=False)
    cond = np.inf if s[-1] == 0 else s[0] / s[-1]
    if not cond <= max_condition:
        raise ValueError(
            f"{name}: normals are rank deficient or nearly so (condition number {cond:.3g} > "
            f"{max_condition:.0e}); some attribute normal is (close to) a linear combination "
            "of the others, so they cannot be moved independently"
        )


def check_hyperplanes(normals: Any, offsets: Any = None, name: str = "normals",
                      check_rank: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate attribute hyperplanes and return them as float64.

    Parameters
    ----------
    normals : array_like
        (K, D) normals, one per row; a single (D,) normal is promoted to (1, D). Need not
        be unit length.
    offsets : array_like, optional
        (K,) offsets; a scalar is accepted for K = 1.
    name : str, default "normals"
        Name of the normals argument, used in error messages.
    check_rank : bool, default True
        Require linearly independent normals (K <= D and condition number at most
        :data:`MAX_CONDITION`).

    Returns
    -------
    normals : numpy.ndarray
        (K, D) float64.
    offsets : numpy.ndarray or None
        (K,) float64, or None when no offsets were given.

    Raises
    ------
    ValueError
        For empty or non-finite input, offsets whose length is not K, or (with
        ``check_rank``) rank-deficient normals.

    Examples
    --------
    >>> check_hyperplanes([3.0, 4.0], 0.5)
    (array([[3., 4.]]), array([0.5]))
    >>> check_hyperplanes([[1.0, 0.0], [2.0, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: normals: normals are rank deficient or nearly so ...
    """
    n = finite_array(normals, name, (1, 2))
    if n.ndim == 1:
        n = n[None, :]
    if check_rank:
        _check_rank(n, name)
    if offsets is None:
        return n, None
    b = finite_array(offsets, "offsets", (0, 1))
    b = np.atleast_1d(b)
    if b.shape != (n.shape[0],):
        raise ValueError(
            f"offsets: expected shape ({n.shape[0]},) to match {name} {n.shape}, got {b.shape}"
        )
    return n, b


def _check_latents(z: Any, dim: int, name: str = "z") -> np.ndarray:
    a = finite_array(z, name, (1, 2))
    if a.shape[-1] != dim:
        raise ValueError(
            f"{name}: latent dimension {a.shape[-1]} does not match the normals' {dim} "
            f"(shape {a.shape})"
        )
    return a


# --------------------------------------------------------------------------- hyperplane algebra
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


def _steps(normals: np.ndarray, fixed: np.ndarray | None, orthogonal: bool) -> np.ndarray:
    """Per-unit-decision-value step vectors (K, D) for the transect normals."""
    k = normals.shape[0]
    if orthogonal:
        stacked = normals if fixed is None else np.vstack([normals, fixed])
        return orthogonalize(stacked)[:k]
    # 004 Algorithm 1 without orthogonalisation: v = n, v̂ = v / ||v||, step c / <v̂, n> v̂
    # (= c n / ||n||², so that attribute k alone would move by exactly c).
    unit = normals / np.linalg.norm(normals, axis=1, keepdims=True)
    return unit / np.einsum("kd,kd->k", unit, normals)[:, None]


def _base_point(a: np.ndarray, normals: np.ndarray, offsets: np.ndarray,
                fixed: np.ndarray | None) -> np.ndarray:
    """Closest point to ``a`` where the K decision values are 0 and the ``fixed``
    attributes keep the values they have at ``a``."""
    if fixed is None:
        return a - (a @ normals.T + offsets) @ orthogonalize(normals)
    dual = orthogonalize(np.vstack([normals, fixed]))[: normals.shape[0]]
    return a - (a @ normals.T + offsets) @ dual


def _check_fixed(fixed: Any, dim: int) -> np.ndarray | None:
    if fixed is None:
        return None
    f, _ = check_hyperplanes(fixed, name="fixed", check_rank=False)
    if f.shape[1] != dim:
        raise ValueError(f"fixed: latent dimension {f.shape[1]} does not match the normals' {dim}")
    return f


def transect_frame(z: Any, normals: Any, offsets: Any, orthogonal: bool = True,
                   fixed: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Base point and step vectors of :func:`transect`: ``(base, steps)``.

    ``base`` (the shape of ``z``, ``(D,)`` or ``(n, D)``) is the closest point to ``z``
    with every decision value of ``normals`` 0 and, when ``fixed`` (M, D) is given, every
    fixed attribute at the seed's value. ``steps`` (K, D) are per-unit-decision-value
    moves: ``base + c @ steps`` has decision values ``c`` (K,), exactly with
    ``orthogonal=True`` (dual basis of the normals stacked with ``fixed``), along the
    leaky unit normals with ``orthogonal=False``. See :func:`transect` for the modes.

    Parameters
    ----------
    z : array_like
        Seed latent ``(D,)`` or seeds ``(n, D)``.
    normals : array_like
        (K, D) linearly independent transect normals, one per row.
    offsets : array_like
        (K,) offsets of the transect normals.
    orthogonal : bool, default True
        Dual-basis steps (exact) instead of the paper's plain normal steps.
    fixed : array_like, optional
        (M, D) normals of attributes held at the seed's decision values.

    Returns
    -------
    base : numpy.ndarray
        The shape of ``z``.
    steps : numpy.ndarray
        (K, D), one step per unit decision value of each transect attribute.

    Raises
    ------
    ValueError
        For invalid hyperplanes or latents, or when the normals stacked with ``fixed``
        are rank deficient.

    Examples
    --------
    >>> base, steps = transect_frame([1.0, 2.0, 3.0], [[1, 0, 0], [1, 1, 0]], [0, -1])
    >>> np.round(base, 6) + 0.0
    array([0., 1., 3.])
    """
    n, b = check_hyperplanes(normals, offsets)
    a = _check_latents(z, n.shape[1])
    f = _check_fixed(fixed, n.shape[1])
    if f is not None:
        check_hyperplanes(np.vstack([n, f]), name="normals stacked with fixed")
    return _base_point(a, n, b, f), _steps(n, f, orthogonal)


def transect(z: Any, normals: Any, offsets: Any, grids: Sequence[Any], orthogonal: bool = True,
             fixed: Any = None) -> np.ndarray:
    """004 Algorithm 1: a K-attribute grid of latents around one seed.

    1. Base point: the closest point to ``z`` with every transect decision value 0 (and,
       when ``fixed`` is given, every fixed attribute at the seed's value); without
       ``fixed`` this is :func:`project_to_intersection`.
    2. Grid point ``(i_1..i_K)`` = base + Σ_k grids[k][i_k] · step_k.

    ``orthogonal=True``: step_k is the dual basis of the transect normals stacked with
    ``fixed`` (M, D): the decision values at ``(i_1..i_K)`` are exactly
    ``(grids[0][i_1], ...)`` and the fixed attributes keep the seed's decision values
    (their offsets are not needed). Non-transect attributes that are *not* passed in
    ``fixed`` are not protected.

    ``orthogonal=False``: the paper's plain Algorithm 1, step ``c/<v̂,n>·v̂`` with
    ``v̂ = n/||n||`` (the printed ``c/<v,n>·v/||v||`` is only right for unit ``v``, A1.8).
    Each attribute would move by exactly ``c`` alone, but correlated normals leak into
    each other (004 Fig. 5). The base point is the same as with ``orthogonal=True``, so the
    two modes differ only in the step directions.

    Parameters
    ----------
    z : array_like
        Seed latent ``(D,)`` or seeds ``(n, D)``.
    normals : array_like
        (K, D) linearly independent transect normals, one per row.
    offsets : array_like
        (K,) offsets of the transect normals.
    grids : sequence of array_like
        K non-empty 1-D arrays of decision values (e.g. ``np.linspace(c_min, c_max, 5)``),
        latent-space distances for unit normals.
    orthogonal : bool, default True
        Dual-basis steps (exact) instead of the paper's plain normal steps.
    fixed : array_like, optional
        (M, D) normals of attributes held at the seed's decision values.

    Returns
    -------
    numpy.ndarray
        ``(len(grids[0]), ..., len(grids[K-1]), D)`` for a ``(D,)`` seed, or
        ``(n, len(grids[0]), ..., D)`` for ``(n, D)`` seeds.

    Raises
    ------
    ValueError
        For invalid hyperplanes or latents, a number of grids other than K, or an empty,
        non-1-D or non-finite grid.

    Examples
    --------
    >>> normals, offsets = [[1, 0, 0], [1, 1, 0]], [0, -1]
    >>> grid = transect([1.0, 2.0, 3.0], normals, offsets, [[-1, 1], [0, 2]])
    >>> grid.shape
    (2, 2, 3)
    >>> np.round(decision_values(grid[1, 1], normals, offsets), 6) + 0.0  # exactly (1, 2)
    array([1., 2.])
    """
    base, steps = transect_frame(z, normals, offsets, orthogonal=orthogonal, fixed=fixed)
    k = steps.shape[0]
    if isinstance(grids, np.ndarray) and grids.ndim == 1:
        raise ValueError("grids: expected a list of K 1-D arrays (one per normal), got one array")
    grids = list(grids)
    if len(grids) != k:
        raise ValueError(f"grids: expected {k} grids (one per normal), got {len(grids)}")
    gs = []
    for i, g in enumerate(grids):
        g = np.asarray(g, dtype=np.float64)
        if g.ndim != 1 or g.size == 0:
            raise ValueError(f"grids[{i}]: expected a non-empty 1-D array, got shape {g.shape}")
        gs.append(finite_array(g, f"grids[{i}]", (1,)))
    mesh = np.meshgrid(*gs, indexing="ij")  # K arrays of shape (L1, ..., LK)
    values = np.stack(mesh, axis=-1)  # (L1, ..., LK, K)
    offsets_grid = values @ steps  # (L1, ..., LK, D)
    if base.ndim == 1:
        return base + offsets_grid
    return base.reshape((base.shape[0],) + (1,) * len(gs) + (base.shape[1],)) + offsets_grid


# --------------------------------------------------------------------------- attribute models
@dataclass(frozen=True, eq=False)
class Hyperplane:
    """A fitted attribute hyperplane in decision-value convention (A1.5); made by
    :func:`fit_hyperplane`.

    ``normal @ z + offset`` is the signed Euclidean distance to the neutral hyperplane
    (positive = more of the attribute).

    Attributes
    ----------
    normal : numpy.ndarray
        (D,) unit normal ``a / ||a||``.
    offset : float
        ``b = (a0 - tau) / ||a||``.
    kind : str
        ``"ridge"`` or ``"svm"``.
    tau : float
        Neutral level of the model's output (0 for the SVM).
    raw_weight, raw_intercept : numpy.ndarray, float
        The model's own ``a`` and ``a0`` in latent coordinates (after undoing any
        standardisation).
    score : float
        Training R² (ridge) or accuracy (svm).
    n_samples : int
        Number of training latents.
    n_positive : int or None
        Number of binarised positives (svm only).
    threshold, alpha, C : float or None
        The SVM's binarisation threshold and ``C``, or the ridge's ``alpha`` (None for
        the other kind).
    """

    normal: np.ndarray
    offset: float
    kind: str
    tau: float
    raw_weight: np.ndarray
    raw_intercept: float
    score: float
    n_samples: int
    n_positive: int | None = None
    threshold: float | None = None
    alpha: float | None = None
    C: float | None = None

    @property
    def weight_norm(self) -> float:
        """``||a||``: raw model units per unit of latent distance along the normal."""
        return float(np.linalg.norm(self.raw_weight))

    def decision(self, z: Any) -> np.ndarray:
        """Signed distance of latents to the hyperplane (positive = more of the attribute).

        Parameters
        ----------
        z : array_like
            Latents ``(..., D)``.

        Returns
        -------
        numpy.ndarray
            float64 distances, shape ``(...)``.
        """
        return decision_values(z, self.normal[None, :], np.array([self.offset]))[..., 0]


KINDS = ("ridge", "svm")


def fit_hyperplane(latents: Any, y: Any, kind: str = "ridge", alpha: float = 1.0, C: float = 1.0,
                   threshold: float = 0.5, tau: float = 0.5, standardize: bool = False,
                   max_iter: int = 20000) -> Hyperplane:
    """Fit one attribute hyperplane from latents ``(n, D)`` and targets ``y`` ``(n,)``.

    * ``kind="ridge"``: sklearn ``Ridge(alpha)`` on the continuous target (normalised
      [0, 1] scores in 004); the neutral level is ``tau`` (0.5 = scale midpoint).
    * ``kind="svm"``: sklearn ``LinearSVC(C)`` on ``y >= threshold`` (bool ``y`` is used
      as is); the neutral level is the SVM boundary (``tau`` is ignored, 0 is used).

    The raw ``a, a0`` become a unit normal ``a / ||a||`` and offset ``(a0 - tau) / ||a||``
    (A1.5). The SVM uses ``intercept_scaling=10`` so its offset is essentially
    unregularised; ``max_iter`` bounds liblinear (a ``ConvergenceWarning`` is passed on).
    ``standardize`` fits on z-scored latents (as B1.2 recommends for the SVM) and
    maps the hyperplane back to raw latent coordinates. Rows are never dropped.

    Parameters
    ----------
    latents : array_like
        (n, D) latents, n >= 2.
    y : array_like
        (n,) targets: continuous (ridge), or continuous / bool (svm).
    kind : {"ridge", "svm"}, default "ridge"
        Model.
    alpha : float, default 1.0
        Ridge penalty (>= 0).
    C : float, default 1.0
        SVM regularisation (> 0).
    threshold : float, default 0.5
        SVM positives are ``y >= threshold``.
    tau : float, default 0.5
        Ridge neutral level.
    standardize : bool, default False
        Fit on z-scored latents.
    max_iter : int, default 20000
        liblinear's iteration bound.

    Returns
    -------
    Hyperplane
        Unit normal, offset and the fit's details.

    Raises
    ------
    ValueError
        For an unknown ``kind``, NaN/inf in ``latents`` or ``y``, mismatched lengths,
        fewer than 2 samples, a constant column with ``standardize``, a negative
        ``alpha``, a non-positive ``C``, a single SVM class, or a zero weight vector.

    Examples
    --------
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    >>> h = fit_hyperplane(x, x[:, 0] / 3, alpha=0.0)  # score = x0 / 3; neutral 0.5 at x0 = 1.5
    >>> np.round(h.normal, 6) + 0.0, round(h.offset, 6)
    (array([1., 0.]), -1.5)
    >>> np.round(h.decision([[3.0, 0.0]]), 6)  # 1.5 units on the positive side
    array([1.5])
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
    x = finite_array(latents, "latents", (2,))
    yy = np.asarray(y)
    if yy.ndim != 1 or yy.shape[0] != x.shape[0]:
        raise ValueError(f"y: expected shape ({x.shape[0]},) to match latents {x.shape}, got {yy.shape}")
    if yy.dtype != bool:
        yy = finite_array(yy, "y", (1,))
    if x.shape[0] < 2:
        raise ValueError(f"latents: need at least 2 samples, got {x.shape[0]}")
    mu = x.mean(axis=0) if standardize else np.zeros(x.shape[1])
    sd = x.std(axis=0) if standardize else np.ones(x.shape[1])
    if standardize and (sd == 0).any():
        raise ValueError(f"latents: column {int(np.flatnonzero(sd == 0)[0])} is constant; cannot standardize")
    xs = (x - mu) / sd
    n_pos = None
    if kind == "ridge":
        from sklearn.linear_model import Ridge

        if not alpha >= 0:
            raise ValueError(f"alpha: expected a non-negative number, got {alpha!r}")
        target = yy.astype(np.float64)
        model = Ridge(alpha=float(alpha)).fit(xs, target)
        score = float(model.score(xs, target))
        level = float(tau)
    else:
        from sklearn.svm import LinearSVC

        if not C > 0:
            raise ValueError(f"C: expected a positive number, got {C!r}")
        labels = yy if yy.dtype == bool else yy >= threshold
        n_pos = int(labels.sum())
        if n_pos == 0 or n_pos == labels.size:
            raise ValueError(
                f"y: binarised at threshold {threshold} all {labels.size} labels are "
                f"{'positive' if n_pos else 'negative'}; an SVM needs both classes"
            )
        # intercept_scaling=10: liblinear penalises the intercept like a weight; a large
        # synthetic feature makes that penalty negligible, so the offset is not shrunk.
        model = LinearSVC(C=float(C), dual="auto", max_iter=int(max_iter),
                          intercept_scaling=10.0).fit(xs, labels)
        score = float(model.score(xs, labels))
        level = 0.0
    coef = np.asarray(model.coef_, dtype=np.float64).reshape(-1)
    a = coef / sd
    a0 = float(np.ravel(model.intercept_)[0]) - float(coef @ (mu / sd))
    norm = float(np.linalg.norm(a))
    if not norm > 0:
        raise ValueError(f"{kind} fit has a zero weight vector: the target does not depend on the latents")
    return Hyperplane(
        normal=a / norm, offset=(a0 - level) / norm, kind=kind, tau=level, raw_weight=a,
        raw_intercept=a0, score=score, n_samples=int(x.shape[0]), n_positive=n_pos,
        threshold=float(threshold) if kind == "svm" else None,
        alpha=float(alpha) if kind == "ridge" else None,
        C=float(C) if kind == "svm" else None,
    )


def fit_hyperplanes(latents: Any, table: pd.DataFrame, spec: Mapping[str, str | Mapping[str, Any]]
                    ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Fit one hyperplane per attribute with :func:`fit_hyperplane`.

    Parameters
    ----------
    latents : array_like
        (n, D) latents.
    table : pandas.DataFrame
        n rows of targets; row ``i`` belongs to ``latents[i]``.
    spec : mapping
        Maps a column of ``table`` to a kind (``"ridge"`` / ``"svm"``) or to keyword
        arguments of :func:`fit_hyperplane` (e.g. ``{"kind": "svm", "C": 0.1}``).

    Returns
    -------
    names : list of str
        The attributes, in ``spec`` order.
    normals : numpy.ndarray
        (K, D) unit normals.
    offsets : numpy.ndarray
        (K,) offsets.

    Raises
    ------
    ValueError
        If ``table`` is not a DataFrame or its length differs from ``latents``, ``spec`` is
        empty, a column is missing or holds a missing value, or a fit fails (the message
        names the attribute).

    Examples
    --------
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    >>> names, normals, offsets = fit_hyperplanes(
    ...     x, pd.DataFrame({"age": x[:, 0] / 3}), {"age": {"kind": "ridge", "alpha": 0.0}})
    >>> names, np.round(offsets, 6)
    (['age'], array([-1.5]))
    """
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"table: expected a DataFrame, got {type(table).__name__}")
    x = finite_array(latents, "latents", (2,))
    if len(table) != x.shape[0]:
        raise ValueError(f"table: {len(table)} rows but latents has {x.shape[0]}")
    if not spec:
        raise ValueError("spec: no attributes to fit")
    names, normals, offsets = [], [], []
    for name, how in spec.items():
        require_columns(table, [name], "table")
        kwargs = {"kind": how} if isinstance(how, str) else dict(how)
        col = table[name]
        if col.isna().any():
            row = col.index[col.isna().to_numpy()][0]
            raise ValueError(f"table[{name!r}]: missing value in row {row!r}; rows are never dropped")
        try:
            h = fit_hyperplane(x, col.to_numpy(), **kwargs)
        except ValueError as exc:
            raise ValueError(f"attribute {name!r}: {exc}") from exc
        names.append(str(name))
        normals.append(h.normal)
        offsets.append(h.offset)
    return names, np.vstack(normals), np.asarray(offsets)


# --------------------------------------------------------------------------- sequences (000)
class SequenceCalibrationWarning(UserWarning):
    """An age / expression traversal did not calibrate normally (already at the target,
    or the target was never reached within ``max_distance``)."""


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_distance`.

    Attributes
    ----------
    d : float
        Distance along the unit direction (latent-space units).
    status : str
        ``"reached"``, ``"already_at_target"`` (score at ``z`` >= target, ``d = 0``) or
        ``"not_reached"`` (``d = max_distance``).
    score_start, score_end : float
        Scores at ``z`` and at the last evaluated step.
    n_evaluated : int
        Latents passed to ``score_fn``.
    """

    d: float
    status: str
    score_start: float
    score_end: float
    n_evaluated: int


def _unit(direction: Any, dim: int) -> np.ndarray:
    u = finite_array(direction, "direction", (1,))
    if u.shape != (dim,):
        raise ValueError(f"direction: expected shape ({dim},) to match z, got {u.shape}")
    norm = np.linalg.norm(u)
    if norm == 0:
        raise ValueError("direction: the zero vector has no direction")
    return u / norm


def _scores(score_fn: Callable[[np.ndarray], Any], batch: np.ndarray) -> np.ndarray:
    s = np.asarray(score_fn(batch), dtype=np.float64).reshape(-1)
    if s.shape != (batch.shape[0],):
        raise ValueError(f"score_fn: returned {s.size} scores for {batch.shape[0]} latents")
    if not np.isfinite(s).all():
        raise ValueError("score_fn: returned non-finite scores (NaN or inf)")
    return s


def calibrate_distance(z: Any, direction: Any, score_fn: Callable[[np.ndarray], Any],
                       target: float, step: float = 0.05, max_distance: float = 10.0,
                       batch_size: int = 16, refine: bool = True) -> Calibration:
    """Distance ``d`` along ``+direction/||direction||`` from ``z`` at which
    ``score_fn`` first reaches ``target`` (B1.3).

    Scores the latents ``z + t·u`` for ``t = 0, step, 2·step, ...`` (up to
    ``max_distance``) in batches of ``batch_size`` (``score_fn`` takes an ``(m, D)``
    batch and returns ``m`` scores; it may render images). ``d`` is the first ``t`` with
    score >= target; with ``refine`` the crossing is interpolated linearly between the two
    bracketing steps (exact for a linear ``score_fn``: ``d = (target - s(z)) / ||a||``).

    Parameters
    ----------
    z : array_like
        (D,) start latent.
    direction : array_like
        (D,) direction, normalised to unit length.
    score_fn : callable
        ``(m, D)`` latents -> ``m`` finite scores (e.g. a normalised attribute score).
    target : float
        Score to reach (e.g. :data:`AGE_TARGET`).
    step : float, default 0.05
        Distance between scored latents (> 0).
    max_distance : float, default 10.0
        Furthest distance scored (> 0).
    batch_size : int, default 16
        Latents per ``score_fn`` call.
    refine : bool, default True
        Interpolate the crossing linearly.

    Returns
    -------
    Calibration
        ``d``, ``status`` and the scores at both ends.

    Raises
    ------
    ValueError
        For non-finite or mismatched ``z``/``direction``, a zero direction, a non-positive
        ``step`` or ``max_distance``, a non-positive integer ``batch_size``, a non-finite
        ``target``, or ``score_fn`` returning the wrong number of scores or a NaN/inf.

    Examples
    --------
    >>> cal = calibrate_distance(np.zeros(2), [2.0, 0.0], lambda b: 0.5 * b[:, 0], target=0.8)
    >>> round(cal.d, 6), cal.status  # 0.5 * d = 0.8
    (1.6, 'reached')
    """
    a = finite_array(z, "z", (1,))
    u = _unit(direction, a.shape[0])
    if not step > 0:
        raise ValueError(f"step: expected a positive number, got {step!r}")
    if not max_distance > 0:
        raise ValueError(f"max_distance: expected a positive number, got {max_distance!r}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive integer, got {batch_size!r}")
    if not np.isfinite(target):
        raise ValueError(f"target: expected a finite number, got {target!r}")
    n_steps = int(np.floor(max_distance / step + 1e-9))
    ts = np.arange(n_steps + 1) * step
    if ts[-1] < max_distance - 1e-12:
        ts = np.append(ts, max_distance)
    s0 = float(_scores(score_fn, a[None, :])[0])
    if s0 >= target:
        return Calibration(0.0, "already_at_target", s0, s0, 1)
    prev_t, prev_s, n_eval = 0.0, s0, 1
    for start in range(1, ts.size, int(batch_size)):
        t = ts[start : start + int(batch_size)]
        s = _scores(score_fn, a[None, :] + t[:, None] * u[None, :])
        n_eval += t.size
        hit = np.flatnonzero(s >= target)
        if hit.size:
            i = int(hit[0])
            t_hi, s_hi = float(t[i]), float(s[i])
            t_lo, s_lo = (prev_t, prev_s) if i == 0 else (float(t[i - 1]), float(s[i - 1]))
            d = t_hi
            if refine and s_hi > s_lo:
                d = t_lo + (target - s_lo) / (s_hi - s_lo) * (t_hi - t_lo)
            return Calibration(float(d), "reached", s0, s_hi, n_eval)
        prev_t, prev_s = float(t[-1]), float(s[-1])
    return Calibration(float(max_distance), "not_reached", s0, prev_s, n_eval)


def attribute_sequence(z: Any, direction: Any, score_fn: Callable[[np.ndarray], Any],
                       target: float, step: float = 0.05, n: int = SEQUENCE_N,
                       max_distance: float = 10.0, batch_size: int = 16,
                       refine: bool = True) -> tuple[np.ndarray, float]:
    """000's age / expression sequence around a prototype ``z`` (D,) (B1.3).

    ``d`` comes from :func:`calibrate_distance` (step along the unit ``direction`` until
    ``score_fn`` reaches ``target``: :data:`AGE_TARGET` 0.8, :data:`EXPRESSION_TARGET`
    0.9). Returns ``(latents (2n+1, D), d)`` with ``latents[n + k] = z + (k d / n) u`` for
    ``k = -n..n`` (only the + side is calibrated; the - side mirrors it; ``latents[n]`` is
    ``z``). If ``z`` already scores >= target, ``d = 0`` (all copies of ``z``); if the
    target is not reached, ``d = max_distance``; both emit a
    :class:`SequenceCalibrationWarning`. Use :func:`calibrate_distance` for the status.

    Parameters
    ----------
    z : array_like
        (D,) prototype latent.
    direction : array_like
        (D,) attribute direction (normalised to unit length).
    score_fn : callable
        ``(m, D)`` latents -> ``m`` finite scores.
    target : float
        Score the + side must reach.
    step, max_distance, batch_size, refine
        As in :func:`calibrate_distance`.
    n : int, default :data:`SEQUENCE_N`
        Steps on each side (>= 1).

    Returns
    -------
    latents : numpy.ndarray
        (2n + 1, D) float64, ``latents[n]`` = ``z``.
    d : float
        The calibrated distance.

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer, or as :func:`calibrate_distance`.

    Examples
    --------
    >>> lat, d = attribute_sequence(np.zeros(2), [1.0, 0.0], lambda b: 0.5 * b[:, 0], 0.8)
    >>> np.round(lat[:, 0], 6) + 0.0, round(d, 6)
    (array([-1.6, -0.8,  0. ,  0.8,  1.6]), 1.6)
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    cal = calibrate_distance(z, direction, score_fn, target, step=step,
                             max_distance=max_distance, batch_size=batch_size, refine=refine)
    if cal.status != "reached":
        what = (f"already scores {cal.score_start:.4g} >= target {target:.4g}; d = 0"
                if cal.status == "already_at_target" else
                f"never reached target {target:.4g} within max_distance {max_distance:.4g} (last score {cal.score_end:.4g}); "
                "d capped")
        warnings.warn(f"attribute_sequence: the latent {what}", SequenceCalibrationWarning,
                      stacklevel=2)
    a = np.asarray(z, dtype=np.float64)
    u = _unit(direction, a.shape[0])
    k = np.arange(-int(n), int(n) + 1, dtype=np.float64)
    return a[None, :] + (k * cal.d / n)[:, None] * u[None, :], cal.d
