"""StyleGAN2 (config-f) in PyTorch: names, maths against brute-force references, the
protocol, and the restricted reader of official network pickles (fixtures built here)."""

from __future__ import annotations

import collections
import os
import pickle
import sys
import types

import numpy as np
import pytest
import torch

from facebias.generate import Generator, load_generator
from facebias.generate.stylegan2 import (
    StyleGAN2Generator,
    StyleGAN2Network,
    WeightsMismatchError,
    modulated_conv2d,
    normalize_2nd_moment,
    setup_filter,
    upfirdn2d,
    upsample2d,
)
from facebias.generate.weights import (
    ChecksumError,
    RestrictedUnpickler,
    fetch,
    load_network,
    load_pickle,
    main,
    verify,
)

TINY = dict(resolution=16, z_dim=32, w_dim=32, channel_base=256, channel_max=32, mapping_layers=2,
            device="cpu")


@pytest.fixture(scope="module")
def gen() -> StyleGAN2Generator:
    g = StyleGAN2Generator(**TINY, seed=3)
    with torch.no_grad():  # the official init has zero noise strength; make noise matter here
        for name, p in g.net.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.3)
    return g


def tiny(**kw) -> StyleGAN2Generator:
    return StyleGAN2Generator(**{**TINY, **kw})


# ---------------------------------------------------------------------------- structure


def test_official_names_and_shapes(gen):
    sd = gen.net.state_dict()
    expected = {
        "mapping.fc0.weight": (32, 32), "mapping.fc0.bias": (32,), "mapping.fc1.weight": (32, 32),
        "mapping.w_avg": (32,),
        "synthesis.b4.const": (32, 4, 4), "synthesis.b4.resample_filter": (4, 4),
        "synthesis.b4.conv1.weight": (32, 32, 3, 3), "synthesis.b4.conv1.bias": (32,),
        "synthesis.b4.conv1.affine.weight": (32, 32), "synthesis.b4.conv1.affine.bias": (32,),
        "synthesis.b4.conv1.noise_strength": (), "synthesis.b4.conv1.noise_const": (4, 4),
        "synthesis.b4.torgb.weight": (3, 32, 1, 1),
        "synthesis.b8.conv0.affine.weight": (32, 32), "synthesis.b8.conv0.weight": (32, 32, 3, 3),
        "synthesis.b8.conv0.resample_filter": (4, 4), "synthesis.b8.conv0.noise_const": (8, 8),
        "synthesis.b16.conv0.weight": (16, 32, 3, 3), "synthesis.b16.conv1.weight": (16, 16, 3, 3),
        "synthesis.b16.conv1.affine.weight": (16, 32), "synthesis.b16.torgb.weight": (3, 16, 1, 1),
        "synthesis.b16.torgb.bias": (3,), "synthesis.b16.torgb.affine.bias": (16,),
    }
    for name, shape in expected.items():
        assert name in sd, name
        assert tuple(sd[name].shape) == shape, name
    assert "synthesis.b4.conv0.weight" not in sd and "mapping.embed.weight" not in sd
    assert not any(".skip." in k for k in sd)  # config-f: 'skip' generator, no resnet skips
    assert len(sd) == 56 and gen.num_ws == 6
    f = sd["synthesis.b8.resample_filter"].numpy()
    np.testing.assert_allclose(f, np.outer([1, 3, 3, 1], [1, 3, 3, 1]) / 64)
    # affine biases start at 1, so styles are ~1 at init
    assert torch.all(sd["synthesis.b8.conv0.affine.bias"] == 1)


def test_other_architectures_and_conditional_names():
    net = StyleGAN2Network(z_dim=8, c_dim=5, w_dim=8, img_resolution=8, img_channels=3,
                           mapping_kwargs=dict(num_layers=2),
                           synthesis_kwargs=dict(channel_base=64, channel_max=8, architecture="resnet"))
    sd = net.state_dict()
    assert sd["mapping.embed.weight"].shape == (8, 5)
    assert sd["mapping.fc0.weight"].shape == (8, 16)  # z and the label embedding concatenated
    assert sd["synthesis.b8.skip.weight"].shape == (8, 8, 1, 1)
    assert "synthesis.b4.torgb.weight" not in sd  # resnet: ToRGB only in the last block
    img = net(torch.randn(2, 8), torch.eye(5)[:2])
    assert img.shape == (2, 3, 8, 8) and torch.isfinite(img).all()


