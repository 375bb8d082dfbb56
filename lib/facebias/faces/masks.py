"""Face and skin masks from dlib's 68 landmarks (the BiSeNet fallback of paper 003).

Implements the segmentation of ``docs/specs/batest.md`` (paper 003's face area and skin
brightness): paper 003 uses a BiSeNet face parser; no such model is available offline, so
:func:`face_mask` and :func:`skin_mask` are landmark polygons, comparable in trend but not
numerically identical to the paper's. :func:`nose_bottom_row` is the row above which the
skin brightness is measured. Coordinates are ``(x, y)`` pixels, x right, y down.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

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
