"""Paper 000 measurement side (facebias.studies.hcic): similarities, HCIC labels, error
curves, annotation checks, and a toy FR system with planted group effects (B5)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest
from hcic_fixtures import make_images, table_fixtures

from facebias.annotate.labels import annotated_bins, label_pairs
from facebias.generate.build import GROUPS
from facebias.studies import hcic as H
from facebias.worlds.toy_fr import simulate_embeddings

images, pairs = table_fixtures(partial(make_images, groups=GROUPS))

PLANTED = {"BF": 0.5, "AM": 0.5}


@pytest.fixture(scope="module")
def toy(images, pairs):
    """Toy system with planted noise on BF and AM; pairs scored, plus cross-group pairs."""
    vec = simulate_embeddings(images, dim=64, group_noise=PLANTED, seed=1, centre=H.centre_levels(images))
    cross = H.cross_group_pairs(images, n_per_prototype=1, seed=2, start_id=len(pairs))
    allp = pd.concat([pairs, cross], ignore_index=True)
    allp["relation"] = H.relation(allp)
    allp["score"] = H.pair_scores(allp, vec)
    return vec, allp


# --------------------------------------------------------------------------- similarities
def test_cosine_symmetric_bounded_and_matches_sklearn():
    from sklearn.metrics.pairwise import cosine_similarity

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    s = H.cosine(a, b)
    np.testing.assert_allclose(s, H.cosine(b, a))
    assert ((s >= -1) & (s <= 1)).all()
    np.testing.assert_allclose(s, np.diag(cosine_similarity(a, b)), atol=1e-12)
    np.testing.assert_allclose(H.cosine(a, a), 1.0)
    np.testing.assert_allclose(H.cosine(a, -3 * a), -1.0)
    a[3] = np.nan
    a[4] = 0
    out = H.cosine(a, b)
    assert np.isnan(out[[3, 4]]).all() and np.isfinite(np.delete(out, [3, 4])).all()
    assert float(H.cosine([1, 0], [0, 2])) == 0.0


def test_pair_scores_counts_failures_to_enrol():
    pairs = pd.DataFrame({"image_a": ["a", "a", "b"], "image_b": ["b", "c", "c"]})
    vec = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [np.nan, np.nan]}
    s = H.pair_scores(pairs, vec)
    np.testing.assert_allclose(s.iloc[0], 1 / np.sqrt(2))
    assert s.iloc[1:].isna().all()
    assert s.attrs == {"n_pairs": 3, "n_missing": 2, "n_images_failed": 1}
    with pytest.raises(ValueError, match="'d' has no vector"):
        H.pair_scores(pd.DataFrame({"image_a": ["a"], "image_b": ["d"]}), vec)


def test_cross_group_pairs_structure(images, pairs):
    cross = H.cross_group_pairs(images, n_per_prototype=2, seed=0, start_id=10_000)
    assert set(H.PAIR_COLUMNS) <= set(cross.columns)
    n_proto = images["is_prototype"].sum()
    assert len(cross) == n_proto * 2 * 20 and cross["pair_id"].min() == 10_000 and cross["pair_id"].is_unique
    assert (cross["group_a"] != cross["group_b"]).all() and (cross["seed_a"] != cross["seed_b"]).all()
    assert (cross["label"] == 0).all() and (H.relation(cross) == "different_group").all()
    # each partner contributes its 20 slots, 4 of which are its own prototype image
    per = cross.groupby(["prototype_a", "prototype_b"])
    assert (per.size() == 20).all() and (per["b_is_prototype"].sum() == 4).all()
    rel = H.relation(pairs)
    assert set(rel[pairs["label"] == 1]) == {"same_prototype"} and set(rel[pairs["label"] == 0]) == {"same_group"}
    # deterministic
    pd.testing.assert_frame_equal(cross, H.cross_group_pairs(images, 2, seed=0, start_id=10_000))


def test_toy_similarity_ordering_and_pose_effect(toy):
    _, p = toy
    med = p.groupby("relation")["score"].median()
    assert med["same_prototype"] > med["same_group"] > med["different_group"]
    self_pairs = p[p["is_self_pair"]]
    np.testing.assert_allclose(self_pairs["score"], 1.0, atol=1e-6)
    pose = p[(p["relation"] == "same_prototype") & (p["attribute"] == "pose")]
    by_abs = pose.groupby((pose["level"] - 2).abs())["score"].median()
    assert by_abs.is_monotonic_decreasing and by_abs.iloc[0] > by_abs.iloc[-1] + 0.1
    summ = H.similarity_summary(p, "score", by=["relation", "attribute", "level", "group"])
    assert {"median", "q15", "q85", "n", "n_missing"} <= set(summ.columns)
    assert (summ["q15"] <= summ["median"]).all() and (summ["median"] <= summ["q85"]).all()
    assert summ["n"].sum() == len(p)
    # pose (strongest edit) moves similarity more than age at the sequence ends
    d = H.delta_attr(p, "score")
    ends = d[d["level"] == 0].set_index("attribute")["delta"]
    assert ends["pose"] > ends["age"] > 0
    assert (d.loc[d["attribute"] == "pose"].set_index("level")["delta"].loc[[0, 1]].diff().dropna() < 0).all()


def test_toy_is_deterministic_and_order_independent(images):
    a = simulate_embeddings(images, dim=16, group_noise=PLANTED, seed=3, centre=H.centre_levels(images))
    b = simulate_embeddings(images.iloc[::-1], dim=16, group_noise=PLANTED, seed=3,
                            centre=H.centre_levels(images))
    pd.testing.assert_frame_equal(a, b.loc[a.index])
    np.testing.assert_allclose(np.linalg.norm(a.to_numpy(), axis=1), 1.0, atol=1e-6)
    assert not np.allclose(a.to_numpy(), simulate_embeddings(images, dim=16, seed=4, centre=H.centre_levels(images)).to_numpy())


def test_delta_attr_hand_case():
    p = pd.DataFrame({"prototype_a": ["P", "P", "Q", "Q"], "prototype_b": ["P", "P", "Q", "Q"],
                      "is_self_pair": [True, False, True, False], "attribute": ["pose"] * 4,
                      "level": [2, 0, 2, 0], "score": [1.0, 0.6, 0.9, 0.7]})
    d = H.delta_attr(p).set_index("level")
    assert d.loc[0, "delta"] == pytest.approx((0.4 + 0.2) / 2) and d.loc[2, "delta"] == 0
    assert d.loc[0, "se"] == pytest.approx(np.std([0.4, 0.2], ddof=1) / np.sqrt(2))


# --------------------------------------------------------------------------- error rates
def test_error_curves_monotone_endpoints_and_brute_force(toy):
    _, p = toy
    p = p[p["relation"] != "different_group"]
    curves = H.error_curves(p, "score", "label")
    assert len(curves) == 4 * 6
    for c in curves.values():
        assert (np.diff(c.fnmr) >= 0).all() and (np.diff(c.fmr) <= 0).all()
        assert (c.fmr[0], c.fnmr[0]) == (1.0, 0.0) and (c.fmr[-1], c.fnmr[-1]) == (0.0, 1.0)
    # brute force on one small cell: every threshold, counting with a loop
    key = ("light", "WM")
    sub = p[(p["attribute"] == key[0]) & (p["group"] == key[1])]
    c = curves[key]
    for t, fmr, fnmr in list(zip(c.thresholds, c.fmr, c.fnmr, strict=True))[::7]:
        gen = [s for s, lab in zip(sub["score"], sub["label"], strict=True) if lab == 1]
        imp = [s for s, lab in zip(sub["score"], sub["label"], strict=True) if lab == 0]
        assert fnmr == sum(s <= t for s in gen) / len(gen)
        assert fmr == sum(s > t for s in imp) / len(imp)
    pts = H.fixed_threshold_points(p, "score", "label", t=0.6)
    row = pts[(pts["attribute"] == key[0]) & (pts["group"] == key[1])].iloc[0]
    gen, imp = sub.loc[sub["label"] == 1, "score"], sub.loc[sub["label"] == 0, "score"]
    assert row["fnmr"] == (gen <= 0.6).mean() and row["fmr"] == (imp > 0.6).mean()
    assert (row["n_genuine"], row["n_impostor"]) == (len(gen), len(imp))


def test_self_pairs_are_never_false_non_matches(toy):
    _, p = toy
    selfs = p[p["is_self_pair"]].assign(label=1)
    table = H.fnmr_by_threshold(selfs, "score", "label", [-1.0, 0.0, 0.6, 0.99, 0.9999])
    assert (table.to_numpy() == 0).all()


def test_fnmr_per_group_falls_as_the_threshold_falls(toy):
    _, p = toy
    t = np.linspace(0.95, -0.2, 24)  # falling
    table = H.fnmr_by_threshold(p, "score", "label", t)
    assert list(table.index) == sorted(GROUPS)
    assert (np.diff(table.to_numpy(), axis=1) <= 0).all()  # never rises as t falls
    assert (table.iloc[:, 0] > table.iloc[:, -1]).all()  # and does fall
    assert (table.iloc[:, -1] == 0).all()


def test_planted_noisy_groups_have_worse_fnmr_and_others_do_not_differ(toy):
    _, p = toy
    p = p[p["relation"] != "different_group"]
    res = H.fnmr_at_fmr_by_group(p, "score", "label", fmr=1e-2, n_boot=100, seed=0).set_index("group")
    fnmr = res["fnmr_group"]
    planted, null = fnmr[list(PLANTED)], fnmr.drop(list(PLANTED))
    assert planted.min() > null.max()
    assert null.max() - null.min() < planted.min() - null.max()
    # planted groups' intervals lie above every unplanted group's estimate
    assert (res.loc[list(PLANTED), "fnmr_group_lo"] > null.max()).all()
    # the unplanted groups' intervals overlap each other (no difference found)
    assert res.loc[null.index, "fnmr_group_lo"].max() <= res.loc[null.index, "fnmr_group_hi"].min()
    assert (res["fnmr_group_lo"] <= fnmr).all() and (fnmr <= res["fnmr_group_hi"]).all()


def test_fnmr_at_fmr_skips_groups_without_both_kinds(toy):
    _, p = toy
    p = p[(p["relation"] != "different_group") & ~((p["group"] == "WF") & (p["label"] == 0))]
    res = H.fnmr_at_fmr_by_group(p, "score", "label", fmr=0.05, n_boot=0)
    assert "WF" not in set(res["group"]) and res.attrs["skipped"] == ["WF"] and len(res) == 5
    # each group's FNMR is the metrics FNMR at its own threshold_at_fmr
    from facebias.metrics import fnmr_at_fmr

    sub = p[p["group"] == "BM"]
    want = fnmr_at_fmr(sub.loc[sub["label"] == 1, "score"], sub.loc[sub["label"] == 0, "score"], 0.05)
    assert res.set_index("group").loc["BM", "fnmr_group"] == pytest.approx(want)


def test_bootstrap_interval_covers_the_true_fnmr():
    from scipy.stats import norm

    fmr, mu = 0.1, 2.0
    true = norm.cdf(norm.ppf(1 - fmr) - mu)  # genuine N(2,1), impostor N(0,1)
    covered = 0
    for rep in range(10):
        rng = np.random.default_rng(rep)
        n_proto, per = 60, 10  # prototype clusters with a shared random effect
        proto = np.repeat([f"p{i}" for i in range(n_proto)], per)
        u = np.repeat(rng.normal(0, 0.3, n_proto), per)
        gen = mu + u + rng.normal(0, np.sqrt(1 - 0.09), proto.size)
        imp = u + rng.normal(0, np.sqrt(1 - 0.09), proto.size)
        df = pd.DataFrame({"score": np.concatenate([gen, imp]), "label": [1] * proto.size + [0] * proto.size,
                           "group": "G", "prototype_a": np.concatenate([proto, proto])})
        r = H.fnmr_at_fmr_by_group(df, "score", "label", fmr=fmr, n_boot=200, seed=rep).iloc[0]
        covered += r["fnmr_group_lo"] <= true <= r["fnmr_group_hi"]
    assert covered >= 8  # nominal 95 %


# --------------------------------------------------------------------------- HCIC labels
def test_labels_non_decreasing_in_t_hcic_and_aligned_by_pair_id(pairs):
    rng = np.random.default_rng(0)
    h = rng.integers(0, 21, len(pairs)) / 20  # HCIC lives on a 0.05 grid
    counts = [label_pairs(pairs, h, t).sum() for t in (0.0, 0.2, 0.3, 0.4, 1.0)]
    assert counts == sorted(counts) and counts[-1] == len(pairs)
    assert counts[0] == (h == 0).sum()
    lab = label_pairs(pairs, h, 0.3)
    assert ((lab == 1) == (h <= 0.3)).all()
    series = pd.Series(h, index=pairs["pair_id"]).iloc[::-1]
    pd.testing.assert_series_equal(label_pairs(pairs, series, 0.3), lab)
    with pytest.raises(ValueError, match="outside"):
        label_pairs(pairs, np.r_[h[:-1], 1.5], 0.3)


def test_pair_item_ids():
    assert list(H.pair_item_ids(pd.DataFrame({"pair_id": [0, 42]}))) == ["pair_00000", "pair_00042"]


def test_uncanny_filter_needs_both_images():
    import facebias.annotate.aggregate  # noqa: F401
    pairs = pd.DataFrame({"image_a": ["a", "a", "b", "c"], "image_b": ["b", "c", "c", "c"]})
    unc = pd.Series({"a": 0.1, "b": 0.79, "c": 0.8})
    keep = H.uncanny_pair_keep(pairs, unc)
    assert list(keep) == [True, False, False, False]
    with pytest.raises(ValueError, match="no score for image 'b'"):
        H.uncanny_pair_keep(pairs, unc.drop("b"))


def test_annotated_bins_edges():
    x = [0, 0.79, 0.8, 1.59, 1.6, 2.4, 3.19, 3.2, 4.0]
    assert list(annotated_bins(x)) == [0, 0, 1, 1, 2, 3, 3, 4, 4]
    with pytest.raises(ValueError, match="within"):
        annotated_bins([4.1])
    pairs = pd.DataFrame({"image_b": ["x", "y", "z"], "attribute": ["age", "pose", "expression"],
                          "level": [0, 3, 4]})
    lv = H.human_levels(pairs, {"age": pd.Series({"x": 3.5}), "expression": pd.Series({"z": 1.0})})
    assert list(lv) == [4, 3, 1]


# --------------------------------------------------------------------------- annotations
def _pair_votes(pairs: pd.DataFrame, rng: np.random.Generator, shift: dict[str, float]) -> pd.DataFrame:
    """Votes frame (store.votes columns) for the pairs: 9 raw responses per pair."""
    base = np.where(pairs["label"].to_numpy() == 1, 0.8, 3.0) + pairs["group"].map(shift).fillna(0).to_numpy()
    vals = np.clip(np.rint(base[:, None] + rng.normal(0, 1.0, (len(pairs), 9))), 0, 4).astype(int)
    items = np.repeat(H.pair_item_ids(pairs).to_numpy(), 9)
    return pd.DataFrame({"vote_id": np.arange(vals.size).astype(str), "annotator": np.tile([f"a{i}" for i in range(9)],
                         len(pairs)), "item_id": items, "question": "identity", "value": vals.ravel(), "k": 5,
                         "time": 0.0, "source": "simulated"})


def test_group_independence_finds_planted_not_null(pairs):
    rng = np.random.default_rng(0)
    m_null = pd.DataFrame(_pair_votes(pairs, rng, {})["value"].to_numpy().reshape(-1, 9), index=pairs.index)
    m_plant = pd.DataFrame(_pair_votes(pairs, rng, {"BF": 0.6})["value"].to_numpy().reshape(-1, 9),
                           index=pairs.index)
    null = H.group_independence_test(m_null, pairs)
    plant = H.group_independence_test(m_plant, pairs)
    assert len(null) == 8 and not null["reject"].any()
    assert plant["reject"].all()
    # agrees with scipy on one cell, built by hand
    from scipy.stats import chi2_contingency

    m = (pairs["attribute"] == "pose") & (pairs["label"] == 1)
    tab = pd.crosstab(np.repeat(pairs.loc[m, "group"].to_numpy(), 9), m_plant[m].to_numpy().ravel())
    row = plant[(plant["attribute"] == "pose") & (plant["label"] == 1)].iloc[0]
    assert row["p"] == pytest.approx(chi2_contingency(tab.to_numpy())[1])
    assert row["p_bonferroni"] == pytest.approx(min(1.0, row["p"] * 8))


def test_own_group_check_detects_a_planted_effect_and_passes_the_null(pairs):
    """The chi-square test of Fig. 4 on simulated panels of known own-group effect. Truth:
    0 for self pairs, 0.15 for the other intended-same pairs, 0.70 for intended-different
    ones, the same in every group. Null (effect 0): responses depend on truth only, so the
    Bonferroni family rejects with probability <= alpha = 0.05; at this fixed seed none does.
    Planted (effect 0.5, 80 % of the panel from WM): another group's same-identity pair at
    0.15 is seen at 0.5 + 0.5 * (0.15 - 0.5) = 0.325 by 80 % of its raters against 20 % for
    WM's pairs, a mean shift of 0.6 * 0.175 * 4 = 0.42 raw levels; different-identity pairs
    shift by 0.6 * 0.10 * 4 = 0.24 levels. With ~4,000 responses per cell and group and a
    per-vote SD ~1.2, both shifts are over 10 standard errors: every cell must reject."""
    d = np.where(pairs["label"] == 1, 0.15, 0.70)
    d[H.self_pair_mask(pairs)] = 0.0
    tests, matrices = H.own_group_check(pairs, d, effects=(0.0, 0.5), majority="WM")
    null, plant = tests[tests["effect"] == 0.0], tests[tests["effect"] == 0.5]
    assert len(null) == len(plant) == 8 and (tests["majority"] == "WM").all()
    assert not null["reject"].any()
    assert plant["reject"].all()
    # the direction: other groups' same-identity pairs are voted more "different" than WM's
    same = (pairs["label"] == 1) & ~H.self_pair_mask(pairs)
    m = matrices[0.5]
    wm = m[same & (pairs["group"] == "WM")].to_numpy().mean()
    others = m[same & (pairs["group"] != "WM")].to_numpy().mean()
    assert others - wm > 0.2
    # the null matrix agrees with the test run directly on it
    direct = H.group_independence_test(matrices[0.0], pairs)
    np.testing.assert_allclose(direct["p"], null["p"])
    with pytest.raises(ValueError, match="majority"):
        H.own_group_check(pairs, d, majority="XX")


def test_human_seed_filter_through_the_store_drops_planted_bad_seeds(tmp_path):
    """40 candidate seeds x 6 prototypes. Planted: seeds 0-5 have one uncanny prototype
    (truth 1.0: raw 4, so votes below 4 come only from noise clipped at the top, the 3 %
    outliers and offsets: the mean of 9 stays near 0.95, far above 0.8) and seeds 6-11 one
    prototype of the wrong group (match 0.0: mean near 0.05 < 0.5); every other
    prototype is realistic (0.15) and on target (0.95). Keeping 28 must keep exactly the
    28 clean seeds; the null (no bad seed) marks every seed acceptable. The votes are in
    the store: the filter reads its scores back from there."""
    from facebias.annotate import AnnotationStore

    rows = [{"item_id": f"c{sd:03d}_{g}", "seed": sd, "true_uncanny": 0.15, "group_match": 0.95}
            for sd in range(40) for g in ("WM", "WF", "BM", "BF", "AM", "AF")]
    clean = pd.DataFrame(rows)
    bad = clean.copy()
    bad.loc[bad["seed"].lt(6) & bad["item_id"].str.endswith("_BF"), "true_uncanny"] = 1.0
    bad.loc[bad["seed"].between(6, 11) & bad["item_id"].str.endswith("_AM"), "group_match"] = 0.0
    out = H.human_seed_filter(bad, 28, tmp_path / "s.sqlite")
    assert out["kept"].sum() == 28
    assert set(out.loc[out["kept"], "seed"]) == set(range(12, 40))
    assert not out.loc[out["seed"] < 6, "realistic"].any() and out.loc[out["seed"] >= 6, "realistic"].all()
    assert not out.loc[out["seed"].between(6, 11), "group_ok"].any()
    with AnnotationStore(tmp_path / "s.sqlite") as store:
        v = store.votes()
    assert len(v) == len(bad) * 2 * 9 and set(v["source"]) == {"simulated"}
    assert set(v["question"]) == set(H.SEED_FILTER_SCALES)
    null = H.human_seed_filter(clean, 12, tmp_path / "n.sqlite")
    assert null["acceptable"].all() and null["kept"].sum() == 12
    with pytest.raises(ValueError, match="exists"):
        H.human_seed_filter(clean, 12, tmp_path / "n.sqlite")
    with pytest.raises(ValueError, match="n_keep"):
        H.human_seed_filter(clean, 41, tmp_path / "m.sqlite")


def test_annotator_consistency_and_vote_matrix(pairs):
    import facebias.annotate.aggregate  # noqa: F401
    sub = pairs.iloc[:40]
    votes = _pair_votes(sub, np.random.default_rng(1), {})
    mat = H.pair_vote_matrix(votes.sample(frac=1, random_state=0), sub)
    assert mat.shape == (40, 9) and mat.index.equals(sub.index)
    for i in (0, 17):  # same multiset of responses as in the votes
        mine = sorted(votes.loc[votes["item_id"] == f"pair_{sub['pair_id'].iloc[i]:05d}", "value"])
        assert sorted(mat.iloc[i].astype(int)) == mine
    mat.iloc[0] = 2.0
    mat.iloc[1] = [0, 0, 0, 0, 4, 4, 4, 4, 2]
    sd, summary = H.annotator_consistency(mat, sub)
    assert sd.iloc[0] == 0 and sd.iloc[1] == pytest.approx(np.std([0] * 4 + [4] * 4 + [2]) / 4)
    assert (sd.between(0, 0.5)).all() and set(summary.columns) >= {"attribute", "median", "q15", "q85", "n"}
    h = H.pair_hcic(mat)
    assert h[0] == 0.5 and h[1] == pytest.approx((0 + 0 + 2 + 4 + 4) / 5 / 4)


def test_response_histogram_tracks_steps(images):
    rows = []
    sub = images[(images["attribute"] == "age") | images["is_prototype"]]
    for _, r in sub.iterrows():
        step = 2 if r["is_prototype"] else r["level"]
        rows += [{"item_id": r["image_id"], "question": "age", "value": step}] * 3
        rows += [{"item_id": r["image_id"], "question": "gender", "value": 4 if r["group"].endswith("M") else 0}]
    v = pd.DataFrame(rows)
    tab = H.response_histogram(v, images, "age", by="step")
    assert list(tab.index) == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(np.diag(tab.to_numpy()), 1.0)
    g = H.response_histogram(v, images, "gender", by="group", normalise=False)
    assert g.loc["WM", 4] > 0 and 4 not in g.loc["WF"][g.loc["WF"] > 0].index


# --------------------------------------------------------------------------- real model
@pytest.mark.timeout(120)
def test_sface_same_prototype_more_similar_than_different_identity(tmp_path):
    import cv2  # noqa: F401

    from facebias.generate.build import write_pngs
    from facebias.generate.procedural import ProceduralGenerator

    gen = ProceduralGenerator(128)
    z = gen.sample(4, seed=3)
    lat = np.repeat(z, 2, axis=0)  # each identity at yaw 0 and 15
    imgs = gen.synthesize(lat, yaw=np.tile([0.0, 15.0], 4))
    names = [f"id{i // 2}_{i % 2}" for i in range(8)]
    write_pngs(tmp_path, names, imgs)
    paths = [tmp_path / f"{n}.png" for n in names]
    vec, ok = H.embed_images(paths, "sface", cache_dir=tmp_path / "cache")
    assert ok.all() and vec.shape == (8, 128)
    s = vec @ vec.T
    same = [s[2 * i, 2 * i + 1] for i in range(4)]
    diff = [s[i, j] for i in range(8) for j in range(i + 1, 8) if i // 2 != j // 2]
    assert np.mean(same) > np.mean(diff) + 0.1
    again, ok2 = H.embed_images(paths, "sface", cache_dir=tmp_path / "cache")  # from the cache
    np.testing.assert_array_equal(again, vec)


# --------------------------------------------------------------------------- the study's steps
def _image_votes(images: pd.DataFrame, uncanny_raw: dict[str, int]) -> pd.DataFrame:
    """9 identical votes per image and question (store schema): uncanny from ``uncanny_raw``
    (default 0), age = expression = 2."""
    rows = []
    for iid in images["image_id"].astype(str):
        for q in ("age", "expression", "gender", "skin_color", "uncanny"):
            v = uncanny_raw.get(iid, 0) if q == "uncanny" else 2
            rows += [{"annotator": f"a{j}", "item_id": iid, "question": q, "value": v} for j in range(9)]
    df = pd.DataFrame(rows)
    return df.assign(vote_id=np.arange(len(df)).astype(str), k=5, time=0.0, source="human")


def test_pair_labels_intended_without_votes_and_hcic_with(pairs, images):
    none = H.pair_labels(pairs, None, None, (0.2, 0.3), 0.3)
    assert none.kind == "intended" and none.label_sets == {"intended": "label"} and none.main == "intended"
    assert none.pairs["keep"].all() and none.matrix is None and none.label_counts == {}
    assert set(none.skipped) == {"hcic", "realism_filter"}
    assert (none.levels(pairs) == pairs["level"]).all()
    votes = _pair_votes(pairs, np.random.default_rng(3), {})
    bad = str(images["image_id"].iloc[0])  # one uncanny image: every pair holding it is dropped
    with_votes = H.pair_labels(pairs, votes, _image_votes(images, {bad: 4}), (0.2, 0.3), 0.3)
    assert with_votes.kind == "hcic" and with_votes.label_sets == {"0.2": "label_0.2", "0.3": "label_0.3"}
    p = with_votes.pairs
    holds_bad = (p["image_a"].astype(str) == bad) | (p["image_b"].astype(str) == bad)
    assert holds_bad.any() and (p["keep"] == ~holds_bad).all()
    assert with_votes.realism_filter["images_uncanny"] == 1
    assert with_votes.realism_filter["intended_positive_kept"] == int(p.loc[~holds_bad, "label"].sum())
    counts = with_votes.label_counts["0.3"]  # agrees with a direct count of the label column
    assert counts["positive_kept"] == int(p.loc[~holds_bad, "label_0.3"].sum())
    assert counts["intended_same_judged_different"] == int(((p["label"] == 1) & (p["label_0.3"] == 0)).sum())
    lv = with_votes.levels(pairs)  # age / expression: annotated bin of a mean raw 2 -> bin 2
    is_ae = pairs["attribute"].isin(["age", "expression"])
    assert (lv[is_ae] == 2).all() and (lv[~is_ae] == pairs.loc[~is_ae, "level"]).all()


def test_kept_pair_scores_align_by_pair_id_not_by_position(pairs):
    p = pairs.assign(keep=np.arange(len(pairs)) % 3 != 0)
    scored = pairs[["pair_id"]].assign(score_x=pairs["pair_id"] * 0.001)
    cross = pd.DataFrame({"pair_id": [10**6], "score_x": [9.0]})
    shuffled = pd.concat([cross, scored], ignore_index=True).sample(frac=1, random_state=0)
    kept = H.kept_pair_scores(p, shuffled, ["score_x"])
    assert len(kept) == int(p["keep"].sum()) and kept.index.equals(p.index[p["keep"]])
    np.testing.assert_allclose(kept["score_x"], kept["pair_id"] * 0.001)
    with pytest.raises(ValueError, match="no row for pair_id"):
        H.kept_pair_scores(p, scored.drop(index=pairs.index[1]), ["score_x"])  # row 1 is kept
    with pytest.raises(ValueError, match="unique"):
        H.kept_pair_scores(p, pd.concat([scored, scored.iloc[:1]]), ["score_x"])


def test_self_pairs_left_out_and_reported_apart(pairs, images):
    """Self pairs (an image with itself) are excluded from the scored pairs on request and
    summarised apart; the counts agree with a direct count of image_a == image_b."""
    direct = (pairs["image_a"] == pairs["image_b"]).to_numpy()
    assert direct.sum() == 50 * 6 * 4  # one per prototype and attribute (the centre slot)
    np.testing.assert_array_equal(H.self_pair_mask(pairs), direct)
    np.testing.assert_array_equal(H.self_pair_mask(pairs.drop(columns="is_self_pair")), direct)
    p = pairs.assign(keep=np.arange(len(pairs)) % 7 != 0)
    scored = pairs[["pair_id"]].assign(score_x=0.5)
    kept = H.kept_pair_scores(p, scored, ["score_x"], exclude_self=True)
    assert len(kept) == int((p["keep"] & ~direct).sum()) and not H.self_pair_mask(kept).any()
    # HCIC of the self pairs: votes 0 except every 10th self pair voted "possibly different"
    hcic = np.where(direct, 0.0, 0.75)
    flagged = np.flatnonzero(direct)[::10]
    hcic[flagged] = 0.75
    summary = H.self_pair_summary(p.assign(hcic=hcic), (0.2, 0.3))
    assert summary["n_self_pairs"] == direct.sum()
    assert summary["n_self_pairs_kept"] == int((direct & p["keep"]).sum())
    assert summary["judged_different"] == {"0.2": len(flagged) / direct.sum(), "0.3": len(flagged) / direct.sum()}
    assert summary["hcic_median"] == 0.0 and summary["hcic_max"] == 0.75
    assert set(H.self_pair_summary(pairs)) == {"n_self_pairs", "n_self_pairs_kept"}  # no votes: counts only


def test_filter_drop_rates_by_label_set_hand_case_and_in_pair_labels(pairs, images):
    p = pd.DataFrame({"label": [1, 1, 1, 1, 0, 0, 0, 0, 0, 0], "label_0.3": [1, 0, 0, 1, 0, 0, 0, 0, 1, 1]})
    keep = np.array([True, False, True, True, True, True, False, False, True, False])
    r = H.filter_drop_rates(p, keep)  # intended: 1 of 4 positives, 3 of 6 negatives dropped
    assert r == {"positive": {"n": 4, "dropped": 1, "rate": 0.25}, "negative": {"n": 6, "dropped": 3, "rate": 0.5}}
    r = H.filter_drop_rates(p, keep, "label_0.3")  # HCIC: positives rows 0, 3, 8, 9 -> 9 dropped
    assert r["positive"] == {"n": 4, "dropped": 1, "rate": 0.25} and r["negative"]["dropped"] == 3
    with pytest.raises(ValueError, match="keep"):
        H.filter_drop_rates(p, keep[:3])
    votes = _pair_votes(pairs, np.random.default_rng(5), {})
    bad = str(images["image_id"].iloc[0])
    lab = H.pair_labels(pairs, votes, _image_votes(images, {bad: 4}), (0.3,), 0.3)
    rates = lab.realism_filter["drop_rates"]
    assert set(rates) == {"intended", "0.3"}
    holds_bad = ((pairs["image_a"].astype(str) == bad) | (pairs["image_b"].astype(str) == bad)).to_numpy()
    assert rates["intended"]["positive"]["dropped"] == int((holds_bad & (pairs["label"] == 1)).sum())
    assert rates["0.3"]["negative"]["dropped"] == int((holds_bad & (lab.pairs["label_0.3"] == 0)).sum())
    assert lab.realism_filter["paper_intended_drop_rates"]["positive"] == pytest.approx(0.0265)


def test_hcic_config_parses_both_sections_and_rejects_bad_keys():
    from pathlib import Path

    from facebias.io import load_params

    root = Path(__file__).resolve().parents[3]
    for section in ("hcic", "hcic_dcgan"):
        cfg = H.HCICConfig.from_params(load_params(root / "params.yaml", section), section)
        assert cfg.t_hcic_main in cfg.t_hcic and set(cfg.models) <= set(H.MODEL_THRESHOLDS)
    for bad, match in (({"modles": ["sface"]}, "unknown key"), ({"models": ["arcface"]}, "hcic.models"),
                       ({"t_hcic_main": 0.5}, "one of t_hcic"), ({"n_boot": 2.0}, "hcic.n_boot"),
                       ({"toy_noise": {"BF": "x"}}, "toy_noise.BF"), ({"section": "x"}, "unknown key")):
        with pytest.raises(ValueError, match=match):
            H.HCICConfig.from_params(bad)
    with pytest.raises(ValueError, match="hcic_dcgan.fmr"):
        H.HCICConfig.from_params({"fmr": 0}, "hcic_dcgan")


def test_annotator_description():
    votes = pd.DataFrame({"source": ["human", "human", "simulated"], "annotator": ["a", "b", "a"]})
    assert H.annotator_description(votes) == "human annotators, simulated panel N=2"
    assert H.annotator_description(None) == "none"


def test_own_group_image_check_detects_a_planted_effect_and_passes_the_null():
    """Fig. 3 (c) on known truth: every group's faces are equally clearly gendered (P(male)
    0.95 / 0.05), so with no own-group effect the groups' agreement with the intended gender
    differs only by chance: over 20 panels the test rejects at most 3 (the 95th percentile of
    Binomial(20, 0.05) is 3); with effect 0.5 and 80 % of the panel from WM, other groups'
    faces are mostly seen by other-group raters, whose perceived truth shrinks to
    0.5 + 0.5 (0.95 - 0.5) = 0.725, so their agreement falls by about 0.8 x 0.225 ~ 0.18 of the
    scale, the majority's by ~0.2 x 0.225 ~ 0.05 (gap > 0.1), and every panel rejects."""
    rows = [{"image_id": f"{g}_{i}", "group": g, "gender": s, "true_gender": 0.95 if s == "male" else 0.05,
             "attribute": "prototype", "level": 0, "is_prototype": True}
            for g, (_r, s) in GROUPS.items() for i in range(40)]
    images = pd.DataFrame(rows)
    tests, hists = H.own_group_image_check(images, effects=(0.0, 0.5), majority="WM", majority_share=0.8)
    planted = tests.set_index("effect").loc[0.5]
    assert planted["majority_agreement"] - planted["other_agreement"] > 0.1 and planted["stratum"] == "male"
    runs = pd.concat([H.own_group_image_check(images, effects=(0.0, 0.5), majority="WM", seed=k)[0]
                      for k in range(20)])
    assert runs.loc[runs["effect"] == 0.0, "reject"].sum() <= 3
    assert runs.loc[runs["effect"] == 0.5, "reject"].all()
    assert (tests["n_votes"] == len(images) * 9).all()
    # the histograms are Fig. 3 (c): raw responses by group, shares summing to 1; female groups
    # answer "female" (level 0-1) mostly, and under the effect other groups move to the middle
    for h in hists.values():
        np.testing.assert_allclose(h.sum(axis=1), 1.0)
    assert hists[0.0].loc["WF", [0, 1]].sum() > 0.8
    assert hists[0.5].loc["BM", 2] > hists[0.0].loc["BM", 2]
    with pytest.raises(ValueError, match="majority"):
        H.own_group_image_check(images, majority="XX")
