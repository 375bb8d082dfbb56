"""Settings of paper 004's two transect studies (``docs/specs/transects.md`` A1.9-A1.13):
:class:`TransectsConfig` (``params.yaml`` section ``transects``: the procedural generator
with truth, notebooks/transects.py) and :class:`NoTruthTransectsConfig` (section
``transects_dcgan``: a learned generator without truth, notebooks/transects_dcgan.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from facebias.config import (
    RATE,
    Section,
    flag,
    integer,
    interval,
    listof,
    model_spec,
    number,
    param,
    text,
)

_CORRELATION = number(-1, 1, True, True)
_MAGNITUDES = interval(number(low=0))

__all__ = ["TransectsConfig", "NoTruthTransectsConfig"]


@dataclass(frozen=True)
class TransectsConfig(Section):
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

    Examples
    --------
    >>> cfg = TransectsConfig.from_params({"n_boot": 200})
    >>> cfg.n_boot, cfg.thresholds
    (200, (0.5, 0.8))
    """

    section = "transects"
    n_boot: int = param(1000, integer(1))
    thresholds: tuple[float, ...] = param((0.5, 0.8), listof(RATE))
    n_train: int = param(1500, integer(1))
    epochs: int = param(10, integer(1))
    shortcut_one_sided: bool = param(True, flag)
    shortcut_c_gender: tuple[float, float] = param((0.2, 1.0), _MAGNITUDES)
    n_observational: int = param(1000, integer(1))
    confounding: float = param(-0.6, _CORRELATION)
    n_known_truth: int = param(1000, integer(1))
    n_pixel_seeds: int = param(100, integer(1))
    seed: int = param(4, integer(0))
    perception_sd: float = param(1.3, number(low=0))
    interaction_effect: float = param(1.5, number())


@dataclass(frozen=True)
class NoTruthTransectsConfig(Section):
    """Parameters of the study on a generator without truth (``params.yaml`` section
    ``transects_dcgan``; notebooks/transects_dcgan.py).

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

    Examples
    --------
    >>> NoTruthTransectsConfig.from_params({"shortcut": "light", "n_boot": 50}).n_boot
    50
    """

    section = "transects_dcgan"
    labeller: str = param("p_male", text())
    shortcut: str = param("light", text())
    shortcut_female_high: bool = param(True, flag)
    shortcut_one_sided: bool = param(True, flag)
    shortcut_flip: bool = param(False, flag)
    shortcut_c_gender: tuple[float, float] = param((0.2, 1.0), _MAGNITUDES)
    shortcut_c: tuple[float, float] = param((0.5, 2.0), _MAGNITUDES)
    n_train: int = param(1000, integer(1))
    epochs: int = param(10, integer(1))
    embedder: str = param("sface", model_spec)
    n_probe: int = param(600, integer(1))
    probe_C: float = param(1.0, number(low=0, open_low=True))
    n_observational: int = param(2000, integer(1))
    observational_gender_margin: float = param(1.0, number(low=0))
    confounding: float = param(0.8, _CORRELATION)
    n_boot: int = param(1000, integer(1))
    seed: int = param(4, integer(0))
    cnn_lr: float = param(3e-3, number(low=0, open_low=True))
    cnn_schedule: str = param("constant", text("constant", "cosine"))
    n_held_out: int = param(1000, integer(1))
    accuracy_target: float = param(0.85, number(0, 1))
    alpha: float = param(0.05, number(0, 1, True, True))
    plan_history: tuple[dict[str, Any], ...] = ()

    def check(self) -> None:
        k = self.section
        history = []
        for i, h in enumerate(self.plan_history or ()):
            if not isinstance(h, Mapping) or set(h) != {"key", "before", "after", "why"}:
                raise ValueError(f"{k}.plan_history[{i}]: expected a mapping with key, before, after, why; got {h!r}")
            if h["key"] not in {f.name for f in fields(self)} or h["key"] == "plan_history":
                raise ValueError(f"{k}.plan_history[{i}]: {h['key']!r} is not a key of {k}")
            history.append(dict(h))
        self._set("plan_history", tuple(history))
