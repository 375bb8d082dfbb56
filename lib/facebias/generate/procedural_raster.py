"""The procedural face's renderer (the offline CPU generator of papers 004 and 000): the
camera and slice grid, the z-buffer rasteriser of the head's horizontal slices, the
surface normals at the visible pixels, and Lambert + Blinn shading under one directional
light.

Part of :mod:`facebias.generate.procedural` (its module docstring describes the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from facebias.generate.procedural_albedo import _rgb

# ---- camera and slices
_FRAME_UNITS = 3.0  # model units across the image (the frame is square)
_FRAME_CENTRE_Y = -0.08  # model y at the image centre
_THETA_MARGIN = 0.25  # rad rendered beyond the silhouette (pi/2 + yaw tier), at most pi
_SLICES_PER_PX = 2.2  # theta slices per image pixel ...
_SLICE_ARC = 1.8  # ... for every this many radians of the half range
# ---- ambient occlusion (cavities darken by how far r lies below its blurred local mean)
_AO_RADIUS = 0.75  # model units per radian when converting ao_sigma to theta slices
_AO_TRUNCATE = 2.5  # blur kernel half-width in sigmas
_AO_DEPTH = 0.03  # depth below the local mean (model units) that darkens by ao_strength
_AO_FLOOR = 0.35  # least ambient-occlusion factor
# ---- z-buffer keys: quantised depth in the high bits, the fragment index in the low 30
_Z_OFFSET = 8.0  # model units added to depth so every depth on screen is positive
_Z_STEPS = 1 << 18  # depth steps per model unit
_Z_MAX = (1 << 22) - 1  # largest quantised depth (22 bits)
_FRAGMENT_BITS = 30  # bits of a key that hold the fragment index
# ---- shading (unitless factors on the albedo; light power pw in [0, 1])
_SKY_Z, _SKY_Y = 0.6, 0.4  # hemisphere light: weights of the normal's z (viewer) and y (up)
_AMBIENT_BASE, _AMBIENT_SKY = 0.8, 0.25  # ambient = (1 - _AMBIENT_DIM pw) (base + sky hemi)
_AMBIENT_DIM = 0.6  # share of the ambient that a full-power directional light replaces
_DIFFUSE = 0.62  # Lambert factor at full power
_SPECULAR_EXPONENT = 24  # Blinn-Phong exponent on n . h
_VIEWER = _rgb(0.0, 0.0, 1.0)  # direction to the camera (orthographic, +z)


@dataclass(frozen=True)
class _Frame:
    """The sampling grid: ``width`` = height in pixels (supersampled), ``scale`` pixels per
    model unit, ``th`` the azimuth of each slice (rad, ``dth`` apart), ``rows`` the model y
    of each pixel row (top first)."""

    width: int
    scale: float
    th: np.ndarray
    dth: float
    rows: np.ndarray


@dataclass(frozen=True)
class _Fragments:
    """The nearest surface fragment of every covered pixel: ``hit`` flat pixel index
    (image, row, column), ``img``, ``row`` and slice ``t`` of the grid segment
    ``[t, t + 1]`` it lies on, and its position ``fr`` in [0, 1) along that segment."""

    hit: np.ndarray
    img: np.ndarray
    row: np.ndarray
    t: np.ndarray
    fr: np.ndarray

    def lerp(self, arr: np.ndarray) -> np.ndarray:
        """``arr`` (n, H, T) interpolated at the fragments."""
        a0 = arr[self.img, self.row, self.t]
        a1 = arr[self.img, self.row, self.t + 1]
        return a0 + self.fr * (a1 - a0)


def _visible_fragments(r: np.ndarray, th: np.ndarray, psi: np.ndarray, scale: float) -> _Fragments:
    """Rasterise every row's slice polyline (orthographic, yaw ``psi`` rad): each grid
    segment covers the pixel centres between its projected ends; ``np.maximum.at`` on
    packed (depth, fragment) keys keeps the nearest fragment of each pixel."""
    n, H, T = r.shape
    W = H
    ang = th[None, None, :] + psi[:, None, None]
    xs = W / 2 + r * np.sin(ang) * scale
    zs = r * np.cos(ang)
    xa, xb = xs[..., :-1], xs[..., 1:]
    valid = (xb > xa) & (r[..., :-1] > 0) & (r[..., 1:] > 0)
    ja = np.clip(np.ceil(xa - 0.5), 0, W).astype(np.int64)
    jb = np.clip(np.ceil(xb - 0.5), 0, W).astype(np.int64)
    # one fragment per covered pixel centre: segment rep, column jj, position f along it
    cnt = np.where(valid, np.maximum(jb - ja, 0), 0).ravel()
    seg = np.flatnonzero(cnt)
    cs = cnt[seg]
    rep = np.repeat(seg, cs)
    starts = np.cumsum(cs) - cs
    offs = np.arange(rep.size) - np.repeat(starts, cs)
    jj = ja.ravel()[rep] + offs
    xa_r, xb_r = xa.ravel()[rep], xb.ravel()[rep]
    f = (jj + 0.5 - xa_r) / (xb_r - xa_r)
    za_r = zs[..., :-1].ravel()[rep]
    zb_r = zs[..., 1:].ravel()[rep]
    zz = za_r + f * (zb_r - za_r)
    # z-buffer: the largest key per pixel is the nearest fragment (ties: the later one)
    rowid = rep // (T - 1)  # index into n * H
    pix = rowid * W + jj
    zq = np.clip((zz + _Z_OFFSET) * _Z_STEPS, 0, _Z_MAX).astype(np.int64)
    key = (zq << _FRAGMENT_BITS) | np.arange(rep.size, dtype=np.int64)
    buf = np.full(n * H * W, -1, np.int64)
    np.maximum.at(buf, pix, key)
    hit = np.flatnonzero(buf >= 0)
    e = buf[hit] & ((1 << _FRAGMENT_BITS) - 1)
    sg = rep[e]
    return _Fragments(hit, sg // ((T - 1) * H), (sg // (T - 1)) % H, sg % (T - 1), f[e])


def _pixel_normals(px: _Fragments, thp: np.ndarray, psi: np.ndarray, r: np.ndarray,
                   r_th: np.ndarray, r_y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit surface normals ``(nx, ny, nz)`` in the camera frame at the fragments (azimuth
    ``thp``), from the analytic tangents of ``r(theta, y)`` rotated by the yaw."""
    rp = px.lerp(r)
    rtp = px.lerp(r_th)
    ryp = px.lerp(r_y)
    # normal in head frame
    st, ct = np.sin(thp), np.cos(thp)
    Pt = np.stack([rtp * st + rp * ct, np.zeros_like(rp), rtp * ct - rp * st], -1)
    Py = np.stack([ryp * st, np.ones_like(rp), ryp * ct], -1)
    N = np.cross(Pt, Py)
    N /= np.linalg.norm(N, axis=1, keepdims=True) + 1e-12
    cp, sp = np.cos(psi[px.img]), np.sin(psi[px.img])
    nx = N[:, 0] * cp + N[:, 2] * sp
    nz = N[:, 2] * cp - N[:, 0] * sp
    return nx, N[:, 1], nz


