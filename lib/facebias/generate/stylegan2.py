"""StyleGAN2 (config-f) mapping and synthesis networks in plain PyTorch (paper 004).

An independent implementation of the architecture of Karras et al., "Analyzing and
Improving the Image Quality of StyleGAN" (CVPR 2020), as laid out in NVIDIA's
``stylegan2-ada-pytorch`` ``training/networks.py`` ``Generator``: the module tree and the
parameter/buffer names are the same, so that official network pickles load by name
(:func:`facebias.generate.weights.load_network`). No custom CUDA kernels: the resampling
filter (``upfirdn2d``) and the fused bias/activation are written with ordinary torch ops.

Names of a generator with ``img_resolution = R`` (``res`` in 4, 8, ..., R)::

    mapping.fc{i}.weight, mapping.fc{i}.bias          i in 0 .. num_layers-1
    mapping.embed.weight, mapping.embed.bias          when c_dim > 0 (class-conditional)
    mapping.w_avg                                     buffer, the tracked mean of W
    synthesis.b4.const                                the learned 4x4 input
    synthesis.b{res}.resample_filter                  buffer, [1,3,3,1] outer product / 64
    synthesis.b{res}.conv0.*                          res > 4: the 2x upsampling layer
    synthesis.b{res}.conv1.*                          {weight, bias, affine.weight, affine.bias,
                                                       noise_strength, noise_const, resample_filter}
    synthesis.b{res}.torgb.{weight,bias,affine.weight,affine.bias}
    synthesis.b{res}.skip.{weight,resample_filter}    'resnet' architecture only

Semantics reproduced: equalised learning rate (runtime weight gain ``1/sqrt(fan_in)``; the
mapping network's lr multiplier 0.01 folded into the gains), pixel norm of ``z``
(``normalize_2nd_moment``), modulated 3x3 convolution with demodulation (fused into one
grouped convolution), 2x upsampling as a stride-2 transposed convolution followed by the
[1,3,3,1] FIR filter with the official padding, noise inputs (``random`` | ``const`` |
``none``), bias + leaky ReLU(0.2) with gain sqrt(2) and an optional clamp, the 'skip'
generator (ToRGB at every resolution, the running RGB image upsampled with the FIR filter
and summed), broadcasting of ``w`` to ``num_ws`` layers, truncation
``w = w_avg + psi (w - w_avg)`` on the first ``truncation_cutoff`` layers, and fp16 for the
top ``num_fp16_res`` resolutions (CUDA only; with the activation clamp, 256 by default).

:class:`StyleGAN2Generator` wraps the network in the :class:`facebias.generate.Generator`
protocol. Without weights it is randomly initialised: that is for tests and speed
measurements only, its images are not faces.

Modules (this one keeps the whole public API and re-exports the others' public names):

* :mod:`facebias.generate.stylegan2`: :class:`StyleGAN2Generator` (the protocol wrapper),
  :func:`tf32_mode`, loading weights by name (:func:`load_state_checked`);
* :mod:`facebias.generate.stylegan2_network`: the mapping and synthesis networks and their
  layers; a pickle's ``init_kwargs`` as their constructor arguments;
* :mod:`facebias.generate.stylegan2_ops`: the primitives (pixel norm, bias + activation,
  FIR filters, ``upfirdn2d``, modulated convolution).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from facebias.generate import as_latents
from facebias.generate.stylegan2_network import (
    ARCHITECTURES,
    Conv2dLayer,
    FullyConnectedLayer,
    MappingNetwork,
    StyleGAN2Network,
    SynthesisBlock,
    SynthesisLayer,
    SynthesisNetwork,
    ToRGBLayer,
    _network_config,
)
from facebias.generate.stylegan2_ops import (
    bias_act,
    modulated_conv2d,
    normalize_2nd_moment,
    setup_filter,
    upfirdn2d,
    upsample2d,
)

__all__ = [
    "StyleGAN2Generator",
    "StyleGAN2Network",
    "MappingNetwork",
    "SynthesisNetwork",
    "SynthesisBlock",
    "SynthesisLayer",
    "ToRGBLayer",
    "FullyConnectedLayer",
    "Conv2dLayer",
    "setup_filter",
    "upfirdn2d",
    "upsample2d",
    "modulated_conv2d",
    "bias_act",
    "normalize_2nd_moment",
    "NOISE_MODES",
    "SPACES",
    "ARCHITECTURES",
]

NOISE_MODES = ("random", "const", "none")
SPACES = ("z", "w")


@contextlib.contextmanager
def tf32_mode(enabled: bool) -> Iterator[None]:
    """Set PyTorch's two TF32 switches (cuDNN convolutions, cuBLAS matrix products) to
    ``enabled`` inside the block and restore their previous values after it.

    TF32 rounds float32 operands to a 10-bit mantissa on Ampere and newer GPUs. PyTorch's
    default lets cuDNN use it for convolutions, which moves a float32 StyleGAN2 render by
    about 2e-3 (measured on an H100, ``benchmarks/bench_gpu.py``). No effect on the CPU.
    The switches are process-wide: another thread's CUDA work in the block sees them too.

    Examples
    --------
    >>> before = torch.backends.cudnn.allow_tf32
    >>> with tf32_mode(not before):
    ...     torch.backends.cudnn.allow_tf32 == (not before)
    True
    >>> torch.backends.cudnn.allow_tf32 == before
    True
    """
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = bool(enabled)
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


class StyleGAN2Generator:
    """StyleGAN2 config-f behind the :class:`facebias.generate.Generator` protocol.

    ``weights``: an official ``stylegan2-ada-pytorch`` network pickle (``.pkl``), read with
    the restricted unpickler of :mod:`facebias.generate.weights` (no code from the pickle is
    run); the architecture comes from the pickle's ``init_kwargs`` (the architecture
    keywords here are then ignored, except that a ``resolution`` must agree) and the
    ``network`` (``"G_ema"``, default, or ``"G"``) is loaded by parameter name, any missing,
    unexpected or mis-shaped name raising :class:`WeightsMismatchError`. Without ``weights`` the
    network is randomly initialised from ``seed`` with the keyword architecture
    (``resolution`` defaults to 1024, config-f's FFHQ) and ``w_avg`` is estimated from 2048
    mapped z: **for tests and speed measurements only**.

    Latent spaces (``space``): with ``"z"`` (default) latents are z ~ N(0, I), mapped and
    truncated inside :meth:`synthesize`; with ``"w"`` :meth:`sample` returns mapped (and
    truncated) w and :meth:`synthesize` renders w directly, so latent algebra (directions,
    interpolation) runs in W as paper 004 does. ``latent_dim`` is z_dim or w_dim accordingly.

    ``truncation_psi``/``truncation_cutoff``: ``w = w_avg + psi (w - w_avg)`` on the first
    ``cutoff`` of the ``num_ws`` layer inputs (all when None). ``noise_mode``: ``"const"``
    (the stored per-layer noise; deterministic), ``"random"`` (a fresh draw per call from a
    torch generator seeded with ``seed``: the sequence of calls is reproducible, a single
    image is not independent of its batch) or ``"none"``. ``fp16``: on CUDA, run the top
    ``num_fp16_res`` resolutions (the pickle's value, or 4) in float16 with the activation
    clamp (the pickle's ``conv_clamp``, or 256); ignored on the CPU. With ``fp16=False``
    everything runs in float32, even for a pickle trained with ``num_fp16_res > 0`` (whose
    own code would use float16 on a GPU); its ``conv_clamp`` still applies, as it does
    there. ``batch_size``: images per forward pass. ``class_index``: the label for
    class-conditional pickles (c_dim > 0). ``device``: default CUDA when available, else CPU.
    ``tf32``: let float32 convolutions and matrix products use TF32 on the GPU (faster,
    about 2e-3 from the float32 result); off by default, as stylegan2-ada-pytorch trains
    (``allow_tf32=False``), so a CUDA float32 render equals the CPU's within 1e-3
    (:func:`tf32_mode` sets it for each call and restores PyTorch's switches after).

    StyleGAN2 has no explicit pose or light control: ``synthesize`` raises ``ValueError`` for
    a ``yaw`` or ``light`` other than None.

    Raises
    ------
    ValueError
        For an unknown ``noise_mode``, ``space`` or ``network``, ``batch_size < 1``, a
        non-finite ``truncation_psi``, a ``resolution`` that disagrees with the pickle, a
        class-conditional pickle without a valid ``class_index``, or unsupported
        architecture keywords in the pickle.
    WeightsMismatchError
        If the pickle's parameters do not match the network built from its
        ``init_kwargs``.

    Examples
    --------
    A tiny randomly initialised network (not a face model):

    >>> g = StyleGAN2Generator(resolution=8, z_dim=16, w_dim=16, channel_base=64,
    ...                        channel_max=8, mapping_layers=2, device="cpu")
    >>> z = g.sample(2, seed=0)
    >>> z.shape, g.num_ws
    ((2, 16), 4)
    >>> images = g.synthesize(z)
    >>> images.shape, images.dtype
    ((2, 8, 8, 3), dtype('uint8'))
    """

    name = "stylegan2"

    def __init__(self, weights: str | Path | None = None, *, resolution: int | None = None,
                 z_dim: int = 512, w_dim: int = 512, channel_base: int = 32768,
                 channel_max: int = 512, mapping_layers: int = 8,
                 device: str | torch.device | None = None,
                 truncation_psi: float = 1.0, truncation_cutoff: int | None = None,
                 noise_mode: str = "const", fp16: bool = False, batch_size: int = 8, seed: int = 0,
                 space: str = "z", network: str = "G_ema", class_index: int | None = None,
                 tf32: bool = False):
        if noise_mode not in NOISE_MODES:
            raise ValueError(f"noise_mode must be one of {NOISE_MODES}, got {noise_mode!r}")
        if space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {space!r}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not math.isfinite(float(truncation_psi)):
            raise ValueError(f"truncation_psi must be finite, got {truncation_psi}")
        self.device = torch.device(device if device is not None else
                                   ("cuda" if torch.cuda.is_available() else "cpu"))
        self.truncation_psi = float(truncation_psi)
        self.truncation_cutoff = None if truncation_cutoff is None else int(truncation_cutoff)
        self.noise_mode, self.space = noise_mode, space
        self.batch_size, self.seed = int(batch_size), int(seed)
        self.fp16 = bool(fp16) and self.device.type == "cuda"
        self.tf32 = bool(tf32)
        self.weights = None if weights is None else Path(weights)

        if weights is not None:
            from facebias.generate.weights import load_network

            rec = load_network(weights, key=network)
            if rec.class_name != "Generator":
                warnings.warn(f"{weights}: {network} is a {rec.class_name!r}, expected 'Generator'",
                              stacklevel=2)
            config = _network_config(rec.init_args, rec.init_kwargs)
            if resolution is not None and int(resolution) != config["img_resolution"]:
                raise ValueError(f"resolution={resolution} but the pickle's generator makes "
                                 f"{config['img_resolution']}x{config['img_resolution']} images")
            state = rec.state_dict
        else:
            config = dict(z_dim=int(z_dim), c_dim=0, w_dim=int(w_dim),
                          img_resolution=int(resolution or 1024), img_channels=3,
                          mapping_kwargs=dict(num_layers=int(mapping_layers)),
                          synthesis_kwargs=dict(channel_base=int(channel_base),
                                                channel_max=int(channel_max)))
            state = None
        sk = config["synthesis_kwargs"]
        if self.fp16:
            sk["num_fp16_res"] = int(sk.get("num_fp16_res") or 4)
            if sk.get("conv_clamp") is None:
                sk["conv_clamp"] = 256
        if config["img_channels"] not in (1, 3):
            raise ValueError("only 1- or 3-channel generators give RGB, got "
                             f"img_channels={config['img_channels']}")
        self.config = config

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            net = StyleGAN2Network(**config)
        if state is not None:
            load_state_checked(net, state, source=str(weights))
        self.net = net.eval().requires_grad_(False).to(self.device)
        if state is None:
            self._estimate_w_avg()

        self.c_dim = config["c_dim"]
        if self.c_dim > 0:
            if class_index is None or not 0 <= int(class_index) < self.c_dim:
                raise ValueError(f"class-conditional generator (c_dim={self.c_dim}): pass "
                                 f"class_index in [0, {self.c_dim})")
        self.class_index = None if class_index is None else int(class_index)
        self._noise_rng = torch.Generator(device=self.device)
        self._noise_rng.manual_seed(self.seed)

    # ---- properties
    @property
    def z_dim(self) -> int:
        """Dimension of the input latent z."""
        return self.net.z_dim

    @property
    def w_dim(self) -> int:
        """Dimension of the intermediate latent w."""
        return self.net.w_dim

    @property
    def num_ws(self) -> int:
        """Number of per-layer w inputs of the synthesis network (18 at 1024 px)."""
        return self.net.num_ws

    @property
    def resolution(self) -> int:
        """Side of the square output images, pixels."""
        return self.net.img_resolution

    @property
    def latent_dim(self) -> int:
        """Dimension of the latents of :meth:`sample` / :meth:`synthesize`: z_dim in
        ``space="z"``, w_dim in ``space="w"``."""
        return self.z_dim if self.space == "z" else self.w_dim

    def __repr__(self) -> str:
        src = str(self.weights) if self.weights else "random init"
        return (f"StyleGAN2Generator({src}, {self.resolution}px, z={self.z_dim}, w={self.w_dim}, "
                f"space={self.space!r}, psi={self.truncation_psi}, device={self.device})")

    # ---- internals
    @torch.inference_mode()
    def _estimate_w_avg(self, n: int = 2048) -> None:
        g = torch.Generator().manual_seed(self.seed + 1)
        z = torch.randn([n, self.z_dim], generator=g).to(self.device)
        if self.net.c_dim == 0 and self.net.mapping.w_avg_beta is not None:
            with tf32_mode(self.tf32):
                w = self.net.mapping(z, None, broadcast=False)
            self.net.mapping.w_avg.copy_(w.mean(dim=0))

    def _c(self, n: int) -> Tensor | None:
        if self.c_dim == 0:
            return None
        c = torch.zeros([n, self.c_dim], device=self.device)
        c[:, self.class_index] = 1
        return c

    def _ws(self, w: np.ndarray | Tensor) -> Tensor:
        t = torch.as_tensor(np.asarray(w, dtype=np.float32) if not isinstance(w, Tensor) else w,
                            device=self.device, dtype=torch.float32)
        if t.ndim == 2:
            t = t.unsqueeze(1).expand(-1, self.num_ws, -1)
        return t

    @torch.inference_mode()
    def render(self, ws: Tensor) -> Tensor:
        """ws (N, num_ws, w_dim) or (N, w_dim) -> float32 images (N, C, H, W), about [-1, 1],
        in batches of ``batch_size``.

        Parameters
        ----------
        ws : torch.Tensor or numpy.ndarray
            (N, num_ws, w_dim) per-layer w, or (N, w_dim) broadcast to every layer.

        Returns
        -------
        torch.Tensor
            (N, C, R, R) float32 on :attr:`device`, C = the network's image channels.

        Raises
        ------
        ValueError
            If ``ws`` has the wrong shape.
        """
        ws = self._ws(ws)
        out = []
        with tf32_mode(self.tf32):
            for i in range(0, ws.shape[0], self.batch_size):
                out.append(self.net.synthesis(ws[i:i + self.batch_size], noise_mode=self.noise_mode,
                                              allow_fp16=self.fp16, rng=self._noise_rng))
        if not out:
            r = self.resolution
            return torch.zeros([0, self.net.img_channels, r, r], device=self.device)
        return torch.cat(out)

    @staticmethod
    def to_uint8(img: Tensor) -> np.ndarray:
        """(N, C, H, W) in [-1, 1] -> uint8 (N, H, W, 3), as the official scripts quantise:
        ``clamp(x * 127.5 + 128, 0, 255)`` truncated.

        Parameters
        ----------
        img : torch.Tensor
            (N, C, H, W) with C = 3 (RGB) or 1 (gray, repeated to three channels).

        Returns
        -------
        numpy.ndarray
            (N, H, W, 3) RGB uint8.

        Examples
        --------
        >>> StyleGAN2Generator.to_uint8(torch.tensor([-1.0, 0.0, 1.0]).reshape(1, 3, 1, 1))
        array([[[[  0, 128, 255]]]], dtype=uint8)
        """
        x = (img.permute(0, 2, 3, 1) * 127.5 + 128).clamp(0, 255).to(torch.uint8)
        if x.shape[-1] == 1:
            x = x.expand(-1, -1, -1, 3)
        return np.ascontiguousarray(x.cpu().numpy())

    # ---- public API
    def sample(self, n: int, seed: int) -> np.ndarray:
        """``n`` latents, deterministic in ``seed``: z ~ N(0, I) (n, z_dim) float64; in
        ``space="w"`` those z mapped (and truncated) to w (n, w_dim).

        Parameters
        ----------
        n : int
            Number of latents (>= 0).
        seed : int
            Seed of ``numpy.random.default_rng``; z does not depend on the device.

        Returns
        -------
        numpy.ndarray
            (n, latent_dim) float64.

        Raises
        ------
        ValueError
            If ``n < 0``, or in ``space="w"`` with a ``truncation_cutoff`` (w would differ
            per layer).
        """
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        z = np.random.default_rng(seed).standard_normal((n, self.z_dim))
        if self.space == "w":
            if self.truncation_cutoff is not None:
                raise ValueError("space='w' with truncation_cutoff: w differs per layer; use "
                                 "mapping() and synthesize_w() with (n, num_ws, w_dim) ws")
            return self.mapping(z)
        return z

    @torch.inference_mode()
    def mapping(self, z: np.ndarray, psi: float | None = None,
                cutoff: int | None = None) -> np.ndarray:
        """z (n, z_dim) -> w (n, w_dim) float64, truncated with ``psi`` (default: the
        generator's ``truncation_psi``). With a ``cutoff`` (default: ``truncation_cutoff``)
        the result is per layer, (n, num_ws, w_dim).

        Parameters
        ----------
        z : numpy.ndarray
            (n, z_dim) latents.
        psi : float, optional
            Truncation ``w = w_avg + psi (w - w_avg)``; 1 = none.
        cutoff : int, optional
            Truncate only the first ``cutoff`` layer inputs.

        Returns
        -------
        numpy.ndarray
            (n, w_dim) float64, or (n, num_ws, w_dim) with a cutoff.

        Raises
        ------
        ValueError
            If ``z`` is not (n, z_dim) or not finite.
        """
        z = as_latents(z, self.z_dim, "z")
        psi = self.truncation_psi if psi is None else float(psi)
        cutoff = self.truncation_cutoff if cutoff is None else int(cutoff)
        out = []
        step = max(self.batch_size, 256)
        with tf32_mode(self.tf32):
            for i in range(0, len(z), step):
                zt = torch.as_tensor(z[i:i + step], dtype=torch.float32, device=self.device)
                out.append(self.net.mapping(zt, self._c(len(zt)), truncation_psi=psi,
                                            truncation_cutoff=cutoff, broadcast=cutoff is not None))
        if not out:
            shape = (0, self.w_dim) if cutoff is None else (0, self.num_ws, self.w_dim)
            return np.zeros(shape)
        return torch.cat(out).double().cpu().numpy()

    def synthesize_w(self, w: np.ndarray) -> np.ndarray:
        """w (n, w_dim), or per-layer ws (n, num_ws, w_dim), -> uint8 RGB (n, H, W, 3). No
        truncation is applied here (it belongs to :meth:`mapping`).

        Parameters
        ----------
        w : numpy.ndarray
            (n, w_dim) or (n, num_ws, w_dim), finite.

        Returns
        -------
        numpy.ndarray
            (n, resolution, resolution, 3) RGB uint8.

        Raises
        ------
        ValueError
            For another shape or a non-finite value.
        """
        a = np.asarray(w, dtype=np.float64)
        ok = (a.ndim == 2 and a.shape[1] == self.w_dim) or (
            a.ndim == 3 and a.shape[1:] == (self.num_ws, self.w_dim))
        if not ok:
            raise ValueError(f"w: expected (n, {self.w_dim}) or (n, {self.num_ws}, {self.w_dim}), "
                             f"got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError("w: values must be finite")
        return self.to_uint8(self.render(a))

    def synthesize(self, latents: np.ndarray, yaw: Any = None, light: Any = None) -> np.ndarray:
        """Latents (z, or w in ``space="w"``) -> uint8 RGB images (n, H, W, 3).

        Parameters
        ----------
        latents : numpy.ndarray
            (n, latent_dim): z in ``space="z"`` (mapped and truncated here), w in
            ``space="w"``.
        yaw, light : None
            Not supported by StyleGAN2; must be None.

        Returns
        -------
        numpy.ndarray
            (n, resolution, resolution, 3) RGB uint8.

        Raises
        ------
        ValueError
            For a ``yaw`` or ``light``, or latents of the wrong shape or not finite.
        """
        if yaw is not None or light is not None:
            raise ValueError("StyleGAN2 has no explicit yaw or light control; pass yaw=None and "
                             "light=None (to vary pose or lighting, move along a direction in W "
                             "with space='w')")
        if self.space == "w":
            return self.synthesize_w(latents)
        w = self.mapping(as_latents(latents, self.z_dim, "latents"))
        return self.synthesize_w(w)


class WeightsMismatchError(ValueError):
    """A state dict does not match the network: lists missing, unexpected and
    shape-mismatched names."""


def load_state_checked(net: nn.Module, state: dict[str, Tensor], source: str = "weights",
                       kind: str = "StyleGAN2") -> None:
    """Copy ``state`` into ``net`` by name, after checking that the names and shapes are
    exactly the network's; raise :class:`WeightsMismatchError` listing every difference.

    Parameters
    ----------
    net : torch.nn.Module
        The network to fill; floating-point tensors are copied as float32.
    state : dict of str to torch.Tensor
        Parameters and buffers by name.
    source : str, default "weights"
        Where ``state`` came from, for the error message.
    kind : str, default "StyleGAN2"
        The network's name, for the error message.

    Raises
    ------
    WeightsMismatchError
        Listing the missing, unexpected and mis-shaped names.

    Examples
    --------
    >>> load_state_checked(nn.Linear(2, 3), {"weight": torch.zeros(3, 2)})
    Traceback (most recent call last):
    ...
    facebias.generate.stylegan2.WeightsMismatchError: weights: the weights do not match ...
      missing (1): bias
    """
    own = net.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(f"{k}: expected {tuple(own[k].shape)}, got {tuple(state[k].shape)}"
                    for k in set(own) & set(state) if tuple(own[k].shape) != tuple(state[k].shape))
    if missing or unexpected or shapes:
        lines = [f"{source}: the weights do not match the {kind} network built from their "
                 f"init_kwargs"]
        for what, items in (("missing", missing), ("unexpected", unexpected),
                            ("shape mismatch", shapes)):
            if items:
                lines.append(f"  {what} ({len(items)}): " + ", ".join(items))
        raise WeightsMismatchError("\n".join(lines))
    net.load_state_dict({k: v.detach().to(torch.float32) if v.is_floating_point() else v
                         for k, v in state.items()}, strict=True)


__all__ += ["WeightsMismatchError", "load_state_checked"]
