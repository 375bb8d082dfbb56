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
* score of a pair = cosine ``x_a . x_b``, stored as float32.

So ``rho_g`` (``SystemSpec.group_similarity``) plants the within-subgroup impostor
similarity (mean about ``rho_g / (1 + sigma_g^2)``: larger ``rho_g`` -> higher FMR at
one global threshold) and ``sigma_g`` (``SystemSpec.noise``) plants the genuine
scores (mean about ``1 / (1 + sigma_g^2)``: larger ``sigma_g`` -> higher FNMR).
Cross-subgroup impostors have mean about 0.

Pairs (the BFW recipe, A.1 of the notes; identical for every system)
-------------------------------------------------------------------
Within each subgroup the identities are shuffled (seeded) and dealt round-robin to
``n_folds`` folds. Per fold: all within-identity image pairs (genuine, label 1); per
subgroup all (or ``within_negatives`` sampled) different-identity image pairs
(label 0); and ``round(cross_negatives x #genuine in the fold)`` distinct random
cross-subgroup pairs (label 0; ``a1`` uniform, ``a2`` uniform among the other seven).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import comb
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from facebias.io import atomic_path, config_from_params

__all__ = [
    "BFW_GROUPS",
    "BFW_ETHNICITIES",
    "BFW_GENDERS",
    "BFW_FOLDERS",
    "BFW_SCHEMA",
    "GROUP_DTYPE",
    "ATT_DTYPE",
    "GENDER_DTYPE",
    "ETHNICITY_DTYPE",
    "SystemSpec",
    "BFWWorldConfig",
    "make_bfw_world",
    "image_paths",
    "planted_truth",
    "write_world",
    "read_world",
    "BA_FACTORS",
    "BAWorldConfig",
    "make_batest_world",
    "factor_effect",
    "batest_pairs",
]

BFW_GROUPS: tuple[str, ...] = ("AF", "AM", "BF", "BM", "IF", "IM", "WF", "WM")
BFW_ETHNICITIES: tuple[str, ...] = ("A", "B", "I", "W")
BFW_GENDERS: tuple[str, ...] = ("F", "M")
BFW_FOLDERS: tuple[str, ...] = (
    "asian_females", "asian_males", "black_females", "black_males",
    "indian_females", "indian_males", "white_females", "white_males",
)  # fmt: skip
#: the 14 columns of the published BFW datatable, scores excluded, in world order
BFW_SCHEMA: tuple[str, ...] = (
    "fold", "p1", "p2", "label", "id1", "id2", "att1", "att2",
    "a1", "a2", "g1", "g2", "e1", "e2",
)  # fmt: skip

GROUP_DTYPE = pd.CategoricalDtype(list(BFW_GROUPS))
ATT_DTYPE = pd.CategoricalDtype(list(BFW_FOLDERS))
GENDER_DTYPE = pd.CategoricalDtype(list(BFW_GENDERS))
ETHNICITY_DTYPE = pd.CategoricalDtype(list(BFW_ETHNICITIES))

# tags of the independent random streams (SeedSequence spawn keys)
_FOLDS, _PAIRS, _SYSTEM, _TRUTH, _FACTORS = 0, 1, 2, 3, 4


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _name_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class SystemSpec:
    """One simulated FR system (its score column is ``name``).

    ``group_similarity``: planted ``rho_g`` in [0, 1) for each of the 8 groups;
    ``noise``: image noise ``sigma`` > 0, one number or one per group (default 0.9).
    """

    name: str
    group_similarity: dict[str, float]
    noise: float | dict[str, float] = 0.9

    def __post_init__(self) -> None:
        where = f"world.systems.{self.name}"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"world.systems: system name {self.name!r} must be an identifier")
        if self.name in BFW_SCHEMA:
            raise ValueError(f"{where}: name clashes with the BFW column {self.name!r}")
        rho = _per_group(self.group_similarity, f"{where}.group_similarity")
        for g, r in rho.items():
            if not 0.0 <= r < 1.0:
                raise ValueError(f"{where}.group_similarity.{g} = {r} is outside [0, 1)")
        if isinstance(self.noise, Mapping):
            noise = _per_group(self.noise, f"{where}.noise")
        else:
            noise = dict.fromkeys(BFW_GROUPS, _number(self.noise, f"{where}.noise"))
        for g, s in noise.items():
            if not s > 0.0:
                raise ValueError(f"{where}.noise ({g}) = {s} must be > 0")
        object.__setattr__(self, "group_similarity", rho)
        if isinstance(self.noise, Mapping):
            object.__setattr__(self, "noise", noise)

    def rho(self, group: str) -> float:
        return self.group_similarity[group]

    def sigma(self, group: str) -> float:
        return self.noise[group] if isinstance(self.noise, dict) else float(self.noise)

    def to_params(self) -> dict[str, Any]:
        noise = dict(self.noise) if isinstance(self.noise, dict) else self.noise
        return {"noise": noise, "group_similarity": dict(self.group_similarity)}


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{key} must be a number, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{key} must be finite, got {value!r}")
    return float(value)


