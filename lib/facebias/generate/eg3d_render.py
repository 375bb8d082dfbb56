"""EG3D's neural volume renderer in plain PyTorch (paper 000's generator): rays from a
camera, tri-plane features at 3D points, the OSG decoder's density and colour, stratified
and importance sampling along each ray, and the ray marcher.

An independent implementation of the renderer of Chan et al., "Efficient Geometry-aware 3D
Generative Adversarial Networks" (CVPR 2022), as NVIDIA's ``NVlabs/eg3d``
(``training/volumetric_rendering/*``) computes it, detail for detail:

* **rays** (:func:`camera_rays`): one per pixel centre ``(i + 0.5) / R`` of an ``R x R`` grid,
  lifted through the normalised intrinsics (skew included) and the cam2world matrix,
  directions unit length;
* **tri-planes** (:func:`sample_planes`): points scaled by ``2 / box_warp`` and projected on
  three planes read with ``grid_sample(bilinear, zeros padding, align_corners=False)`` at
  the grid coordinates ``(x, y)``, ``(x, z)`` and ``(z, x)`` (the official plane axes; the
  third is not ``(z, y)``, a known quirk of the released code, kept because the weights were
  trained with it);
* **decoder** (:class:`facebias.generate.eg3d_network.OSGDecoder`): the mean of the three
  planes' features through a 2-layer MLP (softplus between); colour
  ``sigmoid(x) * (1 + 2 * 0.001) - 0.001``, raw density ``x[0]``;
* **coarse samples** (:func:`stratified_depths`): ``depth_resolution`` depths from
  ``linspace(ray_start, ray_end)``, or per ray between the entry and exit of the box of side
  ``box_warp`` when both are ``'auto'`` (rays that miss it take the smallest entry of the
  rays that hit, and, as in the released code, the *largest entry* as their exit), or
  uniform in disparity; the official renderer adds a uniform jitter of one step;
* **importance samples** (:func:`importance_depths`): the coarse weights max-pooled (2,
  stride 1, padding 1), average-pooled (2, stride 1), plus 0.01; inverse-CDF sampling of
  ``depth_resolution_importance`` depths between the coarse midpoints (``sample_pdf``,
  weights ``+ 1e-5``, denominators below 1e-5 set to 1);
* **ray marcher** (:func:`march`): midpoints of consecutive samples, density
  ``softplus(sigma_mid - 1)``, ``alpha = 1 - exp(-density * delta)``, transmittance by a
  cumulative product of ``1 - alpha + 1e-10``, composite colour and depth, the depth
  ``nan -> inf`` then clamped to the min and max of all sample depths of the batch,
  ``colour + 1 - total weight`` with ``white_back``, colour scaled to ``[-1, 1]``.

Randomness. The official renderer jitters the coarse depths (``torch.rand_like``) and draws
the importance samples at random (``sample_pdf(det=False)``). ``sampling="deterministic"``
puts the coarse depths at the ``linspace`` itself and the importance samples at
``u = linspace(0, 1, N)`` (``det=True``); ``sampling="random"`` draws the official random
numbers, in the official order and memory layout (jitter ``(N, M, D, 1)``, or, with per-ray
``'auto'`` limits, drawn as ``(D, N, M, 1)`` and permuted, as ``rand_like`` fills the permuted
``linspace``; then ``u`` ``(N M, N_imp)``),
from a ``torch.Generator``: seeded like the global generator, it reproduces the official
render. All random numbers are drawn before the rays are split into chunks, so chunking
never changes an image.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["SAMPLING_MODES", "PLANE_AXES", "camera_rays", "ray_box_limits", "plane_coordinates",
           "sample_planes", "stratified_depths", "pdf_depths", "importance_depths", "march",
           "render_rays"]

SAMPLING_MODES = ("deterministic", "random")

#: The official ``generate_planes()``: each plane's 3x3 axes matrix. A point ``p`` (a row)
#: lands at the grid coordinates ``(p @ inv(axes))[:2]``: ``(x, y)``, ``(x, z)``, ``(z, x)``.
PLANE_AXES = torch.tensor([[[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                           [[1, 0, 0], [0, 0, 1], [0, 1, 0]],
                           [[0, 0, 1], [1, 0, 0], [0, 1, 0]]], dtype=torch.float32)

#: The grid coordinates each plane reads, as indices into (x, y, z).
_PLANE_COORDS = ((0, 1), (0, 2), (2, 0))


def camera_rays(cam2world: Tensor, intrinsics: Tensor, resolution: int) -> tuple[Tensor, Tensor]:
    """Origins and unit directions of the rays through the pixel centres.

    Parameters
    ----------
    cam2world : torch.Tensor
        (N, 4, 4) camera-to-world matrices (OpenCV camera axes).
    intrinsics : torch.Tensor
        (N, 3, 3) normalised intrinsics (focal lengths and principal point in units of the
        image side; ``[0, 1]`` is the skew).
    resolution : int
        Rays per image side; ray ``m = row * R + col``.

    Returns
    -------
    origins, directions : torch.Tensor
        (N, R*R, 3) each.
    """
    n, m = cam2world.shape[0], resolution ** 2
    dev = cam2world.device
    locs = cam2world[:, :3, 3]
    fx, fy = intrinsics[:, 0, 0], intrinsics[:, 1, 1]
    cx, cy, sk = intrinsics[:, 0, 2], intrinsics[:, 1, 2], intrinsics[:, 0, 1]
    ar = torch.arange(resolution, dtype=torch.float32, device=dev)
    uv = torch.stack(torch.meshgrid(ar, ar, indexing="ij")) * (1.0 / resolution) + (0.5 / resolution)
    uv = uv.flip(0).reshape(2, -1).transpose(1, 0).unsqueeze(0).repeat(n, 1, 1)
    x_cam, y_cam = uv[:, :, 0].view(n, -1), uv[:, :, 1].view(n, -1)
    z_cam = torch.ones((n, m), device=dev)
    fx, fy, cx, cy, sk = (t.unsqueeze(-1) for t in (fx, fy, cx, cy, sk))
    x_lift = (x_cam - cx + cy * sk / fy - sk * y_cam / fy) / fx * z_cam
    y_lift = (y_cam - cy) / fy * z_cam
    cam_points = torch.stack((x_lift, y_lift, z_cam, torch.ones_like(z_cam)), dim=-1)
    world = torch.bmm(cam2world, cam_points.permute(0, 2, 1)).permute(0, 2, 1)[:, :, :3]
    dirs = F.normalize(world - locs[:, None, :], dim=2)
    return locs.unsqueeze(1).repeat(1, dirs.shape[1], 1), dirs


def ray_box_limits(origins: Tensor, directions: Tensor, box_side: float) -> tuple[Tensor, Tensor]:
    """Entry and exit distances of rays through the axis-aligned cube of side ``box_side``
    centred at the origin (slab method, the official ``get_ray_limits_box``); rays that miss
    get entry -1 and exit -2.

    Parameters
    ----------
    origins, directions : torch.Tensor
        (..., 3) ray origins and directions.
    box_side : float
        The cube's side (``box_warp``).

    Returns
    -------
    start, end : torch.Tensor
        (..., 1) each.
    """
    shape = origins.shape
    o = origins.detach().reshape(-1, 3)
    d = directions.detach().reshape(-1, 3)
    half = box_side / 2
    bounds = torch.tensor([[-half] * 3, [half] * 3], dtype=o.dtype, device=o.device)
    valid = torch.ones(o.shape[:-1], dtype=torch.bool, device=o.device)
    inv = 1 / d
    sign = (inv < 0).long()

    def slab(axis: int) -> tuple[Tensor, Tensor]:
        lo = (bounds.index_select(0, sign[..., axis])[..., axis] - o[..., axis]) * inv[..., axis]
        hi = (bounds.index_select(0, 1 - sign[..., axis])[..., axis] - o[..., axis]) * inv[..., axis]
        return lo, hi

    tmin, tmax = slab(0)
    tymin, tymax = slab(1)
    valid[torch.logical_or(tmin > tymax, tymin > tmax)] = False
    tmin, tmax = torch.max(tmin, tymin), torch.min(tmax, tymax)
    tzmin, tzmax = slab(2)
    valid[torch.logical_or(tmin > tzmax, tzmin > tmax)] = False
    tmin, tmax = torch.max(tmin, tzmin), torch.min(tmax, tzmax)
    tmin[~valid] = -1
    tmax[~valid] = -2
    return tmin.reshape(*shape[:-1], 1), tmax.reshape(*shape[:-1], 1)


def plane_coordinates(points: Tensor, box_warp: float) -> Tensor:
    """The grid coordinates of ``points`` on the three planes: ``(x, y)``, ``(x, z)`` and
    ``(z, x)`` of ``points * 2 / box_warp`` (the official plane axes, see :data:`PLANE_AXES`).

    Parameters
    ----------
    points : torch.Tensor
        (N, M, 3) world points.
    box_warp : float
        Side of the cube the planes span (``[-1, 1]`` on the grid).

    Returns
    -------
    torch.Tensor
        (N, 3, M, 2).
    """
    p = (2 / box_warp) * points
    return torch.stack([p[..., list(ix)] for ix in _PLANE_COORDS], dim=1)


def sample_planes(planes: Tensor, points: Tensor, box_warp: float) -> Tensor:
    """Tri-plane features at ``points``: bilinear, zeros outside, ``align_corners=False``.

    Parameters
    ----------
    planes : torch.Tensor
        (N, 3, C, H, W) plane features.
    points : torch.Tensor
        (N, M, 3) world points.
    box_warp : float
        Side of the cube the planes span.

    Returns
    -------
    torch.Tensor
        (N, 3, M, C).
    """
    n, n_planes, c, h, w = planes.shape
    m = points.shape[1]
    grid = plane_coordinates(points, box_warp).reshape(n * n_planes, 1, m, 2)
    out = F.grid_sample(planes.reshape(n * n_planes, c, h, w), grid.float(), mode="bilinear",
                        padding_mode="zeros", align_corners=False)
    return out.permute(0, 3, 2, 1).reshape(n, n_planes, m, c)


def stratified_depths(n: int, m: int, start: Any, end: Any, steps: int, disparity: bool,
                      jitter: Tensor | None, device: torch.device) -> Tensor:
    """Coarse depths along each ray, ``(n, m, steps, 1)``: ``linspace(start, end, steps)``
    (scalars, or per ray ``(n, m, 1)`` tensors), or uniform in disparity; plus
    ``jitter * step`` when ``jitter`` (uniform [0, 1) numbers of that shape) is given.

    Raises
    ------
    ValueError
        For disparity sampling with per-ray limits (the released code cannot do it either).
    """
    if disparity:
        if isinstance(start, Tensor):
            raise ValueError("rendering_kwargs: disparity_space_sampling with ray_start/ray_end 'auto' is "
                             "not supported (nor by the released EG3D code)")
        d = torch.linspace(0, 1, steps, device=device).reshape(1, 1, steps, 1).repeat(n, m, 1, 1)
        if jitter is not None:
            d = d + jitter * (1 / (steps - 1))
        return 1.0 / (1.0 / start * (1.0 - d) + 1.0 / end * d)
    if isinstance(start, Tensor):
        ramp = torch.arange(steps, dtype=torch.float32, device=device) / (steps - 1)
        d = (start[None] + ramp.reshape(-1, 1, 1, 1) * (end - start)[None]).permute(1, 2, 0, 3)
        if jitter is not None:
            d = d + jitter * ((end - start) / (steps - 1))[..., None]
        return d
    d = torch.linspace(start, end, steps, device=device).reshape(1, 1, steps, 1).repeat(n, m, 1, 1)
    if jitter is not None:
        d = d + jitter * ((end - start) / (steps - 1))
    return d


def pdf_depths(bins: Tensor, weights: Tensor, u: Tensor, eps: float = 1e-5) -> Tensor:
    """Inverse-CDF samples of the piecewise-constant density ``weights`` over ``bins``.

    Parameters
    ----------
    bins : torch.Tensor
        (R, B) bin edges along each ray (``B >= W + 1``; edges past ``W + 1`` are unused).
    weights : torch.Tensor
        (R, W) non-negative weights (``eps`` is added).
    u : torch.Tensor
        (R, K) points in [0, 1]: ``linspace(0, 1, K)`` for the deterministic samples, uniform
        random numbers for the official random ones.
    eps : float, default 1e-5
        Added to the weights; CDF steps below it count as 1.

    Returns
    -------
    torch.Tensor
        (R, K) depths.
    """
    r, nw = weights.shape
    k = u.shape[1]
    w = weights + eps
    pdf = w / torch.sum(w, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[:, :1]), cdf], -1)
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.clamp_min(inds - 1, 0)
    above = torch.clamp_max(inds, nw)
    idx = torch.stack([below, above], -1).view(r, 2 * k)
    cdf_g = torch.gather(cdf, 1, idx).view(r, k, 2)
    bins_g = torch.gather(bins, 1, idx).view(r, k, 2)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < eps, torch.ones_like(denom), denom)
    return bins_g[..., 0] + (u - cdf_g[..., 0]) / denom * (bins_g[..., 1] - bins_g[..., 0])


def importance_depths(depths: Tensor, weights: Tensor, u: Tensor) -> Tensor:
    """The fine samples of the official ``sample_importance``: the coarse ``weights`` (one
    per coarse interval) max-pooled and average-pooled, plus 0.01, sampled between the
    coarse midpoints at the points ``u``.

    Parameters
    ----------
    depths : torch.Tensor
        (N, M, D, 1) coarse depths.
    weights : torch.Tensor
        (N, M, D - 1, 1) coarse compositing weights.
    u : torch.Tensor
        (N*M, K) points in [0, 1] (see :func:`pdf_depths`).

    Returns
    -------
    torch.Tensor
        (N, M, K, 1) depths.
    """
    n, m, d, _ = depths.shape
    z = depths.reshape(n * m, d)
    w = weights.reshape(n * m, -1)
    w = F.max_pool1d(w.unsqueeze(1).float(), 2, 1, padding=1)
    w = F.avg_pool1d(w, 2, 1).squeeze(1) + 0.01
    mid = 0.5 * (z[:, :-1] + z[:, 1:])
    return pdf_depths(mid, w[:, 1:-1], u).detach().reshape(n, m, u.shape[1], 1)


def march(colors: Tensor, densities: Tensor, depths: Tensor, white_back: bool = False
          ) -> tuple[Tensor, Tensor, Tensor]:
    """Volume rendering of samples along rays (MipNeRF-style, on interval midpoints).

    Parameters
    ----------
    colors : torch.Tensor
        (N, M, S, C) features in [0, 1] (about; the decoder's sigmoid range).
    densities : torch.Tensor
        (N, M, S, 1) raw densities (``softplus(. - 1)`` applied here).
    depths : torch.Tensor
        (N, M, S, 1) sample depths, sorted along each ray.
    white_back : bool, default False
        Composite over white (``+ 1 - total weight``).

    Returns
    -------
    rgb : torch.Tensor
        (N, M, C) composite scaled to [-1, 1].
    depth : torch.Tensor
        (N, M, 1) weighted mean depth, **not yet clamped** (see :func:`render_rays`).
    weights : torch.Tensor
        (N, M, S - 1, 1) compositing weights.
    """
    deltas = depths[:, :, 1:] - depths[:, :, :-1]
    colors_mid = (colors[:, :, :-1] + colors[:, :, 1:]) / 2
    densities_mid = (densities[:, :, :-1] + densities[:, :, 1:]) / 2
    depths_mid = (depths[:, :, :-1] + depths[:, :, 1:]) / 2
    densities_mid = F.softplus(densities_mid - 1)
    alpha = 1 - torch.exp(-(densities_mid * deltas))
    shifted = torch.cat([torch.ones_like(alpha[:, :, :1]), 1 - alpha + 1e-10], -2)
    weights = alpha * torch.cumprod(shifted, -2)[:, :, :-1]
    rgb = torch.sum(weights * colors_mid, -2)
    total = weights.sum(2)
    depth = torch.sum(weights * depths_mid, -2) / total
    if white_back:
        rgb = rgb + 1 - total
    return rgb * 2 - 1, depth, weights


def _sorted_union(d1: Tensor, c1: Tensor, s1: Tensor, d2: Tensor, c2: Tensor, s2: Tensor
                  ) -> tuple[Tensor, Tensor, Tensor]:
    d, c, s = torch.cat([d1, d2], dim=-2), torch.cat([c1, c2], dim=-2), torch.cat([s1, s2], dim=-2)
    _, idx = torch.sort(d, dim=-2)
    return (torch.gather(d, -2, idx), torch.gather(c, -2, idx.expand(-1, -1, -1, c.shape[-1])),
            torch.gather(s, -2, idx.expand(-1, -1, -1, 1)))


def _ray_limits(origins: Tensor, directions: Tensor, opts: Mapping[str, Any]) -> tuple[Any, Any]:
    start, end = opts["ray_start"], opts["ray_end"]
    if start == end == "auto":
        start, end = ray_box_limits(origins, directions, float(opts["box_warp"]))
        ok = end > start
        if torch.any(ok).item():
            start[~ok] = start[ok].min()
            end[~ok] = start[ok].max()  # sic: the released code's exit for rays that miss
        return start, end
    if isinstance(start, str) or isinstance(end, str):
        raise ValueError(f"rendering_kwargs: ray_start/ray_end must both be numbers or both 'auto', "
                         f"got {start!r}/{end!r}")
    return float(start), float(end)


def render_rays(planes: Tensor, decoder: Callable[[Tensor], dict[str, Tensor]], origins: Tensor,
                directions: Tensor, opts: Mapping[str, Any], sampling: str = "deterministic",
                rng: torch.Generator | None = None, chunk: int | None = None
                ) -> tuple[Tensor, Tensor, Tensor]:
    """Render rays through tri-planes: coarse pass, importance pass, ray marcher.

    Parameters
    ----------
    planes : torch.Tensor
        (N, 3, C, H, W) tri-plane features.
    decoder : callable
        ``decoder(features (N, 3, P, C)) -> {"rgb": (N, P, F), "sigma": (N, P, 1)}``.
    origins, directions : torch.Tensor
        (N, M, 3) rays (:func:`camera_rays`).
    opts : mapping
        The pickle's ``rendering_kwargs``: ``ray_start``, ``ray_end`` (numbers or both
        ``'auto'``), ``box_warp``, ``depth_resolution``, ``depth_resolution_importance``,
        ``disparity_space_sampling``, ``clamp_mode`` (``'softplus'``), ``white_back``.
    sampling : {"deterministic", "random"}, default "deterministic"
        See the module docstring.
    rng : torch.Generator, optional
        Source of the random numbers with ``sampling="random"`` (on the rays' device).
    chunk : int, optional
        Rays per image evaluated at once (all when None); the result does not depend on it.

    Returns
    -------
    features : torch.Tensor
        (N, M, F) composite features in [-1, 1].
    depth : torch.Tensor
        (N, M, 1) depth, clamped to the range of all sample depths of the batch.
    weight : torch.Tensor
        (N, M, 1) total compositing weight (opacity).

    Raises
    ------
    ValueError
        For an unknown ``sampling``, a ``clamp_mode`` other than softplus, or
        ``density_noise`` > 0 (a training-time option).
    """
    if sampling not in SAMPLING_MODES:
        raise ValueError(f"sampling must be one of {SAMPLING_MODES}, got {sampling!r}")
    if opts.get("clamp_mode", "softplus") != "softplus":
        raise ValueError(f"rendering_kwargs: clamp_mode {opts.get('clamp_mode')!r} is not supported "
                         f"(EG3D's ray marcher supports 'softplus' only)")
    if float(opts.get("density_noise", 0) or 0) > 0:
        raise ValueError("rendering_kwargs: density_noise > 0 is a training-time option; set it to 0")
    n, m, _ = origins.shape
    steps, n_imp = int(opts["depth_resolution"]), int(opts.get("depth_resolution_importance", 0) or 0)
    box_warp, white = float(opts["box_warp"]), bool(opts.get("white_back", False))
    dev = origins.device
    start, end = _ray_limits(origins, directions, opts)
    jitter = u = None
    if sampling == "random":  # the official draws, in the official order, before any chunking
        if isinstance(start, Tensor):  # rand_like of the permuted per-ray linspace: memory (D, N, M, 1)
            jitter = torch.rand((steps, n, m, 1), device=dev, generator=rng).permute(1, 2, 0, 3)
        else:
            jitter = torch.rand((n, m, steps, 1), device=dev, generator=rng)
        if n_imp > 0:
            u = torch.rand((n * m, n_imp), device=dev, generator=rng)
    elif n_imp > 0:
        u = torch.linspace(0, 1, n_imp, device=dev).expand(n * m, n_imp)
    coarse = stratified_depths(n, m, start, end, steps, bool(opts.get("disparity_space_sampling", False)),
                               jitter, dev)
    step = m if chunk is None else max(1, int(chunk))
    rgbs, depths, weights, lo, hi = [], [], [], [], []
    u_rays = None if u is None else u.reshape(n, m, n_imp)
    for a in range(0, m, step):
        b = min(m, a + step)
        o, d, dc = origins[:, a:b], directions[:, a:b], coarse[:, a:b]
        k = b - a

        def run(depth: Tensor, o=o, d=d, k=k) -> tuple[Tensor, Tensor]:
            s = depth.shape[2]
            pts = (o.unsqueeze(-2) + depth * d.unsqueeze(-2)).reshape(n, -1, 3)
            out = decoder(sample_planes(planes, pts, box_warp))
            return (out["rgb"].reshape(n, k, s, out["rgb"].shape[-1]), out["sigma"].reshape(n, k, s, 1))

        col, sig = run(dc)
        if n_imp > 0:
            _, _, w = march(col, sig, dc, white)
            df = importance_depths(dc, w, u_rays[:, a:b].reshape(n * k, n_imp))
            col_f, sig_f = run(df)
            dc, col, sig = _sorted_union(dc, col, sig, df, col_f, sig_f)
        rgb, depth, w = march(col, sig, dc, white)
        rgbs.append(rgb), depths.append(depth), weights.append(w.sum(2))
        lo.append(dc.min()), hi.append(dc.max())
    depth = torch.nan_to_num(torch.cat(depths, 1), float("inf"))
    depth = torch.clamp(depth, torch.stack(lo).min(), torch.stack(hi).max())
    return torch.cat(rgbs, 1), depth, torch.cat(weights, 1)
