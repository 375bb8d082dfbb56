"""EG3D's tri-plane generator network in plain PyTorch (paper 000's generator): the StyleGAN2
tri-plane backbone, the OSG decoder, the superresolution modules, and a pickle's
``init_kwargs`` read as the constructor's arguments.

The module tree and the parameter / buffer names are those of NVIDIA's ``NVlabs/eg3d``
``training/triplane.py`` ``TriPlaneGenerator``, so official snapshots load by name::

    backbone.mapping.*, backbone.synthesis.*   a StyleGAN2 generator making 256 x 256 x 96
                                               planes (:class:`~facebias.generate.stylegan2.StyleGAN2Network`;
                                               the mapping takes the 25-number camera label)
    decoder.net.0.{weight,bias}                OSG decoder: 32 -> 64, softplus, 64 -> 1 + 32
    decoder.net.2.{weight,bias}
    superresolution.block0.*, .block1.*        two synthesis blocks (2X / 4X: the first without
    superresolution.resample_filter            upsampling), w_dim 512, driven by ws[:, -1]

The superresolution modules of the public configurations, as the released code builds them
(their channels, w_dim 512 and input resolutions are hard-coded there too):

=============================  ======  =====  ============================  =====================
module                         output  input  block0                        block1
=============================  ======  =====  ============================  =====================
``SuperresolutionHybrid2X``    128     64     no-up 32 -> 128 @ 64          up 128 -> 64 @ 128
``SuperresolutionHybrid4X``    256     128    no-up 32 -> 128 @ 128         up 128 -> 64 @ 256
``SuperresolutionHybrid8X``    512     128    up 32 -> 128 @ 256            up 128 -> 64 @ 512
``SuperresolutionHybrid8XDC``  512     128    up 32 -> 256 @ 256            up 256 -> 128 @ 512
=============================  ======  =====  ============================  =====================

The input (the raw image and the 32 features) is resized to the input resolution with
``interpolate(bilinear, align_corners=False, antialias=sr_antialias)`` when it differs (4X:
only when smaller). Each block's activation clamp is 256 with ``sr_num_fp16_res > 0``, else
none. ``image_raw`` is the rendered image before the superresolution adds anything to it
(the released 2X and 4X modules add the first ToRGB output in place into a view of the
rendered image, so there its returned ``image_raw`` carries that addition; ours does not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from facebias.generate.stylegan2_network import (
    FullyConnectedLayer,
    StyleGAN2Network,
    SynthesisBlock,
    SynthesisLayer,
    ToRGBLayer,
)
from facebias.generate.stylegan2_ops import setup_filter

__all__ = ["OSGDecoder", "SynthesisBlockNoUp", "Superresolution", "SR_MODULES", "TriPlaneNetwork",
           "PLANE_FEATURES", "network_config"]

#: Channels of each of the three feature planes.
PLANE_FEATURES = 32

#: Superresolution class name -> (output side, input side, block0 upsamples, block0 channels,
#: block1 channels, has a resample_filter buffer, resize only when smaller).
SR_MODULES: dict[str, tuple[int, int, bool, int, int, bool, bool]] = {
    "SuperresolutionHybrid2X": (128, 64, False, 128, 64, True, False),
    "SuperresolutionHybrid4X": (256, 128, False, 128, 64, True, True),
    "SuperresolutionHybrid8X": (512, 128, True, 128, 64, True, False),
    "SuperresolutionHybrid8XDC": (512, 128, True, 256, 128, False, False),
}


class OSGDecoder(nn.Module):
    """The tri-plane decoder: mean of the three planes' features, ``FC(32 -> 64)``,
    softplus, ``FC(64 -> 1 + 32)``; ``sigma`` = the first output (raw, before the ray
    marcher's ``softplus(. - 1)``), ``rgb`` = ``sigmoid(rest) * (1 + 2 * 0.001) - 0.001``."""

    def __init__(self, n_features: int = PLANE_FEATURES, lr_multiplier: float = 1.0,
                 output_dim: int = PLANE_FEATURES, hidden_dim: int = 64,
                 softplus_beta: float = 1.0, softplus_threshold: float = 20.0):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.net = nn.Sequential(
            FullyConnectedLayer(n_features, hidden_dim, lr_multiplier=lr_multiplier),
            nn.Softplus(beta=softplus_beta, threshold=softplus_threshold),
            FullyConnectedLayer(hidden_dim, 1 + output_dim, lr_multiplier=lr_multiplier))

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        """Density and colour features of points.

        Parameters
        ----------
        features : torch.Tensor
            (N, 3, M, C) the three planes' features at M points.

        Returns
        -------
        dict
            ``rgb`` (N, M, output_dim) in [-0.001, 1.001] and ``sigma`` (N, M, 1) raw density.
        """
        x = features.mean(1)
        n, m, c = x.shape
        x = self.net(x.reshape(n * m, c)).view(n, m, -1)
        return {"rgb": torch.sigmoid(x[..., 1:]) * (1 + 2 * 0.001) - 0.001, "sigma": x[..., 0:1]}


class SynthesisBlockNoUp(nn.Module):
    """A synthesis block at its input's resolution ('skip': conv0 and conv1 without
    upsampling, ToRGB added to the running image, which is not upsampled either)."""

    def __init__(self, in_channels: int, out_channels: int, w_dim: int, resolution: int,
                 img_channels: int = 3, conv_clamp: float | None = None,
                 resample_filter=(1, 3, 3, 1), **layer_kwargs: Any):
        super().__init__()
        self.in_channels, self.resolution = in_channels, resolution
        self.num_conv, self.num_torgb = 2, 1
        self.register_buffer("resample_filter", setup_filter(resample_filter))
        self.conv0 = SynthesisLayer(in_channels, out_channels, w_dim, resolution, conv_clamp=conv_clamp,
                                    **layer_kwargs)
        self.conv1 = SynthesisLayer(out_channels, out_channels, w_dim, resolution, conv_clamp=conv_clamp,
                                    **layer_kwargs)
        self.torgb = ToRGBLayer(out_channels, img_channels, w_dim, conv_clamp=conv_clamp)

    def forward(self, x: Tensor, img: Tensor | None, ws: Tensor, noise_mode: str = "const",
                allow_fp16: bool = False, rng: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """conv0, conv1, ToRGB at resolution R; ``ws`` (N, 3, w_dim). Returns features
        (N, out, R, R) and ``img + torgb`` (a new tensor; ``img`` is not modified)."""
        w0, w1, w2 = ws.unbind(dim=1)
        x = self.conv0(x.to(torch.float32), w0, noise_mode=noise_mode, rng=rng)
        x = self.conv1(x, w1, noise_mode=noise_mode, rng=rng)
        y = self.torgb(x, w2).to(torch.float32)
        return x, (y if img is None else img + y)


class Superresolution(nn.Module):
    """One of EG3D's superresolution modules (:data:`SR_MODULES`), by its class name."""

    def __init__(self, class_name: str, channels: int = PLANE_FEATURES, img_resolution: int = 512,
                 sr_num_fp16_res: int = 0, sr_antialias: bool = True, **block_kwargs: Any):
        super().__init__()
        if class_name not in SR_MODULES:
            raise ValueError(f"superresolution module {class_name!r} is not supported; EG3D's are "
                             f"{sorted(SR_MODULES)}")
        out_res, in_res, up0, ch0, ch1, has_filter, only_smaller = SR_MODULES[class_name]
        if int(img_resolution) != out_res:
            raise ValueError(f"{class_name} makes {out_res} px images, but img_resolution is {img_resolution}")
        self.class_name, self.input_resolution = class_name, in_res
        self.sr_antialias, self.only_smaller = bool(sr_antialias), only_smaller
        clamp = 256 if int(sr_num_fp16_res) > 0 else None
        kw = dict(block_kwargs, conv_clamp=clamp)
        if up0:
            self.block0 = SynthesisBlock(channels, ch0, 512, in_res * 2, 3, is_last=False, **kw)
            res1 = in_res * 4
        else:
            self.block0 = SynthesisBlockNoUp(channels, ch0, 512, in_res, 3, **kw)
            res1 = in_res * 2
        self.block1 = SynthesisBlock(ch0, ch1, 512, res1, 3, is_last=True, **kw)
        if has_filter:
            self.register_buffer("resample_filter", setup_filter((1, 3, 3, 1)))

    def forward(self, rgb: Tensor, x: Tensor, ws: Tensor, noise_mode: str = "none",
                rng: torch.Generator | None = None) -> Tensor:
        """The final image from the raw image ``rgb`` (N, 3, r, r), the features ``x``
        (N, 32, r, r) and the backbone's ``ws`` (its last w drives all six layers)."""
        ws = ws[:, -1:, :].repeat(1, 3, 1)
        side = x.shape[-1]
        if (side < self.input_resolution) if self.only_smaller else (side != self.input_resolution):
            size = (self.input_resolution, self.input_resolution)
            x = F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=self.sr_antialias)
            rgb = F.interpolate(rgb, size=size, mode="bilinear", align_corners=False, antialias=self.sr_antialias)
        x, rgb = self.block0(x, rgb, ws, noise_mode=noise_mode, rng=rng)
        x, rgb = self.block1(x, rgb, ws, noise_mode=noise_mode, rng=rng)
        return rgb


class TriPlaneNetwork(nn.Module):
    """The parameters of EG3D's ``TriPlaneGenerator`` (``backbone``, ``decoder``,
    ``superresolution``) and its two sub-steps: :meth:`mapping` (z and the camera label
    -> ws) and :meth:`planes` (ws -> the three feature planes). Rendering lives in
    :mod:`facebias.generate.eg3d_render`; :class:`facebias.generate.eg3d.EG3DGenerator`
    puts them together. Constructor arguments: :func:`network_config`."""

    def __init__(self, z_dim: int, c_dim: int, w_dim: int, img_resolution: int, img_channels: int,
                 rendering_kwargs: Mapping[str, Any], mapping_kwargs: dict | None = None,
                 synthesis_kwargs: dict | None = None, sr_num_fp16_res: int = 0,
                 sr_kwargs: dict | None = None):
        super().__init__()
        self.z_dim, self.c_dim, self.w_dim = z_dim, c_dim, w_dim
        self.img_resolution, self.img_channels = img_resolution, img_channels
        self.rendering_kwargs = dict(rendering_kwargs)
        self.backbone = StyleGAN2Network(z_dim, c_dim, w_dim, img_resolution=256,
                                         img_channels=PLANE_FEATURES * 3,
                                         mapping_kwargs=mapping_kwargs or {},
                                         synthesis_kwargs=synthesis_kwargs or {})
        self.num_ws = self.backbone.num_ws
        module = str(self.rendering_kwargs.get("superresolution_module", "")).rsplit(".", 1)[-1]
        self.superresolution = Superresolution(module, PLANE_FEATURES, img_resolution, sr_num_fp16_res,
                                               bool(self.rendering_kwargs.get("sr_antialias", True)),
                                               **(sr_kwargs or {}))
        self.decoder = OSGDecoder(PLANE_FEATURES, float(self.rendering_kwargs.get("decoder_lr_mul", 1)))

    def mapping(self, z: Tensor, c: Tensor, truncation_psi: float = 1.0,
                truncation_cutoff: int | None = None) -> Tensor:
        """ws (N, num_ws, w_dim) of z (N, z_dim) under the conditioning camera label c (N, 25):
        ``c`` is zeroed with ``c_gen_conditioning_zero`` and scaled by ``c_scale``
        (**0 when the pickle has no c_scale**, as in the released code)."""
        if self.rendering_kwargs.get("c_gen_conditioning_zero", False):
            c = torch.zeros_like(c)
        c = c * self.rendering_kwargs.get("c_scale", 0)
        return self.backbone.mapping(z, c, truncation_psi=truncation_psi, truncation_cutoff=truncation_cutoff)

    def planes(self, ws: Tensor, noise_mode: str = "const", rng: torch.Generator | None = None) -> Tensor:
        """The tri-planes (N, 3, 32, 256, 256) of ws."""
        planes = self.backbone.synthesis(ws, noise_mode=noise_mode, rng=rng)
        return planes.view(len(planes), 3, PLANE_FEATURES, planes.shape[-2], planes.shape[-1])


# ---------------------------------------------------------------------------- init_kwargs

_GENERATOR_ARGS = ("z_dim", "c_dim", "w_dim", "img_resolution", "img_channels")
_TOP_KEYS = set(_GENERATOR_ARGS) | {"mapping_kwargs", "rendering_kwargs", "sr_num_fp16_res", "sr_kwargs"}
_SYNTHESIS_KEYS = {"channel_base", "channel_max", "num_fp16_res", "architecture", "resample_filter",
                   "conv_clamp", "use_noise", "activation", "kernel_size"}
_MAPPING_KEYS = {"num_layers", "embed_features", "layer_features", "activation", "lr_multiplier",
                 "w_avg_beta"}
_LAYOUT_ONLY = {"fp16_channels_last", "channels_last", "fused_modconv_default"}  # no effect on values
_SR_IGNORED = {"num_fp16_res", "conv_clamp", "channel_base", "channel_max"}  # ignored by the SR modules too
_RENDERING_REQUIRED = ("superresolution_module", "depth_resolution", "ray_start", "ray_end", "box_warp")


def network_config(init_args: tuple, init_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """An official ``TriPlaneGenerator(*init_args, **init_kwargs)`` as
    :class:`TriPlaneNetwork`'s keyword arguments.

    The backbone's synthesis keywords are the top-level extras (``channel_base``,
    ``channel_max``, ``num_fp16_res``, ``conv_clamp``, ...); ``conv_clamp`` defaults to 256 as
    in EG3D's StyleGAN2 blocks. Memory-layout keywords (``fused_modconv_default``,
    ``*channels_last``) are dropped: they do not change the values.

    Raises
    ------
    ValueError
        For missing or unsupported arguments, naming them.
    """
    kw: dict[str, Any] = dict(zip(_GENERATOR_ARGS, init_args, strict=False))
    kw.update(init_kwargs)
    missing = {"z_dim", "c_dim", "w_dim", "img_resolution", "rendering_kwargs"} - set(kw)
    if missing:
        raise ValueError(f"the pickle's TriPlaneGenerator init_kwargs lack {sorted(missing)}")
    synthesis = {k: v for k, v in kw.items() if k not in _TOP_KEYS and k not in _LAYOUT_ONLY}
    unknown = set(synthesis) - _SYNTHESIS_KEYS
    if unknown:
        raise ValueError(f"unsupported TriPlaneGenerator arguments in the pickle: {sorted(unknown)}")
    synthesis.setdefault("conv_clamp", 256)
    if "resample_filter" in synthesis:
        synthesis["resample_filter"] = tuple(float(t) for t in synthesis["resample_filter"])
    mapping = {k: v for k, v in dict(kw.get("mapping_kwargs") or {}).items() if k not in _LAYOUT_ONLY}
    if set(mapping) - _MAPPING_KEYS:
        raise ValueError(f"unsupported mapping_kwargs in the pickle: {sorted(set(mapping) - _MAPPING_KEYS)}")
    sr = {k: v for k, v in dict(kw.get("sr_kwargs") or {}).items()
          if k not in _LAYOUT_ONLY and k not in _SR_IGNORED}
    if set(sr) - {"architecture", "resample_filter", "use_noise", "activation", "kernel_size"}:
        raise ValueError(f"unsupported sr_kwargs in the pickle: {sorted(sr)}")
    rendering = dict(kw["rendering_kwargs"] or {})
    lacking = [k for k in _RENDERING_REQUIRED if k not in rendering]
    if lacking:
        raise ValueError(f"the pickle's rendering_kwargs lack {lacking}")
    if int(kw.get("img_channels", 3)) != 3:
        raise ValueError(f"only 3-channel EG3D generators are supported, got img_channels={kw['img_channels']}")
    if int(kw["w_dim"]) != 512:
        raise ValueError(f"EG3D's superresolution modules need w_dim 512, got {kw['w_dim']}")
    return dict(z_dim=int(kw["z_dim"]), c_dim=int(kw["c_dim"]), w_dim=int(kw["w_dim"]),
                img_resolution=int(kw["img_resolution"]), img_channels=3, rendering_kwargs=rendering,
                mapping_kwargs=mapping, synthesis_kwargs=synthesis,
                sr_num_fp16_res=int(kw.get("sr_num_fp16_res", 0) or 0), sr_kwargs=sr)

