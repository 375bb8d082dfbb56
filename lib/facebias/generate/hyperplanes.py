"""Attribute hyperplanes of any generator, fitted on labels read from the annotation store
(004 A1.4-A1.5, 000 B1.2).

The fit set ``D_z``: ``n`` latents are sampled, registered in an
:class:`~facebias.annotate.AnnotationStore` as items ``dz_00000``, ``dz_00001``, ... and
labelled there by one of three kinds of annotator, which all write the same store:

* ``"panel"``: the simulated annotator panel (:mod:`facebias.annotate.simulate`); its
  perception derives from the generator's truth, so only a backend with ``truth()`` (the
  procedural renderer) can use it. Votes are stored with source ``'simulated'``;
* ``"machine"``: machine annotators, real offline models that measure renders
  (:mod:`facebias.annotate.machine`); stored as machine labels (source ``'machine'``);
* ``"store"``: nothing is collected; the labels already in the store are used (human votes
  from the annotation UI, an imported release, or machine labels of an earlier run).

The machine and store kinds mix: machine annotators label the renders for the attributes
that name a ``labeller`` (written to a working store) while the vote questions are read
from another, read-only store of people's votes (``read_labels(..., votes=)``;
:func:`facebias.generate.build.fit_attribute_hyperplanes` with ``labels: machine`` and a
``label_store``).

Each hyperplane names where its labels come from (:class:`AttributeLabel`: a vote
``question`` aggregated per item with the trimmed mean on its scale, or a machine
``labeller``'s value). One linear model per attribute is fitted on the latents that have a
label (ridge on a continuous label, a linear SVM on a binarised one); items without a label
(no votes, or a model that found no face) are counted, never imputed. The generator's truth
is never read here except by the simulated panel, which stands in for people.

Decision values are signed Euclidean distances to the neutral hyperplane along the unit
normal; for z ~ N(0, I) they are in latent SD units. Beside each hyperplane a ridge
*predictor* of the (transformed) label is kept, ``pred_w @ z + pred_b``, which calibrates
000's attribute sequences to a target score without the truth.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias import latent

__all__ = ["AttributeLabel", "Hyperplanes", "PANEL_ATTRIBUTES", "MACHINE_ATTRIBUTES", "RACE_SCALES",
           "dz_item_ids", "register_dz", "label_with_panel", "label_with_machines", "read_labels",
           "vote_sources", "fit_from_labels", "LABEL_SOURCES"]

LABEL_SOURCES = ("panel", "machine", "store")
TRANSFORMS = ("none", "rank")


@dataclass(frozen=True)
class AttributeLabel:
    """Where one hyperplane's labels come from and how it is fitted.

    Exactly one of ``question`` (a vote question in the store; per-item score in [0, 1] =
    trimmed mean of the votes on its scale) or ``labeller`` (a machine labeller's value, in
    its own unit). The label is ``sign * value``, then ``transform``: ``"none"`` or
    ``"rank"`` (mid-rank percentile within the labelled ``D_z``, so 0.5 = the median; makes
    units such as degrees or years comparable). ``kind``: ``"ridge"`` (neutral level
    ``tau``, in transformed units) or ``"svm"`` (positive iff label >= ``threshold``).
    """

    name: str
    question: str | None = None
    labeller: str | None = None
    kind: str = "ridge"
    transform: str = "none"
    sign: float = 1.0
    tau: float = 0.5
    threshold: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"attribute name must be a non-empty string, got {self.name!r}")
        if (self.question is None) == (self.labeller is None):
            raise ValueError(f"attribute {self.name!r}: give exactly one of question= or labeller=")
        if self.kind not in latent.KINDS:
            raise ValueError(f"attribute {self.name!r}: kind must be one of {latent.KINDS}, got {self.kind!r}")
        if self.transform not in TRANSFORMS:
            raise ValueError(f"attribute {self.name!r}: transform must be one of {TRANSFORMS}, "
                             f"got {self.transform!r}")
        if self.sign not in (1, -1, 1.0, -1.0):
            raise ValueError(f"attribute {self.name!r}: sign must be +1 or -1, got {self.sign!r}")

    @classmethod
    def from_mapping(cls, name: str, spec: Mapping[str, Any]) -> AttributeLabel:
        """From a ``params.yaml`` entry (``generate.attributes.<name>``)."""
        unknown = sorted(set(spec) - {"question", "labeller", "kind", "transform", "sign", "tau", "threshold"})
        if unknown:
            raise ValueError(f"generate.attributes.{name}: unknown key(s) {unknown}")
        return cls(name=name, **dict(spec))

    @property
    def source(self) -> str:
        return f"votes on {self.question!r}" if self.question is not None else f"machine labeller {self.labeller!r}"


def _panel(name: str, question: str | None = None, kind: str = "ridge") -> AttributeLabel:
    return AttributeLabel(name, question=question or name, kind=kind)


#: The simulated panel's answers (004's survey questions, :data:`~facebias.annotate.SCALES_TRANSECTS`)
#: and 000's race one-vs-all questions (:data:`RACE_SCALES`): the procedural study.
PANEL_ATTRIBUTES: tuple[AttributeLabel, ...] = (
    _panel("gender"), _panel("skin_tone", "skin_color"), _panel("hair_length"), _panel("age"),
    _panel("facial_hair", kind="svm"), _panel("makeup", kind="svm"), _panel("smile", kind="svm"),
    _panel("race_White", kind="svm"), _panel("race_Black", kind="svm"),
    _panel("race_East Asian", kind="svm"),
)

#: Machine annotators on renders (:mod:`facebias.annotate.machine`): a generator without truth.
#: ``face_darkness`` is -ITA of the face-skin pixels (higher = darker or less yellow). It is
#: *not* called skin tone: on the DCGAN no direction fitted on it passes the skin-axis gate
#: (:mod:`facebias.studies.synthetic_faces.skin_axis`; the notebook ``synthetic_faces_dcgan.py`` prints the gate), so it
#: is named for what it measurably changes, the face's darkness. ``background``, ``exposure``
#: and ``white_balance`` (border L*, image L*, image b*) are what a skin direction must not
#: move: the transects and prototypes hold them (:func:`facebias.generate.build.held_attributes`).
#: ``yaw`` and ``light`` keep their units (degrees, L* asymmetry) with neutral level 0 =
#: frontal / even.
MACHINE_ATTRIBUTES: tuple[AttributeLabel, ...] = (
    AttributeLabel("gender", labeller="p_male"),
    AttributeLabel("face_darkness", labeller="ita", sign=-1.0, transform="rank"),
    AttributeLabel("age", labeller="age_years", transform="rank"),
    AttributeLabel("smile", labeller="smile", transform="rank"),
    AttributeLabel("luminance", labeller="face_luminance", transform="rank"),
    AttributeLabel("yaw", labeller="yaw_deg", tau=0.0),
    AttributeLabel("light", labeller="light_asymmetry", tau=0.0),
    AttributeLabel("background", labeller="border_luminance", transform="rank"),
    AttributeLabel("exposure", labeller="image_luminance", transform="rank"),
    AttributeLabel("white_balance", labeller="image_b_star", transform="rank"),
)


def _race_scales() -> dict[str, Any]:
    from facebias.annotate.scales import Scale

    return {f"race_{r}": Scale(f"race_{r}", ("No", "Yes")) for r in ("White", "Black", "East Asian")}


#: 000's race questions as one-vs-all yes/no scales ("does this face look <race>?"), the
#: labels its three race SVMs need (the paper used a FairFace classifier; none runs offline).
RACE_SCALES = _race_scales()


# --------------------------------------------------------------------------- fitted planes
@dataclass(frozen=True)
class Hyperplanes:
    """Named hyperplanes: decision value of z for row k is ``normals[k] @ z + offsets[k]``.

    ``pred_w`` / ``pred_b`` (optional): the ridge predictor of each attribute's
    (transformed) label, ``pred_w[k] @ z + pred_b[k]``; ``sources``: where each label came
    from; ``n_labelled``: latents with a label; ``scores``: training R^2 (ridge) or
    accuracy (svm) of each hyperplane.
    """

    names: tuple[str, ...]
    normals: np.ndarray  # (K, D), unit rows
    offsets: np.ndarray  # (K,)
    sources: Mapping[str, str] = field(default_factory=dict)
    n_labelled: Mapping[str, int] = field(default_factory=dict)
    pred_w: np.ndarray | None = None  # (K, D)
    pred_b: np.ndarray | None = None  # (K,)
    scores: Mapping[str, float] = field(default_factory=dict)

    def select(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        missing = [n for n in names if n not in self.names]
        if missing:
            raise ValueError(f"no hyperplane named {missing}; have {list(self.names)}")
        idx = [self.names.index(n) for n in names]
        return self.normals[idx], self.offsets[idx]

    def values(self, z: np.ndarray) -> pd.DataFrame:
        """Decision values of latents ``z`` (n, D), one column per hyperplane."""
        return pd.DataFrame(np.atleast_2d(z) @ self.normals.T + self.offsets, columns=list(self.names))

    def predict(self, z: np.ndarray, name: str) -> np.ndarray:
        """The ridge prediction of attribute ``name``'s label for latents ``z`` (n, D)."""
        if self.pred_w is None or self.pred_b is None:
            raise ValueError("these hyperplanes carry no label predictors (fit them with fit_from_labels)")
        if name not in self.names:
            raise ValueError(f"no hyperplane named {name!r}; have {list(self.names)}")
        k = self.names.index(name)
        return np.atleast_2d(z) @ self.pred_w[k] + self.pred_b[k]

    def save(self, path: str | os.PathLike) -> None:
        """Write to ``path`` (``.npz``; atomically)."""
        import json

        from facebias.io import atomic_path

        arrays: dict[str, Any] = {"names": np.array(self.names), "normals": self.normals, "offsets": self.offsets,
                                  "meta": np.array(json.dumps({"sources": dict(self.sources),
                                                               "n_labelled": dict(self.n_labelled),
                                                               "scores": dict(self.scores)}))}
        if self.pred_w is not None:
            arrays.update(pred_w=self.pred_w, pred_b=self.pred_b)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Hyperplanes:
        """Read what :meth:`save` wrote (also the older files with names/normals/offsets only)."""
        import json

        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["meta"])) if "meta" in f else {}
            return cls(tuple(str(n) for n in f["names"]), f["normals"], f["offsets"],
                       meta.get("sources", {}), meta.get("n_labelled", {}),
                       f["pred_w"] if "pred_w" in f else None, f["pred_b"] if "pred_b" in f else None,
                       meta.get("scores", {}))


