"""000's age / expression sequences around a prototype latent.

Implements ``docs/specs/hcic.md`` B1.3 (paper 000): the distance along an attribute
direction at which a score first reaches its target (:func:`calibrate_distance`;
:data:`AGE_TARGET` 0.8, :data:`EXPRESSION_TARGET` 0.9) and the ``2n + 1`` latents of the
sequence (:func:`attribute_sequence`, :data:`SEQUENCE_N` steps a side).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from facebias.latent.checks import finite_array

# --------------------------------------------------------------------------- constants
#: Normalised score the age / expression traversal must reach at offset +d (B1.3).
AGE_TARGET: float = 0.8
EXPRESSION_TARGET: float = 0.9
#: Steps on each side of the prototype in an age / expression sequence (2n + 1 = 5 images).
SEQUENCE_N: int = 2


class SequenceCalibrationWarning(UserWarning):
    """An age / expression traversal did not calibrate normally (already at the target,
    or the target was never reached within ``max_distance``)."""


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate_distance`.

    Attributes
    ----------
    d : float
        Distance along the unit direction (latent-space units).
    status : str
        ``"reached"``, ``"already_at_target"`` (score at ``z`` >= target, ``d = 0``) or
        ``"not_reached"`` (``d = max_distance``).
    score_start, score_end : float
        Scores at ``z`` and at the last evaluated step.
    n_evaluated : int
        Latents passed to ``score_fn``.
    """

    d: float
    status: str
    score_start: float
    score_end: float
    n_evaluated: int


def _unit(direction: Any, dim: int) -> np.ndarray:
    u = finite_array(direction, "direction", (1,))
    if u.shape != (dim,):
        raise ValueError(f"direction: expected shape ({dim},) to match z, got {u.shape}")
    norm = np.linalg.norm(u)
    if norm == 0:
        raise ValueError("direction: the zero vector has no direction")
    return u / norm


def _scores(score_fn: Callable[[np.ndarray], Any], batch: np.ndarray) -> np.ndarray:
    s = np.asarray(score_fn(batch), dtype=np.float64).reshape(-1)
    if s.shape != (batch.shape[0],):
        raise ValueError(f"score_fn: returned {s.size} scores for {batch.shape[0]} latents")
    if not np.isfinite(s).all():
        raise ValueError("score_fn: returned non-finite scores (NaN or inf)")
    return s


def calibrate_distance(z: Any, direction: Any, score_fn: Callable[[np.ndarray], Any],
                       target: float, step: float = 0.05, max_distance: float = 10.0,
                       batch_size: int = 16, refine: bool = True) -> Calibration:
    """Distance ``d`` along ``+direction/||direction||`` from ``z`` at which
    ``score_fn`` first reaches ``target`` (B1.3).

    Scores the latents ``z + t·u`` for ``t = 0, step, 2·step, ...`` (up to
    ``max_distance``) in batches of ``batch_size`` (``score_fn`` takes an ``(m, D)``
    batch and returns ``m`` scores; it may render images). ``d`` is the first ``t`` with
    score >= target; with ``refine`` the crossing is interpolated linearly between the two
    bracketing steps (exact for a linear ``score_fn``: ``d = (target - s(z)) / ||a||``).

    Parameters
    ----------
    z : array_like
        (D,) start latent.
    direction : array_like
        (D,) direction, normalised to unit length.
    score_fn : callable
        ``(m, D)`` latents -> ``m`` finite scores (e.g. a normalised attribute score).
    target : float
        Score to reach (e.g. :data:`AGE_TARGET`).
    step : float, default 0.05
        Distance between scored latents (> 0).
    max_distance : float, default 10.0
        Furthest distance scored (> 0).
    batch_size : int, default 16
        Latents per ``score_fn`` call.
    refine : bool, default True
        Interpolate the crossing linearly.

    Returns
    -------
    Calibration
        ``d``, ``status`` and the scores at both ends.

    Raises
    ------
    ValueError
        For non-finite or mismatched ``z``/``direction``, a zero direction, a non-positive
        ``step`` or ``max_distance``, a non-positive integer ``batch_size``, a non-finite
        ``target``, or ``score_fn`` returning the wrong number of scores or a NaN/inf.

    Examples
    --------
    >>> cal = calibrate_distance(np.zeros(2), [2.0, 0.0], lambda b: 0.5 * b[:, 0], target=0.8)
    >>> round(cal.d, 6), cal.status  # 0.5 * d = 0.8
    (1.6, 'reached')
    """
    a = finite_array(z, "z", (1,))
    u = _unit(direction, a.shape[0])
    if not step > 0:
        raise ValueError(f"step: expected a positive number, got {step!r}")
    if not max_distance > 0:
        raise ValueError(f"max_distance: expected a positive number, got {max_distance!r}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive integer, got {batch_size!r}")
    if not np.isfinite(target):
        raise ValueError(f"target: expected a finite number, got {target!r}")
    n_steps = int(np.floor(max_distance / step + 1e-9))
    ts = np.arange(n_steps + 1) * step
    if ts[-1] < max_distance - 1e-12:
        ts = np.append(ts, max_distance)
    s0 = float(_scores(score_fn, a[None, :])[0])
    if s0 >= target:
        return Calibration(0.0, "already_at_target", s0, s0, 1)
    prev_t, prev_s, n_eval = 0.0, s0, 1
    for start in range(1, ts.size, int(batch_size)):
        t = ts[start : start + int(batch_size)]
        s = _scores(score_fn, a[None, :] + t[:, None] * u[None, :])
        n_eval += t.size
        hit = np.flatnonzero(s >= target)
        if hit.size:
            i = int(hit[0])
            t_hi, s_hi = float(t[i]), float(s[i])
            t_lo, s_lo = (prev_t, prev_s) if i == 0 else (float(t[i - 1]), float(s[i - 1]))
            d = t_hi
            if refine and s_hi > s_lo:
                d = t_lo + (target - s_lo) / (s_hi - s_lo) * (t_hi - t_lo)
            return Calibration(float(d), "reached", s0, s_hi, n_eval)
        prev_t, prev_s = float(t[-1]), float(s[-1])
    return Calibration(float(max_distance), "not_reached", s0, prev_s, n_eval)


