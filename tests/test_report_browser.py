"""The report page in headless Chromium at 1280 px, as a fresh clone shows it (the committed
page, thumbnails and figure pages; no figures, no executed notebooks) and as ``make reproduce``
leaves it (every figure present): no broken image, no dead link, captions readable, figures
wider than the old 520 px, and each figure page showing the full-size PNG when it exists and the
thumbnail with the command that makes it when it does not. The pages are served from 127.0.0.1
(the ``browser_page`` fixture blocks every other address)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_fixtures import dead_references, fresh_clone_copy, make_figures, make_notebook_sources

from facebias.cli import main
from facebias.report_figures import WIDE_ASPECT

# about 20 s on 2 cores (two page states; the thumbnails of 46 figures made once)
pytestmark = pytest.mark.slow(seconds=20)

WIDTH = 1280


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def states(tmp_path_factory) -> dict[str, Path]:
    """Two copies of a repository: ``full`` after `facebias report` with every figure (the
    state after make reproduce) and ``fresh`` with only what git tracks (a fresh clone)."""
    tmp = tmp_path_factory.mktemp("report_browser")
    full = tmp / "full"
    make_figures(full / "reports", large=True)
    make_notebook_sources(full)
    assert main(["report", "--reports", str(full / "reports")]) == 0
    fresh_clone_copy(full, tmp / "fresh")
    return {"full": full, "fresh": tmp / "fresh"}


@pytest.fixture(scope="module")
def serve(states) -> Iterator[dict[str, str]]:
    """Each state served over HTTP on 127.0.0.1: state -> base URL."""
    servers, urls = [], {}
    for name, root in states.items():
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        urls[name] = f"http://127.0.0.1:{srv.server_port}"
    yield urls
    for srv in servers:
        srv.shutdown()
        srv.server_close()


_CHECK_PAGE = """() => {
  const imgs = [...document.images].map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0,
      shown: i.getBoundingClientRect().width, natural: i.naturalWidth, nh: i.naturalHeight,
      visible: i.offsetParent !== null}));
  const caps = [...document.querySelectorAll('figcaption')].map(c => ({
      visible: c.offsetParent !== null && c.getBoundingClientRect().height > 0,
      px: Math.min(...[c, ...c.querySelectorAll('*')].map(e => parseFloat(getComputedStyle(e).fontSize)))}));
  const notices = [...document.querySelectorAll('.notice')].filter(n => n.offsetParent !== null).length;
  return {imgs, caps, notices, width: document.documentElement.scrollWidth};
}"""


def _check_index(page, url: str, root: Path) -> dict:
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(f"{url}/reports/index.html")
    page.wait_for_load_state("load")
    got = page.evaluate(_CHECK_PAGE)
    assert got["width"] <= WIDTH  # no horizontal scrolling at 1280 px
    broken = [i["src"] for i in got["imgs"] if not i["ok"]]
    assert broken == [] and len(got["imgs"]) > 40, broken
    assert all(i["src"].startswith("thumbs/") for i in got["imgs"])
    for i in got["imgs"]:  # one per row across the page when wide, else two per row: wider than 520 px
        wide = i["natural"] >= WIDE_ASPECT * i["nh"]
        assert i["shown"] >= min(i["natural"], 900 if wide else 560), i
    assert len(got["caps"]) == len(got["imgs"]) and all(c["visible"] for c in got["caps"])
    assert min(c["px"] for c in got["caps"]) >= 12
    assert got["notices"] == 0  # every figure has its thumbnail
    assert dead_references(root / "reports" / "index.html") == []
    return got


def _check_figure_pages(page, url: str, root: Path, present: bool) -> int:
    """Check every figure page's references, and visit a sample of them (one page template:
    a single file, a folder member, wide and not) in Chromium: with ``present`` the <object> renders the PNG (its box takes the
    PNG's aspect ratio) and the fallback stays hidden; without, the fallback shows (the notice
    naming the command, and the committed thumbnail). The object decides after the load event,
    so each state is waited for, not read at once."""
    from PIL import Image

    pages = sorted((root / "reports" / "thumbs").rglob("*.html"))
    for p in pages:
        assert dead_references(p, objects=present) == [], p
    for p in pages[::9]:
        rel = p.relative_to(root).as_posix()
        page.goto(f"{url}/{rel}")
        page.wait_for_load_state("load")
        if present:
            png = root / "reports" / "figures" / p.relative_to(root / "reports" / "thumbs").with_suffix(".png")
            with Image.open(png) as im:
                aspect = im.height / im.width
            page.wait_for_function("""a => { const r = document.querySelector('object.full').getBoundingClientRect();
                                             return r.width > 50 && Math.abs(r.height - r.width * a) < 2; }""",
                                   arg=aspect, timeout=5000)
        else:
            page.wait_for_function("() => document.getElementById('absent').offsetParent !== null", timeout=5000)
        state = page.evaluate("""() => {
          const n = document.getElementById('absent'), img = document.querySelector('object.full img');
          return {notice: n.offsetParent !== null, thumb: img.complete && img.naturalWidth > 0,
                  thumbShown: img.offsetParent !== null};
        }""")
        if present:  # the full-size PNG, not the fallback
            assert not state["notice"] and not state["thumbShown"], (rel, state)
        else:  # the fallback: the committed thumbnail under a notice naming the command
            assert state["thumb"] and state["thumbShown"], (rel, state)
            assert "dvc repro" in page.inner_text("#absent")
    return len(pages)


def test_the_fresh_clone_page_in_chromium(browser_page, serve, states, screenshots):
    got = _check_index(browser_page, serve["fresh"], states["fresh"])
    browser_page.screenshot(path=screenshots / "report_fresh_clone.png")
    assert _check_figure_pages(browser_page, serve["fresh"], states["fresh"], present=False) == len(got["imgs"])


def test_the_reproduced_page_in_chromium(browser_page, serve, states, screenshots):
    got = _check_index(browser_page, serve["full"], states["full"])
    browser_page.screenshot(path=screenshots / "report_reproduced.png")
    assert _check_figure_pages(browser_page, serve["full"], states["full"], present=True) == len(got["imgs"])
    # the two states show the same page: the committed one is what a reproduce writes
    fresh = (states["fresh"] / "reports" / "index.html").read_bytes()
    assert fresh == (states["full"] / "reports" / "index.html").read_bytes()