# --------------------------------------------------------------------------- collecting labels
def dz_item_ids(n: int) -> list[str]:
    """Store item ids of the fit set's latents: ``dz_00000`` ..."""
    return [f"dz_{i:05d}" for i in range(int(n))]


def register_dz(store: Any, n: int, image_dir: str | os.PathLike | None = None) -> list[str]:
    """Register ``n`` fit-set items (with their image paths ``image_dir/dz_#####.png`` if
    given) in ``store``; idempotent. Returns the item ids."""
    ids = dz_item_ids(n)
    images = [str(Path(image_dir) / f"{i}.png") for i in ids] if image_dir is not None else [None] * n
    store.register_items(ids, image=images)
    return ids


def label_with_panel(store: Any, gen: Any, z: np.ndarray, attributes: Sequence[AttributeLabel],
                     panel: Any = None, n_votes: int = 5) -> int:
    """Simulated panel votes on the fit set (items must be registered): ``n_votes`` per
    item and question for every vote question of ``attributes`` not yet in the store.
    Perception derives from ``gen.truth`` (the panel stands in for people), so a backend
    without truth raises ``ValueError``. Returns the number of votes stored."""
    from facebias.annotate.scales import SCALES_TRANSECTS
    from facebias.annotate.simulate import (
        ATTR_MAP_TRANSECTS,
        Panel,
        realism_truth,
        simulate_image_votes,
    )

    if not hasattr(gen, "truth"):
        raise ValueError(f"backend {getattr(gen, 'name', gen)!r} has no truth() for the simulated panel to "
                         "perceive; label its renders with machine annotators or human votes instead")
    scales = {**SCALES_TRANSECTS, **RACE_SCALES}
    questions = [a.question for a in attributes if a.question is not None]
    unknown = [q for q in questions if q not in scales]
    if unknown:
        raise ValueError(f"the simulated panel answers {sorted(scales)}; no scale for {unknown}")
    done = set(store.votes(source="simulated")["question"].unique()) if store.n_votes else set()
    todo = [q for q in dict.fromkeys(questions) if q not in done]
    if not todo:
        return 0
    ids = dz_item_ids(len(z))
    truth = gen.truth(z).add_prefix("true_").assign(item_id=ids, true_uncanny=realism_truth(z))
    attr_map = {q: ATTR_MAP_TRANSECTS.get(q, f"true_{q}") for q in todo}
    votes = simulate_image_votes(truth, scales, n_votes, panel or Panel(), attr_map)
    return store.add_votes(votes, {q: scales[q] for q in todo}, source="simulated", chunk_size=len(votes))


