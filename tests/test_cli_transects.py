"""``facebias transects --classifier``: every mistake is one line on stderr (exit 2) before any
face is rendered or the notebook starts (the classifiers and a StyleGAN2 pickle are loaded
first); a failing notebook cell is one line too; and the summary is read from the metrics the
notebook writes."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from facebias.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "torch:examples.light_gender:light_gender"


class Ran(Exception):
    """Raised by the stand-ins of the study's steps: the command got that far."""


@pytest.fixture
def steps(monkeypatch):
    """Record the steps after the checks (rendering the set, running the notebook) instead of
    running them; ``steps.calls`` lists them in order."""
    import facebias.studies.runs as runs

    calls: list[tuple[str, tuple, dict]] = []

    def generated_set(*args, **kwargs):
        calls.append(("generated_set", args, kwargs))
        return ROOT / "data" / "synthetic_dcgan"

    def run_notebook(*args, **kwargs):
        calls.append(("run_notebook", args, kwargs))
        raise Ran

    monkeypatch.setattr(runs, "generated_set", generated_set)
    monkeypatch.setattr(runs, "run_notebook", run_notebook)
    monkeypatch.chdir(ROOT)
    steps = type("Steps", (), {"calls": calls})()
    return steps


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("facebias: error: "), err
    return err[0]


def _run(tmp_path, *argv):
    return main(["transects", *argv, "--out", str(tmp_path / "out"), "--params", str(ROOT / "params.yaml")])


@pytest.mark.parametrize("argv, expected", [
    (["--classifier", "sface"], "--classifier: classifier 'sface': a face-recognition model, not a classifier"),
    (["--classifier", "onnx:/no/such/clf.onnx"], "ONNX model file not found: /no/such/clf.onnx"),
    (["--classifier", "torch:examples.light_gender:nothing"], "has no function 'nothing'"),
    (["--classifier", f"{EXAMPLE}?output=softmax2"], "returns 1 values per image; output=softmax2 needs two"),
    (["--classifier", EXAMPLE, "--classifier", EXAMPLE], "the name 'light_gender' is taken; add name="),
    (["--classifier", f"{EXAMPLE}?name=labeller"], "the name 'labeller' is taken"),  # p_labeller is the reading
    (["--classifier", EXAMPLE, "--backend", "procedural"],
     "--backend: the procedural set has its own known-truth study (notebooks/transects.py"),
    (["--classifier", EXAMPLE, "--backend", "biggan"], "--backend: unknown backend 'biggan'; use dcgan or stylegan2"),
    (["--classifier", EXAMPLE, "--backend", "stylegan2"], "--backend stylegan2 needs --weights PKL"),
    (["--classifier", EXAMPLE, "--backend", "stylegan2", "--weights", "/no/such.pkl"],
     "--weights: no such file /no/such.pkl"),
    (["--classifier", EXAMPLE, "--weights", "/no/such.pkl"], "--weights is for --backend stylegan2 or eg3d, not dcgan"),
    (["--classifier", EXAMPLE, "--n-boot", "0"], "--n-boot: must be >= 1, got 0"),
    (["--classifier", EXAMPLE, "--backend", "eg3d"], "--backend eg3d needs --weights PKL"),
    (["--classifier", EXAMPLE, "--backend", "eg3d", "--weights", "/no/such.pkl"],
     "--weights: no such file /no/such.pkl"),
    (["--classifier", EXAMPLE, "--backend", "procedural"], "or --backend eg3d --weights PKL"),
])
def test_bad_input_is_one_line_before_any_work(tmp_path, capsys, steps, argv, expected):
    assert _run(tmp_path, *argv) == 2
    assert expected in _one_error_line(capsys)
    assert steps.calls == [] and not (tmp_path / "out").exists()  # nothing rendered, no notebook run


def test_a_classifier_file_that_is_not_onnx_is_one_line(tmp_path, capsys, steps):
    bad = tmp_path / "clf.onnx"
    bad.write_bytes(b"\x00not a model")
    assert _run(tmp_path, "--classifier", f"onnx:{bad}") == 2
    assert f"{bad} is not a loadable ONNX model" in _one_error_line(capsys)
    assert steps.calls == []


def test_a_params_mistake_is_one_line_naming_the_key(tmp_path, capsys, steps):
    import yaml

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["transects_dcgan"]["alpha"] = 2
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["transects", "--classifier", EXAMPLE, "--out", str(tmp_path / "o"), "--params", str(path)]) == 2
    assert "transects_dcgan.alpha" in _one_error_line(capsys)
    assert steps.calls == []


