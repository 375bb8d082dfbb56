"""File I/O at the edges: atomic writes, so a crash never leaves a half-written output."""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_text_atomic", "write_json_atomic", "jsonable", "atomic_path", "repo_root",
           "load_params", "file_sha256"]


class atomic_path:
    """Context manager yielding a temporary path next to ``path``; renamed onto it on success.

    >>> with atomic_path("out.parquet") as tmp:
    ...     df.to_parquet(tmp)
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __enter__(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
        self.tmp = Path(name)
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                os.replace(self.tmp, self.path)
        finally:  # a failed (or interrupted) rename must not leave the temp file behind
            self.tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def jsonable(obj: Any) -> Any:
    """Plain-JSON copy of ``obj``: numpy scalars and arrays become Python values, NaN
    becomes ``null`` and infinities the strings ``"inf"`` / ``"-inf"`` (strict JSON has none).
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
    return obj


def write_json_atomic(path: str | os.PathLike, obj: Any, indent: int = 2) -> Path:
    """Write ``jsonable(obj)`` as strict JSON, atomically."""
    return write_text_atomic(path, json.dumps(jsonable(obj), indent=indent, allow_nan=False) + "\n")


def repo_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding ``dvc.yaml``, searched upwards from ``start`` (default: cwd).

    Notebooks run from the repo root under papermill but from ``notebooks/`` in
    JupyterLab; resolving paths from here makes both work.
    """
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "dvc.yaml").exists():
            return p
    raise FileNotFoundError(f"no dvc.yaml found in {here} or any parent folder")


def load_params(path: str | os.PathLike = "params.yaml", section: str | None = None) -> dict:
    """Read ``params.yaml`` (or one of its sections), with a clear error when absent."""
    import yaml

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"parameter file {p} not found (run from the repository root)")
    data = yaml.safe_load(p.read_text()) or {}
    if section is None:
        return data
    if section not in data:
        raise KeyError(f"{p}: no section {section!r}; sections are {sorted(data)}")
    return data[section]


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def config_from_params(cls: type, params: Any, section: str) -> Any:
    """Build the dataclass ``cls`` from a ``params.yaml`` section (missing keys take the
    defaults); an unknown key raises ``ValueError`` naming the section and the known keys."""
    if not isinstance(params, dict):
        raise ValueError(f"{section}: expected a mapping, got {type(params).__name__}")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(params) - known, key=str)
    if unknown:
        raise ValueError(f"{section}: unknown key(s) {unknown}; known keys are {sorted(known)}")
    return cls(**params)
