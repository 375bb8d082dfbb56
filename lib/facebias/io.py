"""File I/O at the edges: atomic writes, so a crash never leaves a half-written output."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import pickle
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_text_atomic", "write_json_atomic", "jsonable", "atomic_path", "repo_root",
           "load_params", "file_sha256", "write_parquet", "read_parquet", "read_pickle_frame",
           "FrameUnpickler", "UnsafePickleError"]

_PARQUET_ATTRS_KEY = b"facebias"  # parquet schema-metadata key holding ``df.attrs`` as JSON


class atomic_path:
    """Context manager yielding a temporary path next to ``path``; renamed onto it on success.

    The temporary file sits in ``path``'s folder (created if missing), so the rename is
    atomic; on an exception ``path`` is left untouched and the temporary file is removed.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.

    Examples
    --------
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_path(Path(d) / "out.txt") as tmp:
    ...         _ = tmp.write_text("done")
    ...     print((Path(d) / "out.txt").read_text())
    done
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
    """Write ``text`` to ``path`` atomically (through :class:`atomic_path`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write; missing parent folders are created.
    text : str
        The content, written with the platform's default encoding.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(write_text_atomic(Path(d) / "a" / "b.txt", "hi").read_text())
    hi
    """
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def jsonable(obj: Any) -> Any:
    """Plain-JSON copy of ``obj``: numpy scalars and arrays become Python values, NaN
    becomes ``null`` and infinities the strings ``"inf"`` / ``"-inf"`` (strict JSON has none).

    Parameters
    ----------
    obj : Any
        Nested dicts, lists, tuples, numpy arrays and scalars, and plain values.

    Returns
    -------
    Any
        The copy: dict keys become strings and tuples lists; other values pass unchanged.

    Examples
    --------
    >>> jsonable({"n": np.int64(3), 1: (np.nan, np.inf), "v": np.array([0.5])})
    {'n': 3, '1': [None, 'inf'], 'v': [0.5]}
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
    """Write ``jsonable(obj)`` as strict JSON, atomically, with a final newline.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    obj : Any
        What to write; converted with :func:`jsonable`.
    indent : int, default 2
        Indentation of ``json.dumps``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    TypeError
        If ``obj`` holds a value JSON cannot represent (e.g. a ``set``).

    Examples
    --------
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(write_json_atomic(Path(d) / "m.json", {"x": np.nan}, indent=0).read_text())
    {
    "x": null
    }
    """
    return write_text_atomic(path, json.dumps(jsonable(obj), indent=indent, allow_nan=False) + "\n")


def repo_root(start: str | os.PathLike | None = None) -> Path:
    """The folder holding ``dvc.yaml``, searched upwards from ``start`` (default: cwd).

    Notebooks run from the repo root under papermill but from ``notebooks/`` in
    JupyterLab; resolving paths from here makes both work.

    Parameters
    ----------
    start : str or os.PathLike, optional
        Where to start the search (default: the current working directory).

    Returns
    -------
    pathlib.Path
        The absolute repository root.

    Raises
    ------
    FileNotFoundError
        If neither ``start`` nor any parent folder holds a ``dvc.yaml``.
    """
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "dvc.yaml").exists():
            return p
    raise FileNotFoundError(f"no dvc.yaml found in {here} or any parent folder")


def load_params(path: str | os.PathLike = "params.yaml", section: str | None = None) -> dict:
    """Read ``params.yaml`` (or one of its sections), with a clear error when absent.

    Parameters
    ----------
    path : str or os.PathLike, default "params.yaml"
        The YAML file, relative to the current working directory.
    section : str, optional
        A top-level key to return instead of the whole file.

    Returns
    -------
    dict
        The parsed file (``{}`` when empty), or its ``section``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    KeyError
        If ``section`` is given and absent; the message lists the sections.
    ValueError
        If ``path`` is a folder, is not UTF-8 (or UTF-16/32 with a byte-order mark) text,
        is not valid YAML (the message gives line and column) or is not a mapping.
    """
    import yaml

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"parameter file {p} not found (run from the repository root)")
    if p.is_dir():
        raise ValueError(f"{p}: is a folder, not a parameter file")
    try:  # from bytes, YAML reads UTF-8 and, with a byte-order mark, UTF-16
        data = yaml.safe_load(p.read_bytes())
    except yaml.reader.ReaderError as exc:
        raise ValueError(f"{p}: not UTF-8 text (or UTF-16 with a byte-order mark): {exc.reason} "
                         f"at byte {exc.position}") from None
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}" \
            if exc.problem_mark is not None else ""
        raise ValueError(f"{p}: invalid YAML{where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{p}: invalid YAML: {' '.join(str(exc).split())}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping of sections (`name: ...` lines), "
                         f"got a {type(data).__name__}")
    if section is None:
        return data
    if section not in data:
        raise KeyError(f"{p}: no section {section!r}; sections are {sorted(data)}")
    return data[section]


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    str
        64 lowercase hex characters.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.

    Examples
    --------
    >>> with tempfile.TemporaryDirectory() as d:
    ...     print(file_sha256(write_text_atomic(Path(d) / "e.txt", ""))[:16])
    e3b0c44298fc1c14
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_parquet(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` to parquet atomically; ``df.attrs`` go in the schema metadata as JSON."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_PARQUET_ATTRS_KEY] = json.dumps(df.attrs, allow_nan=False).encode("utf-8")
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_parquet(path: str | os.PathLike) -> pd.DataFrame:
    """Read a table written by :func:`write_parquet`, restoring ``df.attrs`` (``{}`` if none)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    df = table.to_pandas()
    raw = (table.schema.metadata or {}).get(_PARQUET_ATTRS_KEY)
    df.attrs = json.loads(raw) if raw else {}
    return df


