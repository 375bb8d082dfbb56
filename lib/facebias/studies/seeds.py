"""World-based headlines over independent world seeds.

One seed of a known-truth world is an anecdote: each study's ``<study>_seeds`` module
(:mod:`facebias.studies.bfw.seeds`, :mod:`~facebias.studies.batest.seeds`,
:mod:`~facebias.studies.rapid.seeds`) rebuilds its world under K seeds and recomputes the
statistics its claims read (:mod:`facebias.claims`), as tidy tables with a ``seed`` column. The notebooks store them in ``<study>_details.json`` under
``seeds``; the headline is the mean over seeds and the page shows mean and range.

:func:`over_seeds` is the one driver: it maps a per-seed function over the seeds through
:func:`facebias.compute.map_items` (serially or on the ``compute`` section's Dask workers,
one seed per task; each seed's work is deterministic and independent, so the scheduler does
not change the results), with a progress bar.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.compute import map_items

__all__ = ["world_seeds", "over_seeds"]


def world_seeds(first: int, n: int) -> list[int]:
    """``n`` consecutive world seeds from ``first`` (the study's own seed comes first, so the
    figures are of seed 0 of the sweep).

    Examples
    --------
    >>> world_seeds(2026, 3)
    [2026, 2027, 2028]
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"seeds: n must be an integer >= 1, got {n!r}")
    return [int(first) + i for i in range(int(n))]


def over_seeds(fn: Callable[[int], Mapping[str, pd.DataFrame]], seeds: Sequence[int], compute: Any = None,
               desc: str = "seeds") -> dict[str, pd.DataFrame]:
    """``fn(seed)`` for every seed, its tables concatenated with a leading ``seed`` column.

    Parameters
    ----------
    fn : callable
        Seed -> {table name: DataFrame}; picklable (a module-level function or a
        ``functools.partial`` of one) when run on Dask.
    seeds : sequence of int
    compute : ComputeConfig, mapping, str, distributed.Client or None
        Where to run (:func:`facebias.compute.map_items`; None = serially here). The results
        do not depend on it.
    desc : str
        Progress-bar label.

    Returns
    -------
    dict
        Table name -> the per-seed tables stacked, ``seed`` first, in seed order.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds: empty")
    results = map_items(fn, seeds, compute, chunk_size=1, desc=desc)
    names = list(results[0])
    return {name: pd.concat([r[name].assign(seed=s) for s, r in zip(seeds, results, strict=True)],
                            ignore_index=True).pipe(lambda d: d[["seed", *[c for c in d.columns if c != "seed"]]])
            for name in names}
