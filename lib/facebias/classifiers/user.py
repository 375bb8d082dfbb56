"""A gender classifier the user brings (``facebias transects --classifier``): parsed from a
spec, loaded, checked, and run on whole renders as P(male).

Specs use the model-spec syntax of :mod:`facebias.faces.specs` (the same parser), plus two
options of their own:

============================================  ==============================================
spec                                          classifier
============================================  ==============================================
``onnx:PATH[?key=value&...]``                 an ONNX file (onnxruntime, CPU)
``torch:MODULE:FUNCTION[?key=value&...]``     ``MODULE.FUNCTION()`` returns a
                                              ``torch.nn.Module`` (eval mode, no gradients)
============================================  ==============================================

**Input** (what the classifier is fed): the *whole render*, not a face crop. Each RGB uint8
image (the DCGAN's renders are 64 x 64 px) is resized to ``input_size`` x ``input_size``
pixels (OpenCV area interpolation when shrinking, bilinear when enlarging; no resize at that
size already), then fed as float32 ``(pixel - mean) / std`` per channel, pixel values in
0..255, in NCHW (``layout=nchw``, the default; torch models always) or NHWC
(``layout=nhwc``, ONNX only), channels RGB (``rgb=1``, default) or BGR (``rgb=0``; ``mean``
and ``std`` are always given in R,G,B order). Defaults: ``input_size=112``,
``mean=127.5``, ``std=127.5`` (inputs in [-1, 1]). An ONNX model's first input is fed; a
fixed batch size is honoured (zero-padded last batch).

**Output** (what it must return), per image: one number or two, set by ``output=``:

* ``logit`` (default): one logit; P(class 1) = sigmoid(value);
* ``prob``: one probability of class 1, in [0, 1] (checked);
* ``softmax2``: two class scores (logits of classes 0 and 1); P(class 1) = softmax(scores)[1];
* ``prob2``: two class probabilities (classes 0 and 1), each in [0, 1] (checked);
  P(class 1) = the second.

**Classes**: the study's positive class is **male** (P(male), as its labeller and its own
classifiers give it; a face is predicted male iff P(male) > 0.5,
:func:`facebias.studies.transects.errors`). ``male=1`` (default) says class 1 is male (class 0
female); ``male=0`` says class 0 is male, so P(male) = 1 - P(class 1) (one output) or the
first of two. Shapes accepted per batch of n: (n,), (n, 1) and (n, 1, ...) for one output,
(n, 2) for two.

Other options as :mod:`facebias.faces.specs`: ``name`` (the classifier's name in the
tables and figures; default the file stem or the function name). ``threshold`` (a
face-recognition option) is refused. ``PATH`` is relative to the working directory;
``MODULE`` is imported with the working directory on ``sys.path``.

Every problem is one ``ValueError`` line naming the spec, the file or the function and what
to set: a bad spec, a missing file, a file that is not ONNX, a module that does not import,
a function that raises or does not return a ``torch.nn.Module``, a model that fails on its
input size, or an output of the wrong shape or range.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

import numpy as np

if TYPE_CHECKING:
    from facebias.faces.specs import ModelSpec

__all__ = ["OUTPUTS", "POSITIVE", "CLASSIFIER_HELP", "ClassifierSpec", "UserClassifier",
           "parse_classifier_spec", "load_classifier", "load_classifiers", "to_p_male"]

#: The study's positive class: classifiers give P(male).
POSITIVE = "male"
#: How a classifier's output becomes P(male): output option -> values per image.
OUTPUTS = {"logit": 1, "prob": 1, "softmax2": 2, "prob2": 2}
#: One line saying what a classifier spec may be, for error messages.
CLASSIFIER_HELP = ("a classifier is 'onnx:PATH[?input_size=112&mean=127.5&std=127.5&layout=nchw&rgb=1&name=N"
                   "&output=logit&male=1]' or 'torch:MODULE:FUNCTION[?...]' (output: logit, prob, softmax2, prob2)")
_OWN_OPTIONS = ("output", "male")
#: Tolerance of the range check of probability outputs (float32 rounding).
_PROB_TOL = 1e-6


@dataclass(frozen=True)
class ClassifierSpec:
    """A parsed classifier spec (:func:`parse_classifier_spec`).

    Attributes
    ----------
    text : str
        The spec as written.
    model : facebias.faces.specs.ModelSpec
        The model part (every option but ``output`` and ``male``): ``kind``, ``target``,
        ``input_size``, ``mean``, ``std``, ``layout``, ``rgb``, ``name``.
    output : {"logit", "prob", "softmax2", "prob2"}
        How the output becomes a probability (module docstring).
    male : {0, 1}
        The class index that is male.
    """

    text: str
    model: ModelSpec
    output: str = "logit"
    male: int = 1

    @property
    def name(self) -> str:
        """The classifier's name in tables and figures."""
        return self.model.name

    @property
    def n_outputs(self) -> int:
        """Values per image the classifier must return (1 or 2)."""
        return OUTPUTS[self.output]


