"""Can the main-effects regression separate the causes? (``docs/specs/transects.md`` A1.13
(g′) No interaction terms: the optional interaction extension; paper Sec. 5.5.1.)

:func:`interaction_test` is a likelihood-ratio test of 004's main-effects model against
the same model plus products of the binary attributes (a planted interaction makes it
reject: the main-effects coefficients then do not say which attribute causes the errors);
:func:`nested_lr_test` is the test of two nested logistic error models it uses (also the
GAN study's confound tests, :mod:`facebias.studies.transects.confounds`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.transects.error_model import _design, fit_error_model
from facebias.studies.transects.pruning import BINARY, COVARIATES, design_matrix, prune  # noqa: F401 (prune: doctest)
from facebias.validate import require_columns

__all__ = ["interaction_test", "nested_lr_test"]


def interaction_test(kept: pd.DataFrame, error_col: str,
                     pairs: Sequence[tuple[str, str]] = (("gender", "hair"), ("gender", "skin"), ("skin", "hair")),
                     alpha: float = 0.05, *, design: pd.DataFrame | None = None,
                     binary: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Can the 004 main-effects regression be trusted to separate the causes? A likelihood-
    ratio test of the main-effects model (:func:`design_matrix`, reference coding: the first
    level of each covariate group dropped) against the same model plus the products of the
    binary transect attributes in ``pairs`` (``gender_male``, ``skin_dark``, ``hair_long``).
    Both fits are (effectively) unpenalised maximum likelihood (:func:`fit_error_model` with
    ``C = 1e8``); ``stat = 2 (ll_full - ll_main)`` is referred to chi-square with one degree
    of freedom per pair. A rejection means the error is not additive in the attributes: the
    main-effects coefficients then do not say which attribute causes the errors, and
    ``separable`` is False.

    Parameters
    ----------
    kept : pandas.DataFrame
        Pruned transects (:func:`prune`) with ``error_col`` (0/1; NaN rows dropped).
    error_col : str
        The error column.
    pairs : sequence of (str, str), default gender x hair, gender x skin, skin x hair
        Pairs of :data:`BINARY` names whose interaction is tested.
    alpha : float, default 0.05
        Test level.
    design : pandas.DataFrame, optional
        Another backend's main-effects design (rows of ``kept``, e.g. :func:`no_truth_design`);
        redundant one-hot columns are fine (the likelihood is unaffected). Default: the 17
        covariates of :func:`design_matrix`, reference-coded.
    binary : mapping of str to str, optional
        Pair name -> 0/1 column of ``kept``; default gender / skin / hair of :data:`BINARY`.

    Returns
    -------
    dict
        ``stat``, ``df``, ``p_value``, ``n``, ``separable`` (``p_value >= alpha``) and
        ``interactions`` (name -> unpenalised log-odds of each product term).

    Raises
    ------
    ValueError
        For a missing column, an unknown pair name, or as :func:`fit_error_model`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"gender": rng.integers(0, 2, 4000) * 0.8 + 0.1,
    ...                    "skin_color": rng.integers(0, 2, 4000) * 0.8 + 0.1,
    ...                    "hair_length": rng.integers(0, 2, 4000) * 0.8 + 0.1,
    ...                    "uncanny": 0.0, "age": 0.7, "facial_hair": 0.5, "makeup": 0.5, "smile": 0.5})
    >>> kept, _ = prune(df)
    >>> same = kept["gender_male"] == kept["hair_long"]  # errors only where gender and hair agree
    >>> kept["e"] = (rng.random(len(kept)) < np.where(same, 0.3, 0.05)).astype(int)
    >>> r = interaction_test(kept, "e")
    >>> r["separable"], r["df"]
    (False, 3)
    """
    require_columns(kept, [error_col], "transects")
    binary = dict(binary) if binary is not None else {name: col for name, (_, col, _) in BINARY.items()}
    for a, b in pairs:
        if a not in binary or b not in binary:
            raise ValueError(f"interaction_test: pair {(a, b)} must name {sorted(binary)}")
    ok = kept[error_col].notna().to_numpy()
    df = kept[ok]
    if design is None:
        X = design_matrix(df).drop(columns=[cols[0] for cols in COVARIATES.values()])
    else:
        if len(design) != len(kept):
            raise ValueError(f"interaction_test: design has {len(design)} rows, kept {len(kept)}")
        X = design[ok].astype(float)
    X = X.loc[:, X.to_numpy().std(axis=0) > 0]  # a level absent from the sample: not estimable
    names = [f"{binary[a]}:{binary[b]}" for a, b in pairs]
    Xi = pd.DataFrame({n: df[binary[a]].to_numpy(float) * df[binary[b]].to_numpy(float)
                       for n, (a, b) in zip(names, pairs, strict=True)}, index=X.index)
    e = df[error_col].to_numpy(dtype=float)
    r = nested_lr_test(X, pd.concat([X, Xi], axis=1), e, df=len(pairs))
    return {"stat": r["stat"], "df": r["df"], "p_value": r["p_value"], "n": r["n"],
            "separable": bool(r["p_value"] >= alpha), "interactions": {k: r["coef"][k] for k in names}}


