"""reports/index.html: every paper, claims beside measurements, offline, honest about gaps; its
figures as committed thumbnails with captions, and pages that work in a fresh clone (the
Chromium checks are tests/test_report_browser.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from metrics_fixtures import valid
from report_fixtures import (
    MEMBERS,
    dead_references,
    fresh_clone_copy,
    make_figures,
    make_notebook_sources,
    png_bytes,
)

from facebias.claims import Between, Claim, Kind, Measured, Order, Sign
from facebias.cli import main
from facebias.report import (
    PAPERS,
    build_report,
    figure_entries,
    write_report_thumbnails,
)
from facebias.report_captions import CAPTIONS
from facebias.report_figures import THUMB_QUALITY, THUMB_WIDTH, make_thumbnail, write_thumbnails
from facebias.schema import SCHEMAS, MetricsSchemaError, kind_of

ROOT = Path(__file__).resolve().parents[1]


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def _reports(tmp_path, with_rapid=True):
    r = tmp_path / "reports"
    (r / "metrics").mkdir(parents=True)
    (r / "figures" / "hcic" / "hcic_det").mkdir(parents=True)
    (r / "notebooks").mkdir()
    metrics = {
        "bfw_details.json": {"provenance": "backend: synthetic world (facebias.world, seed 2026)",
                             "rank1_diagonal": {"sim_a": {"AF": 0.85, "WM": 0.55}},
                             "overview": {"source": "synthetic", "systems": {"sim_a": {"max_abs_fmr_dev_pct": {
                                 "global": {"0.01": 20.0, "0.001": 79.4}, "group": {"0.01": 1.0, "0.001": 7.65}}}}}},
        "batest_details.json": {
            "provenance": "backend: synthetic BA-test world (facebias.world, seed 3003)", "tpr_fmr": 1e-5,
            "table1_pct": [{"kind": "genuine", "condition": c, "race": race, "rom_pct": v}
                           for c, vals in (("balanced", (-17.0, -41.0)), ("balanced_nfh", (11.0, 93.0)))
                           for race, v in zip(("Asian", "Black"), vals, strict=True)],
            "tpr_at_fmr": [{"set": "challenging", "group": g, "tpr": t}
                           for g, t in (("AF", 0.84), ("AM", 0.9), ("BF", 0.76), ("BM", 0.81))],
            "overview": {"source": "synthetic", "gap_rel_error_mean": {
                "original": 0.78, "balanced": 0.43, "balanced_nfh": 0.065}}},
        "synthetic_faces_details.json": {"overview": {
            "source": "synthetic (procedural generator)", "orthogonality_max_error": 1e-15,
            "acceptance": {"gender_spearman_transect_pooled": 0.93, "detect_rate": 1.0},
            "hair_transect_gender_range": {"raw": 0.46, "orthogonal": 0.009}}},
        "transects_details.json": {"provenance": "procedural generator · simulated annotators (40)", "headline": {
            "planted": {"experimental": {"hair_long": {"coef": -0.93, "sd": 0.12, "significant": True},
                                         "skin_dark": {"coef": 0.03, "sd": 0.11, "significant": False}},
                        "observational": {"skin_dark": {"coef": 0.31, "sd": 0.15, "significant": True}}}},
                           "planted_recovered": {"planted": {"experimental_skin_ci_covers_0": True}}},
        "hcic_details.json": {"provenance": "procedural generator; SFace, dlib; simulated panel", "fmr_target": 0.01,
                      "similarity_by_relation": {"sface": {"same_prototype": 0.97, "same_group": 0.47,
                                                           "different_group": 0.36, "ordered": True}},
                      "fnmr_at_fmr_intended_labels": {"toy": {"WM": {"fnmr": 0.02}, "BF": {"fnmr": 0.11}}}},
    }
    if with_rapid:
        metrics["rapid_details.json"] = {"provenance": "simulated world", "label_agreement": 0.996,
                                 "delta_fnmr": {"0.001": {"a": 0.5, "b": 0.5}, "0.01": {"a": 0.008, "b": 0.002}},
                                 "delta_fnmr_naive": {"0.001": {"a": 0.9, "b": 0.9}, "0.01": {"a": 0.35, "b": 0.47}},
                                 "kendall_tau_fnmr": 1.0}
    for name, m in metrics.items():
        (r / "metrics" / name).write_text(json.dumps(valid(name, m)))
    for p in PAPERS:
        for f in p.figures:
            if f.endswith(".png"):
                (r / "figures" / f).parent.mkdir(parents=True, exist_ok=True)
                (r / "figures" / f).write_bytes(png_bytes(1.6, 1.1))
    (r / "figures" / "hcic" / "hcic_det" / "t30.png").write_bytes(png_bytes(1.6, 1.1))
    (r / "notebooks" / "hcic.ipynb").write_text("{}")
    return r


def _demo_claims():
    """Claims on the fixture's files, one per paper and backend, covering the verdicts."""
    def one(key, paper, cells, rule, files, backend="main", kind=Kind.REAL_TEST, **kw):
        return Claim(key, paper, f"quote of {key}", "Fig. 1", f"statistic of {key}", files,
                     lambda m: Measured.one(cells(m)), rule, kind, f"evidence of {key}", backend=backend, **kw)
    return (
        one("d.bfw", "002", lambda m: {"AF": m("bfw_details.json", "rank1_diagonal")["sim_a"]["AF"]}, Between(lo=0.75),
            ("bfw_details.json",), kind=Kind.CALIBRATED, calibrated=("bfw_world.systems.sim_a.group_similarity",)),
        one("d.batest", "003", lambda m: {"orig": m("batest_details.json", "overview/gap_rel_error_mean/original")},
            Between(hi=0.1), ("batest_details.json",)),
        one("d.transects", "004", lambda m: {"raw": m("synthetic_faces_details.json",
                                                      "overview/hair_transect_gender_range/raw")},
            Sign(+1), ("synthetic_faces_details.json",)),
        one("d.transects.dcgan", "004", lambda m: {"x": m("synthetic_faces_dcgan_details.json", "orthogonality_max_error")},
            Sign(+1), ("synthetic_faces_dcgan_details.json",), backend="dcgan", kind=Kind.LEARNED),
        one("d.hcic", "000", lambda m: {k: m("hcic_details.json", f"similarity_by_relation/sface/{k}")
                                        for k in ("same_prototype", "same_group", "different_group")},
            Order(("same_prototype", "same_group", "different_group")), ("hcic_details.json",)),
        one("d.hcic.dcgan", "000", lambda m: {"x": 1.0}, Sign(+1), ("hcic_dcgan_details.json",), backend="dcgan"),
        one("d.rapid", "001", lambda m: {"a": m("rapid_details.json", "delta_fnmr")["0.01"]["a"]}, Between(hi=0.01),
            ("rapid_details.json",)),
    )


