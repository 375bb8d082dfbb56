"""facebias.metrics: agreement with sklearn and brute force, hand-computed cases, invariants."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import roc_curve

from facebias import metrics as M
from facebias.metrics.groups import _group_report_inputs, _group_table, _GroupSets
from facebias.metrics.rates import _allowed_false_matches
from facebias.metrics.weighted import _pooled_threshold, _SortedScores
from facebias.stats import bootstrap_weights


def brute_threshold(imp, f):
    """Smallest impostor score t with mean(imp > t) <= f, by trying every candidate."""
    return min(t for t in imp if np.mean(imp > t) <= f)


# --------------------------------------------------------------------- hand-computed cases
def test_hand_computed_rates():
    imp = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    gen = np.array([0.35, 0.75, 0.95, 1.2])
    # at most 2 of 10 impostors may exceed t -> t = 0.8 (0.9 and 1.0 exceed it)
    assert M.threshold_at_fmr(imp, 0.2) == 0.8
    assert M.threshold_at_fmr(imp, 0.25) == 0.8
    assert M.threshold_at_fmr(imp, 0.05) == 1.0  # no false match allowed
    assert M.fmr_at(imp, 0.8) == pytest.approx(0.2)
    assert M.fnmr_at(gen, 0.8) == pytest.approx(0.5)  # 0.35, 0.75 <= 0.8
    assert M.fnmr_at_fmr(gen, imp, 0.2) == pytest.approx(0.5)
    assert M.tar_at_far(gen, imp, 0.2) == pytest.approx(0.5)
    # match iff score > t: a genuine score equal to t is a non-match
    assert M.fnmr_at([0.8], 0.8) == 1.0


def test_threshold_with_ties_is_an_impostor_score_and_fmr_may_undershoot():
    imp = np.array([0.0, 0.5, 0.5, 0.5, 1.0])
    # f=0.4 allows 2 false matches; t=0.5 gives 1 (only 1.0 > 0.5); t=0.0 gives 4 -> t=0.5
    assert M.threshold_at_fmr(imp, 0.4) == 0.5
    assert M.fmr_at(imp, 0.5) == pytest.approx(0.2)


def test_float_rounding_of_the_allowed_count():
    imp = np.arange(100, dtype=np.float64)
    # 0.29 * 100 = 28.999999999999996 in floating point; 29 false matches are allowed
    t = M.threshold_at_fmr(imp, 0.29)
    assert np.mean(imp > t) == pytest.approx(0.29)
    assert t == brute_threshold(imp, 0.29)


def test_vectorised_over_fmr_and_dtype_kept():
    imp = np.linspace(-1, 1, 1001, dtype=np.float32)
    t = M.threshold_at_fmr(imp, [0.3, 0.1, 0.01])
    assert isinstance(t, np.ndarray) and t.dtype == np.float32
    assert [M.threshold_at_fmr(imp, f) for f in (0.3, 0.1, 0.01)] == list(t)


def test_eer_hand_computed():
    # symmetric case: imp = {0,1,2,3}, gen = {2,3,4,5}; at t=2: FMR=1/4, FNMR=1/4
    assert M.eer([2, 3, 4, 5], [0, 1, 2, 3]) == pytest.approx(0.25)
    # perfectly separated: EER 0
    assert M.eer([2.0, 3.0], [0.0, 1.0]) == pytest.approx(0.0)


def test_d_prime_hand_computed_and_properties():
    gen = np.array([1.0, 3.0])  # mean 2, var 1
    imp = np.array([-1.0, 1.0])  # mean 0, var 1
    assert M.d_prime(gen, imp) == pytest.approx(2.0)
    rng = np.random.default_rng(1)
    g, i = rng.normal(1, 1, 200_000), rng.normal(0, 1, 200_000)
    assert M.d_prime(g, i) == pytest.approx(1.0, abs=0.01)
    assert M.d_prime(g, i) == pytest.approx(M.d_prime(i, g))  # symmetric
    assert M.d_prime(3 * g + 7, 3 * i + 7) == pytest.approx(M.d_prime(g, i))  # affine invariant


# --------------------------------------------------------------------- independent implementations
def test_det_agrees_with_sklearn_roc_with_many_ties():
    rng = np.random.default_rng(0)
    imp = rng.normal(0, 1, 5000).round(1)  # heavy ties, also across the two sets
    gen = rng.normal(1.5, 1, 800).round(1)
    curve = M.det_curve(gen, imp)
    y = np.r_[np.ones(gen.size), np.zeros(imp.size)]
    fpr, tpr, thr = roc_curve(y, np.r_[gen, imp], drop_intermediate=False)
    # sklearn: descending thresholds, match iff score >= thr; ours: ascending, match iff > t
    np.testing.assert_allclose(curve.fmr, fpr[::-1])
    np.testing.assert_allclose(1 - curve.fnmr, tpr[::-1])
    np.testing.assert_array_equal(curve.thresholds[1:], np.unique(np.r_[gen, imp]))
    assert curve.thresholds[0] == -np.inf


def test_det_points_are_the_rates_at_their_thresholds():
    rng = np.random.default_rng(3)
    imp = rng.integers(0, 30, 400).astype(np.float32)
    gen = rng.integers(10, 40, 100).astype(np.float32)
    c = M.det_curve(gen, imp)
    for t, f, fn in zip(c.thresholds, c.fmr, c.fnmr, strict=True):
        assert f == np.mean(imp > t) and fn == np.mean(gen <= t)
    assert np.all(np.diff(c.fmr) <= 0) and np.all(np.diff(c.fnmr) >= 0)
    assert c.thresholds.dtype == np.float32


def test_det_with_mixed_precision_loses_nothing():
    imp = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    gen = np.array([0.2 + 1e-12, 0.5])  # float64, not representable in float32
    c = M.det_curve(gen, imp)
    assert c.thresholds.dtype == np.float64
    for t, f, fn in zip(c.thresholds, c.fmr, c.fnmr, strict=True):
        assert f == np.mean(imp > t) and fn == np.mean(gen <= t)


@settings(max_examples=200, deadline=None)
@given(
    imp=st.lists(st.integers(-5, 5), min_size=1, max_size=40),
    f=st.floats(0.001, 0.999),
)
def test_threshold_matches_brute_force(imp, f):
    imp = np.array(imp, dtype=np.float64)
    t = M.threshold_at_fmr(imp, f)
    assert t == brute_threshold(imp, f)
    # the weighted implementation with unit weights is the same definition
    assert _SortedScores(np.sort(imp)).threshold(np.array([f]))[0] == t


@settings(max_examples=100, deadline=None)
@given(
    imp=st.lists(st.integers(-4, 4), min_size=1, max_size=25),
    w=st.lists(st.integers(0, 3), min_size=25, max_size=25),
    f=st.floats(0.01, 0.99),
)
def test_weighted_threshold_equals_threshold_on_repeated_data(imp, w, f):
    order = np.argsort(imp, kind="stable")
    imp = np.array(imp, dtype=np.float64)[order]
    w = np.array(w[: imp.size], dtype=np.float64)[order]
    if w.sum() == 0:
        return
    s = _SortedScores(imp)
    rep = np.repeat(imp, w.astype(int))
    cw = s.weigh(w)
    assert s.threshold(np.array([f]), cw)[0] == M.threshold_at_fmr(rep, f)
    t = np.array([-1.5, 0.0, 2.0])
    np.testing.assert_allclose(s.fraction_above(t, cw), [np.mean(rep > x) for x in t])


@given(
    imp=st.lists(st.integers(-30, 30), min_size=1, max_size=400),
    w=st.lists(st.integers(0, 4), min_size=400, max_size=400),
    f=st.lists(st.floats(1e-4, 0.99), min_size=1, max_size=3),
)
def test_threshold_from_the_top_equals_threshold_over_every_weight(imp, w, f):
    """Reading only the top scores' weights (doubling the top until it holds the answer)
    gives the same threshold as the cumulative weights of all of them, bit for bit."""
    imp = np.sort(np.array(imp, dtype=np.float64))
    w = np.array(w[: imp.size], dtype=np.float64)
    s, f = _SortedScores(imp), np.array(f)
    read: list[int] = []

    def top(k):
        read.append(k)
        return w[imp.size - k:]

    got = s.threshold_from_top(f, float(w.sum()), top)
    want = s.threshold(f, s.weigh(w))
    np.testing.assert_array_equal(got, want)  # NaN (no weight) in the same places
    assert read == sorted(read) and all(k <= imp.size for k in read)  # nothing read without weight


def test_threshold_from_the_top_reads_only_the_top_of_many_scores():
    rng = np.random.default_rng(0)
    imp = np.sort(rng.normal(size=1_000_000))
    w = rng.integers(0, 3, imp.size).astype(np.float64)
    s, f = _SortedScores(imp), np.array([1e-5, 1e-4])
    read: list[int] = []
    got = s.threshold_from_top(f, float(w.sum()), lambda k: read.append(k) or w[imp.size - k:])
    np.testing.assert_array_equal(got, s.threshold(f, s.weigh(w)))
    assert max(read) < 2_000  # about 4 x 1e-4 x 10^6 + 64 weights, not a million


@settings(max_examples=100, deadline=None)
@given(
    a=st.lists(st.integers(-4, 4), min_size=1, max_size=15),
    b=st.lists(st.integers(-4, 4), min_size=1, max_size=15),
    w=st.lists(st.integers(0, 3), min_size=30, max_size=30),
    f=st.lists(st.floats(0.01, 0.99), min_size=1, max_size=4),
)
def test_pooled_threshold_equals_threshold_on_the_merged_repeated_data(a, b, w, f):
    """Two weighted sets searched separately give the threshold of their weighted union."""
    vals = np.r_[np.sort(a), np.sort(b)].astype(np.float64)
    w = np.array(w[: vals.size], dtype=np.float64)
    sets = [_SortedScores(vals, 0, len(a)), _SortedScores(vals, len(a), vals.size)]
    fmr = np.array(f)
    rep = np.repeat(vals, w.astype(int))
    got = _pooled_threshold(np.sort(vals), sets, [s.weigh(w) for s in sets], fmr)
    if rep.size == 0:
        assert np.isnan(got).all()
        return
    np.testing.assert_array_equal(got, M.threshold_at_fmr(rep, fmr))
    unweighted = _pooled_threshold(np.sort(vals), sets, [s.weigh() for s in sets], fmr)
    np.testing.assert_array_equal(unweighted, M.threshold_at_fmr(vals, fmr))


@settings(max_examples=100, deadline=None)
@given(
    gen=st.lists(st.integers(-6, 6), min_size=1, max_size=30),
    imp=st.lists(st.integers(-6, 6), min_size=1, max_size=30),
)
def test_eer_brute_force(gen, imp):
    gen, imp = np.array(gen, float), np.array(imp, float)
    e = M.eer(gen, imp)
    # brute force: walk every candidate threshold, find the sign change of FMR - FNMR and
    # intersect the two segments
    ts = np.r_[-np.inf, np.unique(np.r_[gen, imp])]
    pts = [(np.mean(imp > t), np.mean(gen <= t)) for t in ts]
    for (a0, b0), (a1, b1) in zip(pts, pts[1:], strict=False):
        if a0 - b0 > 0 and a1 - b1 <= 0:
            lam = (a0 - b0) / ((a0 - b0) - (a1 - b1))
            assert e == pytest.approx(a0 + lam * (a1 - a0))
            assert e == pytest.approx(b0 + lam * (b1 - b0))
            assert min(a1, b0) - 1e-12 <= e <= max(a0, b1) + 1e-12
            break
    else:
        pytest.fail("no crossing found")


def test_eer_of_gaussians_matches_theory():
    rng = np.random.default_rng(2)
    d = 1.5
    imp, gen = rng.normal(0, 1, 400_000), rng.normal(2 * d, 1, 400_000)
    assert M.eer(gen, imp) == pytest.approx(norm.cdf(-d), abs=2e-3)
    # threshold at FMR f is the (1 - f) quantile of N(0, 1)
    assert M.threshold_at_fmr(imp, 0.01) == pytest.approx(norm.ppf(0.99), abs=0.02)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_invariant_to_the_order_of_pairs(seed):
    rng = np.random.default_rng(seed)
    imp, gen = rng.normal(0, 1, 300).round(2), rng.normal(1, 1, 60).round(2)
    pi, pg = rng.permutation(imp), rng.permutation(gen)
    fmr = [0.3, 0.1, 0.01]
    np.testing.assert_array_equal(M.threshold_at_fmr(imp, fmr), M.threshold_at_fmr(pi, fmr))
    np.testing.assert_array_equal(M.fnmr_at_fmr(gen, imp, fmr), M.fnmr_at_fmr(pg, pi, fmr))
    assert M.eer(gen, imp) == M.eer(pg, pi)
    for a, b in zip(M.det_curve(gen, imp), M.det_curve(pg, pi), strict=True):
        np.testing.assert_array_equal(a, b)


def test_tar_is_monotone_in_far():
    rng = np.random.default_rng(4)
    imp, gen = rng.normal(0, 1, 20_000), rng.normal(2, 1, 2_000)
    far = np.logspace(-4, -0.1, 30)
    tar = M.tar_at_far(gen, imp, far)
    assert np.all(np.diff(tar) >= 0)
    ops = M.operating_points(gen, imp, far)
    assert (ops["fmr"] <= ops["fmr_target"]).all()


# --------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "bad, msg",
    [
        ([0.1, np.nan], "non-finite"),
        ([0.1, np.inf], "non-finite"),
        ([], "empty"),
        ([[0.1, 0.2]], "1-D"),
        (["a", "b"], "real numbers"),
    ],
)
def test_bad_scores_are_errors(bad, msg):
    with pytest.raises(ValueError, match=msg):
        M.det_curve([0.5, 0.6], bad)
    with pytest.raises(ValueError, match="impostor"):
        M.threshold_at_fmr(bad, 0.1)


@pytest.mark.parametrize("f", [0, 1, -0.1, 1.5, np.nan])
def test_fmr_outside_unit_interval_is_an_error(f):
    with pytest.raises(ValueError, match=r"fmr.*\(0, 1\)"):
        M.threshold_at_fmr([0.1, 0.2], f)


# --------------------------------------------------------------------- fairness summaries
def test_fairness_summaries_hand_computed():
    fmr = np.array([0.001, 0.002, 0.004])
    fnmr = np.array([0.10, 0.10, 0.05])
    assert M.max_min_ratio(fmr) == pytest.approx(4.0)
    assert M.fdr(fmr, fnmr, alpha=0.5) == pytest.approx(1 - (0.5 * 0.003 + 0.5 * 0.05))
    # gini by the textbook double loop
    def g(x):
        n = len(x)
        return n / (n - 1) * sum(abs(a - b) for a in x for b in x) / (2 * n * n * np.mean(x))
    assert M.gini(fmr) == pytest.approx(g(fmr))
    assert M.garbe(fmr, fnmr, alpha=0.3) == pytest.approx(0.3 * g(fmr) + 0.7 * g(fnmr))
    assert M.inequity_rate(fmr, fnmr) == pytest.approx(4.0**0.5 * 2.0**0.5)
    # perfectly equal groups are perfectly fair
    eq = np.full(4, 0.01)
    assert M.gini(eq) == 0 and M.fdr(eq, eq) == 1 and M.inequity_rate(eq, eq) == 1
    assert M.max_min_ratio([0.0, 0.01]) == np.inf and np.isnan(M.max_min_ratio([0.0, 0.0]))  # 0/0: undefined
    # vectorised over leading axes (bootstrap replicates)
    reps = np.stack([fmr, 2 * fmr])
    np.testing.assert_allclose(M.gini(reps), [g(fmr), g(2 * fmr)])


# --------------------------------------------------------------------- group report
def _two_group_pairs(rng, shift_b=0.0, n_ids=60, imgs=6, corr=0.0):
    """Pairs from identity-level random effects; group B's impostors shifted by shift_b."""
    rows = []
    for grp, shift in (("A", 0.0), ("B", shift_b)):
        ids = [f"{grp}{i}" for i in range(n_ids)]
        effect = {i: rng.normal(0, corr) for i in ids}
        for a in range(n_ids):
            for _ in range(imgs):
                rows.append((ids[a], ids[a], 1, rng.normal(3, 1) + effect[ids[a]], grp))
            for b in rng.choice(n_ids, min(40, n_ids), replace=False):
                if b != a:
                    s = rng.normal(shift, 1) + effect[ids[a]] + effect[ids[b]]
                    rows.append((ids[a], ids[b], 0, s, grp))
    return pd.DataFrame(rows, columns=["id1", "id2", "label", "score", "group"])


