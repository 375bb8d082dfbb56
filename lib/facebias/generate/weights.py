"""Reading official StyleGAN2 and EG3D network pickles without running their code; fetching them.

NVIDIA's ``stylegan2-ada-pytorch`` saves ``pickle.dump(dict(G=..., D=..., G_ema=...,
augment_pipe=..., training_set_kwargs=...))``; each network is a
``torch_utils.persistence`` object, pickled as
``_reconstruct_persistent_obj(meta)`` with ``meta = dict(type='class', version=...,
module_src=<Python source>, class_name=..., state=<the module's __dict__>)``. Loading such a
file with ``pickle.load`` executes ``module_src``. :class:`RestrictedUnpickler` instead
resolves only an explicit allow-list of globals (torch's tensor/parameter/storage rebuild
helpers, ``OrderedDict``, ``dnnlib.EasyDict``, numeric numpy scalars and their dtypes,
plain ``torch.nn`` module classes as inert stand-ins) and turns each persistent object into
a :class:`PersistentRecord` (class name, init args/kwargs, state) without ever looking at
``module_src``. EG3D snapshots (``NVlabs/eg3d``, the same persistence layout) also reference
four plain module classes by global name, its decoder, renderer, ray marcher and ray sampler
(:data:`EG3D_PLAIN_CLASSES`); each becomes an inert stand-in too. Any other global raises :class:`pickle.UnpicklingError` naming it. Storages are read with
``torch.load(..., weights_only=True)``.

Command line (a DVC stage can call it; the download needs network access)::

    python -m facebias.generate.weights fetch --url URL --sha256 HEX --out PATH
    python -m facebias.generate.weights verify --sha256 HEX PATH
"""

from __future__ import annotations

import argparse
import collections
import io
import pickle
import re
import shutil
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from facebias.io import atomic_path, file_sha256, pickle_latin1_encode

__all__ = [
    "PersistentRecord",
    "NetworkRecord",
    "RestrictedUnpickler",
    "load_pickle",
    "load_network",
    "flatten_state",
    "module_attributes",
    "EG3D_PLAIN_CLASSES",
    "fetch",
    "verify",
    "ChecksumError",
    "FFHQ_URL",
    "main",
]

#: The official FFHQ 1024x1024 config-f generator (converted by NVIDIA to PyTorch).
FFHQ_URL = "https://nvlabs-fi-cdn.nvidia.com/stylegan2-ada-pytorch/pretrained/ffhq.pkl"


# ---------------------------------------------------------------------------- records


@dataclass
class PersistentRecord:
    """What a ``torch_utils.persistence`` object becomes: its class name, constructor
    arguments and ``__dict__`` (``_parameters``, ``_buffers``, ``_modules``, ...). The
    pickled source code is not kept, only its length (for reports)."""

    class_name: str
    init_args: tuple = ()
    init_kwargs: dict = field(default_factory=dict)
    state: dict = field(default_factory=dict)
    module_src_chars: int = 0
    version: Any = None


class _PlainModule:
    """Inert stand-in for a plain ``torch.nn`` module class found in a pickle (created by
    NEWOBJ; BUILD hands it the module's ``__dict__``)."""

    torch_class = ""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
            state = state[0] or {}
        self.state = dict(state) if isinstance(state, dict) else {}

    @property
    def class_name(self) -> str:
        return self.torch_class


