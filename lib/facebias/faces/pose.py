"""Head pose (yaw, pitch, roll) from six of dlib's 68 landmarks (paper 003's pose factor).

Implements the pose of ``docs/specs/batest.md`` (paper 003's image factors): a generic 3D
face (:data:`MODEL_3D`) fitted with ``cv2.solvePnP`` to the landmarks
:data:`POSE_LANDMARKS` through a pinhole camera (:func:`camera_matrix`); angles in degrees,
yaw > 0 = face turned toward the image's right side, pitch > 0 = looking up, roll > 0 =
head tilted clockwise as seen in the image (:func:`head_pose`, inverse
:func:`rotation_from_pose`). Coordinates are ``(x, y)`` pixels, x right, y down.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

# --------------------------------------------------------------------------- head pose

#: 68-point indices used for pose: nose tip, chin, image-left eye outer corner,
#: image-right eye outer corner, image-left mouth corner, image-right mouth corner.
POSE_LANDMARKS = (30, 8, 36, 45, 48, 54)

#: Generic 3D face (arbitrary units, ~mm x 2.5) in image-axis conventions: x to the image's
#: right, y down, z away from the camera; origin at the nose tip. This is the common
#: "learnopencv" model with y and z flipped so that a frontal face has rotation ~identity.
MODEL_3D = np.array(
    [
        [0.0, 0.0, 0.0],  # 30 nose tip
        [0.0, 330.0, 65.0],  # 8 chin
        [-225.0, -170.0, 135.0],  # 36 image-left eye outer corner
        [225.0, -170.0, 135.0],  # 45 image-right eye outer corner
        [-150.0, 150.0, 125.0],  # 48 image-left mouth corner
        [150.0, 150.0, 125.0],  # 54 image-right mouth corner
    ],
    dtype=np.float64,
)


def camera_matrix(image_shape: Sequence[int]) -> np.ndarray:
    """Pinhole intrinsics used for pose: focal = image width (px), principal point = the
    image centre in pixel-index coordinates ``((W-1)/2, (H-1)/2)``.

    Parameters
    ----------
    image_shape : Sequence of int
        ``(H, W[, C])``.

    Returns
    -------
    numpy.ndarray
        (3, 3) float64 camera matrix ``K``.

    Examples
    --------
    >>> camera_matrix((480, 640, 3))
    array([[640. ,   0. , 319.5],
           [  0. , 640. , 239.5],
           [  0. ,   0. ,   1. ]])
    """
    h, w = int(image_shape[0]), int(image_shape[1])
    return np.array([[w, 0.0, (w - 1) / 2.0], [0.0, w, (h - 1) / 2.0], [0.0, 0.0, 1.0]])


def rotation_from_pose(yaw: float, pitch: float, roll: float) -> np.ndarray:
    """Rotation matrix (model -> camera) for angles in this module's convention (degrees).

    Inverse of :func:`head_pose`: ``R = Rz(roll) @ Ry(-yaw) @ Rx(-pitch)`` (camera axes), the
    composition that ``cv2.RQDecomp3x3`` decomposes.

    Parameters
    ----------
    yaw, pitch, roll : float
        Degrees; yaw > 0 = face turned toward the image's right, pitch > 0 = looking up,
        roll > 0 = clockwise tilt in the image.

    Returns
    -------
    numpy.ndarray
        (3, 3) float64 rotation matrix; camera points are ``MODEL_3D @ R.T + t``.

    Examples
    --------
    >>> rotation_from_pose(0.0, 0.0, 0.0)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """
    ax, ay, az = np.deg2rad([-pitch, -yaw, roll])
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    return rz @ ry @ rx


def head_pose(points2d_6: np.ndarray, image_shape: Sequence[int]) -> tuple[float, float, float]:
    """Head pose ``(yaw, pitch, roll)`` in degrees from six 2D landmarks.

    ``points2d_6`` are the pixels of the 68-point landmarks :data:`POSE_LANDMARKS`
    (30, 8, 36, 45, 48, 54) in that order; ``image_shape`` is ``(H, W[, C])``. Fits
    :data:`MODEL_3D` with ``cv2.solvePnP`` (focal = W, centre principal point, no
    distortion) and splits the rotation with ``cv2.RQDecomp3x3``. Because the model is in
    image-axis conventions a frontal face is near the identity and pitch does not wrap by
    180 degrees. Signs: yaw > 0 = face turned toward the image's right, pitch > 0 = looking
    up, roll > 0 = clockwise tilt in the image. One generic face does not fit every face's
    proportions, so pitch is the least reliable angle: on the 100 near-frontal faces of
    ``skimage.data.lfw_subset()`` (upscaled to 200 px) the median is +6.6 degrees (IQR 1.0
    to 10.8), while skimage's astronaut gives -25. Compare pitch between images of similar
    faces rather than reading it as absolute.

    Parameters
    ----------
    points2d_6 : numpy.ndarray
        (6, 2) ``(x, y)`` pixels of the landmarks :data:`POSE_LANDMARKS`, in that order.
    image_shape : Sequence of int
        ``(H, W[, C])`` of the image the points come from.

    Returns
    -------
    tuple of float
        ``(yaw, pitch, roll)`` in degrees.

    Raises
    ------
    ValueError
        If ``cv2.solvePnP`` fails.

    Examples
    --------
    Project the 3D model turned by a known pose and recover it:

    >>> K = camera_matrix((400, 400))
    >>> cam = MODEL_3D @ rotation_from_pose(20.0, -5.0, 10.0).T + [0.0, 0.0, 2000.0]
    >>> pts = (cam @ K.T)[:, :2] / cam[:, 2:]
    >>> yaw, pitch, roll = head_pose(pts, (400, 400))
    >>> print(f"{yaw:.1f} {pitch:.1f} {roll:.1f}")
    20.0 -5.0 10.0
    """
    pts = np.asarray(points2d_6, dtype=np.float64).reshape(6, 2)
    ok, rvec, _tvec = cv2.solvePnP(
        MODEL_3D, pts, camera_matrix(image_shape), np.zeros(4), flags=cv2.SOLVEPNP_ITERATIVE
    )
    if not ok:
        raise ValueError("solvePnP failed")
    rmat, _ = cv2.Rodrigues(rvec)
    angles = cv2.RQDecomp3x3(rmat)[0]  # degrees about x, y, z (camera axes)
    ax, ay, az = (float(a) for a in angles)
    return -ay, -ax, az
