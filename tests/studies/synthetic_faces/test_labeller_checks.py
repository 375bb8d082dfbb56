"""facebias.studies.synthetic_faces.labeller_checks: the machine labellers' offline checks on small made-up
images and fake labellers whose behaviour under a resampling is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from facebias.faces.images import upscale
from facebias.studies.synthetic_faces import labeller_checks as L


def _images(n=30, size=16, seed=0):
    """Smooth random RGB images (a blurred noise field), so resampling changes them a little."""
    import cv2

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        small = rng.uniform(0, 255, (4, 4, 3)).astype(np.float32)
        out.append(np.clip(cv2.resize(small, (size, size), interpolation=cv2.INTER_LINEAR), 0, 255).astype(np.uint8))
    return out


def brightness(images, names):
    """Flip-invariant: the mean of the whole image."""
    return pd.DataFrame({n: [float(np.asarray(im, float).mean()) for im in images] for n in names})


def asymmetry(images, names):
    """Mirror-odd: left half minus right half."""
    def one(im):
        im = np.asarray(im, float)
        w = im.shape[1] // 2
        return float(im[:, :w].mean() - im[:, -w:].mean())

    return pd.DataFrame({n: [one(im) for im in images] for n in names})


def test_resample_bicubic_is_the_labellers_upscale_and_shifts_flips_by_hand():
    im = _images(1, 16)[0]
    np.testing.assert_array_equal(L.resample(im, L.Resampling("b"), 64), upscale(im, 64))
    shifted = L.resample(im, L.Resampling("s", shift=(2, -1)), 16)  # size 16: no resize
    np.testing.assert_array_equal(shifted[:-1, 2:], im[1:, :-2])  # out[y, x] = in[y + 1, x - 2]
    np.testing.assert_array_equal(shifted[:-1, :2], np.repeat(im[1:, :1], 2, axis=1))  # edge replicated
    np.testing.assert_array_equal(shifted[-1], shifted[-2])
    np.testing.assert_array_equal(L.resample(im, L.Resampling("f", flip=True), 16), im[:, ::-1])
    assert L.resample(im, L.Resampling("l", "lanczos"), 40).shape == (40, 40, 3)
    with pytest.raises(ValueError, match="method must be one of"):
        L.Resampling("x", "nearest")
    with pytest.raises(ValueError, match="not smaller than the image"):
        L.resample(im, L.Resampling("s", shift=(16, 0)), 16)
    with pytest.raises(ValueError, match="shift_px"):
        L.resamplings(0)


def test_a_flip_invariant_labeller_is_perfectly_stable_under_a_flip():
    ims = _images(30)
    r = L.resampled_readings(ims, ["b"], measure=brightness, size=64)
    assert list(r) == [x.name for x in L.resamplings()]
    t = L.stability_table(r, {"b": 10.0}).set_index("resampling")
    assert t.loc["flip", "spearman"] == 1.0 and t.loc["flip", "median_abs_change_sd"] == pytest.approx(0, abs=1e-3)
    assert (t[["lost", "gained"]] == 0).all().all() and (t["n_both"] == 30).all()
    # a shift is not a symmetry of this labeller: the check sees it move (the flip row is not trivially 1)
    assert t.loc["shift x+2", "median_abs_change_sd"] > 0 and t.loc["shift x+2", "spearman"] < 1


def test_a_mirror_odd_labeller_is_recovered_after_sign_correction():
    ims = _images(30, seed=1)
    r = L.resampled_readings(ims, ["asym"], measure=asymmetry, size=64,
                             variants=[L.Resampling("bicubic"), L.Resampling("flip", flip=True)])
    fixed = L.stability_table(r, {"asym": 5.0}, flip_sign={"asym": -1.0}).iloc[0]
    assert fixed["sign"] == -1.0 and fixed["spearman"] == pytest.approx(1.0)
    assert fixed["median_abs_change_sd"] == pytest.approx(0, abs=1e-3)
    raw = L.stability_table(r, {"asym": 5.0}, flip_sign={}).iloc[0]  # without the correction: reversed
    assert raw["sign"] == 1.0 and raw["spearman"] == pytest.approx(-1.0)
    # the default knows the machine labellers that are mirror-odd
    assert L.FLIP_SIGN == {"light_asymmetry": -1.0, "yaw_deg": -1.0}


def test_no_face_flips_are_counted_both_ways():
    ims = []
    for k in range(10):
        im = np.full((16, 16, 3), 40, np.uint8)
        if k < 4:
            im[:, :2] = 250  # a bright band at the left edge: the "face" this labeller needs
        ims.append(im)

    def edge_face(images, names):  # measured iff the left 8 % of the image is bright
        vals = [float(im.mean()) if np.asarray(im)[:, : max(1, im.shape[1] // 12)].mean() > 150 else np.nan
                for im in images]
        return pd.DataFrame({n: vals for n in names})

    r = L.resampled_readings(ims, ["e"], measure=edge_face, size=48)
    t = L.stability_table(r, {"e": 1.0}).set_index("resampling")
    assert t.loc["shift x-2", "lost"] == 4 and t.loc["shift x-2", "gained"] == 0  # the band left the image
    assert t.loc["shift x+2", "lost"] == 0 and t.loc["flip", "lost"] == 4  # replicated edge keeps it; flip moves it
    assert t.loc["flip", "flip_rate"] == pytest.approx(0.4) and (t["n_reference"] == 4).all()
    with pytest.raises(ValueError, match="positive finite SD"):
        L.stability_table(r, {"e": 0.0})
    with pytest.raises(ValueError, match="no reference"):
        L.stability_table(r, {"e": 1.0}, reference="nearest")


def test_related_agreement_is_spearman_over_the_pairs_both_measured():
    rng = np.random.default_rng(2)
    lum = rng.normal(50, 10, 40)
    r = pd.DataFrame({"ita": lum + rng.normal(0, 5, 40), "face_luminance": lum, "yaw_deg": rng.normal(0, 20, 40)})
    r.loc[3, "ita"] = np.nan
    t = L.related_agreement(r, sample="fit set")
    assert t[["a", "b"]].values.tolist() == [["ita", "face_luminance"]]  # only pairs both present
    ok = r["ita"].notna()
    assert t["spearman"].iat[0] == pytest.approx(stats.spearmanr(r["ita"][ok], r["face_luminance"][ok])[0])
    assert t["n"].iat[0] == 39 and t["sample"].iat[0] == "fit set" and "exposure" in t["meaning"].iat[0]
    assert L.related_agreement(r[["yaw_deg"]]).empty


def _transects():
    """4 transects x 2 skin levels x 2 gender levels; the dark-male cell loses its face in 3 of 4."""
    rows = [{"transect": t, "skin_c": s, "gender_c": g} for t in range(4) for s in (-1.5, 1.5) for g in (-1.75, 1.75)]
    d = pd.DataFrame(rows)
    p = np.where((d["skin_c"] > 0) & (d["gender_c"] > 0) & (d["transect"] < 3), np.nan, 0.5)
    return d, pd.DataFrame({"p_male": p, "ita": 1.0})


def test_missing_rates_per_level_and_group_with_wilson_intervals():
    d, r = _transects()
    by_skin = L.missing_rates(d, r, ["skin_c"]).set_index(["group", "labeller"])
    assert by_skin.loc[("skin=+1.50", "p_male"), "n_missing"] == 3 and by_skin.loc[("skin=+1.50", "p_male"), "n"] == 8
    assert by_skin.loc[("skin=-1.50", "p_male"), "rate"] == 0 and by_skin.loc[("skin=+1.50", "ita"), "rate"] == 0
    lo, hi = proportion_confint(3, 8, method="wilson")  # an independent implementation
    assert by_skin.loc[("skin=+1.50", "p_male"), ["rate_lo", "rate_hi"]].tolist() == pytest.approx([lo, hi])
    groups = L.missing_rates(d, r, ["skin_c", "gender_c"], names=["p_male"])
    assert len(groups) == 4 and groups["by"].iat[0] == "skin_c x gender_c"
    assert groups.set_index("group").loc["skin=+1.50, gender=+1.75", "rate"] == 0.75
    with pytest.raises(ValueError, match="design has 16 rows, readings 3"):
        L.missing_rates(d, r.iloc[:3], ["skin_c"])


def test_missing_level_difference_is_a_transect_bootstrap_by_brute_force():
    d, r = _transects()
    t = L.missing_level_difference(d, r, ["skin_c", "gender_c"], "p_male", "transect", n_boot=200, seed=4, ci=0.9)
    skin = t.set_index("axis").loc["skin_c"]
    assert skin["rate_lo_level"] == 0 and skin["rate_hi_level"] == 3 / 8 and skin["difference"] == 3 / 8
    # brute force: resample whole transects with the same draws as facebias.stats.bootstrap_weights
    rng = np.random.default_rng(4)
    miss = r["p_male"].isna().to_numpy()
    reps = []
    for _ in range(200):
        pick = rng.integers(0, 4, 4)
        rows = np.concatenate([np.flatnonzero(d["transect"].to_numpy() == k) for k in pick])
        dd, mm = d.iloc[rows], miss[rows]
        reps.append(mm[dd["skin_c"].to_numpy() > 0].mean() - mm[dd["skin_c"].to_numpy() < 0].mean())
    assert skin["difference_lo"] == pytest.approx(np.quantile(reps, 0.05, method="lower"))
    assert skin["difference_hi"] == pytest.approx(np.quantile(reps, 0.95, method="higher"))


def test_selection_table_shows_who_is_left_after_dropping_unmeasured_images():
    d, r = _transects()
    t, s = L.selection_table(d, r, ["skin_c", "gender_c"], "p_male", cluster="transect")
    dm = t.set_index("group").loc["skin=+1.50, gender=+1.75"]
    assert dm["n_kept"] == 1 and dm["design_share"] == 0.25 and dm["kept_share"] == pytest.approx(1 / 13)
    assert dm["share_ratio"] == pytest.approx(4 / 13)
    assert t["kept_share"].sum() == pytest.approx(1.0)
    assert s == {"labeller": "p_male", "n": 16, "n_kept": 13, "kept_rate": 13 / 16, "n_clusters": 4,
                 "n_complete_clusters": 1, "complete_cluster_rate": 0.25}
