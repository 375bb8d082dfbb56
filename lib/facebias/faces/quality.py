"""Light and image quality of a face: skin brightness, sharpness, BRISQUE.

Implements the brightness and quality factors of ``docs/specs/batest.md`` (paper 003):
face-skin brightness above the nose (:func:`face_skin_brightness`, gray levels 0-255, OpenCV's
RGB -> gray weights) with a detection-box fallback (:func:`box_brightness`), sharpness as
the variance of the Laplacian (:func:`sharpness`; higher = sharper) and OpenCV's
no-reference BRISQUE score (:func:`brisque`, roughly 0-100, **higher = worse**) from the
LIVE model files found in ``$FACEBIAS_BRISQUE_DIR`` or :data:`BRISQUE_SEARCH_DIRS`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import cv2
import numpy as np

log = logging.getLogger("facebias.faces")

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
