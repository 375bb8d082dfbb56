"""Model specs: one string names any face-recognition model a study can run.

=============================================  ==============================================
spec                                           model
=============================================  ==============================================
``sface``                                      OpenCV SFace (built in, offline)
``dlib``                                       dlib ResNet (built in, offline)
``onnx:PATH[?key=value&...]``                  an ONNX file (:class:`OnnxEmbedder`)
``torch:MODULE:FUNCTION[?key=value&...]``      ``MODULE.FUNCTION()`` returns a
                                               ``torch.nn.Module`` (:class:`TorchEmbedder`)
=============================================  ==============================================

Options (after ``?``, joined by ``&``) of the user models: ``input_size`` (side of the
square ArcFace crop, pixels, default 112), ``mean`` and ``std`` (the input is
``(pixel - mean) / std``; one number or three comma-separated per-channel values in RGB
order, default 127.5), ``layout`` (``nchw`` default, or ``nhwc``), ``rgb`` (``1`` default,
``0`` feeds BGR), ``name`` (the system's name in tables; default the file stem or the
function name) and ``threshold`` (the model's verification threshold as a cosine
similarity, match iff score > threshold; the studies that use a published threshold need
it, others ignore it). ``PATH`` is relative to the working directory (the repository root
in the DVC stages); ``MODULE`` is imported with the working directory on ``sys.path``.

:func:`parse_model_spec` checks the syntax only (what a ``params.yaml`` check does);
:func:`check_model_spec` also opens the model (the file exists and is an ONNX model, the
module imports and the function returns a module that runs on the input size), which a
study does before it starts; :func:`facebias.faces.embed.load_embedder` loads it.
Embeddings of a user model are cached (:class:`facebias.faces.cache.EmbeddingCache`) by
its ``model_id``: the weights' hash (the ONNX file's sha256, the torch ``state_dict``'s)
and its preprocessing options, with each image's pixel hash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["BUILTIN_MODELS", "OPTIONS", "ModelSpec", "parse_model_spec", "check_model_spec", "model_name",
           "split_models", "load_from_spec", "SPEC_HELP"]

#: The models that ship with the package (no file needed).
BUILTIN_MODELS = ("sface", "dlib")
#: One line saying what a spec may be, for error messages.
SPEC_HELP = ("a model is 'sface', 'dlib', 'onnx:PATH[?input_size=112&mean=127.5&std=127.5"
             "&layout=nchw&rgb=1&name=N&threshold=T]' or 'torch:MODULE:FUNCTION[?...]'")
#: The options a user-model spec may carry after ``?``.
OPTIONS = ("input_size", "mean", "std", "layout", "rgb", "name", "threshold")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec (:func:`parse_model_spec`).

    Attributes
    ----------
    text : str
        The spec as written.
    kind : {"sface", "dlib", "onnx", "torch"}
        Which loader.
    target : str
        The ONNX file (``onnx``), ``"MODULE:FUNCTION"`` (``torch``), else ``""``.
    input_size : int
        Side of the square aligned crop fed to a user model, pixels.
    mean, std : tuple of float
        Per-channel (RGB) normalisation ``(pixel - mean) / std``.
    layout : {"nchw", "nhwc"}
        Input tensor layout of an ONNX model (torch models take NCHW).
    rgb : bool
        Channel order fed to the model: RGB (True) or BGR.
    name : str
        The system's name in tables and figures.
    threshold : float or None
        The model's verification threshold (cosine similarity; match iff score > t), if
        given (built-in models: their published one,
        :data:`facebias.faces.embedders.PUBLISHED_THRESHOLDS`).
    """

    text: str
    kind: str
    target: str = ""
    input_size: int = 112
    mean: tuple[float, float, float] = (127.5, 127.5, 127.5)
    std: tuple[float, float, float] = (127.5, 127.5, 127.5)
    layout: str = "nchw"
    rgb: bool = True
    name: str = ""
    threshold: float | None = None
    options: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def builtin(self) -> bool:
        """Whether this is one of :data:`BUILTIN_MODELS`."""
        return self.kind in BUILTIN_MODELS