def _loglik(X: np.ndarray, e: np.ndarray, w: np.ndarray | None = None) -> tuple[float, np.ndarray, float]:
    """Unpenalised maximum likelihood of the logistic error model (:func:`fit_error_model`
    with ``C = 1e8``; rows weighted by ``w``, e.g. counts of identical rows):
    ``(log-likelihood in nats, coef, intercept)``."""
    w = np.ones(len(e)) if w is None else w
    coef, icpt = fit_error_model(X, e, C=1e8, sample_weight=w)
    eta = X @ coef + icpt
    return float(np.sum(w * (e * eta - np.logaddexp(0.0, eta)))), coef, icpt


def nested_lr_test(X0: Any, X1: Any, e: Any, df: int | None = None) -> dict[str, Any]:
    """Likelihood-ratio test of two nested logistic error models (each with an intercept):
    ``stat = 2 (ll1 - ll0)`` of the unpenalised maximum-likelihood fits (:func:`fit_error_model`
    with ``C = 1e8``; natural logs), referred to chi-square with ``df`` degrees of freedom
    (default: rank of ``[1, X1]`` minus rank of ``[1, X0]``, so redundant one-hot columns
    count once). ``X1`` must contain ``X0``'s columns (or span them); that is not checked.

    Parameters
    ----------
    X0, X1 : array_like or pandas.DataFrame
        (n, p0) and (n, p1) finite covariates of the smaller and the larger model.
    e : array_like
        (n,) errors, 0/1.
    df : int, optional
        Degrees of freedom (default: the rank difference).

    Returns
    -------
    dict
        ``stat``, ``df``, ``p_value``, ``n``, ``loglik`` ([ll0, ll1]) and ``coef`` (column ->
        unpenalised log-odds of the larger model; ``X1``'s column names, else ``x0, x1, ...``).

    Raises
    ------
    ValueError
        As :func:`fit_error_model`, for designs of other lengths, or ``df < 1``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> x = rng.integers(0, 2, (2000, 2)).astype(float)
    >>> e = (rng.random(2000) < 1 / (1 + np.exp(1 - 1.5 * x[:, 0] * x[:, 1]))).astype(int)
    >>> r = nested_lr_test(x, np.column_stack([x, x[:, 0] * x[:, 1]]), e)
    >>> r["df"], r["p_value"] < 1e-6
    (1, True)
    """
    from scipy.stats import chi2

    names = list(X1.columns) if isinstance(X1, pd.DataFrame) else [f"x{i}" for i in range(np.shape(X1)[1])]
    A0, ea = _design(X0, e)
    A1, _ = _design(X1, e)
    if A0.shape[0] != A1.shape[0]:
        raise ValueError(f"nested_lr_test: X0 has {A0.shape[0]} rows, X1 {A1.shape[0]}")
    if df is None:
        one = np.ones((len(ea), 1))
        df = int(np.linalg.matrix_rank(np.hstack([one, A1])) - np.linalg.matrix_rank(np.hstack([one, A0])))
    if df < 1:
        raise ValueError(f"nested_lr_test: the larger model adds no column (df = {df})")
    # identical (X0, X1, e) rows collapsed into counts: the same likelihood, far fewer rows
    rows, inverse = np.unique(np.column_stack([A0, A1, ea]), axis=0, return_inverse=True)
    w = np.bincount(inverse.ravel(), minlength=len(rows)).astype(float)
    p0 = A0.shape[1]
    ll0, _, _ = _loglik(rows[:, :p0], rows[:, -1], w)
    ll1, coef, _ = _loglik(rows[:, p0:-1], rows[:, -1], w)
    stat = max(0.0, 2.0 * (ll1 - ll0))
    return {"stat": stat, "df": int(df), "p_value": float(chi2.sf(stat, df)), "n": int(len(ea)),
            "loglik": [ll0, ll1], "coef": dict(zip(names, (float(c) for c in coef), strict=True))}
