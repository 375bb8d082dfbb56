"""000's human seed filter in the generation stage: the simulated panel rates every candidate
prototype through the annotation store *before* max-min selection, planted uncanny and
wrong-group candidates are dropped, and a null world (all candidates fine) keeps every
acceptable one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from facebias.annotate.simulate import realism_truth
from facebias.generate.build import (
    GROUPS,
    SynthConfig,
    candidate_seed_filter,
    render_products,
    select_seeds,
)
from facebias.generate.procedural import ProceduralGenerator
from facebias.studies import hcic as H

D = 64
N_CAND = 30
UNCANNY = range(0, 5)  # candidates with one prototype beyond the typical shell (truth 0.90)
WRONG = range(5, 10)  # candidates with one prototype showing 5 % of its intended race
RACES = sorted({r for r, _ in GROUPS.values()})


class TruthLookup:
    """A fake backend whose truth is planted per latent: the intended race at ``share`` and
    the intended gender clearly (P(male) 0.95 / 0.05)."""

    def __init__(self, truth: dict[bytes, dict[str, float]]):
        self._truth = truth

    def truth(self, z: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame([self._truth[np.asarray(zi, np.float64).tobytes()] for zi in np.atleast_2d(z)])


def _candidates(plant: bool, seed: int = 1) -> tuple[np.ndarray, dict[bytes, dict[str, float]]]:
    """``N_CAND`` x 6 prototype latents on the shell |z| = 0.95 sqrt(D) (realism truth 0.15);
    with ``plant``, candidates in UNCANNY get one prototype at 1.6 sqrt(D) (truth 0.90) and
    candidates in WRONG one prototype with 5 % of its intended race (group match 0.05)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N_CAND * len(GROUPS), D))
    z *= (0.95 * np.sqrt(D)) / np.linalg.norm(z, axis=1, keepdims=True)
    truth: dict[bytes, dict[str, float]] = {}
    for k, (race, gender) in enumerate(list(GROUPS.values()) * N_CAND):
        i, share = k // len(GROUPS), 0.95
        if plant and i in UNCANNY and k % len(GROUPS) == 2:
            z[k] *= 1.6 / 0.95
        if plant and i in WRONG and k % len(GROUPS) == 3:
            share = 0.05
        row = {f"race_{r}": (share if r == race else (1 - share) / 2) for r in RACES}
        truth[z[k].tobytes()] = {"gender": 0.95 if gender == "male" else 0.05, **row}
    return z, truth


CFG = SynthConfig(scale="smoke", n_candidates=N_CAND, n_seeds=5, seed_filter_keep=20 / N_CAND)


def test_planted_uncanny_and_wrong_group_candidates_are_dropped():
    """20 clean candidates and 10 planted ones, keep share 20/30: exactly the clean ones are
    kept. A planted seed's worst prototype has truth 0.90 uncanny or 0.05 match (worst ~1.0)
    against 0.15 / 0.95 for clean ones (worst ~0.2-0.4), a gap of several panel SDs of a
    9-vote mean, so the planted scores lie beyond every clean one."""
    z, truth = _candidates(plant=True)
    assert realism_truth(z[[2]])[0] == pytest.approx(0.9) and realism_truth(z[[0]])[0] == pytest.approx(0.15)
    table, summary = candidate_seed_filter(TruthLookup(truth), z, list(GROUPS), "race_gender", CFG)
    planted = set(UNCANNY) | set(WRONG)
    clean = set(range(N_CAND)) - planted
    assert set(table.loc[table["kept"], "seed"]) == clean
    # the rule flags planted seeds only (a truth of 0.90 can score just under 0.8 through the
    # panel's noise, so not necessarily all of them); the scores separate them from clean ones
    assert set(table.loc[~table["realistic"], "seed"]) <= set(UNCANNY)
    assert set(table.loc[~table["group_ok"], "seed"]) <= set(WRONG)
    by = table.set_index("seed")
    assert by.loc[list(UNCANNY), "max_uncanny"].min() > by.loc[sorted(clean), "max_uncanny"].max()
    assert by.loc[list(WRONG), "min_group_match"].max() < by.loc[sorted(clean), "min_group_match"].min()
    assert summary["n_kept_by_filter"] == 20 and summary["kept_seeds"] == sorted(clean)
    assert summary["questions"] == ["seed_filter/uncanny", "seed_filter/group_match"]
    assert summary["group_question_skipped"] is None and "uncanny < 0.8" in summary["rule"]
    # max-min then sees only the kept seeds, even though planted ones are far apart
    meshes = np.random.default_rng(0).standard_normal((N_CAND, len(GROUPS), 4))
    meshes[list(planted)] *= 100  # the planted seeds would be max-min's first picks
    kept = table.sort_values("seed")["kept"].to_numpy(bool)
    chosen = select_seeds(z, meshes, CFG.n_seeds, eligible=kept)
    assert len(chosen) == CFG.n_seeds and set(chosen) <= clean
    assert set(select_seeds(z, meshes, CFG.n_seeds)) <= planted  # without the filter, the planted ones win


