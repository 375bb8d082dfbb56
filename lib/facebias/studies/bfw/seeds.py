"""Paper 002 (BFW) over world seeds: the held-out FPR deviations of Fig. 6 on the synthetic BFW
world rebuilt under each seed (:func:`facebias.studies.seeds.over_seeds`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd

from facebias.studies.seeds import over_seeds

__all__ = ["bfw_seed_table"]


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
        The ``bfw_world`` section of ``params.yaml`` (its ``seed`` is replaced by each seed).
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


