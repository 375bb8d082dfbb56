"""Shared by the EG3D oracle (``tests/fixtures/eg3d/make_reference.py``, which runs NVIDIA's
official code) and our tests: the fixture configurations, a deterministic randomiser of every
parameter and buffer, and a writer of network pickles in the layout of NVIDIA's
``torch_utils.persistence`` snapshots. Nothing here imports or contains NVIDIA code.

- :data:`CONFIGS` -- per fixture name, the ``TriPlaneGenerator`` constructor kwargs as the
  official ``train.py`` passes them (``init_kwargs``) and the pickled attribute
  ``neural_rendering_resolution`` (the official constructor sets 64; training changes it).
- :func:`randomise` -- float32 values for every parameter and buffer name given, except the
  ``resample_filter`` buffers (the fixed [1, 3, 3, 1] filter, left as constructed). Scales are
  chosen so that the renders are not degenerate (see the oracle's printed evidence).
- :func:`write_official_layout_pickle` -- ``dict(G, D, G_ema, augment_pipe,
  training_set_kwargs)`` with each persistent network pickled as
  ``torch_utils.persistence._reconstruct_persistent_obj(meta)``; written with fake
  ``torch_utils`` / ``dnnlib`` / ``training`` modules in ``sys.modules`` that are removed
  again before the function returns (so the file references the same globals as a real
  snapshot, and nothing of NVIDIA's is ever imported).

Units and conventions: angles in radians; ``c`` = 25 floats (cam2world 4x4 row-major, then
normalised intrinsics 3x3 row-major); images float32 NCHW in [-1, 1] (not clamped).
"""

from __future__ import annotations

import collections
import copy
import math
import pickle
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "CONFIGS",
    "STATE_SEEDS",
    "PERSISTENCE_VERSION",
    "randomise",
    "fixture_state",
    "skeleton",
    "write_official_layout_pickle",
]

#: ``torch_utils.persistence._version`` of NVlabs/eg3d (and stylegan2-ada / stylegan3).
PERSISTENCE_VERSION = 6

#: numpy ``default_rng`` seeds for :func:`randomise`: one state for G, another for G_ema.
STATE_SEEDS = {"G": 1001, "G_ema": 2002}

_SR = "training.superresolution."

#: The OSG decoder's last layer: row 0 (the density logit) is drawn with this many times the
#: other rows' std, so that the accumulated opacities spread over (0, 1).
DENSITY_ROW_SCALE = 5.0
#: Std of the superresolution's ToRGB weights and biases (their sum is added to the image).
SR_TORGB_STD = 0.15


def _rendering_kwargs(image_resolution: int, sr_module: str, **over: Any) -> dict:
    """rendering_kwargs in the key order of the official train.py (FFHQ-like defaults; the
    click defaults make c_scale and decoder_lr_mul floats), then the config's updates."""
    rk = {
        "image_resolution": image_resolution,
        "disparity_space_sampling": False,
        "clamp_mode": "softplus",
        "superresolution_module": _SR + sr_module,
        "c_gen_conditioning_zero": False,
        "gpc_reg_prob": 0.5,
        "c_scale": 1.0,
        "superresolution_noise_mode": "none",
        "density_reg": 0.25,
        "density_reg_p_dist": 0.004,
        "reg_type": "l1",
        "decoder_lr_mul": 1.0,
        "sr_antialias": True,
        "depth_resolution": 12,
        "depth_resolution_importance": 12,
        "ray_start": 2.25,
        "ray_end": 3.3,
        "box_warp": 1,
        "avg_camera_radius": 2.7,
        "avg_camera_pivot": [0, 0, 0.2],
    }
    rk.update(over)
    return rk


def _init_kwargs(img_resolution: int, rendering_kwargs: dict, *, z_dim: int = 64,
                 channel_base: int = 4096, channel_max: int = 32) -> dict:
    """TriPlaneGenerator kwargs in the order train.py + training_loop.py build them
    (G_kwargs without class_name, then common_kwargs c_dim, img_resolution, img_channels).
    ``w_dim`` must be 512: the superresolution modules hard-code it and read ``ws[:, -1]``."""
    return {
        "z_dim": z_dim,
        "w_dim": 512,
        "mapping_kwargs": {"num_layers": 2},
        "channel_base": channel_base,
        "channel_max": channel_max,
        "fused_modconv_default": "inference_only",
        "rendering_kwargs": rendering_kwargs,
        "num_fp16_res": 0,
        "sr_num_fp16_res": 0,
        "sr_kwargs": {"channel_base": channel_base, "channel_max": channel_max,
                      "fused_modconv_default": "inference_only"},
        "conv_clamp": None,
        "c_dim": 25,
        "img_resolution": img_resolution,
        "img_channels": 3,
    }


