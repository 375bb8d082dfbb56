"""Paper 001, the study's summary: what ``reports/metrics/rapid.json`` holds
(:func:`summarise`, schema ``SCHEMAS["rapid"]`` of :mod:`facebias.schema`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from facebias.studies.rapid.estimation import RapidEstimate


def _per_fmr(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    return {f"{f:g}": {s: float(v) for s, v in table[f].items()} for f in table.columns}


def summarise(*, provenance: str, world_config: Any, world: Any, estimate: RapidEstimate,
              agreement: Mapping[str, float], deltas: Mapping[str, pd.DataFrame], kendall_tau: float,
              eer: pd.DataFrame, voting: pd.DataFrame, semi: pd.DataFrame, semi_p: float,
              fmr: Sequence[float], by_p: pd.DataFrame, breakdown: float | None,
              bias: Mapping[str, Any], subsets: pd.DataFrame, model_change: pd.DataFrame,
              model_change_system: Any) -> dict[str, Any]:
    """What ``reports/metrics/rapid.json`` holds (no run times: same params, same bytes).

    ``deltas``: ``method``, ``naive``, ``type_a``, ``type_b`` -> :func:`delta_fnmr_by_system`
    tables (|ΔFNMR| per system x FMR); ``eer``: :func:`eer_comparison`; ``voting``:
    :func:`voting_ablation`; ``semi``: :func:`semi_supervised_curve`'s table (fraction x
    system); ``by_p``: :func:`sweep_by_p`; ``breakdown``: :func:`breakdown_p` at ``fmr[0]``.

    Parameters
    ----------
    provenance : str
        Provenance line.
    world_config : Any
        The world's :class:`facebias.worlds.rapid.RapidWorldConfig`.
    world : Any
        The world (``faces``, ``scores``, ``cross_scores``).
    estimate : RapidEstimate
        The method's output on the world.
    agreement : mapping
        :func:`label_agreement` of the estimated labels.
    deltas, eer, voting, semi, by_p, breakdown
        As above.
    kendall_tau : float
        :func:`ranking_agreement`.
    semi_p : float
        p of the partial-annotation world.
    fmr : sequence of float
        Target FMRs; the first is the headline.
    bias : mapping
        :func:`bias_summary` (per-group bias detection, Fig. 5).
    subsets : pandas.DataFrame
        :func:`system_subsets` (Fig. S.13); stored as the mean |ΔFNMR| at ``fmr[0]`` per
        subset size, and the largest of any member.
    model_change : pandas.DataFrame
        :func:`model_change` (Fig. S.14), of ``model_change_system``.
    model_change_system : Any
        The system whose model was changed.

    Returns
    -------
    dict
        The ``rapid`` metrics (schema ``SCHEMAS["rapid"]`` of :mod:`facebias.schema`);
        rates and shares are fractions.
    """
    f0 = fmr[0]
    return {
        "paper": "001",
        "provenance": provenance,
        "world": {"seed": world_config.seed, "p": world_config.p, "groups": list(world_config.groups),
                  "queries_per_group": world_config.queries_per_group, "systems": list(world_config.systems),
                  "bias": {str(s): {str(g): float(f) for g, f in per.items()}
                           for s, per in world_config.bias.items()}},
        "n_faces": int(len(world.faces)),
        "queries_included": float(estimate.queries["included"].mean()),
        "label_agreement": agreement["agreement"],
        "coverage": agreement["coverage"],
        "type_a": agreement["type_a"],
        "type_b": agreement["type_b"],
        "kendall_tau_fnmr": float(kendall_tau),
        "delta_fnmr": _per_fmr(deltas["method"]),
        "delta_fnmr_naive": _per_fmr(deltas["naive"]),
        "delta_fnmr_type_a": _per_fmr(deltas["type_a"]),
        "delta_fnmr_type_b": _per_fmr(deltas["type_b"]),
        "eer_abs_error_max": float(eer["delta"].max()),
        "voting": {c: {s: float(v) for s, v in voting[c].items()} for c in voting.columns},
        "semi_supervised": {"p": semi_p, "fmr": f0,
                            "delta_mean": {f"{f:g}": float(semi.loc[f].mean()) for f in semi.index}},
        "p_sweep": by_p.reset_index().to_dict(orient="records"),
        # the largest swept p where the method's worst |ΔFNMR| >= the naive best
        "breakdown": {"p": breakdown, "fmr": f0,
                      "agreement": None if breakdown is None else float(by_p.loc[breakdown, "agreement"])},
        "bias": dict(bias),
        "subsets": {"fmr": f0, "mean_delta_by_size": {str(k): float(v) for k, v in
                                                      subsets.groupby("size")[f0].mean().items()},
                    "max_delta_by_size": {str(k): float(v) for k, v in subsets.groupby("size")[f0].max().items()}},
        "model_change": {"system": str(model_change_system),
                         **{f"{r['fmr']:g}": {c: float(r[c]) for c in ("est_before", "est_after", "true_before",
                                                                       "true_after", "est_change", "true_change")}
                            for _, r in model_change.iterrows()}},
    }
