"""``reports/index.html``: one offline page with every paper's claims beside our measurements.

For each paper and backend: its claims from the registry (:mod:`facebias.claims`), each with
the paper's words, our cells read from ``reports/metrics/*.json`` (mean and range over world
seeds where there are several), the computed verdict and the kind of evidence; the backend
that produced them (the metrics' provenance), the figures inline and a link to the executed
notebook. The page is plain HTML with inline CSS:
no scripts, no CDN, so it renders offline. A study that has not run yet is shown as such;
nothing is invented.
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
from facebias.schema import read_metrics

__all__ = ["Backend", "Paper", "PAPERS", "build_report", "write_report"]


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


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    notebook: str  # reports/notebooks/<notebook>.ipynb
    figures: Sequence[str]  # under reports/figures/: <study>/<file or folder of PNGs>
    provenance_file: str = ""  # the metrics file whose provenance/source names the backend
    more_backends: Sequence[Backend] = field(default_factory=tuple)  # shown one after another
    label: str = ""  # the first backend's title when there are more

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The paper's first backend (its own notebook / figures / provenance) and the others."""
        first = Backend("main", self.label, self.notebook, self.figures, self.provenance_file)
        return (first, *self.more_backends)


PAPERS: tuple[Paper, ...] = (
    Paper("002", "Robinson et al., Face recognition: too bias, or not too bias? (BFW)", "bfw",
          ["bfw/bfw_det.png", "bfw/bfw_det_folds.png", "bfw/bfw_fpr_deviation.png", "bfw/bfw_seeds.png", "bfw/bfw_tar_at_far.png",
           "bfw/bfw_rank1_confusion.png"],
          "bfw_details.json"),
    Paper("003", "Wu & Bowyer, BA-test: balanced evaluation of the gender gap", "batest",
          ["batest/batest_gender_gap.png", "batest/batest_table1_seeds.png", "batest/batest_face_area_masks.png",
           "batest/batest_fmr_at_reference.png", "batest/batest_tpr.png", "batest/batest_identity_count.png", "batest/batest_factors.png"],
          "batest_details.json"),
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
                                 more_notebooks=(("synthetic_faces_dcgan", "synthetic_faces_dcgan"),)),),
          label="procedural renderer (known truth; simulated panel)"),
    Paper("000", "Liang et al., Benchmarking algorithmic bias in face recognition with synthetic faces "
          "and human identity confidence (HCIC)", "hcic",
          ["synthetic_faces/synthetic_faces_prototypes.png", "hcic/hcic_similarity", "hcic/hcic_det", "hcic/hcic_fnmr_by_group.png",
           "hcic/hcic_annotator_consistency.png"],
          "hcic_details.json",
          more_backends=(Backend("dcgan", "DCGAN (groups along a learned 'skin tone' direction, not validated as skin, × gender; "
                                 "intended labels)", "hcic_dcgan",
                                 ["synthetic_faces_dcgan/synthetic_faces_dcgan_prototypes.png", "hcic_dcgan/hcic_dcgan_similarity", "hcic_dcgan/hcic_dcgan_det",
                                  "hcic_dcgan/hcic_dcgan_fnmr_by_group.png", "hcic_dcgan/hcic_dcgan_fnmr_by_attribute.png"],
                                 "hcic_dcgan_details.json", source="hcic"),),
          label="procedural renderer (known truth; simulated panel)"),
    Paper("001", "Knott et al., A rapid test for accuracy and bias of face recognition technology",
          "rapid",
          ["rapid/rapid_curves.png", "rapid/rapid_seeds.png", "rapid/rapid_bias.png", "rapid/rapid_voting.png", "rapid/rapid_p_sweep.png"],
          "rapid_details.json"),
)

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h2{border-bottom:2px solid #ddd;padding-top:1em}table{border-collapse:collapse;width:100%;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}th{background:#f4f4f4}
.prov{color:#555;font-size:.9em}.missing{color:#a00}figure{display:inline-block;margin:.5em;max-width:48%}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.8em;color:#555}
.side{display:flex;gap:1em;align-items:flex-start}.side .col{flex:1;min-width:0}
.side figure{max-width:100%;display:block}table.cells{font-size:.85em;margin:.3em 0}table.cells td{padding:.15em .4em}
.agree{background:#e6f4e6}.partly{background:#fff6d5}.disagree{background:#fbe3e3}.nc,.unres{background:#eee}
table.summary{width:auto}q{font-style:italic}"""


def _read_metrics(metrics_dir: Path, name: str) -> dict | None:
    """The metrics file, checked against its schema; None when it does not exist (the study
    has not run)."""
    path = metrics_dir / name
    if not path.is_file():
        return None
    return read_metrics(path)[0]


def _figure_files(fig_dir: Path, name: str) -> list[Path]:
    path = fig_dir / name
    if path.is_dir():
        return sorted(path.glob("*.png"))
    return [path] if path.is_file() else []


def _provenance(metrics_dir: Path, backend: Backend) -> str:
    esc = html.escape
    prov = _read_metrics(metrics_dir, backend.provenance_file) if backend.provenance_file else None
    if prov is None:
        return (f'<p class="missing">Not run yet: reports/metrics/{esc(backend.provenance_file)} is missing '
                "(run <code>make reproduce</code>).</p>")
    m = prov
    text = str(m.get("provenance") or m.get("source") or "not recorded").removeprefix("backend: ")
    return f'<p class="prov">Backend: {esc(text)}</p>'


def _backend_body(reports: Path, backend: Backend) -> str:
    esc = html.escape
    fig_dir = reports / "figures"
    out = []
    for name, source in ((backend.notebook, backend.source or backend.notebook), *backend.more_notebooks):
        nb = reports / "notebooks" / f"{name}.ipynb"
        if nb.is_file():
            out.append(f'<p>Executed notebook: <a href="notebooks/{esc(nb.name)}">{esc(nb.name)}</a> '
                       f"(source: notebooks/{esc(source)}.py)</p>")
    for f in (f for name in backend.figures for f in _figure_files(fig_dir, name)):
        rel = f.relative_to(reports).as_posix()
        out.append(f'<figure><img src="{esc(rel)}" alt="{esc(f.stem)}"><figcaption>{esc(rel)}</figcaption></figure>')
    missing = [n for n in backend.figures if not _figure_files(fig_dir, n)]
    if missing:
        out.append(f'<p class="missing">Figures not generated yet: {esc(", ".join(missing))}</p>')
    return "\n".join(out)


def _paper_html(paper: Paper, reports: Path, results: Sequence[ClaimResult]) -> str:
    """One paper: per backend, its provenance, its claims (quote, our cells, computed verdict,
    kind of evidence), then its notebooks and figures."""
    metrics_dir = reports / "metrics"
    esc = html.escape
    out = [f'<h2 id="p{paper.key}">Paper {paper.key}: {esc(paper.title)}</h2>']
    for b in paper.backends:
        if len(paper.backends) > 1:
            out.append(f"<h3>{esc(b.label or b.key)}</h3>")
        out.append(_provenance(metrics_dir, b))
        mine = [r for r in results if r.claim.paper == paper.key and r.claim.backend == b.key]
        out.append(claims_html(mine) if mine else '<p class="missing">No claims registered for this backend.</p>')
        out.append(_backend_body(reports, b))
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


def build_report(reports_dir: str | os.PathLike = "reports",
                 papers: Sequence[Paper] = PAPERS, claims: Sequence[Claim] | None = None) -> str:
    """The HTML of the report over ``reports_dir`` (figures/, metrics/, notebooks/); ``claims``
    default to every registered claim (:func:`facebias.claims.registry.all_claims`)."""
    reports = Path(reports_dir)
    results = evaluate_all(all_claims() if claims is None else claims, reports / "metrics")
    toc = " · ".join(f'<a href="#p{p.key}">{p.key}</a>' for p in papers)
    body = "\n".join(_paper_html(p, reports, results) for p in papers)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>facebias: reproduced results</title><style>{_CSS}</style></head><body>"
            "<h1>facebias: the papers' claims beside our measurements</h1>"
            "<p>Every number below was measured by <code>dvc repro</code> on the backend named under "
            "each paper; simulated results are never the papers' numbers. Each claim quotes the paper, "
            "states the rule it is judged by (declared before looking), its verdict computed from "
            "<code>reports/metrics</code> and its kind of evidence: <b>by construction</b> (the world "
            "planted what is read back), <b>calibrated to the paper</b> (a named parameter was set to hit "
            "the paper's number; never a reproduction), <b>real test</b> (it could have failed, and how) or "
            "<b>measured on a learned generator</b> (no truth). Papers: " + toc + "</p>"
            + _summary_html(results) + body + "</body></html>\n")


def write_report(reports_dir: str | os.PathLike = "reports", out: str | os.PathLike | None = None) -> Path:
    """Write ``reports_dir/index.html`` (atomically) and return its path."""
    path = Path(out) if out is not None else Path(reports_dir) / "index.html"
    write_text_atomic(path, build_report(reports_dir))
    return path