#: Fixture configurations: ``init_kwargs`` (TriPlaneGenerator constructor kwargs), the
#: pickled ``neural_rendering_resolution``, and ``density_bias`` per network (for
#: :func:`fixture_state`: with these seeds, it brings each network's median density logit
#: to about 2, so that accumulated opacities spread over (0, 1)). The triplane backbone is always 256 x 256 x 96
#: (channel_base 4096 / channel_max 32 keep it small); the superresolution modules fix their
#: own channels (128/64 for 2X, 256/128 for 8XDC) and output size. 12 coarse + 12 importance
#: samples per ray keep CPU renders fast.
CONFIGS: dict[str, dict] = {
    # FFHQ-like, 128 px, 2X superresolution at its native 64 px input (the in-place add case).
    "sr2x": {
        "init_kwargs": _init_kwargs(128, _rendering_kwargs(128, "SuperresolutionHybrid2X")),
        "neural_rendering_resolution": 64,
        "density_bias": {"G": 0.0, "G_ema": 1.5},
    },
    # FFHQ-512-like: 8X (DC) superresolution, neural rendering 128 as in the public
    # ffhq512-128 snapshots; the reference also has cases rendered at 64 (antialiased resize).
    "sr8x": {
        "init_kwargs": _init_kwargs(512, _rendering_kwargs(512, "SuperresolutionHybrid8XDC")),
        "neural_rendering_resolution": 128,
        "density_bias": {"G": 0.0, "G_ema": 1.5},
    },
    # ShapeNet-like: white background, ray limits from the box ('auto'), box_warp 1.6,
    # camera radius 1.7 about the origin; pose conditioning scaled by 0.5.
    "sr2x_white_auto": {
        "init_kwargs": _init_kwargs(128, _rendering_kwargs(
            128, "SuperresolutionHybrid2X", ray_start="auto", ray_end="auto", box_warp=1.6,
            white_back=True, avg_camera_radius=1.7, avg_camera_pivot=[0, 0, 0], c_scale=0.5)),
        "neural_rendering_resolution": 64,
        "density_bias": {"G": 1.0, "G_ema": 1.0},
    },
    # No generator pose conditioning (c replaced by zeros; c_scale then has no effect) and a
    # decoder learning-rate multiplier != 1 (the decoder's weight and bias gains change).
    "sr2x_czero": {
        "init_kwargs": _init_kwargs(128, _rendering_kwargs(
            128, "SuperresolutionHybrid2X", c_gen_conditioning_zero=True, gpc_reg_prob=None,
            c_scale=2.0, decoder_lr_mul=0.5)),
        "neural_rendering_resolution": 64,
        "density_bias": {"G": 4.2, "G_ema": -0.4},
    },
}


# ---------------------------------------------------------------------------- randomise

# (suffix or pattern test, mean, std) -- the first rule that matches a name wins. Scales
# follow the official initialisation where it is random (weights N(0, 1) / lr_multiplier)
# and replace its zeros and constants (biases, noise strengths, w_avg, affine biases of 1,
# the label std) by random values of a comparable size.
def _rule(name: str, mapping_lr: float, decoder_lr: float) -> tuple[float, float]:
    last = name.rsplit(".", 1)[-1]
    if ".mapping.fc" in name:  # lr_multiplier 0.01: stored weight = effective / 0.01
        return (0.0, 1.0 / mapping_lr) if last == "weight" else (0.0, 0.2 / mapping_lr)
    if ".mapping.embed." in name:
        return (0.0, 1.0) if last == "weight" else (0.0, 0.2)
    if name.endswith("mapping.w_avg"):
        return 0.0, 0.5
    if name.startswith("decoder.net."):  # the OSG decoder MLP (lr_multiplier decoder_lr_mul)
        return (0.0, 1.0 / decoder_lr) if last == "weight" else (0.0, 0.3 / decoder_lr)
    if name.startswith("superresolution.") and ".torgb." in name and last in ("weight", "bias"):
        return 0.0, SR_TORGB_STD  # keeps the final image mostly inside [-1, 1]
    if name.endswith(".affine.bias"):
        return 1.0, 0.2
    if last == "noise_strength":
        return 0.0, 0.2
    if last == "bias":
        return 0.0, 0.2
    if last == "dataset_label_std":
        return 0.5, 0.1
    return 0.0, 1.0  # weights, const, noise_const


