"""Benchmark: the identity bootstrap of BA-test Table 4 (``studies.batest.tpr_at_fmr``) and of
``metrics.group_report``, against weighting every pair by ``stats.bootstrap_weights`` (the
brute-force layout both used before issue 30), with identical replicates.

* Table 4: the paper's challenging subset (90 subjects x 5 images per group of the enlarged
  BA-test world, 6.48 million pairs), FMR 1e-5, 200 replicates. The peer weights every pair
  and reads the threshold off all the cumulative impostor weights; ours reads a total over
  identity pairs and the top impostors' weights only.
* group_report: the default BFW world's sim_a (5.23 million pairs), FMR 1e-2 and 1e-3,
  50 replicates; the peer gathers each replicate's per-pair weights into sorted order.

    python benchmarks/bench_bootstrap.py
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from facebias import metrics
from facebias.metrics.groups import _GroupSets
from facebias.metrics.weighted import _SortedScores
from facebias.stats import bootstrap_weights, percentile_interval
from facebias.studies import batest as study
from facebias.studies import bfw as bfw_study
from facebias.worlds.batest import BAWorldConfig, batest_pairs, make_batest_world
from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world


def tpr_peer(pairs, fmr, n_boot, seed):
    """Table 4's intervals by weighting every pair (the reference of tests/studies/batest/test_study.py)."""
    s, gen, g = pairs["score"].to_numpy(), pairs["label"].to_numpy() == 1, pairs["group"].to_numpy()
    imp_order = np.flatnonzero(~gen)[np.argsort(s[~gen], kind="stable")]
    imp = _SortedScores(s[imp_order])
    groups = sorted(set(g[gen]))
    rows = [np.flatnonzero(gen & (g == grp)) for grp in groups]
    rows = [r[np.argsort(s[r], kind="stable")] for r in rows]
    reps = []
    for w in bootstrap_weights(len(pairs), n_boot, seed, id1=pairs["id1"].to_numpy(), id2=pairs["id2"].to_numpy()):
        t = imp.threshold(np.array([fmr]), imp.weigh(w[imp_order]))
        reps.append([_SortedScores(s[r]).fraction_above(t, np.cumsum(w[r]))[0] for r in rows])
    return percentile_interval(np.array(reps), 0.95)


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def main() -> None:
    cfg = study.BATestConfig()
    wcfg = dataclasses.replace(BAWorldConfig(), identities_per_group=200, images_per_identity=25)
    kept, _ = study.apply_filters(make_batest_world(wcfg), cfg.filters)
    ch = study.challenging_subset(kept, n_subjects=90, n_images=5, seed=cfg.seed, allow_fewer=True)
    pairs = batest_pairs(ch, wcfg, impostors="all", cross_group=True, factors=False)
    ours, t_ours = timed(study.tpr_at_fmr, pairs, 1e-5, n_boot=200, seed=cfg.seed)
    (lo, hi), t_peer = timed(tpr_peer, pairs, 1e-5, 200, cfg.seed)
    same = np.array_equal(ours["tpr_lo"].to_numpy(), lo) and np.array_equal(ours["tpr_hi"].to_numpy(), hi)
    print(f"Table 4 identity bootstrap, {len(pairs):,} pairs x 200 replicates: tpr_at_fmr {t_ours:.1f} s, "
          f"per-pair weights {t_peer:.1f} s, ratio {t_ours / t_peer:.2f}; identical intervals: {same}")

    df = make_bfw_world(BFWWorldConfig())
    bpairs = bfw_study.select_pairs(df, "intra")
    rates = np.array([0.01, 0.001])
    rep, t_ours = timed(metrics.group_report, bpairs, "sim_a", "label", "group", rates.tolist(),
                        ids=("id1", "id2"), n_boot=50, seed=3)
    sets = _GroupSets.of(bpairs["sim_a"].to_numpy(), bpairs["label"].to_numpy() == 1, bpairs["group"],
                         "label", "group")

    def peer():
        for w in bootstrap_weights(len(bpairs), 50, 3, id1=bpairs["id1"].to_numpy(), id2=bpairs["id2"].to_numpy()):
            sets.evaluate(w[sets.order], rates)

    _, t_peer = timed(peer)
    print(f"group_report identity bootstrap, {len(bpairs):,} pairs x 50 replicates: group_report {t_ours:.1f} s "
          f"(point estimate and tables included), the replicates alone with per-pair weights {t_peer:.1f} s, "
          f"ratio {t_ours / t_peer:.2f} (identical tables: tests/test_metrics.py)")


if __name__ == "__main__":
    main()
