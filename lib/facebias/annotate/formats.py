"""Readers for released annotation formats -> a votes frame [annotator, item_id, question, value].

``value`` is always the 0-based level index (int64); the frames can go straight into
:meth:`facebias.annotate.AnnotationStore.add_votes` with ``source='imported'`` once the items
are registered.

* :func:`read_sagemaker`: one attribute directory of raw SageMaker Ground Truth output in the
  layout of the Transects authors' repository (``balakg/transects-eccv2020``,
  ``read-sagemaker-responses.ipynb``)::

      <attr_dir>/annotation-tool/data.json            {"labels": [{"label": name}, ...]}
      <attr_dir>/manifests/output/output.manifest     JSON lines with "source-ref"
      <attr_dir>/annotations/worker-response/<iteration>/<i>/<any>.json
          {"answers": [{"workerId": ..., "answerContent":
                        {"crowd-image-classifier": {"label": name}}}, ...]}

  Label order in ``data.json`` gives the level index; ``<i>`` is the 0-based line of the output
  manifest, whose ``source-ref`` file stem (``0000.jpg`` -> ``'0000'``) is the item id.
* :func:`read_transects_pkl`: the authors' processed ``annotations.pkl``.
* :func:`read_votes_csv`: a plain CSV with one vote per row.
"""

from __future__ import annotations

import json
import os
import pickle
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from facebias.annotate.scales import Scale
from facebias.validate import require_columns

__all__ = ["read_sagemaker", "read_votes_csv", "read_transects_pkl", "question_name"]

VOTE_FRAME_COLUMNS = ["annotator", "item_id", "question", "value"]


def question_name(attribute: str) -> str:
    """Repository attribute key -> question name (surrounding space stripped, ``-`` -> ``_``).

    Parameters
    ----------
    attribute : str
        Attribute key as the Transects repository spells it.

    Returns
    -------
    str
        The question name used in the annotation store.

    Examples
    --------
    >>> question_name("skin-color")
    'skin_color'
    """
    return attribute.strip().replace("-", "_")


def _load_json(path: Path, what: str):
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: malformed JSON ({e})") from None


def _votes_frame(rows: list[tuple]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=VOTE_FRAME_COLUMNS)
    return df.astype({"annotator": str, "item_id": str, "question": str, "value": "int64"})


