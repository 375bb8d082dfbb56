"""The parameters of the synthetic BFW world (study 002) of :mod:`facebias.worlds.bfw`:
the simulated systems (:class:`SystemSpec`, the planted :data:`SIM_A` and :data:`SIM_B`)
and the world's size and pair recipe (:class:`BFWWorldConfig`, the ``params.yaml``
section ``bfw_world``). The generative model they parametrise, and the pair recipe, are
described in the docstring of :mod:`facebias.worlds.bfw`, which re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np

from facebias.config import Section, integer, param
from facebias.datasets.bfw import BFW_COLUMNS, BFW_GROUPS
from facebias.worlds._common import _by_group, _number, _per_group

__all__ = ["SystemSpec", "SIM_A", "SIM_B", "BFWWorldConfig"]


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class SystemSpec:
    """One simulated FR system (its score column is ``name``); scores are cosine
    similarities.

    Parameters
    ----------
    name : str
        A Python identifier that is not a BFW column.
    group_similarity : dict of str to float
        Planted ``rho_g`` in [0, 1) for each of the 8 groups: larger -> more alike
        impostors, higher FMR at one global threshold.
    noise : float or dict of str to float, default 0.9
        Image noise ``sigma`` > 0, one number or one per group: larger -> lower genuine
        scores, higher FNMR.
    similarity_spread : float or dict of str to float, default 0.0
        ``kappa`` >= 0, one number or one per group: log-normal spread of ``rho`` across a
        subgroup's identities (a longer impostor upper tail at a similar median).
    noise_spread : float or dict of str to float, default 0.0
        ``tau`` >= 0, one number or one per group: log-normal spread of ``sigma`` across a
        subgroup's identities (a wider genuine score distribution).

    Raises
    ------
    ValueError
        For a bad name, a missing or unknown group, ``rho`` outside [0, 1),
        ``sigma <= 0`` or a negative spread.

    Examples
    --------
    >>> SIM_A.rho("AF"), SIM_A.sigma("AF"), SIM_B.sigma("AF")
    (0.275, 1.0, 0.95)
    >>> SIM_A.spread("similarity_spread", "AF"), SIM_A.spread("noise_spread", "WM")
    (0.6, 0.05)
    """

    name: str
    group_similarity: dict[str, float]
    noise: float | dict[str, float] = 0.9
    similarity_spread: float | dict[str, float] = 0.0
    noise_spread: float | dict[str, float] = 0.0

    def __post_init__(self) -> None:
        where = f"bfw_world.systems.{self.name}"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"bfw_world.systems: system name {self.name!r} must be an identifier")
        if self.name in BFW_COLUMNS:
            raise ValueError(f"{where}: name clashes with the BFW column {self.name!r}")
        rho = _per_group(self.group_similarity, f"{where}.group_similarity", BFW_GROUPS)
        for g, r in rho.items():
            if not 0.0 <= r < 1.0:
                raise ValueError(f"{where}.group_similarity.{g} = {r} is outside [0, 1)")
        if isinstance(self.noise, Mapping):
            noise = _per_group(self.noise, f"{where}.noise", BFW_GROUPS)
        else:
            noise = dict.fromkeys(BFW_GROUPS, _number(self.noise, f"{where}.noise"))
        for g, s in noise.items():
            if not s > 0.0:
                raise ValueError(f"{where}.noise ({g}) = {s} must be > 0")
        object.__setattr__(self, "group_similarity", rho)
        if isinstance(self.noise, Mapping):
            object.__setattr__(self, "noise", noise)
        for key in ("similarity_spread", "noise_spread"):
            v = getattr(self, key)
            spread = (_per_group(v, f"{where}.{key}", BFW_GROUPS) if isinstance(v, Mapping)
                      else dict.fromkeys(BFW_GROUPS, _number(v, f"{where}.{key}")))
            for g, x in spread.items():
                if x < 0.0:
                    raise ValueError(f"{where}.{key} ({g}) = {x} must be >= 0")
            object.__setattr__(self, key, spread if isinstance(v, Mapping) else float(v))

    def spread(self, key: str, group: str) -> float:
        """``similarity_spread`` (kappa) or ``noise_spread`` (tau) of ``group``.

        Parameters
        ----------
        key : {"similarity_spread", "noise_spread"}
            Which spread.
        group : str
            One of :data:`BFW_GROUPS`.

        Returns
        -------
        float
            >= 0.
        """
        v = getattr(self, key)
        return v[group] if isinstance(v, dict) else float(v)

    def rho(self, group: str) -> float:
        """Planted group similarity ``rho_g`` of ``group``.

        Parameters
        ----------
        group : str
            One of :data:`BFW_GROUPS`.

        Returns
        -------
        float
            In [0, 1).
        """
        return self.group_similarity[group]

    def sigma(self, group: str) -> float:
        """Image noise ``sigma_g`` of ``group``.

        Parameters
        ----------
        group : str
            One of :data:`BFW_GROUPS`.

        Returns
        -------
        float
            > 0.
        """
        return self.noise[group] if isinstance(self.noise, dict) else float(self.noise)

    def to_params(self) -> dict[str, Any]:
        """This system's ``params.yaml`` entry under ``bfw_world.systems.<name>``.

        Returns
        -------
        dict
            ``{"noise": ..., "group_similarity": {...}}``, plus ``similarity_spread`` /
            ``noise_spread`` when non-zero.
        """
        noise = dict(self.noise) if isinstance(self.noise, dict) else self.noise
        out: dict[str, Any] = {"noise": noise, "group_similarity": dict(self.group_similarity)}
        for key in ("similarity_spread", "noise_spread"):  # only when planted
            v = getattr(self, key)
            if any(self.spread(key, g) for g in BFW_GROUPS):
                out[key] = dict(v) if isinstance(v, dict) else v
        return out


#: strong planted bias with the score shape BFW reports (paper 002, Fig. 3 and 4; values in
#: BFW_GROUPS order AF AM BF BM IF IM WF WM):
#:
#: * impostors: medians close, upper tails not. ``rho_g = m_g (1 + sigma_g^2)
#:   exp(kappa_g^2 / 2)`` puts the median of ``sqrt(rho_i rho_j) / (1 + sigma_g^2)`` (the
#:   centre of an impostor pair's score) at ``m_g`` = 0.10 for AM, BM, IM, 0.11 for BF, IF,
#:   WF, 0.115 for AF and 0.085 for WM, while ``kappa_g`` (similarity_spread: AF 0.6, IF
#:   0.4, BF = WF 0.3, males 0) lengthens the female upper tails: female
#:   subgroups' impostors are more alike, so one global threshold gives them the higher
#:   FMR, AF most and WM least (``rho_g``, the mean similarity, keeps that order);
#: * genuine pairs differ in mean (``sigma_g``: AF 1.00 ... WM 0.85) and spread (``tau_g``,
#:   noise_spread: AF 0.25, IF 0.15, BF 0.12, AM = IM = WF 0.1, BM 0.08, WM 0.05);
#: * so M is better than F within every ethnicity (F has the larger sigma, tau and kappa)
#:   and AF, then IF, are the worst subgroups; AF has the most genuine/impostor overlap.
SIM_A = SystemSpec(
    "sim_a",
    group_similarity=_by_group(BFW_GROUPS, 0.275, 0.185, 0.219, 0.181, 0.231, 0.181, 0.212, 0.146),
    noise=_by_group(BFW_GROUPS, 1.00, 0.92, 0.95, 0.90, 0.97, 0.90, 0.92, 0.85),
    similarity_spread=_by_group(BFW_GROUPS, 0.60, 0.0, 0.30, 0.0, 0.40, 0.0, 0.30, 0.0),
    noise_spread=_by_group(BFW_GROUPS, 0.25, 0.10, 0.12, 0.08, 0.15, 0.10, 0.10, 0.05),
)
#: weak planted bias, the same shape as SIM_A but smaller: one noise level 0.95, median
#: impostor centre ``m_g`` = 0.10 (WM 0.095) with ``rho_g = m_g (1 + 0.95^2) exp(kappa_g^2 /
#: 2)``, kappa AF 0.35, IF 0.3, BF 0.25, WF 0.2, AM = IM 0.15, BM 0.1, WM 0, and tau AF 0.12,
#: IF 0.1, BF 0.06, WF 0.05, AM = IM 0.05, BM 0.04, WM 0.02.
SIM_B = SystemSpec(
    "sim_b",
    group_similarity=_by_group(BFW_GROUPS, 0.202, 0.192, 0.196, 0.191, 0.199, 0.192, 0.194, 0.181),
    noise=0.95,
    similarity_spread=_by_group(BFW_GROUPS, 0.35, 0.15, 0.25, 0.10, 0.30, 0.15, 0.20, 0.0),
    noise_spread=_by_group(BFW_GROUPS, 0.12, 0.05, 0.06, 0.04, 0.10, 0.05, 0.05, 0.02),
)

_INT_KEYS = ("seed", "identities_per_group", "images_per_identity", "n_folds", "dim")


def _within_negatives(value: Any, name: str) -> str | int:
    """``"all"`` or an integer >= 0 of different-identity pairs per fold and subgroup."""
    if isinstance(value, str):
        if value != "all":
            raise ValueError(f"{name} must be 'all' or an integer, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be 'all' or an integer >= 0, got {value!r}")
    return value


def _nonnegative(value: Any, name: str) -> Any:
    """A number >= 0 (kept as given)."""
    if _number(value, name) < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _systems(value: Any, name: str) -> tuple[SystemSpec, ...]:
    """One or more :class:`SystemSpec` with distinct names, as a tuple."""
    if not value:
        raise ValueError(f"{name} must name at least one system")
    for s in value:
        if not isinstance(s, SystemSpec):
            raise ValueError(f"{name} must hold SystemSpec, got {type(s).__name__}")
    names = [s.name for s in value]
    if len(set(names)) != len(names):
        raise ValueError(f"{name}: duplicate system names in {names}")
    return tuple(value)


def _system_specs(systems: Any, name: str) -> tuple[SystemSpec, ...]:
    """``params.yaml``'s mapping name -> ``{group_similarity, noise, ...}`` as specs."""
    if not isinstance(systems, Mapping) or not systems:
        raise ValueError(f"{name} must be a non-empty mapping name -> system")
    specs = []
    for key, spec in systems.items():
        if not isinstance(spec, Mapping):
            raise ValueError(f"{name}.{key} must be a mapping")
        bad = sorted(set(spec) - {"noise", "group_similarity", "similarity_spread", "noise_spread"}, key=str)
        if bad:
            raise ValueError(f"{name}.{key}: unknown key(s) {bad}")
        if "group_similarity" not in spec:
            raise ValueError(f"{name}.{key}.group_similarity is required")
        specs.append(SystemSpec(str(key), dict(spec["group_similarity"]), spec.get("noise", 0.9),
                                spec.get("similarity_spread", 0.0), spec.get("noise_spread", 0.0)))
    return tuple(specs)


