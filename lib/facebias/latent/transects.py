"""004 Algorithm 1: K-attribute transects (grids of latents) around a seed.

Implements ``docs/specs/transects.md`` A1.7-A1.8 (paper 004): the base point where the
transect attributes' decision values are 0 (other ``fixed`` attributes held at the seed's
values) and the per-unit-decision-value steps, either the exact dual basis or the paper's
leaky plain normal steps (:func:`transect_frame`), and the grid they span
(:func:`transect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from facebias.latent.algebra import decision_values, orthogonalize  # noqa: F401 (doctests use decision_values)
from facebias.latent.checks import _check_latents, check_hyperplanes, finite_array


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
