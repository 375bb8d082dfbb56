"""Paper 004 analysis: pruning, covariates, error model, group tables, known-truth checks."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from statsmodels.stats.proportion import proportion_confint

from facebias.classifiers.cnn import predict_p_male, train_shortcut_classifier
from facebias.generate.procedural import ProceduralGenerator
from facebias.studies import transects as T
from facebias.studies.transects.error_model import _fit_lbfgs
from facebias.worlds.gender_classifier import DEFAULT_EFFECTS, simulated_gender_classifier

ROOT = Path(__file__).resolve().parents[3]


def factorial_frame(n_transects: int, seed: int) -> pd.DataFrame:
    """Transect-like scores: skin, hair and gender set independently (2x2x2 per transect,
    small perception noise); age, beard, makeup, smile shared within a transect."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_transects):
        other = {"age": rng.uniform(0.4, 1.0), "facial_hair": rng.uniform(0, 1),
                 "makeup": rng.uniform(0, 1), "smile": rng.uniform(0, 1)}
        for s, h, g in np.ndindex(2, 2, 2):
            rows.append({"transect": t, "skin_color": (0.15, 0.85)[s], "hair_length": (0.15, 0.75)[h],
                         "gender": (0.1, 0.9)[g], "uncanny": rng.uniform(0, 0.5), **other})
    df = pd.DataFrame(rows)
    for c in ("skin_color", "hair_length", "gender"):
        df[c] = (df[c] + rng.normal(0, 0.04, len(df))).clip(0, 1)
    return df


@pytest.fixture(scope="module")
def experiment():
    df, _ = T.prune(factorial_frame(150, 0), drop_children=True)
    df["p"] = simulated_gender_classifier(df, seed=1)
    df["e"] = T.errors(df["p"], df["gender_male"])
    X = T.design_matrix(df)
    return df, X, T.bootstrap_error_model(X, df["e"], n_boot=1000, seed=0)


# --------------------------------------------------------------------------- pruning
def test_prune_removes_the_closed_intervals_exactly():
    base = {"gender": 0.1, "skin_color": 0.1, "hair_length": 0.1, "uncanny": 0.0, "age": 0.6}
    cases = [  # (column, value, removed)
        ("gender", 0.4, True), ("gender", 0.6, True), ("gender", 0.39, False), ("gender", 0.61, False),
        ("skin_color", 0.4, True), ("skin_color", 0.6, True), ("skin_color", 0.3999, False),
        ("skin_color", 0.6001, False), ("hair_length", 0.3, True), ("hair_length", 0.5, True),
        ("hair_length", 0.2999, False), ("hair_length", 0.5001, False),
    ]
    df = pd.DataFrame([{**base, c: v} for c, v, _ in cases])
    kept, counts = T.prune(df)
    assert list(kept.index) == [i for i, (_, _, rm) in enumerate(cases) if not rm]
    assert counts == {"n": 12, "fake": 0, "gender": 2, "skin": 2, "hair": 2, "pruned": 6, "kept": 6}
    # binary labels by complement
    assert kept.loc[3, "gender_male"] == 1 and kept.loc[2, "gender_male"] == 0
    assert kept.loc[11, "hair_long"] == 1 and kept.loc[10, "hair_long"] == 0
    assert kept.loc[7, "skin_dark"] == 1 and kept.loc[6, "skin_dark"] == 0


def test_prune_fakeness_rules_differ_exactly_at_075():
    u = [0.7, 0.74, 0.75, 0.79, 0.8, 0.9]
    df = pd.DataFrame({"gender": 0.9, "skin_color": 0.9, "hair_length": 0.9, "uncanny": u, "age": 0.1})
    paper, cp = T.prune(df, "paper")
    repo, cr = T.prune(df, "repo")
    assert paper["uncanny"].tolist() == [0.7, 0.74] and cp["fake"] == 4
    assert repo["uncanny"].tolist() == [0.7, 0.74, 0.75, 0.79] and cr["fake"] == 2
    assert len(T.prune(df, None)[0]) == 6
    kept, c = T.prune(df, "paper", drop_children=True)  # age 0.1: all children
    assert len(kept) == 0 and c["children"] == 2
    with pytest.raises(ValueError, match="fakeness_rule"):
        T.prune(df, "strict")
    with pytest.raises(ValueError, match="uncanny"):
        T.prune(df.drop(columns="uncanny"))