def test_the_output_folder_must_not_be_a_file(tmp_path, capsys, steps):
    (tmp_path / "out").write_text("x")
    assert _run(tmp_path, "--classifier", EXAMPLE) == 2
    assert "is a file, not a folder" in _one_error_line(capsys)


# --------------------------------------------------------------------------- StyleGAN2 pickles
def _evil_pickle(path: Path, marker: Path) -> Path:
    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path.write_bytes(pickle.dumps({"G_ema": Evil()}))
    return path


def test_a_tiny_official_pickle_passes_to_the_learned_generator_rules(tmp_path, capsys, steps):
    """A network pickle in the official layout (tests/generate/test_stylegan2.py's writer) is
    loaded, then the set is rendered with the DCGAN section's rules plus the weights, and the
    notebook reads a params file of its own naming the StyleGAN2 section."""
    import yaml
    from generate.test_stylegan2 import TINY, official_pickle

    from facebias.generate.stylegan2 import StyleGAN2Generator

    pkl = official_pickle(tmp_path / "tiny.pkl", StyleGAN2Generator(**TINY, seed=1).net)
    with pytest.raises(Ran):
        _run(tmp_path, "--classifier", EXAMPLE, "--backend", "stylegan2", "--weights", str(pkl))
    (_, gen_args, gen_kwargs), (_, nb_args, nb_kwargs) = steps.calls
    assert gen_args[1:3] == ("stylegan2", str(pkl.resolve()))
    params = nb_args[2]
    assert params["generate_section"] == "generate_stylegan2" and params["classifiers"] == [EXAMPLE]
    assert params["own_classifiers"] is False and params["name"] == "transects_stylegan2"
    own = yaml.safe_load(Path(params["params_file"]).read_text())
    dcgan = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert own["generate_stylegan2"]["backend"] == "stylegan2"
    assert own["generate_stylegan2"]["generator"]["weights"] == str(pkl.resolve())
    assert {k: v for k, v in own["generate_stylegan2"].items() if k not in ("backend", "generator")} == {
        k: v for k, v in dcgan["generate_dcgan"].items() if k not in ("backend", "generator")}
    assert own["transects_dcgan"] == dcgan["transects_dcgan"]  # the learned-generator study's rules


# --------------------------------------------------------------------------- EG3D snapshots
def _eg3d_pickle(path: Path) -> Path:
    """A randomised snapshot in the layout of NVIDIA's EG3D training loop (the smallest
    fixture config, 128 px through 2X superresolution; tests/generate/eg3d_fixtures.py)."""
    from generate.eg3d_fixtures import fixture_state, write_official_layout_pickle

    names = json.loads((ROOT / "tests" / "fixtures" / "eg3d" / "official_state_names.json").read_text())["sr2x"]
    return write_official_layout_pickle(path, fixture_state("sr2x", {k: tuple(v) for k, v in names.items()},
                                                             "G_ema"), "sr2x")


def _stylegan2_pickle(path: Path, marker: Path) -> Path:
    from generate.test_stylegan2 import TINY, official_pickle

    from facebias.generate.stylegan2 import StyleGAN2Generator

    return official_pickle(path, StyleGAN2Generator(**TINY, seed=1).net)


_GARBAGE = lambda p, m: (p.write_bytes(b"\x80\x04 not a pickle"), p)[1]  # noqa: E731
_NOT_A_NETWORK = lambda p, m: (p.write_bytes(pickle.dumps({"weights": [1, 2, 3]})), p)[1]  # noqa: E731
_GIVE = {"stylegan2": "give an official stylegan2-ada-pytorch .pkl",
         "eg3d": "give an official NVlabs/eg3d snapshot .pkl"}


@pytest.mark.parametrize("backend, make, expected", [
    ("stylegan2", _GARBAGE, "is not a usable StyleGAN2 network pickle"),
    ("stylegan2", _NOT_A_NETWORK, "is not a usable StyleGAN2 network"),
    ("stylegan2", _evil_pickle, "is not a usable StyleGAN2 network pickle"),
    ("eg3d", _GARBAGE, "is not a usable EG3D network pickle"),
    ("eg3d", _NOT_A_NETWORK, "is not a usable EG3D network"),
    ("eg3d", _evil_pickle, "is not a usable EG3D network pickle"),
    ("eg3d", _stylegan2_pickle, "not an EG3D 'TriPlaneGenerator' (a StyleGAN2 pickle?"),
])
def test_a_bad_pickle_is_one_line_before_any_work(tmp_path, capsys, steps, backend, make, expected):
    marker = tmp_path / "side_effect"
    pkl = make(tmp_path / "net.pkl", marker)
    assert _run(tmp_path, "--classifier", EXAMPLE, "--backend", backend, "--weights", str(pkl)) == 2
    line = _one_error_line(capsys)
    assert line.startswith("facebias: error: --weights: ") and expected in line and str(pkl) in line
    assert _GIVE[backend] in line
    assert steps.calls == [] and not (tmp_path / "out").exists()
    assert not marker.exists()  # the restricted unpickler ran nothing from the file