# ---------------------------------------------------------------------------- primitives


def np_upfirdn2d(x: np.ndarray, f: np.ndarray, up: int, pad, gain: float) -> np.ndarray:
    """Brute force: zero insertion, padding, and a true 2D convolution by explicit loops."""
    h, w = x.shape
    u = np.zeros((h * up, w * up))
    u[::up, ::up] = x
    px0, px1, py0, py1 = pad
    u = np.pad(u, ((py0, py1), (px0, px1)))
    fh, fw = f.shape
    out = np.zeros((u.shape[0] - fh + 1, u.shape[1] - fw + 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            s = 0.0
            for a in range(fh):
                for b in range(fw):
                    s += u[i + a, j + b] * f[fh - 1 - a, fw - 1 - b]
            out[i, j] = s * gain
    return out


def test_upsample2d_matches_bruteforce():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 6))
    got = upsample2d(torch.tensor(x), setup_filter([1, 3, 3, 1]).double()).numpy()
    f = np.outer([1, 3, 3, 1], [1, 3, 3, 1]) / 64.0
    assert got.shape == (2, 3, 10, 12)
    for n in range(2):
        for c in range(3):
            ref = np_upfirdn2d(x[n, c], f, up=2, pad=(2, 1, 2, 1), gain=4)
            np.testing.assert_allclose(got[n, c], ref, atol=1e-12)
    # 8+ taps: a separable (1D) buffer, as the official setup_filter keeps it
    taps = [1, 2, 4, 7, 7, 4, 2, 1]
    f8 = setup_filter(taps)
    assert f8.shape == (8,)
    f2 = np.outer(taps, taps) / np.sum(taps) ** 2
    got = upsample2d(torch.tensor(x), f8.double()).numpy()
    np.testing.assert_allclose(got[1, 2], np_upfirdn2d(x[1, 2], f2, 2, (4, 3, 4, 3), 4), atol=1e-6)
    # a constant image stays constant away from the border (gain 4 undoes zero insertion)
    const = upsample2d(torch.ones(1, 1, 6, 6, dtype=torch.float64), setup_filter().double())
    np.testing.assert_allclose(const[0, 0, 2:-2, 2:-2].numpy(), 1.0, atol=1e-12)


def test_upfirdn2d_asymmetric_filter_and_crop():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 4, 5))
    f = rng.standard_normal((4, 3))  # asymmetric: catches a missing/extra flip
    for pad in [(2, 1, 1, 3), (-1, 2, 0, -1)]:
        got = upfirdn2d(torch.tensor(x), torch.tensor(f), up=2, padding=pad, gain=2.5).numpy()
        for c in range(2):
            if min(pad) >= 0:
                ref = np_upfirdn2d(x[0, c], f, 2, pad, 2.5)
            else:  # negative padding crops: pad by 0 then cut
                full = np_upfirdn2d(x[0, c], f, 2, tuple(max(p, 0) for p in pad), 2.5)
                ref = full[max(-pad[2], 0): full.shape[0] - max(-pad[3], 0),
                           max(-pad[0], 0): full.shape[1] - max(-pad[1], 0)]
            np.testing.assert_allclose(got[0, c], ref, atol=1e-12)


def np_modconv(x, weight, styles, noise, up, demod):
    """Per-sample loop: modulate, demodulate, then correlate (up=1, padding 1) or scatter the
    kernel at stride 2 and apply the [1,3,3,1] filter (up=2)."""
    n_, cin, h, w = x.shape
    cout, _, k, _ = weight.shape
    f = np.outer([1, 3, 3, 1], [1, 3, 3, 1]) / 64.0
    outs = []
    for n in range(n_):
        wn = weight * styles[n][None, :, None, None]
        if demod:
            wn = wn / np.sqrt((wn ** 2).sum(axis=(1, 2, 3)) + 1e-8)[:, None, None, None]
        if up == 1:
            xp = np.pad(x[n], ((0, 0), (1, 1), (1, 1)))
            y = np.zeros((cout, h, w))
            for i in range(h):
                for j in range(w):
                    y[:, i, j] = np.einsum("ckl,ockl->o", xp[:, i:i + k, j:j + k], wn)
        else:
            t = np.zeros((cout, 2 * h + k - 2, 2 * w + k - 2))
            for i in range(h):
                for j in range(w):
                    t[:, 2 * i:2 * i + k, 2 * j:2 * j + k] += np.einsum("c,ockl->okl", x[n, :, i, j], wn)
            y = np.stack([np_upfirdn2d(t[o], f, 1, (1, 1, 1, 1), 4.0) for o in range(cout)])
        outs.append(y + (noise[n] if noise is not None else 0))
    return np.stack(outs)


