"""``reports/index.html``: one offline page with every paper's claims beside our measurements.

For each paper and backend: its claims from the registry (:mod:`facebias.claims`), each with
the paper's words, our cells read from ``reports/metrics/*.json`` (mean and range over world
seeds where there are several), the computed verdict and the kind of evidence; the backend
that produced them (the metrics' provenance), then its figures, each with a caption (what it
shows, the backend, the claims it supports: :mod:`facebias.report_captions`), and the notebook
it comes from. The page is plain HTML with inline CSS:
no scripts, no CDN, so it renders offline. A study that has not run yet is shown as such;
nothing is invented.

The page works in a fresh clone, where the DVC outputs ``reports/figures`` and
``reports/notebooks`` are absent: it shows the committed thumbnails (``reports/thumbs``,
:mod:`facebias.report_figures`), links each to a committed page of the figure that shows the
full-size PNG once it exists (and the thumbnail with the command that makes it until then), and
links notebooks to their jupytext sources ``notebooks/<stage>.py``, naming the executed
notebook that ``make reproduce`` writes. Every link resolves in a fresh clone.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from facebias.claims.core import VERDICTS, Claim, ClaimResult, Kind, evaluate_all
from facebias.claims.registry import all_claims
from facebias.claims.render import claims_html
from facebias.io import write_text_atomic
from facebias.report_captions import caption_for
from facebias.report_figures import (
    THUMB_MAX_BYTES,
    THUMBS,
    THUMBS_MAX_BYTES,
    Figure,
    ThumbnailSummary,
    expand,
    figure_html,
    figure_page,
    missing_html,
    prune,
    thumb_size,
    write_thumbnails,
)
from facebias.schema import read_metrics

__all__ = ["Backend", "Paper", "PAPERS", "GENERATORS", "figure_entries", "build_report", "build_pages",
           "write_report", "write_report_thumbnails"]

#: Display names of the learned generators a metrics file's ``backend`` key names.
GENERATORS = {"dcgan": "DCGAN", "stylegan2": "StyleGAN2", "eg3d": "EG3D"}


@dataclass(frozen=True)
class Backend:
    """One generator / data backend a paper is reproduced on, with its own notebook, figures
    and the metrics file whose provenance names it. ``key`` matches the claims' ``backend``
    (:class:`facebias.claims.Claim`)."""

    key: str
    label: str
    notebook: str  # reports/notebooks/<notebook>.ipynb
    figures: Sequence[str]  # under reports/figures/: <study>/<file or folder of PNGs>
    provenance_file: str = ""
    source: str = ""  # notebooks/<source>.py when it differs from the executed notebook's name
    more_notebooks: Sequence[tuple[str, str]] = ()  # further (executed notebook, source) pairs
    engine: str = ""  # what made the data, for figure captions; {generator}: the metrics' backend name


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    notebook: str  # reports/notebooks/<notebook>.ipynb
    figures: Sequence[str]  # under reports/figures/: <study>/<file or folder of PNGs>
    provenance_file: str = ""  # the metrics file whose provenance/source names the backend
    more_backends: Sequence[Backend] = field(default_factory=tuple)  # shown one after another
    label: str = ""  # the first backend's title when there are more
    engine: str = ""  # the first backend's engine (Backend.engine)

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The paper's first backend (its own notebook / figures / provenance) and the others."""
        first = Backend("main", self.label, self.notebook, self.figures, self.provenance_file, engine=self.engine)
        return (first, *self.more_backends)


