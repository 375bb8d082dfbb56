"""Acceptance numbers for a face generator without truth (the DCGAN, StyleGAN2), measured
with real, offline face models on its renders against the fitted hyperplanes: detection
and impostor scores of random samples, the gender lever's Spearman correlation, attribute
drift along raw and orthogonalised directions, and identity kept along learned pose /
light directions (issue 15's targets: :data:`facebias.generate.checks.BACKEND_TARGETS`).

Part of :mod:`facebias.generate.checks` (which re-exports every public name here); the
checks of the procedural renderer, which has truth, are
:mod:`facebias.generate.checks_truth`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from facebias.generate.checks_truth import PUBLISHED_THRESHOLDS, _auc_enrolled
from facebias.metrics import fmr_at

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
