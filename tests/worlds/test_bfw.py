"""Known-truth BFW world: counts, folds, determinism, and recovery of the planted truth."""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from facebias.datasets.bfw import BFW_COLUMNS, BFW_FOLDERS, BFW_GROUPS
from facebias.worlds.bfw import (
    BFWWorldConfig,
    SystemSpec,
    image_embeddings,
    image_table,
    make_bfw_world,
    planted_truth,
    read_world,
    write_world,
)

SPREAD = dict(zip(BFW_GROUPS, np.linspace(0.0, 0.7, 8).round(2).tolist(), strict=True))
NOISE = dict(zip(BFW_GROUPS, np.linspace(0.5, 1.2, 8).round(2).tolist()[::-1], strict=True))


def small(**kw) -> BFWWorldConfig:
    base = dict(seed=3, identities_per_group=10, images_per_identity=6, n_folds=5)
    return BFWWorldConfig(**{**base, **kw})


def flat(rho: float, noise: float = 0.9, name: str = "null") -> SystemSpec:
    return SystemSpec(name, dict.fromkeys(BFW_GROUPS, rho), noise)


# --------------------------------------------------------------------------- helpers
def threshold_at_fmr(impostor: np.ndarray, f: float) -> float:
    """Smallest impostor score t with mean(impostor > t) <= f."""
    s = np.sort(impostor)
    return float(s[s.size - 1 - int(np.floor(f * s.size))])


def clustered_mean(
    x: np.ndarray, id1: np.ndarray, id2: np.ndarray, center: float | None = None
) -> tuple[float, float]:
    """Mean of a pair statistic and its standard error, clustered by subject.

    Pairs sharing a subject are dependent (two-way clustering: a pair counts towards
    both subjects' sums, the identity-pair overlap is removed once). For independent
    pairs this reduces to the binomial / iid variance. ``center``: residuals are taken
    about this value instead of the sample mean (the pooled rate under a null).
    """
    m = float(x.mean())
    r = x - (m if center is None else center)
    other = id1 != id2
    subj = np.concatenate([id1, id2[other]])
    s = np.bincount(subj, weights=np.concatenate([r, r[other]]))
    lo, hi = np.minimum(id1, id2)[other], np.maximum(id1, id2)[other]
    _, inv = np.unique(lo.astype(np.int64) << 32 | hi, return_inverse=True)
    p = np.bincount(inv, weights=r[other])
    return m, float(np.sqrt(max((s**2).sum() - (p**2).sum(), 0.0))) / x.size


def group_fmr(df: pd.DataFrame, system: str, f: float) -> tuple[pd.DataFrame, float]:
    """Per-group FMR of within-subgroup impostors at the threshold with pooled FMR ``f``,
    with subject-clustered standard errors under the null (all groups at the pooled FMR)
    and z-scores against the pooled FMR."""
    imp = df[(df.label == 0) & (df.a1 == df.a2)]
    s = imp[system].to_numpy()
    x = (s > threshold_at_fmr(s, f)).astype(float)
    pooled = float(x.mean())
    rows = {}
    for g in BFW_GROUPS:
        sel = (imp.a1 == g).to_numpy()
        rows[g] = clustered_mean(x[sel], imp.id1.to_numpy()[sel], imp.id2.to_numpy()[sel], pooled)
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["fmr", "se"])
    out["z"] = (out.fmr - pooled) / out.se
    return out, pooled


