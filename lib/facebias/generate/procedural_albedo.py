"""The procedural face's layout and albedo (the offline CPU generator of papers 004 and 000):
face-layout constants in model units shared by the relief and the albedo, the colour
palette, and the albedo layers painted in order at each visible pixel's surface
coordinates (skin, stubble and beard, lips, mouth, nostrils, eyes, eyebrows, hair).

Part of :mod:`facebias.generate.procedural` (its module docstring describes the model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# ---- face layout (model units: the head is ~2 tall, y up, 0 near the nose bridge; the
# surface coordinate u runs across the face). Shared by the relief and the albedo.
_U_PER_RAD = 0.78  # surface coordinate u (model units) per radian of azimuth theta
_EYE_U = 0.30  # eye centre |u|, times the eye-spacing parameter ``es``
_EYE_Y = 0.12  # eye centre height, plus the eye-height parameter ``eh``
_NOSE_TIP_Y = -0.27  # nose tip height, times the nose-length parameter ``nl``
_MOUTH_Y = -0.56  # mouth height, times the face-length parameter ``fl`` (plus ``ym``)
_MOUTH_HALF_WIDTH = 0.19  # half-width of the mouth, times the mouth-width parameter ``mw``
_SMILE_LIFT = 0.10  # lift of the mouth at (u / half-width)^2 = 1, times the smile truth


def _rgb(r: float, g: float, b: float) -> np.ndarray:
    """A read-only RGB triple (reflectance in [0, 1], or a relative change)."""
    a = np.array([r, g, b])
    a.flags.writeable = False
    return a


# ---- albedo palette: RGB reflectances in [0, 1] (display space) unless said otherwise
_SKIN_LIGHT = _rgb(0.97, 0.80, 0.69)  # skin tone truth 0
_SKIN_MID = _rgb(0.80, 0.58, 0.42)  # skin tone truth 0.5
_SKIN_DARK = _rgb(0.36, 0.23, 0.16)  # skin tone truth 1
_CHEEK_FLUSH = _rgb(0.3, -0.5, -0.4)  # relative change of flushed cheeks (redder)
_STUBBLE_TINT = _rgb(0.45, 0.45, 0.5)  # stubble shadow: skin times this
_LIP_NATURAL = _rgb(0.86, 0.58, 0.58)  # natural lips: skin times this ...
_LIP_DARKEN = _rgb(0.3, 0.3, 0.3)  # ... minus this per unit of the ``lipdark`` parameter
_LIP_FEMALE = _rgb(0.04, -0.08, -0.04)  # ... plus this times (1 - gender truth)
_LIPSTICK = _rgb(0.70, 0.16, 0.24)
_TEETH = _rgb(0.93, 0.9, 0.85)
_SCLERA = _rgb(0.93, 0.90, 0.88)
_IRIS_BROWN = _rgb(0.30, 0.17, 0.08)
_IRIS_BLUE = _rgb(0.28, 0.45, 0.62)  # light irises with iris_hue > 0
_IRIS_GREEN = _rgb(0.35, 0.45, 0.28)  # light irises with iris_hue <= 0
_PUPIL = 0.03  # grey level of the pupil
_EYE_SHADOW_TINT = _rgb(0.45, 0.30, 0.45)  # eye shadow (makeup): colour times this
_HAIR_BLONDE = _rgb(0.72, 0.56, 0.32)  # hair_dark 0
_HAIR_BROWN = _rgb(0.30, 0.19, 0.11)  # hair_dark 0.5
_HAIR_BLACK = _rgb(0.07, 0.06, 0.06)  # hair_dark 1
_HAIR_RED = _rgb(0.55, 0.22, 0.08)
_HAIR_GREY = _rgb(0.72, 0.72, 0.72)


def _smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _gauss(du, dv, su, sv):
    return np.exp(-0.5 * ((du / su) ** 2 + (dv / sv) ** 2))


# Each step paints one layer; positions and widths not named above are shape parameters
# in model units (see the face layout constants).
@dataclass(frozen=True)
class _Layout:
    """Per-pixel quantities several albedo layers share: ``au = |u|``, eye centre
    ``(ex, ey)``, mouth height ``ym``, half-width ``mw``, lip thickness ``lt``, smile lift
    ``lift`` and lip mask profile ``lipw``, and a hair-strand ``noise`` in [0, 1]."""

    au: np.ndarray
    ex: np.ndarray
    ey: np.ndarray
    ym: np.ndarray
    mw: np.ndarray
    lt: np.ndarray
    lift: np.ndarray
    lipw: np.ndarray
    noise: np.ndarray

    @classmethod
    def at(cls, q: dict[str, np.ndarray], u: np.ndarray, v: np.ndarray) -> _Layout:
        mw = _MOUTH_HALF_WIDTH * q["mw"]
        return cls(
            au=np.abs(u), ex=_EYE_U * q["es"], ey=_EYE_Y + q["eh"], ym=_MOUTH_Y * q["fl"] + q["ym"],
            mw=mw, lt=q["lt"], lift=_SMILE_LIFT * q["S"] * (u / mw) ** 2,
            lipw=np.exp(-0.5 * (u / mw) ** 6),
            noise=0.5 + 0.5 * np.sin(u * 140 + 3 * np.sin(v * 90)) * np.sin(v * 120 + 2 * np.sin(u * 70)),
        )


def _skin(q: dict[str, np.ndarray], u: np.ndarray, v: np.ndarray, f: _Layout) -> np.ndarray:
    """Skin colour: tone (light-mid-dark ramp) with redness/yellowness, flushed cheeks,
    the identity's blotchy texture and age lines (forehead, crow's feet, nasolabial)."""
    au, S = f.au, q["S"]
    t = q["tone"][:, None]
    skin = np.where(t < 0.5, _SKIN_LIGHT + (_SKIN_MID - _SKIN_LIGHT) * (t / 0.5),
                    _SKIN_MID + (_SKIN_DARK - _SKIN_MID) * ((t - 0.5) / 0.5))
    skin = skin * (1 + np.stack([q["red"] + 0.3 * q["yel"], 0.4 * q["yel"] - 0.2 * q["red"], -q["yel"] - 0.5 * q["red"]], -1))
    # redder cheeks and nose, slightly darker around the jaw
    cheek = _gauss(au - 0.36, v + 0.12, 0.14, 0.12)
    skin = skin * (1 + (0.06 + 0.2 * q["M"])[:, None] * cheek[:, None] * _CHEEK_FLUSH)
    # identity skin texture: blotchy mid-frequency variation with identity phases
    ph = q["tex_ph"]
    tex = (np.sin(17 * u + ph[:, 0]) * np.sin(13 * v + ph[:, 1]) + np.sin(29 * u + 11 * v + ph[:, 2])
           + np.sin(23 * v - 7 * u + ph[:, 3]) * np.sin(37 * u + ph[:, 4]))
    skin = skin * (1 + q["tex_amp"] * tex)[:, None]
    # age: wrinkles and blotches
    wr = q["wrinkle"]
    fore = wr * np.clip(np.sin((v - 0.45) * 70) - 0.4, 0, None) * _smoothstep(0.38, 0.45, v) * (1 - _smoothstep(0.65, 0.72, v)) * np.exp(-0.5 * (u / 0.35) ** 2)
    ex, ey = f.ex, f.ey
    crow = wr * np.clip(np.sin(np.arctan2(v - ey, au - ex) * 9) - 0.3, 0, None) * _gauss(au - ex - 0.16, v - ey, 0.05, 0.06)
    nl_line = (0.4 * wr + 0.25 * S) * np.exp(-0.5 * ((au - (0.15 + 0.12 * np.clip((-0.2 - v) / 0.35, 0, 1))) / 0.012) ** 2) * _smoothstep(-0.62, -0.5, v) * (1 - _smoothstep(-0.25, -0.18, v))
    return skin * (1 - 0.25 * fore - 0.25 * crow - 0.25 * nl_line)[:, None]


def _stubble_and_beard(q: dict[str, np.ndarray], u: np.ndarray, v: np.ndarray, f: _Layout,
                       skin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Skin darkened by stubble (grows with the gender truth) and the beard's opacity
    (facial-hair truth: goatee and moustache first, then the full beard zone)."""
    au, ym = f.au, f.ym
    jawline = 0.62 * q["jaw"] * q["fw"]
    ztop = ym + 0.11 + 0.5 * np.clip(au - 0.25, 0, None) ** 1.5
    zone = (1 - _smoothstep(ztop - 0.08, ztop + 0.02, v)) * (1 - _smoothstep(jawline - 0.12, jawline + 0.02, au))
    mustache = _gauss(u, v - (ym + 0.075), 0.15, 0.03)
    goatee = _gauss(u, v - (ym - 0.16), 0.16, 0.12)
    beard_zone = np.clip(zone + mustache, 0, 1)
    stub = (0.7 * _smoothstep(0.35, 0.9, q["G"])) * beard_zone
    sa = 0.5 * stub * (0.75 + 0.25 * f.noise)
    skin = skin * (1 - sa)[:, None] + sa[:, None] * _STUBBLE_TINT * skin
    Fb = _smoothstep(0.55, 0.92, q["F"])
    bz = np.clip(goatee + mustache, 0, 1) * (1 - Fb) + beard_zone * Fb
    beard = np.clip(q["beard_k"] * Fb * bz * (0.6 + 0.4 * f.noise), 0, 0.9)
    return skin, beard


