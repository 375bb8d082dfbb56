"""``reports/index.html``: one offline page with every paper's claims beside our measurements.

For each paper: its headline claims, the number we measured for each (read from
``reports/metrics/*.json``), the backend that produced it (the metrics' provenance), the
figures inline and a link to the executed notebook. The page is plain HTML with inline CSS:
no scripts, no CDN, so it renders offline. A study that has not run yet is shown as such;
nothing is invented.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facebias.io import write_text_atomic

__all__ = ["Claim", "Paper", "PAPERS", "build_report", "write_report", "lookup"]

Metrics = Mapping[str, Any]


def lookup(metrics: Metrics, path: str) -> Any:
    """``metrics["a"]["b"]...`` for ``path = "a/b/..."``; ``None`` when any key is missing."""
    node: Any = metrics
    for key in path.split("/"):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _num(x: Any, fmt: str = "{:.3f}") -> str:
    return "—" if x is None else fmt.format(x)


@dataclass(frozen=True)
class Claim:
    """A claim of the paper and how to read our measurement of it from a metrics file."""

    paper_says: str
    metrics_file: str  # under reports/metrics/
    measured: Callable[[Metrics], str]


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    notebook: str  # reports/notebooks/<notebook>.ipynb
    figures: Sequence[str]  # under reports/figures/ (files or directories of PNGs)
    claims: Sequence[Claim] = field(default_factory=tuple)
    provenance_file: str = ""  # the metrics file whose provenance/source names the backend


def _bfw_dev(m: Metrics) -> str:
    g = lookup(m, "systems/sim_a/max_abs_fmr_dev_pct/global/0.001")
    s = lookup(m, "systems/sim_a/max_abs_fmr_dev_pct/group/0.001")
    return f"sim_a at FAR 1e-3: max |FPR deviation| {_num(g, '{:.0f}')}% (global) vs {_num(s, '{:.0f}')}% (per subgroup)"


def _batest_gap(m: Metrics) -> str:
    e = lookup(m, "gap_rel_error_mean") or {}
    return ("gap error vs the planted truth: unbalanced "
            f"{_num(e.get('original'), '{:.0%}')}, balanced {_num(e.get('balanced'), '{:.0%}')}, "
            f"balanced without facial hair {_num(e.get('balanced_nfh'), '{:.0%}')}")


def _coef(m: Metrics, clf: str, kind: str, name: str) -> str:
    c = lookup(m, f"headline/{clf}/{kind}/{name}")
    if c is None:
        return "—"
    star = " (significant)" if c.get("significant") else " (CI covers 0)"
    return f"{c['coef']:+.2f} ± {c['sd']:.2f}{star}"


def _transects(m: Metrics) -> str:
    return (f"planted classifier: transects long hair {_coef(m, 'planted', 'experimental', 'hair_long')}, "
            f"dark skin {_coef(m, 'planted', 'experimental', 'skin_dark')}; observational (gender, skin "
            f"recorded) dark skin {_coef(m, 'planted', 'observational', 'skin_dark')}")


def _ortho(m: Metrics) -> str:
    r = lookup(m, "hair_transect_gender_range") or {}
    return (f"gender drift along a hair transect: {_num(r.get('raw'))} raw vs {_num(r.get('orthogonal'))} "
            f"orthogonalised; max |<n~_j, n_k>| {_num(lookup(m, 'orthogonality_max_error'), '{:.1e}')}")


def _hcic_order(m: Metrics) -> str:
    parts = []
    for s in ("sface", "dlib", "toy"):
        r = lookup(m, f"similarity_by_relation/{s}")
        if r:
            parts.append(f"{s} {r['same_prototype']:.2f} > {r['same_group']:.2f} > {r['different_group']:.2f}"
                         + ("" if r.get("ordered") else " (NOT ordered)"))
    return "median similarity, same prototype > same group > different group: " + ("; ".join(parts) or "—")


def _hcic_toy(m: Metrics) -> str:
    t = lookup(m, "fnmr_at_fmr_intended_labels/toy") or {}
    if not t:
        return "—"
    return "toy system, FNMR at FMR 1% (intended labels): " + ", ".join(
        f"{g} {v['fnmr']:.3f}" for g, v in sorted(t.items()))


def _rapid(m: Metrics) -> str:
    d = lookup(m, "delta_fnmr/0.01") or {}
    n = lookup(m, "delta_fnmr_naive/0.01") or {}
    return (f"label agreement {_num(lookup(m, 'label_agreement'))}; max |estimated − true| FNMR@FMR 1e-2 "
            f"{_num(max(d.values()) if d else None)} (naive labels {_num(min(n.values()) if n else None)}–"
            f"{_num(max(n.values()) if n else None)}); ranking Kendall τ {_num(lookup(m, 'kendall_tau_fnmr'), '{:.2f}')}")


PAPERS: tuple[Paper, ...] = (
    Paper("002", "Robinson et al., Face recognition: too bias, or not too bias? (BFW)", "bfw_thresholds",
          ["bfw_det.png", "bfw_fpr_deviation.png", "bfw_tar_at_far.png"],
          [Claim("One global threshold leaves subgroups' FPR far from the intended FAR; "
                 "subgroup-specific thresholds bring them to it.", "bfw.json", _bfw_dev)],
          "bfw_details.json"),
    Paper("003", "Wu & Bowyer, BA-test: balanced evaluation of the gender gap", "ba_test",
          ["batest_factors.png", "batest_gender_gap.png", "batest_tpr.png"],
          [Claim("Balancing image factors (and excluding facial hair) shrinks the gender gap.",
                 "batest.json", _batest_gap)],
          "batest_details.json"),
    Paper("004", "Balakrishnan et al., Towards causal benchmarking of bias in face analysis (transects)",
          "transects",
          ["synthetic_orthogonalisation.png", "synthetic_transects_2x2x2.png",
           "transects_group_errors.png", "transects_observational_vs_experimental.png",
           "transects_coefficients.png", "transects_age_gender.png"],
          [Claim("Without orthogonalisation a hair transect also changes gender; with it, it does not.",
                 "synthetic.json", _ortho),
           Claim("Observational data blame skin colour; transects show hair length, gender and other "
                 "attributes cause the errors and skin colour does not.", "transects.json", _transects)],
          "transects.json"),
    Paper("000", "Liang et al., Benchmarking algorithmic bias in face recognition with synthetic faces "
          "and human identity confidence (HCIC)", "hcic",
          ["synthetic_prototypes.png", "hcic_similarity", "hcic_det", "hcic_fnmr_by_group.png",
           "hcic_annotator_consistency.png"],
          [Claim("Similarity: same prototype > same group, different seed > different group.",
                 "hcic.json", _hcic_order),
           Claim("Error rates differ by demographic group (planted here in the toy system: BF, AM).",
                 "hcic.json", _hcic_toy)],
          "hcic.json"),
    Paper("001", "Knott et al., A rapid test for accuracy and bias of face recognition technology",
          "rapid_test",
          ["rapid_curves.png", "rapid_eer_groups.png", "rapid_voting.png", "rapid_p_sweep.png"],
          [Claim("Labels estimated from the systems' own scores give FNMR/FMR curves close to those "
                 "from human labels, far closer than the noisy query labels.", "rapid.json", _rapid)],
          "rapid.json"),
)

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h2{border-bottom:2px solid #ddd;padding-top:1em}table{border-collapse:collapse;width:100%;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}th{background:#f4f4f4}
.prov{color:#555;font-size:.9em}.missing{color:#a00}figure{display:inline-block;margin:.5em;max-width:48%}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.8em;color:#555}"""


