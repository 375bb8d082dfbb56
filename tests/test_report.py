"""reports/index.html: every paper, claims beside measurements, offline, honest about gaps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from metrics_fixtures import valid

from facebias.claims import Between, Claim, Kind, Measured, Order, Sign
from facebias.cli import main
from facebias.report import PAPERS, build_report
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
                (r / "figures" / f).write_bytes(PNG)
    (r / "figures" / "hcic" / "hcic_det" / "t30.png").write_bytes(PNG)
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
    assert 'href="notebooks/hcic.ipynb"' in page
    assert 'src="figures/hcic/hcic_det/t30.png"' in page  # directory outputs are expanded
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
    page = build_report(reports, claims=_demo_claims())
    assert "<script" not in page.lower() and "http" not in page
    for src in re.findall(r'src="([^"]+)"', page):
        assert (reports / src).is_file(), src


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