def test_group_report_thresholds_match_the_primitives():
    rng = np.random.default_rng(5)
    df = _two_group_pairs(rng, shift_b=0.5)
    rep = M.group_report(df, "score", "label", "group", [0.1, 0.01], n_boot=0)
    imp = df[df.label == 0]
    for _, row in rep.table.iterrows():
        g = imp[imp.group == row.group].score
        gen = df[(df.label == 1) & (df.group == row.group)].score
        assert row.threshold_global == M.threshold_at_fmr(imp.score, row.fmr_target)
        assert row.threshold_group == M.threshold_at_fmr(g, row.fmr_target)
        assert row.fmr_global == pytest.approx(M.fmr_at(g, row.threshold_global))
        assert row.fnmr_group == pytest.approx(M.fnmr_at(gen, row.threshold_group))
        assert row.fmr_group <= row.fmr_target


def test_group_report_finds_a_planted_shift_and_not_a_null_one():
    rng = np.random.default_rng(6)
    f = 0.01
    planted = M.group_report(_two_group_pairs(rng, shift_b=0.6), "score", "label", "group", f,
                             ids=("id1", "id2"), n_boot=100)
    t = planted.table.set_index("group")
    # global threshold: B above target, A below, and the CIs exclude the target
    assert t.loc["B", "fmr_global_lo"] > f > t.loc["A", "fmr_global_hi"]
    # per-group thresholds: both at the target within discretisation (one impostor)
    for g in "AB":
        assert abs(t.loc[g, "fmr_group"] - f) <= 1 / t.loc[g, "n_impostor"]
    glob = planted.summary.set_index("policy").loc["global"]
    assert glob.fmr_ratio_lo > 1.5
    null = M.group_report(_two_group_pairs(rng, shift_b=0.0), "score", "label", "group", f,
                          ids=("id1", "id2"), n_boot=100)
    t0 = null.table.set_index("group")
    for g in "AB":  # no planted shift: every group's interval covers the target
        assert t0.loc[g, "fmr_global_lo"] <= f <= t0.loc[g, "fmr_global_hi"]
    assert null.summary.set_index("policy").loc["global"].fmr_ratio_lo < 1.5


