"""The report's figures: committed thumbnails, one page per figure, and their HTML.

The figures (``reports/figures/<study>/*.png``) are DVC outputs: a fresh clone has none until
``make reproduce``. So the report page shows a **thumbnail** of each figure, a small WebP file
under ``reports/thumbs/`` that ``facebias report`` writes and git tracks (the ``report``
stage's output with ``cache: false``), and links it to the figure's own **page**
(``reports/thumbs/<study>/<name>.html``, also tracked). That page embeds the full-size PNG with
``<object>``, whose fallback content, the thumbnail and a notice naming the command that makes
the figure, is what the browser shows while the PNG is absent. No script decides anything, and
no link points to a file git does not hold: the page is right in a fresh clone and after a
reproduce alike.

Sizes: a thumbnail is at most :data:`THUMB_WIDTH` pixels wide (:data:`WIDE_THUMB_WIDTH` for a
figure at least :data:`WIDE_ASPECT` times wider than tall, which the page lays across the full
width), WebP at quality :data:`THUMB_QUALITY`, at most ``max_bytes`` each (its width shrinks
until it fits) and ``total_max_bytes`` together (the quality, then the widths, step down for
all of them until the set fits). Encoding is deterministic: the same figures give the same
bytes.
"""

from __future__ import annotations

import html
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from facebias.io import atomic_path

__all__ = ["THUMBS", "THUMB_WIDTH", "WIDE_THUMB_WIDTH", "WIDE_ASPECT", "THUMB_QUALITY", "THUMB_MAX_BYTES",
           "THUMBS_MAX_BYTES", "Figure", "ThumbnailSummary", "expand", "make_thumbnail", "write_thumbnails",
           "thumb_size", "prune", "figure_html", "missing_html", "figure_page"]

#: Folder of the thumbnails and figure pages, under the reports folder.
THUMBS = "thumbs"
#: Largest thumbnail width (pixels) of a figure shown in one of two columns.
THUMB_WIDTH = 800
#: Largest thumbnail width (pixels) of a wide figure, shown across the page.
WIDE_THUMB_WIDTH = 1200
#: Width / height from which a figure is wide.
WIDE_ASPECT = 2.2
#: WebP quality of a thumbnail (0-100) before any step down.
THUMB_QUALITY = 65
#: Largest size of one thumbnail, bytes.
THUMB_MAX_BYTES = 80_000
#: Largest size of all thumbnails together, bytes.
THUMBS_MAX_BYTES = 1_500_000
#: (quality, width scale) tried in turn until the thumbnails fit ``total_max_bytes``.
_LADDER = ((THUMB_QUALITY, 1.0), (55, 1.0), (45, 1.0), (45, 0.8), (40, 0.64), (40, 0.5))
_MIN_WIDTH = 160


@dataclass(frozen=True)
class Figure:
    """One PNG of a figure entry (a file under ``reports/figures``, or one file of a folder
    entry such as ``hcic/hcic_det``); paths are relative to the reports folder."""

    entry: str
    rel: str  # under figures/: "hcic/hcic_det/t30.png"

    @property
    def stage(self) -> str:
        """The DVC stage that makes it: the study folder, ``reports/figures/<stage>/``."""
        return self.entry.split("/", 1)[0]

    @property
    def stem(self) -> str | None:
        """The file's name without ``.png`` for a member of a folder entry, else None."""
        return None if self.rel == self.entry else Path(self.rel).stem

    @property
    def source(self) -> str:
        return f"figures/{self.rel}"

    @property
    def thumb(self) -> str:
        return f"{THUMBS}/{self.rel.removesuffix('.png')}.webp"

    @property
    def page(self) -> str:
        return f"{THUMBS}/{self.rel.removesuffix('.png')}.html"

    @property
    def anchor(self) -> str:
        return "fig-" + self.rel.removesuffix(".png").replace("/", "-")


def expand(reports: Path, entry: str) -> list[Figure]:
    """The figures of an entry: a ``.png`` entry is itself; a folder entry is its PNGs under
    ``figures/`` or, where that folder is absent (a fresh clone), its committed thumbnails."""
    if entry.endswith(".png"):
        return [Figure(entry, entry)]
    folder = reports / "figures" / entry
    if folder.is_dir():
        names = sorted(p.name for p in folder.glob("*.png"))
    else:
        names = sorted(p.stem + ".png" for p in (reports / THUMBS / entry).glob("*.webp"))
    return [Figure(entry, f"{entry}/{n}") for n in names]


def _open_rgb(png: Path):
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(png) as im:
            im.load()
            if im.mode in ("RGBA", "LA", "P"):
                im = im.convert("RGBA")
                flat = Image.new("RGB", im.size, "white")
                flat.paste(im, mask=im.getchannel("A"))
                return flat
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise ValueError(f"{png}: not a readable image ({type(exc).__name__}); rerun the DVC stage that "
                         "makes it") from None