# --------------------------------------------------------------------------- structure
def test_columns_dtypes_and_labels():
    cfg = small()
    df = make_bfw_world(cfg)
    assert list(df.columns) == [*BFW_COLUMNS, "sim_a", "sim_b"]
    assert df.attrs["source"] == "synthetic"
    assert df.attrs["world"] == cfg.to_params()
    assert df.fold.dtype == np.int8 and df.label.dtype == np.int8
    assert df.id1.dtype == np.int32 and df.id2.dtype == np.int32
    for c in ("p1", "p2", "att1", "att2", "a1", "a2", "g1", "g2", "e1", "e2"):
        assert isinstance(df[c].dtype, pd.CategoricalDtype), c
    for c in ("sim_a", "sim_b"):
        assert df[c].dtype == np.float32
        assert np.isfinite(df[c]).all() and df[c].between(-1, 1).all()
    assert set(df.fold) == set(range(1, cfg.n_folds + 1))
    assert ((df.label == 1) == (df.id1 == df.id2)).all()
    assert df.id1.min() >= 0 and df.id2.max() == 8 * cfg.identities_per_group - 1
    for s in "12":
        a = df["a" + s].astype(str)
        assert (a == df["e" + s].astype(str) + df["g" + s].astype(str)).all()
        group_of_id = np.asarray(BFW_GROUPS)[df["id" + s] // cfg.identities_per_group]
        assert (a == group_of_id).all()
        folder = df["att" + s].astype(str)
        assert (folder == np.asarray(BFW_FOLDERS)[a.map(BFW_GROUPS.index)]).all()
        path = df["p" + s].astype(str)
        expect = folder + "/syn" + df["id" + s].map("{:04d}".format) + "/"
        assert (path.str.slice(0, -8) == expect).all()


def test_counts_and_folds():
    cfg = small()
    k, n, K = cfg.images_per_identity, cfg.identities_per_group, cfg.n_folds
    df = make_bfw_world(cfg)
    gen, imp = df[df.label == 1], df[df.label == 0]
    # genuine: every within-identity image pair, once
    assert (gen.groupby("id1").size() == comb(k, 2)).all()
    assert gen.id1.nunique() == 8 * n
    assert (gen.groupby("a1", observed=True).size() == n * comb(k, 2)).all()
    assert gen.groupby("id1").p1.nunique().eq(k - 1).all()
    # folds are disjoint in identities, dealt evenly per subgroup
    fold_of = pd.concat([df[["id1", "fold"]].set_axis(["id", "fold"], axis=1),
                         df[["id2", "fold"]].set_axis(["id", "fold"], axis=1)])  # fmt: skip
    assert (fold_of.groupby("id").fold.nunique() == 1).all()
    per = gen.groupby(["fold", "a1"], observed=True).id1.nunique()
    assert len(per) == 8 * K and (per == n // K).all()
    # within-subgroup impostors: all different-identity pairs of the fold's images
    m = n // K * k
    within = imp[imp.a1 == imp.a2].groupby(["fold", "a1"], observed=True).size()
    assert len(within) == 8 * K and (within == comb(m, 2) - n // K * comb(k, 2)).all()
    # cross-subgroup impostors: ratio x genuine per fold, distinct, within the fold
    cross = imp[imp.a1 != imp.a2]
    n_gen_fold = gen.groupby("fold").size()
    assert (cross.groupby("fold").size() == (cfg.cross_negatives * n_gen_fold).round()).all()
    assert set(cross.a1.astype(str)) == set(BFW_GROUPS)
    # no unordered image pair twice
    c1, c2 = df.p1.cat.codes.astype(int), df.p2.cat.codes.astype(int)
    assert not pd.Series(np.minimum(c1, c2) * 10**6 + np.maximum(c1, c2)).duplicated().any()
    assert (c1 != c2).all()


def test_sampled_within_negatives_and_cross_ratio():
    cfg = small(within_negatives=7, cross_negatives=0.5)
    df = make_bfw_world(cfg)
    imp = df[df.label == 0]
    within = imp[imp.a1 == imp.a2].groupby(["fold", "a1"], observed=True).size()
    assert (within == 7).all() and len(within) == 8 * cfg.n_folds
    gen_fold = df[df.label == 1].groupby("fold").size()
    cross_fold = imp[imp.a1 != imp.a2].groupby("fold").size()
    assert (cross_fold == (0.5 * gen_fold).round()).all()
    # the sample is a subset of the 'all' world (same identities, folds and embeddings)
    full = make_bfw_world(small(cross_negatives=0.5))
    key = ["p1", "p2"]
    merged = imp[imp.a1 == imp.a2].merge(full, on=key, suffixes=("", "_full"))
    assert len(merged) == within.sum()
    assert (merged.sim_a == merged.sim_a_full).all()


@pytest.fixture(scope="module")
def default_world():
    """The default world (BFWWorldConfig(): 5.23 million pairs, SIM_A and SIM_B), built once
    for every test of this module that reads it."""
    return make_bfw_world(BFWWorldConfig())


def test_default_config_counts_and_planted_bias(default_world):
    cfg = BFWWorldConfig()
    df = default_world
    k, n = cfg.images_per_identity, cfg.identities_per_group
    gen = df[df.label == 1]
    assert len(gen) == 8 * n * comb(k, 2) == 240_000
    assert (gen.groupby("a1", observed=True).size() == 30_000).all()
    assert (gen.groupby("id1").size() == 300).all()
    assert (gen.groupby(["fold", "a1"], observed=True).id1.nunique() == 20).all()
    within = 8 * cfg.n_folds * (comb(500, 2) - 20 * comb(k, 2))
    assert len(df) == 240_000 + within + 240_000
    # one global threshold at pooled FMR 1e-3 (all impostors, by query subgroup a1)
    imp = df.loc[df.label == 0, ["a1", "sim_a", "sim_b"]]
    a1 = imp.a1.to_numpy()
    ratio = {}
    for system in ("sim_a", "sim_b"):
        s = imp[system].to_numpy()
        fmr = (s > threshold_at_fmr(s, 1e-3)).astype(float)
        fmr = pd.Series(fmr).groupby(a1).mean()
        ratio[system] = fmr.max() / fmr.min()
        if system == "sim_a":
            assert all(fmr[e + "F"] > fmr[e + "M"] for e in "ABIW")
        # genuine and impostor well separated, but not perfectly: EER a few percent
        g = gen[system].to_numpy()
        grid = np.quantile(s, 1 - np.logspace(-4, -0.5, 300))
        # mean(g <= x) and mean(s > x) at every grid point, by counting in the sorted scores
        fnmr = np.searchsorted(np.sort(g), grid, side="right") / g.size
        fmr_grid = (s.size - np.searchsorted(np.sort(s), grid, side="right")) / s.size
        eer = fnmr[np.argmin(np.abs(fnmr - fmr_grid))]
        assert 0.005 < eer < 0.08, (system, eer)
    assert ratio["sim_a"] >= 2 and ratio["sim_b"] < ratio["sim_a"]


# --------------------------------------------------------------------------- determinism
def test_determinism_and_seed():
    cfg = small(within_negatives=9)
    a, b = make_bfw_world(cfg), make_bfw_world(cfg)
    pd.testing.assert_frame_equal(a, b)
    for c in a.columns:
        x, y = (v[c].cat.codes if v[c].dtype == "category" else v[c] for v in (a, b))
        assert x.to_numpy().tobytes() == y.to_numpy().tobytes(), c
        if a[c].dtype == "category":
            assert a[c].cat.categories.equals(b[c].cat.categories)
    other = make_bfw_world(small(within_negatives=9, seed=4))
    assert not np.array_equal(a.sim_a.to_numpy(), other.sim_a.to_numpy()[: len(a)])
    assert not a[["p1", "p2"]].equals(other[["p1", "p2"]])


def test_systems_are_independent_of_each_other():
    sa, sb = small().systems
    one = make_bfw_world(small(systems=(sa,)))
    two = make_bfw_world(small(systems=(sb, sa)))
    assert one.sim_a.to_numpy().tobytes() == two.sim_a.to_numpy().tobytes()


def test_progress_bar(capsys):
    make_bfw_world(small(identities_per_group=5, images_per_identity=2), progress=True)
    assert "synthetic BFW world" in capsys.readouterr().err


# --------------------------------------------------------------------------- planted truth
@pytest.fixture(scope="module")
def spread_world():
    spec = SystemSpec("spread", SPREAD, NOISE)
    cfg = BFWWorldConfig(seed=5, identities_per_group=60, images_per_identity=5, n_folds=2,
                         cross_negatives=0.0, systems=(spec,))  # fmt: skip
    return cfg, make_bfw_world(cfg)


def test_planted_truth_table():
    cfg = BFWWorldConfig(systems=(SystemSpec("spread", SPREAD, NOISE),))
    truth = planted_truth(cfg, n_ids=4000)
    assert len(truth) == 8 and list(truth.group) == list(BFW_GROUPS)
    assert (truth.rho == pd.Series(SPREAD).to_numpy()).all()
    # the Monte Carlo agrees with the first-order closed forms
    assert np.allclose(truth.impostor_mean, truth.impostor_mean_approx, atol=0.01)
    assert np.allclose(truth.genuine_mean, truth.genuine_mean_approx, atol=0.01)
    assert truth.equals(planted_truth(cfg, n_ids=4000))
    assert len(planted_truth(BFWWorldConfig(), n_ids=100)) == 16


def test_planted_truth_recovered(spread_world):
    cfg, df = spread_world
    truth = planted_truth(cfg).set_index("group")
    for label, col in ((0, "impostor_mean"), (1, "genuine_mean")):
        sel = df[(df.label == label) & (df.a1 == df.a2)]
        emp, se = {}, {}
        for g in BFW_GROUPS:
            p = sel[sel.a1 == g]
            emp[g], se[g] = clustered_mean(
                p.spread.to_numpy(np.float64), p.id1.to_numpy(), p.id2.to_numpy()
            )
        emp, se = pd.Series(emp), pd.Series(se)
        # agreement within 4.5 subject-clustered standard errors (+ Monte Carlo error)
        assert (np.abs(emp - truth[col]) < 4.5 * se + 0.002).all(), (emp - truth[col]) / se
        # ordering: impostor means follow rho, genuine means follow -noise
        key = truth.rho if label == 0 else -truth.noise
        assert list(emp.sort_values().index) == list(key.sort_values().index)


def test_null_world_has_no_group_differences():
    """Equal rho and noise: per-group FMRs at one pooled threshold differ only by noise."""
    cfg = BFWWorldConfig(seed=11, identities_per_group=100, images_per_identity=4, n_folds=2,
                         cross_negatives=0.0, systems=(flat(0.2),))  # fmt: skip
    res, pooled = group_fmr(make_bfw_world(cfg), "null", 1e-2)
    # tolerance: binomial noise, inflated for pairs that share a subject (clustered SE)
    assert (res.z**2).sum() < stats.chi2.ppf(0.999, df=7), res
    assert res.z.abs().max() < 4, res
    tol = 4 * res.se.max()
    assert res.fmr.max() / res.fmr.min() < (pooled + tol) / (pooled - tol)


def test_planted_world_is_detected_by_the_same_test():
    sim_a = BFWWorldConfig().systems[0]
    cfg = BFWWorldConfig(seed=11, identities_per_group=100, images_per_identity=4, n_folds=2,
                         cross_negatives=0.0, systems=(sim_a,))  # fmt: skip
    res, _ = group_fmr(make_bfw_world(cfg), "sim_a", 1e-2)
    assert (res.z**2).sum() > stats.chi2.ppf(0.999, df=7)
    assert res.fmr.max() / res.fmr.min() >= 2


# --------------------------------------------------------------------------- files
def test_write_read_round_trip(tmp_path):
    cfg = small(identities_per_group=5, images_per_identity=3)
    df = make_bfw_world(cfg)
    path = tmp_path / "sub" / "world.parquet"
    write_world(df, path)
    back = read_world(path)
    pd.testing.assert_frame_equal(back, df)
    assert back.attrs == df.attrs
    assert BFWWorldConfig.from_params(back.attrs["world"]) == cfg
    assert [p.name for p in path.parent.iterdir()] == ["world.parquet"]  # no temp file left


# --------------------------------------------------------------------------- config
def test_from_params_round_trip_and_defaults():
    params = {
        "seed": 1,
        "identities_per_group": 10,
        "images_per_identity": 3,
        "n_folds": 2,
        "dim": 16,
        "within_negatives": "all",
        "cross_negatives": 0.5,
        "systems": {
            "m1": {"noise": 0.7, "group_similarity": SPREAD},
            "m2": {"noise": NOISE, "group_similarity": SPREAD},
        },  # fmt: skip
    }
    cfg = BFWWorldConfig.from_params(params)
    assert [s.name for s in cfg.systems] == ["m1", "m2"]
    assert cfg.systems[1].sigma("AF") == NOISE["AF"] and cfg.systems[0].sigma("WM") == 0.7
    assert cfg.to_params() == params
    assert BFWWorldConfig.from_params({}) == BFWWorldConfig()


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"n_folds": 1}, "n_folds"),
        ({"identities_per_group": 12}, "identities_per_group"),
        ({"images_per_identity": 1}, "images_per_identity"),
        ({"within_negatives": "some"}, "within_negatives"),
        ({"within_negatives": 10**6}, "within_negatives"),
        ({"cross_negatives": -1}, "cross_negatives"),
        ({"seed": -2}, "seed"),
        ({"dim": 2.5}, "dim"),
        ({"colour": 1}, "colour"),
        ({"systems": {"s": {"group_similarity": {**SPREAD, "XX": 0.1}}}}, "XX"),
        ({"systems": {"s": {"group_similarity": {**SPREAD, "AF": 1.0}}}}, "group_similarity.AF"),
        ({"systems": {"s": {"group_similarity": {**SPREAD, "BM": -0.1}}}}, "group_similarity.BM"),
        ({"systems": {"s": {"group_similarity": {"AF": 0.1}}}}, "missing group"),
        ({"systems": {"s": {"group_similarity": SPREAD, "noise": 0}}}, "noise"),
        ({"systems": {"s": {"group_similarity": SPREAD, "noise": {**NOISE, "WF": -1}}}}, "noise"),
        ({"systems": {"s": {"noise": 0.5}}}, "group_similarity"),
        ({"systems": {"fold": {"group_similarity": SPREAD}}}, "fold"),
        ({"systems": {}}, "systems"),
    ],
)
def test_from_params_rejects(change, key):
    params = {"identities_per_group": 10, "images_per_identity": 3, "n_folds": 5, **change}
    with pytest.raises(ValueError, match=key):
        BFWWorldConfig.from_params(params)


