"""Real-model tests for facebias.faces detection, alignment, image reading and embedding."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import skimage.data

from facebias.faces import (
    ARCFACE_TEMPLATE,
    ImageReadError,
    OnnxEmbedder,
    TorchEmbedder,
    align_arcface,
    estimate_transform,
    load_detector,
    load_embedder,
    read_image,
)
from facebias.faces.detect import MOUTH_HALF_WIDTH, five_from_blazeface, primary_face

NOISE = np.random.default_rng(0).integers(0, 256, (256, 256, 3), np.uint8)


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return skimage.data.astronaut()


@pytest.fixture(scope="module", params=["yunet", "dlib_hog", "mediapipe"])
def detector(request):
    return load_detector(request.param)


@pytest.fixture(scope="module", params=["dlib", "sface"])
def embedder(request):
    return load_embedder(request.param)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_detectors_find_one_face_with_ordered_landmarks(detector, astronaut):
    dets = detector.detect(astronaut)
    assert len(dets) == 1
    d = dets[0]
    assert d.detector == detector.name and d.score > 0
    assert d.landmarks.shape == (5, 2) and d.landmarks.dtype == np.float64
    x, y, w, h = d.box
    lm = d.landmarks
    assert np.all((lm[:, 0] >= x) & (lm[:, 0] <= x + w) & (lm[:, 1] >= y) & (lm[:, 1] <= y + h))
    l_eye, r_eye, nose, l_mouth, r_mouth = lm
    assert l_eye[0] < r_eye[0] and l_mouth[0] < r_mouth[0]
    assert max(l_eye[1], r_eye[1]) < nose[1] < min(l_mouth[1], r_mouth[1])


def test_detector_accepts_gray_and_rejects_bad_input(detector, astronaut):
    gray = cv2.cvtColor(astronaut, cv2.COLOR_RGB2GRAY)
    assert len(detector.detect(gray)) >= 1
    with pytest.raises(ValueError, match="uint8"):
        detector.detect(astronaut.astype(np.float32))
    with pytest.raises(ValueError, match="shape"):
        detector.detect(np.zeros((10, 10, 5), np.uint8))  # RGBA (4) is valid since issue 19


def test_detectors_agree_on_the_astronaut_landmarks(astronaut):
    """Three independent detectors put the five points within 20% of the eye distance (dlib takes the outer lip corners)."""
    lms = {n: load_detector(n).detect(astronaut)[0].landmarks for n in ("yunet", "dlib_hog", "mediapipe")}
    iod = np.linalg.norm(lms["yunet"][1] - lms["yunet"][0])
    for name in ("dlib_hog", "mediapipe"):
        err = np.linalg.norm(lms[name] - lms["yunet"], axis=1) / iod
        assert err.max() < 0.2, (name, err)


def test_five_from_blazeface_mouth_corners_follow_the_eye_axis():
    kp = np.array([[40, 50], [80, 50], [60, 70], [60, 90], [20, 60], [100, 60]], float)
    five = five_from_blazeface(kp)
    half = MOUTH_HALF_WIDTH * 40
    np.testing.assert_allclose(five[3:], [[60 - half, 90], [60 + half, 90]])
    # rotating the keypoints rotates the result (corners stay on the rotated eye axis)
    t = np.deg2rad(30)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    np.testing.assert_allclose(five_from_blazeface(kp @ rot.T), five @ rot.T, atol=1e-9)
    with pytest.raises(ValueError, match="BlazeFace"):
        five_from_blazeface(kp[:5])


def test_primary_face_is_most_central(detector, astronaut):
    d = detector.detect(astronaut)[0]
    far = type(d)((0.0, 0.0, 10.0, 10.0), d.landmarks, 0.99, d.detector)
    assert primary_face([far, d], astronaut.shape) is d
    assert primary_face([], astronaut.shape) is None


def test_noise_fails_to_enrol_and_batch_keeps_order(embedder, astronaut):
    res = embedder.embed([NOISE, astronaut, NOISE])
    assert res.vectors.shape == (3, embedder.dim) and res.vectors.dtype == np.float32
    assert res.enrolled.tolist() == [False, True, False]
    assert np.isnan(res.vectors[[0, 2]]).all() and np.isfinite(res.vectors[1]).all()
    assert res.reasons[1] is None and "no face" in res.reasons[0] and "no face" in res.reasons[2]
    alone = embedder.embed([astronaut]).vectors[0]
    np.testing.assert_allclose(res.vectors[1], alone, atol=1e-6)
    assert abs(np.linalg.norm(alone) - 1) < 1e-5


def test_flip_keeps_identity(embedder, astronaut):
    res = embedder.embed([astronaut, np.ascontiguousarray(astronaut[:, ::-1])])
    assert res.enrolled.all()
    assert np.allclose(np.linalg.norm(res.vectors, axis=1), 1, atol=1e-5)
    assert cos(res.vectors[0], res.vectors[1]) > 0.8


def test_same_person_closer_than_other_person(embedder, astronaut):
    det = load_detector("yunet").detect(astronaut)[0]
    anchor = embedder.align(astronaut, det)
    bright = np.clip(astronaut.astype(np.float64) * 1.15 + 10, 0, 255).astype(np.uint8)
    small = cv2.resize(bright, (400, 400), interpolation=cv2.INTER_AREA)
    same = embedder.embed([small])
    assert same.enrolled.all()
    lfw = skimage.data.lfw_subset()[0]
    other = cv2.resize((lfw * 255).round().astype(np.uint8), (embedder.crop_size,) * 2)
    a, b = embedder.embed_aligned([anchor, np.stack([other] * 3, axis=-1)])
    assert cos(a, same.vectors[0]) > cos(a, b)
    with pytest.raises(ValueError, match="needs"):
        embedder.embed_aligned([np.zeros((20, 20, 3), np.uint8)])


def test_model_id_and_unknown_names(embedder):
    assert embedder.model_id.startswith(embedder.name + "-") and embedder.dim == 128
    with pytest.raises(ValueError, match="model 'nope': unknown model; a model is 'sface', 'dlib'"):
        load_embedder("nope")
    with pytest.raises(ValueError, match="unknown detector"):
        load_detector("nope")


def test_estimate_transform_recovers_similarity():
    rng = np.random.default_rng(1)
    for size in (112, 224):
        theta, scale = rng.uniform(-1, 1), rng.uniform(0.5, 3)
        rot = scale * np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        shift = rng.uniform(-50, 200, 2)
        src = ARCFACE_TEMPLATE @ rot.T + shift  # image points
        m = estimate_transform(src, size)
        expected_inv = np.linalg.inv(rot) * size / 112
        np.testing.assert_allclose(m[:, :2], expected_inv, atol=1e-8)
        np.testing.assert_allclose(
            src @ m[:, :2].T + m[:, 2], ARCFACE_TEMPLATE * size / 112, atol=1e-8
        )
    with pytest.raises(ValueError, match="shape"):
        estimate_transform(np.zeros((4, 2)))


def test_align_arcface_shape(astronaut):
    det = load_detector("yunet").detect(astronaut)[0]
    crop = align_arcface(astronaut, det.landmarks, size=112)
    assert crop.shape == (112, 112, 3) and crop.dtype == np.uint8


def _tiny_onnx(path, weight: np.ndarray) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [
            helper.make_node("Flatten", ["x"], ["f"], axis=1),
            helper.make_node("MatMul", ["f", "w"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 112, 112])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", weight.shape[1]])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_onnx_and_torch_embedders_match_numpy(tmp_path, astronaut):
    import torch

    rng = np.random.default_rng(2)
    weight = rng.standard_normal((3 * 112 * 112, 16)).astype(np.float32) / 100
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path, weight)
    crops = [rng.integers(0, 256, (112, 112, 3), np.uint8) for _ in range(3)]
    x = (np.stack(crops).astype(np.float32) - 127.5) / 127.5
    y = x.transpose(0, 3, 1, 2).reshape(3, -1).astype(np.float64) @ weight
    expected = y / np.linalg.norm(y, axis=1, keepdims=True)

    onx = OnnxEmbedder(path)
    assert onx.dim == 16 and onx.model_id.startswith("tiny-")
    np.testing.assert_allclose(onx.embed_aligned(crops), expected, atol=1e-5)

    linear = torch.nn.Linear(weight.shape[0], 16, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(weight.T.copy()))
    tch = TorchEmbedder(torch.nn.Sequential(torch.nn.Flatten(), linear), device="cpu")
    np.testing.assert_allclose(tch.embed_aligned(crops), expected, atol=1e-5)

    both = [onx.embed([astronaut, NOISE]), tch.embed([astronaut, NOISE])]
    for res in both:
        assert res.enrolled.tolist() == [True, False]
    np.testing.assert_allclose(both[0].vectors[0], both[1].vectors[0], atol=1e-5)


def test_embed_paths_records_unreadable_files(tmp_path, astronaut):
    good = tmp_path / "good.png"
    cv2.imwrite(str(good), cv2.cvtColor(astronaut, cv2.COLOR_RGB2BGR))
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(np.random.default_rng(3).integers(0, 256, 500, np.uint8).tobytes())
    missing = tmp_path / "missing.png"
    res = load_embedder("sface").embed_paths([good, bad, missing])
    assert res.enrolled.tolist() == [True, False, False]
    assert res.reasons[0] is None
    assert "unreadable image" in res.reasons[1] and str(bad) in res.reasons[1]
    assert "unreadable image" in res.reasons[2] and str(missing) in res.reasons[2]
    assert np.isnan(res.vectors[1:]).all()


def test_read_image(tmp_path, astronaut):
    good = tmp_path / "a.png"
    cv2.imwrite(str(good), cv2.cvtColor(astronaut, cv2.COLOR_RGB2BGR))
    np.testing.assert_array_equal(read_image(good), astronaut)
    gray = tmp_path / "g.png"
    cv2.imwrite(str(gray), astronaut[:, :, 0])
    assert read_image(gray).shape == (512, 512, 3)
    bad = tmp_path / "corrupt.jpg"
    bad.write_bytes(b"\xff\xd8\xff" + bytes(range(200)))
    with pytest.raises(ImageReadError, match="corrupt.jpg"):
        read_image(bad)
    with pytest.raises(ImageReadError, match="does not exist"):
        read_image(tmp_path / "nope.png")
    assert issubclass(ImageReadError, ValueError)


def test_embed_reads_paths_like_embed_paths_and_refuses_one_path_or_a_mix(tmp_path, astronaut):
    """``embed`` of file paths equals ``embed_paths`` of them bit for bit (before: a NaN row per
    path, "image must be a numpy array, got str"); one path (a str, which would be iterated by
    character) and a list mixing paths and arrays are refused, naming what was given."""
    emb = load_embedder("sface")
    p = tmp_path / "a.png"
    cv2.imwrite(str(p), cv2.cvtColor(astronaut, cv2.COLOR_RGB2BGR))
    got, ref = emb.embed([str(p), p]), emb.embed_paths([str(p), p])
    assert got.enrolled.tolist() == [True, True]
    np.testing.assert_array_equal(got.vectors, ref.vectors)
    np.testing.assert_array_equal(got.vectors[0], emb.embed([astronaut]).vectors[0])
    np.testing.assert_array_equal(emb.embed([p, p, p], workers=2).vectors, emb.embed_paths([p, p, p]).vectors)
    with pytest.raises(ValueError, match="one path"):
        emb.embed(str(p))
    with pytest.raises(ValueError, match="mixes file paths and arrays"):
        emb.embed([astronaut, str(p)])
