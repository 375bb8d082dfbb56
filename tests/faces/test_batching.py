"""Issue 20: the embedders' batched model calls and the worker pool give the rows of the
one-at-a-time path, bit for bit, with the same enrolment and reasons in the same order."""

from __future__ import annotations

import numpy as np
import pytest
import skimage.data
from faces_fixtures import assert_same_embeddings as _same

from facebias.faces import load_embedder
from facebias.faces.detect import get_detector, primary_face
from facebias.faces.embed import OnnxEmbedder, embed_many, pool_embed


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    """Six faces (astronaut and cameraman, shifted and mirrored) and four failures: noise,
    a tiny image, a float image and a gray blank."""
    faces = (skimage.data.astronaut(), np.stack([skimage.data.camera()] * 3, axis=-1))
    out = []
    for i in range(6):
        img = np.roll(faces[i % 2], 7 * i, axis=1)
        out.append(img[:, ::-1].copy() if i >= 3 else img)
    noise = np.random.default_rng(20).integers(0, 256, (256, 256, 3), np.uint8)
    out[2:2] = [noise, np.zeros((8, 8, 3), np.uint8)]
    out += [np.zeros((64, 64, 3), np.float32), np.full((300, 200), 90, np.uint8)]
    return out


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_batched_model_call_equals_one_at_a_time(model, images):
    """``embed_aligned`` on all crops at once (dlib: one ``compute_face_descriptor`` call on
    the list of chips; sface: one batch) equals one crop per call, bit for bit."""
    emb, det = load_embedder(model), get_detector("yunet")
    crops = []
    for img in images[:2] + images[4:8]:
        crops.append(emb.align(img, primary_face(det.detect(img), img.shape)))
    batch = emb.embed_aligned(crops)
    single = np.concatenate([emb.embed_aligned([c]) for c in crops])
    assert batch.shape == (6, 128) and np.isfinite(batch).all()
    np.testing.assert_array_equal(batch, single)


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_embed_of_a_batch_equals_embed_of_each_image(model, images):
    emb = load_embedder(model)
    res = emb.embed(images)
    assert res.enrolled.tolist() == [True, True, False, False] + [True] * 4 + [False, False]
    assert res.reasons[2] == "no face detected (yunet)"
    assert res.reasons[3].startswith("image too small")
    assert res.reasons[8].startswith("invalid image")
    for i, img in enumerate(images):
        one = emb.embed([img])
        np.testing.assert_array_equal(one.vectors[0], res.vectors[i])
        assert one.reasons == [res.reasons[i]]


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_two_workers_give_the_serial_rows(model, images):
    """The pool (spawned processes, the model loaded once in each, 4 chunks of 3) returns what
    ``embed`` returns here, in input order, also reversed and on a second call."""
    emb = load_embedder(model)
    _same(emb.embed(images, workers=2), emb.embed(images))
    rev = images[::-1]
    _same(emb.embed(rev, workers=2), emb.embed(rev))
    _same(embed_many(emb, images, workers=2), emb.embed(images))


def test_pool_reads_paths_and_keeps_unreadable_files(tmp_path, images):
    import cv2

    paths = []
    for i, img in enumerate(images[:2] + images[4:6]):
        paths.append(tmp_path / f"{i}.png")
        cv2.imwrite(str(paths[-1]), img[:, :, ::-1])
    (tmp_path / "bad.png").write_bytes(b"not an image")
    paths.insert(1, tmp_path / "bad.png")
    emb = load_embedder("sface")
    pooled = embed_many(emb, paths, workers=2)
    _same(pooled, emb.embed_paths(paths))
    assert pooled.enrolled.tolist() == [True, False, True, True, True]
    assert "bad.png" in pooled.reasons[1]


def test_pool_arguments_are_checked(tmp_path):
    emb = load_embedder("sface")
    with pytest.raises(ValueError, match="workers must be >= 1"):
        pool_embed(emb, [], 0)
    with pytest.raises(ValueError, match="n_workers"):
        embed_many(emb, [], compute="local", workers=2)
    user = OnnxEmbedder.__new__(OnnxEmbedder)  # a user model not loaded from a spec (no session
    user.name = "mine"                         # needed to refuse): workers cannot rebuild it
    with pytest.raises(ValueError, match=r"loaded by load_embedder\(spec\)"):
        pool_embed(user, [], 2)



#: Evaluated in a pool worker (test functions do not import there): its pid, OpenCV's
#: threads, the models it holds and the id of the one its chunks run on.
_WORKER_STATE = ("(__import__('os').getpid(), __import__('cv2').getNumThreads(), "
                 "tuple(sorted(__import__('sys').modules['facebias.faces.embed']._SHARED)), "
                 "id(__import__('sys').modules['facebias.faces.embed']._POOL_WORKER[0]))")


@pytest.mark.parametrize("workers,threads", [(2, None), (1, 1)])
def test_pool_workers_pin_their_threads_and_load_the_model_once(images, workers, threads):
    """Every worker runs OpenCV on its share of the cores (1 thread each when there are as
    many workers as cores, or the ``threads`` asked for) and keeps the one model it loaded."""
    from facebias.faces.embed import _POOLS, pool_threads

    emb = load_embedder("sface")
    _same(pool_embed(emb, images, workers, threads=threads), emb.embed(images))
    pinned = pool_threads(workers) if threads is None else threads
    assert pool_threads(2, cpus=2) == 1 and pool_threads(1, cpus=2) == 2
    pool = _POOLS[(("sface", "yunet"), workers, pinned)]
    states = {f.result() for f in [pool.submit(eval, _WORKER_STATE) for _ in range(4 * workers)]}
    pids = {s[0] for s in states}
    assert 1 <= len(pids) <= workers and len(states) == len(pids)  # one model per process
    assert all(s[1] == pinned and s[2] == (("sface", "yunet"),) for s in states)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        pool_embed(emb, images, 2, threads=0)
