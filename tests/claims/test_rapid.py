"""Paper 001's claims as data (facebias.claims.rapid) and the rapid world over seeds
(facebias.studies.rapid.seeds.rapid_seed_table)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from metrics_fixtures import valid as _valid

from facebias.claims import Kind, NotComparable, evaluate
from facebias.claims.rapid import CLAIMS, FILE
from facebias.schema import SCHEMAS

ROOT = Path(__file__).resolve().parents[2]


SYSTEMS = ("sys_a", "sys_b", "sys_c")
GROUPS = ("AF", "AM", "BF", "BM")
PLANTED = ("sys_a", "AF")
BY_KEY = {c.key: c for c in CLAIMS}
#: claims read from the committed world only (one draw), the rest over world seeds
SINGLE = {"rapid.partial_annotation", "rapid.model_change", "rapid.web_search_range",
          "rapid.weakest_service_subsets", "rapid.error_sources"}
COMPARABLE = {c.key for c in CLAIMS if not isinstance(c.rule, NotComparable)}


# --------------------------------------------------------------------------- fake metrics
def valid(partial: dict) -> dict:
    """``partial`` completed to this file's schema (tests/metrics_fixtures.py)."""
    return _valid(FILE, partial)


def _eer_true(s: str, g: str) -> float:
    return 0.06 if (s, g) == PLANTED else 0.004 * (1 + SYSTEMS.index(s)) * (1 + GROUPS.index(g) / 4)


def _seed_records(seed: int, q: str) -> dict[str, list[dict]]:
    """One seed's tables; q = good (every claim holds), bad (every claim fails) or none
    (unresolved values)."""
    good, none = q == "good", q == "none"

    def v(x_good, x_bad):
        return None if none else x_good if good else x_bad

    out: dict[str, list[dict]] = {
        "labels": [{"seed": seed, "agreement": v(0.996, 0.9), "queries_included": 0.85}],
        "ranking": [{"seed": seed, "fmr": "0.01", "kendall_tau": v(1.0, 0.4)}],
        "fnmr": [{"seed": seed, "system": s, "fmr": f, "delta": v(d, 10 * d), "est_minus_true": v(-d, 10 * d),
                  "delta_naive": 0.4}
                 for s in SYSTEMS for f, d in (("0.01", 0.005), ("0.001", 0.01))],
        "eer": [], "bias": [], "bias_recovery": [],
        "voting": [{"seed": seed, "system": s, "source": src, "fmr": "0.01", "delta": v(dg, db)}
                   for s in SYSTEMS for src, dg, db in (("majority vote", 0.005, 0.005),
                                                        ("own labels (no MV)", 0.01, 0.003))],
    }
    for s in SYSTEMS:
        for g in (*GROUPS, "all"):
            t = _eer_true(s, g) if g != "all" else 0.01
            # good: constant absolute error (relative error larger where EER is small);
            # bad: relative error growing with the EER, 0.036 on the planted cell
            out["eer"].append({"seed": seed, "system": s, "group": g, "eer_true": None if none else t,
                               "eer_est": v(t + 0.002, t * (1 + 10 * t))})
    # unresolved seeds keep their rows, with unresolved flags
    for world in ("planted", "null"):
        for s in SYSTEMS:
            for g in GROUPS:
                for metric in ("eer", "fnmr"):
                    planted = world == "planted" and (s, g) == PLANTED
                    flag = None if none else planted if good else (not planted and (s, g) == ("sys_b", "BM"))
                    out["bias"].append({"seed": seed, "world": world, "system": s, "group": g, "metric": metric,
                                        "value_est": 0.01, "value_true": 0.01, "flagged_est": flag,
                                        "flagged_true": planted, "planted": planted})
                out["bias_recovery"].append({"seed": seed, "world": world, "system": s, "metric": "eer",
                                             "flags_agree": None if none else good})
    return out


