"""EG3D in PyTorch: each easy-to-get-wrong detail of the released renderer pinned against a
second computation (numpy brute-force loops, hand cases), cameras checked by projecting
points, and the protocol. Agreement with NVIDIA's own code is tests/generate/test_eg3d_official.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from facebias.generate import Generator, load_generator
from facebias.generate.eg3d import TINY_INIT_KWARGS, EG3DGenerator
from facebias.generate.eg3d_camera import (
    camera_label,
    eg3d_yaw_from_project,
    focal_from_fov,
    intrinsics_matrix,
    project_points,
)
from facebias.generate.eg3d_network import OSGDecoder, Superresolution, network_config
from facebias.generate.eg3d_render import (
    PLANE_AXES,
    camera_rays,
    importance_depths,
    march,
    pdf_depths,
    plane_coordinates,
    ray_box_limits,
    render_rays,
    sample_planes,
)

PIVOT, RADIUS = (0.0, 0.0, 0.2), 2.7
OPTS = dict(ray_start=2.25, ray_end=3.3, box_warp=1.0, depth_resolution=8, depth_resolution_importance=6,
            disparity_space_sampling=False, clamp_mode="softplus")


def _randomise(module: torch.nn.Module, seed: int, scale: float = 0.5) -> torch.nn.Module:
    """Every parameter and buffer but the resampling filters drawn at random (the zero
    initialisations of biases and noise strengths would hide mistakes)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            if not name.endswith("resample_filter"):
                t.copy_(torch.randn(t.shape, generator=g) * (scale if t.ndim <= 1 else 1.0))
    return module


@pytest.fixture(scope="module")
def gen() -> EG3DGenerator:
    g = EG3DGenerator(device="cpu", seed=1)
    _randomise(g.net, 5)
    with torch.no_grad():  # a plausible density range, so alpha is neither all 0 nor all 1
        g.net.decoder.net[2].bias[0] = 2.0
    return g


# ---------------------------------------------------------------------------- cameras


def test_focal_length_uses_the_official_truncated_constants():
    f = focal_from_fov(18.837)
    assert round(f, 5) == 4.26339
    exact = 1 / (math.tan(math.radians(18.837) / 2) * math.sqrt(2))
    assert abs(f - exact) > 1e-4  # the truncated pi and sqrt(2) matter at this precision
    assert abs(f - 4.2647) > 1e-3  # not the constant one official script hard-codes
    with pytest.raises(ValueError, match="fov_deg"):
        focal_from_fov(0)
    np.testing.assert_array_equal(intrinsics_matrix(2.0), [[2, 0, 0.5], [0, 2, 0.5], [0, 0, 1]])


def _look_at_numpy(h: float, v: float, pivot, radius) -> np.ndarray:
    """A second computation of the orbit camera: spherical position about the origin, axes
    (right, down, forward) with forward toward the pivot, OpenCV style."""
    v = min(max(v, 1e-5), math.pi - 1e-5)
    phi = math.acos(1 - 2 * v / math.pi)
    origin = radius * np.array([math.sin(phi) * math.cos(math.pi - h), math.cos(phi),
                                math.sin(phi) * math.sin(math.pi - h)])
    fwd = np.asarray(pivot, float) - origin
    fwd /= np.linalg.norm(fwd)
    right = np.cross(fwd, [0.0, 1.0, 0.0])  # = -(up x fwd)
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = right, down, fwd, origin
    return m


@pytest.mark.parametrize("yaw,pitch", [(0.0, 0.0), (0.5, 0.0), (-0.3, 0.2), (1.2, -0.4)])
def test_camera_label_agrees_with_a_numpy_look_at(yaw, pitch):
    c = camera_label(yaw, pitch, PIVOT, RADIUS, 4.26339).numpy()[0]
    want = _look_at_numpy(math.pi / 2 + yaw, math.pi / 2 + pitch, PIVOT, RADIUS)
    np.testing.assert_allclose(c[:16].reshape(4, 4), want, atol=2e-6)
    np.testing.assert_allclose(c[16:].reshape(3, 3), intrinsics_matrix(4.26339), atol=0)
    assert abs(np.linalg.norm(c[[3, 7, 11]]) - RADIUS) < 1e-5  # the orbit is about the world origin
    uv = project_points(np.array([PIVOT]), c)
    np.testing.assert_allclose(uv, [[0.5, 0.5]], atol=1e-5)  # and the camera looks at the pivot