@pytest.mark.parametrize("up", [1, 2])
@pytest.mark.parametrize("demod", [True, False])
def test_modulated_conv_matches_naive_loop(up, demod):
    rng = np.random.default_rng(2 + up)
    n, cin, cout, h = 3, 4, 5, 5
    x = rng.standard_normal((n, cin, h, h))
    weight = rng.standard_normal((cout, cin, 3, 3))
    styles = rng.standard_normal((n, cin)) + 1
    noise = rng.standard_normal((n, 1, h * up, h * up))
    ref = np_modconv(x, weight, styles, noise, up, demod)
    for fused in (True, False):
        got = modulated_conv2d(torch.tensor(x), torch.tensor(weight), torch.tensor(styles),
                               noise=torch.tensor(noise), up=up, padding=1,
                               resample_filter=setup_filter().double(), demodulate=demod,
                               fused=fused).numpy()
        assert got.shape == (n, cout, h * up, h * up)
        np.testing.assert_allclose(got, ref, atol=1e-10, err_msg=f"fused={fused}")


def test_pixel_norm_and_mapping_scale_invariance(gen):
    z = torch.randn(5, 32) * torch.arange(1, 6)[:, None]
    zn = normalize_2nd_moment(z)
    np.testing.assert_allclose(zn.square().mean(dim=1).numpy(), 1.0, rtol=1e-5)
    zz = np.random.default_rng(0).standard_normal((4, 32))
    np.testing.assert_allclose(gen.mapping(zz), gen.mapping(zz * 7.5), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- protocol


def test_protocol_shape_dtype_determinism(gen):
    assert isinstance(gen, Generator) and gen.name == "stylegan2" and gen.latent_dim == 32
    z = gen.sample(3, seed=7)
    assert z.shape == (3, 32) and z.dtype == np.float64
    np.testing.assert_array_equal(z, gen.sample(3, seed=7))
    assert not np.array_equal(z, gen.sample(3, seed=8))
    im = gen.synthesize(z)
    assert im.shape == (3, 16, 16, 3) and im.dtype == np.uint8
    np.testing.assert_array_equal(im, gen.synthesize(z))  # noise_mode="const"
    assert len(np.unique(im)) > 10 and not np.array_equal(im[0], im[1])
    other = tiny(seed=3)  # same seed, same random weights
    with torch.no_grad():
        for name, p in other.net.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.3)
    np.testing.assert_array_equal(other.synthesize(z), im)
    assert gen.synthesize(gen.sample(0, 0)).shape == (0, 16, 16, 3)


def test_load_generator_entry_point():
    g = load_generator("stylegan2", **TINY)
    assert isinstance(g, StyleGAN2Generator) and g.resolution == 16


def test_yaw_and_light_raise(gen):
    z = gen.sample(1, 0)
    with pytest.raises(ValueError, match="no explicit yaw or light"):
        gen.synthesize(z, yaw=10.0)
    with pytest.raises(ValueError, match="no explicit yaw or light"):
        gen.synthesize(z, light="left")
    with pytest.raises(ValueError, match="expected shape"):
        gen.synthesize(np.zeros((2, 5)))


