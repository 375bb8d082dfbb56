"""Model specs (``facebias.faces.specs``): ``sface``, ``dlib``, ``onnx:PATH?...`` and
``torch:MODULE:FUNCTION?...`` name any model a study runs; a bad one is a one-line error
naming the file or function; a user model's embeddings are cached by weights and
preprocessing."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from facebias.faces import EmbeddingCache, load_embedder
from facebias.faces.embed import worker_spec
from facebias.faces.specs import ModelSpec, check_model_spec, model_name, parse_model_spec

SIZE = 112


def _tiny_onnx(path, weight: np.ndarray, layout: str = "nchw") -> None:
    """Flatten + MatMul: y = flatten(x) @ weight, for an NCHW (or NHWC) 112 px input."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = ["N", 3, SIZE, SIZE] if layout == "nchw" else ["N", SIZE, SIZE, 3]
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["f"], axis=1), helper.make_node("MatMul", ["f", "w"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", weight.shape[1]])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def astronaut():
    import skimage.data

    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def weight():
    return np.random.default_rng(5).standard_normal((3 * SIZE * SIZE, 16)).astype(np.float32) / 100


@pytest.fixture(scope="module")
def crops():
    rng = np.random.default_rng(6)
    return [rng.integers(0, 256, (SIZE, SIZE, 3), np.uint8) for _ in range(4)]


def _numpy_reference(crops, weight, mean, std, bgr=False, layout="nchw"):
    """The same model in plain numpy (an independent implementation of the preprocessing)."""
    x = (np.stack(crops).astype(np.float64) - np.asarray(mean)) / np.asarray(std)
    if bgr:
        x = x[..., ::-1]
    if layout == "nchw":
        x = x.transpose(0, 3, 1, 2)
    y = x.reshape(len(crops), -1) @ weight.astype(np.float64)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


# --------------------------------------------------------------------------- syntax


def test_builtin_specs_carry_their_published_thresholds():
    from facebias.faces.embedders import PUBLISHED_THRESHOLDS

    for name in ("sface", "dlib"):
        s = parse_model_spec(name)
        assert (s.kind, s.name, s.builtin) == (name, name, True)
        assert s.threshold == PUBLISHED_THRESHOLDS[name]


def test_user_specs_parse_options():
    s = parse_model_spec("onnx:models/arc.r100.onnx?input_size=128&mean=0.5,0.4,0.3&std=2&layout=NHWC"
                         "&rgb=0&name=r100&threshold=0.31")
    assert isinstance(s, ModelSpec) and not s.builtin
    assert (s.kind, s.target, s.input_size, s.layout, s.rgb, s.name, s.threshold) == (
        "onnx", "models/arc.r100.onnx", 128, "nhwc", False, "r100", 0.31)
    assert s.mean == (0.5, 0.4, 0.3) and s.std == (2.0, 2.0, 2.0)
    assert parse_model_spec("onnx:models/arc.r100.onnx").name == "arc.r100"
    t = parse_model_spec("torch:my_pkg.nets:build_net?input_size=96")
    assert (t.kind, t.target, t.name, t.input_size) == ("torch", "my_pkg.nets:build_net", "build_net", 96)
    assert model_name(" dlib ") == "dlib" and parse_model_spec(t) is t


@pytest.mark.parametrize("spec, match", [
    ("arcface", r"^model 'arcface': unknown model; a model is 'sface', 'dlib', 'onnx:PATH"),
    ("", "expected a non-empty string"),
    ("onnx:", "no file after 'onnx:'"),
    ("onnx:a.onnx?size=112", "unknown option 'size'; known: input_size"),
    ("onnx:a.onnx?input_size=11.5", r"input_size='11.5' must be an integer in 16..1024"),
    ("onnx:a.onnx?mean=1,2", "must be one number or three comma-separated numbers"),
    ("onnx:a.onnx?std=0", "std='0' must be > 0"),
    ("onnx:a.onnx?layout=chw", "must be nchw or nhwc"),
    ("onnx:a.onnx?rgb=yes", "must be 1 \\(RGB\\) or 0 \\(BGR\\)"),
    ("onnx:a.onnx?threshold=2", "must be a cosine similarity in \\[-1, 1\\]"),
    ("onnx:a.onnx?name=1 x", "name='1 x' must be letters"),
    ("onnx:a.onnx?rgb=1&rgb=0", "option 'rgb' given twice"),
    ("torch:build", "expected 'torch:MODULE:FUNCTION'"),
    ("torch:my-pkg:build", "expected 'torch:MODULE:FUNCTION'"),
    ("torch:pkg:build?layout=nhwc", "torch models take NCHW input"),
])
def test_bad_specs_are_one_line_errors(spec, match):
    with pytest.raises(ValueError, match=match) as err:
        parse_model_spec(spec)
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- loading


def test_onnx_spec_applies_its_preprocessing(tmp_path, weight, crops):
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path, weight)
    default = load_embedder(f"onnx:{path}")
    assert (default.name, default.dim, default.spec) == ("tiny", 16, f"onnx:{path}")
    np.testing.assert_allclose(default.embed_aligned(crops), _numpy_reference(crops, weight, 127.5, 127.5),
                               atol=1e-5)
    mean, std = (120.0, 110.0, 100.0), (60.0, 65.0, 70.0)
    tuned = load_embedder(f"onnx:{path}?mean=120,110,100&std=60,65,70&rgb=0&name=mine")
    np.testing.assert_allclose(tuned.embed_aligned(crops), _numpy_reference(crops, weight, mean, std, bgr=True),
                               atol=1e-5)
    nhwc = tmp_path / "nhwc.onnx"
    _tiny_onnx(nhwc, weight, layout="nhwc")
    np.testing.assert_allclose(load_embedder(f"onnx:{nhwc}?layout=nhwc").embed_aligned(crops),
                               _numpy_reference(crops, weight, 127.5, 127.5, layout="nhwc"), atol=1e-5)
    # the cache key: same weights, other preprocessing -> another key; same spec -> the same key
    assert tuned.model_id != default.model_id and tuned.model_id.startswith("mine-")
    assert load_embedder(f"onnx:{path}").model_id == default.model_id
    # a worker process can rebuild it from the spec
    assert worker_spec(tuned) == (tuned.spec, "yunet", tuned.model_id)


def test_cache_keys_user_models_by_weights_and_preprocessing(tmp_path, weight, astronaut):
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path, weight)
    cache = EmbeddingCache(tmp_path / "cache")
    a = cache.embed(load_embedder(f"onnx:{path}"), [astronaut])
    b = cache.embed(load_embedder(f"onnx:{path}?mean=0&std=255"), [astronaut])
    assert not np.allclose(a.vectors, b.vectors)  # not served the other's cached rows
    _tiny_onnx(path, weight * -1.0)  # new weights in the same file: a new key
    c = cache.embed(load_embedder(f"onnx:{path}"), [astronaut])
    np.testing.assert_allclose(c.vectors, -a.vectors, atol=1e-6)
    again = cache.embed(load_embedder(f"onnx:{path}"), [astronaut])
    np.testing.assert_array_equal(again.vectors, c.vectors)
    assert len(list((tmp_path / "cache").rglob("*.emb"))) == 3