def test_only_candidates_with_a_face_mesh_are_rated():
    """The stage rates only candidates whose prototypes all gave a face mesh (max-min needs
    one): the others are neither voted on nor kept, and the share is taken of the rated ones
    at most."""
    z, truth = _candidates(plant=False)
    eligible = np.ones(N_CAND, bool)
    eligible[[3, 11, 17]] = False
    table, summary = candidate_seed_filter(TruthLookup(truth), z, list(GROUPS), "race_gender", CFG,
                                           eligible=eligible)
    assert sorted(table["seed"]) == sorted(set(range(N_CAND)) - {3, 11, 17})
    assert summary["n_rated"] == 27 and summary["n_kept_by_filter"] == 20
    few = np.zeros(N_CAND, bool)
    few[:8] = True
    _, summary = candidate_seed_filter(TruthLookup(truth), z, list(GROUPS), "race_gender", CFG, eligible=few)
    assert summary["n_kept_by_filter"] == 8 and summary["kept_seeds"] == list(range(8))


def test_null_world_keeps_every_acceptable_candidate():
    """Nothing planted: every candidate is acceptable, none is flagged, and with a keep share
    of 1 none is dropped (the filter removes no acceptable seed); at 20/30 the 10 dropped are
    dropped by the rank cut alone."""
    z, truth = _candidates(plant=False)
    table, summary = candidate_seed_filter(TruthLookup(truth), z, list(GROUPS), "race_gender", CFG)
    assert table["acceptable"].all() and summary["n_unrealistic"] == summary["n_group_mismatch"] == 0
    assert summary["n_kept_by_filter"] == 20
    everything = SynthConfig(scale="smoke", n_candidates=N_CAND, n_seeds=5, seed_filter_keep=1.0)
    table, summary = candidate_seed_filter(TruthLookup(truth), z, list(GROUPS), "race_gender", everything)
    assert table["kept"].all() and summary["n_kept_by_filter"] == N_CAND


class NoTruth:
    """A backend without truth (the DCGAN's case): the procedural renderer's pixels, but no
    ``truth``, so nothing but the renders can say how realistic a prototype is."""

    def __init__(self, size: int = 64):
        self._gen = ProceduralGenerator(size=size, seed=0)
        self.latent_dim = self._gen.latent_dim

    def sample(self, n, seed):
        return self._gen.sample(n, seed)

    def synthesize(self, latents, yaw=None, light=None):
        return self._gen.synthesize(latents, yaw=yaw, light=light)


