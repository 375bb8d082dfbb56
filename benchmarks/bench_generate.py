"""Procedural face generator speed on this machine: new identities per second (each
rendered at one pose) at 128 and 256 px, frontal and with yaw/light variation, each next to
a peer measured in the same run on the same images: one YuNet detection per image and the
SFace embedder (detect + align + embed). Goal: >= 20 identities/s at 128 px on 2 cores.

Then the ``dcgan`` backend (gan-face-generate's 64 px face GAN, PyTorch on the CPU with 2
torch threads): images per second at native 64 px with batches of 64 and 256, and at 256 px
(bicubic upscale), each as a ratio to the procedural generator's frontal 128 px rate from
the table above (same run).

    .venv/bin/python benchmarks/bench_generate.py
"""

from __future__ import annotations

import os

import numpy as np
from timing import best_time

from facebias.faces import load_detector, load_embedder
from facebias.generate import LIGHTS
from facebias.generate.dcgan import REQUIREMENT, DCGANGenerator
from facebias.generate.procedural import ProceduralGenerator


def best_rate(fn, n: int, repeats: int = 3) -> float:
    """Items per second of the fastest of ``repeats`` timed calls of ``fn()`` (n items)."""
    fn()  # warm-up
    return n / best_time(fn, repeat=repeats)


def bench_dcgan(peer_rate: float, n: int = 256, threads: int = 2) -> None:
    """DCGAN images/s on the CPU (``n`` new latents per call, ``threads`` torch threads),
    with the ratio to ``peer_rate`` (the procedural generator, frontal 128 px, this run)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        print(f"\ndcgan ({REQUIREMENT}), CPU, torch threads {torch.get_num_threads()}, {n} new "
              f"latents per measurement; peer: procedural 128 px frontal, {peer_rate:.1f} ids/s "
              f"(above)")
        print(f"{'case':44s} {'img/s':>8s} {'dcgan/procedural128':>20s}")
        for size, batch in ((None, 64), (None, 256), (256, 256)):
            gen = DCGANGenerator(size=size, device="cpu", batch_size=batch)
            z = gen.sample(n, seed=1)
            rate = best_rate(lambda gen=gen, z=z: gen.synthesize(z), n)
            what = "native" if size is None else "bicubic upscale"
            print(f"{f'dcgan {gen.size} px ({what}), batch {batch}':44s} {rate:8.1f} "
                  f"{rate / peer_rate:20.2f}")
    finally:
        torch.set_num_threads(before)


def main(n: int = 64) -> None:
    import torch

    print(f"{n} new identities per measurement; {os.cpu_count()} CPU cores; "
          f"torch threads {torch.get_num_threads()}; numpy CPU renderer (no GPU used)")
    det = load_detector("yunet")
    sface = load_embedder("sface")
    names = list(LIGHTS)
    print(f"{'case':44s} {'ids/s':>8s} {'yunet img/s':>12s} {'gen/yunet':>10s} {'sface img/s':>12s} {'gen/sface':>10s}")
    peer = None  # procedural 128 px frontal ids/s: the dcgan section's reference
    for size in (128, 256):
        gen = ProceduralGenerator(size=size)
        rng = np.random.default_rng(0)
        z = gen.sample(n, seed=1)
        yaws = rng.uniform(-30, 30, n)
        lights = [names[i] for i in rng.integers(0, len(names), n)]
        for label, kw in (("frontal, front light", {}), ("yaw -30..30, 5 lights", {"yaw": yaws, "light": lights})):
            gen_rate = best_rate(lambda kw=kw, gen=gen, z=z: gen.synthesize(z, **kw), n)
            if size == 128 and not kw:
                peer = gen_rate
            ims = gen.synthesize(z, **kw)
            det_rate = best_rate(lambda ims=ims: [det.detect(im) for im in ims], n, repeats=2)
            sf_rate = best_rate(lambda ims=ims: sface.embed(list(ims)), n, repeats=1)
            print(f"{f'{size} px, {label}':44s} {gen_rate:8.1f} {det_rate:12.1f} {gen_rate / det_rate:10.2f} "
                  f"{sf_rate:12.1f} {gen_rate / sf_rate:10.2f}")
    bench_dcgan(peer)


if __name__ == "__main__":
    main()