def test_identity_bootstrap_is_wider_than_pair_bootstrap_when_identities_correlate():
    rng = np.random.default_rng(7)
    df = _two_group_pairs(rng, corr=0.8, n_ids=40)
    kw = dict(n_boot=150, seed=1)
    by_id = M.group_report(df, "score", "label", "group", 0.05, ids=("id1", "id2"), **kw).table
    by_pair = M.group_report(df, "score", "label", "group", 0.05, **kw).table
    w_id = (by_id.fnmr_global_hi - by_id.fnmr_global_lo).mean()
    w_pair = (by_pair.fnmr_global_hi - by_pair.fnmr_global_lo).mean()
    assert w_id > 1.5 * w_pair


def test_group_report_is_deterministic_and_serialises():
    rng = np.random.default_rng(8)
    df = _two_group_pairs(rng, n_ids=20)
    a = M.group_report(df, "score", "label", "group", [0.1], n_boot=20, seed=3)
    b = M.group_report(df.sample(frac=1, random_state=1), "score", "label", "group", [0.1],
                       n_boot=0)
    pd.testing.assert_frame_equal(
        a.table[b.table.columns], b.table, check_exact=False, rtol=1e-12)
    d = a.to_dict()
    assert d["meta"]["bootstrap_unit"] == "pairs" and len(d["groups"]) == 2
    text = str(a)
    assert "fairness across groups" in text
    lo, hi = a.table.loc[0, ["fmr_global_lo", "fmr_global_hi"]]
    assert f"[{lo:.4g}, {hi:.4g}]" in text  # intervals printed beside the estimates
    assert "no bootstrap intervals" in str(b)


