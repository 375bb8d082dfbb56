"""World-based headlines over independent world seeds.

One seed of a known-truth world is an anecdote: these functions rebuild a study's world
under K seeds and recompute the statistics its claims read (:mod:`facebias.claims`), as tidy
tables with a ``seed`` column. The notebooks store them in ``<study>_details.json`` under
``seeds``; the headline is the mean over seeds and the page shows mean and range.

:func:`over_seeds` is the one driver: it maps a per-seed function over the seeds through
:func:`facebias.compute.map_items` (serially or on the ``compute`` section's Dask workers,
one seed per task; each seed's work is deterministic and independent, so the scheduler does
not change the results), with a progress bar.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from facebias.compute import map_items

__all__ = ["world_seeds", "over_seeds", "bfw_seed_table", "batest_seed_tables", "table3_tidy", "table4_tidy",
           "BATEST_PARTS", "rapid_seed_table", "RAPID_TABLES"]


def world_seeds(first: int, n: int) -> list[int]:
    """``n`` consecutive world seeds from ``first`` (the study's own seed comes first, so the
    figures are of seed 0 of the sweep).

    Examples
    --------
    >>> world_seeds(2026, 3)
    [2026, 2027, 2028]
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"seeds: n must be an integer >= 1, got {n!r}")
    return [int(first) + i for i in range(int(n))]