def test_children_boundary_is_age_04():
    df = pd.DataFrame({"gender": 0.9, "skin_color": 0.9, "hair_length": 0.9, "uncanny": 0.0,
                       "age": [0.39, 0.4, 0.2, 1.0]})
    kept, c = T.prune(df, drop_children=True)
    assert kept["age"].tolist() == [0.4, 1.0] and c["children"] == 2
    assert kept["age_level"].tolist() == [2, 5]


# --------------------------------------------------------------------------- covariates
def test_design_matrix_has_17_columns_one_per_group(experiment):
    _, X, _ = experiment
    assert X.shape[1] == 17 and sum(len(v) for v in T.COVARIATES.values()) == 17
    assert (X.sum(axis=1) == 7).all()
    assert set(np.unique(X.to_numpy())) == {0, 1}
    for cols in T.COVARIATES.values():  # exactly one level per group
        assert (X[list(cols)].sum(axis=1) == 1).all()
    assert (T.design_matrix(experiment[0], ("gender", "skin")).sum(axis=1) == 2).all()


def test_binning_hand_cases():
    df = pd.DataFrame({"gender": [0.1, 0.9, 0.9, 0.1], "skin_color": [0.0, 1.0, 0.2, 0.8],
                       "hair_length": [0.25, 0.75, 0.0, 1.0], "facial_hair": [0.49, 0.5, 0.0, 1.0],
                       "makeup": [0.5, 0.2, 1.0, 0.0],
                       "smile": [0.0, 0.375, 0.5, 0.875],  # round(4s) = 0, 2 (1.5 up), 2, 4 (3.5 up)
                       "age": [0.4, 0.55, 0.75, 0.95]})  # round(5s) = 2, 3 (2.75), 4 (3.75), 5
    b = T.bin_covariates(df)
    assert b["gender_male"].tolist() == [0, 1, 1, 0]
    assert b["skin_dark"].tolist() == [0, 1, 0, 1]
    assert b["hair_long"].tolist() == [0, 1, 0, 1]
    assert b["beard"].tolist() == [0, 1, 0, 1]
    assert b["makeup_on"].tolist() == [1, 0, 1, 0]
    assert b["expression"].tolist() == [0, 1, 1, 2]
    assert b["age_level"].tolist() == [2, 3, 4, 5]
    X = T.design_matrix(df)
    assert X.loc[0, "expression_serious"] == 1 and X.loc[3, "expression_smile"] == 1
    assert X.loc[0, "age_young_adult"] == 1 and X.loc[3, "age_senior"] == 1


def test_design_matrix_rejects_missing_columns_children_and_ambiguous_scores():
    df = factorial_frame(2, 0)
    with pytest.raises(ValueError, match="'makeup' not found"):
        T.design_matrix(df.drop(columns="makeup"))
    with pytest.raises(ValueError, match="age score < 0.4"):
        T.design_matrix(df.assign(age=0.3))
    with pytest.raises(ValueError, match="ambiguous interval"):
        T.design_matrix(df.assign(gender=0.5))
    with pytest.raises(ValueError, match="unknown covariate group"):
        T.design_matrix(df, ("gender", "race"))


def test_truth_scores_renames_generator_columns():
    truth = pd.DataFrame({"true_gender": [0.2], "true_skin_tone": [0.7], "true_hair_length": [0.1],
                          "transect": [3]})
    s = T.truth_scores(truth)
    assert {"gender", "skin_color", "hair_length", "uncanny", "transect"} <= set(s.columns)
    assert s.loc[0, "skin_color"] == 0.7 and s.loc[0, "uncanny"] == 0.0


