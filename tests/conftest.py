"""Shared fixtures: a voila server for widget notebooks, a headless Chromium page
(Debian's /usr/bin/chromium driven by Playwright; installed by `make`'s system-data) and
opencv-data's BRISQUE models. Those two system packages are the only things a test may skip
on, and under ``FACEBIAS_REQUIRE_ALL=1`` (CI) it fails instead."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = ROOT / "reports" / "screenshots"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]

# Under --import-mode=importlib tests/ is not on sys.path; put it there (last, shadowing
# nothing) so that test modules can import shared helpers such as hcic_fixtures.
if str(ROOT / "tests") not in sys.path:
    sys.path.append(str(ROOT / "tests"))


def _cost(item: pytest.Item) -> float:
    """The seconds a module's ``slow`` marker declares (``pytestmark = pytest.mark.slow(seconds=...)``,
    about what ``make profile`` measured for the whole file), 0 without one."""
    mark = item.get_closest_marker("slow")
    return float(mark.kwargs.get("seconds", 1.0)) if mark is not None else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest modules first (the DVC pipeline module, test_notebooks.py, leads): under ``make
    test`` (pytest-xdist, ``--dist loadfile --no-loadscope-reorder``) a worker starts each of
    them at once while the others take the rest, and the short files fill in at the end. The
    sort is stable, so the tests keep their order within each file (the incremental-pipeline
    test stays last)."""
    items.sort(key=lambda item: -_cost(item))