def label_with_machines(store: Any, images: Sequence[np.ndarray] | None, item_ids: Sequence[str],
                        labellers: Sequence[str], render: Any = None) -> dict[str, int]:
    """Machine labels of the fit set for each of ``labellers`` (names in
    :data:`facebias.annotate.machine.MACHINE_ANNOTATORS`), only for items the store does
    not already hold for that labeller (so an interrupted run resumes). ``images`` are the
    renders of ``item_ids``, or ``render(indices) -> images`` renders the missing ones on
    demand. Returns labels stored per labeller."""
    from facebias.annotate.machine import MACHINE_ANNOTATORS, label_images

    unknown = [n for n in labellers if n not in MACHINE_ANNOTATORS]
    if unknown:
        raise ValueError(f"unknown machine labeller(s) {unknown}; registered: {sorted(MACHINE_ANNOTATORS)}")
    ids = list(item_ids)
    have = store.labels()
    done = {n: set(have.loc[have["labeller"] == n, "item_id"]) for n in labellers}
    missing = {n: [i for i, item in enumerate(ids) if item not in done[n]] for n in labellers}
    need = sorted(set().union(*missing.values())) if missing else []
    if not need:
        return dict.fromkeys(labellers, 0)
    imgs = [images[i] for i in need] if images is not None else list(render(need))
    names = [n for n in labellers if missing[n]]
    table = label_images(imgs, names)
    stored = dict.fromkeys(labellers, 0)
    pos = {i: k for k, i in enumerate(need)}
    for n in names:
        ann = MACHINE_ANNOTATORS[n]
        rows = [pos[i] for i in missing[n]]
        frame = pd.DataFrame({"item_id": [ids[i] for i in missing[n]],
                              "value": table[n].to_numpy(float)[rows]})
        stored[n] = store.add_labels(frame, n, ann.attribute, ann.unit, ann.description)
    return stored


