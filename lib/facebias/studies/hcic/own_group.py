"""Own-group checks (``docs/specs/hcic.md`` B1.12; Fig. 3 (c), Fig. 4 / Supp. Fig. 14).

The validation tests of :mod:`facebias.studies.hcic.validation` exercised on simulated panels
with a planted own-group effect (the panels and their votes are the known-truth world
:mod:`facebias.worlds.hcic`): a test that rejects with no planted effect finds group
differences of the faces themselves, and one that never rejects with it has no power.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.hcic.ground_truth import pair_item_ids, pair_vote_matrix
from facebias.studies.hcic.validation import group_independence_test, response_histogram
from facebias.validate import require_columns
from facebias.worlds.hcic import (
    _panel_shares,
    simulate_own_group_image_votes,
    simulate_own_group_pair_votes,
)

__all__ = [
    "own_group_check",
    "own_group_image_check",
]


def own_group_check(pairs: pd.DataFrame, dissimilarity: Any, effects: Sequence[float] = (0.0, 0.5),
                    majority: str | None = None, majority_share: float = 0.8, n_votes: int = 9,
                    noise: float = 1.7, seed: int = 0,
                    alpha: float = 0.05) -> tuple[pd.DataFrame, dict[float, pd.DataFrame]]:
    """Exercise :func:`group_independence_test` on simulated panels with a known own-group
    effect (Fig. 4 / Supp. 14 and the chi-square test are otherwise circular on a simulated
    panel: its votes come from truth, and with no planted effect the groups cannot differ
    beyond the truth itself).

    For each ``effect`` a :class:`facebias.annotate.Panel` with that ``own_group_effect``
    (other-group pairs perceived shrunk toward the scale middle) and an unbalanced
    composition (``majority_share`` of annotators from ``majority``, the rest spread evenly
    over the other groups) votes on ``pairs`` (:func:`facebias.annotate.simulate_pair_votes`,
    ``noise``); the test then runs on those votes. An even panel would show no group
    difference even with the effect: every group would meet the same share of own-group
    annotators. ``effect = 0`` is the null: responses depend on the truth only, so a test that
    rejects there is finding group differences of the faces themselves (or is miscalibrated).

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``pair_id``, ``group`` and the test's ``attribute`` and ``label`` columns.
    dissimilarity : array_like
        Each pair's perceived-identity truth in [0, 1]
        (:func:`facebias.annotate.simulate.pair_dissimilarity`).
    effects : sequence of float, default (0.0, 0.5)
        Own-group effects in [0, 1] to simulate.
    majority : str, optional
        The panel's majority group; default the first group in sorted order.
    majority_share : float, default 0.8
        Its share of the panel, in [0, 1].
    n_votes : int, default 9
        Votes per pair.
    noise : float, default 1.7
        Per-vote SD of the identity answers in raw levels.
    seed : int, default 0
        Panel seed (the same panel members for every effect).
    alpha : float, default 0.05
        Family-wise level of the test.

    Returns
    -------
    tests : pandas.DataFrame
        :func:`group_independence_test` rows with ``effect`` and ``majority`` columns.
    matrices : dict of float to pandas.DataFrame
        Effect -> the raw (pairs x ``n_votes``) responses, for the figures.

    Raises
    ------
    ValueError
        For a missing column, fewer than 2 groups, an unknown ``majority``, an effect or
        share outside [0, 1], or as the simulator.
    """
    require_columns(pairs, ["pair_id", "group"], "pairs")
    groups, majority, shares = _panel_shares(pairs["group"], majority, majority_share, "own_group_check")
    truth = pd.DataFrame({"item_id": pair_item_ids(pairs).to_numpy(),
                          "dissimilarity": np.asarray(dissimilarity, dtype=np.float64),
                          "group": pairs["group"].astype(str).to_numpy()})
    rows, matrices = [], {}
    for effect in effects:
        votes = simulate_own_group_pair_votes(truth, effect, shares, n_votes=n_votes, noise=noise, seed=seed)
        matrix = pair_vote_matrix(votes, pairs, n=n_votes)
        matrices[float(effect)] = matrix
        rows.append(group_independence_test(matrix, pairs, alpha=alpha)
                    .assign(effect=float(effect), majority=majority))
    return pd.concat(rows, ignore_index=True), matrices


def own_group_image_check(images: pd.DataFrame, effects: Sequence[float] = (0.0, 0.5),
                          majority: str | None = None, majority_share: float = 0.8,
                          question: str = "gender", truth_col: str = "true_gender", n_votes: int = 9,
                          seed: int = 0, alpha: float = 0.05) -> tuple[pd.DataFrame, dict[float, pd.DataFrame]]:
    """Fig. 3 (c) exercised: gender votes by group from simulated panels with a known
    own-group effect, and a Kruskal-Wallis test of agreement with the intended gender across
    groups.

    For each ``effect`` a :class:`facebias.annotate.Panel` with that ``own_group_effect``
    (another group's face perceived shrunk toward the scale middle) and ``majority_share`` of
    its members from ``majority`` (the rest spread evenly) answers ``question`` on every image
    (:func:`facebias.annotate.simulate_image_votes`, truth ``truth_col`` = P(male)). Each
    response ``r`` (0 = female ... 4 = male) is recoded as agreement with the intended gender
    (``r`` for male images, ``4 - r`` for female), averaged per image, and within each
    intended gender the groups' image means are compared (:func:`scipy.stats.kruskal`;
    Bonferroni over the genders). The image is the unit and the comparison stays within a
    gender: a chi-square test on the pooled group x response table treats one (biased)
    annotator's votes as independent, and across genders the panel's mean lean toward "male"
    alone separates male from female groups (both rejected null panels in trials).
    ``effect = 0`` is the null: a rejection there means the faces' own gender truth differs
    by group. The votes serve this check only.

    Parameters
    ----------
    images : pandas.DataFrame
        ``image_id``, ``group``, ``gender``, ``attribute``, ``level``, ``is_prototype`` and
        ``truth_col`` (in [0, 1]).
    effects : sequence of float, default (0.0, 0.5)
        Own-group effects in [0, 1].
    majority : str, optional
        The panel's majority group; default the first in sorted order.
    majority_share : float, default 0.8
        Its share of the panel, in [0, 1].
    question : str, default "gender"
        A 5-level question of :data:`facebias.annotate.SCALES_HCIC` oriented like ``truth_col``.
    truth_col : str, default "true_gender"
        The truth column (P(male) for gender).
    n_votes : int, default 9
        Votes per image.
    seed : int, default 0
        Panel seed (the same members for every effect).
    alpha : float, default 0.05
        Level of each effect's test.

    Returns
    -------
    tests : pandas.DataFrame
        One row per effect: ``effect, majority, stratum`` (the gender with the smallest
        p), ``h`` (its Kruskal-Wallis statistic), ``p`` (Bonferroni-adjusted), ``reject, n_votes,
        majority_agreement, other_agreement`` (mean agreement level / 4 of the majority's
        images and of the rest).
    histograms : dict of float to pandas.DataFrame
        Effect -> :func:`response_histogram` of the raw responses by group (Fig. 3 c).

    Raises
    ------
    ValueError
        For a missing column, fewer than 2 groups, an unknown ``majority``, a share or
        effect outside [0, 1], or as the simulator.
    """
    from scipy.stats import kruskal

    require_columns(images, ["image_id", "group", "gender", truth_col], "images")
    groups, majority, shares = _panel_shares(images["group"], majority, majority_share, "own_group_image_check")
    truth = pd.DataFrame({"item_id": images["image_id"].astype(str).to_numpy(),
                          "truth": images[truth_col].to_numpy(dtype=np.float64),
                          "group": images["group"].astype(str).to_numpy()})
    info = images.assign(image_id=images["image_id"].astype(str)).set_index("image_id")
    male = info["gender"].astype(str).str.lower().eq("male")
    rows, hists = [], {}
    for effect in effects:
        votes = simulate_own_group_image_votes(truth, effect, shares, question=question, n_votes=n_votes,
                                               seed=seed)
        r = votes["value"].to_numpy(dtype=np.int64)
        agree = np.where(votes["item_id"].map(male).to_numpy(dtype=bool), r, 4 - r)
        grp = votes["item_id"].map(info["group"]).astype(str).to_numpy()
        per_image = pd.DataFrame({"item": votes["item_id"].to_numpy(), "group": grp, "agree": agree}).groupby(
            "item", sort=True).agg(group=("group", "first"), agree=("agree", "mean"))
        per_image["gender"] = per_image.index.map(info["gender"].astype(str).str.lower())
        strata = {}
        for sex, part in per_image.groupby("gender", sort=True):
            gs = sorted(pd.unique(part["group"]))
            if len(gs) >= 2:
                strata[sex] = kruskal(*[part.loc[part["group"] == g, "agree"].to_numpy() for g in gs])
        if not strata:
            raise ValueError("own_group_image_check: no gender with at least 2 groups")
        worst = min(strata, key=lambda k: strata[k][1])
        p = min(1.0, float(strata[worst][1]) * len(strata))
        rows.append({"effect": float(effect), "majority": majority, "stratum": worst,
                     "h": float(strata[worst][0]), "p": p, "reject": bool(p < alpha), "n_votes": len(votes),
                     "majority_agreement": float(agree[grp == majority].mean() / 4),
                     "other_agreement": float(agree[grp != majority].mean() / 4)})
        hists[float(effect)] = response_histogram(votes, images.assign(image_id=images["image_id"].astype(str)),
                                                  question, by="group")
    return pd.DataFrame(rows), hists
