"""reports/index.html: every paper, claims beside measurements, offline, honest about gaps."""

from __future__ import annotations

import json
import re

from facebias.cli import main
from facebias.report import PAPERS, build_report, lookup

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def _reports(tmp_path, with_rapid=True):
    r = tmp_path / "reports"
    (r / "metrics").mkdir(parents=True)
    (r / "figures" / "hcic_det").mkdir(parents=True)
    (r / "notebooks").mkdir()
    metrics = {
        "bfw.json": {"source": "synthetic", "systems": {"sim_a": {"max_abs_fmr_dev_pct": {
            "global": {"0.001": 79.4}, "group": {"0.001": 7.65}}}}},
        "bfw_details.json": {"provenance": "backend: synthetic world (facebias.world, seed 2026)"},
        "batest_details.json": {"provenance": "backend: synthetic BA-test world (facebias.world, seed 3003)"},
        "batest.json": {"source": "synthetic", "gap_rel_error_mean": {
            "original": 0.78, "balanced": 0.43, "balanced_nfh": 0.065}},
        "synthetic.json": {"source": "synthetic (procedural generator)", "orthogonality_max_error": 1e-15,
                           "hair_transect_gender_range": {"raw": 0.46, "orthogonal": 0.009}},
        "transects.json": {"provenance": "procedural generator · simulated annotators (40)", "headline": {
            "planted": {"experimental": {"hair_long": {"coef": -0.93, "sd": 0.12, "significant": True},
                                         "skin_dark": {"coef": 0.03, "sd": 0.11, "significant": False}},
                        "observational": {"skin_dark": {"coef": 0.31, "sd": 0.15, "significant": True}}}}},
        "hcic.json": {"provenance": "procedural generator; SFace, dlib; simulated panel", "similarity_by_relation": {
            "sface": {"same_prototype": 0.97, "same_group": 0.47, "different_group": 0.36, "ordered": True}}},
    }
    if with_rapid:
        metrics["rapid.json"] = {"provenance": "simulated world", "label_agreement": 0.996,
                                 "delta_fnmr": {"0.01": {"a": 0.008, "b": 0.002}},
                                 "delta_fnmr_naive": {"0.01": {"a": 0.35, "b": 0.47}}, "kendall_tau_fnmr": 1.0}
    for name, m in metrics.items():
        (r / "metrics" / name).write_text(json.dumps(m))
    for p in PAPERS:
        for f in p.figures:
            if f.endswith(".png"):
                (r / "figures" / f).write_bytes(PNG)
    (r / "figures" / "hcic_det" / "t30.png").write_bytes(PNG)
    (r / "notebooks" / "hcic.ipynb").write_text("{}")
    return r


def test_every_paper_with_its_measured_numbers_and_backend(tmp_path):
    page = build_report(_reports(tmp_path))
    for key in ("002", "003", "004", "000", "001"):
        assert f'id="p{key}"' in page
    assert "79% (global) vs 8% (per subgroup)" in page
    assert "unbalanced 78%, balanced 43%, balanced without facial hair 6%" in page
    assert "long hair -0.93 ± 0.12 (significant), dark skin +0.03 ± 0.11 (CI covers 0)" in page
    assert "sface 0.97 &gt; 0.47 &gt; 0.36" in page
    assert "label agreement 0.996" in page and "(naive labels 0.350–0.470)" in page
    assert "Backend: simulated world" in page and "simulated annotators (40)" in page
    assert "Backend: backend: synthetic world (facebias.world, seed 2026)" not in page
    assert "Backend: synthetic world (facebias.world, seed 2026)" in page
    assert 'href="notebooks/hcic.ipynb"' in page
    assert 'src="figures/hcic_det/t30.png"' in page  # directory outputs are expanded


def test_offline_and_every_image_exists(tmp_path):
    reports = _reports(tmp_path)
    page = build_report(reports)
    assert "<script" not in page.lower() and "http" not in page
    for src in re.findall(r'src="([^"]+)"', page):
        assert (reports / src).is_file(), src


def test_a_study_not_run_is_shown_as_such(tmp_path):
    page = build_report(_reports(tmp_path, with_rapid=False))
    rapid = page.split('id="p001"')[1]
    assert "Not run yet: reports/metrics/rapid.json is missing" in rapid
    assert ">not run<" in rapid and "label agreement" not in rapid


def test_lookup_and_cli(tmp_path, capsys):
    assert lookup({"a": {"b": 2}}, "a/b") == 2 and lookup({"a": {}}, "a/b") is None
    reports = _reports(tmp_path)
    assert main(["report", "--reports", str(reports)]) == 0
    assert (reports / "index.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()
    (reports / "metrics" / "bfw.json").write_text("{broken")
    assert main(["report", "--reports", str(reports)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bfw.json: not valid JSON" in err
