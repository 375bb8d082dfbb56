"""The headline files (the DVC metrics): shared columns read from each study's details, by hand."""

from __future__ import annotations

import json
import math

import pytest

from facebias import schema
from facebias.studies import headlines as H


def _coef(c: float) -> dict:
    return {"coef": c, "sd": 0.1, "significant": True}


def test_every_study_has_a_headline_and_the_schema_knows_its_columns():
    assert set(H.DEFINITIONS) == set(schema.STUDIES)
    assert set(schema.SCHEMAS["headline"].optional) == set(H.COLUMNS)
    for kind, (meaning, _) in H.DEFINITIONS.items():
        assert set(meaning) <= set(H.COLUMNS), kind


def test_bfw_reads_the_first_system_at_the_smallest_fmr():
    dev = {"global": {"0.01": 20.0, "0.001": 79.4}, "group": {"0.01": 1.0, "0.001": 7.65}}
    d = {"overview": {"systems": {"b": {"max_abs_fmr_dev_pct": dev},
                                  "a": {"max_abs_fmr_dev_pct": {"global": {"0.001": 1.0}, "group": {"0.001": 0.5}}}}}}
    assert H.headline("bfw", d) == {"fmr": 0.001, "bias": 79.4, "bias_after": 7.65}


def test_bfw_headline_is_the_mean_over_world_seeds():
    """With a seed sweep, bias is the mean over seeds of each seed's worst |deviation| at the
    headline FAR; a seed with an unresolved subgroup is left out of the mean, not counted as 0."""
    dev = {"global": {"0.001": 79.4}, "group": {"0.001": 7.65}}
    rows = [(1, "global", "AF", 100.0), (1, "global", "WM", -50.0), (2, "global", "AF", 20.0),
            (2, "global", "WM", -60.0), (3, "global", "AF", None), (3, "global", "WM", 1.0),
            (1, "group", "AF", 2.0), (1, "group", "WM", -4.0), (2, "group", "AF", 6.0), (2, "group", "WM", 1.0),
            (3, "group", "AF", 3.0), (3, "group", "WM", 1.0)]
    seeds = {"world_seeds": [1, 2, 3], "system": "a",
             "fmr_dev_pct": [{"seed": s, "system": "a", "policy": p, "fmr": "0.001", "group": g, "dev_pct": v}
                             for s, p, g, v in rows]}
    assert H.bfw_seed_worst(seeds, "global", "0.001") == [100.0, 60.0, None]
    d = {"overview": {"systems": {"a": {"max_abs_fmr_dev_pct": dev}}}, "seeds": seeds}
    assert H.headline("bfw", d) == pytest.approx({"fmr": 0.001, "bias": 80.0, "bias_after": (4 + 6 + 3) / 3})


def test_batest_means_over_races():
    o = {"gap_genuine": {"original": {"A": 0.02, "B": 0.04}, "balanced_nfh": {"A": 0.05, "B": 0.03}},
         "planted_gap_genuine": {"A": 0.04, "B": 0.04}, "gap_rel_error_mean": {"balanced_nfh": 0.06}}
    assert H.headline("batest", {"overview": o}) == pytest.approx(
        {"bias": 0.03, "bias_after": 0.04, "planted": 0.04, "truth_error": 0.06})


def test_gan_drift_is_the_median_over_every_resolved_cell():
    """No cell is picked: the median |drift| over the cells whose raw interval excludes 0
    (raw_resolved), hand-computed; unresolved and non-finite cells are left out."""
    d = {"orthogonality_max_error": 1e-15,
         "drift": [{"drift_raw": 0.26, "drift_orthogonal": -0.03, "raw_resolved": True},
                   {"drift_raw": -0.55, "drift_orthogonal": 0.05, "raw_resolved": True},
                   {"drift_raw": 0.40, "drift_orthogonal": 0.66, "raw_resolved": True},
                   {"drift_raw": 3.0, "drift_orthogonal": 3.0, "raw_resolved": False},
                   {"drift_raw": float("nan"), "drift_orthogonal": 9.0, "raw_resolved": True},
                   {"drift_raw": None, "drift_orthogonal": 9.0, "raw_resolved": True}]}
    assert H.headline("synthetic_faces_dcgan", d) == {"bias": 0.40, "bias_after": 0.05}
    # no resolved finite drift at all: the columns are left out, not invented
    assert H.headline("synthetic_faces_dcgan", {**d, "drift": d["drift"][3:]}) == {}