def test_read_world_missing_file_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="dvc repro bfw_world"):
        read_world(tmp_path / "nope.parquet")


def test_image_embeddings_give_the_table_scores():
    """The per-image embeddings come from the scores' random stream: for every pair of the
    table (within-subgroup blocks and cross-subgroup rows, two systems), the cosine of the
    two images' embeddings is the stored float32 score; ids and groups match the table."""
    c = small(within_negatives=20, cross_negatives=0.5, dim=16)
    df = make_bfw_world(c)
    img = image_table(c)
    assert len(img) == 8 * 10 * 6 and list(img["path"]) == list(df["p1"].cat.categories)
    a, b = df["p1"].cat.codes.to_numpy(), df["p2"].cat.codes.to_numpy()
    np.testing.assert_array_equal(img["id"].to_numpy()[a], df["id1"].to_numpy())
    np.testing.assert_array_equal(img["group"].to_numpy()[b], df["a2"].astype(str).to_numpy())
    for system in ("sim_a", "sim_b"):
        x = image_embeddings(c, system)
        assert x.shape == (480, 16)
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-12)
        cos = np.einsum("ij,ij->i", x[a], x[b])
        np.testing.assert_allclose(cos, df[system].to_numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="not in the world"):
        image_embeddings(c, "sim_c")