def test_an_eg3d_snapshot_is_not_a_stylegan2_pickle(tmp_path, capsys, steps):
    pkl = _eg3d_pickle(tmp_path / "eg3d.pkl")
    assert _run(tmp_path, "--classifier", EXAMPLE, "--backend", "stylegan2", "--weights", str(pkl)) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"facebias: error: --weights: {pkl} is not a usable StyleGAN2 network pickle")
    assert steps.calls == []


def test_a_tiny_official_eg3d_snapshot_passes_to_the_learned_generator_rules(tmp_path, capsys, steps):
    """An EG3D snapshot in the official layout is loaded, then the set is rendered with the
    DCGAN section's rules plus the weights and camera sequences (pose by EG3D's camera),
    and the notebook reads a params file of its own naming the EG3D section."""
    import yaml

    pkl = _eg3d_pickle(tmp_path / "tiny.pkl")
    with pytest.raises(Ran):
        _run(tmp_path, "--classifier", EXAMPLE, "--backend", "eg3d", "--weights", str(pkl))
    (_, gen_args, _), (_, nb_args, _) = steps.calls
    assert gen_args[1:3] == ("eg3d", str(pkl.resolve()))
    params = nb_args[2]
    assert params["generate_section"] == "generate_eg3d" and params["name"] == "transects_eg3d"
    own = yaml.safe_load(Path(params["params_file"]).read_text())
    dcgan = yaml.safe_load((ROOT / "params.yaml").read_text())
    section = own["generate_eg3d"]
    assert section["backend"] == "eg3d" and section["generator"]["weights"] == str(pkl.resolve())
    assert section["sequences"] == "camera"
    assert {k: v for k, v in section.items() if k not in ("backend", "generator", "sequences")} == {
        k: v for k, v in dcgan["generate_dcgan"].items() if k not in ("backend", "generator", "sequences")}
    assert own["transects_dcgan"] == dcgan["transects_dcgan"]


# --------------------------------------------------------------------------- the run
def test_the_notebook_gets_the_stage_parameters(tmp_path, steps):
    """After the checks: the set (the stage's, reused or rendered), then the stage's notebook
    with the stage's sections, your classifiers and the study's own left out."""
    with pytest.raises(Ran):
        _run(tmp_path, "--classifier", f"{EXAMPLE}?name=mine", "--n-boot", "20")
    (_, gen_args, _), (_, nb_args, nb_kwargs) = steps.calls
    assert gen_args[1:3] == ("dcgan", None)
    notebook, output, params = nb_args
    assert notebook == ROOT / "notebooks" / "transects_dcgan.py" and nb_kwargs["cwd"] == ROOT
    assert output == (tmp_path / "out" / "transects_dcgan.ipynb").resolve()
    assert params == {"section": "transects_dcgan", "overrides": {"n_boot": 20},
                      "classifiers": [f"{EXAMPLE}?name=mine"], "own_classifiers": False,
                      "reports_dir": str((tmp_path / "out").resolve()), "name": "transects_dcgan",
                      "params_file": "params.yaml", "generate_section": "generate_dcgan",
                      "synthetic": "data/synthetic_dcgan"}
    with pytest.raises(Ran):
        _run(tmp_path, "--classifier", EXAMPLE, "--study-classifiers")
    assert steps.calls[-1][1][2]["own_classifiers"] is True and steps.calls[-1][1][2]["overrides"] == {}


