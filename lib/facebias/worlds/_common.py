"""Helpers shared by the known-truth worlds: seeded random streams, unit vectors and
validation of numbers and per-group settings."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

# Tags of the independent random streams (SeedSequence spawn keys). Every world draws
# from its own tags; keep them distinct across worlds.
_FOLDS, _PAIRS, _SYSTEM, _TRUTH, _FACTORS = 0, 1, 2, 3, 4  # BFW (0-3), BA-test (4)
_R_QUERIES, _R_FACES, _R_CROSS = 101, 102, 103  # rapid test


def _rng(seed: int, *key: int) -> np.random.Generator:
    """The generator of stream ``key`` (spawn key) under ``seed``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _name_key(name: str) -> int:
    """A stable integer for ``name`` (CRC-32 of its UTF-8 bytes), to key a stream by name."""
    return zlib.crc32(name.encode("utf-8"))


def _unit(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to unit Euclidean norm along the last axis."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _number(value: Any, key: str) -> float:
    """``value`` as a finite float; ``ValueError`` naming ``key`` otherwise (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{key} must be a number, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{key} must be finite, got {value!r}")
    return float(value)


def _per_group(values: Any, key: str, groups: tuple[str, ...]) -> dict[str, float]:
    """The mapping ``values`` as ``{group: float}`` in ``groups`` order; ``ValueError``
    naming ``key`` on a non-mapping, an unknown or missing group, or a non-number."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{key} must be a mapping group -> number, got {type(values).__name__}")
    unknown = sorted(set(values) - set(groups), key=str)
    if unknown:
        raise ValueError(f"{key}: unknown group(s) {unknown}; expected {list(groups)}")
    missing = [g for g in groups if g not in values]
    if missing:
        raise ValueError(f"{key}: missing group(s) {missing}")
    return {g: _number(values[g], f"{key}.{g}") for g in groups}


def _by_group(groups: tuple[str, ...], *values: float) -> dict[str, float]:
    """``{groups[i]: values[i]}``; one value per group."""
    return dict(zip(groups, values, strict=True))