def parse_classifier_spec(spec: str | ClassifierSpec) -> ClassifierSpec:
    """Parse a classifier spec (syntax only; no file is opened).

    Parameters
    ----------
    spec : str or ClassifierSpec
        ``"onnx:PATH[?options]"`` or ``"torch:MODULE:FUNCTION[?options]"`` (module
        docstring); a ClassifierSpec is returned as is.

    Returns
    -------
    ClassifierSpec

    Raises
    ------
    ValueError
        One line naming the spec and what is wrong with it.

    Examples
    --------
    >>> s = parse_classifier_spec("onnx:me.onnx?input_size=64&output=softmax2&male=0")
    >>> s.model.kind, s.model.target, s.model.input_size, s.output, s.male, s.name
    ('onnx', 'me.onnx', 64, 'softmax2', 0, 'me')
    >>> parse_classifier_spec("torch:examples.light_gender:light_gender").output
    'logit'
    >>> parse_classifier_spec("sface")
    Traceback (most recent call last):
    ...
    ValueError: classifier 'sface': a face-recognition model, not a classifier; a classifier is 'onnx:PATH[?input_size=112&mean=127.5&std=127.5&layout=nchw&rgb=1&name=N&output=logit&male=1]' or 'torch:MODULE:FUNCTION[?...]' (output: logit, prob, softmax2, prob2)
    """
    from facebias.faces.specs import BUILTIN_MODELS, parse_model_spec
    from facebias.faces.specs import OPTIONS as _MODEL_OPTIONS

    if isinstance(spec, ClassifierSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"classifier {spec!r}: expected a non-empty string; {CLASSIFIER_HELP}")
    text = spec.strip()
    if text in BUILTIN_MODELS:
        raise ValueError(f"classifier {text!r}: a face-recognition model, not a classifier; {CLASSIFIER_HELP}")
    kind, sep, _ = text.partition(":")
    if not sep or kind not in ("onnx", "torch"):
        raise ValueError(f"classifier {text!r}: unknown kind; {CLASSIFIER_HELP}")
    head, _, query = text.partition("?")
    known = [o for o in _MODEL_OPTIONS if o != "threshold"] + list(_OWN_OPTIONS)
    own: dict[str, str] = {}
    rest = []
    for piece in (p for p in query.split("&") if p):
        key, _, value = piece.partition("=")
        key = unquote_plus(key)
        if key in _OWN_OPTIONS:
            if key in own:
                raise ValueError(f"classifier {text!r}: option {key!r} given twice")
            own[key] = unquote_plus(value)
        elif key == "threshold":
            raise ValueError(f"classifier {text!r}: threshold is a face-recognition option; a classifier "
                             "predicts male iff P(male) > 0.5 (drop threshold=)")
        elif key not in known:
            raise ValueError(f"classifier {text!r}: unknown option {key!r}; known: {', '.join(known)}")
        else:
            rest.append(piece)
    model_text = head + ("?" + "&".join(rest) if rest else "")
    try:
        model = parse_model_spec(model_text)
    except ValueError as exc:
        raise ValueError(_reworded(exc, model_text, text)) from None
    output = own.get("output", "logit")
    if output not in OUTPUTS:
        raise ValueError(f"classifier {text!r}: output={output!r} must be one of {', '.join(OUTPUTS)} "
                         "(one logit, one probability, two class scores, two class probabilities)")
    male = own.get("male", "1")
    if male not in ("0", "1"):
        raise ValueError(f"classifier {text!r}: male={male!r} must be 1 (class 1 is male, the default) or 0 "
                         "(class 0 is male)")
    return ClassifierSpec(text, model, output, int(male))


def _reworded(exc: BaseException, model_text: str, text: str) -> str:
    """A model-spec error as a classifier-spec error (one line, naming what the user wrote)."""
    msg = " ".join(str(exc).split())
    msg = msg.replace(f"model {model_text!r}", f"classifier {text!r}")
    if text not in msg:
        msg = f"classifier {text!r}: {msg}"
    if "file not found" in msg:
        msg += " (relative paths start at the working directory)"
    # the embedder classes' hints, as spec options
    msg = re.sub(r"TorchEmbedder\(module, input_size=(\d+)\)", r"?input_size=\1 in the spec", msg)
    return msg.replace("(OnnxEmbedder(path, input_size=...), or onnx:", "(onnx:")


