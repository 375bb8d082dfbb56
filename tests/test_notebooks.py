"""Notebooks execute end to end under papermill (-k python3) at a smoke scale."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import papermill
import pytest
import yaml

from facebias.world import BFWWorldConfig, make_bfw_world, write_world

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "bfw_datatable_small.csv"
FIGURES = ("score_distributions", "det", "fpr_deviation", "tar_at_far")


def run_notebook(notebook: str, tmp_path: Path, **parameters) -> Path:
    nb = jupytext.read(ROOT / "notebooks" / f"{notebook}.py")
    src = tmp_path / f"{notebook}.ipynb"
    jupytext.write(nb, src)
    out = tmp_path / f"{notebook}.out.ipynb"
    papermill.execute_notebook(str(src), str(out), parameters=parameters, kernel_name="python3",
                               cwd=str(ROOT), progress_bar=False)
    return out


@pytest.fixture(scope="module")
def tiny_world(tmp_path_factory):
    path = tmp_path_factory.mktemp("world") / "bfw.parquet"
    write_world(make_bfw_world(BFWWorldConfig(identities_per_group=10, images_per_identity=6)), path)
    return path


def test_bfw_notebook_on_the_synthetic_world(tiny_world, tmp_path):
    reports = tmp_path / "reports"
    run_notebook("bfw_thresholds", tmp_path, datatable=str(tiny_world), reports_dir=str(reports),
                 name="bfw", overrides={"n_boot": 5})
    for fig in FIGURES:
        assert (reports / "figures" / f"bfw_{fig}.png").stat().st_size > 10_000
    head = json.loads((reports / "metrics" / "bfw.json").read_text())
    assert head["source"] == "synthetic" and set(head["systems"]) == {"sim_a", "sim_b"}
    assert set(head["systems"]["sim_a"]["max_abs_fmr_dev_pct"]["group"]) == {"0.3", "0.1", "0.01", "0.001", "0.0001"}
    m = json.loads((reports / "metrics" / "bfw_details.json").read_text())
    assert "synthetic world" in m["provenance"]
    a = m["systems"]["sim_a"]
    assert set(a["eer"]) == {"AF", "AM", "BF", "BM", "IF", "IM", "WF", "WM"}
    assert head["systems"]["sim_a"]["eer_max"] == max(a["eer"].values())
    assert a["group_report"]["meta"]["bootstrap_unit"] == "identities"


def test_bfw_notebook_on_a_real_schema_datatable(tmp_path):
    reports = tmp_path / "reports"
    run_notebook("bfw_thresholds", tmp_path, datatable=str(FIXTURE), source="real",
                 systems="sphereface,vgg16", reports_dir=str(reports), name="bfw_real_fixture",
                 overrides={"n_boot": 3, "fmr": [0.3, 0.1], "report_fmr": [0.1]})
    m = json.loads((reports / "metrics" / "bfw_real_fixture_details.json").read_text())
    assert m["source"] == "real" and set(m["systems"]) == {"sphereface", "vgg16"}
    assert (reports / "figures" / "bfw_real_fixture_det.png").exists()


def test_bfw_notebook_rejects_a_missing_score_column(tiny_world, tmp_path):
    with pytest.raises(papermill.PapermillExecutionError, match="no score column"):
        run_notebook("bfw_thresholds", tmp_path, datatable=str(tiny_world), systems="sphereface",
                     reports_dir=str(tmp_path / "r"), overrides={"n_boot": 0})


@pytest.mark.skipif(shutil.which("git") is None, reason="dvc needs git")
def test_dvc_pipeline_runs_and_is_incremental(tmp_path):
    """`dvc repro` on a copy of the pipeline with a tiny world; a rerun does nothing."""
    for item in ("dvc.yaml", "notebooks", "lib", ".dvc/config", ".dvc/plots"):
        src, dst = ROOT / item, tmp_path / item
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["world"].update(identities_per_group=10, images_per_identity=6)
    params["bfw"].update(n_boot=5, fmr=[0.1, 0.01], report_fmr=[0.01])
    params["batest_world"].update(identities_per_group=30)
    params["batest"].update(n_boot=5)
    params["generate"].update(scale="smoke", n_transects=10)
    params["synthetic"].update(n_check=8)
    params["transects"].update(n_boot=5, n_train=64, epochs=1, n_observational=100, n_known_truth=20)
    params["hcic"].update(models=["sface"], n_boot=5)
    params["rapid"].update(p_sweep=[0.5, 0.8], sweep_queries_per_group=8, semi_fractions=[0.0, 0.5, 1.0])
    params["rapid_world"].update(queries_per_group=8)
    # the opt-in real-data stage, on a fixture in the published schema
    (tmp_path / "data" / "bfw").mkdir(parents=True)
    shutil.copy(FIXTURE, tmp_path / "data" / "bfw" / "fixture.csv")
    params["bfw"]["real"] = {"fx": {"datatable": "data/bfw/fixture.csv", "systems": "sphereface,vgg16"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "DVC_NO_ANALYTICS": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def sh(*cmd):
        r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout + r.stderr

    sh("git", "init", "-q")
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0")
    sh("dvc", "repro")
    for fig in FIGURES:
        assert (tmp_path / "reports" / "figures" / f"bfw_{fig}.png").exists()
        assert (tmp_path / "reports" / "figures" / f"bfw_real_fx_{fig}.png").exists()
    for fig in ("factors", "gender_gap", "fmr_at_reference", "tpr"):
        assert (tmp_path / "reports" / "figures" / f"batest_{fig}.png").exists()
    for fig in ("transect_2d", "orthogonalisation", "transects_2x2x2", "prototypes", "sequences"):
        assert (tmp_path / "reports" / "figures" / f"synthetic_{fig}.png").exists()
    assert len(list((tmp_path / "data" / "synthetic" / "hcic" / "images").glob("*.png"))) == 2 * 6 * 17
    for fig in ("group_errors", "coefficients", "age_gender"):
        assert (tmp_path / "reports" / "figures" / f"transects_{fig}.png").exists()
    for fig in ("similarity/sface", "det/t30", "fnmr_by_group"):
        assert (tmp_path / "reports" / "figures" / f"hcic_{fig}.png").exists()
    assert (tmp_path / "data" / "annotations" / "annotations.sqlite").exists()
    assert (tmp_path / "reports" / "figures" / "rapid_curves.png").exists()
    index = (tmp_path / "reports" / "index.html").read_text()  # the last stage
    assert all(f'id="p{k}"' in index for k in ("002", "003", "004", "000", "001"))
    assert "Not run yet" not in index and "not run<" not in index
    shown = sh("dvc", "metrics", "show")
    assert "bfw.json" in shown and "bfw_real_fx.json" in shown and "batest.json" in shown
    assert "transects.json" in shown and "hcic.json" in shown and "rapid.json" in shown
    sh("facebias", "plots", "-o", "reports/plots.html")  # dvc plots, rendered offline
    page = (tmp_path / "reports" / "plots.html").read_text()
    assert page.count("<svg") >= 1 and page.count("data:image/png;base64,") >= 30
    assert "<script" not in page and "missing:" not in page
    assert "up to date" in sh("dvc", "repro")
    params["bfw"]["fmr"] = [0.1]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    log = sh("dvc", "repro")
    assert "'world' didn't change" in log and "Running stage 'bfw'" in log
    assert "Running stage 'batest'" not in log  # another study's parameter: not rerun
    assert "Running stage 'synth'" not in log and "Running stage 'hcic'" not in log
    assert "Running stage 'bfw_real@fx'" in log
    params["hcic"]["t_hcic"] = [0.25, 0.3]  # one study's parameter: only that study reruns
    # and the Dask LocalCluster (default) -> in-process: the stages that read `compute` rerun,
    # and their outputs are byte-identical, so nothing downstream of data/synthetic reruns
    assert params["compute"]["scheduler"] == "local"
    params["compute"]["scheduler"] = "serial"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    log = sh("dvc", "repro")
    assert "Running stage 'hcic'" in log and "Running stage 'synth'" in log
    assert "Running stage 'transects'" not in log and "Running stage 'synthetic_faces'" not in log
    assert "Running stage 'annotations'" not in log
    det = sorted(p.name for p in (tmp_path / "reports" / "figures" / "hcic_det").iterdir())
    assert det == ["t25.png", "t30.png"]  # a directory output: no stale or missing figures


def test_ba_test_notebook_on_the_known_truth_world(tmp_path):
    reports = tmp_path / "reports"
    run_notebook("ba_test", tmp_path, reports_dir=str(reports), overrides={"n_boot": 5},
                 world_overrides={"identities_per_group": 40})
    for fig in ("factors", "gender_gap", "fmr_at_reference", "tpr"):
        assert (reports / "figures" / f"batest_{fig}.png").stat().st_size > 10_000
    head = json.loads((reports / "metrics" / "batest.json").read_text())
    assert head["source"] == "synthetic"
    err = head["gap_rel_error_mean"]
    assert err["original"] > 0.25 and err["balanced_nfh"] < err["original"]
    details = json.loads((reports / "metrics" / "batest_details.json").read_text())
    assert "synthetic BA-test world" in details["provenance"]
    real = {r["id"]: r for r in details["real_images"]}
    assert real["original"]["reason"] is None and real["original"]["passes_filters"]
    assert real["noise (no face)"]["reason"] == "no face detected"
    assert not real["darkened x0.6"]["passes_filters"]  # brightness below the window
    fte = details["real_images_fte"]["all"]
    assert (fte["n"], fte["n_fte"]) == (6, 1) and "no face" in fte["top_reason"]
    # the LFW batch: faces enrol, non-face patches are recorded failures to enrol
    lfw = details["lfw_fte"]
    assert lfw["face"]["fte_rate"] <= 0.05 and lfw["non-face"]["fte_rate"] >= 0.9
    assert lfw["all"]["n"] == 200
    report = {(r["group"], r["factor"]): r for r in details["lfw_balance_report"]}
    for g in ("female", "male"):  # nn matching on brightness and face area reduces |SMD|
        assert abs(report[g, "brightness"]["smd_after"]) < abs(report[g, "brightness"]["smd_before"])
    assert details["lfw_pair_mask_iou"]["n_pairs"] > 300
    assert (reports / "figures" / "batest_real_mask_iou.png").stat().st_size > 10_000


# --------------------------------------------------------------------------- papers 004 and 000
@pytest.fixture(scope="module")
def synthetic_smoke(tmp_path_factory):
    """Smoke-scale synthetic faces (10 transects, 2 seeds x 6 groups) and the simulated panel's votes."""
    from facebias.annotate.simulate import simulate_synthetic
    from facebias.generate import load_generator
    from facebias.generate.build import SynthConfig, render_products

    root = tmp_path_factory.mktemp("synthetic")
    render_products(load_generator("procedural", size=128, seed=0),
                    SynthConfig.from_params({"scale": "smoke", "n_transects": 10}), root / "synthetic")
    simulate_synthetic(root / "synthetic", root / "annotations")
    return root