class _EasyDict(dict):
    """Stand-in for ``dnnlib.EasyDict`` (a dict with attribute access)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setstate__(self, state: Any) -> None:  # an EasyDict's (empty) __dict__
        pass


def _reconstruct_persistent_obj(meta: Any) -> PersistentRecord:
    if not isinstance(meta, dict):
        raise pickle.UnpicklingError("persistent object: meta is not a dict")
    if meta.get("type") != "class":
        raise pickle.UnpicklingError(f"persistent object of type {meta.get('type')!r} is not "
                                     f"supported (only 'class')")
    state = meta.get("state") or {}
    if not isinstance(state, dict):
        raise pickle.UnpicklingError("persistent object: state is not a dict")
    kwargs = state.get("_init_kwargs", state.get("init_kwargs", {})) or {}
    args = state.get("_init_args", state.get("init_args", ())) or ()
    src = meta.get("module_src")
    return PersistentRecord(class_name=str(meta.get("class_name")), init_args=tuple(args),
                            init_kwargs=_plain(kwargs), state=state,
                            module_src_chars=len(src) if isinstance(src, str) else 0,
                            version=meta.get("version"))


def _plain(x: Any) -> Any:
    """EasyDicts and OrderedDicts -> dicts, recursively (for init kwargs)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    return x


# ---------------------------------------------------------------------------- tensors


def _load_from_bytes(b: bytes) -> Any:
    """``torch.storage._load_from_bytes`` with ``weights_only=True`` (no arbitrary globals)."""
    if not isinstance(b, (bytes, bytearray)):
        raise pickle.UnpicklingError("storage payload is not bytes")
    return torch.load(io.BytesIO(bytes(b)), map_location="cpu", weights_only=True)


def _no_hooks(hooks: Any) -> None:
    if hooks:
        raise pickle.UnpicklingError("tensors with backward hooks are not supported")


def _is_storage(s: Any) -> bool:
    return isinstance(s, (torch.storage.TypedStorage, torch.UntypedStorage))


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    if not _is_storage(storage):
        raise pickle.UnpicklingError("tensor without a torch storage")
    _no_hooks(backward_hooks)
    return torch._utils._rebuild_tensor_v2(storage, storage_offset, tuple(size), tuple(stride),
                                           bool(requires_grad), collections.OrderedDict())


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not _is_storage(storage):
        raise pickle.UnpicklingError("tensor without a torch storage")
    return torch._utils._rebuild_tensor(storage, storage_offset, tuple(size), tuple(stride))


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    if not isinstance(data, torch.Tensor):
        raise pickle.UnpicklingError("parameter data is not a tensor")
    _no_hooks(backward_hooks)
    if state:
        raise pickle.UnpicklingError("parameters with extra state are not supported")
    return torch.nn.Parameter(data, bool(requires_grad))


def _torch_size(*args: Any) -> tuple:
    return tuple(*args)


_NUMERIC_DTYPE = re.compile(r"^[<>|=]?[biufc][0-9]{1,2}$")


def _np_dtype(obj: Any, align: bool = False, copy: bool = True) -> np.dtype:
    """``numpy.dtype`` for plain numeric type strings only (e.g. ``'f8'``), always a copy
    (the pickle's BUILD then sets its state; :func:`_np_scalar` re-checks the result)."""
    if not isinstance(obj, str) or not _NUMERIC_DTYPE.match(obj):
        raise pickle.UnpicklingError(f"numpy dtype {obj!r} refused (numeric scalars only)")
    return np.dtype(obj, bool(align), True)


def _np_scalar(dtype: Any, data: Any = None) -> Any:
    """``numpy.core.multiarray.scalar`` for numeric scalars (the official networks keep
    e.g. ``weight_gain`` as ``np.float64``)."""
    ok = (isinstance(dtype, np.dtype) and dtype.kind in "biufc" and not dtype.hasobject
          and dtype.fields is None and dtype.subdtype is None
          and isinstance(data, (bytes, bytearray)) and len(data) == dtype.itemsize)
    if not ok:
        raise pickle.UnpicklingError("numpy scalar refused (numeric dtypes with raw bytes only)")
    return np.frombuffer(bytes(data), dtype=dtype)[0]


