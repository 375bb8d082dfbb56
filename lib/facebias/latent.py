"""Generator-agnostic latent-space algebra for synthetic-face bias studies (papers 004, 000).

Everything here is pure numpy / pandas on latent vectors: no generator, no images, no I/O.
A generator (StyleGAN2 ``w``, EG3D ``w``, a toy linear model) maps the latents this module
produces to images; see ``../shared/notes/seeds_004_000.md`` A1.4-A1.8 and B1.2-B1.5.

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
* Grid values ``c`` (transects, prototypes) are decision values, i.e. latent-space
  distances for unit normals. They are generator specific and must be re-tuned.
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

from facebias.metrics import require_columns

__all__ = [
    "POSE_SEQUENCE",
    "LIGHT_SEQUENCE",
    "LIGHT_POWER",
    "AGE_TARGET",
    "EXPRESSION_TARGET",
    "SEQUENCE_N",
    "RACE_CODES",
    "GENDER_CODES",
    "GROUPS",
    "MAX_CONDITION",
    "Hyperplane",
    "Calibration",
    "SequenceCalibrationWarning",
    "check_hyperplanes",
    "decision_values",
    "orthogonalize",
    "orthogonalize_printed",
    "project_to_intersection",
    "project_alternating",
    "transect",
    "fit_hyperplane",
    "fit_hyperplanes",
    "prototypes",
    "calibrate_distance",
    "attribute_sequence",
    "normalize_mesh",
    "maxmin_select",
    "hcic_pairs",
    "pair_counts",
]

# --------------------------------------------------------------------------- constants (000)
#: EG3D camera yaw angles in degrees of the pose sequence (0 is the prototype itself).
POSE_SEQUENCE: tuple[int, ...] = (-30, -15, 0, 15, 30)
#: Light-source directions of the DPR relighting sequence (the 5th slot is the prototype).
LIGHT_SEQUENCE: tuple[str, ...] = ("up", "down", "left", "right")
#: DPR light power of the lighting sequence ("strong but not overwhelming").
LIGHT_POWER: float = 0.7
#: Normalised score the age / expression traversal must reach at offset +d (B1.3).
AGE_TARGET: float = 0.8
EXPRESSION_TARGET: float = 0.9
#: Steps on each side of the prototype in an age / expression sequence (2n + 1 = 5 images).
SEQUENCE_N: int = 2
#: Race name -> one-letter group code (000's groups WM, WF, BM, BF, AM, AF).
RACE_CODES: dict[str, str] = {"White": "W", "Black": "B", "East Asian": "A"}
#: Gender code -> sign of the gender decision value (positive = male).
GENDER_CODES: dict[str, int] = {"M": 1, "F": -1}
#: The six protected groups of 000 in the paper's order.
GROUPS: tuple[str, ...] = ("WM", "WF", "BM", "BF", "AM", "AF")
#: Normals whose condition number (largest / smallest singular value) exceeds this are
#: treated as rank deficient: the dual basis and the projection would be meaningless.
MAX_CONDITION: float = 1e8


# --------------------------------------------------------------------------- validation
def _finite_array(x: Any, name: str, ndim: tuple[int, ...]) -> np.ndarray:
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
    """Validate ``normals`` (K, D) (a single (D,) normal is promoted to (1, D)) and
    ``offsets`` (K,) (a scalar is accepted for K = 1); return them as float64.

    With ``check_rank`` the normals must be linearly independent (condition number at most
    :data:`MAX_CONDITION`); otherwise ``ValueError``.
    """
    n = _finite_array(normals, name, (1, 2))
    if n.ndim == 1:
        n = n[None, :]
    if check_rank:
        _check_rank(n, name)
    if offsets is None:
        return n, None
    b = _finite_array(offsets, "offsets", (0, 1))
    b = np.atleast_1d(b)
    if b.shape != (n.shape[0],):
        raise ValueError(
            f"offsets: expected shape ({n.shape[0]},) to match {name} {n.shape}, got {b.shape}"
        )
    return n, b


def _check_latents(z: Any, dim: int, name: str = "z") -> np.ndarray:
    a = _finite_array(z, name, (1, 2))
    if a.shape[-1] != dim:
        raise ValueError(
            f"{name}: latent dimension {a.shape[-1]} does not match the normals' {dim} "
            f"(shape {a.shape})"
        )
    return a


# --------------------------------------------------------------------------- hyperplane algebra
def decision_values(z: Any, normals: Any, offsets: Any) -> np.ndarray:
    """Decision values ``z @ normals.T + offsets``: ``(..., D)`` latents -> ``(..., K)``.

    Accepts any leading shape (e.g. the ``(L1, ..., LK, D)`` output of :func:`transect`).
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

    ``directions = (N Nᵀ)⁻¹ N`` for row normals ``N`` (the notes' ``Ñ = N (NᵀN)⁻¹`` in
    column layout), computed from the SVD ``N = U S Vᵀ`` as ``U S⁻¹ Vᵀ``. Moving a latent
    by ``c * directions[j]`` changes attribute ``j``'s decision value by exactly ``c`` and
    no other attribute's. ``directions[j]`` is ``normals[j]`` minus its projection on the
    span of the other normals, rescaled. Raises ``ValueError`` for rank-deficient normals.
    This corrects the paper's Algorithm 2 (see :func:`orthogonalize_printed`).
    """
    n, _ = check_hyperplanes(normals)
    u, s, vt = np.linalg.svd(n, full_matrices=False)
    return (u / s) @ vt


def orthogonalize_printed(normals: Any) -> np.ndarray:
    """The paper's Algorithm 2 exactly as printed (for comparison only; do not use).

    ``Q, R = QR([n_1 … n_K])``; ``ñ_i = n_i - Σ_{j≠i} Q_j <Q_j, ñ_i> / <Q_j, Q_j>``
    (sequentially). Since Q spans the normals this leaves ``ñ_i = R_ii Q_i``, which is
    orthogonal to the *earlier* normals ``n_k, k < i`` but not to the later ones:
    ``<ñ_i, n_k> = R_ii R_ik ≠ 0`` for ``k > i``. Returns (K, D) rows.
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


