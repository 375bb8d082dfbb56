"""GPU correctness check of the StyleGAN2 path (run by hand or `make gpu-check` on a machine
with CUDA; the test suite never depends on a GPU).

A tiny random-weight StyleGAN2 (the test suite's fixture sizes) renders the same latents on
the CPU in float32, on CUDA in float32 and on CUDA with the fp16 blocks on. Prints the
differences and exits 1 if CUDA float32 (TF32 off, the generator's default) is not within 1e-3
of the CPU or the fp16 images are not finite and within a mean |difference| of 0.05 (images
in [-1, 1]). Also prints, for information, CUDA float32 with ``tf32=True``. Exits 2 without
CUDA.

    python benchmarks/check_cuda.py
"""

from __future__ import annotations

import sys

import torch

from facebias.generate.stylegan2 import StyleGAN2Generator

TINY = dict(resolution=16, z_dim=32, w_dim=32, channel_base=256, channel_max=32, mapping_layers=2)


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 2
    cpu = StyleGAN2Generator(**TINY, seed=3, device="cpu")
    with torch.no_grad():  # the official init has zero noise strength; make noise matter here
        for name, p in cpu.net.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.3)
    w = torch.tensor(cpu.mapping(cpu.sample(4, seed=9)), dtype=torch.float32)
    ref = cpu.render(w)
    g32 = StyleGAN2Generator(**TINY, seed=3, device="cuda")
    g32.net.load_state_dict(cpu.net.state_dict())
    d32 = (g32.render(w).cpu() - ref).abs().max().item()
    g32.tf32 = True
    d_tf32 = (g32.render(w).cpu() - ref).abs().max().item()
    g16 = StyleGAN2Generator(**TINY, seed=3, device="cuda", fp16=True)
    g16.net.load_state_dict(cpu.net.state_dict())
    out16 = g16.render(w).cpu()
    d16 = (out16 - ref).abs().mean().item()
    ok = d32 <= 1e-3 and bool(torch.isfinite(out16).all()) and g16.fp16 and d16 < 0.05
    print(f"device {torch.cuda.get_device_name(0)}; max |cuda fp32 - cpu| = {d32:.2e} (<= 1e-3); "
          f"with tf32=True {d_tf32:.2e} (information); mean |cuda fp16 - cpu| = {d16:.2e} (< 0.05); fp16 blocks on: {g16.fp16} -> {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