# --------------------------------------------------------------------------- errors
def test_errors_and_best_threshold_hand_case():
    p = np.array([0.1, 0.55, 0.7, 0.9, 0.95, np.nan])
    y = np.array([0, 0, 0, 1, 1, 1])
    e = T.errors(p, y)
    assert e[:5].tolist() == [0, 1, 1, 0, 0] and np.isnan(e[5])
    assert T.errors(p, y, 0.8)[:5].tolist() == [0, 0, 0, 0, 0]
    t, n_err = T.best_threshold(p, y, grid=[0.5, 0.6, 0.7, 0.8, 0.9])
    # errors: 0.5 -> 2, 0.6 -> 1, 0.7 -> 0 (0.7 > 0.7 is False), 0.8 -> 0, 0.9 -> 1
    assert n_err.tolist() == [2, 1, 0, 0, 1] and t == 0.7
    with pytest.raises(ValueError, match="0/1"):
        T.errors([0.2], [2])


# --------------------------------------------------------------------------- regression
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_error_model_matches_sklearn(experiment, weighted):
    """The one logistic fitter against an independent implementation (sklearn lbfgs)."""
    df, X, _ = experiment
    w = np.random.default_rng(3).poisson(1.0, len(df)).astype(float) if weighted else None
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, df["e"].astype(int), sample_weight=w)
    coef, intercept = T.fit_error_model(X, df["e"], sample_weight=w)
    np.testing.assert_allclose(coef, ref.coef_[0], atol=2e-5)
    assert abs(intercept - ref.intercept_[0]) < 2e-5
    # warm-started refits (the bootstrap's path) land on the same optimum
    theta = _fit_lbfgs(X.to_numpy(float), df["e"].to_numpy(float), np.ones(len(df)) if w is None else w,
                       1.0, np.r_[ref.coef_[0], ref.intercept_[0]] + 0.3, tol=1e-9)
    np.testing.assert_allclose(theta, np.r_[coef, intercept], atol=2e-5)


def test_fit_error_model_rejects_bad_input():
    X = np.eye(4)
    with pytest.raises(ValueError, match="0/1"):
        T.fit_error_model(X, [0, 1, 2, 0])
    with pytest.raises(ValueError, match="both classes"):
        T.fit_error_model(X, [0, 0, 0, 0])
    with pytest.raises(ValueError, match="sample_weight"):
        T.fit_error_model(X, [0, 1, 0, 1], sample_weight=[1, -1, 1, 1])
    with pytest.raises(ValueError, match="NaN"):
        T.fit_error_model(np.full((4, 2), np.nan), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"\(n, p\)"):
        T.fit_error_model(X, [0, 1])


def test_bootstrap_full_fit_equals_the_uncollapsed_fit(experiment):
    df, X, res = experiment
    coef, intercept = T.fit_error_model(X, df["e"])
    np.testing.assert_allclose(res.coef, coef, atol=1e-5)
    assert abs(res.intercept - intercept) < 1e-5


def test_coefficients_sum_to_zero_within_each_group(experiment):
    _, X, res = experiment
    coef = pd.Series(res.coef, index=res.names)
    for cols in T.COVARIATES.values():
        assert abs(coef[list(cols)].sum()) < 1e-4
    # also in the bootstrap replicates (same objective, looser tolerance): tiny vs the SDs
    sums = pd.DataFrame(res.replicates, columns=res.names)[list(T.COVARIATES["age"])].sum(axis=1).abs()
    assert sums.median() < 1e-4 and sums.max() < 0.05 * res.sd.min()


def test_experimental_analysis_recovers_the_planted_causes(experiment):
    """Error planted on hair, gender, beard, makeup and age, not skin (A5.9)."""
    _, _, res = experiment
    s = res.summary()
    assert s.loc["hair_long", "significant"] and s.loc["hair_long", "coef"] < 0  # short hair -> error
    assert s.loc["gender_female", "significant"] and s.loc["gender_female", "coef"] > 0
    assert s.loc["beard", "significant"] and s.loc["beard", "coef"] < 0
    assert s.loc["makeup", "significant"] and s.loc["makeup", "coef"] < 0
    assert s.loc["age_senior", "coef"] > s.loc["age_young_adult", "coef"]
    assert not s.loc["skin_dark", "significant"] and s.loc["skin_dark", "ci_low"] < 0 < s.loc["skin_dark", "ci_high"]
    assert (np.diff(s["coef"].abs().to_numpy()) <= 0).all()  # sorted by |coef|


