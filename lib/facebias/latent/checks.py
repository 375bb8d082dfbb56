"""Input validation shared by the latent-space algebra (papers 004, 000).

``finite_array`` (non-empty, finite float64 arrays), ``check_hyperplanes`` (K attribute
normals and offsets in the row convention of :mod:`facebias.latent`) and the private rank
and latent-dimension checks: every function of the package raises ``ValueError`` naming
the argument and the problem through these. Rank deficiency is judged against
:data:`MAX_CONDITION` (``docs/specs/transects.md`` A1.7: the dual basis needs linearly
independent normals).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# --------------------------------------------------------------------------- constants
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
