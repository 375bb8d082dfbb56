"""``make bench``'s last lines: the last test run and the last pipeline run beside issue 30's
budgets, and a no-op ``dvc repro`` timed now.

Reads ``build/last_test_run.json`` (written by every pytest run, tests/conftest.py) and
``build/repro/last_run.json`` (written by every ``facebias repro`` that ran stages). Those
are runs in this checkout, whatever else the machine was doing; the budgets are for fresh
clones on an idle 2-core machine, whose measured times the README's quick start states.

    python benchmarks/budget.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_profile import BUDGET  # noqa: E402


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def main() -> None:
    tests = _read(ROOT / "build" / "last_test_run.json")
    if tests is None:
        print("tests: no run recorded yet (make test writes build/last_test_run.json)")
    else:
        scope = f"-m '{tests['markexpr']}'" if tests["markexpr"] else "every test"
        print(f"tests: last run {tests['finished']}, {scope}, {tests['workers']} worker(s): "
              f"{tests['wall_s']:.0f} s (budget {BUDGET['tests']} s for the whole suite), "
              f"exit {tests['exitstatus']}, {tests['counts']}")
    run = _read(ROOT / "build" / "repro" / "last_run.json")
    if run is None:
        print("reproduce: no run recorded yet (make reproduce writes build/repro/last_run.json)")
    else:
        slow = sorted(run["stages"].items(), key=lambda kv: -kv[1]["seconds"])[:3]
        print(f"reproduce: last facebias repro {run['finished']}, {len(run['stages'])} stage(s), "
              f"{run['jobs']} at a time: {run['wall_s']:.0f} s (budget {BUDGET['reproduce']} s for a fresh "
              f"make reproduce, venv included), ok {run['ok']}; longest: "
              + ", ".join(f"{k} {v['seconds']:.0f} s" for k, v in slow))
    dvc = [str(Path(sys.executable).parent / "dvc")]
    status = subprocess.run([*dvc, "status", "--json"], cwd=ROOT, capture_output=True, text=True)
    if status.returncode != 0 or status.stdout.strip() not in ("{}", ""):
        print("no-op dvc repro: not timed, the pipeline is not up to date (make reproduce first)")
        return
    t0 = time.perf_counter()
    subprocess.run([*dvc, "repro"], cwd=ROOT, capture_output=True, check=True)
    print(f"no-op dvc repro: {time.perf_counter() - t0:.1f} s (budget {BUDGET['noop_repro']} s)")


if __name__ == "__main__":
    main()
