"""Image and face factors that drive face-recognition accuracy (pose, light, quality, size).

Everything here works offline. Pure functions (numpy in, numbers out) come first; the
detector-driven wrappers :func:`measure_factors` and :func:`factor_table` come last.

Conventions (all pixel coordinates are ``(x, y)`` with x to the right and y down):

* head pose: degrees; **yaw > 0** = the face turned toward the image's right side,
  **pitch > 0** = looking up, **roll > 0** = head tilted clockwise as seen in the image.
* brightness: gray level 0-255 (OpenCV's RGB -> gray weights).
* sharpness: variance of the Laplacian (gray levels squared); higher = sharper.
* BRISQUE: OpenCV's no-reference score, roughly 0-100; **higher = worse** quality.
* face area: fraction (0-1) of the 224 x 224 ArcFace-aligned crop inside the face polygon
  (paper 003 measures it on its aligned crops, not on the photo).
* interocular: pixels between the two eye centres of the 5-point detector landmarks.

Segmentation: paper 003 uses a BiSeNet face parser for the skin and face masks. No such
model is available offline, so :func:`skin_mask` and :func:`face_mask` are a **landmark
polygon fallback** built from dlib's 68 points. They replace BiSeNet; values are comparable
in trend but not numerically identical to the paper's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from facebias.faces.align import align_arcface
from facebias.faces.detect import (
    Detection,
    check_detections,
    detect_faces,
    primary_face,
    too_small_reason,
)
from facebias.faces.images import ImageReadError, as_rgb_uint8, read_image
from facebias.faces.landmarks import landmarks68

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("facebias.faces")

__all__ = [
    "FACTOR_DETECTOR",
    "FACTOR_KEYS",
    "BRISQUE_SEARCH_DIRS",
    "MODEL_3D",
    "POSE_LANDMARKS",
    "head_pose",
    "skin_mask",
    "face_mask",
    "face_skin_brightness",
    "box_brightness",
    "sharpness",
    "brisque",
    "face_area",
    "interocular",
    "mask_iou",
    "aligned_face_mask",
    "measure_factors",
    "factor_table",
]

#: The detector the factors are measured with (paper 003's choice).
FACTOR_DETECTOR = "yunet"
FACTOR_KEYS = ("yaw", "pitch", "roll", "brightness", "sharpness", "face_area", "brisque")
_EXTRA_KEYS = ("interocular", "detector_score")

# --------------------------------------------------------------------------- head pose

#: 68-point indices used for pose: nose tip, chin, image-left eye outer corner,
#: image-right eye outer corner, image-left mouth corner, image-right mouth corner.
POSE_LANDMARKS = (30, 8, 36, 45, 48, 54)

#: Generic 3D face (arbitrary units, ~mm x 2.5) in image-axis conventions: x to the image's
#: right, y down, z away from the camera; origin at the nose tip. This is the common
#: "learnopencv" model with y and z flipped so that a frontal face has rotation ~identity.
MODEL_3D = np.array(
    [
        [0.0, 0.0, 0.0],  # 30 nose tip
        [0.0, 330.0, 65.0],  # 8 chin
        [-225.0, -170.0, 135.0],  # 36 image-left eye outer corner
        [225.0, -170.0, 135.0],  # 45 image-right eye outer corner
        [-150.0, 150.0, 125.0],  # 48 image-left mouth corner
        [150.0, 150.0, 125.0],  # 54 image-right mouth corner
    ],
    dtype=np.float64,
)


def camera_matrix(image_shape: Sequence[int]) -> np.ndarray:
    """Pinhole intrinsics used for pose: focal = image width (px), principal point = the
    image centre in pixel-index coordinates ``((W-1)/2, (H-1)/2)``.

    Parameters
    ----------
    image_shape : Sequence of int
        ``(H, W[, C])``.

    Returns
    -------
    numpy.ndarray
        (3, 3) float64 camera matrix ``K``.

    Examples
    --------
    >>> camera_matrix((480, 640, 3))
    array([[640. ,   0. , 319.5],
           [  0. , 640. , 239.5],
           [  0. ,   0. ,   1. ]])
    """
    h, w = int(image_shape[0]), int(image_shape[1])
    return np.array([[w, 0.0, (w - 1) / 2.0], [0.0, w, (h - 1) / 2.0], [0.0, 0.0, 1.0]])


def rotation_from_pose(yaw: float, pitch: float, roll: float) -> np.ndarray:
    """Rotation matrix (model -> camera) for angles in this module's convention (degrees).

    Inverse of :func:`head_pose`: ``R = Rz(roll) @ Ry(-yaw) @ Rx(-pitch)`` (camera axes), the
    composition that ``cv2.RQDecomp3x3`` decomposes.

    Parameters
    ----------
    yaw, pitch, roll : float
        Degrees; yaw > 0 = face turned toward the image's right, pitch > 0 = looking up,
        roll > 0 = clockwise tilt in the image.

    Returns
    -------
    numpy.ndarray
        (3, 3) float64 rotation matrix; camera points are ``MODEL_3D @ R.T + t``.

    Examples
    --------
    >>> rotation_from_pose(0.0, 0.0, 0.0)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """
    ax, ay, az = np.deg2rad([-pitch, -yaw, roll])
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    return rz @ ry @ rx


def head_pose(points2d_6: np.ndarray, image_shape: Sequence[int]) -> tuple[float, float, float]:
    """Head pose ``(yaw, pitch, roll)`` in degrees from six 2D landmarks.

    ``points2d_6`` are the pixels of the 68-point landmarks :data:`POSE_LANDMARKS`
    (30, 8, 36, 45, 48, 54) in that order; ``image_shape`` is ``(H, W[, C])``. Fits
    :data:`MODEL_3D` with ``cv2.solvePnP`` (focal = W, centre principal point, no
    distortion) and splits the rotation with ``cv2.RQDecomp3x3``. Because the model is in
    image-axis conventions a frontal face is near the identity and pitch does not wrap by
    180 degrees. Signs: yaw > 0 = face turned toward the image's right, pitch > 0 = looking
    up, roll > 0 = clockwise tilt in the image. One generic face does not fit every face's
    proportions, so pitch is the least reliable angle: on the 100 near-frontal faces of
    ``skimage.data.lfw_subset()`` (upscaled to 200 px) the median is +6.6 degrees (IQR 1.0
    to 10.8), while skimage's astronaut gives -25. Compare pitch between images of similar
    faces rather than reading it as absolute.

    Parameters
    ----------
    points2d_6 : numpy.ndarray
        (6, 2) ``(x, y)`` pixels of the landmarks :data:`POSE_LANDMARKS`, in that order.
    image_shape : Sequence of int
        ``(H, W[, C])`` of the image the points come from.

    Returns
    -------
    tuple of float
        ``(yaw, pitch, roll)`` in degrees.

    Raises
    ------
    ValueError
        If ``cv2.solvePnP`` fails.

    Examples
    --------
    Project the 3D model turned by a known pose and recover it:

    >>> K = camera_matrix((400, 400))
    >>> cam = MODEL_3D @ rotation_from_pose(20.0, -5.0, 10.0).T + [0.0, 0.0, 2000.0]
    >>> pts = (cam @ K.T)[:, :2] / cam[:, 2:]
    >>> yaw, pitch, roll = head_pose(pts, (400, 400))
    >>> print(f"{yaw:.1f} {pitch:.1f} {roll:.1f}")
    20.0 -5.0 10.0
    """
    pts = np.asarray(points2d_6, dtype=np.float64).reshape(6, 2)
    ok, rvec, _tvec = cv2.solvePnP(
        MODEL_3D, pts, camera_matrix(image_shape), np.zeros(4), flags=cv2.SOLVEPNP_ITERATIVE
    )
    if not ok:
        raise ValueError("solvePnP failed")
    rmat, _ = cv2.Rodrigues(rvec)
    angles = cv2.RQDecomp3x3(rmat)[0]  # degrees about x, y, z (camera axes)
    ax, ay, az = (float(a) for a in angles)
    return -ay, -ax, az


# --------------------------------------------------------------------------- masks


def _poly(mask: np.ndarray, pts: np.ndarray, value: int) -> None:
    cv2.fillPoly(mask, [np.round(pts).astype(np.int32).reshape(-1, 1, 2)], value)


def _outline(landmarks68: np.ndarray) -> np.ndarray:
    """Jaw 0-16 closed over the brows 26..17, brows lifted by 10% of the brow-chin height."""
    lm = np.asarray(landmarks68, dtype=np.float64)
    brows = lm[26:16:-1].copy()
    lift = 0.1 * (lm[8, 1] - lm[17:27, 1].mean())
    brows[:, 1] -= lift
    return np.vstack([lm[0:17], brows])


def face_mask(landmarks68: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Whole-face polygon (what paper 003 calls the face area) as a bool ``(H, W)`` mask.

    Landmark-polygon fallback for the BiSeNet parser: jaw (0-16) closed over the brows
    (17-26) lifted by 10% of the brow-to-chin height.

    Parameters
    ----------
    landmarks68 : numpy.ndarray
        (68, 2) ``(x, y)`` pixels in iBUG order.
    shape : Sequence of int
        ``(H, W[, C])`` of the image; the mask is ``(H, W)``.

    Returns
    -------
    numpy.ndarray
        (H, W) bool, True inside the face polygon.
    """
    mask = np.zeros(tuple(int(s) for s in shape[:2]), dtype=np.uint8)
    _poly(mask, _outline(landmarks68), 1)
    return mask.astype(bool)