def project_to_intersection(z: Any, normals: Any, offsets: Any) -> np.ndarray:
    """Closest point to ``z`` on the intersection of the K hyperplanes (all decision values 0).

    Closed form ``z0 = z - N (NᵀN)⁻¹ (Nᵀ z + b)`` in column layout, i.e.
    ``z0 = z - decision_values(z) @ orthogonalize(normals)`` for row normals. ``z`` is
    ``(D,)`` or ``(n, D)``; the result has the same shape. The intersection is a
    (D - K)-dimensional affine subspace (not a point, as 004 says); this is the orthogonal
    projection onto it, the limit of :func:`project_alternating`.
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


def transect(z: Any, normals: Any, offsets: Any, grids: Sequence[Any], orthogonal: bool = True,
             fixed: Any = None) -> np.ndarray:
    """004 Algorithm 1: a K-attribute grid of latents around one seed.

    ``grids`` is a list of K non-empty 1-D arrays of decision values (e.g.
    ``np.linspace(c_min, c_max, 5)``). Returns ``(len(grids[0]), ..., len(grids[K-1]), D)``
    for a ``(D,)`` seed, or ``(n, len(grids[0]), ..., D)`` for ``(n, D)`` seeds.

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
    """
    n, b = check_hyperplanes(normals, offsets)
    a = _check_latents(z, n.shape[1])
    f = _check_fixed(fixed, n.shape[1])
    if f is not None:
        check_hyperplanes(np.vstack([n, f]), name="normals stacked with fixed")
    if isinstance(grids, np.ndarray) and grids.ndim == 1:
        raise ValueError("grids: expected a list of K 1-D arrays (one per normal), got one array")
    grids = list(grids)
    if len(grids) != n.shape[0]:
        raise ValueError(f"grids: expected {n.shape[0]} grids (one per normal), got {len(grids)}")
    gs = []
    for i, g in enumerate(grids):
        g = np.asarray(g, dtype=np.float64)
        if g.ndim != 1 or g.size == 0:
            raise ValueError(f"grids[{i}]: expected a non-empty 1-D array, got shape {g.shape}")
        gs.append(_finite_array(g, f"grids[{i}]", (1,)))
    steps = _steps(n, f, orthogonal)
    base = _base_point(a, n, b, f)
    mesh = np.meshgrid(*gs, indexing="ij")  # K arrays of shape (L1, ..., LK)
    values = np.stack(mesh, axis=-1)  # (L1, ..., LK, K)
    offsets_grid = values @ steps  # (L1, ..., LK, D)
    if a.ndim == 1:
        return base + offsets_grid
    return base.reshape((a.shape[0],) + (1,) * len(gs) + (a.shape[1],)) + offsets_grid


# --------------------------------------------------------------------------- attribute models
@dataclass(frozen=True, eq=False)
class Hyperplane:
    """A fitted attribute hyperplane in decision-value convention (A1.5).

    ``normal`` (D,) is unit length and ``offset`` ``b = (a0 - tau) / ||a||``, so
    ``normal @ z + offset`` is the signed Euclidean distance to the neutral hyperplane
    (positive = more of the attribute). ``raw_weight`` / ``raw_intercept`` are the model's
    own ``a`` and ``a0`` in latent coordinates (after undoing any standardisation).
    ``score`` is the training R² (ridge) or accuracy (svm); ``n_positive`` the number of
    binarised positives (svm only, else None).
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
        """Signed distance of latents ``(..., D)`` to the hyperplane, shape ``(...)``."""
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
    maps the hyperplane back to raw latent coordinates. Rows are never dropped: NaN/inf
    in ``latents`` or ``y`` raises ``ValueError``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
    x = _finite_array(latents, "latents", (2,))
    yy = np.asarray(y)
    if yy.ndim != 1 or yy.shape[0] != x.shape[0]:
        raise ValueError(f"y: expected shape ({x.shape[0]},) to match latents {x.shape}, got {yy.shape}")
    if yy.dtype != bool:
        yy = _finite_array(yy, "y", (1,))
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
    """Fit one hyperplane per attribute: ``spec`` maps a column of ``table`` to a kind
    (``"ridge"`` / ``"svm"``) or to keyword arguments of :func:`fit_hyperplane` (e.g.
    ``{"kind": "svm", "C": 0.1}``). Row ``i`` of ``table`` belongs to ``latents[i]``.

    Returns ``(names, normals (K, D), offsets (K,))`` in ``spec`` order (unit normals).
    """
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"table: expected a DataFrame, got {type(table).__name__}")
    x = _finite_array(latents, "latents", (2,))
    if len(table) != x.shape[0]:
        raise ValueError(f"table: {len(table)} rows but latents has {x.shape[0]}")
    if not spec:
        raise ValueError("spec: no attributes to fit")
    names, normals, offsets = [], [], []
    for name, how in spec.items():
        if name not in table.columns:
            raise ValueError(f"table: missing column {name!r} (have {list(table.columns)})")
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


