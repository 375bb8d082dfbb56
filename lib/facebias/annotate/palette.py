"""A palette labeller: the nearest swatch of the Monk Skin Tone scale to a face's colour.

The **Monk Skin Tone (MST) scale** is a ten-step palette of skin colours designed by the
sociologist Ellis Monk and released by Google under the Creative Commons Attribution 4.0
licence (CC BY 4.0: free to use and adapt with credit to its author). Its ten swatches are
given as sRGB hex colours, swatch 1 the lightest and swatch 10 the darkest
(:data:`MONK_SKIN_TONES`). The swatch colours are the scale's; the code here is this
project's own (BSD-3-Clause) and depends on no palette package.

The labeller converts the swatches to CIELAB (D65, :func:`facebias.annotate.machine.rgb_to_lab`,
the conversion every colour annotator of the project uses) and assigns a face colour
``(L*, a*, b*)`` the swatch at the smallest **CIE76 colour difference**
``Delta E*ab = sqrt(dL*^2 + da*^2 + db*^2)`` (Euclidean distance in CIELAB). It reports
that distance as well: the index says which swatch is nearest, the distance whether any
swatch is near. A face whose nearest swatch is more than about 10 Delta E away (a clearly
visible difference) has a colour that no step of the scale resembles: on this scale it is
not a skin colour (a blue or grey cast, an underexposed face). The scale is not evenly
spaced: adjacent swatches are 3 to 23 Delta E apart, the widest gap between swatches 5 and 6,
so a colour half-way between those two is about 12 Delta E from both; a distance above 10
there says "between two steps", not "off the scale" (look at the colour itself).

Conventions: L* 0-100, a* and b* signed (CIELAB D65); MST index 1 (lightest) to 10 (darkest),
as float so that a face that cannot be read (NaN in any coordinate) gets NaN.
"""

from __future__ import annotations

import numpy as np

from facebias.annotate.machine import rgb_to_lab

__all__ = ["MONK_SKIN_TONES", "FAR_DELTA_E", "swatches_lab", "nearest_swatch"]

#: The Monk Skin Tone scale (Ellis Monk / Google, CC BY 4.0): ten sRGB swatches as hex,
#: swatch 1 (lightest) first, swatch 10 (darkest) last.
MONK_SKIN_TONES: tuple[str, ...] = ("f6ede4", "f3e7db", "f7ead0", "eadaba", "d7bd96",
                                    "a07e56", "825c43", "604134", "3a312a", "292420")

#: CIE76 Delta E*ab above which no swatch of the scale is near a colour (a clearly visible
#: difference): a face that far from every swatch does not have a skin colour of the scale.
FAR_DELTA_E: float = 10.0


def swatches_lab(hex_colours: tuple[str, ...] = MONK_SKIN_TONES) -> np.ndarray:
    """CIELAB (D65) of sRGB hex swatches.

    Parameters
    ----------
    hex_colours : tuple of str, default :data:`MONK_SKIN_TONES`
        Six-digit sRGB hex colours (``"rrggbb"``, an optional leading ``#``), in scale order.

    Returns
    -------
    numpy.ndarray
        (k, 3) float64, rows in the order given, columns ``(L*, a*, b*)``: L* 0-100, a* and
        b* signed (:func:`facebias.annotate.machine.rgb_to_lab`).

    Raises
    ------
    ValueError
        If there is no colour or one is not six hex digits.

    Examples
    --------
    >>> swatches_lab()[[0, -1]].round(1)
    array([[94.2,  1.5,  5.4],
           [14.6,  1.5,  3.5]])
    """
    if not len(hex_colours):
        raise ValueError("hex_colours: no swatch")
    rgb = []
    for h in hex_colours:
        s = str(h).removeprefix("#")
        if len(s) != 6 or any(c not in "0123456789abcdefABCDEF" for c in s):
            raise ValueError(f"hex_colours: {h!r} is not a six-digit sRGB hex colour")
        rgb.append([int(s[i:i + 2], 16) for i in (0, 2, 4)])
    return rgb_to_lab(np.asarray(rgb, dtype=np.uint8))


def nearest_swatch(L: np.ndarray | float, a: np.ndarray | float, b: np.ndarray | float,
                   swatches: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The nearest swatch of the Monk Skin Tone scale to each CIELAB colour, and its CIE76
    Delta E*ab.

    Parameters
    ----------
    L, a, b : float or array_like
        CIELAB (D65) coordinates of the colours, one shape for all three: L* 0-100, a* and
        b* signed (for a face: the skin-mask readings ``face_luminance``, ``face_a_star``,
        ``face_b_star`` of :mod:`facebias.annotate.machine`).
    swatches : numpy.ndarray, optional
        (k, 3) CIELAB of the scale's swatches in scale order (default :func:`swatches_lab`
        of :data:`MONK_SKIN_TONES`).

    Returns
    -------
    index : numpy.ndarray
        float64 of the inputs' shape: the nearest swatch's number, 1 (lightest) to k (10:
        darkest); on an exact tie the lighter swatch. NaN where any coordinate is NaN or
        infinite.
    delta_e : numpy.ndarray
        float64 of the inputs' shape: CIE76 Delta E*ab = Euclidean distance in CIELAB to
        that swatch (CIELAB units; above :data:`FAR_DELTA_E` no swatch is near). NaN where
        ``index`` is.

    Raises
    ------
    ValueError
        If the three coordinates differ in shape or ``swatches`` is not (k, 3).

    Examples
    --------
    >>> sw = swatches_lab()
    >>> idx, de = nearest_swatch(sw[:, 0], sw[:, 1], sw[:, 2])
    >>> idx.tolist(), float(de.max())
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.0)
    >>> nearest_swatch([40.0, np.nan], [0.0, 5.0], [-15.0, 10.0])[0].tolist()
    [9.0, nan]
    """
    Ls, As, Bs = (np.asarray(v, dtype=np.float64) for v in (L, a, b))
    if not Ls.shape == As.shape == Bs.shape:
        raise ValueError(f"L, a, b: shapes differ ({Ls.shape}, {As.shape}, {Bs.shape})")
    sw = swatches_lab() if swatches is None else np.asarray(swatches, dtype=np.float64)
    if sw.ndim != 2 or sw.shape[1] != 3 or not len(sw):
        raise ValueError(f"swatches: expected (k, 3) CIELAB rows, got shape {sw.shape}")
    lab = np.stack([Ls, As, Bs], axis=-1)
    ok = np.isfinite(lab).all(axis=-1)
    d = np.sqrt(((np.where(ok[..., None], lab, 0.0)[..., None, :] - sw) ** 2).sum(axis=-1))  # (..., k)
    k = d.argmin(axis=-1)
    index = np.where(ok, k + 1.0, np.nan)
    delta_e = np.where(ok, np.take_along_axis(d, k[..., None], axis=-1)[..., 0], np.nan)
    return index, delta_e