def skin_mask(landmarks68: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Facial-skin mask (bool ``(H, W)``): :func:`face_mask` minus eyes, brows, nose, mouth.

    Replaces paper 003's BiSeNet skin class with landmark polygons: eyes 36-41 / 42-47,
    brows 17-21 / 22-26 drawn as thick lines (3% of face width), the convex hull of the
    nose 27-35, and the outer lip 48-59.

    Parameters
    ----------
    landmarks68 : numpy.ndarray
        (68, 2) ``(x, y)`` pixels in iBUG order.
    shape : Sequence of int
        ``(H, W[, C])`` of the image; the mask is ``(H, W)``.

    Returns
    -------
    numpy.ndarray
        (H, W) bool, True on facial skin.
    """
    lm = np.asarray(landmarks68, dtype=np.float64)
    mask = np.zeros(tuple(int(s) for s in shape[:2]), dtype=np.uint8)
    _poly(mask, _outline(lm), 1)
    for idx in (range(36, 42), range(42, 48), range(48, 60)):
        _poly(mask, lm[list(idx)], 0)
    _poly(mask, cv2.convexHull(lm[27:36].astype(np.float32)).reshape(-1, 2), 0)
    width = max(1, int(round(0.03 * np.linalg.norm(lm[16] - lm[0]))))
    for idx in (range(17, 22), range(22, 27)):
        pts = np.round(lm[list(idx)]).astype(np.int32).reshape(-1, 1, 2)
        cv2.polylines(mask, [pts], False, 0, thickness=width)
    return mask.astype(bool)


def nose_bottom_row(landmarks68: np.ndarray) -> float:
    """Row (y, px) of the lowest nose landmark: max y over points 31-35.

    Parameters
    ----------
    landmarks68 : numpy.ndarray
        (68, 2) ``(x, y)`` pixels in iBUG order.

    Returns
    -------
    float
        The largest y (image y points down) of landmarks 31-35.

    Examples
    --------
    >>> lm = np.zeros((68, 2))
    >>> lm[31:36, 1] = [60, 62, 63, 62, 60]
    >>> nose_bottom_row(lm)
    63.0
    """
    return float(np.asarray(landmarks68)[31:36, 1].max())


# --------------------------------------------------------------------------- light and quality


def face_skin_brightness(gray: np.ndarray, skin_mask: np.ndarray, nose_bottom_row: float) -> float:
    """Paper 003's face-skin brightness (FSB), gray levels 0-255.

    Mean of ``gray`` over skin pixels whose row index is strictly above (``<``)
    ``nose_bottom_row`` (the lowest nose landmark; a fractional row is rounded up), so the
    mouth/beard region is ignored.

    Parameters
    ----------
    gray : numpy.ndarray
        (H, W) gray levels 0-255.
    skin_mask : numpy.ndarray
        (H, W) bool, e.g. :func:`skin_mask`.
    nose_bottom_row : float
        Row (pixels) of the lowest nose landmark (:func:`nose_bottom_row`).

    Returns
    -------
    float
        Mean gray level, 0-255.

    Raises
    ------
    ValueError
        If no skin pixel lies above that row.

    Examples
    --------
    >>> gray = np.arange(16.0).reshape(4, 4)
    >>> face_skin_brightness(gray, np.ones((4, 4), bool), nose_bottom_row=2.0)  # rows 0-1
    3.5
    """
    g = np.asarray(gray, dtype=np.float64)
    m = np.asarray(skin_mask, dtype=bool).copy()
    cut = max(0, min(m.shape[0], int(np.ceil(nose_bottom_row))))
    m[cut:] = False
    if not m.any():
        raise ValueError("no skin pixels above the nose")
    return float(g[m].mean())


def box_brightness(gray: np.ndarray, box: Sequence[float]) -> float:
    """Fallback brightness without 68 landmarks, gray levels 0-255.

    Mean gray of rows 20-50% and columns 20-80% of the detection box ``(x, y, w, h)``
    (the upper half of its central 60%), roughly forehead, eyes and cheeks.

    Parameters
    ----------
    gray : numpy.ndarray
        (H, W) gray levels 0-255.
    box : Sequence of float
        ``(x, y, w, h)`` pixels; the region is clipped to the image.

    Returns
    -------
    float
        Mean gray level, 0-255.

    Raises
    ------
    ValueError
        If the region is empty (e.g. the box lies outside the image).

    Examples
    --------
    >>> box_brightness(np.arange(16.0).reshape(4, 4), (0, 0, 4, 4))  # row 1, columns 1-2
    5.5
    """
    x, y, w, h = (float(v) for v in box)
    x0, x1 = int(round(x + 0.2 * w)), int(round(x + 0.8 * w))
    y0, y1 = int(round(y + 0.2 * h)), int(round(y + 0.5 * h))
    H, W = gray.shape[:2]
    x0, x1, y0, y1 = max(0, x0), min(W, x1), max(0, y0), min(H, y1)
    if x1 <= x0 or y1 <= y0:
        raise ValueError("fallback brightness region is empty")
    return float(np.asarray(gray[y0:y1, x0:x1], dtype=np.float64).mean())


def sharpness(gray: np.ndarray) -> float:
    """Variance of ``cv2.Laplacian(gray, CV_64F)`` (gray levels squared); higher = sharper.

    Pass the face crop: the value depends on content and crop size.

    Parameters
    ----------
    gray : numpy.ndarray
        (H, W) gray image (uint8 or float).

    Returns
    -------
    float
        Variance of the Laplacian; 0 for a flat image.

    Examples
    --------
    >>> sharpness(np.full((8, 8), 128, np.uint8))
    0.0
    >>> edge = np.zeros((8, 8), np.uint8)
    >>> edge[:, 4:] = 255
    >>> sharpness(edge) > 0
    True
    """
    return float(cv2.Laplacian(np.asarray(gray), cv2.CV_64F).var())


#: Default folders searched (after ``$FACEBIAS_BRISQUE_DIR``) for the BRISQUE model files.
BRISQUE_SEARCH_DIRS: tuple[str, ...] = ("/usr/share/opencv4/quality",)
BRISQUE_FILES = ("brisque_model_live.yml", "brisque_range_live.yml")
_warned: set[tuple[str, ...]] = set()


def _brisque_dirs() -> tuple[str, ...]:
    env = os.environ.get("FACEBIAS_BRISQUE_DIR")
    return ((env,) if env else ()) + tuple(BRISQUE_SEARCH_DIRS)


@lru_cache(maxsize=4)
def _brisque_model(model: str, range_: str):
    return cv2.quality.QualityBRISQUE_create(model, range_)


@lru_cache(maxsize=4)
def _brisque_svr(model: str, range_: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """The LIVE SVR of BRISQUE and its feature range (min row, max row)."""
    fs = cv2.FileStorage(range_, cv2.FILE_STORAGE_READ)
    lo, hi = fs.getNode("range").mat()
    fs.release()
    return cv2.ml.SVM_load(model), lo, hi


def _brisque_unclipped(image: np.ndarray, model: str, range_: str) -> float:
    """BRISQUE's SVR output before OpenCV clips it: the 36 features, scaled to [-1, 1]
    with the range file, through the LIVE SVR (what ``QualityBRISQUE.compute`` does)."""
    svm, lo, hi = _brisque_svr(model, range_)
    feats = cv2.quality.QualityBRISQUE_computeFeatures(np.ascontiguousarray(image)).ravel()
    scaled = (-1.0 + 2.0 * (feats - lo) / (hi - lo)).astype(np.float32)[None]
    return float(svm.predict(scaled)[1][0, 0])


def brisque(image: np.ndarray, clip: bool = True) -> float | None:
    """OpenCV's BRISQUE no-reference quality score (about 0-100, higher = worse).

    ``image`` is a uint8 gray or BGR array: OpenCV converts colour with BGR weights, so an
    RGB array gives another gray image and another score (skimage's astronaut: 0.00 as
    RGB, 0.49 as BGR); :func:`measure_factors` passes BGR. Uses ``brisque_model_live.yml``
    and ``brisque_range_live.yml`` from ``$FACEBIAS_BRISQUE_DIR`` or else
    :data:`BRISQUE_SEARCH_DIRS`. If they are missing, logs a warning and returns ``None``:
    a value is never invented.

    OpenCV clips the SVR's output to [0, 100], so sharp, clean face crops often score
    exactly 0: the face crop of a grey copy of skimage's astronaut (``rgb2gray``) is
    0.00 because its SVR output is negative (-2.60). ``clip=False`` returns that
    output, which still orders images at the floor; ``measure_factors`` keeps OpenCV's
    clipped score.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 gray or BGR image (the face crop).
    clip : bool, default True
        OpenCV's score clipped to [0, 100]; False: the SVR output before clipping.

    Returns
    -------
    float or None
        The score (0-100 when clipped, higher = worse quality), or ``None`` without the
        model files.

    Raises
    ------
    cv2.error
        If OpenCV cannot compute the score (e.g. a crop too small for its pyramid).
    """
    dirs = _brisque_dirs()
    for d in dirs:
        paths = [Path(d) / f for f in BRISQUE_FILES]
        if all(p.is_file() for p in paths):
            if not clip:
                return _brisque_unclipped(np.asarray(image), str(paths[0]), str(paths[1]))
            score = _brisque_model(str(paths[0]), str(paths[1])).compute(np.asarray(image))
            return float(score[0])
    if dirs not in _warned:
        _warned.add(dirs)
        log.warning(
            "BRISQUE model files %s not found in %s; BRISQUE is None. "
            "`apt-get install opencv-data` provides them (or set FACEBIAS_BRISQUE_DIR).",
            " and ".join(BRISQUE_FILES),
            ", ".join(dirs) or "(no folder)",
        )
    return None


# --------------------------------------------------------------------------- size and shape


def face_area(face_mask: np.ndarray) -> float:
    """Fraction (0-1) of the image's pixels inside the face mask.

    Parameters
    ----------
    face_mask : numpy.ndarray
        Bool mask; pass the mask of the 224 x 224 aligned crop (:func:`aligned_face_mask`)
        for paper 003's face area.

    Returns
    -------
    float
        ``mask.sum() / mask.size``.

    Examples
    --------
    >>> mask = np.zeros((4, 4), bool)
    >>> mask[:2, :2] = True
    >>> face_area(mask)
    0.25
    """
    m = np.asarray(face_mask, dtype=bool)
    return float(m.sum() / m.size)


def interocular(landmarks5: np.ndarray) -> float:
    """Pixel distance between the two eye centres (rows 0 and 1 of 5-point landmarks).

    Parameters
    ----------
    landmarks5 : numpy.ndarray
        (5, 2) ``(x, y)`` pixels in ArcFace order (eyes first).

    Returns
    -------
    float
        Euclidean distance, pixels.

    Examples
    --------
    >>> interocular(np.array([[30, 40], [70, 43], [50, 60], [35, 80], [65, 80]]))
    40.11234224026316
    """
    lm = np.asarray(landmarks5, dtype=np.float64)
    return float(np.linalg.norm(lm[0] - lm[1]))


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union ``|a & b| / |a | b|`` of two same-shape masks (0 if both empty).

    Paper 003 balances pairs by face-mask IoU > 0.9; compare masks of aligned crops
    (:func:`aligned_face_mask`) so that IoU measures face shape, not position.

    Parameters
    ----------
    a, b : numpy.ndarray
        Bool (or 0/1) masks of the same shape.

    Returns
    -------
    float
        IoU in [0, 1].

    Examples
    --------
    >>> mask_iou(np.array([1, 1, 0, 0]), np.array([0, 1, 1, 0]))  # 1 shared of 3
    0.3333333333333333
    """
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0


def aligned_face_mask(image: np.ndarray, size: int = 224) -> np.ndarray | None:
    """Face polygon mask (bool ``size x size``) of the face aligned to the ArcFace template.

    Detects the face, warps it with the 5-point similarity onto the ArcFace template scaled
    to ``size``, reruns the 68 landmarks on the crop and fills :func:`face_mask`.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB uint8.
    size : int, default 224
        Side of the aligned crop and of the mask, pixels.

    Returns
    -------
    numpy.ndarray or None
        (size, size) bool, or ``None`` when YuNet finds no face.
    """
    found = _find_face(image)
    if found is None:
        return None
    return _aligned_mask(image, found[1], size)


def _aligned_mask(image: np.ndarray, pts5: np.ndarray, size: int = 224) -> np.ndarray:
    crop = align_arcface(np.ascontiguousarray(image), pts5, size=size)
    box = (0.1 * size, 0.1 * size, 0.8 * size, 0.8 * size)  # crop shrunk by 10% a side
    return face_mask(landmarks68(crop, box), (size, size))


# --------------------------------------------------------------------------- detection


def _find_face(image: np.ndarray, found: list[Detection] | None = None):
    """The most central YuNet face (paper 003's choice): ``(box, (5,2) points, score)`` or None.

    ``found``: the image's YuNet detections when already known, None to detect here."""
    if found is None:
        found = detect_faces(image, FACTOR_DETECTOR)
    face = primary_face(found, image.shape)
    if face is None:
        return None
    return tuple(float(v) for v in face.box), np.asarray(face.landmarks, np.float64), face.score


# --------------------------------------------------------------------------- wrappers


def _measure(image: np.ndarray, found: list[Detection] | None = None) -> tuple[dict, list[str]]:
    """All factors plus the list of reasons for values that are None (``found``: the
    image's detections, or None to detect here)."""
    out: dict = dict.fromkeys(FACTOR_KEYS + _EXTRA_KEYS)
    reasons: list[str] = []
    img = as_rgb_uint8(np.asarray(image))
    small = too_small_reason(img.shape)
    if small:
        return out, [small]
    face = _find_face(img, found)
    if face is None:
        return out, ["no face detected"]
    box, pts5, score = face
    out["detector_score"] = score
    out["interocular"] = interocular(pts5)

    H, W = img.shape[:2]
    x, y, w, h = box
    x0, y0 = max(0, int(np.floor(x))), max(0, int(np.floor(y)))
    x1, y1 = min(W, int(np.ceil(x + w))), min(H, int(np.ceil(y + h)))
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    crop_ok = x1 - x0 >= 8 and y1 - y0 >= 8
    if crop_ok:
        out["sharpness"] = sharpness(gray[y0:y1, x0:x1])
        try:
            out["brisque"] = brisque(img[y0:y1, x0:x1, ::-1])
            if out["brisque"] is None:
                reasons.append("brisque: model files missing")
        except cv2.error as exc:
            reasons.append(f"brisque: {exc}")
    else:
        reasons.append("sharpness, brisque: face crop smaller than 8 px")

    try:
        lm = landmarks68(img, box)
    except Exception as exc:  # dlib raises RuntimeError on odd input
        lm = None
        reasons.append(f"landmarks68 failed ({exc}): no pose or face_area, box brightness")
    if lm is not None:
        try:
            out["yaw"], out["pitch"], out["roll"] = head_pose(lm[list(POSE_LANDMARKS)], img.shape)
        except (ValueError, cv2.error) as exc:
            reasons.append(f"head pose: {exc}")
        # paper 003: face pixels / pixels of the 224 x 224 aligned crop (not of the photo)
        out["face_area"] = face_area(_aligned_mask(img, pts5))
        try:
            out["brightness"] = face_skin_brightness(
                gray, skin_mask(lm, img.shape), nose_bottom_row(lm)
            )
        except ValueError as exc:
            reasons.append(f"skin brightness failed ({exc}): box brightness used")
    if out["brightness"] is None:
        try:
            out["brightness"] = box_brightness(gray, box)
        except ValueError as exc:
            reasons.append(f"brightness: {exc}")
    return out, reasons


def measure_factors(image: np.ndarray, detections: list[Detection] | None = None) -> dict:
    """Factors of the most central face in one RGB uint8 image.

    Returns a dict with exactly :data:`FACTOR_KEYS` plus ``"interocular"`` and
    ``"detector_score"``; values are floats, or ``None`` when they cannot be measured (the
    reason is logged on ``facebias.faces``). No face, or a side below
    :data:`facebias.faces.detect.MIN_IMAGE_SIDE` -> every value ``None``. Brightness
    (skin above the nose), sharpness and BRISQUE use the detection box / face crop; face
    area is the face-polygon pixels over the pixels of the 224 x 224 aligned crop (paper
    003); pose comes from dlib's 68 landmarks; interocular and detector_score from YuNet.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB, (H, W, 4) RGBA (alpha dropped, as :func:`read_image` does) or
        (H, W) gray uint8.
    detections : list of Detection, optional
        The image's YuNet faces (an entry of :func:`facebias.faces.detect.detect_images`),
        to reuse a detection made for another pipeline; None detects here. Same result.

    Returns
    -------
    dict
        ``yaw``, ``pitch``, ``roll`` (degrees), ``brightness`` (gray 0-255), ``sharpness``
        (gray levels squared), ``face_area`` (0-1), ``brisque`` (0-100, higher = worse),
        ``interocular`` (pixels), ``detector_score`` (YuNet probability); see the module
        docstring for the sign conventions.

    Raises
    ------
    ValueError
        If ``image`` is not an RGB, RGBA or gray uint8 array, or ``detections`` come from
        another detector than YuNet.
    """
    (found,) = check_detections([detections], 1, FACTOR_DETECTOR)
    out, reasons = _measure(image, found)
    for r in reasons:
        log.info("measure_factors: %s", r)
    return out


def _factor_row(id_item: tuple[Any, np.ndarray | str | Path, list[Detection] | None]) -> dict:
    """One :func:`factor_table` row for ``(id, image or path, detections or None)``; a read
    error or an exception becomes its reason."""
    ident, item, found = id_item
    try:
        if isinstance(item, str | Path):
            try:
                item = read_image(item)
            except ImageReadError as exc:
                raise ValueError(f"cannot read image: {exc}") from exc
        vals, reasons = _measure(item, found)
    except Exception as exc:  # one bad image must not drop the row
        vals, reasons = dict.fromkeys(FACTOR_KEYS + _EXTRA_KEYS), [f"error: {exc}"]
    for r in reasons:
        log.info("factor_table[%s]: %s", ident, r)
    return {"id": ident, **vals, "reason": "; ".join(reasons) or None}


def factor_table(
    images: Iterable[np.ndarray | str | Path],
    ids: Sequence | None = None,
    progress: bool = True,
    compute: Any = None,
    detections: Sequence[list[Detection] | None] | None = None,
) -> pd.DataFrame:
    """One row per image (never dropped) of :func:`measure_factors` plus a ``reason`` column.

    ``images`` are RGB uint8 arrays or image paths; ``ids`` (default ``0..n-1``) becomes
    the ``id`` column. ``reason`` is ``None`` when everything was measured, else the
    ``"; "``-joined reasons (including read errors and exceptions). Unmeasured factors are
    NaN in the float columns. ``compute`` (:mod:`facebias.compute`; ``None`` = this
    process) measures chunks on Dask workers (with paths, the workers read the files);
    the table is identical either way.

    Parameters
    ----------
    images : Iterable of numpy.ndarray, str or Path
        RGB uint8 images or image paths.
    ids : Sequence, optional
        One id per image (default ``0..n-1``).
    progress : bool, default True
        Show a progress bar.
    compute : ComputeConfig, Mapping, str, distributed.Client or None
        Where to run.
    detections : Sequence of (list of Detection or None), optional
        Each image's YuNet faces (:func:`facebias.faces.detect.detect_images`), sent with
        it, so that a study that also embeds the images detects once; None (or a None
        entry) detects where the row is measured. The table is the same.

    Returns
    -------
    pandas.DataFrame
        Columns ``id``, :data:`FACTOR_KEYS`, ``interocular``, ``detector_score`` (float,
        units as :func:`measure_factors`) and ``reason``; one row per image, in input
        order.

    Raises
    ------
    ValueError
        If ``ids`` and ``images`` differ in length, or ``detections`` is not one entry per
        image or comes from another detector than YuNet.
    """
    import pandas as pd

    from facebias.compute import map_items

    images = [str(x) if isinstance(x, Path) else x for x in images]
    ids = list(range(len(images))) if ids is None else list(ids)
    if len(ids) != len(images):
        raise ValueError(f"{len(ids)} ids for {len(images)} images")
    found = check_detections(detections, len(images), FACTOR_DETECTOR)
    rows = map_items(_factor_row, list(zip(ids, images, found, strict=True)), compute,
                     desc="factors", progress=progress)
    cols = ["id", *FACTOR_KEYS, *_EXTRA_KEYS]
    table = pd.DataFrame(rows, columns=cols)
    for col in (*FACTOR_KEYS, *_EXTRA_KEYS):
        table[col] = table[col].astype(float)
    table["reason"] = pd.Series([r["reason"] for r in rows], dtype=object)
    return table
