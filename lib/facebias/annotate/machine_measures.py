"""The individual machine annotators' measures (:mod:`facebias.annotate.machine` registers
them): one number per image from the face analysis (:mod:`facebias.annotate.machine_face`),
the age-and-gender prediction, the landmarks (smile) or the whole image (border, exposure,
white balance); ``None`` (NaN in a batch) where it cannot measure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from facebias.annotate.machine_colour import ita_degrees, rgb_to_lab
from facebias.annotate.machine_face import _age_gender, analyse_face

__all__ = ["mouth_width_ratio", "mouth_corner_lift", "border_mask", "BORDER_SHARE"]


def _per_image(measure: Callable[[np.ndarray], float | None]) -> Callable[[list], np.ndarray]:
    """A batch function from a per-image measure (``None`` -> NaN). An input that is not
    an RGB (or gray) uint8 image raises ``ValueError``: that is the caller's error, not a
    failure to measure."""

    def fn(images: list[np.ndarray]) -> np.ndarray:
        out = np.full(len(images), np.nan)
        for i, im in enumerate(images):
            v = measure(im)
            out[i] = np.nan if v is None else float(v)
        return out

    fn.__name__ = measure.__name__
    fn.__doc__ = measure.__doc__
    return fn


# --------------------------------------------------------------------------- measures


def _p_male(image: np.ndarray) -> float | None:
    from facebias.faces.attributes import p_male

    return p_male(_age_gender(image))


def _age_years(image: np.ndarray) -> float | None:
    pred = _age_gender(image)
    return None if pred is None else pred["age"]


def _ita(image: np.ndarray) -> float | None:
    lab = analyse_face(image).skin_lab
    return None if lab is None else float(ita_degrees(np.median(lab[:, 0]), np.median(lab[:, 2])))


def _face_luminance(image: np.ndarray) -> float | None:
    lab = analyse_face(image).skin_lab
    return None if lab is None else float(lab[:, 0].mean())


def _light_asymmetry(image: np.ndarray) -> float | None:
    fa = analyse_face(image)
    if fa.skin_lab is None:
        return None
    right, left = fa.skin_side > 0, fa.skin_side < 0
    if not right.any() or not left.any():
        return None
    return float(fa.skin_lab[right, 0].mean() - fa.skin_lab[left, 0].mean())


def _yaw_deg(image: np.ndarray) -> float | None:
    return analyse_face(image).yaw


def _eye_centres68(lm: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The smile measures' common frame: the image-left and image-right eye centres (means
    of 36-41 and 42-47 of dlib's 68 landmarks) and the distance between them."""
    eye_l, eye_r = lm[36:42].mean(axis=0), lm[42:48].mean(axis=0)
    return eye_l, eye_r, float(np.linalg.norm(eye_r - eye_l))


def mouth_width_ratio(lm: np.ndarray) -> float:
    """Mouth width (outer corners 48-54) over the distance between the eye centres (means
    of 36-41 and 42-47) of dlib's 68 landmarks; NaN for coincident eye centres.

    Parameters
    ----------
    lm : numpy.ndarray
        (68, 2) ``(x, y)`` pixels in iBUG order.

    Returns
    -------
    float
        The ratio (higher = wider mouth, more smile), scale-free.

    Examples
    --------
    >>> lm = np.zeros((68, 2))
    >>> lm[36:42], lm[42:48], lm[48], lm[54] = [30, 40], [70, 40], [35, 80], [65, 80]
    >>> mouth_width_ratio(lm)
    0.75
    """
    io = _eye_centres68(lm)[2]
    return float(np.linalg.norm(lm[54] - lm[48]) / io) if io > 0 else float("nan")


def mouth_corner_lift(lm: np.ndarray) -> float:
    """How far the mouth corners (mean of 48 and 54) sit above the lip centre (mean of the
    inner-lip midpoints 62 and 66), along the face's downward axis (perpendicular to the
    eye line, so head roll does not count), over the distance between the eye centres;
    > 0 = corners up. The candidate :data:`MACHINE_ANNOTATORS` ``smile`` did not pick.

    Parameters
    ----------
    lm : numpy.ndarray
        (68, 2) ``(x, y)`` pixels in iBUG order (image y points down).

    Returns
    -------
    float
        The lift in interocular distances (> 0 = corners up); NaN for coincident eye
        centres.

    Examples
    --------
    >>> lm = np.zeros((68, 2))
    >>> lm[36:42], lm[42:48], lm[48], lm[54] = [30, 40], [70, 40], [35, 80], [65, 80]
    >>> lm[62], lm[66] = [50, 82], [50, 86]  # lip centre 4 px below the corners
    >>> mouth_corner_lift(lm)
    0.1
    """
    eye_l, eye_r, io = _eye_centres68(lm)
    if not io > 0:
        return float("nan")
    across = (eye_r - eye_l) / io
    down = np.array([-across[1], across[0]])  # across rotated +90 degrees (image y is down)
    centre = (lm[62] + lm[66]) / 2.0
    corners = (lm[48] + lm[54]) / 2.0
    return float((centre - corners) @ down / io)


def _smile(image: np.ndarray) -> float | None:
    lm = analyse_face(image).landmarks
    return None if lm is None else mouth_width_ratio(lm)


def _face_a_star(image: np.ndarray) -> float | None:
    lab = analyse_face(image).skin_lab
    return None if lab is None else float(np.median(lab[:, 1]))


def _face_b_star(image: np.ndarray) -> float | None:
    lab = analyse_face(image).skin_lab
    return None if lab is None else float(np.median(lab[:, 2]))


#: Width of the image border band, as a share of the shorter side (:func:`border_mask`).
BORDER_SHARE = 0.08


def border_mask(shape: Sequence[int], share: float = BORDER_SHARE) -> np.ndarray:
    """Boolean (H, W) mask of the band along all four image edges, ``max(1, round(share *
    min(H, W)))`` pixels wide: on a tight face crop mostly background, hair and shoulders,
    never the face centre.

    Parameters
    ----------
    shape : Sequence of int
        Image shape ``(H, W, ...)``.
    share : float, default :data:`BORDER_SHARE`
        Band width as a share of the shorter side, in (0, 0.5).

    Returns
    -------
    numpy.ndarray
        (H, W) bool, True on the band.

    Raises
    ------
    ValueError
        If ``share`` is not in (0, 0.5).

    Examples
    --------
    >>> int(border_mask((10, 10), 0.1).sum())
    36
    """
    if not 0.0 < share < 0.5:
        raise ValueError(f"border share must be in (0, 0.5), got {share!r}")
    h, w = int(shape[0]), int(shape[1])
    k = max(1, int(round(share * min(h, w))))
    mask = np.zeros((h, w), bool)
    mask[:k], mask[-k:], mask[:, :k], mask[:, -k:] = True, True, True, True
    return mask


def _image_lab(image: np.ndarray) -> np.ndarray:
    from facebias.faces.images import as_rgb_uint8

    return rgb_to_lab(as_rgb_uint8(np.asarray(image)))


def _border_luminance(image: np.ndarray) -> float:
    lab = _image_lab(image)
    return float(lab[border_mask(lab.shape)][:, 0].mean())


def _image_luminance(image: np.ndarray) -> float:
    return float(_image_lab(image)[..., 0].mean())


def _image_b_star(image: np.ndarray) -> float:
    return float(_image_lab(image)[..., 2].mean())
