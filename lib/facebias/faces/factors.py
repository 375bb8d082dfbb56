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

Modules (module -> job)
-----------------------
* :mod:`facebias.faces.pose`: head pose from 68 landmarks.
* :mod:`facebias.faces.masks`: landmark-polygon face and skin masks.
* :mod:`facebias.faces.quality`: skin / box brightness, sharpness, BRISQUE.
* this module: face size and shape (face area, interocular, mask IoU, aligned face
  mask), the YuNet face the factors are measured on, and :func:`measure_factors` /
  :func:`factor_table`. The names of the three modules above are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
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
from facebias.faces.masks import face_mask, nose_bottom_row, skin_mask
from facebias.faces.pose import (
    MODEL_3D,
    POSE_LANDMARKS,
    camera_matrix,
    head_pose,
    rotation_from_pose,
)
from facebias.faces.quality import (
    BRISQUE_FILES,
    BRISQUE_SEARCH_DIRS,
    box_brightness,
    brisque,
    face_skin_brightness,
    sharpness,
)

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("facebias.faces")

__all__ = [
    "FACTOR_DETECTOR",
    "FACTOR_KEYS",
    "BRISQUE_SEARCH_DIRS",
    "BRISQUE_FILES",
    "MODEL_3D",
    "POSE_LANDMARKS",
    "camera_matrix",
    "rotation_from_pose",
    "head_pose",
    "skin_mask",
    "face_mask",
    "nose_bottom_row",
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
