"""facebias.repro: the stage scheduler (order, concurrency, failures) and, on a tiny DVC
repository, that parallel ``dvc repro --single-item`` runs leave the same dvc.lock and a clean
``dvc status`` as ``dvc repro`` does."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from facebias import repro as R

pytestmark = pytest.mark.slow(seconds=25)


def fs(*names):
    return frozenset(names)


DIAMOND = {"a": fs(), "b": fs("a"), "c": fs("a"), "d": fs("b", "c")}


def random_pipeline(rng: np.random.Generator, n: int = 14) -> dict[str, frozenset[str]]:
    names = [f"s{i:02d}" for i in range(n)]
    return {name: fs(*(names[j] for j in range(i) if rng.random() < 0.25)) for i, name in enumerate(names)}


class Recorder:
    """A fake launcher: each stage sleeps a little; start/end events on one logical clock."""

    def __init__(self, seconds=None, fail=()):
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.seconds = seconds or {}
        self.fail = set(fail)

    def __call__(self, stage: str) -> int:
        with self.lock:
            self.events.append(("start", stage))
        time.sleep(self.seconds.get(stage, 0.01))
        with self.lock:
            self.events.append(("end", stage))
        return 3 if stage in self.fail else 0

    def order(self, kind="start"):
        return [s for k, s in self.events if k == kind]

    def max_running(self):
        running = peak = 0
        for kind, _ in self.events:
            running += 1 if kind == "start" else -1
            peak = max(peak, running)
        return peak


def test_critical_path_by_hand():
    # d=1; b=5+1; c=2+1; a=1+max(6,3)
    assert R.critical_path(DIAMOND, {"a": 1, "b": 5, "c": 2, "d": 1}) == {"a": 7, "b": 6, "c": 3, "d": 1}
    assert R.critical_path(DIAMOND) == {"a": 3, "b": 2, "c": 2, "d": 1}  # unknown weights count 1


def test_closures():
    assert R.downstream(DIAMOND, ["b"]) == {"b", "d"}
    assert R.downstream(DIAMOND, ["a"]) == set(DIAMOND)
    assert R.upstream(DIAMOND, ["b"]) == {"a", "b"}
    assert R.upstream(DIAMOND, ["d"]) == set(DIAMOND)


def test_bad_pipelines_and_arguments_are_one_line_errors():
    with pytest.raises(ValueError, match="cycle: "):
        R.critical_path({"a": fs("b"), "b": fs("a")})
    with pytest.raises(ValueError, match="unknown stage"):
        R.critical_path({"a": fs("zz")})
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        R.run_stages(DIAMOND, ["a"], Recorder(), jobs=0)
    with pytest.raises(ValueError, match="unknown stage"):
        R.run_stages(DIAMOND, ["nope"], Recorder())


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_no_stage_starts_before_its_upstream_ends_and_at_most_jobs_run(seed, jobs):
    rng = np.random.default_rng(seed)
    pipeline = random_pipeline(rng)
    rec = Recorder({s: float(rng.uniform(0.002, 0.02)) for s in pipeline})
    result = R.run_stages(pipeline, pipeline, rec, jobs=jobs)
    assert result.ok and sorted(r.stage for r in result.runs) == sorted(pipeline)
    position = {(k, s): i for i, (k, s) in enumerate(rec.events)}
    for name, ups in pipeline.items():
        for up in ups:
            assert position[("end", up)] < position[("start", name)], (up, name)
    assert rec.max_running() <= jobs
    if jobs == 1:
        assert rec.max_running() == 1


def test_independent_stages_do_run_side_by_side():
    wide = {"root": fs(), **{f"leaf{i}": fs("root") for i in range(4)}}
    rec = Recorder({f"leaf{i}": 0.2 for i in range(4)})
    t0 = time.monotonic()
    R.run_stages(wide, wide, rec, jobs=4)
    assert rec.max_running() == 4
    assert time.monotonic() - t0 < 0.2 * 4 * 0.75  # one at a time would take 0.8 s of sleeps


def test_the_critical_path_starts_first():
    # one core: the long chain x -> y first, then the short independent stages, in yaml order
    p = {"s1": fs(), "s2": fs(), "x": fs(), "y": fs("x")}
    rec = Recorder()
    R.run_stages(p, p, rec, jobs=1, weights={"s1": 1, "s2": 1, "x": 1, "y": 10})
    assert rec.order() == ["x", "y", "s1", "s2"]
    # without weights the chain is still longer by count; ties keep the given order
    rec = Recorder()
    R.run_stages(p, p, rec, jobs=1, order=["s2", "s1", "x", "y"])
    assert rec.order() == ["x", "s2", "s1", "y"]


def test_a_failed_stage_stops_only_its_downstream():
    p = {"a": fs(), "b": fs("a"), "c": fs("b"), "other": fs(), "joined": fs("other", "c")}
    rec = Recorder(fail={"a"})
    result = R.run_stages(p, p, rec, jobs=2)
    assert result.failed == ["a"]
    assert sorted(result.skipped) == ["b", "c", "joined"]
    assert rec.order() == ["a", "other"]
    assert not result.ok


def test_a_launcher_exception_is_that_stages_failure():
    def boom(stage):
        raise OSError("no such program")

    lines: list[str] = []
    result = R.run_stages({"a": fs()}, ["a"], boom, log=lines.append)
    assert result.failed == ["a"] and any("OSError: no such program" in line for line in lines)


def test_stages_outside_the_set_count_as_done():
    rec = Recorder()
    result = R.run_stages(DIAMOND, ["d"], rec)
    assert rec.order() == ["d"] and result.ok


# --------------------------------------------------------------------------- a real DVC repository
STAGE = ("{py} -c \"import time, pathlib; time.sleep({sleep}); "
         "pathlib.Path('{out}').write_text(''.join(pathlib.Path(p).read_text() for p in {deps}) + '{out};')\"")


def _stage(out, deps, sleep):
    cmd = STAGE.format(py=sys.executable, sleep=sleep, out=out, deps=repr(list(deps)))
    return {"cmd": cmd, "deps": list(deps), "outs": [out]}


BAR = """import pathlib, sys, time
for i in range(400):
    sys.stderr.write(f"work {i}/400\\r")
    sys.stderr.flush()
    time.sleep(0.002)
