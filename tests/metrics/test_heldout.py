"""Held-out thresholds (issue 32, item 3) and the direction and empty-result guards of the API
(item 4 and "What to build" 3): facebias.metrics.heldout against a brute-force loop, a known
world where the in-sample per-group FMR sits at its target by construction while the held-out
one scatters around it, identity-disjoint folds, and group_report's higher_is_match and
unresolved-rate warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from facebias import metrics as M
from facebias.metrics.heldout import CV_COLUMNS
from facebias.studies import bfw as study
from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world


# --------------------------------------------------------------------------- an independent implementation
def brute_threshold(imp: np.ndarray, f: float) -> float:
    """Smallest impostor score t with mean(imp > t) <= f, by scanning the scores from the top."""
    best = np.nan
    for t in sorted(set(imp.tolist()), reverse=True):
        if np.mean(imp > t) <= f:
            best = t
        else:
            break
    return best


def brute_heldout(df: pd.DataFrame, f: float, factor: float) -> pd.DataFrame:
    """Per (fold, group, policy): the threshold on the other folds' impostors (all groups for
    'global', the group's for 'group'), the held-out FMR and FNMR, NaN unless both the training
    and the held-out impostors number at least factor / f and there are held-out genuine pairs."""
    rows = []
    for k in sorted(df.fold.unique()):
        train, test = df[df.fold != k], df[df.fold == k]
        for g in sorted(df.group.unique()):
            imp_t = test[(test.group == g) & (test.label == 0)].score.to_numpy()
            gen_t = test[(test.group == g) & (test.label == 1)].score.to_numpy()
            for policy in ("global", "group"):
                pool = train[train.label == 0]
                if policy == "group":
                    pool = pool[pool.group == g]
                x = pool.score.to_numpy()
                ok = x.size >= factor / f and imp_t.size >= factor / f and imp_t.size > 0 and gen_t.size > 0
                t = brute_threshold(x, f) if x.size and x.size >= factor / f else np.nan
                rows.append({"fold": k, "group": g, "policy": policy, "threshold": t,
                             "fmr": np.mean(imp_t > t) if ok else np.nan,
                             "fnmr": np.mean(gen_t <= t) if ok else np.nan,
                             "n_impostor": imp_t.size, "n_genuine": gen_t.size, "resolved": ok})
    return pd.DataFrame(rows)


def pairs_table(seed: int = 0, n_imp: int = 300, n_gen: int = 40, folds=(1, 2, 3),
                groups=("A", "B", "C"), shift: dict | None = None) -> pd.DataFrame:
    """Impostors N(shift[g], 1), genuine N(3, 1), per fold and group; continuous scores."""
    rng = np.random.default_rng(seed)
    shift = shift or {}
    parts = []
    for k in folds:
        for g in groups:
            parts.append(pd.DataFrame({
                "score": np.r_[rng.normal(shift.get(g, 0.0), 1, n_imp), rng.normal(3, 1, n_gen)],
                "label": np.repeat([0, 1], [n_imp, n_gen]), "group": g, "fold": k}))
    return pd.concat(parts, ignore_index=True).sample(frac=1, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("factor", [10.0, 0.0])
def test_heldout_rates_equal_a_brute_force_loop(factor):
    df = pairs_table(groups=("A", "B", "C"), shift={"B": 0.5})
    df.loc[(df.group == "C") & (df.fold == 2) & (df.label == 0), "group"] = "A"  # C: no impostors in fold 2
    rates = [0.1, 0.02]  # 10/0.02 = 500 > the 300 held-out impostors: unresolved unless factor is 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", M.UnresolvedRatesWarning)
        cv = M.heldout_rates(df, "score", "label", "group", "fold", rates, min_impostor_factor=factor)
    assert list(cv.columns[:len(CV_COLUMNS)]) == CV_COLUMNS
    for f in rates:
        got = cv[cv.fmr_target == f].reset_index(drop=True)
        ref = brute_heldout(df, f, factor)
        for col in ("fold", "group", "policy", "n_impostor", "n_genuine", "resolved"):
            assert got[col].tolist() == ref[col].tolist(), col
        for col in ("fmr", "fnmr"):
            np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy())
        known = ref.resolved.to_numpy()
        np.testing.assert_array_equal(got.threshold.to_numpy()[known], ref.threshold.to_numpy()[known])
    # fold_average is the plain mean over folds, NaN when any fold is unresolved
    avg = M.fold_average(cv)
    for (pol, f, g), row in avg.set_index(["policy", "fmr_target", "group"]).iterrows():
        sub = cv[(cv.policy == pol) & (cv.fmr_target == f) & (cv.group == g)]
        if sub.resolved.all():
            assert row.fmr == pytest.approx(sum(sub.fmr) / len(sub), rel=1e-15)
            assert row.n_impostor == sub.n_impostor.sum()
        else:
            assert np.isnan(row.fmr) and not row.resolved


def test_in_sample_fmr_is_at_the_target_by_construction_held_out_scatters_around_it():
    """Known truth: continuous impostor scores, 5 folds x 2000 impostors per group and FMR 0.01.
    In sample, each group's own threshold leaves exactly 100 of its 10,000 impostors above it:
    fmr_group is 0.01 to the last bit. Held out, it is a binomial-like estimate that varies
    from fold to fold, centred on the target; B's impostors are shifted up, so one global
    threshold gives B a higher FMR than A, held out as in sample (the planted difference)."""
    f, n_imp = 0.01, 2000
    df = pairs_table(seed=3, n_imp=n_imp, n_gen=100, folds=range(1, 6), groups=("A", "B"), shift={"B": 0.4})
    rep = M.group_report(df, "score", "label", "group", f, n_boot=0)
    assert (rep.table.fmr_group == f).all()
    held = M.heldout_report(df, "score", "label", "group", f, fold="fold")
    folds = held.folds[held.folds.policy == "group"]
    assert folds.resolved.all() and folds.fmr.nunique() > 1 and (folds.fmr != f).any()
    # the fold mean is near the target: held-out FM count ~ Binomial(2000, ~0.01) per fold, the
    # threshold's own error of half that; 5 folds -> sd about 0.0011; allow 3.5 sd
    assert np.allclose(held.table.fmr_group, f, atol=0.004)
    assert (held.table.fmr_group_sd > 0).all()
    glob = held.table.set_index("group").fmr_global
    assert glob["B"] > f > glob["A"]
    assert held.meta["thresholds"].startswith("held-out") and held.meta["folds"]["k"] == 5
    assert held.meta["folds"]["source"] == "column 'fold'" and held.meta["folds"]["n_dropped"] == 0
    assert held.meta["n_impostor"] == 2 * 5 * n_imp


def test_heldout_report_table_is_the_fold_average_of_heldout_rates():
    df = pairs_table(seed=5, shift={"C": -0.3})
    rep = M.heldout_report(df, "score", "label", "group", [0.05, 0.1], fold="fold", alpha=0.3)
    avg = M.fold_average(M.heldout_rates(df, "score", "label", "group", "fold", [0.05, 0.1]))
    assert rep.table.fmr_target.tolist() == [0.05] * 3 + [0.1] * 3  # the targets in the order given
    for _, row in rep.table.iterrows():
        for pol in ("global", "group"):
            a = avg[(avg.policy == pol) & (avg.fmr_target == row.fmr_target) & (avg.group == row.group)].iloc[0]
            assert row[f"fmr_{pol}"] == a.fmr and row[f"fnmr_{pol}"] == a.fnmr
            assert row[f"threshold_{pol}"] == a.threshold and row.n_impostor == a.n_impostor
    for _, s in rep.summary.iterrows():
        sub = rep.table[rep.table.fmr_target == s.fmr_target]
        assert s.fmr_ratio == pytest.approx(sub[f"fmr_{s.policy}"].max() / sub[f"fmr_{s.policy}"].min())
        assert s.fdr == pytest.approx(M.fdr(sub[f"fmr_{s.policy}"], sub[f"fnmr_{s.policy}"], 0.3))
    d = rep.to_dict()
    assert len(d["folds"]) == len(rep.folds) == 3 * 2 * 3 * 2 and d["meta"]["n_boot"] == 0


# --------------------------------------------------------------------------- identity folds
def test_identity_folds_are_disjoint_balanced_and_seeded():
    rng = np.random.default_rng(0)
    ids = np.array([f"p{i}" for i in range(23)])
    id1, id2 = rng.choice(ids, 2000), rng.choice(ids, 2000)
    id2[:200] = id1[:200]  # genuine pairs
    folds = M.identity_folds(id1, id2, 4, seed=7)
    assert set(np.unique(folds)) <= {-1, 1, 2, 3, 4}
    assert (folds[:200] > 0).all()  # a genuine pair is always in its identity's fold
    where: dict[str, set] = {}
    for a, b, k in zip(id1, id2, folds, strict=True):
        if k > 0:
            where.setdefault(a, set()).add(k)
            where.setdefault(b, set()).add(k)
    assert all(len(v) == 1 for v in where.values())  # each identity in one fold only
    fold_of = {i: next(iter(v)) for i, v in where.items()}
    # brute force: a pair is dropped iff its identities' folds differ
    expected_dropped = sum(fold_of[a] != fold_of[b] for a, b in zip(id1, id2, strict=True))
    assert (folds == -1).sum() == expected_dropped
    sizes = np.bincount(list(fold_of.values()))[1:]
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 23
    assert (M.identity_folds(id1, id2, 4, seed=7) == folds).all()
    assert (M.identity_folds(id1, id2, 4, seed=8) != folds).any()
    for k, msg in ((1, "at least 2"), (24, "23 identities")):
        with pytest.raises(ValueError, match=msg):
            M.identity_folds(id1, id2, k)


def test_heldout_report_on_identity_folds_drops_and_counts_spanning_pairs():
    rng = np.random.default_rng(1)
    n = 6000
    grp = rng.choice(["A", "B"], 40)
    id1, id2 = rng.integers(0, 40, n), rng.integers(0, 40, n)
    id2[:600] = id1[:600]
    label = (id1 == id2).astype(int)
    df = pd.DataFrame({"s": np.where(label == 1, rng.normal(3, 1, n), rng.normal(0, 1, n)), "y": label,
                       "i1": id1, "i2": id2, "g": grp[id1]})
    rep = M.heldout_report(df, "s", "y", "g", 0.1, ids=("i1", "i2"), k=3, seed=2)
    folds = M.identity_folds(id1, id2, 3, seed=2)
    kept = df[folds > 0].assign(fold=folds[folds > 0])
    assert rep.meta["folds"]["n_dropped"] == int((folds < 0).sum()) > 0
    assert rep.meta["n_genuine"] + rep.meta["n_impostor"] == len(kept)
    assert "seeded 2" in rep.meta["thresholds"] and "dropped" in rep.meta["thresholds"]
    ref = M.heldout_rates(kept, "s", "y", "g", "fold", 0.1)
    pd.testing.assert_frame_equal(rep.folds, ref)


def test_heldout_report_needs_folds_and_a_matching_k():
    df = pairs_table()
    with pytest.raises(ValueError, match=r"fold=.*ids=\(id1, id2\), k=K"):
        M.heldout_report(df, "score", "label", "group", 0.1)
    with pytest.raises(ValueError, match="has 3 folds, not 4"):
        M.heldout_report(df, "score", "label", "group", 0.1, fold="fold", k=4)
    with pytest.raises(ValueError, match="at least 2 folds"):
        M.heldout_rates(df.assign(fold=1), "score", "label", "group", "fold", 0.1)


# --------------------------------------------------------------------------- empty and unresolved
def test_a_fold_without_impostors_of_a_group_warns_and_gives_nan_not_a_crash():
    df = pairs_table(n_imp=200)
    df = df[~((df.group == "B") & (df.fold == 2) & (df.label == 0))]
    with pytest.warns(M.UnresolvedRatesWarning) as caught:
        cv = M.heldout_rates(df, "score", "label", "group", "fold", 0.1)
    bad = cv[~cv.resolved]
    assert set(zip(bad.group, bad.fold, strict=True)) == {("B", 2)} and bad[["fmr", "fnmr"]].isna().all().all()
    assert (bad.n_impostor == 0).all() and (bad.note == "too few held-out impostors").all()
    msg = str(caught[0].message)
    assert "B (too few held-out impostors in fold 2)" in msg and "10/0.1 = 100" in msg
    with pytest.raises(ValueError, match="fold 2: subgroup 'B' has no held-out genuine or impostor pairs"):
        M.heldout_rates(df, "score", "label", "group", "fold", 0.1, missing="raise")
    # no genuine pair held out: FNMR cannot be measured
    no_gen = pairs_table(n_imp=200)
    no_gen = no_gen[~((no_gen.group == "C") & (no_gen.fold == 3) & (no_gen.label == 1))]
    with pytest.warns(M.UnresolvedRatesWarning, match="no held-out genuine pairs in fold 3"):
        cv = M.heldout_rates(no_gen, "score", "label", "group", "fold", 0.1)
    assert set(zip(*cv.loc[~cv.resolved, ["group", "fold"]].T.to_numpy(), strict=True)) == {("C", 3)}


def test_training_shortage_is_named_per_policy():
    """A and B: 300 impostors in each of 3 folds; C: 50, 50 and 1000. At FMR 0.05 (200 needed)
    C's held-out folds 1 and 2 are short; held out in fold 3, C's own threshold is fitted on
    the 100 impostors of folds 1 and 2 (short) while the pooled one has plenty: the global
    policy is resolved there, the group policy is not."""
    df = pairs_table(n_imp=300, groups=("A", "B"))
    rng = np.random.default_rng(9)
    c = [pd.DataFrame({"score": np.r_[rng.normal(0, 1, n), rng.normal(3, 1, 40)], "label": np.repeat([0, 1], [n, 40]),
                       "group": "C", "fold": k}) for k, n in ((1, 50), (2, 50), (3, 1000))]
    df = pd.concat([df, *c], ignore_index=True)
    with pytest.warns(M.UnresolvedRatesWarning) as w:
        cv = M.heldout_rates(df, "score", "label", "group", "fold", [0.05, 0.2])
    assert len(w) == 1 and str(w[0].message).startswith(
        "held-out fmr 0.05: unresolved rates (NaN, resolved false) in C (too few held-out impostors in folds 1, 2; "
        "too few training impostors for the group's threshold in fold 3)")
    bad = cv[~cv.resolved]
    assert set(zip(bad.group, bad.fold, bad.policy, strict=True)) == {
        ("C", 1, "global"), ("C", 1, "group"), ("C", 2, "global"), ("C", 2, "group"), ("C", 3, "group")}
    assert cv[cv.fmr_target == 0.2].resolved.all()  # 50 impostors resolve 0.2
    row = cv[(cv.group == "C") & (cv.fold == 3) & (cv.fmr_target == 0.05)].set_index("policy")
    assert row.loc["group", "n_impostor_train"] == 100 and row.loc["global", "n_impostor_train"] == 4 * 300 + 100


def test_group_report_warns_for_unresolved_rates_naming_the_rule_and_groups():
    df = pairs_table(n_imp=300)  # 900 impostors per group
    with pytest.warns(M.UnresolvedRatesWarning) as caught:
        rep = M.group_report(df, "score", "label", "group", [0.05, 0.01], n_boot=0)
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert msg.startswith("fmr 0.01: too few impostors in A (900), B (900), C (900)")
    assert "min_impostor_factor/FMR = 10/0.01 = 1000" in msg
    assert not rep.table[rep.table.fmr_target == 0.01].resolved.any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # resolved everywhere: no warning at all
        M.group_report(df, "score", "label", "group", 0.05, n_boot=5)


# --------------------------------------------------------------------------- direction
def test_group_report_refuses_distances_unless_told_and_then_equals_the_similarity_report():
    df = pairs_table(seed=2, shift={"B": 0.5})
    dist = df.assign(score=1 - df.score)
    with pytest.raises(ValueError, match="look like distances; pass higher_is_match=False"):
        M.group_report(dist, "score", "label", "group", 0.05, n_boot=0)
    with pytest.raises(ValueError, match="higher_is_match=False: .* look like similarities; pass higher_is_match=True"):
        M.group_report(df, "score", "label", "group", 0.05, n_boot=0, higher_is_match=False)
    ref = M.group_report(df, "score", "label", "group", 0.05, n_boot=20, seed=1)
    got = M.group_report(dist, "score", "label", "group", 0.05, n_boot=20, seed=1, higher_is_match=False)
    rates = [c for c in ref.table.columns if c.startswith(("fmr", "fnmr")) and "mcse" not in c]
    pd.testing.assert_frame_equal(got.table[rates], ref.table[rates])
    np.testing.assert_allclose(got.table.threshold_group, 1 - ref.table.threshold_group, atol=1e-12)
    np.testing.assert_allclose(got.table.threshold_group_lo, 1 - ref.table.threshold_group_hi, atol=1e-12)
    assert (got.table.threshold_group_lo <= got.table.threshold_group).all()
    assert got.meta["higher_is_match"] is False and "distance" in got.meta["scores"]
    assert "higher_is_match" not in ref.meta and "scores" not in ref.meta  # old reports unchanged


def test_heldout_rates_of_distances_equal_those_of_similarities():
    df = pairs_table(seed=4, shift={"A": 0.3})
    ref = M.heldout_rates(df, "score", "label", "group", "fold", [0.1, 0.05])
    got = M.heldout_rates(df.assign(score=-df.score), "score", "label", "group", "fold", [0.1, 0.05],
                          higher_is_match=False)
    pd.testing.assert_frame_equal(got.drop(columns="threshold"), ref.drop(columns="threshold"))
    np.testing.assert_array_equal(got.threshold, -ref.threshold)
    with pytest.raises(ValueError, match="pass higher_is_match=False"):
        M.heldout_rates(df.assign(score=-df.score), "score", "label", "group", "fold", 0.1)


# --------------------------------------------------------------------------- the BFW study uses it
def test_bfw_cross_validated_rates_is_the_generic_function_on_the_bfw_schema():
    world = make_bfw_world(BFWWorldConfig(identities_per_group=6, images_per_identity=4, n_folds=3, dim=8))
    for grouping in ("query", "intra"):
        cv = study.cross_validated_rates(world, "sim_a", [0.1, 0.02], grouping, min_impostor_factor=0)
        pairs = study.select_pairs(world, grouping)
        assert list(cv.columns) == CV_COLUMNS
        for f in (0.1, 0.02):
            ref = brute_heldout(pairs.rename(columns={"sim_a": "score"})[["score", "label", "group", "fold"]]
                                .astype({"score": np.float64}), f, 0.0)
            got = cv[cv.fmr_target == f].reset_index(drop=True)
            np.testing.assert_array_equal(got.fmr.to_numpy(), ref.fmr.to_numpy())
            np.testing.assert_array_equal(got.fnmr.to_numpy(), ref.fnmr.to_numpy())
            assert got.group.tolist() == ref.group.tolist() and got.fold.tolist() == ref.fold.tolist()