def test_every_paper_with_its_claims_verdicts_kinds_and_backend(tmp_path):
    page = build_report(_reports(tmp_path), claims=_demo_claims())
    for key in ("002", "003", "004", "000", "001"):
        assert f'id="p{key}"' in page
    p002 = page.split('id="p002"')[1].split('id="p003"')[0]
    # the claim's quote, our cell, the rule, the computed verdict and the kind with its parameter
    assert "quote of d.bfw" in p002 and "every cell &gt;= 0.75" in p002
    assert "<b>agrees</b><br>1 of 1 cells" in p002  # AF 0.85 >= 0.75
    assert "bfw_world.systems.sim_a.group_similarity" in p002 and "calibrated to the paper" in p002
    p003 = page.split('id="p003"')[1].split('id="p004"')[0]
    assert "<b>disagrees</b>" in p003 and "0.78" in p003
    p000 = page.split('id="p000"')[1].split('id="p001"')[0]
    assert "same_prototype &gt; same_group &gt; different_group" in p000 and "<b>agrees</b><br>1 of 1 checks" in p000
    assert "Not run yet: reports/metrics/hcic_dcgan_details.json is missing" in p000
    assert "<b>not run</b>" in p000  # the DCGAN claim of a study that has not run
    assert "Backend: simulated world" in page and "simulated annotators (40)" in page
    assert "Backend: backend: synthetic world (facebias.world, seed 2026)" not in page
    assert "Backend: synthetic world (facebias.world, seed 2026)" in page
    # the executed notebook (a DVC output) is named with the command that writes it, never linked
    assert "<code>reports/notebooks/hcic.ipynb</code>, written by <code>dvc repro hcic</code>" in page
    assert 'href="notebooks/' not in page
    # directory outputs are expanded; without thumbnails a figure is a notice, never a broken image
    assert 'id="fig-hcic-hcic_det-t30"' in page and "<img" not in page
    assert "No thumbnail yet of reports/figures/hcic/hcic_det/t30.png" in page
    # the summary counts every claim once, by kind and verdict
    summary = page.split('<table class="summary">')[1].split("</table>")[0]
    assert summary.count("<tr>") == 1 + 3  # header + real test, calibrated, learned
    assert "bfw_details.json:rank1_diagonal" in p002  # the path it read


