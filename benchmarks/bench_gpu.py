"""GPU paths on a CUDA machine, each beside its CPU peer measured in the same run (run by hand
or ``make gpu-bench``; needs a GPU, the tests never do).

1. StyleGAN2 (``facebias.generate.stylegan2``): correctness (``check_cuda.py``: CUDA fp32
   within 1e-3 of the CPU, fp16 finite and close) and speed of ``synthesize`` (mapping,
   synthesis, uint8, copy to host) at 256 and 1024 px, fp32 (TF32 off, the default, and
   on), and fp16, random config-f
   weights (the real network's shapes); peer: the same call on this machine's CPU at 256 px.
2. DCGAN (``facebias.generate.dcgan``, the packaged gan-face-generate weights): CUDA images
   against CPU images of the same latents (uint8 difference) and images/s per batch; peer:
   the CPU with all its cores.
3. Batched embedding (``facebias.faces.embed.TorchEmbedder``) with an ArcFace-R50-shaped
   network (IResNet-50 layout, 112 px, 512-d, random weights: real compute, meaningless
   vectors): ``embed_aligned`` faces/s per ``batch_size`` on CUDA and the CPU, the cosine of
   CUDA and CPU rows of the same crops, and the whole ``embed`` (YuNet on the CPU, the
   network on the GPU) on astronaut variants against the CPU-only run.
4. EG3D (``facebias.generate.eg3d``): correctness (``check_cuda.py``: CUDA fp32 with TF32 off
   within 1e-3 of the CPU for ws, image, image_raw and image_depth, fully randomised weights,
   2X and 8XDC superresolution) and speed of ``synthesize`` (mapping, tri-planes, 128 x 128
   rays with 48 + 48 samples, 8XDC superresolution, uint8, copy to host) at 512 px with the
   shapes of the released ``ffhq512-128.pkl`` (random weights; ``bench_eg3d.ffhq512_init_kwargs``),
   deterministic sampling, batches 1, 4 and 16 (skipping what does not fit in memory), fp32
   with TF32 off (the default) and on; the ratio printed is TF32-on images/s / TF32-off
   images/s at the same batch, and TF32 off / the CPU peer (batch 1 on this machine's CPU);
   one more row renders batch 4 with all 128 x 128 rays of an image in one step instead of
   the default of about 2 million sample points per step (``ray_chunk``).

Prints one line per measurement; exits 1 when a correctness check fails, 2 without CUDA.
``--only`` runs some sections (e.g. ``--only eg3d``); ``--device cpu`` smoke-runs the script
without a GPU (EG3D then at the 128 px tiny configuration, batch 1).

    PYTHONPATH=lib python benchmarks/bench_gpu.py [--repeat 3] [--quick] [--only eg3d,stylegan2,dcgan,embedding]
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import numpy as np
import torch
from torch import nn

SECTIONS = ("embedding", "dcgan", "stylegan2", "eg3d")  # run in this order
DEVICE = "cuda"  # --device cpu: a smoke run of this script on a machine without a GPU
CUDA = True


def best_rate(n: int, repeat: int, cuda: bool, fn, *args) -> float:
    """Items per second (``n`` items a call) of the fastest of ``repeat`` calls of
    ``fn(*args)`` after one warm-up."""
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return n / best


# --------------------------------------------------------------------------- 1. StyleGAN2
def stylegan2(repeat: int, quick: bool) -> bool:
    import check_cuda

    from facebias.generate.stylegan2 import StyleGAN2Generator

    ok = check_cuda.check_stylegan2(DEVICE) if CUDA else True
    cpu_rate = {}
    print(f"{'StyleGAN2 res':>14} {'batch':>5} {'variant':>7} {'images/s':>10}  ratio to CPU 256 px batch 4")
    gen = StyleGAN2Generator(resolution=256, batch_size=4, device="cpu", seed=0)
    z = gen.sample(4, seed=0)
    cpu_rate[256] = best_rate(4, 1, False, gen.synthesize, z)
    print(f"{256:>14} {4:>5} {'cpu':>7} {cpu_rate[256]:>10.2f}  1.00x  ({torch.get_num_threads()} threads)")
    plan = ([(256, 1)] if not CUDA else [(256, 16), (1024, 16)] if quick else
            [(256, 1), (256, 16), (256, 64), (1024, 1), (1024, 8), (1024, 16), (1024, 32), (1024, 64)])
    for res, batch in plan:
        for variant in ("fp32", "tf32", "fp16"):
            fp16 = variant == "fp16"
            gen = StyleGAN2Generator(resolution=res, batch_size=batch, fp16=fp16, device=DEVICE, seed=0,
                                     tf32=variant == "tf32")
            z = gen.sample(batch, seed=0)
            try:
                r = best_rate(batch, repeat, CUDA, gen.synthesize, z)
            except torch.cuda.OutOfMemoryError:
                print(f"{res:>14} {batch:>5} {variant:>7}  out of GPU memory")
                continue
            finally:
                torch.cuda.empty_cache()
            print(f"{res:>14} {batch:>5} {variant:>7} {r:>10.2f}  "
                  f"{r / cpu_rate[256]:.1f}x{'' if res == 256 else ' (CPU peer at 256 px)'}", flush=True)
    return ok


# --------------------------------------------------------------------------- 2. DCGAN
def dcgan(repeat: int, quick: bool) -> bool:
    from facebias.generate.dcgan import DCGANGenerator

    cpu = DCGANGenerator(device="cpu", batch_size=256)
    z = cpu.sample(256 if quick else 1024, seed=0)
    ref = cpu.synthesize(z)
    ok = True
    for batch in (64, 256) if quick else (64, 256, 1024):
        gpu = DCGANGenerator(device=DEVICE, batch_size=batch)
        img = gpu.synthesize(z)
        diff = np.abs(img.astype(np.int16) - ref.astype(np.int16))
        agree = diff.max() <= 2 and diff.mean() < 0.05
        ok &= bool(agree)
        r_gpu = best_rate(len(z), repeat, CUDA, gpu.synthesize, z)
        cpu.batch_size = batch
        r_cpu = best_rate(len(z), 1, False, cpu.synthesize, z)
        print(f"DCGAN batch {batch:>5}: cuda {r_gpu:>9.0f} img/s, cpu {r_cpu:>7.0f} img/s ({r_gpu / r_cpu:.1f}x); "
              f"|cuda - cpu| uint8 max {diff.max()}, mean {diff.mean():.4f} -> {'PASS' if agree else 'FAIL'}",
              flush=True)
    return ok


# --------------------------------------------------------------------------- 3. embedding
class _Block(nn.Module):
    """IResNet basic block: BN, conv3x3, BN, PReLU, conv3x3 (stride), BN, plus the shortcut."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
            nn.PReLU(cout), nn.Conv2d(cout, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout))
        self.short = (nn.Identity() if stride == 1 and cin == cout else
                      nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) + self.short(x)


