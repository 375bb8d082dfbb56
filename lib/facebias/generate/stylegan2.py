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
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from facebias.generate import as_latents

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
]

NOISE_MODES = ("random", "const", "none")
SPACES = ("z", "w")
ARCHITECTURES = ("orig", "skip", "resnet")
_ACT_GAIN = {"linear": 1.0, "relu": math.sqrt(2.0), "lrelu": math.sqrt(2.0)}


# ---------------------------------------------------------------------------- primitives


def normalize_2nd_moment(x: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x`` divided by its root mean square along ``dim`` (StyleGAN's pixel norm of z).

    Parameters
    ----------
    x : torch.Tensor
        Any shape, e.g. (N, z_dim).
    dim : int, default 1
        The axis normalised.
    eps : float, default 1e-8
        Added to the mean square.

    Returns
    -------
    torch.Tensor
        Same shape; the mean square along ``dim`` is 1.

    Examples
    --------
    >>> normalize_2nd_moment(torch.tensor([[3.0, 4.0]]))  # RMS of (3, 4) is sqrt(12.5)
    tensor([[0.8485, 1.1314]])
    """
    return x * (x.square().mean(dim=dim, keepdim=True) + eps).rsqrt()


def bias_act(x: Tensor, b: Tensor | None = None, act: str = "linear", gain: float | None = None,
             clamp: float | None = None) -> Tensor:
    """``clamp(act(x + b) * gain)``; ``b`` broadcasts along dim 1; ``gain`` defaults to the
    activation's own (sqrt 2 for (leaky) ReLU, 1 for linear); leaky ReLU slope 0.2.

    Parameters
    ----------
    x : torch.Tensor
        (N, C, ...) activations.
    b : torch.Tensor, optional
        (C,) bias.
    act : {"linear", "relu", "lrelu"}, default "linear"
        The activation.
    gain : float, optional
        Output scale (default: the activation's own).
    clamp : float, optional
        Clip the output to ``[-clamp, clamp]`` (ignored when None or negative).

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``.

    Raises
    ------
    ValueError
        For an unknown ``act``.

    Examples
    --------
    >>> bias_act(torch.tensor([[-1.0, 1.0]]), torch.tensor([0.0, 1.0]), act="lrelu")
    tensor([[-0.2828,  2.8284]])
    """
    if act not in _ACT_GAIN:
        raise ValueError(f"unknown activation {act!r}; choose one of {sorted(_ACT_GAIN)}")
    if b is not None:
        x = x + b.to(x.dtype).reshape([1, -1] + [1] * (x.ndim - 2))
    if act == "lrelu":
        x = F.leaky_relu(x, 0.2)
    elif act == "relu":
        x = F.relu(x)
    gain = _ACT_GAIN[act] if gain is None else float(gain)
    if gain != 1:
        x = x * gain
    if clamp is not None and clamp >= 0:
        x = x.clamp(-clamp, clamp)
    return x


def setup_filter(taps: Sequence[float] = (1, 3, 3, 1), normalize: bool = True) -> Tensor:
    """A 2D FIR filter from 1D ``taps``: their outer product, normalised to sum 1 (float32).
    With 8 or more taps the filter stays 1D (separable), as the official buffers do;
    :func:`upfirdn2d` applies a 1D filter along both axes.

    Parameters
    ----------
    taps : Sequence of float, default (1, 3, 3, 1)
        The 1D filter taps.
    normalize : bool, default True
        Scale the filter to sum 1.

    Returns
    -------
    torch.Tensor
        (len(taps), len(taps)) float32, or (len(taps),) with 8 or more taps.

    Raises
    ------
    ValueError
        If ``taps`` is empty or not 1D.

    Examples
    --------
    >>> f = setup_filter([1, 3, 3, 1])
    >>> f.shape, float(f.sum()), float(f[0, 0] * 64)
    (torch.Size([4, 4]), 1.0, 1.0)
    """
    f = torch.as_tensor(np.asarray(taps, dtype=np.float32))
    if f.ndim != 1 or f.numel() == 0:
        raise ValueError("filter taps must be a non-empty 1D sequence")
    if f.numel() < 8:
        f = torch.outer(f, f)
    if normalize:
        f = f / f.sum()
    return f


def upfirdn2d(x: Tensor, f: Tensor, up: int = 1, padding: Sequence[int] = (0, 0, 0, 0),
              gain: float = 1.0) -> Tensor:
    """Upsample by zero insertion, pad, and convolve each channel with the 2D FIR filter ``f``.

    ``x`` is (N, C, H, W); ``f`` is 2D, or 1D for a separable filter (``outer(f, f)``);
    ``padding`` is (left, right, top, bottom) in upsampled pixels (negative values crop); the
    filter is scaled by ``gain`` and applied as a true convolution (flipped), as NVIDIA's
    reference ``upfirdn2d`` does with ``flip_filter=False``. Output size:
    ``H * up + top + bottom - fh + 1`` (and likewise for W).

    Parameters
    ----------
    x : torch.Tensor
        (N, C, H, W).
    f : torch.Tensor
        (fh, fw) FIR filter, or (fh,) for a separable one (see :func:`setup_filter`).
    up : int, default 1
        Upsampling factor (zeros inserted between pixels).
    padding : Sequence of int, default (0, 0, 0, 0)
        (left, right, top, bottom), in upsampled pixels; negative crops.
    gain : float, default 1.0
        Filter scale (``up ** 2`` keeps the mean of an upsampled image).

    Returns
    -------
    torch.Tensor
        (N, C, H', W') in the dtype of ``x``.

    Examples
    --------
    >>> upfirdn2d(torch.ones(1, 2, 4, 4), setup_filter([1, 1]), up=2).shape
    torch.Size([1, 2, 7, 7])
    """
    if f.ndim == 1:
        f = torch.outer(f, f)
    n, c, h, w = x.shape
    px0, px1, py0, py1 = (int(p) for p in padding)
    if up > 1:
        x = x.reshape(n, c, h, 1, w, 1)
        x = F.pad(x, [0, up - 1, 0, 0, 0, up - 1])
        x = x.reshape(n, c, h * up, w * up)
    x = F.pad(x, [max(px0, 0), max(px1, 0), max(py0, 0), max(py1, 0)])
    x = x[:, :, max(-py0, 0): x.shape[2] - max(-py1, 0), max(-px0, 0): x.shape[3] - max(-px1, 0)]
    k = (f * gain).to(x.dtype).flip([0, 1])
    k = k[None, None].expand(c, 1, *k.shape)
    return F.conv2d(x, k, groups=c)


def upsample2d(x: Tensor, f: Tensor, up: int = 2) -> Tensor:
    """2x (``up``x) upsampling with the FIR filter ``f``: output (N, C, up H, up W).

    Parameters
    ----------
    x : torch.Tensor
        (N, C, H, W).
    f : torch.Tensor
        FIR filter (see :func:`setup_filter`), scaled by ``up ** 2`` here.
    up : int, default 2
        Upsampling factor.

    Returns
    -------
    torch.Tensor
        (N, C, up H, up W); a constant image stays constant away from the border.

    Examples
    --------
    >>> y = upsample2d(torch.ones(1, 1, 4, 4), setup_filter())
    >>> y.shape, float(y[0, 0, 3, 3])
    (torch.Size([1, 1, 8, 8]), 1.0)
    """
    fh = f.shape[0]
    p0, p1 = (fh + up - 1) // 2, (fh - up) // 2
    return upfirdn2d(x, f, up=up, padding=(p0, p1, p0, p1), gain=up * up)


def _conv_up2(x: Tensor, w: Tensor, f: Tensor, groups: int, padding: int) -> Tensor:
    """Convolution with ``w`` (O, I/groups, k, k) at twice the resolution of ``x``: a
    stride-2 transposed convolution (the weight used as the transposed kernel, unflipped)
    followed by the FIR filter, with the padding arithmetic of the official
    ``conv2d_resample`` for ``up=2``."""
    out_ch, in_pg, kh, kw = w.shape
    fh = f.shape[0]
    if kh == 1 and kw == 1:  # 1x1: convolve, then upsample
        x = F.conv2d(x, w, groups=groups)
        p0, p1 = padding + (fh + 1) // 2, padding + (fh - 2) // 2
        return upfirdn2d(x, f, up=2, padding=(p0, p1, p0, p1), gain=4)
    p0 = padding + (fh + 1) // 2 - (kw - 1)
    p1 = padding + (fh - 2) // 2 - (kw - 2)
    pt = max(min(-p0, -p1), 0)
    if groups == 1:
        wt = w.transpose(0, 1)
    else:
        wt = w.reshape(groups, out_ch // groups, in_pg, kh, kw).transpose(1, 2)
        wt = wt.reshape(groups * in_pg, out_ch // groups, kh, kw)
    x = F.conv_transpose2d(x, wt, stride=2, padding=pt, groups=groups)
    return upfirdn2d(x, f, padding=(p0 + pt, p1 + pt, p0 + pt, p1 + pt), gain=4)


def _conv(x: Tensor, w: Tensor, up: int, padding: int, f: Tensor | None, groups: int) -> Tensor:
    if up == 1:
        return F.conv2d(x, w, padding=padding, groups=groups)
    if up != 2 or f is None:
        raise ValueError("only up=1, or up=2 with a resampling filter, are supported")
    return _conv_up2(x, w, f, groups, padding)


def modulated_conv2d(x: Tensor, weight: Tensor, styles: Tensor, noise: Tensor | None = None,
                     up: int = 1, padding: int = 0, resample_filter: Tensor | None = None,
                     demodulate: bool = True, fused: bool = True) -> Tensor:
    """StyleGAN2's modulated convolution.

    Per sample ``n``: ``w'[o,i,:,:] = weight[o,i] * styles[n,i]``; with ``demodulate`` each
    output filter is rescaled to unit norm, ``w'' = w' / sqrt(sum_{i,ky,kx} w'^2 + 1e-8)``;
    ``x[n]`` is convolved with it (``up=2``: at twice the resolution) and ``noise`` added.
    ``fused`` does all samples in one grouped convolution; otherwise the styles scale the
    activations and the demodulation the output (same maths, the official fp16 path). In
    fp16 with demodulation, weight and styles are first rescaled by their max norms to
    avoid overflow (the result is invariant to that up to the epsilon).

    Parameters
    ----------
    x : torch.Tensor
        (N, I, H, W) activations.
    weight : torch.Tensor
        (O, I, kh, kw) convolution weight.
    styles : torch.Tensor
        (N, I) per-sample input-channel scales.
    noise : torch.Tensor, optional
        Added to the output; broadcasts against (N, O, H', W').
    up : int, default 1
        1, or 2 (needs ``resample_filter``).
    padding : int, default 0
        Convolution padding, pixels.
    resample_filter : torch.Tensor, optional
        The FIR filter for ``up=2``.
    demodulate : bool, default True
        Rescale every output filter to unit norm.
    fused : bool, default True
        One grouped convolution for the batch (else scale activations).

    Returns
    -------
    torch.Tensor
        (N, O, H', W'), with ``H' = H`` for ``up=1`` and ``2 H`` for ``up=2`` (same padding).

    Raises
    ------
    ValueError
        For ``up`` other than 1, or 2 with a filter.

    Examples
    --------
    >>> x, w = torch.ones(2, 3, 4, 4), torch.ones(5, 3, 3, 3)
    >>> modulated_conv2d(x, w, torch.ones(2, 3), padding=1).shape
    torch.Size([2, 5, 4, 4])
    """
    n = x.shape[0]
    out_ch, in_ch, kh, kw = weight.shape
    if x.dtype == torch.float16 and demodulate:
        weight = weight * (1 / math.sqrt(in_ch * kh * kw)
                           / weight.norm(float("inf"), dim=[1, 2, 3], keepdim=True))
        styles = styles / styles.norm(float("inf"), dim=1, keepdim=True)
    dcoefs = None
    if demodulate or fused:
        wn = weight.unsqueeze(0) * styles.reshape(n, 1, -1, 1, 1)  # (N, O, I, k, k)
        if demodulate:
            dcoefs = (wn.square().sum(dim=[2, 3, 4]) + 1e-8).rsqrt()  # (N, O)
    if not fused:
        x = x * styles.to(x.dtype).reshape(n, -1, 1, 1)
        x = _conv(x, weight.to(x.dtype), up, padding, resample_filter, groups=1)
        if dcoefs is not None:
            x = x * dcoefs.to(x.dtype).reshape(n, -1, 1, 1)
        if noise is not None:
            x = x + noise.to(x.dtype)
        return x
    if dcoefs is not None:
        wn = wn * dcoefs.reshape(n, -1, 1, 1, 1)
    wn = wn.reshape(n * out_ch, in_ch, kh, kw).to(x.dtype)
    y = _conv(x.reshape(1, n * in_ch, *x.shape[2:]), wn, up, padding, resample_filter, groups=n)
    y = y.reshape(n, out_ch, *y.shape[2:])
    if noise is not None:
        y = y + noise.to(y.dtype)
    return y


# ---------------------------------------------------------------------------- layers


class FullyConnectedLayer(nn.Module):
    """Dense layer with equalised learning rate: ``weight`` is stored as N(0, 1) / lr_mul and
    scaled at run time by ``lr_mul / sqrt(in_features)``; ``bias`` by ``lr_mul``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 activation: str = "linear", lr_multiplier: float = 1.0, bias_init: float = 0.0):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.activation = activation
        self.weight = nn.Parameter(torch.randn([out_features, in_features]) / lr_multiplier)
        self.bias = nn.Parameter(torch.full([out_features], float(bias_init))) if bias else None
        self.weight_gain = lr_multiplier / math.sqrt(in_features)
        self.bias_gain = lr_multiplier

    def forward(self, x: Tensor) -> Tensor:
        """``act(x @ (gain * weight).T + bias_gain * bias)``.

        Parameters
        ----------
        x : torch.Tensor
            (N, in_features).

        Returns
        -------
        torch.Tensor
            (N, out_features).

        Examples
        --------
        >>> FullyConnectedLayer(4, 3)(torch.ones(2, 4)).shape
        torch.Size([2, 3])
        """
        w = self.weight.to(x.dtype) * self.weight_gain
        b = None if self.bias is None else self.bias.to(x.dtype) * self.bias_gain
        return bias_act(x.matmul(w.t()), b, act=self.activation)


class Conv2dLayer(nn.Module):
    """Plain (non-modulated) convolution with equalised learning rate; here only as the
    1x1 upsampling ``skip`` of 'resnet' synthesis blocks."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias: bool = True,
                 activation: str = "linear", up: int = 1, resample_filter=(1, 3, 3, 1),
                 conv_clamp: float | None = None):
        super().__init__()
        self.activation, self.up, self.conv_clamp = activation, up, conv_clamp
        self.register_buffer("resample_filter", setup_filter(resample_filter))
        self.padding = kernel_size // 2
        self.weight_gain = 1 / math.sqrt(in_channels * kernel_size ** 2)
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, kernel_size, kernel_size]))
        self.bias = nn.Parameter(torch.zeros([out_channels])) if bias else None

    def forward(self, x: Tensor, gain: float = 1.0) -> Tensor:
        """Convolve (upsampling ``up`` times), add the bias, activate.

        Parameters
        ----------
        x : torch.Tensor
            (N, in_channels, H, W).
        gain : float, default 1.0
            Extra output scale; also scales the clamp.

        Returns
        -------
        torch.Tensor
            (N, out_channels, up H, up W).
        """
        w = (self.weight * self.weight_gain).to(x.dtype)
        x = _conv(x, w, self.up, self.padding, self.resample_filter, groups=1)
        clamp = self.conv_clamp * gain if self.conv_clamp is not None else None
        return bias_act(x, self.bias, act=self.activation, gain=_ACT_GAIN[self.activation] * gain,
                        clamp=clamp)


class MappingNetwork(nn.Module):
    """z (and optional class label c) -> w: pixel norm, ``num_layers`` dense layers with
    leaky ReLU and lr multiplier 0.01, broadcast to ``num_ws`` copies, truncation."""

    def __init__(self, z_dim: int, c_dim: int, w_dim: int, num_ws: int, num_layers: int = 8,
                 embed_features: int | None = None, layer_features: int | None = None,
                 activation: str = "lrelu", lr_multiplier: float = 0.01,
                 w_avg_beta: float | None = 0.995):
        super().__init__()
        self.z_dim, self.c_dim, self.w_dim, self.num_ws = z_dim, c_dim, w_dim, num_ws
        self.num_layers = num_layers
        if embed_features is None:
            embed_features = w_dim
        if c_dim == 0:
            embed_features = 0
        if layer_features is None:
            layer_features = w_dim
        if z_dim == 0 and c_dim == 0:
            raise ValueError("the mapping network needs z_dim > 0 or c_dim > 0")
        features = [z_dim + embed_features] + [layer_features] * (num_layers - 1) + [w_dim]
        if c_dim > 0:
            self.embed = FullyConnectedLayer(c_dim, embed_features)
        for i in range(num_layers):
            setattr(self, f"fc{i}", FullyConnectedLayer(features[i], features[i + 1],
                                                        activation=activation,
                                                        lr_multiplier=lr_multiplier))
        self.w_avg_beta = w_avg_beta
        if w_avg_beta is not None:  # the official network has no w_avg without tracking
            self.register_buffer("w_avg", torch.zeros([w_dim]))

    def forward(self, z: Tensor | None, c: Tensor | None = None, truncation_psi: float = 1.0,
                truncation_cutoff: int | None = None, broadcast: bool = True) -> Tensor:
        """Map z (and c) to w, with truncation ``w = w_avg + psi (w - w_avg)``.

        Parameters
        ----------
        z : torch.Tensor or None
            (N, z_dim) latents (None only when ``z_dim == 0``).
        c : torch.Tensor, optional
            (N, c_dim) one-hot labels; required when ``c_dim > 0``.
        truncation_psi : float, default 1.0
            1 = no truncation.
        truncation_cutoff : int, optional
            Truncate only the first ``cutoff`` of the ``num_ws`` copies (all when None).
        broadcast : bool, default True
            Return one copy of w per synthesis layer input.

        Returns
        -------
        torch.Tensor
            (N, num_ws, w_dim) with ``broadcast``, else (N, w_dim).

        Raises
        ------
        ValueError
            For truncation without a tracked ``w_avg``, a missing ``c``, or a
            ``truncation_cutoff`` without ``broadcast``.
        """
        if truncation_psi != 1 and self.w_avg_beta is None:
            raise ValueError("truncation needs w_avg, which this network does not track")
        parts = []
        if self.z_dim > 0:
            parts.append(normalize_2nd_moment(z.to(torch.float32)))
        if self.c_dim > 0:
            if c is None:
                raise ValueError(f"this generator is class-conditional (c_dim={self.c_dim}): pass c")
            parts.append(normalize_2nd_moment(self.embed(c.to(torch.float32))))
        x = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
        for i in range(self.num_layers):
            x = getattr(self, f"fc{i}")(x)
        if not broadcast:
            if truncation_cutoff is not None:
                raise ValueError("truncation_cutoff needs broadcast ws")
            return self.w_avg.lerp(x, truncation_psi) if truncation_psi != 1 else x
        x = x.unsqueeze(1).repeat([1, self.num_ws, 1])
        if truncation_psi != 1:
            if truncation_cutoff is None:
                x = self.w_avg.lerp(x, truncation_psi)
            else:
                x[:, :truncation_cutoff] = self.w_avg.lerp(x[:, :truncation_cutoff], truncation_psi)
        return x


class SynthesisLayer(nn.Module):
    """Modulated 3x3 convolution (optionally 2x upsampling), noise, bias, leaky ReLU."""

    def __init__(self, in_channels: int, out_channels: int, w_dim: int, resolution: int,
                 kernel_size: int = 3, up: int = 1, use_noise: bool = True,
                 activation: str = "lrelu", resample_filter=(1, 3, 3, 1),
                 conv_clamp: float | None = None):
        super().__init__()
        self.resolution, self.up, self.use_noise = resolution, up, use_noise
        self.activation, self.conv_clamp = activation, conv_clamp
        self.padding = kernel_size // 2
        self.register_buffer("resample_filter", setup_filter(resample_filter))
        self.affine = FullyConnectedLayer(w_dim, in_channels, bias_init=1)
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, kernel_size, kernel_size]))
        if use_noise:
            self.register_buffer("noise_const", torch.randn([resolution, resolution]))
            self.noise_strength = nn.Parameter(torch.zeros([]))
        self.bias = nn.Parameter(torch.zeros([out_channels]))

    def forward(self, x: Tensor, w: Tensor, noise_mode: str = "const", fused: bool = True,
                gain: float = 1.0, rng: torch.Generator | None = None) -> Tensor:
        """Modulated convolution by the styles of ``w``, plus noise, bias and activation.

        Parameters
        ----------
        x : torch.Tensor
            (N, in_channels, H, W).
        w : torch.Tensor
            (N, w_dim) this layer's w.
        noise_mode : {"const", "random", "none"}, default "const"
            The stored noise, a fresh draw from ``rng``, or none.
        fused : bool, default True
            See :func:`modulated_conv2d`.
        gain : float, default 1.0
            Extra output scale; also scales the clamp.
        rng : torch.Generator, optional
            For ``noise_mode="random"``.

        Returns
        -------
        torch.Tensor
            (N, out_channels, resolution, resolution).
        """
        styles = self.affine(w)
        noise = None
        if self.use_noise and noise_mode == "random":
            noise = torch.randn([x.shape[0], 1, self.resolution, self.resolution],
                                device=x.device, generator=rng) * self.noise_strength
        elif self.use_noise and noise_mode == "const":
            noise = self.noise_const * self.noise_strength
        x = modulated_conv2d(x, self.weight, styles, noise=noise, up=self.up, padding=self.padding,
                             resample_filter=self.resample_filter, fused=fused)
        clamp = self.conv_clamp * gain if self.conv_clamp is not None else None
        return bias_act(x, self.bias, act=self.activation,
                        gain=_ACT_GAIN[self.activation] * gain, clamp=clamp)


class ToRGBLayer(nn.Module):
    """Modulated 1x1 convolution to RGB, without demodulation, plus bias."""

    def __init__(self, in_channels: int, out_channels: int, w_dim: int, kernel_size: int = 1,
                 conv_clamp: float | None = None):
        super().__init__()
        self.conv_clamp = conv_clamp
        self.affine = FullyConnectedLayer(w_dim, in_channels, bias_init=1)
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, kernel_size, kernel_size]))
        self.bias = nn.Parameter(torch.zeros([out_channels]))
        self.weight_gain = 1 / math.sqrt(in_channels * kernel_size ** 2)
        self.padding = kernel_size // 2

    def forward(self, x: Tensor, w: Tensor, fused: bool = True) -> Tensor:
        """RGB contribution of ``x`` under the styles of ``w``.

        Parameters
        ----------
        x : torch.Tensor
            (N, in_channels, H, W).
        w : torch.Tensor
            (N, w_dim).
        fused : bool, default True
            See :func:`modulated_conv2d`.

        Returns
        -------
        torch.Tensor
            (N, img_channels, H, W).
        """
        styles = self.affine(w) * self.weight_gain
        x = modulated_conv2d(x, self.weight, styles, padding=self.padding, demodulate=False,
                             fused=fused)
        return bias_act(x, self.bias, clamp=self.conv_clamp)


class SynthesisBlock(nn.Module):
    """One resolution: (const | conv0 up) -> conv1 -> ToRGB, in the 'skip' (default),
    'orig' or 'resnet' architecture."""

    def __init__(self, in_channels: int, out_channels: int, w_dim: int, resolution: int,
                 img_channels: int, is_last: bool, architecture: str = "skip",
                 resample_filter=(1, 3, 3, 1), conv_clamp: float | None = None,
                 use_fp16: bool = False, **layer_kwargs: Any):
        super().__init__()
        if architecture not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {architecture!r}; choose one of {ARCHITECTURES}")
        self.in_channels, self.resolution, self.is_last = in_channels, resolution, is_last
        self.architecture, self.use_fp16 = architecture, use_fp16
        self.num_conv = self.num_torgb = 0
        self.register_buffer("resample_filter", setup_filter(resample_filter))
        if in_channels == 0:
            self.const = nn.Parameter(torch.randn([out_channels, resolution, resolution]))
        else:
            self.conv0 = SynthesisLayer(in_channels, out_channels, w_dim, resolution, up=2,
                                        resample_filter=resample_filter, conv_clamp=conv_clamp,
                                        **layer_kwargs)
            self.num_conv += 1
        self.conv1 = SynthesisLayer(out_channels, out_channels, w_dim, resolution,
                                    conv_clamp=conv_clamp, **layer_kwargs)
        self.num_conv += 1
        if is_last or architecture == "skip":
            self.torgb = ToRGBLayer(out_channels, img_channels, w_dim, conv_clamp=conv_clamp)
            self.num_torgb += 1
        if in_channels != 0 and architecture == "resnet":
            self.skip = Conv2dLayer(in_channels, out_channels, kernel_size=1, bias=False, up=2,
                                    resample_filter=resample_filter)

    def forward(self, x: Tensor | None, img: Tensor | None, ws: Tensor, noise_mode: str = "const",
                allow_fp16: bool = False, rng: torch.Generator | None = None
                ) -> tuple[Tensor, Tensor]:
        """One resolution step of the synthesis network.

        Parameters
        ----------
        x : torch.Tensor or None
            (N, in_channels, R/2, R/2) features of the previous block (None for the first).
        img : torch.Tensor or None
            (N, img_channels, R/2, R/2) running RGB image ('skip'; None for the first).
        ws : torch.Tensor
            (N, num_conv + num_torgb, w_dim) this block's w inputs.
        noise_mode : {"const", "random", "none"}, default "const"
            See :class:`SynthesisLayer`.
        allow_fp16 : bool, default False
            Run in float16 when the block was built with ``use_fp16``.
        rng : torch.Generator, optional
            For ``noise_mode="random"``.

        Returns
        -------
        x : torch.Tensor
            (N, out_channels, R, R) features.
        img : torch.Tensor
            (N, img_channels, R, R) float32 running image.
        """
        w_iter = iter(ws.unbind(dim=1))
        dtype = torch.float16 if (self.use_fp16 and allow_fp16) else torch.float32
        n = ws.shape[0]
        fused = dtype == torch.float32 or n == 1
        kw = dict(noise_mode=noise_mode, fused=fused, rng=rng)
        if self.in_channels == 0:
            x = self.const.to(dtype).unsqueeze(0).expand(n, -1, -1, -1)
            x = self.conv1(x, next(w_iter), **kw)
        elif self.architecture == "resnet":
            x = x.to(dtype)
            y = self.skip(x, gain=math.sqrt(0.5))
            x = self.conv0(x, next(w_iter), **kw)
            x = self.conv1(x, next(w_iter), gain=math.sqrt(0.5), **kw)
            x = y + x
        else:
            x = x.to(dtype)
            x = self.conv0(x, next(w_iter), **kw)
            x = self.conv1(x, next(w_iter), **kw)
        if img is not None:
            img = upsample2d(img, self.resample_filter)
        if self.is_last or self.architecture == "skip":
            y = self.torgb(x, next(w_iter), fused=fused).to(torch.float32)
            img = y if img is None else img + y
        return x, img


class SynthesisNetwork(nn.Module):
    """ws (N, num_ws, w_dim) -> image (N, img_channels, R, R) in about [-1, 1]."""

    def __init__(self, w_dim: int, img_resolution: int, img_channels: int,
                 channel_base: int = 32768, channel_max: int = 512, num_fp16_res: int = 0,
                 **block_kwargs: Any):
        super().__init__()
        log2 = int(round(math.log2(img_resolution))) if img_resolution > 0 else 0
        if img_resolution < 4 or 2 ** log2 != img_resolution:
            raise ValueError(f"img_resolution must be a power of two >= 4, got {img_resolution}")
        self.w_dim, self.img_resolution, self.img_channels = w_dim, img_resolution, img_channels
        self.block_resolutions = [2 ** i for i in range(2, log2 + 1)]
        channels = {res: min(channel_base // res, channel_max) for res in self.block_resolutions}
        if min(channels.values()) < 1:
            raise ValueError("channel_base too small for this resolution (a block has 0 channels)")
        fp16_resolution = max(2 ** (log2 + 1 - num_fp16_res), 8)
        self.num_ws = 0
        for res in self.block_resolutions:
            block = SynthesisBlock(channels[res // 2] if res > 4 else 0, channels[res], w_dim, res,
                                   img_channels, is_last=(res == img_resolution),
                                   use_fp16=(res >= fp16_resolution), **block_kwargs)
            self.num_ws += block.num_conv + (block.num_torgb if res == img_resolution else 0)
            setattr(self, f"b{res}", block)

    def forward(self, ws: Tensor, noise_mode: str = "const", allow_fp16: bool = False,
                rng: torch.Generator | None = None) -> Tensor:
        """Render per-layer w to images.

        Parameters
        ----------
        ws : torch.Tensor
            (N, num_ws, w_dim).
        noise_mode : {"const", "random", "none"}, default "const"
            See :class:`SynthesisLayer`.
        allow_fp16 : bool, default False
            Run the fp16 blocks in float16.
        rng : torch.Generator, optional
            For ``noise_mode="random"``.

        Returns
        -------
        torch.Tensor
            (N, img_channels, R, R) float32, about [-1, 1].

        Raises
        ------
        ValueError
            If ``ws`` is not (N, num_ws, w_dim).
        """
        if ws.ndim != 3 or ws.shape[1] != self.num_ws or ws.shape[2] != self.w_dim:
            raise ValueError(f"ws must be (N, {self.num_ws}, {self.w_dim}), got {tuple(ws.shape)}")
        ws = ws.to(torch.float32)
        x = img = None
        w_idx = 0
        for res in self.block_resolutions:
            block = getattr(self, f"b{res}")
            cur = ws.narrow(1, w_idx, block.num_conv + block.num_torgb)
            w_idx += block.num_conv
            x, img = block(x, img, cur, noise_mode=noise_mode, allow_fp16=allow_fp16, rng=rng)
        return img


class StyleGAN2Network(nn.Module):
    """The generator: ``mapping`` (z -> ws) and ``synthesis`` (ws -> image). Constructor
    arguments are those of the official ``Generator`` (its pickled ``init_kwargs``)."""

    def __init__(self, z_dim: int, c_dim: int, w_dim: int, img_resolution: int,
                 img_channels: int, mapping_kwargs: dict | None = None,
                 synthesis_kwargs: dict | None = None):
        super().__init__()
        self.z_dim, self.c_dim, self.w_dim = z_dim, c_dim, w_dim
        self.img_resolution, self.img_channels = img_resolution, img_channels
        self.synthesis = SynthesisNetwork(w_dim, img_resolution, img_channels,
                                          **(synthesis_kwargs or {}))
        self.num_ws = self.synthesis.num_ws
        self.mapping = MappingNetwork(z_dim, c_dim, w_dim, self.num_ws, **(mapping_kwargs or {}))

    def forward(self, z: Tensor, c: Tensor | None = None, truncation_psi: float = 1.0,
                truncation_cutoff: int | None = None, noise_mode: str = "const") -> Tensor:
        """z (and c) to images: ``synthesis(mapping(z, c))``.

        Parameters
        ----------
        z : torch.Tensor
            (N, z_dim) latents.
        c : torch.Tensor, optional
            (N, c_dim) one-hot labels for a class-conditional network.
        truncation_psi : float, default 1.0
            See :meth:`MappingNetwork.forward`.
        truncation_cutoff : int, optional
            See :meth:`MappingNetwork.forward`.
        noise_mode : {"const", "random", "none"}, default "const"
            See :class:`SynthesisLayer`.

        Returns
        -------
        torch.Tensor
            (N, img_channels, R, R) float32, about [-1, 1].
        """
        ws = self.mapping(z, c, truncation_psi=truncation_psi, truncation_cutoff=truncation_cutoff)
        return self.synthesis(ws, noise_mode=noise_mode)


# ---------------------------------------------------------------------------- config

_MAPPING_KEYS = {"num_layers", "embed_features", "layer_features", "activation",
                 "lr_multiplier", "w_avg_beta"}
_SYNTHESIS_KEYS = {"channel_base", "channel_max", "num_fp16_res", "architecture",
                   "resample_filter", "conv_clamp", "use_noise", "activation", "kernel_size"}
_IGNORED_KEYS = {"fp16_channels_last", "channels_last"}  # memory layout only
_GENERATOR_ARGS = ("z_dim", "c_dim", "w_dim", "img_resolution", "img_channels",
                   "mapping_kwargs", "synthesis_kwargs")
_GENERATOR_IGNORED = {"epochs"}  # bookkeeping in some forks, no effect on the network


def _network_config(init_args: Sequence[Any], init_kwargs: dict) -> dict:
    """The official ``Generator(*init_args, **init_kwargs)`` as our constructor's kwargs."""
    kw = dict(zip(_GENERATOR_ARGS, init_args, strict=False))
    kw.update({k: v for k, v in init_kwargs.items() if k not in _GENERATOR_IGNORED})
    unknown = set(kw) - set(_GENERATOR_ARGS)
    if unknown:
        raise ValueError(f"unsupported Generator arguments in the pickle: {sorted(unknown)}")
    missing = {"z_dim", "w_dim", "img_resolution"} - set(kw)
    if missing:
        raise ValueError(f"the pickle's Generator init_kwargs lack {sorted(missing)}")
    mk = {k: v for k, v in dict(kw.get("mapping_kwargs") or {}).items() if k not in _IGNORED_KEYS}
    sk = {k: v for k, v in dict(kw.get("synthesis_kwargs") or {}).items() if k not in _IGNORED_KEYS}
    for what, got, known in (("mapping", mk, _MAPPING_KEYS), ("synthesis", sk, _SYNTHESIS_KEYS)):
        if set(got) - known:
            raise ValueError(f"unsupported {what}_kwargs in the pickle: {sorted(set(got) - known)}")
    if "resample_filter" in sk:
        sk["resample_filter"] = tuple(float(t) for t in sk["resample_filter"])
    return dict(z_dim=int(kw["z_dim"]), c_dim=int(kw.get("c_dim", 0) or 0), w_dim=int(kw["w_dim"]),
                img_resolution=int(kw["img_resolution"]),
                img_channels=int(kw.get("img_channels", 3)), mapping_kwargs=mk, synthesis_kwargs=sk)


# ---------------------------------------------------------------------------- wrapper


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


# ---------------------------------------------------------------------------- loading


class WeightsMismatchError(ValueError):
    """A state dict does not match the network: lists missing, unexpected and
    shape-mismatched names."""


def load_state_checked(net: nn.Module, state: dict[str, Tensor], source: str = "weights") -> None:
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
        lines = [f"{source}: the weights do not match the StyleGAN2 network built from their "
                 f"init_kwargs"]
        for what, items in (("missing", missing), ("unexpected", unexpected),
                            ("shape mismatch", shapes)):
            if items:
                lines.append(f"  {what} ({len(items)}): " + ", ".join(items))
        raise WeightsMismatchError("\n".join(lines))
    net.load_state_dict({k: v.detach().to(torch.float32) if v.is_floating_point() else v
                         for k, v in state.items()}, strict=True)


__all__ += ["WeightsMismatchError", "load_state_checked"]
