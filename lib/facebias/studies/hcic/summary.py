"""The study's metrics (``notebooks/hcic.py``; ``docs/specs/hcic.md`` B2, B5).

What ``reports/metrics/<name>.json`` holds (schema ``SCHEMAS["hcic"]`` of
:mod:`facebias.schema`), who cast the votes and what the groups are, in words, and how the
simulations (the own-group checks' panels) are labelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from facebias.studies.hcic.config import HCICConfig
from facebias.studies.hcic.fnmr import fixed_threshold_points
from facebias.studies.hcic.ground_truth import PairLabels
from facebias.studies.hcic.group_tests import GroupTests
from facebias.studies.hcic.pairs import ATTRIBUTES
from facebias.validate import require_columns

__all__ = [
    "SIMULATION_LABEL",
    "GROUP_DESCRIPTIONS",
    "annotator_description",
    "summarise",
]


#: How the own-group checks (:func:`own_group_check`, :func:`own_group_image_check`) are
#: labelled in the metrics: their votes come from simulated panels with a planted effect,
#: never from people, on any backend (on the DCGAN, a truth computed from its latents).
SIMULATION_LABEL = {"simulated": True,
                    "evidence": "SIMULATION: simulated panels with a planted own-group effect (a check of the "
                                "test's power and calibration, not a finding about annotators or faces)"}


#: What the groups are, by the ``groups`` entry of the synth summary (``group_kind``).
GROUP_DESCRIPTIONS = {
    "race_gender": "race x gender (000's six groups)",
    "tone_gender": ("lighter / darker side of the synth stage's tone axis (a hyperplane fitted to a machine "
                    "labeller; summary.json config tone_axis; on the DCGAN face darkness, -ITA, which fails the "
                    "skin gate: not skin tone) x gender (p_male): not race, no race labeller ships offline"),
}


def annotator_description(votes: pd.DataFrame | None) -> str:
    """Who cast a votes table (store schema), from its ``source`` and ``annotator`` columns.

    Parameters
    ----------
    votes : pandas.DataFrame or None
        Votes with ``source`` and ``annotator`` columns.

    Returns
    -------
    str
        E.g. ``"simulated panel N=9"`` (N = distinct annotators); ``"none"`` for no table.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> annotator_description(pd.DataFrame({"source": "simulated",
    ...                                     "annotator": ["sim001", "sim002", "sim001"]}))
    'simulated panel N=2'
    """
    if votes is None:
        return "none"
    require_columns(votes, ["source", "annotator"], "votes")
    kinds = {"simulated": "simulated panel", "human": "human annotators", "imported": "imported votes"}
    src = ", ".join(kinds.get(s, s) for s in sorted(votes["source"].astype(str).unique()))
    return f"{src} N={votes['annotator'].nunique()}"


def _fnmr_json(tab: pd.DataFrame) -> dict[str, Any]:
    return {r["group"]: {"fnmr": r["fnmr_group"], "lo": r.get("fnmr_group_lo"), "hi": r.get("fnmr_group_hi"),
                         "threshold": r["threshold_group"], "n_genuine": int(r["n_genuine"]),
                         "n_impostor": int(r["n_impostor"]), "resolved": bool(r.get("resolved", True))}
            for _, r in tab.iterrows()}


def _fte_json(table: pd.DataFrame) -> dict[str, Any]:
    return {str(g): {"n": int(r["n"]), "n_fte": int(r["n_fte"]), "rate": float(r["fte_rate"])}
            for g, r in table.iterrows()}


def summarise(*, backend: str, provenance: str, config: HCICConfig, labels: PairLabels, pair_annotators: str,
              label_description: str, groups: Sequence[str], group_kind: str, group_description: str,
              n_images: int, n_cross: int, fixed: Mapping[str, float], upscale_description: str,
              fte: Mapping[str, pd.DataFrame], ordering: Mapping[str, Any],
              fnmr_tables: Mapping[tuple[str, str], pd.DataFrame], intended_tables: Mapping[str, pd.DataFrame],
              cell_tables: Mapping[str, pd.DataFrame], kept: pd.DataFrame, delta: Mapping[str, pd.DataFrame],
              consistency: tuple[pd.Series, pd.DataFrame] | None = None,
              independence: pd.DataFrame | None = None,
              self_pairs: Mapping[str, Any] | None = None,
              own_group: Mapping[str, Any] | None = None,
              seed_filter: Mapping[str, Any] | None = None,
              own_group_image: Mapping[str, Any] | None = None,
              group_tests: Mapping[str, GroupTests] | None = None) -> dict[str, Any]:
    """What ``reports/metrics/<name>.json`` holds (schema ``SCHEMAS["hcic"]`` of
    :mod:`facebias.schema`).

    Parameters
    ----------
    backend : str
        The generator backend.
    provenance : str
        Provenance line.
    config : HCICConfig
        The study's parameters.
    labels : PairLabels
        :func:`pair_labels` output.
    pair_annotators : str
        :func:`annotator_description` of the pair votes.
    label_description : str
        What the labels are.
    groups : sequence of str
        The groups, in figure order.
    group_kind, group_description : str
        What the groups are (:data:`GROUP_DESCRIPTIONS`).
    n_images, n_cross : int
        Numbers of images and cross-group pairs.
    fixed : mapping of str to float
        System -> fixed similarity threshold.
    upscale_description : str
        How small faces were enlarged.
    fte : mapping
        Model -> failure-to-enrol table by group (row ``all`` included).
    ordering : mapping
        System -> :func:`relation_medians`.
    fnmr_tables : mapping
        (system, label set) -> :func:`fnmr_at_fmr_by_group`.
    intended_tables : mapping
        System -> the same on the intended labels.
    cell_tables : mapping
        System -> :func:`fnmr_at_fmr_by_cell`.
    kept : pandas.DataFrame
        :func:`kept_pair_scores` (``score_<system>`` columns).
    delta : mapping
        System -> :func:`delta_attr`.
    consistency : tuple, optional
        :func:`annotator_consistency` (with pair votes).
    independence : pandas.DataFrame, optional
        :func:`group_independence_test` (with pair votes).
    self_pairs : mapping, optional
        :func:`self_pair_summary` (the self pairs, left out of every error rate).
    own_group : mapping, optional
        Summary of :func:`own_group_check` (cells rejected per planted effect).
    seed_filter : mapping, optional
        :func:`seed_filter_funnel` (the generate stage's seed filter before max-min).
    own_group_image : mapping, optional
        Summary of :func:`own_group_image_check` (Fig. 3 c with a planted own-group effect).
    group_tests : mapping, optional
        System -> :func:`group_rate_tests` on the main labels: written as
        ``group_differences`` (per group rates with counts and ``resolved`` flags, every
        pair of groups tested).

    Returns
    -------
    dict
        The metrics; rates are fractions.
    """
    systems = list(ordering)
    main_col = labels.label_sets[labels.main]
    delta_ext = {s: d[d["level"].isin([0, 4])].set_index(["attribute", "level"])["delta"].to_dict()
                 for s, d in delta.items()}
    head: dict[str, Any] = {
        "backend": backend,
        "source": (f"synthetic ({backend} generator, "
                   f"{'annotators: ' + pair_annotators if labels.kind == 'hcic' else 'no annotators'})"),
        "provenance": provenance,
        "labels": labels.kind,  # intended | hcic: the ground truth of every error rate below
        "label_description": label_description,
        "groups": list(groups), "group_kind": group_kind, "group_description": group_description,
        "n_images": int(n_images), "n_pairs": len(labels.pairs), "n_cross_group_pairs": int(n_cross),
        "fmr_target": config.fmr, "n_boot": config.n_boot, "bootstrap_unit": "prototype (anchor) clusters",
        "fixed_thresholds": dict(fixed),
        "upscale": {"min_size": config.min_size, "interpolation": "bicubic (cv2.INTER_CUBIC)",
                    "description": upscale_description},
        "failure_to_enrol": {m: int(f.loc["all", "n_fte"]) for m, f in fte.items()},
        "failure_to_enrol_by_group": {m: _fte_json(f) for m, f in fte.items()},
        "similarity_by_relation": dict(ordering),
        "fnmr_at_fmr": {s: {key: _fnmr_json(fnmr_tables[(s, key)]) for key in labels.label_sets} for s in systems},
        "fnmr_at_fmr_intended_labels": {s: _fnmr_json(t) for s, t in intended_tables.items()},
        "fnmr_at_fmr_by_attribute": {s: {a: _fnmr_json(t[t["attribute"] == a]) for a in ATTRIBUTES}
                                     for s, t in cell_tables.items()},
        "fixed_threshold_rates": {s: fixed_threshold_points(kept, f"score_{s}", main_col, t=fixed[s],
                                                            by=("group",), missing="drop")
                                  .set_index("group")[["fmr", "fnmr"]].to_dict(orient="index") for s in systems},
        "delta_attr_extension": {s: {f"{a}_{lv}": v for (a, lv), v in d.items()} for s, d in delta_ext.items()},
        "skipped": dict(labels.skipped),
    }
    if labels.kind == "hcic":
        head["hcic_label_counts"] = labels.label_counts
    if labels.realism_filter is not None:
        head["realism_filter"] = labels.realism_filter
    if consistency is not None:
        sd, table = consistency
        head["per_pair_sd"] = {"median": float(sd.median()),
                               "by_attribute": table.set_index("attribute")["median"].to_dict()}
    if self_pairs is not None:
        head["self_pairs"] = dict(self_pairs)
    if own_group is not None:
        head["own_group_check"] = {**dict(own_group), **SIMULATION_LABEL}
    if seed_filter is not None:
        head["seed_filter"] = dict(seed_filter)
    if own_group_image is not None:
        head["own_group_image_check"] = {**dict(own_group_image), **SIMULATION_LABEL}
    if group_tests is not None:
        head["group_differences"] = {sys_: {"labels": labels.main, **t.to_dict()} for sys_, t in group_tests.items()}
    if independence is not None:
        head["group_independence"] = {"n_tests": len(independence),
                                      "n_rejected_bonferroni": int(independence["reject"].sum())
                                      if len(independence) else 0}
    return head