def test_bootstrap_sds_positive_and_stable_across_seeds(experiment):
    _, X, res = experiment
    assert (res.sd > 0).all() and res.n_boot == 1000 and res.unit == "images"
    other = T.bootstrap_error_model(X, experiment[0]["e"], n_boot=1000, seed=1)
    np.testing.assert_allclose(other.coef, res.coef)
    ratio = other.sd / res.sd
    assert np.all(np.abs(ratio - 1) < 0.10), ratio


def test_cluster_bootstrap_resamples_transects(experiment):
    df, X, res = experiment
    cl = T.bootstrap_error_model(X, df["e"], n_boot=200, seed=0, clusters=df["transect"])
    assert cl.unit == "clusters" and (cl.sd > 0).all()
    np.testing.assert_allclose(cl.coef, res.coef)
    with pytest.raises(ValueError, match="clusters"):
        T.bootstrap_error_model(X, df["e"], n_boot=2, clusters=[1, 2])


def test_null_classifier_finds_no_cause():
    df, _ = T.prune(factorial_frame(150, 5), drop_children=True)
    p = simulated_gender_classifier(df, effects={}, base=-1.5, seed=9)
    res = T.bootstrap_error_model(T.design_matrix(df), T.errors(p, df["gender_male"]), n_boot=400, seed=2)
    assert res.significant.sum() <= 2


def test_planted_classifier_ignores_skin():
    df = factorial_frame(20, 1)
    a = simulated_gender_classifier(df, seed=4)
    b = simulated_gender_classifier(df.assign(skin_color=1 - df["skin_color"]), seed=4)
    np.testing.assert_array_equal(a, b)
    assert ((a > 0) & (a < 1)).all()


def test_observational_analysis_blames_skin():
    """PPB-like sample: hair shorter for darker skin within gender; only gender and skin
    recorded. The hair-driven classifier looks skin-biased, worst on dark females."""
    gen = ProceduralGenerator(size=64, seed=0)
    truth, z = T.observational_sample(gen, 1500, seed=0, confounding=-0.6)
    assert z.shape == (1500, gen.latent_dim)
    scores = T.truth_scores(truth)
    kept, _ = T.prune(scores, drop_children=True)
    for g in (0, 1):
        sub = kept[kept["gender_male"] == g]
        assert np.corrcoef(sub["skin_color"], sub["hair_length"])[0, 1] < -0.2
    kept["e"] = T.errors(simulated_gender_classifier(kept, seed=2), kept["gender_male"])
    res = T.bootstrap_error_model(T.design_matrix(kept, ("gender", "skin")), kept["e"], n_boot=400)
    s = res.summary()
    assert s.loc["skin_dark", "significant"] and s.loc["skin_dark", "coef"] > 0
    groups = T.group_errors(kept, "e", by=("gender", "skin")).set_index("group")
    assert groups["rate"].idxmax() == "DF"


# --------------------------------------------------------------------------- group tables
def test_group_errors_wilson_matches_statsmodels(experiment):
    df, _, _ = experiment
    g = T.group_errors(df, "e")
    assert len(g) == 8 and g["n"].sum() == len(df) and set(g["group"]) >= {"DF-s", "LM-l"}
    lo, hi = proportion_confint(g["k"], g["n"], alpha=0.05, method="wilson")
    np.testing.assert_allclose(g["lo"], lo, atol=1e-12)
    np.testing.assert_allclose(g["hi"], hi, atol=1e-12)
    row = g.set_index("group").loc["DF-s"]
    m = (df["gender_male"] == 0) & (df["skin_dark"] == 1) & (df["hair_long"] == 0)
    assert row["k"] == df.loc[m, "e"].sum() and row["n"] == m.sum()