def test_planted_score_shape_impostor_tail_and_genuine_spread():
    """Paper 002 Fig. 4: impostor medians alike but upper percentiles differing; genuine
    pairs differing in spread. kappa_AF = 1.2 (identities' rho spread) lengthens AF's
    impostor upper tail far more than it moves its median; tau_WF = 0.5 (identities' sigma
    spread) widens WF's genuine scores. The same world with both spreads 0 shows neither."""
    kappa = {g: (1.2 if g == "AF" else 0.0) for g in BFW_GROUPS}
    tau = {g: (0.5 if g == "WF" else 0.0) for g in BFW_GROUPS}
    shaped = SystemSpec("shaped", dict.fromkeys(BFW_GROUPS, 0.2), 0.9, similarity_spread=kappa, noise_spread=tau)
    c = BFWWorldConfig(identities_per_group=50, images_per_identity=10, systems=(shaped, flat(0.2)), seed=4,
                       cross_negatives=0)
    df = make_bfw_world(c)
    grp = df["a1"].astype(str)
    for system, planted in (("shaped", True), ("null", False)):
        imp = df[df["label"] == 0].groupby(grp)[system]
        gen_sd = df[df["label"] == 1].groupby(grp)[system].std()
        med, p99 = imp.median(), imp.quantile(0.99)
        tail = p99 - med
        others = [g for g in BFW_GROUPS if g != "AF"]
        if planted:
            assert tail["AF"] > 1.25 * tail[others].max(), tail
            d_p99, d_med = p99["AF"] - p99[others].mean(), med["AF"] - med[others].mean()
            assert d_p99 > 3 * abs(d_med), (d_p99, d_med)
            assert gen_sd["WF"] > 2 * gen_sd.drop("WF").max(), gen_sd
        else:
            assert tail.max() / tail.min() < 1.15, tail
            assert gen_sd.max() / gen_sd.min() < 1.15, gen_sd
    # the spreads travel through params.yaml; zero spreads leave the world unchanged
    assert BFWWorldConfig.from_params(c.to_params()) == c
    assert "noise_spread" not in flat(0.2).to_params()
    zero = SystemSpec("null", dict.fromkeys(BFW_GROUPS, 0.2), 0.9, similarity_spread=0.0, noise_spread=0.0)
    small_c = small()
    pd.testing.assert_frame_equal(make_bfw_world(BFWWorldConfig(**{**small_c.__dict__, "systems": (zero,)})),
                                  make_bfw_world(BFWWorldConfig(**{**small_c.__dict__, "systems": (flat(0.2),)})))
    with pytest.raises(ValueError, match="noise_spread"):
        SystemSpec("bad", dict.fromkeys(BFW_GROUPS, 0.2), noise_spread=-0.1)


