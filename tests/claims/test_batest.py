"""Paper 003's claims (facebias.claims.batest): the registry's structure, and each verdict
flipping with the metrics (small fake batest_details files written through the schema)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from metrics_fixtures import valid as _valid

from facebias.claims import Kind, NotComparable, Order, Sign, Within, evaluate, evaluate_all
from facebias.claims.batest import _PUB, _T4_MEAN, CLAIMS, FILE
from facebias.io import load_params
from facebias.worlds.batest import BAWorldConfig

ROOT = Path(__file__).resolve().parents[2]


RACES = ("Asian", "Black", "Indian", "White")
GROUPS = tuple(r[0] + g for r in RACES for g in "FM")
SEEDS = [3003, 3004, 3005]
BY_KEY = {c.key: c for c in CLAIMS}
#: params.yaml sections whose keys are the fields of a config class (any field may be set there)
SECTION_CONFIGS = {"batest_world": BAWorldConfig}


# ------------------------------------------------------------------ fake metrics, through the schema
def valid(partial: dict) -> dict:
    """``partial`` completed to this file's schema (tests/metrics_fixtures.py)."""
    return _valid(FILE, partial)


def t1_ok(seed, kind, cond, race):
    return _PUB[(kind, cond, race)]["rom_pct"]


def t3_ok(seed, s, fmr, g):
    if g == "WM":
        return fmr
    return fmr * (2.0 if s == "unfiltered" else 1.5) * (1.5 if g.endswith("F") else 1.0)


def t4_ok(seed, g):
    return _T4_MEAN[g] / 100


def _world(t1=t1_ok, t3=t3_ok, t4=t4_ok, face=((0.36, 0.38), (0.365, 0.375)), seeds=SEEDS, with_seeds=True) -> dict:
    """batest_details with a seed sweep. Defaults agree with every claim: Table 1 = the paper's
    own changes; Table 3: filtering lowers every non-WM group's FMR (females 1.5x males, so
    the F - M gap shrinks too), all above WM's; Table 4 = the paper's five-matcher means; face
    area (F, M) means before and after with the M - F difference shrinking."""
    (bf, bm), (af, am) = face
    d = {"face_area": [{"set": s, "race": r[0], "mean_F": f, "mean_M": m, "gap": m - f}
                       for s, (f, m) in (("before", (bf, bm)), ("after", (af, am))) for r in RACES]}
    if with_seeds:
        d["seeds"] = {
            "world_seeds": list(seeds), "world_seeds_tables34": list(seeds),
            "table1_pct": [{"seed": s, "kind": k, "condition": c, "race": r, "rom_pct": t1(s, k, c, r)}
                           for s in seeds for k in ("genuine", "impostor") for c in ("balanced", "balanced_nfh")
                           for r in (*RACES, "all")],
            "table3": [{"seed": s, "group": g, "set": st, "fmr": f, "fmr_at_ref": t3(s, st, f, g)}
                       for s in seeds for st in ("unfiltered", "filtered", "filtered_iou") for f in (1e-3, 1e-4)
                       for g in GROUPS],
            "table4": [{"seed": s, "group": g, "tpr": t4(s, g)} for s in seeds for g in GROUPS]}
    return valid(d)


def _write(tmp_path: Path, details: dict) -> Path:
    d = tmp_path / "metrics"
    d.mkdir(exist_ok=True)
    (d / FILE).write_text(json.dumps(details))
    return d


def _verdicts(tmp_path: Path, details: dict) -> dict[str, tuple[str, str]]:
    return {r.claim.key: (r.verdict, r.detail) for r in evaluate_all(CLAIMS, _write(tmp_path, details))}


FLIPPED = dict(
    t1=lambda seed, kind, cond, race: -_PUB[(kind, cond, race)]["rom_pct"],
    # every non-WM group below WM, filtering raises FMR and widens the F - M gap
    t3=lambda seed, s, fmr, g: fmr * (1.0 if g == "WM" else (0.5 if s == "unfiltered" else 0.9) if g.endswith("F")
                                      else (0.6 if s == "unfiltered" else 0.7)),
    t4=lambda seed, g: 1 - _T4_MEAN[g] / 100,
    face=((0.38, 0.36), (0.39, 0.35)))


