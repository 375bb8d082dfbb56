"""``facebias check-params`` and the guards of ``facebias hcic``: every mistake is one line on
stderr (exit 2) before any face is rendered or any notebook starts. The end-to-end runs are
in tests/test_notebooks.py (on the smoke-scale pipeline's generated faces)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from facebias.cli import main
from facebias.sections import SECTIONS, STAGE_SECTIONS, check_section
from facebias.studies.runs import GENERATED_SETS, generate_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def params_copy(tmp_path):
    """params.yaml as a dict and a writer of a modified copy."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())

    def write(**changes) -> Path:
        p = {k: (dict(v) if isinstance(v, dict) else v) for k, v in params.items()}
        for key, value in changes.items():
            section, _, name = key.partition("__")
            p[section][name] = value
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(p, sort_keys=False))
        return path

    return write


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("facebias: error: "), err
    return err[0]


# --------------------------------------------------------------------------- check-params
def test_every_section_of_params_yaml_passes_its_check():
    for section in SECTIONS:
        check_section(ROOT / "params.yaml", section)  # raises on a mistake
    assert main(["check-params", *STAGE_SECTIONS, "--params", str(ROOT / "params.yaml")]) == 0


@pytest.mark.parametrize("stage, key, value, expected", [
    ("hcic", "hcic__models", ["sface", "arcface"], "hcic.models[1]: model 'arcface': unknown model"),
    ("hcic", "hcic__fmr", 1.5, "hcic.fmr"),
    ("bfw", "bfw__n_boot", -1, "bfw.n_boot"),
    ("rapid", "rapid_world__unknown_key", 1, "unknown key(s) ['unknown_key']"),
    ("transects_dcgan", "transects_dcgan__embedder", "onnx:", "transects_dcgan.embedder: model 'onnx:'"),
])
def test_a_notebook_stage_mistake_is_one_line_naming_the_key(params_copy, capsys, stage, key, value, expected):
    path = params_copy(**{key: value})
    assert main(["check-params", stage, "--params", str(path)]) == 2
    assert expected in _one_error_line(capsys)


def test_check_params_refuses_an_unknown_stage(capsys):
    assert main(["check-params", "bfw_world"]) == 2
    assert "not a notebook stage" in _one_error_line(capsys)


def test_every_notebook_stage_checks_its_params_before_papermill():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        cmd = stage.get("do", stage).get("cmd", "")
        if "${nb}" in cmd:
            study = "bfw" if name == "bfw_real" else name
            assert cmd.startswith(f"facebias check-params {study} && ${{nb}}/"), name


# --------------------------------------------------------------------------- hcic guards
@pytest.mark.parametrize("argv, expected", [
    (["--models", "arcface"], "--models: model 'arcface': unknown model"),
    (["--models", "sface,onnx:/no/such/model.onnx"], "ONNX model file not found: /no/such/model.onnx"),
    (["--models", "sface", "--backend", "stylegan2"], "--backend stylegan2 needs --weights PKL"),
    (["--models", "sface", "--backend", "stylegan2", "--weights", "/no/such.pkl"], "--weights: no such file"),
    (["--models", "sface", "--n-boot", "-3"], "--n-boot: must be >= 0"),
    (["--models", "sface,onnx:a.onnx?name=sface"], "two models named 'sface'"),
    (["--models", "sface", "--backend", "eg3d"], "--backend eg3d needs --weights PKL (an official EG3D network"),
    (["--models", "sface", "--backend", "eg3d", "--weights", "/no/such.pkl"], "--weights: no such file"),
    (["--models", "sface", "--weights", "/no/such.pkl"], "--weights is for --backend stylegan2 or eg3d, not procedural"),
])
def test_hcic_refuses_bad_input_in_one_line_before_any_work(tmp_path, capsys, argv, expected):
    out = tmp_path / "out"
    assert main(["hcic", *argv, "--out", str(out), "--params", str(ROOT / "params.yaml")]) == 2
    assert expected in _one_error_line(capsys)
    assert not out.exists()  # nothing rendered, no notebook run


def test_hcic_refuses_a_file_that_is_not_a_model(tmp_path, capsys):
    bad = tmp_path / "weights.onnx"
    bad.write_bytes(b"\x00not a model")
    assert main(["hcic", "--models", f"onnx:{bad}", "--out", str(tmp_path / "o"),
                 "--params", str(ROOT / "params.yaml")]) == 2
    assert f"{bad} is not a loadable ONNX model" in _one_error_line(capsys)