PAPERS: tuple[Paper, ...] = (
    Paper("002", "Robinson et al., Face recognition: too bias, or not too bias? (BFW)", "bfw",
          ["bfw/bfw_det.png", "bfw/bfw_det_folds.png", "bfw/bfw_fpr_deviation.png", "bfw/bfw_seeds.png", "bfw/bfw_tar_at_far.png",
           "bfw/bfw_rank1_confusion.png"],
          "bfw_details.json",
          engine="embedded known-truth world: simulated embeddings and scores with planted subgroup effects "
                 "(facebias.worlds.bfw), not the paper's data"),
    Paper("003", "Wu & Bowyer, BA-test: balanced evaluation of the gender gap", "batest",
          ["batest/batest_gender_gap.png", "batest/batest_table1_seeds.png", "batest/batest_face_area_masks.png",
           "batest/batest_fmr_at_reference.png", "batest/batest_tpr.png", "batest/batest_identity_count.png", "batest/batest_factors.png"],
          "batest_details.json",
          engine="embedded known-truth world: simulated images' factors, masks and scores with a planted gender "
                 "gap (facebias.worlds.batest), not the paper's data"),
    Paper("004", "Balakrishnan et al., Towards causal benchmarking of bias in face analysis (transects)",
          "transects",
          ["synthetic_faces/synthetic_faces_orthogonalisation.png", "synthetic_faces/synthetic_faces_transects_2x2x2.png",
           "transects/transects_group_errors.png", "transects/transects_observational_vs_experimental.png",
           "transects/transects_coefficients.png", "transects/transects_age_gender.png"],
          "transects_details.json",
          more_backends=(Backend("dcgan", "DCGAN (learned latent space; machine labels, no truth)", "transects_dcgan",
                                 ["synthetic_faces_dcgan/synthetic_faces_dcgan_orthogonalisation.png", "synthetic_faces_dcgan/synthetic_faces_dcgan_transects.png",
                                  "synthetic_faces_dcgan/synthetic_faces_dcgan_gender_levers.png", "synthetic_faces_dcgan/synthetic_faces_dcgan_acceptance.png",
                                  "transects_dcgan/transects_dcgan_examples.png", "transects_dcgan/transects_dcgan_group_errors.png",
                                  "transects_dcgan/transects_dcgan_paired.png", "transects_dcgan/transects_dcgan_coefficients.png"],
                                 "transects_dcgan_details.json", source="transects_dcgan",
                                 more_notebooks=(("synthetic_faces_dcgan", "synthetic_faces_dcgan"),),
                                 engine="{generator} renders (learned generator; machine labels, no truth), "
                                        "classifiers with a planted shortcut"),),
          label="procedural renderer (known truth; simulated panel)",
          engine="procedural renders (known truth), simulated annotator panel, real and planted classifiers"),
    Paper("000", "Liang et al., Benchmarking algorithmic bias in face recognition with synthetic faces "
          "and human identity confidence (HCIC)", "hcic",
          ["synthetic_faces/synthetic_faces_prototypes.png", "hcic/hcic_similarity", "hcic/hcic_det", "hcic/hcic_fnmr_by_group.png",
           "hcic/hcic_annotator_consistency.png"],
          "hcic_details.json",
          more_backends=(Backend("dcgan", "DCGAN (groups along a learned 'skin tone' direction, not validated as skin, × gender; "
                                 "intended labels)", "hcic_dcgan",
                                 ["synthetic_faces_dcgan/synthetic_faces_dcgan_prototypes.png", "hcic_dcgan/hcic_dcgan_similarity", "hcic_dcgan/hcic_dcgan_det",
                                  "hcic_dcgan/hcic_dcgan_fnmr_by_group.png", "hcic_dcgan/hcic_dcgan_fnmr_by_attribute.png"],
                                 "hcic_dcgan_details.json", source="hcic",
                                 engine="{generator} renders (learned generator; intended labels, no annotators), "
                                        "face-recognition systems and a toy system"),),
          label="procedural renderer (known truth; simulated panel)",
          engine="procedural renders (known truth), face-recognition systems and a toy system, simulated "
                 "annotator panel"),
    Paper("001", "Knott et al., A rapid test for accuracy and bias of face recognition technology",
          "rapid",
          ["rapid/rapid_curves.png", "rapid/rapid_seeds.png", "rapid/rapid_bias.png", "rapid/rapid_voting.png", "rapid/rapid_p_sweep.png"],
          "rapid_details.json",
          engine="embedded known-truth world: simulated search results and systems' embeddings with a planted "
                 "bias (facebias.worlds.rapid), not the paper's data or services"),
)