def _per_group(values: Any, key: str) -> dict[str, float]:
    if not isinstance(values, Mapping):
        raise ValueError(f"{key} must be a mapping group -> number, got {type(values).__name__}")
    unknown = sorted(set(values) - set(BFW_GROUPS), key=str)
    if unknown:
        raise ValueError(f"{key}: unknown group(s) {unknown}; expected {list(BFW_GROUPS)}")
    missing = [g for g in BFW_GROUPS if g not in values]
    if missing:
        raise ValueError(f"{key}: missing group(s) {missing}")
    return {g: _number(values[g], f"{key}.{g}") for g in BFW_GROUPS}


def _by_group(*values: float) -> dict[str, float]:
    return dict(zip(BFW_GROUPS, values, strict=True))


#: strong planted bias in the direction BFW reports: F impostors more alike than M;
#: AF noisiest (worst genuine scores), WM cleanest. Values in BFW_GROUPS order.
SIM_A = SystemSpec(
    "sim_a",
    group_similarity=_by_group(0.32, 0.20, 0.28, 0.18, 0.28, 0.20, 0.24, 0.14),
    noise=_by_group(1.00, 0.92, 0.95, 0.90, 0.95, 0.90, 0.92, 0.85),
)
#: weak planted bias: rho spread 0.05, one noise level
SIM_B = SystemSpec(
    "sim_b",
    group_similarity=_by_group(0.22, 0.19, 0.21, 0.18, 0.21, 0.19, 0.20, 0.17),
    noise=0.95,
)

_INT_KEYS = ("seed", "identities_per_group", "images_per_identity", "n_folds", "dim")


@dataclass(frozen=True)
class BFWWorldConfig:
    """Size, pair recipe and systems of a synthetic BFW world (see the module docstring)."""

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
        ids = self.identities_per_group // self.n_folds
        return len(BFW_GROUPS) * ids * comb(self.images_per_identity, 2)

    @property
    def cross_available(self) -> int:
        n = self.block_images
        return comb(len(BFW_GROUPS) * n, 2) - len(BFW_GROUPS) * comb(n, 2)

    # params.yaml ---------------------------------------------------------------------
    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> BFWWorldConfig:
        """Build from a ``params.yaml`` ``world:`` section; missing keys take the defaults."""
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
                bad = sorted(set(spec) - {"noise", "group_similarity"}, key=str)
                if bad:
                    raise ValueError(f"world.systems.{name}: unknown key(s) {bad}")
                if "group_similarity" not in spec:
                    raise ValueError(f"world.systems.{name}.group_similarity is required")
                specs.append(
                    SystemSpec(str(name), dict(spec["group_similarity"]), spec.get("noise", 0.9))
                )
            kwargs["systems"] = tuple(specs)
        return cls(**kwargs)

    def to_params(self) -> dict[str, Any]:
        """The ``params.yaml`` section (JSON-serialisable); ``from_params`` inverts it."""
        d: dict[str, Any] = {k: int(getattr(self, k)) for k in _INT_KEYS}
        wn = self.within_negatives
        d["within_negatives"] = wn if isinstance(wn, str) else int(wn)
        d["cross_negatives"] = float(self.cross_negatives)
        d["systems"] = {s.name: s.to_params() for s in self.systems}
        return d


# --------------------------------------------------------------------------- model
def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _embed_group(
    rng: np.random.Generator, rho: float, sigma: float, n_ids: int, k: int, dim: int
) -> np.ndarray:
    """Unit image embeddings, shape ``(n_ids * k, dim)``, identity-major."""
    c = _unit(rng.standard_normal(dim))
    z = _unit(rng.standard_normal((n_ids, dim)))
    t = _unit(np.sqrt(rho) * c + np.sqrt(1.0 - rho) * z)
    eps = rng.standard_normal((n_ids, k, dim)) / np.sqrt(dim)
    return _unit(t[:, None, :] + sigma * eps).reshape(n_ids * k, dim)


