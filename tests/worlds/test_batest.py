"""The BA-test known-truth world: planted factor, mask-IoU and demographic effects are what
the scores carry (checked by an OLS fit), pairs keep their scores in any subset, the mask
IoU agrees with a pixel count, and the planted face morphology shows where paper 003's
Fig. 16 puts it."""

import numpy as np
import pytest
import statsmodels.formula.api as smf

from facebias.datasets.bfw import BFW_GROUPS
from facebias.faces.factors import mask_iou
from facebias.worlds.batest import (
    BAWorldConfig,
    batest_pairs,
    face_masks,
    factor_effect,
    make_batest_world,
    mask_iou_rows,
    mask_rows,
)

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
    """Genuine score = mu_g + u_id + e_a + e_b + b_iou (IoU - 0.9) / 0.1 + noise: regressing on
    the factor terms of both images and the pair's mask IoU (statsmodels, an independent fit,
    identity-clustered errors for u_id) recovers each planted coefficient."""
    w, p = world
    g = p[p["label"] == 1].copy()
    b = SMALL.effects
    g["pose"] = -(g.yaw1.abs() + g.pitch1.abs() + g.yaw2.abs() + g.pitch2.abs()) / 20
    g["bright"] = -(np.abs(g.brightness1 - 157) + np.abs(g.brightness2 - 157)) / 40
    g["area"] = (g.face_area1 + g.face_area2 - 0.7) / 0.1
    g["qual"] = g.quality1 + g.quality2 - 1
    g["hair"] = -(g.facial_hair1.astype(float) + g.facial_hair2.astype(float))
    g["iou"] = (g.mask_iou - 0.9) / 0.1
    g["group"] = g["group"].astype(str)
    fit = smf.ols("score ~ 0 + C(group) + pose + bright + area + qual + hair + iou", g).fit(
        cov_type="cluster", cov_kwds={"groups": g["id1"].to_numpy()})
    for term, key in (("pose", "pose"), ("bright", "brightness"), ("area", "face_area"),
                      ("qual", "quality"), ("hair", "facial_hair"), ("iou", "mask_iou")):
        assert abs(fit.params[term] - b[key]) < 4 * fit.bse[term] + 1e-3, term
    assert fit.params["iou"] > 4 * fit.bse["iou"]  # the IoU effect is there, not only allowed
    for grp, mu in SMALL.genuine_mean.items():
        assert abs(fit.params[f"C(group)[{grp}]"] - mu) < 4 * fit.bse[f"C(group)[{grp}]"] + 0.005


def test_effect_is_zero_at_the_reference_image():
    import pandas as pd

    ref = pd.DataFrame({"yaw": [0.0], "pitch": [0.0], "brightness": [157.0], "face_area": [0.35],
                        "quality": [0.5], "facial_hair": [False]})
    assert factor_effect(ref, SMALL)[0] == 0


def test_mask_iou_and_area_agree_with_a_pixel_count(world):
    """The row-integrated IoU and face area equal a brute-force count on 512 x 512 rasterised
    masks (facebias.faces.factors.mask_iou) to within the rasterisation error."""
    w, p = world
    rng = np.random.default_rng(0)
    rows = p.iloc[rng.choice(len(p), 40, replace=False)]
    by_pos = w.set_index(w["image"].str.slice(3, 9).astype(int))
    masks_a = face_masks(by_pos.loc[rows["a"]], size=512)
    masks_b = face_masks(by_pos.loc[rows["b"]], size=512)
    pixel = np.array([mask_iou(x, y) for x, y in zip(masks_a, masks_b, strict=True)])
    np.testing.assert_allclose(rows["mask_iou"], pixel, atol=0.01)
    assert rows["mask_iou"].std() > 0.05  # the pairs differ: the agreement is not trivial
    np.testing.assert_allclose(by_pos.loc[rows["a"], "face_area"], masks_a.mean(axis=(1, 2)), atol=0.005)
    left, right = mask_rows(w.iloc[:3])
    assert mask_iou_rows(left, right, np.arange(3), np.arange(3)).tolist() == [1.0, 1.0, 1.0]


