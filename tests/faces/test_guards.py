"""Issue 19: hostile inputs to the face pipeline. Detection does not depend on what was
processed before (tiny/blank images after a real face), huge images are a failure of that
file only, user models with a fixed batch or another input size get clear handling, RGBA
arrays are measured like RGBA files, and the embedding cache shows a progress bar."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import skimage.data

from facebias.faces import detect as D
from facebias.faces import factors as F
from facebias.faces import load_detector, load_embedder
from facebias.faces.detect import Detection


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return skimage.data.astronaut()


def _hostile() -> dict[str, np.ndarray]:
    """Blank, tiny and strip images: none holds a face."""
    return {
        "1px": np.zeros((1, 1, 3), np.uint8),
        "8px": np.full((8, 8, 3), 128, np.uint8),
        "32px": np.full((32, 32, 3), 200, np.uint8),
        "strip": np.full((20, 300, 3), 90, np.uint8),
        "strip_t": np.full((300, 20, 3), 90, np.uint8),
        "blank512": np.zeros((512, 512, 3), np.uint8),
    }


def _permutations(names: list[str], k: int = 6) -> list[list[str]]:
    """``k`` distinct orders, fixed by a seed; the real face first, last and in between."""
    perms = list(itertools.permutations(names))
    random.Random(19).shuffle(perms)
    return [list(p) for p in perms[:k]]


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_enrolment_does_not_depend_on_order(model, astronaut):
    images = {"astronaut": astronaut, **_hostile()}
    emb = load_embedder(model)
    seen = []
    for order in _permutations(list(images)):
        res = emb.embed([images[n] for n in order])  # dlib raised here before the fix
        enrolled = dict(zip(order, res.enrolled.tolist(), strict=True))
        reasons = dict(zip(order, res.reasons, strict=True))
        vec = res.vectors[order.index("astronaut")]
        seen.append((enrolled, reasons, vec))
    for enrolled, reasons, vec in seen:
        assert enrolled == {n: n == "astronaut" for n in images}
        assert reasons == seen[0][1]
        np.testing.assert_array_equal(vec, seen[0][2])
        for name in ("1px", "8px", "32px", "strip", "strip_t"):
            assert reasons[name].startswith("image too small"), reasons[name]
            assert f"{D.MIN_IMAGE_SIDE} px" in reasons[name]
        assert reasons["blank512"].startswith("no face detected")


def test_measure_factors_does_not_depend_on_order(astronaut):
    images = {"astronaut": astronaut, **_hostile()}
    seen = []
    for order in _permutations(list(images), k=4):
        seen.append({n: F.measure_factors(images[n]) for n in order})  # OverflowError before
    for got in seen:
        assert got == seen[0]
        assert got["astronaut"]["detector_score"] > 0.5
        for name in _hostile():
            assert all(v is None for v in got[name].values()), name


def test_factor_table_says_why_tiny_images_have_no_factors():
    table = F.factor_table([np.zeros((8, 8, 3), np.uint8)], progress=False)
    assert table["reason"][0].startswith("image too small")


@pytest.mark.parametrize("name", ["yunet", "dlib_hog", "mediapipe"])
def test_detectors_see_nothing_in_tiny_images_after_a_face(name, astronaut):
    det = load_detector(name)
    first = det.detect(astronaut)
    hostile = _hostile()
    for order in _permutations(["astronaut", *hostile]):
        for n in order:
            if n == "astronaut":
                det.detect(astronaut)
            else:
                assert det.detect(hostile[n]) == [], n
    again = det.detect(astronaut)  # the same detections, whatever came before
    assert [d.box for d in again] == [d.box for d in first]
    np.testing.assert_array_equal(again[0].landmarks, first[0].landmarks)


def test_plausible_detections_rejects_non_finite_and_out_of_image():
    lm = np.array([[40.0, 40], [60, 40], [50, 50], [42, 60], [58, 60]])

    def det(box, landmarks=lm):
        return Detection(box, np.asarray(landmarks, np.float64), 0.9, "test")

    good = det((30.0, 30.0, 40.0, 40.0))
    edge = det((-10.0, 30.0, 40.0, 40.0), lm - [30, 0])  # box past the left edge, eyes inside
    bad = [
        det((float("-inf"), -1e20, float("inf"), 0.0)),
        det((30.0, 30.0, float("nan"), 40.0)),
        det((30.0, 30.0, 0.0, 40.0)),  # empty box
        det((1.5e6, 2.3e6, 40.0, 40.0)),  # box centre far outside
        det((30.0, 30.0, 40.0, 40.0), lm + [0, 60]),  # mouth below the image
        det((30.0, 30.0, 40.0, 40.0), np.where(lm == 50, np.nan, lm)),
    ]
    assert D.plausible_detections([good, *bad, edge], (100, 100, 3)) == [good, edge]
    assert D.plausible_detections([good], (20, 20, 3)) == []  # landmarks outside a 20 px image


# --------------------------------------------------------------------------- huge images


def test_decompression_bomb_is_a_failure_of_that_file_only(tmp_path, astronaut, monkeypatch):
    import cv2
    from PIL import Image

    from facebias.faces import EmbeddingCache, ImageReadError, read_image
    from facebias.faces.embed import embed_many

    good = tmp_path / "good.png"
    cv2.imwrite(str(good), cv2.cvtColor(astronaut, cv2.COLOR_RGB2BGR))  # 262,144 px
    huge = tmp_path / "huge.png"
    Image.new("RGB", (1500, 1000), (120, 120, 120)).save(huge)  # 1.5 Mpx, compresses tiny
    # Pillow refuses images over twice this many pixels: 1.5 M > 2 x 300,000 >= 262,144
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 300_000)
    with pytest.raises(ImageReadError, match=r"huge\.png: too large.*1500000 pixels.*MAX_IMAGE_PIXELS"):
        read_image(huge)
    sface = load_embedder("sface")
    paths = [good, huge, good]
    results = {
        "embed_paths": sface.embed_paths(paths),
        "embed_many": embed_many(sface, paths),
        "cache": EmbeddingCache(tmp_path / "cache").embed(sface, [str(p) for p in paths]),
    }
    for how, res in results.items():
        assert res.enrolled.tolist() == [True, False, True], how
        assert "huge.png" in res.reasons[1] and "too large" in res.reasons[1], how
        assert np.isnan(res.vectors[1]).all(), how
        np.testing.assert_array_equal(res.vectors[0], res.vectors[2])
    table = F.factor_table(paths, progress=False)
    assert table["detector_score"].notna().tolist() == [True, False, True]
    assert "too large" in table["reason"][1]


# --------------------------------------------------------------------------- user models

NOISE = np.random.default_rng(0).integers(0, 256, (256, 256, 3), np.uint8)


def _tiny_conv(size: int = 112):
    """A small conv net (36-d out for 112 px input; 64-d for 160 px)."""
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 5, stride=4), torch.nn.ReLU(), torch.nn.AvgPool2d(9),
        torch.nn.Flatten(),
    ).eval()


def _export_fixed(module, path, batch: int, size: int = 112) -> None:
    """ONNX export without dynamic axes: the model only takes batches of ``batch``."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.zeros(batch, 3, size, size),), str(path), dynamo=False,
                          input_names=["x"], output_names=["y"])


