"""``facebias rapid`` and ``facebias rapid-example`` end to end: the example folder, a user ONNX
model made here, and every guard (one-line errors; a warning line naming the rule for every
empty or unresolved table)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.cli import main


def run_cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _tiny_onnx(path: Path, dim: int = 16) -> None:
    """A user model: a fixed random projection of the 112 x 112 ArcFace crop (as in
    tests/faces/test_embed.py)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(2).standard_normal((3 * 112 * 112, dim)).astype(np.float32) / 100
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["f"], axis=1), helper.make_node("MatMul", ["f", "w"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 112, 112])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", dim])],
        [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("cli_rapid")


@pytest.fixture(scope="module")
def example(work):
    code, out, err = run_cli("rapid-example", work / "ex", "--queries", 4, "--photos", 10, "--seed", 3)
    assert code == 0, err
    assert "4 query folders x 10 photos (2 planted of other people in each)" in out
    assert f"next: facebias rapid {work / 'ex'} --models sface,dlib" in out
    return work / "ex"


@pytest.fixture(scope="module")
def onnx_model(work):
    path = work / "tiny.onnx"
    _tiny_onnx(path)
    return path


@pytest.fixture(scope="module")
def run(example, onnx_model, work):
    out = work / "res"
    code, stdout, stderr = run_cli("rapid", example, "--models", f"sface,onnx:{onnx_model}", "--groups",
                                   example / "groups.csv", "--truth", example / "truth.csv", "--out", out,
                                   "--cache", work / "cache")
    return code, stdout, stderr, out


def test_user_onnx_model_runs_through_the_folder_study(run, onnx_model):
    code, stdout, stderr, out = run
    assert code == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["models"]) == ["sface", "tiny"]
    assert summary["models"]["tiny"]["spec"] == f"onnx:{onnx_model}"
    assert summary["models"]["tiny"]["model_id"].startswith("tiny-")
    rates = pd.read_csv(out / "rates.csv")
    assert set(rates["system"]) == {"sface", "tiny"}
    assert set(rates["group"]) == {"all", "female", "male"} and set(rates["fmr"]) == {0.1, 0.01}
    labels = pd.read_csv(out / "labels.csv")
    assert {"label", "label_sface", "label_tiny"} <= set(labels.columns)
    pairs = pd.read_csv(out / "pairs.csv")
    assert set(pairs["system"]) <= {"sface", "tiny"} and set(pairs["genuine"]) <= {0, 1}
    assert (out / "rates.png").stat().st_size > 10_000


def test_minimums_come_first_then_one_line_per_query(run):
    _, stdout, _, _ = run
    lines = stdout.splitlines()
    assert lines[0].startswith("facebias rapid: 4 query folders with 42 image files in ")
    assert lines[1] == "minimums:"
    assert "a query is used if its folder has >= 10 readable photos" in lines[2]
    assert "a query is included if >= 8 of them are kept" in lines[3]
    assert lines[5].strip() == "a rate at FMR f needs >= 10/f impostor pairs: 100 at FMR 0.1, 1000 at FMR 0.01"
    per_query = [x for x in lines if x.startswith("  person_")]
    assert len(per_query) == 4
    assert per_query[0].startswith("  person_00 (female): 11 photos, 1 dropped (duplicate: 1 near duplicate)")
    assert "dropped (detect: " in per_query[1] and "1 no face)" in per_query[1]
    assert lines[-1].startswith(f"wrote {run[3]}/: labels.csv, queries.csv, rates.csv, dropped.csv, pairs.csv")


def test_unresolved_rates_warn_naming_the_rule(run):
    code, stdout, stderr, _ = run
    warn = [x for x in stderr.splitlines() if x.startswith("facebias: warning: ")]
    assert warn and len(warn) == len(stderr.splitlines())  # every stderr line is a warning line
    assert any(x.startswith("facebias: warning: FNMR at FMR 0.01 unresolved (NaN) for ")
               and "impostor pairs < 1000 (min_impostor_factor 10 / FMR 0.01)" in x for x in warn)
    assert "n/a: " in stdout and "impostor pairs < 1000" in stdout


def test_truth_check_is_printed_and_written(run):
    """--truth: the printed line and truth_check.csv agree with a plain join of the written
    labels and truth.csv (the accuracy itself is tested with sface + dlib in
    tests/studies/rapid/test_folders.py; the tiny model here is a random projection)."""
    _, stdout, _, out = run
    t = json.loads((out / "summary.json").read_text())["truth"]
    truth = pd.read_csv(Path(json.loads((out / "summary.json").read_text())["folder"]) / "truth.csv")
    lab = pd.read_csv(out / "labels.csv").merge(truth, on="face")
    lab = lab[lab["label"] >= 0]
    assert t["label_accuracy"] == pytest.approx((lab["label"] == lab["is_target"]).mean())
    line = next(x for x in stdout.splitlines() if x.startswith("truth ("))
    assert f"label accuracy {t['label_accuracy']:.3f} on {len(lab)} labelled photos of {len(truth)}" in line
    check = pd.read_csv(out / "truth_check.csv")
    assert len(check) == len(truth)
    assert set(check["stage"]) <= {"labelled", "excluded", "detect", "duplicate", "read", "query", "embed"}