def test_yaw_conventions_by_projecting_the_nose():
    """A point in front of the face (toward +z, where the frontal camera is) moves to the
    image's left for official yaw > 0, to the right for the project's yaw > 0."""
    nose = np.array([[PIVOT[0], PIVOT[1], PIVOT[2] + 0.3]])
    front = project_points(nose, camera_label(0.0, 0.0, PIVOT, RADIUS, 4.26).numpy()[0])[0, 0]
    assert abs(front - 0.5) < 1e-6
    official = project_points(nose, camera_label(0.4, 0.0, PIVOT, RADIUS, 4.26).numpy()[0])[0, 0]
    ours = project_points(nose, camera_label(eg3d_yaw_from_project(20.0), 0.0, PIVOT, RADIUS, 4.26).numpy()[0])[0, 0]
    assert official < 0.5 < ours
    # pitch > 0 puts the camera below the face (looking up); world up is image up (v < 0.5)
    assert camera_label(0.0, 0.3, PIVOT, RADIUS, 4.26).numpy()[0, 7] < 0
    assert project_points(np.array([[0, 1.0, 0.2]]), camera_label(0.0, 0.0, PIVOT, RADIUS, 4.26).numpy()[0])[0, 1] < 0.5


def test_rays_agree_with_a_per_pixel_pinhole_loop():
    c = camera_label([0.3], [-0.1], PIVOT, RADIUS, 4.26339)
    c[0, 16 + 1] = 0.05  # a skew, so the lift's skew terms are exercised
    res = 5
    o, d = camera_rays(c[:, :16].view(-1, 4, 4), c[:, 16:].view(-1, 3, 3), res)
    m, k = c[0, :16].view(4, 4).double().numpy(), c[0, 16:].view(3, 3).double().numpy()
    kinv = np.linalg.inv(k)
    for row in range(res):
        for col in range(res):
            pix = np.array([(col + 0.5) / res, (row + 0.5) / res, 1.0])
            cam = kinv @ pix
            world = m[:3, :3] @ cam
            want = world / np.linalg.norm(world)
            np.testing.assert_allclose(d[0, row * res + col].double().numpy(), want, atol=2e-6)
            np.testing.assert_allclose(o[0, row * res + col].numpy(), m[:3, 3], atol=0)


# ---------------------------------------------------------------------------- tri-planes


def test_plane_axes_are_the_official_matrices_and_the_third_plane_reads_z_x():
    pts = torch.randn(2, 7, 3)
    inv = torch.linalg.inv(PLANE_AXES)
    by_matrix = torch.stack([(pts * 2 / 1.6) @ inv[i] for i in range(3)], dim=1)[..., :2]
    torch.testing.assert_close(plane_coordinates(pts, 1.6), by_matrix, rtol=0, atol=1e-6)
    p = torch.tensor([[[0.1, 0.2, 0.3]]])
    got = plane_coordinates(p, 2.0)[0, :, 0].tolist()  # box_warp 2: coordinates unscaled
    np.testing.assert_allclose(got, [[0.1, 0.2], [0.1, 0.3], [0.3, 0.1]], atol=1e-7)


def test_sample_planes_reads_pixel_centres_with_align_corners_false():
    """Each plane stores (plane, row, col) codes; a point whose grid coordinate is a pixel
    centre, ((i + 0.5) / W) * 2 - 1, reads exactly that pixel; outside the box reads 0."""
    h = w = 4
    planes = torch.zeros(1, 3, 1, h, w)
    for p in range(3):
        for r in range(h):
            for c in range(w):
                planes[0, p, 0, r, c] = 100 * p + 10 * r + c
    box = 1.6
    centre = lambda i: ((i + 0.5) / w * 2 - 1) * box / 2  # noqa: E731  world coordinate of centre i
    x, y, z = centre(1), centre(2), centre(3)
    out = sample_planes(planes, torch.tensor([[[x, y, z], [5.0, 5.0, 5.0]]]), box)
    # plane 0 reads (x, y) -> col 1, row 2; plane 1 (x, z) -> col 1, row 3; plane 2 (z, x) -> col 3, row 1
    np.testing.assert_allclose(out[0, :, 0, 0].numpy(), [0 + 21, 100 + 31, 200 + 13], atol=1e-4)
    assert out[0, :, 1, 0].abs().max() == 0  # zeros padding outside


