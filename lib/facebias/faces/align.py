"""Face alignment: 5-point similarity warp to the ArcFace 112 x 112 template, dlib chips."""

from __future__ import annotations

import numpy as np

from facebias.faces.detect import Detection
from facebias.faces.images import as_rgb_uint8
from facebias.faces.landmarks import dlib_rect

#: Standard ArcFace (InsightFace) 5-point template for 112 x 112 crops, (x, y) pixels,
#: order: image-left eye, image-right eye, nose tip, image-left / image-right mouth corner.
ARCFACE_TEMPLATE = np.array(
    [
        [38.2946, 51.6963],
        [73.5318, 51.5014],
        [56.0252, 71.7366],
        [41.5493, 92.3655],
        [70.7299, 92.2041],
    ],
    dtype=np.float64,
)
ARCFACE_TEMPLATE.setflags(write=False)


def _points(landmarks5: np.ndarray) -> np.ndarray:
    pts = np.asarray(landmarks5, dtype=np.float64)
    if pts.shape != (5, 2):
        raise ValueError(f"landmarks must have shape (5, 2), got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("landmarks contain NaN or infinite values")
    return pts


def umeyama(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares similarity transform (rotation, uniform scale, shift) src -> dst.

    Umeyama (1991) without reflection.

    Parameters
    ----------
    src, dst : numpy.ndarray
        (n, 2) matching points, n >= 2.

    Returns
    -------
    numpy.ndarray
        (2, 3) float64 ``M`` with ``dst ~= src @ M[:, :2].T + M[:, 2]`` (the layout of
        ``cv2.warpAffine``).

    Raises
    ------
    ValueError
        If the shapes differ or are not (n >= 2, 2), or all ``src`` points coincide.

    Examples
    --------
    >>> src = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> umeyama(src, 2 * src + [3.0, 4.0]).round(6) + 0.0  # + 0.0 turns -0.0 into 0.0
    array([[2., 0., 3.],
           [0., 2., 4.]])
    """
    src = np.asarray(src, np.float64)
    dst = np.asarray(dst, np.float64)
    if src.shape != dst.shape or src.ndim != 2 or src.shape[1] != 2 or len(src) < 2:
        raise ValueError(f"need matching (n>=2, 2) point arrays, got {src.shape} and {dst.shape}")
    mu_s, mu_d = src.mean(axis=0), dst.mean(axis=0)
    s_c, d_c = src - mu_s, dst - mu_d
    var_s = (s_c**2).sum() / len(src)
    if var_s <= 0:
        raise ValueError("source points are all identical; transform is undefined")
    cov = d_c.T @ s_c / len(src)
    u, sig, vt = np.linalg.svd(cov)
    d = np.ones(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        d[-1] = -1.0
    rot = u @ np.diag(d) @ vt
    scale = (sig * d).sum() / var_s
    m = np.empty((2, 3), np.float64)
    m[:, :2] = scale * rot
    m[:, 2] = mu_d - scale * rot @ mu_s
    return m


def estimate_transform(landmarks5: np.ndarray, size: int = 112) -> np.ndarray:
    """(2, 3) float64 similarity transform from image landmarks (pixels, ArcFace order)
    to the ArcFace template scaled by ``size / 112``.

    Parameters
    ----------
    landmarks5 : numpy.ndarray
        (5, 2) ``(x, y)`` pixels in :data:`ARCFACE_TEMPLATE` order: image-left eye,
        image-right eye, nose tip, image-left and image-right mouth corner.
    size : int, default 112
        Side of the square crop, pixels.

    Returns
    -------
    numpy.ndarray
        (2, 3) float64 matrix for ``cv2.warpAffine`` (see :func:`umeyama`).

    Raises
    ------
    ValueError
        If ``size <= 0`` or the landmarks are not finite (5, 2).

    Examples
    --------
    >>> estimate_transform(ARCFACE_TEMPLATE / 2, size=112).round(6) + 0.0
    array([[2., 0., 0.],
           [0., 2., 0.]])
    """
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    return umeyama(_points(landmarks5), ARCFACE_TEMPLATE * (size / 112.0))


def align_arcface(image: np.ndarray, landmarks5: np.ndarray, size: int = 112) -> np.ndarray:
    """Warp an RGB uint8 image to a (size, size, 3) uint8 ArcFace-aligned crop.

    Bilinear interpolation; pixels from outside the image are black.

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB or (H, W) gray uint8.
    landmarks5 : numpy.ndarray
        (5, 2) ``(x, y)`` pixels in ArcFace order (see :func:`estimate_transform`).
    size : int, default 112
        Side of the crop, pixels; the template is scaled by ``size / 112``.

    Returns
    -------
    numpy.ndarray
        (size, size, 3) RGB uint8.

    Raises
    ------
    ValueError
        For an invalid image, invalid landmarks or ``size <= 0``.

    Examples
    --------
    >>> image = np.full((56, 56, 3), 200, np.uint8)
    >>> crop = align_arcface(image, ARCFACE_TEMPLATE / 2)  # a face at half the template size
    >>> crop.shape, crop.dtype, int(crop[56, 56, 0])
    ((112, 112, 3), dtype('uint8'), 200)
    """
    import cv2

    rgb = as_rgb_uint8(image)
    m = estimate_transform(landmarks5, size)
    return cv2.warpAffine(rgb, m, (size, size), flags=cv2.INTER_LINEAR, borderValue=0.0)


_FIVE_POINT = None


def _five_point_predictor():
    global _FIVE_POINT
    if _FIVE_POINT is None:
        import dlib
        import face_recognition_models

        _FIVE_POINT = dlib.shape_predictor(
            face_recognition_models.pose_predictor_five_point_model_location()
        )
    return _FIVE_POINT


def dlib_chip(image: np.ndarray, detection: Detection, size: int = 150) -> np.ndarray:
    """dlib's aligned (size, size, 3) uint8 chip (``get_face_chip``, padding 0.25) from the
    5-point predictor run inside ``detection.box`` (the input for dlib's ResNet).

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB or (H, W) gray uint8.
    detection : Detection
        The face; only its ``box`` is used (dlib places its own 5 points).
    size : int, default 150
        Side of the chip, pixels (dlib's ResNet expects 150).

    Returns
    -------
    numpy.ndarray
        (size, size, 3) RGB uint8.

    Raises
    ------
    ValueError
        For an invalid image.
    """
    import dlib

    rgb = as_rgb_uint8(image)
    shape = _five_point_predictor()(rgb, dlib_rect(detection.box))
    return np.asarray(dlib.get_face_chip(rgb, shape, size=size), dtype=np.uint8)