@pytest.mark.parametrize("batch", [1, 2])
def test_fixed_batch_onnx_model_is_fed_its_batch(tmp_path, astronaut, batch):
    from facebias.faces import OnnxEmbedder, TorchEmbedder

    module = _tiny_conv()
    path = tmp_path / f"fixed{batch}.onnx"
    _export_fixed(module, path, batch)
    onx = OnnxEmbedder(path)  # raised onnxruntime's INVALID_ARGUMENT before the fix
    reference = TorchEmbedder(module, device="cpu")  # the same net, any batch
    assert onx.dim == reference.dim == 36
    crops = [np.random.default_rng(i).integers(0, 256, (112, 112, 3), np.uint8) for i in range(5)]
    np.testing.assert_allclose(onx.embed_aligned(crops), reference.embed_aligned(crops), atol=1e-5)
    res = onx.embed([astronaut, NOISE, astronaut])
    ref = reference.embed([astronaut, NOISE, astronaut])
    assert res.enrolled.tolist() == ref.enrolled.tolist() == [True, False, True]
    np.testing.assert_allclose(res.vectors, ref.vectors, atol=1e-5)


def test_onnx_model_of_another_input_size_names_the_option(tmp_path):
    from facebias.faces import OnnxEmbedder

    path = tmp_path / "m160.onnx"
    _export_fixed(_tiny_conv(), path, 1, size=160)
    with pytest.raises(ValueError, match=r"m160\.onnx.*160 x 160.*input_size=160"):
        OnnxEmbedder(path)
    assert OnnxEmbedder(path, input_size=160).dim == 4 * 4 * 4  # conv 39 px -> pool 4