_CSS = """body{font-family:system-ui,sans-serif;max-width:1240px;margin:2em auto;padding:0 1em;color:#222;
font-size:16px;line-height:1.45}
h2{border-bottom:2px solid #ddd;padding-top:1em}table{border-collapse:collapse;width:100%;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}th{background:#f4f4f4}
.prov{color:#555;font-size:.9em}.missing{color:#a00}td{overflow-wrap:anywhere}
.figs{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:1.6em 1.8em;grid-auto-flow:row dense;
margin:1em 0 2em}figure.fig{margin:0;min-width:0}figure.fig.wide{grid-column:1/-1}
figure.fig img{max-width:100%;height:auto;display:block;border:1px solid #ddd}
figure.fig a:hover img{border-color:#36c}
figcaption{font-size:14px;line-height:1.4;color:#333;margin-top:.45em}
figcaption .meta,figcaption .file{display:block;color:#555;margin-top:.25em}
.notice{background:#fff6d5;border:1px solid #e0c36a;padding:.6em .8em;font-size:14px}
.nb{font-size:15px}code{background:#f2f2f2;padding:0 .2em}
@media (max-width:800px){.figs{grid-template-columns:1fr}}
table.cells{font-size:.85em;margin:.3em 0}table.cells td{padding:.15em .4em}
.agree{background:#e6f4e6}.partly{background:#fff6d5}.disagree{background:#fbe3e3}.nc,.unres{background:#eee}
table.summary{width:auto}q{font-style:italic}"""


def figure_entries(papers: Sequence[Paper] = PAPERS) -> list[str]:
    """Every figure entry of ``papers`` (under ``reports/figures``), in page order, once."""
    return list(dict.fromkeys(e for p in papers for b in p.backends for e in b.figures))


def _read_metrics(metrics_dir: Path, name: str) -> dict | None:
    """The metrics file, checked against its schema; None when it does not exist (the study
    has not run)."""
    path = metrics_dir / name
    if not path.is_file():
        return None
    return read_metrics(path)[0]


def _provenance(backend: Backend, prov: dict | None) -> str:
    esc = html.escape
    if prov is None:
        return (f'<p class="missing">Not run yet: reports/metrics/{esc(backend.provenance_file)} is missing '
                "(run <code>make reproduce</code>).</p>")
    text = str(prov.get("provenance") or prov.get("source") or "not recorded").removeprefix("backend: ")
    return f'<p class="prov">Backend: {esc(text)}</p>'


def _engine(backend: Backend, prov: dict | None) -> str:
    """The backend as a figure caption names it; a learned generator by the name its metrics
    record (``backend``: dcgan, stylegan2)."""
    text = backend.engine or backend.label or backend.key
    if "{generator}" in text:
        name = str(prov.get("backend") or "") if prov else ""
        text = text.replace("{generator}", GENERATORS.get(name, name or "learned-generator"))
    return text


def _notebooks_html(reports: Path, backend: Backend) -> str:
    """The notebooks a backend's results come from: a link to each jupytext source (in git),
    and the executed notebook's path with the command that writes it (a DVC output, absent in
    a fresh clone, so never linked)."""
    esc = html.escape
    items = []
    for name, source in ((backend.notebook, backend.source or backend.notebook), *backend.more_notebooks):
        src = reports.parent / "notebooks" / f"{source}.py"
        shown = f"notebooks/{esc(source)}.py"
        link = (f'<a href="{esc(Path(os.path.relpath(src, reports)).as_posix())}">{shown}</a>' if src.is_file()
                else f"<code>{shown}</code>")
        items.append(f"{link} (jupytext source); executed: <code>reports/notebooks/{esc(name)}.ipynb</code>, "
                     f"written by <code>dvc repro {esc(name)}</code> (or <code>make reproduce</code>)")
    return '<p class="nb">Notebook: ' + "; ".join(items) + ".</p>"


def _caption(entry: str, stem: str | None, engine: str, on_page: set[str], index: str) -> tuple[str, str, str]:
    """(title, what it shows, backend and claims) of a figure, the last two as HTML: the claims
    it supports are linked to their rows on the page (``index``: the page's address from where
    the caption is shown, "" on the page itself)."""
    esc = html.escape
    cap = caption_for(entry, stem)
    if cap is None:
        title, shows, claims = (f"{entry}/{stem}" if stem else entry), "", ()
    else:
        title, shows, claims = cap
        title = f"{title} — {stem}" if stem else title
    links = ", ".join(f'<a href="{esc(index)}#{esc(k)}">{esc(k)}</a>' if k in on_page else f"<code>{esc(k)}</code>"
                      for k in claims)
    supports = (f"Supports: {links}." if claims else "Context: no registered claim rests on this figure alone.")
    return title, esc(shows), f"Backend: {esc(engine)}. {supports}"


