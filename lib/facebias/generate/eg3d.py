"""EG3D (paper 000's generator) behind the :class:`facebias.generate.Generator` protocol, with
real camera control.

An independent PyTorch implementation of NVIDIA's ``TriPlaneGenerator`` (Chan et al.,
"Efficient Geometry-aware 3D Generative Adversarial Networks", CVPR 2022; ``NVlabs/eg3d``)
that loads the official snapshots through the restricted unpickler of
:mod:`facebias.generate.weights` (the pickled module source is never imported or run) and
renders what the released code renders:

* :mod:`facebias.generate.eg3d_network`: backbone, decoder, superresolution, init kwargs;
* :mod:`facebias.generate.eg3d_render`: rays, tri-plane sampling, importance renderer;
* :mod:`facebias.generate.eg3d_camera`: look-at cameras, intrinsics, the 25-number label.

Typical use::

    g = load_generator("eg3d", weights="ffhq512-128.pkl", truncation_psi=0.7)
    c = g.camera(yaw, pitch)               # (n, 25), official radians
    ws = g.mapping(z, g.camera(0.0, 0.0))   # (n, num_ws, 512), conditioned on the frontal camera
    out = g.render(ws, c)                  # image, image_raw, image_depth (float32 NCHW)
    u8 = g.synthesize(z, yaw=[-30, 0, 30])  # uint8 NHWC, the project's yaw in degrees

Sampling along rays: ``"deterministic"`` (default; coarse depths on the ``linspace``, the
importance samples at ``u = linspace(0, 1, N)``): one latent and camera always give the same
samples along every ray, so the same batch gives the same bytes (another batch size changes
only the summation order of the batched convolutions: a few pixels by one grey level);
``"random"``: the official stochastic renderer, its random numbers drawn in the released
order, by default from torch's global generator as the released code draws them (so
``torch.manual_seed(s)`` before :meth:`render` reproduces the released render after the same
call), or, with ``seed=s``, from a generator of its own seeded with ``s`` (the first render
after construction then equals the released code's after ``torch.manual_seed(s)`` on the same
device; build the cameras first, as ``LookAtPoseSampler`` draws from the global generator).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from facebias.generate import LIGHTS, as_latents, as_lights, as_yaws
from facebias.generate.eg3d_camera import (
    FFHQ_FOV_DEG,
    camera_label,
    eg3d_yaw_from_project,
    focal_from_fov,
)
from facebias.generate.eg3d_network import TriPlaneNetwork, network_config
from facebias.generate.eg3d_render import SAMPLING_MODES, camera_rays, render_rays
from facebias.generate.stylegan2 import StyleGAN2Generator, load_state_checked, tf32_mode

__all__ = ["EG3DGenerator", "TINY_INIT_KWARGS", "NOISE_MODES", "SPACES"]

NOISE_MODES = ("const", "none", "random")

#: Buffers the released training loop registers on the generator that rendering never reads
#: (``dataset_label_std``: the spread of the camera labels, for pose-conditioning swaps).
TRAINING_BUFFERS = frozenset({"dataset_label_std"})
SPACES = ("z", "w")

#: The smallest configuration of the released training script's shape: 128 px output through
#: ``SuperresolutionHybrid2X`` from 64 px neural renders, a narrow backbone (its planes are
#: 256 x 256 x 96 as always), FFHQ's camera and ray settings with 12 + 12 samples per ray.
#: For tests and speed measurements only: randomly initialised, it draws no faces.
TINY_INIT_KWARGS: dict[str, Any] = dict(
    z_dim=512, c_dim=25, w_dim=512, img_resolution=128, img_channels=3,
    mapping_kwargs=dict(num_layers=2), channel_base=4096, channel_max=32, num_fp16_res=0,
    conv_clamp=None, sr_num_fp16_res=0, sr_kwargs=dict(channel_base=4096, channel_max=32),
    rendering_kwargs=dict(
        image_resolution=128, disparity_space_sampling=False, clamp_mode="softplus",
        superresolution_module="training.superresolution.SuperresolutionHybrid2X",
        c_gen_conditioning_zero=False, c_scale=1.0, superresolution_noise_mode="none",
        decoder_lr_mul=1.0, sr_antialias=True, depth_resolution=12, depth_resolution_importance=12,
        ray_start=2.25, ray_end=3.3, box_warp=1, avg_camera_radius=2.7, avg_camera_pivot=[0, 0, 0.2]))


def _tensor(x: Any, device: torch.device, what: str, shape_tail: tuple[int, ...]) -> Tensor:
    t = torch.as_tensor(np.asarray(x, dtype=np.float32) if not isinstance(x, Tensor) else x,
                        dtype=torch.float32, device=device)
    if t.ndim == len(shape_tail):
        t = t.unsqueeze(0)
    if tuple(t.shape[1:]) != shape_tail:
        raise ValueError(f"{what}: expected shape (n, {', '.join(map(str, shape_tail))}), got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{what}: values must be finite")
    return t


class EG3DGenerator:
    """EG3D's tri-plane generator behind the :class:`facebias.generate.Generator` protocol.

    Parameters
    ----------
    weights : str or pathlib.Path, optional
        An official EG3D snapshot (``.pkl``), read with the restricted unpickler (no code from
        the pickle runs). The network is built from the pickle's ``init_kwargs`` and filled by
        name (any missing, unexpected or mis-shaped name raises ``WeightsMismatchError``);
        ``rendering_kwargs`` and ``neural_rendering_resolution`` come from the pickle. Without
        weights the network is randomly initialised from ``seed`` with ``init_kwargs``
        (default :data:`TINY_INIT_KWARGS`) and ``w_avg`` is the mean of 2,048 mapped z:
        **for tests and speed measurements only**.
    network : {"G_ema", "G"}, default "G_ema"
        Which generator of the snapshot.
    sampling : {"deterministic", "random"}, default "deterministic"
        Depths along rays (:mod:`facebias.generate.eg3d_render`).
    noise_mode : {"const", "none", "random"}, default "const"
        The backbone's noise inputs: the stored per-layer noise, none, or fresh draws from
        the generator seeded with ``seed``. The superresolution's noise mode is the
        pickle's ``rendering_kwargs["superresolution_noise_mode"]`` (the released models: none).
    truncation_psi : float, default 1.0
        ``w = w_avg + psi (w - w_avg)`` in :meth:`mapping` (and so :meth:`sample` in
        ``space="w"`` and :meth:`synthesize` in ``space="z"``).
    truncation_cutoff : int, optional
        Truncate only the first ``cutoff`` of the ``num_ws`` layer inputs (all when None).
    neural_rendering_resolution : int, optional
        Rays per side of the raw render (None: the pickle's value; 64 without weights).
    fov_deg : float, default 18.837
        Field of view of the cameras, degrees (FFHQ's); ignored when ``focal`` is given.
    focal : float, optional
        Normalised focal length (units of the image side) instead of ``fov_deg``.
    radius, pivot : optional
        Camera orbit radius and look-at point (default: the pickle's ``avg_camera_radius``,
        2.7, and ``avg_camera_pivot``, the origin, as ``gen_samples.py`` reads them).
    space : {"z", "w"}, default "z"
        The protocol's latents: z (mapped here under the frontal conditioning camera) or w
        (``sample`` returns mapped, truncated w; ``synthesize`` renders w directly).
    seed : int, optional
        The random numbers of ``sampling="random"`` and ``noise_mode="random"``: None (torch's
        global generator, as the released code) or the seed of a generator of their own. Also
        the random init without weights (None: 0).
    batch_size : int, optional
        Images per forward pass of :meth:`synthesize` (None: 1 on the CPU, where larger
        batches are slower per image, 4 on CUDA).
    ray_chunk : int, optional
        Rays per image evaluated at once by the renderer (None: about 2^17 sample points per
        step on the CPU, 2^21 on CUDA); the pixels depend on it only through float rounding
        (about 1e-6).
    device : str, optional
        Default CUDA when available, else CPU. Float32 throughout.
    tf32 : bool, default False
        Let float32 convolutions and matrix products use TF32 on the GPU (off: a CUDA render
        equals the CPU's within 1e-3).
    init_kwargs : dict, optional
        ``TriPlaneGenerator`` keywords for a random network (ignored with weights).

    Raises
    ------
    ValueError
        For an unknown ``network``, ``sampling``, ``noise_mode`` or ``space``, a bad
        ``batch_size``, ``truncation_psi``, resolution or camera, or a snapshot whose
        generator is not a ``TriPlaneGenerator`` or has unsupported settings.

    Examples
    --------
    >>> g = EG3DGenerator(device="cpu")                      # random weights, not a face model
    >>> g.synthesize(g.sample(1, seed=0), yaw=[20.0]).shape  # doctest: +SKIP
    (1, 128, 128, 3)
    """

    name = "eg3d"
    #: Physical controls of :meth:`synthesize`: the camera's yaw (no light control).
    controls = ("yaw",)

    def __init__(self, weights: str | Path | None = None, *, network: str = "G_ema",
                 sampling: str = "deterministic", noise_mode: str = "const",
                 truncation_psi: float = 1.0, truncation_cutoff: int | None = None,
                 neural_rendering_resolution: int | None = None, fov_deg: float = FFHQ_FOV_DEG,
                 focal: float | None = None, radius: float | None = None,
                 pivot: Sequence[float] | None = None, space: str = "z", seed: int | None = None,
                 batch_size: int | None = None, ray_chunk: int | None = None, device: str | None = None,
                 tf32: bool = False, init_kwargs: dict[str, Any] | None = None):
        if network not in ("G_ema", "G"):
            raise ValueError(f"network must be 'G_ema' or 'G', got {network!r}")
        if sampling not in SAMPLING_MODES:
            raise ValueError(f"sampling must be one of {SAMPLING_MODES}, got {sampling!r}")
        if noise_mode not in NOISE_MODES:
            raise ValueError(f"noise_mode must be one of {NOISE_MODES}, got {noise_mode!r}")
        if space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {space!r}")
        if batch_size is not None and int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not math.isfinite(float(truncation_psi)):
            raise ValueError(f"truncation_psi must be finite, got {truncation_psi}")
        if ray_chunk is not None and int(ray_chunk) < 1:
            raise ValueError(f"ray_chunk must be >= 1 (rays per image), got {ray_chunk}")
        self.device = torch.device(device if device is not None else
                                   ("cuda" if torch.cuda.is_available() else "cpu"))
        self.network, self.sampling, self.noise_mode, self.space = network, sampling, noise_mode, space
        self.truncation_psi = float(truncation_psi)
        self.truncation_cutoff = None if truncation_cutoff is None else int(truncation_cutoff)
        self.seed, self.tf32 = (0 if seed is None else int(seed)), bool(tf32)
        self.batch_size = int(batch_size) if batch_size is not None else (4 if self.device.type == "cuda" else 1)
        self.ray_chunk = None if ray_chunk is None else int(ray_chunk)
        self.weights = None if weights is None else Path(weights)

        if weights is not None:
            rec, nrr = _read_snapshot(weights, network)
            config = network_config(rec.init_args, rec.init_kwargs)
            state = {k: v for k, v in rec.state_dict.items() if k not in TRAINING_BUFFERS}
        else:
            config = network_config((), dict(init_kwargs or TINY_INIT_KWARGS))
            state, nrr = None, 64
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            net = TriPlaneNetwork(**config)
        if state is not None:
            load_state_checked(net, state, source=str(weights), kind="EG3D")
        self.net = net.eval().requires_grad_(False).to(self.device)
        self.config = config
        self.rendering_kwargs = dict(net.rendering_kwargs)
        res = nrr if neural_rendering_resolution is None else neural_rendering_resolution
        if not (isinstance(res, (int, np.integer)) and int(res) >= 1):
            raise ValueError(f"neural_rendering_resolution must be a positive integer, got {res!r}")
        self.neural_rendering_resolution = int(res)
        self.focal = focal_from_fov(fov_deg) if focal is None else float(focal)
        if not (math.isfinite(self.focal) and self.focal > 0):
            raise ValueError(f"focal must be positive (units of the image side), got {focal!r}")
        rk = self.rendering_kwargs
        self.radius = float(rk.get("avg_camera_radius", 2.7) if radius is None else radius)
        self.pivot = tuple(float(p) for p in (rk.get("avg_camera_pivot", [0, 0, 0]) if pivot is None else pivot))
        if len(self.pivot) != 3 or not (math.isfinite(self.radius) and self.radius > 0):
            raise ValueError(f"camera: radius must be positive and pivot a 3-vector, got {self.radius}, {self.pivot}")
        self.sr_noise_mode = str(rk.get("superresolution_noise_mode", "none"))
        if self.sr_noise_mode not in NOISE_MODES:
            raise ValueError(f"rendering_kwargs: superresolution_noise_mode {self.sr_noise_mode!r} is not one "
                             f"of {NOISE_MODES}")
        self._rng: torch.Generator | None = None  # None: torch's global generator
        if seed is not None:
            self._rng = torch.Generator(device=self.device)
            self._rng.manual_seed(self.seed)
        if state is None:
            self._estimate_w_avg()

    # ---- properties
    @property
    def z_dim(self) -> int:
        """Dimension of z."""
        return self.net.z_dim

    @property
    def w_dim(self) -> int:
        """Dimension of w (512)."""
        return self.net.w_dim

    @property
    def num_ws(self) -> int:
        """Per-layer w inputs of the backbone (14 for its 256 px planes)."""
        return self.net.num_ws

    @property
    def resolution(self) -> int:
        """Side of the final images, pixels."""
        return self.net.img_resolution

    @property
    def latent_dim(self) -> int:
        """z_dim in ``space="z"``, w_dim in ``space="w"``."""
        return self.z_dim if self.space == "z" else self.w_dim

    def __repr__(self) -> str:
        src = str(self.weights) if self.weights else "random init"
        return (f"EG3DGenerator({src}, {self.resolution}px from {self.neural_rendering_resolution}px renders, "
                f"sampling={self.sampling!r}, space={self.space!r}, psi={self.truncation_psi}, device={self.device})")

    # ---- cameras
    def camera(self, yaw: Any = 0.0, pitch: Any = 0.0) -> Tensor:
        """25-number camera labels at official ``(yaw, pitch)`` (radians; yaw > 0 turns the
        face toward the image's left, pitch > 0 looks up at it), on the orbit of
        :attr:`radius` about the world origin looking at :attr:`pivot`.

        Returns
        -------
        torch.Tensor
            (n, 25) float32 on the CPU: cam2world (16, row-major) and intrinsics (9).
        """
        return camera_label(yaw, pitch, self.pivot, self.radius, self.focal)

    def _conditioning(self, n: int, conditioning: Any) -> Tensor:
        if conditioning is None:
            return self.camera(0.0, 0.0).to(self.device).expand(n, 25)
        c = _tensor(conditioning, self.device, "conditioning", (25,))
        return c.expand(n, 25) if c.shape[0] == 1 else c

    # ---- networks
    @torch.inference_mode()
    def _estimate_w_avg(self, n: int = 2048) -> None:
        g = torch.Generator().manual_seed(self.seed + 1)
        z = torch.randn([n, self.z_dim], generator=g).to(self.device)
        mapping = self.net.backbone.mapping
        if mapping.w_avg_beta is not None:
            with tf32_mode(self.tf32):
                c = self._conditioning(n, None)
                if self.net.rendering_kwargs.get("c_gen_conditioning_zero", False):
                    c = torch.zeros_like(c)
                c = c * self.net.rendering_kwargs.get("c_scale", 0)
                w = mapping(z, c, broadcast=False)
            mapping.w_avg.copy_(w.mean(dim=0))

    @torch.inference_mode()
    def mapping(self, z: Any, c: Any = None, truncation_psi: float | None = None,
                truncation_cutoff: int | None = None) -> Tensor:
        """ws of z under the conditioning cameras ``c``, as the released ``G.mapping``.

        Parameters
        ----------
        z : array-like
            (n, z_dim) latents.
        c : array-like, optional
            (n, 25) or (25,) conditioning camera labels (None: the frontal camera).
        truncation_psi : float, optional
            Default: the generator's.
        truncation_cutoff : int, optional
            Default: the generator's.

        Returns
        -------
        torch.Tensor
            (n, num_ws, w_dim) float32 on :attr:`device`.
        """
        zt = _tensor(z, self.device, "z", (self.z_dim,))
        ct = self._conditioning(zt.shape[0], c)
        psi = self.truncation_psi if truncation_psi is None else float(truncation_psi)
        cutoff = self.truncation_cutoff if truncation_cutoff is None else int(truncation_cutoff)
        with tf32_mode(self.tf32):
            return self.net.mapping(zt, ct, truncation_psi=psi, truncation_cutoff=cutoff)

    def _ray_chunk(self, n: int) -> int:
        if self.ray_chunk is not None:
            return self.ray_chunk
        rk = self.rendering_kwargs
        samples = int(rk["depth_resolution"]) + int(rk.get("depth_resolution_importance", 0) or 0)
        points = 1 << (21 if self.device.type == "cuda" else 17)  # CPU: measured faster (bench_eg3d)
        return max(1, points // max(1, n * samples))

    @torch.inference_mode()
    def render(self, ws: Any, c: Any, neural_rendering_resolution: int | None = None) -> dict[str, Tensor]:
        """The released ``G.synthesis(ws, c)``: tri-planes of ``ws``, volume rendering from
        the cameras ``c``, superresolution.

        Parameters
        ----------
        ws : array-like
            (n, num_ws, w_dim) per-layer w (:meth:`mapping`).
        c : array-like
            (n, 25) or (25,) camera labels of the rendering cameras (:meth:`camera`).
        neural_rendering_resolution : int, optional
            Rays per side (default: the generator's).

        Returns
        -------
        dict of torch.Tensor
            float32 NCHW on :attr:`device`: ``image`` (n, 3, R, R) about [-1, 1],
            ``image_raw`` (n, 3, r, r) the volume-rendered colour before superresolution,
            ``image_depth`` (n, 1, r, r) depth along each ray (world units).

        Raises
        ------
        ValueError
            For arrays of the wrong shape or not finite.
        """
        wt = _tensor(ws, self.device, "ws", (self.num_ws, self.w_dim))
        ct = _tensor(c, self.device, "c", (25,))
        if ct.shape[0] == 1 and wt.shape[0] != 1:
            ct = ct.expand(wt.shape[0], 25)
        if ct.shape[0] != wt.shape[0]:
            raise ValueError(f"c: {ct.shape[0]} cameras for {wt.shape[0]} ws")
        res = self.neural_rendering_resolution if neural_rendering_resolution is None else int(
            neural_rendering_resolution)
        n = wt.shape[0]
        with tf32_mode(self.tf32):
            origins, dirs = camera_rays(ct[:, :16].view(-1, 4, 4), ct[:, 16:25].view(-1, 3, 3), res)
            planes = self.net.planes(wt, noise_mode=self.noise_mode, rng=self._rng)
            feats, depth, _ = render_rays(planes, self.net.decoder, origins, dirs, self.rendering_kwargs,
                                          sampling=self.sampling, rng=self._rng, chunk=self._ray_chunk(n))
            feature_image = feats.permute(0, 2, 1).reshape(n, feats.shape[-1], res, res).contiguous()
            depth_image = depth.permute(0, 2, 1).reshape(n, 1, res, res)
            raw = feature_image[:, :3]
            image = self.net.superresolution(raw, feature_image, wt, noise_mode=self.sr_noise_mode,
                                             rng=self._rng)
        return {"image": image, "image_raw": raw.clone(), "image_depth": depth_image}

    # ---- protocol
    def sample(self, n: int, seed: int) -> np.ndarray:
        """``n`` latents, deterministic in ``seed``: z ~ N(0, I) (n, z_dim) float64 from
        ``numpy.random.default_rng(seed)``; in ``space="w"`` those z mapped under the frontal
        camera and truncated, (n, w_dim) (needs ``truncation_cutoff=None``)."""
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        z = np.random.default_rng(seed).standard_normal((n, self.z_dim))
        if self.space == "w":
            if self.truncation_cutoff is not None:
                raise ValueError("space='w' with truncation_cutoff: w differs per layer; use mapping() and render()")
            return self._map_w(z)
        return z

    def _map_w(self, z: np.ndarray) -> np.ndarray:
        if len(z) == 0:
            return np.zeros((0, self.w_dim))
        out = [self.mapping(z[i:i + 256])[:, 0].double().cpu().numpy() for i in range(0, len(z), 256)]
        return np.concatenate(out)

    def synthesize(self, latents: np.ndarray, yaw: Any = None, light: Any = None,
                   pitch: Any = None, conditioning: Any = None) -> np.ndarray:
        """Latents -> uint8 RGB images (n, R, R, 3) at the given yaw, as the released
        ``gen_samples.py`` quantises them (``clamp(x * 127.5 + 128, 0, 255)`` truncated).

        Parameters
        ----------
        latents : numpy.ndarray
            (n, latent_dim): z (``space="z"``: mapped and truncated here) or w.
        yaw : float or array-like, optional
            **The project's convention**: degrees, positive = the face turned toward the
            image's right; rendered by EG3D's camera at official yaw ``-radians(yaw)``
            (:func:`facebias.generate.eg3d_camera.eg3d_yaw_from_project`).
        light : None or "front"
            EG3D has no light control; anything else raises ``ValueError``.
        pitch : float or array-like, optional
            Degrees, positive = the camera below the face looking up (official pitch
            ``radians(pitch)``).
        conditioning : array-like, optional
            (25,) or (n, 25) conditioning camera of the mapping (default: frontal).

        Returns
        -------
        numpy.ndarray
            (n, resolution, resolution, 3) uint8.
        """
        n = len(np.asarray(latents))
        if light is not None and any(lt != LIGHTS["front"] for lt in as_lights(light, n)):
            raise ValueError("EG3D has no light control; pass light=None (to vary lighting, move along a "
                             "learned direction in the latent space)")
        lat = as_latents(latents, self.latent_dim, "latents")
        yaw_rad = eg3d_yaw_from_project(as_yaws(yaw, n))
        pitch_rad = np.radians(as_yaws(pitch, n))
        out = []
        for i in range(0, n, self.batch_size):
            sl = slice(i, i + self.batch_size)
            if self.space == "z":
                ws = self.mapping(lat[sl], conditioning)
            else:
                ws = torch.as_tensor(lat[sl], dtype=torch.float32, device=self.device)
                ws = ws.unsqueeze(1).expand(-1, self.num_ws, -1)
            out.append(StyleGAN2Generator.to_uint8(self.render(ws, self.camera(yaw_rad[sl], pitch_rad[sl]))["image"]))
        if not out:
            return np.zeros((0, self.resolution, self.resolution, 3), np.uint8)
        return np.concatenate(out)


def _read_snapshot(weights: str | Path, network: str) -> tuple[Any, int]:
    """The generator record of an EG3D snapshot and its ``neural_rendering_resolution``
    (the ``rendering_kwargs`` the module holds replace its init kwargs' copy)."""
    from facebias.generate.eg3d_render import PLANE_AXES
    from facebias.generate.weights import load_network

    rec = load_network(weights, key=network)
    if rec.class_name != "TriPlaneGenerator":
        raise ValueError(f"{weights}: {network} is a {rec.class_name!r}, not an EG3D 'TriPlaneGenerator' "
                         f"(a StyleGAN2 pickle? use load_generator('stylegan2', ...))")
    attrs = rec.attributes
    nrr = attrs.get("", {}).get("neural_rendering_resolution", 64)
    rendering = attrs.get("", {}).get("rendering_kwargs")
    if isinstance(rendering, dict):
        rec.init_kwargs = {**rec.init_kwargs, "rendering_kwargs": rendering}
    axes = attrs.get("renderer", {}).get("plane_axes")
    if isinstance(axes, torch.Tensor) and not torch.equal(axes.to(torch.float32).cpu(), PLANE_AXES):
        raise ValueError(f"{weights}: the renderer's plane_axes differ from EG3D's generate_planes(); "
                         f"only the released plane axes are supported")
    softplus = attrs.get("decoder.net.1", {})
    if float(softplus.get("beta", 1.0)) != 1.0 or float(softplus.get("threshold", 20.0)) != 20.0:
        raise ValueError(f"{weights}: the decoder's Softplus has beta={softplus.get('beta')}, "
                         f"threshold={softplus.get('threshold')}; only the defaults (1, 20) are supported")
    if not isinstance(nrr, (int, np.integer)):
        warnings.warn(f"{weights}: neural_rendering_resolution {nrr!r} is not an integer; using 64", stacklevel=3)
        nrr = 64
    return rec, int(nrr)