def test_group_errors_keeps_empty_groups_as_nan():
    df = pd.DataFrame({"gender_male": [0, 0, 1], "skin_dark": [0, 0, 0], "hair_long": [0, 1, 1],
                       "e": [1.0, 0.0, np.nan]})
    g = T.group_errors(df, "e").set_index("group")
    assert g.loc["LF-s", "k"] == 1 and g.loc["LF-s", "n"] == 1 and g.loc["LM-l", "n"] == 0
    assert np.isnan(g.loc["LM-l", "rate"])


def test_paired_groups_differ_in_exactly_one_attribute(experiment):
    g = T.group_errors(experiment[0], "e")
    pairs = T.paired_groups(g)
    assert len(pairs) == 12 and pairs["attribute"].value_counts().to_dict() == {"gender": 4, "skin": 4, "hair": 4}
    rate = g.set_index("group")["rate"]
    for _, r in pairs.iterrows():
        assert r["x"] == rate[r["x_group"]] and r["y"] == rate[r["y_group"]]
        a, b = r["x_group"], r["y_group"]
        assert sum(c1 != c2 for c1, c2 in zip(a, b, strict=True)) == 1
    hair = pairs[pairs["attribute"] == "hair"].set_index("shared")
    assert set(hair.index) == {"LF", "LM", "DF", "DM"} and (hair["x"] > hair["y"]).all()  # short worse
    skin = pairs[pairs["attribute"] == "skin"]
    assert set(skin["shared"]) == {"F-s", "F-l", "M-s", "M-l"}


def test_age_gender_errors_hand_case():
    df = pd.DataFrame({"gender_male": [0, 0, 1, 1, 1], "age": [0.0, 0.0, 1.0, 1.0, 0.6]})
    p = np.array([0.6, 0.9, 0.7, 0.2, 0.9])
    t = T.age_gender_errors(df, p, thresholds=(0.5, 0.8)).set_index(["threshold", "gender", "age_level"])
    assert len(t) == 2 * 2 * 6
    assert t.loc[(0.5, "F", 0), ["k", "n"]].tolist() == [2, 2]
    assert t.loc[(0.8, "F", 0), ["k", "n"]].tolist() == [1, 2]
    assert t.loc[(0.5, "M", 5), ["k", "n"]].tolist() == [1, 2]
    assert t.loc[(0.8, "M", 5), ["k", "n"]].tolist() == [2, 2]
    assert t.loc[(0.5, "M", 3), ["k", "n"]].tolist() == [0, 1]
    assert np.isnan(t.loc[(0.5, "M", 1), "rate"])


def test_attribute_distributions_long_frame():
    a = pd.DataFrame({"gender": [0.1, 0.9, 0.5], "skin_color": [0.1, 0.9, 0.5], "hair_length": [0.8, 0.1, 0.3]})
    d = T.attribute_distributions({"A": a, "B": a})
    assert set(d["dataset"]) == {"A", "B"} and set(d["attribute"]) == {"hair_length", "skin_color"}
    assert len(d) == 2 * 2 * 2  # the in-between gender row is dropped
    assert d[(d["gender"] == "female") & (d["attribute"] == "hair_length")]["value"].tolist() == [0.8, 0.8]


# --------------------------------------------------------------------------- shortcut CNN
def test_shortcut_cnn_errs_on_short_haired_women():
    """A CNN trained where hair tracks gender uses hair: on a hair-manipulated test set it
    errs more on short-haired women than long-haired women (and on long-haired men)."""
    gen = ProceduralGenerator(size=64, seed=0)
    imgs, table = T.make_shortcut_training_set(gen, 256, seed=1)
    assert imgs.shape == (256, 64, 64, 3) and table["y_male"].sum() == 128
    female = table["y_male"] == 0
    assert (table.loc[female, "hair_length_c"] > 0).all() and (table.loc[~female, "hair_length_c"] < 0).all()
    assert abs(np.mean(table["skin_tone_c"] > 0) - 0.5) < 0.1
    model = train_shortcut_classifier(imgs, table["y_male"], epochs=12, seed=0, threads=1)
    test, tt = T.hair_test_set(gen, 20, seed=5)
    assert len(tt) == 160 and tt["y_male"].tolist() == (tt["gender_idx"] == 1).astype(int).tolist()
    tt["e"] = T.errors(predict_p_male(model, test), tt["y_male"])
    rate = tt.groupby(["gender_idx", "hair_length_idx"])["e"].mean()
    assert rate[(0, 0)] > rate[(0, 1)] + 0.2  # short-haired women vs long-haired women
    assert rate[(1, 1)] > rate[(1, 0)] + 0.2  # long-haired men vs short-haired men


