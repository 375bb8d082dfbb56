"""Simulated annotator panel: truth recovery, the papers' disagreement levels, the own-group
effect, determinism, and simulate_synthetic on a tiny synthetic product built here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from facebias.annotate import (
    PAIR_SCALE,
    SCALES_HCIC,
    SCALES_TRANSECTS,
    AnnotationStore,
    Panel,
    hcic,
    item_sd,
    score,
    simulate_image_votes,
    simulate_pair_votes,
    simulate_synthetic,
    votes_matrix,
)
from facebias.annotate.simulate import (
    ATTR_MAP_HCIC,
    ATTR_MAP_TRANSECTS,
    pair_dissimilarity,
    realism_truth,
)
from facebias.generate import plan


def _truth(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {c: rng.uniform(0, 1, n) for c in set(ATTR_MAP_TRANSECTS.values()) | set(ATTR_MAP_HCIC.values())}
    return pd.DataFrame({"item_id": [f"im{i:04d}" for i in range(n)], **cols})


def test_image_votes_recover_truth_with_004_disagreement():
    truth = _truth(400)
    votes = simulate_image_votes(truth, SCALES_TRANSECTS, 5, Panel(noise=0.45), ATTR_MAP_TRANSECTS)
    assert list(votes.columns) == ["annotator", "item_id", "question", "value"]
    assert len(votes) == 400 * 8 * 5
    sds = []
    for q, sc in SCALES_TRANSECTS.items():
        ids, m = votes_matrix(votes, q)
        assert m.shape == (400, 5) and ids.tolist() == truth["item_id"].tolist()
        assert m.min() >= 0 and m.max() <= sc.k - 1
        rho = stats.spearmanr(score(m, sc.k), truth[ATTR_MAP_TRANSECTS[q]]).statistic
        assert rho > 0.9, (q, rho)
        sds.append(item_sd(m, sc.k))
        # each item is rated by 5 distinct annotators
        per_item = votes[votes["question"] == q].groupby("item_id")["annotator"].nunique()
        assert (per_item == 5).all()
    med = np.median(np.concatenate(sds))
    assert 0.07 <= med <= 0.14, med            # paper 004: median normalised SD ~0.1


def test_noise_controls_agreement():
    truth = _truth(300, seed=1)
    sd = {}
    for noise in (0.2, 0.45, 1.0):
        v = simulate_image_votes(truth, SCALES_HCIC, 9, Panel(noise=noise, outlier_rate=0),
                                 {"age": "true_age"})
        _, m = votes_matrix(v, "age")
        sd[noise] = np.median(item_sd(m, 5))
    assert sd[0.2] < sd[0.45] < sd[1.0]


def _pairs(n: int, d: float, group: str, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"item_id": [f"p{start + i:05d}" for i in range(n)],
                         "dissimilarity": d, "group": group})


def test_pair_votes_hcic_labels_and_spread():
    pairs = pd.concat([_pairs(600, 0.15, "A"), _pairs(1200, 0.70, "A", 600)], ignore_index=True)
    v = simulate_pair_votes(pairs, 9, Panel())  # default noise 1.7
    assert set(v["question"]) == {"identity"} and v["value"].between(0, PAIR_SCALE.k - 1).all()
    ids, m = votes_matrix(v, "identity")
    assert m.shape == (1800, 9)
    h = hcic(m)
    same, diff = h[:600], h[600:]
    assert (same <= 0.3).mean() > 0.8 and (diff > 0.3).mean() > 0.9
    sd = np.median(item_sd(m, 5))
    assert 0.27 <= sd <= 0.35, sd            # paper 000: per-pair SD median ~0.3


def test_identical_images_almost_never_judged_different():
    """An image paired with itself (dissimilarity 0) reaches HCIC > 0.3 in at most 1 % of
    pairs (the issue's requirement). Expected rate: a vote reaches level >= 2 with
    p ~ P(N(0, 1) > 1.5 / 0.6) + 0.03 * 3 / 5 = 0.024 for a typical annotator, and HCIC > 0.3
    needs >= 3 of 9 such votes: P(Bin(9, 0.024) >= 3) ~ 0.1 %, so 1 % leaves room for the
    careless and biased annotators. With the full pair noise (identical_noise = noise = 1.7)
    the same pairs exceed 1 %: the calibration, not the zero truth alone, does it. Pairs
    of distinct images keep the paper's per-pair SD ~0.3."""
    self_pairs = _pairs(4000, 0.0, "A")
    for seed in (0, 1):
        _, m = votes_matrix(simulate_pair_votes(self_pairs, 9, Panel(seed=seed)), "identity")
        assert (hcic(m) > 0.3).mean() <= 0.01
        _, m_full = votes_matrix(simulate_pair_votes(self_pairs, 9, Panel(seed=seed), identical_noise=1.7),
                                 "identity")
        assert (hcic(m_full) > 0.3).mean() > 0.01
    mixed = pd.concat([_pairs(100, 0.0, "A"), _pairs(400, 0.15, "A", 100), _pairs(1500, 0.70, "A", 500)],
                      ignore_index=True)
    _, m = votes_matrix(simulate_pair_votes(mixed, 9, Panel()), "identity")
    assert 0.27 <= np.median(item_sd(m, 5)) <= 0.35    # paper 000: per-pair SD median ~0.3
    with pytest.raises(ValueError, match="identical_noise"):
        simulate_pair_votes(self_pairs, 9, Panel(), identical_noise=-1)


def test_pair_votes_spread_grows_and_ordering_weakens_with_noise():
    """On a continuum of truths the votes recover the ordering pair by pair; more noise means
    more spread and a weaker (still strong) ordering."""
    cont = _pairs(500, 0.0, "A").assign(dissimilarity=np.linspace(0, 1, 500))
    rho, sd = [], []
    for noise in (0.0, 1.2, 1.7):
        _, mc = votes_matrix(simulate_pair_votes(cont, 9, Panel(), noise=noise), "identity")
        rho.append(stats.spearmanr(hcic(mc), cont["dissimilarity"]).statistic)
        sd.append(np.median(item_sd(mc, 5)))
    assert rho[0] > rho[1] > rho[2] > 0.85, rho
    assert sd[0] < sd[1] < sd[2], sd


def test_realism_filter_removes_far_shell_latents_and_only_those():
    """Planted uncanniness: latents on the typical shell of N(0, I) are never voted uncanny
    (mean normalised score >= 0.8, the 000 filter), latents far outside it mostly are."""
    rng = np.random.default_rng(5)
    d, n = 96, 400
    u = rng.standard_normal((n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    r = np.r_[np.full(n // 2, 1.0), np.full(n // 2, 1.25)]  # |z| / sqrt(d)
    z = u * (r * np.sqrt(d))[:, None]
    truth = realism_truth(z)
    np.testing.assert_allclose(truth[: n // 2], 0.15)
    np.testing.assert_allclose(truth[n // 2:], 0.90)
    items = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "true_uncanny": truth})
    v = simulate_image_votes(items, {"uncanny": SCALES_HCIC["uncanny"]}, 9, Panel(), {"uncanny": "true_uncanny"})
    ids, m = votes_matrix(v, "uncanny")
    flagged = pd.Series(score(m, SCALES_HCIC["uncanny"].k, agg="mean") >= 0.8, index=ids)[items["item_id"]].to_numpy()
    assert not flagged[: n // 2].any()
    assert flagged[n // 2:].mean() > 0.6


def _group_gap(effect: float) -> tuple[float, float]:
    """HCIC(minority group) - HCIC(majority group) on different-identity pairs of equal truth,
    with its bootstrap-free standard error."""
    pairs = pd.concat([_pairs(1500, 0.75, "A"), _pairs(1500, 0.75, "B", 1500)], ignore_index=True)
    panel = Panel(own_group_effect=effect, group_shares={"A": 0.8, "B": 0.2}, seed=3)
    _, m = votes_matrix(simulate_pair_votes(pairs, 9, panel), "identity")
    h = hcic(m)
    a, b = h[:1500], h[1500:]
    return float(a.mean() - b.mean()), float(np.sqrt(a.var() / len(a) + b.var() / len(b)))


def test_own_group_effect_planted_and_null():
    gap0, se0 = _group_gap(0.0)
    assert abs(gap0) < 3 * se0 + 1e-12                 # no effect -> no group difference
    gap, se = _group_gap(0.5)
    # majority-group annotators see group-B faces as less distinct -> lower HCIC for B
    assert gap > 5 * se and gap > 0.05, (gap, se)


def test_deterministic_given_seed():
    truth = _truth(50)
    a = simulate_image_votes(truth, SCALES_HCIC, 9, Panel(seed=7), ATTR_MAP_HCIC)
    b = simulate_image_votes(truth, SCALES_HCIC, 9, Panel(seed=7), ATTR_MAP_HCIC)
    c = simulate_image_votes(truth, SCALES_HCIC, 9, Panel(seed=8), ATTR_MAP_HCIC)
    pd.testing.assert_frame_equal(a, b)
    assert not a["value"].equals(c["value"])
    assert set(a["annotator"]) <= {f"sim{i:03d}" for i in range(40)}


def test_input_validation():
    truth = _truth(5)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        simulate_image_votes(truth.assign(true_age=2.0), SCALES_TRANSECTS, 5, Panel(), {"age": "true_age"})
    with pytest.raises(ValueError, match="not found"):
        simulate_image_votes(truth, SCALES_TRANSECTS, 5, Panel(), {"age": "true_nothing"})
    with pytest.raises(ValueError, match="n_per_item"):
        simulate_image_votes(truth, SCALES_TRANSECTS, 41, Panel(), {"age": "true_age"})
    with pytest.raises(ValueError, match="group"):
        simulate_pair_votes(_pairs(3, 0.5, "A").drop(columns="group"), 9,
                            Panel(own_group_effect=0.3))
    with pytest.raises(ValueError, match="outlier_rate"):
        Panel(outlier_rate=1.5)


# --------------------------------------------------------------------------- simulate_synthetic
@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory):
    """A tiny synthetic product (the 'smoke' size preset, planned but not rendered: the
    simulation needs the tables and latents only)."""
    from facebias.generate import load_generator
    from facebias.generate.build import (
        SynthConfig,
        fit_attribute_hyperplanes,
        plan_hcic,
        plan_transects,
    )

    cfg = SynthConfig.from_params({"scale": "smoke", "n_fit": 300, "n_seeds": 3,
                                   "n_candidates": 3, "n_negative": 2})
    gen = load_generator("procedural", size=64, seed=0)
    hp = fit_attribute_hyperplanes(gen, cfg)
    out = tmp_path_factory.mktemp("synthetic")
    tz, tt = plan_transects(gen, hp, cfg)
    tt = pd.concat([tt, gen.truth(tz).add_prefix("true_").reset_index(drop=True)], axis=1)
    (out / "transects").mkdir()
    tt.to_parquet(out / "transects" / "images.parquet")
    np.save(out / "transects" / "latents.npy", tz)
    hz, himg, slots = plan_hcic(gen, hp, gen.sample(cfg.n_seeds, seed=4), cfg)
    himg = pd.concat([himg, gen.truth(hz).add_prefix("true_").reset_index(drop=True)], axis=1)
    pairs = plan.hcic_pairs(himg[himg["is_prototype"]][["seed", "group", "prototype_id"]],
                            slots, n_negative=cfg.n_negative, seed=0)
    (out / "hcic").mkdir()
    himg.to_parquet(out / "hcic" / "images.parquet")
    pairs.to_parquet(out / "hcic" / "pairs.parquet")
    np.save(out / "hcic" / "latents.npy", hz)
    return out


def test_simulate_synthetic_writes_the_contract_files(synthetic_dir, tmp_path):
    out = tmp_path / "annotations"
    paths = simulate_synthetic(synthetic_dir, out)
    timg = pd.read_parquet(synthetic_dir / "transects" / "images.parquet")
    himg = pd.read_parquet(synthetic_dir / "hcic" / "images.parquet")
    pairs = pd.read_parquet(synthetic_dir / "hcic" / "pairs.parquet")
    cols = ["vote_id", "annotator", "item_id", "question", "value", "k", "time", "source"]

    tv = pd.read_parquet(paths["transects_votes"])
    assert list(tv.columns) == cols and (tv["source"] == "simulated").all()
    assert set(tv["item_id"]) == set(timg["image_id"]) and set(tv["question"]) == set(SCALES_TRANSECTS)
    assert (tv.groupby(["item_id", "question"]).size() == 5).all()
    assert (tv["k"] == tv["question"].map({q: s.k for q, s in SCALES_TRANSECTS.items()})).all()

    hv = pd.read_parquet(paths["hcic_image_votes"])
    assert set(hv["item_id"]) == set(himg["image_id"]) and set(hv["question"]) == set(SCALES_HCIC)
    assert (hv.groupby(["item_id", "question"]).size() == 9).all() and (hv["k"] == 5).all()

    pv = pd.read_parquet(paths["hcic_pair_votes"])
    assert set(pv["item_id"]) == {f"pair_{i:05d}" for i in pairs["pair_id"]}
    assert set(pv["question"]) == {"identity"} and (pv.groupby("item_id").size() == 9).all()
    assert pv["value"].dtype == np.int64 and pv["k"].eq(5).all()

    # one store holds all of it, and the parquet files are its export
    with AnnotationStore(paths["store"]) as store:
        assert store.n_votes == len(tv) + len(hv) + len(pv)
        assert set(store.votes()["vote_id"]) == set(tv["vote_id"]) | set(hv["vote_id"]) | set(pv["vote_id"])
        assert store.scales()["hcic/age"] == SCALES_HCIC["age"]
        assert store.scales()["transects/age"] == SCALES_TRANSECTS["age"]

    # perceived attributes follow the generator truth (Pearson: many images share a truth
    # value, e.g. a prototype's pose and light variants, so ranks are mostly ties)
    truth = himg.assign(true_uncanny=realism_truth(np.load(synthetic_dir / "hcic" / "latents.npy")))
    for q, col in ATTR_MAP_HCIC.items():
        ids, m = votes_matrix(hv, q)
        t = truth.set_index("image_id").loc[ids, col]
        assert stats.pearsonr(score(m, 5, agg="mean"), t).statistic > 0.8, q

    # HCIC mostly agrees with the intended labels (the paper's relabelling is the exception)
    ids, m = votes_matrix(pv, "identity")
    lab = pairs.set_index(pd.Index([f"pair_{i:05d}" for i in pairs["pair_id"]]))["label"].loc[ids]
    h = hcic(m)
    assert (h[lab.to_numpy() == 1] <= 0.3).mean() > 0.75
    assert (h[lab.to_numpy() == 0] > 0.3).mean() > 0.9

    # deterministic: a second run into another folder gives identical files
    again = simulate_synthetic(synthetic_dir, tmp_path / "again")
    for key in ("transects_votes", "hcic_image_votes", "hcic_pair_votes"):
        pd.testing.assert_frame_equal(pd.read_parquet(paths[key]), pd.read_parquet(again[key]))
    # a rerun into the same folder replaces the store instead of failing on duplicate ids
    simulate_synthetic(synthetic_dir, out)
    with AnnotationStore(paths["store"]) as store:
        assert store.n_votes == len(tv) + len(hv) + len(pv)


def test_simulate_synthetic_votes_on_the_perceived_faces(synthetic_dir, tmp_path):
    """perception_sd > 0: the transects' raters vote on perceived_truth (one blur per image,
    shared by all raters), so the mean vote follows the perceived value closer than the
    intended one; at 0 the perceived value is the intended one. The HCIC votes are untouched."""
    from facebias.annotate.simulate import perceived_truth

    timg = pd.read_parquet(synthetic_dir / "transects" / "images.parquet")
    plain = simulate_synthetic(synthetic_dir, tmp_path / "plain")
    blurred = simulate_synthetic(synthetic_dir, tmp_path / "blurred", perception_sd=1.3)
    seen = perceived_truth(timg, 1.3, seed=0).set_index("image_id")["true_gender"]
    tv = pd.read_parquet(blurred["transects_votes"])
    ids, m = votes_matrix(tv, "gender")
    mean = score(m, SCALES_TRANSECTS["gender"].k, agg="mean")
    intended = timg.set_index("image_id")["true_gender"].loc[ids]
    err_seen = np.abs(mean - seen.loc[ids].to_numpy()).mean()
    err_intended = np.abs(mean - intended.to_numpy()).mean()
    assert err_seen < 0.7 * err_intended, (err_seen, err_intended)
    assert not seen.loc[ids].equals(intended)
    pd.testing.assert_frame_equal(pd.read_parquet(plain["hcic_pair_votes"]), pd.read_parquet(blurred["hcic_pair_votes"]))
    pd.testing.assert_frame_equal(perceived_truth(timg, 0.0), timg)


def test_pair_dissimilarity_orders_pair_kinds(synthetic_dir):
    himg = pd.read_parquet(synthetic_dir / "hcic" / "images.parquet")
    pairs = pd.read_parquet(synthetic_dir / "hcic" / "pairs.parquet")
    d = pair_dissimilarity(himg, np.load(synthetic_dir / "hcic" / "latents.npy"), pairs)
    assert d.min() >= 0 and d.max() <= 1
    self_pairs = d[pairs["is_self_pair"].to_numpy()]
    np.testing.assert_array_equal(self_pairs, 0.0)  # an image with itself: nothing differs
    assert d[~pairs["is_self_pair"].to_numpy()].min() >= 0.10
    pos = d[(pairs["label"] == 1).to_numpy()]
    neg = d[(pairs["label"] == 0).to_numpy()]
    assert pos.max() < neg.min()


def test_simulate_synthetic_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="images.parquet"):
        simulate_synthetic(tmp_path / "nothing", tmp_path / "out")