# --------------------------------------------------------------------------- prototypes (000)
def prototypes(z: Any, gender: tuple[Any, Any], races: Mapping[str, tuple[Any, Any]],
               c_gender: float = 1.75, c_race: float = 1.5, orthogonal: bool = True,
               others: str = "negative", fixed: Any = None) -> dict[str, np.ndarray]:
    """000's race x gender prototypes of one seed latent ``z`` (D,) (B1.2).

    ``gender = (normal, offset)`` with positive = male; ``races`` maps a race name to its
    one-vs-all ``(normal, offset)`` (positive = that race). Race names map to group codes
    through :data:`RACE_CODES` (White -> W, Black -> B, East Asian -> A; a one-letter name
    is used as its own code); gender M = +``c_gender``, F = -``c_gender``. The default
    races give the keys ``WM, WF, BM, BF, AM, AF`` (:data:`GROUPS`, in that order).

    Procedure: project ``z`` onto the intersection of the gender and race hyperplanes
    (keeping the ``fixed`` (M, D) attributes at the seed's value, see :func:`transect`),
    then set the target race's decision value to ``+c_race``, every other race's to
    ``-c_race`` (``others="negative"``, so the target is the argmax with margin
    ``2 c_race``) or 0 (``others="zero"``), and gender to ``±c_gender``. With
    ``orthogonal=True`` (dual basis) these decision values are exact and the prototypes
    of a seed differ only in the span of the gender and race normals. With
    ``orthogonal=False`` the moves are along the unit normals (leaky, as in the paper's
    "move along the normal directions"). The ``c`` values are generator specific.
    """
    if others not in ("negative", "zero"):
        raise ValueError(f"others: expected 'negative' or 'zero', got {others!r}")
    if not (c_gender > 0 and c_race > 0):
        raise ValueError(f"c_gender and c_race must be positive, got {c_gender!r}, {c_race!r}")
    if not isinstance(races, Mapping) or len(races) == 0:
        raise ValueError("races: expected a non-empty dict race -> (normal, offset)")
    try:
        gn, gb = gender
    except (TypeError, ValueError) as exc:
        raise ValueError("gender: expected a (normal, offset) pair") from exc
    codes = []
    for race in races:
        code = RACE_CODES.get(race, race if isinstance(race, str) and len(race) == 1 else None)
        if code is None:
            raise ValueError(
                f"races: unknown race {race!r}; use one of {list(RACE_CODES)} or a one-letter code"
            )
        codes.append(code)
    if len(set(codes)) != len(codes):
        raise ValueError(f"races: group codes {codes} are not unique")
    def offset(x: Any, name: str) -> float:
        v = np.ravel(np.asarray(x, dtype=np.float64))
        if v.size != 1:
            raise ValueError(f"{name}: the offset must be one number, got shape {np.shape(x)}")
        return float(v[0])

    rows, offs = [np.ravel(np.asarray(gn, dtype=np.float64))], [offset(gb, "gender")]
    for race, pair in races.items():
        try:
            rn, rb = pair
        except (TypeError, ValueError) as exc:
            raise ValueError(f"races[{race!r}]: expected a (normal, offset) pair") from exc
        rows.append(np.ravel(np.asarray(rn, dtype=np.float64)))
        offs.append(offset(rb, f"races[{race!r}]"))
    if len({r.shape for r in rows}) != 1:
        raise ValueError(f"gender and race normals differ in length: {[r.shape for r in rows]}")
    n, b = check_hyperplanes(np.vstack(rows), np.asarray(offs, dtype=np.float64),
                             name="gender and race normals")
    a = _check_latents(z, n.shape[1])
    if a.ndim != 1:
        raise ValueError(f"z: expected one seed latent (D,), got shape {a.shape}")
    f = _check_fixed(fixed, n.shape[1])
    if f is not None:
        check_hyperplanes(np.vstack([n, f]), name="normals stacked with fixed")
    steps = _steps(n, f, orthogonal)
    base = _base_point(a, n, b, f)
    other = -c_race if others == "negative" else 0.0
    out: dict[str, np.ndarray] = {}
    for r, code in enumerate(codes):
        for g, sign in GENDER_CODES.items():
            target = np.full(n.shape[0], other, dtype=np.float64)
            target[0] = sign * c_gender
            target[1 + r] = c_race
            out[code + g] = base + target @ steps
    return out