def _channels(value: str, key: str, spec: str) -> tuple[float, float, float]:
    try:
        parts = [float(v) for v in value.split(",")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3:
        raise ValueError(f"model {spec!r}: {key}={value!r} must be one number or three "
                         f"comma-separated numbers (R,G,B)")
    if key == "std" and min(parts) <= 0:
        raise ValueError(f"model {spec!r}: std={value!r} must be > 0")
    return parts[0], parts[1], parts[2]


def _options(query: str, spec: str) -> dict[str, Any]:
    """The ``?key=value&...`` options of a user-model spec, checked and typed."""
    raw: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key not in OPTIONS:
            raise ValueError(f"model {spec!r}: unknown option {key!r}; known: {', '.join(OPTIONS)}")
        if key in raw:
            raise ValueError(f"model {spec!r}: option {key!r} given twice")
        raw[key] = value
    out: dict[str, Any] = {"options": raw}
    if "input_size" in raw:
        v = raw["input_size"]
        if not v.isdigit() or not 16 <= int(v) <= 1024:
            raise ValueError(f"model {spec!r}: input_size={v!r} must be an integer in 16..1024 (pixels)")
        out["input_size"] = int(v)
    for key in ("mean", "std"):
        if key in raw:
            out[key] = _channels(raw[key], key, spec)
    if "layout" in raw:
        if raw["layout"].lower() not in ("nchw", "nhwc"):
            raise ValueError(f"model {spec!r}: layout={raw['layout']!r} must be nchw or nhwc")
        out["layout"] = raw["layout"].lower()
    if "rgb" in raw:
        if raw["rgb"] not in ("0", "1"):
            raise ValueError(f"model {spec!r}: rgb={raw['rgb']!r} must be 1 (RGB) or 0 (BGR)")
        out["rgb"] = raw["rgb"] == "1"
    if "name" in raw:
        if not _NAME.match(raw["name"]):
            raise ValueError(f"model {spec!r}: name={raw['name']!r} must be letters, digits, _ . - "
                             "(starting with a letter or _)")
        out["name"] = raw["name"]
    if "threshold" in raw:
        try:
            t = float(raw["threshold"])
        except ValueError:
            t = float("nan")
        if not -1 <= t <= 1:
            raise ValueError(f"model {spec!r}: threshold={raw['threshold']!r} must be a cosine "
                             "similarity in [-1, 1]")
        out["threshold"] = t
    return out


def parse_model_spec(spec: str | ModelSpec) -> ModelSpec:
    """Parse a model spec (syntax only; no file is opened).

    Parameters
    ----------
    spec : str or ModelSpec
        ``"sface"``, ``"dlib"``, ``"onnx:PATH[?options]"`` or
        ``"torch:MODULE:FUNCTION[?options]"`` (module docstring); a ModelSpec is returned
        as is.

    Returns
    -------
    ModelSpec

    Raises
    ------
    ValueError
        One line naming the spec and what is wrong with it.

    Examples
    --------
    >>> parse_model_spec("sface").threshold
    0.363
    >>> s = parse_model_spec("onnx:models/me.onnx?input_size=96&mean=0&std=255,255,255")
    >>> s.kind, s.target, s.input_size, s.mean, s.std, s.name
    ('onnx', 'models/me.onnx', 96, (0.0, 0.0, 0.0), (255.0, 255.0, 255.0), 'me')
    >>> parse_model_spec("torch:mypkg.nets:build?name=r50").name
    'r50'
    >>> parse_model_spec("arcface")
    Traceback (most recent call last):
    ...
    ValueError: model 'arcface': unknown model; a model is 'sface', 'dlib', 'onnx:PATH[?input_size=112&mean=127.5&std=127.5&layout=nchw&rgb=1&name=N&threshold=T]' or 'torch:MODULE:FUNCTION[?...]'
    """
    if isinstance(spec, ModelSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"model {spec!r}: expected a non-empty string; {SPEC_HELP}")
    text = spec.strip()
    if text in BUILTIN_MODELS:
        from facebias.faces.embedders import PUBLISHED_THRESHOLDS

        return ModelSpec(text, text, name=text, threshold=PUBLISHED_THRESHOLDS[text])
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("onnx", "torch"):
        raise ValueError(f"model {text!r}: unknown model; {SPEC_HELP}")
    target, _, query = rest.partition("?")
    opts = _options(query, text)
    if kind == "onnx":
        if not target:
            raise ValueError(f"model {text!r}: no file after 'onnx:'; {SPEC_HELP}")
        if opts.get("layout") is None:
            opts["layout"] = "nchw"
        default_name = Path(target).stem
    else:
        module, sep2, function = target.rpartition(":")
        if not sep2 or not module or not function.isidentifier() or not all(
                p.isidentifier() for p in module.split(".")):
            raise ValueError(f"model {text!r}: expected 'torch:MODULE:FUNCTION' with a dotted module "
                             "path and a function name (e.g. torch:mypkg.nets:build)")
        if opts.get("layout", "nchw") != "nchw":
            raise ValueError(f"model {text!r}: torch models take NCHW input; drop layout=")
        default_name = function
    if not _NAME.match(opts.get("name", default_name)):
        raise ValueError(f"model {text!r}: its name {default_name!r} is not a plain word; "
                         "set name=... (letters, digits, _ . -)")
    opts.setdefault("name", default_name)
    return ModelSpec(text, kind, target, **opts)


def split_models(text: str) -> list[str]:
    """A comma-separated list of specs (a CLI's ``--models``) as its specs.

    A comma starts a new spec only where what follows is one (``sface``, ``dlib``,
    ``onnx:``, ``torch:``), so per-channel options such as ``mean=0.5,0.4,0.3`` stay whole.

    Examples
    --------
    >>> split_models("sface,onnx:me.onnx?mean=0.5,0.4,0.3&std=0.2,dlib")
    ['sface', 'onnx:me.onnx?mean=0.5,0.4,0.3&std=0.2', 'dlib']
    """
    parts: list[str] = []
    for piece in text.split(","):
        starts = piece.strip() in BUILTIN_MODELS or piece.strip().startswith(("onnx:", "torch:"))
        if parts and not starts:
            parts[-1] += "," + piece
        else:
            parts.append(piece.strip())
    return [p for p in parts if p]


def model_name(spec: str | ModelSpec) -> str:
    """The system name a spec gets in tables and figures (``name=`` or the default).

    Examples
    --------
    >>> model_name("dlib"), model_name("onnx:/tmp/arc.r100.onnx"), model_name("torch:a.b:net")
    ('dlib', 'arc.r100', 'net')
    """
    return parse_model_spec(spec).name


def check_model_spec(spec: str | ModelSpec, detector: str = "yunet") -> Any:
    """Parse a spec and load its model, with one-line errors: what a study runs first.

    Parameters
    ----------
    spec : str or ModelSpec
        See :func:`parse_model_spec`.
    detector : str, default "yunet"
        The face detector the embedder uses.

    Returns
    -------
    facebias.faces.embedders.BaseEmbedder
        The loaded embedder (so the check costs one load, not two).

    Raises
    ------
    ValueError
        For a bad spec, a missing file, a file that is not an ONNX model, a module that
        does not import, a function that does not return a ``torch.nn.Module``, or a
        model that fails on its input size (each message names the file or function and
        what to set).
    """
    from facebias.faces.embed import load_embedder

    return load_embedder(parse_model_spec(spec), detector)


def load_from_spec(s: ModelSpec, detector: str) -> Any:
    """The embedder of a parsed user-model spec (``onnx`` or ``torch``); see
    :func:`facebias.faces.embed.load_embedder`."""
    from facebias.faces.user_embedders import OnnxEmbedder, TorchEmbedder

    common = dict(input_size=s.input_size, mean=s.mean, std=s.std, name=s.name, detector=detector)
    if s.kind == "onnx":
        return OnnxEmbedder(s.target, rgb=s.rgb, layout=s.layout, **common)
    module = _torch_module(s)
    return TorchEmbedder(module, **common, rgb=s.rgb)


def _torch_module(s: ModelSpec) -> Any:
    """``MODULE.FUNCTION()`` of a torch spec, checked to be a ``torch.nn.Module``."""
    import importlib
    import os
    import sys

    import torch

    module_name, _, function = s.target.rpartition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(module_name)  # dvcdeps: not a lib import (the user's module)
    except ImportError as exc:
        raise ValueError(f"model {s.text!r}: cannot import module {module_name!r} ({exc}); it must "
                         "be importable from the working directory or an installed package") from exc
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise ValueError(f"model {s.text!r}: module {module_name!r} ({getattr(mod, '__file__', '?')}) "
                         f"has no function {function!r}")
    try:
        net = fn()
    except Exception as exc:  # the user's code: any error, named
        raise ValueError(f"model {s.text!r}: {module_name}.{function}() raised "
                         f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(net, torch.nn.Module):
        raise ValueError(f"model {s.text!r}: {module_name}.{function}() returned a "
                         f"{type(net).__name__}, not a torch.nn.Module")
    return net
