"""The known-truth world for the BFW thresholds study (002): a synthetic BFW pair table.

Everything here is **synthetic** (``df.attrs["source"] == "synthetic"``) and
deterministic: the same :class:`BFWWorldConfig` gives a byte-identical DataFrame.

Generative model (this *is* the planted truth)
----------------------------------------------
Subgroups ``g`` in :data:`BFW_GROUPS` (ethnicity A/B/I/W x gender F/M), each with
``identities_per_group`` identities and ``images_per_identity`` images. For every
simulated face-recognition system ``s`` independently (its own random stream, derived
from ``seed`` and the system's name):

* a random unit direction ``c_{s,g}`` per subgroup;
* identity template ``t_i = normalize(sqrt(rho_g) c_{s,g} + sqrt(1 - rho_g) z_i)``,
  ``z_i`` uniform on the unit sphere of R^dim;
* image embedding ``x = normalize(t_i + sigma_g eps)``, ``eps ~ N(0, I/dim)``;
* optionally (paper 002 Fig. 4: impostor medians alike but upper percentiles differing,
  genuine pairs differing in mean *and* spread) per-identity heterogeneity:
  ``rho_i = min(rho_g exp(kappa_g v_i - kappa_g^2 / 2), 0.95)`` replaces ``rho_g``
  (``kappa_g`` = ``SystemSpec.similarity_spread``: some identities lie closer to their
  subgroup's direction, which lengthens the impostor upper tail) and
  ``sigma_i = sigma_g exp(tau_g u_i - tau_g^2 / 2)`` replaces ``sigma_g`` (``tau_g`` =
  ``SystemSpec.noise_spread``: spreads the genuine scores), ``v_i, u_i ~ N(0, 1)`` drawn
  after the rest of the subgroup's stream, so with both 0 (the ``SystemSpec`` default) the
  world is as without them; the default systems :data:`SIM_A` and :data:`SIM_B` plant both;
* score of a pair = cosine ``x_a . x_b``, stored as float32.

So ``rho_g`` (``SystemSpec.group_similarity``) plants the within-subgroup impostor
similarity (mean about ``rho_g / (1 + sigma_g^2)``: larger ``rho_g`` -> higher FMR at
one global threshold) and ``sigma_g`` (``SystemSpec.noise``) plants the genuine
scores (mean about ``1 / (1 + sigma_g^2)``: larger ``sigma_g`` -> higher FNMR).
Cross-subgroup impostors have mean about 0. With the spreads, an impostor pair's score
is centred on ``sqrt(rho_i rho_j) / (1 + sigma^2)``, whose median over pairs is about
``rho_g exp(-kappa_g^2 / 2) / (1 + sigma_g^2)``: a subgroup with a larger ``kappa_g``
and a correspondingly larger ``rho_g`` keeps its median impostor score but has a longer
upper tail (the shape of paper 002's Fig. 4, planted in :data:`SIM_A`; see
:func:`planted_truth` for the planted medians, upper percentiles and genuine SDs).

Pairs (the BFW recipe, A.1 of the notes; identical for every system)
-------------------------------------------------------------------
Within each subgroup the identities are shuffled (seeded) and dealt round-robin to
``n_folds`` folds. Per fold: all within-identity image pairs (genuine, label 1); per
subgroup all (or ``within_negatives`` sampled) different-identity image pairs
(label 0); and ``round(cross_negatives x #genuine in the fold)`` distinct random
cross-subgroup pairs (label 0; ``a1`` uniform, ``a2`` uniform among the other seven).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import comb
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from facebias.datasets.bfw import (
    ATT_DTYPE,
    BFW_COLUMNS,
    BFW_FOLDERS,
    BFW_GROUPS,
    ETHNICITY_DTYPE,
    GENDER_DTYPE,
    GROUP_DTYPE,
)
from facebias.io import read_parquet, write_parquet
from facebias.worlds._common import (
    _FOLDS,
    _PAIRS,
    _SYSTEM,
    _TRUTH,
    _by_group,
    _name_key,
    _number,
    _per_group,
    _rng,
    _unit,
)

__all__ = [
    "SystemSpec",
    "SIM_A",
    "SIM_B",
    "BFWWorldConfig",
    "make_bfw_world",
    "image_paths",
    "image_embeddings",
    "image_table",
    "planted_truth",
    "write_world",
    "read_world",
]


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
        where = f"world.systems.{self.name}"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"world.systems: system name {self.name!r} must be an identifier")
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
        """This system's ``params.yaml`` entry under ``world.systems.<name>``.

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