def _main_caption(entry: str, stem: str | None, engine: str, on_page: set[str]) -> tuple[str, str]:
    """(title, caption HTML) of a figure on the report page."""
    title, shows, meta = _caption(entry, stem, engine, on_page, "")
    return title, f'<b>{html.escape(title)}.</b> {shows}<span class="meta">{meta}</span>'


def _figures_html(reports: Path, backend: Backend, engine: str, on_page: set[str],
                  pages: dict[str, str]) -> str:
    """A backend's figures as a grid: each committed thumbnail linked to its page (added to
    ``pages``), or a notice where there is none."""
    out = []
    for entry in backend.figures:
        figs = expand(reports, entry)
        if not figs:
            anchor = Figure(entry, entry).anchor
            out.append(missing_html(entry, anchor, _main_caption(entry, None, engine, on_page)[1]))
        for f in figs:
            title, caption = _main_caption(entry, f.stem, engine, on_page)
            if not (reports / f.thumb).is_file():
                out.append(missing_html(f.rel, f.anchor, caption, figure_present=(reports / f.source).is_file()))
                continue
            out.append(figure_html(f, thumb_size(reports / f.thumb), caption))
            index = Path(os.path.relpath("index.html", Path(f.page).parent)).as_posix()
            _, shows, meta = _caption(entry, f.stem, engine, on_page, index)
            pages[f.page] = figure_page(f, title, f'{shows}<span class="meta">{meta}</span>')
    return '<div class="figs">' + "\n".join(out) + "</div>"


def _paper_html(paper: Paper, reports: Path, results: Sequence[ClaimResult], pages: dict[str, str]) -> str:
    """One paper: per backend, its provenance, its claims (quote, our cells, computed verdict,
    kind of evidence), then its notebooks and figures."""
    metrics_dir = reports / "metrics"
    esc = html.escape
    on_page = {r.claim.key for r in results}
    out = [f'<h2 id="p{paper.key}">Paper {paper.key}: {esc(paper.title)}</h2>']
    for b in paper.backends:
        if len(paper.backends) > 1:
            out.append(f"<h3>{esc(b.label or b.key)}</h3>")
        prov = _read_metrics(metrics_dir, b.provenance_file) if b.provenance_file else None
        out.append(_provenance(b, prov))
        mine = [r for r in results if r.claim.paper == paper.key and r.claim.backend == b.key]
        out.append(claims_html(mine) if mine else '<p class="missing">No claims registered for this backend.</p>')
        out.append(_notebooks_html(reports, b))
        out.append(_figures_html(reports, b, _engine(b, prov), on_page, pages))
    return "\n".join(out)


def _summary_html(results: Sequence[ClaimResult]) -> str:
    """Counts of verdict by kind of evidence over every claim: the page's first table."""
    esc = html.escape
    verdicts = [*VERDICTS, "not run"]
    kinds = [k.value for k in Kind]
    count = {(k, v): 0 for k in kinds for v in verdicts}
    for r in results:
        count[(r.claim.kind.value, r.verdict)] += 1
    used = [v for v in verdicts if any(count[(k, v)] for k in kinds)]
    head = "".join(f"<th>{esc(v)}</th>" for v in used)
    rows = "".join(f"<tr><td>{esc(k)}</td>" + "".join(f"<td>{count[(k, v)]}</td>" for v in used) + "</tr>"
                   for k in kinds if any(count[(k, v)] for v in used))
    return f'<table class="summary"><tr><th>kind of evidence \\ verdict</th>{head}</tr>{rows}</table>'


