"""On-disk embedding cache: a rerun reuses every embedding (and every failure to enrol).

Key = blake2b(image content: dtype, shape, pixel bytes) x embedder ``model_id`` x its
alignment and detector. One small file per entry under
``<root>/<model key>/<2 hex>/<image hash>.emb``: a one-line JSON header (``enrolled``,
``reason``, ``dim``) followed by the raw float32 vector. Entries are written to a
temporary file and renamed, so a crash leaves no half-written entry; an entry that
cannot be parsed is treated as missing and recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from facebias.compute import iter_chunks
from facebias.faces.detect import Detection
from facebias.faces.embed import (
    BaseEmbedder,
    EmbedResult,
    embed_chunk,
    with_detections,
    worker_spec,
)
from facebias.io import atomic_path

__all__ = ["EmbeddingCache", "image_key"]


def image_key(image: np.ndarray) -> str:
    """Content hash of an image array (dtype, shape and pixels), 32 hex characters.

    Hashes the pixel buffer in place (a copy only for a non-contiguous view). Cost: about
    0.85 ms per 512 x 512 RGB image, under 2 % of embedding it (SFace 45 ms, dlib 90 ms;
    ``benchmarks/bench_faces.py``), so the key stays blake2b: sha256 is about twice as fast
    on CPUs with SHA instructions, but would change every stored key for 1 % of the time.

    Parameters
    ----------
    image : numpy.ndarray
        Any array; equal dtype, shape and bytes give equal keys.

    Returns
    -------
    str
        blake2b (16-byte digest) as 32 lowercase hex characters.

    Examples
    --------
    >>> a = np.zeros((2, 2, 3), np.uint8)
    >>> image_key(a) == image_key(a.copy()), image_key(a) == image_key(a.astype(np.int16))
    (True, False)
    """
    a = np.ascontiguousarray(image)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(memoryview(a).cast("B"))
    return h.hexdigest()


class EmbeddingCache:
    """Embeddings of ``embedder`` for images, memoised on disk under ``root``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def _folder(self, embedder: BaseEmbedder) -> Path:
        spec = f"{embedder.model_id}|{embedder.alignment}|{embedder.detector}"
        return self.root / hashlib.blake2b(spec.encode(), digest_size=8).hexdigest()

    def _path(self, folder: Path, key: str) -> Path:
        return folder / key[:2] / f"{key}.emb"

    @staticmethod
    def _read(path: Path, dim: int) -> tuple[np.ndarray, bool, str | None] | None:
        try:
            raw = path.read_bytes()
            head, _, body = raw.partition(b"\n")
            meta = json.loads(head)
            vec = np.frombuffer(body, dtype="<f4")
            if meta["dim"] != dim or vec.size != dim:
                return None
            return vec, bool(meta["enrolled"]), meta["reason"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @staticmethod
    def _write(path: Path, vec: np.ndarray, enrolled: bool, reason: str | None) -> None:
        head = json.dumps({"enrolled": enrolled, "reason": reason, "dim": int(vec.size)})
        with atomic_path(path) as tmp:
            tmp.write_bytes(head.encode() + b"\n" + np.asarray(vec, "<f4").tobytes())

    def embed(self, embedder: BaseEmbedder, images: Sequence[np.ndarray],
              progress: bool = True, compute: Any = None,
              detections: Sequence[list[Detection] | None] | None = None) -> EmbedResult:
        """Like ``embedder.embed(images)``; cached rows are read, the rest computed (in
        batches of ``embedder.batch_size``) and stored as each batch finishes. Row order
        and failures to enrol are kept. ``compute`` (:mod:`facebias.compute`; ``None`` =
        this process) sends the batches to Dask workers; the vectors are the same.

        Parameters
        ----------
        embedder : BaseEmbedder
            The model; its ``model_id``, ``alignment`` and ``detector`` select the cache
            folder.
        images : Sequence of numpy.ndarray
            RGB uint8 images.
        progress : bool, default True
            Show a tqdm progress bar over the images not in the cache (counted in images,
            advanced per batch), as :func:`facebias.faces.factors.factor_table` does.
        compute : ComputeConfig, Mapping, str, distributed.Client or None
            Where the uncached batches run.
        detections : Sequence of (list of Detection or None), optional
            Each image's faces (:func:`facebias.faces.detect.detect_images`), used for the
            uncached images instead of detecting again; the vectors are the same.

        Returns
        -------
        EmbedResult
            One row per image, in input order; ``hits`` and ``misses`` count cached and
            computed rows.

        Raises
        ------
        ValueError
            If ``detections`` is not one entry per image or comes from another detector.
        """
        pairs = with_detections(images, detections, embedder.detector)
        folder = self._folder(embedder)
        n, dim = len(images), embedder.dim
        vectors = np.full((n, dim), np.nan, np.float32)
        enrolled = np.zeros(n, bool)
        reasons: list[str | None] = [None] * n
        todo: list[int] = []
        keys = [image_key(np.asarray(img)) for img in images]
        for i, key in enumerate(keys):
            got = self._read(self._path(folder, key), dim)
            if got is None:
                todo.append(i)
            else:
                vectors[i], enrolled[i], reasons[i] = got
        self.hits += n - len(todo)
        self.misses += len(todo)
        for _, sl, res in iter_chunks(embed_chunk, [pairs[i] for i in todo], compute,
                                      chunk_size=embedder.batch_size, shared=(worker_spec(embedder),),
                                      desc=f"embed {embedder.name}", progress=progress):
            for j, i in enumerate(todo[sl]):
                vectors[i], enrolled[i], reasons[i] = res.vectors[j], res.enrolled[j], res.reasons[j]
                self._write(self._path(folder, keys[i]), res.vectors[j], bool(res.enrolled[j]),
                            res.reasons[j])
        return EmbedResult(vectors, enrolled, reasons)
