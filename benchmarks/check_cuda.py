"""GPU correctness check of the StyleGAN2 and EG3D paths (run by hand or `make gpu-check` on a
machine with CUDA; the test suite never depends on a GPU).

StyleGAN2: a tiny random-weight StyleGAN2 (the test suite's fixture sizes) renders the same
latents on the CPU in float32, on CUDA in float32 and on CUDA with the fp16 blocks on. Fails
if CUDA float32 (TF32 off, the generator's default) is not within 1e-3 of the CPU or the fp16
images are not finite and within a mean |difference| of 0.05 (images in [-1, 1]). Also prints,
for information, CUDA float32 with ``tf32=True``.

EG3D: random-weight EG3D generators with **every** parameter and buffer randomised (biases,
affine biases, noise strengths, ``w_avg`` and the mapping's camera embedding are zero or
constant at initialisation; see :func:`randomise_eg3d`), in two configurations: ``sr2x``
(:data:`facebias.generate.eg3d.TINY_INIT_KWARGS`: 128 px, ``SuperresolutionHybrid2X`` from
64 px renders) and ``sr8xdc`` (the same narrow backbone with ``SuperresolutionHybrid8XDC``,
512 px from 128 px renders, as the FFHQ 512 models). The ws of the same z and conditioning
cameras (truncation psi 0.7, ``noise_mode="const"``, ``sampling="deterministic"``) are
rendered from several cameras on the CPU in float32 and on CUDA in float32 with TF32 off (the
default ``tf32=False``). Fails if max |cuda - cpu| of ``ws``, ``image``, ``image_raw`` or
``image_depth`` (world units) exceeds 1e-3; prints ``tf32=True`` for information.

Prints one line per check; exits 0 when all pass, 1 when one fails, 2 without CUDA.
``--device cpu`` runs the same code with the CPU in place of CUDA (a smoke run of this
script on a machine without a GPU; its differences are 0 and prove nothing about CUDA).

    python benchmarks/check_cuda.py [--device cuda] [--only stylegan2,eg3d]
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

import torch
from torch import nn

from facebias.generate.stylegan2 import StyleGAN2Generator

TINY = dict(resolution=16, z_dim=32, w_dim=32, channel_base=256, channel_max=32, mapping_layers=2)
DENSITY_SHIFT = 2.0  # added to the EG3D decoder's raw density bias (effective units)
TOL = 1e-3  # max |cuda fp32 - cpu fp32|, images in [-1, 1] and depth in world units (about 2.7)


def check_stylegan2(device: str = "cuda") -> bool:
    """The StyleGAN2 check (see the module docstring); prints one line, returns pass/fail."""
    cpu = StyleGAN2Generator(**TINY, seed=3, device="cpu")
    with torch.no_grad():  # the official init has zero noise strength; make noise matter here
        for name, p in cpu.net.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.3)
    w = torch.tensor(cpu.mapping(cpu.sample(4, seed=9)), dtype=torch.float32)
    ref = cpu.render(w)
    g32 = StyleGAN2Generator(**TINY, seed=3, device=device)
    g32.net.load_state_dict(cpu.net.state_dict())
    d32 = (g32.render(w).cpu() - ref).abs().max().item()
    g32.tf32 = True
    d_tf32 = (g32.render(w).cpu() - ref).abs().max().item()
    g16 = StyleGAN2Generator(**TINY, seed=3, device=device, fp16=True)
    g16.net.load_state_dict(cpu.net.state_dict())
    out16 = g16.render(w).cpu()
    d16 = (out16 - ref).abs().mean().item()
    fp16_on = g16.fp16 or torch.device(device).type != "cuda"  # the CPU smoke run has no fp16 blocks
    ok = d32 <= TOL and bool(torch.isfinite(out16).all()) and fp16_on and d16 < 0.05
    print(f"StyleGAN2 on {_name(device)}: max |cuda fp32 - cpu| = {d32:.2e} (<= 1e-3); "
          f"with tf32=True {d_tf32:.2e} (information); mean |cuda fp16 - cpu| = {d16:.2e} (< 0.05); "
          f"fp16 blocks on: {g16.fp16} -> {'PASS' if ok else 'FAIL'}", flush=True)
    return ok


# ---------------------------------------------------------------------------- EG3D

def eg3d_configs() -> dict[str, tuple[dict[str, Any], int]]:
    """The checked EG3D configurations: name -> (``init_kwargs``, neural rendering resolution)."""
    from facebias.generate.eg3d import TINY_INIT_KWARGS

    sr8 = copy.deepcopy(TINY_INIT_KWARGS)
    sr8.update(img_resolution=512)
    sr8["rendering_kwargs"].update(image_resolution=512,
                                   superresolution_module="training.superresolution.SuperresolutionHybrid8XDC")
    return {"sr2x": (copy.deepcopy(TINY_INIT_KWARGS), 64), "sr8xdc": (sr8, 128)}


def randomise_eg3d(net: nn.Module, seed: int) -> None:
    """Give every parameter and buffer of an EG3D network random values of a realistic size, in
    place (the official initialisation leaves biases, noise strengths and ``w_avg`` at zero and
    the affine biases at one, which would hide errors in their paths).

    Weights, ``const`` and ``noise_const`` keep their (random normal) initialisation; the
    FIR ``resample_filter`` buffers stay as built. Fully connected biases are drawn so that
    their effective value (times the layer's ``bias_gain``) is N(0, 0.2), N(1, 0.2) for the
    style affines; convolution biases N(0, 0.2); noise strengths N(0, 0.3); ``w_avg`` N(0, 0.5).
    The decoder's density bias is then raised by :data:`DENSITY_SHIFT`, so that the rays are
    mostly opaque (about 60 to 85 % of the light absorbed, against 20 to 45 % without) and the
    importance samples cluster, as in a trained model.
    """
    g = torch.Generator().manual_seed(seed)

    def normal(shape: torch.Size, mean: float, std: float) -> torch.Tensor:
        return torch.randn(shape, generator=g) * std + mean

    with torch.no_grad():
        for mod_name, mod in sorted(net.named_modules(), key=lambda kv: kv[0]):
            gain = float(getattr(mod, "bias_gain", 1.0))
            for name, p in sorted(mod.named_parameters(recurse=False)):
                if name == "bias":
                    mean = 1.0 if mod_name.endswith("affine") else 0.0
                    p.copy_(normal(p.shape, mean, 0.2) / gain)
                elif name == "noise_strength":
                    p.copy_(normal(p.shape, 0.0, 0.3))
            for name, b in sorted(mod.named_buffers(recurse=False)):
                if name == "w_avg":
                    b.copy_(normal(b.shape, 0.0, 0.5))
        out = net.decoder.net[2]  # the OSG decoder's last layer; output 0 is the raw density
        out.bias[0] += DENSITY_SHIFT / out.bias_gain


def check_eg3d(device: str = "cuda", configs: tuple[str, ...] = ("sr2x", "sr8xdc")) -> bool:
    """The EG3D check (see the module docstring); prints a line per configuration, returns
    pass/fail."""
    from facebias.generate.eg3d import EG3DGenerator

    ok = True
    yaw = torch.tensor([0.0, 0.5, -0.4, 0.25])  # official radians
    pitch = torch.tensor([0.0, -0.2, 0.15, 0.3])
    for name in configs:
        init_kwargs, nrr = eg3d_configs()[name]
        n = 4 if name == "sr2x" else 2
        kw = dict(init_kwargs=init_kwargs, neural_rendering_resolution=nrr, truncation_psi=0.7, seed=3)
        cpu = EG3DGenerator(device="cpu", **kw)
        randomise_eg3d(cpu.net, seed=11)
        z = torch.as_tensor(cpu.sample(n, seed=9), dtype=torch.float32)
        c_cond = cpu.camera(-yaw[:n] / 2, pitch[:n] / 2)  # conditioning cameras differ from the rendering ones
        cams = cpu.camera(yaw[:n], pitch[:n])
        ws = cpu.mapping(z, c_cond)
        ref = cpu.render(ws, cams)
        gpu = EG3DGenerator(device=device, **kw)
        gpu.net.load_state_dict(cpu.net.state_dict())
        d_ws = (gpu.mapping(z, c_cond).cpu() - ws).abs().max().item()
        diffs, diffs_tf32 = {"ws": d_ws}, {}
        for tf32, into in ((False, diffs), (True, diffs_tf32)):
            gpu.tf32 = tf32
            out = gpu.render(ws, cams)
            for key in ("image", "image_raw", "image_depth"):
                d = out[key].cpu() - ref[key]
                into[key] = d.abs().max().item() if bool(torch.isfinite(out[key]).all()) else float("inf")
        passed = all(d <= TOL for d in diffs.values())
        ok &= passed
        spread = {k: (ref[k].min().item(), ref[k].max().item()) for k in ref}
        print(f"EG3D {name} ({cpu.resolution} px from {nrr} px renders, {n} images) on {_name(device)}: "
              "max |cuda fp32 - cpu| " + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items())
              + f" (each <= {TOL:g}); with tf32=True "
              + ", ".join(f"{k} {v:.2e}" for k, v in diffs_tf32.items())
              + " (information); CPU ranges " + ", ".join(f"{k} [{lo:.2f}, {hi:.2f}]" for k, (lo, hi) in spread.items())
              + f" -> {'PASS' if passed else 'FAIL'}", flush=True)
    return ok


def _name(device: str) -> str:
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return f"{device} (smoke run: CPU against CPU)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cpu: smoke-run the script without a GPU")
    ap.add_argument("--only", default="stylegan2,eg3d", help="comma-separated checks: stylegan2, eg3d")
    a = ap.parse_args(argv)
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    if only - {"stylegan2", "eg3d"}:
        ap.error(f"--only: unknown checks {sorted(only - {'stylegan2', 'eg3d'})}; choose from stylegan2, eg3d")
    if torch.device(a.device).type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 2
    ok = True
    if "stylegan2" in only:
        ok &= check_stylegan2(a.device)
    if "eg3d" in only:
        ok &= check_eg3d(a.device)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
