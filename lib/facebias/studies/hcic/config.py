"""Parameters of the paper-000 study (``params.yaml`` sections ``hcic`` and ``hcic_dcgan``;
``notebooks/hcic.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from facebias.config import (
    RATE,
    Section,
    config_from_params,
    integer,
    listof,
    model_specs,
    number,
    param,
    param_float,
    param_str,
    text,
)

__all__ = ["HCICConfig", "HCICDcganConfig"]

_UNIT = number(0, 1)


def _toy_noise(value: Any, name: str) -> dict[str, float]:
    """Group -> extra embedding noise (>= 0)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping group -> noise, got {value!r}")
    return {param_str(g, f"{name} key"): param_float(v, f"{name}.{g}", low=0) for g, v in value.items()}


@dataclass(frozen=True)
class HCICConfig(Section):
    """Parameters of the study (``params.yaml`` sections ``hcic``, ``hcic_dcgan``).

    Parameters
    ----------
    models : tuple of str, default ("sface", "dlib")
        Real FR models run on the renders: model specs (:mod:`facebias.faces.specs`; a user
        model without ``threshold=`` gets its fixed threshold at ``fmr`` on the intended
        impostor pairs, labelled so).
    t_hcic : tuple of float, default (0.2, 0.3, 0.4)
        Label thresholds in [0, 1] (same identity iff HCIC <= t).
    t_hcic_main : float, default 0.3
        The main label threshold (one of ``t_hcic``).
    t_toy : float, default 0.6
        The paper's similarity threshold, used for the toy system (in [-1, 1]).
    fmr : float, default 0.01
        Target FMR of the per-group FNMR tables, a fraction in (0, 1).
    n_boot : int, default 200
        Prototype-cluster bootstrap replicates (>= 0).
    n_boot_test : int, default 2000
        Replicates of the group-difference tests (:func:`group_rate_tests`; >= 1; with 4
        groups (6 pairs) more than 240 are needed for any pair to pass Holm at 5 %).
    alpha : float, default 0.05
        Family-wise level of those tests (Holm over the pairs of groups), in (0, 1).
    toy_noise : dict of str to float, default {}
        Group -> planted extra embedding noise of the toy system (>= 0).
    n_cross : int, default 1
        Cross-group partner prototypes per prototype (>= 0).
    seed : int, default 0
        Seed (>= 0).
    min_size : int, default 0
        Faces with a shorter side below it are enlarged (bicubic; 0 = as drawn).
    group_order : tuple of str, default ()
        Figure order of the groups (the groups themselves come from the data).
    own_group_effects : tuple of float, default (0.0, 0.25, 0.5)
        Own-group effects in [0, 1] of the simulated panels of :func:`own_group_check`
        (0 = the null).
    own_group_majority_share : float, default 0.8
        Share of those panels from the first group of the figure order, in [0, 1].
    seed_filter_candidates, seed_filter_keep : int, default 1000, 300
        The paper's human seed filter (candidate seeds and seeds kept, 000: 1,000 and 300),
        beside which the notebook sets the one the generate stage ran
        (:func:`seed_filter_funnel`; the stage's share is ``generate.seed_filter_keep``).

    Raises
    ------
    ValueError
        For a mistyped value or one out of range, or ``t_hcic_main`` not in ``t_hcic``.

    Examples
    --------
    >>> HCICConfig.from_params({"t_hcic": [0.3], "t_hcic_main": 0.3}).t_hcic
    (0.3,)
    >>> HCICConfig.from_params({"t_hcic_main": 0.5})
    Traceback (most recent call last):
    ...
    ValueError: hcic.t_hcic_main must be one of t_hcic [0.2, 0.3, 0.4], got 0.5
    """

    section = "hcic"
    models: tuple[str, ...] = param(("sface", "dlib"), model_specs(min_len=0))
    t_hcic: tuple[float, ...] = param((0.2, 0.3, 0.4), listof(_UNIT))
    t_hcic_main: float = param(0.3, _UNIT)
    t_toy: float = param(0.6, number(-1, 1))
    fmr: float = param(0.01, RATE)
    n_boot: int = param(200, integer(0))
    n_boot_test: int = param(2000, integer(1))
    alpha: float = param(0.05, RATE)
    toy_noise: dict[str, float] = param(factory=dict, check=_toy_noise)
    n_cross: int = param(1, integer(0))
    seed: int = param(0, integer(0))
    min_size: int = param(0, integer(0))
    group_order: tuple[str, ...] = param((), listof(text(), min_len=0))
    own_group_effects: tuple[float, ...] = param((0.0, 0.25, 0.5), listof(_UNIT, min_len=0))
    own_group_majority_share: float = param(0.8, _UNIT)
    seed_filter_candidates: int = param(1000, integer(1))
    seed_filter_keep: int = param(300, integer(1))

    def check(self) -> None:
        k = self.section
        if self.t_hcic_main not in self.t_hcic:
            raise ValueError(f"{k}.t_hcic_main must be one of t_hcic {list(self.t_hcic)}, got {self.t_hcic_main!r}")
        if self.seed_filter_keep > self.seed_filter_candidates:
            raise ValueError(f"{k}.seed_filter_keep must be <= seed_filter_candidates, got "
                             f"{self.seed_filter_keep} > {self.seed_filter_candidates}")

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None, section: str | None = None) -> HCICConfig:
        """Build from a ``params.yaml`` section: unknown keys and mistyped values raise.

        Parameters
        ----------
        params : mapping
            The section's keys and values.
        section : {"hcic", "hcic_dcgan"}, optional
            Which section it is (default: this class's): picks :class:`HCICConfig` or
            :class:`HCICDcganConfig`.

        Returns
        -------
        HCICConfig
            The validated config.
        """
        sections = {c.section: c for c in (HCICConfig, HCICDcganConfig)}
        if (section or cls.section) not in sections:
            raise ValueError(f"unknown paper-000 section {section!r}; known: {sorted(sections)}")
        target = sections[section or cls.section]
        return config_from_params(target, dict(params or {}), target.section)


@dataclass(frozen=True)
class HCICDcganConfig(HCICConfig):
    """Section ``hcic_dcgan``: the same study on the DCGAN's 64 px renders, which are
    enlarged to ``min_size`` = 256 px before embedding (the machine annotators' rule)."""

    section = "hcic_dcgan"
    min_size: int = param(256, integer(0))