@pytest.mark.parametrize(
    "mutate, msg",
    [
        (lambda d: d.assign(score=d.score.where(d.index != 3, np.nan)), "'score'.*non-finite"),
        (lambda d: d.assign(label=d.label.where(d.index != 2, 2)), "'label'.*0/1.*row 2"),
        (lambda d: d.assign(group=d.group.where(d.label == 1, "A")), "group 'B' has no impostor"),
        (lambda d: d.drop(columns="group"), "group: column 'group' not found"),
        (lambda d: d.assign(group=d.group.where(d.index != 5, None)), "missing group"),
    ],
)
def test_group_report_bad_input(mutate, msg):
    df = _two_group_pairs(np.random.default_rng(9), n_ids=5)
    with pytest.raises(ValueError, match=msg):
        M.group_report(mutate(df), "score", "label", "group", 0.1, n_boot=0)


def test_group_report_rejects_bad_fmr():
    df = _two_group_pairs(np.random.default_rng(9), n_ids=5)
    with pytest.raises(ValueError, match="fmr"):
        M.group_report(df, "score", "label", "group", [0.1, 1.0], n_boot=0)


def test_failure_to_enrol_table_hand_computed_and_wilson_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    enrolled = [True, False, True, True, False, False, True]
    groups = ["F", "F", "F", "M", "M", "M", "M"]
    reasons = [None, "no face detected (yunet)", None, None, "unreadable image x.jpg: corrupt",
               "no face detected (yunet)", None]
    t = M.failure_to_enrol(enrolled, groups, reasons)
    assert t.loc["F", ["n", "n_fte"]].tolist() == [3, 1]
    assert t.loc["M", ["n", "n_fte"]].tolist() == [4, 2]
    assert t.loc["all", ["n", "n_fte"]].tolist() == [7, 3]
    assert t.loc["F", "top_reason"] == "no face detected (yunet)"
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="wilson")
    assert t.loc["M", "fte_lo"] == pytest.approx(lo) and t.loc["M", "fte_hi"] == pytest.approx(hi)
    assert M.failure_to_enrol([True, True]).loc["all", "n_fte"] == 0
    with pytest.raises(ValueError, match="enrolled"):
        M.failure_to_enrol([1, 2])


