"""Settings of paper 004's two transect studies (``docs/specs/transects.md`` A1.9-A1.13):
:class:`TransectsConfig` (``params.yaml`` section ``transects``: the procedural generator
with truth, notebooks/transects.py) and :class:`GANTransectsConfig` (section
``transects_dcgan``: a learned generator without truth, notebooks/transects_gan.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from facebias.io import (
    config_from_params,
    param_bool,
    param_float,
    param_int,
    param_interval,
    param_list,
    param_str,
)

__all__ = ["TransectsConfig", "GANTransectsConfig"]


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
