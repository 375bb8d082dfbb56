"""Paper 000's human seed filter (Sec. 3.1: 1,000 candidate seeds -> 300 judged realistic and
true to their intended race and gender, before max-min selection), on a simulated panel and
through the annotation store.

It lives here, not in :mod:`facebias.studies.hcic` (which re-exports it), because the
generation stage (:mod:`facebias.generate.build`) runs it on the candidate prototypes before
max-min selection, and the generation layer does not import the studies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import SCALES_000, Scale
from facebias.validate import require_columns

__all__ = ["SEED_FILTER_SCALES", "intended_group_agreement", "human_seed_filter", "seed_filter_rule"]

#: The seed filter's two questions (000, Sec. 3.1): realism on 000's uncanny scale, and whether
#: the prototype shows its intended race and gender (a scale of ours; the paper gives none).
SEED_FILTER_SCALES: dict[str, Scale] = {
    "seed_filter/uncanny": SCALES_000["uncanny"],
    "seed_filter/group_match": Scale("group_match", ("Clearly not the intended group", "Probably not",
                                                     "Unsure", "Probably", "Clearly the intended group")),
}


def seed_filter_rule(threshold: float = 0.8, group: bool = True) -> str:
    """The rule :func:`human_seed_filter` applies, in words (for summaries).

    Parameters
    ----------
    threshold : float, default 0.8
        Realism threshold.
    group : bool, default True
        Whether the group question was asked.

    Returns
    -------
    str
        One sentence.

    Examples
    --------
    >>> seed_filter_rule(0.8, group=False).split(" (")[0]
    'a seed is acceptable iff every prototype scores uncanny < 0.8'
    """
    rule = f"a seed is acceptable iff every prototype scores uncanny < {threshold:g}"
    if group:
        rule += " and group match >= 0.5"
    worst = "max uncanny + (1 - min group match)" if group else "max uncanny"
    return (rule + f" (mean panel votes read back from the store, in [0, 1]); seeds ranked acceptable "
            f"first, then by {worst}, ties by seed; the first n_keep kept")


def intended_group_agreement(prototypes: pd.DataFrame) -> pd.Series:
    """How well each prototype shows its intended group, from the generator's truth: the
    lesser of ``true_race_<race>`` (the intended race's share) and the gender agreement
    (``true_gender`` = P(male) for ``gender == "male"``, else 1 - it).

    Parameters
    ----------
    prototypes : pandas.DataFrame
        ``race``, ``gender``, ``true_gender`` and one ``true_race_<race>`` column per race.

    Returns
    -------
    pandas.Series
        Agreement in [0, 1], indexed like ``prototypes``, named ``group_match``.

    Raises
    ------
    ValueError
        For a missing column (e.g. a backend without race truth).

    Examples
    --------
    >>> p = pd.DataFrame({"race": ["Black", "White"], "gender": ["male", "female"],
    ...                   "true_gender": [0.9, 0.4], "true_race_Black": [0.95, 0.0],
    ...                   "true_race_White": [0.05, 0.8]})
    >>> intended_group_agreement(p).round(2).tolist()
    [0.9, 0.6]
    """
    require_columns(prototypes, ["race", "gender", "true_gender"], "prototypes")
    race_cols = [f"true_race_{r}" for r in sorted(pd.unique(prototypes["race"].astype(str)))]
    require_columns(prototypes, race_cols, "prototypes")
    race = np.array([prototypes.at[i, f"true_race_{r}"] for i, r in zip(prototypes.index, prototypes["race"],
                                                                           strict=True)], dtype=np.float64)
    male = prototypes["gender"].astype(str).str.lower().eq("male").to_numpy()
    pm = prototypes["true_gender"].to_numpy(dtype=np.float64)
    return pd.Series(np.clip(np.minimum(race, np.where(male, pm, 1 - pm)), 0, 1), index=prototypes.index,
                     name="group_match")


def human_seed_filter(prototypes: pd.DataFrame, n_keep: int, store_path: str | Path, panel: Any = None,
                      n_votes: int = 9, threshold: float = 0.8) -> pd.DataFrame:
    """000's human seed filter (1,000 candidate seeds -> 300, before max-min selection) on a
    simulated panel, through the annotation store as human votes would go.

    Each candidate prototype is rated on :data:`SEED_FILTER_SCALES` (``n_votes`` votes per
    question by :func:`facebias.annotate.simulate_image_votes`): realism (truth
    ``true_uncanny``) and whether it shows its intended group (truth ``group_match``, e.g.
    :func:`intended_group_agreement`; without a ``group_match`` column the group question is
    not asked and every seed passes it). The votes are written to a new
    :class:`facebias.annotate.AnnotationStore` at ``store_path`` (source ``"simulated"``),
    read back, and scored as the plain mean normalised to [0, 1]. A seed is acceptable iff
    **every** prototype of it scores uncanny < ``threshold`` and group match >= 0.5; seeds
    are ranked acceptable first, then by ``worst`` = max uncanny + (1 - min group match)
    (ties by seed), and the first ``n_keep`` kept (:func:`seed_filter_rule`). The paper's
    single annotator judged by eye; this rule is ours.

    Parameters
    ----------
    prototypes : pandas.DataFrame
        One row per candidate prototype: ``item_id``, ``seed``, ``true_uncanny`` and
        optionally ``group_match`` (both in [0, 1]).
    n_keep : int
        Seeds kept (1..number of seeds).
    store_path : str or pathlib.Path
        A new SQLite store (must not exist).
    panel : facebias.annotate.Panel, optional
        The annotators; default ``Panel()``.
    n_votes : int, default 9
        Votes per prototype and question.
    threshold : float, default 0.8
        Realism threshold (000's uncanny filter).

    Returns
    -------
    pandas.DataFrame
        One row per seed: ``seed, n_prototypes, max_uncanny, min_group_match, realistic,
        group_ok, acceptable, worst, rank, kept`` (``min_group_match`` NaN and ``group_ok``
        True where the group question was not asked).

    Raises
    ------
    ValueError
        For a missing column, truth outside [0, 1], a bad ``n_keep``, or an existing store.
    """
    from facebias.annotate.aggregate import scores_from_votes
    from facebias.annotate.simulate import Panel, simulate_image_votes
    from facebias.annotate.store import AnnotationStore

    require_columns(prototypes, ["item_id", "seed", "true_uncanny"], "prototypes")
    ask_group = "group_match" in prototypes.columns
    n_seeds = prototypes["seed"].nunique()
    if not 1 <= int(n_keep) <= n_seeds:
        raise ValueError(f"n_keep must lie in 1..{n_seeds} (the seeds), got {n_keep}")
    store_path = Path(store_path)
    if store_path.exists():
        raise ValueError(f"store {store_path} exists: the seed filter writes a new one")
    panel = panel if panel is not None else Panel()
    scales = {q: sc for q, sc in SEED_FILTER_SCALES.items() if ask_group or not q.endswith("group_match")}
    truth = {"uncanny": "true_uncanny", "group_match": "group_match"}
    items = prototypes.assign(item_id=prototypes["item_id"].astype(str))
    votes = simulate_image_votes(items, {q.split("/")[1]: sc for q, sc in scales.items()}, n_votes, panel,
                                 {q.split("/")[1]: truth[q.split("/")[1]] for q in scales})
    votes = votes.assign(question="seed_filter/" + votes["question"],
                         vote_id=[f"sim-seed-{i:07d}" for i in range(len(votes))],
                         time=np.arange(len(votes), dtype=float))
    with AnnotationStore(store_path) as store:
        store.register_items(items["item_id"])
        store.add_votes(votes, scales, source="simulated", chunk_size=10_000)
        stored = store.votes(source="simulated")
    scores = scores_from_votes(stored, scales, agg="mean")
    per = items.assign(uncanny=items["item_id"].map(scores["seed_filter/uncanny"]),
                       match=(items["item_id"].map(scores["seed_filter/group_match"]) if ask_group else np.nan))
    g = per.groupby("seed", sort=True)
    out = pd.DataFrame({"n_prototypes": g.size(), "max_uncanny": g["uncanny"].max(),
                        "min_group_match": g["match"].min()}).reset_index()
    out["realistic"] = out["max_uncanny"] < threshold
    out["group_ok"] = out["min_group_match"] >= 0.5 if ask_group else True
    out["acceptable"] = out["realistic"] & out["group_ok"]
    out["worst"] = out["max_uncanny"] + ((1 - out["min_group_match"]) if ask_group else 0.0)
    order = out.sort_values(["acceptable", "worst", "seed"], ascending=[False, True, True], kind="stable").index
    out["rank"] = pd.Series(np.arange(len(out)), index=order)
    out["kept"] = out["rank"] < int(n_keep)
    return out
