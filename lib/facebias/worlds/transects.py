"""The known-truth worlds of paper 004's transect studies (``docs/specs/transects.md`` A1.13
(c) Paper's conclusion: an observational analysis on PPB and an experimental one on
transects disagree about the cause; A1.2-A1.3 for the annotation).

* :func:`observational_sample`: a PPB-like sample from a generator with truth, where hair
  length is correlated with skin tone within gender (the confounding that misleads an
  observational analysis); :func:`confounded_latents`: the same for any backend, from
  fitted hyperplanes (the study without truth).
* :func:`rated_sample`: generator truth rated by a simulated annotator panel from what the
  faces look like (:func:`facebias.annotate.simulate.perceived_truth`: the intended
  attributes blurred per image); :func:`observational_rated`: the PPB-like sample rated.

Used by :mod:`facebias.studies.transects`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.simulate import PERCEIVED_ATTRIBUTES, perceived_truth

__all__ = ["observational_sample", "confounded_latents", "rated_sample", "observational_rated"]


def _decision_values(generator: Any, z: np.ndarray) -> pd.DataFrame:
    if hasattr(generator, "decision_values"):
        return pd.DataFrame(generator.decision_values(z), columns=list(generator.ATTRIBUTES))
    t = generator.truth(z)[list(generator.ATTRIBUTES)].to_numpy(float).clip(1e-6, 1 - 1e-6)
    return pd.DataFrame(np.log(t / (1 - t)), columns=list(generator.ATTRIBUTES))


def observational_sample(generator: Any, n: int, seed: int, confounding: float = -0.6,
                         pool: int = 10) -> tuple[pd.DataFrame, np.ndarray]:
    """A PPB-like *observational* sample: within each gender, hair length is correlated
    with skin tone (``confounding`` < 0: darker skin, shorter hair).

    ``pool * n`` latents are drawn; ``x`` = standardised skin decision value, ``y`` =
    standardised hair decision value residualised on gender (within-gender hair). Each
    latent gets the weight ``exp(confounding * x * y)`` and ``n`` are drawn without
    replacement with probability proportional to it: for a bivariate standard normal
    ``(x, y)`` this tilt gives exactly ``corr(x, y) = confounding`` (|confounding| < 1).
    Returns ``(truth, latents)`` with ``truth = generator.truth`` (its column names; see
    :func:`truth_scores`).

    Parameters
    ----------
    generator : object
        A generator with truth (``sample``, ``truth``, and ``decision_values`` or truth
        in (0, 1) read as logits) with ``gender``, ``skin_tone`` and ``hair_length``.
    n : int
        Faces in the sample.
    seed : int
        Seed of the latents and of the weighted draw.
    confounding : float, default -0.6
        Target within-gender corr(skin, hair), in (-1, 1).
    pool : int, default 10
        Latents drawn per face kept (>= 1).

    Returns
    -------
    truth : pandas.DataFrame
        The sample's generator truth (fresh index).
    latents : numpy.ndarray
        (n, D) latents in the order of ``truth``.

    Raises
    ------
    ValueError
        If ``confounding`` is not in (-1, 1) or ``pool < 1``.
    """
    if not -1 < confounding < 1:
        raise ValueError(f"confounding must be in (-1, 1), got {confounding}")
    if pool < 1:
        raise ValueError(f"pool must be >= 1, got {pool}")
    z = generator.sample(int(n) * int(pool), seed=seed)
    dv = _decision_values(generator, z)
    skin = dv["skin_tone"].to_numpy()
    g = dv["gender"].to_numpy()
    h = dv["hair_length"].to_numpy()
    gc = g - g.mean()
    h_res = h - h.mean() - gc * (gc @ (h - h.mean())) / (gc @ gc)
    x = (skin - skin.mean()) / skin.std()
    y = h_res / h_res.std()
    w = np.exp(confounding * x * y)
    rng = np.random.default_rng([int(seed), 1270])
    pick = np.sort(rng.choice(len(z), size=int(n), replace=False, p=w / w.sum()))
    zs = z[pick]
    return generator.truth(zs).reset_index(drop=True), zs


def _correlate(r: np.ndarray, c: float) -> np.ndarray:
    """Rows ``r`` (m, 2), centred, mapped by ``L1 L0^-1`` (Cholesky factors of their sample
    covariance and of the target: same variances, correlation ``c``)."""
    s0 = r.T @ r / len(r)
    sd = np.sqrt(np.diag(s0))
    s1 = np.array([[sd[0] ** 2, c * sd[0] * sd[1]], [c * sd[0] * sd[1], sd[1] ** 2]])
    return r @ (np.linalg.cholesky(s1) @ np.linalg.inv(np.linalg.cholesky(s0))).T


def confounded_latents(generator: Any, normals: Any, n: int, seed: int,
                       confounding: float | tuple[float, float] = -0.6, x: str = "skin_tone", y: str = "light",
                       given: str = "gender", margin: float = 0.0, balanced: bool = False,
                       pool: int = 50) -> tuple[np.ndarray, pd.DataFrame]:
    """An *observational* sample for any backend: ``n`` latents where, within each side of
    ``given`` (gender: decision value <= 0 / > 0), the decision values of ``x`` and ``y``
    (fitted :class:`~facebias.generate.hyperplanes.Hyperplanes` ``normals``) have the
    correlation ``confounding`` (one value for both sides, or ``(low side, high side)``:
    e.g. ``(-0.6, 0.6)`` with skin tone and a shortcut whose training set put women at its
    high end: darker skin comes with the level tied to the other gender, in each gender).

    ``margin`` > 0 keeps only draws with ``|given decision value| >= margin`` (faces whose
    gender the hyperplane calls clearly, so the side matches a labeller's reading more
    often; the sides are what the correlation is built on) and ``balanced`` takes ``n // 2``
    from each side (the rest from the high side): the first such draws of ``pool * n``
    prior draws, in order (``ValueError`` if too few).

    ``n`` latents are drawn from the generator's prior; within each side, ``x`` and ``y``'s
    decision values are residualised on ``given``'s (least squares) and mapped by
    ``L1 L0^-1`` (Cholesky factors of their sample covariance and of the target: same
    variances, the requested correlation), so their within-side sample correlation is the
    requested one exactly. Each latent moves by the shortest step that makes those changes
    with ``given``'s decision value unchanged (within the span of the three normals), so
    attributes correlated with ``x`` or ``y`` follow them as in a photo collection selected
    that way. For a Gaussian prior (``z ~ N(0, I)``) this is a draw from the prior tilted
    to that correlation (what selecting from an infinite pool gives; selecting ``n``
    without replacement from a pool of ``10 n`` with weights ``exp(t x y)``, as
    :func:`observational_sample` does, falls short: about -0.41 within gender for a
    requested -0.6 in a check with Gaussian decision values). Returns ``(latents (n, D),
    values)``, ``values`` = every hyperplane's decision value per latent (columns
    ``normals.names``). Deterministic in ``seed``.

    Parameters
    ----------
    generator : object
        A backend with ``sample(n, seed=)``.
    normals : facebias.generate.hyperplanes.Hyperplanes
        Fitted hyperplanes (``names``, ``select``, ``values``).
    n : int
        Latents.
    seed : int
        Seed of the draws.
    confounding : float or tuple of float, default -0.6
        Within-side correlation(s), in (-1, 1).
    x, y, given : str, default "skin_tone", "light", "gender"
        Three distinct hyperplanes.
    margin : float, default 0.0
        Least |decision value| of ``given`` kept.
    balanced : bool, default False
        Take half the latents from each side of ``given``.
    pool : int, default 50
        Draws per latent available to ``margin`` / ``balanced``.

    Returns
    -------
    latents : numpy.ndarray
        (n, D) latents.
    values : pandas.DataFrame
        Their decision values, one column per hyperplane.

    Raises
    ------
    ValueError
        For a correlation outside (-1, 1), hyperplanes that are missing or not distinct,
        too few draws beyond ``margin`` or on a side, or fewer than 3 latents on a side.
    """
    pair = (confounding, confounding) if np.ndim(confounding) == 0 else tuple(confounding)
    if len(pair) != 2 or not all(-1 < float(c) < 1 for c in pair):
        raise ValueError(f"confounding must be in (-1, 1) (one value or two), got {confounding}")
    missing = [a for a in (x, y, given) if a not in normals.names]
    if missing or len({x, y, given}) < 3:
        raise ValueError(f"x, y, given must be three distinct hyperplanes of {list(normals.names)}, "
                         f"got {(x, y, given)}")
    A, off = normals.select([x, y, given])  # (3, D), (3,)
    if margin > 0 or balanced:
        cand = np.asarray(generator.sample(int(n) * int(pool), seed=seed), dtype=float)
        g0 = cand @ A[2] + off[2]
        ok = np.abs(g0) >= margin
        if balanced:
            lo_idx, hi_idx = np.flatnonzero(ok & (g0 <= 0)), np.flatnonzero(ok & (g0 > 0))
            want = (int(n) // 2, int(n) - int(n) // 2)
            if len(lo_idx) < want[0] or len(hi_idx) < want[1]:
                raise ValueError(f"confounded_latents: {len(lo_idx)} / {len(hi_idx)} of {len(cand)} draws on the "
                                 f"two sides of {given!r} beyond margin {margin}; {want} wanted (raise pool)")
            pick = np.sort(np.r_[lo_idx[: want[0]], hi_idx[: want[1]]])
        else:
            pick = np.flatnonzero(ok)[: int(n)]
            if len(pick) < n:
                raise ValueError(f"confounded_latents: only {len(pick)} of {len(cand)} draws beyond margin {margin}")
        z = cand[pick]
    else:
        z = np.asarray(generator.sample(int(n), seed=seed), dtype=float)
    v = z @ A.T + off
    delta = np.zeros_like(v)
    side = v[:, 2] > 0
    for m, c in ((~side, float(pair[0])), (side, float(pair[1]))):
        if m.sum() < 3:
            raise ValueError(f"confounded_latents: fewer than 3 latents on one side of {given!r}; raise n")
        w = v[m] - v[m].mean(axis=0)
        g = w[:, 2]
        r = w[:, :2] - np.outer(g, (g @ w[:, :2]) / (g @ g))  # x, y residualised on given
        delta[m, :2] = _correlate(r, c) - r  # wanted change of the decision values
    zc = z + delta @ np.linalg.solve(A @ A.T, A)  # min-norm move: A @ step = delta
    return zc, normals.values(zc)


def rated_sample(truth: pd.DataFrame, latents: np.ndarray, panel: Any, item_prefix: str = "obs",
                 n_votes: int = 5, perception_sd: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Generator truth of a sample rated by a simulated annotator panel.

    Returns one row per face, index ``item_id`` (``<item_prefix>00000`` ... unless ``truth``
    has an ``item_id`` column), with the truth as ``true_<attribute>`` (plus
    ``true_uncanny`` from :func:`facebias.annotate.simulate.realism_truth` of the latents),
    the perceived values as ``seen_<attribute>`` (:func:`perceived_truth` with
    ``perception_sd`` and ``seed``: what the panel is shown) and the trimmed-mean 004 scores
    in [0, 1] of ``n_votes`` simulated votes per question.

    Parameters
    ----------
    truth : pandas.DataFrame
        Generator truth, one row per face (optionally with ``item_id``).
    latents : numpy.ndarray
        (n, D) latents of the same faces (for the realism truth).
    panel : object
        A simulated annotator panel (:mod:`facebias.annotate.simulate`).
    item_prefix : str, default "obs"
        Prefix of generated item ids.
    n_votes : int, default 5
        Votes per image and question.
    perception_sd : float, default 0.0
        Per-image boundary ambiguity (:func:`perceived_truth`); 0 = raters perceive the
        intended attributes.
    seed : int, default 0
        Seed of the perception shifts.

    Returns
    -------
    pandas.DataFrame
        ``true_*`` and ``seen_*`` columns and one score column per 004 question (0 = the
        scale's first level), index ``item_id``.

    Raises
    ------
    ValueError
        If ``truth`` and ``latents`` differ in length.
    """
    from facebias.annotate import SCALES_TRANSECTS, scores_from_votes, simulate_image_votes
    from facebias.annotate.simulate import ATTR_MAP_TRANSECTS, realism_truth

    if len(truth) != len(latents):
        raise ValueError(f"truth has {len(truth)} rows but latents {len(latents)}")
    t = truth.drop(columns=["item_id"], errors="ignore").add_prefix("true_")
    ids = truth["item_id"] if "item_id" in truth else [f"{item_prefix}{i:05d}" for i in range(len(truth))]
    t = t.assign(item_id=list(ids), true_uncanny=realism_truth(np.asarray(latents)))
    seen = perceived_truth(t, perception_sd, seed)
    votes = simulate_image_votes(seen, SCALES_TRANSECTS, n_votes, panel, ATTR_MAP_TRANSECTS)
    seen_cols = [c for c in PERCEIVED_ATTRIBUTES if c in seen]
    seen_part = seen.set_index("item_id")[seen_cols].rename(columns=lambda c: "seen_" + c[len("true_"):])
    return t.set_index("item_id").join(seen_part).join(scores_from_votes(votes, SCALES_TRANSECTS))


def observational_rated(generator: Any, panel: Any, n: int, seed: int, confounding: float,
                        perception_sd: float = 0.0) -> tuple[pd.DataFrame, np.ndarray]:
    """The PPB-like observational sample (:func:`observational_sample`) rated by ``panel``
    (:func:`rated_sample`, items ``obs00000`` ...): ``(rated, latents)``.

    Parameters
    ----------
    generator : object
        A generator with truth.
    panel : object
        A simulated annotator panel.
    n : int
        Faces.
    seed : int
        Seed of the sample.
    confounding : float
        Within-gender corr(skin, hair), in (-1, 1).
    perception_sd : float, default 0.0
        Per-image boundary ambiguity (:func:`perceived_truth`, seeded by ``seed``).

    Returns
    -------
    rated : pandas.DataFrame
        As :func:`rated_sample`.
    latents : numpy.ndarray
        (n, D) latents.

    Raises
    ------
    ValueError
        As :func:`observational_sample`.
    """
    truth, z = observational_sample(generator, n, seed=seed, confounding=confounding)
    return rated_sample(truth, z, panel, "obs", perception_sd=perception_sd, seed=seed), z