def _single(q: str) -> dict:
    """The committed-world entries; q = good, bad, mixed (one cell fails) or none."""
    def v(x_good, x_bad, first=True):
        return None if q == "none" else x_good if q == "good" or (q == "mixed" and not first) else x_bad

    return {
        "semi_supervised": {"p": 0.5, "fmr": 0.01, "delta_mean": {"0": 0.04, "0.5": v(0.005, 0.03), "1": 0.0}},
        "model_change": {"system": "sys_a", "0.01": {"est_change": v(-0.05, 0.01)},
                         "0.001": {"est_change": v(-0.07, 0.02, first=False)}},
        "p_sweep": [{"p": p, "method_worst@0.01": v(0.01, 0.5, first=p == 0.3), "naive_min@0.01": 0.3}
                    for p in (0.3, 0.5, 0.7, 0.9)],
        "breakdown": {"p": None, "fmr": 0.01, "agreement": None},
        "subsets": {"fmr": 0.01, "mean_delta_by_size": {"3": 0.006, "4": 0.005, "5": 0.005},
                    "max_delta_by_size": {"3": 0.015, "4": 0.01, "5": 0.007}},
        "delta_fnmr_type_a": {"0.01": {s: 0.01 for s in SYSTEMS}},
        "delta_fnmr_type_b": {"0.01": {s: 0.007 for s in SYSTEMS}},
    }


def fake(quality: dict[int, str] | None, single: str = "good") -> dict:
    """A rapid_details dict: per world seed its quality (None: no ``seeds`` entry)."""
    d = {"paper": "001", "provenance": "backend: simulated world (test)", **_single(single)}
    if quality is not None:
        tables: dict[str, list[dict]] = {}
        for s, q in quality.items():
            for k, recs in _seed_records(s, q).items():
                tables.setdefault(k, []).extend(recs)
        d["seeds"] = {"world_seeds": list(quality), "fmr": ["0.01", "0.001"], **tables}
    return valid(d)


def verdicts(tmp_path: Path, metrics: dict) -> dict[str, tuple[str, str]]:
    (tmp_path / FILE).write_text(json.dumps(metrics))
    out = {}
    for c in CLAIMS:
        r = evaluate(c, tmp_path)
        out[c.key] = (r.verdict, r.detail)
    return out


# --------------------------------------------------------------------------- verdicts
def test_every_claim_agrees_on_a_good_world(tmp_path):
    v = verdicts(tmp_path, fake({1: "good", 2: "good", 3: "good"}))
    assert {k: x[0] for k, x in v.items() if k in COMPARABLE} == dict.fromkeys(COMPARABLE, "agrees")
    assert {k: x[0] for k, x in v.items() if k not in COMPARABLE} == dict.fromkeys(
        set(BY_KEY) - COMPARABLE, "not comparable")
    assert v["rapid.ranking"][1] == "3 of 3 seeds"
    assert v["rapid.fnmr_close"][1].startswith("9 of 9 cell-seeds")  # 3 systems x 3 seeds


def test_every_claim_disagrees_on_a_bad_world(tmp_path):
    v = verdicts(tmp_path, fake({1: "bad", 2: "bad"}, single="bad"))
    assert {k: x[0] for k, x in v.items() if k in COMPARABLE} == dict.fromkeys(COMPARABLE, "disagrees")


def test_partly_names_the_seeds_that_hold(tmp_path):
    v = verdicts(tmp_path, fake({1: "good", 2: "bad", 3: "good"}, single="mixed"))
    one_cell = {"rapid.partial_annotation"}  # a single check cannot hold partly
    assert {k: x[0] for k, x in v.items() if k in COMPARABLE - one_cell} == dict.fromkeys(
        COMPARABLE - one_cell, "partly")
    assert v["rapid.partial_annotation"][0] == "disagrees"
    assert v["rapid.ranking"][1] == "2 of 3 seeds"
    assert v["rapid.label_agreement"][1] == "2 of 3 seeds"
    assert v["rapid.bias_detected"][1] == "2 of 3 seeds"
    # two cells (planted world's other cells, null world) per seed
    assert v["rapid.bias_no_false_flags"][1] == "4 of 6 cell-seeds; every cell in 2 of 3 seeds"
    assert v["rapid.web_search_range"][1] == "2 of 3 cells"  # p in [0.2, 0.8]; p = 0.3 fails; one draw
    assert v["rapid.model_change"][1] == "1 of 2 cells"


