"""Batch work on Dask: a pure per-chunk function over fixed chunks, merged in input order.

The batch stages (rendering faces, embedding images, measuring image factors) call
:func:`map_chunks` / :func:`iter_chunks`. With ``scheduler="serial"`` the chunks run in
this process; with ``"local"`` (the default) on a ``dask.distributed.LocalCluster`` of
``n_workers`` processes; with an address (``tcp://host:8786``) or a scheduler file
(``*.json``) on an existing Dask cluster.

Determinism: chunk boundaries depend only on the number of items and the chunk size, never
on the number of workers or the order tasks finish, and results are merged by chunk
index. A deterministic chunk function therefore gives the same bytes serially and on any
cluster (tested for rendering, embedding and factor measurement). Workers on a real
cluster need facebias installed and the same paths (a shared file system) as the client.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facebias.config import Section, integer, param

__all__ = ["ComputeConfig", "as_compute", "chunk_slices", "dask_client", "iter_chunks", "load_compute", "map_chunks", "map_items",
           "usable_cpus"]

_ADDRESS_PREFIXES = ("tcp://", "tls://", "ucx://", "inproc://", "ws://", "wss://")


def _scheduler(value: Any, name: str) -> str:
    """``local``, ``serial``, a scheduler address or a scheduler file ``*.json``."""
    if not isinstance(value, str) or not (
        value in ("local", "serial") or value.startswith(_ADDRESS_PREFIXES) or value.endswith(".json")
    ):
        raise ValueError(f"{name} must be 'local', 'serial', a scheduler address "
                         f"(tcp://host:8786) or a scheduler file (*.json), got {value!r}")
    return value


@dataclass(frozen=True)
class ComputeConfig(Section):
    """Where batch work runs (``params.yaml`` section ``compute``).

    ``scheduler``: ``"local"`` (a LocalCluster of ``n_workers`` processes with
    ``threads_per_worker`` threads each), ``"serial"`` (in this process, no Dask), a
    scheduler address such as ``"tcp://10.0.0.5:8786"``, or a scheduler file ``*.json``
    (``dask scheduler --scheduler-file``). ``chunk_size`` is the number of items per task
    for callers without a natural batch size of their own.

    Examples
    --------
    >>> ComputeConfig.from_params({"scheduler": "serial", "chunk_size": 8})
    ComputeConfig(scheduler='serial', n_workers=2, threads_per_worker=1, chunk_size=8)
    """

    section = "compute"
    scheduler: str = param("local", _scheduler)
    n_workers: int = param(2, integer(1))
    threads_per_worker: int = param(1, integer(1))
    chunk_size: int = param(64, integer(1))

    @property
    def serial(self) -> bool:
        """Whether work runs in this process, without Dask (``scheduler == "serial"``)."""
        return self.scheduler == "serial"


#: The Dask setting unset for the workers of a ``"local"`` cluster (see :func:`dask_client`).
LOCAL_WORKER_ENVIRON_KEY = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
#: The same for the workers of your own cluster: save as a YAML file in ``~/.config/dask/``
#: on each worker host before ``dask worker`` starts (an environment variable cannot do it:
#: Dask lower-cases the names it reads from the environment).
WORKER_YAML = """distributed:
  nanny:
    pre-spawn-environ:
      MALLOC_TRIM_THRESHOLD_: null
"""




def usable_cpus() -> int:
    """Cores this process may run on: its CPU affinity where the OS says, else
    ``os.cpu_count()``; at least 1."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)

@contextlib.contextmanager
def _environ_without(name: str) -> Iterator[None]:
    """``os.environ`` without ``name`` inside the block; its value (if any) restored after."""
    import os

    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved

def _is_client(obj: Any) -> bool:
    """Whether ``obj`` is a ``distributed.Client``, without importing distributed on serial
    paths: an object cannot be a Client unless the module is already loaded."""
    mod = sys.modules.get("distributed")
    return mod is not None and isinstance(obj, mod.Client)


def as_compute(compute: ComputeConfig | Mapping[str, Any] | str | None) -> ComputeConfig:
    """A :class:`ComputeConfig` from a config, a params mapping, a scheduler string, or
    ``None`` (serial: library calls stay in-process unless asked otherwise).

    Parameters
    ----------
    compute : ComputeConfig, Mapping, str or None
        A config (returned as is), a ``compute`` params section, a scheduler string
        (``"local"``, ``"serial"``, an address or a ``*.json`` scheduler file), or ``None``.

    Returns
    -------
    ComputeConfig

    Raises
    ------
    ValueError
        For an invalid scheduler, an unknown key or an invalid value.

    Examples
    --------
    >>> as_compute(None).serial
    True
    >>> as_compute("tcp://10.0.0.5:8786").scheduler
    'tcp://10.0.0.5:8786'
    """
    if compute is None:
        return ComputeConfig(scheduler="serial")
    if isinstance(compute, ComputeConfig):
        return compute
    if isinstance(compute, str):
        return ComputeConfig(scheduler=compute)
    return ComputeConfig.from_params(compute)


