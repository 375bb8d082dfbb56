"""Face embedders: detect -> primary face -> align -> embed, with failures to enrol kept.

Every embedder returns L2-normalised float32 rows, one per input, in input order; an
input with no usable face gets a NaN row, ``enrolled=False`` and a reason string.
Built-in models: ``"dlib"`` (dlib ResNet, 150 x 150 dlib chips, 128-d) and ``"sface"``
(OpenCV SFace int8, 112 x 112 ArcFace crops, 128-d). :class:`OnnxEmbedder` and
:class:`TorchEmbedder` wrap user-supplied ArcFace-style models the same way.

This module loads and runs them: :func:`load_embedder` / :func:`shared_embedder` (one
model per process), :func:`embed_many` (chunks in this process or on Dask) and
:func:`pool_embed` (local worker processes), with the chunk helpers the cache and the
workers use (:func:`worker_spec`, :func:`with_detections`, :func:`embed_chunk`,
:func:`concat_results`).

Modules (module -> job)
-----------------------
* :mod:`facebias.faces.embedders`: :class:`BaseEmbedder` (the pipeline),
  :class:`EmbedResult`, the built-in dlib and SFace models and their thresholds.
* :mod:`facebias.faces.user_embedders`: :class:`OnnxEmbedder`, :class:`TorchEmbedder`.
* this module: loading, sharing and running embedders; every public name of the two
  modules above is re-exported here.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np

from facebias.faces.detect import Detection, check_detections
from facebias.faces.embedders import (
    EMBEDDERS,
    PUBLISHED_THRESHOLDS,
    SFACE_MODEL,
    BaseEmbedder,
    DlibEmbedder,
    EmbedResult,
    SFaceEmbedder,
    l2_normalise,
)
from facebias.faces.specs import ModelSpec, load_from_spec, parse_model_spec
from facebias.faces.user_embedders import COMMON_INPUT_SIZES, OnnxEmbedder, TorchEmbedder

__all__ = [
    "SFACE_MODEL",
    "EMBEDDERS",
    "PUBLISHED_THRESHOLDS",
    "EmbedResult",
    "l2_normalise",
    "BaseEmbedder",
    "DlibEmbedder",
    "SFaceEmbedder",
    "OnnxEmbedder",
    "COMMON_INPUT_SIZES",
    "TorchEmbedder",
    "shared_embedder",
    "worker_spec",
    "Pair",
    "with_detections",
    "embed_chunk",
    "concat_results",
    "pool_threads",
    "pool_embed",
    "embed_many",
    "load_embedder",
]


_SHARED: dict[tuple, BaseEmbedder] = {}


def shared_embedder(name: str, detector: str = "yunet", model_id: str | None = None) -> BaseEmbedder:
    """An embedder loaded once per process (what a Dask or pool worker uses).

    Parameters
    ----------
    name : str
        A model spec (:func:`load_embedder`).
    detector : str, default "yunet"
        The face detector it uses.
    model_id : str, optional
        The ``model_id`` the caller's embedder has (user models: their weights' hash); the
        embedder of that spec, detector and ``model_id`` (one this process loaded, or a
        new load, checked to have it).

    Returns
    -------
    BaseEmbedder
        The same object on every call with these arguments.

    Raises
    ------
    ValueError
        For a bad spec or a model that cannot be loaded, or a ``model_id`` other than
        the file now gives (the weights changed on disk since the caller loaded them).
    """
    key = (name, detector) if model_id is None else (name, detector, model_id)
    if key not in _SHARED:
        emb = load_embedder(name, detector)
        if model_id is not None and emb.model_id != model_id:
            raise ValueError(f"model {name!r}: its weights changed on disk since it was loaded "
                             f"({model_id} then, {emb.model_id} now); load it again")
        _SHARED[key] = emb
    return _SHARED[key]


def _worker_embedder(spec: BaseEmbedder | tuple) -> BaseEmbedder:
    return shared_embedder(*spec) if isinstance(spec, tuple) else spec


def worker_spec(embedder: BaseEmbedder) -> BaseEmbedder | tuple:
    """What to send to Dask or pool workers: ``(name, detector)`` for a built-in model and
    ``(spec, detector, model_id)`` for a user model loaded from a spec (:func:`load_embedder`;
    their C++ or onnxruntime objects do not pickle, so each worker loads its own, checked to
    have the same weights), else the embedder itself.

    Parameters
    ----------
    embedder : BaseEmbedder
        The model.

    Returns
    -------
    BaseEmbedder or tuple
        What :func:`embed_chunk` takes as ``spec``.
    """
    if isinstance(embedder, DlibEmbedder | SFaceEmbedder):
        return (embedder.spec or embedder.name, embedder.detector)
    if embedder.spec:
        return (embedder.spec, embedder.detector, embedder.model_id)
    return embedder


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
_POOLS: dict[tuple[tuple, int, int], ProcessPoolExecutor] = {}


def _init_pool_worker(spec: tuple, threads: int) -> None:
    """Pool initializer: give OpenCV this worker's share of the cores, load the model."""
    import cv2

    cv2.setNumThreads(threads)
    _POOL_WORKER[:] = [shared_embedder(*spec)]