def test_torch_model_of_another_input_size_names_the_option():
    import torch

    from facebias.faces import TorchEmbedder

    torch.manual_seed(0)
    only160 = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 4, stride=4), torch.nn.Flatten(),
                                  torch.nn.Linear(2 * 40 * 40, 8))
    with pytest.raises(ValueError, match=r"input_size.*runs on 160 x 160.*input_size=160"):
        TorchEmbedder(only160, device="cpu")
    emb = TorchEmbedder(only160, input_size=160, device="cpu")
    assert emb.dim == 8 and emb.embed_aligned([np.zeros((160, 160, 3), np.uint8)]).shape == (1, 8)


# --------------------------------------------------------------------------- RGBA, BRISQUE, progress


def test_rgba_arrays_are_read_like_rgba_files(tmp_path, astronaut):
    from PIL import Image

    from facebias.faces import read_image
    from facebias.faces.images import as_rgb_uint8

    rng = np.random.default_rng(4)
    rgba = np.dstack([astronaut, rng.integers(0, 256, astronaut.shape[:2], np.uint8)])
    pil_rgb = np.asarray(Image.fromarray(rgba, "RGBA").convert("RGB"))  # what Pillow does
    np.testing.assert_array_equal(as_rgb_uint8(rgba), pil_rgb)
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    np.testing.assert_array_equal(read_image(tmp_path / "a.png"), pil_rgb)
    assert F.measure_factors(rgba) == F.measure_factors(astronaut)  # ValueError before
    emb = load_embedder("sface")
    np.testing.assert_array_equal(emb.embed([rgba]).vectors, emb.embed([astronaut]).vectors)
    with pytest.raises(ValueError, match="shape"):
        as_rgb_uint8(np.zeros((10, 10, 5), np.uint8))


def _svr_by_hand(bgr: np.ndarray, folder) -> float:
    """BRISQUE's SVR output rebuilt from OpenCV's parts: features, min-max scaled to [-1, 1]
    with the range file, then the LIVE model's SVM (no clipping)."""
    import cv2

    feats = cv2.quality.QualityBRISQUE_computeFeatures(np.ascontiguousarray(bgr)).ravel()
    fs = cv2.FileStorage(str(folder / "brisque_range_live.yml"), cv2.FILE_STORAGE_READ)
    lo, hi = fs.getNode("range").mat()
    scaled = (-1 + 2 * (feats - lo) / (hi - lo)).astype(np.float32)[None]
    svm = cv2.ml.SVM_load(str(folder / "brisque_model_live.yml"))
    return float(svm.predict(scaled)[1][0, 0])


def test_brisque_zero_is_opencv_clipping_a_negative_score(astronaut, brisque_models):
    import cv2
    from skimage.color import rgb2gray
    from skimage.util import img_as_ubyte

    grey = img_as_ubyte(rgb2gray(astronaut))  # the grey copy: BRISQUE 0.00
    bx, by, bw, bh = F._find_face(grey)[0]
    x, y = int(np.floor(bx)), int(np.floor(by))  # the crop measure_factors takes
    w, h = int(np.ceil(bx + bw)) - x, int(np.ceil(by + bh)) - y
    crops = {
        "grey face": np.dstack([grey[y : y + h, x : x + w]] * 3),
        "face": astronaut[y : y + h, x : x + w, ::-1],
        "blurred face": cv2.GaussianBlur(astronaut[y : y + h, x : x + w, ::-1], (0, 0), 3),
        "noisy face": np.clip(astronaut[y : y + h, x : x + w, ::-1]
                              + np.random.default_rng(5).normal(0, 25, (h, w, 3)), 0, 255
                              ).astype(np.uint8),
    }
    assert F.measure_factors(grey)["brisque"] == 0.0
    for name, bgr in crops.items():
        raw = _svr_by_hand(bgr, brisque_models)
        assert F.brisque(bgr, clip=False) == pytest.approx(raw, abs=1e-4), name
        assert F.brisque(bgr) == pytest.approx(min(max(raw, 0.0), 100.0), abs=1e-4), name
    assert F.brisque(crops["grey face"]) == 0.0 and F.brisque(crops["grey face"], clip=False) < 0
    assert F.brisque(crops["blurred face"], clip=False) > 0


def test_embedding_cache_shows_a_progress_bar_by_default(tmp_path, astronaut, capsys):
    from facebias.faces import EmbeddingCache

    sface = load_embedder("sface")
    images = [astronaut, NOISE, astronaut[:, ::-1].copy()]
    EmbeddingCache(tmp_path / "a").embed(sface, images)
    err = capsys.readouterr().err
    assert "embed sface" in err and "3/3" in err  # tqdm's bar, counted in images
    EmbeddingCache(tmp_path / "b").embed(sface, images, progress=False)
    assert capsys.readouterr().err == ""
