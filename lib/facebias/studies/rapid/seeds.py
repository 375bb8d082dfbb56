"""Paper 001 (rapid test) over world seeds: label estimation, FNMR errors, ranking, per-group
EER and the bias test on the rapid-test world rebuilt under each seed, with the notebook's
own calls (:func:`facebias.studies.seeds.over_seeds`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd

from facebias.studies.seeds import over_seeds

__all__ = ["RAPID_TABLES", "rapid_seed_table"]


#: The tables of :func:`rapid_seed_table`.
RAPID_TABLES = ("labels", "fnmr", "ranking", "eer", "bias", "bias_recovery", "voting")


def _rapid_bias_rows(world_cfg: Any, est_pairs: pd.DataFrame, true_pairs: pd.DataFrame, fmr: float,
                     experiment: Any, which: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    from facebias.studies import rapid as R

    b_est = R.group_bias(est_pairs, fmr, n_boot=experiment.bias_boot, seed=experiment.bias_seed)
    b_true = R.group_bias(true_pairs, fmr, n_boot=experiment.bias_boot, seed=experiment.bias_seed)
    cols = ["system", "group", "metric"]
    m = b_est[[*cols, "value", "flagged"]].merge(b_true[[*cols, "value", "flagged"]], on=cols,
                                                suffixes=("_est", "_true"))
    planted = {(str(s), str(g)) for s, per in world_cfg.bias.items() for g, f in per.items() if float(f) != 1.0}
    m.insert(0, "world", which)
    m["planted"] = [(str(s), str(g)) in planted for s, g in zip(m["system"], m["group"], strict=True)]
    m["flagged_est"] = m["flagged_est"].astype(bool)
    m["flagged_true"] = m["flagged_true"].astype(bool)
    rec = R.bias_recovery(b_est, b_true)[["system", "metric", "worst_est", "worst_true", "order_agree",
                                          "flags_agree"]]
    rec.insert(0, "world", which)
    return m, rec


def _rapid_one(seed: int, world: Mapping[str, Any], method: Any, experiment: Any, null_world: bool,
               voting: bool) -> dict[str, pd.DataFrame]:
    """Paper 001's statistics on the rapid world under ``seed``: the calls of
    ``notebooks/rapid.py`` for its committed world."""
    from facebias.studies import rapid as R
    from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world

    fmrs = list(experiment.fmr)
    cfg = RapidWorldConfig.from_params({**world, "seed": seed})
    w = make_rapid_world(cfg)
    est = R.estimate(w.scores, method, fit_scores=w.cross_scores)
    truth = R.true_pairs(w.faces, w.scores, w.cross_scores)
    est_pairs = R.world_pairs(w, est.labels)
    naive_pairs = R.world_pairs(w, R.naive_labels(w.scores))
    oracle_pairs = R.world_pairs(w, R.oracle_labels(est.labels, w.faces))
    agree = R.label_agreement(est.labels, w.faces)
    labels = pd.DataFrame([{"queries_included": float(est.queries["included"].mean()), **agree}])

    keys = ["system", "group", "fmr"]
    d_est = R.delta_fnmr(est_pairs, truth, fmrs)  # = delta_fnmr_by_system's numbers, with both FNMRs
    fnmr = d_est[keys + ["fnmr_true", "fnmr_est"]].assign(est_minus_true=d_est["fnmr_est"] - d_est["fnmr_true"],
                                                           delta=d_est["delta"])
    for name, a, b in (("naive", naive_pairs, truth), ("type_a", oracle_pairs, truth),
                       ("type_b", est_pairs, oracle_pairs)):
        d = R.delta_fnmr(a, b, fmrs)[keys + ["fnmr_est", "delta"]]
        d = d.rename(columns={"delta": f"delta_{name}", "fnmr_est": f"fnmr_{name}"})
        if name == "type_b":
            d = d.drop(columns="fnmr_type_b")
        fnmr = fnmr.merge(d, on=keys, how="outer")
    fnmr = (fnmr.rename(columns={"fnmr_type_a": "fnmr_oracle"}).drop(columns="group")
            .assign(fmr=lambda t: [f"{f:g}" for f in t["fmr"]]).sort_values(["system", "fmr"], ignore_index=True))

    ranking = pd.DataFrame([{"fmr": f"{fmrs[0]:g}", "kendall_tau": R.ranking_agreement(est_pairs, truth, fmrs[0])}])
    eer = R.eer_comparison(est_pairs, truth)[["system", "group", "eer_est", "eer_true", "delta"]]

    bias, rec = _rapid_bias_rows(cfg, est_pairs, truth, fmrs[0], experiment, "planted")
    if null_world:
        ncfg = dataclasses.replace(cfg, bias={})
        nw = make_rapid_world(ncfg)
        nest = R.estimate(nw.scores, method, fit_scores=nw.cross_scores)
        nb, nrec = _rapid_bias_rows(ncfg, R.world_pairs(nw, nest.labels),
                                    R.true_pairs(nw.faces, nw.scores, nw.cross_scores), fmrs[0], experiment, "null")
        bias, rec = pd.concat([bias, nb], ignore_index=True), pd.concat([rec, nrec], ignore_index=True)
    out = {"labels": labels, "fnmr": fnmr, "ranking": ranking, "eer": eer, "bias": bias, "bias_recovery": rec}
    if voting:
        ab = R.voting_ablation(w, est, method, fmrs[0], true=truth)
        ab.columns = ["single system" if str(c).startswith("single system") else str(c) for c in ab.columns]
        out["voting"] = (ab.rename_axis(index="system").reset_index()
                         .melt(id_vars="system", var_name="source", value_name="delta")
                         .assign(fmr=f"{fmrs[0]:g}")[["system", "source", "fmr", "delta"]])
    return out


def rapid_seed_table(world_params: Mapping[str, Any], method: Any, experiment: Any, seeds: Sequence[int],
                     compute: Any = None, null_world: bool = True, voting: bool = True) -> dict[str, pd.DataFrame]:
    """Paper 001's statistics on the rapid known-truth world under each seed, with the calls
    ``notebooks/rapid.py`` makes for its committed world (so the sweep's row of that
    seed holds the notebook's numbers).

    Parameters
    ----------
    world_params : mapping
        The ``rapid_world`` section (:class:`facebias.worlds.rapid.RapidWorldConfig`
        fields; its ``seed`` is replaced by each seed).
    method : facebias.studies.rapid.RapidConfig
        The method.
    experiment : facebias.studies.rapid.RapidExperimentConfig
        Its ``fmr`` grid (the first is the headline: ranking, bias test and voting read
        it), ``bias_boot`` and ``bias_seed``.
    seeds : sequence of int
    compute : optional
        Where to run (:func:`over_seeds`).
    null_world : bool, default True
        Also run the bias test on the same world without its planted bias (``bias: {}``,
        same seed): it should flag nothing.
    voting : bool, default True
        Also the voting ablation (Fig. S.7, :func:`~facebias.studies.rapid.voting_ablation`).

    Returns
    -------
    dict
        Each with a leading ``seed`` column (rates and shares are fractions, NaN where
        undefined):

        - ``labels``: ``queries_included`` and the
          :func:`~facebias.studies.rapid.label_agreement` keys (``agreement`` is on the
          included faces);
        - ``fnmr``: per system and FMR (text key, ``f"{fmr:g}"``; pooled groups):
          ``fnmr_true`` (true labels, all queries), ``fnmr_est``, ``est_minus_true``,
          ``delta`` (= ``|fnmr_est - fnmr_true|``, the notebook's ``d_method``),
          ``fnmr_naive``, ``delta_naive``, ``fnmr_oracle`` (true labels on the included
          faces), ``delta_type_a`` (oracle vs true) and ``delta_type_b`` (estimate vs oracle);
        - ``ranking``: ``fmr``, ``kendall_tau`` (:func:`~facebias.studies.rapid.ranking_agreement`);
        - ``eer``: per system and group (and ``"all"``): ``eer_est``, ``eer_true``, ``delta``
          (:func:`~facebias.studies.rapid.eer_comparison`);
        - ``bias``: per world (``planted``, and ``null`` with ``null_world``), system, group
          and metric (``eer``; ``fnmr`` at the first FMR): ``value_est``, ``value_true``,
          ``flagged_est``, ``flagged_true`` (:func:`~facebias.studies.rapid.group_bias`'s
          system-specific test) and ``planted`` (the world plants a bias in that cell);
        - ``bias_recovery``: per world, system and metric,
          :func:`~facebias.studies.rapid.bias_recovery`'s ``worst_est, worst_true,
          order_agree, flags_agree``;
        - ``voting`` (with ``voting``): per system and label source (``majority vote``,
          ``own labels (no MV)``, ``single system``, ``connected components``, ``naive``):
          ``fmr``, ``delta`` = |ΔFNMR| at the first FMR.

    Examples
    --------
    >>> from facebias.studies.rapid import RapidConfig, RapidExperimentConfig
    >>> small = {"queries_per_group": 4, "faces_min": 10, "faces_max": 14, "bias": {"sys_a": {"AF": 2.0}}}
    >>> t = rapid_seed_table(small, RapidConfig(), RapidExperimentConfig(fmr=(0.1,), bias_boot=2), [1, 2],
    ...                      "serial", null_world=False, voting=False)
    >>> sorted(t), t["labels"]["seed"].tolist()
    (['bias', 'bias_recovery', 'eer', 'fnmr', 'labels', 'ranking'], [1, 2])
    """
    fn = partial(_rapid_one, world=dict(world_params), method=method, experiment=experiment,
                 null_world=bool(null_world), voting=bool(voting))
    return over_seeds(fn, seeds, compute, desc="rapid world seeds")
