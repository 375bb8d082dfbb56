"""The confounds the GAN study's data show (issue 29; an extension of
``docs/specs/transects.md`` A1.13 (g′), interaction terms, to the study without truth).

:func:`confound_analysis` refits the transects' error model with gender x tone and tone x
incongruence (:func:`confound_design`; ``tone_dark`` is the darker side of the generator's
tone axis, face darkness on the DCGAN), reports the tone effect per perceived gender as
contrasts of its coefficients (:func:`tone_by_gender`) and tests the terms by likelihood
ratio (:func:`confound_tests`, :func:`facebias.studies.transects.additivity.nested_lr_test`);
:func:`pattern_without_cause` asks whether the observational pattern needs a learnt
shortcut.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.stats import percentile_interval, percentile_mc_error
from facebias.studies.transects.additivity import nested_lr_test
from facebias.studies.transects.error_model import ErrorModelResult, fit_if_possible
from facebias.studies.transects.no_truth import no_truth_design, shortcut_incongruent  # noqa: F401 (shortcut_incongruent: doctest)
from facebias.validate import require_columns

__all__ = ["CONFOUND_TERMS", "confound_design", "confound_tests", "tone_by_gender", "confound_analysis",
           "pattern_without_cause"]

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
        :func:`no_truth_analysis_frame` rows.
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
        For an unknown term, or as :func:`no_truth_design`.

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
    full = no_truth_design(df, shortcut)
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
        :func:`no_truth_analysis_frame` rows with ``error_col`` (0/1, NaN = not scored).
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
        :func:`no_truth_analysis_frame` transect rows with ``error_col`` (0/1, NaN = not scored).
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
