"""The known-truth world for the BA-test study (003): synthetic images with nuisance factors.

Paper 003: nuisance factors (pose, brightness, quality, face area, facial hair) drive 1:1
accuracy, and their distributions differ across groups, so an unbalanced evaluation mixes
the demographic effect with the factor effects. Here both are planted. Everything is
**synthetic** (``attrs["source"] == "synthetic"``) and deterministic given the config.

Per image: yaw, pitch, roll (deg), brightness (face-skin gray, 0-255), quality (0-1),
face_area (fraction of the aligned crop), facial_hair (bool, males only), drawn from
group-specific distributions. Its factor effect on scores is::

    e = -b_pose (|yaw| + |pitch|) / 20 - b_bright |brightness - 157| / 40
        + b_area (face_area - 0.35) / 0.1 + b_quality (quality - 0.5) - b_hair facial_hair

A pair (a, b) scores::

    genuine:  mu_gen[g] + e_a + e_b + sigma eps
    impostor: mu_imp[g] + gamma (e_a + e_b) + sigma eps

with eps ~ N(0, 1) a deterministic function of (seed, a, b): a pair keeps its score in
any subset, so balanced and unbalanced evaluations see the same pairs. The planted
demographic effect is mu_gen / mu_imp; with factor distributions equal across groups the
expected genuine-score gap M - F of race r is exactly mu_gen[rM] - mu_gen[rF].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from facebias.datasets.bfw import BFW_ETHNICITIES, BFW_GROUPS, GROUP_DTYPE
from facebias.io import config_from_params
from facebias.worlds._common import _FACTORS, _by_group, _per_group, _rng

__all__ = ["BA_FACTORS", "BAWorldConfig", "make_batest_world", "factor_effect", "batest_pairs",
           "identity_noise_world"]

BA_FACTORS: tuple[str, ...] = (
    "yaw", "pitch", "roll", "brightness", "quality", "face_area", "facial_hair",
)  # fmt: skip


@dataclass(frozen=True)
class BAWorldConfig:
    """Size, planted demographic effects and factor distributions of the BA-test world.

    Per-group settings are dicts over :data:`BFW_GROUPS`. Defaults: a true genuine gap
    M - F of 0.04 in every race; females have smaller face area (hair occludes more, as
    paper 003 reports), males have facial hair with probability 0.3; Black groups are
    darker on average, Asian groups more often off-pose. Scores are similarities.

    Parameters
    ----------
    seed : int, default 3003
        Seeds the factors and the pair noise.
    identities_per_group, images_per_identity : int, default 100, 16
        World size (each >= 2).
    sigma : float, default 0.05
        SD of the pair score noise (> 0).
    gamma : float, default 0.3
        Weight of the factor effects on impostor scores (genuine: 1).
    genuine_mean, impostor_mean : dict of str to float
        Planted mean genuine / impostor score per group (the demographic effect).
    effects : dict of str to float
        Factor coefficients ``b_*`` of ``pose, brightness, face_area, quality,
        facial_hair`` (score units; see the module docstring).
    yaw_sd : dict of str to float
        SD of yaw per group (degrees).
    brightness_mean : dict of str to float
        Mean face-skin gray level per group (0-255).
    face_area_mean : dict of str to float
        Mean face area per group (fraction of the aligned crop).
    quality_mean : dict of str to float
        Mean quality per group (0-1).
    facial_hair_rate : float, default 0.3
        Probability of facial hair for males, in [0, 1].

    Raises
    ------
    ValueError
        For sizes below 2, a per-group dict with an unknown, missing or non-numeric group,
        an unknown factor, ``sigma <= 0`` or a rate outside [0, 1].

    Examples
    --------
    >>> BAWorldConfig().true_gender_gap()  # genuine-score gap M - F per race
    {'A': 0.04, 'B': 0.04, 'I': 0.04, 'W': 0.04}
    """

    seed: int = 3003
    identities_per_group: int = 100
    images_per_identity: int = 16
    sigma: float = 0.05
    gamma: float = 0.3
    genuine_mean: dict[str, float] = field(default_factory=lambda: _by_group(
        BFW_GROUPS, 0.60, 0.64, 0.60, 0.64, 0.60, 0.64, 0.60, 0.64))
    impostor_mean: dict[str, float] = field(default_factory=lambda: _by_group(
        BFW_GROUPS, 0.14, 0.12, 0.13, 0.11, 0.13, 0.11, 0.12, 0.10))
    effects: dict[str, float] = field(default_factory=lambda: {
        "pose": 0.03, "brightness": 0.03, "face_area": 0.03, "quality": 0.04, "facial_hair": 0.03})
    yaw_sd: dict[str, float] = field(default_factory=lambda: _by_group(
        BFW_GROUPS, 16, 16, 10, 10, 10, 10, 10, 10))
    brightness_mean: dict[str, float] = field(default_factory=lambda: _by_group(
        BFW_GROUPS, 165, 160, 120, 115, 140, 135, 170, 165))
    face_area_mean: dict[str, float] = field(default_factory=lambda: _by_group(
        BFW_GROUPS, 0.30, 0.38, 0.30, 0.38, 0.30, 0.38, 0.30, 0.38))
    quality_mean: dict[str, float] = field(default_factory=lambda: _by_group(
        BFW_GROUPS, 0.50, 0.55, 0.45, 0.50, 0.50, 0.55, 0.55, 0.60))
    facial_hair_rate: float = 0.3

    def __post_init__(self) -> None:
        for key in ("identities_per_group", "images_per_identity"):
            if int(getattr(self, key)) < 2:
                raise ValueError(f"batest_world.{key} must be >= 2, got {getattr(self, key)}")
        for key in ("genuine_mean", "impostor_mean", "yaw_sd", "brightness_mean",
                    "face_area_mean", "quality_mean"):
            values = _per_group(getattr(self, key), f"batest_world.{key}", BFW_GROUPS)
            object.__setattr__(self, key, values)
        unknown = set(self.effects) - {"pose", "brightness", "face_area", "quality", "facial_hair"}
        if unknown:
            raise ValueError(f"batest_world.effects: unknown factor(s) {sorted(unknown)}")
        if not self.sigma > 0 or not 0 <= self.facial_hair_rate <= 1:
            raise ValueError("batest_world: need sigma > 0 and 0 <= facial_hair_rate <= 1")

    @classmethod
    def from_params(cls, d: Mapping[str, Any]) -> BAWorldConfig:
        """Build from a ``params.yaml`` ``batest_world`` section; missing keys take the defaults.

        Parameters
        ----------
        d : mapping
            The section's keys and values (field names of this class).

        Returns
        -------
        BAWorldConfig
            The validated config.

        Raises
        ------
        ValueError
            For an unknown key or an invalid value.

        Examples
        --------
        >>> BAWorldConfig.from_params({"seed": 1}).seed
        1
        >>> BAWorldConfig.from_params({"sed": 1})
        Traceback (most recent call last):
        ...
        ValueError: batest_world: unknown key(s) ['sed']; known keys are [...]
        """
        return config_from_params(cls, dict(d), "batest_world")

    def true_gender_gap(self) -> dict[str, float]:
        """Planted genuine-score gap M - F per race letter (what balancing should recover).

        Returns
        -------
        dict of str to float
            Race letter (A, B, I, W) -> ``genuine_mean[race + "M"] - genuine_mean[race + "F"]``
            (score units), rounded to 12 decimals.
        """
        return {e: round(self.genuine_mean[e + "M"] - self.genuine_mean[e + "F"], 12)
                for e in BFW_ETHNICITIES}


def make_batest_world(config: BAWorldConfig | None = None) -> pd.DataFrame:
    """The synthetic images of the BA-test world, deterministic given the config.

    Parameters
    ----------
    config : BAWorldConfig, optional
        Default ``BAWorldConfig()``.

    Returns
    -------
    pandas.DataFrame
        One row per image: ``image`` (``synNNNNNN.png``), ``identity, group, race,
        gender``, the factors :data:`BA_FACTORS` (angles in degrees) and ``effect`` (its
        planted factor effect ``e``, score units). ``attrs["source"] = "synthetic"`` and
        ``attrs["batest_world"]`` holds the seed and the true gender gap.

    Examples
    --------
    >>> world = make_batest_world(BAWorldConfig(identities_per_group=2, images_per_identity=2))
    >>> world.shape, world.attrs["source"]  # 8 groups x 2 identities x 2 images
    ((32, 13), 'synthetic')
    """
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
    """The planted factor effect ``e`` of each image (score units; see the module docstring).

    Parameters
    ----------
    images : pandas.DataFrame
        Columns ``yaw, pitch`` (degrees), ``brightness`` (0-255), ``face_area``,
        ``quality``, ``facial_hair``.
    config : BAWorldConfig
        Its ``effects`` are the coefficients (a missing factor counts 0).

    Returns
    -------
    numpy.ndarray
        (n_images,) float64 effects; 0 for a frontal, average image without facial hair.

    Examples
    --------
    >>> images = pd.DataFrame({"yaw": [0.0, 20.0], "pitch": 0.0, "brightness": 157.0,
    ...                        "face_area": 0.35, "quality": 0.5, "facial_hair": [False, True]})
    >>> factor_effect(images, BAWorldConfig())  # 20 degrees of yaw -0.03, facial hair -0.03
    array([ 0.  , -0.06])
    """
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
    """Genuine (every same-identity pair) and within-group impostor pairs of ``images``,
    scored by the planted model (a pair keeps its score in any subset).

    Parameters
    ----------
    images : pandas.DataFrame
        Any subset of a :func:`make_batest_world` table.
    config : BAWorldConfig, optional
        The world's config (planted means, ``gamma``, ``sigma``, seed of the pair noise);
        default ``BAWorldConfig()``.
    impostors_per_genuine : float, default 2.0
        Per group, impostor pairs drawn per genuine pair (distinct, different-identity).
    seed : int, default 0
        Seeds the impostor sampling.

    Returns
    -------
    pandas.DataFrame
        ``a, b`` (row positions in the world table's ``image`` order, taken from the
        ``image`` names), ``id1, id2, group, label`` (1 = genuine), ``score`` (a
        similarity) and both images' factors with suffixes ``1``/``2``.

    Raises
    ------
    ValueError
        If an image name is not a BA-test world name (``synNNNNNN.png``).

    Examples
    --------
    >>> config = BAWorldConfig(identities_per_group=2, images_per_identity=2)
    >>> pairs = batest_pairs(make_batest_world(config), config)
    >>> pairs["label"].value_counts().sort_index().to_dict()  # 16 genuine, 2 x 16 impostor
    {0: 32, 1: 16}
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


