"""The logistic error model of paper 004 (``docs/specs/transects.md`` A1.12 Error definition,
A1.13 (c) and Uncertainty; paper Sec. 5.5, Fig. 15).

* :func:`errors`: ``e = 1[(P(male) > threshold) != y_male]``; :func:`best_threshold`: the
  threshold minimising the errors (Fig. 16 bottom).
* :func:`fit_error_model` / :func:`bootstrap_error_model`: L2 logistic regression of ``e``
  on the one-hot covariates (sklearn's objective: C = 1, unpenalised intercept; one L-BFGS
  fitter, checked against sklearn in the tests), 1,000 bootstrap refits (images or
  transect clusters) through :func:`facebias.stats.bootstrap_weights`, giving an
  :class:`ErrorModelResult` (Fig. 15's coefficients, SDs and percentile intervals).
* :func:`fit_if_possible` (``None`` where a model cannot be fitted) and :func:`coef_row`
  (one coefficient, JSON-ready), used by both studies' headlines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from facebias.stats import (
    bootstrap_weights,
    percentile_interval,
    percentile_mc_error,
)

__all__ = ["errors", "best_threshold", "fit_error_model", "ErrorModelResult", "bootstrap_error_model",
           "fit_if_possible", "coef_row"]


def errors(p_male: Any, y_male: Any, threshold: float = 0.5) -> np.ndarray:
    """Misclassification ``e = 1[(p_male > threshold) != y_male]`` as floats; NaN where
    ``p_male`` is NaN (no face found), so callers drop those rows explicitly.

    Parameters
    ----------
    p_male : array_like
        P(male) in [0, 1] per image (NaN = no face).
    y_male : array_like
        Gender labels of the same shape, 1 = male, 0 = female (or bool).
    threshold : float, default 0.5
        Male is predicted iff P(male) > threshold.

    Returns
    -------
    numpy.ndarray
        Float errors: 1.0 misclassified, 0.0 correct, NaN no face.

    Raises
    ------
    ValueError
        If the shapes differ or ``y_male`` is not 0/1.

    Examples
    --------
    >>> errors([0.9, 0.2, np.nan], [1, 1, 0])
    array([ 0.,  1., nan])
    """
    p = np.asarray(p_male, dtype=float)
    y = np.asarray(y_male)
    if p.shape != y.shape:
        raise ValueError(f"p_male and y_male must have the same shape, got {p.shape} and {y.shape}")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y_male must be 0/1 (or boolean)")
    e = ((p > threshold) != y.astype(bool)).astype(float)
    e[np.isnan(p)] = np.nan
    return e


def best_threshold(p_male: Any, y_male: Any, grid: Any = None) -> tuple[float, np.ndarray]:
    """The threshold on P(male) minimising the total number of errors (004 Fig. 16 bottom).

    ``grid`` defaults to 0, 0.01, ..., 1. Returns ``(threshold, n_errors per grid value)``;
    ties go to the smallest threshold. NaN predictions are ignored.

    Parameters
    ----------
    p_male : array_like
        P(male) in [0, 1] per image (NaN = no face).
    y_male : array_like
        Gender labels, 1 = male.
    grid : array_like, optional
        Thresholds to try (male iff P(male) > t).

    Returns
    -------
    threshold : float
        The best grid value.
    n_errors : numpy.ndarray
        Error count at each grid value.

    Examples
    --------
    >>> best_threshold([0.3, 0.6, 0.9], [0, 0, 1], grid=[0.5, 0.7])
    (0.7, array([1, 0]))
    """
    grid = np.linspace(0, 1, 101) if grid is None else np.asarray(grid, dtype=float)
    p = np.asarray(p_male, dtype=float)
    y = np.asarray(y_male).astype(bool)
    ok = ~np.isnan(p)
    p, y = p[ok], y[ok]
    n_err = np.array([int(((p > t) != y).sum()) for t in grid])
    return float(grid[int(np.argmin(n_err))]), n_err


def _fit_lbfgs(X: np.ndarray, y: np.ndarray, w: np.ndarray, C: float, theta0: np.ndarray,
               tol: float = 1e-6) -> np.ndarray:
    """sklearn's L2 logistic objective ``C * sum_i w_i logloss_i + ||coef||^2 / 2`` (intercept
    unpenalised), divided by ``sum(w)`` as sklearn does, minimised with scipy's L-BFGS-B from
    ``theta0 = [coef..., intercept]``; returns ``[coef..., intercept]``. The one logistic
    fitter of this module (no per-call validation: callers check their inputs); the tests
    check it against sklearn's ``LogisticRegression``."""
    from scipy.optimize import minimize

    Xb = np.column_stack([X, np.ones(len(X))])
    s = w.sum()
    pen = np.ones(Xb.shape[1])
    pen[-1] = 0.0

    def f(theta):
        eta = Xb @ theta
        # log(1 + exp(eta)) - y * eta, stably
        loss = np.logaddexp(0.0, eta) - y * eta
        r = w * (1.0 / (1.0 + np.exp(-eta)) - y)
        val = (C * (w @ loss) + 0.5 * (pen * theta) @ theta) / s
        grad = (C * (Xb.T @ r) + pen * theta) / s
        return val, grad

    res = minimize(f, theta0, jac=True, method="L-BFGS-B",
                   options={"gtol": tol, "ftol": 1e-12, "maxiter": 2000})
    return res.x


