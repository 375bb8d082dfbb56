"""User gender classifiers (``facebias.classifiers.user``): a tiny torch module and tiny ONNX
graphs made here, whose P(male) is computed independently in numpy (the mean of a channel of
the normalised input, through the sigmoid or scipy's softmax), and every bad input as one
``ValueError`` line naming the spec."""

from __future__ import annotations

import itertools
import sys
import textwrap
import warnings

import numpy as np
import pytest
from scipy.special import expit, softmax

from facebias.classifiers.user import (
    ClassifierSpec,
    load_classifier,
    load_classifiers,
    parse_classifier_spec,
    to_p_male,
)

_COUNTER = itertools.count()

#: torch classifiers of the tests: every function reads the normalised NCHW input x
TORCH_MODULE = '''
import torch


class ChannelMeans(torch.nn.Module):
    """(n, k): the mean of each of the first k channels of the input."""

    def __init__(self, k=1):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x[:, : self.k].mean(dim=(2, 3))


class Constant(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x):
        return torch.full((x.shape[0], 1), self.value)


class Fixed16(torch.nn.Module):
    """A linear layer on a flattened 16 px input: fails on any other size."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3 * 16 * 16, 1)

    def forward(self, x):
        return self.fc(x.flatten(1))


class OneRow(torch.nn.Module):
    """Ignores the batch: always one row."""

    def forward(self, x):
        return x[:1, 0].mean(dim=(1, 2)).reshape(1, 1)


def red():
    return ChannelMeans(1)


def red_green():
    return ChannelMeans(2)


def rgb():
    return ChannelMeans(3)


def five():
    return Constant(5.0)


def nan():
    return Constant(float("nan"))


def fixed16():
    return Fixed16()


def one_row():
    return OneRow()


def raises():
    raise RuntimeError("weights not found")


def not_a_module():
    return 42
'''


@pytest.fixture
def mod(tmp_path, monkeypatch):
    """The name of a fresh module holding TORCH_MODULE, importable from the working directory
    (as a user's module is: ``torch:MODULE:FUNCTION`` imports from the cwd)."""
    name = f"user_clf_{next(_COUNTER)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(TORCH_MODULE))
    monkeypatch.chdir(tmp_path)
    yield name
    sys.modules.pop(name, None)


def _images(n=7, size=16, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, 3)).astype(np.uint8)


