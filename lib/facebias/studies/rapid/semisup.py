"""Paper 001, the semi-supervised extension (``docs/specs/rapid.md`` section 1.8; paper
App. G, Fig. S.15): spend a budget of human labels on the excluded and the most ambiguous
faces (:func:`semi_supervised`), and the error left at each budget
(:func:`semi_supervised_curve`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics import DetCurve, det_curve
from facebias.studies.rapid.evaluation import _split, delta_fnmr_by_system, true_pairs, world_pairs
from facebias.studies.rapid.truth import _lookup, true_labels
from facebias.validate import require_columns


def semi_supervised(labels: pd.DataFrame, truth: pd.DataFrame, fraction: float,
                    seed: int = 0) -> pd.DataFrame:
    """Paper App. G (spec 1.8): spend a budget of ``round(fraction x n_faces)`` human labels.

    1. Type-A first: faces with ``label == -1`` get their true label, whole queries at a
       time in a seeded random order (the last one may be partial).
    2. Then Type-B: the most ambiguous remaining faces (smallest ``ambiguity`` =
       ``min_s |z_s - tau|``, ties by the smaller vote margin ``|votes - S/2|``) get
       their true label.

    ``labels``: :func:`estimate_labels` output (``ambiguity``/``votes`` optional: without
    them phase 2 goes in row order). ``truth``: ``query, face, label`` (true 1/0, e.g.
    :func:`true_labels`). At ``fraction = 1`` every label is the true one.

    Parameters
    ----------
    labels : pandas.DataFrame
        Estimated labels.
    truth : pandas.DataFrame
        True labels of every face of ``labels``.
    fraction : float
        Share of faces annotated, in [0, 1].
    seed : int, default 0
        Order of the Type-A queries.

    Returns
    -------
    pandas.DataFrame
        ``labels`` with ``label`` updated and a bool ``annotated`` column.

    Raises
    ------
    ValueError
        For ``fraction`` outside [0, 1], a missing column, duplicate truth keys, or a
        face without a true label.

    Examples
    --------
    >>> labels = pd.DataFrame({"query": "q0", "face": [0, 1, 2, 3], "label": [1, 1, -1, 1]})
    >>> truth = pd.DataFrame({"query": "q0", "face": [0, 1, 2, 3], "label": [1, 1, 1, 0]})
    >>> semi_supervised(labels, truth, 0.25)  # one annotation: the excluded face first
      query  face  label  annotated
    0    q0     0      1      False
    1    q0     1      1      False
    2    q0     2      1       True
    3    q0     3      1      False
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"semi_supervised: fraction must be in [0, 1], got {fraction}")
    require_columns(labels, ["query", "face", "label"], "labels")
    y = _lookup(truth, labels["query"], labels["face"], "truth")
    if (y < 0).any():
        raise ValueError("semi_supervised: truth has no label for some faces of labels")
    out = labels.copy()
    lab = out["label"].to_numpy().astype(np.int8)
    n = lab.size
    budget = int(round(fraction * n))
    rng = np.random.default_rng(seed)
    excluded = np.flatnonzero(lab == -1)
    qcodes = pd.factorize(out["query"])[0]
    qs = np.unique(qcodes[excluded])
    rng.shuffle(qs)
    rank_q = np.empty(qcodes.max() + 1 if n else 0, np.int64)
    rank_q[qs] = np.arange(qs.size)
    phase_a = excluded[np.lexsort((excluded, rank_q[qcodes[excluded]]))]
    rest = np.flatnonzero(lab != -1)
    amb = out["ambiguity"].to_numpy(np.float64) if "ambiguity" in out else np.zeros(n)
    amb = np.where(np.isnan(amb), np.inf, amb)
    if "votes" in out and "ambiguity" in out:
        n_sys = out.attrs.get("n_systems")
        votes = out["votes"].to_numpy(np.float64)
        half = (n_sys if n_sys else max(votes.max(initial=0), 1)) / 2
        margin = np.abs(votes - half)
    else:
        margin = np.zeros(n)
    phase_b = rest[np.lexsort((rest, margin[rest], amb[rest]))]
    chosen = np.r_[phase_a, phase_b][:budget]
    annotated = np.zeros(n, bool)
    annotated[chosen] = True
    lab[chosen] = y[chosen]
    out["label"] = lab
    out["annotated"] = annotated
    return out


def semi_supervised_curve(world: Any, labels: pd.DataFrame, fractions: Sequence[float],
                          fmr: float = 0.01, seed: int = 0, true: pd.DataFrame | None = None,
                          ) -> tuple[pd.DataFrame, dict[float, dict[Any, DetCurve]]]:
    """App. G / Fig. S.15: the error left after annotating a fraction of the faces.

    For each ``f`` in ``fractions``: :func:`semi_supervised` labels (``labels`` = the
    method's :func:`estimate_labels` output, the world's true labels, budget ``f``,
    ``seed``), then ``|FNMR_est - FNMR_true|`` at ``fmr`` per system. Returns ``(table,
    curves)``: ``table`` indexed by ``"fraction annotated"`` with one column per system;
    ``curves[f][system]``: the pooled DET curve (raw scores) of the labels at ``f`` (systems
    with no genuine or no impostor pair left out). At ``f = 0`` the labels are ``labels``;
    at ``f = 1`` every label is the true one, so the error is 0 wherever it is defined.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``.
    labels : pandas.DataFrame
        The method's :func:`estimate_labels` output.
    fractions : sequence of float
        Annotated fractions, in [0, 1].
    fmr : float, default 0.01
        Target FMR.
    seed : int, default 0
        Seed of :func:`semi_supervised`.
    true : pandas.DataFrame, optional
        The true pairs; computed when ``None``.

    Returns
    -------
    table : pandas.DataFrame
        ``|FNMR_est - FNMR_true|``, rows fractions, columns systems.
    curves : dict
        Fraction -> system -> pooled DET curve.

    Raises
    ------
    ValueError
        As :func:`semi_supervised` and :func:`fnmr_table`.
    """
    if true is None:
        true = true_pairs(world.faces, world.scores, world.cross_scores)
    truth = true_labels(world.faces)
    rows, curves = {}, {}
    for f in fractions:
        p_f = world_pairs(world, semi_supervised(labels, truth, f, seed=seed))
        rows[f] = delta_fnmr_by_system(p_f, true, [fmr])[fmr]
        curves[f] = {s: det_curve(gen, imp) for s, _, gen, imp in _split(p_f, by_group=False)
                     if gen.size and imp.size}
    table = pd.DataFrame(rows).T
    table.index.name = "fraction annotated"
    return table, curves
