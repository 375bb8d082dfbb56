"""User-supplied ArcFace-style embedders: ONNX files and torch modules.

:class:`OnnxEmbedder` and :class:`TorchEmbedder` wrap a model the user brings the same way
as the built-in ones (:mod:`facebias.faces.embedders`): ArcFace-aligned crops, NCHW
float32 ``(x - mean) / std`` in, L2-normalised rows out; their ``model_id`` is the name
plus a hash of the weights (the ONNX file's sha256, the torch ``state_dict``), which keys
:class:`facebias.faces.cache.EmbeddingCache`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from facebias.faces.embedders import BaseEmbedder
from facebias.io import file_sha256

if TYPE_CHECKING:
    import torch


def _channels(value: float | Sequence[float], what: str) -> np.ndarray:
    """One number, or three per-channel (RGB) values, as a (3,) float32 array."""
    v = np.asarray(value, np.float32).reshape(-1)
    if v.size == 1:
        v = np.repeat(v, 3)
    if v.size != 3 or not np.isfinite(v).all():
        raise ValueError(f"{what}: expected one number or three (R, G, B), got {value!r}")
    return v


def _nchw(crops: np.ndarray, mean: Any, std: Any, rgb: bool, layout: str = "nchw") -> np.ndarray:
    """(n, h, w, 3) RGB uint8 -> float32 ``(x - mean) / std`` in ``layout`` (``"nchw"``:
    (n, 3, h, w); ``"nhwc"``: (n, h, w, 3)); ``mean``/``std`` per RGB channel, applied
    before the channels are reversed for ``rgb=False``."""
    x = (crops.astype(np.float32) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    x = x if rgb else x[..., ::-1]
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if layout == "nchw" else x)


def _preprocessing_tag(size: int, mean: np.ndarray, std: np.ndarray, rgb: bool, layout: str) -> str:
    """8 hex characters naming the preprocessing, part of ``model_id`` (cache key): the same
    weights fed differently give different embeddings."""
    text = f"{size}|{mean.tolist()}|{std.tolist()}|{int(rgb)}|{layout}"
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def _fixed_dim(dim: Any) -> int | None:
    """An ONNX input dimension as an int when the model fixes it, else None."""
    return int(dim) if isinstance(dim, int) and dim > 0 else None


class OnnxEmbedder(BaseEmbedder):
    """A user-supplied ArcFace-style ONNX model: float32 ``(x - mean) / std`` in (NCHW, or
    NHWC with ``layout="nhwc"``), (n, d) out; rows L2-normalised. ``rgb=False`` feeds BGR
    channel order; ``mean`` and ``std`` are one number or three per RGB channel.

    A model whose batch dimension is fixed (exported without dynamic axes) is fed batches
    of exactly that size (one image at a time for a batch of 1; a short last batch is
    padded with zeros and the padding's rows dropped). A model whose input height and
    width are fixed must be given the same ``input_size``; otherwise the constructor
    raises a ValueError naming the size the model expects. ``model_id`` (the cache key) is
    the name, the file's sha256 and a tag of the preprocessing.

    Raises
    ------
    ValueError
        If ``path`` is not a file or not an ONNX model, the model declares another input
        size than ``input_size``, or it fails on a probe batch (the message names the file).
    """

    def __init__(
        self,
        path: str | Path,
        input_size: int = 112,
        mean: float | Sequence[float] = 127.5,
        std: float | Sequence[float] = 127.5,
        rgb: bool = True,
        name: str | None = None,
        detector: str = "yunet",
        layout: str = "nchw",
    ):
        import onnxruntime as ort

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"ONNX model file not found: {path}" + (" (it is a folder)" if path.is_dir() else ""))
        if layout not in ("nchw", "nhwc"):
            raise ValueError(f"layout: expected 'nchw' or 'nhwc', got {layout!r}")
        try:
            self._session = ort.InferenceSession(str(path), providers=ort.get_available_providers())
        except Exception as exc:  # onnxruntime's InvalidProtobuf, Fail, ...: name the file
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"{path} is not a loadable ONNX model ({type(exc).__name__}: "
                             f"{first_line[:200]})") from exc
        first = self._session.get_inputs()[0]
        self._input = first.name
        self.mean, self.std = _channels(mean, "mean"), _channels(std, "std")
        if (self.std <= 0).any():
            raise ValueError(f"std: must be > 0, got {std!r}")
        self.rgb, self.layout = rgb, layout
        self.name = name or path.stem
        self.alignment, self.crop_size, self.detector = "arcface", int(input_size), detector
        tag = _preprocessing_tag(self.crop_size, self.mean, self.std, rgb, layout)
        self.model_id = f"{self.name}-{file_sha256(path)[:12]}-{tag}"
        shape = list(first.shape) if len(first.shape) == 4 else [None] * 4
        #: the model's fixed batch size (``_forward`` feeds it that many crops at a time),
        #: or None when any batch is accepted
        self.fixed_batch = _fixed_dim(shape[0])
        hw = (_fixed_dim(shape[2]), _fixed_dim(shape[3])) if layout == "nchw" else (
            _fixed_dim(shape[1]), _fixed_dim(shape[2]))
        if None not in hw and hw != (self.crop_size, self.crop_size):
            hint = f"set input_size={hw[0]}" if hw[0] == hw[1] else "it needs a square input"
            raise ValueError(
                f"ONNX model {path} expects {hw[0]} x {hw[1]} input, not the "
                f"{self.crop_size} x {self.crop_size} of input_size={self.crop_size}: {hint} "
                f"(OnnxEmbedder(path, input_size=...), or onnx:{path}?input_size=...)"
            )
        probe = np.zeros((1, self.crop_size, self.crop_size, 3), np.uint8)
        try:
            self.dim = int(np.asarray(self._forward(probe)).reshape(1, -1).shape[1])
        except Exception as exc:  # onnxruntime raises its own error types
            dims = ("1 x 3 x {s} x {s}" if layout == "nchw" else "1 x {s} x {s} x 3").format(s=self.crop_size)
            first_line = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise ValueError(
                f"ONNX model {path} failed on a {dims} float32 probe ({first_line}); if it expects "
                "another input size or layout, set input_size= or layout="
            ) from exc

    def _run(self, crops: np.ndarray) -> np.ndarray:
        x = _nchw(crops, self.mean, self.std, self.rgb, self.layout)
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
        rgb: bool = True,
    ):
        import torch

        self._torch = torch
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self._module = module.to(self.device).eval()
        self.mean, self.std, self.rgb = _channels(mean, "mean"), _channels(std, "std"), rgb
        if (self.std <= 0).any():
            raise ValueError(f"std: must be > 0, got {std!r}")
        self.name, self.alignment, self.crop_size = name, "arcface", int(input_size)
        self.detector = detector
        h = hashlib.sha256()
        for key, tensor in module.state_dict().items():
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        tag = _preprocessing_tag(self.crop_size, self.mean, self.std, rgb, "nchw")
        self.model_id = f"{name}-{h.hexdigest()[:12]}-{tag}"
        try:
            self.dim = int(self._probe(self.crop_size).shape[1])
        except Exception as exc:  # torch's shape errors (RuntimeError), or the user's code
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
        x = torch.from_numpy(_nchw(crops, self.mean, self.std, self.rgb)).to(self.device)
        with torch.no_grad():
            y = self._module(x)
        return y.detach().float().cpu().numpy().reshape(len(crops), -1)