def test_unresolved_values_give_unresolved(tmp_path):
    v = verdicts(tmp_path, fake({1: "none", 2: "none"}, single="none"))
    assert {k: x[0] for k, x in v.items() if k in COMPARABLE} == dict.fromkeys(COMPARABLE, "unresolved")


def test_an_unresolved_seed_is_counted_apart(tmp_path):
    v = verdicts(tmp_path, fake({1: "good", 2: "none"}))
    assert v["rapid.ranking"] == ("agrees", "1 of 1 seeds; 1 check unresolved")
    assert v["rapid.bias_detected"] == ("agrees", "1 of 1 seeds; 1 check unresolved")


def test_without_seeds_the_seed_claims_are_unresolved(tmp_path):
    v = verdicts(tmp_path, fake(None))
    for k in COMPARABLE - SINGLE:
        assert v[k] == ("unresolved", "nothing measured"), k
    for k in COMPARABLE & SINGLE:
        assert v[k][0] == "agrees", k


def test_a_missing_file_is_not_run(tmp_path):
    for c in CLAIMS:
        assert evaluate(c, tmp_path).verdict == "not run"


def test_cells_carry_every_seed(tmp_path):
    (tmp_path / FILE).write_text(json.dumps(fake({1: "good", 2: "bad"})))
    r = evaluate(BY_KEY["rapid.fnmr_close"], tmp_path)
    assert r.measured.seeds == (1, 2)
    assert r.measured.cells == {s: [0.005, 0.05] for s in SYSTEMS}
    assert all(x.startswith(f"{FILE}:seeds/") for x in r.reads)
    r = evaluate(BY_KEY["rapid.fnmr_close_low_fmr"], tmp_path)
    assert r.measured.cells == {s: [0.01, 0.1] for s in SYSTEMS}
    r = evaluate(BY_KEY["rapid.bias_detected"], tmp_path)
    assert r.measured.cells == {"sys_a/AF (EER)": [1.0, 0.0]}


# --------------------------------------------------------------------------- structure
def _params_key(params: dict, dotted: str) -> bool:
    node = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_registry_structure():
    keys = [c.key for c in CLAIMS]
    assert len(keys) == len(set(keys))
    assert all(k.startswith("rapid.") for k in keys)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for c in CLAIMS:
        assert c.paper == "001" and c.files == (FILE,) and c.backend == "main"
        assert isinstance(c.kind, Kind)
        assert c.quote == c.quote.strip() and len(c.quote) > 30
        for k in c.calibrated:
            assert _params_key(params, k), f"{c.key}: {k} is not in params.yaml"
        for text in (c.quote, c.where, c.statistic, c.evidence):
            assert "/work/" not in text and "/tmp" not in text
        c.rule.describe()
    assert not any(c.kind is Kind.CALIBRATED for c in CLAIMS)  # no world parameter was tuned to a paper number


def test_the_claims_read_only_declared_paths():
    """Every seeds table the claims read is declared in the rapid_details schema."""
    schema = SCHEMAS["rapid_details"]
    for path in ("seeds/world_seeds", "seeds/labels", "seeds/fnmr", "seeds/ranking", "seeds/eer", "seeds/bias",
                 "seeds/voting"):
        assert schema._declared(path), path


# --------------------------------------------------------------------------- the seed sweep
# tiny worlds leave some per-group bootstrap cells empty
TINY_WARNINGS = pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning",
                                           "ignore:Degrees of freedom:RuntimeWarning")
TINY = {"queries_per_group": 5, "faces_min": 10, "faces_max": 15, "bias": {"sys_a": {"AF": 2.0}}}