def test_one_sided_shortcut_only_constrains_women():
    gen = ProceduralGenerator(size=64, seed=0)
    _, table = T.make_shortcut_training_set(gen, 200, seed=2, one_sided=True, c_gender=(0.2, 1.0))
    female = table["y_male"] == 0
    assert (table.loc[female, "hair_length_c"] > 0).all()  # every woman long-haired
    men_long = np.mean(table.loc[~female, "hair_length_c"] > 0)
    assert 0.35 < men_long < 0.65  # men: any length
    assert table["gender_c"].abs().between(0.2, 1.0).all()


# --------------------------------------------------------------------------- pixel signal
def test_pixel_signal_null_and_skin_contrast():
    from facebias.generate import load_generator

    g = load_generator("procedural", size=96, seed=0)
    null = T.pixel_signal(g, 6, 1, levels=(1.0, 1.0), by_levels=(-1.5, 1.5))
    assert (null["signal"] == 0).all() and (null["n_pixels"] > 1000).all()
    sig = T.pixel_signal(g, 6, 1, by_levels=(-1.5, 0.0, 1.7))
    # the renderer draws gender cues (brows, stubble, lips) as albedo changes, so they lose
    # contrast as the skin darkens (skin_tone decision value up = darker)
    assert sig["brightness"].is_monotonic_decreasing and sig["signal"].is_monotonic_decreasing
    assert sig["signal"].iat[-1] < 0.6 * sig["signal"].iat[0]
    with pytest.raises(ValueError, match="not among"):
        T.pixel_signal(g, 2, 1, attribute="glasses")
    with pytest.raises(ValueError, match="differ"):
        T.pixel_signal(g, 2, 1, attribute="skin_tone")


# --------------------------------------------------------------------------- the procedural study's steps
def test_transects_config_parses_params_and_rejects_unknown_or_mistyped_keys():
    from facebias.io import load_params

    cfg = T.TransectsConfig.from_params(load_params(ROOT / "params.yaml", "transects"))
    assert isinstance(cfg.thresholds, tuple) and isinstance(cfg.shortcut_c_gender, tuple)
    assert cfg.n_pixel_seeds == 100  # default (not in params.yaml)
    with pytest.raises(ValueError, match="unknown key"):
        T.TransectsConfig.from_params({"n_bot": 10})
    for bad, match in (({"n_boot": "10"}, "transects.n_boot must be an integer"),
                       ({"n_boot": 0}, "transects.n_boot must be >= 1"),
                       ({"epochs": 2.5}, "transects.epochs"),
                       ({"confounding": 1.0}, "transects.confounding"),
                       ({"thresholds": [0.5, "x"]}, r"transects.thresholds\[1\]"),
                       ({"shortcut_c_gender": [1.0, 0.2]}, "lo < hi"),
                       ({"shortcut_one_sided": "yes"}, "true or false")):
        with pytest.raises(ValueError, match=match):
            T.TransectsConfig.from_params(bad)


