"""The BA-test known-truth world: planted factor and demographic effects are what the
scores carry (checked by an OLS fit), pairs keep their scores in any subset, and an
unbalanced evaluation overstates the planted gender gap."""

import numpy as np
import pytest
import statsmodels.formula.api as smf

from facebias.worlds.batest import BAWorldConfig, batest_pairs, factor_effect, make_batest_world

SMALL = BAWorldConfig(identities_per_group=60, images_per_identity=6)


@pytest.fixture(scope="module")
def world():
    w = make_batest_world(SMALL)
    return w, batest_pairs(w, SMALL)


def test_deterministic_and_labelled(world):
    w, p = world
    w2 = make_batest_world(SMALL)
    assert w.equals(w2) and batest_pairs(w2, SMALL).equals(p)
    assert w.attrs["source"] == "synthetic" == p.attrs["source"]
    assert (p.loc[p["label"] == 1, "id1"] == p.loc[p["label"] == 1, "id2"]).all()
    assert (p.loc[p["label"] == 0, "id1"] != p.loc[p["label"] == 0, "id2"]).all()
    assert not w.loc[w["gender"] == "F", "facial_hair"].any()


def test_a_pair_keeps_its_score_in_a_subset(world):
    w, p = world
    sub = w.iloc[::3]
    ps = batest_pairs(sub, SMALL)
    merged = ps.merge(p, on=["a", "b"], suffixes=("", "_full"))
    assert len(merged) > 100
    np.testing.assert_allclose(merged["score"], merged["score_full"], rtol=0, atol=1e-12)


def test_ols_recovers_the_planted_effects(world):
    """Genuine score = mu_g + e_a + e_b + noise: regressing on the factor terms of both
    images (statsmodels, an independent fit) recovers each planted coefficient."""
    w, p = world
    g = p[p["label"] == 1].copy()
    b = SMALL.effects
    g["pose"] = -(g.yaw1.abs() + g.pitch1.abs() + g.yaw2.abs() + g.pitch2.abs()) / 20
    g["bright"] = -(np.abs(g.brightness1 - 157) + np.abs(g.brightness2 - 157)) / 40
    g["area"] = (g.face_area1 + g.face_area2 - 0.7) / 0.1
    g["qual"] = g.quality1 + g.quality2 - 1
    g["hair"] = -(g.facial_hair1.astype(float) + g.facial_hair2.astype(float))
    g["group"] = g["group"].astype(str)
    fit = smf.ols("score ~ 0 + C(group) + pose + bright + area + qual + hair", g).fit()
    for term, key in (("pose", "pose"), ("bright", "brightness"), ("area", "face_area"),
                      ("qual", "quality"), ("hair", "facial_hair")):
        assert abs(fit.params[term] - b[key]) < 4 * fit.bse[term] + 1e-3, term
    for grp, mu in SMALL.genuine_mean.items():
        assert abs(fit.params[f"C(group)[{grp}]"] - mu) < 0.01


def test_effect_is_zero_at_the_reference_image():
    import pandas as pd

    ref = pd.DataFrame({"yaw": [0.0], "pitch": [0.0], "brightness": [157.0], "face_area": [0.35],
                        "quality": [0.5], "facial_hair": [False]})
    assert factor_effect(ref, SMALL)[0] == 0


def test_unbalanced_gap_overstates_the_planted_gap_and_equal_factors_do_not(world):
    w, p = world
    truth = SMALL.true_gender_gap()
    gen = p[p["label"] == 1].groupby("group", observed=True)["score"].mean()
    for r in "ABIW":
        assert gen[r + "M"] - gen[r + "F"] > 1.5 * truth[r]
    same = {g: 0.34 for g in SMALL.face_area_mean}
    flat = BAWorldConfig(identities_per_group=60, images_per_identity=6, face_area_mean=same,
                         facial_hair_rate=0.0, yaw_sd=dict.fromkeys(same, 10),
                         brightness_mean=dict.fromkeys(same, 150),
                         quality_mean=dict.fromkeys(same, 0.5))
    wf = make_batest_world(flat)
    gf = batest_pairs(wf, flat)
    m = gf[gf["label"] == 1].groupby("group", observed=True)["score"].mean()
    for r in "ABIW":
        assert abs((m[r + "M"] - m[r + "F"]) - truth[r]) < 0.25 * truth[r]


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="missing group"):
        BAWorldConfig(genuine_mean={"AF": 0.5})
    with pytest.raises(ValueError, match="unknown key"):
        BAWorldConfig.from_params({"sed": 1})


def test_pairs_reject_foreign_image_names(world):
    w, _ = world
    renamed = w.assign(image=w["image"].str.replace("syn", "img", regex=False))
    with pytest.raises(ValueError, match="not a BA-test world image name"):
        batest_pairs(renamed, SMALL)


def test_identity_noise_world_plants_the_asked_noise():
    """Exactly floor(rate x folder) mislabelled images per folder, each from another identity;
    same-identity cosines near 1 / (1 + spread^2), different-identity near 0; deterministic."""
    from facebias.worlds.batest import identity_noise_world

    emb, imgs = identity_noise_world(n_identities=30, images_per_identity=20, noise_rate=0.15, spread=1.0, seed=4)
    assert emb.shape == (600, 128) and np.allclose(np.linalg.norm(emb, axis=1), 1)
    assert (imgs.groupby("identity")["mislabelled"].sum() == 3).all()
    bad = imgs["mislabelled"].to_numpy()
    assert (imgs["true_identity"].to_numpy() != imgs["identity"].to_numpy()).tolist() == bad.tolist()
    cos = emb @ emb.T
    iu = np.triu_indices(len(emb), 1)
    t = imgs["true_identity"].to_numpy()
    same = t[iu[0]] == t[iu[1]]
    assert cos[iu][same].mean() == pytest.approx(0.5, abs=0.03)
    assert abs(cos[iu][~same].mean()) < 0.01
    emb2, imgs2 = identity_noise_world(n_identities=30, images_per_identity=20, noise_rate=0.15, spread=1.0, seed=4)
    assert np.array_equal(emb, emb2) and imgs.equals(imgs2)
    assert not identity_noise_world(noise_rate=0.0)[1]["mislabelled"].any()
    with pytest.raises(ValueError, match="noise_rate"):
        identity_noise_world(noise_rate=0.5)
