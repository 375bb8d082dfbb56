"""Paper 001, score normalisation (``docs/specs/rapid.md`` section 1.4).

Per system a 2-component Gaussian mixture (``random_state = 42``) on that system's scores;
its two means ``lo < hi`` map to 0 and 1, then clip to [0, 1] (monotone). Used for
estimation only; every curve uses the raw scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from facebias.metrics import check_scores
from facebias.studies.rapid.config import RapidConfig
from facebias.studies.rapid.nodes import _factorize_sorted
from facebias.validate import require_columns


def gmm_modes(values: np.ndarray, seed: int = 42, max_fit: int = 50_000) -> tuple[float, float]:
    """The two means ``(lo, hi)`` of a 2-component 1-D Gaussian mixture fit to ``values``.

    At most ``max_fit`` values (a seeded subsample; 0 = all) are used. If the modes are
    closer than 0.1 x the score range, the 1st and 99th percentiles are returned instead.

    Parameters
    ----------
    values : numpy.ndarray
        1-D finite scores of one system.
    seed : int, default 42
        ``random_state`` of the mixture and seed of the subsample.
    max_fit : int, default 50000
        Largest number of values fitted.

    Returns
    -------
    lo, hi : float
        The impostor and genuine modes, in score units, ``lo < hi``.

    Raises
    ------
    ValueError
        For non-finite values or fewer than two distinct scores.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> v = np.r_[rng.normal(0.0, 0.05, 200), rng.normal(0.7, 0.05, 100)]
    >>> [round(m, 1) for m in gmm_modes(v)]
    [0.0, 0.7]
    """
    from sklearn.mixture import GaussianMixture

    v = check_scores(values, "values").astype(np.float64)
    if v.size < 2 or v.max() == v.min():
        raise ValueError("gmm_modes: need at least two distinct scores")
    fit = v
    if max_fit and v.size > max_fit:
        fit = np.random.default_rng(seed).choice(v, max_fit, replace=False)
    gm = GaussianMixture(n_components=2, random_state=seed).fit(fit[:, None])
    lo, hi = np.sort(gm.means_.ravel())
    if hi - lo < 0.1 * (v.max() - v.min()):
        lo, hi = np.percentile(v, [1, 99])
    return float(lo), float(hi)


def normalise_scores(scores: pd.DataFrame, cfg: RapidConfig | None = None,
                     fit_scores: pd.DataFrame | None = None) -> pd.Series:
    """Scores mapped per system so that the impostor mode is 0 and the genuine mode 1,
    clipped to [0, 1] (monotone within a system). Estimation only; curves use raw scores.

    Parameters
    ----------
    scores : pandas.DataFrame
        Columns ``system, score`` (raw similarities).
    cfg : RapidConfig, optional
        ``normalise``, ``modes`` and the GMM settings; default ``RapidConfig()``.
    fit_scores : pandas.DataFrame, optional
        More scores of the same systems (columns ``system, score``; e.g. the cross-query
        pairs) to fit the modes on as well, as the authors' code does.

    Returns
    -------
    pandas.Series
        float64 in [0, 1], aligned with ``scores``, named ``score_norm``.

    Raises
    ------
    ValueError
        For a missing column, a non-finite score, a missing system name, or a system
        the GMM cannot fit.

    Examples
    --------
    >>> scores = pd.DataFrame({"system": ["a", "a", "b", "b"], "score": [20.0, 80.0, 0.2, 0.9]})
    >>> normalise_scores(scores, RapidConfig(modes={"a": [20, 80], "b": [0.2, 0.8]})).tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    cfg = cfg or RapidConfig()
    require_columns(scores, ["system", "score"], "scores")
    raw = check_scores(scores["score"].to_numpy(), "scores.score", scores.index)
    codes, systems = _factorize_sorted(scores["system"])
    lo, hi = _system_modes(raw, codes, systems, cfg, fit_scores)
    out = _rescale(raw, lo[codes], (hi - lo)[codes], np.empty(raw.size))
    return pd.Series(out, index=scores.index, name="score_norm")


def _system_modes(raw: np.ndarray, codes: np.ndarray, systems: pd.Index, cfg: RapidConfig,
                  fit_scores: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """The modes ``lo``, ``hi`` (float64, one per system of ``systems``) that
    :func:`normalise_scores` maps to 0 and 1: ``cfg.modes``, else the GMM's, fitted on the
    system's checked scores in ``raw`` (row ``i`` of system ``systems[codes[i]]``, codes of
    ``pd.factorize(system, sort=True)``) and its ``fit_scores``; 0 and 1 for
    ``normalise="none"`` (then the scores are only clipped)."""
    extra_sys = extra = None
    if fit_scores is not None:
        require_columns(fit_scores, ["system", "score"], "fit_scores")
        extra = check_scores(fit_scores["score"].to_numpy(), "fit_scores.score")
        extra_sys = fit_scores["system"].astype(str).to_numpy()
    lo, hi = np.zeros(len(systems)), np.ones(len(systems))
    if cfg.normalise == "none":
        return lo, hi
    for k, s in enumerate(np.asarray(systems, dtype=object)):  # CategoricalIndex.tolist: ~0.2 ms
        if s in cfg.modes:
            lo[k], hi[k] = (float(m) for m in cfg.modes[s])
        else:
            v = raw[codes == k].astype(np.float64)
            fit = v if extra is None else np.r_[v, extra[extra_sys == str(s)]]
            lo[k], hi[k] = gmm_modes(fit, cfg.gmm_seed, cfg.gmm_max_fit)
    return lo, hi


def _rescale(x: np.ndarray, lo: np.ndarray, scale: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``clip((x - lo) / scale, 0, 1)`` into ``out`` (float64; ``lo`` and ``scale = hi - lo``
    broadcast against ``x``): the normalisation's arithmetic, the same bits whether applied
    row by row or to the matrices the rows fill (with 0 and 1, ``x`` clipped)."""
    np.subtract(x, lo, out=out)
    np.divide(out, scale, out=out)
    return np.clip(out, 0.0, 1.0, out=out)
