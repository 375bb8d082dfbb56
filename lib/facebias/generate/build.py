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
  attribute sequences of 5 per prototype (pose, light: the backend's controls where it has
  them, e.g. EG3D's camera for pose, else learned latent directions; age, expression:
  calibrated on the fitted label predictors) and the positive/negative pairs.

Planning functions are pure (latents and tables); :func:`render_products` and
:func:`write_products` are the I/O edge. Decision values are signed Euclidean distances
in latent space (unit normals, 004 A1.5); for z ~ N(0, I) they are in SD units.

Modules (this one keeps the whole public API and re-exports the others' public names):

* :mod:`facebias.generate.build`: :class:`SynthConfig`, :func:`load_backend`,
  :func:`render_products` (plan, render, write both products), :func:`write_products`;
* :mod:`facebias.generate.build_hyperplanes`: labelling ``D_z`` and fitting the hyperplanes
  (004 A1.4, 000 B1.2);
* :mod:`facebias.generate.build_transects`: 004's transects (Alg. 1) and their machine
  readings;
* :mod:`facebias.generate.build_hcic`: 000's HCIC plan (groups, prototypes, seed filter,
  max-min seeds, sequences);
* :mod:`facebias.generate.build_render`: rendering in batches, writing PNGs and tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.config import Section, integer, number, optional, param, text
from facebias.generate import Generator, plan
from facebias.generate.build_hcic import (
    GROUPS,
    LATENT_SEQUENCE_ATTRIBUTES,
    SEQUENCE_ATTRIBUTES,
    SEQUENCE_KINDS,
    TONE_GROUPS,
    _prototypes,
    backend_controls,
    candidate_prototypes,
    candidate_seed_filter,
    check_sequence_hyperplanes,
    group_kind,
    group_table,
    plan_hcic,
    select_seeds,
    sequence_kind,
)
from facebias.generate.build_hyperplanes import (
    _check_vote_store,
    _fit_hyperplanes,
    fit_attribute_hyperplanes,
)
from facebias.generate.build_render import (
    _frontal,
    _save_npy,
    _save_table,
    _with_truth,
    render,
    write_pngs,
)
from facebias.generate.build_transects import (
    COLLINEAR_COSINE,
    READINGS_KEY,
    READINGS_MIN_SIZE,
    TRANSECT_READINGS,
    held_attributes,
    image_key,
    label_transect_images,
    plan_transects,
    transect_readings,
)
from facebias.generate.hyperplanes import (
    MACHINE_ATTRIBUTES,
    PANEL_ATTRIBUTES,
    AttributeLabel,
    Hyperplanes,
)
from facebias.io import write_json_atomic

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
    # also public here (re-exported from the build_* modules or defined here)
    "ATTRIBUTE_KINDS",
    "LABEL_MODES",
    "SCALES",
    "load_backend",
    "COLLINEAR_COSINE",
    "SEQUENCE_ATTRIBUTES",
    "LATENT_SEQUENCE_ATTRIBUTES",
    "SEQUENCE_KINDS",
    "group_kind",
    "sequence_kind",
    "backend_controls",
    "check_sequence_hyperplanes",
    "select_seeds",
    "candidate_prototypes",
    "candidate_seed_filter",
    "render",
    "write_pngs",
]


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

    000's pose and light sequences (``sequences``, :data:`SEQUENCE_KINDS`): ``render`` (the
    backend's ``yaw=`` at -30..30 degrees and its four lights; the procedural renderer),
    ``camera`` (pose by the backend's ``yaw=``, light along the learned ``light`` direction;
    EG3D, whose camera is real and which has no light control), ``latent`` (both along the
    learned ``yaw`` / ``light`` directions, ``latent_step``; the DCGAN, StyleGAN2); ``auto``
    picks from the backend's controls (:func:`backend_controls`). The learned directions
    need their hyperplanes (``camera``: light; ``latent``: yaw and light).
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
    # pose/light sequences: render (yaw=/light= of the backend), camera (pose by its yaw=, light along
    # the learned light direction: EG3D), latent (both learned); auto: from the backend's controls
    sequences: str = param("auto", text("auto", *SEQUENCE_KINDS))
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


def _render_products(gen: Any, cfg: SynthConfig, out: Path, mesh_fn: Any, client: Any) -> dict[str, Any]:
    from facebias.compute import map_items

    mesh_fn = mesh_fn or _mesh_features
    out = Path(out)
    mode = cfg.label_mode(gen)
    seq = sequence_kind(gen, cfg)  # a kind the backend cannot render fails before any render
    # the store lives in a temporary folder (its vote ids and times differ run to run); the
    # labels the planes were fitted on are kept, deterministic, in dz/labels.parquet
    machines = any(a.labeller is not None for a in cfg.attribute_labels(mode))
    hp, labels, origin = _fit_hyperplanes(gen, cfg, None, out / "dz" / "images" if machines else None, client)
    check_sequence_hyperplanes(hp, seq)
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
    kind = group_kind(hp, cfg)
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
