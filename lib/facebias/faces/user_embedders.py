"""User-supplied ArcFace-style embedders: ONNX files and torch modules.

:class:`OnnxEmbedder` and :class:`TorchEmbedder` wrap a model the user brings the same way
as the built-in ones (:mod:`facebias.faces.embedders`): ArcFace-aligned crops, NCHW
float32 ``(x - mean) / std`` in, L2-normalised rows out; their ``model_id`` is the name
plus a hash of the weights (the ONNX file's sha256, the torch ``state_dict``), which keys
:class:`facebias.faces.cache.EmbeddingCache`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from facebias.faces.embedders import BaseEmbedder
from facebias.io import file_sha256

if TYPE_CHECKING:
    import torch


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