def test_a_failing_cell_is_one_line(tmp_path, capsys, monkeypatch):
    import facebias.studies.runs as runs

    monkeypatch.setattr(runs, "generated_set", lambda *a, **k: ROOT / "data" / "synthetic_dcgan")

    def fail(notebook, output, *a, **k):
        raise RuntimeError(f"{notebook} failed in cell 7: ValueError: boom (see {output})")

    monkeypatch.setattr(runs, "run_notebook", fail)
    monkeypatch.chdir(ROOT)
    assert _run(tmp_path, "--classifier", EXAMPLE) == 2
    err = capsys.readouterr().err.strip().splitlines()  # progress lines, then the error
    assert [x for x in err if x.startswith("facebias: error: ")] == err[-1:]
    assert err[-1].startswith("facebias: error: notebooks/transects_dcgan.py: ") and "failed in cell 7" in err[-1]


def test_a_relative_onnx_path_is_made_absolute_for_the_kernel(tmp_path, monkeypatch, steps):
    """The notebook's kernel runs in the repository root: a spec's relative ONNX file is
    resolved from where the command runs."""
    monkeypatch.syspath_prepend(str(ROOT))  # examples/ is a folder of the repository, not installed
    from examples.light_gender import export_onnx

    export_onnx(str(tmp_path / "lg.onnx"), size=64)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("facebias.io.repo_root", lambda start=None: ROOT)
    with pytest.raises(Ran):
        main(["transects", "--classifier", "onnx:lg.onnx?input_size=64", "--out", str(tmp_path / "o"),
              "--params", str(ROOT / "params.yaml")])
    params = steps.calls[-1][1][2]
    assert params["classifiers"] == [f"onnx:{tmp_path / 'lg.onnx'}?input_size=64"]


def test_the_summary_reads_each_classifiers_headline_from_the_metrics(tmp_path, capsys):
    """The summary's numbers are the details file's (written here by hand), and an unresolved
    rate or coefficient is a warning line."""
    from facebias.cli.transects import _summary

    row = {"coef": 1.5, "sd": 0.2, "ci": [1.1, 1.9], "significant": True}
    details = {
        "params": {"shortcut": "light", "n_boot": 20},
        "covariates": {"tone": "intended: face_darkness decision value > 0 (darker)"},
        "pruning": {"transects": {"n": 800, "kept": 600}, "observational": {"n": 2000, "kept": 1400}},
        "training": {"mine": {"transects_vs_labeller": {"congruent": {"accuracy": 0.9},
                                                        "incongruent": {"accuracy": 0.25}}}},
        "headline": {"mine": {"experimental": {"light_incongruent": row, "tone_dark": None},
                              "observational": {"tone_dark": row}, "observational_with_shortcut": {"tone_dark": row}},
                     "planted (simulated)": {"experimental": {}, "observational": {},
                                             "observational_with_shortcut": {}}},
        "classifiers": {"mine": {"error_rate": {"transects": 0.25, "observational": float("nan")},
                                 "confounds": {"clears_tone": True, "tests": {"tone": {"p_value": 0.3}}}},
                        "planted (simulated)": {"error_rate": {"transects": 0.2, "observational": 0.3},
                                                "confounds": None}},
    }
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "t_details.json").write_text(json.dumps(details))
    text = _summary(tmp_path, "t", ["mine"], 12.0)
    lines = text.splitlines()
    assert lines[0].startswith(f"wrote {tmp_path} in 12 s: t.ipynb")
    assert "kept 600 of 800 transect images, 1400 of 2000 observational" in lines[1]
    assert "tone = face_darkness" in lines[1]
    assert lines[2] == "  mine: error rate 0.250 on the transects, unresolved observational; transect accuracy " \
                       "congruent 0.90, incongruent 0.25"
    assert lines[3] == "    transects: light incongruent +1.50 [+1.10, +1.90], darker unresolved; clears tone: yes " \
                       "(every tone term: LR p = 0.3)"
    assert lines[4] == "    observational: darker +1.50 [+1.10, +1.90] (gender, tone) -> +1.50 [+1.10, +1.90] with " \
                       "the light level recorded"
    assert lines[5].startswith("  planted (simulated) (the study's): error rate 0.200 on the transects")
    assert "clears tone: unresolved" in lines[6]
    err = capsys.readouterr().err
    assert "facebias: warning: mine: error rate on the observational unresolved" in err
    assert "facebias: warning: mine: transects' tone coefficient unresolved" in err


# --------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def smoke_root(tmp_path_factory):
    """A repository root with the smoke-scale sections of the pipeline test
    (tests/fixtures/smoke_params.yaml) and the real notebooks and examples: the command renders
    its tiny DCGAN set here (16 transect images)."""
    import yaml

    root = tmp_path_factory.mktemp("repo")
    (root / "dvc.yaml").write_text("stages: {}\n")
    for item in ("notebooks", "examples"):
        (root / item).symlink_to(ROOT / item)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    smoke = yaml.safe_load((ROOT / "tests" / "fixtures" / "smoke_params.yaml").read_text())
    for section in ("generate_dcgan", "transects_dcgan"):
        params[section].update(smoke[section])
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