def _shade(nx: np.ndarray, ny: np.ndarray, nz: np.ndarray, lights: Any, img: np.ndarray,
           ao: np.ndarray, spec_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(shade, specular)`` per pixel: hemisphere ambient plus Lambert diffuse of the
    image's light (direction, power), both darkened by ``ao``; Blinn specular ``spec_k``."""
    ld = np.stack([lt.unit() for lt in lights])[img]
    pw = np.array([lt.power for lt in lights])[img]
    ndl = np.clip(nx * ld[:, 0] + ny * ld[:, 1] + nz * ld[:, 2], 0, None)
    hemi = 0.5 + 0.5 * (_SKY_Z * nz + _SKY_Y * ny)
    amb = (1 - _AMBIENT_DIM * pw) * (_AMBIENT_BASE + _AMBIENT_SKY * hemi)
    dif = pw * _DIFFUSE * ndl
    hv = ld + _VIEWER
    hv /= np.linalg.norm(hv, axis=1, keepdims=True)
    ndh = np.clip(nx * hv[:, 0] + ny * hv[:, 1] + nz * hv[:, 2], 0, None)
    spec = pw * spec_k * ndh**_SPECULAR_EXPONENT
    shade = amb * ao + dif * (0.5 + 0.5 * ao)  # AO acts on half of the diffuse light
    return shade, spec