def test_the_registered_claims_render_on_the_committed_metrics():
    """Every registered claim evaluates on the committed reports/metrics with a computed
    verdict (none 'not run': the committed files are complete), a kind and its evidence."""
    from facebias.claims import VERDICTS, evaluate_all
    from facebias.claims.registry import all_claims

    claims = all_claims()
    results = evaluate_all(claims, ROOT / "reports" / "metrics")
    assert {r.verdict for r in results} <= set(VERDICTS), [(r.claim.key, r.verdict, r.detail) for r in results
                                                          if r.verdict not in VERDICTS]
    assert {c.paper for c in claims} == {"002", "003", "004", "000", "001"}
    page = build_report(ROOT / "reports")
    for c in claims:
        assert f'id="{c.key}"' in page


def test_offline_and_every_image_exists(tmp_path):
    reports = _reports(tmp_path)
    write_report_thumbnails(reports)
    page = build_report(reports, claims=_demo_claims())
    assert "<script" not in page.lower() and "http" not in page
    srcs = re.findall(r'src="([^"]+)"', page)
    made = sorted((reports / "figures").rglob("*.png"))
    assert len(made) > 20 and len(srcs) == len(made)  # every figure, hcic_det/t30.png of a folder entry too
    for src in srcs:
        assert src.startswith("thumbs/") and (reports / src).is_file(), src


def test_a_study_not_run_is_shown_as_such(tmp_path):
    page = build_report(_reports(tmp_path, with_rapid=False), claims=_demo_claims())
    rapid = page.split('id="p001"')[1]
    assert "Not run yet: reports/metrics/rapid_details.json is missing" in rapid
    assert "<b>not run</b><br>reports/metrics/rapid_details.json missing" in rapid


@pytest.fixture
def demo_registry(monkeypatch):
    monkeypatch.setattr("facebias.report.all_claims", _demo_claims)


