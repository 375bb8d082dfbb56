"""EG3D's cameras (paper 000's pose control): look-at poses on an orbit, normalised
intrinsics, the 25-number camera label, and the mapping from the project's yaw convention.

The label a camera gets is EG3D's: ``[cam2world 4x4 row-major, intrinsics 3x3 row-major]``
(25 float32 numbers). Cameras follow the OpenCV convention (camera x right, y down, z
forward); the world has y up and the face looking along +z.

Conventions of the official ``camera_utils.py`` / ``gen_samples.py`` reproduced here:

* a pose at angles ``(h, v)`` (radians) puts the camera on the sphere of radius ``r`` about
  the **world origin** at ``(r sin(phi) cos(pi - h), r cos(phi), r sin(phi) sin(pi - h))``
  with ``phi = arccos(1 - 2 v / pi)`` (``v`` clamped to ``[1e-5, pi - 1e-5]``), looking at the
  **pivot**; the frontal camera is ``h = v = pi/2``;
* EG3D's yaw and pitch are offsets from the frontal pose: ``h = pi/2 + yaw``,
  ``v = pi/2 + pitch``. Official yaw > 0 moves the camera toward +x, which turns the face
  toward the image's **left**; pitch > 0 moves the camera down (looking up at the face);
* intrinsics ``[[f, 0, 0.5], [0, f, 0.5], [0, 0, 1]]`` in units of the image side, with
  ``f = 1 / (tan(fov_deg * 3.14159 / 360) * 1.414)`` from a field of view in degrees: the
  official formula with its truncated constants (18.837 degrees gives f = 4.26339).

The project's yaw (:mod:`facebias.generate`) is in degrees with positive turning the face
toward the image's **right**, so ``eg3d_yaw = -radians(project_yaw)``
(:func:`eg3d_yaw_from_project`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = ["FFHQ_FOV_DEG", "focal_from_fov", "intrinsics_matrix", "look_at_pose", "camera_label",
           "eg3d_yaw_from_project", "project_points"]

#: The field of view of EG3D's FFHQ cameras, degrees (``gen_samples.py``'s default).
FFHQ_FOV_DEG = 18.837


def focal_from_fov(fov_deg: float) -> float:
    """The normalised focal length of a field of view, by ``camera_utils.FOV_to_intrinsics``'s
    formula ``1 / (tan(fov_deg * 3.14159 / 360) * 1.414)`` (its truncated pi and sqrt 2 kept).

    Parameters
    ----------
    fov_deg : float
        Full field of view, degrees, in (0, 180).

    Returns
    -------
    float
        Focal length in units of the image side.

    Raises
    ------
    ValueError
        For a field of view outside (0, 180) or not finite.

    Examples
    --------
    >>> round(focal_from_fov(18.837), 5)
    4.26339
    """
    fov = float(fov_deg)
    if not (math.isfinite(fov) and 0.0 < fov < 180.0):
        raise ValueError(f"fov_deg must be in (0, 180) degrees, got {fov_deg!r}")
    return float(1 / (math.tan(fov * 3.14159 / 360) * 1.414))


def intrinsics_matrix(focal: float) -> np.ndarray:
    """``[[f, 0, 0.5], [0, f, 0.5], [0, 0, 1]]`` as float32 (principal point at the centre;
    units of the image side)."""
    f = float(focal)
    if not (math.isfinite(f) and f > 0):
        raise ValueError(f"focal must be a positive number (units of the image side), got {focal!r}")
    return np.array([[f, 0, 0.5], [0, f, 0.5], [0, 0, 1]], dtype=np.float32)


def _normalize(v: Tensor) -> Tensor:
    return v / torch.norm(v, dim=-1, keepdim=True)


def look_at_pose(horizontal: Tensor, vertical: Tensor, pivot: Sequence[float], radius: float) -> Tensor:
    """Camera-to-world matrices of cameras on the orbit of ``radius`` about the world
    origin at angles ``(horizontal, vertical)`` (radians; frontal = pi/2, pi/2), each looking
    at ``pivot``; float32, the official ``LookAtPoseSampler.sample`` arithmetic with zero
    spread (no random numbers are drawn here).

    Parameters
    ----------
    horizontal, vertical : torch.Tensor
        (n,) angles in radians.
    pivot : sequence of 3 floats
        The point looked at (world units).
    radius : float
        Distance of the camera from the world origin.

    Returns
    -------
    torch.Tensor
        (n, 4, 4) float32 cam2world matrices, columns (right, down, forward, origin).
    """
    h = horizontal.reshape(-1, 1).to(torch.float32)
    v = vertical.reshape(-1, 1).to(torch.float32)
    v = torch.clamp(v, 1e-5, math.pi - 1e-5)
    theta = h
    v = v / math.pi
    phi = torch.arccos(1 - 2 * v)
    n = h.shape[0]
    origins = torch.zeros((n, 3), dtype=torch.float32, device=h.device)
    origins[:, 0:1] = radius * torch.sin(phi) * torch.cos(math.pi - theta)
    origins[:, 2:3] = radius * torch.sin(phi) * torch.sin(math.pi - theta)
    origins[:, 1:2] = radius * torch.cos(phi)
    lookat = torch.tensor([float(p) for p in pivot], dtype=torch.float32, device=h.device)
    forward = _normalize(_normalize(lookat - origins))
    up = torch.tensor([0, 1, 0], dtype=torch.float32, device=h.device).expand_as(forward)
    right = -_normalize(torch.cross(up, forward, dim=-1))
    up = _normalize(torch.cross(forward, right, dim=-1))
    rotation = torch.eye(4, device=h.device).unsqueeze(0).repeat(n, 1, 1)
    rotation[:, :3, :3] = torch.stack((right, up, forward), dim=-1)
    translation = torch.eye(4, device=h.device).unsqueeze(0).repeat(n, 1, 1)
    translation[:, :3, 3] = origins
    return translation @ rotation


def camera_label(yaw: Tensor | np.ndarray | float, pitch: Tensor | np.ndarray | float,
                 pivot: Sequence[float], radius: float, focal: float) -> Tensor:
    """EG3D's 25-number camera labels at official ``(yaw, pitch)`` offsets (radians) from
    the frontal pose: ``[cam2world row-major (16), intrinsics row-major (9)]``.

    Parameters
    ----------
    yaw, pitch : array-like or float
        Official angles in radians (broadcast against each other; yaw > 0 turns the face
        toward the image's left).
    pivot : sequence of 3 floats
        The point the cameras look at.
    radius : float
        Orbit radius about the world origin.
    focal : float
        Normalised focal length (:func:`focal_from_fov`).

    Returns
    -------
    torch.Tensor
        (n, 25) float32.

    Examples
    --------
    >>> c = camera_label(0.0, 0.0, (0, 0, 0.2), 2.7, focal_from_fov(18.837))
    >>> c.shape, [abs(round(float(x), 4)) for x in c[0, [3, 7, 11]]]  # the frontal camera sits on +z
    (torch.Size([1, 25]), [0.0, 0.0, 2.7])
    """
    y = torch.as_tensor(np.asarray(yaw, dtype=np.float64))
    p = torch.as_tensor(np.asarray(pitch, dtype=np.float64))
    y, p = torch.broadcast_tensors(y.reshape(-1), p.reshape(-1))
    if not (torch.isfinite(y).all() and torch.isfinite(p).all()):
        raise ValueError("camera: yaw and pitch must be finite (radians)")
    # the official sampler adds the angles to np.pi / 2 in float64 before torch sees them
    pose = look_at_pose((math.pi / 2 + y).to(torch.float32), (math.pi / 2 + p).to(torch.float32),
                        pivot, radius)
    k = torch.as_tensor(intrinsics_matrix(focal)).reshape(1, 9).expand(pose.shape[0], 9)
    return torch.cat([pose.reshape(-1, 16), k], dim=1)


def eg3d_yaw_from_project(yaw_deg: np.ndarray | float) -> np.ndarray:
    """The project's yaw (degrees, positive = face turned toward the image's right) as
    EG3D's (radians, positive = face turned toward the image's left): ``-radians(yaw)``.

    Examples
    --------
    >>> float(eg3d_yaw_from_project(30.0)) == -math.pi / 6
    True
    """
    return -np.radians(np.asarray(yaw_deg, dtype=np.float64))


def project_points(points: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Pixel coordinates (u right, v down; units of the image side, 0..1 across the image)
    of world points seen by the camera of a 25-number ``label`` (pinhole, OpenCV axes).

    Parameters
    ----------
    points : numpy.ndarray
        (m, 3) world points.
    label : numpy.ndarray
        (25,) camera label (:func:`camera_label`).

    Returns
    -------
    numpy.ndarray
        (m, 2) float64 ``(u, v)``.
    """
    lab = np.asarray(label, dtype=np.float64).reshape(25)
    cam2world, k = lab[:16].reshape(4, 4), lab[16:].reshape(3, 3)
    world2cam = np.linalg.inv(cam2world)
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    cam = (world2cam @ np.c_[pts, np.ones(len(pts))].T).T[:, :3]
    uvw = (k @ cam.T).T
    return uvw[:, :2] / uvw[:, 2:3]
