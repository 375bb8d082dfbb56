"""Fast unit tests of the procedural face generator (no recognition models except the
cheap YuNet / dlib-landmark yaw check)."""

from __future__ import annotations

import numpy as np
import pytest

from facebias.generate import LIGHTS, Generator, Light, load_generator
from facebias.generate.procedural import ATTRIBUTES, PLANTED_COSINES, RACES, ProceduralGenerator

SIZE = 128


@pytest.fixture(scope="module")
def gen():
    return ProceduralGenerator(size=SIZE, seed=0)


@pytest.fixture(scope="module")
def z(gen):
    return gen.sample(6, seed=11)


@pytest.fixture(scope="module")
def images(gen, z):
    return gen.synthesize(z)


def test_protocol_and_loader(gen):
    assert isinstance(gen, Generator)
    assert gen.name == "procedural"
    assert isinstance(gen.latent_dim, int) and 64 <= gen.latent_dim <= 128
    g2 = load_generator("procedural", size=SIZE)
    assert isinstance(g2, ProceduralGenerator) and g2.size == SIZE
    assert gen.ATTRIBUTES == ATTRIBUTES == (
        "gender", "skin_tone", "hair_length", "age", "facial_hair", "makeup", "smile"
    )
    assert gen.RACES == RACES == ("White", "Black", "East Asian")


def test_sample_deterministic(gen):
    a, b = gen.sample(5, seed=3), gen.sample(5, seed=3)
    assert a.shape == (5, gen.latent_dim) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, gen.sample(5, seed=4))
    big = gen.sample(4000, seed=0)
    assert abs(big.mean()) < 0.02 and abs(big.std() - 1) < 0.02


def test_synthesize_shapes_and_determinism(gen, z, images):
    assert images.shape == (6, SIZE, SIZE, 3) and images.dtype == np.uint8
    again = ProceduralGenerator(size=SIZE, seed=0).synthesize(z)
    assert images.tobytes() == again.tobytes()
    # identities differ
    assert np.abs(images[0].astype(int) - images[1].astype(int)).mean() > 5
    # a 1-D latent is one image
    assert gen.synthesize(z[0]).shape == (1, SIZE, SIZE, 3)
    assert gen.synthesize(z[:0]).shape == (0, SIZE, SIZE, 3)


def test_batch_composition_does_not_change_pixels(gen, z):
    yaws = [0.0, 30.0, -10.0, 60.0, 5.0, -45.0]
    lights = ["front", "left", "up", "down", "right", Light((0.3, 0.2, 1.0), 0.4)]
    batch = gen.synthesize(z, yaw=yaws, light=lights)
    for i in (0, 3, 5):
        one = gen.synthesize(z[i], yaw=yaws[i], light=[lights[i]])
        np.testing.assert_array_equal(batch[i], one[0])


def test_world_seed_changes_world(z):
    a = ProceduralGenerator(size=64, seed=0).synthesize(z[:2])
    b = ProceduralGenerator(size=64, seed=1).synthesize(z[:2])
    assert not np.array_equal(a, b)


def test_bad_inputs(gen, z):
    with pytest.raises(ValueError):
        gen.synthesize(np.zeros((2, gen.latent_dim + 1)))
    with pytest.raises(ValueError):
        gen.synthesize(np.zeros((2, 3, gen.latent_dim)))
    bad = z[:2].copy()
    bad[0, 3] = np.nan
    with pytest.raises(ValueError):
        gen.synthesize(bad)
    with pytest.raises(ValueError):
        gen.truth(bad)
    with pytest.raises(ValueError):
        gen.synthesize(z[:2], yaw=120.0)
    with pytest.raises(ValueError):
        gen.synthesize(z[:2], yaw=[0.0, np.nan])
    with pytest.raises(ValueError):
        gen.synthesize(z[:2], yaw=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError):
        gen.synthesize(z[:2], light="sideways")
    with pytest.raises(ValueError):
        gen.synthesize(z[:2], light=["left"])
    with pytest.raises(ValueError):
        ProceduralGenerator(size=32)
    with pytest.raises(ValueError):
        ProceduralGenerator(size=1024)
    with pytest.raises(TypeError):
        ProceduralGenerator(size=128.5)
    with pytest.raises(ValueError):
        gen.sample(-1, seed=0)


