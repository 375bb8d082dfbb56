"""Shared timing helper of the benchmarks (run as scripts: ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_time(fn: Callable[..., Any], *args: Any, repeat: int = 3) -> float:
    """Seconds of the fastest of ``repeat`` calls of ``fn(*args)``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best