def test_truncation(gen):
    z = gen.sample(4, seed=1)
    g0 = tiny(seed=3, truncation_psi=0.0)
    g0.net.load_state_dict(gen.net.state_dict())
    w = g0.mapping(z)
    np.testing.assert_allclose(w, np.broadcast_to(gen.net.mapping.w_avg.numpy(), w.shape), atol=1e-6)
    im = g0.synthesize(z)
    for i in range(1, 4):
        np.testing.assert_array_equal(im[i], im[0])
    # psi interpolates linearly between w_avg and w
    w1, wh = gen.mapping(z, psi=1.0), gen.mapping(z, psi=0.5)
    np.testing.assert_allclose(wh, 0.5 * (w1 + gen.net.mapping.w_avg.numpy()), atol=1e-5)
    # cutoff: only the first layers are truncated
    ws = gen.mapping(z, psi=0.0, cutoff=2)
    assert ws.shape == (4, 6, 32)
    np.testing.assert_allclose(ws[:, :2], np.broadcast_to(gen.net.mapping.w_avg.numpy(), (4, 2, 32)), atol=1e-6)
    np.testing.assert_allclose(ws[:, 2:], np.broadcast_to(w1[:, None], (4, 4, 32)), atol=1e-5)
    assert gen.synthesize_w(ws).shape == (4, 16, 16, 3)


def test_batched_equals_one_at_a_time(gen):
    z = gen.sample(5, seed=2)
    w = torch.tensor(gen.mapping(z), dtype=torch.float32)
    batched = gen.render(w)
    single = torch.cat([gen.render(w[i:i + 1]) for i in range(5)])
    torch.testing.assert_close(batched, single, atol=2e-5, rtol=1e-5)
    g1 = tiny(seed=3, batch_size=1)
    g1.net.load_state_dict(gen.net.state_dict())
    d = np.abs(g1.synthesize(z).astype(int) - gen.synthesize(z).astype(int))
    assert d.max() <= 1 and (d > 0).mean() < 0.01


def test_w_space(gen):
    gw = tiny(seed=3, space="w")
    gw.net.load_state_dict(gen.net.state_dict())
    assert gw.latent_dim == 32
    w = gw.sample(3, seed=5)
    np.testing.assert_allclose(w, gen.mapping(gen.sample(3, seed=5)), atol=1e-6)
    np.testing.assert_array_equal(gw.synthesize(w), gen.synthesize(gen.sample(3, seed=5)))
    # latent algebra in W: the midpoint of two w renders like synthesize_w of the midpoint
    mid = 0.5 * (w[0] + w[1])
    np.testing.assert_array_equal(gw.synthesize(mid[None]), gen.synthesize_w(mid[None]))


def test_noise_modes(gen):
    z = gen.sample(2, seed=4)
    w = gen.mapping(z)
    imgs = {}
    for mode in ("const", "none", "random"):
        g = tiny(seed=3, noise_mode=mode)
        g.net.load_state_dict(gen.net.state_dict())
        imgs[mode] = (g.render(w), g.render(w))
    torch.testing.assert_close(imgs["const"][0], imgs["const"][1])
    torch.testing.assert_close(imgs["none"][0], imgs["none"][1])
    assert not torch.allclose(imgs["const"][0], imgs["none"][0])
    assert not torch.allclose(imgs["random"][0], imgs["random"][1])  # fresh noise per call
    g = tiny(seed=3, noise_mode="random")  # the sequence is reproducible from the seed
    g.net.load_state_dict(gen.net.state_dict())
    torch.testing.assert_close(g.render(w), imgs["random"][0])
    with pytest.raises(ValueError, match="noise_mode"):
        tiny(noise_mode="fresh")


# ---------------------------------------------------------------------------- pickles

MODULE_SRC_TEMPLATE = "import pathlib\npathlib.Path({side!r}).write_text('module_src ran')\n"


class _FakeModules:
    """Fake ``torch_utils.persistence`` and ``dnnlib.util`` in sys.modules while writing a
    pickle in the official layout; removed again before anything is read."""

    def __enter__(self):
        self.saved = {k: sys.modules.get(k) for k in ("torch_utils", "torch_utils.persistence",
                                                      "dnnlib", "dnnlib.util")}
        tu, pers = types.ModuleType("torch_utils"), types.ModuleType("torch_utils.persistence")

        def _reconstruct_persistent_obj(meta):  # pragma: no cover - never called by readers
            raise AssertionError("the official reconstructor must not be called")

        _reconstruct_persistent_obj.__module__ = "torch_utils.persistence"
        _reconstruct_persistent_obj.__qualname__ = "_reconstruct_persistent_obj"
        pers._reconstruct_persistent_obj = _reconstruct_persistent_obj
        tu.persistence = pers
        dn, util = types.ModuleType("dnnlib"), types.ModuleType("dnnlib.util")

        class EasyDict(dict):
            pass

        EasyDict.__module__, EasyDict.__qualname__ = "dnnlib.util", "EasyDict"
        util.EasyDict = EasyDict
        dn.util, dn.EasyDict = util, EasyDict
        sys.modules.update({"torch_utils": tu, "torch_utils.persistence": pers, "dnnlib": dn,
                            "dnnlib.util": util})
        self.reconstruct, self.EasyDict = _reconstruct_persistent_obj, EasyDict
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class _Persistent:
    def __init__(self, reconstruct, meta):
        self.reconstruct, self.meta = reconstruct, meta

    def __reduce__(self):
        return (self.reconstruct, (self.meta,))


