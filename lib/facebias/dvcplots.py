"""DVC's plots as one offline HTML page: no scripts, no external URLs (``facebias plots``).

DVC's own ``dvc plots show`` page loads vega / vega-lite / vega-embed from a CDN and is blank
offline. Here ``dvc plots show --json`` is rendered instead: image plots are embedded as
base64 ``data:`` URIs, Vega-Lite plots (DVC fills its template with the data inline) become
inline SVG through ``vl_convert.vegalite_to_svg`` (PyPI package ``vl-convert-python``, a
self-contained renderer). A plot DVC could not load is shown as ``missing: PATH`` and listed
in :attr:`Page.missing`, never a crash.

:func:`render_page` is the pure part (parsed JSON in, HTML out); :func:`dvc_plots_json` is
the subprocess edge and :func:`write_plots_page` ties them together.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facebias.io import repo_root, write_text_atomic

__all__ = ["PlotsError", "Page", "dvc_plots_json", "render_page", "render_html",
           "vegalite_to_svg", "write_plots_page", "VL_CONVERT_PIP"]

VL_CONVERT_PIP = "vl-convert-python==1.9.0.post1"
_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
         ".svg": "image/svg+xml"}
_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222}
h1{font-size:1.4em}h2{font-size:1em;font-family:monospace;margin:1.6em 0 .4em}
nav li{font-family:monospace;font-size:.85em}
img,svg{max-width:100%;height:auto;border:1px solid #ddd}
.rev{color:#666;font-size:.85em}.missing{color:#b00;font-family:monospace}
""".strip()


class PlotsError(Exception):
    """A problem that stops the page from being built (dvc or vl-convert missing, not a DVC
    repository, dvc failed); the message is one line meant for the user."""


@dataclass
class Page:
    """The rendered page and what went into it."""

    html: str
    n_images: int = 0
    n_data: int = 0
    missing: list[str] = field(default_factory=list)  # "missing: PATH (...)" / "failed: PATH (...)"


def vegalite_to_svg(spec: Mapping[str, Any]) -> str:
    """SVG of a Vega-Lite spec through vl-convert (imported here: a clear error when absent)."""
    try:
        import vl_convert
    except ImportError:
        raise PlotsError(f"vl-convert is not installed, needed for DVC data plots: "
                         f"pip install {VL_CONVERT_PIP}") from None
    return vl_convert.vegalite_to_svg(dict(spec))


