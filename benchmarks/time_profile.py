"""``make profile``: where the time of ``make test`` and ``make reproduce`` goes.

Prints, and writes to ``build/profile/profile.json``:

* **tests**: wall and CPU seconds per test file (``benchmarks/plugins/pytest_profile.py``), from one
  run of the README's test command (``pytest -n 2 --dist loadfile --no-loadscope-reorder``), and the run's wall time;
* **stages**: wall and CPU seconds of every DVC stage, each run on its own with
  ``dvc repro --single-item --force`` in pipeline order (CPU: the stage's processes, user +
  system), and the time of a no-op ``dvc repro`` after them;
* **hot spots**: the top functions (cProfile, by own time and by cumulative time in
  ``facebias``) of the slowest notebook stages, each re-executed by papermill with a profiler
  switched on in its kernel and its figures, metrics and notebook written under
  ``build/profile/`` (the stage's own outputs are left alone).

Usage::

    python benchmarks/time_profile.py                 # everything (about as long as test + reproduce)
    python benchmarks/time_profile.py --only tests    # one part: tests | stages | hotspots
    python benchmarks/time_profile.py --only hotspots --stage transects_dcgan

Times are measured on this machine as it is (other load included): compare runs made on the
same machine, and say which.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: issue 30's budgets on an idle 2-core machine, from a fresh clone (seconds)
BUDGET = {"tests": 8 * 60, "reproduce": 15 * 60, "noop_repro": 5}
OUT = ROOT / "build" / "profile"
BIN = Path(sys.executable).parent


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], **kw: Any) -> dict[str, Any]:
    """Run ``cmd``; its wall seconds, CPU seconds (it and its children) and return code."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    rc = subprocess.run(cmd, cwd=ROOT, **kw).returncode
    return {"wall": time.perf_counter() - t0, "cpu": _children_cpu() - cpu0, "rc": rc}


