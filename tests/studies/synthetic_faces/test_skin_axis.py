"""The skin-axis gate (facebias.studies.synthetic_faces.skin_axis): a direction that only changes the face's
skin colour passes; a colour cast, an exposure change and a direction that makes faces
undetectable are each caught; holding a fitted background hyperplane removes a planted
background leak. A small fake generator renders a face disc on a border; a fake measure
reads its pixels (the real annotators need real faces)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from facebias.annotate.machine import border_mask, ita_degrees, rgb_to_lab
from facebias.generate.hyperplanes import AttributeLabel, fit_from_labels
from facebias.studies.synthetic_faces import skin_axis as K

SIZE = 32
D = 6
SKIN = np.array([200.0, 150.0, 125.0])  # ITA about +38 (intermediate skin)
LEVELS = [-1.5, -0.75, 0.0, 0.75, 1.5]


def render(z: np.ndarray) -> np.ndarray:
    """Latent coordinates: 0 face darkness (skin-like: R, G, B scale together), 1 a blue cast
    on the face only, 2 exposure of the whole image, 3-5 nothing visible."""
    z = np.atleast_2d(z)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    disc = (yy - SIZE / 2) ** 2 + (xx - SIZE / 2) ** 2 < (SIZE / 3.2) ** 2
    out = np.empty((len(z), SIZE, SIZE, 3), np.uint8)
    for i, v in enumerate(z):
        exposure = 1.0 - 0.15 * v[2]
        face = SKIN * (1.0 - 0.18 * v[0]) + np.array([-1.0, 0.0, 1.0]) * 45.0 * v[1]
        img = np.empty((SIZE, SIZE, 3))
        img[:] = np.array([120.0, 128.0, 110.0])
        img[disc] = face
        out[i] = np.clip(img * exposure, 0, 255).round().astype(np.uint8)
    return out


def measure(images: np.ndarray, min_face_l: float = -1.0) -> pd.DataFrame:
    """The readings of :data:`K.READINGS` from the fake renders (face = the centre 6 x 6);
    a face darker than ``min_face_l`` L* is "not detected"."""
    rows = []
    for im in images:
        lab = rgb_to_lab(im)
        face = lab[13:19, 13:19].reshape(-1, 3)
        L, a, b = (float(np.median(face[:, k])) for k in range(3))
        found = L >= min_face_l
        rows.append({"face_luminance": L if found else np.nan, "face_a_star": a if found else np.nan,
                     "face_b_star": b if found else np.nan,
                     "ita": float(ita_degrees(L, b)) if found else np.nan,
                     "border_luminance": float(lab[border_mask(lab.shape)][:, 0].mean()),
                     "image_luminance": float(lab[..., 0].mean()), "image_b_star": float(lab[..., 2].mean())})
    return pd.DataFrame(rows)


def walk(axis_vector: np.ndarray, min_face_l: float = -1.0, n: int = 12) -> pd.DataFrame:
    z = np.random.default_rng(0).normal(scale=0.3, size=(n, D))
    z[:, :3] = 0.0
    step = np.asarray(axis_vector, float)
    r = K.readings_along(z, step, np.zeros(n), LEVELS, render, lambda ims: measure(ims, min_face_l))
    return K.gate_table(K.level_summary(r), K.SkinGate())


def failed(table: pd.DataFrame) -> set[str]:
    return {c.split()[0] + " " + c.split()[1] for c in table.loc[~table["passed"], "check"]}


def test_a_skin_like_direction_passes():
    table = walk(np.eye(D)[0])
    assert K.gate_passes(table), table.to_string()


def test_a_colour_cast_is_caught_by_face_b():
    table = walk(np.eye(D)[1])
    assert not K.gate_passes(table)
    row = table.set_index("check").loc["lowest per-level median face b*"]
    assert not row["passed"] and row["measured"] < 0 and row["worst_level"] == 1.5


def test_an_exposure_direction_is_caught_by_the_border():
    table = walk(np.eye(D)[0] * 0.3 + np.eye(D)[2])  # the whole image darkens
    row = table.set_index("check").loc["border L* change over the levels (max - min)"]
    assert not row["passed"] and row["measured"] > 5


def test_faces_lost_at_the_dark_end_are_caught():
    table = walk(np.eye(D)[0] * 2.0, min_face_l=45.0)  # dark faces are not "detected"
    row = table.set_index("check").iloc[3]
    assert not row["passed"] and row["worst_level"] == 1.5 and row["measured"] > 0.1


def test_level_summary_hand_case():
    r = pd.DataFrame({"seed": [0, 1, 0, 1], "level": [0.0, 0.0, 1.0, 1.0],
                      "face_luminance": [50.0, 60.0, 40.0, np.nan], "face_a_star": [1.0, 3.0, 2.0, np.nan],
                      "face_b_star": [10.0, 20.0, -5.0, np.nan], "ita": [0.0, 20.0, -60.0, np.nan],
                      "border_luminance": [30.0, 40.0, 20.0, 22.0], "image_luminance": [1.0, 2.0, 3.0, 4.0],
                      "image_b_star": [0.0, 0.0, 1.0, 1.0], "detected": [True, True, True, False]})
    s = K.level_summary(r)
    assert s.loc[0.0, "face_L"] == 55.0 and s.loc[1.0, "face_L"] == 40.0
    assert s.loc[1.0, "detect_rate"] == 0.5 and s.loc[1.0, "border_L"] == 21.0
    t = K.gate_table(s, K.SkinGate(max_border_delta=20.0)).set_index("check")
    assert t.iloc[0]["measured"] == 14.0 and t.iloc[0]["passed"]
    assert t.iloc[1]["measured"] == -5.0 and not t.iloc[1]["passed"]
    assert t.iloc[2]["measured"] == -60.0 and not t.iloc[2]["passed"]
    assert t.iloc[3]["measured"] == 0.5 and not t.iloc[3]["passed"]


def test_holding_a_fitted_background_plane_removes_a_background_leak():
    # the "skin" label (-ITA) is driven by face darkness AND exposure (z0 + z2 mixed in the
    # population): its raw normal darkens the room; holding the fitted background plane stops it
    rng = np.random.default_rng(1)
    z = rng.normal(size=(400, D))
    read = measure(render(z))
    labels = pd.DataFrame({"face_darkness": -read["ita"], "background": read["border_luminance"]})
    hp = fit_from_labels(z, labels, [AttributeLabel("face_darkness", labeller="ita", transform="rank"),
                                     AttributeLabel("background", labeller="border_luminance", transform="rank")])
    names = list(hp.names)
    seeds = np.zeros((8, D))
    start = hp.values(seeds)["face_darkness"].to_numpy()
    raw = K.level_summary(K.readings_along(seeds, K.candidate_step(hp.normals, names, "face_darkness", []),
                                           start, LEVELS, render, measure))
    held = K.level_summary(K.readings_along(seeds, K.candidate_step(hp.normals, names, "face_darkness",
                                                                    ["background"]),
                                            start, LEVELS, render, measure))
    raw_delta = np.ptp(raw["border_L"].to_numpy())
    held_delta = np.ptp(held["border_L"].to_numpy())
    gate = K.SkinGate()
    assert raw_delta > gate.max_border_delta >= held_delta  # the raw normal fails the border check, held passes
    face = held["face_L"].to_numpy()
    assert np.all(np.diff(face) < 0) and np.ptp(face) > gate.max_border_delta  # the face still darkens


def test_candidate_step_is_the_dual_basis_row():
    normals = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]])
    step = K.candidate_step(normals, ["s", "b", "c"], "s", ["b"])
    np.testing.assert_allclose(normals[:2] @ step, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(K.candidate_step(normals, ["s", "b", "c"], "s", []), normals[0])
    with pytest.raises(ValueError, match="no hyperplane"):
        K.candidate_step(normals, ["s", "b", "c"], "s", ["x"])
    with pytest.raises(ValueError, match="cannot also be held"):
        K.candidate_step(normals, ["s", "b", "c"], "s", ["s"])


def test_gate_from_mapping_rejects_unknown_keys():
    g = K.SkinGate.from_mapping({"max_border_delta": 4, "ita_range": [-20, 50]})
    assert g.ita_range == (-20.0, 50.0) and g.max_border_delta == 4.0
    with pytest.raises(ValueError, match="unknown key"):
        K.SkinGate.from_mapping({"max_border": 4})
    with pytest.raises(ValueError, match="low < high"):
        K.SkinGate(ita_range=(10, -10))


class _FakeGenerator:
    latent_dim = D

    def sample(self, n: int, seed: int) -> np.ndarray:
        z = np.random.default_rng(seed).normal(scale=0.3, size=(n, D))
        z[:, :3] = 0.0
        return z

    def synthesize(self, z: np.ndarray) -> np.ndarray:
        return render(z)


def test_walk_candidates_and_metrics_judge_each_candidate():
    """Two candidates on the same seeds: the fitted "darkness" plane mixes face darkness with
    exposure; holding the exposure plane passes the gate, the raw normal fails the border."""
    from facebias.generate.hyperplanes import Hyperplanes

    normals = np.zeros((2, D))
    normals[0, [0, 2]] = [0.8, 0.6]  # darkness: face and exposure together
    normals[1, 2] = 1.0  # exposure
    hp = Hyperplanes(("face_darkness", "exposure"), normals, np.zeros(2))
    cands = K.candidate_sets(hp.names, "face_darkness", ["exposure"], room=("exposure",))
    assert cands == {"raw normal": [], "transects": ["exposure"]}  # duplicates of earlier sets dropped
    levels = [-1.0, 0.0, 1.0]
    r = K.walk_candidates(_FakeGenerator(), hp, "face_darkness", cands, levels, 6, 0, measure=measure)
    assert set(r["candidate"]) == set(cands) and len(r) == len(cands) * 6 * len(levels)
    m = K.gate_metrics(r, K.SkinGate(), cands, "face_darkness", chosen="transects")
    assert m["candidates"]["transects"]["passes"] and not m["candidates"]["raw normal"]["passes"]
    assert m["any_passes"] and m["chosen_passes"] and m["n_seeds"] == 6
    raw_checks = {c["check"]: c for c in m["candidates"]["raw normal"]["checks"]}
    assert not raw_checks["border L* change over the levels (max - min)"]["passed"]
    with pytest.raises(ValueError, match="chosen candidate"):
        K.gate_metrics(r, K.SkinGate(), cands, "face_darkness", chosen="nope")


def test_candidate_sets_hand_case():
    c = K.candidate_sets(["g", "s", "lum", "bg", "exp", "race_White"], "s", ["g", "bg"], room=("bg", "exp"))
    assert c == {"raw normal": [], "room free": ["g"], "transects": ["g", "bg"], "room held": ["g", "bg", "exp"],
                 "everything held": ["g", "lum", "bg", "exp"]}


def test_held_attributes_leaves_collinear_and_named_planes_free():
    from facebias.generate.build import held_attributes
    from facebias.generate.hyperplanes import Hyperplanes

    n = np.eye(5)
    n[1] = [0.95, np.sqrt(1 - 0.95**2), 0, 0, 0]  # "lum": |cosine| 0.95 with the axis "s"
    n[2] = [0.6, 0, 0.8, 0, 0]  # "exp": cosine 0.6, below the limit
    hp = Hyperplanes(("s", "lum", "exp", "bg", "race_White"), n, np.zeros(5))
    assert held_attributes(hp, ["s"]) == ["exp", "bg"]
    assert held_attributes(hp, ["s"], follow=["exp", "absent"]) == ["bg"]