def iresnet50_shape() -> nn.Module:
    """An IResNet-50-shaped face embedder (112 px in, 512-d out), randomly initialised (seed 0)."""
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.PReLU(64)]
    cin = 64
    for cout, n in ((64, 3), (128, 4), (256, 14), (512, 3)):
        layers += [_Block(cin, cout, 2)] + [_Block(cout, cout, 1) for _ in range(n - 1)]
        cin = cout
    layers += [nn.BatchNorm2d(512), nn.Flatten(), nn.Linear(512 * 7 * 7, 512), nn.BatchNorm1d(512)]
    return nn.Sequential(*layers)


def embedding(repeat: int, quick: bool) -> bool:
    from skimage import data

    from facebias.faces.embed import TorchEmbedder

    gpu = TorchEmbedder(iresnet50_shape(), device=DEVICE, name="r50shape")
    cpu = TorchEmbedder(iresnet50_shape(), device="cpu", name="r50shape")
    rng = np.random.default_rng(0)
    n_max = 32 if quick else 512
    crops = list(rng.integers(0, 256, (n_max, 112, 112, 3), dtype=np.uint8))
    ref = cpu.embed_aligned(crops[:64])
    ok = True
    cos = np.sum(gpu.embed_aligned(crops[:64]) * ref, axis=1)
    ok &= bool(cos.min() > 0.999)
    print(f"TorchEmbedder R50-shape: min cosine cuda vs cpu over 64 crops {cos.min():.6f} (> 0.999; "
          f"TF32 convs {torch.backends.cudnn.allow_tf32})")
    cpu.batch_size = 64
    r_cpu = best_rate(len(crops[:128]), 1, False, cpu.embed_aligned, crops[:128])
    print(f"  cpu batch 64: {r_cpu:.0f} faces/s ({torch.get_num_threads()} threads)")
    for batch in (1, 16) if quick else (1, 16, 64, 256):
        gpu.batch_size = batch
        n = min(64 if batch == 1 else 512, n_max)
        r = best_rate(n, repeat, CUDA, gpu.embed_aligned, crops[:n])
        print(f"  cuda batch {batch:>3}: {r:>7.0f} faces/s ({r / r_cpu:.1f}x the CPU)", flush=True)
    # whole pipeline: YuNet and alignment on the CPU, the network on the GPU
    base = data.astronaut()
    imgs = [np.clip(base.astype(np.int16) * (0.8 + 0.01 * i), 0, 255).astype(np.uint8)
            for i in range(4 if quick else 32)]
    gpu.batch_size = cpu.batch_size = 32
    rg, rc = gpu.embed(imgs), cpu.embed(imgs)
    same = bool((rg.enrolled == rc.enrolled).all())
    cos = np.sum(rg.vectors[rg.enrolled] * rc.vectors[rc.enrolled], axis=1)
    ok &= same and bool(cos.min() > 0.999)
    r_gpu = best_rate(len(imgs), repeat, CUDA, gpu.embed, imgs)
    r_cpu = best_rate(len(imgs), 1, False, cpu.embed, imgs)
    print(f"  embed (detect + align + network), {len(imgs)} images at 512 px: cuda {r_gpu:.1f} img/s, cpu {r_cpu:.1f} "
          f"img/s ({r_gpu / r_cpu:.1f}x); enrolled equal {same}, min cosine {cos.min():.6f}")
    return ok