def identity_noise_world(n_identities: int = 50, images_per_identity: int = 20, noise_rate: float = 0.1,
                         dim: int = 128, spread: float = 0.8, seed: int = 3003,
                         ) -> tuple[np.ndarray, pd.DataFrame]:
    """Embeddings with planted identity-label noise (paper 003's intra-class noise, Fig. 6a).

    Each identity has a random unit direction ``mu`` in ``dim`` dimensions; an image of it is
    ``normalise(mu + spread * z)``, ``z ~ N(0, I / dim)``, so two images of one identity have
    cosine about ``1 / (1 + spread**2)`` and of different identities about 0. A fraction
    ``noise_rate`` of each identity's folder is filed under it but drawn from another,
    random identity (the mislabelled images a cleaner should drop).

    Parameters
    ----------
    n_identities, images_per_identity : int, default 50, 20
        Folders and images per folder (>= 2 each).
    noise_rate : float, default 0.1
        Fraction of each folder that is mislabelled, in [0, 0.5) (rounded down per folder).
    dim : int, default 128
        Embedding dimension (>= 2).
    spread : float, default 0.8
        Within-identity spread (> 0).
    seed : int, default 3003
        Seeds everything.

    Returns
    -------
    embeddings : numpy.ndarray
        (n_identities * images_per_identity, dim) unit rows.
    images : pandas.DataFrame
        ``identity`` (the folder), ``true_identity`` and ``mislabelled`` (bool), one row per
        embedding; ``attrs["source"] = "synthetic"``.

    Raises
    ------
    ValueError
        For a size below its minimum, ``noise_rate`` outside [0, 0.5) or ``spread <= 0``.

    Examples
    --------
    >>> emb, imgs = identity_noise_world(4, 10, noise_rate=0.2, dim=16)
    >>> emb.shape, int(imgs["mislabelled"].sum())
    ((40, 16), 8)
    """
    if min(n_identities, images_per_identity, dim) < 2:
        raise ValueError("n_identities, images_per_identity and dim must be >= 2")
    if not 0 <= noise_rate < 0.5 or spread <= 0:
        raise ValueError(f"need 0 <= noise_rate < 0.5 and spread > 0, got {noise_rate}, {spread}")
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(n_identities, dim))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    folder = np.repeat(np.arange(n_identities), images_per_identity)
    n_bad = int(np.floor(noise_rate * images_per_identity))
    bad = np.tile(np.arange(images_per_identity) < n_bad, n_identities)
    other = (folder + rng.integers(1, n_identities, folder.size)) % n_identities
    true = np.where(bad, other, folder)
    x = mu[true] + spread * rng.normal(size=(folder.size, dim)) / np.sqrt(dim)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    images = pd.DataFrame({"identity": folder, "true_identity": true, "mislabelled": bad})
    images.attrs["source"] = "synthetic"
    return x, images
