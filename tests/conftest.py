"""Shared fixtures: a voila server for widget notebooks, a headless Chromium page
(Debian's /usr/bin/chromium driven by Playwright; installed by `make`'s system-data) and
opencv-data's BRISQUE models. Those two system packages are the only things a test may skip
on, and under ``FACEBIAS_REQUIRE_ALL=1`` (CI) it fails instead."""

from __future__ import annotations

import os
import shutil
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the DVC pipeline module (test_notebooks.py, about 5 of the suite's 9 CPU-minutes)
    first: under ``make test`` (pytest-xdist, ``--dist loadfile``) its worker then starts it at
    once while the other workers take the rest. The sort is stable, so the tests keep their
    order within each file (the incremental-pipeline test stays last)."""
    items.sort(key=lambda item: item.path.name != "test_notebooks.py")


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
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"voila exited: {(tmp / 'voila.log').read_text()[-2000:]}")
            try:  # any HTTP answer means the server is up (the root would start a kernel)
                with urllib.request.urlopen(url + "voila/static/none", timeout=2):
                    break
            except urllib.error.HTTPError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("voila did not start in time") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
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