def _thumbs_note(reports: Path, pages: dict[str, str]) -> str:
    """How the figures are shown, with the number and total size of the thumbnails on the page."""
    sizes = [(reports / (p.removesuffix(".html") + ".webp")).stat().st_size for p in pages]
    return (f"<p>Figures are shown as committed thumbnails (<code>reports/{THUMBS}/</code>: {len(sizes)} WebP "
            f"files, {sum(sizes) / 1e3:.0f} kB in all; each at most {THUMB_MAX_BYTES / 1e3:.0f} kB, together at "
            f"most {THUMBS_MAX_BYTES / 1e6:g} MB). Click one for its page: it shows the full-size figure from "
            "<code>reports/figures</code> once <code>make reproduce</code> (or the study's <code>dvc repro "
            "&lt;stage&gt;</code>) has made it, and the thumbnail with that command until then.</p>")


def build_pages(reports_dir: str | os.PathLike = "reports", papers: Sequence[Paper] = PAPERS,
                claims: Sequence[Claim] | None = None) -> dict[str, str]:
    """The report's HTML files over ``reports_dir`` (figures/, metrics/, notebooks/, thumbs/):
    ``"index.html"`` and one page per figure with a thumbnail (``"thumbs/<study>/<name>.html"``),
    keyed by their path under ``reports_dir``. ``claims`` default to every registered claim
    (:func:`facebias.claims.registry.all_claims`)."""
    reports = Path(reports_dir)
    results = evaluate_all(all_claims() if claims is None else claims, reports / "metrics")
    pages: dict[str, str] = {}
    toc = " · ".join(f'<a href="#p{p.key}">{p.key}</a>' for p in papers)
    body = "\n".join(_paper_html(p, reports, results, pages) for p in papers)
    index = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>facebias: reproduced results</title><style>{_CSS}</style></head><body>"
             "<h1>facebias: the papers' claims beside our measurements</h1>"
             "<p>Every number below was measured by <code>dvc repro</code> on the backend named under "
             "each paper; simulated results are never the papers' numbers. Each claim quotes the paper, "
             "states the rule it is judged by (declared before looking), its verdict computed from "
             "<code>reports/metrics</code> and its kind of evidence: <b>by construction</b> (the world "
             "planted what is read back), <b>calibrated to the paper</b> (a named parameter was set to hit "
             "the paper's number; never a reproduction), <b>real test</b> (it could have failed, and how) or "
             "<b>measured on a learned generator</b> (no truth). Papers: " + toc + "</p>"
             + _thumbs_note(reports, pages) + _summary_html(results) + body + "</body></html>\n")
    return {"index.html": index, **pages}


def build_report(reports_dir: str | os.PathLike = "reports",
                 papers: Sequence[Paper] = PAPERS, claims: Sequence[Claim] | None = None) -> str:
    """The HTML of the report over ``reports_dir`` (figures/, metrics/, notebooks/, thumbs/);
    ``claims`` default to every registered claim (:func:`facebias.claims.registry.all_claims`).
    The figure pages it links to are :func:`build_pages`'s; :func:`write_report` writes both."""
    return build_pages(reports_dir, papers, claims)["index.html"]


def write_report_thumbnails(reports_dir: str | os.PathLike = "reports", papers: Sequence[Paper] = PAPERS,
                            **caps: int) -> ThumbnailSummary:
    """Write the thumbnails of every figure of ``papers`` under ``reports_dir/thumbs``
    (:func:`facebias.report_figures.write_thumbnails`; ``caps``: its ``max_bytes`` and
    ``total_max_bytes``)."""
    return write_thumbnails(reports_dir, figure_entries(papers), **caps)


def write_report(reports_dir: str | os.PathLike = "reports", out: str | os.PathLike | None = None) -> Path:
    """Write ``reports_dir/index.html`` (or ``out``) and the figure pages under
    ``reports_dir/thumbs`` (atomically; figure pages of figures no longer shown are deleted)
    and return the index's path. The thumbnails are :func:`write_report_thumbnails`'s."""
    reports = Path(reports_dir)
    pages = build_pages(reports)
    path = Path(out) if out is not None else reports / "index.html"
    write_text_atomic(path, pages.pop("index.html"))
    for rel, text in pages.items():
        target = reports / rel
        if not (target.is_file() and target.read_text() == text):
            write_text_atomic(target, text)
    prune(reports, pages, ".html")
    return path