def randomise(names_shapes: Mapping[str, tuple], seed: int, *, mapping_lr: float = 0.01,
              decoder_lr: float = 1.0, density_bias: float = 0.0) -> dict[str, np.ndarray]:
    """Random float32 values for every parameter and buffer of an EG3D generator.

    Parameters
    ----------
    names_shapes
        State-dict name -> shape (e.g. from ``official_state_names.json``).
    seed
        Seed of ``numpy.random.default_rng``; names are visited in sorted order and each
        draws ``standard_normal(shape)`` (so a name's values depend on the set of names).
    mapping_lr, decoder_lr
        The mapping network's and the OSG decoder's learning-rate multipliers (0.01 and the
        config's ``decoder_lr_mul``): weights are stored divided by them, as the official
        initialisation does, so that the effective weights have unit scale.
    density_bias
        Added to the effective bias of the density logit (``decoder.net.2.bias[0]``); the
        configs choose it per network so that the median density logit is about 2 (the
        accumulated opacities then spread over (0, 1); see :func:`fixture_state`).

    Returns
    -------
    dict
        name -> float32 array, for every name except ``*resample_filter`` buffers (the
        fixed [1, 3, 3, 1] filter; callers keep the constructed value). Normal draws with a
        per-name mean/std: weights N(0, 1) (mapping fc N(0, 1/0.01)), biases N(0, 0.2),
        affine biases N(1, 0.2), noise strengths N(0, 0.2), w_avg N(0, 0.5),
        ``dataset_label_std`` N(0.5, 0.1).
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name in sorted(names_shapes):
        if name.endswith("resample_filter"):
            continue
        mean, std = _rule(name, mapping_lr, decoder_lr)
        shape = tuple(int(s) for s in names_shapes[name])
        v = rng.standard_normal(shape) * std + mean
        if name == "decoder.net.2.weight":  # row 0 gives the density logit: centre it (the
            # softplus hidden units are positive, so an uncentred row adds a large random
            # offset) and widen it
            v[0] = (v[0] - v[0].mean()) * DENSITY_ROW_SCALE
        elif name == "decoder.net.2.bias":
            v[0] = v[0] + density_bias / decoder_lr
        out[name] = np.asarray(v, dtype=np.float32)
    return out


def fixture_state(config_name: str, names_shapes: Mapping[str, tuple],
                  network: str) -> dict[str, np.ndarray]:
    """:func:`randomise` with the seed of ``network`` ("G" or "G_ema", :data:`STATE_SEEDS`)
    and the config's decoder learning-rate multiplier and density bias: the state the oracle
    loaded into NVIDIA's network for ``reference_<config_name>.npz``."""
    if network not in STATE_SEEDS:
        raise ValueError(f"network {network!r}: not one of {sorted(STATE_SEEDS)}")
    cfg = CONFIGS[config_name]
    rk = cfg["init_kwargs"]["rendering_kwargs"]
    return randomise(names_shapes, STATE_SEEDS[network], decoder_lr=rk.get("decoder_lr_mul", 1),
                     density_bias=cfg["density_bias"][network])


# ---------------------------------------------------------------------------- pickle layout


