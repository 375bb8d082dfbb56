"""dlib's 68-point facial landmarks (iBUG 300-W layout), offline.

The predictor ships in ``face-recognition-models`` (``shape_predictor_68_face_landmarks.dat``)
and is loaded once per process. Points are ``(x, y)`` pixel coordinates in the input image;
index conventions follow iBUG: 0-16 jaw, 17-21 / 22-26 brows, 27-35 nose, 36-41 / 42-47 eyes
(36 = outer corner of the eye on the image's left), 48-67 mouth.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["landmarks68", "dlib_rect"]


@lru_cache(maxsize=1)
def _predictor():
    import dlib
    import face_recognition_models

    return dlib.shape_predictor(face_recognition_models.pose_predictor_model_location())


def dlib_rect(box):
    """``dlib.rectangle`` of an ``(x, y, w, h)`` pixel box (corners rounded to integers)."""
    import dlib

    x, y, w, h = (float(v) for v in box)
    return dlib.rectangle(int(round(x)), int(round(y)), int(round(x + w)), int(round(y + h)))


def landmarks68(image: np.ndarray, box) -> np.ndarray:
    """68 landmarks of the face inside ``box`` as a ``(68, 2)`` float64 array of pixels.

    ``image`` is RGB (or grayscale) uint8; ``box`` is ``(x, y, w, h)`` in pixels (any
    detector's box; dlib tolerates a modest mismatch with its own detector's boxes) or a
    ``dlib.rectangle`` as dlib's own detector returns it.
    """
    import dlib

    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ValueError(f"landmarks68 needs a uint8 image, got dtype {img.dtype}")
    img = np.ascontiguousarray(img)
    rect = box if isinstance(box, dlib.rectangle) else dlib_rect(box)
    shape = _predictor()(img, rect)
    return np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float64)