def _read_metrics(metrics_dir: Path, name: str) -> dict | None:
    path = metrics_dir / name
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None


def _figure_files(fig_dir: Path, name: str) -> list[Path]:
    path = fig_dir / name
    if path.is_dir():
        return sorted(path.glob("*.png"))
    return [path] if path.is_file() else []


def _paper_html(paper: Paper, reports: Path) -> str:
    metrics_dir, fig_dir = reports / "metrics", reports / "figures"
    esc = html.escape
    out = [f'<h2 id="p{paper.key}">Paper {paper.key}: {esc(paper.title)}</h2>']
    prov = _read_metrics(metrics_dir, paper.provenance_file) if paper.provenance_file else None
    if prov is None:
        out.append(f'<p class="missing">Not run yet: reports/metrics/{esc(paper.provenance_file)} is missing '
                   "(run <code>make reproduce</code>).</p>")
    else:
        backend = str(prov.get("provenance") or prov.get("source") or "not recorded")
        backend = backend.removeprefix("backend: ")
        out.append(f'<p class="prov">Backend: {esc(str(backend))}</p>')
    rows = []
    for claim in paper.claims:
        m = _read_metrics(metrics_dir, claim.metrics_file)
        measured = ('<span class="missing">not run</span>' if m is None else esc(claim.measured(m)))
        rows.append(f"<tr><td>{esc(claim.paper_says)}</td><td>{measured}</td>"
                    f"<td>reports/metrics/{esc(claim.metrics_file)}</td></tr>")
    out.append("<table><tr><th>The paper says</th><th>We measured</th><th>From</th></tr>"
               + "".join(rows) + "</table>")
    nb = reports / "notebooks" / f"{paper.notebook}.ipynb"
    if nb.is_file():
        out.append(f'<p>Executed notebook: <a href="notebooks/{esc(nb.name)}">{esc(nb.name)}</a> '
                   f"(source: notebooks/{esc(paper.notebook)}.py)</p>")
    figs = [f for name in paper.figures for f in _figure_files(fig_dir, name)]
    for f in figs:
        rel = f.relative_to(reports).as_posix()
        out.append(f'<figure><img src="{esc(rel)}" alt="{esc(f.stem)}"><figcaption>{esc(rel)}</figcaption></figure>')
    missing = [n for n in paper.figures if not _figure_files(fig_dir, n)]
    if missing:
        out.append(f'<p class="missing">Figures not generated yet: {esc(", ".join(missing))}</p>')
    return "\n".join(out)


def build_report(reports_dir: str | os.PathLike = "reports",
                 papers: Sequence[Paper] = PAPERS) -> str:
    """The HTML of the report over ``reports_dir`` (figures/, metrics/, notebooks/)."""
    reports = Path(reports_dir)
    toc = " · ".join(f'<a href="#p{p.key}">{p.key}</a>' for p in papers)
    body = "\n".join(_paper_html(p, reports) for p in papers)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>facebias: reproduced results</title><style>{_CSS}</style></head><body>"
            "<h1>facebias: the papers' claims beside our measurements</h1>"
            "<p>Every number below was measured by <code>dvc repro</code> on the backend named under "
            "each paper; simulated results are never the papers' numbers. Papers: " + toc + "</p>"
            + body + "</body></html>\n")


def write_report(reports_dir: str | os.PathLike = "reports", out: str | os.PathLike | None = None) -> Path:
    """Write ``reports_dir/index.html`` (atomically) and return its path."""
    path = Path(out) if out is not None else Path(reports_dir) / "index.html"
    write_text_atomic(path, build_report(reports_dir))
    return path