class _Fake:
    """Fake NVIDIA modules in ``sys.modules`` while a pickle is written: the classes and
    functions a snapshot references by global name, none of them functional."""

    NAMES = ("torch_utils", "torch_utils.persistence", "dnnlib", "dnnlib.util", "training",
             "training.triplane", "training.volumetric_rendering",
             "training.volumetric_rendering.renderer",
             "training.volumetric_rendering.ray_marcher",
             "training.volumetric_rendering.ray_sampler")

    def __enter__(self) -> _Fake:
        self.saved = {k: sys.modules.get(k) for k in self.NAMES}
        mods = {k: types.ModuleType(k) for k in self.NAMES}

        def _reconstruct_persistent_obj(meta):  # pragma: no cover - never called by readers
            raise AssertionError("the official reconstructor must not be called")

        _reconstruct_persistent_obj.__module__ = "torch_utils.persistence"
        _reconstruct_persistent_obj.__qualname__ = "_reconstruct_persistent_obj"
        mods["torch_utils.persistence"]._reconstruct_persistent_obj = _reconstruct_persistent_obj

        class EasyDict(dict):
            pass

        EasyDict.__module__, EasyDict.__qualname__ = "dnnlib.util", "EasyDict"
        mods["dnnlib.util"].EasyDict = EasyDict
        mods["dnnlib"].EasyDict = EasyDict
        # The official non-persistent children: plain torch.nn.Module subclasses, pickled
        # by module global + NEWOBJ + BUILD(__dict__).
        self.plain = {}
        for mod, cls in (("training.triplane", "OSGDecoder"),
                         ("training.volumetric_rendering.renderer", "ImportanceRenderer"),
                         ("training.volumetric_rendering.ray_marcher", "MipRayMarcher2"),
                         ("training.volumetric_rendering.ray_sampler", "RaySampler")):
            c = type(cls, (torch.nn.Module,), {"__module__": mod})
            c.__qualname__ = cls
            setattr(mods[mod], cls, c)
            self.plain[cls] = c
        for parent, child in (("torch_utils", "persistence"), ("dnnlib", "util"),
                              ("training", "triplane"), ("training", "volumetric_rendering"),
                              ("training.volumetric_rendering", "renderer"),
                              ("training.volumetric_rendering", "ray_marcher"),
                              ("training.volumetric_rendering", "ray_sampler")):
            setattr(mods[parent], child, mods[f"{parent}.{child}"])
        sys.modules.update(mods)
        self.reconstruct, self.EasyDict = _reconstruct_persistent_obj, EasyDict
        return self

    def __exit__(self, *exc: Any) -> None:
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class _Persistent:
    """Pickles as ``_reconstruct_persistent_obj(meta)`` (what the official decorator's
    ``__reduce__`` returns: (func, (meta,), None))."""

    def __init__(self, reconstruct: Any, meta: dict) -> None:
        self.reconstruct, self.meta = reconstruct, meta

    def __reduce__(self) -> tuple:
        return (self.reconstruct, (self.meta,), None)


class _Node:
    """One module of the official tree: class, persistence, init args/kwargs, plain
    attributes (after ``training``), parameter/buffer names, children."""

    def __init__(self, cls: str, persistent: bool = True, args: tuple = (),
                 kwargs: dict | None = None, attrs: dict | None = None,
                 params: tuple = (), buffers: tuple = (),
                 children: dict | None = None, tail: dict | None = None) -> None:
        self.cls, self.persistent, self.args = cls, persistent, args
        self.kwargs = kwargs if kwargs is not None else {}
        self.attrs = attrs or {}
        self.params, self.buffers = params, buffers
        self.children: dict[str, _Node] = children or {}
        self.tail = tail or {}  # attributes set after the children (e.g. rendering_kwargs)


def _fc(i: int, o: int, *, activation: str = "linear", lr: Any = 1, bias_init: Any = None,
        kwargs: dict | None = None) -> _Node:
    attrs = {"in_features": i, "out_features": o, "activation": activation,
             "weight_gain": np.float64(lr / np.sqrt(i)), "bias_gain": lr}
    return _Node("FullyConnectedLayer", args=(i, o), kwargs=kwargs or {}, attrs=attrs,
                 params=("weight", "bias"))


def _layer(i: int, o: int, w_dim: int, res: int, *, up: int = 1, conv_clamp: Any = None,
           kwargs: dict) -> _Node:
    attrs = {"in_channels": i, "out_channels": o, "w_dim": w_dim, "resolution": res, "up": up,
             "use_noise": True, "activation": "lrelu", "conv_clamp": conv_clamp,
             "padding": 1, "act_gain": np.float64(math.sqrt(2))}
    return _Node("SynthesisLayer", args=(i, o), kwargs=kwargs, attrs=attrs,
                 params=("weight", "noise_strength", "bias"),
                 buffers=("resample_filter", "noise_const"),
                 children={"affine": _fc(w_dim, i, kwargs={"bias_init": 1})})


def _torgb(i: int, o: int, w_dim: int, conv_clamp: Any = None) -> _Node:
    attrs = {"in_channels": i, "out_channels": o, "w_dim": w_dim, "conv_clamp": conv_clamp,
             "weight_gain": np.float64(1 / np.sqrt(i))}
    return _Node("ToRGBLayer", args=(i, o),
                 kwargs={"w_dim": w_dim, "conv_clamp": conv_clamp, "channels_last": False},
                 attrs=attrs, params=("weight", "bias"),
                 children={"affine": _fc(w_dim, i, kwargs={"bias_init": 1})})