@dataclass(frozen=True)
class BFWWorldConfig(Section):
    """Size, pair recipe and systems of a synthetic BFW world (see the module docstring).

    Parameters
    ----------
    seed : int, default 2026
        Seeds every random stream (>= 0).
    identities_per_group : int, default 100
        Identities per subgroup, divisible by ``n_folds``.
    images_per_identity : int, default 25
        Images per identity (>= 2).
    n_folds : int, default 5
        Folds (>= 2); identities are dealt to folds within each subgroup.
    dim : int, default 64
        Embedding dimension (>= 2).
    within_negatives : "all" or int, default "all"
        Different-identity pairs per (fold, subgroup): all of them, or this many sampled.
    cross_negatives : float, default 1.0
        Cross-subgroup impostor pairs per genuine pair in each fold (>= 0).
    systems : tuple of SystemSpec, default (SIM_A, SIM_B)
        The simulated systems, distinct names.

    Raises
    ------
    ValueError
        For a non-integer size, a size out of range, a bad ``within_negatives`` or
        ``cross_negatives`` (or one asking for more pairs than exist), or no, duplicate
        or non-SystemSpec systems.

    Examples
    --------
    >>> c = BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2)
    >>> c.genuine_per_fold, c.cross_available  # 8 groups x 1 identity x 1 pair; 8*2 choose 2 - 8
    (8, 112)
    """

    section = "bfw_world"
    seed: int = param(2026, integer(0))
    identities_per_group: int = param(100, integer())
    images_per_identity: int = param(25, integer(2))
    n_folds: int = param(5, integer(2))
    dim: int = param(64, integer(2))
    within_negatives: str | int = param("all", _within_negatives)
    cross_negatives: float = param(1.0, _nonnegative)
    systems: tuple[SystemSpec, ...] = param((SIM_A, SIM_B), _systems)

    def check(self) -> None:
        w = self.section
        if self.identities_per_group < self.n_folds:
            raise ValueError(f"{w}.identities_per_group must be >= {w}.n_folds")
        if self.identities_per_group % self.n_folds:
            raise ValueError(
                f"{w}.identities_per_group ({self.identities_per_group}) must be divisible "
                f"by {w}.n_folds ({self.n_folds})"
            )
        wn = self.within_negatives
        if not isinstance(wn, str) and wn > self.within_available:
            raise ValueError(
                f"{w}.within_negatives = {wn} exceeds the {self.within_available} "
                "different-identity pairs available per fold and subgroup"
            )
        if round(float(self.cross_negatives) * self.genuine_per_fold) > self.cross_available:
            raise ValueError(f"{w}.cross_negatives asks for more cross-subgroup pairs than exist")

    # derived counts ------------------------------------------------------------------
    @property
    def block_images(self) -> int:
        """Images of one subgroup in one fold."""
        return self.identities_per_group // self.n_folds * self.images_per_identity

    @property
    def within_available(self) -> int:
        """Different-identity image pairs per (fold, subgroup)."""
        ids = self.identities_per_group // self.n_folds
        return comb(self.block_images, 2) - ids * comb(self.images_per_identity, 2)

    @property
    def genuine_per_fold(self) -> int:
        """Genuine (same-identity) image pairs per fold, all subgroups."""
        ids = self.identities_per_group // self.n_folds
        return len(BFW_GROUPS) * ids * comb(self.images_per_identity, 2)

    @property
    def cross_available(self) -> int:
        """Distinct cross-subgroup image pairs per fold."""
        n = self.block_images
        return comb(len(BFW_GROUPS) * n, 2) - len(BFW_GROUPS) * comb(n, 2)

    # params.yaml ---------------------------------------------------------------------
    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> BFWWorldConfig:
        """Build from a ``params.yaml`` ``world:`` section; missing keys take the defaults.

        Parameters
        ----------
        d : mapping
            The section: the integer and pair-recipe fields, and ``systems`` as a mapping
            name -> ``{"group_similarity": {...}, "noise": ...}``.

        Returns
        -------
        BFWWorldConfig
            The validated config; :meth:`to_params` inverts it.

        Raises
        ------
        ValueError
            For a non-mapping, an unknown key (also inside a system), a system without
            ``group_similarity``, or an invalid value.

        Examples
        --------
        >>> BFWWorldConfig.from_params({"dim": 8}).dim
        8
        >>> BFWWorldConfig.from_params({"folds": 5})
        Traceback (most recent call last):
        ...
        ValueError: bfw_world: unknown key(s) ['folds']; known keys are [...]
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"{cls.section}: expected a mapping, got {type(d).__name__}")
        d = dict(d)
        if "systems" in d:
            d["systems"] = _system_specs(d["systems"], f"{cls.section}.systems")
        return super().from_params(d)

    def to_params(self) -> dict[str, Any]:
        """The ``params.yaml`` section (JSON-serialisable); ``from_params`` inverts it.

        Returns
        -------
        dict
            Every field, ``systems`` as a mapping name -> :meth:`SystemSpec.to_params`.
        """
        d: dict[str, Any] = {k: int(getattr(self, k)) for k in _INT_KEYS}
        wn = self.within_negatives
        d["within_negatives"] = wn if isinstance(wn, str) else int(wn)
        d["cross_negatives"] = float(self.cross_negatives)
        d["systems"] = {s.name: s.to_params() for s in self.systems}
        return d
