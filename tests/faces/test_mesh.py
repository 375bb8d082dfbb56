"""facebias.faces.mesh: mediapipe face mesh (478 points) and the dlib 68-point fallback."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data as skdata  # noqa: E402

from facebias.faces import mesh as M  # noqa: E402

# astronaut's face (YuNet box ~ (178, 63, 90, 114)), padded for forehead and jaw points
FACE_BOX = (165, 50, 120, 140)


@pytest.fixture(scope="module")
def astronaut():
    return skdata.astronaut()


def inside(points, box):
    x, y, w, h = box
    return ((points[:, 0] >= x) & (points[:, 0] <= x + w)
            & (points[:, 1] >= y) & (points[:, 1] <= y + h)).all()


def test_pinned_mediapipe_imports():
    """mediapipe is pinned (requirements-nodeps.txt): a broken install fails here, with its
    ImportError, instead of turning the mediapipe tests into skips or dlib fallbacks."""
    from mediapipe.python.solutions import face_mesh  # noqa: F401

    assert M.mediapipe_available()


def test_mediapipe_mesh_on_astronaut(astronaut):
    pts = M.face_mesh(astronaut)
    assert pts.shape == (M.MESH_POINTS, 3) and pts.dtype == np.float64
    assert inside(pts, FACE_BOX)
    # z is scaled like x (pixels): a face ~90 px wide has tens of pixels of depth
    assert 10 < np.ptp(pts[:, 2]) < 150
    # the cached model gives the same answer twice
    assert np.array_equal(M.face_mesh(astronaut), pts)
    # gray input is accepted
    assert M.face_mesh(astronaut.mean(axis=2).astype(np.uint8)).shape == (M.MESH_POINTS, 3)


def test_mirrored_image_mirrors_x(astronaut):
    w = astronaut.shape[1]
    pts = M.face_mesh(astronaut)
    mir = M.face_mesh(np.ascontiguousarray(astronaut[:, ::-1]))
    assert mir is not None
    assert abs((w - mir[:, 0]).mean() - pts[:, 0].mean()) < 3
    assert abs(mir[:, 1].mean() - pts[:, 1].mean()) < 3
    # indices are anatomical: the nose tip (1) stays, the outer eye corners (33, 263) swap
    assert np.allclose(w - mir[1, 0], pts[1, 0], atol=3)
    assert np.allclose(w - mir[263, 0], pts[33, 0], atol=3)
    assert np.allclose(w - mir[33, 0], pts[263, 0], atol=3)


def test_noise_image_has_no_face():
    noise = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    assert M.face_mesh(noise) is None
    assert M.mesh_vector(noise) is None


def test_dlib_fallback(astronaut):
    import dlib  # noqa: F401
    import face_recognition_models  # noqa: F401
    pts = M.face_mesh(astronaut, backend="dlib")
    assert pts.shape == (M.DLIB_POINTS, 3)
    assert np.all(pts[:, 2] == 0)
    assert inside(pts, FACE_BOX)


def test_auto_falls_back_without_mediapipe(astronaut, monkeypatch):
    import dlib  # noqa: F401
    import face_recognition_models  # noqa: F401
    monkeypatch.setattr(M, "mediapipe_available", lambda: False)
    assert M.face_mesh(astronaut).shape == (M.DLIB_POINTS, 3)
    with pytest.raises(ImportError, match="mediapipe"):
        M.face_mesh(astronaut, backend="mediapipe")


def test_mesh_vector_is_normalised(astronaut):
    v = M.mesh_vector(astronaut)
    assert v.shape == (M.MESH_POINTS * 3,)
    assert np.allclose(v, M.normalize_mesh(M.face_mesh(astronaut)))


def test_normalize_mesh():
    rng = np.random.default_rng(15)
    p = rng.standard_normal((478, 3))
    v = M.normalize_mesh(p)
    assert v.shape == (478 * 3,)
    c = v.reshape(478, 3)
    assert np.allclose(c.mean(axis=0), 0, atol=1e-12)
    assert np.sqrt((c**2).sum(axis=1).mean()) == pytest.approx(1.0)
    assert np.allclose(M.normalize_mesh(5 * p + 7), v)  # position and scale invariant
    with pytest.raises(ValueError, match="coincide"):
        M.normalize_mesh(np.ones((10, 2)))
    with pytest.raises(ValueError, match=r"\(P, 2\) or \(P, 3\)"):
        M.normalize_mesh(np.ones((10, 4)))


def test_bad_input():
    with pytest.raises(ValueError, match="uint8"):
        M.face_mesh(np.zeros((32, 32, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="H x W x 3"):
        M.face_mesh(np.zeros((32, 32, 5), dtype=np.uint8))  # RGBA (4) is valid since issue 19
    with pytest.raises(ValueError, match="backend"):
        M.face_mesh(np.zeros((32, 32, 3), dtype=np.uint8), backend="openface")
