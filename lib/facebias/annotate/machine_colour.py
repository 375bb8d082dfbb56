"""Colour measures of the machine annotators (:mod:`facebias.annotate.machine`).

CIELAB (D65) from sRGB (:func:`rgb_to_lab`, exact formulas: L* 0-100, a* and b*
signed). Individual Typology Angle ``ITA = atan2(L* - 50, b*) * 180 / pi``
degrees, computed from the **median** L* and the median b* of the skin pixels; higher ITA
= lighter skin (roughly > 55 very light, 41-55 light, 28-41 intermediate, 10-28 tan,
-30-10 brown, < -30 dark, Chardon et al. 1991).
"""

from __future__ import annotations

import numpy as np

__all__ = ["rgb_to_lab", "ita_degrees", "ita"]


#: sRGB (linear) -> CIE XYZ, D65 (IEC 61966-2-1); its row sums are the D65 white point.
_SRGB_TO_XYZ = np.array([
    [0.4124564, 0.3575761, 0.1804375],
    [0.2126729, 0.7151522, 0.0721750],
    [0.0193339, 0.1191920, 0.9503041],
])
_WHITE_D65 = _SRGB_TO_XYZ.sum(axis=1)


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of sRGB uint8 pixels ``(..., 3)`` as float64 ``(..., 3)``: L* 0-100,
    a* and b* signed. Exact IEC 61966-2-1 companding and the CIE 1976 formulas (neutral
    greys give a* = b* = 0 exactly).

    Parameters
    ----------
    rgb : numpy.ndarray
        sRGB uint8 pixels, last axis ``(R, G, B)``.

    Returns
    -------
    numpy.ndarray
        float64, same shape, last axis ``(L*, a*, b*)``.

    Raises
    ------
    ValueError
        If ``rgb`` is not uint8 with a last axis of 3.

    Examples
    --------
    >>> rgb_to_lab(np.array([[255, 255, 255], [128, 128, 128], [255, 0, 0]], np.uint8)).round(2)
    array([[100.  ,   0.  ,   0.  ],
           [ 53.59,   0.  ,   0.  ],
           [ 53.24,  80.09,  67.2 ]])
    """
    px = np.asarray(rgb)
    if px.dtype != np.uint8 or px.shape[-1] != 3:
        raise ValueError(f"expected RGB uint8 pixels (..., 3), got {px.dtype} {px.shape}")
    c = px.astype(np.float64) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    t = (lin @ _SRGB_TO_XYZ.T) / _WHITE_D65
    d = 6.0 / 29.0
    f = np.where(t > d**3, np.cbrt(t), t / (3 * d * d) + 4.0 / 29.0)
    return np.stack([116.0 * f[..., 1] - 16.0, 500.0 * (f[..., 0] - f[..., 1]),
                     200.0 * (f[..., 1] - f[..., 2])], axis=-1)


def ita_degrees(L: np.ndarray | float, b: np.ndarray | float) -> np.ndarray | float:
    """Individual Typology Angle ``atan2(L* - 50, b*)`` in degrees (higher = lighter).

    Parameters
    ----------
    L : float or numpy.ndarray
        CIELAB lightness L*, 0-100.
    b : float or numpy.ndarray
        CIELAB b* (yellow > 0); broadcasts against ``L``.

    Returns
    -------
    float or numpy.ndarray
        ITA in degrees, in (-180, 180]; above 55 = very light skin, below -30 = dark.

    Examples
    --------
    >>> ita_degrees(np.array([70.0, 30.0]), 15.0)
    array([ 53.13010235, -53.13010235])
    """
    return np.degrees(np.arctan2(np.asarray(L, np.float64) - 50.0, np.asarray(b, np.float64)))


def ita(rgb: np.ndarray) -> float:
    """ITA (degrees) of RGB uint8 pixels ``(..., 3)`` from their median L* and median b*;
    NaN for no pixels.

    Parameters
    ----------
    rgb : numpy.ndarray
        sRGB uint8 pixels, last axis ``(R, G, B)`` (e.g. the skin pixels of a face).

    Returns
    -------
    float
        ITA in degrees (higher = lighter), or NaN when there are no pixels.

    Raises
    ------
    ValueError
        If ``rgb`` is not uint8 with a last axis of 3.

    Examples
    --------
    >>> print(f"{ita(np.full((4, 4, 3), (224, 172, 150), np.uint8)):.1f}")
    52.8
    """
    lab = rgb_to_lab(np.asarray(rgb)).reshape(-1, 3)
    if len(lab) == 0:
        return float("nan")
    return float(ita_degrees(np.median(lab[:, 0]), np.median(lab[:, 2])))