_SESSION_START = time.monotonic()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Record the run (wall seconds, outcome counts, workers, -m) in ``build/last_test_run.json``
    for ``make bench``'s budget line; only the controlling process of a pytest-xdist run writes."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    counts = {k: len(v) for k, v in (reporter.stats.items() if reporter else []) if k and k != "warnings"}
    record = {"finished": time.strftime("%Y-%m-%d %H:%M:%S"), "wall_s": round(time.monotonic() - _SESSION_START, 1),
              "exitstatus": int(exitstatus), "counts": counts,
              "workers": getattr(config.option, "numprocesses", None), "markexpr": config.option.markexpr or "",
              "args": [str(a) for a in config.args]}
    from facebias.io import write_json_atomic

    with contextlib.suppress(OSError):
        write_json_atomic(ROOT / "build" / "last_test_run.json", record, indent=1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: ``FACEBIAS_REQUIRE_ALL=1`` (set by ``.ci/run``): the system packages a user may lack but CI
#: installs (Debian chromium, opencv-data's BRISQUE models) must be present; a test that needs
#: one fails instead of skipping. ``FACEBIAS_REQUIRE_BROWSER=1`` is the older switch, for the
#: browser alone.
REQUIRE_ALL = "FACEBIAS_REQUIRE_ALL"
REQUIRE_BROWSER = "FACEBIAS_REQUIRE_BROWSER"


def need_system(present: bool, why: str, *switches: str) -> None:
    """Skip when a system package is missing (``why`` says which and how to install it),
    except where ``FACEBIAS_REQUIRE_ALL=1`` or one of ``switches`` is ``1``: then fail."""
    if present:
        return
    on = [s for s in (REQUIRE_ALL, *switches) if os.environ.get(s) == "1"]
    if on:
        pytest.fail(f"{why}; {on[0]}=1 forbids skipping this test")
    pytest.skip(why)


def _need_chromium() -> None:
    """Debian chromium, or skip (fail under FACEBIAS_REQUIRE_ALL / FACEBIAS_REQUIRE_BROWSER)."""
    need_system(Path(CHROMIUM).exists(),
                "Debian chromium is not installed (make system-data as root installs it)", REQUIRE_BROWSER)


@pytest.fixture
def brisque_models() -> Path:
    """opencv-data's BRISQUE model folder (``facebias.faces.factors.BRISQUE_SEARCH_DIRS[0]``),
    or skip (fail under FACEBIAS_REQUIRE_ALL)."""
    from facebias.faces.factors import BRISQUE_FILES, BRISQUE_SEARCH_DIRS

    folder = Path(BRISQUE_SEARCH_DIRS[0])
    need_system(all((folder / f).is_file() for f in BRISQUE_FILES),
                f"BRISQUE yml files missing from {folder} (apt-get install opencv-data)")
    return folder


def _serve_voila(notebook: Path, tmp: Path, timeout: float = 90.0) -> Iterator[str]:
    """Serve ``notebook`` (a jupytext .py source) with voila on 127.0.0.1; yield its URL."""
    import jupytext

    ipynb = tmp / (notebook.stem + ".ipynb")
    nb = jupytext.read(notebook)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    jupytext.write(nb, ipynb)
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "cfg"), "JUPYTER_RUNTIME_DIR": str(tmp / "rt"),
           "JUPYTER_DATA_DIR": str(tmp / "data"), "PYTHONPATH": str(ROOT / "lib")}
    log = open(tmp / "voila.log", "wb")  # noqa: SIM115 - closed in the finally block
    proc = subprocess.Popen(
        [sys.executable, "-m", "voila", str(ipynb), "--no-browser", f"--port={port}",
         "--Voila.ip=127.0.0.1", "--Voila.root_dir=" + str(tmp)],
        cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_serving(proc, url, tmp / "voila.log", timeout, "voila")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _wait_until_serving(proc: subprocess.Popen, url: str, log: Path, timeout: float, what: str) -> None:
    """Until ``url`` answers HTTP (any answer: the root would start a kernel); a RuntimeError
    with the log's tail when ``proc`` exits first, or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "voila/static/none", timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: voila did not start in time") from None
            time.sleep(0.5)


@contextlib.contextmanager
def _make_ui(tmp: Path, target: str, *make_vars: str, port_var: str, timeout: float = 120.0) -> Iterator[str]:
    """``make <target> VAR=value ...`` as a user runs it (``make browse``, ``make annotate``:
    the venv stamp taken as made, ``port_var`` set to a free port, no web browser opened, Jupyter
    dirs under ``tmp``); yields the page's URL and stops make and its voila (one process group)."""
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "cfg"), "JUPYTER_RUNTIME_DIR": str(tmp / "rt"),
           "JUPYTER_DATA_DIR": str(tmp / "data"), "PYTHONPATH": str(ROOT / "lib")}
    log_path = tmp / f"make_{target}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed in the finally block
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-o", ".venv/.installed", target, f"BIN={Path(sys.executable).parent}",
         f"{port_var}={port}", "VOILA_ARGS=--no-browser --Voila.ip=127.0.0.1", *make_vars],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_serving(proc, url, log_path, timeout, f"make {target}")
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()


@pytest.fixture
def browser_page() -> Iterator[object]:
    """A Playwright page in headless Debian Chromium; requests off 127.0.0.1 are blocked."""
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                   else route.abort())
        try:
            yield page
        finally:
            browser.close()


@pytest.fixture
def voila(tmp_path) -> Iterator[object]:
    """``voila(notebook_path) -> url``: serve a jupytext notebook; stopped at teardown."""
    servers = []

    def start(notebook: Path) -> str:
        gen = _serve_voila(Path(notebook), tmp_path)
        servers.append(gen)
        return next(gen)

    yield start
    for gen in servers:
        gen.close()


@pytest.fixture
def screenshots() -> Path:
    """``reports/screenshots/``, where browser tests leave what they saw."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def make_ui(tmp_path) -> Iterator[object]:
    """``make_ui(target, "VAR=value", ..., port_var="BROWSE_PORT") -> url``: serve a UI the way
    its documented command does (:func:`_make_ui`); stopped at teardown."""
    with contextlib.ExitStack() as stack:
        yield lambda target, *make_vars, port_var, timeout=120.0: stack.enter_context(
            _make_ui(tmp_path, target, *make_vars, port_var=port_var, timeout=timeout))