def test_planted_morphology_shows_where_fig16_puts_it():
    """Females: more face above the eye line (smaller mask_top), varying more from image to
    image; males: more below the chin, most with facial hair (+beard_chin). The same world
    with one morphology for all shows none of it (heatmap F - M near 0 everywhere)."""
    from facebias.studies.batest import mask_heatmap

    c = BAWorldConfig(identities_per_group=60, images_per_identity=6)
    w = make_batest_world(c)
    for r in "ABIW":
        sub = w[w["race"] == r]
        diff, _, _ = mask_heatmap(face_masks(sub), sub["gender"], "F", "M")
        assert diff[:10].sum() > 5 and diff[54:].sum() < -5  # rows above 0.16 / below 0.84
        f, m = sub[sub["gender"] == "F"], sub[sub["gender"] == "M"]
        assert f["mask_top"].mean() < m["mask_top"].mean() - 0.03
        sd = lambda d: d.groupby("identity")["mask_top"].std().mean()  # noqa: E731
        assert sd(f) > 1.5 * sd(m)
        if m["facial_hair"].any():
            beard = m.groupby("facial_hair")["mask_chin"].mean()
            assert abs(beard[True] - beard[False] - c.beard_chin) < 0.015
        assert (m.groupby("identity")["facial_hair"].nunique() == 1).all()  # per identity
    rates = w[w["gender"] == "M"].groupby("race")["facial_hair"].mean()  # share of 60 identities
    for r, rate in rates.items():
        planted = c.facial_hair_rate[r + "M"]
        assert abs(rate - planted) < 3.5 * np.sqrt(planted * (1 - planted) / 60), (r, rate)
    one = {k: dict.fromkeys(BFW_GROUPS, v) for k, v in
           (("mask_top", 0.12), ("mask_top_sd", 0.025), ("mask_chin", 0.88), ("mask_width", 0.31),
            ("facial_hair_rate", 0.0))}
    w0 = make_batest_world(BAWorldConfig(identities_per_group=60, images_per_identity=6, **one))
    diff0, _, _ = mask_heatmap(face_masks(w0), w0["gender"], "F", "M")
    assert np.abs(diff0).max() < 0.06


def test_all_pairs_mode_keeps_every_score(world):
    """impostors="all": every within-group pair, the sampled pairs keep their scores in it,
    and cross-group impostors centre on cross_impostor_mean."""
    w, p = world
    sub = w[w["identity"] % 10 == 0]
    every = batest_pairs(sub, SMALL, impostors="all", factors=False)
    sizes = sub.groupby("group", observed=True).size()
    assert len(every) == int((sizes * (sizes - 1) // 2).sum())
    merged = every.merge(p, on=["a", "b"], suffixes=("", "_s"))
    assert len(merged) > 20
    np.testing.assert_array_equal(merged["score"], merged["score_s"])
    cross = batest_pairs(sub, SMALL, impostors="all", cross_group=True, factors=False)
    assert len(cross) == len(sub) * (len(sub) - 1) // 2
    x = cross[cross["group"] != cross["group2"]]
    effect = w.set_index(w["image"].str.slice(3, 9).astype(int))["effect"]
    terms = (effect.loc[x["a"]].to_numpy() + effect.loc[x["b"]].to_numpy()
             + SMALL.effects["mask_iou"] * (x["mask_iou"] - 0.9) / 0.1)
    resid = x["score"] - SMALL.gamma * terms - SMALL.cross_impostor_mean  # sigma * eps
    assert (x["label"] == 0).all() and abs(resid.mean()) < 4 * SMALL.sigma / np.sqrt(len(x))
    assert resid.std() == pytest.approx(SMALL.sigma, rel=0.03)
    with pytest.raises(ValueError, match="cross_group needs"):
        batest_pairs(sub, SMALL, cross_group=True)
    with pytest.raises(ValueError, match="take a subset"):
        batest_pairs(make_batest_world(BAWorldConfig(identities_per_group=400, images_per_identity=25)),
                     SMALL, impostors="all", cross_group=True)


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="missing group"):
        BAWorldConfig(genuine_mean={"AF": 0.5})
    with pytest.raises(ValueError, match="unknown key"):
        BAWorldConfig.from_params({"sed": 1})
    with pytest.raises(ValueError, match="facial_hair_rate.AF"):
        BAWorldConfig(facial_hair_rate={**BAWorldConfig().facial_hair_rate, "AF": 0.2})
    with pytest.raises(ValueError, match="leaves the crop"):
        BAWorldConfig(mask_top={**BAWorldConfig().mask_top, "WM": 0.45})
    with pytest.raises(ValueError, match="unknown factor"):
        BAWorldConfig(effects={"beard": 0.1})


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


@pytest.mark.parametrize("chunk", [1, 7, 8192])
def test_mask_iou_rows_equals_a_loop_over_pairs_and_rows_whatever_the_chunk(chunk):
    """Against a brute-force loop (per pair, per row: interval intersection and union), and
    the same bits for every chunk size (the buffers are reused between chunks)."""
    rng = np.random.default_rng(3)
    left = rng.uniform(0, 0.6, (30, 5))
    right = left + rng.uniform(0, 0.4, (30, 5))
    right[4] = left[4]  # an empty mask: IoU 0 with itself
    a, b = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    a[:2], b[:2] = 4, 4
    loop = []
    for i, j in zip(a, b, strict=True):
        inter = sum(max(0.0, min(right[i, r], right[j, r]) - max(left[i, r], left[j, r])) for r in range(5))
        union = sum(right[i, r] - left[i, r] + right[j, r] - left[j, r] for r in range(5)) - inter
        loop.append(inter / union if union > 0 else 0.0)
    got = mask_iou_rows(left, right, a, b, chunk=chunk)
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-15)
    assert got[:2].tolist() == [0.0, 0.0] and (got[2:] > 0).mean() > 0.5
    np.testing.assert_array_equal(got, mask_iou_rows(left, right, a, b, chunk=64))
