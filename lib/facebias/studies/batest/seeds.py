"""Paper 003 (BA-test) over world seeds: Tables 1, 3 and 4 on the BA-test world rebuilt under
each seed, with the notebook's own calls (:func:`facebias.studies.seeds.over_seeds`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd

from facebias.studies.seeds import over_seeds

__all__ = ["BATEST_PARTS", "batest_seed_tables", "gaps_tidy", "table3_tidy", "table4_tidy"]


def table3_tidy(fmr_ref: pd.DataFrame) -> pd.DataFrame:
    """:func:`~facebias.studies.batest.fmr_at_reference_table`'s FMR table as tidy rows
    (group, set, fmr, fmr_at_ref)."""
    return (fmr_ref.rename_axis(index="group", columns=["set", "fmr"]).stack(["set", "fmr"], future_stack=True)
            .rename("fmr_at_ref").reset_index())


def gaps_tidy(gaps: pd.DataFrame) -> pd.DataFrame:
    """:func:`~facebias.studies.batest.gender_gaps`' genuine gaps as tidy rows (set, race,
    gap_genuine, planted_gap; score units, M - F)."""
    return gaps.rename_axis(index=["set", "race"]).reset_index()[["set", "race", "gap_genuine", "planted_gap"]]


def table4_tidy(tpr: pd.DataFrame) -> pd.DataFrame:
    """:func:`~facebias.studies.batest.tpr_at_fmr`'s table as tidy rows (group, tpr)."""
    return tpr.rename_axis(index="group").reset_index()[["group", "tpr"]]


def _batest_one(seed: int, world: Mapping[str, Any], config: Any, parts: Sequence[str]) -> dict[str, pd.DataFrame]:
    from facebias.studies import batest as study
    from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world

    wcfg = BAWorldConfig.from_params({**world, "seed": seed})
    images = make_batest_world(wcfg)
    kept, _ = study.apply_filters(images, config.filters)
    out: dict[str, pd.DataFrame] = {}
    if "table1" in parts:
        pairs = batest_pairs(kept, wcfg, config.impostors_per_genuine, seed=config.seed)
        sets = study.table1_pair_sets(pairs, config.iou_threshold)
        gaps = study.gender_gaps(sets, planted=wcfg.true_gender_gap())
        t1 = study.table1_measured(gaps)
        out["table1"] = t1.reset_index()
        out["table1_pct"] = study.table1_percentages(t1)
        out["gaps"] = gaps_tidy(gaps)
    if "table3" in parts:  # every group's FMR at the reference group's threshold, all within-group impostors
        n3 = min(config.table3_identities, wcfg.identities_per_group)
        t3_images = study.identity_count_subset(images, n3, wcfg.images_per_identity, seed=config.seed)
        t3_all = batest_pairs(t3_images, wcfg, impostors="all", factors=False)
        t3_filtered = study.pairs_among(t3_all, kept)
        t3_sets = {"unfiltered": t3_all, "filtered": t3_filtered,
                   "filtered_iou": study.mask_iou_filter(t3_filtered, threshold=config.iou_threshold)}
        out["table3"] = table3_tidy(study.fmr_at_reference_table(t3_sets, config.reference_group,
                                                                 config.reference_fmr)[0])
    if "table4" in parts:  # TPR per group at one threshold over all impostors of the challenging subset
        count_cfg = dataclasses.replace(wcfg, identities_per_group=max(200, wcfg.identities_per_group),
                                        images_per_identity=max(25, wcfg.images_per_identity))
        ch_kept, _ = study.apply_filters(make_batest_world(count_cfg), config.filters)
        ch_images = study.challenging_subset(ch_kept, n_subjects=config.table4_subjects,
                                             n_images=config.table4_images, seed=config.seed, allow_fewer=True)
        ch_pairs = batest_pairs(ch_images, count_cfg, impostors="all", cross_group=True, factors=False)
        out["table4"] = table4_tidy(study.tpr_at_fmr(ch_pairs, config.tpr_fmr, n_boot=0))
    return out


BATEST_PARTS = ("table1", "table3", "table4")


def batest_seed_tables(world: Mapping[str, Any], config: Any, seeds: Sequence[int],
                       parts: Sequence[str] = BATEST_PARTS, compute: Any = None) -> dict[str, pd.DataFrame]:
    """Paper 003's Tables 1, 3 and 4 on the BA-test world under each seed, as the notebook
    computes them for the committed seed.

    Parameters
    ----------
    world : mapping
        The ``batest_world`` section (its ``seed`` replaced by each seed).
    config : facebias.studies.batest.BATestConfig
    seeds : sequence of int
    parts : sequence of str, default all of :data:`BATEST_PARTS`
        Which tables (Tables 3 and 4 build all-pairs scores: about a minute per seed).
    compute : optional
        Where to run (:func:`over_seeds`).

    Returns
    -------
    dict
        ``table1`` (:func:`~facebias.studies.batest.table1_measured`, one row per kind and
        condition), ``gaps`` (:func:`gaps_tidy`: the genuine score gap M - F per set and race,
        beside the planted one) and ``table1_pct`` (:func:`~facebias.studies.batest.table1_percentages`:
        change of Δd′ vs the original set, %); ``table3`` (:func:`table3_tidy`: each group's
        FMR at the reference group's threshold per set and FMR; NaN when too few impostors);
        ``table4`` (:func:`table4_tidy`: TPR per group at ``config.tpr_fmr`` on the
        challenging subset); each with a leading ``seed`` column.
    """
    unknown = set(parts) - set(BATEST_PARTS)
    if unknown or not parts:
        raise ValueError(f"parts: choose from {BATEST_PARTS}, got {list(parts)}")
    fn = partial(_batest_one, world=dict(world), config=config, parts=tuple(parts))
    return over_seeds(fn, seeds, compute, desc="BA-test world seeds")


