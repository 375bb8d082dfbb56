"""Face analysis of the machine annotators (:mod:`facebias.annotate.machine`): one
detection per image, shared by the annotators that read it.

YuNet detection (the most central face, :func:`facebias.faces.detect.primary_face`), dlib's
68 landmarks in its box (:func:`facebias.faces.landmarks.landmarks68`), head pose from those
landmarks (:func:`facebias.faces.factors.head_pose`) and CIELAB of the skin pixels of the
landmark-polygon skin mask (:func:`facebias.faces.factors.skin_mask`) above the lowest nose
landmark; and the age-and-gender prediction
(:func:`facebias.faces.attributes.predict_age_gender`). Both are cached per image content (a
small LRU keyed by a hash of the pixels), so a value depends only on its own image (never on
the batch or its order).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from facebias.annotate.machine_colour import rgb_to_lab

__all__ = ["FaceAnalysis", "analyse_face", "clear_caches", "MIN_FACE_PX"]

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
