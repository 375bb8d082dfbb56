"""Issue 20: a study that needs both factors and embeddings detects each image once
(``detect_images``, then ``detections=``), and gets what the two separate calls give, bit
for bit, on real faces and on the guards' odd images (tiny, strips, blank, noise, invalid)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import skimage.data
from faces_fixtures import assert_same_embeddings as _same

from facebias.faces import EmbeddingCache, detect_images, factor_table, load_embedder
from facebias.faces import detect as D
from facebias.faces.embed import embed_many
from facebias.faces.factors import measure_factors


def _images() -> list[np.ndarray]:
    """Four faces (astronaut and cameraman, shifted, mirrored, darkened) and the odd ones:
    tiny, strips, a 32 px and a 512 px blank, noise, a float image and a gray blank."""
    faces = (skimage.data.astronaut(), np.stack([skimage.data.camera()] * 3, axis=-1))
    out = []
    for i in range(4):
        img = np.roll(faces[i % 2], 7 * i, axis=1)
        img = img[:, ::-1].copy() if i >= 2 else img
        out.append((img * (1.0 - 0.1 * i)).astype(np.uint8))
    return [*out[:2],
            np.zeros((1, 1, 3), np.uint8), np.full((8, 8, 3), 128, np.uint8),
            np.full((32, 32, 3), 200, np.uint8), np.full((20, 300, 3), 90, np.uint8),
            np.full((300, 20, 3), 90, np.uint8), np.zeros((512, 512, 3), np.uint8),
            *out[2:],
            np.random.default_rng(20).integers(0, 256, (256, 256, 3), np.uint8),
            np.zeros((64, 64, 3), np.float32), np.full((300, 200), 90, np.uint8)]


#: which of :func:`_images` hold a face, and which the detector is run on (valid, >= 33 px)
FACES = [0, 1, 8, 9]
SEARCHED = [0, 1, 7, 8, 9, 10, 12]


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    return _images()


@pytest.fixture
def yunet_calls(monkeypatch) -> list[tuple[int, ...]]:
    """Shapes of the images YuNet's ``detect`` is called on in this process, in order."""
    calls: list[tuple[int, ...]] = []
    original = D.YuNetDetector.detect

    def counting(self, image):
        calls.append(np.shape(image))
        return original(self, image)

    monkeypatch.setattr(D.YuNetDetector, "detect", counting)
    return calls


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_detect_once_gives_the_two_separate_calls_bit_for_bit(model, images, yunet_calls):
    emb = load_embedder(model)
    factors = factor_table(images, progress=False)
    vectors = emb.embed(images)
    assert len(yunet_calls) == 2 * len(SEARCHED)  # today: each pipeline detects
    del yunet_calls[:]
    found = detect_images(images)
    once_factors = factor_table(images, progress=False, detections=found)
    once_vectors = emb.embed(images, detections=found)
    assert len(yunet_calls) == len(images)  # detect_images alone, once per image
    pd.testing.assert_frame_equal(once_factors, factors, check_exact=True)
    _same(once_vectors, vectors)
    assert vectors.enrolled.nonzero()[0].tolist() == FACES
    assert factors["yaw"].notna().to_numpy().nonzero()[0].tolist() == FACES
    assert [i for i, f in enumerate(found) if f] == FACES


def test_measure_factors_takes_the_detections_of_one_image(images, yunet_calls):
    found = detect_images(images)
    del yunet_calls[:]
    for img, faces in zip(images[:9], found[:9], strict=True):
        assert measure_factors(img, detections=faces) == measure_factors(img)
    assert len(yunet_calls) == len([i for i in SEARCHED if i < 9])  # only the second calls


def test_detections_travel_with_the_images_to_the_pool_and_the_cache(images, tmp_path, yunet_calls):
    emb = load_embedder("sface")
    serial = emb.embed(images)
    found = detect_images(images)
    del yunet_calls[:]
    _same(emb.embed(images, workers=2, detections=found), serial)
    _same(embed_many(emb, images, detections=found), serial)
    _same(embed_many(emb, images, workers=2, detections=found), serial)
    cache = EmbeddingCache(tmp_path)
    _same(cache.embed(emb, images, progress=False, detections=found), serial)
    assert not yunet_calls  # nothing detected again here (the pool workers: next test)
    assert cache.misses == len(images)
    _same(EmbeddingCache(tmp_path).embed(emb, images, progress=False, detections=found), serial)


def test_given_detections_are_used_not_redone(images, yunet_calls):
    """An empty list says "no face" wherever the image is embedded: the pool workers, a
    serial chunk, the factor table; a None entry is detected there."""
    emb = load_embedder("sface")
    given = [[], None]
    for res in (emb.embed(images[:2], detections=given),
                emb.embed(images[:2], workers=2, detections=given),
                embed_many(emb, images[:2], detections=given)):
        assert res.enrolled.tolist() == [False, True]
        assert res.reasons[0] == "no face detected (yunet)"
    table = factor_table(images[:2], progress=False, detections=given)
    assert table["reason"].iloc[0] == "no face detected" and table["yaw"].notna().iloc[1]


def test_detections_are_checked(images):
    emb = load_embedder("sface")
    with pytest.raises(ValueError, match="1 detection lists for 2 images"):
        emb.embed(images[:2], detections=[[]])
    with pytest.raises(ValueError, match="1 detection lists for 2 images"):
        factor_table(images[:2], progress=False, detections=[None])
    hog = detect_images(images[:1], "dlib_hog")
    assert hog[0] and hog[0][0].detector == "dlib_hog"
    with pytest.raises(ValueError, match="come from dlib_hog; this pipeline detects with yunet"):
        emb.embed(images[:1], detections=hog)
    with pytest.raises(ValueError, match="come from dlib_hog"):
        measure_factors(images[0], detections=hog[0])
    # an embedder on the HOG detector takes them
    hog_emb = load_embedder("dlib", detector="dlib_hog")
    _same(hog_emb.embed(images[:1], detections=hog), hog_emb.embed(images[:1]))
