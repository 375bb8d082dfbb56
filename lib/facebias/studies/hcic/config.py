"""Parameters of the paper-000 study (``params.yaml`` sections ``hcic`` and ``hcic_dcgan``;
``notebooks/hcic.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from facebias.io import config_from_params, param_float, param_int, param_list, param_str
from facebias.studies.hcic.similarity import MODEL_THRESHOLDS

__all__ = [
    "HCICConfig",
]


@dataclass(frozen=True)
class HCICConfig:
    """Parameters of the study (``params.yaml`` sections ``hcic``, ``hcic_dcgan``).

    Parameters
    ----------
    models : tuple of str, default ("sface", "dlib")
        Real FR models run on the renders (:data:`MODEL_THRESHOLDS` keys).
    t_hcic : tuple of float, default (0.2, 0.3, 0.4)
        Label thresholds in [0, 1] (same identity iff HCIC <= t).
    t_main : float, default 0.3
        The main label threshold (one of ``t_hcic``).
    t_fixed : float, default 0.6
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
        beside which the notebook sets the one the synth stage ran
        (:func:`seed_filter_funnel`; the stage's share is ``generate.seed_filter_keep``).
    section : str, default "hcic"
        The ``params.yaml`` section, for messages (not a key of it).

    Raises
    ------
    ValueError
        For a mistyped value or one out of range, or ``t_main`` not in ``t_hcic``.
    """

    models: tuple[str, ...] = ("sface", "dlib")
    t_hcic: tuple[float, ...] = (0.2, 0.3, 0.4)
    t_main: float = 0.3
    t_fixed: float = 0.6
    fmr: float = 0.01
    n_boot: int = 200
    n_boot_test: int = 2000
    alpha: float = 0.05
    toy_noise: dict[str, float] = field(default_factory=dict)
    n_cross: int = 1
    seed: int = 0
    min_size: int = 0
    group_order: tuple[str, ...] = ()
    own_group_effects: tuple[float, ...] = (0.0, 0.25, 0.5)
    own_group_majority_share: float = 0.8
    seed_filter_candidates: int = 1000
    seed_filter_keep: int = 300
    section: str = field(default="hcic", compare=False, repr=False)

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        k = self.section
        put("models", param_list(self.models, f"{k}.models",
                                 partial(param_str, choices=tuple(MODEL_THRESHOLDS)), min_len=0))
        unit = partial(param_float, low=0, high=1)
        put("t_hcic", param_list(self.t_hcic, f"{k}.t_hcic", unit))
        put("t_main", unit(self.t_main, f"{k}.t_main"))
        if self.t_main not in self.t_hcic:
            raise ValueError(f"{k}.t_main must be one of t_hcic {list(self.t_hcic)}, got {self.t_main!r}")
        put("t_fixed", param_float(self.t_fixed, f"{k}.t_fixed", -1, 1))
        put("fmr", param_float(self.fmr, f"{k}.fmr", 0, 1, open_low=True, open_high=True))
        put("n_boot", param_int(self.n_boot, f"{k}.n_boot", minimum=0))
        put("n_boot_test", param_int(self.n_boot_test, f"{k}.n_boot_test", minimum=1))
        put("alpha", param_float(self.alpha, f"{k}.alpha", 0, 1, open_low=True, open_high=True))
        put("n_cross", param_int(self.n_cross, f"{k}.n_cross", minimum=0))
        put("seed", param_int(self.seed, f"{k}.seed", minimum=0))
        put("min_size", param_int(self.min_size, f"{k}.min_size", minimum=0))
        put("group_order", param_list(self.group_order, f"{k}.group_order", param_str, min_len=0))
        put("own_group_effects", param_list(self.own_group_effects, f"{k}.own_group_effects", unit, min_len=0))
        put("own_group_majority_share", unit(self.own_group_majority_share, f"{k}.own_group_majority_share"))
        put("seed_filter_candidates", param_int(self.seed_filter_candidates, f"{k}.seed_filter_candidates",
                                                minimum=1))
        put("seed_filter_keep", param_int(self.seed_filter_keep, f"{k}.seed_filter_keep", minimum=1))
        if self.seed_filter_keep > self.seed_filter_candidates:
            raise ValueError(f"{k}.seed_filter_keep must be <= seed_filter_candidates, got "
                             f"{self.seed_filter_keep} > {self.seed_filter_candidates}")
        if not isinstance(self.toy_noise, Mapping):
            raise ValueError(f"{k}.toy_noise must be a mapping group -> noise, got {self.toy_noise!r}")
        put("toy_noise", {param_str(g, f"{k}.toy_noise key"): param_float(v, f"{k}.toy_noise.{g}", low=0)
                          for g, v in self.toy_noise.items()})

    @classmethod
    def from_params(cls, params: Mapping[str, Any], section: str = "hcic") -> HCICConfig:
        """Build from a ``params.yaml`` section: unknown keys and mistyped values raise.

        Parameters
        ----------
        params : mapping
            The section's keys and values.
        section : str, default "hcic"
            Its name (``"hcic"`` or ``"hcic_dcgan"``), for messages.

        Returns
        -------
        HCICConfig
            The validated config.

        Raises
        ------
        ValueError
            For an unknown key (``section`` included) or an invalid value.

        Examples
        --------
        >>> HCICConfig.from_params({"t_hcic": [0.3], "t_main": 0.3}).t_hcic
        (0.3,)
        >>> HCICConfig.from_params({"t_main": 0.5})
        Traceback (most recent call last):
        ...
        ValueError: hcic.t_main must be one of t_hcic [0.2, 0.3, 0.4], got 0.5
        """
        if "section" in params:  # a field, but not a key of the section
            raise ValueError(f"{section}: unknown key(s) ['section']")
        return config_from_params(cls, {**params, "section": section}, section)