@pytest.fixture(scope="module")
def tiny():
    from facebias.studies.rapid import RapidConfig, RapidExperimentConfig
    from facebias.studies.rapid.seeds import rapid_seed_table

    method, experiment = RapidConfig(), RapidExperimentConfig(fmr=(0.1, 0.05), bias_boot=4)
    run = [rapid_seed_table(TINY, method, experiment, [1001, 1002], "serial") for _ in range(2)]
    return method, experiment, run


@TINY_WARNINGS
def test_rapid_seed_table_is_deterministic(tiny):
    from facebias.studies.rapid.seeds import RAPID_TABLES

    _, _, (a, b) = tiny
    assert sorted(a) == sorted(RAPID_TABLES)
    for k in a:
        assert a[k]["seed"].unique().tolist() == [1001, 1002], k
        pd.testing.assert_frame_equal(a[k], b[k])


@TINY_WARNINGS
def test_rapid_seed_table_seed_0_is_the_notebooks_computation(tiny):
    """The sweep's first seed holds what notebooks/rapid.py computes for that world."""
    from facebias.studies import rapid as R
    from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world

    method, experiment, (t, _) = tiny
    fmrs = list(experiment.fmr)
    cfg = RapidWorldConfig.from_params({**TINY, "seed": 1001})
    world = make_rapid_world(cfg)
    est = R.estimate(world.scores, method, fit_scores=world.cross_scores)
    truth = R.true_pairs(world.faces, world.scores, world.cross_scores)
    est_pairs = R.world_pairs(world, est.labels)
    s0 = {k: v[v["seed"] == 1001] for k, v in t.items()}

    agree = R.label_agreement(est.labels, world.faces)
    assert s0["labels"]["agreement"].iloc[0] == agree["agreement"]
    assert s0["labels"]["queries_included"].iloc[0] == est.queries["included"].mean()
    keys = [f"{f:g}" for f in fmrs]
    for col, labels in (("delta", est.labels), ("delta_naive", R.naive_labels(world.scores))):
        want = R.delta_fnmr_by_system(R.world_pairs(world, labels), truth, fmrs)
        got = s0["fnmr"].pivot(index="system", columns="fmr", values=col)[keys]
        np.testing.assert_array_equal(got.to_numpy(float), want[fmrs].to_numpy(float))
    tau = R.ranking_agreement(est_pairs, truth, fmrs[0])
    np.testing.assert_array_equal(s0["ranking"]["kendall_tau"].to_numpy(float), [tau])
    eer = R.eer_comparison(est_pairs, truth)
    np.testing.assert_array_equal(s0["eer"][["eer_est", "eer_true"]].to_numpy(float),
                                  eer[["eer_est", "eer_true"]].to_numpy(float))
    b_est = R.group_bias(est_pairs, fmrs[0], n_boot=experiment.bias_boot, seed=experiment.bias_seed)
    b_true = R.group_bias(truth, fmrs[0], n_boot=experiment.bias_boot, seed=experiment.bias_seed)
    summary = R.bias_summary(b_est, b_true, fmrs[0], cfg.bias)
    planted = s0["bias"][s0["bias"]["world"] == "planted"]
    assert sorted(f"{r.system}/{r.group}/{r.metric}" for r in planted.itertuples() if r.flagged_est) == \
        sorted(summary["flagged_est"])
    assert sorted(f"{r.system}/{r.group}/{r.metric}" for r in planted.itertuples() if r.flagged_true) == \
        sorted(summary["flagged_true"])
    assert planted.loc[planted["planted"], ["system", "group"]].drop_duplicates().values.tolist() == [list(PLANTED)]
    null = s0["bias"][s0["bias"]["world"] == "null"]
    assert len(null) == len(planted) and not null["planted"].any()
    ablation = R.voting_ablation(world, est, method, fmrs[0], true=truth)
    got = s0["voting"].pivot(index="system", columns="source", values="delta")
    for col in ("majority vote", "own labels (no MV)", "connected components", "naive"):
        np.testing.assert_array_equal(got[col].to_numpy(float), ablation[col].to_numpy(float))