def _onnx(path, weight: np.ndarray, size: int = 16, layout: str = "nchw", batch: int | str = "N") -> None:
    """y = flatten(x) @ weight: (n, k) for an NCHW (or NHWC) ``size`` px input."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = [batch, 3, size, size] if layout == "nchw" else [batch, size, size, 3]
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["f"], axis=1), helper.make_node("MatMul", ["f", "w"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, weight.shape[1]])],
        [numpy_helper.from_array(weight.astype(np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _channel_mean_weight(size: int, channels: list[int], layout: str = "nchw") -> np.ndarray:
    """MatMul weights whose column j averages channel ``channels[j]`` of a flattened input."""
    w = np.zeros((3, size, size, len(channels)) if layout == "nchw" else (size, size, 3, len(channels)))
    for j, c in enumerate(channels):
        if layout == "nchw":
            w[c, :, :, j] = 1.0 / size**2
        else:
            w[:, :, c, j] = 1.0 / size**2
    return w.reshape(-1, len(channels))


def _norm(images, mean, std):
    """The normalised input per RGB channel, (n, h, w, 3) float64: what the contract feeds."""
    return (images.astype(np.float64) - np.asarray(mean, float)) / np.asarray(std, float)


# --------------------------------------------------------------------------- torch
def test_torch_logit_is_the_sigmoid_of_the_normalised_red_mean(mod):
    ims = _images()
    clf = load_classifier(f"torch:{mod}:red?input_size=16&mean=0&std=255")
    assert (clf.name, clf.input_size) == ("red", 16)
    expected = expit(_norm(ims, 0, 255)[..., 0].mean(axis=(1, 2)))
    np.testing.assert_allclose(clf.p_male(ims), expected, atol=1e-6)
    # the defaults: (pixel - 127.5) / 127.5, male = class 1
    default = load_classifier(f"torch:{mod}:red?input_size=16")
    np.testing.assert_allclose(default.p_male(ims), expit(_norm(ims, 127.5, 127.5)[..., 0].mean(axis=(1, 2))),
                               atol=1e-6)
    # male=0: the logit is the female class's
    np.testing.assert_allclose(load_classifier(f"torch:{mod}:red?input_size=16&male=0").p_male(ims),
                               1 - default.p_male(ims), atol=1e-12)


def test_torch_bgr_and_per_channel_normalisation(mod):
    ims = _images(seed=1)
    clf = load_classifier(f"torch:{mod}:red?input_size=16&mean=10,20,30&std=1,2,4&rgb=0")
    # mean/std are given in RGB order; rgb=0 then feeds BGR, so channel 0 is (blue - 30) / 4
    expected = expit(((ims[..., 2].astype(float) - 30) / 4).mean(axis=(1, 2)))
    np.testing.assert_allclose(clf.p_male(ims), expected, rtol=1e-6)


def test_two_scores_softmax_and_two_probabilities(mod):
    ims = _images(seed=2)
    x = _norm(ims, 0, 255)
    scores = np.stack([x[..., 0].mean(axis=(1, 2)), x[..., 1].mean(axis=(1, 2))], axis=1)
    soft = load_classifier(f"torch:{mod}:red_green?input_size=16&mean=0&std=255&output=softmax2")
    np.testing.assert_allclose(soft.p_male(ims), softmax(scores, axis=1)[:, 1], atol=1e-6)
    soft0 = load_classifier(f"torch:{mod}:red_green?input_size=16&mean=0&std=255&output=softmax2&male=0")
    np.testing.assert_allclose(soft0.p_male(ims), softmax(scores, axis=1)[:, 0], atol=1e-6)
    # the channel means of pixels / 255 are probabilities: prob2 takes the male column as it is
    prob2 = load_classifier(f"torch:{mod}:red_green?input_size=16&mean=0&std=255&output=prob2&male=0")
    np.testing.assert_allclose(prob2.p_male(ims), scores[:, 0], atol=1e-6)
    prob = load_classifier(f"torch:{mod}:red?input_size=16&mean=0&std=255&output=prob")
    np.testing.assert_allclose(prob.p_male(ims), scores[:, 0], atol=1e-6)


def test_renders_are_resized_to_the_input_size(mod):
    clf = load_classifier(f"torch:{mod}:red?input_size=16&mean=0&std=255")
    big = _images(n=3, size=32, seed=3)
    # shrinking 32 -> 16 px averages 2 x 2 blocks (area), which keeps the channel mean up to
    # the uint8 rounding of each output pixel (<= 0.5 / 255 in the mean)
    mean_red = big[..., 0].astype(float).mean(axis=(1, 2)) / 255
    p = clf.p_male(big)
    assert np.all(np.abs(np.log(p / (1 - p)) - mean_red) <= 0.5 / 255 + 1e-6)
    # enlarging a flat image leaves it flat
    flat = np.full((2, 8, 8, 3), 200, np.uint8)
    np.testing.assert_allclose(clf.p_male(flat), expit(200 / 255), atol=1e-6)


def test_batches_and_a_progress_bar_give_the_same_answer(mod, capsys):
    ims = _images(n=11)
    clf = load_classifier(f"torch:{mod}:red?input_size=16")
    whole = clf.p_male(ims)
    np.testing.assert_array_equal(clf.p_male(ims, batch=3, progress=True), whole)
    assert "red" in capsys.readouterr().err  # tqdm's bar, named by the classifier
    assert clf.p_male(np.zeros((0, 16, 16, 3), np.uint8)).shape == (0,)


def test_a_nan_output_is_warned_and_kept_as_nan(mod):
    clf = load_classifier(f"torch:{mod}:nan?input_size=16")
    with pytest.warns(UserWarning, match="NaN output for 7 of 7 images"):
        assert np.isnan(clf.p_male(_images())).all()


# --------------------------------------------------------------------------- ONNX
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_onnx_logit_and_layouts(tmp_path, layout):
    path = tmp_path / f"red_{layout}.onnx"
    _onnx(path, _channel_mean_weight(16, [0], layout), layout=layout)
    ims = _images(seed=4)
    clf = load_classifier(f"onnx:{path}?input_size=16&mean=0&std=255&layout={layout}")
    assert clf.name == f"red_{layout}"
    np.testing.assert_allclose(clf.p_male(ims), expit(_norm(ims, 0, 255)[..., 0].mean(axis=(1, 2))), atol=1e-6)


def test_onnx_two_scores_and_a_fixed_batch_of_one(tmp_path):
    path = tmp_path / "rg.onnx"
    _onnx(path, _channel_mean_weight(16, [0, 1]), batch=1)  # exported without a dynamic batch
    ims = _images(n=5, seed=5)
    x = _norm(ims, 127.5, 127.5)
    scores = np.stack([x[..., 0].mean(axis=(1, 2)), x[..., 1].mean(axis=(1, 2))], axis=1)
    clf = load_classifier(f"onnx:{path}?input_size=16&output=softmax2&name=rg")
    np.testing.assert_allclose(clf.p_male(ims, batch=2), softmax(scores, axis=1)[:, 1], atol=1e-6)


def test_the_example_classifier_reads_the_light_asymmetry(monkeypatch):
    """examples/light_gender.py (the README's example): logit = 10 x (left - right mean grey
    level of the face region), in torch and exported to ONNX."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    ims = _images(n=6, size=112, seed=6)
    ims[:3, :, :56] //= 2  # darker left half: female; the others darker right: male
    ims[3:, :, 56:] //= 2
    grey = _norm(ims, 127.5, 127.5) @ np.array([0.299, 0.587, 0.114])
    rows = grey[:, 28:84]
    expected = expit(10 * (rows[:, :, 14:56].mean(axis=(1, 2)) - rows[:, :, 56:98].mean(axis=(1, 2))))
    clf = load_classifier("torch:examples.light_gender:light_gender")
    p = clf.p_male(ims)
    np.testing.assert_allclose(p, expected, atol=1e-5)
    assert (p[:3] < 0.5).all() and (p[3:] > 0.5).all()