def test_decoder_mean_softplus_sigmoid_against_numpy():
    dec = _randomise(OSGDecoder(32, lr_multiplier=0.7), 2).requires_grad_(False)
    feats = torch.randn(2, 3, 5, 32)
    out = dec(feats)
    x = feats.double().numpy().mean(axis=1).reshape(-1, 32)
    l0, l2 = dec.net[0], dec.net[2]
    w0 = l0.weight.double().numpy() * 0.7 / math.sqrt(32)
    w2 = l2.weight.double().numpy() * 0.7 / math.sqrt(64)
    hid = np.log1p(np.exp(x @ w0.T + l0.bias.double().numpy() * 0.7))
    y = (hid @ w2.T + l2.bias.double().numpy() * 0.7).reshape(2, 5, 33)
    np.testing.assert_allclose(out["sigma"].numpy(), y[..., :1], atol=1e-5)
    np.testing.assert_allclose(out["rgb"].numpy(), 1 / (1 + np.exp(-y[..., 1:])) * 1.002 - 0.001, atol=1e-5)


# ---------------------------------------------------------------------------- along rays


def _march_numpy(col, sig, dep, white):
    """One ray: midpoints, softplus(sigma - 1), alpha, transmittance, composite."""
    delta = np.diff(dep)
    cm, sm, dm = (col[:-1] + col[1:]) / 2, (sig[:-1] + sig[1:]) / 2, (dep[:-1] + dep[1:]) / 2
    dens = np.log1p(np.exp(sm - 1))
    alpha = 1 - np.exp(-dens * delta)
    trans, w = 1.0, np.zeros_like(alpha)
    for i, a in enumerate(alpha):
        w[i] = a * trans
        trans *= 1 - a + 1e-10
    rgb = (w[:, None] * cm).sum(0)
    if white:
        rgb = rgb + 1 - w.sum()
    return rgb * 2 - 1, (w * dm).sum() / w.sum(), w


@pytest.mark.parametrize("white", [False, True])
def test_march_against_a_loop(white):
    g = torch.Generator().manual_seed(0)
    dep = torch.sort(torch.rand(2, 3, 9, 1, generator=g) * 2 + 1, dim=2).values
    col, sig = torch.rand(2, 3, 9, 4, generator=g), torch.randn(2, 3, 9, 1, generator=g) * 2
    rgb, depth, w = march(col, sig, dep, white)
    for a in range(2):
        for r in range(3):
            want = _march_numpy(col[a, r].double().numpy(), sig[a, r, :, 0].double().numpy(),
                                dep[a, r, :, 0].double().numpy(), white)
            np.testing.assert_allclose(rgb[a, r].numpy(), want[0], atol=1e-5)
            np.testing.assert_allclose(depth[a, r, 0].item(), want[1], atol=1e-5)
            np.testing.assert_allclose(w[a, r, :, 0].numpy(), want[2], atol=1e-6)


def _pdf_numpy(bins, weights, u, eps=1e-5):
    w = weights + eps
    cdf = np.concatenate([[0.0], np.cumsum(w / w.sum())])
    out = []
    for x in u:
        i = int(np.searchsorted(cdf, x, side="right"))
        lo, hi = max(i - 1, 0), min(i, len(weights))
        den = cdf[hi] - cdf[lo]
        den = 1.0 if den < eps else den
        out.append(bins[lo] + (x - cdf[lo]) / den * (bins[hi] - bins[lo]))
    return np.array(out)


def test_deterministic_importance_samples_against_an_inverse_cdf_loop():
    g = torch.Generator().manual_seed(1)
    dep = torch.linspace(2.0, 3.0, 10).reshape(1, 1, 10, 1).repeat(1, 4, 1, 1)
    w = torch.rand(1, 4, 9, 1, generator=g) ** 3
    w[0, 2] = 0  # a ray with no weight: uniform samples
    u = torch.linspace(0, 1, 7).expand(4, 7)
    got = importance_depths(dep, w, u)
    for r in range(4):
        ww = w[0, r, :, 0].double().numpy()
        padded = np.r_[-np.inf, ww, -np.inf]
        mx = np.maximum(padded[:-1], padded[1:])            # max_pool1d(2, 1, padding=1): 10 values
        pooled = (mx[:-1] + mx[1:]) / 2 + 0.01              # avg_pool1d(2, 1): 9 values
        z = dep[0, r, :, 0].double().numpy()
        mid = (z[:-1] + z[1:]) / 2
        want = _pdf_numpy(mid, pooled[1:-1], np.linspace(0, 1, 7))
        np.testing.assert_allclose(got[0, r, :, 0].numpy(), want, atol=1e-5)
    assert torch.all(got[0, 2, 1:, 0] > got[0, 2, :-1, 0])  # monotone in u


