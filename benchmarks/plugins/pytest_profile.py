"""pytest plugin of ``make profile``: wall and CPU seconds per test file.

Loaded with ``-p pytest_profile`` (``benchmarks/plugins/`` on ``sys.path``); it writes one JSON file
per process (each pytest-xdist worker, or the main process) into ``$FACEBIAS_PROFILE_DIR``:
``{file: {"wall": s, "cpu": s, "tests": n}}``. A file's time is the sum over its tests of
setup + call + teardown, so module and session fixtures count for the file whose test first
needed them. CPU is this process's user + system time plus that of the child processes it
waited for (a notebook run by papermill, ``dvc repro``), in seconds.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

_TOTALS: dict[str, dict[str, float]] = defaultdict(lambda: {"wall": 0.0, "cpu": 0.0, "tests": 0})


def _cpu() -> float:
    """User + system seconds of this process and its reaped children."""
    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any):
    wall0, cpu0 = time.perf_counter(), _cpu()
    yield
    row = _TOTALS[item.nodeid.split("::")[0]]
    row["wall"] += time.perf_counter() - wall0
    row["cpu"] += _cpu() - cpu0
    row["tests"] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("FACEBIAS_PROFILE_DIR")
    if not out or not _TOTALS:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = Path(out) / f"tests-{worker}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(_TOTALS), indent=1, sort_keys=True))