def table(rows: list[dict[str, Any]], cols: list[str], title: str) -> str:
    """A Markdown table of ``rows`` (floats to 1 decimal)."""
    def cell(v: Any) -> str:
        return f"{v:.1f}" if isinstance(v, float) else str(v)
    lines = [f"\n### {title}\n", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- tests
def profile_tests(workers: int) -> dict[str, Any]:
    """One run of the suite as ``make test`` runs it, with the per-file plugin loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        # only the plugin's folder goes on the path (it reaches every subprocess, kernels included):
        # a module there must not shadow the standard library (a "profile.py" breaks cProfile)
        env = dict(os.environ, FACEBIAS_PROFILE_DIR=tmp,
                   PYTHONPATH=os.pathsep.join([str(ROOT / "benchmarks" / "plugins"), os.environ.get("PYTHONPATH", "")]))
        run = timed([str(BIN / "pytest"), "-q", "-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder",
                     "-p", "pytest_profile"],
                    env=env)
        files: dict[str, dict[str, float]] = {}
        for part in Path(tmp).glob("tests-*.json"):
            for name, r in json.loads(part.read_text()).items():
                acc = files.setdefault(name, {"wall": 0.0, "cpu": 0.0, "tests": 0})
                for k in acc:
                    acc[k] += r[k]
    rows = sorted(({"file": k, **v} for k, v in files.items()), key=lambda r: -r["wall"])
    return {"wall": run["wall"], "cpu": run["cpu"], "rc": run["rc"], "workers": workers, "files": rows}


# --------------------------------------------------------------------------- stages
def stage_names() -> list[str]:
    """DVC stages in the order dvc.yaml lists them (the pipeline's order)."""
    out = subprocess.run([str(BIN / "dvc"), "stage", "list", "--name-only"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [s.strip() for s in out.splitlines() if s.strip()]


def profile_stages() -> dict[str, Any]:
    """Every stage on its own, forced, in pipeline order; then a no-op ``dvc repro``."""
    rows = []
    for name in stage_names():
        print(f"stage {name} ...", flush=True)
        r = timed([str(BIN / "dvc"), "repro", "--single-item", "--force", name], stdout=subprocess.DEVNULL)
        rows.append({"stage": name, **r})
        if r["rc"]:
            print(f"stage {name} failed (exit {r['rc']}): later stages may be stale", file=sys.stderr)
    noop = timed([str(BIN / "dvc"), "repro"], stdout=subprocess.DEVNULL)
    return {"stages": rows, "total_wall": sum(r["wall"] for r in rows), "noop_repro": noop}


# --------------------------------------------------------------------------- hot spots
def notebook_stage(name: str) -> tuple[str, list[str]]:
    """The notebook source and papermill ``-p`` arguments of stage ``name`` (dvc.yaml)."""
    import yaml

    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][name]
    cmd = " ".join(spec["cmd"].split()) if isinstance(spec["cmd"], str) else " ".join(spec["cmd"])
    m = re.search(r"\$\{nb\}/(\S+\.py) \| \$\{pm\} (\S+\.ipynb)(.*)$", cmd)
    if m is None:
        raise ValueError(f"stage {name!r} is not a notebook stage")
    return f"notebooks/{m.group(1)}", shlex.split(m.group(3))


_START = "import cProfile as _cP\n_facebias_profile = _cP.Profile()\n_facebias_profile.enable()"
_STOP = "_facebias_profile.disable()\n_facebias_profile.dump_stats({path!r})"


def profile_notebook(name: str, top: int = 10) -> dict[str, Any]:
    """Re-execute stage ``name``'s notebook under cProfile (outputs under build/profile)."""
    import jupytext
    import nbformat

    source, args = notebook_stage(name)
    work = OUT / name
    work.mkdir(parents=True, exist_ok=True)
    prof = work / "kernel.prof"
    nb = jupytext.read(ROOT / source)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_START))
    nb.cells.append(nbformat.v4.new_code_cell(_STOP.format(path=str(prof))))
    src = work / "profiled.ipynb"
    nbformat.write(nb, src)
    cmd = [str(BIN / "papermill"), str(src), str(work / "executed.ipynb"), "--kernel", "python3",
           "--no-progress-bar", "--cwd", str(ROOT), *args, "-p", "reports_dir", str(work / "reports")]
    run = timed(cmd, stdout=subprocess.DEVNULL)
    if run["rc"] or not prof.exists():
        return {"stage": name, **run, "error": "the profiled run failed (see build/profile/<stage>/executed.ipynb)"}
    st = pstats.Stats(str(prof))
    rows = []
    for (file, line, fn), (_cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}:{fn}", "file": file, "calls": nc, "own": tt, "cum": ct})
    own = sorted(rows, key=lambda r: -r["own"])[:top]
    ours = sorted((r for r in rows if "facebias" in r["file"] and "/notebooks/" not in r["file"]),
                  key=lambda r: -r["cum"])[:top]
    return {"stage": name, **run, "by_own_time": own, "facebias_by_cumulative": ours}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("tests", "stages", "hotspots"), action="append",
                    help="run only these parts (repeatable; default all)")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (make test's default: 2)")
    ap.add_argument("--stage", action="append", help="hot spots of these stages (default: the 3 slowest "
                    "notebook stages of this run, else of the last executed notebooks)")
    ap.add_argument("--top", type=int, default=10, help="functions per hot-spot list")
    a = ap.parse_args(argv)
    parts = a.only or ["tests", "stages", "hotspots"]
    OUT.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0]}}
    report: list[str] = []
    if "tests" in parts:
        t = profile_tests(a.workers)
        result["tests"] = t
        report.append(table(t["files"], ["file", "wall", "cpu", "tests"],
                            f"test files (sum of setup + call + teardown, s); pytest -n {t['workers']} wall "
                            f"{t['wall']:.0f} s (budget {BUDGET['tests']} s), exit {t['rc']}"))
    if "stages" in parts:
        s = profile_stages()
        result["stages"] = s
        report.append(table(s["stages"], ["stage", "wall", "cpu", "rc"],
                            f"DVC stages, each forced on its own (s); total {s['total_wall']:.0f} s (budget "
                            f"{BUDGET['reproduce']} s for make reproduce, venv included); no-op dvc repro "
                            f"{s['noop_repro']['wall']:.1f} s (budget {BUDGET['noop_repro']} s)"))
    if "hotspots" in parts:
        names = a.stage
        if not names:
            walls = {r["stage"]: r["wall"] for r in result.get("stages", {}).get("stages", [])} or _notebook_walls()
            notebook = [n for n in walls if _is_notebook(n)]
            names = sorted(notebook, key=lambda n: -walls[n])[:3]
        result["hotspots"] = []
        for n in names:
            print(f"profiling {n} ...", flush=True)
            h = profile_notebook(n, a.top)
            result["hotspots"].append(h)
            if "error" in h:
                report.append(f"\n### {n}: {h['error']}")
                continue
            report.append(table(h["by_own_time"], ["function", "calls", "own", "cum"],
                                f"{n} (profiled run {h['wall']:.0f} s): top {a.top} by own time"))
            report.append(table(h["facebias_by_cumulative"], ["function", "calls", "own", "cum"],
                                f"{n}: top {a.top} facebias functions by cumulative time"))
    (OUT / "profile.json").write_text(json.dumps(result, indent=1, default=str))
    print("\n".join(report))
    print(f"\nwritten: {(OUT / 'profile.json').relative_to(ROOT)}")
    return 0


def _is_notebook(name: str) -> bool:
    try:
        notebook_stage(name)
        return True
    except (ValueError, KeyError):
        return False


def _notebook_walls() -> dict[str, float]:
    """Stage -> papermill's duration of its last executed notebook (reports/notebooks)."""
    import yaml

    out = {}
    for name, spec in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        m = re.search(r"(reports/notebooks/\S+\.ipynb)", str(spec.get("cmd", "")))
        if m and (ROOT / m.group(1)).exists():
            meta = json.loads((ROOT / m.group(1)).read_text())["metadata"].get("papermill", {})
            if meta.get("duration"):
                out[name] = float(meta["duration"])
    return out


if __name__ == "__main__":
    sys.exit(main())
