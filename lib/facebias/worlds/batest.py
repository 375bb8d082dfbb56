"""The known-truth world for the BA-test study (003): synthetic images with nuisance factors
and face masks.

Paper 003: nuisance factors (pose, brightness, quality, face area, facial hair) drive 1:1
accuracy, and their distributions differ across groups, so an unbalanced evaluation mixes
the demographic effect with the factor effects. Here both are planted. Everything is
**synthetic** (``attrs["source"] == "synthetic"``) and deterministic given the config.

Per image: yaw, pitch, roll (deg), brightness (face-skin gray, 0-255), quality (0-1),
facial_hair (bool; per identity, males only) and a **face mask** in the eye-aligned crop
(coordinates are fractions of the crop, y down, eyes at y = 0.4): an ellipse from the top
of the visible face ``mask_top`` to the chin ``mask_chin``, half-width ``mask_width``,
centred at ``mask_cx = 0.5 + mask_yaw_shift sin(yaw)``. Planted morphology (paper 003, Fig. 16 and
its text): females show more face above the eyes (smaller ``mask_top``) and their hair
occludes the forehead differently from image to image (larger per-image SD of
``mask_top``); males have a lower chin and a wider face, and facial hair lengthens the
chin by ``beard_chin`` (the face parser labels a beard as skin). ``face_area`` is the
mask's area fraction. The mask IoU of two images is integrated row by row (``MASK_ROWS``
rows, exact within a row; :func:`mask_iou_rows`).

Image effect on scores::

    e = -b_pose (|yaw| + |pitch|) / 20 - b_bright |brightness - 157| / 40
        + b_area (face_area - 0.35) / 0.1 + b_quality (quality - 0.5) - b_hair facial_hair

A pair (a, b) scores::

    genuine:  mu_gen[g] + u_id + e_a + e_b + b_iou (IoU_ab - 0.9) / 0.1 + sigma eps
    impostor: mu_imp[g] + gamma (e_a + e_b + b_iou (IoU_ab - 0.9) / 0.1) + sigma eps
    (cross-group impostor: ``cross_impostor_mean`` in place of mu_imp[g])

with ``u_id ~ N(0, identity_sd)`` per identity (some people are harder to match) and
eps ~ N(0, 1) a deterministic function of (seed, a, b): a pair keeps its score in any
subset, so balanced and unbalanced evaluations see the same pairs. The planted
demographic effect is mu_gen / mu_imp: ``true_gender_gap`` (mu_gen[rM] - mu_gen[rF]) is
the gap left once face morphology (mask IoU) and facial hair are controlled. The
unbalanced gap mixes it with the morphology effect (female pairs' masks overlap less,
which overstates the gap) and the facial-hair effect (bearded males score lower, which
understates it, most in the races with the most facial hair, B and I).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.config import Section, integer, number, param
from facebias.datasets.bfw import BFW_ETHNICITIES, BFW_GROUPS, GROUP_DTYPE
from facebias.validate import require_columns
from facebias.worlds._common import _FACTORS, _by_group, _per_group, _rng

__all__ = ["BA_FACTORS", "MASK_PARAMS", "MASK_ROWS", "BAWorldConfig", "make_batest_world", "factor_effect",
           "mask_rows", "mask_iou_rows", "face_masks", "batest_pairs", "identity_noise_world"]

BA_FACTORS: tuple[str, ...] = (
    "yaw", "pitch", "roll", "brightness", "quality", "face_area", "facial_hair",
)  # fmt: skip
#: the face-mask parameters of an image (fractions of the eye-aligned crop)
MASK_PARAMS: tuple[str, ...] = ("mask_top", "mask_chin", "mask_width", "mask_cx")
#: rows of the crop over which a mask's area and two masks' IoU are integrated
MASK_ROWS = 64
_EFFECTS = ("pose", "brightness", "face_area", "quality", "facial_hair", "mask_iou")


_NONNEG = number(0)


def _per_bfw_group(value: Any, name: str) -> dict[str, float]:
    """One number per BFW group."""
    return _per_group(value, name, BFW_GROUPS)


def _effects(value: Any, name: str) -> dict[str, float]:
    """Coefficients of known factors only."""
    unknown = set(value) - set(_EFFECTS)
    if unknown:
        raise ValueError(f"{name}: unknown factor(s) {sorted(unknown)}; known: {list(_EFFECTS)}")
    return value


@dataclass(frozen=True)
class BAWorldConfig(Section):
    """Size, planted demographic effects, factor distributions and face morphology of the
    BA-test world (see the module docstring for the score model).

    Per-group settings are dicts over :data:`BFW_GROUPS`. Defaults: a true genuine gap
    M - F of 0.04 in every race; females show more face above the eyes and vary more in
    it; males have a lower, wider face, and facial hair (per identity: A 15 %, B 50 %,
    I 40 %, W 30 % of males) lengthens the chin and lowers scores; Black groups are darker
    on average, Asian groups more often off-pose; brightness and quality differ by race,
    not gender. Face area acts through the pair's mask IoU (``b_area`` = 0 by default).
    Scores are similarities.

    Parameters
    ----------
    seed : int, default 3003
        Seeds the factors, the identities' effects and the pair noise.
    identities_per_group, images_per_identity : int, default 200, 16
        World size (each >= 2).
    sigma : float, default 0.08
        SD of the pair score noise (> 0).
    identity_sd : float, default 0.02
        SD of the per-identity genuine-score effect ``u_id`` (>= 0).
    gamma : float, default 0.3
        Weight of the image and mask effects on impostor scores (genuine: 1).
    genuine_mean, impostor_mean : dict of str to float
        Planted mean genuine / impostor score per group (the demographic effect).
    cross_impostor_mean : float, default 0.05
        Mean score of an impostor pair across two groups.
    effects : dict of str to float
        Coefficients ``b_*`` of ``pose, brightness, face_area, quality, facial_hair,
        mask_iou`` (score units; see the module docstring).
    yaw_sd : dict of str to float
        SD of yaw per group (degrees).
    brightness_mean : dict of str to float
        Mean face-skin gray level per group (0-255).
    quality_mean : dict of str to float
        Mean quality per group (0-1).
    facial_hair_rate : dict of str to float
        Share of identities with facial hair per group, in [0, 1] (females must be 0).
    mask_top, mask_chin, mask_width : dict of str to float
        Mean top of the visible face, chin (y, fractions of the crop, eyes at 0.4) and
        half-width of the face mask per group.
    mask_top_sd : dict of str to float
        Per-image SD of ``mask_top`` per group: hair covers the forehead by a one-sided,
        exponential amount (mean 0 after centring), more in some images than in others.
    beard_chin : float, default 0.06
        How much facial hair lowers the chin (fraction of the crop).
    mask_identity_sd, mask_image_sd : float, default 0.02, 0.01
        SD of the per-identity shape (top, chin, width) and of the per-image chin and
        width.
    mask_yaw_shift : float, default 0.1
        How far the mask's centre moves with yaw: ``mask_cx = 0.5 + mask_yaw_shift sin(yaw)``.

    Raises
    ------
    ValueError
        For sizes below 2, a per-group dict with an unknown, missing or non-numeric group,
        an unknown factor, ``sigma <= 0``, a negative SD, a rate outside [0, 1], facial hair
        in a female group, or a mask that leaves the crop (top < 0, chin > 1, top >= 0.4).

    Examples
    --------
    >>> BAWorldConfig().true_gender_gap()  # genuine-score gap M - F per race
    {'A': 0.04, 'B': 0.04, 'I': 0.04, 'W': 0.04}
    >>> BAWorldConfig.from_params({"sed": 1})
    Traceback (most recent call last):
    ...
    ValueError: batest_world: unknown key(s) ['sed']; known keys are [...]
    """

    section = "batest_world"
    seed: int = 3003
    identities_per_group: int = param(200, integer(2))
    images_per_identity: int = param(16, integer(2))
    sigma: float = param(0.08, number(0, open_low=True))
    identity_sd: float = param(0.02, _NONNEG)
    gamma: float = 0.3
    genuine_mean: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.60, 0.64, 0.60, 0.64, 0.60, 0.64, 0.60, 0.64), check=_per_bfw_group)
    impostor_mean: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.14, 0.12, 0.13, 0.11, 0.13, 0.11, 0.12, 0.10), check=_per_bfw_group)
    cross_impostor_mean: float = 0.05
    effects: dict[str, float] = param(factory=lambda: {
        "pose": 0.03, "brightness": 0.03, "face_area": 0.0, "quality": 0.2, "facial_hair": 0.03,
        "mask_iou": 0.03}, check=_effects)
    yaw_sd: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 16, 16, 10, 10, 10, 10, 10, 10), check=_per_bfw_group)
    brightness_mean: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 162, 162, 118, 118, 138, 138, 168, 168), check=_per_bfw_group)
    quality_mean: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.50, 0.50, 0.45, 0.45, 0.50, 0.50, 0.55, 0.55), check=_per_bfw_group)
    facial_hair_rate: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.0, 0.15, 0.0, 0.50, 0.0, 0.40, 0.0, 0.30), check=_per_bfw_group)
    mask_top: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.10, 0.15, 0.10, 0.15, 0.10, 0.15, 0.10, 0.15), check=_per_bfw_group)
    mask_top_sd: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.035, 0.015, 0.035, 0.015, 0.035, 0.015, 0.035, 0.015), check=_per_bfw_group)
    mask_chin: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.86, 0.90, 0.86, 0.90, 0.86, 0.90, 0.86, 0.90), check=_per_bfw_group)
    mask_width: dict[str, float] = param(factory=lambda: _by_group(
        BFW_GROUPS, 0.30, 0.32, 0.30, 0.32, 0.30, 0.32, 0.30, 0.32), check=_per_bfw_group)
    beard_chin: float = param(0.06, _NONNEG)
    mask_identity_sd: float = param(0.02, _NONNEG)
    mask_image_sd: float = param(0.01, _NONNEG)
    mask_yaw_shift: float = param(0.1, _NONNEG)

    def check(self) -> None:
        for g, rate in self.facial_hair_rate.items():
            if not 0 <= rate <= 1 or (g[1] == "F" and rate != 0):
                raise ValueError(f"batest_world.facial_hair_rate.{g} must be in [0, 1] "
                                 f"(0 for a female group), got {rate}")
        for g in BFW_GROUPS:
            top, chin = self.mask_top[g], self.mask_chin[g] + self.beard_chin
            if not 0 <= top < 0.4 < chin <= 1 or not 0 < self.mask_width[g] <= 0.5 \
                    or self.mask_top_sd[g] < 0:
                raise ValueError(f"batest_world: group {g}'s mask leaves the crop or misses the "
                                 f"eyes (need 0 <= mask_top < 0.4 < mask_chin + beard_chin <= 1, "
                                 f"0 < mask_width <= 0.5, mask_top_sd >= 0)")

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
        gender``, the factors :data:`BA_FACTORS` (angles in degrees; ``face_area`` is the
        mask's area fraction), the mask parameters :data:`MASK_PARAMS`,
        ``identity_effect`` (``u_id``) and ``effect`` (the image's planted effect ``e``,
        score units). ``attrs["source"] = "synthetic"`` and ``attrs["batest_world"]``
        holds the seed and the true gender gap.

    Examples
    --------
    >>> world = make_batest_world(BAWorldConfig(identities_per_group=2, images_per_identity=2))
    >>> world.shape, world.attrs["source"]  # 8 groups x 2 identities x 2 images
    ((32, 18), 'synthetic')
    >>> bool((world["mask_top"] < 0.4).all() and (world["mask_chin"] > 0.4).all())
    True
    """
    c = config or BAWorldConfig()
    n, k = c.identities_per_group, c.images_per_identity
    rng = _rng(c.seed, _FACTORS)
    shape_rng = _rng(c.seed, _FACTORS, 1)
    rows = []
    for gi, g in enumerate(BFW_GROUPS):
        m = n * k
        beard = np.repeat(shape_rng.random(n) < c.facial_hair_rate[g], k)
        ident = shape_rng.normal(0, c.mask_identity_sd, (3, n)).repeat(k, axis=1)
        yaw = rng.normal(0, c.yaw_sd[g], m)
        # hair can only cover the forehead: a one-sided (exponential) occlusion, mean 0, SD mask_top_sd
        top = c.mask_top[g] + ident[0] + c.mask_top_sd[g] * (shape_rng.exponential(1.0, m) - 1.0)
        chin = c.mask_chin[g] + ident[1] + shape_rng.normal(0, c.mask_image_sd, m) + c.beard_chin * beard
        rows.append(pd.DataFrame({
            "identity": gi * n + np.repeat(np.arange(n), k),
            "group": g,
            "yaw": yaw,
            "pitch": rng.normal(0, 8, m),
            "roll": rng.normal(0, 4, m),
            "brightness": np.clip(rng.normal(c.brightness_mean[g], 30, m), 0, 255),
            "quality": np.clip(rng.normal(c.quality_mean[g], 0.15, m), 0, 1),
            "face_area": 0.0,
            "facial_hair": beard,
            "mask_top": np.clip(top, 0.0, 0.39),
            "mask_chin": np.clip(chin, 0.41, 1.0),
            "mask_width": np.clip(c.mask_width[g] + ident[2] + shape_rng.normal(0, c.mask_image_sd, m),
                                  0.05, 0.5),
            "mask_cx": 0.5 + c.mask_yaw_shift * np.sin(np.deg2rad(yaw)),
            "identity_effect": np.repeat(shape_rng.normal(0, c.identity_sd, n), k),
        }))
    df = pd.concat(rows, ignore_index=True)
    df.insert(0, "image", [f"syn{i:06d}.png" for i in range(len(df))])
    df["group"] = pd.Categorical(df["group"], dtype=GROUP_DTYPE)
    df.insert(3, "race", df["group"].astype(str).str[0])
    df.insert(4, "gender", df["group"].astype(str).str[1])
    left, right = mask_rows(df)
    df["face_area"] = (right - left).mean(axis=1)
    df["effect"] = factor_effect(df, c)
    df.attrs["source"] = "synthetic"
    df.attrs["batest_world"] = {"seed": c.seed, "true_gender_gap": c.true_gender_gap()}
    return df