# --------------------------------------------------------------------------- reading labels
def _vote_scores(store: Any, question: str, item_ids: Sequence[str]) -> tuple[np.ndarray, int]:
    """Per-item trimmed-mean score in [0, 1] of ``question`` (NaN = no votes) and the
    median number of votes per voted item."""
    from facebias.annotate.aggregate import score, votes_matrix

    votes = store.votes(question=question)
    out = np.full(len(item_ids), np.nan)
    if votes.empty:
        return out, 0
    k = int(votes["k"].iloc[0])
    ids, mat = votes_matrix(votes, question)
    s = pd.Series(score(mat, k, allow_missing=True), index=ids)
    out = s.reindex(list(item_ids)).to_numpy(float)
    return out, int(np.median(np.isfinite(mat).sum(axis=1)))


def read_labels(store: Any, item_ids: Sequence[str], attributes: Sequence[AttributeLabel],
                votes: Any = None) -> pd.DataFrame:
    """One column per attribute (its signed, untransformed label), one row per item of
    ``item_ids`` (index), NaN where the store holds no label (or the model failed).
    ``votes``: another store to read the vote questions from (machine labels still come
    from ``store``); default ``store``."""
    cols: dict[str, np.ndarray] = {}
    for a in attributes:
        if a.question is not None:
            values, _ = _vote_scores(store if votes is None else votes, a.question, item_ids)
        else:
            lab = store.labels(labeller=a.labeller)
            values = lab.set_index("item_id")["value"].reindex(list(item_ids)).to_numpy(float)
        cols[a.name] = a.sign * values
    return pd.DataFrame(cols, index=pd.Index(list(item_ids), name="item_id"))