def test_transects_coefficients_and_shares_of_checks():
    d = {"headline": {"planted": {"experimental": {"hair_long": _coef(-0.93)}}},
         "planted_recovered": {"planted": {"a": True, "b": False, "c": True, "d": True}}}
    assert H.headline("transects", d) == {"bias": -0.93, "recovered": 0.75}
    g = {"headline": {"shortcut CNN": {"experimental": {"light_incongruent": _coef(1.07), "light_high": _coef(-0.1),
                                                        "tone_dark": _coef(0.0), "gender_male": _coef(-1.8)}},
                      "SFace probe": {"experimental": {"light_incongruent": _coef(0.2)}}},
         "planted_recovered": {"shortcut CNN": {"experimental_shortcut_significant_planted_sign": True,
                                                "observational_with_shortcut_reduces_tone": True,
                                                # reported, not planted: never counted as recovered
                                                "experimental_tone_ci_covers_0": False,
                                                "observational_with_shortcut_tone_ci_covers_0": False},
                               "SFace probe": {"experimental_shortcut_significant_planted_sign": False}}}
    assert H.headline("transects_dcgan", g) == {"bias": 1.07, "recovered": 1.0}


def test_shortcut_planted_flags_are_flags_the_study_writes():
    from facebias.studies.transects import shortcut_recovered

    coef = {"coef": 1.0, "significant": True}
    row = {"light_incongruent": coef, "tone_dark": coef}
    flags = shortcut_recovered({"experimental": row, "experimental_clusters": row, "observational": row,
                                "observational_with_shortcut": row}, "light", 0.8)
    assert set(H.SHORTCUT_PLANTED_FLAGS) < set(flags)
    assert {"experimental_tone_ci_covers_0", "observational_with_shortcut_tone_ci_covers_0"} == \
        set(flags) - set(H.SHORTCUT_PLANTED_FLAGS)


def test_hcic_and_rapid():
    h = {"fmr_target": 0.01, "similarity_by_relation": {"sface": {"ordered": True}, "toy": {"ordered": False}},
         "fnmr_at_fmr_intended_labels": {"sface": {"WM": {"fnmr": 0.5}},
                                         "toy": {"WM": {"fnmr": 0.02}, "BF": {"fnmr": 0.11}, "AM": {"fnmr": None}}}}
    out = H.headline("hcic", h)
    # the similarity ordering of real models is a measurement, not a planted truth: no recovered
    assert out == pytest.approx({"fmr": 0.01, "bias": 0.09})
    r = {"delta_fnmr": {"0.001": {"a": 0.5}, "0.01": {"a": 0.008, "b": 0.002}},
         "bias": {"recovery": {"eer": {"a": {"flags_agree": True}, "b": {"flags_agree": False}},
                               "fnmr": {"a": {"flags_agree": True}, "b": {"flags_agree": True}}}}}
    assert H.headline("rapid", r) == {"fmr": 0.01, "truth_error": 0.008, "recovered": 0.75}


def test_rapid_headline_is_the_mean_over_world_seeds():
    """With a seed sweep: truth_error is the mean over seeds of each seed's worst |dFNMR| at the
    headline FMR; recovered pools the planted world's flags over seeds (never the null world's)."""
    r = {"delta_fnmr": {"0.001": {"a": 0.5}, "0.01": {"a": 0.008}}, "bias": {"recovery": {}},
         "seeds": {"world_seeds": [1, 2],
                   "fnmr": [{"seed": 1, "system": "a", "fmr": "0.01", "delta": 0.01},
                            {"seed": 1, "system": "b", "fmr": "0.01", "delta": 0.03},
                            {"seed": 1, "system": "a", "fmr": "0.001", "delta": 0.9},
                            {"seed": 2, "system": "a", "fmr": "0.01", "delta": 0.01},
                            {"seed": 2, "system": "b", "fmr": "0.01", "delta": None}],
                   "bias_recovery": [{"seed": 1, "world": "planted", "system": "a", "metric": "eer", "flags_agree": True},
                                     {"seed": 2, "world": "planted", "system": "a", "metric": "eer",
                                      "flags_agree": False},
                                     {"seed": 1, "world": "null", "system": "a", "metric": "eer",
                                      "flags_agree": False}]}}
    assert H.headline("rapid", r) == pytest.approx({"fmr": 0.01, "truth_error": 0.02, "recovered": 0.5})


