"""The known-truth world of paper 000's own-group checks: simulated annotator panels with a
planted own-group effect (``docs/specs/hcic.md`` B1.12; Fig. 3 (c), Fig. 4 / Supp. Fig. 14).

A panel (:class:`facebias.annotate.Panel`) draws its members from the groups in given shares
(an unbalanced panel: a majority group and the rest spread evenly) and perceives another
group's face shrunk toward the scale middle by ``own_group_effect`` (0 = the null: responses
depend on the truth only). Its votes on pairs (identity) or images (e.g. gender) are what
:mod:`facebias.studies.hcic.own_group` tests. Deterministic: the same panel seed gives the
same members for every effect.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

__all__ = ["simulate_own_group_pair_votes", "simulate_own_group_image_votes"]


def _panel_shares(group: pd.Series, majority: str | None, majority_share: float,
                  who: str) -> tuple[list[str], str, dict[str, float]]:
    """The groups (sorted), the majority group (default the first) and each group's share of
    a simulated panel: ``majority_share`` for the majority, the rest split evenly."""
    groups = sorted(pd.unique(group.astype(str)))
    if len(groups) < 2:
        raise ValueError(f"{who}: need at least 2 groups, got {groups}")
    majority = groups[0] if majority is None else str(majority)
    if majority not in groups:
        raise ValueError(f"{who}: majority {majority!r} is not one of {groups}")
    if not 0 <= majority_share <= 1:
        raise ValueError(f"majority_share must lie in [0, 1], got {majority_share}")
    rest = (1.0 - majority_share) / (len(groups) - 1)
    return groups, majority, {g: majority_share if g == majority else rest for g in groups}


def simulate_own_group_pair_votes(truth: pd.DataFrame, effect: float, shares: Mapping[str, float], n_votes: int = 9,
                                  noise: float = 1.7, seed: int = 0) -> pd.DataFrame:
    """Identity votes of one simulated panel with a planted own-group effect
    (:func:`facebias.annotate.simulate_pair_votes`).

    Parameters
    ----------
    truth : pandas.DataFrame
        One row per pair: ``item_id``, ``dissimilarity`` (perceived-identity truth in [0, 1])
        and ``group``.
    effect : float
        The panel's ``own_group_effect``, in [0, 1].
    shares : mapping of str to float
        Group -> share of the panel (:func:`_panel_shares`).
    n_votes : int, default 9
        Votes per pair.
    noise : float, default 1.7
        Per-vote SD of the identity answers in raw levels.
    seed : int, default 0
        Panel seed.

    Returns
    -------
    pandas.DataFrame
        Votes in the store's schema, ``source`` "simulated".
    """
    from facebias.annotate.simulate import Panel, simulate_pair_votes

    panel = Panel(own_group_effect=float(effect), group_shares=shares, seed=seed)
    return simulate_pair_votes(truth, n_votes, panel, noise=noise).assign(source="simulated")


def simulate_own_group_image_votes(truth: pd.DataFrame, effect: float, shares: Mapping[str, float],
                                   question: str = "gender", n_votes: int = 9, seed: int = 0) -> pd.DataFrame:
    """Single-image votes on one question of one simulated panel with a planted own-group
    effect (:func:`facebias.annotate.simulate_image_votes`).

    Parameters
    ----------
    truth : pandas.DataFrame
        One row per image: ``item_id``, ``truth`` (in [0, 1], oriented like ``question``'s
        scale) and ``group``.
    effect : float
        The panel's ``own_group_effect``, in [0, 1].
    shares : mapping of str to float
        Group -> share of the panel (:func:`_panel_shares`).
    question : str, default "gender"
        A 5-level question of :data:`facebias.annotate.SCALES_HCIC`.
    n_votes : int, default 9
        Votes per image.
    seed : int, default 0
        Panel seed.

    Returns
    -------
    pandas.DataFrame
        Votes in the store's schema.
    """
    from facebias.annotate import SCALES_HCIC, Panel, simulate_image_votes

    panel = Panel(own_group_effect=float(effect), group_shares=shares, seed=seed)
    return simulate_image_votes(truth, {question: SCALES_HCIC[question]}, n_votes, panel,
                                {question: "truth"})
