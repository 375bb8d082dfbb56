"""Acceptance checks for generators without truth (facebias.generate.checks, second half).

A planted linear "generator" (images = the latents themselves) with labellers and an
embedder that read known directions: the checks must find the planted gender response, the
planted entanglement that orthogonalisation removes, and identity kept or lost along a
direction, and must find nothing where nothing is planted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from facebias.generate import checks
from facebias.generate.hyperplanes import AttributeLabel, fit_from_labels

D = 12
rng0 = np.random.default_rng(0)
Q, _ = np.linalg.qr(rng0.normal(size=(D, D)))
N_GENDER = Q[:, 0]
N_SKIN = 0.6 * Q[:, 0] + 0.8 * Q[:, 1]  # entangled with gender: cos 0.6
N_YAW = Q[:, 2]
N_FREE = Q[:, 5]  # in no hyperplane's span


class LatentGenerator:
    """``synthesize`` returns the latents: the injected labellers read them directly."""

    latent_dim = D
    name = "planted"

    def sample(self, n, seed):
        return np.random.default_rng(seed).normal(size=(n, D))

    def synthesize(self, z):
        return np.asarray(z, float)


def measure(images, names):
    z = np.asarray(images)
    cols = {"p_male": 1 / (1 + np.exp(-2.0 * (z @ N_GENDER))), "ita": -10.0 * (z @ N_SKIN),
            "yaw_deg": 20.0 * (z @ N_YAW), "free": z @ N_FREE}
    return pd.DataFrame({n: cols[n] for n in names})


ATTRS = [AttributeLabel("gender", labeller="p_male"),
         AttributeLabel("skin_tone", labeller="ita", sign=-1.0, transform="rank"),
         AttributeLabel("yaw", labeller="yaw_deg", tau=0.0)]


def fitted(n=3000, gender_noise=0.05, seed=1):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, D))
    lab = measure(z, ["p_male", "ita", "yaw_deg"])
    g = lab["p_male"] + rng.normal(0, gender_noise, n)
    labels = pd.DataFrame({"gender": g, "skin_tone": -lab["ita"], "yaw": lab["yaw_deg"]})
    return z, labels, fit_from_labels(z, labels, ATTRS)


def test_move_to_sets_the_decision_value_and_orthogonal_moves_hold_the_others():
    z, _, hp = fitted()
    zz = LatentGenerator().sample(20, 3)
    for ortho in (False, True):
        m = checks.move_to(hp, zz, "gender", 1.25, ortho)
        np.testing.assert_allclose(hp.values(m)["gender"], 1.25, atol=1e-9)
    m = checks.move_to(hp, zz, "gender", 1.25, True)
    np.testing.assert_allclose(hp.values(m)[["skin_tone", "yaw"]], hp.values(zz)[["skin_tone", "yaw"]], atol=1e-9)
    raw = checks.move_to(hp, zz, "gender", 1.25, False)
    assert np.abs(hp.values(raw)["skin_tone"] - hp.values(zz)["skin_tone"]).max() > 0.1  # entangled


def test_gender_spearman_finds_the_planted_response_and_not_a_null_one():
    _, _, hp = fitted()
    r = checks.gender_spearman(LatentGenerator(), hp, n_seeds=60, seed=5, measure=measure)
    assert r["spearman"] > 0.95 and r["measured"] == 1.0
    assert r["spearman_within_seed"] == pytest.approx(1.0) and r["n_seeds_within"] == 60  # monotone per seed
    assert r["mean_by_level"] == sorted(r["mean_by_level"])
    # a labeller of something the gender axis does not move (a latent direction outside every
    # hyperplane's span) sees no response
    r0 = checks.gender_spearman(LatentGenerator(), hp, n_seeds=60, seed=5, labeller="free", measure=measure)
    assert abs(r0["spearman"]) < 0.15


def test_drift_readings_one_row_per_axis_direction_seed_and_attribute():
    _, _, hp = fitted()
    r = checks.drift_readings(LatentGenerator(), hp, {"gender": (-1.5, 1.5), "yaw": (-1.0, 2.0)}, n_seeds=30,
                              seed=7, measure=measure)
    assert len(r) == 2 * 2 * 30 * 3  # axes x directions x seeds x measured attributes
    assert set(r["labeller"]) == {"p_male", "ita", "yaw_deg"}
    assert r.loc[r["on_axis"], "attribute"].tolist() == r.loc[r["on_axis"], "axis"].tolist()
    np.testing.assert_allclose(r["diff"], r["reading_hi"] - r["reading_lo"])
    # the orthogonalised step holds every other hyperplane: its predicted change is 0 off the axis
    off = r[~r["on_axis"] & (r["direction"] == "orthogonal")]
    assert np.abs(off["predicted"]).max() < 1e-9
    # the axis moved along its own direction: its hyperplane predicts a change in that direction
    own = r[r["on_axis"] & (r["axis"] == "yaw")]
    assert (own["predicted"] > 0).all()
    # both steps move the axis' decision value by 1 per unit, so the orthogonalised step is 1 / cos as long
    cos = r.loc[r["axis"] == "gender", "cos_raw_orthogonal"].iat[0]
    zz = LatentGenerator().sample(1, 0)
    step = checks.move_to(hp, zz, "gender", 1.0, True) - checks.move_to(hp, zz, "gender", 0.0, True)
    assert np.linalg.norm(step) == pytest.approx(1 / cos) and cos < 0.99  # skin is entangled with gender
    with pytest.raises(ValueError, match="lo 1.0 must be below hi"):
        checks.drift_readings(LatentGenerator(), hp, {"gender": (1.0, 1.0)}, n_seeds=3, measure=measure)
    with pytest.raises(ValueError, match="not a hyperplane"):
        checks.drift_readings(LatentGenerator(), hp, {"hair": (-1.0, 1.0)}, n_seeds=3, measure=measure)


def test_sequence_auc_tells_identity_kept_from_identity_lost():
    _, _, hp = fitted()

    def keeps(images):  # identity = the latent without its yaw component
        z = np.asarray(images)
        v = z - np.outer(z @ N_YAW, N_YAW)
        return v / np.linalg.norm(v, axis=1, keepdims=True), np.ones(len(z), bool)

    def loses(images):  # identity = yaw alone (+ a constant): every face at one yaw looks alike
        z = np.asarray(images)
        v = np.stack([z @ N_YAW, np.ones(len(z))], 1)
        return v / np.linalg.norm(v, axis=1, keepdims=True), np.ones(len(z), bool)

    a = checks.sequence_auc(LatentGenerator(), hp, ["yaw"], step=1.5, n_seeds=40, embed=keeps)
    assert a["auc"].iat[0] > 0.99 and a["median_genuine"].iat[0] > 0.9
    b = checks.sequence_auc(LatentGenerator(), hp, ["yaw"], step=1.5, n_seeds=40, embed=loses)
    assert b["auc"].iat[0] < 0.6


def test_gender_levers_one_row_per_combination_and_more_labels_fit_better():
    z, labels, _ = fitted(n=2000, gender_noise=0.3)
    t = checks.gender_levers(LatentGenerator(), z, labels, ATTRS, n_labels=(40, None), kinds=("ridge", "svm"),
                             orthogonal=(False, True), n_seeds=40, seed=3, measure=measure)
    assert len(t) == 8 and set(t["n_labels"]) == {40, 2000}
    by_n = t.groupby("n_labels")["spearman"].mean()
    assert by_n[2000] > by_n[40] and by_n[2000] > 0.9


def test_detection_and_impostors_on_planted_embeddings():
    def embed(images):
        z = np.asarray(images)
        return z / np.linalg.norm(z, axis=1, keepdims=True), np.arange(len(z)) % 10 != 0  # 10 % fail

    r = checks.detection_and_impostors(LatentGenerator(), n=200, seed=1, embed=embed,
                                       detect=lambda ims: np.ones(len(ims), bool))
    assert r["detect_rate"] == 1.0 and r["enrol_rate"] == pytest.approx(0.9)
    assert r["n_impostor_pairs"] == 180 * 179 // 2
    # cosines of independent Gaussian vectors in 12 dimensions: median 0, P(cos >= 0.363) ~ 0.12
    assert abs(r["median_impostor"]) < 0.03 and 0.08 < r["share_above_threshold"] < 0.16
    # brute force over the same pairs: the share is FMR at SFace's 0.363, match iff cos > t
    z = LatentGenerator().sample(200, 1)
    v = (z / np.linalg.norm(z, axis=1, keepdims=True))[np.arange(200) % 10 != 0]
    cos = [float(v[i] @ v[j]) for i in range(len(v)) for j in range(i + 1, len(v))]
    assert r["share_above_threshold"] == sum(c > 0.363 for c in cos) / len(cos)


def test_published_thresholds_have_one_source_and_the_strict_convention():
    """One table for studies and checks; dlib's distance rule (<= 0.6 on unit vectors) is
    the cosine rule s >= 1 - 0.6^2/2, and an impostor exactly at a threshold is no match."""
    from facebias.faces.embed import PUBLISHED_THRESHOLDS
    from facebias.studies import hcic

    assert checks.PUBLISHED_THRESHOLDS is PUBLISHED_THRESHOLDS is hcic.MODEL_THRESHOLDS
    rng = np.random.default_rng(0)
    a, b = (x / np.linalg.norm(x, axis=1, keepdims=True) for x in rng.standard_normal((2, 5000, 4)))
    s = np.sum(a * b, axis=1)
    d = np.linalg.norm(a - b, axis=1)
    keep = np.abs(d - 0.6) > 1e-9  # off the boundary, where rounding decides
    assert np.array_equal((d <= 0.6)[keep], (s >= PUBLISHED_THRESHOLDS["dlib"])[keep])

    def embed(images):
        n = len(images)
        t = PUBLISHED_THRESHOLDS["sface"]
        v = np.zeros((n, 3))
        v[0] = [1, 0, 0]
        v[1] = [t, np.sqrt(1 - t * t), 0]  # cos(v0, v1) = t, float-exactly or not: check below
        v[2:] = [0, 0, 1]
        return v, np.ones(n, bool)

    r = checks.detection_and_impostors(LatentGenerator(), n=3, seed=0, embed=embed,
                                       detect=lambda ims: np.ones(len(ims), bool))
    v = embed([0] * 3)[0]
    cos01 = float(v[0] @ v[1])
    expected = (int(cos01 > 0.363) + int(float(v[0] @ v[2]) > 0.363) + int(float(v[1] @ v[2]) > 0.363)) / 3
    assert cos01 == 0.363 and r["share_above_threshold"] == expected == 0.0


def test_target_table_hand_computed():
    t = checks.target_table({"a": 0.96, "b": 0.31, "c": float("nan"), "d": 2.0},
                            [("a", "A", 0.95, ">="), ("b", "B", 0.30, "<="), ("c", "C", 0.5, ">="),
                             ("d", "D", None, ""), ("e", "E", 1.0, ">=")])
    assert t["met"].tolist() == [True, False, False, None, False]
    assert t["target"].tolist() == [">= 0.95", "<= 0.3", ">= 0.5", "report", ">= 1.0"]
    assert np.isnan(t["measured"].iat[4])
    with pytest.raises(ValueError, match="op must be"):
        checks.target_table({}, [("a", "A", 1.0, ">")])