# --------------------------------------------------------------------------- to_p_male
def test_to_p_male_agrees_with_scipy():
    rng = np.random.default_rng(7)
    one, two = rng.normal(0, 3, 20), rng.normal(0, 3, (20, 2))
    np.testing.assert_allclose(to_p_male(one), expit(one))
    np.testing.assert_allclose(to_p_male(one[:, None], male=0), 1 - expit(one))
    np.testing.assert_allclose(to_p_male(two, "softmax2"), softmax(two, axis=1)[:, 1])
    np.testing.assert_allclose(to_p_male(two, "softmax2", male=0), softmax(two, axis=1)[:, 0])
    probs = softmax(two, axis=1)
    np.testing.assert_array_equal(to_p_male(probs, "prob2"), probs[:, 1])
    np.testing.assert_array_equal(to_p_male(probs[:, 1], "prob", male=0), 1 - probs[:, 1])
    for bad, output, match in [(two, "logit", "needs 1 value per image"), (one, "softmax2", "needs 2 values"),
                               (one + 5, "prob", r"probabilities in \[0, 1\]"), (one, "odds", "must be one of")]:
        with pytest.raises(ValueError, match=match):
            to_p_male(bad, output)


# --------------------------------------------------------------------------- bad input
def _one_line(exc_info, *parts):
    msg = str(exc_info.value)
    assert "\n" not in msg, msg
    for part in parts:
        assert part in msg, msg
    return msg


@pytest.mark.parametrize("spec, expected", [
    ("sface", "a face-recognition model, not a classifier"),
    ("resnet50", "unknown kind; a classifier is 'onnx:PATH"),
    ("onnx:", "no file after 'onnx:'"),
    ("onnx:a.onnx?size=64", "unknown option 'size'; known: input_size, mean, std, layout, rgb, name, output, male"),
    ("onnx:a.onnx?threshold=0.3", "threshold is a face-recognition option"),
    ("onnx:a.onnx?output=odds", "output='odds' must be one of logit, prob, softmax2, prob2"),
    ("onnx:a.onnx?male=2", "male='2' must be 1"),
    ("onnx:a.onnx?output=prob&output=logit", "option 'output' given twice"),
    ("onnx:a.onnx?input_size=big", "input_size='big' must be an integer in 16..1024"),
    ("onnx:a.onnx?std=0", "std='0' must be > 0"),
    ("torch:nodots", "expected 'torch:MODULE:FUNCTION'"),
    ("torch:m:f?layout=nhwc", "torch models take NCHW input"),
])
def test_a_bad_spec_is_one_line_naming_it(spec, expected):
    with pytest.raises(ValueError) as exc:
        parse_classifier_spec(spec)
    _one_line(exc, f"classifier {spec!r}", expected)