@dataclass(frozen=True)
class BFWWorldConfig:
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

    seed: int = 2026
    identities_per_group: int = 100
    images_per_identity: int = 25
    n_folds: int = 5
    dim: int = 64
    within_negatives: str | int = "all"
    cross_negatives: float = 1.0
    systems: tuple[SystemSpec, ...] = field(default=(SIM_A, SIM_B))

    def __post_init__(self) -> None:
        for key in _INT_KEYS:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise ValueError(f"world.{key} must be an integer, got {v!r}")
        if self.seed < 0:
            raise ValueError(f"world.seed must be >= 0, got {self.seed}")
        if self.n_folds < 2:
            raise ValueError(f"world.n_folds must be >= 2, got {self.n_folds}")
        if self.identities_per_group < self.n_folds:
            raise ValueError("world.identities_per_group must be >= world.n_folds")
        if self.identities_per_group % self.n_folds:
            raise ValueError(
                f"world.identities_per_group ({self.identities_per_group}) must be divisible "
                f"by world.n_folds ({self.n_folds})"
            )
        if self.images_per_identity < 2:
            raise ValueError("world.images_per_identity must be >= 2 (genuine pairs need two)")
        if self.dim < 2:
            raise ValueError(f"world.dim must be >= 2, got {self.dim}")
        wn = self.within_negatives
        if isinstance(wn, str):
            if wn != "all":
                raise ValueError(f"world.within_negatives must be 'all' or an integer, got {wn!r}")
        elif isinstance(wn, bool) or not isinstance(wn, int | np.integer) or wn < 0:
            raise ValueError(f"world.within_negatives must be 'all' or an integer >= 0, got {wn!r}")
        elif wn > self.within_available:
            raise ValueError(
                f"world.within_negatives = {wn} exceeds the {self.within_available} "
                "different-identity pairs available per fold and subgroup"
            )
        cn = _number(self.cross_negatives, "world.cross_negatives")
        if cn < 0:
            raise ValueError(f"world.cross_negatives must be >= 0, got {cn}")
        if round(cn * self.genuine_per_fold) > self.cross_available:
            raise ValueError("world.cross_negatives asks for more cross-subgroup pairs than exist")
        if not self.systems:
            raise ValueError("world.systems must name at least one system")
        names = [s.name for s in self.systems]
        if len(set(names)) != len(names):
            raise ValueError(f"world.systems: duplicate system names in {names}")
        for s in self.systems:
            if not isinstance(s, SystemSpec):
                raise ValueError(f"world.systems must hold SystemSpec, got {type(s).__name__}")
        object.__setattr__(self, "systems", tuple(self.systems))

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
        ValueError: world: unknown key(s) ['folds']; expected [...]
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"world: expected a mapping, got {type(d).__name__}")
        known = {*_INT_KEYS, "within_negatives", "cross_negatives", "systems"}
        unknown = sorted(set(d) - known, key=str)
        if unknown:
            raise ValueError(f"world: unknown key(s) {unknown}; expected {sorted(known)}")
        kwargs = {k: v for k, v in d.items() if k != "systems"}
        if "systems" in d:
            systems = d["systems"]
            if not isinstance(systems, Mapping) or not systems:
                raise ValueError("world.systems must be a non-empty mapping name -> system")
            specs = []
            for name, spec in systems.items():
                if not isinstance(spec, Mapping):
                    raise ValueError(f"world.systems.{name} must be a mapping")
                bad = sorted(set(spec) - {"noise", "group_similarity", "similarity_spread", "noise_spread"},
                             key=str)
                if bad:
                    raise ValueError(f"world.systems.{name}: unknown key(s) {bad}")
                if "group_similarity" not in spec:
                    raise ValueError(f"world.systems.{name}.group_similarity is required")
                specs.append(
                    SystemSpec(str(name), dict(spec["group_similarity"]), spec.get("noise", 0.9),
                               spec.get("similarity_spread", 0.0), spec.get("noise_spread", 0.0))
                )
            kwargs["systems"] = tuple(specs)
        return cls(**kwargs)

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


