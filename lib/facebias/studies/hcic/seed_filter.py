"""Seed filter (Sec. 3.1, Supp. Alg. 1; ``docs/specs/hcic.md`` B1.2).

The paper's human filter of the candidate seeds (1,000 -> 300, for realism and for agreement
with the intended groups) before max-min selection (300 -> 100). The generation stage runs it
(:mod:`facebias.annotate.seed_filter`, re-exported here); :func:`seed_filter_funnel` reads
back what the generate stage ran and sets its funnel beside the paper's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from facebias.annotate.seed_filter import (  # 000's seed filter, run by the generation stage; re-exported
    FACE_SCORE_THRESHOLD,
    SEED_FILTER_SCALES,
    face_confidence,
    human_seed_filter,
    intended_group_agreement,
    measured_seed_filter,
    seed_filter_rule,
)

__all__ = [
    "SEED_FILTER_SCALES",
    "intended_group_agreement",
    "human_seed_filter",
    "seed_filter_rule",
    "FACE_SCORE_THRESHOLD",
    "face_confidence",
    "measured_seed_filter",
    "seed_filter_funnel",
]


def seed_filter_funnel(hcic_summary: Mapping[str, Any], paper: Sequence[int] = (1000, 300, 100)) -> dict[str, Any]:
    """The seed filter the generate stage ran before max-min (``summary.json``'s ``hcic``
    section, :func:`facebias.generate.build.candidate_seed_filter`), with the funnel's sizes
    beside the paper's.

    Parameters
    ----------
    hcic_summary : mapping
        ``n_candidates``, ``selected_seeds`` and ``seed_filter`` (with ``n_kept_by_filter``,
        ``kept_seeds`` and the counts).
    paper : sequence of int, default (1000, 300, 100)
        The paper's candidates, kept by the filter, selected by max-min.

    Returns
    -------
    dict
        The stage's ``seed_filter`` record plus ``n_selected``, ``keep_ratio`` (kept /
        candidates), ``select_ratio`` (selected / kept), ``paper`` (the same three sizes and
        two ratios) and ``selected_within_kept`` (every selected seed was kept). A record
        made before the stage recorded its realism signal (the simulated panel on every
        backend, the DCGAN's too) gets ``realism_source`` "simulated", ``simulated`` True and
        a ``realism_signal`` that says so.

    Raises
    ------
    ValueError
        Without a ``seed_filter`` record, or for a paper funnel that is not decreasing.

    Examples
    --------
    >>> f = seed_filter_funnel({"n_candidates": 10, "selected_seeds": [4, 1],
    ...                         "seed_filter": {"n_kept_by_filter": 3, "kept_seeds": [1, 4, 7]}})
    >>> f["keep_ratio"], round(f["select_ratio"], 3), f["selected_within_kept"], f["paper"]["keep_ratio"]
    (0.3, 0.667, True, 0.3)
    >>> f["simulated"], f["realism_signal"].split(":")[0]  # an old record: the simulated panel
    (True, 'SIMULATION')
    """
    if "seed_filter" not in hcic_summary:
        raise ValueError("no seed_filter record: the products were made before the generate stage ran the filter")
    n_cand, n_keep, n_sel = (int(x) for x in paper)
    if not n_cand >= n_keep >= n_sel >= 1:
        raise ValueError(f"paper funnel must decrease, got {paper}")
    sf = dict(hcic_summary["seed_filter"])
    if "realism_source" not in sf:  # products of the stage before it measured anything: the simulated panel
        sf.update(realism_source="simulated", simulated=True,
                  realism_signal=("SIMULATION: a simulated panel's uncanny votes, drawn from "
                                  f"{sf.get('realism_truth', 'a realism truth')} (recorded before the stage "
                                  "measured realism on backends without truth)"))
    selected = [int(x) for x in hcic_summary["selected_seeds"]]
    n_c, n_k = int(hcic_summary["n_candidates"]), int(sf["n_kept_by_filter"])
    return {**sf, "n_candidates": n_c, "n_selected": len(selected), "keep_ratio": n_k / n_c,
            "select_ratio": len(selected) / n_k,
            "selected_within_kept": set(selected) <= {int(x) for x in sf["kept_seeds"]},
            "paper": {"n_candidates": n_cand, "n_kept_by_filter": n_keep, "n_selected": n_sel,
                      "keep_ratio": n_keep / n_cand, "select_ratio": n_sel / n_keep}}