def attribute_sequence(z: Any, direction: Any, score_fn: Callable[[np.ndarray], Any],
                       target: float, step: float = 0.05, n: int = SEQUENCE_N,
                       max_distance: float = 10.0, batch_size: int = 16,
                       refine: bool = True) -> tuple[np.ndarray, float]:
    """000's age / expression sequence around a prototype ``z`` (D,) (B1.3).

    ``d`` comes from :func:`calibrate_distance` (step along the unit ``direction`` until
    ``score_fn`` reaches ``target``: :data:`AGE_TARGET` 0.8, :data:`EXPRESSION_TARGET`
    0.9). Returns ``(latents (2n+1, D), d)`` with ``latents[n + k] = z + (k d / n) u`` for
    ``k = -n..n`` (only the + side is calibrated; the - side mirrors it; ``latents[n]`` is
    ``z``). If ``z`` already scores >= target, ``d = 0`` (all copies of ``z``); if the
    target is not reached, ``d = max_distance``; both emit a
    :class:`SequenceCalibrationWarning`. Use :func:`calibrate_distance` for the status.

    Parameters
    ----------
    z : array_like
        (D,) prototype latent.
    direction : array_like
        (D,) attribute direction (normalised to unit length).
    score_fn : callable
        ``(m, D)`` latents -> ``m`` finite scores.
    target : float
        Score the + side must reach.
    step, max_distance, batch_size, refine
        As in :func:`calibrate_distance`.
    n : int, default :data:`SEQUENCE_N`
        Steps on each side (>= 1).

    Returns
    -------
    latents : numpy.ndarray
        (2n + 1, D) float64, ``latents[n]`` = ``z``.
    d : float
        The calibrated distance.

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer, or as :func:`calibrate_distance`.

    Examples
    --------
    >>> lat, d = attribute_sequence(np.zeros(2), [1.0, 0.0], lambda b: 0.5 * b[:, 0], 0.8)
    >>> np.round(lat[:, 0], 6) + 0.0, round(d, 6)
    (array([-1.6, -0.8,  0. ,  0.8,  1.6]), 1.6)
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    cal = calibrate_distance(z, direction, score_fn, target, step=step,
                             max_distance=max_distance, batch_size=batch_size, refine=refine)
    if cal.status != "reached":
        what = (f"already scores {cal.score_start:.4g} >= target {target:.4g}; d = 0"
                if cal.status == "already_at_target" else
                f"never reached target {target:.4g} within max_distance {max_distance:.4g} (last score {cal.score_end:.4g}); "
                "d capped")
        warnings.warn(f"attribute_sequence: the latent {what}", SequenceCalibrationWarning,
                      stacklevel=2)
    a = np.asarray(z, dtype=np.float64)
    u = _unit(direction, a.shape[0])
    k = np.arange(-int(n), int(n) + 1, dtype=np.float64)
    return a[None, :] + (k * cal.d / n)[:, None] * u[None, :], cal.d