def test_pdf_concentrates_where_the_weight_is():
    bins = torch.linspace(0, 1, 11).unsqueeze(0)
    w = torch.zeros(1, 10)
    w[0, 6] = 1.0  # all the mass in [0.6, 0.7]
    s = pdf_depths(bins, w, torch.linspace(0, 1, 50).unsqueeze(0))
    inside = ((s >= 0.6) & (s <= 0.7)).float().mean().item()
    assert inside > 0.9


def test_stratified_depths_linear_per_ray_and_disparity_by_hand():
    from facebias.generate.eg3d_render import stratified_depths

    lin = stratified_depths(1, 2, 2.0, 3.0, 5, False, None, torch.device("cpu"))
    np.testing.assert_allclose(lin[0, 1, :, 0].numpy(), [2.0, 2.25, 2.5, 2.75, 3.0], atol=1e-7)
    disp = stratified_depths(1, 1, 2.0, 4.0, 3, True, None, torch.device("cpu"))[0, 0, :, 0].numpy()
    np.testing.assert_allclose(1 / disp, [0.5, 0.375, 0.25], atol=1e-7)  # uniform in 1 / depth
    start, end = torch.tensor([[[1.0], [2.0]]]), torch.tensor([[[2.0], [4.0]]])
    per_ray = stratified_depths(1, 2, start, end, 3, False, None, torch.device("cpu"))
    np.testing.assert_allclose(per_ray[0, :, :, 0].numpy(), [[1.0, 1.5, 2.0], [2.0, 3.0, 4.0]], atol=1e-7)
    jitter = torch.full((1, 2, 3, 1), 0.5)
    shifted = stratified_depths(1, 2, start, end, 3, False, jitter, torch.device("cpu"))
    np.testing.assert_allclose((shifted - per_ray)[0, :, :, 0].numpy(), [[0.25] * 3, [0.5] * 3], atol=1e-7)
    with pytest.raises(ValueError, match="disparity_space_sampling with ray_start/ray_end 'auto'"):
        stratified_depths(1, 2, start, end, 3, True, None, torch.device("cpu"))


@pytest.mark.parametrize("opts,match", [
    (dict(OPTS, clamp_mode="relu"), "clamp_mode 'relu' is not supported"),
    (dict(OPTS, density_noise=0.1), "density_noise > 0 is a training-time option"),
    (dict(OPTS, ray_start="auto"), "must both be numbers or both 'auto'"),
])
def test_unsupported_rendering_kwargs_are_one_line_errors(opts, match):
    o, d = torch.zeros(1, 4, 3), F.normalize(torch.ones(1, 4, 3), dim=-1)
    with pytest.raises(ValueError, match=match):
        render_rays(torch.zeros(1, 3, 32, 4, 4), OSGDecoder(32), o, d, opts)
    with pytest.raises(ValueError, match="sampling must be one of"):
        render_rays(torch.zeros(1, 3, 32, 4, 4), OSGDecoder(32), o, d, OPTS, sampling="jittered")


def test_ray_box_limits_by_hand():
    o = torch.tensor([[0.0, 0.0, 3.0], [0.0, 0.0, 3.0], [5.0, 5.0, 5.0]])
    d = F.normalize(torch.tensor([[0.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 0.0]]), dim=-1)
    start, end = ray_box_limits(o, d, 2.0)
    np.testing.assert_allclose(start[0].item(), 2.0, atol=1e-6)
    np.testing.assert_allclose(end[0].item(), 4.0, atol=1e-6)
    assert start[1].item() == -1 and end[1].item() == -2  # passes x = 1 before reaching z = 1
    assert start[2].item() == -1 and end[2].item() == -2


