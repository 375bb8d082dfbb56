"""facebias.annotate.palette (the nearest Monk Skin Tone swatch, CIE76 Delta E) and the palette
checks of facebias.studies.synthetic_faces.labeller_checks: hand cases, skimage as the independent colour
implementation, a planted monotone relation found and a shuffled one not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from skimage.color import deltaE_cie76, rgb2lab

from facebias.annotate.machine import ita_degrees
from facebias.annotate.palette import FAR_DELTA_E, MONK_SKIN_TONES, nearest_swatch, swatches_lab
from facebias.studies.synthetic_faces import labeller_checks as LC

SW = swatches_lab()


def test_swatches_are_the_ten_monk_colours_in_cielab_as_skimage_converts_them():
    assert len(MONK_SKIN_TONES) == 10 and SW.shape == (10, 3)
    rgb = np.array([[int(h[i:i + 2], 16) for i in (0, 2, 4)] for h in MONK_SKIN_TONES], float) / 255.0
    np.testing.assert_allclose(SW, rgb2lab(rgb[None])[0], atol=0.01)
    # the scale runs light to dark: ITA falls at every step
    assert np.all(np.diff(ita_degrees(SW[:, 0], SW[:, 2])) < 0)


def test_each_swatch_maps_to_its_own_index_at_delta_e_zero():
    idx, de = nearest_swatch(SW[:, 0], SW[:, 1], SW[:, 2])
    assert idx.tolist() == [float(k) for k in range(1, 11)]
    np.testing.assert_array_equal(de, 0.0)


@pytest.mark.parametrize(("lo", "t", "expected"), [(5, 0.3, 6), (5, 0.7, 7), (7, 0.45, 8), (7, 0.55, 9)])
def test_a_colour_between_two_swatches_maps_to_the_nearer(lo, t, expected):
    """Swatches lo and lo+1 (1-based); the colour at fraction t of the way from swatch lo+1 to
    swatch lo+2 (0-based rows lo, lo+1): t < 0.5 is nearer swatch lo+1."""
    c = (1 - t) * SW[lo] + t * SW[lo + 1]
    idx, de = nearest_swatch(*c)
    assert idx.shape == () and idx == expected
    gap = np.linalg.norm(SW[lo + 1] - SW[lo])
    assert de == pytest.approx(min(t, 1 - t) * gap)
    assert de == pytest.approx(deltaE_cie76(c, SW[int(expected) - 1]))


def test_nan_propagates_and_shapes_are_kept():
    L = np.array([[55.1, np.nan], [30.0, 70.0]])
    a = np.array([[7.8, 5.0], [np.inf, 3.0]])
    b = np.array([[26.7, 10.0], [10.0, np.nan]])
    idx, de = nearest_swatch(L, a, b)
    assert idx.shape == de.shape == (2, 2)
    assert idx[0, 0] == 6 and np.isnan(idx[0, 1]) and np.isnan(idx[1, 0]) and np.isnan(idx[1, 1])
    assert np.isnan(de).tolist() == [[False, True], [True, True]]


def test_a_blue_cast_face_is_far_from_every_swatch():
    idx, de = nearest_swatch(40.0, 0.0, -15.0)
    assert de > FAR_DELTA_E
    assert de == pytest.approx(deltaE_cie76(np.array([40.0, 0.0, -15.0]), SW).min())


def test_shape_mismatch_and_bad_swatches_are_rejected():
    with pytest.raises(ValueError, match="shapes differ"):
        nearest_swatch([50.0, 60.0], [1.0], [10.0, 12.0])
    with pytest.raises(ValueError, match="swatches"):
        nearest_swatch(50.0, 1.0, 10.0, swatches=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="hex"):
        swatches_lab(("ffffff", "12345g"))


def test_nearest_swatch_equals_brute_force_with_skimage_delta_e():
    rng = np.random.default_rng(3)
    lab = np.column_stack([rng.uniform(5, 95, 300), rng.uniform(-20, 30, 300), rng.uniform(-30, 40, 300)])
    idx, de = nearest_swatch(lab[:, 0], lab[:, 1], lab[:, 2])
    d = np.stack([deltaE_cie76(lab, s[None]) for s in SW], axis=1)
    np.testing.assert_array_equal(idx, d.argmin(axis=1) + 1.0)
    np.testing.assert_allclose(de, d.min(axis=1), atol=1e-9)


# --------------------------------------------------------------------------- agreement
def _skin_line(n=200, seed=0, noise=1.0):
    """Face colours along the swatch line (piecewise linear through the ten swatches) plus a
    little noise, ITA computed from them: darker colour <=> lower ITA by construction."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 9, n)
    k = np.minimum(pos.astype(int), 8)
    t = (pos - k)[:, None]
    lab = (1 - t) * SW[k] + t * SW[k + 1] + rng.normal(0, noise, (n, 3))
    return pd.DataFrame({"face_luminance": lab[:, 0], "face_a_star": lab[:, 1], "face_b_star": lab[:, 2],
                         "ita": ita_degrees(lab[:, 0], lab[:, 2]), "seed": np.arange(n) // 4})


def test_planted_monotone_relation_is_found_and_matches_scipy():
    r = _skin_line()
    m = LC.palette_agreement(r, n_boot=300, seed=1)
    idx = LC.palette_readings(r)["mst_index"].to_numpy()
    g = {row["reading"]: row for row in m["agreement"]}
    for reading, col in (("ita", "ita"), ("face_luminance", "face_luminance")):
        assert g[reading]["n"] == len(r)
        assert g[reading]["spearman"] == pytest.approx(-stats.spearmanr(idx, r[col])[0], abs=1e-12)
        assert g[reading]["spearman"] > 0.9
        assert 0 < g[reading]["spearman_lo"] <= g[reading]["spearman"] <= g[reading]["spearman_hi"]
    assert m["n_measured"] == len(r) and sum(m["mst_counts"].values()) == len(r)


def test_shuffled_ita_has_an_interval_covering_zero():
    r = _skin_line(seed=2)
    r["ita"] = np.random.default_rng(5).permutation(r["ita"].to_numpy())
    g = {row["reading"]: row for row in LC.palette_agreement(r, n_boot=300, seed=1)["agreement"]}
    assert g["ita"]["spearman_lo"] < 0 < g["ita"]["spearman_hi"]


def test_cluster_bootstrap_is_wider_than_the_image_bootstrap_when_images_repeat():
    """Each seed's four renders are copies: resampling images treats them as four faces."""
    base = _skin_line(n=40, seed=4)
    r = pd.concat([base] * 4, ignore_index=True).assign(seed=np.tile(np.arange(40), 4))
    r["ita"] = r["ita"] + np.random.default_rng(0).normal(0, 40, len(r))  # weaken the relation
    by_image = LC.palette_agreement(r, n_boot=300, seed=2)["agreement"][0]
    by_seed = LC.palette_agreement(r, n_boot=300, seed=2, cluster="seed")["agreement"][0]
    assert (by_seed["spearman_hi"] - by_seed["spearman_lo"]) > (by_image["spearman_hi"] - by_image["spearman_lo"])


def test_share_far_counts_faces_off_the_scale_and_skips_missing():
    rng = np.random.default_rng(7)
    on = SW[rng.integers(0, 10, 30)] + rng.normal(0, 1.0, (30, 3))  # within a few Delta E of a swatch
    off = np.column_stack([np.full(10, 40.0), np.zeros(10), np.full(10, -15.0)])  # blue cast
    lab = np.vstack([on, off, [[np.nan, 1.0, 1.0]]])
    r = pd.DataFrame({"face_luminance": lab[:, 0], "face_a_star": lab[:, 1], "face_b_star": lab[:, 2],
                      "ita": ita_degrees(lab[:, 0], lab[:, 2])})
    m = LC.palette_agreement(r, n_boot=20)
    assert (m["n"], m["n_measured"], m["n_far"]) == (41, 40, 10)
    assert m["share_far"] == pytest.approx(10 / 40)
    r["level"] = [0] * 30 + [1] * 10 + [1]
    t = LC.palette_by_level(r, ["level"])
    assert t["share_far"].tolist() == [0.0, 1.0] and t["n"].tolist() == [30, 11]
    assert t["n_measured"].tolist() == [30, 10] and t.loc[1, "median_delta_e"] > FAR_DELTA_E


def test_palette_checks_reject_bad_input():
    r = _skin_line(n=10)
    with pytest.raises(ValueError, match="face_a_star"):
        LC.palette_agreement(r.drop(columns="face_a_star"))
    with pytest.raises(ValueError, match="far_delta_e"):
        LC.palette_agreement(r, far_delta_e=0.0)
    with pytest.raises(ValueError, match="n_boot"):
        LC.palette_agreement(r, n_boot=0)
    with pytest.raises(ValueError, match="by"):
        LC.palette_by_level(r, [])
