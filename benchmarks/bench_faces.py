"""Face pipeline speed on this machine: images/s per detector and embedder, and the speed-up
of a cached rerun over a cold run (goal >= 20x). Input: 24 distinct 512x512 variants of
skimage's astronaut (brightness/flip/shift), so every image hashes differently.

Embedding against its limit (issue 20), for sface and dlib, all measured in this run,
interleaved, best of 3, on 40 512x512 variants of the astronaut and the cameraman (one face
each): YuNet alone (img/s), the embedder's model alone on the aligned crops (faces/s), their
sum-of-stages bound ``1 / (1/det + 1/model)``, ``embed`` on one core (OpenCV on 1 thread)
and its ratio to the bound (goal >= 0.9), the cost of the embedding cache's content hash
(``image_key``) beside it, and 2 pool workers over 1 (goal >= 1.6x), like with like: each
worker runs OpenCV on 1 thread; "in CPU time" is ``2 x`` the per-image CPU seconds of 1
worker over those of 2, the speed-up with a free core per worker, which other jobs on the
machine do not hide. ``embed`` in this process on OpenCV's default threads is printed too
(it already spreads over the cores). The rows of every run are checked equal.

    make bench        # or: .venv/bin/python benchmarks/bench_faces.py
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time

import cv2
import numpy as np
from skimage import data

from facebias.faces import EmbeddingCache, load_detector, load_embedder, measure_factors
from facebias.faces.cache import image_key
from facebias.faces.detect import get_detector, primary_face
from facebias.faces.embed import pool_embed


def variants(n: int = 24) -> list[np.ndarray]:
    base = data.astronaut().astype(np.int16)
    out = []
    for i in range(n):
        img = np.clip(base * (0.8 + 0.02 * i) + (i % 5), 0, 255).astype(np.uint8)
        img = np.roll(img, 3 * i, axis=1)
        out.append(img[:, ::-1].copy() if i % 2 else img)
    return out


def rate(fn, items, repeats: int = 1) -> float:
    fn(items[:2])  # warm-up (model load)
    t = time.perf_counter()
    for _ in range(repeats):
        fn(items)
    return repeats * len(items) / (time.perf_counter() - t)


def face_images(n: int = 40) -> list[np.ndarray]:
    """``n`` distinct 512x512 RGB images with one face each: the astronaut and the
    cameraman in turn, brightness-scaled, shifted and every other pair mirrored."""
    faces = (data.astronaut(), np.stack([data.camera()] * 3, axis=-1))
    out = []
    for i in range(n):
        img = np.clip(faces[i % 2].astype(np.int16) * (0.8 + 0.01 * i) + (i % 5), 0, 255)
        img = np.roll(img.astype(np.uint8), 3 * i, axis=1)
        out.append(img[:, ::-1].copy() if (i // 2) % 2 else img)
    return out


def workers_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process's live child processes
    (the embedding pool's workers), from ``/proc`` (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for child in multiprocessing.active_children():
        with open(f"/proc/{child.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def timed(fn, cpu) -> tuple[float, float]:
    """``(wall seconds, CPU seconds by cpu())`` of one call of ``fn()``."""
    c, t = cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t, cpu() - c


def embed_vs_bound(name: str, imgs: list[np.ndarray], repeat: int = 3) -> None:
    """Print the stage rates, the sum-of-stages bound, ``embed`` on one core and its ratio,
    the cache key's cost, and 1 vs 2 pool workers on 1 OpenCV thread each, for the built-in
    embedder ``name`` (each best of ``repeat``, the timings interleaved). The single-stream
    rows also give the ratio in CPU time of this process, which other jobs on the machine
    disturb far less than wall time."""
    emb, det = load_embedder(name), get_detector("yunet")
    crops = [emb.align(x, primary_face(det.detect(x), x.shape)) for x in imgs]
    serial = emb.embed(imgs)
    for w in (1, 2):  # starts the pools and loads their models
        pooled = pool_embed(emb, imgs, w, threads=1)
        assert np.array_equal(serial.vectors, pooled.vectors, equal_nan=True)
        assert serial.reasons == pooled.reasons
    stages = {
        "det": lambda: [det.detect(x) for x in imgs],
        "model": lambda: emb.embed_aligned(crops),
        "embed": lambda: emb.embed(imgs),
        "key": lambda: [image_key(x) for x in imgs],
    }
    threads = cv2.getNumThreads()
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in (*stages, "default", "w1", "w2")}
    for _ in range(repeat):
        cv2.setNumThreads(1)  # one core: the single-stream rows
        for key, fn in stages.items():
            runs[key].append(timed(fn, time.process_time))
        cv2.setNumThreads(threads)  # OpenCV's default threads, in this process
        runs["default"].append(timed(lambda: emb.embed(imgs), time.process_time))
        for w in (1, 2):  # pool workers on 1 OpenCV thread each
            runs[f"w{w}"].append(timed(lambda w=w: pool_embed(emb, imgs, w, threads=1),
                                       workers_cpu_seconds))
    wall = {k: min(r[0] for r in v) for k, v in runs.items()}
    cpu = {k: min(r[1] for r in v) for k, v in runs.items()}
    n, faces = len(imgs), int(serial.enrolled.sum())
    # seconds per image of the two stages in one stream (the model runs once per face)
    bound_s, bound_cpu = wall["det"] + wall["model"], cpu["det"] + cpu["model"]
    print(f"{'  YuNet alone (1 thread)':40s} {n / wall['det']:9.1f} img/s")
    print(f"{'  ' + name + ' model alone (1 thread)':40s} {faces / wall['model']:9.1f} faces/s  "
          f"({faces} faces in {n} images)")
    print(f"{'  sum-of-stages bound':40s} {n / bound_s:9.1f} img/s")
    print(f"{'  embed ' + name + ' (1 thread)':40s} {n / wall['embed']:9.1f} img/s  "
          f"ratio to bound {bound_s / wall['embed']:.2f} (goal >= 0.9); in CPU time "
          f"{bound_cpu / cpu['embed']:.2f}")
    print(f"{'  cache key image_key (blake2b)':40s} {wall['key'] / n * 1e3:9.2f} ms/img  "
          f"{wall['key'] / wall['embed']:.1%} of embed's {wall['embed'] / n * 1e3:.1f} ms/img")
    print(f"{'  embed ' + name + f', default threads ({threads})':40s} {n / wall['default']:9.1f} img/s  "
          f"{cpu['default'] / n * 1e3:5.1f} CPU ms/img on {cpu['default'] / wall['default']:.2f} cores")
    for w in (1, 2):
        k = f"w{w}"
        # in CPU time: what w workers give with a free core each (the per-image CPU cost
        # of w workers against 1), robust to other jobs taking cores in wall time
        gain = (f"  speed-up {wall['w1'] / wall[k]:.2f}x (goal >= 1.6x), in CPU time "
                f"{w * cpu['w1'] / cpu[k]:.2f}x; {wall['default'] / wall[k]:.2f}x the "
                f"default-threads run") if w > 1 else ""
        label = f"  embed {name}, {w} worker" + "s" * (w > 1) + " x 1 thread"
        print(f"{label:40s} {n / wall[k]:9.1f} img/s  {cpu[k] / n * 1e3:5.1f} CPU ms/img "
              f"on {cpu[k] / wall[k]:.2f} cores{gain}")


def main() -> None:
    imgs = variants()
    print(f"input: {len(imgs)} images 512x512 RGB; {os.cpu_count()} CPU cores; no GPU used")
    print(f"{'stage':40s} {'images/s':>9s}")
    for name in ("yunet", "dlib_hog", "mediapipe"):
        det = load_detector(name)
        print(f"{'detect ' + name:40s} {rate(lambda xs, d=det: [d.detect(x) for x in xs], imgs):9.1f}")
    print(f"{'measure_factors (yunet+68pt+BRISQUE)':40s} "
          f"{rate(lambda xs: [measure_factors(x) for x in xs], imgs):9.1f}")
    faces = face_images()
    print(f"embedding vs its limit: {len(faces)} images 512x512, one face each; best of 3; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name in ("sface", "dlib"):
        embed_vs_bound(name, faces)
    for name in ("dlib", "sface"):
        emb = load_embedder(name)
        print(f"{'embed ' + name + ' (detect+align+embed)':40s} {rate(emb.embed, imgs):9.1f}")
        with tempfile.TemporaryDirectory() as tmp:
            cache = EmbeddingCache(tmp)
            t = time.perf_counter()
            cold = cache.embed(emb, imgs)
            t_cold = time.perf_counter() - t
            t = time.perf_counter()
            warm = EmbeddingCache(tmp).embed(emb, imgs)
            t_warm = time.perf_counter() - t
            assert np.array_equal(cold.vectors, warm.vectors, equal_nan=True)
        print(f"{'  cached rerun ' + name:40s} {len(imgs) / t_warm:9.1f}   "
              f"speed-up over cold run: {t_cold / t_warm:.0f}x (goal >= 20x)")


if __name__ == "__main__":
    main()