def _block(cls: str, i: int, o: int, w_dim: int, res: int, img_channels: int, is_last: bool,
           kwargs: dict, *, up: bool) -> _Node:
    """SynthesisBlock (up=True) or the superresolution's SynthesisBlockNoUp (up=False)."""
    children: dict[str, _Node] = {}
    layer_kw = {"w_dim": w_dim, "resolution": res, "conv_clamp": kwargs.get("conv_clamp"),
                "channels_last": False}
    if i != 0:
        conv0_kw = ({"w_dim": w_dim, "resolution": res, "up": 2, "resample_filter": [1, 3, 3, 1],
                     "conv_clamp": kwargs.get("conv_clamp"), "channels_last": False}
                    if up else dict(layer_kw))
        children["conv0"] = _layer(i, o, w_dim, res, up=2 if up else 1,
                                   conv_clamp=kwargs.get("conv_clamp"), kwargs=conv0_kw)
    children["conv1"] = _layer(o, o, w_dim, res, conv_clamp=kwargs.get("conv_clamp"),
                               kwargs=dict(layer_kw))
    children["torgb"] = _torgb(o, img_channels, w_dim, kwargs.get("conv_clamp"))
    attrs = {"in_channels": i, "w_dim": w_dim, "resolution": res, "img_channels": img_channels,
             "is_last": is_last, "architecture": "skip", "use_fp16": False,
             "channels_last": False,
             "fused_modconv_default": kwargs.get("fused_modconv_default", True),
             "num_conv": 1 if i == 0 else 2, "num_torgb": 1}
    return _Node(cls, args=(i, o), kwargs=kwargs, attrs=attrs,
                 params=("const",) if i == 0 else (), buffers=("resample_filter",),
                 children=children)