# --------------------------------------------------------------------------- 4. EG3D
def eg3d(repeat: int, quick: bool) -> bool:
    import bench_eg3d
    import check_cuda

    ok = check_cuda.check_eg3d(DEVICE, ("sr2x",) if not CUDA else ("sr2x", "sr8xdc"))
    config = "ffhq512" if CUDA else "tiny"  # the smoke run: the 128 px tiny configuration
    cpu = bench_eg3d.eg3d("cpu", batch=1, ffhq=CUDA)
    z = cpu.sample(16, seed=0)
    yaw = [bench_eg3d.YAW] * 16
    r_cpu = best_rate(1, 1, False, cpu.synthesize, z[:1], yaw[:1])
    print(f"{'EG3D config':>12} {'batch':>5} {'variant':>12} {'images/s':>10}  ratio")
    print(f"{config:>12} {1:>5} {'cpu':>12} {r_cpu:>10.3f}  1.00x  ({torch.get_num_threads()} threads; "
          f"{cpu.resolution} px from {cpu.neural_rendering_resolution} px renders)", flush=True)
    plan = [1] if not CUDA else [1, 4] if quick else [1, 4, 16]
    all_rays = (4 if CUDA else 1, False, cpu.neural_rendering_resolution ** 2)  # one step per image
    rows = [(b, tf32, None) for b in plan for tf32 in (False, True)] + [all_rays]
    cpu = None
    fp32: dict[int, float] = {}
    for batch, tf32, chunk in rows:
        variant = "all rays" if chunk else "tf32" if tf32 else "fp32"
        try:
            gen = bench_eg3d.eg3d(DEVICE, batch=batch, ffhq=CUDA, tf32=tf32, ray_chunk=chunk)
            r = best_rate(batch, repeat, CUDA, gen.synthesize, z[:batch], yaw[:batch])
        except torch.cuda.OutOfMemoryError:
            print(f"{config:>12} {batch:>5} {variant:>12}  out of GPU memory", flush=True)
            continue
        finally:
            gen = None
            if CUDA:
                torch.cuda.empty_cache()
        if variant == "fp32":
            fp32[batch] = r
            ratio = f"{r / r_cpu:.1f}x the CPU"
        else:
            ratio = f"{r / fp32[batch]:.2f}x fp32 (TF32 off)" if batch in fp32 else "n/a"
        print(f"{config:>12} {batch:>5} {variant:>12} {r:>10.3f}  {ratio}", flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer sizes and batches")
    ap.add_argument("--device", default="cuda", help="cpu: smoke-run the script without a GPU")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections: " + ", ".join(SECTIONS))
    a = ap.parse_args()
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    if set(only) - set(SECTIONS):
        ap.error(f"--only: unknown sections {sorted(set(only) - set(SECTIONS))}; choose from {', '.join(SECTIONS)}")
    global DEVICE, CUDA
    DEVICE, CUDA = a.device, a.device.startswith("cuda")
    if CUDA and not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 2
    torch.backends.cudnn.benchmark = True
    print(f"device: {torch.cuda.get_device_name(0) if CUDA else 'cpu (smoke run)'}; torch {torch.__version__}; "
          f"CPU peers on {torch.get_num_threads()} threads")
    results = {}
    for name in SECTIONS:
        if name not in only:
            continue
        fn = globals()[name]
        t0 = time.perf_counter()
        try:
            results[name] = fn(a.repeat, a.quick)
        except Exception:  # report and go on to the next section
            traceback.print_exc()
            results[name] = False
        print(f"[{name}: {'PASS' if results[name] else 'FAIL'}, {time.perf_counter() - t0:.0f} s]", flush=True)
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
