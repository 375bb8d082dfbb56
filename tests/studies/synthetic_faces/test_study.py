"""facebias.studies.synthetic_faces: the numbers of the two generation notebooks (papers 004 and
000: notebooks/synthetic_faces.py and synthetic_faces_dcgan.py), on hand-made tables, a planted leak in a
linear latent space, and the metrics schemas they are written under."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from facebias import latent
from facebias.generate.checks import target_table
from facebias.generate.hyperplanes import Hyperplanes
from facebias.schema import check_metrics
from facebias.studies import synthetic_faces as S


# --------------------------------------------------------------------------- procedural pieces
def test_normal_cosines_hand_case_and_bad_input():
    s = np.sqrt(0.5)
    cos = S.normal_cosines(np.array([[1.0, 0.0], [s, s], [0.0, -1.0]]), ["a", "b", "c"])
    assert list(cos.index) == list(cos.columns) == ["a", "b", "c"]
    assert cos.to_numpy() == pytest.approx(np.array([[1, s, 0], [s, 1, -s], [0, -s, 1]]), abs=1e-15)
    with pytest.raises(ValueError, match="row 'b' has length 2"):
        S.normal_cosines(np.array([[1.0, 0.0], [0.0, 2.0]]), ["a", "b"])
    with pytest.raises(ValueError, match="1 names for 2 normals"):
        S.normal_cosines(np.eye(2), ["a"])


def test_transect_range_planted_leak_vs_orthogonalised():
    """A linear latent space where the true gender is a decision value: a hair transect on the
    raw hair normal moves gender by cos(hair, gender) per unit step (planted leak); along the
    orthogonalised direction it does not move at all (null)."""
    rng = np.random.default_rng(0)
    normals = rng.standard_normal((3, 16))
    normals[1] = 0.6 * normals[0] / np.linalg.norm(normals[0]) + 0.8 * normals[1] / np.linalg.norm(normals[1])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)  # 0 = gender, 1 = hair
    z0, steps = rng.standard_normal(16), np.linspace(-2.0, 2.0, 6)
    gender = lambda z: z @ normals[0]  # noqa: E731 - the planted truth
    raw = gender(z0 + steps[:, None] * normals[1])
    orth = gender(z0 + steps[:, None] * latent.orthogonalize(normals)[1])
    got = S.transect_range(raw=raw, orthogonal=orth)
    assert list(got) == ["raw", "orthogonal"]  # the order the metrics file keeps
    assert got["raw"] == pytest.approx(4.0 * normals[0] @ normals[1], abs=1e-12)
    assert got["raw"] > 1.0 and got["orthogonal"] < 1e-12
    assert S.transect_range([0.1, 0.5, 0.3], [0.2])["raw"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="orthogonal: expected a non-empty 1-D array"):
        S.transect_range([0.1], [np.nan])
    with pytest.raises(ValueError, match="raw: expected a non-empty 1-D array"):
        S.transect_range([], [0.1])


def test_transect_check_recovers_the_intended_levels():
    rng = np.random.default_rng(1)
    idx = np.tile([0, 1], 50)
    images = pd.DataFrame({"skin_tone_idx": idx, "true_skin_tone": 0.2 + 0.6 * idx + rng.normal(0, 0.01, 100),
                           "gender_idx": np.repeat([0, 1], 50), "true_gender": np.repeat([0.1, 0.9], 50)})
    check = S.transect_check(images, ["skin_tone", "gender"])
    assert list(check) == ["skin_tone", "gender"]
    assert check["skin_tone"].to_numpy() == pytest.approx([0.2, 0.8], abs=0.01)
    assert check["gender"].to_dict() == pytest.approx({0: 0.1, 1: 0.9})
    direct = images.groupby("skin_tone_idx")["true_skin_tone"].mean()
    pd.testing.assert_series_equal(check["skin_tone"], direct)
    with pytest.raises(ValueError, match="true_age"):
        S.transect_check(images.assign(age_idx=0), ["age"])
    with pytest.raises(ValueError, match="no transect axes"):
        S.transect_check(images, [])


def test_pair_counts_hand_case():
    images = pd.DataFrame({"is_prototype": [True, False, False, True, False]})
    pairs = pd.DataFrame({"label": [1, 1, 1, 0, 0], "is_self_pair": [True, False, False, False, False]})
    got = S.pair_counts(images, pairs)
    assert got == {"prototypes": 2, "images": 5, "positive": 3, "negative": 2, "self_pairs": 1}
    assert all(type(v) is int for v in got.values())  # JSON-ready
    with pytest.raises(ValueError, match="is_self_pair"):
        S.pair_counts(images, pairs.drop(columns="is_self_pair"))


def test_acceptance_metrics_keeps_the_scalar_metrics_in_order():
    report = {"n_identities": 8, "render_ids_per_s": 120.0, "detect_rate": 1.0, "per_model": {"sface": 0.9},
              "sface_auc": np.float64(0.97), "scores": np.zeros(3), "gender_spearman": 0.85}
    assert list(S.acceptance_metrics(report)) == ["n_identities", "detect_rate", "sface_auc", "gender_spearman"]


def _procedural_inputs(acceptance):
    images = pd.DataFrame({"skin_tone_idx": [0, 1, 0, 1], "true_skin_tone": [0.1, 0.9, 0.3, 0.7]})
    hcic = pd.DataFrame({"is_prototype": [True, False, False]})
    pairs = pd.DataFrame({"label": [1, 0], "is_self_pair": [True, False]})
    normals = latent.check_hyperplanes([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0]])[0]
    return dict(backend="procedural", provenance="backend: procedural generator",
                summary=pd.Series({"backend": "procedural", "n_transects": 2}), transect_images=images,
                hcic_images=hcic, counts=S.pair_counts(hcic, pairs),
                orthogonality_error=latent.orthogonality_error(normals),
                gender_range=S.transect_range([0.2, 0.6], [0.4, 0.4]),
                cosines=S.normal_cosines(normals, ["gender", "hair_length"]),
                check=S.transect_check(images, ["skin_tone"]), acceptance=acceptance)


def test_summarise_procedural_builds_both_files_under_their_schemas():
    report = {"n_identities": 8, "render_ids_per_s": 50.0, "detect_rate": 1.0, "gender_spearman_transect_pooled": 0.7}
    head, details = S.summarise_procedural(**_procedural_inputs(report))
    assert list(head) == ["source", "n_transect_images", "n_hcic_images", "pairs", "orthogonality_max_error",
                          "hair_transect_gender_range", "acceptance"]
    assert head["source"] == "synthetic (procedural generator)"
    assert (head["n_transect_images"], head["n_hcic_images"]) == (4, 3)
    assert head["pairs"] == {"prototypes": 1, "images": 3, "positive": 1, "negative": 1, "self_pairs": 1}
    assert head["orthogonality_max_error"] < 1e-12
    assert head["hair_transect_gender_range"] == pytest.approx({"raw": 0.4, "orthogonal": 0.0})
    assert head["acceptance"] == {"n_identities": 8, "detect_rate": 1.0, "gender_spearman_transect_pooled": 0.7}
    assert details["paper"] == ["004", "000"] and details["summary"] == {"backend": "procedural", "n_transects": 2}
    assert details["normal_cosines"] == {"gender": {"gender": 1.0, "hair_length": 0.6},
                                         "hair_length": {"gender": 0.6, "hair_length": 1.0}}
    assert details["transect_check"] == {"skin_tone": {0: pytest.approx(0.2), 1: pytest.approx(0.8)}}
    check_metrics({**details, "overview": head}, "synthetic_faces_details")  # as write_study_metrics stores it
    json.dumps(head, allow_nan=False), json.dumps(details, allow_nan=False)


def test_summarise_procedural_without_the_real_model_checks():
    """synthetic_faces.check_models: false runs no acceptance report: no acceptance key, and the
    file still meets its schema (acceptance is optional; its paths apply when present)."""
    head, details = S.summarise_procedural(**_procedural_inputs(None))
    assert "acceptance" not in head
    check_metrics({**details, "overview": head}, "synthetic_faces_details")
    with pytest.raises(ValueError, match=r"missing \['overview/acceptance/gender_spearman_transect_pooled'\]"):
        check_metrics({**details, "overview": {**head, "acceptance": {"detect_rate": 1.0}}}, "synthetic_faces_details")


# --------------------------------------------------------------------------- a backend without truth
def test_labeller_spearman_hand_case_and_scipy():
    a = np.arange(10.0)
    labels = pd.DataFrame({"p_male": a, "cube": a**3, "neg": -a, "sparse": [1.0, 2.0] + [np.nan] * 8,
                           "noisy": np.sin(a)}, index=[f"dz_{i}" for i in range(10)])
    labels.loc["dz_3", "noisy"] = np.nan
    rho = S.labeller_spearman(labels)
    assert list(rho.index) == list(rho.columns) == list(labels.columns)
    assert rho.loc["p_male", "cube"] == pytest.approx(1.0) and rho.loc["p_male", "neg"] == pytest.approx(-1.0)
    assert rho["sparse"].isna().all() and rho.loc["sparse"].isna().all()  # fewer than 3 pairs both measured
    ok = labels["noisy"].notna()
    assert rho.loc["noisy", "cube"] == pytest.approx(stats.spearmanr(labels["noisy"][ok], labels["cube"][ok])[0])
    np.testing.assert_allclose(rho.to_numpy(), rho.to_numpy().T, atol=1e-12)
    with pytest.raises(ValueError, match="no label columns"):
        S.labeller_spearman(pd.DataFrame(index=[0, 1]))


def _levers():
    return pd.DataFrame({"n_labels": [60, 60, 219, 219, 219], "kind": ["ridge", "ridge", "ridge", "ridge", "svm"],
                         "orthogonal": [False, True, False, True, True],
                         "spearman": [0.5, np.nan, 0.6, 0.7, 0.9], "spearman_within_seed": [0.1, 0.2, 0.3, 0.4, 0.5]})


def test_gender_lever_rows_default_fit_and_best():
    main, best = S.gender_lever_rows(_levers(), "ridge")
    assert (main.name, best.name) == (3, 4)  # most labels, ridge, orthogonalised; highest rho (NaN skipped)
    main, _ = S.gender_lever_rows(_levers(), "svm")
    assert main.name == 4
    with pytest.raises(ValueError, match="no orthogonalised row of kind 'lasso'"):
        S.gender_lever_rows(_levers(), "lasso")
    with pytest.raises(ValueError, match="no finite spearman"):
        S.gender_lever_rows(_levers().assign(spearman=np.nan), "ridge")
    with pytest.raises(ValueError, match="orthogonal"):
        S.gender_lever_rows(_levers().drop(columns="orthogonal"), "ridge")


# --------------------------------------------------------------------------- orthogonalisation in full
DIM = 10
_Q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(DIM, DIM)))
N_GENDER = _Q[:, 0]
N_SKIN = 0.6 * _Q[:, 0] + 0.8 * _Q[:, 1]  # a leak: entangled with gender (cos 0.6), and its hyperplane fits well
N_AGE = 0.6 * _Q[:, 0] - 0.8 * _Q[:, 1]  # read along here, but its hyperplane is fitted on noise: captures nothing
N_YAW = _Q[:, 2]


class Latents:
    """A generator whose images are its latents: the fake labellers read them directly."""

    latent_dim = DIM

    def sample(self, n, seed):
        return np.random.default_rng(seed).normal(size=(n, DIM))

    def synthesize(self, z):
        return np.asarray(z, float)


def _noise(z, sd):
    """Labeller noise that depends only on the image (a deterministic labeller)."""
    import hashlib

    return np.array([np.random.default_rng(int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(),
                                                           "little")).normal(0, sd) for row in z])


def fake_measure(images, names):
    z = np.asarray(images, float)
    cols = {"p_male": 1 / (1 + np.exp(-2.0 * (z @ N_GENDER))) + _noise(z * 3, 0.05), "ita": -10.0 * (z @ N_SKIN) + _noise(z, 2.0),
            "age_years": 10.0 * (z @ N_AGE) + _noise(z * 1.5, 2.0), "yaw_deg": 20.0 * (z @ N_YAW) + _noise(z * 2, 2.0)}
    return pd.DataFrame({n: cols[n] for n in names})


def _planted_hyperplanes():
    from facebias.generate.hyperplanes import AttributeLabel, fit_from_labels

    rng = np.random.default_rng(1)
    z = rng.normal(size=(3000, DIM))
    lab = fake_measure(z, ["p_male", "ita", "yaw_deg"])
    labels = pd.DataFrame({"gender": lab["p_male"], "skin_tone": lab["ita"], "yaw": lab["yaw_deg"],
                           "age": rng.normal(size=3000)})  # age labels: noise, so its hyperplane captures nothing
    attrs = [AttributeLabel("gender", labeller="p_male"),
             AttributeLabel("skin_tone", labeller="ita", sign=-1.0, transform="rank"),
             AttributeLabel("age", labeller="age_years", transform="rank"),
             AttributeLabel("yaw", labeller="yaw_deg", tau=0.0)]
    return fit_from_labels(z, labels, attrs)


def _planted_table(n_boot=400):
    from facebias.generate.checks import drift_readings

    hp = _planted_hyperplanes()
    r = drift_readings(Latents(), hp, {"gender": (-1.5, 1.5), "yaw": (-1.5, 1.5)}, n_seeds=60, seed=7,
                       measure=fake_measure)
    sd = fake_measure(Latents().sample(5000, 9), ["p_male", "ita", "age_years", "yaw_deg"]).std(ddof=0).to_dict()
    return hp, S.drift_table(r, sd, hp.scores, n_boot=n_boot, seed=3)


def test_drift_table_removes_a_planted_leak_and_not_what_the_hyperplane_does_not_capture():
    hp, t = _planted_table()
    assert len(t) == 2 * 3 and not t["on_axis"].any()  # every axis x every other attribute
    g = t[t["axis"] == "gender"].set_index("attribute")
    skin = g.loc["skin_tone"]
    # raw: 3 decision units along ~N_GENDER move z.N_SKIN by 0.6 * 3; ita = -10 z.N_SKIN (+ noise), SD ~10.2
    assert skin["drift_raw"] == pytest.approx(-1.8 * 10 / skin["sd"], abs=0.1) and skin["raw_resolved"]
    assert skin["drift_orthogonal_lo"] < 0 < skin["drift_orthogonal_hi"] and skin["reduction"] > 0.9
    assert skin["verdict"] == "fell" and skin["change_hi"] < 0
    # age is read along 0.6 N_GENDER - 0.8 N_1: the orthogonalised gender step cancels skin's N_1 part
    # (u = n_g - 0.75 n_1), which doubles its projection on age's reading (0.6 -> 1.2); the age hyperplane,
    # fitted on noise, captures none of it, so orthogonalising cannot remove it: the drift rises
    age = g.loc["age"]
    assert hp.scores["age"] < 0.02 and age["fit_r2"] == hp.scores["age"]
    assert age["drift_raw"] == pytest.approx(1.8 * 10 / age["sd"], abs=0.1)
    assert age["drift_orthogonal"] == pytest.approx(3.6 * 10 / age["sd"], abs=0.15)
    assert age["verdict"] == "rose" and age["change_lo"] > 0 and age["reduction"] < -0.8
    assert abs(age["predicted_orthogonal"]) < 1e-9  # the hyperplane says: no change (by construction)
    # yaw is in no other normal's span: no raw drift to remove
    assert not g.loc["yaw", "raw_resolved"] and abs(g.loc["yaw", "drift_raw"]) < 0.1
    notes = S.drift_rise_notes(t)
    age_note = [n for n in notes if n.startswith("**age along gender**")]
    assert len(age_note) == 1 and "fit R² is 0.00" in age_note[0] and "beyond the bootstrap noise" in age_note[0]
    assert not [n for n in notes if n.startswith("**skin_tone along gender**")]  # it fell: no note
    grew = t[(t["change"] > 0) & (t["raw_resolved"] | (t["drift_orthogonal_lo"] > 0) | (t["drift_orthogonal_hi"] < 0))]
    assert len(notes) == len(grew)  # one note per cell that grew where a drift exists, none picked
    acc = S.drift_acceptance(t)
    assert acc["drift_reduction"] == pytest.approx(age["reduction"]) and acc["drift_reduction_cell"] == "age along gender"
    assert acc["drift_n_rose"] == 1 and acc["drift_n_cells"] == 6
    assert acc["drift_n_resolved"] == int(t["raw_resolved"].sum()) >= 2


def test_drift_table_intervals_are_the_seed_bootstrap_by_brute_force():
    rng = np.random.default_rng(5)
    n = 25
    rows = []
    for axis, attr, lab in (("g", "a", "la"), ("g", "b", "lb"), ("h", "a", "la")):
        for direction, shift in (("raw", 1.0), ("orthogonal", 0.2)):
            d = rng.normal(shift, 1.0, n)
            d[rng.random(n) < 0.2] = np.nan  # seeds where the labeller found no face
            rows.append(pd.DataFrame({"axis": axis, "lo": -1.0, "hi": 1.0, "direction": direction,
                                      "cos_raw_orthogonal": 0.9, "seed": np.arange(n), "attribute": attr,
                                      "labeller": lab, "on_axis": False, "diff": d, "predicted": 0.0}))
    r = pd.concat(rows, ignore_index=True)
    sd = {"la": 2.0, "lb": 0.5}
    t = S.drift_table(r, sd, n_boot=300, seed=11, ci=0.9)
    # brute force: the same index draws as facebias.stats.bootstrap_weights, a plain nanmean per replicate
    boot = np.random.default_rng(11)
    idx = [boot.integers(0, n, n) for _ in range(300)]
    for _, row in t.iterrows():
        x = {dr: r[(r["axis"] == row["axis"]) & (r["attribute"] == row["attribute"]) & (r["direction"] == dr)]
             .sort_values("seed")["diff"].to_numpy() / sd[row["labeller"]] for dr in ("raw", "orthogonal")}
        reps = {dr: np.array([np.nanmean(v[i]) if np.isfinite(v[i]).any() else np.nan for i in idx])
                for dr, v in x.items()}
        change = np.abs(reps["orthogonal"]) - np.abs(reps["raw"])
        for key, rep in (("drift_raw", reps["raw"]), ("drift_orthogonal", reps["orthogonal"]), ("change", change)):
            lo = np.nanquantile(rep, 0.05, method="lower")
            hi = np.nanquantile(rep, 0.95, method="higher")
            assert row[f"{key}_lo"] == pytest.approx(lo, abs=1e-12) and row[f"{key}_hi"] == pytest.approx(hi, abs=1e-12)
        assert row["drift_raw"] == pytest.approx(np.nanmean(x["raw"]))
        assert row["n_raw"] == np.isfinite(x["raw"]).sum()
    with pytest.raises(ValueError, match="positive finite SD"):
        S.drift_table(r, {"la": 2.0}, n_boot=10)
    with pytest.raises(ValueError, match="n_boot"):
        S.drift_table(r, sd, n_boot=0)
    assert S.drift_table(r.assign(on_axis=r["attribute"] == "a"), sd, n_boot=10)["attribute"].tolist() == ["b"]


def _drift():
    """A full drift table of two axes: one leak removed, one rise, one unresolved, one on-axis row left out."""
    return pd.DataFrame({"axis": ["gender", "gender", "gender", "yaw"], "attribute": ["skin_tone", "age", "smile", "gender"],
                         "labeller": ["ita", "age_years", "smile", "p_male"], "on_axis": False,
                         "drift_raw": [0.26, 0.41, 0.02, np.nan], "drift_orthogonal": [-0.03, 0.65, 0.01, 0.0],
                         "reduction": [0.88, -0.59, 0.5, np.nan], "raw_resolved": [True, True, False, False],
                         "verdict": ["fell", "rose", "unchanged", "unchanged"]})


def _seq_auc():
    return pd.DataFrame({"attribute": ["yaw", "light"], "step": [1.5, 1.5], "auc": [0.95, 0.8]})


def test_backend_measurements_and_summary_under_the_schema():
    det = {"n": 24, "detect_rate": 0.96, "median_impostor": 0.21}
    main, best = S.gender_lever_rows(_levers(), "ridge")
    drift = S.drift_acceptance(_drift())
    assert drift["drift_reduction"] == -0.59 and drift["drift_reduction_cell"] == "age along gender"  # the worst
    measured = S.backend_measurements(det, main, best, drift, _seq_auc())
    assert measured == {"detect_rate": 0.96, "median_impostor": 0.21, "gender_spearman": 0.7,
                        "gender_spearman_best": 0.9, "gender_spearman_within_seed": 0.4,
                        "drift_reduction": -0.59, "drift_halved_share": 0.5, "drift_n_rose": 1,
                        "yaw_auc": 0.95, "light_auc": 0.8}
    table = target_table(measured, [("detect_rate", "YuNet", 0.95, ">="), ("median_impostor", "SFace", 0.30, "<="),
                                    ("gender_spearman", "rho", 0.85, ">="), ("gender_spearman_best", "best", 0.85, ">="),
                                    ("gender_spearman_within_seed", "within", None, ""),
                                    ("drift_reduction", "drift", 0.5, ">="), ("yaw_auc", "yaw", 0.9, ">="),
                                    ("light_auc", "light", 0.9, ">=")])
    hp = Hyperplanes(("gender", "skin_tone"), np.eye(2, 4), np.zeros(2), {"gender": "machine labeller 'p_male'",
                     "skin_tone": "machine labeller 'ita'"}, {"gender": np.int64(219), "skin_tone": 300},
                     scores={"gender": np.float32(0.5), "skin_tone": 0.7})
    labels = pd.DataFrame({"p_male": np.arange(5.0), "ita": np.arange(5.0)[::-1]})
    head = S.summarise_backend(backend="dcgan", hyperplanes=hp, transect_images=pd.DataFrame(index=range(16)),
                               hcic_images=pd.DataFrame(index=range(136)), groups=["LM", "LF", "DM", "DF"],
                               orthogonality_error=latent.orthogonality_error(hp.normals), table=table,
                               detection=det, levers=_levers(), drift=_drift(), sequence_auc=_seq_auc(),
                               labeller_rho=S.labeller_spearman(labels), drift_params={"n_seeds": 60},
                               labeller_checks={"stability": [{"labeller": "ita", "spearman": 0.9}]},
                               skin_gate={"axis": "face_darkness", "gate": {}, "any_passes": False,
                                          "chosen_passes": False, "candidates": {}})
    check_metrics(head, "synthetic_faces_dcgan_details")
    assert head["orthogonalisation"] == {"n_seeds": 60, "on_axis": []}
    assert head["labeller_checks"]["stability"][0]["labeller"] == "ita"
    assert head["source"] == "synthetic (dcgan generator, no truth; machine labels)"
    assert head["n_labelled"] == {"gender": 219, "skin_tone": 300} and type(head["n_labelled"]["gender"]) is int
    assert head["hyperplane_r2"] == {"gender": 0.5, "skin_tone": 0.7}
    assert head["orthogonality_max_error"] == 0.0
    acc = head["acceptance"]
    assert list(acc) == list(table["key"])
    assert acc["detect_rate"] == {"measured": 0.96, "target": ">= 0.95", "met": True}
    assert acc["gender_spearman"]["met"] is False and acc["gender_spearman_within_seed"]["met"] is None
    assert head["labeller_spearman"] == {"p_male": {"p_male": 1.0, "ita": -1.0}, "ita": {"p_male": -1.0, "ita": 1.0}}
    assert [r["attribute"] for r in head["drift"]] == ["skin_tone", "age", "smile", "gender"]
    assert head["detection"] == det and head["detection"] is not det