def _read_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def _slug(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "plot"
    slug, k = base, 2
    while slug in used:
        slug, k = f"{base}-{k}", k + 1
    used.add(slug)
    return slug


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def render_page(
    plots_json: Mapping[str, Any],
    *,
    title: str = "DVC plots",
    read: Callable[[str], bytes] = _read_bytes,
    to_svg: Callable[[Mapping[str, Any]], str] = vegalite_to_svg,
) -> Page:
    """Render the output of ``dvc plots show --json`` (``{"data": {NAME: [ENTRY]}, "errors": [...]}``).

    Image entries (``{"type": "image", "url": FILE}``) become ``<img src="data:...">`` with the
    bytes from ``read(FILE)``; vega entries (``{"type": "vega", "content": SPEC}``) become
    ``to_svg(SPEC)`` inline. A name with no entries, an unreadable image or a spec that fails
    to render is shown as ``missing: NAME`` / ``failed: NAME`` and listed in ``Page.missing``.
    """
    data: Mapping[str, list] = plots_json.get("data") or {}
    errors: dict[str, list[str]] = {}
    for err in plots_json.get("errors") or []:
        name = str(err.get("name") or err.get("source") or "?")
        errors.setdefault(name, []).append(_one_line(f"{err.get('type', 'error')}: {err.get('msg', '')}"))
    names = list(data) + [n for n in errors if n not in data]
    page = Page(html="")
    used: set[str] = set()
    sections, toc = [], []
    for name in names:
        slug = _slug(name, used)
        toc.append(f'<li><a href="#{slug}">{html.escape(name)}</a></li>')
        parts = []
        entries = data.get(name) or []
        if not entries:
            why = "; ".join(errors.get(name, [])) or "no data"
            line = f"missing: {name} ({why})"
            page.missing.append(line)
            parts.append(f'<p class="missing">{html.escape(line)}</p>')
        for entry in entries:
            revs = ", ".join(str(r) for r in entry.get("revisions") or [])
            kind = entry.get("type")
            try:
                if kind == "image":
                    url = str(entry["url"])
                    mime = _MIME.get(Path(url).suffix.lower(), "application/octet-stream")
                    b64 = base64.b64encode(read(url)).decode("ascii")
                    body = f'<img alt="{html.escape(name)}" src="data:{mime};base64,{b64}">'
                    page.n_images += 1
                elif kind == "vega":
                    body = to_svg(entry["content"])
                    page.n_data += 1
                else:
                    raise ValueError(f"unsupported plot type {kind!r}")
            except PlotsError:
                raise
            except (OSError, KeyError, ValueError, RuntimeError) as exc:
                label = "missing" if isinstance(exc, FileNotFoundError) else "failed"
                line = f"{label}: {name} ({type(exc).__name__}: {_one_line(exc)})"
                page.missing.append(line)
                body = f'<p class="missing">{html.escape(line)}</p>'
            if revs:
                parts.append(f'<p class="rev">{html.escape(revs)}</p>')
            parts.append(body)
        sections.append(f'<section id="{slug}">\n<h2>{html.escape(name)}</h2>\n' + "\n".join(parts)
                        + "\n</section>")
    summary = (f"{len(names)} plots (images: {page.n_images}, data plots: {page.n_data}, "
               f"missing or failed: {len(page.missing)}). Rendered from <code>dvc plots show --json</code> "
               f"(data plots: vl-convert); no scripts, opens offline.")
    page.html = "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>", f"<style>{_CSS}</style>", "</head><body>",
        f"<h1>{html.escape(title)}</h1>", f"<p>{summary}</p>",
        "<nav><ul>", *toc, "</ul></nav>", *sections, "</body></html>", ""])
    return page


def render_html(plots_json: Mapping[str, Any], **kwargs: Any) -> str:
    """Just the HTML of :func:`render_page`."""
    return render_page(plots_json, **kwargs).html


def _dvc_executable() -> str:
    """dvc next to this Python (the venv's) first, then on PATH."""
    here = Path(sys.executable).parent / "dvc"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("dvc")
    if not found:
        raise PlotsError("dvc not found (not next to this Python nor on PATH): pip install dvc "
                         "(pinned in requirements.txt)")
    return found


def dvc_plots_json(repo: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, Any]:
    """Run ``dvc plots show --json -o OUT_DIR`` in ``repo`` and return the parsed JSON.

    DVC copies image plots into ``out_dir`` (the ``url`` of each image entry points there);
    the caller owns that folder.
    """
    repo = Path(repo)
    if not (repo / ".dvc").is_dir():
        raise PlotsError(f"{repo}: not a DVC repository (no .dvc folder; run `dvc init`)")
    cmd = [_dvc_executable(), "plots", "show", "--json", "-o", str(out_dir)]
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = _one_line(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
        raise PlotsError(f"`dvc plots show --json` failed (exit {proc.returncode}): {tail}")
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise PlotsError(f"`dvc plots show --json` printed no JSON ({exc}): "
                         f"{_one_line(proc.stdout[:200])}") from None
    if not isinstance(out, dict):
        raise PlotsError(f"`dvc plots show --json` printed {type(out).__name__}, not an object")
    return out


def write_plots_page(out: str | os.PathLike, repo: str | os.PathLike | None = None,
                     title: str = "facebias: DVC plots") -> Page:
    """Write the offline page of ``repo``'s DVC plots to ``out`` (atomically).

    ``repo`` defaults to the folder holding ``dvc.yaml``, searched upwards from the cwd.
    """
    if repo is None:
        try:
            repo = repo_root()
        except FileNotFoundError as exc:
            raise PlotsError(f"not a DVC repository: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="facebias-dvcplots-") as tmp:
        page = render_page(dvc_plots_json(repo, tmp), title=title)
    write_text_atomic(out, page.html)
    return page
