"""StyleGAN2's primitive operations in plain PyTorch (paper 004's generator): the pixel norm
of z, the fused bias + activation, the [1,3,3,1] FIR resampling filter (``upfirdn2d``,
2x upsampling) and the modulated convolution with demodulation. No custom CUDA kernels.

Part of :mod:`facebias.generate.stylegan2` (which re-exports every public name here; the
semantics reproduced are listed there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

_ACT_GAIN = {"linear": 1.0, "relu": math.sqrt(2.0), "lrelu": math.sqrt(2.0)}


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