def skeleton(config: Mapping[str, Any]) -> _Node:
    """The official module tree of a TriPlaneGenerator built from ``config`` (an entry of
    :data:`CONFIGS`): class names, init args/kwargs and plain attributes as NVIDIA's
    constructors set them (re-described here; no NVIDIA source is used)."""
    kw = copy.deepcopy(dict(config["init_kwargs"]))
    rk = kw["rendering_kwargs"]
    z_dim, c_dim, w_dim = kw["z_dim"], kw["c_dim"], kw["w_dim"]
    base, cmax = kw["channel_base"], kw["channel_max"]
    # backbone: StyleGAN2 Generator(z_dim, c_dim, w_dim, img_resolution=256, img_channels=96,
    # mapping_kwargs=..., **synthesis_kwargs)
    syn_kw = {k: v for k, v in kw.items() if k not in (
        "z_dim", "c_dim", "w_dim", "img_resolution", "img_channels", "sr_num_fp16_res",
        "mapping_kwargs", "rendering_kwargs", "sr_kwargs")}
    resolutions = [2 ** i for i in range(2, 9)]
    ch = {r: min(base // r, cmax) for r in resolutions}
    blocks: dict[str, _Node] = {}
    num_ws = 0
    for r in resolutions:
        i = ch[r // 2] if r > 4 else 0
        bkw = {"w_dim": w_dim, "resolution": r, "img_channels": 96, "is_last": r == 256,
               "use_fp16": False, **{k: v for k, v in syn_kw.items()
                                     if k not in ("channel_base", "channel_max", "num_fp16_res")}}
        b = _block("SynthesisBlock", i, ch[r], w_dim, r, 96, r == 256, bkw, up=True)
        num_ws += b.attrs["num_conv"] + (1 if r == 256 else 0)
        blocks[f"b{r}"] = b
    synthesis = _Node("SynthesisNetwork", kwargs={"w_dim": w_dim, "img_resolution": 256,
                                                  "img_channels": 96, **syn_kw},
                      attrs={"w_dim": w_dim, "img_resolution": 256, "img_resolution_log2": 8,
                             "img_channels": 96, "num_fp16_res": syn_kw.get("num_fp16_res", 4),
                             "block_resolutions": resolutions, "num_ws": num_ws},
                      children=blocks)
    mk = dict(kw.get("mapping_kwargs", {}))
    nl = mk.get("num_layers", 8)
    lr = mk.get("lr_multiplier", 0.01)
    feats = [z_dim + w_dim] + [w_dim] * (nl - 1) + [w_dim]
    mchildren = {"embed": _fc(c_dim, w_dim)}
    for idx in range(nl):
        mchildren[f"fc{idx}"] = _fc(feats[idx], feats[idx + 1], activation="lrelu", lr=lr,
                                    kwargs={"activation": "lrelu", "lr_multiplier": lr})
    mapping = _Node("MappingNetwork",
                    kwargs={"z_dim": z_dim, "c_dim": c_dim, "w_dim": w_dim, "num_ws": num_ws,
                            **mk},
                    attrs={"z_dim": z_dim, "c_dim": c_dim, "w_dim": w_dim, "num_ws": num_ws,
                           "num_layers": nl, "w_avg_beta": 0.998},
                    buffers=("w_avg",), children=mchildren)
    backbone = _Node("Generator", args=(z_dim, c_dim, w_dim),
                     kwargs={"img_resolution": 256, "img_channels": 96,
                             "mapping_kwargs": kw.get("mapping_kwargs", {}), **syn_kw},
                     attrs={"z_dim": z_dim, "c_dim": c_dim, "w_dim": w_dim,
                            "img_resolution": 256, "img_channels": 96, "num_ws": num_ws},
                     children={"synthesis": synthesis, "mapping": mapping})
    # superresolution
    sr_name = rk["superresolution_module"].rsplit(".", 1)[-1]
    res = kw["img_resolution"]
    sr_kw = {"channels": 32, "img_resolution": res, "sr_num_fp16_res": kw["sr_num_fp16_res"],
             "sr_antialias": rk["sr_antialias"], **kw.get("sr_kwargs", {})}
    block_kw = {k: v for k, v in kw.get("sr_kwargs", {}).items()
                if k not in ("num_fp16_res", "conv_clamp", "channel_base", "channel_max")}

    def sr_block(cls, i, o, r, last):
        bkw = {"w_dim": 512, "resolution": r, "img_channels": 3, "is_last": last,
               "use_fp16": False, "conv_clamp": None, **block_kw}
        return _block(cls, i, o, 512, r, 3, last, bkw, up=cls == "SynthesisBlock")

    if sr_name == "SuperresolutionHybrid2X":
        sr_children = {"block0": sr_block("SynthesisBlockNoUp", 32, 128, 64, False),
                       "block1": sr_block("SynthesisBlock", 128, 64, 128, True)}
        sr_attrs, sr_buf = {"input_resolution": 64, "sr_antialias": rk["sr_antialias"]}, True
    elif sr_name == "SuperresolutionHybrid4X":
        sr_children = {"block0": sr_block("SynthesisBlockNoUp", 32, 128, 128, False),
                       "block1": sr_block("SynthesisBlock", 128, 64, 256, True)}
        sr_attrs, sr_buf = {"sr_antialias": rk["sr_antialias"], "input_resolution": 128}, True
    elif sr_name == "SuperresolutionHybrid8XDC":
        sr_children = {"block0": sr_block("SynthesisBlock", 32, 256, 256, False),
                       "block1": sr_block("SynthesisBlock", 256, 128, 512, True)}
        sr_attrs, sr_buf = {"input_resolution": 128, "sr_antialias": rk["sr_antialias"]}, False
    elif sr_name == "SuperresolutionHybrid8X":
        sr_children = {"block0": sr_block("SynthesisBlock", 32, 128, 256, False),
                       "block1": sr_block("SynthesisBlock", 128, 64, 512, True)}
        sr_attrs, sr_buf = {"input_resolution": 128, "sr_antialias": rk["sr_antialias"]}, True
    else:
        raise ValueError(f"superresolution_module {sr_name!r}: not a fixture class")
    sr = _Node(sr_name, kwargs=sr_kw, attrs=sr_attrs,
               buffers=("resample_filter",) if sr_buf else (), children=sr_children)
    dlr = rk.get("decoder_lr_mul", 1)
    decoder = _Node("OSGDecoder", persistent=False, attrs={"hidden_dim": 64}, children={
        "net": _Node("Sequential", persistent=False, children={
            "0": _fc(32, 64, lr=dlr, kwargs={"lr_multiplier": dlr}),
            "1": _Node("Softplus", persistent=False, attrs={"beta": 1.0, "threshold": 20.0}),
            "2": _fc(64, 33, lr=dlr, kwargs={"lr_multiplier": dlr})})})
    renderer = _Node("ImportanceRenderer", persistent=False,
                     children={"ray_marcher": _Node("MipRayMarcher2", persistent=False)},
                     tail={"plane_axes": "plane_axes"})
    ray_sampler = _Node("RaySampler", persistent=False,
                        attrs={"ray_origins_h": None, "ray_directions": None, "depths": None,
                               "image_coords": None, "rendering_options": None})
    return _Node("TriPlaneGenerator", kwargs=kw,
                 attrs={"z_dim": z_dim, "c_dim": c_dim, "w_dim": w_dim,
                        "img_resolution": res, "img_channels": kw["img_channels"]},
                 buffers=("dataset_label_std",),
                 children={"renderer": renderer, "ray_sampler": ray_sampler,
                           "backbone": backbone, "superresolution": sr, "decoder": decoder},
                 tail={"neural_rendering_resolution": config["neural_rendering_resolution"],
                       "rendering_kwargs": copy.deepcopy(rk), "_last_planes": None})


def _plane_axes() -> torch.Tensor:
    """The renderer's three plane bases (a plain tensor attribute, not a buffer): the xy,
    xz and zx planes as rows [[1,0,0],[0,1,0],[0,0,1]], [[1,0,0],[0,0,1],[0,1,0]],
    [[0,0,1],[1,0,0],[0,1,0]]."""
    return torch.tensor([[[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                         [[1, 0, 0], [0, 0, 1], [0, 1, 0]],
                         [[0, 0, 1], [1, 0, 0], [0, 1, 0]]], dtype=torch.float32)


def _module_base_dict() -> dict:
    """The torch.nn.Module bookkeeping attributes of this torch version, in order (what
    ``Module.__init__`` puts in ``__dict__`` before ``_modules``)."""
    return dict(torch.nn.Module().__dict__)


def _easy(x: Any, fk: _Fake) -> Any:
    """dicts -> dnnlib.EasyDict where the official train.py has EasyDicts (mapping_kwargs,
    sr_kwargs); everything else as is."""
    return fk.EasyDict(x) if isinstance(x, dict) else x


def _walk_names(node: _Node, prefix: str = "") -> Iterator[tuple[str, str]]:
    for p in node.params:
        yield "param", prefix + p
    for b in node.buffers:
        yield "buffer", prefix + b
    for k, child in node.children.items():
        yield from _walk_names(child, f"{prefix}{k}.")


def _build(node: _Node, prefix: str, state: Mapping[str, torch.Tensor], fk: _Fake,
           module_src: str, filters: dict, used: set, odict: bool) -> Any:
    base = _module_base_dict()
    base["training"] = False
    d: dict[str, Any] = {}
    for k, v in base.items():
        if k == "_modules":
            continue
        d[k] = v
    container = collections.OrderedDict if odict else dict
    params = container()
    for p in node.params:
        t = state[prefix + p]
        used.add(prefix + p)
        params[p] = torch.nn.Parameter(t.detach().clone().float(), requires_grad=False)
    buffers = container()
    for b in node.buffers:
        key = prefix + b
        if key in state:
            buffers[b] = state[key].detach().clone().float()
            used.add(key)
        elif b == "resample_filter":  # one tensor per module, as after the official deepcopy
            buffers[b] = filters["f"].clone()
        else:
            raise KeyError(f"state has no {key!r}")
    d["_parameters"], d["_buffers"] = params, buffers
    children = container(
        (k, _build(c, f"{prefix}{k}.", state, fk, module_src, filters, used, odict))
        for k, c in node.children.items())
    d["_modules"] = children
    d.update(node.attrs)
    for k, v in node.tail.items():
        d[k] = _plane_axes() if v == "plane_axes" else v
    if node.persistent:
        kwargs = {k: (_easy(v, fk) if k in ("mapping_kwargs", "sr_kwargs") else v)
                  for k, v in node.kwargs.items()}
        d["_init_args"], d["_init_kwargs"] = tuple(node.args), kwargs
        meta = dict(type="class", version=PERSISTENCE_VERSION, module_src=module_src,
                    class_name=node.cls, state=d)
        return _Persistent(fk.reconstruct, meta)
    if node.cls == "Sequential":
        obj = torch.nn.Sequential()
    elif node.cls == "Softplus":
        obj = torch.nn.Softplus()
    else:
        obj = fk.plain[node.cls].__new__(fk.plain[node.cls])
    obj.__dict__.clear()
    obj.__dict__.update(d)
    return obj


def write_official_layout_pickle(path: str | Path, state: Mapping[str, Any], config_name: str,
                                 *, module_src: str = "raise RuntimeError('module_src must "
                                                      "never be executed')\n",
                                 state_G: Mapping[str, Any] | None = None,
                                 protocol: int = 4, ordered_dicts: bool | None = None) -> Path:
    """Write an EG3D network snapshot in the layout of NVIDIA's training loop.

    Parameters
    ----------
    path
        Output ``.pkl``.
    state
        State-dict name -> tensor/array for ``G_ema`` (every parameter and persistent
        buffer name of the official network, ``dataset_label_std`` included; missing
        ``*resample_filter`` buffers get the [1, 3, 3, 1] filter).
    config_name
        A key of :data:`CONFIGS` (init kwargs and ``neural_rendering_resolution``).
    module_src
        The string stored as each persistent object's ``module_src`` (never executed by a
        safe reader; the default raises if it is).
    state_G
        The state of ``G`` (default: the same as ``state``).
    protocol
        Pickle protocol (NVIDIA's snapshots use Python's default, 4).
    ordered_dicts
        Hold ``_parameters``/``_buffers``/``_modules`` in ``collections.OrderedDict`` (as
        torch < 2.0 did, e.g. in NVIDIA's published 2022 snapshots) rather than ``dict``
        (torch >= 2.0); default: what this torch's ``Module`` uses.

    Returns
    -------
    Path
        ``path``. The file holds ``dict(training_set_kwargs, G, D, G_ema, augment_pipe)``
        (that key order); networks are ``torch_utils.persistence._reconstruct_persistent_obj
        (meta)`` with ``meta = dict(type='class', version=6, module_src, class_name, state)``,
        the state being the module ``__dict__``; the non-persistent children (OSGDecoder,
        ImportanceRenderer with its ``plane_axes`` tensor, MipRayMarcher2, RaySampler) are
        pickled by module global, torch.nn.Sequential / Softplus as real torch modules.
    """
    if config_name not in CONFIGS:
        raise ValueError(f"config_name {config_name!r}: not one of {sorted(CONFIGS)}")
    config = CONFIGS[config_name]
    tree = skeleton(config)
    names = {n for _, n in _walk_names(tree) if not n.endswith("resample_filter")}

    def tensors(st: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        t = {k: torch.as_tensor(np.asarray(v, dtype=np.float32)) if not isinstance(
            v, torch.Tensor) else v for k, v in st.items()}
        missing = sorted(names - set(t))
        if missing:
            raise KeyError(f"state lacks {len(missing)} names, e.g. {missing[:3]}")
        return t

    f = torch.tensor([1.0, 3.0, 3.0, 1.0])
    filters = {"f": (f[:, None] * f[None, :]) / (f.sum() ** 2)}
    path = Path(path)
    if ordered_dicts is None:
        ordered_dicts = isinstance(torch.nn.Module()._parameters, collections.OrderedDict)
    with _Fake() as fk:
        nets = {}
        for key, st in (("G", state_G if state_G is not None else state), ("G_ema", state)):
            used: set = set()
            nets[key] = _build(tree, "", tensors(st), fk, module_src, filters, used,
                               ordered_dicts)
            extra = sorted(set(st) - used - {n for n in st if n.endswith("resample_filter")})
            if extra:
                raise KeyError(f"state has {len(extra)} names the official network lacks, "
                               f"e.g. {extra[:3]}")
        d_state = _module_base_dict()
        d_state["training"] = False
        lin = torch.nn.Linear(4, 1)
        d_state["_parameters"] = (collections.OrderedDict if ordered_dicts else dict)(
            (k, torch.nn.Parameter(v.detach().clone(), requires_grad=False))
            for k, v in lin._parameters.items())
        d_state.update(c_dim=25, img_resolution=config["init_kwargs"]["img_resolution"],
                       _init_args=(), _init_kwargs={"c_dim": 25})
        disc = _Persistent(fk.reconstruct, dict(type="class", version=PERSISTENCE_VERSION,
                                                module_src=module_src,
                                                class_name="DualDiscriminator", state=d_state))
        res = config["init_kwargs"]["img_resolution"]
        data = {"training_set_kwargs": {"class_name": "training.dataset.ImageFolderDataset",
                                        "path": f"ffhq{res}.zip", "use_labels": True,
                                        "max_size": 1000, "xflip": False, "resolution": res,
                                        "random_seed": 0},
                "G": nets["G"], "D": disc, "G_ema": nets["G_ema"], "augment_pipe": None}
        with open(path, "wb") as fh:
            pickle.dump(data, fh, protocol=protocol)
    leaked = [k for k, v in fk.saved.items() if v is None and k in sys.modules]
    if leaked:
        raise AssertionError(f"fake NVIDIA modules left in sys.modules: {leaked}")
    return path
