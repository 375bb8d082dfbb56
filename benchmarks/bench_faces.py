"""Face pipeline speed on this machine: images/s per detector and embedder, and the speed-up
of a cached rerun over a cold run (goal >= 20x). Input: 24 distinct 512x512 variants of
skimage's astronaut (brightness/flip/shift), so every image hashes differently.

    make bench        # or: .venv/bin/python benchmarks/bench_faces.py
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
from skimage import data

from facebias.faces import EmbeddingCache, load_detector, load_embedder, measure_factors


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


def main() -> None:
    imgs = variants()
    print(f"input: {len(imgs)} images 512x512 RGB; {os.cpu_count()} CPU cores; no GPU used")
    print(f"{'stage':40s} {'images/s':>9s}")
    for name in ("yunet", "dlib_hog", "mediapipe"):
        det = load_detector(name)
        print(f"{'detect ' + name:40s} {rate(lambda xs, d=det: [d.detect(x) for x in xs], imgs):9.1f}")
    print(f"{'measure_factors (yunet+68pt+BRISQUE)':40s} "
          f"{rate(lambda xs: [measure_factors(x) for x in xs], imgs):9.1f}")
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
