"""Paper 001 on the known-truth world (``docs/specs/rapid.md`` sections 1.9 and 5 #22): what
``notebooks/rapid.py`` reports, as functions of a world. ``world``: anything with
``faces``, ``scores`` and ``cross_scores`` (:class:`facebias.worlds.rapid.RapidWorld`).

The voting ablation (Fig. S.7, :func:`voting_ablation`); the p sweep (:func:`sweep_point`,
:func:`p_sweep`, :func:`sweep_by_p`) and where the method stops beating the naive labels
(:func:`breakdown_p`); the query composition (Fig. S.6, :func:`query_counts`), the method
on subsets of the systems (Fig. S.13, :func:`system_subsets`) and a system's model change
(Fig. S.14, :func:`model_change`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.rapid.baselines import (
    connected_components_labels,
    naive_labels,
    single_best_system_labels,
)
from facebias.studies.rapid.config import RapidConfig
from facebias.studies.rapid.estimation import RapidEstimate, estimate
from facebias.studies.rapid.evaluation import (
    delta_fnmr_by_system,
    fnmr_table,
    genuine_impostor_pairs,
    true_pairs,
    world_pairs,
)
from facebias.studies.rapid.truth import label_agreement, true_labels
from facebias.validate import require_columns


def voting_ablation(world: Any, est: RapidEstimate, cfg: RapidConfig | None = None,
                    fmr: float = 0.01, true: pd.DataFrame | None = None) -> pd.DataFrame:
    """Fig. S.7: ``|FNMR_est - FNMR_true|`` at ``fmr`` per system (rows) for five label
    sources (columns, in this order):

    * ``"majority vote"``: the method's labels (``est.labels``);
    * ``"own labels (no MV)"``: each system's own labels on the vote's inclusion set
      (``est.system_labels``), scored on that system's pairs only;
    * ``"single system (<name>)"``: :func:`single_best_system_labels` (the method run on
      the best-separated system alone, chosen without truth);
    * ``"connected components"``: :func:`connected_components_labels`;
    * ``"naive"``: :func:`naive_labels`.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``.
    est : RapidEstimate
        :func:`estimate` of ``world.scores`` with ``cfg``.
    cfg : RapidConfig, optional
        The method's parameters.
    fmr : float, default 0.01
        Target FMR.
    true : pandas.DataFrame, optional
        The true pairs (:func:`true_pairs` of the world; computed when ``None``).

    Returns
    -------
    pandas.DataFrame
        Rows systems, columns the five label sources; fractions.

    Raises
    ------
    ValueError
        As :func:`estimate` and :func:`fnmr_table`.
    """
    cfg = cfg or RapidConfig()
    if true is None:
        true = true_pairs(world.faces, world.scores, world.cross_scores)

    def delta(labels: pd.DataFrame, system: Any = None) -> pd.Series:
        t = true if system is None else true.loc[true["system"] == system]
        return delta_fnmr_by_system(world_pairs(world, labels, system), t, [fmr])[fmr]

    sl = est.system_labels
    own = {s: delta(sl.loc[sl["system"] == s, ["query", "face", "label"]], s).loc[s]
           for s in pd.unique(sl["system"])}
    single = single_best_system_labels(world.scores, cfg)
    return pd.DataFrame({
        "majority vote": delta(est.labels),
        "own labels (no MV)": pd.Series(own, dtype=np.float64),
        f"single system ({single.attrs['system']})": delta(single),
        "connected components": delta(connected_components_labels(world.scores, cfg)),
        "naive": delta(naive_labels(world.scores)),
    })


def sweep_point(world: Any, cfg: RapidConfig | None = None,
                fmr: Sequence[float] = (0.01, 0.001)) -> dict[str, float]:
    """One point of the p sweep: the method on ``world`` (GMM also fit on the cross pairs).

    Keys: ``agreement``, ``type_a``, ``type_b`` (:func:`label_agreement`),
    ``queries_included`` (share of queries kept), and per FMR ``f``:
    ``method_worst@f`` / ``method_mean@f`` (the largest / mean ``|FNMR_est - FNMR_true|``
    over the systems) and ``naive_min@f`` (the smallest over systems with the naive
    labels). A statistic over systems skips NaN systems and is NaN if all are NaN.

    Parameters
    ----------
    world : Any
        Anything with ``faces``, ``scores`` and ``cross_scores``.
    cfg : RapidConfig, optional
        The method's parameters.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs.

    Returns
    -------
    dict of str to float
        The keys above; shares and |ΔFNMR| are fractions.

    Raises
    ------
    ValueError
        As :func:`estimate` and :func:`fnmr_table`.
    """
    e = estimate(world.scores, cfg, fit_scores=world.cross_scores)
    tp = true_pairs(world.faces, world.scores, world.cross_scores)
    a = label_agreement(e.labels, world.faces)
    dm = delta_fnmr_by_system(world_pairs(world, e.labels), tp, fmr)
    dn = delta_fnmr_by_system(world_pairs(world, naive_labels(world.scores)), tp, fmr)
    return {"agreement": a["agreement"], "queries_included": float(e.queries["included"].mean()),
            "type_a": a["type_a"], "type_b": a["type_b"],
            **{f"method_worst@{f:g}": float(dm[f].max()) for f in fmr},
            **{f"method_mean@{f:g}": float(dm[f].mean()) for f in fmr},
            **{f"naive_min@{f:g}": float(dn[f].min()) for f in fmr}}


def p_sweep(make_world: Any, p_values: Sequence[float], seeds: Sequence[int],
            cfg: RapidConfig | None = None, fmr: Sequence[float] = (0.01, 0.001)) -> pd.DataFrame:
    """:func:`sweep_point` for every ``p`` in ``p_values`` and ``seed`` in ``seeds``, on
    ``make_world(p, seed)`` (e.g. ``make_rapid_world`` of a config with that ``p`` and
    ``seed``).

    Parameters
    ----------
    make_world : callable
        ``(p, seed)`` -> a world.
    p_values : sequence of float
        Shares of a query's faces that show the queried person.
    seeds : sequence of int
        World seeds per ``p``.
    cfg : RapidConfig, optional
        The method's parameters.
    fmr : sequence of float, default (0.01, 0.001)
        Target FMRs.

    Returns
    -------
    pandas.DataFrame
        One row per (p, seed): ``p, seed`` then the :func:`sweep_point` keys.
    """
    return pd.DataFrame([{"p": p, "seed": seed, **sweep_point(make_world(p, seed), cfg, fmr)}
                         for p in p_values for seed in seeds])


def sweep_by_p(sweep: pd.DataFrame) -> pd.DataFrame:
    """The :func:`p_sweep` table averaged over seeds.

    Parameters
    ----------
    sweep : pandas.DataFrame
        :func:`p_sweep` rows (needs ``p``).

    Returns
    -------
    pandas.DataFrame
        One row per ``p`` (the index, ascending), the mean of every other column except
        ``seed`` (NaN skipped).

    Raises
    ------
    ValueError
        For a missing ``p`` column.

    Examples
    --------
    >>> sweep = pd.DataFrame({"p": [0.3, 0.3, 0.7], "seed": [1, 2, 1],
    ...                       "method_worst@0.01": [0.2, 0.3, 0.01]})
    >>> sweep_by_p(sweep)
         method_worst@0.01
    p
    0.3               0.25
    0.7               0.01
    """
    require_columns(sweep, ["p"], "sweep")
    return sweep.drop(columns="seed", errors="ignore").groupby("p").mean()


def breakdown_p(sweep: pd.DataFrame, fmr: float = 0.01) -> float | None:
    """Where the method breaks in a p sweep: the **largest** swept ``p`` at which its curve
    error is no better than the naive labels', or ``None`` if there is none.

    ``sweep``: :func:`p_sweep` rows (several seeds per ``p`` are averaged first, as in
    :func:`sweep_by_p`) with columns ``p``, ``method_worst@<fmr>`` and
    ``naive_min@<fmr>`` (``<fmr>`` formatted ``{:g}``). The method is *broken* at ``p`` iff

        mean over seeds of max_s |dFNMR_method(s)|  >=  mean over seeds of min_s |dFNMR_naive(s)|

    at ``fmr``: its worst system's curve is at least as far from the truth as the naive
    labels' best. A ``p`` where either number is NaN (too few pairs) is not judged. So the
    method beats the naive labels at every judged ``p`` above the returned value; a break
    below a working ``p`` still counts (the largest broken ``p`` is returned).

    Parameters
    ----------
    sweep : pandas.DataFrame
        :func:`p_sweep` rows.
    fmr : float, default 0.01
        The FMR whose columns are compared.

    Returns
    -------
    float or None
        The largest broken ``p`` (a fraction), or ``None``.

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> sweep = pd.DataFrame({"p": [0.3, 0.3, 0.5, 0.7], "seed": [1, 2, 1, 1],
    ...                       "method_worst@0.01": [0.2, 0.3, 0.05, 0.01],
    ...                       "naive_min@0.01": [0.2, 0.2, 0.3, 0.2]})
    >>> breakdown_p(sweep)  # at p = 0.3 the method (0.25) is no better than naive (0.2)
    0.3
    """
    worst, naive = f"method_worst@{fmr:g}", f"naive_min@{fmr:g}"
    require_columns(sweep, ["p", worst, naive], "sweep")
    by_p = sweep_by_p(sweep[["p", worst, naive]])
    broken = by_p.index[(by_p[worst] >= by_p[naive]).to_numpy()]  # NaN compares False
    return float(broken.max()) if len(broken) else None


def query_counts(labels: pd.DataFrame, faces: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """Per query, the true and the estimated number and share of faces of the queried
    person, and whether the query was included (Fig. S.6).

    Parameters
    ----------
    labels : pandas.DataFrame
        The method's labels ``query, face, label`` (1, 0, -1 = excluded).
    faces : pandas.DataFrame
        ``query, face, is_target`` (the world's truth, or a human annotation).
    queries : pandas.DataFrame
        :attr:`RapidEstimate.queries` (``query, included``).

    Returns
    -------
    pandas.DataFrame
        One row per query of ``faces``: ``query, n_faces, n_true, share_true, n_est``
        (faces labelled 1; 0 for an excluded query), ``included`` (bool).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> faces = pd.DataFrame({"query": ["a"] * 3 + ["b"] * 2, "face": [0, 1, 2, 3, 4],
    ...                       "is_target": [True, True, False, True, False]})
    >>> labels = pd.DataFrame({"query": ["a"] * 3 + ["b"] * 2, "face": [0, 1, 2, 3, 4],
    ...                        "label": [1, 1, 1, -1, -1]})
    >>> queries = pd.DataFrame({"query": ["a", "b"], "included": [True, False]})
    >>> query_counts(labels, faces, queries)
      query  n_faces  n_true  share_true  n_est  included
    0     a        3       2    0.666667      3      True
    1     b        2       1    0.500000      0     False
    """
    require_columns(labels, ["query", "face", "label"], "labels")
    require_columns(faces, ["query", "face", "is_target"], "faces")
    require_columns(queries, ["query", "included"], "queries")
    f = faces.astype({"query": str}).groupby("query", sort=True)["is_target"].agg(["size", "sum"])
    est = (labels.astype({"query": str}).assign(one=lambda d: d["label"] == 1)
           .groupby("query", sort=True)["one"].sum())
    inc = queries.astype({"query": str}).set_index("query")["included"]
    out = pd.DataFrame({"query": f.index, "n_faces": f["size"].to_numpy(),
                        "n_true": f["sum"].to_numpy().astype(int)})
    out["share_true"] = out["n_true"] / out["n_faces"]
    out["n_est"] = est.reindex(out["query"]).fillna(0).astype(int).to_numpy()
    out["included"] = inc.reindex(out["query"]).fillna(False).astype(bool).to_numpy()
    return out


def system_subsets(world: Any, cfg: RapidConfig | None = None, fmr: Sequence[float] = (0.01, 0.001),
                   sizes: Sequence[int] = (3, 4, 5), true: pd.DataFrame | None = None) -> pd.DataFrame:
    """The method run on each subset of the systems (Fig. S.13): which systems vote changes
    every system's |ΔFNMR|.

    Parameters
    ----------
    world : Any
        ``faces, scores, cross_scores`` (:class:`facebias.worlds.rapid.RapidWorld`).
    cfg : RapidConfig, optional
        The method (default ``RapidConfig()``).
    fmr : sequence of float, default (0.01, 0.001)
        FMRs at which |ΔFNMR| is read.
    sizes : sequence of int, default (3, 4, 5)
        Subset sizes (each in 1 .. number of systems).
    true : pandas.DataFrame, optional
        :func:`true_pairs` of the world (computed when not given).

    Returns
    -------
    pandas.DataFrame
        One row per subset and member system: ``subset`` ("+"-joined names), ``size``,
        ``system``, ``queries_included`` and one column per FMR (|ΔFNMR|, fractions).

    Raises
    ------
    ValueError
        For a size outside 1 .. number of systems, or as :func:`estimate`.
    """
    from itertools import combinations

    names = sorted(pd.unique(world.scores["system"]).tolist())
    if any(not 1 <= int(k) <= len(names) for k in sizes):
        raise ValueError(f"sizes must be in 1..{len(names)}, got {list(sizes)}")
    true = true_pairs(world.faces, world.scores, world.cross_scores) if true is None else true
    rows = []
    for k in sizes:
        for sub in combinations(names, int(k)):
            s = world.scores[world.scores["system"].isin(sub)]
            c = world.cross_scores[world.cross_scores["system"].isin(sub)]
            est = estimate(s, cfg, fit_scores=c)
            pairs = genuine_impostor_pairs(est.labels, world.faces, s, c)
            d = delta_fnmr_by_system(pairs, true[true["system"].isin(sub)], fmr)
            for sys_name in sub:
                rows.append({"subset": "+".join(sub), "size": int(k), "system": sys_name,
                             "queries_included": float(est.queries["included"].mean()),
                             **{f: float(d.loc[sys_name, f]) for f in d.columns}})
    return pd.DataFrame(rows)


def model_change(world_before: Any, world_after: Any, system: Any, cfg: RapidConfig | None = None,
                 fmr: Sequence[float] = (0.01, 0.001)) -> pd.DataFrame:
    """A system's model replaced on the same images (Fig. S.14): its FNMR before and after,
    estimated by the method on each world and from the truth.

    Parameters
    ----------
    world_before, world_after : Any
        Two worlds with the same faces whose ``system`` scores differ (e.g. the noise of that
        system changed; :func:`facebias.worlds.rapid.make_rapid_world` with the same seed).
    system : Any
        The changed system.
    cfg : RapidConfig, optional
        The method.
    fmr : sequence of float, default (0.01, 0.001)
        FMRs.

    Returns
    -------
    pandas.DataFrame
        One row per FMR: ``fmr, est_before, est_after, true_before, true_after,
        est_change, true_change`` (after − before; negative = the model improved;
        fractions).

    Raises
    ------
    ValueError
        If the worlds' faces differ, or as :func:`estimate`.
    """
    if not world_before.faces.equals(world_after.faces):
        raise ValueError("model_change: both worlds must hold the same faces")
    out = {}
    for when, w in (("before", world_before), ("after", world_after)):
        est = estimate(w.scores, cfg, fit_scores=w.cross_scores)
        for kind, pairs in (("est", world_pairs(w, est.labels, system)),
                            ("true", genuine_impostor_pairs(true_labels(w.faces), w.faces,
                                                            w.scores[w.scores["system"] == system],
                                                            w.cross_scores[w.cross_scores["system"] == system]))):
            t = fnmr_table(pairs, fmr, by_group=False)
            out[f"{kind}_{when}"] = t.set_index("fmr")["fnmr"]
    res = pd.DataFrame(out).rename_axis("fmr").reset_index()
    res["est_change"] = res["est_after"] - res["est_before"]
    res["true_change"] = res["true_after"] - res["true_before"]
    return res
