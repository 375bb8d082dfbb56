"""Embedding cache: a rerun reuses entries (same vectors, failures to enrol included),
keys separate models and images, a crash mid-write leaves no entry, a corrupt entry is
recomputed."""

import numpy as np
import pytest
from skimage import data

from facebias.faces import EmbeddingCache, load_embedder
from facebias.faces.cache import image_key


@pytest.fixture(scope="module")
def images():
    a = data.astronaut()
    noise = np.random.default_rng(0).integers(0, 256, (128, 128, 3), dtype=np.uint8)
    return [a, noise, a[:, ::-1].copy()]


@pytest.fixture(scope="module")
def sface():
    return load_embedder("sface")


def test_rerun_reuses_every_entry(tmp_path, images, sface):
    cache = EmbeddingCache(tmp_path)
    cold = cache.embed(sface, images)
    assert (cache.hits, cache.misses) == (0, 3)
    fresh = sface.embed(images)
    np.testing.assert_array_equal(cold.vectors, fresh.vectors)
    warm = EmbeddingCache(tmp_path)
    again = warm.embed(sface, images)
    assert (warm.hits, warm.misses) == (3, 0)
    np.testing.assert_array_equal(again.vectors, cold.vectors)  # NaN rows compare equal too
    assert again.enrolled.tolist() == [True, False, True]
    assert again.reasons == cold.reasons and "no face" in again.reasons[1]


def test_keys_separate_images_and_models(tmp_path, images, sface):
    a = images[0]
    b = a.copy()
    b[0, 0, 0] ^= 1
    assert image_key(a) == image_key(a.copy()) != image_key(b)
    assert image_key(a) != image_key(a.reshape(256, 1024, 3))
    cache = EmbeddingCache(tmp_path)
    cache.embed(sface, [a])
    cache.embed(load_embedder("dlib"), [a])
    assert cache.misses == 2  # another model never reads sface's entry


def test_crash_mid_write_leaves_no_entry(tmp_path, images, sface, monkeypatch):
    cache = EmbeddingCache(tmp_path)

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("facebias.io.os.replace", boom)
    with pytest.raises(KeyboardInterrupt):
        cache.embed(sface, images[:1])
    monkeypatch.undo()
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no entry, no temp file
    cache.embed(sface, images[:1])
    assert cache.misses == 2 and len(list(tmp_path.rglob("*.emb"))) == 1


def test_corrupt_entry_is_recomputed(tmp_path, images, sface):
    cache = EmbeddingCache(tmp_path)
    first = cache.embed(sface, images[:1])
    (entry,) = tmp_path.rglob("*.emb")
    entry.write_bytes(b"{not json")
    again = EmbeddingCache(tmp_path)
    out = again.embed(sface, images[:1])
    assert again.misses == 1
    np.testing.assert_array_equal(out.vectors, first.vectors)
