"""Paper 000's human seed filter (Sec. 3.1: 1,000 candidate seeds -> 300 judged realistic and
true to their intended race and gender, before max-min selection), in two forms:

* :func:`human_seed_filter`: a **simulated panel** rates each prototype through the
  annotation store, its answers drawn from a realism truth (the backend's, or
  :func:`facebias.annotate.simulate.realism_truth` of the latent) and the generator's group
  truth. A simulation: it needs truth, so it runs on the procedural renderer only.
* :func:`measured_seed_filter`: on a backend without truth (the DCGAN) the realism signal is
  **measured** on the render, :func:`face_confidence` (YuNet's face score); nothing is
  simulated and nothing is read from the latent.

It lives here, not in :mod:`facebias.studies.hcic` (which re-exports it), because the
generation stage (:mod:`facebias.generate.build`) runs it on the candidate prototypes before
max-min selection, and the generation layer does not import the studies.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import SCALES_HCIC, Scale
from facebias.validate import require_columns

__all__ = ["SEED_FILTER_SCALES", "intended_group_agreement", "human_seed_filter", "seed_filter_rule",
           "REALISM_DETECTOR", "FACE_SCORE_THRESHOLD", "FACE_SCORE_FLOOR", "face_confidence",
           "measured_seed_filter", "measured_seed_filter_rule"]

#: The seed filter's two questions (000, Sec. 3.1): realism on 000's uncanny scale, and whether
#: the prototype shows its intended race and gender (a scale of ours; the paper gives none).
SEED_FILTER_SCALES: dict[str, Scale] = {
    "seed_filter/uncanny": SCALES_HCIC["uncanny"],
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
    return _rank_and_keep(out, n_keep)


def _rank_and_keep(out: pd.DataFrame, n_keep: int) -> pd.DataFrame:
    """``out`` (one row per seed with ``acceptable``, ``worst`` and ``seed``) with ``rank``
    (acceptable first, then by ``worst`` ascending, ties by seed) and ``kept`` (the first
    ``n_keep``): the one ranking of both seed filters."""
    order = out.sort_values(["acceptable", "worst", "seed"], ascending=[False, True, True], kind="stable").index
    out["rank"] = pd.Series(np.arange(len(out)), index=order)
    out["kept"] = out["rank"] < int(n_keep)
    return out


# --------------------------------------------------------------------------- measured realism
#: The face detector whose confidence is the measured realism signal (:func:`face_confidence`).
REALISM_DETECTOR = "yunet"
#: A prototype is realistic iff the detector's confidence reaches this: YuNet's own operating
#: score (:class:`facebias.faces.detect.YuNetDetector`'s default), the one at which the study's
#: face recognisers find (and so enrol) a face.
FACE_SCORE_THRESHOLD = 0.6
#: Detector score floor of :func:`face_confidence` (lower scores read as no face, 0).
FACE_SCORE_FLOOR = 0.01
_DETECTORS: dict[float, Any] = {}


def face_confidence(images: Sequence[np.ndarray], min_size: int = 256) -> np.ndarray:
    """The measured realism signal of the seed filter on a backend without truth: YuNet's
    confidence that each image shows a face.

    Each image is first enlarged so its shorter side is ``min_size`` (bicubic,
    :func:`facebias.faces.images.upscale`, the rule of the embedding path: the DCGAN draws
    64 px faces); the signal is the highest score among YuNet's plausible detections
    (:func:`facebias.faces.detect.plausible_detections`), run with a score floor of
    :data:`FACE_SCORE_FLOOR` so that weak faces get a graded score; 0 where none is found.
    It measures how face-like the detector finds the render (noise, blur, a broken face
    lower it), not human realism: no panel has rated these images.

    Parameters
    ----------
    images : sequence of numpy.ndarray
        (H, W, 3) RGB uint8 renders.
    min_size : int, default 256
        Shorter side, in pixels, that smaller images are enlarged to (0 = as drawn).

    Returns
    -------
    numpy.ndarray
        (n,) float64 scores in [0, 1] (a detector probability; 0 = no face).

    Raises
    ------
    ValueError
        For an image that is not RGB / gray uint8, or a negative ``min_size``.
    """
    from facebias.faces.detect import load_detector
    from facebias.faces.images import as_rgb_uint8, upscale

    if int(min_size) < 0:
        raise ValueError(f"min_size: must be >= 0, got {min_size!r}")
    if FACE_SCORE_FLOOR not in _DETECTORS:
        _DETECTORS[FACE_SCORE_FLOOR] = load_detector(REALISM_DETECTOR, score_threshold=FACE_SCORE_FLOOR)
    det = _DETECTORS[FACE_SCORE_FLOOR]
    out = np.zeros(len(images))
    for i, im in enumerate(images):
        rgb = as_rgb_uint8(np.asarray(im))
        found = det.detect(upscale(rgb, int(min_size)) if min_size else rgb)
        out[i] = max((d.score for d in found), default=0.0)
    return out


def measured_seed_filter_rule(threshold: float = FACE_SCORE_THRESHOLD) -> str:
    """The rule :func:`measured_seed_filter` applies, in words (for summaries).

    Parameters
    ----------
    threshold : float, default :data:`FACE_SCORE_THRESHOLD`
        Least detector confidence of a realistic prototype.

    Returns
    -------
    str
        One sentence.

    Examples
    --------
    >>> measured_seed_filter_rule(0.6).split(" (")[0]
    'a seed is acceptable iff every prototype has YuNet face confidence >= 0.6'
    """
    return (f"a seed is acceptable iff every prototype has YuNet face confidence >= {threshold:g} (measured on "
            "the frontal render enlarged to 256 px; no panel, no latent norm); seeds ranked acceptable first, "
            "then by 1 - min confidence, ties by seed; the first n_keep kept")


def measured_seed_filter(prototypes: pd.DataFrame, n_keep: int,
                         threshold: float = FACE_SCORE_THRESHOLD) -> pd.DataFrame:
    """000's seed filter on a **measured** realism signal (a backend without truth, e.g. the
    DCGAN): no simulated panel and nothing computed from the latent.

    A seed is acceptable iff **every** prototype's ``face_confidence`` (e.g.
    :func:`face_confidence`) is at least ``threshold``; seeds are ranked acceptable first,
    then by ``worst`` = 1 - min confidence (ties by seed), and the first ``n_keep`` kept
    (:func:`measured_seed_filter_rule`). The group question (does the prototype show its
    intended group?) is not asked: without truth or votes there is nothing to answer it.

    Parameters
    ----------
    prototypes : pandas.DataFrame
        One row per candidate prototype: ``seed`` and ``face_confidence`` (in [0, 1]).
    n_keep : int
        Seeds kept (1..number of seeds).
    threshold : float, default :data:`FACE_SCORE_THRESHOLD`
        Least confidence of a realistic prototype, in [0, 1].

    Returns
    -------
    pandas.DataFrame
        One row per seed: ``seed, n_prototypes, min_face_confidence, min_group_match``
        (NaN: not asked), ``realistic, group_ok`` (True: not asked), ``acceptable, worst,
        rank, kept``.

    Raises
    ------
    ValueError
        For a missing column, a confidence outside [0, 1] or NaN, or a bad ``n_keep`` or
        ``threshold``.

    Examples
    --------
    >>> p = pd.DataFrame({"seed": [0, 0, 1, 1, 2, 2], "face_confidence": [0.9, 0.2, 0.9, 0.8, 0.95, 0.7]})
    >>> measured_seed_filter(p, n_keep=2)[["seed", "min_face_confidence", "acceptable", "rank", "kept"]]
       seed  min_face_confidence  acceptable  rank   kept
    0     0                  0.2       False     2  False
    1     1                  0.8        True     0   True
    2     2                  0.7        True     1   True
    """
    require_columns(prototypes, ["seed", "face_confidence"], "prototypes")
    conf = prototypes["face_confidence"].to_numpy(dtype=np.float64)
    if not ((conf >= 0) & (conf <= 1)).all():
        raise ValueError("prototypes: face_confidence must lie in [0, 1] (no NaN)")
    if not 0 <= float(threshold) <= 1:
        raise ValueError(f"threshold: must lie in [0, 1], got {threshold!r}")
    n_seeds = prototypes["seed"].nunique()
    if not 1 <= int(n_keep) <= n_seeds:
        raise ValueError(f"n_keep must lie in 1..{n_seeds} (the seeds), got {n_keep}")
    g = prototypes.groupby("seed", sort=True)["face_confidence"]
    out = pd.DataFrame({"n_prototypes": g.size(), "min_face_confidence": g.min()}).reset_index()
    out["min_group_match"] = np.nan
    out["realistic"] = out["min_face_confidence"] >= float(threshold)
    out["group_ok"] = True
    out["acceptable"] = out["realistic"]
    out["worst"] = 1 - out["min_face_confidence"]
    return _rank_and_keep(out, n_keep)