def _noisy(image: np.ndarray, sd: float = 40.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(image + rng.normal(0, sd, image.shape), 0, 255).astype(np.uint8)


def test_measured_realism_ranks_degraded_renders_below_clean_ones():
    """The measured signal (YuNet's face confidence on the render enlarged to 256 px) of a
    64 px face falls when the face is degraded: every noisy (SD 40 grey levels) and every
    blurred (Gaussian SD 2.5 px) render scores below its clean original, and the clean ones
    pass the realism threshold that the noisy ones fail."""
    import cv2

    from facebias.annotate.seed_filter import FACE_SCORE_THRESHOLD, face_confidence

    gen = ProceduralGenerator(size=64, seed=0)
    clean = list(gen.synthesize(gen.sample(6, seed=1)))
    c = face_confidence(clean)
    n = face_confidence([_noisy(im, seed=k) for k, im in enumerate(clean)])
    b = face_confidence([cv2.GaussianBlur(im, (0, 0), 2.5) for im in clean])
    assert (n < c).all() and (b < c).all()
    assert (c >= FACE_SCORE_THRESHOLD).all() and (n < FACE_SCORE_THRESHOLD).all()
    assert face_confidence([np.full((64, 64, 3), 128, np.uint8)])[0] == 0  # no face at all


def test_without_truth_the_filter_measures_the_renders_not_the_latent():
    """A backend without truth (the DCGAN's case): no panel and no latent norm. Candidates 0-4
    have one prototype rendered with heavy noise: dropped. Candidates 5-9 have one prototype
    at 1.6x the typical latent norm (``realism_truth`` 0.90, which the simulated filter drops)
    but clean renders: kept like any other, because nothing is read from the latent. The
    summary says the signal is measured, not simulated."""
    gen = NoTruth()
    n_cand, groups = 12, list(GROUPS)
    z = gen.sample(n_cand * len(groups), seed=3)
    far = np.arange(5, 10) * len(groups) + 1
    z[far] *= 1.6 * np.sqrt(z.shape[1]) / np.linalg.norm(z[far], axis=1, keepdims=True)
    assert realism_truth(z[far]).min() > 0.8  # the simulated filter would call these uncanny
    images = list(gen.synthesize(z))
    for i in range(5):
        k = i * len(groups) + 2
        images[k] = _noisy(images[k], seed=k)
    cfg = SynthConfig(scale="smoke", n_candidates=n_cand, n_seeds=2, seed_filter_keep=7 / n_cand)
    table, summary = candidate_seed_filter(gen, z, groups, "race_gender", cfg, images=images)
    assert set(table.loc[~table["acceptable"], "seed"]) == set(range(5))
    assert set(table.loc[table["kept"], "seed"]) == set(range(5, n_cand))
    assert summary["realism_source"] == "measured" and summary["simulated"] is False
    assert summary["questions"] == [] and summary["n_votes"] == 0 and "YuNet" in summary["realism_signal"]
    assert "no truth" in summary["group_question_skipped"] and "group match" not in summary["rule"]
    assert table["min_group_match"].isna().all() and table["group_ok"].all()
    assert summary["n_unrealistic"] == 5 and summary["n_kept_by_filter"] == 7
    # without images the stage renders the frontal prototypes itself: the same pixels, the same
    # scores, so the clean-image filter is the same as with the given clean renders
    clean_table, _ = candidate_seed_filter(gen, z, groups, "race_gender", cfg)
    given, _ = candidate_seed_filter(gen, z, groups, "race_gender", cfg, images=list(gen.synthesize(z)))
    pd.testing.assert_frame_equal(clean_table, given)


def test_the_simulated_filter_is_labelled_a_simulation():
    z, truth = _candidates(plant=False)
    _, summary = candidate_seed_filter(TruthLookup(truth), z, list(GROUPS), "race_gender", CFG)
    assert summary["realism_source"] == "simulated" and summary["simulated"] is True
    assert summary["realism_signal"].startswith("SIMULATION") and "realism_truth(latent)" in summary["realism_signal"]


def test_keep_share_is_validated_and_raised_to_n_seeds():
    with pytest.raises(ValueError, match="seed_filter_keep"):
        SynthConfig(scale="smoke", seed_filter_keep=0.0)
    assert SynthConfig(scale="default").n_kept_by_filter == 60  # 200 -> 60 -> 20
    assert SynthConfig(scale="paper").n_kept_by_filter == 300  # 1,000 -> 300 -> 100 (000)
    assert SynthConfig(scale="smoke", n_candidates=4, n_seeds=2).n_kept_by_filter == 2  # 0.3 * 4 -> 1, raised


class PlantedUncanny(ProceduralGenerator):
    """The procedural generator whose candidate draw (seed ``cfg.seed + 4``) has its first
    ``k`` candidates pushed to 1.6x the typical norm: their prototypes are uncanny."""

    k = 3

    def sample(self, n, seed):
        z = super().sample(n, seed)
        if seed == 4:
            z[: self.k] *= 1.6
        return z


@pytest.mark.timeout(600)
def test_render_products_filters_before_max_min(tmp_path):
    """A procedural run with planted uncanny candidates: the stage records the filter
    (sizes, rule, kept seeds), the planted candidates are not kept and max-min picks only
    kept seeds; :func:`facebias.studies.hcic.seed_filter_funnel` reads it back."""
    cfg = SynthConfig(scale="smoke", n_fit=600, n_transects=1, n_candidates=10, n_seeds=2, n_negative=1)
    gen = PlantedUncanny(size=64, seed=0)
    assert realism_truth(gen.sample(10, 4)[:3]).min() > 0.8
    s = render_products(gen, cfg, tmp_path)
    sf = s["hcic"]["seed_filter"]
    assert s["hcic"]["n_kept_by_filter"] == sf["n_kept_by_filter"] == 3 and sf["n_candidates"] == 10
    assert not set(sf["kept_seeds"]) & {0, 1, 2} and set(s["hcic"]["selected_seeds"]) <= set(sf["kept_seeds"])
    assert sf["n_unrealistic"] >= 3 and sf["group_question_skipped"] is None
    table = pd.read_parquet(tmp_path / "hcic" / "seed_filter.parquet")
    assert len(table) == 10 and sorted(table.loc[table["kept"], "seed"]) == sf["kept_seeds"]
    on_disk = json.loads((tmp_path / "summary.json").read_text())["hcic"]
    funnel = H.seed_filter_funnel(on_disk)
    assert funnel["selected_within_kept"] and funnel["keep_ratio"] == pytest.approx(0.3)
    assert funnel["paper"] == {"n_candidates": 1000, "n_kept_by_filter": 300, "n_selected": 100,
                               "keep_ratio": 0.3, "select_ratio": 1 / 3}