# --------------------------------------------------------------------------- paper 002's score shape
def _pair_rows(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The rows that :func:`_shape` reads, found once per pair table (they do not depend on
    the system): every impostor and its query subgroup a1, and per subgroup the positions
    of its within-subgroup impostor and genuine pairs, in table order."""
    cats = np.asarray(df["a1"].cat.categories.astype(str))
    code = df["a1"].cat.codes.to_numpy()
    intra = (df["a1"] == df["a2"]).to_numpy()
    label = df["label"].to_numpy()
    imp = np.flatnonzero(label == 0)
    within = {}
    for g in BFW_GROUPS:
        in_g = intra & (code == np.flatnonzero(cats == g)[0])
        within[g] = np.flatnonzero(in_g & (label == 0)), np.flatnonzero(in_g & (label == 1))
    return imp, cats[code[imp]], within


def _shape(df: pd.DataFrame, system: str, rows_of=None) -> pd.DataFrame:
    """Per subgroup (within-subgroup pairs): impostor median and p99.9, genuine mean and
    SD, d' and EER (facebias.metrics), and the FMR at one global threshold (pooled FMR
    1e-3 over every impostor, by query subgroup a1). ``rows_of``: :func:`_pair_rows` of
    ``df``, when already computed."""
    from facebias import metrics

    imp_all, a1_imp, within = _pair_rows(df) if rows_of is None else rows_of
    score = df[system].to_numpy()
    t = float(metrics.threshold_at_fmr(score[imp_all], 1e-3))
    fmr = pd.Series(score[imp_all] > t).groupby(a1_imp).mean()
    rows = {}
    for g in BFW_GROUPS:
        imp, gen = (score[i].astype(np.float64) for i in within[g])
        rows[g] = {"med": np.median(imp), "p999": np.quantile(imp, 0.999), "gen_mean": gen.mean(),
                   "gen_sd": gen.std(ddof=1), "d_prime": metrics.d_prime(gen, imp),
                   "eer": metrics.eer(gen, imp), "fmr_global": fmr[g]}
    return pd.DataFrame.from_dict(rows, orient="index")


def _tail_ratio(med: pd.Series, p999: pd.Series) -> float:
    """Across-subgroup range of the impostor p99.9 over the range of the medians."""
    return float(np.ptp(p999) / np.ptp(med))


@pytest.fixture(scope="module")
def shape_world(default_world):
    """The default world (BFWWorldConfig(): seed, size, SIM_A and SIM_B) plus two reference
    systems on the same pairs: ``null`` (equal rho 0.2 and sigma 0.9, no spreads) and
    ``shift`` (SIM_A's rho and sigma, no spreads: the world before the shape was planted).
    Systems have independent random streams, so the reference systems are scored in a world
    of the default seed and size holding only them (the same pairs, asserted), and the
    planted truth is computed for the two systems it is read for (sim_a and shift)."""
    from facebias.worlds.bfw import SIM_A

    shift = SystemSpec("shift", SIM_A.group_similarity, SIM_A.noise)
    ref = make_bfw_world(BFWWorldConfig(systems=(flat(0.2), shift)))
    for c in ("p1", "p2", "a1", "a2", "fold", "label"):
        assert ref[c].equals(default_world[c]), c
    truth = planted_truth(BFWWorldConfig(systems=(SIM_A, shift))).set_index(["system", "group"])
    rows_of = _pair_rows(default_world)
    shapes = {s: _shape(default_world, s, rows_of) for s in ("sim_a", "sim_b")}
    return {**shapes, **{s: _shape(ref, s, rows_of) for s in ("null", "shift")}}, truth


def test_default_world_has_the_planted_score_shape_by_construction(shape_world):
    """Paper 002, Fig. 4: "Scores of imposters have medians around 0.3 but with variations
    in upper percentiles; genuine pairs vary in mean and spread (e.g., AF has more area of
    overlap)"; Fig. 3: M better than F, AF and IF the worst. Bounds, from the plant:

    * SIM_A sets the median impostor centre to 0.085-0.115 in every subgroup and lengthens
      the female upper tails by kappa (AF 0.6, IF 0.4, BF = WF 0.3, males 0).
      ``planted_truth`` (2,000 identities per subgroup) gives the planted ranges across
      subgroups: the plant's p99.9 range is more than twice its median range (asserted).
      The world's 100 identities per subgroup add identity-sampling noise of about 0.01-0.02
      to the range of medians (the null system's range, all planted equal, is asserted
      below 0.03), which on the planted median range of about 0.04 keeps the world's ratio
      above 1.5.
    * Genuine SD: tau AF 0.25 vs WM 0.05 widens AF's genuine scores; the planted max/min
      SD ratio (planted_truth) is > 1.5; with 100 identities a subgroup's SD is known to
      about 10%, so the world's ratio is asserted above 0.75 x the planted one, with AF
      widest and WM narrowest (the largest and smallest tau and sigma).
    * Every F subgroup has a larger sigma, tau and kappa than the M subgroup of its
      ethnicity, each of which only increases genuine/impostor overlap: so M has the
      larger d' and smaller EER in every ethnicity. AF has the largest sigma, tau and
      kappa (lowest d', highest EER); IF the next sigma, tau and kappa (second highest EER).
    * Female impostors more alike (median centre 0.11-0.115 vs 0.10 and kappa_F 0.3-0.6 vs
      kappa_M 0): at one global threshold F has the higher FMR in every ethnicity, AF
      (largest kappa and rho) the highest, and WM (lowest median centre, 0.085) is below
      every female subgroup (among the males, whose tails are planted alike, the lowest
      FMR is left to sampling).
    """
    shapes, truth = shape_world
    a, t = shapes["sim_a"], truth.loc["sim_a"]
    planted_ratio = _tail_ratio(t["impostor_median"], t["impostor_p999"])
    assert planted_ratio > 2, t
    assert _tail_ratio(a["med"], a["p999"]) > 1.5, a
    planted_sd = t["genuine_sd"].max() / t["genuine_sd"].min()
    assert planted_sd > 1.5, t
    assert a["gen_sd"].max() / a["gen_sd"].min() > 0.75 * planted_sd, a
    assert a["gen_sd"].idxmax() == "AF" and a["gen_sd"].idxmin() == "WM", a
    assert np.ptp(a["gen_mean"]) > 0.5 * np.ptp(t["genuine_mean"]) and a["gen_mean"].idxmax() == "WM", a
    assert a["d_prime"].idxmin() == "AF" and list(a["eer"].nlargest(2).index) == ["AF", "IF"], a
    for e in "ABIW":
        assert a.loc[e + "M", "d_prime"] > a.loc[e + "F", "d_prime"], (e, a)
        assert a.loc[e + "M", "eer"] < a.loc[e + "F", "eer"], (e, a)
        assert a.loc[e + "F", "fmr_global"] > a.loc[e + "M", "fmr_global"], (e, a)
    assert a["fmr_global"].idxmax() == "AF", a
    assert (a.loc[["AF", "BF", "IF", "WF"], "fmr_global"] > a.loc["WM", "fmr_global"]).all(), a
    # SIM_B: the same shape, weaker (tau AF 0.12 vs WM 0.02)
    b = shapes["sim_b"]
    assert 1.1 < b["gen_sd"].max() / b["gen_sd"].min() < a["gen_sd"].max() / a["gen_sd"].min(), b


def test_null_and_shift_only_worlds_show_no_score_shape(shape_world):
    """The same pairs scored by a null system (equal rho and sigma, no spreads) and by the
    world before the shape was planted (SIM_A's rho and sigma, no spreads).

    * Null: every subgroup has the same planted distribution, so the tail lengths
      (p99.9 - median), the genuine SDs and the d' agree across subgroups up to sampling
      noise (max/min near 1: below 1.1, against the planted 1.9 for the genuine SD);
      the medians' range is sampling noise only (< 0.03); the range ratio is noise over
      noise, about 1, and below the 2 a planted shape exceeds.
    * Shift only: a larger rho moves the whole impostor distribution up and shrinks its
      (1 - rho) random part, so the upper percentiles differ *less* than the medians:
      planted and observed range ratio below 1, the opposite of the paper's shape; the
      genuine SDs differ only through sigma (planted max/min below 1.2).
    """
    shapes, truth = shape_world
    n = shapes["null"]
    tail = n["p999"] - n["med"]
    assert tail.max() / tail.min() < 1.1, n
    assert n["gen_sd"].max() / n["gen_sd"].min() < 1.1, n
    assert n["d_prime"].max() / n["d_prime"].min() < 1.1, n
    assert np.ptp(n["med"]) < 0.03 and _tail_ratio(n["med"], n["p999"]) < 2, n
    s, ts = shapes["shift"], truth.loc["shift"]
    assert _tail_ratio(ts["impostor_median"], ts["impostor_p999"]) < 1, ts
    assert _tail_ratio(s["med"], s["p999"]) < 1, s
    assert ts["genuine_sd"].max() / ts["genuine_sd"].min() < 1.2, ts
    assert s["gen_sd"].max() / s["gen_sd"].min() < 1.2, s