def _lips(q: dict[str, np.ndarray], v: np.ndarray, f: _Layout,
          skin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Skin with the lips painted (natural colour blended to lipstick by the makeup truth),
    and the lip mask in [0, 1]."""
    lt, dy = f.lt, v - f.ym - f.lift
    up = f.lipw * _smoothstep(-0.012, 0.0, dy) * (1 - _smoothstep(0.05 * lt, 0.065 * lt, dy))
    lo = f.lipw * _smoothstep(-0.075 * lt, -0.055 * lt, dy) * (1 - _smoothstep(-0.012, 0.0, dy))
    lipm = np.clip(up + lo, 0, 1)
    lip_nat = skin * (_LIP_NATURAL - q["lipdark"][:, None] * _LIP_DARKEN + (1 - q["G"])[:, None] * _LIP_FEMALE)
    mk = (0.9 * _smoothstep(0.3, 0.85, q["M"]))[:, None]
    lipc = lip_nat * (1 - mk) + _LIPSTICK * mk
    return skin * (1 - lipm[:, None]) + lipc * lipm[:, None], lipm


def _mouth_opening(q: dict[str, np.ndarray], v: np.ndarray, f: _Layout, col: np.ndarray) -> np.ndarray:
    """The dark line between the lips and, for a smile, the teeth."""
    dy = v - f.ym - f.lift
    open_h = 0.032 * np.clip((q["S"] - 0.35) / 0.5, 0, 1)
    teeth = f.lipw * _smoothstep(-open_h - 0.002, -open_h + 0.004, dy) * (1 - _smoothstep(-0.004, 0.002, dy)) * (open_h > 0.002)
    line = f.lipw * np.exp(-0.5 * ((dy + 0.5 * open_h) / 0.006) ** 2)
    col = col * (1 - 0.55 * line)[:, None]
    return col * (1 - teeth[:, None]) + teeth[:, None] * _TEETH


def _nostrils(q: dict[str, np.ndarray], v: np.ndarray, f: _Layout, col: np.ndarray) -> np.ndarray:
    """Two dark nostrils beside the nose tip."""
    yt = _NOSE_TIP_Y * q["nl"]
    nos = _gauss(f.au - 0.055 * q["nw"], v - yt + 0.07, 0.022 * q["nw"], 0.014)
    return col * (1 - 0.65 * nos)[:, None]


def _eyes(q: dict[str, np.ndarray], v: np.ndarray, f: _Layout, col: np.ndarray) -> np.ndarray:
    """Eye shadow (makeup), the eye opening (sclera, iris, pupil), lid line (lashes) and
    crease (absent for a monolid)."""
    S, M = q["S"], q["M"]
    ex, ey = f.ex, f.ey
    ew = 0.118 * q["ew"]
    eo = 0.042 * q["eo"] * (1 - 0.2 * S)
    du = f.au - ex
    tilt = q["etilt"]
    dv = v - ey - tilt * du
    xn = du / ew
    shape = np.clip(1 - xn**2, 0, None)
    upper = eo * shape ** 0.7 * (1 + 0.25 * xn)
    lower = -0.75 * eo * shape ** 0.8
    inside = _smoothstep(-0.004, 0.004, upper - dv) * _smoothstep(-0.004, 0.004, dv - lower)
    ir = 0.48 * ew
    rr = np.sqrt(du**2 + (v - ey - 0.1 * eo) ** 2)
    irism = 1 - _smoothstep(ir - 0.006, ir + 0.003, rr)
    pup = 1 - _smoothstep(0.35 * ir, 0.42 * ir, rr)
    il = q["iris_light"][:, None]
    hue = q["iris_hue"][:, None]
    light_iris = np.where(hue > 0, 1, 0) * _IRIS_BLUE + np.where(hue > 0, 0, 1) * _IRIS_GREEN
    iris = _IRIS_BROWN * (1 - il) + light_iris * il
    iris = iris * (0.75 + 0.35 * (rr / ir))[:, None]
    sclera = _SCLERA * (1 - 0.2 * _smoothstep(0.6, 1.0, np.abs(xn)))[:, None]
    eyec = sclera * (1 - irism[:, None]) + iris * irism[:, None]
    eyec = eyec * (1 - pup[:, None]) + _PUPIL * pup[:, None]
    lash = q["lash"]
    lid_line = np.exp(-0.5 * ((dv - upper) / (0.006 + 0.006 * lash)) ** 2) * (np.abs(xn) < 1.15)
    crease = (1 - q["pa"]) * np.exp(-0.5 * ((dv - upper - 0.025) / 0.006) ** 2) * (np.abs(xn) < 1.0)
    shadow = _smoothstep(0.3, 0.85, M) * _gauss(du, dv - upper - 0.02, 1.1 * ew, 0.035)
    col = col * (1 - 0.6 * shadow[:, None]) + 0.6 * shadow[:, None] * _EYE_SHADOW_TINT * col
    col = col * (1 - inside[:, None]) + eyec * inside[:, None]
    col = col * (1 - np.clip(0.8 * lid_line * (0.6 + 0.5 * lash), 0, 0.95))[:, None]
    return col * (1 - 0.25 * crease)[:, None]


def _eyebrows(q: dict[str, np.ndarray], v: np.ndarray, f: _Layout, col: np.ndarray,
              hair_col: np.ndarray) -> np.ndarray:
    """Eyebrows above the eyes: height, arch, angle and thickness from the identity (and
    gender), in a darker shade of the hair colour."""
    by = f.ey + 0.16 + q["bh"]
    bx = (f.au - f.ex + 0.02) / 0.15
    arch = q["brow_arch"]
    bcurve = by + (0.035 + 0.02 * arch) * (1 - (bx - 0.1 * arch) ** 2) + q["brow_angle"] * bx
    bth = 0.028 * q["brow_thick"] * (1.15 - 0.45 * np.clip(bx, 0, 1))
    brow = (np.abs(bx) < 1.05) * np.exp(-0.5 * ((v - bcurve) / bth) ** 4) * _smoothstep(-1.1, -0.85, bx) * (1 - _smoothstep(0.85, 1.1, bx))
    browc = hair_col * 0.8
    bstr = np.clip(q["brow_dark"] * brow * (0.85 + 0.3 * f.noise), 0, 0.95)
    return col * (1 - bstr[:, None]) + browc * bstr[:, None]


def _hair(q: dict[str, np.ndarray], v: np.ndarray, hw: np.ndarray, th: np.ndarray, col: np.ndarray,
          hair_col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hair with strands (frequency, phase and curl from the identity) blended over the
    face by the hair weight ``hw``; returns the colour and the clipped weight."""
    curl = q["curl"]
    hf = q["strand_f"]
    sv = np.sin(th * hf + q["strand_ph"] + (1.5 + 2 * curl) * np.sin(v * (5 + 8 * curl) + q["strand_ph"]))
    sv2 = np.sin(th * hf * 0.37 + 1.7 * q["strand_ph"] + 2.0 * np.sin(v * 3.0))
    hair_tex = 0.78 + 0.12 * sv + 0.12 * sv2
    hcol = hair_col * hair_tex[:, None]
    h = np.clip(hw, 0, 1)[:, None]
    return col * (1 - h) + hcol * h, h[:, 0]


def _hair_colour(q: dict[str, np.ndarray]) -> np.ndarray:
    """Hair RGB per pixel: blonde-brown-black by ``hair_dark``, tinted red, then greyed."""
    d = q["hair_dark"][:, None]
    base = np.where(d < 0.5, _HAIR_BLONDE + (_HAIR_BROWN - _HAIR_BLONDE) * (d / 0.5),
                    _HAIR_BROWN + (_HAIR_BLACK - _HAIR_BROWN) * ((d - 0.5) / 0.5))
    red = q["hair_red"][:, None]
    base = base * (1 - red) + red * _HAIR_RED
    g = q["grey"][:, None]
    return base * (1 - g) + g * _HAIR_GREY
