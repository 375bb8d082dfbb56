"""The synthetic-faces pipeline on backends without truth(): hyperplanes come from labels in
the annotation store (human votes here; machine labels for the DCGAN, in test_notebooks'
pipeline), and a tiny random-weight StyleGAN2 goes through the same `generate.backend` switch
a user with real weights flips."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from facebias.annotate import AnnotationStore, Scale
from facebias.generate.build import (
    SynthConfig,
    fit_attribute_hyperplanes,
    load_backend,
    write_products,
)
from facebias.generate.hyperplanes import dz_item_ids, register_dz

TINY = dict(resolution=16, z_dim=32, w_dim=32, channel_base=256, channel_max=32, mapping_layers=2,
            device="cpu", seed=3)
ATTRS = ("gender", "skin_tone", "age", "smile", "yaw", "light")
SCALE5 = {a: Scale(a, tuple(f"level {i}" for i in range(5))) for a in ATTRS}


def _planted_directions(dim: int, seed: int = 11) -> dict[str, np.ndarray]:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, len(ATTRS))))
    return {a: q[:, i] for i, a in enumerate(ATTRS)}


def _human_votes(store: AnnotationStore, z: np.ndarray, directions: dict[str, np.ndarray],
                 n_votes: int = 3, informative: bool = True, seed: int = 0, skip: int = 0) -> None:
    """Votes of 'people' who see attribute a as sigmoid(2 u_a . z) on a 5-level scale (plus
    noise); ``informative=False`` gives answers unrelated to the latents; the first ``skip``
    items get no votes."""
    rng = np.random.default_rng(seed)
    ids = dz_item_ids(len(z))
    rows = []
    for a, u in directions.items():
        p = 1 / (1 + np.exp(-2 * (z @ u))) if informative else rng.random(len(z))
        for v in range(n_votes):
            level = np.clip(np.rint(4 * p + rng.normal(0, 0.5, len(z))), 0, 4).astype(int)
            rows.append(pd.DataFrame({"annotator": f"person{v}", "item_id": ids, "question": a, "value": level}))
    votes = pd.concat(rows, ignore_index=True)
    votes = votes[~votes["item_id"].isin(ids[:skip])]
    store.add_votes(votes, SCALE5, source="human", chunk_size=len(votes))


def _config(tmp_path, **kw) -> dict:
    return {"scale": "smoke", "backend": "stylegan2", "generator": TINY, "n_fit": 400,
            "labels": "store", "label_store": str(tmp_path / "votes.sqlite"),
            "attributes": {a: {"question": a} for a in ATTRS},
            "transect_axes": {"skin_tone": [-1.5, 1.5], "gender": [-1.5, 1.5]},
            "groups": "skin_gender", "sequences": "latent", "seed_features": "latent", **kw}


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
    assert summary["groups"] == "skin_gender" and summary["sequences"] == "latent"
    out = tmp_path / "a"
    images = pd.read_parquet(out / "hcic" / "images.parquet")
    assert len(images) == cfg.n_seeds * 4 * 17 and not [c for c in images.columns if c.startswith("true_")]
    assert len(list((out / "hcic" / "images").glob("*.png"))) == len(images)
    tt = pd.read_parquet(out / "transects" / "images.parquet")
    tz = np.load(out / "transects" / "latents.npy")
    from facebias.generate.hyperplanes import Hyperplanes

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