def test_write_study_metrics_writes_details_and_a_checked_headline(tmp_path):
    details = {"orthogonality_max_error": 1e-15, "drift": [{"drift_raw": float("inf"), "drift_orthogonal": 0.0}]}
    with pytest.raises(schema.MetricsSchemaError, match="synthetic_faces_dcgan_details"):
        H.write_study_metrics(tmp_path, "synthetic_faces_dcgan", details, "synthetic_faces_dcgan")
    assert not list(tmp_path.iterdir())  # nothing written for a broken details dict
    o = {"hair_transect_gender_range": {"raw": 0.46, "orthogonal": 0.009}, "orthogonality_max_error": 1e-15,
         "source": "s", "n_transect_images": 8, "n_hcic_images": 4, "pairs": {}}
    full = {"paper": "004", "provenance": "p", "summary": {}, "normal_cosines": {}, "transect_check": {}}
    d, h = H.write_study_metrics(tmp_path, "synthetic_faces", full, "synthetic_faces", overview=o)
    assert json.loads(d.read_text())["overview"] == o and d.name == "synthetic_faces_details.json"
    assert json.loads(h.read_text()) == {"bias": 0.46, "bias_after": 0.009}
    assert schema.kind_of(h) == "headline" and schema.kind_of(d) == "synthetic_faces_details"


def test_unknown_kind_and_non_finite_values():
    with pytest.raises(KeyError, match="known"):
        H.headline("nope", {})
    out = H.headline("synthetic_faces", {"overview": {"hair_transect_gender_range": {"raw": math.nan, "orthogonal": 0.1},
                                                "orthogonality_max_error": 0.0}})
    assert out == {"bias_after": 0.1}


def test_unfitted_coefficients_and_undecided_checks_are_left_out():
    """A smoke-scale run can leave a coefficient unfitted (None) or a check undecided (None):
    the column is absent, never 0, and the share counts decided checks only."""
    d = {"headline": {"shortcut CNN": {"experimental": None}},
         "planted_recovered": {"shortcut CNN": {"experimental_shortcut_significant_planted_sign": True,
                                                "observational_with_shortcut_reduces_tone": None,
                                                "observational_tone_significant_confounded_sign": False}}}
    assert H.headline("transects_dcgan", d) == {"recovered": 0.5}
    t = {"headline": {"planted": {"experimental": {"hair_long": None}}}, "planted_recovered": {"planted": {"a": None}}}
    assert H.headline("transects", t) == {}
    o = {"gap_genuine": {"original": {"A": None, "B": 0.02}, "balanced_nfh": {}},
         "planted_gap_genuine": {"A": 0.04}, "gap_rel_error_mean": {"balanced_nfh": None}}
    assert H.headline("batest", {"overview": o}) == {"bias": 0.02, "planted": 0.04}


def test_bfw_far_skips_unresolved_rates_nan_in_memory_or_null_on_disk():
    nan = float("nan")
    for missing in (None, nan):
        dev = {"global": {"0.01": 20.0, "0.001": missing}, "group": {"0.01": 1.0, "0.001": 7.0}}
        assert H.bfw_headline_far(dev) == "0.01"
        assert H.headline("bfw", {"overview": {"systems": {"s": {"max_abs_fmr_dev_pct": dev}}}}) == {
            "fmr": 0.01, "bias": 20.0, "bias_after": 1.0}
        dev["group"]["0.01"] = missing
        assert H.bfw_headline_far(dev) is None
        assert H.headline("bfw", {"overview": {"systems": {"s": {"max_abs_fmr_dev_pct": dev}}}}) == {}