# --------------------------------------------------------------------------- guards
def _one_error(code: int, stdout: str, stderr: str) -> str:
    assert code == 2 and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("facebias: error: "), stderr
    return lines[0]


def test_folder_errors_are_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    msg = _one_error(*run_cli("rapid", tmp_path / "empty", "--out", tmp_path / "o"))
    assert msg == (f"facebias: error: {tmp_path / 'empty'}: the folder is empty; put each searched name's "
                   f"photos in its own folder, {tmp_path / 'empty'}/<query>/*.jpg")
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.png").write_bytes(b"x")
    assert "no query sub-folders (1 image files directly in it)" in _one_error(
        *run_cli("rapid", tmp_path / "loose", "--out", tmp_path / "o"))
    (tmp_path / "noimg" / "q").mkdir(parents=True)
    assert "none of its 1 query folders holds an image file" in _one_error(
        *run_cli("rapid", tmp_path / "noimg", "--out", tmp_path / "o"))
    assert "no such folder" in _one_error(*run_cli("rapid", tmp_path / "nope", "--out", tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_bad_models_fail_in_one_line_before_any_work(example, tmp_path):
    # a bad spec is named before the folder is even looked at
    msg = _one_error(*run_cli("rapid", tmp_path / "nope", "--models", "sface,arcface", "--out", tmp_path / "o"))
    assert msg.startswith("facebias: error: --models: model 'arcface': unknown model; a model is 'sface'")
    msg = _one_error(*run_cli("rapid", example, "--models", "sface,onnx:missing.onnx", "--out", tmp_path / "o"))
    assert msg.startswith("facebias: error: --models: model 'onnx:missing.onnx'") and "missing.onnx" in msg[40:]
    msg = _one_error(*run_cli("rapid", example, "--models", "sface,onnx:a/sface.onnx", "--out", tmp_path / "o"))
    assert "two models are named 'sface'" in msg
    assert "--models: empty model" in _one_error(*run_cli("rapid", example, "--models", "sface,,dlib",
                                                          "--out", tmp_path / "o"))
    assert not (tmp_path / "o").exists()  # nothing was written


def test_other_input_errors_are_one_line(example, tmp_path):
    assert "--fmr" in _one_error(*run_cli("rapid", example, "--fmr", "0", "--out", tmp_path / "o"))
    g = tmp_path / "g.csv"
    g.write_text("query,group\nperson_00,F\n")
    msg = _one_error(*run_cli("rapid", example, "--groups", g, "--out", tmp_path / "o"))
    assert msg.startswith(f"facebias: error: {g}: no group for 3 query folder(s): 'person_01'")
    msg = _one_error(*run_cli("rapid-example", example))
    assert "exists and is not empty" in msg
    assert "error: --others: must be fewer than photos=2" in _one_error(
        *run_cli("rapid-example", tmp_path / "e", "--photos", 2, "--others", 2))
    assert "error: --queries: must be an integer >= 2" in _one_error(
        *run_cli("rapid-example", tmp_path / "e", "--queries", 1))


def test_too_few_photos_warns_naming_the_rule(example, work, tmp_path):
    # the run itself succeeds (exit 0) but says why its tables are empty
    code, stdout, stderr = run_cli("rapid", example, "--min-photos", 12, "--out", tmp_path / "o",
                                   "--cache", work / "cache")
    assert code == 0
    warn = stderr.splitlines()
    assert ("facebias: warning: no face left to label: every query was dropped before estimation (query: "
            "42 in a query with fewer than min_photos=12 readable photos)") in warn
    assert any(x.startswith("facebias: warning: rates: no genuine or impostor pairs") for x in warn)
    assert "no face left" in stdout  # the per-query lines say it too


def test_too_few_faces_warns_naming_the_rule(example, onnx_model, work, tmp_path):
    """The issue's 20 images: two folders of 7 photos, every query excluded as too_few_faces."""
    root = tmp_path / "small"
    for q in ("person_00", "person_02"):
        (root / q).mkdir(parents=True)
        for p in sorted((example / q).glob("photo_0[0-6].png")):
            shutil.copy(p, root / q / p.name)
    code, stdout, stderr = run_cli("rapid", root, "--min-photos", 5, "--out", tmp_path / "o",
                                   "--models", f"sface,onnx:{onnx_model}", "--cache", work / "cache")
    assert code == 0
    assert ("facebias: warning: all 2 queries excluded: too_few_faces in 2 (fewer than min_faces_query=8 "
            "faces scored by every system)") in stderr.splitlines()
    assert stdout.count("excluded: too_few_faces") == 2
    assert (pd.read_csv(tmp_path / "o" / "labels.csv")["label"] == -1).all()
