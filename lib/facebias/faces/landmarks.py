"""dlib's 68-point facial landmarks (iBUG 300-W layout), offline.

The predictor ships in ``face-recognition-models`` (``shape_predictor_68_face_landmarks.dat``)
and is loaded once per process. Points are ``(x, y)`` pixel coordinates in the input image;
index conventions follow iBUG: 0-16 jaw, 17-21 / 22-26 brows, 27-35 nose, 36-41 / 42-47 eyes
(36 = outer corner of the eye on the image's left), 48-67 mouth.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["landmarks68", "dlib_rect"]


@lru_cache(maxsize=1)
def _predictor():
    import dlib
    import face_recognition_models

    return dlib.shape_predictor(face_recognition_models.pose_predictor_model_location())


def dlib_rect(box: Sequence[float]) -> Any:
    """``dlib.rectangle`` of an ``(x, y, w, h)`` pixel box (corners rounded to integers).

    Parameters
    ----------
    box : Sequence of float
        ``(x, y, w, h)``: top-left corner, width and height, pixels.

    Returns
    -------
    dlib.rectangle
        Corners ``(round(x), round(y))`` and ``(round(x + w), round(y + h))``.

    Examples
    --------
    >>> dlib_rect((10.4, 20.0, 30.0, 40.6))
    rectangle(10,20,40,61)
    """
    import dlib

    x, y, w, h = (float(v) for v in box)
    return dlib.rectangle(int(round(x)), int(round(y)), int(round(x + w)), int(round(y + h)))


def landmarks68(image: np.ndarray, box: Any) -> np.ndarray:
    """68 landmarks of the face inside ``box`` as a ``(68, 2)`` float64 array of pixels.

    Parameters
    ----------
    image : numpy.ndarray
        RGB (H, W, 3) or gray (H, W) uint8.
    box : tuple of float or dlib.rectangle
        ``(x, y, w, h)`` in pixels (any detector's box; dlib tolerates a modest mismatch
        with its own detector's boxes) or a ``dlib.rectangle`` as dlib's own detector
        returns it.

    Returns
    -------
    numpy.ndarray
        (68, 2) float64 ``(x, y)`` pixels in the iBUG 300-W order of this module.

    Raises
    ------
    ValueError
        If ``image`` is not uint8.
    """
    import dlib

    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ValueError(f"landmarks68 needs a uint8 image, got dtype {img.dtype}")
    img = np.ascontiguousarray(img)
    rect = box if isinstance(box, dlib.rectangle) else dlib_rect(box)
    shape = _predictor()(img, rect)
    return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float64)