def _light_p_male(images):
    """examples/light_gender.py in numpy, on 64 px renders fed at input_size=64 (no resize)."""
    import numpy as np

    grey = ((images.astype(np.float64) - 127.5) / 127.5) @ np.array([0.299, 0.587, 0.114])
    rows = grey[:, 16:48]
    return 1 / (1 + np.exp(-10 * (rows[:, :, 8:32].mean(axis=(1, 2)) - rows[:, :, 32:56].mean(axis=(1, 2)))))


@pytest.mark.slow(seconds=75)  # measured 62 s alone on 2 cores
def test_end_to_end_your_classifier_beside_the_stages_own(smoke_root, tmp_path, monkeypatch, capsys):
    """The command on a smoke-scale DCGAN set: the study's own classifiers come out exactly as
    the stage's notebook gives them (run here on the same set with its defaults), your torch
    classifier's error rate is the one computed here in numpy from the renders and the
    labeller's readings, and its ONNX export gives the same errors."""
    import numpy as np
    import pandas as pd
    from PIL import Image

    monkeypatch.syspath_prepend(str(ROOT))  # examples/ is a folder of the repository, not installed
    from examples.light_gender import export_onnx
    from facebias.studies.runs import run_notebook

    monkeypatch.chdir(smoke_root)
    export_onnx(str(tmp_path / "light.onnx"), size=64)
    out = tmp_path / "out"
    assert main(["transects", "--classifier", "torch:examples.light_gender:light_gender?input_size=64",
                 "--classifier", f"onnx:{tmp_path / 'light.onnx'}?input_size=64&name=light_onnx",
                 "--study-classifiers", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "rendering the dcgan faces into" in captured.err
    assert (out / "transects_dcgan.ipynb").is_file()
    assert {p.name for p in (out / "figures" / "transects_dcgan").glob("*.png")} == {
        f"transects_dcgan_{f}.png" for f in ("examples", "group_errors", "paired", "coefficients")}
    mine = json.loads((out / "metrics" / "transects_dcgan_details.json").read_text())
    assert list(mine["classifiers"]) == ["shortcut CNN", "SFace probe", "planted (simulated)", "light_gender",
                                         "light_onnx"]

    stage_dir = tmp_path / "stage"
    run_notebook(ROOT / "notebooks" / "transects_dcgan.py", stage_dir / "stage.ipynb",
                 {"reports_dir": str(stage_dir), "name": "transects_dcgan"}, cwd=smoke_root, progress=False)
    stage = json.loads((stage_dir / "metrics" / "transects_dcgan_details.json").read_text())
    for c in stage["classifiers"]:  # the study's own, unchanged by yours beside them
        for key in ("classifiers", "headline", "planted_recovered", "training"):
            assert mine[key][c] == stage[key][c], (key, c)
    assert (out / "metrics" / "transects_dcgan.json").read_text() == \
        (stage_dir / "metrics" / "transects_dcgan.json").read_text()

    # yours, by hand: the kept transect images are those the labeller reads outside [0.4, 0.6]
    data = smoke_root / "data" / "synthetic_dcgan" / "transects"
    table = pd.read_parquet(data / "images.parquet")
    p_lab = pd.read_parquet(data / "readings.parquet").set_index("image_id").loc[table["image_id"], "p_male"]
    p_lab = p_lab.to_numpy(float)
    kept = np.isfinite(p_lab) & ~((p_lab >= 0.4) & (p_lab <= 0.6))
    assert mine["pruning"]["transects"]["kept"] == kept.sum() > 0
    images = np.stack([np.asarray(Image.open(data / "images" / f"{i}.png").convert("RGB")) for i in table["image_id"]])
    errors = (_light_p_male(images) > 0.5) != (p_lab > 0.6)
    rate = mine["classifiers"]["light_gender"]["error_rate"]["transects"]
    assert abs(rate - errors[kept].mean()) < 1e-12
    onnx = mine["classifiers"]["light_onnx"]
    assert onnx["error_rate"] == mine["classifiers"]["light_gender"]["error_rate"]
    assert onnx["group_errors"] == mine["classifiers"]["light_gender"]["group_errors"]
    assert f"light_gender: error rate {rate:.3f} on the transects" in captured.out
