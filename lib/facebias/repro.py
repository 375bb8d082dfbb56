"""Run the DVC pipeline's stale stages side by side: ``facebias repro --jobs N``.

``dvc repro`` runs one stage at a time (iterative/dvc#755, #5795), and most of our stages use
one core. DVC itself allows more: it releases the repository lock while a stage's command
runs (``dvc.stage.run``: ``unlocked_repo(cmd_run)``), guards each stage's files with per-path
read/write locks (``dvc.rwlock``), and rewrites ``dvc.lock`` under the repository lock from
the file's current contents (``dvc.dvcfile.Lockfile.dump``). So several
``dvc --wait-for-lock repro --single-item STAGE`` processes may share one workspace, provided
no stage starts before every stage it depends on has finished. This module is that scheduler
and nothing more: DVC still decides whether each stage is stale, runs its command, caches its
outputs and records it in ``dvc.lock``, so a ``dvc repro`` afterwards has nothing to do.

Conventions
-----------
- A pipeline is a mapping ``stage -> frozenset of the stages it depends on`` (its upstream),
  restricted to stages with a command (``.dvc`` data files are not run).
- Weights are seconds (the previous run's wall time of each stage, ``build/repro/times.json``;
  1 where unknown). A stage's priority is its critical path: its own weight plus the longest
  weighted chain of stages downstream of it. Ready stages start highest priority first, ties
  in ``dvc.yaml`` order (list scheduling).
- A failed stage stops only its downstream; independent stages still run (``make -k``), so
  nothing finished is lost. The exit code is 1 when any stage failed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from facebias.io import write_json_atomic

Pipeline = Mapping[str, frozenset[str]]
"""``stage -> the stages it depends on``."""

TIMES_FILE = Path("build") / "repro" / "times.json"
"""Each stage's wall seconds in its last run here (not tracked): the next run's weights."""

PROGRESS_EVERY = 15.0
"""Seconds between the progress-bar lines a stage's log keeps (bars redraw many times a second)."""

LAST_RUN_FILE = Path("build") / "repro" / "last_run.json"
"""The last ``facebias repro`` that ran stages: its wall seconds, jobs and stages (for ``make bench``)."""


def validate_pipeline(pipeline: Pipeline) -> None:
    """Raise ``ValueError`` if a stage depends on an unknown stage or the graph has a cycle."""
    for name, ups in pipeline.items():
        unknown = set(ups) - set(pipeline)
        if unknown:
            raise ValueError(f"stage {name!r} depends on unknown stage(s) {sorted(unknown)}")
    seen: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(name: str, path: tuple[str, ...]) -> None:
        if seen.get(name) == 2:
            return
        if seen.get(name) == 1:
            raise ValueError(f"the pipeline has a cycle: {' -> '.join(path + (name,))}")
        seen[name] = 1
        for up in sorted(pipeline[name]):
            visit(up, path + (name,))
        seen[name] = 2

    for name in pipeline:
        visit(name, ())


def downstream(pipeline: Pipeline, names: Iterable[str]) -> set[str]:
    """``names`` and every stage that depends on one of them, directly or not."""
    out = set(names)
    changed = True
    while changed:
        changed = False
        for name, ups in pipeline.items():
            if name not in out and ups & out:
                out.add(name)
                changed = True
    return out


def upstream(pipeline: Pipeline, names: Iterable[str]) -> set[str]:
    """``names`` and every stage they depend on, directly or not."""
    out, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name not in out:
            out.add(name)
            stack.extend(pipeline[name])
    return out


