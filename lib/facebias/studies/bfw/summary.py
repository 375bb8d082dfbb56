"""Paper 002 results as stored: ``reports/metrics/bfw.json`` (the headline) and
``bfw_details.json`` (per-subgroup EER, d', Fig. 6 deviations, Table 3 TAR@FAR and legacy
values, Fig. 5 diagonal), from the other modules' tables (:func:`summarise`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from facebias import metrics
from facebias.studies.bfw.config import BFWConfig
from facebias.studies.bfw.verification import SubgroupCurves, fpr_deviation_table, tar_at_far_table

__all__ = ["summarise"]


def _by_far(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    return {f"{c:g}": {g: float(v) for g, v in table[c].items()} for c in table.columns}


def summarise(*, source: str, provenance: str, datatable: str, config: BFWConfig, systems: Sequence[str],
              fold_averages: Mapping[str, pd.DataFrame], curves: SubgroupCurves,
              legacy: Mapping[str, pd.DataFrame], reports: Mapping[str, Any],
              rank1: Mapping[str, pd.DataFrame] | None = None) -> tuple[dict, dict]:
    """What ``reports/metrics/<name>.json`` and ``<name>_details.json`` hold.

    Deviation and TAR tables are derived here (:func:`fpr_deviation_table`,
    :func:`tar_at_far_table`).

    Parameters
    ----------
    source : str
        ``"synthetic"`` or ``"real"``.
    provenance : str
        :func:`load_pair_table`'s provenance line.
    datatable : str
        The pair table's path.
    config : BFWConfig
        The study's parameters.
    systems : sequence of str
        Score columns evaluated.
    fold_averages : mapping
        System -> :func:`fold_average` of :func:`cross_validated_rates`.
    curves : SubgroupCurves
        :func:`subgroup_curves` output.
    legacy : mapping
        System -> :func:`legacy_tar_table`.
    reports : mapping
        System -> :func:`facebias.metrics.group_report`.
    rank1 : mapping, optional
        System -> :func:`rank1_confusion` (the world's embeddings; absent on a real
        datatable, which has no features). Its diagonal becomes ``rank1_diagonal``.

    Returns
    -------
    headline : dict
        The ``bfw`` metrics (schema :data:`facebias.schema.SCHEMAS` ``["bfw"]``): per
        system the max |FMR deviation| (percent), the global-threshold FMR max/min
        ratio, the average TAR per policy and the EER range; NaN (null) where a subgroup is
        unresolved (too few impostors for the FAR, :func:`cross_validated_rates`).
    details : dict
        The ``bfw_details`` metrics: per-subgroup EER, d', deviations, TAR@FAR, legacy
        Table 3 values, ``resolved`` (policy -> FAR -> subgroup -> bool: whether the
        deviation and TAR are resolved, :func:`cross_validated_rates`; unresolved values are
        null) and the group report; with ``rank1``, ``rank1_diagonal``: system ->
        subgroup -> share of its probes whose nearest other identity is in the same
        subgroup (fraction).
    """
    head: dict[str, Any] = {"source": source, "systems": {}}
    details: dict[str, Any] = {"paper": "002", "source": source, "provenance": provenance, "datatable": str(datatable),
                               "grouping": config.grouping, "fmr": list(config.fmr), "systems": {}}
    for s in systems:
        avg = fold_averages[s]
        d_glob, d_grp = fpr_deviation_table(avg, "global"), fpr_deviation_table(avg, "group")
        tar = tar_at_far_table(avg)

        def fmr_ratio_global(f: float, avg: pd.DataFrame = avg) -> float:
            sub = avg[(avg["policy"] == "global") & (avg["fmr_target"] == f)]
            return float(metrics.max_min_ratio(sub["fmr"]))

        head["systems"][s] = {  # NaN (null) where a subgroup is unresolved, never a max of the others
            "max_abs_fmr_dev_pct": {"global": {f"{c:g}": float(d_glob[c].abs().max(skipna=False)) for c in d_glob},
                                    "group": {f"{c:g}": float(d_grp[c].abs().max(skipna=False)) for c in d_grp}},
            "fmr_ratio_global": {f"{f:g}": fmr_ratio_global(f) for f in config.fmr},
            "tar_avg": {p: {f"{c:g}": float(v) for c, v in tar.loc["Avg", p].items()} for p in ("global", "group")},
            "eer_max": max(curves.eer[s].values()),
            "eer_min": min(curves.eer[s].values()),
        }
        details["systems"][s] = {
            "eer": curves.eer[s],
            "d_prime": curves.d_prime[s],
            "fmr_dev_pct": {"global": _by_far(d_glob), "group": _by_far(d_grp)},
            "tar_at_far": {p: _by_far(tar[p]) for p in ("global", "group")},
            "legacy_tar": {p: _by_far(legacy[s].loc[p]) for p in ("global", "group")},
            "resolved": {p: {f"{c:g}": {g: bool(v) for g, v in col.items()} for c, col in
                             avg[avg["policy"] == p].pivot(index="group", columns="fmr_target",
                                                           values="resolved").items()}
                         for p in ("global", "group")},
            "group_report": reports[s].to_dict(),
        }
    if rank1:
        details["rank1_diagonal"] = {s: {str(g): float(t.loc[g, g]) for g in t.index} for s, t in rank1.items()}
    return head, details
