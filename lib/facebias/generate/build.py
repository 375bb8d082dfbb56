"""The synthetic data products of papers 004 and 000, planned in latent space and rendered.

Any backend of the :class:`~facebias.generate.Generator` protocol runs it; a backend's
ground truth (``truth()``, the procedural renderer's) only *checks* results.

* **Hyperplanes** (004 A1.4, 000 B1.2; :mod:`facebias.generate.hyperplanes`): a fit set
  ``D_z`` of sampled latents is labelled through the annotation store (the simulated panel
  on the procedural backend, machine annotators on renders of any backend, or human votes)
  and one linear model per attribute is fitted on those labels.
* **Transects** (004 Alg. 1): K-D grids of decision values from each seed's projection. On
  a backend without truth (the DCGAN) every machine annotator reads each transect render
  once, here (``transects/readings.parquet``, keyed by the pixels: :func:`transect_readings`),
  so the notebooks that analyse the transects do not label them again.
* **HCIC set** (000): demographic prototypes per seed (6 race x gender prototypes from race
  one-vs-all hyperplanes, or 4 lighter / darker x gender prototypes on a ``tone_axis``
  where no race labeller exists), 000's human seed filter on the candidates (simulated panel, through the store;
  :mod:`facebias.annotate.seed_filter`), max-min seed selection on face-mesh geometry, 4
  attribute sequences of 5 per prototype (pose, light: the renderer's controls or learned
  latent directions; age, expression: calibrated on the fitted label predictors) and the
  positive/negative pairs.

Planning functions are pure (latents and tables); :func:`render_products` and
:func:`write_products` are the I/O edge. Decision values are signed Euclidean distances
in latent space (unit normals, 004 A1.5); for z ~ N(0, I) they are in SD units.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias import latent
from facebias.config import Section, integer, number, optional, param, text
from facebias.generate import Generator, as_lights, plan
from facebias.generate.hyperplanes import (
    MACHINE_ATTRIBUTES,
    PANEL_ATTRIBUTES,
    AttributeLabel,
    Hyperplanes,
    dz_item_ids,
    fit_from_labels,
    label_with_machines,
    label_with_panel,
    read_labels,
    register_dz,
    vote_sources,
)
from facebias.io import atomic_path, write_json_atomic

__all__ = [
    "SynthConfig",
    "Hyperplanes",
    "fit_attribute_hyperplanes",
    "plan_transects",
    "plan_hcic",
    "group_table",
    "render_products",
    "write_products",
    "GROUPS",
    "TONE_GROUPS",
    "held_attributes",
    "TRANSECT_READINGS",
    "READINGS_KEY",
    "READINGS_MIN_SIZE",
    "image_key",
    "label_transect_images",
    "transect_readings",
]

#: 000's six groups: race initial + gender initial; race names as in the generator.
GROUPS: dict[str, tuple[str, str]] = {
    "WM": ("White", "male"), "WF": ("White", "female"),
    "BM": ("Black", "male"), "BF": ("Black", "female"),
    "AM": ("East Asian", "male"), "AF": ("East Asian", "female"),
}
#: Where no race labeller exists (the GAN): the lighter / darker side of the ``tone_axis``
#: hyperplane (on the DCGAN: face darkness, -ITA; not validated as skin tone) x gender.
TONE_GROUPS: dict[str, tuple[str, str]] = {
    "LM": ("lighter", "male"), "LF": ("lighter", "female"),
    "DM": ("darker", "male"), "DF": ("darker", "female"),
}
#: The 004 attributes of the procedural study (the panel's survey), in hyperplane order.
ATTRIBUTE_KINDS: dict[str, str] = {a.name: a.kind for a in PANEL_ATTRIBUTES if not a.name.startswith("race_")}
LABEL_MODES = ("auto", "panel", "machine", "store")


#: Size presets (``generate.scale``); ``paper`` is 004's 1,000 2x2x2 transects on a 5,000-latent
#: D_z and 000's 1,000 candidate seeds -> 300 kept by the seed filter -> 100 by max-min -> 600
#: prototypes -> 10,200 images (``default``: 200 -> 60 -> 20, the paper's two ratios; ``smoke``: 6 -> 2 -> 2).
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"n_fit": 600, "n_transects": 2, "n_candidates": 6, "n_seeds": 2, "n_negative": 1},
    "default": {"n_fit": 2000, "n_transects": 100, "n_candidates": 200, "n_seeds": 20, "n_negative": 3},
    "paper": {"n_fit": 5000, "n_transects": 1000, "n_candidates": 1000, "n_seeds": 100, "n_negative": 3},
}


def _axes(value: Any, name: str) -> Any:
    """Transect axes: a mapping attribute -> one or more decision values (kept as given)."""
    for axis, c in value.items():
        if len(c) < 1:
            raise ValueError(f"{name}: {axis!r} needs >= 1 value")
    return value


@dataclass(frozen=True)
class SynthConfig(Section):
    """Parameters of the synthetic products (``params.yaml`` section ``generate``, or
    ``generate_dcgan`` for the GAN study).

    ``scale`` picks a preset for the sizes (:data:`SCALES`: ``smoke`` for tests,
    ``default``, ``paper`` = 1,000 transects and 100 seeds x 6 prototypes x 17 images =
    10,200 images); a size key given explicitly overrides its preset value.

    Labels of the fit set (``labels``): ``panel`` (vote questions answered by the simulated
    panel, which needs a backend with truth), ``machine`` (no panel), ``store`` (nothing
    collected: votes or labels already in ``label_store``), ``auto`` = panel where the
    backend has truth, else machine. Attributes with a machine ``labeller`` are labelled by
    it on frontal renders in every mode but ``store``.

    ``machine`` mixes with votes people gave: attributes that name a ``labeller`` are
    labelled by machine annotators (written to the run's working store, a temporary one by
    default), attributes that name a vote ``question`` (e.g. 000's ``race_*``, see
    :data:`~facebias.generate.hyperplanes.RACE_SCALES`) are read from the votes on the
    ``dz_*`` items in ``label_store``, which is opened read-only and never written (it is
    people's data). A question attribute in ``machine`` mode without a ``label_store``, or a
    ``label_store`` that does not exist, is a ``ValueError``; without question attributes
    ``label_store`` is not read.
    ``attributes`` maps each hyperplane to its label source and fit
    (:class:`~facebias.generate.hyperplanes.AttributeLabel` fields); default
    :data:`~facebias.generate.hyperplanes.PANEL_ATTRIBUTES` for the panel, else
    :data:`~facebias.generate.hyperplanes.MACHINE_ATTRIBUTES`.
    """

    section = "generate"
    scale: str = param("default", text(*SCALES))
    backend: str = "procedural"
    size: int = param(128, integer(1))  # procedural render size in pixels
    world_seed: int = 0  # the procedural generator's fixed world (mesh basis, attribute directions)
    generator: Mapping[str, Any] = field(default_factory=dict)  # other backends' constructor arguments
    seed: int = 0  # sampling of D_z, transect seeds and prototype seeds
    n_fit: int | None = param(None, optional(integer(1)))  # size of D_z for the hyperplanes (paper 004: 5,000); None: from scale
    labels: str = param("auto", text(*LABEL_MODES))
    # an annotation store with votes/labels on the dz_* items: labels="store" reads (and registers
    # the items in) it; labels="machine" reads only the vote questions' votes from it, read-only
    label_store: str | None = None
    attributes: Mapping[str, Mapping[str, Any]] | None = None
    n_votes: int = param(5, integer(1))  # simulated panel votes per fit-set image and question (004: 5)
    min_labelled: int = 20
    # 004: K-D transects, c values in decision units per axis (two values = 2x2x2 grid)
    n_transects: int | None = param(None, optional(integer(1)))  # (default 100, paper 1,000); None: from scale
    transect_axes: Mapping[str, Sequence[float]] = param(factory=lambda: {
        "skin_tone": (-1.5, 1.7), "hair_length": (-1.5, 1.0), "gender": (-1.75, 1.75)}, check=_axes)
    # hyperplanes the transects and tone prototypes let follow the axes (held_attributes)
    transect_follow: Sequence[str] = ()
    # 000: prototypes, sequences, pairs
    groups: str = param("auto", text("auto", "race_gender", "tone_gender"))  # race_gender (race hyperplanes), tone_gender, auto: race_gender if present
    tone_axis: str = "skin_tone"  # tone_gender: the hyperplane whose two sides are the L / D groups
    sequences: str = param("auto", text("auto", "render", "latent"))  # pose/light: render (yaw=/light= of the backend), latent (learned directions)
    latent_step: float = 1.5  # latent sequences: decision-value distance of the outermost level
    seed_features: str = param("mesh", text("mesh", "latent"))  # max-min seed selection on face meshes of renders, or "latent"
    n_candidates: int | None = param(None, optional(integer(1)))  # candidate seeds rendered (default 200, paper 1,000)
    # 000's human seed filter before max-min (simulated panel, through a temporary store): the
    # share of candidates kept (paper 300 / 1,000), at least n_seeds (see n_kept_by_filter)
    seed_filter_keep: float = param(0.3, number(0, 1, open_low=True))
    seed_filter_votes: int = param(9, integer(1))  # panel votes per candidate prototype and question
    n_seeds: int | None = param(None, optional(integer(1)))  # seeds kept by max-min (default 20, paper 100)
    c_gender: float = 1.75
    c_race: float = 1.5
    age_target: float = 0.8
    expression_target: float = 0.9
    sequence_step: float = 0.05
    sequence_n: int = 2
    max_distance: float = 6.0
    n_negative: int | None = None  # negatives per prototype (default 3)
    batch_size: int = param(64, integer(1))

    def check(self) -> None:
        for key, value in SCALES[self.scale].items():  # sizes not given come from the preset
            if getattr(self, key) is None:
                self._set(key, value)
        if self.labels == "store" and not self.label_store:
            raise ValueError("generate.labels: 'store' needs generate.label_store (the annotation store's path)")
        if self.labels == "machine":
            _check_vote_store(self, self.attribute_labels("machine"))
        if self.n_seeds > self.n_candidates:
            raise ValueError(f"generate: n_seeds ({self.n_seeds}) > n_candidates ({self.n_candidates})")
        if self.n_negative >= self.n_seeds:
            raise ValueError(f"generate: n_negative ({self.n_negative}) needs at least n_negative + 1 "
                             f"seeds, got n_seeds = {self.n_seeds}")
        names = [a.name for a in self.attribute_labels(self.labels if self.labels != "auto" else "panel")]
        if self.attributes is not None:
            missing = [a for a in self.transect_axes if a not in names]
            if missing:
                raise ValueError(f"generate.transect_axes: {missing} are not among generate.attributes {names}")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SynthConfig:
        """From a ``generate`` section: the ``scale`` preset, then the keys given."""
        given = {k: (dict(v) if k in ("transect_axes", "generator") else
                     ({n: dict(a) for n, a in v.items()} if k == "attributes" and v is not None else v))
                 for k, v in params.items()}
        return super().from_params(given)

    @property
    def n_kept_by_filter(self) -> int:
        """Candidate seeds the seed filter keeps for max-min: ``round(seed_filter_keep *
        n_candidates)``, raised to ``n_seeds`` where that is fewer (then the filter only drops
        the worst ``n_candidates - n_seeds``)."""
        return max(int(self.n_seeds), int(round(float(self.seed_filter_keep) * int(self.n_candidates))))

    def label_mode(self, gen: Any) -> str:
        """``labels`` with ``auto`` resolved for ``gen``."""
        if self.labels != "auto":
            return self.labels
        return "panel" if hasattr(gen, "truth") else "machine"

    def attribute_labels(self, mode: str) -> tuple[AttributeLabel, ...]:
        """The hyperplanes to fit and where their labels come from."""
        if self.attributes is not None:
            return tuple(AttributeLabel.from_mapping(n, a) for n, a in self.attributes.items())
        return PANEL_ATTRIBUTES if mode == "panel" else MACHINE_ATTRIBUTES


def load_backend(cfg: SynthConfig) -> Generator:
    """The generator ``cfg`` names (procedural: ``size`` and ``world_seed``; other backends:
    ``cfg.generator`` as constructor arguments)."""
    from facebias.generate import load_generator

    if cfg.backend == "procedural":
        return load_generator("procedural", **{"size": cfg.size, "seed": cfg.world_seed, **dict(cfg.generator)})
    return load_generator(cfg.backend, **dict(cfg.generator))


def _check_vote_store(cfg: SynthConfig, attrs: Sequence[AttributeLabel]) -> None:
    """Machine mode: the attributes that name a vote question need ``cfg.label_store``."""
    voted = [a.name for a in attrs if a.question is not None]
    if voted and not cfg.label_store:
        raise ValueError(f"generate.attributes: {voted} are labelled by vote questions, which labels "
                         "'machine' reads from generate.label_store (an annotation store with votes on the "
                         "dz_* items); set label_store, or give these attributes a machine labeller")


def _vote_store(cfg: SynthConfig, mode: str) -> Path | None:
    """The store whose votes the vote questions are read from when it is not the store the
    run writes: ``cfg.label_store`` in ``machine`` mode with question attributes (opened
    read-only), else ``None``. Raises ``ValueError`` if it is needed but not set or missing."""
    if mode != "machine":
        return None
    attrs = cfg.attribute_labels(mode)
    _check_vote_store(cfg, attrs)
    if not any(a.question is not None for a in attrs):
        return None
    path = Path(cfg.label_store)
    if not path.is_file():
        raise ValueError(f"generate.label_store: {path} does not exist (the annotation store with the votes "
                         f"on {[a.question for a in attrs if a.question is not None]})")
    return path


def fit_attribute_hyperplanes(gen: Any, cfg: SynthConfig, store_path: str | Path | None = None,
                              image_dir: str | Path | None = None, compute: Any = None,
                              return_labels: bool = False) -> Hyperplanes | tuple[Hyperplanes, pd.DataFrame]:
    """Label the fit set ``D_z`` (``cfg.n_fit`` latents) through an annotation store and fit
    every attribute's hyperplane on those labels (:mod:`facebias.generate.hyperplanes`).

    ``store_path``: the store to write to and read from (``cfg.label_store`` for
    ``labels="store"``; default a temporary one). Labels already there are reused, so an
    interrupted run resumes. In ``machine`` mode the vote questions are read from
    ``cfg.label_store`` instead, read-only (:class:`SynthConfig`); it may not be
    ``store_path``. ``image_dir``: where the fit set's renders are written
    (``dz_#####.png``) when machine annotators or people label them. ``return_labels``:
    also return the per-item label table the planes were fitted on (index ``item_id``).
    """
    hp, labels, _origin = _fit_hyperplanes(gen, cfg, store_path, image_dir, compute)
    return (hp, labels) if return_labels else hp


def _fit_hyperplanes(gen: Any, cfg: SynthConfig, store_path: str | Path | None, image_dir: str | Path | None,
                     compute: Any) -> tuple[Hyperplanes, pd.DataFrame, dict[str, Any]]:
    """:func:`fit_attribute_hyperplanes`, plus where the votes came from: ``label_store``
    (the path of the store read, as configured; ``None`` = the run's own store) and
    ``vote_sources`` (each question attribute's vote sources, e.g. ``['human']``)."""
    from contextlib import nullcontext

    from facebias.annotate import AnnotationStore

    mode = cfg.label_mode(gen)
    attrs = cfg.attribute_labels(mode)
    votes_path = _vote_store(cfg, mode)
    if votes_path is not None and store_path is not None and Path(store_path).resolve() == votes_path.resolve():
        raise ValueError(f"generate.label_store: {votes_path} is read-only in labels 'machine' (people's votes); "
                         "the machine labels need another store_path")
    questions = [a for a in attrs if a.question is not None]
    z = gen.sample(cfg.n_fit, seed=cfg.seed + 1)
    ids = dz_item_ids(len(z))
    if mode == "store":
        store_path = cfg.label_store
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(store_path) if store_path is not None else Path(tmp) / "labels.sqlite"
        if mode == "store" and not path.exists():
            raise ValueError(f"generate.label_store: {path} does not exist")
        people = AnnotationStore(votes_path, read_only=True) if votes_path is not None else nullcontext()
        with people as votes, AnnotationStore(path) as store:
            if votes is not None:  # fail before rendering if the votes cannot fit the planes
                have = read_labels(votes, ids, questions).notna().sum()
                short = {a: int(n) for a, n in have.items() if n < cfg.min_labelled}
                if short:
                    raise ValueError(f"generate.label_store: {votes_path} has votes on too few of the "
                                     f"{len(ids)} fit-set items dz_00000...: {short} (at least "
                                     f"{cfg.min_labelled} each are needed)")
            register_dz(store, len(z), image_dir)
            if mode == "panel" and questions:
                label_with_panel(store, gen, z, attrs, n_votes=cfg.n_votes)
            machines = [a.labeller for a in attrs if a.labeller is not None]
            if mode != "store" and machines:
                images = render(gen, z, _frontal(len(z)), cfg.batch_size, "D_z for the machine annotators", compute)
                if image_dir is not None:
                    write_pngs(Path(image_dir), ids, images)
                label_with_machines(store, images, ids, machines)
            labels = read_labels(store, ids, attrs, votes=votes)
            origin = {"label_store": cfg.label_store if mode == "store" or votes is not None else None,
                      "vote_sources": vote_sources(store if votes is None else votes, questions)}
    hp = fit_from_labels(z, labels, attrs, min_labelled=cfg.min_labelled)
    return hp, labels, origin


def _frontal(n: int) -> pd.DataFrame:
    """Render settings for ``n`` frontal, front-lit images (see :func:`render`)."""
    return pd.DataFrame({"yaw": np.zeros(n), "light": ["front"] * n})


# --------------------------------------------------------------------------- 004 transects
#: A hyperplane this collinear with a transect axis (|cosine of the unit normals|) measures
#: nearly the same thing and is not held fixed on the transects (:func:`plan_transects`).
COLLINEAR_COSINE = 0.8


def held_attributes(hp: Hyperplanes, axes: Sequence[str], follow: Sequence[str] = ()) -> list[str]:
    """The hyperplanes a move along ``axes`` holds at the seed's decision values.

    Every hyperplane that is not an axis (nor a ``race_*`` one-vs-all plane), except

    * one whose normal is nearly collinear with an axis (|cosine| > :data:`COLLINEAR_COSINE`):
      it measures nearly the same thing and follows the axis. On the DCGAN, face luminance and
      face darkness (-ITA) have cosine about -0.93: holding luminance fixed would push the
      darkness step into the little that separates them, a colour cast at constant L*;
    * the ones named in ``follow`` (``generate.transect_follow``): readings that contain the
      axis itself. On the DCGAN's tight 64 px crops the face fills most of the image, so the
      whole-image exposure and white balance darken and shift with the face; holding them
      while the face darkens forces the rest of the image the other way, and the step leaves
      the faces the GAN draws (:mod:`facebias.studies.skin_axis` walks every variant and
      prints what each one moves).

    No pair of the procedural hyperplanes comes near the cosine limit.

    Parameters
    ----------
    hp : Hyperplanes
        The fitted hyperplanes.
    axes : Sequence of str
        The attributes moved.
    follow : Sequence of str, default ()
        Hyperplanes left free to follow the axes (names absent from ``hp`` are ignored).

    Returns
    -------
    list of str
        Hyperplane names in ``hp.names`` order.
    """
    normals, _ = hp.select(list(axes))
    return [n for n in hp.names if n not in axes and n not in follow and not n.startswith("race_")
            and np.abs(normals @ hp.select([n])[0][0]).max() <= COLLINEAR_COSINE]


def plan_transects(gen: Any, hp: Hyperplanes, cfg: SynthConfig) -> tuple[np.ndarray, pd.DataFrame]:
    """``n_transects`` K-D transects (004 Alg. 1, orthogonalised): latents (n, D) and one row
    per image with ``transect``, ``<axis>_idx`` and ``<axis>_c`` (intended decision value).

    The other attributes are held at each seed's value (:func:`held_attributes`: they are
    orthogonalised together with the transect normals and passed as ``fixed``).
    """
    axes = list(cfg.transect_axes)
    grids = [np.asarray(cfg.transect_axes[a], float) for a in axes]
    normals, offsets = hp.select(axes)
    others = held_attributes(hp, axes, cfg.transect_follow)
    fixed = hp.select(others)[0] if others else None
    seeds = gen.sample(cfg.n_transects, seed=cfg.seed + 3)
    shape = tuple(len(g) for g in grids)
    lat, rows = [], []
    for t, z in enumerate(seeds):
        grid = latent.transect(z, normals, offsets, grids, orthogonal=True, fixed=fixed)
        for idx in np.ndindex(*shape):
            lat.append(grid[idx])
            row: dict[str, Any] = {"transect": t}
            for a, i, g in zip(axes, idx, grids, strict=True):
                row[f"{a}_idx"] = i
                row[f"{a}_c"] = float(g[i])
            rows.append(row)
    table = pd.DataFrame(rows)
    table.insert(0, "image_id", [f"tr{t:04d}_" + "".join(str(r[f"{a}_idx"]) for a in axes)
                                 for t, r in zip(table["transect"], rows, strict=True)])
    table["yaw"] = 0.0
    table["light"] = "front"
    return np.asarray(lat), table


# --------------------------------------------------------------------------- 000 HCIC set
#: Attributes that 000's sequences step along; prototypes start at their neutral level.
SEQUENCE_ATTRIBUTES = ("age", "smile")
#: Pose and light along learned directions (backends without yaw/light controls).
LATENT_SEQUENCE_ATTRIBUTES = ("yaw", "light")


def group_kind(hp: Hyperplanes, cfg: SynthConfig) -> str:
    """``race_gender`` (000's six groups; needs the race hyperplanes) or ``tone_gender``."""
    if cfg.groups != "auto":
        return cfg.groups
    return "race_gender" if all(f"race_{r}" in hp.names for r, _ in GROUPS.values()) else "tone_gender"


def group_table(kind: str) -> dict[str, dict[str, str]]:
    """Each group's descriptive columns: ``race``/``gender`` or ``tone``/``gender``."""
    if kind == "race_gender":
        return {g: {"race": r, "gender": s} for g, (r, s) in GROUPS.items()}
    return {g: {"tone": k, "gender": s} for g, (k, s) in TONE_GROUPS.items()}


def sequence_kind(gen: Any, cfg: SynthConfig) -> str:
    """``render`` (the backend's own yaw/light controls) or ``latent`` (learned directions)."""
    if cfg.sequences != "auto":
        return cfg.sequences
    return "render" if getattr(gen, "name", "") == "procedural" else "latent"


def _neutral_attributes(hp: Hyperplanes, seq: str) -> list[str]:
    names = [a for a in SEQUENCE_ATTRIBUTES if a in hp.names]
    if seq == "latent":
        names += list(LATENT_SEQUENCE_ATTRIBUTES)
    return names


def _prototypes(z: np.ndarray, hp: Hyperplanes, cfg: SynthConfig, groups: str = "race_gender",
                seq: str = "render") -> dict[str, np.ndarray]:
    """000's prototypes of seed ``z``. Age and expression (and, for latent sequences, yaw and
    light) are first set to their neutral hyperplanes (decision value 0) and held there, so
    every prototype has room for its age (to 0.8) and expression (to 0.9) sequences; a seed
    that already smiled at 0.94 would otherwise get a sequence of five identical images.
    ``race_gender``: the six race x gender prototypes of 000 (race one-vs-all hyperplanes);
    ``tone_gender``: the 2 x 2 transect cell at ``cfg.tone_axis`` -/+ ``c_race`` and gender
    -/+ ``c_gender`` (:data:`TONE_GROUPS`), with every other hyperplane held as on the
    transects (:func:`held_attributes`)."""
    s_n, s_b = hp.select(_neutral_attributes(hp, seq))
    neutral = latent.project_to_intersection(z, s_n, s_b)
    g_n, g_b = hp.select(["gender"])
    if groups == "race_gender":
        races = {r: tuple(a[0] for a in hp.select([f"race_{r}"])) for r in sorted({r for r, _ in GROUPS.values()})}
        return plan.prototypes(neutral, (g_n[0], g_b[0]), races, c_gender=cfg.c_gender, c_race=cfg.c_race,
                               fixed=s_n)
    axes = [cfg.tone_axis, "gender"]
    normals, offsets = hp.select(axes)
    held = list(dict.fromkeys(_neutral_attributes(hp, seq) + held_attributes(hp, axes, cfg.transect_follow)))
    grid = latent.transect(neutral, normals, offsets, [[-cfg.c_race, cfg.c_race], [-cfg.c_gender, cfg.c_gender]],
                           orthogonal=True, fixed=hp.select(held)[0])
    return {g: grid["LD".index(g[0]), "FM".index(g[1])] for g in TONE_GROUPS}


def select_seeds(candidates: np.ndarray, meshes: np.ndarray, n_select: int,
                 eligible: np.ndarray | None = None) -> list[int]:
    """Max-min selection (000 Supp. Alg. 1) of candidate seeds whose prototypes all gave
    a face mesh; ``meshes`` is (n_candidates, n_groups, F) with NaN rows for failures.
    ``eligible`` (bool, one per candidate; default all) restricts it to, e.g., the seeds the
    seed filter kept."""
    okay = np.isfinite(meshes).all(axis=(1, 2))
    if eligible is not None:
        okay &= np.asarray(eligible, dtype=bool)
    ok = np.flatnonzero(okay)
    if ok.size < n_select:
        raise ValueError(f"only {ok.size} eligible candidate seeds have a face mesh for all {meshes.shape[1]} "
                         f"prototypes; {n_select} wanted (raise n_candidates or seed_filter_keep)")
    picked = plan.maxmin_select(meshes[ok], n_select)
    return [int(ok[i]) for i in picked]


def plan_hcic(gen: Any, hp: Hyperplanes, seeds: np.ndarray, cfg: SynthConfig,
              seed_ids: Sequence[int] | None = None) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame]:
    """Prototypes and sequences of ``seeds`` (n, D): ``(latents, images, slots)``.

    ``images``: one row per distinct image (17 per prototype) with ``image_id, seed,
    group``, the group's columns (:func:`group_table`), ``prototype_id, attribute, level,
    yaw, light, is_prototype``; ``slots``: the 20 sequence slots per prototype
    (``prototype_id, attribute, level, image_id, is_self``), 4 of which are the prototype.
    Pose and light sequences use the backend's yaw/light controls (``render``: 000's
    -30..30 degrees and four lights) or step along the orthogonalised ``yaw`` / ``light``
    directions (``latent``: levels at -/+ ``latent_step`` and half of it). Age and
    expression step along their orthogonalised directions until the fitted label predictor
    reaches ``age_target`` / ``expression_target`` (no truth is read).
    """
    seed_ids = list(range(len(seeds))) if seed_ids is None else list(seed_ids)
    kind, seq = group_kind(hp, cfg), sequence_kind(gen, cfg)
    columns = group_table(kind)
    attrs = [n for n in hp.names if not n.startswith("race_")]
    ortho = dict(zip(attrs, latent.orthogonalize(hp.select(attrs)[0]), strict=True))
    need = [a for a in SEQUENCE_ATTRIBUTES + (LATENT_SEQUENCE_ATTRIBUTES if seq == "latent" else ()) if a not in ortho]
    if need:
        raise ValueError(f"plan_hcic: no hyperplane for {need} (have {attrs}); 000's sequences need them")
    lat: list[np.ndarray] = []
    images: list[dict[str, Any]] = []
    slots: list[dict[str, Any]] = []

    def add(row: dict[str, Any], z: np.ndarray) -> str:
        lat.append(z)
        images.append(row)
        return row["image_id"]

    def slot(pid: str, attribute: str, level: int, iid: str, proto_img: str) -> None:
        slots.append({"prototype_id": pid, "attribute": attribute, "level": level,
                      "image_id": iid, "is_self": iid == proto_img})

    n = cfg.sequence_n
    for sid, z in zip(seed_ids, seeds, strict=True):
        for group, proto in _prototypes(z, hp, cfg, kind, seq).items():
            pid = f"s{sid:04d}_{group}"
            base = {"seed": sid, "group": group, **columns[group], "prototype_id": pid}
            proto_img = add({**base, "image_id": pid, "attribute": "prototype", "level": 0,
                             "yaw": 0.0, "light": "front", "is_prototype": True}, proto)
            if seq == "render":
                for level, yaw in enumerate(plan.POSE_SEQUENCE):
                    iid = proto_img if yaw == 0 else add(
                        {**base, "image_id": f"{pid}_pose{level}", "attribute": "pose", "level": level,
                         "yaw": float(yaw), "light": "front", "is_prototype": False}, proto)
                    slot(pid, "pose", level, iid, proto_img)
                for level, light in enumerate(["front", *plan.LIGHT_SEQUENCE]):
                    iid = proto_img if light == "front" else add(
                        {**base, "image_id": f"{pid}_light{level}", "attribute": "light", "level": level,
                         "yaw": 0.0, "light": light, "is_prototype": False}, proto)
                    slot(pid, "light", level, iid, proto_img)
            else:
                for attr, column in (("pose", "yaw"), ("light", "light")):
                    for level, k in enumerate(range(-n, n + 1)):
                        iid = proto_img if k == 0 else add(
                            {**base, "image_id": f"{pid}_{attr}{level}", "attribute": attr, "level": level,
                             "yaw": 0.0, "light": "front", "is_prototype": False},
                            proto + (k * cfg.latent_step / n) * ortho[column])
                        slot(pid, attr, level, iid, proto_img)
            for attr, column, target in (("age", "age", cfg.age_target), ("expression", "smile", cfg.expression_target)):
                seq_z, _d = latent.attribute_sequence(
                    proto, ortho[column], lambda zz, c=column: hp.predict(zz, c),
                    target, step=cfg.sequence_step, n=n, max_distance=cfg.max_distance)
                for level, zz in enumerate(seq_z):
                    iid = proto_img if level == n else add(
                        {**base, "image_id": f"{pid}_{attr}{level}", "attribute": attr, "level": level,
                         "yaw": 0.0, "light": "front", "is_prototype": False}, zz)
                    slot(pid, attr, level, iid, proto_img)
    return np.asarray(lat), pd.DataFrame(images), pd.DataFrame(slots)


# --------------------------------------------------------------------------- I/O edge
def _render_chunk(rows: Sequence[tuple[np.ndarray, float, Any]], gen: Generator) -> list[np.ndarray]:
    """Render one chunk of ``(latent, yaw, light)`` rows (a Dask task or a serial step)."""
    z = np.stack([r[0] for r in rows])
    yaw = np.array([r[1] for r in rows], float)
    if not yaw.any() and all(r[2] in (None, "front") for r in rows):
        return list(gen.synthesize(z))  # the default view: backends without pose/light controls too
    return list(gen.synthesize(z, yaw=yaw, light=as_lights([r[2] for r in rows], len(rows))))


def render(gen: Generator, latents: np.ndarray, table: pd.DataFrame, batch_size: int = 64,
           desc: str = "render", compute: Any = None) -> list[np.ndarray]:
    """Render ``latents`` with each row's ``yaw`` and ``light``, in batches of
    ``batch_size`` (with progress). ``compute`` (:mod:`facebias.compute`: a config, a
    scheduler string or an open Dask client; ``None`` = in this process) spreads the
    batches over Dask workers; the batches and so the pixels are the same either way."""
    from facebias.compute import map_chunks

    rows = list(zip(latents, table["yaw"].to_numpy(float), list(table["light"]), strict=True))
    chunks = map_chunks(_render_chunk, rows, compute, chunk_size=batch_size, shared=(gen,), desc=desc)
    return [img for chunk in chunks for img in chunk]


def write_pngs(folder: Path, names: Sequence[str], images: Sequence[np.ndarray]) -> None:
    """Write RGB uint8 images as ``folder/NAME.png``, each atomically (byte-identical for
    identical pixels)."""
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    for name, img in zip(names, images, strict=True):
        ok, buf = cv2.imencode(".png", np.ascontiguousarray(img[..., ::-1]))
        if not ok:
            raise RuntimeError(f"could not encode {name}.png")
        with atomic_path(folder / f"{name}.png") as tmp:
            Path(tmp).write_bytes(buf.tobytes())


def _save_table(df: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def _save_npy(arr: np.ndarray, path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, arr)


# --------------------------------------------------------------------------- transect readings
#: The machine annotators' readings of the transect renders, under ``transects/`` (backends
#: without truth only): one row per ``image_id`` (the order of ``images.parquet``), the
#: content key :data:`READINGS_KEY` and one float64 column per registered annotator.
TRANSECT_READINGS = "readings.parquet"
#: Column of :data:`TRANSECT_READINGS` holding each image's :func:`image_key`.
READINGS_KEY = "content_key"
#: Shorter side (px) the annotators see: the 64 px renders are upscaled bicubically to it
#: (:func:`facebias.annotate.machine.label_images`' default, what the notebooks used).
READINGS_MIN_SIZE = 256


def image_key(image: np.ndarray) -> str:
    """Content key of an image's pixels: blake2b (16-byte digest, hex) of its shape, dtype
    and C-order bytes.

    Parameters
    ----------
    image : numpy.ndarray
        The pixels, e.g. an (H, W, 3) RGB uint8 array as read from a PNG.

    Returns
    -------
    str
        32 hex digits; equal keys mean equal arrays (same shape, dtype and values).

    Examples
    --------
    >>> a = np.zeros((2, 2, 3), np.uint8)
    >>> image_key(a) == image_key(a.copy()), image_key(a) == image_key(a.reshape(4, 1, 3))
    (True, False)
    """
    import hashlib

    arr = np.asarray(image)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((arr.shape, arr.dtype.str)).encode())
    h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _label_chunk(images: Sequence[np.ndarray], names: Sequence[str], min_size: int) -> np.ndarray:
    """:func:`facebias.annotate.machine.label_images` of one chunk, as an array (a Dask task)."""
    from facebias.annotate.machine import label_images

    return label_images(list(images), list(names), min_size=min_size, progress=False).to_numpy(np.float64)


def label_transect_images(folder: str | Path, image_ids: Sequence[str], compute: Any = None,
                          chunk_size: int = 64) -> pd.DataFrame:
    """Every registered machine annotator's reading of each transect render
    ``folder/images/<image_id>.png``, as read back from the PNG: what
    :data:`TRANSECT_READINGS` holds.

    Each image is read as RGB uint8 (:func:`facebias.faces.images.read_image`, Pillow, the
    pixels the notebooks' ``Image.open(path).convert("RGB")`` give) and labelled by
    :func:`facebias.annotate.machine.label_images` with its defaults (upscaled bicubically to
    :data:`READINGS_MIN_SIZE` px on the shorter side); a reading depends only on its own
    image, so the chunks (``compute``: :mod:`facebias.compute`, ``None`` = in this process)
    do not change a value.

    Parameters
    ----------
    folder : str or Path
        The ``transects`` folder (``images/`` with the PNGs).
    image_ids : Sequence of str
        The images, in row order (``images.parquet``'s ``image_id``).
    compute : optional
        Where to label (a :mod:`facebias.compute` config, scheduler string or open client).
    chunk_size : int, default 64
        Images per task.

    Returns
    -------
    pandas.DataFrame
        One row per image: ``image_id``, :data:`READINGS_KEY` (:func:`image_key` of the
        pixels read) and one float64 column per annotator of
        :data:`facebias.annotate.machine.MACHINE_ANNOTATORS` (registration order), in its
        units (:attr:`~facebias.annotate.machine.MachineAnnotator.unit`), NaN where it could
        not measure (no face found).
    """
    from facebias.annotate.machine import MACHINE_ANNOTATORS
    from facebias.compute import map_chunks
    from facebias.faces.images import read_image

    ids = [str(i) for i in image_ids]
    names = list(MACHINE_ANNOTATORS)
    images = [read_image(Path(folder) / "images" / f"{i}.png") for i in ids]
    chunks = map_chunks(_label_chunk, images, compute, chunk_size=chunk_size,
                        shared=(tuple(names), READINGS_MIN_SIZE), desc="transect readings")
    values = np.concatenate(chunks) if chunks else np.empty((0, len(names)))
    table = pd.DataFrame({"image_id": ids, READINGS_KEY: [image_key(im) for im in images]})
    return pd.concat([table, pd.DataFrame(values, columns=names)], axis=1)


def transect_readings(folder: str | Path, image_ids: Sequence[str], images: Sequence[np.ndarray],
                      names: Sequence[str], measure: Any = None, verbose: bool = True) -> pd.DataFrame:
    """The machine annotators' readings of the transect images ``images`` (as loaded by the
    caller), from the generate stage's :data:`TRANSECT_READINGS` after checking that every
    image is the one that was read there.

    Each image's :func:`image_key` must equal the stored key of its ``image_id``, so a
    readings file left from other renders is never used. Where ``folder`` has no readings
    file (data built before the generate stage wrote one) the images are labelled here, with a
    warning: ``measure(images, names)``, default :func:`facebias.annotate.machine.label_images`
    (``progress=False``, upscaled to :data:`READINGS_MIN_SIZE` px), which is how the stored
    readings were made.

    Parameters
    ----------
    folder : str or Path
        The ``transects`` folder of a synth product.
    image_ids : Sequence of str
        The images' ids, row order of the result.
    images : Sequence of numpy.ndarray
        Their pixels as loaded (RGB uint8, (H, W, 3)), one per id.
    names : Sequence of str
        Annotator names (columns of the result, in this order).
    measure : callable, optional
        ``(images, names) -> DataFrame`` for the fallback (e.g.
        :func:`facebias.generate.checks.machine_measure`).
    verbose : bool, default True
        Print one line saying where the readings came from.

    Returns
    -------
    pandas.DataFrame
        ``(len(images), len(names))`` float64 with a RangeIndex, in the annotators' units,
        NaN where one could not measure: equal, bit for bit, to ``label_images(images, names,
        progress=False)``.

    Raises
    ------
    ValueError
        If ``images`` and ``image_ids`` differ in length, an id has no row in the readings
        file, an image's content key differs from the stored one (the first such id is
        named: the file is stale), or the file lacks a column of ``names``.

    Warns
    -----
    UserWarning
        When the readings file is missing and the images are labelled here.
    """
    ids = [str(i) for i in image_ids]
    images = list(images)
    names = list(names)
    if len(ids) != len(images):
        raise ValueError(f"transect_readings: {len(images)} images for {len(ids)} image ids")
    path = Path(folder) / TRANSECT_READINGS
    if not path.is_file():
        import warnings

        warnings.warn(f"{path} does not exist (data built by an older generate stage?): labelling the "
                      f"{len(images)} transect images here", stacklevel=2)
        if measure is None:
            from facebias.annotate.machine import label_images

            return label_images(images, names, min_size=READINGS_MIN_SIZE, progress=False)
        return measure(images, names)
    stored = pd.read_parquet(path).set_index("image_id")
    lacking = [n for n in names if n not in stored.columns]
    if lacking:
        raise ValueError(f"{path} has no readings of {lacking} (columns {list(stored.columns)}); rerun the generate stage")
    absent = [i for i in ids if i not in stored.index]
    if absent:
        raise ValueError(f"{path} has no row for image {absent[0]!r} ({len(absent)} missing); rerun the generate stage")
    keys = stored[READINGS_KEY].reindex(ids).to_numpy()
    for iid, key, im in zip(ids, keys, images, strict=True):
        if image_key(im) != key:
            raise ValueError(f"{path}: image {iid!r} is not the image its readings were made on "
                             "(content key differs; stale readings): rerun the generate stage")
    if verbose:
        print(f"machine readings of {len(ids)} transect images from {path} (content keys verified)")
    return pd.DataFrame(stored.reindex(ids)[names].to_numpy(np.float64), columns=names)


def render_products(gen: Any, cfg: SynthConfig, out: Path, mesh_fn: Any = None, compute: Any = None) -> dict[str, Any]:
    """Plan, render and write both products under ``out`` (``transects/`` and ``hcic/``);
    returns a summary (counts and the selected seeds). ``mesh_fn(image) -> vector | None``
    gives the normalised face geometry for seed selection (default
    :func:`facebias.faces.mesh.mesh_vector`). ``compute`` spreads the rendering over Dask
    (:mod:`facebias.compute`; one cluster for the whole call); the bytes do not change.
    """
    from facebias.compute import dask_client

    with dask_client(compute) as client:
        return _render_products(gen, cfg, Path(out), mesh_fn, client)


def _mesh_features(image: np.ndarray) -> np.ndarray | None:
    """Face-mesh vector of one render for seed selection; renders under 128 px (the GAN's
    64 px) are first upscaled to 256 px with bicubic interpolation for the landmark model."""
    from facebias.faces.mesh import mesh_vector

    if min(image.shape[:2]) < 128:
        import cv2

        image = cv2.resize(image, (256, 256), interpolation=cv2.INTER_CUBIC)
    return mesh_vector(image)


def _with_truth(gen: Any, z: np.ndarray, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` plus the backend's truth as ``true_*`` columns (for checks only), if it has any."""
    if not hasattr(gen, "truth"):
        return table
    return pd.concat([table, gen.truth(z).add_prefix("true_").reset_index(drop=True)], axis=1)


def candidate_prototypes(gen: Any, flat: np.ndarray, groups: Sequence[str], kind: str,
                         images: Sequence[np.ndarray] | None = None,
                         min_size: int = 256) -> tuple[pd.DataFrame, str]:
    """The seed filter's items: one row per candidate prototype (``flat``: candidate ``i``'s
    group ``g`` at ``i * len(groups) + g``) with ``item_id, seed, group`` and the group's
    columns, and the realism signal the filter reads:

    * a backend **with truth** (the procedural renderer): ``true_uncanny`` for the simulated
      panel (the backend's ``uncanny`` truth, else
      :func:`facebias.annotate.simulate.realism_truth` of the latent: a simulation) and,
      where the truth gives the intended race and gender, ``group_match``
      (:func:`facebias.annotate.seed_filter.intended_group_agreement`);
    * a backend **without truth** (the DCGAN): ``face_confidence``, **measured** on the
      frontal renders (:func:`facebias.annotate.seed_filter.face_confidence`, enlarged to
      ``min_size``): ``images`` in the order of ``flat``, rendered here when None. Nothing is
      read from the latent.

    Returns the table and why the group question is skipped (``""`` when it is asked)."""
    from facebias.annotate.seed_filter import face_confidence, intended_group_agreement
    from facebias.annotate.simulate import realism_truth

    columns = group_table(kind)
    n = len(flat) // len(groups)
    rows = pd.DataFrame([{"item_id": f"cand{i:05d}_{g}", "seed": i, "group": g, **columns[g]}
                         for i in range(n) for g in groups])
    if not hasattr(gen, "truth"):
        if images is None:
            images = render(gen, np.asarray(flat), _frontal(len(flat)), desc="seed-filter prototypes")
        if len(images) != len(rows):
            raise ValueError(f"candidate_prototypes: {len(images)} images for {len(rows)} prototypes")
        rows["face_confidence"] = face_confidence(images, min_size=min_size)
        return rows, "the backend has no truth, so no intended-group truth (and no panel: realism is measured)"
    rows = _with_truth(gen, flat, rows)
    rows["true_uncanny"] = (rows["true_uncanny"] if "true_uncanny" in rows.columns
                            else realism_truth(np.asarray(flat)))
    try:
        rows["group_match"] = intended_group_agreement(rows).to_numpy()
    except ValueError as err:
        return rows, f"no intended-group truth: {err}"
    return rows, ""


def candidate_seed_filter(gen: Any, flat: np.ndarray, groups: Sequence[str], kind: str,
                          cfg: SynthConfig, eligible: np.ndarray | None = None,
                          images: Sequence[np.ndarray] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """000's seed filter on the candidate prototypes, before max-min selection, keeping the
    best :attr:`SynthConfig.n_kept_by_filter` seeds (at most the eligible ones) of the
    ``eligible`` candidates (bool, one per candidate; default all; the stage passes those
    whose prototypes all gave a face mesh, as max-min needs one) (:func:`candidate_prototypes`):

    * backend with truth (procedural): a **simulated panel** rates every prototype through a
      temporary annotation store (:func:`facebias.annotate.seed_filter.human_seed_filter`),
      from the backend's realism and group truth: a simulation, said so in the summary;
    * backend without truth (the DCGAN): the realism signal is **measured**, YuNet's face
      confidence on the frontal render (``images``, in the order of ``flat``; rendered when
      None) (:func:`facebias.annotate.seed_filter.measured_seed_filter`); no panel, no latent
      norm.

    Returns the per-seed table (rated candidates) and a summary (sizes, rule, the realism
    signal and whether it is simulated)."""
    from facebias.annotate.seed_filter import (
        FACE_SCORE_THRESHOLD,
        human_seed_filter,
        measured_seed_filter,
        measured_seed_filter_rule,
        seed_filter_rule,
    )
    from facebias.annotate.simulate import Panel

    n_cand = len(flat) // len(groups)
    eligible = np.ones(n_cand, bool) if eligible is None else np.asarray(eligible, dtype=bool)
    if eligible.shape != (n_cand,) or not eligible.any():
        raise ValueError(f"candidate_seed_filter: eligible must be {n_cand} bools with at least one True")
    items, skipped = candidate_prototypes(gen, flat, groups, kind, images=images)
    items = items[eligible[items["seed"].to_numpy()]].reset_index(drop=True)
    n_keep = min(cfg.n_kept_by_filter, int(eligible.sum()))
    measured = "face_confidence" in items.columns
    if measured:
        table = measured_seed_filter(items, n_keep, threshold=FACE_SCORE_THRESHOLD)
        realism = {"realism_source": "measured", "simulated": False,
                   "realism_signal": (f"YuNet face confidence on the frontal render enlarged to 256 px (bicubic); "
                                      f"realistic iff >= {FACE_SCORE_THRESHOLD:g}"),
                   "questions": [], "n_votes": 0, "rule": measured_seed_filter_rule(FACE_SCORE_THRESHOLD)}
    else:
        with tempfile.TemporaryDirectory() as tmp:
            table = human_seed_filter(items.drop(columns=["group_match"], errors="ignore") if skipped else items,
                                      n_keep, Path(tmp) / "seed_filter.sqlite", Panel(seed=cfg.seed + 5),
                                      n_votes=cfg.seed_filter_votes)
        truth = ("the backend's uncanny truth" if "uncanny" in gen.truth(flat[:1]).columns
                 else "realism_truth(latent), a function of the latent's norm")
        realism = {"realism_source": "simulated", "simulated": True,
                   "realism_signal": f"SIMULATION: a simulated panel's uncanny votes, drawn from {truth}",
                   "questions": ["seed_filter/uncanny"] + ([] if skipped else ["seed_filter/group_match"]),
                   "n_votes": cfg.seed_filter_votes, "rule": seed_filter_rule(group=not skipped)}
    share = int(round(cfg.seed_filter_keep * cfg.n_candidates))
    summary = {"n_candidates": n_cand, "n_rated": int(eligible.sum()), "keep_share": float(cfg.seed_filter_keep),
               "n_kept_by_filter": int(table["kept"].sum()),
               "raised_to_n_seeds": bool(share < cfg.n_seeds),
               "group_question_skipped": skipped or None, **realism,
               "n_acceptable": int(table["acceptable"].sum()),
               "n_unrealistic": int((~table["realistic"]).sum()),
               "n_group_mismatch": int((~table["group_ok"]).sum()),
               "kept_seeds": sorted(int(x) for x in table.loc[table["kept"], "seed"])}
    return table, summary


def _render_products(gen: Any, cfg: SynthConfig, out: Path, mesh_fn: Any, client: Any) -> dict[str, Any]:
    from facebias.compute import map_items

    mesh_fn = mesh_fn or _mesh_features
    out = Path(out)
    mode = cfg.label_mode(gen)
    # the store lives in a temporary folder (its vote ids and times differ run to run); the
    # labels the planes were fitted on are kept, deterministic, in dz/labels.parquet
    machines = any(a.labeller is not None for a in cfg.attribute_labels(mode))
    hp, labels, origin = _fit_hyperplanes(gen, cfg, None, out / "dz" / "images" if machines else None, client)
    hp.save(out / "hyperplanes.npz")
    _save_table(labels.reset_index(), out / "dz" / "labels.parquet")

    # 004 transects
    tz, tt = plan_transects(gen, hp, cfg)
    tt = _with_truth(gen, tz, tt)
    write_pngs(out / "transects" / "images", tt["image_id"], render(gen, tz, tt, cfg.batch_size, "transects", client))
    _save_table(tt, out / "transects" / "images.parquet")
    _save_npy(tz, out / "transects" / "latents.npy")
    if not hasattr(gen, "truth"):  # the learned backends: machine annotators read every render, once
        _save_table(label_transect_images(out / "transects", tt["image_id"], client, cfg.batch_size),
                    out / "transects" / TRANSECT_READINGS)

    # 000: candidates -> frontal prototypes -> face mesh (or latents) -> max-min selection
    kind, seq = group_kind(hp, cfg), sequence_kind(gen, cfg)
    groups = list(group_table(kind))
    cand = gen.sample(cfg.n_candidates, seed=cfg.seed + 4)
    protos = [_prototypes(z, hp, cfg, kind, seq) for z in cand]
    flat = np.asarray([p[g] for p in protos for g in groups])
    frontal = render(gen, flat, _frontal(len(flat)), cfg.batch_size, "candidate prototypes", client)
    if cfg.seed_features == "mesh":
        meshes = map_items(mesh_fn, frontal, client, chunk_size=cfg.batch_size, desc="face mesh")
    else:
        meshes = list(flat)
    dim = max((m.size for m in meshes if m is not None), default=1)
    mesh_arr = np.full((len(meshes), dim), np.nan)
    for i, m in enumerate(meshes):
        if m is not None and m.size == dim:
            mesh_arr[i] = np.ravel(m)
    mesh_arr = mesh_arr.reshape(len(cand), len(groups), dim)
    # the panel rates the candidates whose prototypes all gave a face mesh (max-min needs one)
    with_mesh = np.isfinite(mesh_arr).all(axis=(1, 2))
    sf_table, sf_summary = candidate_seed_filter(gen, flat, groups, kind, cfg,
                                                 eligible=with_mesh if with_mesh.any() else None, images=frontal)
    _save_table(sf_table, out / "hcic" / "seed_filter.parquet")
    kept = np.isin(np.arange(len(cand)), sf_table.loc[sf_table["kept"], "seed"].to_numpy())
    chosen = select_seeds(cand, mesh_arr, cfg.n_seeds, eligible=kept)
    hz, himg, slots = plan_hcic(gen, hp, cand[chosen], cfg, seed_ids=chosen)
    himg = _with_truth(gen, hz, himg)
    write_pngs(out / "hcic" / "images", himg["image_id"],
               _render_hcic(gen, hz, himg, flat, frontal, groups, cfg, client))
    protos_tab = himg[himg["is_prototype"]][["seed", "group", "prototype_id"]]
    pairs = plan.hcic_pairs(protos_tab, slots, n_negative=cfg.n_negative, seed=cfg.seed)
    _save_table(himg, out / "hcic" / "images.parquet")
    _save_table(slots, out / "hcic" / "slots.parquet")
    _save_table(pairs, out / "hcic" / "pairs.parquet")
    _save_npy(hz, out / "hcic" / "latents.npy")
    summary = {
        "backend": cfg.backend, "config": {k: (dict(v) if isinstance(v, Mapping) else v)
                                           for k, v in asdict(cfg).items()},
        "labels": mode, "hyperplanes": list(hp.names),
        "hyperplane_sources": dict(hp.sources), **origin, "n_labelled": dict(hp.n_labelled),
        "hyperplane_scores": {k: round(float(v), 6) for k, v in hp.scores.items()},
        "groups": kind, "sequences": seq,
        "transects": {"n_transects": cfg.n_transects, "n_images": len(tt)},
        "hcic": {"n_candidates": cfg.n_candidates,
                 "n_candidates_with_mesh": int(np.isfinite(mesh_arr).all(axis=(1, 2)).sum()),
                 "seed_filter": sf_summary, "n_kept_by_filter": sf_summary["n_kept_by_filter"],
                 "selected_seeds": chosen, "n_prototypes": int(himg["is_prototype"].sum()),
                 "n_images": len(himg), "n_slots": len(slots),
                 "pairs": {k: int(v) for k, v in plan.pair_counts(pairs).loc["all"].items()}},
    }
    write_json_atomic(out / "summary.json", summary)
    return summary


def _render_hcic(gen: Any, hz: np.ndarray, himg: pd.DataFrame, flat: np.ndarray,
                 frontal: Sequence[np.ndarray], groups: Sequence[str], cfg: SynthConfig,
                 client: Any) -> list[np.ndarray]:
    """The HCIC images, reusing the frontal renders of the selected prototypes made for seed
    selection (``flat`` / ``frontal``: candidate ``i``'s group ``g`` at ``i * len(groups) +
    g``) instead of rendering them again; a prototype whose latent does not match is rendered."""
    groups = list(groups)
    images: list[np.ndarray | None] = [None] * len(himg)
    for i, (proto, seed, group) in enumerate(zip(himg["is_prototype"], himg["seed"], himg["group"], strict=True)):
        k = int(seed) * len(groups) + groups.index(group)
        if proto and himg["yaw"].iat[i] == 0 and himg["light"].iat[i] == "front" and np.array_equal(hz[i], flat[k]):
            images[i] = frontal[k]
    todo = [i for i, im in enumerate(images) if im is None]
    for i, im in zip(todo, render(gen, hz[todo], himg.iloc[todo], cfg.batch_size, "HCIC set", client), strict=True):
        images[i] = im
    return images


def write_products(params: Mapping[str, Any], out: Path, compute: Any = None) -> dict[str, Any]:
    """CLI entry: build the generator named in ``params`` (a ``generate`` section) and
    :func:`render_products`. Any backend runs: the hyperplanes come from labels in the
    annotation store, never from the backend's truth."""
    cfg = SynthConfig.from_params(params)
    return render_products(load_backend(cfg), cfg, Path(out), compute=compute)