# --------------------------------------------------------------------------- sequences (000)
class SequenceCalibrationWarning(UserWarning):
    """An age / expression traversal did not calibrate normally (already at the target,
    or the target was never reached within ``max_distance``)."""


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_distance`.

    ``d``: distance along the unit direction; ``status``: ``"reached"``,
    ``"already_at_target"`` (score at ``z`` >= target, ``d = 0``) or ``"not_reached"``
    (``d = max_distance``); ``score_start`` / ``score_end``: scores at ``z`` and at the
    last evaluated step; ``n_evaluated``: latents passed to ``score_fn``.
    """

    d: float
    status: str
    score_start: float
    score_end: float
    n_evaluated: int


def _unit(direction: Any, dim: int) -> np.ndarray:
    u = _finite_array(direction, "direction", (1,))
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
    """
    a = _finite_array(z, "z", (1,))
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


# --------------------------------------------------------------------------- max-min seeds (000)
def normalize_mesh(points: Any) -> np.ndarray:
    """Centre a ``(P, 2|3)`` landmark mesh on its centroid, scale it to unit RMS distance
    from the centroid and flatten to ``(P * dims,)``, so distances measure shape rather
    than position or size (B4 #5)."""
    p = _finite_array(points, "points", (2,))
    if p.shape[1] not in (2, 3):
        raise ValueError(f"points: expected shape (P, 2) or (P, 3), got {p.shape}")
    c = p - p.mean(axis=0)
    rms = float(np.sqrt(np.mean(np.einsum("pd,pd->p", c, c))))
    if not rms > 0:
        raise ValueError("points: all landmarks coincide; the mesh has no shape")
    return (c / rms).reshape(-1)


def maxmin_select(features: Any, n_select: int, first: int = 0,
                  return_distances: bool = False) -> list[int] | tuple[list[int], np.ndarray]:
    """000 Supp. Algorithm 1: greedy max-min (farthest-point) selection of seeds.

    ``features`` is ``(n_seeds, n_groups, F)`` (e.g. :func:`normalize_mesh` of each
    group's prototype; ``(n_seeds, F)`` is one group). Starting from ``first``, repeatedly
    add the unselected seed ``s`` maximising
    ``D(s) = min_{f selected, g} ||features[s, g] - features[f, g]||`` (same-group
    comparisons only). Ties go to the lowest index, so the result is deterministic.
    Returns the ``n_select`` seed indices in selection order; with ``return_distances``
    also ``D`` of each added seed (``inf`` for the first; non-increasing).
    """
    x = _finite_array(features, "features", (2, 3))
    if x.ndim == 2:
        x = x[:, None, :]
    n_seeds = x.shape[0]
    if int(n_select) != n_select or not 1 <= n_select <= n_seeds:
        raise ValueError(f"n_select: expected an integer in [1, {n_seeds}], got {n_select!r}")
    if int(first) != first or not 0 <= first < n_seeds:
        raise ValueError(f"first: expected a seed index in [0, {n_seeds}), got {first!r}")
    chosen = [int(first)]
    dists = [np.inf]
    dmin = np.full(n_seeds, np.inf)
    taken = np.zeros(n_seeds, dtype=bool)
    taken[first] = True
    for _ in range(int(n_select) - 1):
        f = chosen[-1]
        d_new = np.sqrt(np.einsum("sgf,sgf->sg", x - x[f], x - x[f])).min(axis=1)
        dmin = np.minimum(dmin, d_new)
        cand = np.where(taken, -np.inf, dmin)
        s = int(np.argmax(cand))
        chosen.append(s)
        dists.append(float(dmin[s]))
        taken[s] = True
    if return_distances:
        return chosen, np.asarray(dists)
    return chosen


# --------------------------------------------------------------------------- pairs (000)
PROTOTYPE_COLUMNS = ("seed", "group", "prototype_id")
SEQUENCE_COLUMNS = ("prototype_id", "attribute", "level", "image_id", "is_self")
PAIR_COLUMNS = ("pair_id", "image_a", "image_b", "prototype_a", "prototype_b", "seed_a", "seed_b",
                "group", "attribute", "level", "label", "is_self_pair", "b_is_prototype")


def _require(table: Any, cols: Sequence[str], name: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"{name}: expected a DataFrame, got {type(table).__name__}")
    require_columns(table, cols, name)
    if table.empty:
        raise ValueError(f"{name}: no rows")
    na = table[list(cols)].isna().any()
    if na.any():
        raise ValueError(f"{name}: missing values in column {na[na].index[0]!r}")


def hcic_pairs(prototype_table: pd.DataFrame, sequence_table: pd.DataFrame, n_negative: int = 3,
               seed: int = 0) -> pd.DataFrame:
    """000's annotation pairs (B1.5): positives and same-group negatives.

    ``prototype_table``: one row per prototype, columns ``seed, group, prototype_id``
    (unique) and optionally ``image_id`` (the prototype's own image; default: the
    ``prototype_id``). ``sequence_table``: one row per sequence slot, columns
    ``prototype_id, attribute, level, image_id, is_self`` (``is_self`` = the slot is the
    prototype image: pose 0, original light, age / expression centre).

    * Positives: each prototype with every sequence slot of itself (600 x 20 = 12,000 at
      full scale, of which the ``is_self`` slots, 2,400, are identical-image pairs tagged
      ``is_self_pair``).
    * Negatives: each prototype with every sequence slot of ``n_negative`` other
      prototypes of the same group from different seeds, drawn uniformly without
      replacement with ``numpy.random.default_rng(seed)`` (600 x 3 x 20 = 36,000).

    Columns: ``pair_id, image_a`` (the prototype image) ``, image_b, prototype_a,
    prototype_b, seed_a, seed_b, group, attribute, level, label`` (1 = same identity
    intended, 0 = different) ``, is_self_pair, b_is_prototype`` (``image_b`` is
    ``prototype_b``'s own image). Positives come first, each block ordered by
    ``prototype_id`` and then by the slots' order in ``sequence_table``; the negative
    partners depend only on the tables' content, not on their row order.
    """
    _require(prototype_table, PROTOTYPE_COLUMNS, "prototype_table")
    _require(sequence_table, SEQUENCE_COLUMNS, "sequence_table")
    if int(n_negative) != n_negative or n_negative < 0:
        raise ValueError(f"n_negative: expected a non-negative integer, got {n_negative!r}")
    protos = prototype_table.copy()
    if "image_id" not in protos.columns:
        protos["image_id"] = protos["prototype_id"]
    dup = protos["prototype_id"].duplicated()
    if dup.any():
        raise ValueError(f"prototype_table: duplicate prototype_id {protos.loc[dup, 'prototype_id'].iloc[0]!r}")
    protos = protos.sort_values("prototype_id", kind="mergesort").reset_index(drop=True)
    seq = sequence_table[list(SEQUENCE_COLUMNS)].copy()
    known = seq["prototype_id"].isin(protos["prototype_id"])
    if not known.all():
        raise ValueError(
            f"sequence_table: prototype_id {seq.loc[~known, 'prototype_id'].iloc[0]!r} is not in prototype_table"
        )
    dup = seq.duplicated(["prototype_id", "attribute", "level"])
    if dup.any():
        r = seq.loc[dup].iloc[0]
        raise ValueError(
            f"sequence_table: duplicate slot prototype_id={r['prototype_id']!r}, "
            f"attribute={r['attribute']!r}, level={r['level']!r}"
        )
    if seq["is_self"].dtype != bool and not seq["is_self"].isin([0, 1]).all():
        raise ValueError("sequence_table: is_self must be bool or 0/1")
    seq["is_self"] = seq["is_self"].astype(bool)
    without = ~protos["prototype_id"].isin(seq["prototype_id"])
    if without.any():
        raise ValueError(
            f"sequence_table: prototype {protos.loc[without, 'prototype_id'].iloc[0]!r} has no sequence slots"
        )
    seq["_slot"] = np.arange(len(seq))  # slots keep the sequence_table's order
    seq = seq.rename(columns={"prototype_id": "prototype_b", "image_id": "image_b",
                              "is_self": "b_is_prototype"})
    a_cols = protos.rename(columns={"prototype_id": "prototype_a", "seed": "seed_a",
                                    "image_id": "image_a"})[["prototype_a", "seed_a", "group", "image_a"]]

    # partners: prototype_a -> prototype_b (itself for positives, n_negative others for negatives)
    rng = np.random.default_rng(seed)
    neg_a, neg_b = [], []
    ids = protos["prototype_id"].to_numpy()
    seeds = protos["seed"].to_numpy()
    groups = protos["group"].to_numpy()
    for i in range(len(protos)):
        cand = np.flatnonzero((groups == groups[i]) & (seeds != seeds[i]))
        if cand.size < n_negative:
            raise ValueError(
                f"prototype {ids[i]!r} (group {groups[i]!r}): only {cand.size} prototypes of the same "
                f"group from other seeds, need n_negative={n_negative}"
            )
        pick = np.sort(rng.choice(cand, size=int(n_negative), replace=False))
        neg_a.extend([ids[i]] * pick.size)
        neg_b.extend(ids[pick])
    partners = pd.concat([
        pd.DataFrame({"prototype_a": ids, "prototype_b": ids, "label": 1}),
        pd.DataFrame({"prototype_a": neg_a, "prototype_b": neg_b, "label": 0}),
    ], ignore_index=True)
    partners["_order"] = np.arange(len(partners))
    b_info = protos.rename(columns={"prototype_id": "prototype_b", "seed": "seed_b"})[["prototype_b", "seed_b"]]
    pairs = (partners.merge(a_cols, on="prototype_a", how="left")
             .merge(b_info, on="prototype_b", how="left")
             .merge(seq, on="prototype_b", how="inner"))
    pairs = pairs.sort_values(["_order", "_slot"], kind="mergesort").reset_index(drop=True)
    pairs["label"] = pairs["label"].astype(np.int64)
    pairs["is_self_pair"] = (pairs["label"] == 1) & pairs["b_is_prototype"]
    pairs["pair_id"] = np.arange(len(pairs), dtype=np.int64)
    return pairs[list(PAIR_COLUMNS)]


def pair_counts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Summary of :func:`hcic_pairs`: one row per group plus ``"all"``, columns
    ``n_pairs, n_positive, n_negative, n_self_pairs, n_prototypes``."""
    _require(pairs, ("group", "label", "is_self_pair", "prototype_a"), "pairs")
    g = pairs.groupby("group", sort=True)
    out = pd.DataFrame({
        "n_pairs": g.size(),
        "n_positive": g["label"].apply(lambda s: int((s == 1).sum())),
        "n_negative": g["label"].apply(lambda s: int((s == 0).sum())),
        "n_self_pairs": g["is_self_pair"].apply(lambda s: int(s.sum())),
        "n_prototypes": g["prototype_a"].nunique(),
    })
    total = pd.DataFrame({
        "n_pairs": [len(pairs)],
        "n_positive": [int((pairs["label"] == 1).sum())],
        "n_negative": [int((pairs["label"] == 0).sum())],
        "n_self_pairs": [int(pairs["is_self_pair"].sum())],
        "n_prototypes": [int(pairs["prototype_a"].nunique())],
    }, index=["all"])
    out.index = out.index.astype(object)
    return pd.concat([out, total]).astype(np.int64)