def test_cli_and_a_broken_or_incomplete_metrics_file(tmp_path, capsys, demo_registry):
    reports = _reports(tmp_path)
    assert main(["report", "--reports", str(reports)]) == 0
    assert (reports / "index.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
    (reports / "metrics" / "bfw_details.json").write_text("{broken")
    assert main(["report", "--reports", str(reports)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bfw_details.json: not valid JSON" in err
    # a metrics file without a key its schema requires is an error, not a blank cell
    m = json.loads((reports / "metrics" / "batest_details.json").read_text())
    del m["overview"]["gap_rel_error_mean"]["balanced_nfh"]
    (reports / "metrics" / "batest_details.json").write_text(json.dumps(m))
    (reports / "metrics" / "bfw_details.json").unlink()
    assert main(["report", "--reports", str(reports)]) == 2
    assert "missing ['overview/gap_rel_error_mean/balanced_nfh']" in capsys.readouterr().err


def test_schema_rejects_missing_and_unknown_keys_and_undeclared_reads():
    schema = SCHEMAS["batest_details"]
    good = valid("batest_details.json", {"overview": {
        "gap_rel_error_mean": {"original": 0.7, "balanced": 0.4, "balanced_nfh": 0.1}}})
    assert schema.get(good, "overview/gap_rel_error_mean/balanced") == 0.4
    with pytest.raises(MetricsSchemaError, match=r"unknown \['smoke'\]"):
        schema.check({**good, "smoke": False})
    with pytest.raises(MetricsSchemaError, match="missing.*identity_count"):
        schema.check({k: v for k, v in good.items() if k != "identity_count"})
    with pytest.raises(KeyError, match="does not declare"):
        schema.get(good, "overview/gap_genuine/x/y")
    with pytest.raises(MetricsSchemaError, match=r"rank1_diagonal/\*"):
        SCHEMAS["bfw_details"].check(valid("bfw_details.json", {"overview": {"systems": {"a": {}}}}) | {
            "rank1_diagonal": {}})  # a wildcard needs at least one child
    assert kind_of("bfw_real_v015_details.json") == "bfw_details" and kind_of("hcic_dcgan_details.json") == "hcic_details"
    assert kind_of("hcic_dcgan.json") == kind_of("bfw.json") == "headline"
    with pytest.raises(MetricsSchemaError, match="no metrics schema"):
        kind_of("other.json")


def test_a_binary_metrics_file_is_one_line_naming_it(tmp_path, capsys, demo_registry):
    reports = _reports(tmp_path)
    (reports / "metrics" / "hcic_details.json").write_bytes(PNG)
    assert main(["report", "--reports", str(reports)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hcic_details.json: not UTF-8 JSON text (byte 0x89 at offset 0)" in err, err


# --------------------------------------------------------------------------- figures: captions
def test_every_figure_has_a_caption_naming_claims_of_its_own_backend():
    """Each figure entry of the page has a caption, no caption is left over, and every claim a
    caption names is registered for the paper and backend the figure is shown under."""
    from facebias.claims.registry import all_claims

    claims = {c.key: c for c in all_claims()}
    assert set(CAPTIONS) == set(figure_entries())
    for paper in PAPERS:
        for b in paper.backends:
            for entry in b.figures:
                cap = CAPTIONS[entry]
                assert cap.title.strip() and cap.shows.strip(), entry
                named = [*cap.claims, *(k for ks in cap.member_claims.values() for k in ks)]
                for key in named:
                    assert key in claims, (entry, key)
                    assert (claims[key].paper, claims[key].backend) == (paper.key, b.key), (entry, key)
                assert not cap.member_claims or not entry.endswith(".png"), entry
    # the figures name most claims: a claim no figure shows is the exception (numbers only)
    shown = {k for c in CAPTIONS.values() for k in (*c.claims, *(k for ks in c.member_claims.values() for k in ks))}
    assert len(shown) >= len(claims) // 2


def test_captions_and_backends_hold_no_result_numbers():
    """Captions say what is drawn, never what was measured: every decimal, percentage or ratio
    in them is a parameter, a paper's number or an allowed constant (the README's checker)."""
    from test_no_handtyped_results import Sources, check_lines, paper_values, params_values

    lines = [t for c in CAPTIONS.values() for t in (c.title, c.shows, c.member, *c.members.values())]
    lines += [b.engine for p in PAPERS for b in p.backends]
    hits = check_lines("report_captions", enumerate(lines, 1),
                       Sources(frozenset(params_values()), frozenset(paper_values())))
    assert hits == [], "\n".join(map(str, hits))
    # and the checker does flag a measured number written into a caption
    assert check_lines("x", [(1, "the FNMR of AF is 0.0731 at FMR 1e-3")],
                       Sources(frozenset(params_values()), frozenset(paper_values())))


def test_a_caption_names_its_backend_and_links_its_claims(tmp_path):
    reports = _reports(tmp_path)
    (reports / "metrics" / "hcic_dcgan_details.json").write_text(json.dumps(valid(
        "hcic_dcgan_details.json", {"backend": "stylegan2", "provenance": "stylegan2 generator"})))
    write_report_thumbnails(reports)
    rank1 = Claim("bfw.rank1_within_subgroup", "002", "q", "Fig. 5", "s", ("bfw_details.json",),
                  lambda m: Measured.one({"AF": m("bfw_details.json", "rank1_diagonal")["sim_a"]["AF"]}),
                  Between(lo=0.75), Kind.REAL_TEST, "e")
    for claims, linked in ((_demo_claims(), False), ((*_demo_claims(), rank1), True)):
        page = build_report(reports, claims=claims)
        fig = page.split('id="fig-bfw-bfw_rank1_confusion"')[1].split("</figure>")[0]
        assert "Rank-1 confusion (Fig. 5)" in fig and "Backend: embedded known-truth world" in fig
        # a claim on the page is linked to its row; one that is not is only named
        assert ('<a href="#bfw.rank1_within_subgroup">bfw.rank1_within_subgroup</a>' in fig) is linked
        assert ("<code>bfw.rank1_within_subgroup</code>" in fig) is not linked
        assert ('id="bfw.rank1_within_subgroup"' in page) is linked
    # a figure without a claim says so; a learned generator is named as its metrics record it
    fig = page.split('id="fig-batest-batest_factors"')[1].split("</figure>")[0]
    assert "Context: no registered claim rests on this figure alone." in fig
    dcgan = page.split('id="fig-hcic_dcgan-hcic_dcgan_fnmr_by_group"')[1].split("</figure>")[0]
    assert "Figure not generated yet: reports/figures/hcic_dcgan/hcic_dcgan_fnmr_by_group.png" in dcgan
    assert "<code>dvc repro hcic_dcgan</code>" in dcgan and "Backend: StyleGAN2 renders (learned generator" in dcgan


# --------------------------------------------------------------------------- figures: thumbnails
def _noise_png(path: Path, w: int, h: int, seed: int = 0) -> Path:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    return path


def test_thumbnails_are_capped_each_and_together_and_deterministic(tmp_path):
    from PIL import Image

    r = tmp_path / "reports"
    noisy = _noise_png(r / "figures" / "s" / "s_noise.png", 500, 300)  # incompressible
    (r / "figures" / "s" / "s_plot.png").write_bytes(png_bytes(8.5, 5.3))  # 850 x 530
    (r / "figures" / "s" / "s_wide.png").write_bytes(png_bytes(9.0, 3.6))  # 900 x 360: wide, keeps its width
    entries = ["s/s_noise.png", "s/s_plot.png", "s/s_wide.png"]
    first = write_thumbnails(r, entries, max_bytes=20_000)
    sizes = {t: (r / t).stat().st_size for t in first.made}
    assert max(sizes.values()) <= 20_000 and first.total_bytes == sum(sizes.values())
    with Image.open(r / "thumbs/s/s_noise.webp") as im:  # shrunk below the width cap to fit
        assert im.format == "WEBP" and im.width < 500 and abs(im.width / im.height - 500 / 300) < 0.02
    with Image.open(r / "thumbs/s/s_plot.webp") as im:
        assert im.size == (THUMB_WIDTH, round(530 * THUMB_WIDTH / 850))
    with Image.open(r / "thumbs/s/s_wide.webp") as im:
        assert im.size == (900, 360)
    blobs = {t: (r / t).read_bytes() for t in first.made}
    write_thumbnails(r, entries, max_bytes=20_000)
    assert {t: (r / t).read_bytes() for t in first.made} == blobs  # same figures, same bytes
    # a total cap below the first pass: quality, then width, step down until the set fits
    plots = entries[1:]
    cap = sum(sizes[f"thumbs/{e.removesuffix('.png')}.webp"] for e in plots) * 2 // 3
    small = write_thumbnails(r, plots, total_max_bytes=cap)
    assert small.total_bytes <= cap and (small.quality < THUMB_QUALITY or small.scale < 1)
    with pytest.raises(ValueError, match="2 thumbnails do not fit total_max_bytes=100 even at .*; raise it"):
        write_thumbnails(r, plots, total_max_bytes=100)
    # a figure that is not an image: one line naming it
    noisy.write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"s_noise.png: not a readable image"):
        make_thumbnail(noisy)


def test_cli_a_figure_that_is_not_an_image_is_one_line_naming_it(tmp_path, capsys, demo_registry):
    reports = _reports(tmp_path)
    (reports / "figures" / "bfw" / "bfw_det.png").write_text("not a png")
    assert main(["report", "--reports", str(reports)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"facebias: error: {reports}/figures/bfw/bfw_det.png: "
                                                   "not a readable image"), err


def test_thumbnails_kept_without_their_figure_and_pruned_without_their_entry(tmp_path):
    r = tmp_path / "reports"
    (r / "figures" / "s" / "s_a.png").parent.mkdir(parents=True)
    (r / "figures" / "s" / "s_a.png").write_bytes(png_bytes(1.6, 1.1))
    for m in MEMBERS:
        (r / "figures" / "s" / "s_dir").mkdir(exist_ok=True)
        (r / "figures" / "s" / "s_dir" / f"{m}.png").write_bytes(png_bytes(1.6, 1.1))
    made = write_thumbnails(r, ["s/s_a.png", "s/s_dir", "s/s_none.png"])
    assert sorted(made.made) == ["thumbs/s/s_a.webp", *(f"thumbs/s/s_dir/{m}.webp" for m in MEMBERS)]
    assert made.missing == ["s/s_none.png"] and made.kept == []
    # a fresh clone: no figures; the committed thumbnails stay (a folder entry read from them)
    import shutil

    shutil.rmtree(r / "figures")
    again = write_thumbnails(r, ["s/s_a.png", "s/s_dir"])
    assert again.made == [] and sorted(again.kept) == sorted(made.made) and again.total_bytes == made.total_bytes
    # an entry no longer shown, or a folder member no longer made: its thumbnail goes
    (r / "figures" / "s" / "s_dir").mkdir(parents=True)
    (r / "figures" / "s" / "s_dir" / "intended.png").write_bytes(png_bytes(1.6, 1.1))
    write_thumbnails(r, ["s/s_dir"])
    assert sorted(p.relative_to(r).as_posix() for p in (r / "thumbs").rglob("*")) == [
        "thumbs/s", "thumbs/s/s_dir", "thumbs/s/s_dir/intended.webp"]


# --------------------------------------------------------------------------- figures: the fresh clone
def _repo(tmp_path: Path) -> Path:
    """A repository made by `facebias report` with every figure present (the pipeline's state)."""
    root = tmp_path / "full"
    make_figures(root / "reports")
    make_notebook_sources(root)
    assert main(["report", "--reports", str(root / "reports")]) == 0
    return root


def test_a_fresh_clone_regenerates_the_same_page_and_every_reference_resolves(tmp_path, capsys):
    full = _repo(tmp_path)
    pages = sorted((full / "reports").rglob("*.html"))
    assert len(pages) == 1 + len(list((full / "reports" / "thumbs").rglob("*.webp"))) > 40
    fresh = fresh_clone_copy(full, tmp_path / "fresh")
    for page in pages:  # what git holds resolves without the DVC outputs (an <object>'s PNG falls back)
        assert dead_references(fresh / page.relative_to(full / "reports"), objects=False) == []
        assert dead_references(page) == []  # and with them, the full-size figures too
    capsys.readouterr()
    assert main(["report", "--reports", str(fresh)]) == 0  # `facebias report` in a fresh clone
    assert "0 made from figures" in capsys.readouterr().err
    for page in pages:
        assert (fresh / page.relative_to(full / "reports")).read_bytes() == page.read_bytes(), page
    index = (fresh / "index.html").read_text()
    assert "not generated yet" not in index and "No thumbnail" not in index
    assert "../notebooks/hcic.py" in index and "reports/notebooks/hcic_dcgan.ipynb" in index


def test_a_figure_never_made_is_a_notice_naming_its_stage(tmp_path, capsys):
    full = _repo(tmp_path)
    import shutil

    shutil.rmtree(full / "reports" / "figures" / "rapid")
    shutil.rmtree(full / "reports" / "thumbs" / "rapid")
    capsys.readouterr()
    assert main(["report", "--reports", str(full / "reports")]) == 0
    err = capsys.readouterr().err
    n_rapid = sum(1 for e in figure_entries() if e.startswith("rapid/"))
    assert f"warning: {n_rapid} figure(s) not generated yet" in err and "`dvc repro rapid`" in err
    index = (full / "reports" / "index.html").read_text()
    rapid = index.split('id="p001"')[1]
    assert rapid.count("Figure not generated yet: reports/figures/rapid/") == n_rapid
    assert rapid.count("<code>dvc repro rapid</code>") >= n_rapid and "<img" not in rapid
    assert not (full / "reports" / "thumbs" / "rapid").exists()  # no page of a figure not shown
    assert dead_references(full / "reports" / "index.html") == []


# --------------------------------------------------------------------------- figures: DVC and git
def test_dvc_stages_behind_the_page():
    """The report stage writes the thumbnails and keeps them in git (cache: false); every
    command a notice names is a stage that makes that figure or notebook, from a source in git."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]

    def outs(stage):
        return {k: (v or {}) for o in stages[stage]["outs"] for k, v in (o.items() if isinstance(o, dict) else {o: {}}.items())}

    report = outs("report")
    assert report["reports/thumbs"].get("cache") is False and report["reports/index.html"].get("cache") is False
    for entry in figure_entries():
        assert f"reports/figures/{entry.split('/')[0]}" in outs(entry.split("/")[0]), entry
    for paper in PAPERS:
        for b in paper.backends:
            for name, source in ((b.notebook, b.source or b.notebook), *b.more_notebooks):
                assert f"reports/notebooks/{name}.ipynb" in outs(name)
                assert (ROOT / "notebooks" / f"{source}.py").is_file()


def test_the_committed_page_references_only_tracked_files():
    """A fresh clone shows the committed page whole: every image, link and fragment of
    reports/index.html and its figure pages resolves among the files git tracks."""
    tracked = set(subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                                 text=True).stdout.split("\0")) - {""}
    pages = [p for p in tracked if p == "reports/index.html" or (p.startswith("reports/thumbs/") and p.endswith(".html"))]
    assert "reports/index.html" in pages and len(pages) > 40
    assert sum(p.startswith("reports/thumbs/") and p.endswith(".webp") for p in tracked) == len(pages) - 1
    for page in pages:
        for dead in dead_references(ROOT / page, objects=False):
            raise AssertionError(dead)
        parsed = __import__("report_fixtures").parse(ROOT / page)
        for tag, _, value in parsed.refs:
            path = value.split("#")[0]
            if path and tag != "object":
                target = (ROOT / page).parent.joinpath(path).resolve().relative_to(ROOT).as_posix()
                assert target in tracked, f"{page}: {tag} {value} is not tracked by git"
    ignored = subprocess.run(["git", "check-ignore", "-q", "reports/thumbs/bfw/bfw_det.webp"], cwd=ROOT)
    assert ignored.returncode == 1  # not ignored: the thumbnails are committed
