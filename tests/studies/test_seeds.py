"""World-seed sweeps: seed 0 equals the study's own computation, seeds differ from each other,
the scheduler does not change a byte."""

from __future__ import annotations

import pandas as pd
import pytest

from facebias.studies import batest as ba
from facebias.studies import bfw as bfw_study
from facebias.studies import seeds
from facebias.studies.batest import seeds as batest_seeds
from facebias.studies.bfw import seeds as bfw_seeds
from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world
from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world

BFW_WORLD = {"seed": 5, "identities_per_group": 6, "images_per_identity": 4, "n_folds": 2, "dim": 16}
BA_WORLD = {"seed": 9, "identities_per_group": 12, "images_per_identity": 6}


def test_world_seeds_and_bad_counts():
    assert seeds.world_seeds(7, 3) == [7, 8, 9]
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="n must be an integer >= 1"):
            seeds.world_seeds(7, bad)
    with pytest.raises(ValueError, match="empty"):
        seeds.over_seeds(lambda s: {}, [])


def _square(seed: int) -> dict[str, pd.DataFrame]:
    return {"t": pd.DataFrame({"x": [seed, seed * seed]})}


def test_over_seeds_stacks_tables_with_a_leading_seed_column():
    out = seeds.over_seeds(_square, [3, 1], "serial", desc="demo")
    assert list(out["t"].columns) == ["seed", "x"]
    assert out["t"].to_dict("list") == {"seed": [3, 3, 1, 1], "x": [3, 9, 1, 1]}


def test_bfw_seed_zero_is_the_studys_own_table_and_seeds_differ():
    out = bfw_seeds.bfw_seed_table(BFW_WORLD, [5, 6], ["sim_a"], [0.1], "query")["fmr_dev_pct"]
    df = make_bfw_world(BFWWorldConfig.from_params(BFW_WORLD))
    avg = bfw_study.fold_average(bfw_study.cross_validated_rates(df, "sim_a", [0.1], "query"))
    for policy in ("global", "group"):
        direct = bfw_study.fpr_deviation_table(avg, policy)[0.1]
        mine = out[(out.seed == 5) & (out.policy == policy)].set_index("group")["dev_pct"]
        pd.testing.assert_series_equal(mine.sort_index(), direct.sort_index(), check_names=False)
    a, b = (out[(out.seed == s) & (out.policy == "global")]["dev_pct"].to_numpy() for s in (5, 6))
    assert not (a == b).all()  # another seed is another world


@pytest.mark.parametrize("parts", [("table1",), ("table3",)])
def test_batest_seed_zero_is_the_notebooks_computation(parts):
    cfg = ba.BATestConfig.from_params({"n_boot": 0, "table3_identities": 8, "reference_fmr": [0.01]})
    out = batest_seeds.batest_seed_tables(BA_WORLD, cfg, [9, 10], parts)
    wcfg = BAWorldConfig.from_params(BA_WORLD)
    images = make_batest_world(wcfg)
    kept, _ = ba.apply_filters(images, cfg.filters)
    if "table1" in parts:
        pairs = batest_pairs(kept, wcfg, cfg.impostors_per_genuine, seed=cfg.seed)
        t1 = ba.table1_measured(ba.gender_gaps(ba.table1_pair_sets(pairs, cfg.iou_threshold),
                                               planted=wcfg.true_gender_gap()))
        mine = out["table1_pct"][out["table1_pct"].seed == 9].drop(columns="seed").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, ba.table1_percentages(t1).reset_index(drop=True))
        assert set(out) == {"table1", "table1_pct", "gaps"}
    else:
        t3_images = ba.identity_count_subset(images, 8, wcfg.images_per_identity, seed=cfg.seed)
        t3_all = batest_pairs(t3_images, wcfg, impostors="all", factors=False)
        fmr_ref, _ = ba.fmr_at_reference_table({"unfiltered": t3_all}, cfg.reference_group, cfg.reference_fmr)
        mine = out["table3"][(out["table3"].seed == 9) & (out["table3"].set == "unfiltered")]
        assert mine.set_index("group")["fmr_at_ref"].to_dict() == pytest.approx(
            fmr_ref[("unfiltered", 0.01)].to_dict(), nan_ok=True)
        assert set(out) == {"table3"}


def test_batest_parts_are_checked():
    cfg = ba.BATestConfig()
    with pytest.raises(ValueError, match="parts: choose from"):
        batest_seeds.batest_seed_tables(BA_WORLD, cfg, [1], ("table2",))


def test_batest_headline_over_seeds_is_the_single_draw_headline_for_one_seed():
    """The seed-mean headline reads the same gaps as the study's own summary: with one seed it
    equals what the overview gives (race means of the gap, gap_rel_error_mean)."""
    from facebias.studies.headlines import headline

    cfg = ba.BATestConfig.from_params({"n_boot": 0})
    out = batest_seeds.batest_seed_tables(BA_WORLD, cfg, [9], ("table1",))
    wcfg = BAWorldConfig.from_params(BA_WORLD)
    kept, _ = ba.apply_filters(make_batest_world(wcfg), cfg.filters)
    gaps = ba.gender_gaps(ba.table1_pair_sets(batest_pairs(kept, wcfg, cfg.impostors_per_genuine, seed=cfg.seed),
                                              cfg.iou_threshold), planted=wcfg.true_gender_gap())
    truth = wcfg.true_gender_gap()
    seeds = {"world_seeds": [9], "gaps": out["gaps"].to_dict("records")}
    h = headline("batest", {"seeds": seeds})
    assert h["bias"] == pytest.approx(gaps.loc["original", "gap_genuine"].mean())
    assert h["bias_after"] == pytest.approx(gaps.loc["balanced_nfh", "gap_genuine"].mean())
    assert h["planted"] == pytest.approx(sum(truth.values()) / len(truth))
    assert h["truth_error"] == pytest.approx(ba.gap_rel_error_mean(gaps, truth)["balanced_nfh"])
    # two seeds: the mean of the two single-seed headlines
    two = batest_seeds.batest_seed_tables(BA_WORLD, cfg, [9, 10], ("table1",))
    h2 = headline("batest", {"seeds": {"world_seeds": [9, 10], "gaps": two["gaps"].to_dict("records")}})
    h10 = headline("batest", {"seeds": {"world_seeds": [10], "gaps": two["gaps"][two["gaps"].seed == 10]
                                        .to_dict("records")}})
    assert h2["bias"] == pytest.approx((h["bias"] + h10["bias"]) / 2)