def _embed_system(config: BFWWorldConfig, spec: SystemSpec) -> np.ndarray:
    """All ``8 * ids * k`` image embeddings of one system, indexed like the image ids."""
    rng = _rng(config.seed, _SYSTEM, _name_key(spec.name))
    n, k = config.identities_per_group, config.images_per_identity
    return np.concatenate(
        [_embed_group(rng, spec.rho(g), spec.sigma(g), n, k, config.dim) for g in BFW_GROUPS]
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
    """Relative path of every image index, e.g. ``asian_females/syn0007/0003.png``."""
    n, k = config.identities_per_group, config.images_per_identity
    return [
        f"{BFW_FOLDERS[s // n]}/syn{s:04d}/{m:04d}.png"
        for s in range(len(BFW_GROUPS) * n)
        for m in range(k)
    ]


def make_bfw_world(config: BFWWorldConfig | None = None, progress: bool = False) -> pd.DataFrame:
    """The synthetic BFW pair table: the 14 schema columns, then one float32 score per system.

    ``fold`` 1..K and ``label`` 0/1 are int8, ``id1``/``id2`` int32 subject ids
    ``0 .. 8 * identities_per_group - 1``; string columns are categoricals. Rows are
    ordered by fold; within a fold by subgroup block (upper triangle order), then the
    cross-subgroup pairs.
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
    rho / (1 + sigma^2)``, ``genuine_mean_approx = 1 / (1 + sigma^2)``.
    """
    config = config or BFWWorldConfig()
    rows = []
    for spec in config.systems:
        rng = _rng(config.seed, _TRUTH, _name_key(spec.name))
        for g in BFW_GROUPS:
            rho, sigma = spec.rho(g), spec.sigma(g)
            x = _embed_group(rng, rho, sigma, n_ids, 2, config.dim).reshape(n_ids, 2, -1)
            per_id = x.sum(axis=1)  # sum of an identity's image embeddings
            total = per_id.sum(axis=0)
            same = np.einsum("ij,ij->", per_id, per_id)  # sum over same-identity ordered pairs
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
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- files
_META_KEY = b"facebias"


def write_world(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` to parquet atomically; ``df.attrs`` go in the schema metadata as JSON."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META_KEY] = json.dumps(df.attrs, allow_nan=False).encode("utf-8")
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_world(path: str | os.PathLike) -> pd.DataFrame:
    """Read a table written by :func:`write_world`, restoring ``df.attrs``."""
    import pyarrow.parquet as pq

    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path}: no synthetic world here; generate it with `dvc repro world` "
            "(or `facebias world --out PATH`)"
        )
    table = pq.read_table(path)
    df = table.to_pandas()
    raw = (table.schema.metadata or {}).get(_META_KEY)
    df.attrs = json.loads(raw) if raw else {}
    return df


# =========================================================================== BA-test world
# Paper 003: nuisance factors (pose, brightness, quality, face area, facial hair) drive
# 1:1 accuracy, and their distributions differ across groups, so an unbalanced evaluation
# mixes the demographic effect with the factor effects. Here both are planted.
#
# Per image: yaw, pitch, roll (deg), brightness (face-skin gray, 0-255), quality (0-1),
# face_area (fraction of the aligned crop), facial_hair (bool, males only), drawn from
# group-specific distributions. Its factor effect on scores is
#     e = -b_pose (|yaw| + |pitch|) / 20 - b_bright |brightness - 157| / 40
#         + b_area (face_area - 0.35) / 0.1 + b_quality (quality - 0.5) - b_hair facial_hair
# A pair (a, b) scores  genuine:  mu_gen[g] + e_a + e_b + sigma eps
#                       impostor: mu_imp[g] + gamma (e_a + e_b) + sigma eps,
# with eps ~ N(0, 1) a deterministic function of (seed, a, b): a pair keeps its score in
# any subset, so balanced and unbalanced evaluations see the same pairs.
# The planted demographic effect is mu_gen / mu_imp; with factor distributions equal
# across groups the expected genuine-score gap M - F of race r is exactly
# mu_gen[rM] - mu_gen[rF].

BA_FACTORS: tuple[str, ...] = (
    "yaw", "pitch", "roll", "brightness", "quality", "face_area", "facial_hair",
)  # fmt: skip


@dataclass(frozen=True)
class BAWorldConfig:
    """Size, planted demographic effects and factor distributions of the BA-test world.

    Per-group settings are dicts over :data:`BFW_GROUPS`. Defaults: a true genuine gap
    M - F of 0.04 in every race; females have smaller face area (hair occludes more, as
    paper 003 reports), males have facial hair with probability 0.3; Black groups are
    darker on average, Asian groups more often off-pose.
    """

    seed: int = 3003
    identities_per_group: int = 100
    images_per_identity: int = 16
    sigma: float = 0.05
    gamma: float = 0.3
    genuine_mean: dict[str, float] = field(
        default_factory=lambda: _by_group(0.60, 0.64, 0.60, 0.64, 0.60, 0.64, 0.60, 0.64))
    impostor_mean: dict[str, float] = field(
        default_factory=lambda: _by_group(0.14, 0.12, 0.13, 0.11, 0.13, 0.11, 0.12, 0.10))
    effects: dict[str, float] = field(default_factory=lambda: {
        "pose": 0.03, "brightness": 0.03, "face_area": 0.03, "quality": 0.04, "facial_hair": 0.03})
    yaw_sd: dict[str, float] = field(
        default_factory=lambda: _by_group(16, 16, 10, 10, 10, 10, 10, 10))
    brightness_mean: dict[str, float] = field(
        default_factory=lambda: _by_group(165, 160, 120, 115, 140, 135, 170, 165))
    face_area_mean: dict[str, float] = field(
        default_factory=lambda: _by_group(0.30, 0.38, 0.30, 0.38, 0.30, 0.38, 0.30, 0.38))
    quality_mean: dict[str, float] = field(
        default_factory=lambda: _by_group(0.50, 0.55, 0.45, 0.50, 0.50, 0.55, 0.55, 0.60))
    facial_hair_rate: float = 0.3

    def __post_init__(self) -> None:
        for key in ("identities_per_group", "images_per_identity"):
            if int(getattr(self, key)) < 2:
                raise ValueError(f"batest_world.{key} must be >= 2, got {getattr(self, key)}")
        for key in ("genuine_mean", "impostor_mean", "yaw_sd", "brightness_mean",
                    "face_area_mean", "quality_mean"):
            object.__setattr__(self, key, _per_group(getattr(self, key), f"batest_world.{key}"))
        unknown = set(self.effects) - {"pose", "brightness", "face_area", "quality", "facial_hair"}
        if unknown:
            raise ValueError(f"batest_world.effects: unknown factor(s) {sorted(unknown)}")
        if not self.sigma > 0 or not 0 <= self.facial_hair_rate <= 1:
            raise ValueError("batest_world: need sigma > 0 and 0 <= facial_hair_rate <= 1")

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> BAWorldConfig:
        return config_from_params(cls, dict(d), "batest_world")

    def true_gender_gap(self) -> dict[str, float]:
        """Planted genuine-score gap M - F per race letter (what balancing should recover)."""
        return {e: round(self.genuine_mean[e + "M"] - self.genuine_mean[e + "F"], 12)
                for e in BFW_ETHNICITIES}


def make_batest_world(config: BAWorldConfig | None = None) -> pd.DataFrame:
    """One row per synthetic image: ``image, identity, group, race, gender`` and the
    factors :data:`BA_FACTORS`, plus ``effect`` (its planted factor effect ``e``).
    Deterministic given the config; labelled ``attrs["source"] = "synthetic"``."""
    c = config or BAWorldConfig()
    n, k = c.identities_per_group, c.images_per_identity
    rng = _rng(c.seed, _FACTORS)
    rows = []
    for gi, g in enumerate(BFW_GROUPS):
        m = n * k
        male = g[1] == "M"
        rows.append(pd.DataFrame({
            "identity": gi * n + np.repeat(np.arange(n), k),
            "group": g,
            "yaw": rng.normal(0, c.yaw_sd[g], m),
            "pitch": rng.normal(0, 8, m),
            "roll": rng.normal(0, 4, m),
            "brightness": np.clip(rng.normal(c.brightness_mean[g], 30, m), 0, 255),
            "quality": np.clip(rng.normal(c.quality_mean[g], 0.15, m), 0, 1),
            "face_area": np.clip(rng.normal(c.face_area_mean[g], 0.05, m), 0.05, 0.6),
            "facial_hair": (rng.random(m) < c.facial_hair_rate) if male else np.zeros(m, bool),
        }))
    df = pd.concat(rows, ignore_index=True)
    df.insert(0, "image", [f"syn{i:06d}.png" for i in range(len(df))])
    df["group"] = pd.Categorical(df["group"], dtype=GROUP_DTYPE)
    df.insert(3, "race", df["group"].astype(str).str[0])
    df.insert(4, "gender", df["group"].astype(str).str[1])
    df["effect"] = factor_effect(df, c)
    df.attrs["source"] = "synthetic"
    df.attrs["batest_world"] = {"seed": c.seed, "true_gender_gap": c.true_gender_gap()}
    return df


def factor_effect(images: pd.DataFrame, config: BAWorldConfig) -> np.ndarray:
    """The planted factor effect ``e`` of each image (score units; see the section comment)."""
    b = config.effects
    return (
        -b.get("pose", 0) * (images["yaw"].abs() + images["pitch"].abs()).to_numpy() / 20
        - b.get("brightness", 0) * np.abs(images["brightness"].to_numpy() - 157) / 40
        + b.get("face_area", 0) * (images["face_area"].to_numpy() - 0.35) / 0.1
        + b.get("quality", 0) * (images["quality"].to_numpy() - 0.5)
        - b.get("facial_hair", 0) * images["facial_hair"].to_numpy().astype(float)
    )


def _pair_normal(seed: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Standard normals that depend only on (seed, a, b): splitmix64 hash -> inverse CDF."""
    from scipy.special import ndtri

    with np.errstate(over="ignore"):
        x = (np.minimum(a, b).astype(np.uint64) << np.uint64(32)) | np.maximum(a, b).astype(np.uint64)
        x = x + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            x = (x ^ (x >> np.uint64(shift))) * np.uint64(mult)
        x = x ^ (x >> np.uint64(31))
    u = ((x >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)
    return ndtri(u)


def batest_pairs(images: pd.DataFrame, config: BAWorldConfig | None = None,
                 impostors_per_genuine: float = 2.0, seed: int = 0) -> pd.DataFrame:
    """Genuine (every same-identity pair) and within-group impostor pairs of ``images``
    (any subset of a :func:`make_batest_world` table), scored by the planted model.

    Columns: ``a, b`` (row positions in the world table's ``image`` order, taken from the
    ``image`` names), ``id1, id2, group, label, score`` and both images' factors with
    suffixes ``1``/``2``. Impostors: per group, ``impostors_per_genuine`` x its genuine
    count of distinct random different-identity pairs (seeded).
    """
    c = config or BAWorldConfig()
    found = images["image"].astype(str).str.fullmatch(r"syn(\d{6})\.png")
    if not found.all():
        bad = images["image"].to_numpy()[~found.to_numpy()][0]
        raise ValueError(f"image {bad!r} is not a BA-test world image name (synNNNNNN.png)")
    pos = images["image"].astype(str).str.slice(3, 9).astype(np.int64).to_numpy()
    ident = images["identity"].to_numpy()
    group = images["group"].astype(str).to_numpy()
    eff = images["effect"].to_numpy()
    rng = np.random.default_rng(seed)
    parts = []
    for g in BFW_GROUPS:
        rows = np.flatnonzero(group == g)
        if rows.size < 2:
            continue
        order = rows[np.argsort(ident[rows], kind="stable")]
        ids = ident[order]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        sizes = np.diff(np.r_[starts, ids.size])
        gen = [order[s + np.array(np.triu_indices(z, 1))] for s, z in zip(starts, sizes, strict=True)
               if z > 1]
        ga, gb = (np.concatenate([p[0] for p in gen]), np.concatenate([p[1] for p in gen])) \
            if gen else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        want = int(round(impostors_per_genuine * ga.size))
        ia, ib = rng.choice(rows, (2, 4 * want + 16))
        ok = ident[ia] != ident[ib]
        lo, hi = np.minimum(ia[ok], ib[ok]), np.maximum(ia[ok], ib[ok])
        _, first = np.unique(lo * len(images) + hi, return_index=True)
        keep = np.sort(first)[:want]
        parts.append((ga, gb, np.ones(ga.size, np.int8)))
        parts.append((lo[keep], hi[keep], np.zeros(keep.size, np.int8)))
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8))
    a, b, label = (np.concatenate([p[k] for p in [empty, *parts]]) for k in range(3))
    g = group[a]
    mu = np.where(label == 1, pd.Series(g).map(c.genuine_mean).to_numpy(),
                  pd.Series(g).map(c.impostor_mean).to_numpy())
    scale = np.where(label == 1, 1.0, c.gamma)
    score = mu + scale * (eff[a] + eff[b]) + c.sigma * _pair_normal(c.seed, pos[a], pos[b])
    out = pd.DataFrame({"a": pos[a], "b": pos[b], "id1": ident[a], "id2": ident[b],
                        "group": pd.Categorical(g, dtype=GROUP_DTYPE), "label": label,
                        "score": score})
    for f in BA_FACTORS:
        out[f + "1"] = images[f].to_numpy()[a]
        out[f + "2"] = images[f].to_numpy()[b]
    out.attrs["source"] = "synthetic"
    return out


# --------------------------------------------------------------------------- rapid test (001)
# Known-truth world for paper 001 (the rapid test; spec section 1.9). Score level, no images.
#
# * Groups g: unit centre c_g in R^dim. Identity mu = normalize(a c_g + sqrt(1 - a^2) n),
#   n a random unit vector (a = group_weight; a = 0.45 gives within-group cosine ~ 0.2).
# * Query q (one per queried person, ``queries_per_group`` per group): n_q ~ U[faces_min,
#   faces_max) faces; a fraction ~ N(p, p_sd), clipped to [0.05, 1], shows the queried
#   person (is_target); the rest are distractors. With probability ``co_occur`` one
#   co-occurring identity (spouse, co-star) takes 1 .. half of the distractor slots; the
#   others are singletons. A distractor is from the query's group with probability
#   ``same_group`` (else a random other group). Distractors are never queried persons.
# * Face appearance x = mu + sigma_img N(0, I/dim), shared by all systems (correlated errors).
# * System s embeds e_s = normalize(x + sigma_s N(0, I/dim)) (sigma_s x the ``bias`` factor
#   of the face identity's group, if any) and reports f_s(cos) with a monotone transform
#   (RAPID_TRANSFORMS: different score scales).
# * Pairs: every within-query pair (face_a < face_b); cross-query pairs: per group, as many
#   (x cross_ratio) distinct random pairs of faces from different queries of that group as
#   the group has within-query pairs (seeded), scored by every system.

#: monotone score transforms of cosine similarity c (name -> function)
RAPID_TRANSFORMS: dict[str, Any] = {
    "cosine": lambda c: c,                                    # [-1, 1]
    "confidence": lambda c: 50.0 + 50.0 * c,                  # 0-100 confidence
    "percent": lambda c: 100.0 * c,                           # scaled cosine
    "logit": lambda c: 8.0 * (c - 0.3),                       # unbounded logit
    "sigmoid": lambda c: 1.0 / (1.0 + np.exp(-8.0 * (c - 0.3))),  # probability-like
}

_RAPID_SYSTEMS: dict[str, dict[str, Any]] = {
    "sys_a": {"noise": 0.50, "transform": "cosine"},
    "sys_b": {"noise": 0.60, "transform": "confidence"},
    "sys_c": {"noise": 0.72, "transform": "logit"},
    "sys_d": {"noise": 0.85, "transform": "sigmoid"},
    "sys_e": {"noise": 1.00, "transform": "percent"},
}
_RAPID_GROUPS: tuple[str, ...] = ("AF", "AM", "BF", "BM")
_R_QUERIES, _R_FACES, _R_CROSS = 101, 102, 103  # stream tags, disjoint from the ones above


@dataclass(frozen=True)
class RapidWorldConfig:
    """Noisy web-search queries and simulated FR systems (see the section comment above).

    ``p``: mean fraction of a query's faces that show the queried person (1 - p is the
    label noise). ``systems``: name -> ``{"noise": sigma_s, "transform": one of
    RAPID_TRANSFORMS}``. ``bias``: system -> group -> factor on sigma_s (bias injection).
    ``cross_ratio``: cross-query pairs per within-query pair, per group (0 = none).
    """

    seed: int = 1001
    p: float = 0.7
    p_sd: float = 0.15
    groups: tuple[str, ...] = _RAPID_GROUPS
    queries_per_group: int = 25
    faces_min: int = 15
    faces_max: int = 60
    dim: int = 64
    group_weight: float = 0.45
    sigma_img: float = 0.6
    co_occur: float = 0.3
    same_group: float = 0.7
    cross_ratio: float = 1.0
    systems: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(_RAPID_SYSTEMS))
    bias: dict[str, dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        w = "rapid_world"
        for key in ("seed", "queries_per_group", "faces_min", "faces_max", "dim"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise ValueError(f"{w}.{key} must be an integer >= 0, got {v!r}")
        if not 2 <= self.faces_min < self.faces_max:
            raise ValueError(f"{w}: need 2 <= faces_min < faces_max, got "
                             f"{self.faces_min}, {self.faces_max}")
        if self.queries_per_group < 1 or self.dim < 2:
            raise ValueError(f"{w}: need queries_per_group >= 1 and dim >= 2")
        for key in ("p", "co_occur", "same_group", "group_weight"):
            v = _number(getattr(self, key), f"{w}.{key}")
            if not 0 <= v <= 1:
                raise ValueError(f"{w}.{key} must be in [0, 1], got {v}")
        for key in ("p_sd", "sigma_img", "cross_ratio"):
            if _number(getattr(self, key), f"{w}.{key}") < 0:
                raise ValueError(f"{w}.{key} must be >= 0, got {getattr(self, key)}")
        groups = tuple(str(g) for g in self.groups)
        if not groups or len(set(groups)) != len(groups):
            raise ValueError(f"{w}.groups must be distinct and non-empty, got {groups}")
        object.__setattr__(self, "groups", groups)
        if not isinstance(self.systems, Mapping) or not self.systems:
            raise ValueError(f"{w}.systems must be a non-empty mapping name -> spec")
        for name, spec in self.systems.items():
            if not isinstance(spec, Mapping) or set(spec) - {"noise", "transform"}:
                raise ValueError(f"{w}.systems.{name}: expected keys noise, transform; got {spec!r}")
            if _number(spec.get("noise", 0.7), f"{w}.systems.{name}.noise") < 0:
                raise ValueError(f"{w}.systems.{name}.noise must be >= 0")
            if spec.get("transform", "cosine") not in RAPID_TRANSFORMS:
                raise ValueError(f"{w}.systems.{name}.transform must be one of "
                                 f"{sorted(RAPID_TRANSFORMS)}, got {spec.get('transform')!r}")
        for name, per in self.bias.items():
            if name not in self.systems:
                raise ValueError(f"{w}.bias: unknown system {name!r}; systems are {list(self.systems)}")
            for g, f in per.items():
                if g not in groups or _number(f, f"{w}.bias.{name}.{g}") <= 0:
                    raise ValueError(f"{w}.bias.{name}: group {g!r} must be one of {groups} "
                                     f"with a factor > 0, got {f!r}")

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> RapidWorldConfig:
        """Build from a ``params.yaml`` section; missing keys take the defaults."""
        d = dict(d)
        if "groups" in d:
            d["groups"] = tuple(d["groups"])
        return config_from_params(cls, d, "rapid_world")

    def truth(self) -> pd.DataFrame:
        """The planted system quality: ``system, noise, transform, rank`` (1 = least noise)."""
        names = list(self.systems)
        noise = np.array([float(self.systems[s].get("noise", 0.7)) for s in names])
        return pd.DataFrame({
            "system": names, "noise": noise,
            "transform": [self.systems[s].get("transform", "cosine") for s in names],
            "rank": pd.Series(noise).rank(method="min").astype(int).to_numpy(),
        })


@dataclass(frozen=True)
class RapidWorld:
    """What :func:`make_rapid_world` returns (unpacks as a 4-tuple, like a NamedTuple).

    ``faces``: ``face, query, group, true_identity, is_target`` (one row per face; ``face``
    a unique int, ``group`` the query's group, ``true_identity`` = the query's index for
    targets). ``scores``: within-query pairs ``query, face_a, face_b, system, score``.
    ``cross_scores``: cross-query same-group pairs, the same columns + ``query_b`` (the
    query of ``face_b``). ``truth``: :meth:`RapidWorldConfig.truth`.
    """

    faces: pd.DataFrame
    scores: pd.DataFrame
    cross_scores: pd.DataFrame
    truth: pd.DataFrame

    def __iter__(self):
        return iter((self.faces, self.scores, self.cross_scores, self.truth))


def _rapid_faces(c: RapidWorldConfig) -> tuple[pd.DataFrame, np.ndarray]:
    """The face table and the shared appearance vectors ``x`` (n_faces x dim)."""
    rng = _rng(c.seed, _R_QUERIES)
    G, D = len(c.groups), c.dim
    centres = _unit(rng.standard_normal((G, D)))
    a = c.group_weight

    def identity(g: np.ndarray) -> np.ndarray:
        n = _unit(rng.standard_normal((g.size, D)))
        return _unit(a * centres[g] + np.sqrt(1 - a * a) * n)

    nq = G * c.queries_per_group
    qgroup = np.repeat(np.arange(G), c.queries_per_group)
    target = identity(qgroup)
    sizes = rng.integers(c.faces_min, c.faces_max, nq)
    frac = np.clip(rng.normal(c.p, c.p_sd, nq), 0.05, 1.0)
    n_target = np.clip(np.round(frac * sizes).astype(int), 1, sizes)
    ident_parts, group_parts, mu_parts = [], [], []
    next_id = nq
    for q in range(nq):
        n_d = int(sizes[q] - n_target[q])
        slots = np.arange(n_d)
        co = 0
        if n_d >= 2 and rng.random() < c.co_occur:
            co = int(rng.integers(1, n_d // 2 + 1))
        n_single = n_d - co
        n_ids = n_single + (1 if co else 0)
        other = (qgroup[q] + rng.integers(1, G, n_ids)) % G if G > 1 else np.full(n_ids, qgroup[q])
        g_ids = np.where(rng.random(n_ids) < c.same_group, qgroup[q], other)
        mus = identity(g_ids)
        # slot -> distractor identity: the first `co` slots are the co-occurring one (index 0)
        who = np.r_[np.zeros(co, int), np.arange(n_single) + (1 if co else 0)][: slots.size]
        ident_parts.append(np.r_[np.full(n_target[q], q), next_id + who])
        group_parts.append(np.r_[np.full(n_target[q], qgroup[q]), g_ids[who]])
        mu_parts.append(np.vstack([np.repeat(target[q : q + 1], n_target[q], 0), mus[who]]))
        next_id += n_ids
    ident = np.concatenate(ident_parts)
    id_group = np.concatenate(group_parts)
    mu = np.vstack(mu_parts)
    x = mu + c.sigma_img * rng.standard_normal(mu.shape) / np.sqrt(D)
    query = np.repeat(np.arange(nq), sizes)
    width = len(str(nq - 1))
    qnames = np.array([f"q{i:0{width}d}" for i in range(nq)])
    faces = pd.DataFrame({
        "face": np.arange(ident.size, dtype=np.int64),
        "query": pd.Categorical(qnames[query], categories=qnames),
        "group": pd.Categorical(np.array(c.groups)[qgroup[query]], categories=list(c.groups)),
        "true_identity": ident.astype(np.int64),
        "is_target": ident == query,
        "identity_group": pd.Categorical(np.array(c.groups)[id_group], categories=list(c.groups)),
    })
    return faces, x


def _rapid_embed(c: RapidWorldConfig, x: np.ndarray, id_group: np.ndarray, name: str) -> np.ndarray:
    rng = _rng(c.seed, _R_FACES, _name_key(name))
    sigma = np.full(x.shape[0], float(c.systems[name].get("noise", 0.7)))
    for g, f in c.bias.get(name, {}).items():
        sigma[id_group == c.groups.index(g)] *= float(f)
    eps = rng.standard_normal(x.shape) / np.sqrt(c.dim)
    return _unit(x + sigma[:, None] * eps).astype(np.float32)


def _within_pairs(query_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (a < b) face pairs within each query (faces are contiguous per query)."""
    starts = np.flatnonzero(np.r_[True, query_codes[1:] != query_codes[:-1]])
    sizes = np.diff(np.r_[starts, query_codes.size])
    a_parts, b_parts = [], []
    for n in np.unique(sizes):
        ia, ib = np.triu_indices(int(n), 1)
        s0 = starts[sizes == n]
        a_parts.append((s0[:, None] + ia).ravel())
        b_parts.append((s0[:, None] + ib).ravel())
    a, b = np.concatenate(a_parts), np.concatenate(b_parts)
    order = np.lexsort((b, a))
    return a[order], b[order]


def _cross_pairs(c: RapidWorldConfig, faces: pd.DataFrame, n_within: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Distinct random cross-query pairs within each group (``n_within`` per group x ratio)."""
    rng = _rng(c.seed, _R_CROSS)
    qc = faces["query"].cat.codes.to_numpy()
    gc = faces["group"].cat.codes.to_numpy()
    a_parts, b_parts = [], []
    for g in range(len(c.groups)):
        rows = np.flatnonzero(gc == g)
        want = int(round(c.cross_ratio * n_within[g]))
        if want == 0 or np.unique(qc[rows]).size < 2:
            continue
        got_a, got_b = np.zeros(0, np.int64), np.zeros(0, np.int64)
        for _ in range(20):
            ia, ib = rng.choice(rows, (2, int(1.3 * want) + 16))
            ok = qc[ia] != qc[ib]
            lo = np.r_[got_a, np.minimum(ia[ok], ib[ok])]
            hi = np.r_[got_b, np.maximum(ia[ok], ib[ok])]
            _, first = np.unique(lo * faces.shape[0] + hi, return_index=True)
            first.sort()
            got_a, got_b = lo[first], hi[first]
            if got_a.size >= want:
                break
        a_parts.append(got_a[:want])
        b_parts.append(got_b[:want])
    if not a_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(a_parts), np.concatenate(b_parts)


def _score_frame(c: RapidWorldConfig, faces: pd.DataFrame, emb: dict[str, np.ndarray],
                 a: np.ndarray, b: np.ndarray, cross: bool) -> pd.DataFrame:
    names = list(c.systems)
    scores = []
    for s in names:
        cos = np.einsum("ij,ij->i", emb[s][a], emb[s][b])
        scores.append(RAPID_TRANSFORMS[c.systems[s].get("transform", "cosine")](cos)
                      .astype(np.float32))
    k = len(names)
    q = faces["query"].to_numpy()
    out = {
        "query": pd.Categorical.from_codes(np.tile(faces["query"].cat.codes.to_numpy()[a], k),
                                           dtype=faces["query"].dtype),
        "face_a": np.tile(a, k).astype(np.int64),
        "face_b": np.tile(b, k).astype(np.int64),
        "system": pd.Categorical.from_codes(np.repeat(np.arange(k), a.size), categories=names),
        "score": np.concatenate(scores) if scores else np.zeros(0, np.float32),
    }
    if cross:
        out["query_b"] = pd.Categorical(np.tile(q[b], k), dtype=faces["query"].dtype)
    return pd.DataFrame(out)


def make_rapid_world(config: RapidWorldConfig | None = None) -> RapidWorld:
    """The rapid-test known-truth world: ``(faces, scores, cross_scores, truth)``.

    Deterministic given ``config`` (byte-identical frames); every frame carries
    ``attrs["source"] = "synthetic"``. Face ids are the row numbers of ``faces``, and the
    faces of one query are contiguous. See :class:`RapidWorld` for the columns.
    """
    c = config or RapidWorldConfig()
    faces, x = _rapid_faces(c)
    id_group = faces["identity_group"].cat.codes.to_numpy()
    emb = {s: _rapid_embed(c, x, id_group, s) for s in c.systems}
    qc = faces["query"].cat.codes.to_numpy()
    a, b = _within_pairs(qc)
    scores = _score_frame(c, faces, emb, a, b, cross=False)
    gc = faces["group"].cat.codes.to_numpy()
    n_within = np.bincount(gc[a], minlength=len(c.groups))
    ca, cb = _cross_pairs(c, faces, n_within)
    cross = _score_frame(c, faces, emb, ca, cb, cross=True)
    truth = c.truth()
    for df in (faces, scores, cross, truth):
        df.attrs["source"] = "synthetic"
    return RapidWorld(faces, scores, cross, truth)


__all__ += ["RAPID_TRANSFORMS", "RapidWorldConfig", "RapidWorld", "make_rapid_world"]