def test_a_parsed_spec_keeps_its_parts():
    s = parse_classifier_spec("onnx:m/me.onnx?input_size=64&mean=0&std=255&output=prob2&male=0&name=mine")
    assert isinstance(s, ClassifierSpec) and parse_classifier_spec(s) is s
    assert (s.model.target, s.model.input_size, s.model.mean, s.model.std, s.output, s.male, s.name, s.n_outputs) \
        == ("m/me.onnx", 64, (0.0,) * 3, (255.0,) * 3, "prob2", 0, "mine", 2)


@pytest.mark.parametrize("func, options, expected", [
    ("raises", "", "raised RuntimeError: weights not found"),
    ("not_a_module", "", "returned a int, not a torch.nn.Module"),
    ("missing", "", "has no function 'missing'"),
    ("rgb", "&input_size=16", "returns 3 values per image; output=logit needs one value per image"),
    ("red", "&input_size=16&output=softmax2", "returns 1 values per image; output=softmax2 needs two values"),
    ("fixed16", "", "set input_size"),
    ("one_row", "&input_size=16", "failed on a batch of 2 images"),
])
def test_a_torch_classifier_that_cannot_serve_is_one_line(mod, func, options, expected):
    spec = f"torch:{mod}:{func}?name=x{options}"
    with pytest.raises(ValueError) as exc:
        load_classifier(spec)
    _one_line(exc, f"classifier {spec!r}", expected)


def test_fixed16_names_the_size_it_runs_on(mod):
    with pytest.raises(ValueError) as exc:
        load_classifier(f"torch:{mod}:fixed16")
    msg = _one_line(exc, "set input_size")
    assert "TorchEmbedder" not in msg  # a classifier is set by its spec, not by the embedder class


def test_a_module_that_does_not_import_is_one_line(mod):
    with pytest.raises(ValueError) as exc:
        load_classifier("torch:no_such_module_here:build")
    _one_line(exc, "cannot import module 'no_such_module_here'")


def test_an_onnx_file_that_is_missing_or_not_onnx_is_one_line(tmp_path):
    with pytest.raises(ValueError) as exc:
        load_classifier(f"onnx:{tmp_path}/none.onnx")
    _one_line(exc, f"classifier 'onnx:{tmp_path}/none.onnx'", "file not found", "working directory")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00 not a protobuf")
    with pytest.raises(ValueError) as exc:
        load_classifier(f"onnx:{bad}")
    _one_line(exc, f"{bad} is not a loadable ONNX model")
    fixed = tmp_path / "fixed.onnx"
    _onnx(fixed, _channel_mean_weight(16, [0]))
    with pytest.raises(ValueError) as exc:
        load_classifier(f"onnx:{fixed}")  # the default 112 px, but the graph is for 16 px
    _one_line(exc, "expects 16 x 16 input", "set input_size=16")
    two = tmp_path / "two.onnx"
    _onnx(two, _channel_mean_weight(16, [0, 1]))
    with pytest.raises(ValueError) as exc:
        load_classifier(f"onnx:{two}?input_size=16")
    _one_line(exc, "returns 2 values per image; output=logit needs one value")


def test_probabilities_out_of_range_are_refused_when_predicting(mod):
    clf = load_classifier(f"torch:{mod}:five?input_size=16&output=prob")
    with pytest.raises(ValueError) as exc:
        clf.p_male(_images())
    _one_line(exc, f"classifier 'torch:{mod}:five?input_size=16&output=prob'", "set output=logit")
    np.testing.assert_allclose(load_classifier(f"torch:{mod}:five?input_size=16").p_male(_images(n=2)),
                               expit(5.0), rtol=1e-6)


def test_images_must_be_rgb_uint8(mod):
    clf = load_classifier(f"torch:{mod}:red?input_size=16")
    for bad in (_images().astype(float), _images()[..., :2], _images()[0]):
        with pytest.raises(ValueError, match="images must be RGB uint8"):
            clf.p_male(bad)


def test_names_must_differ(mod):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = load_classifiers([f"torch:{mod}:red?input_size=16", f"torch:{mod}:red?input_size=16&name=red2"])
    assert list(both) == ["red", "red2"]
    with pytest.raises(ValueError) as exc:
        load_classifiers([f"torch:{mod}:red?input_size=16", f"torch:{mod}:red?input_size=16&mean=0"])
    _one_line(exc, "the name 'red' is taken; add name=")
    with pytest.raises(ValueError, match="taken"):
        load_classifiers([f"torch:{mod}:red?input_size=16&name=cnn"], reserved=["cnn"])
