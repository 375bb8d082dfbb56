"""The synthetic-faces pipeline on backends without truth(): hyperplanes come from labels in
the annotation store (human votes here; machine labels for the DCGAN, in test_notebooks'
pipeline), and a tiny random-weight StyleGAN2 goes through the same `generate.backend` switch
a user with real weights flips."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from facebias.annotate import AnnotationStore, Scale
from facebias.generate.build import (
    LATENT_SEQUENCE_ATTRIBUTES,
    SEQUENCE_ATTRIBUTES,
    SynthConfig,
    fit_attribute_hyperplanes,
    load_backend,
    write_products,
)
from facebias.generate.hyperplanes import (
    MACHINE_ATTRIBUTES,
    RACE_SCALES,
    Hyperplanes,
    dz_item_ids,
    register_dz,
)

TINY = dict(resolution=16, z_dim=32, w_dim=32, channel_base=256, channel_max=32, mapping_layers=2,
            device="cpu", seed=3)
ATTRS = ("gender", "skin_tone", "age", "smile", "yaw", "light")
SCALE5 = {a: Scale(a, tuple(f"level {i}" for i in range(5))) for a in ATTRS}


def _planted_directions(dim: int, seed: int = 11, names: tuple[str, ...] = ATTRS) -> dict[str, np.ndarray]:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, len(names))))
    return {a: q[:, i] for i, a in enumerate(names)}


def _human_votes(store: AnnotationStore, z: np.ndarray, directions: dict[str, np.ndarray],
                 n_votes: int = 3, informative: bool = True, seed: int = 0, skip: int = 0,
                 scales: dict[str, Scale] = SCALE5) -> None:
    """Votes of 'people' who see attribute a as sigmoid(2 u_a . z) on its scale of k levels
    (``scales``; 5 levels by default; level (k - 1) p plus noise of SD 1/8 of the scale's
    range, so a yes/no question is answered yes about when p > 1/2); ``informative=False``
    gives answers unrelated to the latents; the first ``skip`` items get no votes."""
    rng = np.random.default_rng(seed)
    ids = dz_item_ids(len(z))
    rows = []
    for a, u in directions.items():
        top = scales[a].k - 1
        p = 1 / (1 + np.exp(-2 * (z @ u))) if informative else rng.random(len(z))
        for v in range(n_votes):
            level = np.clip(np.rint(top * p + rng.normal(0, top / 8, len(z))), 0, top).astype(int)
            rows.append(pd.DataFrame({"annotator": f"person{v}", "item_id": ids, "question": a, "value": level}))
    votes = pd.concat(rows, ignore_index=True)
    votes = votes[~votes["item_id"].isin(ids[:skip])]
    store.add_votes(votes, {a: scales[a] for a in directions}, source="human", chunk_size=len(votes))


def _config(tmp_path, **kw) -> dict:
    return {"scale": "smoke", "backend": "stylegan2", "generator": TINY, "n_fit": 400,
            "labels": "store", "label_store": str(tmp_path / "votes.sqlite"),
            "attributes": {a: {"question": a} for a in ATTRS},
            "transect_axes": {"skin_tone": [-1.5, 1.5], "gender": [-1.5, 1.5]},
            "groups": "tone_gender", "tone_axis": "skin_tone", "sequences": "latent", "seed_features": "latent", **kw}


@pytest.mark.parametrize("informative", [True, False])
def test_hyperplanes_from_human_votes_recover_what_people_saw(tmp_path, informative):
    """Known truth: people's votes follow planted latent directions, so the fitted normals
    must align with them (cosine > 0.9); votes unrelated to the latents must not (a random
    unit vector in 32 dimensions has |cosine| around 0.18; 0.5 is far above that). Items
    without votes are left out and counted."""
    cfg = SynthConfig.from_params(_config(tmp_path))
    gen = load_backend(cfg)
    assert not hasattr(gen, "truth")
    z = gen.sample(cfg.n_fit, seed=cfg.seed + 1)
    dirs = _planted_directions(gen.latent_dim)
    with AnnotationStore(cfg.label_store) as store:
        register_dz(store, len(z))
        _human_votes(store, z, dirs, informative=informative, skip=25)
    hp = fit_attribute_hyperplanes(gen, cfg)
    cos = {a: float(hp.select([a])[0][0] @ u) for a, u in dirs.items()}
    if informative:
        assert min(cos.values()) > 0.9, cos
    else:
        assert max(abs(c) for c in cos.values()) < 0.5, cos
    assert set(hp.n_labelled.values()) == {cfg.n_fit - 25}
    assert set(hp.sources) == set(ATTRS) and all(s.startswith("votes on") for s in hp.sources.values())


def test_store_without_labels_is_a_clear_error(tmp_path):
    cfg = SynthConfig.from_params(_config(tmp_path))
    with pytest.raises(ValueError, match="does not exist"):
        fit_attribute_hyperplanes(load_backend(cfg), cfg)
    AnnotationStore(cfg.label_store).close()
    with pytest.raises(ValueError, match="only 0 of 400 latents have a label"):
        fit_attribute_hyperplanes(load_backend(cfg), cfg)


def test_panel_needs_truth(tmp_path):
    cfg = SynthConfig.from_params({**_config(tmp_path), "labels": "panel", "label_store": None})
    with pytest.raises(ValueError, match="no truth"):
        fit_attribute_hyperplanes(load_backend(cfg), cfg)


@pytest.mark.timeout(300)
def test_stylegan2_fixture_runs_the_whole_pipeline(tmp_path):
    """generate.backend: stylegan2 with a tiny random-weight network: fit set labelled by
    (simulated) people in the store, transects, prototypes, latent sequences and pairs, and
    the written products are deterministic. The transects hit their decision values and the
    planted directions are recovered through the whole pipeline."""
    params = _config(tmp_path)
    cfg = SynthConfig.from_params(params)
    gen = load_backend(cfg)
    z = gen.sample(cfg.n_fit, seed=cfg.seed + 1)
    dirs = _planted_directions(gen.latent_dim)
    with AnnotationStore(cfg.label_store) as store:
        register_dz(store, len(z))
        _human_votes(store, z, dirs)
    summary = write_products(params, tmp_path / "a", compute="serial")
    assert summary["backend"] == "stylegan2" and summary["labels"] == "store"
    assert summary["groups"] == "tone_gender" and summary["sequences"] == "latent"
    out = tmp_path / "a"
    images = pd.read_parquet(out / "hcic" / "images.parquet")
    assert len(images) == cfg.n_seeds * 4 * 17 and not [c for c in images.columns if c.startswith("true_")]
    assert len(list((out / "hcic" / "images").glob("*.png"))) == len(images)
    tt = pd.read_parquet(out / "transects" / "images.parquet")
    tz = np.load(out / "transects" / "latents.npy")
    hp = Hyperplanes.load(out / "hyperplanes.npz")
    dv = hp.values(tz)
    for axis in ("skin_tone", "gender"):
        np.testing.assert_allclose(dv[axis], tt[f"{axis}_c"], atol=1e-9)
        assert hp.select([axis])[0][0] @ dirs[axis] > 0.9
    # prototypes: the 2 x 2 cells of skin tone x gender, at neutral yaw / light / age / smile
    hz = np.load(out / "hcic" / "latents.npy")
    proto = images["is_prototype"].to_numpy()
    pv = hp.values(hz[proto])
    sign = {"L": -1, "D": 1, "F": -1, "M": 1}
    np.testing.assert_allclose(pv["skin_tone"], [sign[g[0]] * cfg.c_race for g in images.loc[proto, "group"]], atol=1e-9)
    np.testing.assert_allclose(pv["gender"], [sign[g[1]] * cfg.c_gender for g in images.loc[proto, "group"]], atol=1e-9)
    np.testing.assert_allclose(pv[["yaw", "light", "age", "smile"]], 0.0, atol=1e-9)
    # pose sequences move the yaw decision value by +-latent_step, nothing else in the transect axes
    pose = images[images["attribute"] == "pose"]
    pvv = hp.values(hz[pose.index.to_numpy()])
    np.testing.assert_allclose(pvv["yaw"].abs().max(), cfg.latent_step, atol=1e-6)
    np.testing.assert_allclose(pvv[["skin_tone", "gender"]].abs().to_numpy() - [cfg.c_race, cfg.c_gender], 0, atol=1e-9)
    write_products(params, tmp_path / "b", compute="serial")
    for name in ("hyperplanes.npz", "hcic/pairs.parquet", "hcic/images.parquet", "dz/labels.parquet"):
        assert (out / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert json.loads((out / "summary.json").read_text()) == json.loads((tmp_path / "b" / "summary.json").read_text())


# --------------------------------------------------------------------------- mixed: machines + people's votes
#: 000's race x gender groups on the DCGAN: race (and gender) from people's votes in a store,
#: the sequence attributes from machine annotators on the fit set's renders.
QUESTIONS = ("gender", "race_White", "race_Black", "race_East Asian")
QUESTION_SCALES = {"gender": SCALE5["gender"], **RACE_SCALES}
MACHINE = {a.name: a for a in MACHINE_ATTRIBUTES if a.name in SEQUENCE_ATTRIBUTES + LATENT_SEQUENCE_ATTRIBUTES}
#: the race SVMs see only the sign of each vote; in 100 latent dimensions their normals reach
#: cosine 0.92-0.96 with the planted directions at 500 fit latents (0.86-0.94 at 400)
N_FIT_MIXED = 500


def _mixed_params(tmp_path, machines: bool = True, **kw) -> dict:
    attrs = {"gender": {"question": "gender"}, **{q: {"question": q, "kind": "svm"} for q in RACE_SCALES}}
    if machines:
        attrs.update({n: {k: getattr(a, k) for k in ("labeller", "kind", "transform", "sign", "tau")}
                      for n, a in MACHINE.items()})
    return {"scale": "smoke", "backend": "dcgan", "n_fit": N_FIT_MIXED, "labels": "machine",
            "label_store": str(tmp_path / "people.sqlite"), "attributes": attrs,
            "transect_axes": {"gender": [-1.5, 1.5]}, "groups": "auto", "sequences": "latent",
            "seed_features": "latent", **kw}


def _people_store(path, z: np.ndarray, informative: bool = True) -> dict[str, np.ndarray]:
    """A store of people's votes on the fit set (items dz_*), as the annotation UI writes it:
    race as yes/no votes, gender on a 5-level scale, along planted latent directions."""
    dirs = _planted_directions(z.shape[1], seed=5, names=QUESTIONS)
    with AnnotationStore(path) as store:
        register_dz(store, len(z))
        _human_votes(store, z, dirs, informative=informative, scales=QUESTION_SCALES)
    return dirs


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.timeout(300)
def test_dcgan_race_from_peoples_votes_and_the_rest_from_machines(tmp_path):
    """labels: machine + label_store on the truth-free DCGAN: race and gender hyperplanes
    come from the people's votes in label_store (they align with the directions the votes
    were planted along), age/smile/yaw/light from machine annotators; the groups resolve to
    000's six race x gender prototypes, each at its decision values; the people's store is
    read, never written (byte-identical, no machine labels in it)."""
    params = _mixed_params(tmp_path)
    cfg = SynthConfig.from_params(params)
    gen = load_backend(cfg)
    assert not hasattr(gen, "truth")
    people = tmp_path / "people.sqlite"
    dirs = _people_store(people, gen.sample(cfg.n_fit, seed=cfg.seed + 1))
    before = _digest(people)
    out = tmp_path / "out"
    summary = write_products(params, out, compute="serial")
    # (d) people's data untouched: same bytes, no WAL files left, no machine labels
    assert _digest(people) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "people.sqlite"]
    # (a) six race x gender groups
    assert summary["labels"] == "machine" and summary["groups"] == "race_gender"
    images = pd.read_parquet(out / "hcic" / "images.parquet")
    assert sorted(images["group"].unique()) == sorted(["WM", "WF", "BM", "BF", "AM", "AF"])
    assert len(images) == cfg.n_seeds * 6 * 17 and not [c for c in images.columns if c.startswith("true_")]
    # (b) votes recovered, sources recorded, and where the votes came from
    hp = Hyperplanes.load(out / "hyperplanes.npz")
    cos = {q: float(hp.select([q])[0][0] @ u) for q, u in dirs.items()}
    assert min(cos.values()) > 0.9, cos
    assert {n: hp.sources[n] for n in QUESTIONS} == {q: f"votes on {q!r}" for q in QUESTIONS}
    assert {n: hp.sources[n] for n in MACHINE} == {n: f"machine labeller {a.labeller!r}" for n, a in MACHINE.items()}
    assert summary["hyperplane_sources"] == dict(hp.sources)
    assert summary["label_store"] == str(people)
    assert summary["vote_sources"] == dict.fromkeys(QUESTIONS, ["human"])
    assert {n: hp.n_labelled[n] for n in QUESTIONS} == dict.fromkeys(QUESTIONS, cfg.n_fit)
    assert all(0 < hp.n_labelled[n] <= cfg.n_fit for n in MACHINE)
    assert len(list((out / "dz" / "images").glob("dz_*.png"))) == cfg.n_fit
    # (c) plan.prototypes: own race at +c_race, the other races at -c_race, gender +-c_gender,
    # and the sequence attributes held at their neutral hyperplanes
    hz = np.load(out / "hcic" / "latents.npy")
    proto = images["is_prototype"].to_numpy()
    dv = hp.values(hz[proto])
    groups = images.loc[proto, "group"].to_numpy()
    assert len(groups) == cfg.n_seeds * 6
    race = {"W": "race_White", "B": "race_Black", "A": "race_East Asian"}
    for code, column in race.items():
        np.testing.assert_allclose(dv[column], np.where([g[0] == code for g in groups], cfg.c_race, -cfg.c_race),
                                   atol=1e-9)
    np.testing.assert_allclose(dv["gender"], [cfg.c_gender if g[1] == "M" else -cfg.c_gender for g in groups],
                               atol=1e-9)
    np.testing.assert_allclose(dv[list(MACHINE)], 0.0, atol=1e-9)


def test_uninformative_race_votes_give_no_direction(tmp_path):
    """The null of the test above: people who answer at random give race normals unrelated
    to the planted directions (a random unit vector in 100 dimensions has |cosine| ~0.08).
    Vote questions only: no render is labelled, the votes still come from label_store."""
    params = _mixed_params(tmp_path, machines=False)
    cfg = SynthConfig.from_params(params)
    gen = load_backend(cfg)
    dirs = _people_store(tmp_path / "people.sqlite", gen.sample(cfg.n_fit, seed=cfg.seed + 1), informative=False)
    hp = fit_attribute_hyperplanes(gen, cfg)
    cos = {q: float(hp.select([q])[0][0] @ dirs[q]) for q in RACE_SCALES}
    assert max(abs(c) for c in cos.values()) < 0.5, cos
    assert set(hp.sources.values()) == {f"votes on {q!r}" for q in QUESTIONS}


def test_mixed_labels_are_validated(tmp_path):
    """Question attributes in machine mode need label_store, which must exist and hold votes
    on the fit set; it is never the store the machine labels are written to. Each error
    comes before any render is labelled."""
    no_store = {**_mixed_params(tmp_path), "label_store": None}
    with pytest.raises(ValueError, match=r"\['gender', 'race_White', 'race_Black', 'race_East Asian'\].*label_store"):
        SynthConfig.from_params(no_store)
    # labels: auto resolves to machine on the truth-free DCGAN, so the check runs at fit time
    cfg = SynthConfig.from_params({**no_store, "labels": "auto"})
    gen = load_backend(cfg)
    with pytest.raises(ValueError, match="race_White.*label_store"):
        fit_attribute_hyperplanes(gen, cfg)
    cfg = SynthConfig.from_params(_mixed_params(tmp_path))
    with pytest.raises(ValueError, match="people.sqlite does not exist"):
        fit_attribute_hyperplanes(gen, cfg)
    people = tmp_path / "people.sqlite"
    with AnnotationStore(people) as store:  # votes on gender only
        register_dz(store, cfg.n_fit)
        _human_votes(store, gen.sample(cfg.n_fit, seed=cfg.seed + 1), _planted_directions(100, names=("gender",)),
                     scales=QUESTION_SCALES)
    before = _digest(people)
    with pytest.raises(ValueError, match=r"too few .*'race_White': 0"):
        fit_attribute_hyperplanes(gen, cfg)
    with pytest.raises(ValueError, match="read-only"):
        fit_attribute_hyperplanes(gen, cfg, store_path=people)
    assert _digest(people) == before
    # without vote questions, machine mode does not read label_store (the DCGAN study's default)
    assert SynthConfig.from_params({**no_store, "attributes": None, "transect_axes": {"gender": [-1, 1]}})
