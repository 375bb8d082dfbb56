"""StyleGAN2 (config-f) mapping and synthesis networks in plain PyTorch (paper 004's
generator): the layers (equalised learning rate, modulated convolutions, ToRGB, the 'skip' /
'orig' / 'resnet' blocks), :class:`MappingNetwork`, :class:`SynthesisNetwork` and
:class:`StyleGAN2Network`, with the module tree and parameter / buffer names of NVIDIA's
``stylegan2-ada-pytorch`` ``training/networks.py`` ``Generator`` (listed in
:mod:`facebias.generate.stylegan2`), so official pickles load by name; and an official
pickle's ``init_kwargs`` read as our constructor's arguments.

Part of :mod:`facebias.generate.stylegan2` (which re-exports every public name here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from facebias.generate.stylegan2_ops import (
    _ACT_GAIN,
    _conv,
    bias_act,
    modulated_conv2d,
    normalize_2nd_moment,
    setup_filter,
    upsample2d,
)

ARCHITECTURES = ("orig", "skip", "resnet")


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
