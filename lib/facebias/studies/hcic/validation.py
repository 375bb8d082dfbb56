"""Human-annotation validation (Sec. 3.5, 4; ``docs/specs/hcic.md`` B1.6, B1.12).

Histograms of the single-image responses (Fig. 3, Supp. Fig. 9), the per-pair SD of the
identity responses (Supp. Fig. 13), the test of independence of group and identity response
(Fig. 4, Supp. Fig. 14; B1.12 [REC]), the intended-same pairs judged different (Supp. Fig.
17) and the images the realism filter removes (Supp. Fig. 18).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from facebias.studies.hcic.ground_truth import self_pair_mask
from facebias.studies.hcic.pairs import ATTRIBUTES, CENTRE_LEVEL
from facebias.validate import require_columns

__all__ = [
    "annotator_consistency",
    "response_histogram",
    "group_independence_test",
    "same_pair_examples",
    "uncanny_examples",
]


def annotator_consistency(matrix: pd.DataFrame, pairs: pd.DataFrame,
                          by: Sequence[str] = ("attribute",)) -> tuple[pd.Series, pd.DataFrame]:
    """Per-pair SD of the raw identity responses normalised to [0, 1] (``item_sd`` with
    k = 5: population SD / 4), and its median, 15th and 85th percentile per cell of
    ``by`` (Supp. Fig. 13).

    Parameters
    ----------
    matrix : pandas.DataFrame
        :func:`pair_vote_matrix` output (index = ``pairs.index``).
    pairs : pandas.DataFrame
        The pairs with the ``by`` columns.
    by : sequence of str, default ("attribute",)
        Cell columns.

    Returns
    -------
    per_pair_sd : pandas.Series
        Normalised SD per pair, in [0, 0.5].
    summary : pandas.DataFrame
        ``*by, median, q15, q85, n``.

    Raises
    ------
    ValueError
        For a missing column or a ``matrix`` index other than ``pairs.index``.
    """
    from facebias.annotate import item_sd

    require_columns(pairs, list(by), "pairs")
    if not matrix.index.equals(pairs.index):
        raise ValueError("matrix: index must equal pairs.index (use pair_vote_matrix)")
    sd = pd.Series(np.asarray(item_sd(matrix.to_numpy(dtype=np.float64), 5), dtype=np.float64),
                   index=pairs.index, name="sd")
    g = sd.groupby([pairs[c] for c in by], sort=True, observed=True)
    summary = pd.DataFrame({"median": g.median(), "q15": g.quantile(0.15), "q85": g.quantile(0.85),
                            "n": g.count()}).reset_index()
    return sd, summary


def response_histogram(image_votes: pd.DataFrame, images: pd.DataFrame, question: str,
                       by: str = "step", normalise: bool = True) -> pd.DataFrame:
    """Histogram of the raw responses to ``question`` (Fig. 3, Supp. 9): rows = intended
    step 0..4 of the ``question`` sequence (``by="step"``, the prototype is step 2; for
    age and expression) or the image's ``group`` (``by="group"``); columns = response
    level.

    Parameters
    ----------
    image_votes : pandas.DataFrame
        Single-image votes (``item_id, question, value``; value = raw level 0..4).
    images : pandas.DataFrame
        The images table.
    question : str
        The question, e.g. ``"age"``.
    by : {"step", "group"}, default "step"
        Rows: intended step or image group.
    normalise : bool, default True
        Shares per row (fractions) instead of counts.

    Returns
    -------
    pandas.DataFrame
        Rows ``by``, columns ``response``.

    Raises
    ------
    ValueError
        For a missing column, no votes for ``question``, or an unknown ``by``.
    """
    require_columns(image_votes, ["item_id", "question", "value"], "image_votes")
    require_columns(images, ["image_id", "group", "attribute", "level", "is_prototype"], "images")
    v = image_votes[image_votes["question"] == question]
    if v.empty:
        raise ValueError(f"image_votes: no votes for question {question!r}")
    info = images.set_index("image_id")
    if by == "step":
        seq = info[(info["attribute"] == question) | info["is_prototype"].astype(bool)]
        step = pd.Series(np.where(seq["is_prototype"].astype(bool), CENTRE_LEVEL.get(question, 2),
                                  seq["level"]), index=seq.index)
        key = v["item_id"].map(step)
    elif by == "group":
        key = v["item_id"].map(info["group"])
    else:
        raise ValueError(f"by: expected 'step' or 'group', got {by!r}")
    v = v[key.notna()]
    tab = pd.crosstab(key[key.notna()].rename(by), v["value"].astype(int).rename("response"))
    return tab.div(tab.sum(axis=1), axis=0) if normalise else tab


def group_independence_test(matrix: pd.DataFrame, pairs: pd.DataFrame,
                            by: Sequence[str] = ("attribute", "label"), group: str = "group",
                            alpha: float = 0.05) -> pd.DataFrame:
    """Chi-square test of independence of demographic group x the 5 identity responses
    (B1.12 [REC]; Fig. 4 / Supp. 14), one test per cell of ``by`` (default: attribute x
    intended label, i.e. same-seed and different-seed pairs), Bonferroni-corrected over
    the tests. Responses are pooled over annotators (9 per pair), which treats them as
    independent; read p-values as approximate.

    Parameters
    ----------
    matrix : pandas.DataFrame
        :func:`pair_vote_matrix` output (index = ``pairs.index``).
    pairs : pandas.DataFrame
        The pairs with the ``group`` and ``by`` columns.
    by : sequence of str, default ("attribute", "label")
        One test per cell.
    group : str, default "group"
        Group column.
    alpha : float, default 0.05
        Family-wise significance level.

    Returns
    -------
    pandas.DataFrame
        Columns ``*by, chi2, dof, p, n_responses, p_bonferroni, reject``; cells with
        fewer than 2 groups or 2 responses are not tested; empty if none is.

    Raises
    ------
    ValueError
        For a missing column or a ``matrix`` index other than ``pairs.index``.
    """
    from scipy.stats import chi2_contingency

    require_columns(pairs, [group, *by], "pairs")
    if not matrix.index.equals(pairs.index):
        raise ValueError("matrix: index must equal pairs.index (use pair_vote_matrix)")
    long = pd.DataFrame(matrix.to_numpy(dtype=np.float64), index=pairs.index).stack().rename("value")
    long = long.reset_index(level=1, drop=True).to_frame()
    long = long.join(pairs[[group, *by]])
    rows = []
    for key, sub in long.groupby(list(by), sort=True, observed=True):
        tab = pd.crosstab(sub[group], sub["value"].astype(int)).reindex(columns=range(5), fill_value=0)
        tab = tab.loc[:, tab.sum(axis=0) > 0]
        if tab.shape[0] < 2 or tab.shape[1] < 2:
            continue
        chi2, p, dof, _ = chi2_contingency(tab.to_numpy())
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), "chi2": float(chi2), "dof": int(dof),
                     "p": float(p), "n_responses": int(tab.to_numpy().sum())})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_bonferroni"] = np.minimum(out["p"] * len(out), 1.0)
    out["reject"] = out["p_bonferroni"] < alpha
    return out


def same_pair_examples(pairs: pd.DataFrame, matrix: pd.DataFrame, t_hcic: float = 0.3,
                       n_rows: int = 4) -> pd.DataFrame:
    """Supp. Fig. 17: intended-same pairs (self pairs left out) with their mean raw identity
    score (0-4, high = more likely different). Rows: the ``n_rows`` prototypes with the most
    intended-same pairs judged different (HCIC > ``t_hcic``; ties by prototype id); columns:
    each attribute's pair at the extreme level farthest from the prototype (the largest
    change), plus the prototype's pair with the highest HCIC (``column = "judged
    different"``), as in the paper's last column.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``prototype_a, attribute, level, label, hcic`` and the self-pair columns.
    matrix : pandas.DataFrame
        Raw responses (:func:`pair_vote_matrix`, index = ``pairs.index``).
    t_hcic : float, default 0.3
        Judged different iff HCIC > t.
    n_rows : int, default 4
        Prototypes shown.

    Returns
    -------
    pandas.DataFrame
        ``row, column, prototype_a, image_a, image_b, attribute, level, mean_raw, hcic,
        judged_different``, one row per shown pair.

    Raises
    ------
    ValueError
        For a missing column or a ``matrix`` index other than ``pairs.index``.

    Examples
    --------
    >>> p = pd.DataFrame({"prototype_a": "P", "image_a": "P", "image_b": ["P", "x", "y"],
    ...                   "attribute": "pose", "level": [2, 0, 4], "label": 1, "hcic": [0.0, 0.1, 0.6]})
    >>> m = pd.DataFrame([[0] * 9, [0] * 9, [3] * 9])
    >>> same_pair_examples(p, m)[["column", "image_b", "mean_raw"]].values.tolist()
    [['pose', 'x', 0.0], ['judged different', 'y', 3.0]]
    """
    require_columns(pairs, ["prototype_a", "image_a", "image_b", "attribute", "level", "label", "hcic"], "pairs")
    if not matrix.index.equals(pairs.index):
        raise ValueError("matrix: index must equal pairs.index (use pair_vote_matrix)")
    same = pairs[(pairs["label"].to_numpy() == 1) & ~self_pair_mask(pairs)].copy()
    same["mean_raw"] = matrix.loc[same.index].to_numpy(dtype=np.float64).mean(axis=1)
    same["judged_different"] = same["hcic"] > t_hcic
    n_diff = same.groupby("prototype_a")["judged_different"].sum()
    order = sorted(n_diff.index, key=lambda p: (-int(n_diff[p]), str(p)))[:n_rows]
    rows = []
    for r, proto in enumerate(order):
        sub = same[same["prototype_a"] == proto]
        for attr in ATTRIBUTES:
            a = sub[sub["attribute"] == attr]
            if a.empty:
                continue
            centre = pairs.loc[(pairs["attribute"] == attr) & self_pair_mask(pairs), "level"]
            c = int(centre.iloc[0]) if len(centre) else CENTRE_LEVEL.get(attr, 2)
            pick = a.loc[(a["level"] - c).abs().sort_values(ascending=False, kind="stable").index[0]]
            rows.append({"row": r, "column": attr, **pick.to_dict()})
        top = sub.loc[sub["hcic"].sort_values(ascending=False, kind="stable").index[0]]
        rows.append({"row": r, "column": "judged different", **top.to_dict()})
    cols = ["row", "column", "prototype_a", "image_a", "image_b", "attribute", "level", "mean_raw", "hcic",
            "judged_different"]
    return pd.DataFrame(rows, columns=cols).reset_index(drop=True)[cols]


def uncanny_examples(uncanny: pd.Series, threshold: float = 0.8, n: int = 16) -> pd.Series:
    """Supp. Fig. 18: the images the realism filter removes (normalised uncanny score >=
    ``threshold``), most uncanny first, at most ``n``. The paper sorts them into four causes
    by eye (hairstyle, ring artefacts, background separation, other); that step is human
    judgement and is not reproduced.

    Parameters
    ----------
    uncanny : pandas.Series
        Image id -> normalised uncanny score in [0, 1].
    threshold : float, default 0.8
        Removed iff score >= threshold.
    n : int, default 16
        At most this many.

    Returns
    -------
    pandas.Series
        The removed images' scores, descending (ties by image id).

    Examples
    --------
    >>> uncanny_examples(pd.Series({"a": 0.9, "b": 0.5, "c": 0.8, "d": 0.95}), n=2).to_dict()
    {'d': 0.95, 'a': 0.9}
    """
    u = uncanny[uncanny >= threshold]
    order = sorted(u.index, key=lambda i: (-float(u[i]), str(i)))[:n]
    return u.loc[order]