def _render_one_ray_numpy(planes, decoder, o, d, opts, u):
    """Brute force for one ray: coarse linspace, decoder per point, march, pooled weights,
    inverse CDF at u, union sorted, march again."""
    steps = opts["depth_resolution"]
    depth = np.linspace(opts["ray_start"], opts["ray_end"], steps)

    def shade(ts):
        pts = torch.tensor(o[None, :] + ts[:, None] * d[None, :], dtype=torch.float32)[None]
        out = decoder(sample_planes(planes, pts, opts["box_warp"]))
        return out["rgb"][0].double().numpy(), out["sigma"][0, :, 0].double().numpy()

    col, sig = shade(depth)
    _, _, w = _march_numpy(col, sig, depth, False)
    padded = np.r_[-np.inf, w, -np.inf]
    mx = np.maximum(padded[:-1], padded[1:])
    pooled = (mx[:-1] + mx[1:]) / 2 + 0.01
    fine = _pdf_numpy((depth[:-1] + depth[1:]) / 2, pooled[1:-1], u)
    cf, sf = shade(fine)
    allz = np.r_[depth, fine]
    order = np.argsort(allz, kind="stable")
    return _march_numpy(np.r_[col, cf][order], np.r_[sig, sf][order], allz[order], False)


def test_render_rays_against_a_brute_force_loop_over_rays(gen):
    c = gen.camera([0.2], [0.1])
    o, d = camera_rays(c[:, :16].view(-1, 4, 4), c[:, 16:].view(-1, 3, 3), 4)
    ws = gen.mapping(gen.sample(1, seed=2))
    planes = gen.net.planes(ws)
    feats, depth, opacity = render_rays(planes, gen.net.decoder, o, d, OPTS)
    u = np.linspace(0, 1, OPTS["depth_resolution_importance"])
    for r in range(16):
        rgb, dep, w = _render_one_ray_numpy(planes, gen.net.decoder, o[0, r].double().numpy(),
                                            d[0, r].double().numpy(), OPTS, u)
        np.testing.assert_allclose(feats[0, r].numpy(), rgb, atol=2e-5)
        np.testing.assert_allclose(depth[0, r, 0].item(), np.clip(dep, 2.25, 3.3), atol=2e-5)
        np.testing.assert_allclose(opacity[0, r, 0].item(), w.sum(), atol=2e-5)
    frac = ((opacity > 0.05) & (opacity < 0.95)).float().mean().item()
    assert frac > 0.2, frac  # the fixture is not degenerate: partly transparent rays