def official_pickle(path, net: StyleGAN2Network, *, side_effect=os.devnull, protocol=4,
                    mutate=None, plain_child=False):
    """Write ``net`` as stylegan2-ada-pytorch does: dict(G, D, G_ema, augment_pipe,
    training_set_kwargs), networks as persistent objects whose state is the module
    ``__dict__`` (children persistent too) and whose init kwargs hold EasyDicts."""
    with _FakeModules() as fk:
        src = MODULE_SRC_TEMPLATE.format(side=str(side_effect))

        def wrap(m, class_name, init_kwargs):
            # the official modules keep gains as numpy scalars (np.sqrt), so do we here
            state = {k: np.float64(v) if isinstance(v, float) else v for k, v in m.__dict__.items()}
            state["_parameters"] = collections.OrderedDict(m._parameters)
            state["_buffers"] = collections.OrderedDict(m._buffers)
            state["_modules"] = collections.OrderedDict(
                (k, wrap(v, type(v).__name__, {})) for k, v in m._modules.items())
            state["_init_args"], state["_init_kwargs"] = (), init_kwargs
            return _Persistent(fk.reconstruct, dict(type="class", version=4, module_src=src,
                                                    class_name=class_name, state=state))

        sk = fk.EasyDict(channel_base=256, channel_max=32, num_fp16_res=0, conv_clamp=None,
                         architecture="skip")
        init = dict(z_dim=net.z_dim, c_dim=net.c_dim, w_dim=net.w_dim,
                    img_resolution=net.img_resolution, img_channels=net.img_channels,
                    mapping_kwargs=fk.EasyDict(num_layers=net.mapping.num_layers),
                    synthesis_kwargs=sk)
        g_ema = wrap(net, "Generator", init)
        if mutate is not None:
            mutate(g_ema.meta["state"])
        if plain_child:  # a plain torch module child (pickled by class, not persistence)
            g_ema.meta["state"]["_modules"]["extra"] = torch.nn.Identity()
        disc = wrap(torch.nn.Linear(4, 1), "Discriminator", dict(c_dim=0, img_resolution=16))
        data = dict(G=wrap(net, "Generator", init), D=disc, G_ema=g_ema, augment_pipe=None,
                    training_set_kwargs=dict(path="ffhq.zip", resolution=16, use_labels=False))
        with open(path, "wb") as fh:
            pickle.dump(data, fh, protocol=protocol)
    assert "torch_utils" not in sys.modules and "dnnlib" not in sys.modules
    return path


@pytest.mark.parametrize("protocol,plain_child", [(4, False), (2, True)])
def test_pickle_round_trip(gen, tmp_path, protocol, plain_child):
    side = tmp_path / "side_effect.txt"
    pkl = official_pickle(tmp_path / "net.pkl", gen.net, side_effect=side, protocol=protocol,
                          plain_child=plain_child)
    rec = load_network(pkl)
    assert rec.class_name == "Generator" and rec.init_kwargs["z_dim"] == 32
    assert type(rec.init_kwargs["synthesis_kwargs"]) is dict
    assert set(rec.state_dict) == set(gen.net.state_dict())
    loaded = StyleGAN2Generator(pkl, device="cpu")
    assert loaded.resolution == 16 and loaded.num_ws == 6
    z = gen.sample(4, seed=11)
    np.testing.assert_array_equal(loaded.synthesize(z), gen.synthesize(z))
    for k, v in gen.net.state_dict().items():
        torch.testing.assert_close(loaded.net.state_dict()[k], v, rtol=0, atol=0)
    assert load_network(pkl, key="D").class_name == "Discriminator"
    assert not side.exists()  # module_src was never executed
    with pytest.raises(ValueError, match="resolution=32"):
        StyleGAN2Generator(pkl, resolution=32, device="cpu")
    with pytest.raises(ValueError, match="no network 'G_mystery'"):
        StyleGAN2Generator(pkl, network="G_mystery", device="cpu")