def load_compute(params_file: str | Path = "params.yaml", override: Any = None) -> ComputeConfig:
    """The ``compute`` section of ``params_file`` (defaults when absent), or ``override``
    (a config, a mapping or a scheduler string) when given: what a notebook parameter
    ``compute = None`` resolves to.

    Parameters
    ----------
    params_file : str or Path, default "params.yaml"
        The parameter file, read only when ``override`` is None.
    override : ComputeConfig, Mapping, str or None
        Used instead of the file when given (see :func:`as_compute`).

    Returns
    -------
    ComputeConfig

    Raises
    ------
    FileNotFoundError
        If ``override`` is None and ``params_file`` does not exist.
    ValueError
        For an invalid section or override.

    Examples
    --------
    >>> load_compute(override="serial").serial
    True
    """
    if override is not None:
        return as_compute(override)
    from facebias.io import load_params

    return ComputeConfig.from_params(load_params(params_file).get("compute"))


def chunk_slices(n: int, size: int) -> list[slice]:
    """``[0:size], [size:2 size], ...`` covering ``range(n)``; independent of any cluster.

    Parameters
    ----------
    n : int
        Number of items.
    size : int
        Items per chunk (>= 1); the last chunk may be shorter.

    Returns
    -------
    list of slice
        Empty when ``n == 0``.

    Raises
    ------
    ValueError
        If ``size < 1``.

    Examples
    --------
    >>> chunk_slices(5, 2)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


@contextlib.contextmanager
def dask_client(compute: ComputeConfig | Mapping | str | None) -> Iterator[Any]:
    """A ``distributed.Client`` for ``compute`` (a LocalCluster is closed on exit; a remote
    cluster is only disconnected from; a Client passed in is yielded as is, and for
    ``"serial"`` this yields ``None``). Open one around several :func:`map_chunks` calls to
    start the cluster once.

    Parameters
    ----------
    compute : ComputeConfig, Mapping, str, distributed.Client or None
        Where to run (see :func:`as_compute`); ``None`` is serial.

    Yields
    ------
    distributed.Client or None
        ``None`` for a serial config.

    Raises
    ------
    ValueError
        For an invalid config.

    Examples
    --------
    >>> with dask_client("serial") as client:
    ...     print(client)
    None
    """
    if _is_client(compute):
        yield compute
        return
    config = as_compute(compute)
    if config.serial:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - distributed is a pinned requirement
        raise ImportError("Dask is needed for compute.scheduler != 'serial': "
                          "pip install 'distributed' (see requirements.txt)") from exc
    if config.scheduler == "local":
        import dask

        # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which fixes glibc's
        # malloc thresholds low: OpenCV's DNN then maps and unmaps its buffers for every image
        # (SFace 50 -> 67 ms per image, measured). Our workers keep glibc's adaptive default;
        # the nanny also writes the variable into this process's environment (which the
        # workers would inherit), so it is left out of that too while they start.
        with dask.config.set({LOCAL_WORKER_ENVIRON_KEY: None}), \
                _environ_without(LOCAL_WORKER_ENVIRON_KEY.rsplit(".", 1)[1]):
            cluster = LocalCluster(n_workers=config.n_workers,
                                   threads_per_worker=config.threads_per_worker, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
        with cluster, Client(cluster) as client:
            yield client
    elif config.scheduler.endswith(".json"):
        with Client(scheduler_file=config.scheduler) as client:
            yield client
    else:
        with Client(config.scheduler, timeout="30s") as client:
            yield client


def iter_chunks(fn: Callable[..., Any], items: Sequence[Any], compute: Any,
                *, chunk_size: int | None = None, shared: tuple = (), desc: str = "chunks",
                progress: bool = True) -> Iterator[tuple[int, slice, Any]]:
    """Yield ``(chunk index, slice, fn(items[slice], *shared))`` for every chunk.

    Serially the chunks come in order; on a cluster as they finish (so a caller can store
    each one at once and lose nothing on a crash). ``shared`` objects are sent to every
    worker once. ``fn`` must be importable by the workers (a module-level function or a
    ``functools.partial`` of one). ``compute`` is a :class:`ComputeConfig`, a ``compute``
    params mapping, a scheduler string, an open ``distributed.Client``, or ``None``
    (serial). No chunks: no cluster is started.

    Parameters
    ----------
    fn : callable
        ``fn(chunk, *shared)``, where ``chunk`` is a slice of ``items``.
    items : Sequence
        The items, sliced into chunks by :func:`chunk_slices`.
    compute : ComputeConfig, Mapping, str, distributed.Client or None
        Where to run.
    chunk_size : int, optional
        Items per chunk (default: the config's ``chunk_size``).
    shared : tuple, default ()
        Extra arguments of ``fn``, sent to every worker once.
    desc : str, default "chunks"
        Label of the progress bar.
    progress : bool, default True
        Show a tqdm progress bar (counted in items).

    Yields
    ------
    tuple of (int, slice, Any)
        Chunk index, the chunk's slice of ``items``, and ``fn``'s result for it.

    Raises
    ------
    ValueError
        For an invalid config or ``chunk_size < 1``.

    Examples
    --------
    >>> for i, sl, total in iter_chunks(sum, [1, 2, 3, 4, 5], "serial", chunk_size=2,
    ...                                 progress=False):
    ...     print(i, sl, total)
    0 slice(0, 2, None) 3
    1 slice(2, 4, None) 7
    2 slice(4, 5, None) 5
    """
    from tqdm.auto import tqdm

    config = ComputeConfig() if _is_client(compute) else as_compute(compute)
    slices = chunk_slices(len(items), chunk_size or config.chunk_size)
    if not slices:
        return
    with tqdm(total=len(items), desc=desc, unit="item", disable=not progress) as bar:
        if config.serial:
            for i, sl in enumerate(slices):
                yield i, sl, fn(items[sl], *shared)
                bar.update(sl.stop - sl.start)
            return
        from distributed import as_completed

        with dask_client(compute) as client:
            shared_f = [client.scatter(obj, broadcast=True, hash=False) for obj in shared]
            futures = {client.submit(fn, items[sl], *shared_f, pure=False): (i, sl)
                       for i, sl in enumerate(slices)}
            for fut in as_completed(futures):
                i, sl = futures[fut]
                yield i, sl, fut.result()
                bar.update(sl.stop - sl.start)
                fut.release()


def map_chunks(fn: Callable[..., Any], items: Sequence[Any], compute: Any,
               **kwargs: Any) -> list[Any]:
    """``[fn(chunk, *shared) for chunk in chunks]`` in chunk order, serially or on Dask
    (keyword arguments as :func:`iter_chunks`).

    Parameters
    ----------
    fn : callable
        ``fn(chunk, *shared)``; importable by the workers when run on Dask.
    items : Sequence
        The items to split into chunks.
    compute : ComputeConfig, Mapping, str, distributed.Client or None
        Where to run.
    **kwargs
        ``chunk_size``, ``shared``, ``desc``, ``progress`` of :func:`iter_chunks`.

    Returns
    -------
    list
        One result per chunk, in chunk order whatever order they finished in.

    Examples
    --------
    >>> map_chunks(sum, [1, 2, 3, 4, 5], None, chunk_size=2, progress=False)
    [3, 7, 5]
    """
    out: dict[int, Any] = {}
    for i, _, result in iter_chunks(fn, items, compute, **kwargs):
        out[i] = result
    return [out[i] for i in range(len(out))]


def _apply_each(chunk: Sequence[Any], fn: Callable[[Any], Any]) -> list[Any]:
    return [fn(item) for item in chunk]


def map_items(fn: Callable[[Any], Any], items: Sequence[Any], compute: Any, **kwargs: Any) -> list[Any]:
    """``[fn(item) for item in items]``, in chunks, serially or on Dask (keyword arguments
    as :func:`iter_chunks`; ``fn`` is sent to every worker once).

    Parameters
    ----------
    fn : callable
        ``fn(item)``; picklable when run on Dask.
    items : Sequence
        The items.
    compute : ComputeConfig, Mapping, str, distributed.Client or None
        Where to run.
    **kwargs
        ``chunk_size``, ``desc``, ``progress`` of :func:`iter_chunks`.

    Returns
    -------
    list
        One result per item, in input order.

    Examples
    --------
    >>> map_items(abs, [-1, 2, -3], "serial", chunk_size=2, progress=False)
    [1, 2, 3]
    """
    chunks = map_chunks(_apply_each, items, compute, shared=(fn,), **kwargs)
    return [out for chunk in chunks for out in chunk]