def test_white_background(images):
    corners = np.concatenate([images[:, :4, :4], images[:, :4, -4:], images[:, -4:, :4], images[:, -4:, -4:]])
    assert corners.min() >= 250
    # and a face is drawn in the middle
    assert images[:, SIZE // 2 - 8 : SIZE // 2 + 8, SIZE // 2 - 8 : SIZE // 2 + 8].mean() < 230


def _face_half_means(im):
    gray = im.astype(float).mean(axis=2)
    # face skin rows: between the eyes and the mouth, central columns
    h = im.shape[0]
    band = gray[int(0.40 * h) : int(0.65 * h)]
    fg = band < 250
    c = im.shape[1] // 2
    left, right = band[:, :c][fg[:, :c]], band[:, c:][fg[:, c:]]
    return left.mean(), right.mean()


def test_light_direction(gen, z):
    left = gen.synthesize(z[:3], light="left")
    right = gen.synthesize(z[:3], light="right")
    for a, b in zip(left, right, strict=True):
        la, ra = _face_half_means(a)
        lb, rb = _face_half_means(b)
        assert la > ra + 5  # light from the image-left: image-left half brighter
        assert rb > lb + 5
    # power 0 = ambient only: left and right lights give the same image
    a0 = gen.synthesize(z[:1], light=Light((-1.0, 0.0, 0.5), 0.0))
    b0 = gen.synthesize(z[:1], light=Light((1.0, 0.0, 0.5), 0.0))
    np.testing.assert_array_equal(a0, b0)
    assert set(LIGHTS) >= {"front", "up", "down", "left", "right"}


def test_yaw_moves_nose_to_image_right(gen, z):
    from facebias.faces.detect import detect_faces

    big = ProceduralGenerator(size=192, seed=0)
    for yaw_sign in (1, -1):
        ims = big.synthesize(z[:3], yaw=yaw_sign * 30.0)
        for im in ims:
            det = detect_faces(im)
            assert det, "no face found at yaw 30"
            lm = det[0].landmarks
            offset = lm[2, 0] - lm[:2, 0].mean()  # nose tip relative to the eye midpoint
            assert np.sign(offset) == yaw_sign


def test_yaw_sign_agrees_with_measure_factors():
    from facebias.faces import measure_factors

    g = ProceduralGenerator(size=256, seed=0)
    z = g.sample(2, seed=3)
    for yaw in (-30.0, 30.0):
        for im in g.synthesize(z, yaw=yaw):
            measured = measure_factors(im)["yaw"]
            assert measured is not None and np.sign(measured) == np.sign(yaw)
            assert abs(measured) > 10


def test_truth_columns(gen):
    z = gen.sample(300, seed=5)
    t = gen.truth(z)
    assert list(t.columns[: len(ATTRIBUTES)]) == list(ATTRIBUTES)
    for col in ATTRIBUTES:
        assert t[col].between(0, 1).all()
        assert t[col].std() > 0.1
    assert set(t["race"]) <= set(RACES)
    assert set(t["race"]) == set(RACES)  # every race occurs
    scores = t[[f"race_{r}" for r in RACES]].to_numpy()
    np.testing.assert_allclose(scores.sum(axis=1), 1.0)
    assert (np.array(RACES)[scores.argmax(axis=1)] == t["race"].to_numpy()).all()


def test_planted_entanglement(gen):
    N, b = gen.attribute_normals()
    assert N.shape == (len(ATTRIBUTES), gen.latent_dim) and b.shape == (len(ATTRIBUTES),)
    np.testing.assert_allclose(np.linalg.norm(N, axis=1), 1.0)
    idx = {k: i for i, k in enumerate(ATTRIBUTES)}
    R = gen.race_directions()
    for (a, c), cos in PLANTED_COSINES.items():
        va = N[idx[a]]
        vc = N[idx[c]] if c in idx else R[RACES.index(c.removeprefix("race_"))]
        assert va @ vc == pytest.approx(cos, abs=1e-9)
    assert N[idx["hair_length"]] @ N[idx["gender"]] == pytest.approx(-0.5, abs=0.05)
    # not orthogonal as a set: orthogonalisation has something to fix
    gram = N @ N.T
    assert np.abs(gram - np.eye(len(N))).max() > 0.4
    # age and smile are orthogonal to everything else
    for k in ("age", "smile"):
        others = np.delete(gram[idx[k]], idx[k])
        assert np.abs(others).max() < 1e-9


def test_truth_is_sigmoid_of_linear_and_monotone_along_normal(gen):
    N, b = gen.attribute_normals()
    z = gen.sample(5, seed=9)
    steps = np.linspace(-2, 2, 9)
    for k, name in enumerate(ATTRIBUTES):
        vals = np.stack([gen.truth(z + s * N[k])[name].to_numpy() for s in steps])
        assert np.all(np.diff(vals, axis=0) > 0), name
        logit = np.log(vals / (1 - vals))
        expected = 1.5 * ((z + steps[:, None, None] * N[k]) @ N[k] + b[k])
        np.testing.assert_allclose(logit, expected, atol=1e-6)


def test_linear_fit_recovers_directions(gen):
    from sklearn.linear_model import Ridge

    z = gen.sample(3000, seed=2)
    t = gen.truth(z)
    N, _ = gen.attribute_normals()
    for k, name in enumerate(ATTRIBUTES):
        w = Ridge(alpha=1.0).fit(z, t[name].to_numpy()).coef_
        assert w @ N[k] / np.linalg.norm(w) > 0.95, name


def test_attributes_change_the_image(gen, z):
    N, b = gen.attribute_normals()
    base = z[:1]
    img0 = gen.synthesize(base).astype(float)
    for k, name in enumerate(ATTRIBUTES):
        d = (base @ N[k] + b[k])[0]
        lo = gen.synthesize(base + (-2.0 - d) * N[k]).astype(float)
        hi = gen.synthesize(base + (2.0 - d) * N[k]).astype(float)
        if name == "smile":  # a local change: look at the mouth band only
            lo, hi = lo[:, int(0.6 * SIZE) : int(0.8 * SIZE)], hi[:, int(0.6 * SIZE) : int(0.8 * SIZE)]
        fg = (lo.min(axis=-1) < 250) | (hi.min(axis=-1) < 250)
        assert np.abs(hi - lo)[fg].mean() > 2.0, name
    assert img0.shape == (1, SIZE, SIZE, 3)
