"""Scores, pruning and covariates of paper 004 (``docs/specs/transects.md`` A1.10 Pruning,
A1.13 binning of covariates; paper Sec. 5.2.1).

Inputs are per-image attribute **scores in [0, 1]**, one column per 004 scale key
(``gender``, ``skin_color``, ``hair_length``, ``age``, ``facial_hair``, ``makeup``,
``smile``, ``uncanny``; 0 = first level of the scale, e.g. female / light / very short /
child / none / frown / real), usually the trimmed-mean annotator scores of
:func:`facebias.annotate.score`, or generator truth renamed by :func:`truth_scores`.

* :func:`prune` removes fake-looking and ambiguous images (closed intervals) and binarises
  gender / skin / hair; :func:`bin_covariates` bins the other covariates and
  :func:`design_matrix` builds the 17-column one-hot design.
* :func:`pruned_share` / :func:`pruning_counts`: how much the rules remove (004: 28.6 %);
  :func:`perceived_matches_intended`: the kept images' perceived levels against the
  generator's intended ones (Fig. 9b).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["SCORE_COLUMNS", "AMBIGUOUS", "BINARY", "COVARIATES", "AGE_NAMES", "FAKE_RULES", "CHILD_MAX",
           "truth_scores", "prune", "bin_covariates", "design_matrix", "pruned_share", "pruning_counts",
           "perceived_matches_intended"]

#: The 004 scale keys (facebias.annotate.SCALES_TRANSECTS) used as score columns.
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