def read_sagemaker(attr_dir: str | os.PathLike,
                   attribute: str | None = None) -> tuple[pd.DataFrame, Scale]:
    """Votes and scale of one SageMaker attribute directory (layout in the module doc).

    Parameters
    ----------
    attr_dir : str or os.PathLike
        The attribute directory.
    attribute : str, optional
        Question name; default the directory name with ``-`` -> ``_``.

    Returns
    -------
    votes : pandas.DataFrame
        ``annotator`` (worker id), ``item_id`` (manifest image stem), ``question``,
        ``value`` (0-based level index, int64), in manifest order (then file name, then
        answer order).
    scale : Scale
        Levels = the ``data.json`` labels, in order.

    Raises
    ------
    FileNotFoundError
        For a missing directory, label file, manifest or response folder.
    ValueError
        Naming the file: for malformed JSON, an unknown label name, a missing field,
        duplicate manifest images or a response folder outside the manifest.
    """
    root = Path(attr_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"SageMaker attribute directory not found: {root}")
    question = attribute if attribute is not None else question_name(root.name)

    labels_path = root / "annotation-tool" / "data.json"
    labels = _load_json(labels_path, "label file")
    try:
        names = tuple(str(x["label"]) for x in labels["labels"])
    except (KeyError, TypeError):
        raise ValueError(f"{labels_path}: expected {{\"labels\": [{{\"label\": name}}, ...]}}") from None
    scale = Scale(question, names)
    level = {name: i for i, name in enumerate(names)}

    manifest = root / "manifests" / "output" / "output.manifest"
    if not manifest.exists():
        raise FileNotFoundError(f"output manifest not found: {manifest}")
    stems = []
    for n, line in enumerate(manifest.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ref = json.loads(line)["source-ref"]
        except json.JSONDecodeError as e:
            raise ValueError(f"{manifest}: line {n}: malformed JSON ({e})") from None
        except (KeyError, TypeError):
            raise ValueError(f"{manifest}: line {n}: no 'source-ref'") from None
        stems.append(PurePosixPath(str(ref)).stem)
    if len(set(stems)) != len(stems):
        raise ValueError(f"{manifest}: duplicate image names in source-ref")

    responses = root / "annotations" / "worker-response"
    if not responses.is_dir():
        raise FileNotFoundError(f"worker-response folder not found: {responses}")
    by_index: dict[int, list[Path]] = {}
    for f in sorted(responses.glob("*/*/*.json")):
        idx_dir = f.parent.name
        if not re.fullmatch(r"\d+", idx_dir):
            raise ValueError(f"{f}: response folder {idx_dir!r} is not a data object index")
        i = int(idx_dir)
        if i >= len(stems):
            raise ValueError(f"{f}: data object index {i} but the manifest has {len(stems)} lines")
        by_index.setdefault(i, []).append(f)

    rows = []
    for i in sorted(by_index):
        for f in sorted(by_index[i], key=lambda p: (p.parent.parent.name, p.name)):
            data = _load_json(f, "worker response")
            answers = data.get("answers") if isinstance(data, dict) else None
            if not isinstance(answers, list):
                raise ValueError(f"{f}: no 'answers' list")
            for a, ans in enumerate(answers):
                try:
                    worker = str(ans["workerId"])
                    label = ans["answerContent"]["crowd-image-classifier"]["label"]
                except (KeyError, TypeError):
                    raise ValueError(f"{f}: answer {a} lacks workerId or "
                                     "answerContent.crowd-image-classifier.label") from None
                if label not in level:
                    raise ValueError(f"{f}: answer {a}: unknown label {label!r}; the labels in "
                                     f"{labels_path} are {list(names)}")
                rows.append((worker, stems[i], question, level[label]))
    return _votes_frame(rows), scale


def read_votes_csv(path: str | os.PathLike,
                   scales: Mapping[str, Scale] | None = None) -> pd.DataFrame:
    """Votes from a CSV with one vote per row.

    Ids are read as strings (``'0001'`` stays ``'0001'``).

    Parameters
    ----------
    path : str or os.PathLike
        CSV with columns ``annotator, item_id, question, value``; optional ``vote_id`` and
        ``time`` (UNIX seconds) columns are kept.
    scales : mapping of str to Scale, optional
        Each question's scale: ``value`` may then also be a level name, and must lie in
        0..K-1.

    Returns
    -------
    pandas.DataFrame
        The votes, ``value`` as the 0-based level index (int64).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        Naming the CSV line: for a missing column, an empty id, a question without a
        scale, a value that is not a non-negative integer (or a level name), or a level
        outside the scale.

    Examples
    --------
    >>> import tempfile
    >>> from facebias.annotate.scales import Scale
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "v.csv").write_text(
    ...         "annotator,item_id,question,value\\nw1,0001,smile,Smile\\nw2,0001,smile,0\\n")
    ...     read_votes_csv(Path(d, "v.csv"), {"smile": Scale("smile", ("Frown", "Neutral", "Smile"))})
      annotator item_id question  value
    0        w1    0001    smile      2
    1        w2    0001    smile      0
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"votes CSV not found: {p}")
    df = pd.read_csv(p, dtype={"annotator": str, "item_id": str, "question": str,
                               "value": str, "vote_id": str}, keep_default_na=False,
                     na_values={"time": [""]})
    require_columns(df, VOTE_FRAME_COLUMNS, str(p))
    values = np.empty(len(df), dtype=np.int64)
    for i, (ann, item, q, v) in enumerate(df[VOTE_FRAME_COLUMNS].itertuples(index=False)):
        where = f"{p}: line {i + 2}"
        for name, x in (("annotator", ann), ("item_id", item), ("question", q)):
            if not str(x).strip():
                raise ValueError(f"{where}: empty {name}")
        sc = None
        if scales is not None:
            if q not in scales:
                raise ValueError(f"{where}: question {q!r} has no scale; known {sorted(scales)}")
            sc = scales[q]
        s = str(v).strip()
        if re.fullmatch(r"\d+", s):
            level = int(s)
        elif sc is not None and s in sc.levels:
            level = sc.index(s)
        else:
            raise ValueError(f"{where}: value {v!r} is not a non-negative integer level"
                             + (f" or a level name of {sc.name!r}" if sc is not None else ""))
        if sc is not None and level >= sc.k:
            raise ValueError(f"{where}: value {level} outside the scale {sc.name!r} "
                             f"(levels 0..{sc.k - 1})")
        values[i] = level
    out = df.assign(value=values)
    if "time" in out.columns:
        out["time"] = pd.to_numeric(out["time"], errors="raise").astype(float)
    return out.astype({"annotator": str, "item_id": str, "question": str})


#: The only globals an annotations.pickle may name: what numpy needs to rebuild arrays and
#: scalars (numpy 1.x and 2.x module paths). Anything else is refused, so no code runs.
_PICKLE_GLOBALS = {
    (mod, name)
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.numeric", "_frombuffer"),
     ("numpy._core.numeric", "_frombuffer"), ("collections", "OrderedDict"),
     ("_codecs", "encode")}  # protocol <= 2 stores array bytes as latin-1 text


class _DataOnlyUnpickler(pickle.Unpickler):
    """Unpickles plain containers and numpy arrays; any other global raises."""

    def find_class(self, module: str, name: str):  # noqa: ANN201 - pickle protocol
        if (module, name) in _PICKLE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only data is allowed)")


def read_transects_pkl(path: str | os.PathLike) -> pd.DataFrame:
    """Votes from the Transects authors' processed ``annotations.pkl``.

    The pickle is read by a restricted unpickler that admits only containers and numpy
    arrays, so a crafted file cannot run code.

    Parameters
    ----------
    path : str or os.PathLike
        A pickled dict with ``attributes`` (names), ``responses`` (per attribute an int
        array (N_images, n) of level indices) and ``attribute_levels`` (per attribute the
        level names).

    Returns
    -------
    pandas.DataFrame
        The votes: item_id = image index zero padded to 4 digits (``'0000'``, the
        SageMaker file stem); annotator = ``'slot<j>'`` for response column j (the file
        keeps no worker ids, so it is a vote slot, not a person); question = attribute
        with ``-`` -> ``_``; value = level index (int64). The scales are in
        ``votes.attrs['scales']``.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        For an unreadable or non-data pickle, a missing key, lists of different lengths,
        or responses that are not 2-D integer levels of their scale.

    Examples
    --------
    >>> import pickle, tempfile
    >>> data = {"attributes": ["skin-color"], "responses": [np.array([[0, 2], [1, 1]])],
    ...         "attribute_levels": [["light", "medium", "dark"]]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "a.pkl").write_bytes(pickle.dumps(data))
    ...     votes = read_transects_pkl(Path(d, "a.pkl"))
    >>> votes
      annotator item_id    question  value
    0     slot0    0000  skin_color      0
    1     slot1    0000  skin_color      2
    2     slot0    0001  skin_color      1
    3     slot1    0001  skin_color      1
    >>> votes.attrs["scales"]["skin_color"].k
    3
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"annotations pickle not found: {p}")
    with open(p, "rb") as fh:
        try:
            data = _DataOnlyUnpickler(fh).load()
        except Exception as e:  # noqa: BLE001 - any unpickling failure is a bad file
            raise ValueError(f"{p}: not a readable pickle ({type(e).__name__}: {e})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{p}: expected a dict, got {type(data).__name__}")
    for key in ("attributes", "responses", "attribute_levels"):
        if key not in data:
            raise ValueError(f"{p}: key {key!r} missing; keys are {sorted(map(str, data))}")
    attrs, resp, levels = data["attributes"], data["responses"], data["attribute_levels"]
    if not len(attrs) == len(resp) == len(levels):
        raise ValueError(f"{p}: attributes ({len(attrs)}), responses ({len(resp)}) and "
                         f"attribute_levels ({len(levels)}) differ in length")
    frames, scales = [], {}
    for attr, r, names in zip(attrs, resp, levels, strict=True):
        q = question_name(str(attr))
        sc = Scale(q, tuple(str(x) for x in names))
        m = np.asarray(r)
        if m.ndim != 2 or not np.issubdtype(m.dtype, np.number):
            raise ValueError(f"{p}: responses for {attr!r} must be a 2-D numeric array, "
                             f"got shape {m.shape}")
        if m.size and (not np.all(m == np.round(m)) or m.min() < 0 or m.max() >= sc.k):
            raise ValueError(f"{p}: responses for {attr!r} must be integer levels 0..{sc.k - 1}")
        n_img, n = m.shape
        frames.append(pd.DataFrame({
            "annotator": np.tile([f"slot{j}" for j in range(n)], n_img),
            "item_id": np.repeat([f"{i:04d}" for i in range(n_img)], n),
            "question": q,
            "value": m.astype(np.int64).ravel(),
        }))
        scales[q] = sc
    out = (pd.concat(frames, ignore_index=True) if frames
           else pd.DataFrame(columns=VOTE_FRAME_COLUMNS))
    out = out.astype({"annotator": str, "item_id": str, "question": str, "value": "int64"})
    out.attrs["scales"] = scales
    return out