def critical_path(pipeline: Pipeline, weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Each stage's weight plus the heaviest chain of stages downstream of it (seconds).

    Parameters
    ----------
    pipeline : mapping
        ``stage -> upstream stages`` (validated: no cycles, no unknown stages).
    weights : mapping, optional
        Seconds per stage; 1.0 for a stage not in it.

    Examples
    --------
    >>> p = {"a": frozenset(), "b": frozenset({"a"}), "c": frozenset({"a"}), "d": frozenset({"b", "c"})}
    >>> critical_path(p, {"a": 1, "b": 5, "c": 2, "d": 1})
    {'a': 7.0, 'b': 6.0, 'c': 3.0, 'd': 1.0}
    """
    validate_pipeline(pipeline)
    w = {name: float((weights or {}).get(name, 1.0)) for name in pipeline}
    children: dict[str, list[str]] = {name: [] for name in pipeline}
    for name, ups in pipeline.items():
        for up in ups:
            children[up].append(name)
    memo: dict[str, float] = {}

    def longest(name: str) -> float:
        if name not in memo:
            memo[name] = w[name] + max((longest(c) for c in children[name]), default=0.0)
        return memo[name]

    return {name: longest(name) for name in pipeline}


@dataclass
class StageRun:
    """One stage's run: ``rc`` 0 is success; ``None`` means it never started (an upstream failed)."""

    stage: str
    rc: int | None
    seconds: float = 0.0
    started: float = 0.0


@dataclass
class ReproResult:
    """What :func:`run_stages` did, in the order stages finished."""

    runs: list[StageRun] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return [r.stage for r in self.runs if r.rc not in (0, None)]

    @property
    def skipped(self) -> list[str]:
        return [r.stage for r in self.runs if r.rc is None]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped


Launcher = Callable[[str], int]
"""Runs one stage to completion and returns its exit code (called in a worker thread)."""


def run_stages(pipeline: Pipeline, stages: Iterable[str], launch: Launcher, *, jobs: int = 2,
               weights: Mapping[str, float] | None = None, order: Iterable[str] | None = None,
               log: Callable[[str], None] = lambda msg: None) -> ReproResult:
    """Run ``stages`` with at most ``jobs`` at a time, each after its upstream among them.

    Parameters
    ----------
    pipeline : mapping
        ``stage -> upstream stages`` of the whole pipeline.
    stages : iterable of str
        The stages to run (e.g. the stale ones and everything downstream of them). Upstream
        stages outside this set count as finished.
    launch : callable
        ``launch(stage) -> exit code``; blocks until the stage is done. Called from threads.
    jobs : int
        Stages running at once (>= 1).
    weights, order
        Seconds per stage for the critical-path priority; tie order (default: ``pipeline``'s).
    log : callable
        Receives one progress line per start and finish.

    Returns
    -------
    ReproResult
        Every requested stage once: finished (``rc``) or never started (``rc=None``).
    """
    if int(jobs) < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    todo = set(stages)
    unknown = todo - set(pipeline)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; the pipeline has {sorted(pipeline)}")
    prio = critical_path(pipeline, weights)
    rank = {name: i for i, name in enumerate(order or pipeline)}
    waiting = set(todo)
    running: dict[str, float] = {}
    finished: dict[str, int] = {}
    result = ReproResult()
    done_q: queue.Queue[tuple[str, int, float]] = queue.Queue()
    t0 = time.monotonic()

    def worker(name: str) -> None:
        start = time.monotonic()
        try:
            rc = int(launch(name))
        except Exception as exc:  # noqa: BLE001 - a launcher error is that stage's failure
            log(f"{name}: could not run: {type(exc).__name__}: {exc}")
            rc = 1
        done_q.put((name, rc, time.monotonic() - start))

    def blocked(name: str) -> bool:
        ups = pipeline[name] & todo
        return any(finished.get(u, 0) != 0 for u in ups if u in finished) or any(
            u in waiting and blocked(u) for u in ups)

    while waiting or running:
        # stages whose upstream failed (or is blocked by a failure) will never start
        for name in sorted(n for n in waiting if blocked(n)):
            waiting.discard(name)
            result.runs.append(StageRun(name, None))
            log(f"skipped {name}: a stage it depends on failed")
        ready = [n for n in waiting if all(u in finished for u in pipeline[n] & todo)]
        ready.sort(key=lambda n: (-prio[n], rank.get(n, len(rank))))
        for name in ready[: max(0, int(jobs) - len(running))]:
            waiting.discard(name)
            running[name] = time.monotonic() - t0
            log(f"started {name} ({len(running)} running, {len(waiting)} waiting)")
            threading.Thread(target=worker, args=(name,), daemon=True).start()
        if not running:
            break
        name, rc, seconds = done_q.get()
        started = running.pop(name)
        finished[name] = rc
        result.runs.append(StageRun(name, rc, seconds, started))
        log(f"{'finished' if rc == 0 else f'FAILED (exit {rc})'} {name} in {seconds:.0f} s "
            f"({len(finished)}/{len(todo)} done)")
    return result


# --------------------------------------------------------------------------- DVC edge
def load_pipeline(root: str | Path = ".") -> tuple[dict[str, frozenset[str]], list[str]]:
    """The DVC pipeline of ``root``: ``stage -> upstream stages`` and ``dvc.yaml`` order.

    Stages without a command (``.dvc`` data files) are left out, and so are edges to them.
    """
    from dvc.repo import Repo

    # stage names (``addressing``) are relative to the working directory: read them from root
    with contextlib.chdir(root), Repo(".") as repo:
        graph = repo.index.graph  # edges: stage -> a stage it depends on
        stages = [s for s in repo.index.stages if s.cmd]
        names = [s.addressing for s in stages]
        keep = set(names)
        pipeline = {s.addressing: frozenset(u.addressing for u in graph.successors(s)
                                             if u.addressing in keep) for s in stages}
    return pipeline, names


def stale_stages(root: str | Path = ".") -> set[str]:
    """Stages ``dvc status`` reports changed (deps, params, outs or command)."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(".") as repo:
        return set(repo.status())


#: Environment of stages that share the cores with other stages: idle OpenMP (torch) and
#: OpenBLAS (numpy) threads sleep instead of spinning, so two stages' thread pools do not burn
#: each other's cores in busy-waits. Thread counts, and so every result, stay as they are.
SHARED_CORES_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}


def dvc_launcher(root: str | Path, log_dir: str | Path, echo: TextIO | None = sys.stdout,
                 env: Mapping[str, str] | None = None) -> Launcher:
    """``launch(stage)``: ``dvc --wait-for-lock repro --single-item STAGE`` in ``root``.

    Its output goes to ``log_dir/STAGE.log`` and, each line prefixed with the stage's name,
    to ``echo`` (None: log file only). ``env``: variables added to this process's environment
    (those already set keep their values).
    """
    lock = threading.Lock()
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)

    def launch(stage: str) -> int:
        cmd = [sys.executable, "-m", "dvc", "--wait-for-lock", "repro", "--single-item", stage]
        safe = stage.replace("/", "_").replace("@", "_")
        with open(log_dir / f"{safe}.log", "w", encoding="utf-8") as fh:
            proc = subprocess.Popen(cmd, cwd=str(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env={**(env or {}), **os.environ})
            assert proc.stdout is not None
            last_bar = 0.0
            # progress bars redraw a line ending in a carriage return: one such line every
            # PROGRESS_EVERY seconds is kept (and the line that ends the bar)
            for line in io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace", newline=""):
                if line.endswith("\r"):
                    if time.monotonic() - last_bar < PROGRESS_EVERY:
                        continue
                    last_bar = time.monotonic()
                    line = line.rstrip("\r") + "\n"
                fh.write(line)
                fh.flush()
                if echo is not None:
                    with lock:
                        echo.write(f"{stage:>16} | {line}")
                        echo.flush()
            return proc.wait()

    return launch


def read_times(root: str | Path = ".") -> dict[str, float]:
    """The last run's seconds per stage (empty if there was none or the file is unreadable)."""
    path = Path(root) / TIMES_FILE
    try:
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def write_times(result: ReproResult, root: str | Path = ".") -> Path:
    """Merge this run's seconds (stages that ran and succeeded) into :data:`TIMES_FILE`."""
    times = read_times(root)
    times.update({r.stage: round(r.seconds, 1) for r in result.runs if r.rc == 0})
    return write_json_atomic(Path(root) / TIMES_FILE, dict(sorted(times.items())), indent=1)


def repro(root: str | Path = ".", *, jobs: int = 2, targets: Iterable[str] | None = None,
          echo: TextIO | None = sys.stdout, log: Callable[[str], None] | None = None) -> ReproResult:
    """Reproduce the stale stages of the pipeline in ``root`` (and their downstream), ``jobs`` at once.

    ``targets`` limits the run to those stages and their upstream (like ``dvc repro TARGET``).
    Returns the :class:`ReproResult`; writes ``build/repro/times.json`` and one log per stage
    under ``build/repro/``.
    """
    say = log or (lambda msg: print(f"facebias repro: {msg}", file=sys.stderr, flush=True))
    pipeline, order = load_pipeline(root)
    todo = downstream(pipeline, stale_stages(root) & set(pipeline))
    if targets is not None:
        targets = set(targets)
        unknown = targets - set(pipeline)
        if unknown:
            raise ValueError(f"unknown stage(s) {sorted(unknown)}; the pipeline has {sorted(pipeline)}")
        todo &= upstream(pipeline, targets)
    if not todo:
        say("every stage is up to date")
        return ReproResult()
    say(f"{len(todo)} stage(s) to check, {jobs} at a time: {', '.join(n for n in order if n in todo)}")
    t0 = time.monotonic()
    launch = dvc_launcher(root, Path(root) / TIMES_FILE.parent, echo, SHARED_CORES_ENV if jobs > 1 else None)
    result = run_stages(pipeline, todo, launch,
                        jobs=jobs, weights=read_times(root), order=order, log=say)
    wall = time.monotonic() - t0
    write_times(result, root)
    write_json_atomic(Path(root) / LAST_RUN_FILE, {
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "wall_s": round(wall, 1), "jobs": jobs,
        "ok": result.ok, "stages": {r.stage: {"seconds": round(r.seconds, 1), "rc": r.rc} for r in result.runs},
    }, indent=1)
    width = max(len(r.stage) for r in result.runs)
    for r in sorted(result.runs, key=lambda r: order.index(r.stage)):
        state = "ok" if r.rc == 0 else ("not started" if r.rc is None else f"FAILED (exit {r.rc})")
        say(f"  {r.stage:<{width}}  {r.seconds:7.1f} s  {state}")
    say(f"wall {wall:.0f} s for {len(result.runs)} stage(s), {jobs} at a time")
    if result.failed:
        say(f"failed: {', '.join(result.failed)} (logs: {TIMES_FILE.parent}/STAGE.log)")
    return result