def _design(X: Any, e: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(X, e)`` as float arrays, checked: ``X`` (n, p) finite, ``e`` (n,) of 0/1."""
    Xa = np.asarray(X, dtype=float)
    ea = np.asarray(e, dtype=float)
    if Xa.ndim != 2 or ea.shape != (Xa.shape[0],):
        raise ValueError(f"X must be (n, p) and e (n,), got {Xa.shape} and {ea.shape}")
    if not np.isin(ea, (0, 1)).all():
        raise ValueError("e must be 0/1 (drop NaN errors first)")
    if not np.isfinite(Xa).all():
        raise ValueError("X has NaN or infinite values")
    return Xa, ea


def fit_error_model(X: Any, e: Any, C: float = 1.0, sample_weight: Any = None,
                    tol: float = 1e-9) -> tuple[np.ndarray, float]:
    """L2 logistic regression of the error ``e`` (0/1) on covariates ``X``: sklearn's
    ``LogisticRegression`` objective (``C = 1`` as in 004, unpenalised intercept), minimised
    by :func:`_fit_lbfgs`. Returns ``(coef, intercept)``, ``coef`` in the column order of
    ``X``; ``P(e = 1) = sigmoid(X @ coef + intercept)``.

    Parameters
    ----------
    X : array_like or pandas.DataFrame
        (n, p) finite covariates (e.g. :func:`design_matrix`).
    e : array_like
        (n,) errors, 0/1 (drop NaN rows first).
    C : float, default 1.0
        Inverse L2 penalty on the coefficients.
    sample_weight : array_like, optional
        (n,) non-negative weights with a positive sum.
    tol : float, default 1e-9
        L-BFGS-B gradient tolerance.

    Returns
    -------
    coef : numpy.ndarray
        (p,) log-odds coefficients (positive = more errors).
    intercept : float
        The unpenalised intercept (log-odds).

    Raises
    ------
    ValueError
        For bad shapes, non-0/1 errors, non-finite covariates, bad weights, or an error
        class with no (weighted) rows.

    Examples
    --------
    >>> X = [[0], [0], [0], [0], [1], [1], [1], [1]]
    >>> coef, intercept = fit_error_model(X, [0, 0, 0, 1, 1, 1, 1, 0])
    >>> coef.round(2), round(intercept, 2)  # errors more likely where x = 1 (L2-shrunk)
    (array([0.67]), -0.33)
    """
    Xa, ea = _design(X, e)
    w = np.ones(len(ea)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if w.shape != ea.shape or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"sample_weight must be {ea.shape[0]} finite non-negative weights with a positive sum")
    if w[ea == 1].sum() == 0 or w[ea == 0].sum() == 0:
        raise ValueError("e must contain both classes (with positive weight)")
    theta = _fit_lbfgs(Xa, ea, w, C, np.zeros(Xa.shape[1] + 1), tol)
    return theta[:-1], float(theta[-1])


@dataclass
class ErrorModelResult:
    """Coefficients of the error model with bootstrap uncertainty (like a statsmodels
    results object): ``coef`` from the full-data fit; ``sd`` the bootstrap SD (Fig. 15 error
    bars); ``ci_low``/``ci_high`` the percentile interval (the Monte Carlo errors of its
    bounds are columns of :meth:`summary`); ``significant`` = the interval excludes 0. Arrays follow ``names``; ``replicates`` is
    (n_boot, p)."""

    names: list[str]
    coef: np.ndarray
    intercept: float
    sd: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_boot: int
    ci: float
    unit: str
    n: int
    replicates: np.ndarray = field(repr=False)

    @property
    def significant(self) -> np.ndarray:
        """Bool per covariate (order of ``names``): the percentile interval excludes 0."""
        return (self.ci_low > 0) | (self.ci_high < 0)

    def summary(self) -> pd.DataFrame:
        """One row per covariate, sorted by |coef| (largest first), as in Fig. 15.

        Returns
        -------
        pandas.DataFrame
            Index ``covariate``; columns ``coef``, ``sd``, ``ci_low``, ``ci_high``
            (log-odds of an error), ``significant`` and the bounds' Monte Carlo errors
            ``ci_low_mcse``, ``ci_high_mcse``.
        """
        lo_se, hi_se = percentile_mc_error(self.replicates, self.ci)
        df = pd.DataFrame({"coef": self.coef, "sd": self.sd, "ci_low": self.ci_low,
                           "ci_high": self.ci_high, "significant": self.significant,
                           "ci_low_mcse": lo_se, "ci_high_mcse": hi_se},
                          index=pd.Index(self.names, name="covariate"))
        return df.iloc[np.argsort(-np.abs(self.coef), kind="stable")]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (what the metrics files hold).

        Returns
        -------
        dict
            ``n``, ``n_boot``, ``ci``, ``unit`` (``"images"`` or ``"clusters"``),
            ``intercept`` and ``coef``: covariate -> ``coef``, ``sd``, ``ci_low``,
            ``ci_high``, ``significant``, ``ci_low_mcse``, ``ci_high_mcse``, in
            :meth:`summary` order.
        """
        s = self.summary()
        return {"n": self.n, "n_boot": self.n_boot, "ci": self.ci, "unit": self.unit,
                "intercept": self.intercept,
                "coef": {k: {c: (bool(v) if c == "significant" else float(v)) for c, v in row.items()}
                         for k, row in s.iterrows()}}


def bootstrap_error_model(X: Any, e: Any, n_boot: int = 1000, seed: int = 0, clusters: Any = None,
                          ci: float = 0.95, C: float = 1.0, tol: float = 1e-6) -> ErrorModelResult:
    """Fit :func:`fit_error_model` and refit it on ``n_boot`` bootstrap resamples.

    Rows (images) are resampled with replacement; with ``clusters`` (e.g. transect ids)
    whole clusters are (:func:`facebias.stats.bootstrap_weights` with ``id1 = id2 =
    clusters``). Resamples are weights, never copies: identical (covariates, error) rows are
    collapsed once and each refit sees at most one weighted row per distinct pattern (at
    most 2 x 384 for the 17-column design), minimised by :func:`_fit_lbfgs` (sklearn's
    objective, scipy's L-BFGS-B), each warm-started from the full-data fit (not from the previous
    replicate, so tolerance drift cannot accumulate along the chain); 1,000 refits take a
    few seconds. Replicates where an error class got zero weight are NaN.

    Parameters
    ----------
    X : array_like or pandas.DataFrame
        (n, p) finite covariates; a DataFrame's columns name the coefficients (else
        ``x0, x1, ...``).
    e : array_like
        (n,) errors, 0/1.
    n_boot : int, default 1000
        Bootstrap refits.
    seed : int, default 0
        Bootstrap seed.
    clusters : array_like, optional
        (n,) cluster ids (e.g. transects) resampled as wholes.
    ci : float, default 0.95
        Coverage of the percentile interval.
    C : float, default 1.0
        Inverse L2 penalty.
    tol : float, default 1e-6
        L-BFGS-B gradient tolerance of the refits.

    Returns
    -------
    ErrorModelResult
        Coefficients (log-odds of an error) with bootstrap SD and interval.

    Raises
    ------
    ValueError
        As :func:`fit_error_model`, or if ``clusters`` has another length.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"hair_long": rng.integers(0, 2, 400),
    ...                   "skin_dark": rng.integers(0, 2, 400)})
    >>> p_error = 1 / (1 + np.exp(0.5 + 1.5 * X["hair_long"]))  # planted: long hair, fewer errors
    >>> e = (rng.random(400) < p_error).astype(int)
    >>> res = bootstrap_error_model(X, e, n_boot=20, seed=0)
    >>> res.summary()["significant"].to_dict()
    {'hair_long': True, 'skin_dark': False}
    """
    names = list(X.columns) if isinstance(X, pd.DataFrame) else [f"x{i}" for i in range(np.shape(X)[1])]
    Xa, ea = _design(X, e)
    n = Xa.shape[0]
    patterns, inverse = np.unique(np.column_stack([Xa, ea]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    Xu, eu = patterns[:, :-1], patterns[:, -1].astype(int)
    # the full-data fit on the collapsed patterns weighted by their counts (same objective)
    coef, intercept = fit_error_model(Xu, eu, C=C, sample_weight=np.bincount(inverse, minlength=len(eu)))
    if clusters is None:
        weights = bootstrap_weights(n, n_boot, seed)
        unit = "images"
    else:
        cl = np.asarray(clusters)
        if cl.shape != (n,):
            raise ValueError(f"clusters must have length {n}, got shape {cl.shape}")
        weights = bootstrap_weights(n, n_boot, seed, id1=cl, id2=cl)
        unit = "clusters"
    from threadpoolctl import threadpool_limits

    theta0 = np.r_[coef, intercept]
    reps = np.full((n_boot, Xa.shape[1]), np.nan)
    with threadpool_limits(1):  # tiny BLAS calls: threads only add contention
        for b, w in enumerate(weights):
            wu = np.bincount(inverse, weights=w, minlength=len(eu))
            if wu[eu == 1].sum() == 0 or wu[eu == 0].sum() == 0:
                continue
            theta = _fit_lbfgs(Xu, eu, wu, C, theta0, tol)
            reps[b] = theta[:-1]
    lo, hi = percentile_interval(reps, ci)
    sd = np.nanstd(reps, axis=0, ddof=1) if n_boot > 1 else np.full(Xa.shape[1], np.nan)
    return ErrorModelResult(names, coef, intercept, sd, lo, hi,
                            n_boot, ci, unit, n, reps)


def fit_if_possible(X: pd.DataFrame, e: Any, n_boot: int, seed: int, clusters: Any = None,
                    min_n: int = 10, C: float = 1.0, ci: float = 0.95) -> ErrorModelResult | None:
    """:func:`bootstrap_error_model`, or ``None`` where it cannot be fitted: fewer than
    ``min_n`` rows with an error value, or errors of one class only (a classifier with no
    error on the kept images). NaN errors (no face for the classifier) are dropped.

    Parameters
    ----------
    X : pandas.DataFrame or array_like
        (n, p) covariates.
    e : array_like
        (n,) errors, 0/1 or NaN.
    n_boot : int
        Bootstrap refits.
    seed : int
        Bootstrap seed.
    clusters : array_like, optional
        (n,) cluster ids for a cluster bootstrap.
    min_n : int, default 10
        Fewest rows with an error value.
    C : float, default 1.0
        Inverse L2 penalty (:func:`bootstrap_error_model`).
    ci : float, default 0.95
        Coverage of the percentile intervals.

    Returns
    -------
    ErrorModelResult or None
        The fitted model, or None.

    Examples
    --------
    >>> print(fit_if_possible(pd.DataFrame({"x": [0, 1] * 10}), [0.0] * 20, n_boot=10, seed=0))
    None
    """
    ea = np.asarray(e, dtype=float)
    ok = np.isfinite(ea)
    if ok.sum() < min_n or len(np.unique(ea[ok])) < 2:
        return None
    cl = None if clusters is None else np.asarray(clusters)[ok]
    return bootstrap_error_model(X.loc[ok] if isinstance(X, pd.DataFrame) else np.asarray(X)[ok], ea[ok],
                                 n_boot=n_boot, seed=seed, clusters=cl, C=C, ci=ci)


def coef_row(res: ErrorModelResult | None, name: str) -> dict[str, Any] | None:
    """One coefficient of an error model: ``coef``, bootstrap ``sd``, percentile ``ci`` and
    ``significant`` (the interval excludes 0); ``None`` if the model or covariate is absent.

    Parameters
    ----------
    res : ErrorModelResult or None
        An error model.
    name : str
        The covariate.

    Returns
    -------
    dict or None
        ``coef``, ``sd`` (log-odds), ``ci`` ([low, high]) and ``significant``.

    Examples
    --------
    >>> print(coef_row(None, "tone_dark"))
    None
    """
    if res is None:
        return None
    s = res.summary()
    if name not in s.index:
        return None
    r = s.loc[name]
    return {"coef": float(r["coef"]), "sd": float(r["sd"]), "ci": [float(r["ci_low"]), float(r["ci_high"])],
            "significant": bool(r["significant"])}
