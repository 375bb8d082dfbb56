"""Benchmark: StyleGAN2 config-f generation speed (images/s), random weights.

End to end as the studies call it: ``StyleGAN2Generator.synthesize(z)`` (mapping,
synthesis, uint8 conversion and the copy to host) with ``batch_size`` = the batch.
Randomly initialised weights have the config-f shapes, so the speed is that of the real
network; the images are not faces.

* CUDA: 256^2 and 1024^2, batches 1, 4, 16, 64 (skipping what does not fit in memory),
  fp32 and fp16 (the top 4 resolutions in float16, as stylegan2-ada-pytorch trains them);
  the peer is fp32 at the same resolution and batch, and the ratio printed is
  fp16 images/s / fp32 images/s.
* CPU: 256^2 only, batches 1 and 4 (1024^2 takes minutes per image on a laptop CPU); the
  peer is batch 1, and the ratio printed is images/s at the batch / images/s at batch 1.

Times are the best of ``--repeat`` runs after one warm-up run.

    python benchmarks/bench_stylegan2.py [--repeat 2] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from facebias.generate.stylegan2 import StyleGAN2Generator


def images_per_s(gen: StyleGAN2Generator, batch: int, repeat: int) -> float:
    z = gen.sample(batch, seed=0)
    gen.synthesize(z)  # warm-up (cuDNN autotuning, allocator)
    best = np.inf
    for _ in range(repeat):
        if gen.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        gen.synthesize(z)
        best = min(best, time.perf_counter() - t0)
    return batch / best


def make(res: int, batch: int, fp16: bool, device: str) -> StyleGAN2Generator:
    return StyleGAN2Generator(resolution=res, batch_size=batch, fp16=fp16, device=device, seed=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        print(f"device: {torch.cuda.get_device_name(dev)}; torch {torch.__version__}")
        plan = [(res, b) for res in (256, 1024) for b in (1, 4, 16, 64)]
    else:
        print(f"device: CPU, {torch.get_num_threads()} torch threads; torch {torch.__version__}; "
              f"256^2 only, batches 1 and 4 (1024^2 is impractical on CPU)")
        plan = [(256, 1), (256, 4)]
    print(f"{'res':>5} {'batch':>5} {'variant':>8} {'images/s':>10}  peer       ratio")
    base: dict[int, float] = {}
    for res, batch in plan:
        variants = [False, True] if dev.type == "cuda" else [False]
        fp32 = None
        for fp16 in variants:
            name = "fp16" if fp16 else "fp32"
            try:
                gen = make(res, batch, fp16, a.device)
                ips = images_per_s(gen, batch, a.repeat)
            except torch.cuda.OutOfMemoryError:
                print(f"{res:>5} {batch:>5} {name:>8} {'skipped: out of GPU memory':>10}")
                torch.cuda.empty_cache()
                continue
            finally:
                gen = None
            if dev.type == "cuda":
                if not fp16:
                    fp32 = ips
                    peer, ratio = "-", ""
                else:
                    peer = "fp32"
                    ratio = f"{ips / fp32:.2f}x" if fp32 else "n/a"
            else:
                base.setdefault(res, ips)
                peer, ratio = ("-", "") if batch == 1 else ("batch 1", f"{ips / base[res]:.2f}x")
            print(f"{res:>5} {batch:>5} {name:>8} {ips:>10.3f}  {peer:<9}  {ratio}", flush=True)
            if dev.type == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
