"""Paper 000's group differences tested, not read off overlapping intervals (issue 29, item 5):
the two-proportion z test and Holm's adjustment agree with statsmodels, the cluster bootstrap
is group_report's, a planted FNMR difference is found on a 4-group table and a null one is
not, and a rate with too few impostors is unresolved, never a number."""

from __future__ import annotations

import itertools
from functools import partial

import hcic_fixtures
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from facebias.studies import hcic as H
from facebias.worlds.toy_fr import simulate_embeddings

SKIN = {"LM": ("lighter", "male"), "LF": ("lighter", "female"),
        "DM": ("darker", "male"), "DF": ("darker", "female")}
ORDER = ["LM", "LF", "DM", "DF"]
make_images = partial(hcic_fixtures.make_images, groups=SKIN, centre={a: 2 for a in H.ATTRIBUTES},
                      columns=("skin", "gender"), extra={"yaw": 0.0, "light": "front"})
images, pairs = hcic_fixtures.table_fixtures(make_images, n_seeds=30)


def scored(images: pd.DataFrame, pairs: pd.DataFrame, group_noise: dict, seed: int = 1) -> pd.DataFrame:
    """The HCIC pairs (no cross-group ones, no self pairs) scored by the toy system without its
    group offset (so groups differ only where ``group_noise`` plants it), base noise 1."""
    vec = simulate_embeddings(images, dim=64, group_noise=group_noise, seed=seed, centre=H.centre_levels(images),
                              group_offset=0.0, noise=1.0)
    p = pairs[~H.self_pair_mask(pairs)].copy()
    p["score"] = H.pair_scores(p, vec)
    return p


# --------------------------------------------------------------------------- against statsmodels
def test_two_proportion_test_agrees_with_statsmodels():
    rng = np.random.default_rng(0)
    n1, n2 = rng.integers(20, 2000, 30), rng.integers(20, 2000, 30)
    x1 = rng.binomial(n1, rng.uniform(0.01, 0.5, 30))
    x2 = rng.binomial(n2, rng.uniform(0.01, 0.5, 30))
    got = H.two_proportion_test(x1, n1, x2, n2)
    for i in range(30):
        z, p = proportions_ztest([x1[i], x2[i]], [n1[i], n2[i]])  # pooled variance, two-sided
        lo, hi = confint_proportions_2indep(x1[i], n1[i], x2[i], n2[i], method="wald", compare="diff")
        assert got.loc[i, ["z", "p", "lo", "hi"]].tolist() == pytest.approx([z, p, lo, hi], rel=1e-9, abs=1e-12)
    assert got["diff"].to_numpy() == pytest.approx(x1 / n1 - x2 / n2)
    # no errors in either group: the pooled variance is 0 and the test undefined, not p = 0 or 1
    zero = H.two_proportion_test(0, 300, 0, 1200)
    assert np.isnan(zero.loc[0, "p"]) and zero.loc[0, "diff"] == 0
    with pytest.raises(ValueError, match="0 <= x <= n"):
        H.two_proportion_test(5, 3, 1, 10)


def test_holm_adjustment_agrees_with_statsmodels():
    rng = np.random.default_rng(1)
    for m in (1, 2, 6, 15):
        p = rng.uniform(0, 0.2, m) ** 2
        want = multipletests(p, method="holm")[1]
        assert H.holm_adjust(p) == pytest.approx(want, rel=1e-12)
    # NaN (no test) stays NaN and is not counted in the family
    got = H.holm_adjust([0.01, np.nan, 0.02])
    assert np.isnan(got[1]) and got[[0, 2]] == pytest.approx(multipletests([0.01, 0.02], method="holm")[1])


# --------------------------------------------------------------------------- the study's test
@pytest.mark.filterwarnings("ignore:group_rate_tests.*cannot reject")
def test_rates_and_bootstrap_are_those_of_the_per_group_table(images, pairs):
    """The point FNMR at the FMR target, its threshold and its bootstrap interval are those of
    fnmr_at_fmr_by_group (metrics.group_report's weighted evaluation) with the same replicates;
    the fixed-threshold counts are brute force and their p_z is statsmodels'."""
    p = scored(images, pairs, {"DF": 0.5})
    t = H.group_rate_tests(p, "score", "label", fmr=0.01, threshold=0.5, order=ORDER, n_boot=60, seed=3)
    ref = H.fnmr_at_fmr_by_group(p, "score", "label", fmr=0.01, n_boot=60, seed=3).set_index("group")
    r = t.rates.set_index("group").loc[ORDER]
    assert list(t.rates["group"]) == ORDER
    for a, b in (("fnmr_at_fmr", "fnmr_group"), ("fnmr_at_fmr_lo", "fnmr_group_lo"),
                 ("fnmr_at_fmr_hi", "fnmr_group_hi"), ("threshold_group", "threshold_group"),
                 ("n_genuine", "n_genuine"), ("n_impostor", "n_impostor")):
        assert r[a].to_numpy(float) == pytest.approx(ref.loc[ORDER, b].to_numpy(float)), a
    assert r["resolved_fnmr_at_fmr"].all() and ref["resolved"].all()
    for g in ORDER:
        sub = p[p["group"] == g]
        gen, imp = sub.loc[sub["label"] == 1, "score"], sub.loc[sub["label"] == 0, "score"]
        assert r.loc[g, "n_false_non_match"] == (gen <= 0.5).sum() and r.loc[g, "n_false_match"] == (imp > 0.5).sum()
        assert r.loc[g, "fnmr_at_threshold"] == pytest.approx((gen <= 0.5).mean())
        assert r.loc[g, "fmr_at_threshold"] == pytest.approx((imp > 0.5).mean())
    d = t.differences.set_index(["statistic", "group_a", "group_b"])
    assert len(d) == 3 * 6 and set(d.index.get_level_values(0)) == set(H.DIFFERENCE_STATISTICS)
    row = d.loc[("fnmr_at_threshold", "LM", "DF")]
    _, want = proportions_ztest(r.loc[["LM", "DF"], "n_false_non_match"].to_numpy(),
                                r.loc[["LM", "DF"], "n_genuine"].to_numpy())
    assert row["p_z"] == pytest.approx(want) and row["diff"] == pytest.approx(
        r.loc["LM", "fnmr_at_threshold"] - r.loc["DF", "fnmr_at_threshold"])
    assert np.isnan(d.loc[("fnmr_at_fmr", "LM", "DF"), "p_z"])  # no z test at an estimated threshold
    assert (d["p_holm"] >= d["p"] - 1e-15).all() and (d["lo"] <= d["hi"]).all()