# --------------------------------------------------------------------------- model
def _embed_group(
    rng: np.random.Generator, rho: float, sigma: float, n_ids: int, k: int, dim: int,
    kappa: float = 0.0, tau: float = 0.0,
) -> np.ndarray:
    """Unit image embeddings, shape ``(n_ids * k, dim)``, identity-major."""
    c = _unit(rng.standard_normal(dim))
    z = _unit(rng.standard_normal((n_ids, dim)))
    eps = rng.standard_normal((n_ids, k, dim)) / np.sqrt(dim)
    rho_i = np.full((n_ids, 1), rho)
    sigma_i = np.full((n_ids, 1, 1), sigma)
    if kappa > 0:  # drawn after the base stream: kappa = tau = 0 leaves the world as it was
        rho_i = np.minimum(rho * np.exp(kappa * rng.standard_normal((n_ids, 1)) - kappa**2 / 2), 0.95)
    if tau > 0:
        sigma_i = sigma * np.exp(tau * rng.standard_normal((n_ids, 1, 1)) - tau**2 / 2)
    t = _unit(np.sqrt(rho_i) * c + np.sqrt(1.0 - rho_i) * z)
    return _unit(t[:, None, :] + sigma_i * eps).reshape(n_ids * k, dim)


def _group_args(spec: SystemSpec, g: str) -> tuple[float, float, float, float]:
    return spec.rho(g), spec.sigma(g), spec.spread("similarity_spread", g), spec.spread("noise_spread", g)


def _embed_system(config: BFWWorldConfig, spec: SystemSpec) -> np.ndarray:
    """All ``8 * ids * k`` image embeddings of one system, indexed like the image ids."""
    rng = _rng(config.seed, _SYSTEM, _name_key(spec.name))
    n, k = config.identities_per_group, config.images_per_identity
    return np.concatenate(
        [_embed_group(rng, rho, sigma, n, k, config.dim, kappa, tau)
         for rho, sigma, kappa, tau in (_group_args(spec, g) for g in BFW_GROUPS)]
    )


def _folds(config: BFWWorldConfig) -> np.ndarray:
    """Fold (1..K) of every subject id: seeded shuffle per subgroup, then round-robin."""
    rng = _rng(config.seed, _FOLDS)
    n = config.identities_per_group
    fold = np.empty(len(BFW_GROUPS) * n, dtype=np.int8)
    for gi in range(len(BFW_GROUPS)):
        perm = rng.permutation(n)
        fold[gi * n + perm] = np.arange(n) % config.n_folds + 1
    return fold


