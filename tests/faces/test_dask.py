"""Issue 20: large embedding jobs on Dask load a built-in model once per worker process
(not once per chunk), and detections made once travel with the images to the workers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import skimage.data
from faces_fixtures import assert_same_embeddings as _same

from facebias.compute import ComputeConfig, dask_client
from facebias.faces import detect_images, factor_table, load_embedder
from facebias.faces.embed import embed_many


@pytest.fixture(scope="module")
def client():
    """The LocalCluster that ``compute: local`` starts: 2 single-threaded worker processes."""
    with dask_client(ComputeConfig(n_workers=2, threads_per_worker=1)) as c:
        yield c


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    """Ten 256 px faces (astronaut and cameraman, shifted) and a blank."""
    faces = (skimage.data.astronaut()[::2, ::2], np.stack([skimage.data.camera()[::2, ::2]] * 3, -1))
    return [np.roll(faces[i % 2], 5 * i, axis=1) for i in range(10)] + [np.zeros((256, 256, 3), np.uint8)]


def _load_counter():
    """Two functions to run on each worker (local, so cloudpickle sends them by value):
    start counting ``load_embedder`` calls there, with its models forgotten; the calls."""

    def start() -> None:
        import facebias.faces.embed as E

        E._SHARED.clear()
        original = getattr(E, "_uncounted_load", E.load_embedder)
        E._uncounted_load, E._model_loads = original, []

        def counting(*args):
            E._model_loads.append(args)
            return original(*args)

        E.load_embedder = counting

    def calls() -> list:
        import facebias.faces.embed as E

        return list(E._model_loads)

    return start, calls


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_model_is_loaded_once_per_worker_not_per_chunk(client, images, model):
    emb = load_embedder(model)
    emb.batch_size = 2  # 6 chunks on 2 workers
    start, calls = _load_counter()
    client.run(start)
    first = embed_many(emb, images, compute=client)
    second = embed_many(emb, images, compute=client)
    loads = client.run(calls)
    assert len(loads) == 2
    assert all(len(v) <= 1 for v in loads.values()), loads  # at most once per worker ...
    assert 1 <= sum(len(v) for v in loads.values()) < 6  # ... not once per chunk
    assert all(v == [(model, "yunet")] for v in loads.values() if v)
    serial = emb.embed(images)
    _same(first, serial)
    _same(second, serial)
    assert serial.enrolled.tolist() == [True] * 10 + [False]


def test_detections_travel_to_dask_workers(client, images):
    emb = load_embedder("sface")
    emb.batch_size = 4
    found = detect_images(images)
    got = embed_many(emb, images, compute=client, detections=found)
    _same(got, emb.embed(images))
    none = embed_many(emb, images[:2], compute=client, detections=[[], []])
    assert none.reasons == ["no face detected (yunet)"] * 2
    pd.testing.assert_frame_equal(factor_table(images, progress=False, compute=client, detections=found),
                                  factor_table(images, progress=False), check_exact=True)