def to_p_male(raw: Any, output: str = "logit", male: int = 1) -> np.ndarray:
    """P(male) from a classifier's raw output, by the rule of ``output`` (module docstring).

    Parameters
    ----------
    raw : array_like
        (n,) or (n, 1) values for ``logit`` / ``prob``; (n, 2) for ``softmax2`` / ``prob2``.
    output : {"logit", "prob", "softmax2", "prob2"}, default "logit"
        What the values are.
    male : {0, 1}, default 1
        The class index that is male.

    Returns
    -------
    numpy.ndarray
        (n,) float64 P(male) in [0, 1]; NaN where an input value is NaN.

    Raises
    ------
    ValueError
        For an unknown ``output``, a shape that does not match it, or a probability outside
        [0, 1].

    Examples
    --------
    >>> to_p_male([0.0, np.log(3.0)])
    array([0.5 , 0.75])
    >>> to_p_male([[0.2], [0.9]], "prob", male=0)
    array([0.8, 0.1])
    >>> to_p_male([[0.0, np.log(3.0)]], "softmax2")
    array([0.75])
    """
    if output not in OUTPUTS:
        raise ValueError(f"output={output!r} must be one of {', '.join(OUTPUTS)}")
    if male not in (0, 1):
        raise ValueError(f"male={male!r} must be 0 or 1")
    x = np.asarray(raw, dtype=np.float64)
    k = OUTPUTS[output]
    if x.ndim == 0 or (x.ndim > 1 and int(np.prod(x.shape[1:])) != k) or (x.ndim == 1 and k != 1):
        raise ValueError(f"output={output} needs {k} value{'s' if k > 1 else ''} per image, got shape {x.shape}")
    x = x.reshape(len(x), k)
    if output in ("prob", "prob2"):
        finite = x[np.isfinite(x)]
        if finite.size and (finite.min() < -_PROB_TOL or finite.max() > 1 + _PROB_TOL):
            raise ValueError(f"output={output} needs probabilities in [0, 1], got values in "
                             f"[{finite.min():.4g}, {finite.max():.4g}]; set output=logit (one value) or "
                             "output=softmax2 (two) if these are scores")
        x = np.clip(x, 0.0, 1.0)
    if output == "logit":
        p1 = 1.0 / (1.0 + np.exp(-x[:, 0]))
    elif output == "prob":
        p1 = x[:, 0]
    elif output == "softmax2":
        d = x[:, 1] - x[:, 0]  # softmax of two scores = sigmoid of their difference
        p1 = 1.0 / (1.0 + np.exp(-d))
        return p1 if male == 1 else 1.0 - p1
    else:  # prob2: the male column as it is
        return x[:, male].copy()
    return p1 if male == 1 else 1.0 - p1


def _resize(images: np.ndarray, size: int) -> np.ndarray:
    """(n, h, w, 3) uint8 -> (n, size, size, 3): area when shrinking, bilinear when enlarging."""
    import cv2

    if images.shape[1:3] == (size, size):
        return images
    interp = cv2.INTER_AREA if min(images.shape[1:3]) >= size else cv2.INTER_LINEAR
    return np.stack([cv2.resize(im, (size, size), interpolation=interp) for im in images])