_ALLOWED: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch.storage", "_load_from_bytes"): _load_from_bytes,
    ("torch", "Size"): _torch_size,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,
    ("_codecs", "encode"): pickle_latin1_encode,
    ("torch_utils.persistence", "_reconstruct_persistent_obj"): _reconstruct_persistent_obj,
    ("dnnlib.util", "EasyDict"): _EasyDict,
    ("dnnlib", "EasyDict"): _EasyDict,
    ("numpy", "dtype"): _np_dtype,
    ("numpy.core.multiarray", "scalar"): _np_scalar,
    ("numpy._core.multiarray", "scalar"): _np_scalar,
}


#: The plain (non-persistent) ``torch.nn.Module`` classes an EG3D snapshot references as
#: module globals (the OSG decoder, the renderer, its ray marcher, the ray sampler): each
#: becomes an inert stand-in that keeps only its ``__dict__``. Nothing else from ``training``.
EG3D_PLAIN_CLASSES = (
    ("training.triplane", "OSGDecoder"),
    ("training.volumetric_rendering.renderer", "ImportanceRenderer"),
    ("training.volumetric_rendering.ray_marcher", "MipRayMarcher2"),
    ("training.volumetric_rendering.ray_sampler", "RaySampler"),
)
_ALLOWED.update({key: type(key[1], (_PlainModule,), {"torch_class": ".".join(key)})
                 for key in EG3D_PLAIN_CLASSES})


def _plain_module_class(module: str, name: str) -> type | None:
    """An inert stand-in for ``torch.nn.modules.<x>.<name>`` when that really is a
    ``torch.nn.Module`` subclass already imported with torch (nothing else is imported)."""
    mod = sys.modules.get(module)
    real = getattr(mod, name, None) if mod is not None and name.isidentifier() else None
    if not (isinstance(real, type) and issubclass(real, torch.nn.Module)):
        return None
    return type(name, (_PlainModule,), {"torch_class": f"{module}.{name}"})


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler for network pickles that resolves only allow-listed globals."""

    def find_class(self, module: str, name: str) -> Any:
        allowed = _ALLOWED.get((module, name))
        if allowed is not None:
            return allowed
        if module.startswith("torch.nn.modules."):
            stand_in = _plain_module_class(module, name)
            if stand_in is not None:
                return stand_in
        raise pickle.UnpicklingError(
            f"refused global {module}.{name}: not on the allow-list of the restricted network "
            f"unpickler (torch tensor/parameter/storage rebuilds, OrderedDict, EasyDict, numeric "
            f"numpy scalars, torch_utils.persistence objects, plain torch.nn modules, EG3D's "
            f"decoder, renderer, ray marcher and ray sampler)")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not supported in network pickles")


def load_pickle(path: str | Path) -> Any:
    """The whole pickle, read with :class:`RestrictedUnpickler`."""
    with open(path, "rb") as fh:
        return RestrictedUnpickler(fh).load()


# ---------------------------------------------------------------------------- networks


@dataclass
class NetworkRecord:
    """One network from a pickle: class name, constructor arguments, flat state dict, and
    each module's plain attributes (``{dotted module name ('' = the network): {name:
    value}}``: the ``__dict__`` entries not starting with ``_`` and not ``training``, e.g.
    EG3D's ``rendering_kwargs`` and ``neural_rendering_resolution``)."""

    class_name: str
    init_args: tuple
    init_kwargs: dict
    state_dict: dict[str, torch.Tensor]
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)


def flatten_state(obj: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """``{dotted name: tensor}`` of a module record tree, as ``nn.Module.state_dict()``
    names them: parameters and persistent buffers, children by their attribute names."""
    state = getattr(obj, "state", None)
    if not isinstance(state, dict):
        raise ValueError(f"{prefix or 'network'}: not a module record")
    out: dict[str, torch.Tensor] = {}
    skip = set(state.get("_non_persistent_buffers_set") or ())
    for kind in ("_parameters", "_buffers"):
        for name, t in (state.get(kind) or {}).items():
            if t is None or (kind == "_buffers" and name in skip):
                continue
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"{prefix}{name}: {kind[1:-1]} is not a tensor")
            out[prefix + name] = t.detach()
    for name, child in (state.get("_modules") or {}).items():
        if child is not None:
            out.update(flatten_state(child, f"{prefix}{name}."))
    return out