def test_class_conditional_pickle(tmp_path):
    torch.manual_seed(0)
    net = StyleGAN2Network(z_dim=32, c_dim=4, w_dim=32, img_resolution=16, img_channels=3,
                           mapping_kwargs=dict(num_layers=2),
                           synthesis_kwargs=dict(channel_base=256, channel_max=32)).eval()
    pkl = official_pickle(tmp_path / "cond.pkl", net)
    with pytest.raises(ValueError, match="class_index"):
        StyleGAN2Generator(pkl, device="cpu")
    g = StyleGAN2Generator(pkl, device="cpu", class_index=2)
    z = g.sample(3, seed=0)
    with torch.no_grad():
        ref = net(torch.tensor(z, dtype=torch.float32), torch.eye(4)[[2, 2, 2]])
    np.testing.assert_array_equal(g.synthesize(z), StyleGAN2Generator.to_uint8(ref))


class _Evil:
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def __reduce__(self):
        return (self.fn, (self.arg,))


@pytest.mark.parametrize("which", ["os.system", "builtins.exec", "builtins.eval", "nested"])
def test_malicious_pickles_are_refused(tmp_path, which):
    side = tmp_path / "pwned.txt"
    code = f"open({str(side)!r}, 'w').write('x')"
    payload = {
        "os.system": _Evil(os.system, f"touch {side}"),
        "builtins.exec": _Evil(exec, code),
        "builtins.eval": _Evil(eval, code),
        "nested": dict(G_ema=collections.OrderedDict(w=torch.ones(2), bad=_Evil(exec, code))),
    }[which]
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(payload))
    refused = {"os.system": os.system.__module__ + ".system", "builtins.exec": "builtins.exec",
               "builtins.eval": "builtins.eval", "nested": "builtins.exec"}[which]
    with pytest.raises(pickle.UnpicklingError, match=f"refused global {refused}"):
        load_pickle(path)
    with pytest.raises(pickle.UnpicklingError):
        StyleGAN2Generator(path, device="cpu")
    assert not side.exists()


def test_unpickler_refuses_lookalikes(tmp_path):
    import io

    up = RestrictedUnpickler(io.BytesIO(b""))
    for module, name in [("torch", "load"), ("torch.nn.modules.linear", "os"),
                         ("torch_utils.persistence", "persistent_class"), ("numpy", "load"),
                         ("numpy.core.multiarray", "_reconstruct"), ("__main__", "_Evil")]:
        with pytest.raises(pickle.UnpicklingError, match=f"refused global {module}.{name}"):
            up.find_class(module, name)
    # numpy scalars (numpy 1.x and 2.x module names) only for plain numeric dtypes
    scalar = up.find_class("numpy.core.multiarray", "scalar")
    assert scalar is up.find_class("numpy._core.multiarray", "scalar")
    dtype = up.find_class("numpy", "dtype")
    assert scalar(dtype("f8", False, True), np.float64(0.25).tobytes()) == 0.25
    for bad in ["O", "V8", "f8,i4", "U3"]:
        with pytest.raises(pickle.UnpicklingError, match="refused"):
            dtype(bad, False, True)
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        scalar(np.dtype("O"), [1])
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        scalar(dtype("f8", False, True), b"\0" * 3)


def test_weight_mismatches_are_listed(gen, tmp_path):
    def drop(state):
        state["_modules"]["mapping"].meta["state"]["_buffers"].pop("w_avg")

    def extra(state):
        state["_modules"]["mapping"].meta["state"]["_parameters"]["bonus"] = torch.nn.Parameter(torch.ones(3))

    def reshape(state):
        b4 = state["_modules"]["synthesis"].meta["state"]["_modules"]["b4"].meta["state"]
        b4["_parameters"]["const"] = torch.nn.Parameter(torch.zeros(32, 5, 5))

    for mutate, pattern in [(drop, r"missing \(1\): mapping\.w_avg"),
                            (extra, r"unexpected \(1\): mapping\.bonus"),
                            (reshape, r"shape mismatch \(1\): synthesis\.b4\.const: expected "
                                      r"\(32, 4, 4\), got \(32, 5, 5\)")]:
        pkl = official_pickle(tmp_path / f"{mutate.__name__}.pkl", gen.net, mutate=mutate)
        with pytest.raises(WeightsMismatchError, match=pattern):
            StyleGAN2Generator(pkl, device="cpu")