def test_onnx_spec_errors_name_the_file(tmp_path):
    not_model = tmp_path / "not_a_model.onnx"
    not_model.write_text("hello")
    with pytest.raises(ValueError, match=r"not_a_model\.onnx is not a loadable ONNX model") as err:
        load_embedder(f"onnx:{not_model}")
    assert "\n" not in str(err.value)
    from facebias.faces import OnnxEmbedder

    with pytest.raises(ValueError, match=r"not_a_model\.onnx is not a loadable ONNX model"):
        OnnxEmbedder(not_model)  # the class itself, as its docstring promises (was InvalidProtobuf)
    with pytest.raises(ValueError, match=r"^model 'onnx:.*missing\.onnx': ONNX model file not found"):
        check_model_spec(f"onnx:{tmp_path / 'missing.onnx'}")
    with pytest.raises(ValueError, match="it is a folder"):
        load_embedder(f"onnx:{tmp_path}")


def test_onnx_spec_of_the_wrong_input_size_says_what_to_set(tmp_path, weight):
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path, weight)
    with pytest.raises(ValueError, match=r"expects 112 x 112 input.*set input_size=112"):
        load_embedder(f"onnx:{path}?input_size=96")


@pytest.fixture
def user_module(tmp_path, monkeypatch, weight):
    """A user's module in the working directory: ``build()`` is the numpy reference net;
    ``broken()`` raises; ``not_a_net()`` returns a dict."""
    np.save(tmp_path / "w.npy", weight)
    (tmp_path / "my_nets.py").write_text(textwrap.dedent("""
        import numpy as np
        import torch

        def build():
            w = torch.from_numpy(np.load("w.npy"))
            lin = torch.nn.Linear(w.shape[0], w.shape[1], bias=False)
            with torch.no_grad():
                lin.weight.copy_(w.T)
            return torch.nn.Sequential(torch.nn.Flatten(), lin)

        def broken():
            raise RuntimeError("weights missing")

        def not_a_net():
            return {}
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_nets"
    import sys

    sys.modules.pop("my_nets", None)


def test_torch_spec_loads_the_users_function(user_module, weight, crops):
    emb = load_embedder(f"torch:{user_module}:build?mean=0&std=255")
    assert (emb.name, emb.dim) == ("build", 16)
    np.testing.assert_allclose(emb.embed_aligned(crops), _numpy_reference(crops, weight, 0.0, 255.0), atol=1e-5)
    for spec, match in [(f"torch:{user_module}:broken", r"my_nets\.broken\(\) raised RuntimeError: weights missing"),
                        (f"torch:{user_module}:not_a_net", r"returned a dict, not a torch\.nn\.Module"),
                        (f"torch:{user_module}:nothing", r"has no function 'nothing'"),
                        ("torch:no_such_module_here:build", r"cannot import module 'no_such_module_here'")]:
        with pytest.raises(ValueError, match=match):
            load_embedder(spec)


def test_a_user_model_runs_on_worker_processes_like_here(tmp_path, weight, astronaut):
    """``workers=2`` (spawned processes, each loading the model from its spec) gives the rows
    of the serial run; before, only the built-in models could use the pool."""
    path = tmp_path / "tiny.onnx"
    _tiny_onnx(path, weight)
    emb = load_embedder(f"onnx:{path}?name=pooled")
    images = [astronaut, astronaut[::-1].copy(), np.zeros((64, 64, 3), np.uint8)]
    serial, pooled = emb.embed(images), emb.embed(images, workers=2)
    assert serial.enrolled.tolist() == pooled.enrolled.tolist() == [True, True, False]
    np.testing.assert_array_equal(serial.vectors, pooled.vectors)