def module_attributes(obj: Any, prefix: str = "") -> dict[str, dict[str, Any]]:
    """``{dotted module name: {attribute: value}}`` of a module record tree: each module's
    ``__dict__`` entries that are not private (``_*``) and not ``training``."""
    state = getattr(obj, "state", None)
    if not isinstance(state, dict):
        return {}
    out = {prefix.rstrip("."): {k: v for k, v in state.items()
                                if isinstance(k, str) and not k.startswith("_") and k != "training"}}
    for name, child in (state.get("_modules") or {}).items():
        if child is not None:
            out.update(module_attributes(child, f"{prefix}{name}."))
    return out


def load_network(path: str | Path, key: str = "G_ema") -> NetworkRecord:
    """Network ``key`` (``"G_ema"``, ``"G"`` or ``"D"``) of an official pickle, flattened."""
    data = load_pickle(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a dict of networks, got {type(data).__name__}")
    if key not in data or data[key] is None:
        raise ValueError(f"{path}: no network {key!r}; it has {sorted(map(str, data))}")
    rec = data[key]
    if not isinstance(rec, PersistentRecord):
        raise ValueError(f"{path}: {key} is a {type(rec).__name__}, not a persistent network")
    return NetworkRecord(rec.class_name, rec.init_args, rec.init_kwargs, flatten_state(rec),
                         module_attributes(rec))


# ---------------------------------------------------------------------------- fetch / verify


class ChecksumError(ValueError):
    """A file's sha256 differs from the expected one."""


def _norm_hex(sha256: str) -> str:
    h = sha256.strip().lower()
    if len(h) != 64 or any(ch not in "0123456789abcdef" for ch in h):
        raise ValueError(f"sha256 must be 64 hex digits, got {sha256!r}")
    return h


def verify(path: str | Path, sha256: str) -> str:
    """Check ``path``'s sha256; return it, or raise :class:`ChecksumError`."""
    want = _norm_hex(sha256)
    got = file_sha256(path)
    if got != want:
        raise ChecksumError(f"{path}: sha256 {got}, expected {want}")
    return got


def fetch(url: str, sha256: str, out: str | Path, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``out`` atomically, keeping it only if its sha256 matches.
    An existing ``out`` with the right checksum is kept without downloading."""
    want = _norm_hex(sha256)
    out = Path(out)
    if out.exists() and file_sha256(out) == want:
        return out
    with atomic_path(out) as tmp:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as fh:
            shutil.copyfileobj(resp, fh, length=1 << 20)
        got = file_sha256(tmp)
        if got != want:
            raise ChecksumError(f"{url}: sha256 {got}, expected {want}; {out} not written")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m facebias.generate.weights",
                                 description="Fetch or verify StyleGAN2 network pickles.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="download URL to OUT atomically, checking its sha256")
    f.add_argument("--url", default=FFHQ_URL)
    f.add_argument("--sha256", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--timeout", type=float, default=60.0)
    v = sub.add_parser("verify", help="check a file's sha256 (and that its G_ema loads)")
    v.add_argument("path")
    v.add_argument("--sha256", required=True)
    v.add_argument("--load", action="store_true", help="also read G_ema with the restricted unpickler")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "fetch":
            p = fetch(a.url, a.sha256, a.out, timeout=a.timeout)
            print(f"{p}: sha256 ok")
        else:
            verify(a.path, a.sha256)
            msg = f"{a.path}: sha256 ok"
            if a.load:
                rec = load_network(a.path)
                msg += f"; G_ema {rec.class_name} with {len(rec.state_dict)} tensors, {rec.init_kwargs}"
            print(msg)
    except (ChecksumError, ValueError, OSError, pickle.UnpicklingError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