# ------------------------------------------------------------------ the registry
def test_registry_structure():
    keys = [c.key for c in CLAIMS]
    assert len(keys) == len(set(keys))
    for c in CLAIMS:
        assert c.key.startswith("batest.") and c.paper == "003" and c.files == (FILE,)
        assert "superscript" not in c.quote and "\\" not in c.quote  # no extraction markup in a quote
        assert c.quote == " ".join(c.quote.split())
        if isinstance(c.rule, Order):
            assert set(c.rule.order) <= set(c.paper_values)


def test_calibrated_keys_are_params():
    """Every calibrated key is a dotted params.yaml path, or a field of the config class of a
    section that takes any of its fields (then the code default is what was calibrated)."""
    params = load_params(ROOT / "params.yaml")
    named = {k for c in CLAIMS for k in c.calibrated}
    assert named, "the NFH claims are calibrated"
    for key in named:
        section, *path = key.split(".")
        assert section in params, key
        node, found = params[section], True
        for part in path:
            if not isinstance(node, dict) or part not in node:
                found = False
                break
            node = node[part]
        if not found:
            cls = SECTION_CONFIGS[section]
            assert path[0] in {f.name for f in dataclasses.fields(cls)}, key
            assert len(path) == 1 or path[1] in getattr(cls(), path[0]), key
    assert all(c.kind is Kind.CALIBRATED for c in CLAIMS if c.calibrated)


def test_paper_values_cover_every_compared_cell(tmp_path):
    """A rule that compares with the paper has the paper's value for every cell we measure."""
    for r in evaluate_all(CLAIMS, _write(tmp_path, _world())):
        rule = r.claim.rule
        if isinstance(rule, Within) or (isinstance(rule, Sign) and rule.expected is None):
            assert set(r.measured.cells) <= set(r.claim.paper_values), r.claim.key
            assert all(math.isfinite(v) for v in r.claim.paper_values.values()), r.claim.key


def test_paper_values_from_the_table():
    c = BY_KEY["batest.table1_genuine_balanced"]
    assert c.paper_values["Asian"] == pytest.approx(-45.30, abs=0.01)
    assert c.paper_values["Indian"] == pytest.approx(0.31, abs=0.01)      # the "slight increase"
    assert c.paper_values["all races (pooled)"] == pytest.approx(-24.11, abs=0.01)
    nfh = BY_KEY["batest.table1_genuine_nfh_magnitude"].paper_values
    assert nfh == pytest.approx({"Black": 115.64, "Indian": 75.03}, abs=0.01)
    assert "Asian" not in BY_KEY["batest.table1_impostor_balanced"].paper_values  # matcher-dependent
    gaps = BY_KEY["batest.table4_males_higher"].paper_values
    assert gaps == pytest.approx({"Asian": 11.554, "Black": 1.4, "Indian": 0.51, "White": 5.956}, abs=1e-3)
    assert "17 of its 20" in BY_KEY["batest.table4_males_higher"].statistic


# ------------------------------------------------------------------ verdicts flip with the data
def test_agreeing_world_agrees(tmp_path):
    v = _verdicts(tmp_path, _world())
    for key, (verdict, detail) in v.items():
        expected = "not comparable" if isinstance(BY_KEY[key].rule, NotComparable) else "agrees"
        assert verdict == expected, (key, verdict, detail)
    assert v["batest.table1_genuine_balanced"][1] == "15 of 15 cell-seeds; every cell in 3 of 3 seeds"
    assert v["batest.table4_gender_gap_order"][1] == "3 of 3 seeds"
    assert v["batest.face_area_males_larger"][1] == "4 of 4 cells"     # one draw


def t3_gap_wider(seed, s, fmr, g):
    """Filtering widens every race's F - M gap (females move away from their males, WM fixed)."""
    if g.endswith("M"):
        return fmr * (1.0 if g == "WM" else 2.0)
    return fmr * (1.5 if g == "WF" else 2.5) * (1.0 if s == "unfiltered" else 1.4)