def make_thumbnail(png: str | os.PathLike, quality: int = THUMB_QUALITY, scale: float = 1.0,
                   max_bytes: int = THUMB_MAX_BYTES) -> bytes:
    """A WebP thumbnail of ``png``.

    Parameters
    ----------
    png : path
        The figure.
    quality : int
        WebP quality, 0-100.
    scale : float
        Factor on the largest width (:data:`THUMB_WIDTH`, or :data:`WIDE_THUMB_WIDTH` for a wide
        figure); a figure narrower than that keeps its width.
    max_bytes : int
        Largest size; the width shrinks by a fifth at a time until the thumbnail fits.

    Returns
    -------
    bytes
        The WebP file; a transparent figure is flattened on white.

    Raises
    ------
    ValueError
        ``png`` is not an image, or it cannot fit ``max_bytes`` at any width of at least
        160 pixels.
    """
    from PIL import Image

    im = _open_rgb(Path(png))
    limit = WIDE_THUMB_WIDTH if im.width >= WIDE_ASPECT * im.height else THUMB_WIDTH
    width = min(im.width, max(_MIN_WIDTH, round(limit * scale)))
    while True:
        height = max(1, round(im.height * width / im.width))
        small = im if width == im.width else im.resize((width, height), Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        small.save(buf, "WEBP", quality=quality, method=4)
        data = buf.getvalue()
        if len(data) <= max_bytes:
            return data
        if width <= _MIN_WIDTH:
            raise ValueError(f"{png}: no thumbnail of at least {_MIN_WIDTH} px wide fits max_bytes={max_bytes}; "
                             "raise max_bytes")
        width = max(_MIN_WIDTH, round(width * 0.8))


@dataclass
class ThumbnailSummary:
    """What :func:`write_thumbnails` did: thumbnails made from figures (``made``), kept
    because their figure is absent (``kept``), figure entries with neither (``missing``),
    and the total size of the thumbnails in bytes."""

    made: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    total_bytes: int = 0
    quality: int = THUMB_QUALITY
    scale: float = 1.0


def _write_bytes(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return  # unchanged: leave the file (and its time stamp) alone
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def prune(reports: Path, keep: Iterable[str], suffix: str) -> list[str]:
    """Delete the files ending in ``suffix`` under ``reports/thumbs`` that are not in ``keep``
    (paths relative to ``reports``), then empty folders; returns what it deleted."""
    root = reports / THUMBS
    keep = set(keep)
    gone = []
    if not root.is_dir():
        return gone
    for p in sorted(root.rglob(f"*{suffix}")):
        rel = p.relative_to(reports).as_posix()
        if rel not in keep:
            p.unlink()
            gone.append(rel)
    for d in sorted((d for d in root.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
        if not any(d.iterdir()):
            d.rmdir()
    return gone


def _fit(reports: Path, figs: Sequence[Figure], max_bytes: int, budget: int,
         total_max_bytes: int) -> tuple[dict[str, bytes], int, float]:
    """The thumbnails of ``figs`` at the first (quality, width scale) of :data:`_LADDER` whose
    total fits ``budget`` bytes, with that quality and scale."""
    quality, scale = _LADDER[0]
    if not figs:
        return {}, quality, scale
    for quality, scale in _LADDER:
        data = {f.thumb: make_thumbnail(reports / f.source, quality, scale, max_bytes) for f in figs}
        if sum(map(len, data.values())) <= budget:
            return data, quality, scale
    raise ValueError(f"{reports / THUMBS}: {len(figs)} thumbnails do not fit total_max_bytes={total_max_bytes} "
                     f"even at quality {quality} and {scale:g} of the width; raise it")


def write_thumbnails(reports_dir: str | os.PathLike, entries: Sequence[str], max_bytes: int = THUMB_MAX_BYTES,
                     total_max_bytes: int = THUMBS_MAX_BYTES) -> ThumbnailSummary:
    """Write ``reports/thumbs/<figure>.webp`` for every figure of ``entries`` that exists,
    keep the thumbnail of a figure that does not (a fresh clone), delete the others.

    Parameters
    ----------
    reports_dir : path
        The reports folder (``figures/`` in it; ``thumbs/`` is written).
    entries : sequence of str
        Figure entries under ``figures/``: a ``.png`` file or a folder of them.
    max_bytes, total_max_bytes : int
        Largest size of one thumbnail and of all of them, bytes. The thumbnails kept count
        toward the total; the ones made step down in quality, then width, until all fit.

    Returns
    -------
    ThumbnailSummary

    Raises
    ------
    ValueError
        A figure is not an image, or the thumbnails cannot fit ``total_max_bytes``.
    """
    reports = Path(reports_dir)
    summary = ThumbnailSummary()
    present: list[Figure] = []
    for entry in entries:
        figs = expand(reports, entry)
        for f in figs:
            if (reports / f.source).is_file():
                present.append(f)
            elif (reports / f.thumb).is_file():
                summary.kept.append(f.thumb)
        if not any((reports / f.source).is_file() or (reports / f.thumb).is_file() for f in figs):
            summary.missing.append(entry)
    kept_bytes = sum((reports / t).stat().st_size for t in summary.kept)
    data, quality, scale = _fit(reports, present, max_bytes, total_max_bytes - kept_bytes, total_max_bytes)
    for rel, blob in data.items():
        _write_bytes(reports / rel, blob)
    summary.made = list(data)
    summary.quality, summary.scale = quality, scale
    summary.total_bytes = kept_bytes + sum(map(len, data.values()))
    prune(reports, [*summary.made, *summary.kept], ".webp")
    return summary


def thumb_size(path: Path) -> tuple[int, int]:
    """(width, height) of an image file, read from its header."""
    from PIL import Image

    with Image.open(path) as im:
        return im.size


def _rel(target: str, start: str) -> str:
    """``target`` (relative to the reports folder) as a link from the file ``start``."""
    return Path(os.path.relpath(target, Path(start).parent)).as_posix()


def _make_cmd(stage: str) -> str:
    return f"<code>dvc repro {html.escape(stage)}</code> (or <code>make reproduce</code>)"


def figure_html(fig: Figure, size: tuple[int, int], caption: str) -> str:
    """A figure on the report page: its thumbnail linked to its page, and ``caption`` (HTML)."""
    esc = html.escape
    w, h = size
    wide = " wide" if w >= WIDE_ASPECT * h else ""
    return (f'<figure id="{esc(fig.anchor)}" class="fig{wide}"><a href="{esc(fig.page)}" '
            f'title="open the figure\'s page (full size)"><img src="{esc(fig.thumb)}" width="{w}" height="{h}" '
            f'alt="{esc(fig.rel)}"></a><figcaption>{caption}<span class="file">'
            f'<a href="{esc(fig.page)}">Full size</a>: reports/{esc(fig.source)}, on the figure\'s page once '
            f"{_make_cmd(fig.stage)} has made it; until then the page shows this thumbnail."
            "</span></figcaption></figure>")


def missing_html(rel: str, anchor: str, caption: str, figure_present: bool = False) -> str:
    """In place of a figure without a thumbnail: a notice naming the command that makes it
    (``rel``: the figure or folder under ``figures/``), then its caption."""
    esc = html.escape
    stage = rel.split("/", 1)[0]
    if figure_present:
        what = (f"No thumbnail yet of reports/figures/{esc(rel)}: <code>facebias report --reports reports</code> "
                "makes it.")
    else:
        what = (f"Figure not generated yet: reports/figures/{esc(rel)}. {_make_cmd(stage)} makes it, and "
                "its thumbnail.")
    return (f'<figure id="{esc(anchor)}" class="fig"><div class="notice">{what}</div>'
            f"<figcaption>{caption}</figcaption></figure>")


_PAGE_CSS = """body{font-family:system-ui,sans-serif;max-width:1400px;margin:1.5em auto;padding:0 1em;color:#222;
font-size:16px;line-height:1.45}object.full,object.full img{max-width:100%;height:auto;display:block}
.notice{background:#fff6d5;border:1px solid #e0c36a;padding:.6em .8em;margin:.6em 0}
.cap{font-size:15px;max-width:80em}.cap .meta{display:block;color:#555;margin-top:.3em}
code{background:#f2f2f2;padding:0 .2em}"""


def figure_page(fig: Figure, title: str, caption: str) -> str:
    """The figure's own page (``fig.page``): the full-size PNG through ``<object>``, whose
    fallback (shown while the PNG is absent) is the thumbnail with a notice naming the
    command that makes the figure. ``caption`` is HTML whose links are relative to this page."""
    esc = html.escape
    back = _rel(f"index.html#{fig.anchor}", fig.page)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)} — facebias report</title><style>{_PAGE_CSS}</style></head><body>"
            f'<p><a href="{esc(back)}">← back to the report</a></p><h1>{esc(title)}</h1>'
            f'<p class="cap">{caption}</p>'
            f'<object class="full" data="{esc(_rel(fig.source, fig.page))}" type="image/png">'
            f'<div class="notice" id="absent"><b>The full-size figure is not in this checkout.</b> '
            f"reports/{esc(fig.source)} is an output of the DVC stage <code>{esc(fig.stage)}</code>: "
            f"{_make_cmd(fig.stage)} makes it, and this page then shows it. Below: the committed "
            "thumbnail.</div>"
            f'<img src="{esc(_rel(fig.thumb, fig.page))}" alt="thumbnail of {esc(fig.rel)}"></object>'
            "</body></html>\n")