def _distinct_cross(
    rng: np.random.Generator, images: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct unordered cross-subgroup pairs from ``images`` (groups x block)."""
    n_groups, n_b = images.shape
    a = b = np.empty(0, dtype=np.int64)
    while True:
        m = n - a.size + n // 10 + 16
        ga = rng.integers(n_groups, size=m)
        gb = (ga + rng.integers(1, n_groups, size=m)) % n_groups
        a = np.concatenate([a, images[ga, rng.integers(n_b, size=m)]])
        b = np.concatenate([b, images[gb, rng.integers(n_b, size=m)]])
        key = np.minimum(a, b) * (images.max() + 1) + np.maximum(a, b)
        first = np.sort(np.unique(key, return_index=True)[1])
        a, b = a[first], b[first]
        if a.size >= n:
            return a[:n], b[:n]


def _pairs(config: BFWWorldConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Image-index pairs ``(a, b)``, their fold, and the blocks used to score them.

    Blocks are ``("gram", images, iu, ju)`` (score = upper-triangle entries of the Gram
    matrix of ``images``) or ``("rows", a, b)`` (row-wise dot products).
    """
    rng = _rng(config.seed, _PAIRS)
    fold_of = _folds(config)
    n, k = config.identities_per_group, config.images_per_identity
    iu, ju = np.triu_indices(config.block_images, 1)
    impostor = np.flatnonzero(iu // k != ju // k)
    a_all, b_all, f_all, blocks = [], [], [], []
    for f in range(1, config.n_folds + 1):
        per_group = []
        for gi in range(len(BFW_GROUPS)):
            subj = gi * n + np.flatnonzero(fold_of[gi * n : (gi + 1) * n] == f)
            imgs = (subj[:, None] * k + np.arange(k)).ravel()
            per_group.append(imgs)
            keep = np.ones(iu.size, dtype=bool)
            if config.within_negatives != "all":
                keep[impostor] = False
                n_keep = int(config.within_negatives)
                keep[rng.choice(impostor, size=n_keep, replace=False)] = True
            bi, bj = iu[keep], ju[keep]
            blocks.append(("gram", imgs, bi, bj))
            a_all.append(imgs[bi])
            b_all.append(imgs[bj])
            f_all.append(np.full(bi.size, f, dtype=np.int8))
        n_cross = round(config.cross_negatives * config.genuine_per_fold)
        ca, cb = _distinct_cross(rng, np.stack(per_group), n_cross)
        blocks.append(("rows", ca, cb))
        a_all.append(ca)
        b_all.append(cb)
        f_all.append(np.full(ca.size, f, dtype=np.int8))
    a = np.concatenate(a_all).astype(np.int32)
    b = np.concatenate(b_all).astype(np.int32)
    return a, b, np.concatenate(f_all), blocks


def _score(emb: np.ndarray, blocks: list, bar: tqdm, chunk: int = 1 << 16) -> np.ndarray:
    """Cosine scores (float32, clipped to [-1, 1]) of every pair, in block order."""
    out = []
    for block in blocks:
        bar.update(1)
        if block[0] == "gram":
            _, imgs, bi, bj = block
            x = emb[imgs]
            out.append((x @ x.T)[bi, bj].astype(np.float32))
        else:
            _, a, b = block
            for s in range(0, a.size, chunk):
                xa, xb = emb[a[s : s + chunk]], emb[b[s : s + chunk]]
                out.append(np.einsum("ij,ij->i", xa, xb).astype(np.float32))
    scores = np.concatenate(out) if out else np.empty(0, dtype=np.float32)
    return np.clip(scores, -1.0, 1.0)


def image_paths(config: BFWWorldConfig) -> list[str]:
    """Relative path of every image index, in image-index order.

    Parameters
    ----------
    config : BFWWorldConfig
        The world's size.

    Returns
    -------
    list of str
        ``<BFW folder>/syn<subject:04d>/<image:04d>.png``, one per image.

    Examples
    --------
    >>> image_paths(BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2))[:3]
    ['asian_females/syn0000/0000.png', 'asian_females/syn0000/0001.png', 'asian_females/syn0001/0000.png']
    """
    n, k = config.identities_per_group, config.images_per_identity
    return [
        f"{BFW_FOLDERS[s // n]}/syn{s:04d}/{m:04d}.png"
        for s in range(len(BFW_GROUPS) * n)
        for m in range(k)
    ]


def image_embeddings(config: BFWWorldConfig, system: str) -> np.ndarray:
    """The unit embedding of every image for one system, from the same random stream as
    its scores: the cosine of two images' embeddings is their pair's score in
    :func:`make_bfw_world` (up to float32 rounding).

    Parameters
    ----------
    config : BFWWorldConfig
        The world.
    system : str
        The name of one of ``config.systems``.

    Returns
    -------
    numpy.ndarray
        Shape ``(8 * identities_per_group * images_per_identity, dim)``, float64 unit
        rows in image-index order (the order of :func:`image_paths` and
        :func:`image_table`).

    Raises
    ------
    ValueError
        If ``system`` is not one of the world's systems.

    Examples
    --------
    >>> c = BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2, dim=8)
    >>> x = image_embeddings(c, "sim_a")
    >>> x.shape, bool(np.allclose(np.linalg.norm(x, axis=1), 1))
    ((32, 8), True)
    """
    specs = {s.name: s for s in config.systems}
    if system not in specs:
        raise ValueError(f"system {system!r} is not in the world; its systems are {sorted(specs)}")
    return _embed_system(config, specs[system])


def image_table(config: BFWWorldConfig) -> pd.DataFrame:
    """One row per image, in image-index order: its path, subject id and subgroup.

    Parameters
    ----------
    config : BFWWorldConfig
        The world's size.

    Returns
    -------
    pandas.DataFrame
        Columns ``path`` (as :func:`image_paths`), ``id`` (int32 subject id, as ``id1`` /
        ``id2`` of the pair table) and ``group`` (str, one of :data:`BFW_GROUPS`).

    Examples
    --------
    >>> image_table(BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2)).iloc[[0, 4]]
                                 path  id group
    0  asian_females/syn0000/0000.png   0    AF
    4    asian_males/syn0002/0000.png   2    AM
    """
    n, k = config.identities_per_group, config.images_per_identity
    subject = np.arange(len(BFW_GROUPS) * n * k) // k
    return pd.DataFrame({"path": image_paths(config), "id": subject.astype(np.int32),
                         "group": np.asarray(BFW_GROUPS, dtype=object)[subject // n]})


def make_bfw_world(config: BFWWorldConfig | None = None, progress: bool = False) -> pd.DataFrame:
    """The synthetic BFW pair table: the 14 schema columns, then one float32 score per system.

    Parameters
    ----------
    config : BFWWorldConfig, optional
        Default ``BFWWorldConfig()``.
    progress : bool, default False
        Show a tqdm progress bar.

    Returns
    -------
    pandas.DataFrame
        ``fold`` 1..K and ``label`` (1 = genuine) are int8, ``id1``/``id2`` int32 subject
        ids ``0 .. 8 * identities_per_group - 1``; string columns are categoricals; each
        system's column holds cosine similarities in [-1, 1] (float32). Rows are ordered
        by fold; within a fold by subgroup block (upper triangle order), then the
        cross-subgroup pairs. ``attrs``: ``source = "synthetic"`` and ``world`` (the
        config's :meth:`~BFWWorldConfig.to_params`).

    Examples
    --------
    >>> c = BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2, dim=8)
    >>> w = make_bfw_world(c)
    >>> w.shape, int(w["label"].sum()), w["sim_a"].dtype
    ((32, 16), 16, dtype('float32'))
    """
    config = config or BFWWorldConfig()
    n, k = config.identities_per_group, config.images_per_identity
    a, b, fold, blocks = _pairs(config)
    scores = {}
    total = len(config.systems) * len(blocks)
    with tqdm(total=total, desc="synthetic BFW world", unit="block", disable=not progress) as bar:
        for spec in config.systems:
            scores[spec.name] = _score(_embed_system(config, spec), blocks, bar)
    paths = pd.CategoricalDtype(image_paths(config))
    s1, s2 = a // k, b // k
    g1, g2 = (s1 // n).astype(np.int8), (s2 // n).astype(np.int8)
    cat = pd.Categorical.from_codes
    cols: dict[str, Any] = {
        "fold": fold,
        "p1": cat(a, dtype=paths),
        "p2": cat(b, dtype=paths),
        "label": (s1 == s2).astype(np.int8),
        "id1": s1.astype(np.int32),
        "id2": s2.astype(np.int32),
        "att1": cat(g1, dtype=ATT_DTYPE),
        "att2": cat(g2, dtype=ATT_DTYPE),
        "a1": cat(g1, dtype=GROUP_DTYPE),
        "a2": cat(g2, dtype=GROUP_DTYPE),
        "g1": cat(g1 % 2, dtype=GENDER_DTYPE),
        "g2": cat(g2 % 2, dtype=GENDER_DTYPE),
        "e1": cat(g1 // 2, dtype=ETHNICITY_DTYPE),
        "e2": cat(g2 // 2, dtype=ETHNICITY_DTYPE),
        **scores,
    }
    df = pd.DataFrame(cols, copy=False)
    df.attrs["source"] = "synthetic"
    df.attrs["world"] = config.to_params()
    return df


# --------------------------------------------------------------------------- truth
def planted_truth(config: BFWWorldConfig | None = None, n_ids: int = 20_000) -> pd.DataFrame:
    """Planted parameters and expected scores, one row per (system, group).

    Columns: ``system, group, rho, noise``; ``impostor_mean`` and ``genuine_mean``, the
    expected within-subgroup impostor and genuine cosine, estimated by a deterministic
    Monte Carlo of the same model (``n_ids`` identities x 2 images per row; standard
    error below 1e-3); and the first-order closed forms ``impostor_mean_approx =
    rho / (1 + sigma^2)``, ``genuine_mean_approx = 1 / (1 + sigma^2)`` (without spreads).
    The planted score *shape* (paper 002, Fig. 4) from the same Monte Carlo:
    ``impostor_median``, ``impostor_p99`` and ``impostor_p999`` (quantiles 0.5, 0.99,
    0.999 of the first images of the first ``min(n_ids, 2000)`` identities, all pairs)
    and ``genuine_sd`` (SD of the ``n_ids`` genuine pairs).

    Parameters
    ----------
    config : BFWWorldConfig, optional
        Default ``BFWWorldConfig()``.
    n_ids : int, default 20000
        Monte Carlo identities per (system, group).

    Returns
    -------
    pandas.DataFrame
        One row per (system, group) with the columns above.

    Examples
    --------
    >>> t = planted_truth(BFWWorldConfig(dim=8), n_ids=100)
    >>> t.loc[0, ["system", "group", "rho", "noise", "genuine_mean_approx"]].to_dict()
    {'system': 'sim_a', 'group': 'AF', 'rho': 0.275, 'noise': 1.0, 'genuine_mean_approx': 0.5}
    """
    config = config or BFWWorldConfig()
    rows = []
    for spec in config.systems:
        rng = _rng(config.seed, _TRUTH, _name_key(spec.name))
        for g in BFW_GROUPS:
            rho, sigma, kappa, tau = _group_args(spec, g)
            x = _embed_group(rng, rho, sigma, n_ids, 2, config.dim, kappa, tau).reshape(n_ids, 2, -1)
            per_id = x.sum(axis=1)  # sum of an identity's image embeddings
            total = per_id.sum(axis=0)
            same = np.einsum("ij,ij->", per_id, per_id)  # sum over same-identity ordered pairs
            first = x[: min(n_ids, 2000), 0]
            imp = (first @ first.T)[np.triu_indices(len(first), 1)]
            med, p99, p999 = np.quantile(imp, [0.5, 0.99, 0.999])
            rows.append(
                {
                    "system": spec.name,
                    "group": g,
                    "rho": rho,
                    "noise": sigma,
                    "impostor_mean": (total @ total - same) / (4 * n_ids * (n_ids - 1)),
                    "genuine_mean": (same - 2 * n_ids) / (2 * n_ids),
                    "impostor_mean_approx": rho / (1 + sigma**2),
                    "genuine_mean_approx": 1 / (1 + sigma**2),
                    "impostor_median": float(med),
                    "impostor_p99": float(p99),
                    "impostor_p999": float(p999),
                    "genuine_sd": float(np.einsum("ij,ij->i", x[:, 0], x[:, 1]).std(ddof=1)),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- files
def write_world(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a world table to parquet atomically, ``df.attrs`` included (see
    :func:`facebias.io.write_parquet`); :func:`read_world` reads it back.

    Parameters
    ----------
    df : pandas.DataFrame
        A :func:`make_bfw_world` table.
    path : str or os.PathLike
        The parquet file.
    """
    write_parquet(df, path)


def read_world(path: str | os.PathLike) -> pd.DataFrame:
    """Read a table written by :func:`write_world`, restoring ``df.attrs``.

    Parameters
    ----------
    path : str or os.PathLike
        The parquet file.

    Returns
    -------
    pandas.DataFrame
        The world table.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (the message says how to generate it).
    """
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path}: no synthetic world here; generate it with `dvc repro world` "
            "(or `facebias world --out PATH`)"
        )
    return read_parquet(path)