def vote_sources(store: Any, attributes: Sequence[AttributeLabel]) -> dict[str, list[str]]:
    """For each attribute with a vote ``question``: the sources of its votes in ``store``
    (``'human'``, ``'simulated'``, ``'imported'``; sorted, empty if it has none)."""
    return {a.name: sorted(set(store.votes(question=a.question)["source"]))
            for a in attributes if a.question is not None}


def _transform(y: np.ndarray, how: str) -> np.ndarray:
    if how == "rank":
        from scipy.stats import rankdata

        return (rankdata(y) - 0.5) / y.size
    return y


# --------------------------------------------------------------------------- fitting
def fit_from_labels(z: np.ndarray, labels: pd.DataFrame, attributes: Sequence[AttributeLabel],
                    min_labelled: int = 20, sources: Mapping[str, str] | None = None) -> Hyperplanes:
    """One hyperplane per attribute from latents ``z`` (n, D) and ``labels`` (row i belongs
    to ``z[i]``; a column per attribute, from :func:`read_labels`). Rows with a NaN label
    are left out of that attribute's fit and counted; fewer than ``min_labelled`` labelled
    rows raises ``ValueError``. ``sources`` overrides the recorded source of a label."""
    x = np.asarray(z, dtype=np.float64)
    if x.ndim != 2 or len(labels) != x.shape[0]:
        raise ValueError(f"labels: {len(labels)} rows for latents of shape {x.shape}")
    if not attributes:
        raise ValueError("attributes: nothing to fit")
    names, normals, offsets, pw, pb = [], [], [], [], []
    src, n_lab, scores = {}, {}, {}
    for a in attributes:
        if a.name not in labels.columns:
            raise ValueError(f"labels: no column {a.name!r} (have {list(labels.columns)})")
        y = labels[a.name].to_numpy(float)
        ok = np.isfinite(y)
        if ok.sum() < min_labelled:
            raise ValueError(f"attribute {a.name!r}: only {int(ok.sum())} of {len(y)} latents have a label "
                             f"({a.source}); at least {min_labelled} are needed")
        yt = _transform(y[ok], a.transform)
        try:
            h = latent.fit_hyperplane(x[ok], yt, kind=a.kind, tau=a.tau, threshold=a.threshold)
        except ValueError as exc:
            raise ValueError(f"attribute {a.name!r} ({a.source}): {exc}") from exc
        pred = h if a.kind == "ridge" else latent.fit_hyperplane(x[ok], yt, kind="ridge", tau=a.tau)
        names.append(a.name)
        normals.append(h.normal)
        offsets.append(h.offset)
        pw.append(pred.raw_weight)
        pb.append(pred.raw_intercept)
        src[a.name] = (sources or {}).get(a.name, a.source)
        n_lab[a.name] = int(ok.sum())
        scores[a.name] = float(h.score)
    return Hyperplanes(tuple(names), np.vstack(normals), np.asarray(offsets, float), src, n_lab,
                       np.vstack(pw), np.asarray(pb, float), scores)