# ---------------------------------------------------------------------------- fetch


def test_fetch_and_verify(tmp_path, capsys):
    src = tmp_path / "src.pkl"
    src.write_bytes(b"not really a network" * 100)
    import hashlib

    good = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "models" / "ffhq.pkl"
    assert fetch(src.as_uri(), good, out) == out and out.read_bytes() == src.read_bytes()
    assert verify(out, good.upper()) == good
    assert fetch("file:///nonexistent/elsewhere.pkl", good, out) == out  # present: no download
    bad = "0" * 64
    with pytest.raises(ChecksumError, match="expected 0000"):
        verify(out, bad)
    out2 = tmp_path / "models" / "other.pkl"
    with pytest.raises(ChecksumError, match="not written"):
        fetch(src.as_uri(), bad, out2)
    assert not out2.exists() and [p.name for p in out2.parent.iterdir()] == ["ffhq.pkl"]
    with pytest.raises(ValueError, match="64 hex digits"):
        fetch(src.as_uri(), "abc", out2)
    assert main(["fetch", "--url", src.as_uri(), "--sha256", good, "--out", str(out2)]) == 0
    assert main(["verify", str(out2), "--sha256", good]) == 0
    assert main(["verify", str(out2), "--sha256", bad]) == 1
    assert "expected 0000" in capsys.readouterr().err


def test_fp16_blocks_close_to_fp32():
    """The fp16 path (top resolutions in float16, non-fused modconv for batches > 1,
    pre-normalised weights, clamp 256) at network level; the wrapper only enables it on CUDA,
    but torch runs float16 convolutions on the CPU too."""
    torch.manual_seed(0)
    net = StyleGAN2Network(32, 0, 32, 32, 3, dict(num_layers=2),
                           dict(channel_base=512, channel_max=32, num_fp16_res=2, conv_clamp=256)).eval()
    assert [getattr(net.synthesis, f"b{r}").use_fp16 for r in (4, 8, 16, 32)] == [False, False, True, True]
    with torch.no_grad():
        ws = net.mapping(torch.randn(3, 32), None)
        ref = net.synthesis(ws, allow_fp16=False)
        half = net.synthesis(ws, allow_fp16=True)
        one = net.synthesis(ws[:1], allow_fp16=True)  # batch 1: fused in fp16
    assert half.dtype == torch.float32 and torch.isfinite(half).all()
    assert (half - ref).abs().mean() < 0.01 * ref.abs().mean() and (half - ref).abs().max() < 0.05
    assert (one - half[:1]).abs().max() < 0.05
    assert tiny(fp16=True).fp16 is False  # fp16 is CUDA-only in the wrapper


@pytest.mark.parametrize("tf32", [False, True])
def test_tf32_switches_hold_during_calls_and_are_restored(tf32):
    """``tf32`` sets both TF32 switches for the mapping and the synthesis (what a CUDA
    convolution reads when it runs) and restores the caller's values afterwards."""
    switches = torch.backends.cudnn, torch.backends.cuda.matmul
    before = tuple(s.allow_tf32 for s in switches)
    g = tiny(tf32=tf32, seed=1)
    seen = []

    def record(module, args, out):
        seen.append(tuple(s.allow_tf32 for s in switches))

    g.net.mapping.register_forward_hook(record)
    g.net.synthesis.register_forward_hook(record)
    # the caller's switches set opposite to the generator's: each call must override them
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = not tf32
    try:
        images = g.synthesize(g.sample(3, seed=0))
        after = tuple(s.allow_tf32 for s in switches)
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before
    assert images.shape == (3, 16, 16, 3)
    assert len(seen) == 2 and all(s == (tf32, tf32) for s in seen)
    assert after == (not tf32, not tf32)