def test_planted_recovered_true_for_the_planted_classifier_false_for_a_null_one(experiment):
    """The flags follow the planted causes (hair, gender; not skin), and a classifier with no
    planted cause sets neither hair nor gender."""
    df, X, res = experiment
    assert T.planted_recovered(res) == {"experimental_hair_significant_short_worse": True,
                                        "experimental_skin_ci_covers_0": True,
                                        "experimental_gender_significant_female_worse": True}
    null = T.bootstrap_error_model(X, T.errors(simulated_gender_classifier(df, effects={}, seed=3),
                                               df["gender_male"]), n_boot=300, seed=0)
    flags = T.planted_recovered(null)
    assert not flags["experimental_hair_significant_short_worse"]
    assert not flags["experimental_gender_significant_female_worse"]
    # observational flags: from the (gender, skin) model and the worst group
    obs = T.bootstrap_error_model(T.design_matrix(df, ("gender", "skin")), df["e"], n_boot=100, seed=0)
    f = T.planted_recovered(res, obs, "LM")
    assert f["observational_dark_female_worst"] is False
    assert f["observational_skin_significant_dark_worse"] == bool(
        obs.summary().loc["skin_dark", "significant"] and obs.summary().loc["skin_dark", "coef"] > 0)
    with pytest.raises(ValueError, match="hair_long"):
        T.planted_recovered(obs)  # the (gender, skin) model has no hair covariate


def test_perceived_matches_intended_hand_case():
    kept = pd.DataFrame({"gender_male": [1, 0, 1, 1], "gender_idx": [1, 0, 0, 1],
                         "skin_dark": [0, 0, 0, 0], "skin_tone_idx": [0, 0, 0, 0],
                         "hair_long": [1, 1, 0, 0], "hair_length_idx": [0, 0, 1, 1]})
    assert T.perceived_matches_intended(kept) == {"gender": 0.75, "skin_tone": 1.0, "hair_length": 0.0}
    with pytest.raises(ValueError, match="hair_length_idx"):
        T.perceived_matches_intended(kept.drop(columns="hair_length_idx"))


def test_pruning_counts_match_prune_for_each_rule():
    df = factorial_frame(20, 3)
    df["uncanny"] = np.linspace(0.5, 0.9, len(df))  # rows between 0.75 and 0.8 split the rules
    counts = T.pruning_counts(df)
    assert set(counts) == {"paper", "paper_adults", "repo", "repo_adults"}
    assert counts["paper"] == T.prune(df, "paper", drop_children=False)[1]
    assert counts["repo_adults"] == T.prune(df, "repo", drop_children=True)[1]
    assert counts["paper"]["kept"] < counts["repo"]["kept"]  # the paper rule removes >= 0.75


def test_rated_sample_and_known_truth_check_on_the_procedural_generator():
    """Votes are simulated from the truth (so perceived gender tracks true gender), and the
    known-truth check on 30 latent-only transects finds the planted hair and gender causes."""
    from facebias.annotate import Panel
    from facebias.generate.build import SynthConfig, fit_attribute_hyperplanes

    gen = ProceduralGenerator(size=64, seed=0)
    rated, z = T.observational_rated(gen, Panel(), 200, seed=1, confounding=-0.6)
    assert len(rated) == len(z) == 200 and rated.index[0] == "obs00000"
    assert np.corrcoef(rated["gender"], rated["true_gender"])[0, 1] > 0.8
    assert {"true_uncanny", "uncanny", "skin_color", "hair_length"} <= set(rated.columns)
    with pytest.raises(ValueError, match="rows"):
        T.rated_sample(rated.iloc[:3], z[:2], Panel())
    cfg = SynthConfig.from_params({"scale": "smoke", "n_fit": 300})
    hp = fit_attribute_hyperplanes(gen, cfg)
    kt = T.known_truth_check(gen, hp, cfg, Panel(), 100, seed=0, effects=DEFAULT_EFFECTS, n_boot=200)
    assert kt.rated["transect"].nunique() == 100 and len(kt.kept) == kt.pruning["kept"]
    assert kt.recovered() == {"experimental_hair_significant_short_worse": True,
                              "experimental_skin_ci_covers_0": True,
                              "experimental_gender_significant_female_worse": True}
    assert kt.clusters.unit == "clusters" and kt.images.unit == "images"
    assert kt.to_dict()["n_transects"] == 100
