"""Attribute hyperplanes fitted to annotated latents (ridge or linear SVM).

Implements ``docs/specs/transects.md`` A1.5 (paper 004: ridge on normalised scores, unit
normal and offset in decision-value convention) and ``docs/specs/hcic.md`` B1.2 (paper
000: linear SVMs on binarised labels, optionally on z-scored latents):
:class:`Hyperplane`, :func:`fit_hyperplane` and :func:`fit_hyperplanes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.latent.algebra import decision_values
from facebias.latent.checks import finite_array
from facebias.validate import require_columns


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