sys.stderr.write("work 400/400 done\\n")
pathlib.Path("bar.txt").write_text("x")
"""


def _dvc_repo(root, stages, files=None):
    if shutil.which("git") is None:
        pytest.fail("the DVC repository test needs git on PATH")
    import yaml

    root.mkdir()
    (root / "seed.txt").write_text("seed;")
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture
def tiny_dvc(tmp_path):
    return _dvc_repo(tmp_path / "repo", {"left": _stage("left.txt", ["seed.txt"], 1.5),
                                         "right": _stage("right.txt", ["seed.txt"], 1.5),
                                         "join": _stage("join.txt", ["left.txt", "right.txt"], 0)})


def test_progress_bars_are_thinned_in_the_log_and_on_screen(tmp_path, monkeypatch):
    """A progress bar redraws its line (carriage returns) hundreds of times: the log and the
    screen keep one redraw per PROGRESS_EVERY seconds and every ordinary line."""
    root = _dvc_repo(tmp_path / "repo", {"bar": {"cmd": f"{sys.executable} bar.py", "deps": ["bar.py"],
                                                 "outs": ["bar.txt"]}}, files={"bar.py": BAR})
    monkeypatch.setattr(R, "PROGRESS_EVERY", 0.2)
    screen = io.StringIO()
    result = R.repro(root, jobs=1, echo=screen, log=lambda msg: None)
    assert result.ok
    log = (root / "build" / "repro" / "bar.log").read_text()
    redraws = [line for line in log.splitlines() if line.startswith("work ") and "done" not in line]
    assert 1 <= len(redraws) <= 10 and "work 400/400 done" in log  # about 1 s of bar: ~5 kept
    assert screen.getvalue().count("work 400/400 done") == 1 and "\r" not in screen.getvalue()


def test_parallel_dvc_runs_record_every_stage_and_leave_nothing_stale(tiny_dvc):
    lines: list[str] = []
    result = R.repro(tiny_dvc, jobs=2, echo=None, log=lines.append)
    assert result.ok and sorted(r.stage for r in result.runs) == ["join", "left", "right"]
    runs = {r.stage: r for r in result.runs}
    # the two independent stages overlapped in time; join started after both ended
    left, right, join = runs["left"], runs["right"], runs["join"]
    assert left.started < right.started + right.seconds and right.started < left.started + left.seconds
    assert join.started >= max(left.started + left.seconds, right.started + right.seconds) - 0.05
    assert (tiny_dvc / "join.txt").read_text() == "seed;left.txt;seed;right.txt;join.txt;"
    assert R.stale_stages(tiny_dvc) == set()  # dvc status: up to date
    import yaml

    lock = yaml.safe_load((tiny_dvc / "dvc.lock").read_text())
    assert sorted(lock["stages"]) == ["join", "left", "right"]
    assert (tiny_dvc / "build" / "repro" / "left.log").read_text().count("Running stage 'left'") == 1
    assert set(R.read_times(tiny_dvc)) == {"join", "left", "right"}
    # nothing to do the second time; a changed input reruns its stage and the stages after it
    again = R.repro(tiny_dvc, jobs=2, echo=None, log=lines.append)
    assert again.runs == [] and lines[-1] == "every stage is up to date"
    (tiny_dvc / "seed.txt").write_text("seed2;")
    third = R.repro(tiny_dvc, jobs=2, targets=["left"], echo=None, log=lines.append)
    assert [r.stage for r in third.runs] == ["left"]
    assert R.stale_stages(tiny_dvc) == {"right", "join"}


@pytest.mark.parametrize(("jobs", "seen"), [(2, "PASSIVE"), (1, "unset")])
def test_stages_sharing_the_cores_get_sleeping_thread_pools(tmp_path, monkeypatch, jobs, seen):
    """With more than one stage at a time, idle OpenMP / OpenBLAS threads sleep (the variables
    change no thread count); one at a time, the environment is left alone."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    env = (f"{sys.executable} -c \"import os, pathlib; pathlib.Path('env.txt').write_text("
           "os.environ.get('OMP_WAIT_POLICY', 'unset'))\"")
    root = _dvc_repo(tmp_path / "repo", {"env": {"cmd": env, "deps": ["seed.txt"], "outs": ["env.txt"]}})
    assert R.repro(root, jobs=jobs, echo=None, log=lambda msg: None).ok
    assert (root / "env.txt").read_text() == seen
