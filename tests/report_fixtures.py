"""Helpers of the report page's tests: tiny matplotlib figures for every figure entry of the
report, the files a fresh clone would hold, and a link checker that reads a page's HTML.

A fresh clone holds what git tracks: of ``reports/``, the page, the thumbnails and figure pages
(``reports/thumbs``) and the metrics; and the jupytext sources ``notebooks/*.py``. The DVC
outputs ``reports/figures`` and ``reports/notebooks`` are absent until ``make reproduce``.
"""

from __future__ import annotations

import functools
import io
import shutil
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from facebias.report import PAPERS, Paper, figure_entries

#: Files of a folder entry (``hcic/hcic_det``) the fixtures make.
MEMBERS = ("intended", "t30")


@functools.cache
def png_bytes(width_in: float, height_in: float, dpi: int = 100) -> bytes:
    """A small matplotlib figure (a line, a title, axis labels) as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=dpi)
    ax.plot([0, 1, 2, 3], [3, 1, 2, 0], "o-")
    ax.set(title="test figure", xlabel="x", ylabel="y")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def make_figures(reports: Path, papers: Sequence[Paper] = PAPERS, large: bool = False) -> list[Path]:
    """A PNG for every figure entry of ``papers`` (two, :data:`MEMBERS`, in a folder entry);
    every third one is wide (its width at least 2.2 times its height). ``large``: about the
    pixel size of the pipeline's figures (thumbnails at their full width), else tiny."""
    wide, normal = ((9.0, 3.6), (8.5, 5.3)) if large else ((2.4, 0.9), (1.6, 1.1))
    written = []
    for i, entry in enumerate(figure_entries(papers)):
        blob = png_bytes(*(wide if i % 3 == 0 else normal))
        paths = [reports / "figures" / entry] if entry.endswith(".png") else [
            reports / "figures" / entry / f"{m}.png" for m in MEMBERS]
        for p in paths:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(blob)
            written.append(p)
    return written


def make_notebook_sources(root: Path, papers: Sequence[Paper] = PAPERS) -> None:
    """An empty ``notebooks/<source>.py`` for every notebook the page names."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    for p in papers:
        for b in p.backends:
            for _, source in ((b.notebook, b.source or b.notebook), *b.more_notebooks):
                (root / "notebooks" / f"{source}.py").write_text("# %%\n")


def fresh_clone_copy(src: Path, dst: Path) -> Path:
    """Copy what git tracks of a repository made by these fixtures (``reports/index.html``,
    ``reports/thumbs``, ``reports/metrics``, ``notebooks/*.py``) from ``src`` to ``dst``:
    the state of a fresh clone. Returns ``dst / "reports"``."""
    (dst / "reports").mkdir(parents=True)
    shutil.copy2(src / "reports" / "index.html", dst / "reports" / "index.html")
    for folder in ("reports/thumbs", "reports/metrics", "notebooks"):
        if (src / folder).is_dir():
            shutil.copytree(src / folder, dst / folder)
    assert not (dst / "reports" / "figures").exists() and not (dst / "reports" / "notebooks").exists()
    return dst / "reports"


class _Links(HTMLParser):
    """The local references of a page (img src, a href, object data) and its element ids."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if value is not None and (tag, name) in (("img", "src"), ("a", "href"), ("object", "data")):
                self.refs.append((tag, name, value))


def parse(page: Path) -> _Links:
    """The references and ids of ``page`` (cached while the file is unchanged)."""
    st = page.stat()
    return _parse(page.resolve(), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _parse(page: Path, mtime_ns: int, size: int) -> _Links:
    p = _Links()
    p.feed(page.read_text())
    return p


def dead_references(page: Path, *, objects: bool = True) -> list[str]:
    """Every local reference of ``page`` that does not resolve: a file that does not exist,
    or a ``#fragment`` that names no id on its target page. ``objects=False`` leaves out
    ``<object data>`` (whose fallback content is what shows while its file is absent)."""
    parsed = parse(page)
    dead = []
    for tag, attr, value in parsed.refs:
        if tag == "object" and not objects:
            continue
        url = urlsplit(value)
        if url.scheme or url.netloc:
            dead.append(f"{page.name}: {tag} {attr}={value!r} is not local")
            continue
        target = (page.parent / unquote(url.path)).resolve() if url.path else page
        if not target.is_file():
            dead.append(f"{page.name}: {tag} {attr}={value!r}: no such file")
        elif url.fragment and url.fragment not in (parsed.ids if target == page else parse(target).ids):
            dead.append(f"{page.name}: {tag} {attr}={value!r}: no id {url.fragment!r} there")
    return dead