def test_a_planted_fnmr_difference_is_found(images, pairs):
    """Extra noise on DF: every pair with DF differs in FNMR, at the FMR target and at the
    fixed threshold (Holm 5 %, cluster bootstrap), in the planted direction; the unplanted
    pairs differ by less than any planted one."""
    p = scored(images, pairs, {"DF": 0.5})
    t = H.group_rate_tests(p, "score", "label", fmr=0.01, threshold=0.25, order=ORDER, n_boot=400, seed=0)
    for stat in ("fnmr_at_fmr", "fnmr_at_threshold"):
        d = t.differences[t.differences["statistic"] == stat].set_index(["group_a", "group_b"])
        assert d["resolved"].all()
        with_df = [k for k in d.index if "DF" in k]
        assert d.loc[with_df, "differs"].all() and (d.loc[with_df, "diff"] < 0).all(), stat  # a - DF < 0
        assert d.drop(index=with_df)["diff"].abs().max() < d.loc[with_df, "diff"].abs().min(), stat


def test_null_worlds_rarely_show_a_difference(images, pairs):
    """Ten worlds without a planted difference: the bootstrap p-values are about uniform (at
    most 10 % below 0.05, nominal 5 %) and at most 4 of the 30 Holm families (3 statistics x 10
    worlds) reject anything (nominal family-wise rate 5 %: 1.5 expected, P(>= 5) ~ 1.6 %)."""
    tables = [H.group_rate_tests(scored(images, pairs, {}, seed=100 + w), "score", "label", fmr=0.01,
                                 threshold=0.25, order=ORDER, n_boot=300, seed=w).differences.assign(world=w)
              for w in range(10)]
    d = pd.concat(tables, ignore_index=True)
    assert d["resolved"].all()
    assert (d["p"] < 0.05).mean() <= 0.10
    assert d.groupby(["world", "statistic"])["differs"].any().sum() <= 4


def test_too_few_replicates_to_reject_is_warned(images, pairs):
    """With 6 pairs the smallest Holm-adjusted p is 6 x 2 / (n_boot + 1): at 200 replicates
    nothing can differ at 5 %, and the function says so."""
    p = scored(images, pairs, {"DF": 0.5})
    with pytest.warns(UserWarning, match="cannot reject"):
        t = H.group_rate_tests(p, "score", "label", fmr=0.01, threshold=0.25, order=ORDER, n_boot=200)
    assert not t.differences["differs"].any()


@pytest.mark.filterwarnings("ignore:group_rate_tests.*cannot reject")
def test_too_few_impostors_is_unresolved_not_a_number(images, pairs):
    """At FMR 1e-4 a group needs 100,000 impostors: every rate that rests on impostors is NaN
    and flagged, its differences are unresolved and never 'differ'; the fixed-threshold FNMR
    (no impostors needed) is still tested."""
    p = scored(images, pairs, {"DF": 0.5})
    t = H.group_rate_tests(p, "score", "label", fmr=1e-4, threshold=0.5, order=ORDER, n_boot=50)
    r = t.rates
    assert not r["resolved_fnmr_at_fmr"].any() and r["fnmr_at_fmr"].isna().all()
    assert r["fnmr_at_fmr_lo"].isna().all() and r["threshold_group"].isna().all()
    assert not r["resolved_fmr_at_threshold"].any() and r["fmr_at_threshold"].isna().all()
    assert (r["n_false_match"] >= 0).all()  # the counts are still reported
    d = t.differences.set_index("statistic")
    for stat in ("fnmr_at_fmr", "fmr_at_threshold"):
        assert not d.loc[stat, "resolved"].any() and not d.loc[stat, "differs"].any()
        assert d.loc[stat, ["diff", "p", "p_holm"]].isna().all().all()
    assert d.loc["fnmr_at_threshold", "resolved"].all()
    out = t.to_dict()
    assert set(out["tests"]) == set(H.DIFFERENCE_STATISTICS) and set(out["rates"]) == set(ORDER)
    assert set(out["tests"]["fnmr_at_fmr"]) == {f"{a}-{b}" for a, b in itertools.combinations(ORDER, 2)}


@pytest.mark.filterwarnings("ignore:group_rate_tests.*cannot reject")
def test_bad_inputs_raise(images, pairs):
    p = scored(images, pairs, {})
    with pytest.raises(ValueError, match="n_boot"):
        H.group_rate_tests(p, "score", "label", n_boot=0)
    with pytest.raises(ValueError, match="one target FMR"):
        H.group_rate_tests(p, "score", "label", fmr=[0.01, 0.1])
    with pytest.raises(ValueError, match="fewer than two groups"):
        H.group_rate_tests(p[p["group"] == "LM"], "score", "label", n_boot=5)
    with pytest.raises(ValueError, match="alpha"):
        H.group_rate_tests(p, "score", "label", alpha=1.5, n_boot=5)