class UserClassifier:
    """A loaded user classifier (:func:`load_classifier`): whole RGB uint8 renders in,
    P(male) out.

    Attributes
    ----------
    spec : ClassifierSpec
        What it was loaded from.
    name : str
        Its name in tables and figures.
    input_size : int
        Side of the square input, pixels.
    """

    def __init__(self, spec: ClassifierSpec, model: Any):
        self.spec, self.name, self.input_size = spec, spec.name, spec.model.input_size
        self._model = model  # a facebias.faces user embedder: its _forward runs the raw network

    def raw(self, images: np.ndarray) -> np.ndarray:
        """The network's raw output for one batch: (n, k) float, k = 1 or 2.

        Parameters
        ----------
        images : numpy.ndarray
            (n, h, w, 3) RGB uint8, resized here to ``input_size``.

        Returns
        -------
        numpy.ndarray
            (n, k) raw outputs.

        Raises
        ------
        ValueError
            If the network fails or returns another number of values than its ``output``
            needs.
        """
        x = _resize(images, self.input_size)
        try:
            out = np.asarray(self._model._forward(x), dtype=np.float64)
        except Exception as exc:  # the user's network: any error, named
            raise ValueError(f"classifier {self.spec.text!r}: failed on a batch of {len(x)} images of "
                             f"{self.input_size} x {self.input_size} px ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:200]})") from exc
        k = self.spec.n_outputs
        if out.shape != (len(x), k):
            got = f"{out.shape[1]} values per image" if out.ndim == 2 and len(out) == len(x) else \
                f"shape {out.shape} for a batch of {len(x)}"
            need = ("one value per image (a logit or probability of 'male'); for two class scores set "
                    "output=softmax2 or output=prob2") if k == 1 else \
                "two values per image (class scores); for one logit or probability set output=logit or output=prob"
            raise ValueError(f"classifier {self.spec.text!r}: returns {got}; output={self.spec.output} needs {need}")
        return out

    def p_male(self, images: Sequence[np.ndarray] | np.ndarray, batch: int = 256, progress: bool = False
               ) -> np.ndarray:
        """P(male) per image (the study's positive class; module docstring for the rule).

        Parameters
        ----------
        images : sequence of numpy.ndarray or numpy.ndarray
            RGB uint8 images, (h, w, 3) each, all of one size.
        batch : int, default 256
            Images per forward pass.
        progress : bool, default False
            Show a tqdm progress bar (counted in images).

        Returns
        -------
        numpy.ndarray
            (n,) float64 P(male) in [0, 1]; male is predicted iff P(male) > 0.5. A NaN
            output gives a NaN (warned: the study counts it as a face not scored).

        Raises
        ------
        ValueError
            For images that are not RGB uint8 of one size, a failing network, or an output
            of the wrong shape or range (naming the classifier).
        """
        from tqdm.auto import tqdm

        arr = np.asarray(images) if len(images) else np.zeros((0, self.input_size, self.input_size, 3), np.uint8)
        if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8:
            raise ValueError(f"classifier {self.name!r}: images must be RGB uint8 (n, h, w, 3) of one size, "
                             f"got {arr.dtype} {arr.shape}")
        if int(batch) < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        out = []
        with tqdm(total=len(arr), desc=self.name, unit="image", disable=not progress) as bar:
            for s in range(0, len(arr), int(batch)):
                part = arr[s : s + int(batch)]
                try:
                    out.append(to_p_male(self.raw(part), self.spec.output, self.spec.male))
                except ValueError as exc:
                    msg = " ".join(str(exc).split())
                    raise ValueError(msg if msg.startswith("classifier ") else
                                     f"classifier {self.spec.text!r}: {msg}") from None
                bar.update(len(part))
        p = np.concatenate(out) if out else np.zeros(0)
        if np.isnan(p).any():
            warnings.warn(f"classifier {self.name!r}: NaN output for {int(np.isnan(p).sum())} of {len(p)} images; "
                          "they are left out of its error rates as faces not scored", stacklevel=2)
        return p

    def __repr__(self) -> str:
        return f"UserClassifier({self.spec.text!r})"


def load_classifier(spec: str | ClassifierSpec) -> UserClassifier:
    """Parse a classifier spec and load it, checked on a probe batch (what a study runs
    before it starts).

    Parameters
    ----------
    spec : str or ClassifierSpec
        See :func:`parse_classifier_spec`.

    Returns
    -------
    UserClassifier

    Raises
    ------
    ValueError
        One line naming the spec and the file or function: a bad spec, a missing file, a
        file that is not an ONNX model, a module that does not import, a function that
        raises or does not return a ``torch.nn.Module``, a model that fails on
        ``input_size``, or one that returns another number of values per image than
        ``output`` needs.
    """
    from facebias.faces.specs import load_from_spec

    s = parse_classifier_spec(spec)
    try:
        model = load_from_spec(s.model, detector="yunet")  # the embedder wrapper runs the raw network
    except ValueError as exc:
        raise ValueError(_reworded(exc, s.model.text, s.text)) from None
    clf = UserClassifier(s, model)
    if getattr(model, "dim", s.n_outputs) != s.n_outputs:
        clf.raw(np.zeros((1, s.model.input_size, s.model.input_size, 3), np.uint8))  # raises, naming the shape
    clf.raw(np.zeros((2, s.model.input_size, s.model.input_size, 3), np.uint8))  # a batch, not only one image
    return clf


def load_classifiers(specs: Sequence[str | ClassifierSpec], reserved: Sequence[str] = ()
                     ) -> dict[str, UserClassifier]:
    """Load several classifiers, by name (:func:`load_classifier` each, in order).

    Parameters
    ----------
    specs : sequence of str or ClassifierSpec
        The specs.
    reserved : sequence of str, default ()
        Names already taken (e.g. the study's own classifiers).

    Returns
    -------
    dict
        Name -> :class:`UserClassifier`, in the order of ``specs``.

    Raises
    ------
    ValueError
        As :func:`load_classifier`, or when two classifiers (or a classifier and a reserved
        name) share a name (set ``name=``).
    """
    if isinstance(specs, str):
        specs = [specs]
    out: dict[str, UserClassifier] = {}
    for spec in specs:
        s = parse_classifier_spec(spec)
        if s.name in out or s.name in reserved:
            raise ValueError(f"classifier {s.text!r}: the name {s.name!r} is taken; add name=... to tell them apart")
        out[s.name] = load_classifier(s)
    return out