@pytest.mark.parametrize("sampling", ["deterministic", "random"])
def test_one_batch_or_chunks_give_the_same_image(gen, sampling):
    c = gen.camera([0.0, -0.4], [0.0, 0.1])
    o, d = camera_rays(c[:, :16].view(-1, 4, 4), c[:, 16:].view(-1, 3, 3), 32)  # 1,024 rays per image
    planes = gen.net.planes(gen.mapping(gen.sample(2, seed=3)))
    opts = dict(OPTS, ray_start="auto", ray_end="auto", white_back=True)
    runs = []
    for chunk in (None, 1000, 97):
        rng = torch.Generator().manual_seed(7)
        runs.append(render_rays(planes, gen.net.decoder, o, d, opts, sampling=sampling, rng=rng, chunk=chunk))
    for other in runs[1:]:  # the same samples; only the matrix products' summation order may differ
        for a, b in zip(runs[0], other, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def test_random_sampling_is_seeded_and_differs_from_deterministic(gen):
    c = gen.camera([0.1], [0.0])
    ws = gen.mapping(gen.sample(1, seed=4))
    kw = dict(device="cpu", seed=1)
    a, b = (EG3DGenerator(sampling="random", **kw) for _ in range(2))
    for g in (a, b):
        g.net.load_state_dict(gen.net.state_dict())
    first_a, first_b, second_a = a.render(ws, c), b.render(ws, c), a.render(ws, c)
    torch.testing.assert_close(first_a["image"], first_b["image"], rtol=0, atol=0)
    assert (first_a["image_depth"] - second_a["image_depth"]).abs().max() > 1e-4  # fresh draws per call
    glob = EG3DGenerator(sampling="random", device="cpu")  # seed=None: torch's global generator
    glob.net.load_state_dict(gen.net.state_dict())
    torch.manual_seed(1)
    via_global = glob.render(ws, c)
    torch.manual_seed(1)
    torch.testing.assert_close(glob.render(ws, c)["image"], via_global["image"], rtol=0, atol=0)
    torch.testing.assert_close(via_global["image_depth"], first_a["image_depth"], rtol=0, atol=0)
    det = gen.render(ws, c)
    torch.testing.assert_close(det["image"], gen.render(ws, c)["image"], rtol=0, atol=0)
    assert (det["image_depth"] - first_a["image_depth"]).abs().max() > 1e-4


# ---------------------------------------------------------------------------- superresolution


def test_superresolution_reads_only_the_last_w(gen):
    sr = gen.net.superresolution
    g = torch.Generator().manual_seed(3)
    feats, ws = torch.randn(1, 32, 64, 64, generator=g), torch.randn(1, gen.num_ws, 512, generator=g)
    other = ws.clone()
    other[:, :-1] = torch.randn(1, gen.num_ws - 1, 512, generator=g)
    base = sr(feats[:, :3], feats, ws)
    torch.testing.assert_close(sr(feats[:, :3], feats, other), base, rtol=0, atol=0)
    changed = ws.clone()
    changed[:, -1] += 1
    assert (sr(feats[:, :3], feats, changed) - base).abs().max() > 1e-3


def test_image_raw_is_the_render_before_superresolution(gen):
    c = gen.camera([0.3], [0.0])
    ws = gen.mapping(gen.sample(1, seed=5))
    out = gen.render(ws, c)
    o, d = camera_rays(c[:, :16].view(-1, 4, 4), c[:, 16:].view(-1, 3, 3), 64)
    feats, depth, _ = render_rays(gen.net.planes(ws), gen.net.decoder, o, d, gen.rendering_kwargs)
    raw = feats.permute(0, 2, 1).reshape(1, 32, 64, 64)[:, :3]
    torch.testing.assert_close(out["image_raw"], raw, rtol=0, atol=0)  # not raw + the first ToRGB
    torch.testing.assert_close(out["image_depth"], depth.permute(0, 2, 1).reshape(1, 1, 64, 64), rtol=0, atol=0)
    sr_in = gen.net.superresolution(raw, feats.permute(0, 2, 1).reshape(1, 32, 64, 64), ws)
    torch.testing.assert_close(out["image"], sr_in, rtol=0, atol=0)


@pytest.mark.parametrize("module,side,resized", [("SuperresolutionHybrid2X", 64, False),
                                                 ("SuperresolutionHybrid2X", 32, True),
                                                 ("SuperresolutionHybrid4X", 128, False)])
def test_superresolution_resizes_its_input_as_released(module, side, resized):
    out_res = {"SuperresolutionHybrid2X": 128, "SuperresolutionHybrid4X": 256}[module]
    sr = _randomise(Superresolution(module, 32, out_res, 0, True), 4).requires_grad_(False)
    feats = torch.randn(1, 32, side, side)
    ws = torch.randn(1, 3, 512)
    seen = []
    sr.block0.register_forward_pre_hook(lambda m, args: seen.append(args[0].clone()))
    assert sr(feats[:, :3], feats, ws).shape == (1, 3, out_res, out_res)
    want = F.interpolate(feats, size=(sr.input_resolution,) * 2, mode="bilinear", align_corners=False,
                         antialias=True) if resized else feats
    torch.testing.assert_close(seen[0], want, rtol=0, atol=0)


# ---------------------------------------------------------------------------- init kwargs, protocol


def test_network_config_reads_the_released_training_kwargs():
    cfg = network_config((), {**TINY_INIT_KWARGS, "fused_modconv_default": "inference_only"})
    assert cfg["synthesis_kwargs"]["channel_base"] == 4096 and cfg["synthesis_kwargs"]["conv_clamp"] is None
    no_clamp = {k: v for k, v in TINY_INIT_KWARGS.items() if k != "conv_clamp"}
    assert network_config((), no_clamp)["synthesis_kwargs"]["conv_clamp"] == 256  # EG3D's block default
    with pytest.raises(ValueError, match="unsupported TriPlaneGenerator arguments.*'mystery'"):
        network_config((), {**TINY_INIT_KWARGS, "mystery": 1})
    with pytest.raises(ValueError, match="rendering_kwargs lack"):
        network_config((), {**TINY_INIT_KWARGS, "rendering_kwargs": {"box_warp": 1}})
    bad_sr = {**TINY_INIT_KWARGS, "rendering_kwargs": {**TINY_INIT_KWARGS["rendering_kwargs"],
                                                       "superresolution_module": "training.superresolution.Mine"}}
    with pytest.raises(ValueError, match="superresolution module 'Mine' is not supported"):
        EG3DGenerator(init_kwargs=bad_sr, device="cpu")


def test_mapping_conditioning_zero_and_c_scale():
    base = dict(TINY_INIT_KWARGS)
    z = np.random.default_rng(0).standard_normal((2, 512))
    c_side = EG3DGenerator(device="cpu").camera(0.4, 0.0)

    def ws(rk, c):
        g = EG3DGenerator(init_kwargs={**base, "rendering_kwargs": {**base["rendering_kwargs"], **rk}}, device="cpu")
        return g.mapping(z, c)

    front, side = ws({}, None), ws({}, c_side)
    assert (front - side).abs().max() > 1e-4  # the camera conditions the mapping
    torch.testing.assert_close(ws({"c_gen_conditioning_zero": True}, None),
                               ws({"c_gen_conditioning_zero": True}, c_side), rtol=0, atol=0)
    no_scale = {k: v for k, v in base["rendering_kwargs"].items() if k != "c_scale"}
    g = EG3DGenerator(init_kwargs={**base, "rendering_kwargs": no_scale}, device="cpu")
    torch.testing.assert_close(g.mapping(z, None), g.mapping(z, c_side), rtol=0, atol=0)  # c * 0


def test_protocol_shapes_determinism_and_batches(gen):
    assert isinstance(gen, Generator) and gen.name == "eg3d" and gen.latent_dim == 512
    z = gen.sample(3, seed=8)
    np.testing.assert_array_equal(z, gen.sample(3, seed=8))
    assert gen.batch_size == 1  # the CPU default
    gen.batch_size = 4
    try:
        imgs = gen.synthesize(z, yaw=[-30.0, 0.0, 30.0])
        again = gen.synthesize(z, yaw=[-30.0, 0.0, 30.0])
    finally:
        gen.batch_size = 1
    assert imgs.shape == (3, 128, 128, 3) and imgs.dtype == np.uint8
    one = np.concatenate([gen.synthesize(z[i:i + 1], yaw=[y]) for i, y in enumerate([-30.0, 0.0, 30.0])])
    diff = np.abs(imgs.astype(int) - one)  # batched convolutions sum in another order: rounding only
    assert diff.max() <= 1 and (diff > 0).mean() < 1e-3
    np.testing.assert_array_equal(imgs, again)  # same batch, same bytes
    assert not np.array_equal(imgs[0], gen.synthesize(z[:1], yaw=[30.0])[0])  # yaw changes the render
    np.testing.assert_array_equal(gen.synthesize(z[:1], light="front"), gen.synthesize(z[:1]))
    with pytest.raises(ValueError, match="no light control"):
        gen.synthesize(z[:1], light="left")
    with pytest.raises(ValueError, match=r"expected shape \(n, 512\)"):
        gen.synthesize(z[:, :10])
    assert load_generator("eg3d", device="cpu").resolution == 128


def test_w_space_renders_what_z_space_renders(gen):
    gw = EG3DGenerator(device="cpu", seed=1, space="w", truncation_psi=0.7)
    gz = EG3DGenerator(device="cpu", seed=1, truncation_psi=0.7)
    for g in (gw, gz):
        g.net.load_state_dict(gen.net.state_dict())
    z = gz.sample(2, seed=9)
    w = gw.sample(2, seed=9)
    assert w.shape == (2, 512)
    np.testing.assert_allclose(w, gz.mapping(z)[:, 0].double().numpy(), rtol=0, atol=1e-6)
    diff = np.abs(gw.synthesize(w, yaw=[10.0, -5.0]).astype(int) - gz.synthesize(z, yaw=[10.0, -5.0]))
    assert diff.max() <= 1 and (diff > 0).mean() < 1e-3  # w mapped two at a time vs one: rounding


@pytest.mark.parametrize("kw,match", [
    (dict(network="D"), "network must be"), (dict(sampling="jitter"), "sampling must be"),
    (dict(noise_mode="fresh"), "noise_mode must be"), (dict(space="x"), "space must be"),
    (dict(batch_size=0), "batch_size"), (dict(truncation_psi=float("nan")), "truncation_psi"),
    (dict(neural_rendering_resolution=0), "neural_rendering_resolution"), (dict(ray_chunk=0), "ray_chunk"),
    (dict(fov_deg=200), "fov_deg"), (dict(radius=-1.0), "radius"),
])
def test_bad_arguments_are_one_line_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        EG3DGenerator(device="cpu", **kw)