def _pool_chunk(pairs: Sequence[Pair], paths: bool) -> EmbedResult:
    return _embed_pairs(_POOL_WORKER[0], pairs, paths)


def _new_pool(spec: tuple, workers: int, threads: int) -> ProcessPoolExecutor:
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
    chunk), so the result equals the serial one bit for bit (tests/faces/test_batching.py).

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
        If ``workers < 1`` or ``threads < 1``, ``embedder`` was not loaded from a model
        spec (:func:`load_embedder`; others: :func:`embed_many` with a Dask ``compute``), or
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
        raise ValueError(f"workers > 1 runs models loaded by load_embedder(spec); embed "
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


def load_embedder(name: str | ModelSpec, detector: str = "yunet") -> BaseEmbedder:
    """An embedder by model spec (:mod:`facebias.faces.specs`) using ``detector``.

    Built in: ``"sface"`` (OpenCV SFace on 112 x 112 ArcFace crops) and ``"dlib"`` (dlib
    ResNet on 150 x 150 chips), 128-d unit vectors whose dot product is the cosine
    similarity; their published thresholds (match iff similarity > t) are
    :data:`PUBLISHED_THRESHOLDS`. A user model: ``"onnx:PATH[?options]"``
    (:class:`OnnxEmbedder`) or ``"torch:MODULE:FUNCTION[?options]"`` (:class:`TorchEmbedder`
    of ``MODULE.FUNCTION()``).

    Parameters
    ----------
    name : str or ModelSpec
        The model spec.
    detector : str, default "yunet"
        The face detector (:data:`facebias.faces.detect.DETECTORS`).

    Returns
    -------
    BaseEmbedder
        A new embedder (see :func:`shared_embedder` for a per-process one); its ``spec``
        attribute is the spec's text, so worker processes can load the same model.

    Raises
    ------
    ValueError
        One line for a bad spec or a model that cannot be loaded or run (naming the file,
        module or function, and what to set).
    """
    spec = parse_model_spec(name)
    if spec.kind == "dlib":
        emb: BaseEmbedder = DlibEmbedder(detector)
    elif spec.kind == "sface":
        emb = SFaceEmbedder(detector)
    else:
        try:
            emb = load_from_spec(spec, detector)
        except ValueError as exc:
            msg = " ".join(str(exc).split())
            raise ValueError(msg if spec.text in msg else f"model {spec.text!r}: {msg}") from exc
    emb.spec = spec.text
    if not spec.builtin:  # this process's workers (serial chunks) reuse it, keyed by its weights
        _SHARED.setdefault((spec.text, detector, emb.model_id), emb)
    return emb
