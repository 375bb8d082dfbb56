"""facebias.compute: batch stages on a Dask LocalCluster of 2 workers give the same bytes
as the serial run (rendering, the synthetic products, embedding, factor measurement)."""

from __future__ import annotations

import hashlib
import operator
from functools import partial
from pathlib import Path

import distributed  # noqa: E402
import numpy as np
import pandas as pd
import pytest

from facebias.compute import (
    LOCAL_WORKER_ENVIRON_KEY,
    WORKER_YAML,
    ComputeConfig,
    as_compute,
    chunk_slices,
    dask_client,
    iter_chunks,
    map_chunks,
    map_items,
)

# about 36 s under make test (make profile, 2 cores): handed out first; make test-fast skips it
pytestmark = pytest.mark.slow(seconds=36)


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of 2 single-threaded worker processes for the module."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=50)
    with cluster, distributed.Client(cluster) as c:
        yield c


# chunk functions must be importable by the worker processes, so these tests use numpy's
_scaled = np.multiply


def _tree_bytes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- chunking
@pytest.mark.parametrize("n,size", [(0, 3), (1, 3), (9, 3), (10, 3), (64, 64), (65, 64)])
def test_chunk_slices_partition_in_order(n, size):
    sl = chunk_slices(n, size)
    covered = [i for s in sl for i in range(s.start, s.stop)]
    assert covered == list(range(n))
    assert all(0 < s.stop - s.start <= size for s in sl)
    assert len(sl) == -(-n // size)


def test_serial_map_matches_plain_loop_and_keeps_order():
    items = list(range(23))
    out = map_chunks(_scaled, items, "serial", chunk_size=5, shared=(3,), progress=False)
    assert [len(c) for c in out] == [5, 5, 5, 5, 3]
    assert np.concatenate(out).tolist() == [3 * x for x in items]


def test_cluster_map_equals_serial_whatever_the_finish_order(client):
    items = list(range(101))
    serial = map_chunks(_scaled, items, None, chunk_size=7, shared=(2,), progress=False)
    dask = map_chunks(_scaled, items, client, chunk_size=7, shared=(2,), progress=False)
    assert [c.tolist() for c in dask] == [c.tolist() for c in serial]
    seen = [i for i, _, _ in iter_chunks(_scaled, items, client, chunk_size=7, shared=(2,), progress=False)]
    assert sorted(seen) == list(range(len(chunk_slices(101, 7))))


def test_map_items_is_a_flat_per_item_map_serially_and_on_the_cluster(client):
    items = [np.arange(k) for k in range(11)]
    expected = [int(np.sum(x)) for x in items]
    assert [int(v) for v in map_items(np.sum, items, None, chunk_size=3, progress=False)] == expected
    assert [int(v) for v in map_items(np.sum, items, client, chunk_size=3, progress=False)] == expected


def test_local_scheduler_string_starts_and_closes_its_own_cluster():
    out = map_chunks(partial(np.multiply, 1), np.arange(10), ComputeConfig(n_workers=2), chunk_size=4,
                     progress=False)
    assert [list(c) for c in out] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_local_workers_keep_glibc_malloc_defaults(tmp_path):
    """Dask's nanny gives workers MALLOC_TRIM_THRESHOLD_=65536 (OpenCV's DNN then runs a
    third slower); our local cluster's workers start without it, the caller's Dask config is
    left as it was, and the config file documented for your own `dask worker`s unsets it
    the same way."""
    import os

    import dask
    from distributed.nanny import _get_env_variables

    key = "distributed.nanny.pre-spawn-environ"
    before = dict(dask.config.get(key))
    assert "MALLOC_TRIM_THRESHOLD_" in _get_env_variables(key)  # Dask's default: the reason
    with distributed.LocalCluster(n_workers=1, processes=True, dashboard_address=":0",
                                  silence_logs=50):
        pass  # a plain Dask cluster first: its nanny writes the variable into os.environ
    assert os.environ.get("MALLOC_TRIM_THRESHOLD_") == "65536"
    with dask_client(ComputeConfig(n_workers=2)) as c:
        # what glibc reads: the environment each worker process was started with
        started = c.run(lambda: open("/proc/self/environ", "rb").read().split(b"\0"))
    seen = {w: any(e.startswith(b"MALLOC_TRIM_THRESHOLD_=") for e in env) for w, env in started.items()}
    threads = {w: b"OMP_NUM_THREADS=1" in env for w, env in started.items()}  # Dask's other settings stay
    assert len(seen) == 2 and set(seen.values()) == {False}
    assert set(threads.values()) == {True}
    assert os.environ.get("MALLOC_TRIM_THRESHOLD_") == "65536"  # this process's is restored
    assert dict(dask.config.get(key)) == before
    yaml_file = tmp_path / "facebias-workers.yaml"  # the file documented for your own workers
    yaml_file.write_text(WORKER_YAML)
    with dask.config.set(next(iter(dask.config.collect_yaml(paths=[str(yaml_file)])))):
        assert dask.config.get(LOCAL_WORKER_ENVIRON_KEY) is None
        assert "MALLOC_TRIM_THRESHOLD_" not in _get_env_variables(key)


def test_no_items_starts_no_cluster():
    # an unreachable scheduler would fail if contacted
    assert map_chunks(_scaled, [], "tcp://127.0.0.1:9", shared=(1,), progress=False) == []


def test_worker_errors_reach_the_caller(client):
    with pytest.raises(TypeError):
        map_chunks(operator.neg, [["a"]], client, chunk_size=1, progress=False)


@pytest.mark.parametrize("bad", [{"scheduler": "cluster"}, {"n_workers": 0}, {"chunk_size": 2.5},
                                 {"threads_per_worker": True}, {"workers": 2}])
def test_bad_compute_params_are_rejected_by_name(bad):
    with pytest.raises(ValueError, match="compute"):
        ComputeConfig.from_params(bad)


def test_compute_config_forms():
    assert as_compute(None).serial
    assert as_compute("tcp://10.0.0.5:8786").scheduler == "tcp://10.0.0.5:8786"
    assert as_compute({"scheduler": "serial"}).serial
    assert ComputeConfig.from_params(None) == ComputeConfig()
    assert ComputeConfig().scheduler == "local"


def test_a_client_is_recognised_by_type_not_by_name(client):
    from facebias.compute import _is_client

    class Client:  # same name and methods, not a distributed.Client
        def submit(self): ...
        def scatter(self): ...

    assert _is_client(client) and not _is_client(Client()) and not _is_client("tcp://x:1")
    # an impostor is taken as a scheduler spec and rejected as such, not used as a client
    with pytest.raises((TypeError, ValueError)):
        map_chunks(_scaled, [1.0], Client(), shared=(1,), progress=False)


def test_serial_paths_do_not_import_distributed():
    import subprocess
    import sys

    code = ("import sys; from facebias.compute import map_chunks, map_items; "
            "assert map_chunks(sum, [1, 2, 3], None, chunk_size=2, progress=False) == [3, 3]; "
            "assert map_items(abs, [-1, 2], None, progress=False) == [1, 2]; "
            "assert 'distributed' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- generation
@pytest.fixture(scope="module")
def gen():
    from facebias.generate import load_generator

    return load_generator("procedural", size=128, seed=0)


def test_render_on_cluster_is_byte_identical(gen, client):
    from facebias.generate.build import render

    z = gen.sample(11, seed=5)
    table = pd.DataFrame({"yaw": np.linspace(-30, 30, 11), "light": ["front", "up", "left"] * 3 + ["down", "right"]})
    serial = render(gen, z, table, batch_size=4)
    dask = render(gen, z, table, batch_size=4, compute=client)
    direct = gen.synthesize(z[:4], yaw=table["yaw"].to_numpy()[:4], light=list(table["light"][:4]))
    assert len(serial) == len(dask) == 11
    assert all(a.tobytes() == b.tobytes() for a, b in zip(serial, dask, strict=True))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(serial[:4], direct, strict=True))


def test_synthetic_products_on_cluster_are_byte_identical(gen, client, tmp_path):
    from facebias.generate.build import SynthConfig, render_products

    cfg = SynthConfig(n_fit=1500, n_transects=2, n_candidates=4, n_seeds=2, n_negative=1, size=128,
                      batch_size=16)
    render_products(gen, cfg, tmp_path / "serial")
    render_products(gen, cfg, tmp_path / "dask", compute=client)
    a, b = _tree_bytes(tmp_path / "serial"), _tree_bytes(tmp_path / "dask")
    assert len(a) > 50 and a == b


# --------------------------------------------------------------------------- embedding, factors
@pytest.fixture(scope="module")
def renders(gen, tmp_path_factory):
    from facebias.generate.build import write_pngs

    z = gen.sample(9, seed=11)
    imgs = list(gen.synthesize(z, yaw=np.linspace(-20, 20, 9)))
    imgs.append(np.full((128, 128, 3), 255, np.uint8))  # blank: a failure to enrol
    folder = tmp_path_factory.mktemp("renders")
    names = [f"im{i:02d}" for i in range(len(imgs))]
    write_pngs(folder, names, imgs)
    return imgs, [folder / f"{n}.png" for n in names]


@pytest.mark.parametrize("model", ["sface", "dlib"])
def test_embedding_cache_on_cluster_is_byte_identical(renders, client, tmp_path, model):
    from facebias.faces import EmbeddingCache, load_embedder

    imgs, _ = renders
    emb = load_embedder(model)
    emb.batch_size = 4
    serial = EmbeddingCache(tmp_path / "s").embed(emb, imgs)
    dask = EmbeddingCache(tmp_path / "d").embed(emb, imgs, compute=client)
    assert serial.enrolled.sum() >= 8 and not serial.enrolled[-1]
    assert serial.vectors.tobytes() == dask.vectors.tobytes()
    assert list(serial.enrolled) == list(dask.enrolled) and serial.reasons == dask.reasons
    assert _tree_bytes(tmp_path / "s") == _tree_bytes(tmp_path / "d")


def test_embed_paths_on_cluster_equals_in_process(renders, client, tmp_path):
    from facebias.studies.hcic import embed_images

    _, paths = renders
    paths = [*paths, tmp_path / "missing.png"]
    v0, ok0 = embed_images(paths, "sface")
    v1, ok1 = embed_images(paths, "sface", compute=client)
    assert v0.tobytes() == v1.tobytes() and list(ok0) == list(ok1)
    assert not ok1[-1] and not ok1[-2] and ok1[:-2].all()


def test_factor_table_on_cluster_is_identical(renders, client, tmp_path):
    from facebias.faces import factor_table

    imgs, paths = renders
    items = [*imgs[:3], *paths[3:], tmp_path / "missing.png"]
    serial = factor_table(items, progress=False)
    dask = factor_table(items, progress=False, compute=client)
    pd.testing.assert_frame_equal(serial, dask, check_exact=True)
    assert serial["reason"].iloc[-1].startswith("error: cannot read image")
    assert serial["yaw"].iloc[:9].notna().all()


def test_cache_keeps_finished_batches_when_a_later_batch_fails(tmp_path):
    """Nothing lost on a crash: each batch is stored as soon as it is embedded."""
    from facebias.faces import EmbeddingCache
    from facebias.faces.embed import BaseEmbedder, EmbedResult

    class Flaky(BaseEmbedder):
        name, model_id, dim, alignment, crop_size, detector, batch_size = "flaky", "f1", 2, "arcface", 8, "yunet", 2

        def embed(self, images):
            if any(int(im[0, 0, 0]) == 99 for im in images):
                raise RuntimeError("boom")
            v = np.array([[float(im[0, 0, 0]), 1.0] for im in images], np.float32)
            return EmbedResult(v / np.linalg.norm(v, axis=1, keepdims=True), np.ones(len(images), bool),
                               [None] * len(images))

    imgs = [np.full((8, 8, 3), v, np.uint8) for v in (1, 2, 3, 4, 99, 6)]
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        cache.embed(Flaky(), imgs)
    assert len(list(tmp_path.rglob("*.emb"))) == 4
    again = EmbeddingCache(tmp_path)
    res = again.embed(Flaky(), imgs[:4])
    assert again.hits == 4 and again.misses == 0 and res.enrolled.all()