def test_roc_auc_hand_cases_and_sklearn():
    from sklearn.metrics import roc_auc_score

    assert M.roc_auc([1.0, 2.0], [0.0, 0.5]) == 1.0
    assert M.roc_auc([0.0], [1.0]) == 0.0
    assert M.roc_auc([1.0], [1.0]) == 0.5  # a tie counts half
    rng = np.random.default_rng(3)
    gen, imp = np.round(rng.normal(1, 1, 300), 1), np.round(rng.normal(0, 1, 500), 1)  # with ties
    want = roc_auc_score(np.r_[np.ones(300), np.zeros(500)], np.r_[gen, imp])
    assert M.roc_auc(gen, imp) == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError, match="non-finite"):
        M.roc_auc([np.nan, 1.0], [0.0])


# --------------------------------------------------------------------- thinned DET (max_points)
def _tied_scores(rng, n, m, dtype):
    q = rng.choice([3, 10, 1000])  # from heavy ties to almost none, also across the sets
    imp = (np.round(rng.normal(0, 1, n) * q) / q).astype(dtype)
    gen = np.round(rng.normal(1.5, 1, m) * q) / q
    return gen, imp


@pytest.mark.parametrize("seed", range(40))
def test_thinned_det_is_the_thinned_full_curve(seed):
    """det_curve(max_points) never builds the full curve, yet gives exactly what thin_det
    picks from the full curve: every point a point of it (threshold and both rates bit for
    bit), each requested FMR's operating point with fnmr_at_fmr's FNMR, at most max_points."""
    rng = np.random.default_rng(seed)
    gen, imp = _tied_scores(rng, int(rng.integers(100, 5000)), int(rng.integers(5, 800)),
                            [np.float32, np.float64][seed % 2])
    fmrs = sorted(rng.uniform(1e-3, 0.9, int(rng.integers(0, 4)))) or None
    full = M.det_curve(gen, imp)
    least = 4 + (0 if fmrs is None else len(fmrs))
    k = int(rng.integers(least, max(least + 1, full.fmr.size // 3)))
    assert full.fmr.size > k
    thin = M.det_curve(gen, imp, max_points=k, fmr=fmrs)
    for a, b in zip(thin, M.thin_det(full, k, fmr=fmrs), strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert thin.fmr.size <= k and thin.thresholds[0] == -np.inf
    idx = np.searchsorted(full.thresholds, thin.thresholds)
    for a, b in zip(thin, full, strict=True):
        np.testing.assert_array_equal(a, b[idx])
    assert idx[-1] == full.fmr.size - 1  # the last point (FMR 0, FNMR 1) is kept
    for f in fmrs or []:
        at = np.searchsorted(thin.thresholds, M.threshold_at_fmr(imp, f))
        assert thin.thresholds[at] == M.threshold_at_fmr(imp, f)
        assert thin.fnmr[at] == M.fnmr_at_fmr(gen, imp, f)


def test_thinned_det_grid_covers_every_decade():
    """10^6 impostors, 200 points: every decade of FMR from 1e-6 to 1 and of FNMR from
    1e-4 to 1 holds kept points, and the requested 1e-5 is there exactly."""
    rng = np.random.default_rng(7)
    imp, gen = rng.normal(0, 1, 1_000_000), rng.normal(3, 1, 10_000)
    thin = M.det_curve(gen, imp, max_points=200, fmr=[1e-5])
    assert thin.fmr.size <= 200
    for rate, lo in ((thin.fmr, 1e-6), (thin.fnmr, 1e-4)):
        for d in np.arange(np.log10(lo), 0):
            assert ((rate >= 10.0 ** d) & (rate < 10.0 ** (d + 1))).sum() >= 5, (d, rate)
    assert M.fnmr_at_fmr(gen, imp, 1e-5) in thin.fnmr[thin.fmr <= 1e-5][:1]


def test_thinned_det_small_input_and_errors():
    gen, imp = [0.9, 0.4], [0.1, 0.4]
    full = M.det_curve(gen, imp)
    for a, b in zip(M.det_curve(gen, imp, max_points=5), full, strict=True):  # 2 + 2 + 1 <= 5
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="max_points: must be an integer >= 6"):
        M.det_curve(gen, imp, max_points=5, fmr=[0.1, 0.2])
    with pytest.raises(ValueError, match="max_points"):
        M.det_curve(gen, imp, max_points=True)
    with pytest.raises(ValueError, match="need max_points"):
        M.det_curve(gen, imp, fmr=0.1)
    with pytest.raises(ValueError, match="fmr: target rates must lie in"):
        M.det_curve(gen, imp, max_points=10, fmr=5)
    with pytest.raises(ValueError, match="max_points"):
        M.thin_det(full, None)
    with pytest.warns(DeprecationWarning, match="chunk has no effect"):
        M.det_curve(gen, imp, 1 << 20)


def _stride_trap(n: int, value_at_samples: float) -> np.ndarray:
    """Zeros with ``value_at_samples`` exactly where the strided sample looks."""
    a = np.zeros(n)
    a[:: n >> 16] = value_at_samples
    return a


@pytest.mark.parametrize("case", ["normal32", "ascending", "descending", "ties", "trap_high",
                                  "trap_low", "bound_ties"])
def test_upper_order_statistics_match_a_full_sort(case, monkeypatch):
    """threshold_at_fmr on large inputs selects the tail from a sampled bound (or falls back
    to a partition of everything when the sample misleads): np.sort(impostor)[kth] exactly,
    every case; the fallback runs exactly when the sample sees values that too few reach."""
    rng = np.random.default_rng(5)
    n = 1 << 20  # the sample takes every 16th score
    imp = {
        "normal32": rng.normal(0, 1, n).astype(np.float32),
        "ascending": np.sort(rng.normal(0, 1, n)),
        "descending": np.sort(rng.normal(0, 1, n))[::-1].copy(),
        "ties": rng.integers(0, 5, n).astype(np.float64),
        "trap_high": _stride_trap(n, 1.0),  # the sample sees only 1s: fewer reach v than needed
        "trap_low": _stride_trap(n, -1.0),  # the sample sees only -1s: the whole array reaches v
        "bound_ties": np.r_[np.zeros(n - 1000), np.ones(1000)],
    }[case]
    fmrs = [0.2, 0.1, 1e-2, 1e-3, 1e-4, 3e-5, 1e-5, 0.05, 0.004, 2e-4]  # 10 targets: sorted tail
    ref = np.sort(imp)[n - 1 - _allowed_false_matches(np.array(fmrs), n)]
    sizes = []
    partition = np.partition

    def spy(a, kth, *args, **kw):
        sizes.append(np.size(a))
        return partition(a, kth, *args, **kw)

    monkeypatch.setattr(np, "partition", spy)
    np.testing.assert_array_equal(M.threshold_at_fmr(imp, fmrs), ref)
    assert (n in sizes) == (case == "trap_high")  # 1/16 of the scores are 1: 0.2 needs more
    for f, r in zip(fmrs[:5], ref[:5], strict=True):  # one target: partitioned tail
        assert M.threshold_at_fmr(imp, f) == r
    np.testing.assert_array_equal(M.threshold_at_fmr(imp, fmrs[:3]), ref[:3])


def test_group_report_identity_bootstrap_equals_weighting_every_pair():
    """The identity bootstrap reads multiplicities straight into sorted order; the table equals
    the brute-force layout (a weight per pair in input order, then gathered), bit for bit."""
    rng = np.random.default_rng(12)
    n = 3000
    pairs = pd.DataFrame({"id1": rng.integers(0, 60, n), "group": rng.choice(["a", "b", "c"], n),
                          "label": rng.integers(0, 2, n)})
    pairs["id2"] = np.where(pairs["label"] == 1, pairs["id1"], rng.integers(0, 60, n))
    pairs["score"] = rng.normal(size=n) + pairs["label"] * 1.5
    rates = [0.1, 0.02]
    got = M.group_report(pairs, "score", "label", "group", rates, ids=("id1", "id2"), n_boot=40, seed=2,
                         min_impostor_factor=0)
    s, is_gen, g, r = _group_report_inputs(pairs, "score", "label", "group", rates, 0.95, 40)
    sets = _GroupSets.of(s, is_gen, g, "label", "group")
    boots: dict[str, list[np.ndarray]] = {}
    for w in bootstrap_weights(n, 40, 2, id1=pairs["id1"].to_numpy(), id2=pairs["id2"].to_numpy()):
        for k, v in sets.evaluate(w[sets.order], r).items():
            boots.setdefault(k, []).append(v)
    want = _group_table(sets, r, sets.evaluate(None, r), boots, 40, 0.95, np.ones((2, 3), bool))
    pd.testing.assert_frame_equal(got.table, want)
    assert (got.table.filter(like="_hi").to_numpy() > got.table.filter(like="_lo").to_numpy()).any()