def test_flipped_world_disagrees(tmp_path):
    v = _verdicts(tmp_path, _world(**FLIPPED))
    # White's F - M gap cannot widen while WF rises towards WM below it: that claim flips alone
    gap = _verdicts(tmp_path, _world(t3=t3_gap_wider))["batest.table3_gender_gap"]
    v["batest.table3_gender_gap"] = gap
    for key, (verdict, detail) in v.items():
        expected = "not comparable" if isinstance(BY_KEY[key].rule, NotComparable) else "disagrees"
        assert verdict == expected, (key, verdict, detail)


def test_mixed_world_is_partly(tmp_path):
    def t1(seed, kind, cond, race):  # seed 3005: Indian genuine balanced goes the wrong way
        v = t1_ok(seed, kind, cond, race)
        return -v if (seed, kind, cond, race) == (3005, "genuine", "balanced", "Indian") else v

    def t4(seed, g):  # seed 3004: the flipped world (every Table 4 check fails there)
        return FLIPPED["t4"](seed, g) if seed == 3004 else t4_ok(seed, g)

    v = _verdicts(tmp_path, _world(t1=t1, t4=t4))
    assert v["batest.table1_genuine_balanced"] == ("partly", "14 of 15 cell-seeds; every cell in 2 of 3 seeds")
    assert v["batest.table1_genuine_nfh"][0] == "agrees"
    assert v["batest.table4_gender_gap_order"] == ("partly", "2 of 3 seeds")
    assert v["batest.table4_males_higher"] == ("partly", "8 of 12 cell-seeds; every cell in 2 of 3 seeds")
    assert v["batest.table4_worst_best_group"] == ("partly", "4 of 6 cell-seeds; every cell in 2 of 3 seeds")


def test_nan_cells_are_unresolved(tmp_path):
    nan = float("nan")
    v = _verdicts(tmp_path, _world(t1=lambda *a: None, t3=lambda *a: nan, t4=lambda *a: nan, face=((nan,) * 2,) * 2))
    for key, (verdict, detail) in v.items():
        expected = "not comparable" if isinstance(BY_KEY[key].rule, NotComparable) else "unresolved"
        assert verdict == expected, (key, verdict, detail)
    assert v["batest.table1_genuine_balanced"][1] == "15 checks unresolved"


def test_some_nan_cells_leave_the_rest_decided(tmp_path):
    """A NaN in one seed's reference group leaves that seed's Table 3 cells unresolved."""
    def t3(seed, s, fmr, g):
        return float("nan") if (seed, g) == (3003, "WM") else t3_ok(seed, s, fmr, g)

    r = evaluate(BY_KEY["batest.table3_above_reference"], _write(tmp_path, _world(t3=t3)))
    assert r.verdict == "agrees"
    assert r.detail.endswith("42 checks unresolved")  # 3 sets x 2 FMRs x 7 groups in seed 3003


def test_without_seeds_the_sweep_claims_are_unresolved(tmp_path):
    """An older file without ``seeds``: the claims require the sweep (no fallback to one draw)."""
    v = _verdicts(tmp_path, _world(with_seeds=False))
    for key, (verdict, _) in v.items():
        if key.startswith("batest.face_area"):
            assert verdict == "agrees"
        elif not isinstance(BY_KEY[key].rule, NotComparable):
            assert verdict == "unresolved", key


def test_missing_file_is_not_run(tmp_path):
    (tmp_path / "metrics").mkdir()
    assert {r.verdict for r in evaluate_all(CLAIMS, tmp_path / "metrics")} == {"not run"}


def test_reads_are_declared_and_recorded(tmp_path):
    r = evaluate(BY_KEY["batest.table3_filtering_lowers_fmr"], _write(tmp_path, _world()))
    assert f"{FILE}:seeds/table3" in r.reads and f"{FILE}:seeds/world_seeds_tables34" in r.reads
    assert r.measured.seeds == tuple(SEEDS)
    assert list(r.measured.cells)[:2] == ["AF @ FMR 0.001", "AM @ FMR 0.001"]
    assert len(r.measured.cells) == 14
