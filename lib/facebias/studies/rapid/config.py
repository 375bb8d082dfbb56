"""Paper 001, the study's parameters: :class:`RapidConfig` (the method, ``params.yaml``
section ``rapid``; ``docs/specs/rapid.md`` sections 1.4, 1.5 and 5) and
:class:`RapidExperimentConfig` (what ``notebooks/rapid.py`` measures, section
``rapid_experiment``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from facebias.config import RATE, Section, integer, listof, number, param, text


def _modes(value: Any, name: str) -> Any:
    """System -> ``[lo, hi]`` with ``lo < hi`` (kept as given)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping system -> [lo, hi], got {value!r}")
    for s, m in value.items():
        if len(m) != 2 or not float(m[0]) < float(m[1]):
            raise ValueError(f"{name}.{s} must be [lo, hi] with lo < hi, got {m!r}")
    return value


_SHARE = number(0.0, 1.0, open_low=True)


@dataclass(frozen=True)
class RapidConfig(Section):
    """Parameters of the method (``params.yaml`` section ``rapid``).

    Parameters
    ----------
    eig_threshold : float, default 4.0
        Eigenvalue threshold T (paper: 4), >= 0.
    gap_ratio : float, default 1.5
        Eigen-gap ratio of the ``"gap"`` rule (authors' code: 1.5), >= 1.
    rule : {"gap", "strict"}, default "gap"
        Cluster count rule: ``"gap"`` (code) or ``"strict"`` (paper: exactly one
        eigenvalue > T); see :func:`cluster_count`.
    tau : float, default 0.2
        Membership threshold on ``z``: member iff ``z > tau``.
    min_faces_query : int, default 8
        Least faces in a query's common face set.
    min_faces_cluster : int, default 5
        Least members per system.
    normalise : {"gmm", "none"}, default "gmm"
        Per-system GMM mode normalisation, or ``"none"`` (scores already in [0, 1]-like
        units: only clipped).
    modes : dict, default {}
        System -> [lo, hi] fixed by hand (skips the GMM for that system).
    gmm_seed : int, default 42
        Seed of the GMM and its subsample.
    gmm_max_fit : int, default 50000
        The GMM is fit on at most this many scores per system (a seeded subsample; 0 =
        all).

    Raises
    ------
    ValueError
        For an unknown rule or normalisation, a value out of range or mistyped, or a
        mode pair that is not ``lo < hi``.

    Examples
    --------
    >>> RapidConfig.from_params({"tau": 0.3}).tau
    0.3
    >>> RapidConfig.from_params({"threshold": 4})
    Traceback (most recent call last):
    ...
    ValueError: rapid: unknown key(s) ['threshold']; known keys are [...]
    """

    section = "rapid"
    eig_threshold: float = param(4.0, number(0.0))
    gap_ratio: float = param(1.5, number(1.0))
    rule: str = param("gap", text("gap", "strict"))
    tau: float = param(0.2, number())
    min_faces_query: int = param(8, integer(0))
    min_faces_cluster: int = param(5, integer(0))
    normalise: str = param("gmm", text("gmm", "none"))
    modes: dict[str, Sequence[float]] = param(factory=dict, check=_modes)
    gmm_seed: int = param(42, integer(0))
    gmm_max_fit: int = param(50_000, integer(0))


@dataclass(frozen=True)
class RapidExperimentConfig(Section):
    """What ``notebooks/rapid.py`` measures on the known-truth world (``params.yaml``
    section ``rapid_experiment``; the method is :class:`RapidConfig`, the world
    ``rapid_world``). Defaults: the committed study.

    Parameters
    ----------
    fmr : tuple of float, default (0.01, 0.001)
        FMRs at which FNMR is read (the first is the headline), fractions in (0, 1).
    p_sweep : tuple of float
        Shares p in (0, 1] of a query's faces that show the queried person, one world
        each (:func:`p_sweep`).
    sweep_seeds : tuple of int, default (1001,)
        World seeds per p.
    sweep_queries_per_group : int, default 25
        Queries per group of each sweep world (>= 1).
    semi_p : float, default 0.5
        p of the partial-annotation world, in (0, 1].
    semi_fractions : tuple of float
        Annotated fractions of its faces, in [0, 1] (:func:`semi_supervised_curve`).
    semi_seed : int, default 0
        Their order.
    bias_boot : int, default 200
        Query-bootstrap resamples of the per-group bias test (:func:`group_bias`, >= 2).
    bias_seed : int, default 0
        Its seed.
    world_seeds : int, default 10
        World seeds of the seed sweep (:func:`facebias.studies.rapid.seeds.rapid_seed_table`),
        from ``rapid_world.seed`` on (1 = the committed world only).

    Raises
    ------
    ValueError
        For a mistyped value or one out of range.
    """

    section = "rapid_experiment"
    fmr: tuple[float, ...] = param((0.01, 0.001), listof(RATE))
    p_sweep: tuple[float, ...] = param((0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), listof(_SHARE))
    sweep_seeds: tuple[int, ...] = param((1001,), listof(integer(0)))
    sweep_queries_per_group: int = param(25, integer(1))
    semi_p: float = param(0.5, _SHARE)
    semi_fractions: tuple[float, ...] = param((0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0), listof(number(0.0, 1.0)))
    semi_seed: int = param(0, integer(0))
    bias_boot: int = param(200, integer(2))
    bias_seed: int = param(0, integer(0))
    world_seeds: int = param(10, integer(1))