def test_stylegan2_weights_go_to_the_learned_generator_section(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    pkl = tmp_path / "ffhq.pkl"
    pkl.write_bytes(b"")
    section = generate_params(params, "stylegan2", pkl)
    assert section["backend"] == "stylegan2" and section["generator"]["weights"] == str(pkl)
    # every other key is the DCGAN study's (machine labels, no truth)
    dcgan = params[GENERATED_SETS["stylegan2"].generate_section]
    assert {k: v for k, v in section.items() if k not in ("backend", "generator")} == {
        k: v for k, v in dcgan.items() if k not in ("backend", "generator")}
    assert GENERATED_SETS["stylegan2"].folder == "data/synthetic_stylegan2"
    with pytest.raises(ValueError, match="--weights is for --backend stylegan2"):
        generate_params(params, "dcgan", pkl)
    with pytest.raises(ValueError, match="unknown backend 'biggan'"):
        generate_params(params, "biggan")


def test_eg3d_weights_go_to_the_learned_generator_section_with_camera_sequences(tmp_path):
    """EG3D: the DCGAN study's rules (machine labels, no truth) plus the weights, and pose
    sequences by its camera (sequences: camera) where the DCGAN steps along a learned yaw."""
    from facebias.generate.build import SynthConfig

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    pkl = tmp_path / "ffhq512-128.pkl"
    pkl.write_bytes(b"")
    section = generate_params(params, "eg3d", pkl)
    assert section["backend"] == "eg3d" and section["generator"]["weights"] == str(pkl)
    assert section["sequences"] == "camera" and params["generate_dcgan"]["sequences"] == "latent"
    dcgan = params[GENERATED_SETS["eg3d"].generate_section]
    assert {k: v for k, v in section.items() if k not in ("backend", "generator", "sequences")} == {
        k: v for k, v in dcgan.items() if k not in ("backend", "generator", "sequences")}
    assert SynthConfig.from_params(section).sequences == "camera"
    spec = GENERATED_SETS["eg3d"]
    assert (spec.folder, spec.hcic_section, spec.transects_section) == (
        "data/synthetic_eg3d", "hcic_dcgan", "transects_dcgan")
    with pytest.raises(ValueError, match="--backend eg3d needs --weights PKL"):
        generate_params(params, "eg3d")


def _hcic_steps(monkeypatch) -> list:
    """Record rendering the set and running the notebook instead of doing them."""
    import facebias.studies.runs as runs

    calls: list = []

    def stop(name):
        def record(*args, **kwargs):
            calls.append((name, args, kwargs))
            raise ValueError("stopped here")
        return record

    monkeypatch.setattr(runs, "generated_set", stop("generated_set"))
    monkeypatch.setattr(runs, "run_notebook", stop("run_notebook"))
    return calls


@pytest.mark.parametrize("backend, content, expected", [
    ("eg3d", b"\x80\x04 not a pickle", "is not a usable EG3D network pickle"),
    ("eg3d", b"", "is not a usable EG3D network pickle"),
    ("stylegan2", b"\x80\x04 not a pickle", "is not a usable StyleGAN2 network pickle"),
])
def test_hcic_refuses_a_bad_pickle_in_one_line_before_any_work(tmp_path, capsys, monkeypatch, backend, content,
                                                                expected):
    """The pickle is loaded once after the models, as transects does: a bad one is one line
    naming --weights, before the set is rendered."""
    calls = _hcic_steps(monkeypatch)
    pkl = tmp_path / "net.pkl"
    pkl.write_bytes(content)
    out = tmp_path / "out"
    assert main(["hcic", "--models", "sface", "--backend", backend, "--weights", str(pkl), "--out", str(out),
                 "--params", str(ROOT / "params.yaml")]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"facebias: error: --weights: {pkl} {expected} (")
    assert calls == [] and not out.exists()


def test_hcic_renders_an_eg3d_snapshot_with_the_learned_generator_rules(tmp_path, capsys, monkeypatch):
    """A valid snapshot (the official layout, tests/generate/eg3d_fixtures.py) passes the
    check, and the set is asked for by backend and weights."""
    import json

    from generate.eg3d_fixtures import fixture_state, write_official_layout_pickle

    names = json.loads((ROOT / "tests" / "fixtures" / "eg3d" / "official_state_names.json").read_text())["sr2x"]
    pkl = write_official_layout_pickle(tmp_path / "tiny.pkl", fixture_state(
        "sr2x", {k: tuple(v) for k, v in names.items()}, "G_ema"), "sr2x")
    calls = _hcic_steps(monkeypatch)
    assert main(["hcic", "--models", "sface", "--backend", "eg3d", "--weights", str(pkl), "--out",
                 str(tmp_path / "out"), "--params", str(ROOT / "params.yaml")]) == 2
    assert [c[0] for c in calls] == ["generated_set"]
    assert calls[0][1][1:3] == ("eg3d", str(pkl))
    assert "stopped here" in capsys.readouterr().err


def test_a_user_models_threshold_is_set_at_the_fmr_only_with_enough_impostors():
    """Without threshold= in its spec, a user model's fixed threshold is the one at the
    section's FMR on the intended impostors: the (1 - FMR) quantile rule of
    metrics.threshold_at_fmr (match iff score > t), and only with >= 10/FMR impostors."""
    import numpy as np
    import pandas as pd

    from facebias.studies.hcic import fixed_thresholds

    rng = np.random.default_rng(0)
    imp = rng.normal(0.2, 0.1, 2000)
    pairs = pd.DataFrame({"label": [1] * 50 + [0] * 2000,
                          "score_me": np.r_[rng.normal(0.7, 0.1, 50), imp]})
    t, why = fixed_thresholds({"me": "onnx:me.onnx", "dlib": "dlib", "fix": "onnx:f.onnx?threshold=0.5"},
                              pairs.assign(score_fix=0.0, score_dlib=0.0), 0.01)
    assert (imp > t["me"]).sum() == 20 and (imp >= t["me"]).sum() >= 21  # 1 % of 2000 match
    assert t["fix"] == 0.5 and "threshold=" in why["fix"] and why["dlib"] == "published"
    assert "in-sample" in why["me"]
    with pytest.raises(ValueError, match=r"2000 impostor scores are too few to set one at FMR 0.001; "
                                         r"add \?threshold=T"):
        fixed_thresholds({"me": "onnx:me.onnx"}, pairs, 0.001)  # 10/0.001 = 10,000 needed