# ---------------------------------------------------------------------------- pickled tables
# A pickle names the functions and classes that rebuild it, and ``pickle.load`` calls them:
# a crafted file can name ``os.system``. :func:`read_pickle_frame` resolves only what a
# pandas DataFrame is rebuilt from; any other global is refused before anything is called.
_PICKLE_PACKAGES = ("pandas", "numpy")  # and their submodules; else only these modules:
_PICKLE_MODULES = frozenset({"pyarrow.lib", "datetime", "zoneinfo", "pytz", "builtins", "copyreg",
                             "_codecs", "collections"})


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle names a global that a pandas DataFrame is not rebuilt from."""


def pickle_latin1_encode(obj: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """``_codecs.encode`` as protocol <= 2 pickles use it for bytes: latin-1 text only."""
    import codecs

    if not isinstance(obj, str) or codecs.lookup(encoding).name not in ("latin-1", "iso8859-1"):
        raise UnsafePickleError(f"_codecs.encode only for latin-1 text, got {encoding!r}")
    return obj.encode("latin-1", errors)


def _zoneinfo_getattr(obj: Any, name: str) -> Any:
    """``getattr`` as pickles of ``zoneinfo.ZoneInfo`` use it (``ZoneInfo._unpickle``) only."""
    import zoneinfo

    if obj is zoneinfo.ZoneInfo and name == "_unpickle":
        return zoneinfo.ZoneInfo._unpickle
    raise UnsafePickleError(f"getattr({obj!r}, {name!r}) refused (only ZoneInfo._unpickle)")


def _arrow_restore_array(data: Any) -> Any:
    """``pyarrow.lib._restore_array``, then a full validation of the rebuilt array (its
    buffers come from the file and are otherwise trusted)."""
    import pyarrow

    array = pyarrow.lib._restore_array(data)
    try:
        array.validate(full=True)
    except pyarrow.ArrowInvalid as exc:
        raise UnsafePickleError(f"invalid arrow array in the pickle: {exc}") from None
    return array


@functools.lru_cache(maxsize=1)
def _pickle_allowed() -> tuple[dict[int, Any], tuple[type, ...]]:
    """``({id(obj): replacement}, safe base classes)`` for :class:`FrameUnpickler`."""
    import codecs
    import collections
    import copyreg
    import datetime
    import zoneinfo

    import pandas as pd
    from pandas._libs import arrays as pd_arrays
    from pandas._libs import internals as pd_internals
    from pandas._libs import sparse as pd_sparse
    from pandas._libs.tslibs import nattype, timedeltas, timestamps
    from pandas.api.extensions import ExtensionArray, ExtensionDtype
    from pandas.core.indexes import base as index_base
    from pandas.core.indexes import datetimes, interval, period
    from pandas.core.internals import blocks, managers
    from pandas.tseries.offsets import BaseOffset

    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray, numeric  # type: ignore[no-redef]
    try:
        import pyarrow.lib as arrow
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        arrow = None
    try:
        import pytz  # pickles of older pandas name pytz time zones
    except ImportError:
        pytz = None

    def get(module: Any, name: str) -> Any:
        return getattr(module, name, None)  # None: another version, not needed there

    objects = [
        np.ndarray, np.dtype, get(multiarray, "_reconstruct"), get(multiarray, "scalar"),
        get(numeric, "_frombuffer"),
        copyreg._reconstructor, object, slice, bytes, bytearray, set, frozenset, complex, range,
        int, float, str, bool, tuple, list, dict, collections.OrderedDict,
        datetime.datetime, datetime.date, datetime.time, datetime.timedelta, datetime.timezone,
        zoneinfo.ZoneInfo, pd.NA, pd.NaT,
        get(index_base, "_new_Index"), get(datetimes, "_new_DatetimeIndex"),
        get(period, "_new_PeriodIndex"), get(interval, "_new_IntervalIndex"),
        get(pd_internals, "_unpickle_block"), get(pd_arrays, "__pyx_unpickle_NDArrayBacked"),
        get(timestamps, "_unpickle_timestamp"), get(timedeltas, "_timedelta_unpickle"),
        get(nattype, "_nat_unpickle"), get(pytz, "_p"), get(pytz, "_UTC"),
        get(arrow, "py_buffer"), get(arrow, "type_for_alias"),
    ]
    allowed: dict[int, Any] = {id(o): o for o in objects if o is not None}
    allowed[id(getattr)] = _zoneinfo_getattr
    allowed[id(codecs.encode)] = pickle_latin1_encode  # the same object as _codecs.encode
    restore = get(arrow, "_restore_array")
    if restore is not None:
        allowed[id(restore)] = _arrow_restore_array
    bases = tuple(b for b in (
        pd.DataFrame, pd.Series, pd.Index, ExtensionArray, ExtensionDtype, BaseOffset, pd.Timestamp,
        pd.Timedelta, pd.Period, pd.Interval, np.generic, get(managers, "BaseBlockManager"),
        get(blocks, "Block"), get(pd_internals, "BlockPlacement"), get(pd_sparse, "SparseIndex"),
        get(pd_arrays, "NDArrayBacked"), get(np.dtypes, "StringDType"),
    ) if isinstance(b, type))
    return allowed, bases


def _resolve_frame_global(find_class: Any, module: str, name: str) -> Any:
    """What ``module.name`` may stand for in a pickled DataFrame, or raise
    :class:`UnsafePickleError` (nothing outside the allowed packages is imported)."""
    import _compat_pickle

    try:  # classes pandas moved since the pickle was written (as pandas.read_pickle maps them)
        from pandas.compat.pickle_compat import _class_locations_map as moved
    except ImportError:  # pragma: no cover - a pandas without the map
        moved = {}
    module, name = moved.get((module, name), (module, name))
    py3 = _compat_pickle.IMPORT_MAPPING.get(module, module)  # __builtin__ -> builtins, ...
    if (py3.partition(".")[0] not in _PICKLE_PACKAGES and py3 not in _PICKLE_MODULES) or "." in name:
        raise UnsafePickleError(f"refused global {module}.{name}")
    try:
        obj = find_class(module, name)
    except (ImportError, AttributeError) as exc:
        raise UnsafePickleError(f"refused global {module}.{name} ({type(exc).__name__})") from None
    allowed, bases = _pickle_allowed()
    if id(obj) in allowed:
        return allowed[id(obj)]
    root = (getattr(obj, "__module__", None) or "").partition(".")[0]
    if isinstance(obj, type) and issubclass(obj, bases) and root in ("pandas", "numpy"):
        return obj
    raise UnsafePickleError(f"refused global {module}.{name}")


class FrameUnpickler(pickle.Unpickler):
    """An unpickler for pandas DataFrames that resolves only what they are rebuilt from:
    numpy arrays and dtypes, pandas indexes, blocks, extension arrays and dtypes (e.g.
    ``Categorical``), timestamps and time zones, and builtins such as ``slice``. Any other
    global (``os.system``, ``builtins.exec``, ...) raises :class:`UnsafePickleError`
    before anything is called. The allow-list is shared by :class:`FrameCompatUnpickler`."""

    def find_class(self, module: str, name: str) -> Any:
        return _resolve_frame_global(super().find_class, module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("persistent ids are not supported in pickled tables")


def _compat_unpickler(fh: Any) -> pickle.Unpickler:
    """pandas' own unpickler for pickles of older pandas versions (as ``pandas.read_pickle``
    falls back to), restricted like :class:`FrameUnpickler`."""
    from pandas.compat.pickle_compat import Unpickler

    class FrameCompatUnpickler(Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            return _resolve_frame_global(super().find_class, module, name)

        def persistent_load(self, pid: Any) -> Any:
            raise UnsafePickleError("persistent ids are not supported in pickled tables")

    return FrameCompatUnpickler(fh)


def read_pickle_frame(path: str | os.PathLike) -> pd.DataFrame:
    """Read a pickled pandas DataFrame without running code from the file.

    Like ``pandas.read_pickle`` (including its fallback for pickles written by older pandas
    versions), but through :class:`FrameUnpickler`: only the globals a DataFrame is rebuilt
    from are resolved (numpy arrays and dtypes, pandas indexes, blocks, categoricals,
    extension arrays, timestamps, time zones, ``slice``, ...), so a crafted pickle naming
    ``os.system`` or ``builtins.exec`` is refused before anything runs.

    Parameters
    ----------
    path : str or os.PathLike
        The pickle (uncompressed).

    Returns
    -------
    pandas.DataFrame
        The table, ``attrs`` included.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the pickle names a global outside the allow-list (the message names it), is
        not a readable pickle, or holds something other than a DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     pd.DataFrame({"x": [1, 2]}).to_pickle(Path(d) / "t.pkl")
    ...     print(read_pickle_frame(Path(d) / "t.pkl")["x"].tolist())
    [1, 2]
    """
    import pandas as pd

    p = Path(path)
    refused = (f"{p}: %s: a pickle can run code when loaded, so only pandas DataFrames "
               "(numpy arrays, pandas indexes, categoricals, dates) are loaded from one; "
               "if you trust the file, convert it to parquet with pandas")
    with open(p, "rb") as fh, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy.core.* named by numpy 1.x
        try:
            try:
                obj = FrameUnpickler(fh).load()
            except UnsafePickleError:
                raise
            except (AttributeError, ImportError, TypeError, ValueError):
                fh.seek(0)  # e.g. a class an older pandas pickled that has moved since
                obj = _compat_unpickler(fh).load()
        except UnsafePickleError as exc:
            raise ValueError(refused % exc) from None
        except Exception as exc:  # noqa: BLE001 - any other failure: not a readable pickle
            raise ValueError(f"{p}: not a readable pickle ({type(exc).__name__}: {exc})") from None
    if not isinstance(obj, pd.DataFrame):
        raise ValueError(f"{p}: expected a pickled pandas DataFrame, got {type(obj).__name__}")
    return obj
