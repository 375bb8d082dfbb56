"""Paper 001, the compared label sources (``docs/specs/rapid.md`` section 2): no cleaning
(:func:`naive_labels`), the method on one system alone (:func:`single_best_system_labels`)
and a graph baseline (:func:`connected_components_labels`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.rapid.config import RapidConfig
from facebias.studies.rapid.estimation import estimate, estimate_labels
from facebias.studies.rapid.normalise import normalise_scores
from facebias.studies.rapid.tables import _check_scores_frame
from facebias.validate import require_columns


def _faces_of(scores: pd.DataFrame) -> pd.DataFrame:
    require_columns(scores, ["query", "face_a", "face_b"], "scores")
    f = pd.DataFrame({"query": np.r_[scores["query"].astype(object).to_numpy(),
                                     scores["query"].astype(object).to_numpy()],
                      "face": np.r_[scores["face_a"].to_numpy(), scores["face_b"].to_numpy()]})
    return f.drop_duplicates().sort_values(["query"], kind="stable").reset_index(drop=True)


def naive_labels(scores: pd.DataFrame) -> pd.DataFrame:
    """The "no cleaning" baseline: every face of every query is labelled 1 (the queried
    person).

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores (needs ``query, face_a, face_b``).

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (all 1, int8), one row per distinct (query, face).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> scores = pd.DataFrame({"query": "q0", "face_a": [0, 0, 1], "face_b": [1, 2, 2]})
    >>> naive_labels(scores)["label"].tolist()
    [1, 1, 1]
    """
    f = _faces_of(scores)
    f["label"] = np.int8(1)
    return f


def single_best_system_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                              system: Any = None) -> pd.DataFrame:
    """The method run on one system's scores alone (its own inclusion set, no vote).

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores of every system.
    cfg : RapidConfig, optional
        The method's parameters.
    system : Any, optional
        The system; ``None`` picks, without truth, the system whose own labels (on the
        vote's inclusion set) agree most often with the majority vote.

    Returns
    -------
    pandas.DataFrame
        :func:`estimate_labels` of that system's scores; ``attrs["system"]`` names it.

    Raises
    ------
    ValueError
        If there are no scores for ``system``, or as :func:`estimate`.
    """
    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    if system is None:
        est = estimate(scores, cfg)
        final = np.tile(est.labels["label"].to_numpy(), est.labels.attrs["n_systems"])
        sl = est.system_labels.assign(same=(est.system_labels["label"].to_numpy() == final)
                                      & (final != -1))
        system = sl.groupby("system", sort=True)["same"].sum().idxmax()
    one = scores[scores["system"].astype(object).to_numpy() == system]
    if one.empty:
        raise ValueError(f"single_best_system_labels: no scores for system {system!r}")
    out = estimate_labels(one, cfg)
    out.attrs["system"] = system
    return out


def connected_components_labels(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                                threshold: float = 0.5) -> pd.DataFrame:
    """Graph baseline (spec 2): per query, link faces whose normalised score, averaged over
    the systems that scored the pair, exceeds ``threshold``; the largest connected
    component is labelled 1, the other faces 0. Queries with fewer than
    ``cfg.min_faces_query`` faces, or whose largest component is tied or smaller than
    ``cfg.min_faces_cluster``, get -1.

    Parameters
    ----------
    scores : pandas.DataFrame
        Within-query scores (:data:`SCORE_COLUMNS`).
    cfg : RapidConfig, optional
        Normalisation and the face minimums.
    threshold : float, default 0.5
        Link threshold on the mean normalised score.

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (1/0/-1), ``reason`` ("" if included).

    Raises
    ------
    ValueError
        As :func:`estimate`.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    cfg = cfg or RapidConfig()
    _check_scores_frame(scores)
    norm = normalise_scores(scores, cfg).to_numpy()
    q_codes, q_names = pd.factorize(scores["query"], sort=True)
    f_codes, f_names = pd.factorize(pd.concat([scores["face_a"], scores["face_b"]],
                                              ignore_index=True), sort=False)
    n = len(scores)
    key = np.r_[q_codes, q_codes].astype(np.int64) * len(f_names) + f_codes
    nodes, inv = np.unique(key, return_inverse=True)
    ia, ib = inv[:n], inv[n:]
    pair = np.minimum(ia, ib) * nodes.size + np.maximum(ia, ib)
    pk, pinv = np.unique(pair, return_inverse=True)
    mean = np.bincount(pinv, weights=norm) / np.bincount(pinv)
    edge = (mean > threshold) & (pk // nodes.size != pk % nodes.size)
    a, b = pk[edge] // nodes.size, pk[edge] % nodes.size
    graph = coo_matrix((np.ones(a.size), (a, b)), shape=(nodes.size, nodes.size))
    _, comp = connected_components(graph, directed=False)
    node_q = nodes // len(f_names)
    size = np.bincount(comp)[comp]
    frame = pd.DataFrame({"q": node_q, "comp": comp, "size": size})
    best = frame.groupby("q")["size"].max()
    n_best = frame[frame["size"] == frame["q"].map(best)].groupby("q")["comp"].nunique()
    n_faces = np.bincount(node_q, minlength=len(q_names))
    best_size = best.reindex(range(len(q_names)), fill_value=0).to_numpy()
    ties = n_best.reindex(range(len(q_names)), fill_value=0).to_numpy()
    why = np.full(len(q_names), "", dtype=object)
    why[best_size < cfg.min_faces_cluster] = "small_cluster"
    why[ties > 1] = "tie"
    why[n_faces < cfg.min_faces_query] = "too_few_faces"
    ok = why[node_q] == ""
    label = np.where(ok, (size == best_size[node_q]).astype(np.int8), -1).astype(np.int8)
    return pd.DataFrame({"query": q_names[node_q], "face": f_names[nodes % len(f_names)],
                         "label": label, "reason": why[node_q]})
