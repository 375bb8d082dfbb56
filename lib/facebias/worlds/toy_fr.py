"""A toy face-recognition system for paper 000's planted-effect checks (B5.11).

Embeddings of the HCIC images table (one row per image: ``image_id, seed, group,
attribute, level``) built from identity, group and prototype directions plus an edit per
step away from the prototype and group-dependent noise: ``group_noise`` plants worse
recognition of chosen groups, the known truth the study must recover.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["TOY_EDIT_STRENGTH", "simulate_embeddings"]

#: Edit strength per unit of |level - centre| in the toy system (pose strongest).
TOY_EDIT_STRENGTH = {"pose": 0.6, "expression": 0.36, "age": 0.27, "light": 0.36}


def _rng(seed: int, *keys: Any) -> np.random.Generator:
    codes = [zlib.crc32(str(k).encode()) for k in keys]
    return np.random.default_rng([int(seed), *codes])


def simulate_embeddings(images: pd.DataFrame, dim: int = 64, group_noise: Mapping[str, float] | None = None,
                        edit_scale: float = 1.0, seed: int = 0, *, identity: float = 1.0,
                        group_offset: float = 0.6, prototype_jitter: float = 0.3,
                        noise: float = 0.5, centre: Mapping[str, int]) -> pd.DataFrame:
    """A toy face-recognition system for planted-effect checks (B5.11): unit embeddings,
    so cosine similarity is their dot product.

    Embedding of an image of prototype (seed s, group g) at attribute level l:
    ``identity * u_s + group_offset * v_g + prototype_jitter * w_(s,g)
    + edit_scale * TOY_EDIT_STRENGTH[attr] * |l - centre| * r_image + sigma_g * n_image``,
    then L2-normalised. ``u, v, w, r, n`` are N(0, I/dim) draws (norm ~1) keyed by their
    entity's id and ``seed`` (independent of row order); ``centre``: each sequence's centre
    level, e.g. :func:`facebias.studies.hcic.centre_levels` of ``images``. A light sequence centred at level
    0 is the renderer's four unordered lights, each one step from the original; any other
    sequence (the DCGAN's learned light direction too) is ``|l - centre|`` steps.
    ``sigma_g = noise + group_noise.get(g, 0)`` plants worse recognition of some groups
    (groups not in the data are ignored). Same image id -> same vector, so self pairs
    score 1.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image: ``image_id, seed, group, attribute, level``.
    dim : int, default 64
        Embedding dimension (>= 2).
    group_noise : mapping of str to float, optional
        Extra noise SD per group (the planted effect); default none.
    edit_scale : float, default 1.0
        Multiplies every edit.
    seed : int, default 0
        Seeds every draw.
    identity, group_offset, prototype_jitter, noise : float
        Weights of ``u_s``, ``v_g``, ``w_(s,g)`` and the base noise SD.
    centre : mapping of str to int
        Centre level of each sequence in :data:`TOY_EDIT_STRENGTH` (keyword only).

    Returns
    -------
    pandas.DataFrame
        float32 unit vectors, indexed by ``image_id`` (as str), columns ``e0..e<dim-1>``.

    Raises
    ------
    ValueError
        For a missing column, ``dim < 2`` or a sequence without a centre level.

    Examples
    --------
    >>> images = pd.DataFrame({"image_id": [0, 1, 2], "seed": [7, 7, 8], "group": "AF",
    ...                        "attribute": "pose", "level": [2, 3, 2]})
    >>> e = simulate_embeddings(images, dim=16,
    ...                         centre={"pose": 2, "expression": 2, "age": 2, "light": 0})
    >>> s = e.to_numpy() @ e.to_numpy().T  # cosine similarities
    >>> bool(s[0, 1] > s[0, 2])  # same prototype, one pose step: more alike than another seed
    True
    """
    require_columns(images, ["image_id", "seed", "group", "attribute", "level"], "images")
    if dim < 2:
        raise ValueError(f"dim: must be >= 2, got {dim}")
    group_noise = dict(group_noise or {})
    missing = [a for a in TOY_EDIT_STRENGTH if a not in centre]
    if missing:
        raise ValueError(f"centre: no centre level for sequence(s) {missing}")
    scale = 1.0 / np.sqrt(dim)
    cache: dict[tuple, np.ndarray] = {}

    def draw(*keys: Any) -> np.ndarray:
        if keys not in cache:
            cache[keys] = _rng(seed, *keys).standard_normal(dim) * scale
        return cache[keys]

    out = np.empty((len(images), dim))
    for i, (iid, s, g, attr, level) in enumerate(zip(images["image_id"], images["seed"], images["group"],
                                                      images["attribute"], images["level"], strict=True)):
        e = identity * draw("seed", s) + group_offset * draw("group", g) + prototype_jitter * draw("proto", s, g)
        edit, eps = _rng(seed, "image", iid).standard_normal((2, dim)) * scale
        if attr in TOY_EDIT_STRENGTH:
            c = centre[attr]
            steps = (level != 0) if (attr == "light" and c == 0) else abs(int(level) - c)
            e = e + edit_scale * TOY_EDIT_STRENGTH[attr] * steps * edit
        e = e + (noise + float(group_noise.get(g, 0.0))) * eps
        out[i] = e / np.linalg.norm(e)
    return pd.DataFrame(out.astype(np.float32), index=pd.Index(images["image_id"].astype(str), name="image_id"),
                        columns=[f"e{j}" for j in range(dim)])