def test_transects_notebook_smoke(synthetic_smoke, tmp_path):
    reports = tmp_path / "reports"
    run_notebook("transects", tmp_path, synthetic=str(synthetic_smoke / "synthetic"),
                 votes=str(synthetic_smoke / "annotations" / "transects_votes.parquet"),
                 reports_dir=str(reports), smoke=True, torch_threads=1)
    for fig in ("distributions", "group_errors", "paired", "coefficients", "age_gender"):
        assert (reports / "figures" / f"transects_{fig}.png").stat().st_size > 10_000
    m = json.loads((reports / "metrics" / "transects.json").read_text())
    assert "simulated annotators" in m["provenance"] and "procedural" in m["provenance"]
    c = m["pruning"]["paper"]
    assert c["n"] == 80 and c["kept"] == c["n"] - c["pruned"] > 0


def test_hcic_notebook_smoke(synthetic_smoke, tmp_path):
    reports = tmp_path / "reports"
    run_notebook("hcic", tmp_path, synthetic=str(synthetic_smoke / "synthetic"),
                 image_votes=str(synthetic_smoke / "annotations" / "hcic_image_votes.parquet"),
                 pair_votes=str(synthetic_smoke / "annotations" / "hcic_pair_votes.parquet"),
                 cache_dir=str(tmp_path / "emb"), reports_dir=str(reports), smoke=True)
    for fig in ("similarity/sface", "similarity/toy", "det/t30", "fnmr_by_group", "validation"):
        assert (reports / "figures" / f"hcic_{fig}.png").stat().st_size > 10_000
    m = json.loads((reports / "metrics" / "hcic.json").read_text())
    assert "simulated panel" in m["provenance"] and m["n_pairs"] == 12 * 20 * 2
    assert m["similarity_by_relation"]["toy"]["ordered"]


# --------------------------------------------------------------------------- paper 001
def test_rapid_notebook_smoke(tmp_path):
    reports = tmp_path / "reports"
    run_notebook("rapid_test", tmp_path, reports_dir=str(reports), smoke=True)
    for fig in ("curves", "eer_groups", "voting", "semi_supervised", "p_sweep"):
        assert (reports / "figures" / f"rapid_{fig}.png").stat().st_size > 10_000
    m = json.loads((reports / "metrics" / "rapid.json").read_text())
    assert "simulated world" in json.dumps(m)