def over_seeds(fn: Callable[[int], Mapping[str, pd.DataFrame]], seeds: Sequence[int], compute: Any = None,
               desc: str = "seeds") -> dict[str, pd.DataFrame]:
    """``fn(seed)`` for every seed, its tables concatenated with a leading ``seed`` column.

    Parameters
    ----------
    fn : callable
        Seed -> {table name: DataFrame}; picklable (a module-level function or a
        ``functools.partial`` of one) when run on Dask.
    seeds : sequence of int
    compute : ComputeConfig, mapping, str, distributed.Client or None
        Where to run (:func:`facebias.compute.map_items`; None = serially here). The results
        do not depend on it.
    desc : str
        Progress-bar label.

    Returns
    -------
    dict
        Table name -> the per-seed tables stacked, ``seed`` first, in seed order.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds: empty")
    results = map_items(fn, seeds, compute, chunk_size=1, desc=desc)
    names = list(results[0])
    return {name: pd.concat([r[name].assign(seed=s) for s, r in zip(seeds, results, strict=True)],
                            ignore_index=True).pipe(lambda d: d[["seed", *[c for c in d.columns if c != "seed"]]])
            for name in names}


# --------------------------------------------------------------------------- paper 002 (BFW)
def _bfw_one(seed: int, world: Mapping[str, Any], systems: Sequence[str], fmr: Sequence[float],
             grouping: str) -> dict[str, pd.DataFrame]:
    from facebias.studies import bfw as study
    from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world

    cfg = BFWWorldConfig.from_params({**world, "seed": seed})
    df = make_bfw_world(cfg)
    rows = []
    for s in systems:
        avg = study.fold_average(study.cross_validated_rates(df, s, fmr, grouping))
        for policy in ("global", "group"):
            dev = study.fpr_deviation_table(avg, policy)
            for f in dev.columns:
                for g, v in dev[f].items():
                    rows.append((s, policy, f"{f:g}", g, float(v)))
    return {"fmr_dev_pct": pd.DataFrame(rows, columns=["system", "policy", "fmr", "group", "dev_pct"])}


def bfw_seed_table(world: Mapping[str, Any], seeds: Sequence[int], systems: Sequence[str],
                   fmr: Sequence[float], grouping: str = "query", compute: Any = None) -> dict[str, pd.DataFrame]:
    """Paper 002's held-out FPR deviation (Fig. 6) on the BFW world under each seed.

    Parameters
    ----------
    world : mapping
        The ``world`` section of ``params.yaml`` (its ``seed`` is replaced by each seed).
    seeds : sequence of int
    systems : sequence of str
        Score columns.
    fmr : sequence of float
        Target FMRs (fractions).
    grouping : str
        :func:`facebias.studies.bfw.select_pairs`.
    compute : optional
        Where to run (:func:`over_seeds`).

    Returns
    -------
    dict
        ``{"fmr_dev_pct": DataFrame}``: seed, system, policy (global / group), fmr (text key),
        group, dev_pct (held-out FPR minus target, in % of the target, 5-fold mean; NaN when
        unresolved).
    """
    fn = partial(_bfw_one, world=dict(world), systems=list(systems), fmr=list(fmr), grouping=grouping)
    return over_seeds(fn, seeds, compute, desc="BFW world seeds")


# --------------------------------------------------------------------------- paper 003 (BA-test)
def table3_tidy(fmr_ref: pd.DataFrame) -> pd.DataFrame:
    """:func:`~facebias.studies.batest.fmr_at_reference_table`'s FMR table as tidy rows
    (group, set, fmr, fmr_at_ref)."""
    return (fmr_ref.rename_axis(index="group", columns=["set", "fmr"]).stack(["set", "fmr"], future_stack=True)
            .rename("fmr_at_ref").reset_index())


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
        t1 = study.table1_measured(study.gender_gaps(sets, planted=wcfg.true_gender_gap()))
        out["table1"] = t1.reset_index()
        out["table1_pct"] = study.table1_percentages(t1)
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
        ch_images = study.challenging_subset(ch_kept, n_subjects=90, n_images=5, seed=config.seed,
                                             allow_fewer=True)
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
        condition) and ``table1_pct`` (:func:`~facebias.studies.batest.table1_percentages`:
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


# --------------------------------------------------------------------------- paper 001 (rapid test)
#: The tables of :func:`rapid_seed_table`.
RAPID_TABLES = ("labels", "fnmr", "ranking", "eer", "bias", "bias_recovery", "voting")


def _rapid_bias_rows(world_cfg: Any, est_pairs: pd.DataFrame, true_pairs: pd.DataFrame, fmr: float,
                     experiment: Any, which: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    from facebias.studies import rapid as R

    b_est = R.group_bias(est_pairs, fmr, n_boot=experiment.bias_boot, seed=experiment.bias_seed)
    b_true = R.group_bias(true_pairs, fmr, n_boot=experiment.bias_boot, seed=experiment.bias_seed)
    cols = ["system", "group", "metric"]
    m = b_est[[*cols, "value", "flagged"]].merge(b_true[[*cols, "value", "flagged"]], on=cols,
                                                suffixes=("_est", "_true"))
    planted = {(str(s), str(g)) for s, per in world_cfg.bias.items() for g, f in per.items() if float(f) != 1.0}
    m.insert(0, "world", which)
    m["planted"] = [(str(s), str(g)) in planted for s, g in zip(m["system"], m["group"], strict=True)]
    m["flagged_est"] = m["flagged_est"].astype(bool)
    m["flagged_true"] = m["flagged_true"].astype(bool)
    rec = R.bias_recovery(b_est, b_true)[["system", "metric", "worst_est", "worst_true", "order_agree",
                                          "flags_agree"]]
    rec.insert(0, "world", which)
    return m, rec


def _rapid_one(seed: int, world: Mapping[str, Any], method: Any, experiment: Any, null_world: bool,
               voting: bool) -> dict[str, pd.DataFrame]:
    """Paper 001's statistics on the rapid world under ``seed``: the calls of
    ``notebooks/rapid_test.py`` for its committed world."""
    from facebias.studies import rapid as R
    from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world

    fmrs = list(experiment.fmr)
    cfg = RapidWorldConfig.from_params({**world, "seed": seed})
    w = make_rapid_world(cfg)
    est = R.estimate(w.scores, method, fit_scores=w.cross_scores)
    truth = R.true_pairs(w.faces, w.scores, w.cross_scores)
    est_pairs = R.world_pairs(w, est.labels)
    naive_pairs = R.world_pairs(w, R.naive_labels(w.scores))
    oracle_pairs = R.world_pairs(w, R.oracle_labels(est.labels, w.faces))
    agree = R.label_agreement(est.labels, w.faces)
    labels = pd.DataFrame([{"queries_included": float(est.queries["included"].mean()), **agree}])

    keys = ["system", "group", "fmr"]
    d_est = R.delta_fnmr(est_pairs, truth, fmrs)  # = delta_fnmr_by_system's numbers, with both FNMRs
    fnmr = d_est[keys + ["fnmr_true", "fnmr_est"]].assign(est_minus_true=d_est["fnmr_est"] - d_est["fnmr_true"],
                                                           delta=d_est["delta"])
    for name, a, b in (("naive", naive_pairs, truth), ("type_a", oracle_pairs, truth),
                       ("type_b", est_pairs, oracle_pairs)):
        d = R.delta_fnmr(a, b, fmrs)[keys + ["fnmr_est", "delta"]]
        d = d.rename(columns={"delta": f"delta_{name}", "fnmr_est": f"fnmr_{name}"})
        if name == "type_b":
            d = d.drop(columns="fnmr_type_b")
        fnmr = fnmr.merge(d, on=keys, how="outer")
    fnmr = (fnmr.rename(columns={"fnmr_type_a": "fnmr_oracle"}).drop(columns="group")
            .assign(fmr=lambda t: [f"{f:g}" for f in t["fmr"]]).sort_values(["system", "fmr"], ignore_index=True))

    ranking = pd.DataFrame([{"fmr": f"{fmrs[0]:g}", "kendall_tau": R.ranking_agreement(est_pairs, truth, fmrs[0])}])
    eer = R.eer_comparison(est_pairs, truth)[["system", "group", "eer_est", "eer_true", "delta"]]

    bias, rec = _rapid_bias_rows(cfg, est_pairs, truth, fmrs[0], experiment, "planted")
    if null_world:
        ncfg = dataclasses.replace(cfg, bias={})
        nw = make_rapid_world(ncfg)
        nest = R.estimate(nw.scores, method, fit_scores=nw.cross_scores)
        nb, nrec = _rapid_bias_rows(ncfg, R.world_pairs(nw, nest.labels),
                                    R.true_pairs(nw.faces, nw.scores, nw.cross_scores), fmrs[0], experiment, "null")
        bias, rec = pd.concat([bias, nb], ignore_index=True), pd.concat([rec, nrec], ignore_index=True)
    out = {"labels": labels, "fnmr": fnmr, "ranking": ranking, "eer": eer, "bias": bias, "bias_recovery": rec}
    if voting:
        ab = R.voting_ablation(w, est, method, fmrs[0], true=truth)
        ab.columns = ["single system" if str(c).startswith("single system") else str(c) for c in ab.columns]
        out["voting"] = (ab.rename_axis(index="system").reset_index()
                         .melt(id_vars="system", var_name="source", value_name="delta")
                         .assign(fmr=f"{fmrs[0]:g}")[["system", "source", "fmr", "delta"]])
    return out


def rapid_seed_table(world_params: Mapping[str, Any], method: Any, experiment: Any, seeds: Sequence[int],
                     compute: Any = None, null_world: bool = True, voting: bool = True) -> dict[str, pd.DataFrame]:
    """Paper 001's statistics on the rapid known-truth world under each seed, with the calls
    ``notebooks/rapid_test.py`` makes for its committed world (so the sweep's row of that
    seed holds the notebook's numbers).

    Parameters
    ----------
    world_params : mapping
        The ``rapid_world`` section (:class:`facebias.worlds.rapid.RapidWorldConfig`
        fields; its ``seed`` is replaced by each seed).
    method : facebias.studies.rapid.RapidConfig
        The method.
    experiment : facebias.studies.rapid.RapidExperimentConfig
        Its ``fmr`` grid (the first is the headline: ranking, bias test and voting read
        it), ``bias_boot`` and ``bias_seed``.
    seeds : sequence of int
    compute : optional
        Where to run (:func:`over_seeds`).
    null_world : bool, default True
        Also run the bias test on the same world without its planted bias (``bias: {}``,
        same seed): it should flag nothing.
    voting : bool, default True
        Also the voting ablation (Fig. S.7, :func:`~facebias.studies.rapid.voting_ablation`).

    Returns
    -------
    dict
        Each with a leading ``seed`` column (rates and shares are fractions, NaN where
        undefined):

        - ``labels``: ``queries_included`` and the
          :func:`~facebias.studies.rapid.label_agreement` keys (``agreement`` is on the
          included faces);
        - ``fnmr``: per system and FMR (text key, ``f"{fmr:g}"``; pooled groups):
          ``fnmr_true`` (true labels, all queries), ``fnmr_est``, ``est_minus_true``,
          ``delta`` (= ``|fnmr_est - fnmr_true|``, the notebook's ``d_method``),
          ``fnmr_naive``, ``delta_naive``, ``fnmr_oracle`` (true labels on the included
          faces), ``delta_type_a`` (oracle vs true) and ``delta_type_b`` (estimate vs oracle);
        - ``ranking``: ``fmr``, ``kendall_tau`` (:func:`~facebias.studies.rapid.ranking_agreement`);
        - ``eer``: per system and group (and ``"all"``): ``eer_est``, ``eer_true``, ``delta``
          (:func:`~facebias.studies.rapid.eer_comparison`);
        - ``bias``: per world (``planted``, and ``null`` with ``null_world``), system, group
          and metric (``eer``; ``fnmr`` at the first FMR): ``value_est``, ``value_true``,
          ``flagged_est``, ``flagged_true`` (:func:`~facebias.studies.rapid.group_bias`'s
          system-specific test) and ``planted`` (the world plants a bias in that cell);
        - ``bias_recovery``: per world, system and metric,
          :func:`~facebias.studies.rapid.bias_recovery`'s ``worst_est, worst_true,
          order_agree, flags_agree``;
        - ``voting`` (with ``voting``): per system and label source (``majority vote``,
          ``own labels (no MV)``, ``single system``, ``connected components``, ``naive``):
          ``fmr``, ``delta`` = |ΔFNMR| at the first FMR.

    Examples
    --------
    >>> from facebias.studies.rapid import RapidConfig, RapidExperimentConfig
    >>> small = {"queries_per_group": 4, "faces_min": 10, "faces_max": 14, "bias": {"sys_a": {"AF": 2.0}}}
    >>> t = rapid_seed_table(small, RapidConfig(), RapidExperimentConfig(bias_boot=2), [1, 2], "serial",
    ...                      null_world=False, voting=False)
    >>> sorted(t), t["labels"]["seed"].tolist()
    (['bias', 'bias_recovery', 'eer', 'fnmr', 'labels', 'ranking'], [1, 2])
    """
    fn = partial(_rapid_one, world=dict(world_params), method=method, experiment=experiment,
                 null_world=bool(null_world), voting=bool(voting))
    return over_seeds(fn, seeds, compute, desc="rapid world seeds")