def mask_rows(images: pd.DataFrame, rows: int = MASK_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """Left and right edge of each image's face mask on ``rows`` rows of the crop.

    The mask is the ellipse spanning ``mask_top`` to ``mask_chin`` (y, fractions of the
    crop, down), half-width ``mask_width``, centred at x = ``mask_cx``; row ``k`` is read at
    y = (k + 0.5) / rows and clipped to the crop. A row outside the face has left = right.

    Parameters
    ----------
    images : pandas.DataFrame
        Columns :data:`MASK_PARAMS`.
    rows : int, default MASK_ROWS
        Rows of the crop (>= 1).

    Returns
    -------
    left, right : numpy.ndarray
        (n_images, rows) float64 x-edges in [0, 1], ``right >= left``.

    Examples
    --------
    >>> im = pd.DataFrame({"mask_top": [0.0], "mask_chin": [1.0], "mask_width": [0.5], "mask_cx": [0.5]})
    >>> left, right = mask_rows(im, rows=4)
    >>> (right - left).round(3)  # a disc of radius 0.5: chord 2 sqrt(0.25 - (y - 0.5)^2)
    array([[0.661, 0.968, 0.968, 0.661]])
    """
    require_columns(images, list(MASK_PARAMS), "images")
    top, chin, width, cx = (images[k].to_numpy(np.float64)[:, None] for k in MASK_PARAMS)
    y = (np.arange(rows) + 0.5) / rows
    centre, radius = (top + chin) / 2, (chin - top) / 2
    inside = np.clip(1 - ((y - centre) / radius) ** 2, 0, None)
    half = width * np.sqrt(inside)
    return np.clip(cx - half, 0, 1), np.clip(cx + half, 0, 1)


def mask_iou_rows(left: np.ndarray, right: np.ndarray, a: np.ndarray, b: np.ndarray,
                  chunk: int = 8192) -> np.ndarray:
    """IoU of the masks of images ``a[i]`` and ``b[i]``, from :func:`mask_rows` edges.

    Per row the intersection of two intervals is exact; IoU = sum of intersections / sum
    of unions over the rows (a pixel-free version of |A and B| / |A or B|).

    Parameters
    ----------
    left, right : numpy.ndarray
        (n_images, rows) edges from :func:`mask_rows`.
    a, b : numpy.ndarray
        Integer row positions of the pairs' two images.
    chunk : int
        Pairs per step (bounds the memory).

    Returns
    -------
    numpy.ndarray
        (n_pairs,) IoU in [0, 1]; 0 where both masks are empty.

    Examples
    --------
    >>> left, right = np.array([[0.0], [0.5]]), np.array([[1.0], [1.0]])
    >>> mask_iou_rows(left, right, np.array([0, 0]), np.array([1, 0]))
    array([0.5, 1. ])
    """
    a, b = np.asarray(a), np.asarray(b)
    out = np.empty(a.size)
    area = (right - left).sum(1)
    # gathers into reused buffers of cache size: 2.5x faster than whole-chunk temporaries
    # at the same bits (each row's sums and clips are unchanged; benchmarks/bench_mask_iou.py)
    k = min(int(chunk), max(a.size, 1))
    hi, lo, tmp = (np.empty((k, left.shape[1])) for _ in range(3))
    for s in range(0, a.size, chunk):
        ia, ib = a[s:s + chunk], b[s:s + chunk]
        h, lw, t = hi[:ia.size], lo[:ia.size], tmp[:ia.size]
        np.minimum(np.take(right, ia, axis=0, out=h), np.take(right, ib, axis=0, out=t), out=h)
        np.maximum(np.take(left, ia, axis=0, out=lw), np.take(left, ib, axis=0, out=t), out=lw)
        inter = np.clip(np.subtract(h, lw, out=h), 0, None, out=h).sum(1)
        union = area[ia] + area[ib] - inter
        out[s:s + chunk] = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return out


def face_masks(images: pd.DataFrame, size: int = 64) -> np.ndarray:
    """The images' face masks rasterised on a ``size`` x ``size`` crop (for heatmaps).

    A pixel is face iff its centre lies inside the row's interval (:func:`mask_rows` with
    ``rows = size``).

    Parameters
    ----------
    images : pandas.DataFrame
        Columns :data:`MASK_PARAMS`.
    size : int, default 64
        Pixels per side (>= 1).

    Returns
    -------
    numpy.ndarray
        (n_images, size, size) bool.

    Examples
    --------
    >>> im = pd.DataFrame({"mask_top": [0.0], "mask_chin": [1.0], "mask_width": [0.5], "mask_cx": [0.5]})
    >>> face_masks(im, size=4)[0].astype(int)
    array([[0, 1, 1, 0],
           [1, 1, 1, 1],
           [1, 1, 1, 1],
           [0, 1, 1, 0]])
    """
    left, right = mask_rows(images, size)
    x = (np.arange(size) + 0.5) / size
    return (x >= left[:, :, None]) & (x < right[:, :, None])


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


_MAX_PAIRS = 60_000_000


def _all_pairs(rows: np.ndarray, other: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of ``rows``, or every (i, j) of ``rows`` x ``other``."""
    if other is None:
        i, j = np.triu_indices(rows.size, 1)
        return rows[i], rows[j]
    return np.repeat(rows, other.size), np.tile(other, rows.size)


def batest_pairs(images: pd.DataFrame, config: BAWorldConfig | None = None,
                 impostors_per_genuine: float = 2.0, seed: int = 0, *, impostors: str = "sampled",
                 cross_group: bool = False, factors: bool = True) -> pd.DataFrame:
    """Genuine (every same-identity pair) and impostor pairs of ``images``, scored by the
    planted model (a pair keeps its score in any subset).

    Parameters
    ----------
    images : pandas.DataFrame
        Any subset of a :func:`make_batest_world` table.
    config : BAWorldConfig, optional
        The world's config (planted means, ``gamma``, ``sigma``, seed of the pair noise);
        default ``BAWorldConfig()``.
    impostors_per_genuine : float, default 2.0
        ``impostors="sampled"``: per group, distinct different-identity pairs drawn per
        genuine pair.
    seed : int, default 0
        Seeds the impostor sampling.
    impostors : {"sampled", "all"}, default "sampled"
        ``"all"``: every different-identity pair within each group (papers 003's Tables 3
        and 4 use all impostors).
    cross_group : bool, default False
        With ``impostors="all"``, also every pair across two groups (``group`` is the first
        image's, ``group2`` the second's).
    factors : bool, default True
        Add both images' factors (suffixes ``1``/``2``); off for large all-pairs sets.

    Returns
    -------
    pandas.DataFrame
        ``a, b`` (row positions in the world table's ``image`` order, taken from the
        ``image`` names), ``id1, id2, group`` (+ ``group2`` with ``cross_group``), ``label``
        (1 = genuine), ``score`` (a similarity), ``mask_iou`` and, with ``factors``, both
        images' :data:`BA_FACTORS`.

    Raises
    ------
    ValueError
        If an image name is not a BA-test world name (``synNNNNNN.png``), for an unknown
        ``impostors``, ``cross_group`` without ``impostors="all"``, or more than 60 million
        pairs.

    Examples
    --------
    >>> config = BAWorldConfig(identities_per_group=2, images_per_identity=2)
    >>> pairs = batest_pairs(make_batest_world(config), config)
    >>> pairs["label"].value_counts().sort_index().to_dict()  # 16 genuine, 2 x 16 impostor
    {0: 32, 1: 16}
    >>> every = batest_pairs(make_batest_world(config), config, impostors="all", cross_group=True)
    >>> len(every) == 32 * 31 // 2  # every pair of the 32 images
    True
    """
    c = config or BAWorldConfig()
    if impostors not in ("sampled", "all"):
        raise ValueError(f"impostors must be 'sampled' or 'all', got {impostors!r}")
    if cross_group and impostors != "all":
        raise ValueError("cross_group needs impostors='all'")
    found = images["image"].astype(str).str.fullmatch(r"syn(\d{6})\.png")
    if not found.all():
        bad = images["image"].to_numpy()[~found.to_numpy()][0]
        raise ValueError(f"image {bad!r} is not a BA-test world image name (synNNNNNN.png)")
    pos = images["image"].astype(str).str.slice(3, 9).astype(np.int64).to_numpy()
    ident = images["identity"].to_numpy()
    group = images["group"].astype(str).to_numpy()
    rows_of = {g: np.flatnonzero(group == g) for g in BFW_GROUPS}
    n_all = sum(r.size * (r.size - 1) // 2 for r in rows_of.values())
    if cross_group:
        n_all = len(images) * (len(images) - 1) // 2
    if impostors == "all" and n_all > _MAX_PAIRS:
        raise ValueError(f"{n_all:,} pairs is more than {_MAX_PAIRS:,}: take a subset of the images")
    rng = np.random.default_rng(seed)
    parts = []
    for gi, g in enumerate(BFW_GROUPS):
        rows = rows_of[g]
        if impostors == "all":
            ia, ib = _all_pairs(rows)
            same = ident[ia] == ident[ib]
            parts.append((ia[same], ib[same], np.ones(int(same.sum()), np.int8)))
            parts.append((ia[~same], ib[~same], np.zeros(int((~same).sum()), np.int8)))
            if cross_group:
                for h in BFW_GROUPS[gi + 1:]:
                    xa, xb = _all_pairs(rows, rows_of[h])
                    parts.append((xa, xb, np.zeros(xa.size, np.int8)))
            continue
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
    ga, gb = group[a], group[b]
    iou = mask_iou_rows(*mask_rows(images), a, b)
    eff = images["effect"].to_numpy() + 0.0
    image_terms = eff[a] + eff[b] + c.effects.get("mask_iou", 0) * (iou - 0.9) / 0.1
    gen_mu = pd.Series(ga).map(c.genuine_mean).to_numpy() \
        + images["identity_effect"].to_numpy()[a]
    imp_mu = np.where(ga == gb, pd.Series(ga).map(c.impostor_mean).to_numpy(), c.cross_impostor_mean)
    is_gen = label == 1
    score = np.where(is_gen, gen_mu + image_terms, imp_mu + c.gamma * image_terms) \
        + c.sigma * _pair_normal(c.seed, pos[a], pos[b])
    out = pd.DataFrame({"a": pos[a], "b": pos[b], "id1": ident[a], "id2": ident[b],
                        "group": pd.Categorical(ga, dtype=GROUP_DTYPE)})
    if cross_group:
        out["group2"] = pd.Categorical(gb, dtype=GROUP_DTYPE)
    out["label"] = label
    out["score"] = score
    out["mask_iou"] = iou
    if factors:
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
