"""The known-truth world for the BFW thresholds study (002): a synthetic BFW pair table.

Everything here is **synthetic** (``df.attrs["source"] == "synthetic"``) and
deterministic: the same :class:`BFWWorldConfig` gives a byte-identical DataFrame.

Generative model (this *is* the planted truth)
----------------------------------------------
Subgroups ``g`` in :data:`BFW_GROUPS` (ethnicity A/B/I/W x gender F/M), each with
``identities_per_group`` identities and ``images_per_identity`` images. For every
simulated face-recognition system ``s`` independently (its own random stream, derived
from ``seed`` and the system's name):

* a random unit direction ``c_{s,g}`` per subgroup;
* identity template ``t_i = normalize(sqrt(rho_g) c_{s,g} + sqrt(1 - rho_g) z_i)``,
  ``z_i`` uniform on the unit sphere of R^dim;
* image embedding ``x = normalize(t_i + sigma_g eps)``, ``eps ~ N(0, I/dim)``;
* optionally (paper 002 Fig. 4: impostor medians alike but upper percentiles differing,
  genuine pairs differing in mean *and* spread) per-identity heterogeneity:
  ``rho_i = min(rho_g exp(kappa_g v_i - kappa_g^2 / 2), 0.95)`` replaces ``rho_g``
  (``kappa_g`` = ``SystemSpec.similarity_spread``: some identities lie closer to their
  subgroup's direction, which lengthens the impostor upper tail) and
  ``sigma_i = sigma_g exp(tau_g u_i - tau_g^2 / 2)`` replaces ``sigma_g`` (``tau_g`` =
  ``SystemSpec.noise_spread``: spreads the genuine scores), ``v_i, u_i ~ N(0, 1)`` drawn
  after the rest of the subgroup's stream, so with both 0 (the ``SystemSpec`` default) the
  world is as without them; the default systems :data:`SIM_A` and :data:`SIM_B` plant both;
* score of a pair = cosine ``x_a . x_b``, stored as float32.

So ``rho_g`` (``SystemSpec.group_similarity``) plants the within-subgroup impostor
similarity (mean about ``rho_g / (1 + sigma_g^2)``: larger ``rho_g`` -> higher FMR at
one global threshold) and ``sigma_g`` (``SystemSpec.noise``) plants the genuine
scores (mean about ``1 / (1 + sigma_g^2)``: larger ``sigma_g`` -> higher FNMR).
Cross-subgroup impostors have mean about 0. With the spreads, an impostor pair's score
is centred on ``sqrt(rho_i rho_j) / (1 + sigma^2)``, whose median over pairs is about
``rho_g exp(-kappa_g^2 / 2) / (1 + sigma_g^2)``: a subgroup with a larger ``kappa_g``
and a correspondingly larger ``rho_g`` keeps its median impostor score but has a longer
upper tail (the shape of paper 002's Fig. 4, planted in :data:`SIM_A`; see
:func:`planted_truth` for the planted medians, upper percentiles and genuine SDs).

Pairs (the BFW recipe, ``docs/specs/bfw.md`` A.1; identical for every system)
---------------------------------------------------------------------------
Within each subgroup the identities are shuffled (seeded) and dealt round-robin to
``n_folds`` folds. Per fold: all within-identity image pairs (genuine, label 1); per
subgroup all (or ``within_negatives`` sampled) different-identity image pairs
(label 0); and ``round(cross_negatives x #genuine in the fold)`` distinct random
cross-subgroup pairs (label 0; ``a1`` uniform, ``a2`` uniform among the other seven).

Modules
-------
The parameters (:class:`SystemSpec`, :data:`SIM_A`, :data:`SIM_B`,
:class:`BFWWorldConfig`) live in :mod:`facebias.worlds.bfw_config` and are re-exported
here; this module simulates the world (embeddings, pairs, scores), its planted truth and
its file.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from facebias.datasets.bfw import (
    ATT_DTYPE,
    BFW_FOLDERS,
    BFW_GROUPS,
    ETHNICITY_DTYPE,
    GENDER_DTYPE,
    GROUP_DTYPE,
)
from facebias.io import read_parquet, write_parquet
from facebias.worlds._common import (
    _FOLDS,
    _PAIRS,
    _SYSTEM,
    _TRUTH,
    _name_key,
    _rng,
    _unit,
)
from facebias.worlds.bfw_config import SIM_A, SIM_B, BFWWorldConfig, SystemSpec

__all__ = [
    "SystemSpec",
    "SIM_A",
    "SIM_B",
    "BFWWorldConfig",
    "make_bfw_world",
    "image_paths",
    "image_embeddings",
    "image_table",
    "planted_truth",
    "write_world",
    "read_world",
]


# --------------------------------------------------------------------------- model
def _embed_group(
    rng: np.random.Generator, rho: float, sigma: float, n_ids: int, k: int, dim: int,
    kappa: float = 0.0, tau: float = 0.0,
) -> np.ndarray:
    """Unit image embeddings, shape ``(n_ids * k, dim)``, identity-major."""
    c = _unit(rng.standard_normal(dim))
    z = _unit(rng.standard_normal((n_ids, dim)))
    eps = rng.standard_normal((n_ids, k, dim)) / np.sqrt(dim)
    rho_i = np.full((n_ids, 1), rho)
    sigma_i = np.full((n_ids, 1, 1), sigma)
    if kappa > 0:  # drawn after the base stream: kappa = tau = 0 leaves the world as it was
        rho_i = np.minimum(rho * np.exp(kappa * rng.standard_normal((n_ids, 1)) - kappa**2 / 2), 0.95)
    if tau > 0:
        sigma_i = sigma * np.exp(tau * rng.standard_normal((n_ids, 1, 1)) - tau**2 / 2)
    t = _unit(np.sqrt(rho_i) * c + np.sqrt(1.0 - rho_i) * z)
    return _unit(t[:, None, :] + sigma_i * eps).reshape(n_ids * k, dim)


def _group_args(spec: SystemSpec, g: str) -> tuple[float, float, float, float]:
    return spec.rho(g), spec.sigma(g), spec.spread("similarity_spread", g), spec.spread("noise_spread", g)


def _embed_system(config: BFWWorldConfig, spec: SystemSpec) -> np.ndarray:
    """All ``8 * ids * k`` image embeddings of one system, indexed like the image ids."""
    rng = _rng(config.seed, _SYSTEM, _name_key(spec.name))
    n, k = config.identities_per_group, config.images_per_identity
    return np.concatenate(
        [_embed_group(rng, rho, sigma, n, k, config.dim, kappa, tau)
         for rho, sigma, kappa, tau in (_group_args(spec, g) for g in BFW_GROUPS)]
    )


def _folds(config: BFWWorldConfig) -> np.ndarray:
    """Fold (1..K) of every subject id: seeded shuffle per subgroup, then round-robin."""
    rng = _rng(config.seed, _FOLDS)
    n = config.identities_per_group
    fold = np.empty(len(BFW_GROUPS) * n, dtype=np.int8)
    for gi in range(len(BFW_GROUPS)):
        perm = rng.permutation(n)
        fold[gi * n + perm] = np.arange(n) % config.n_folds + 1
    return fold


def _distinct_cross(
    rng: np.random.Generator, images: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct unordered cross-subgroup pairs from ``images`` (groups x block)."""
    n_groups, n_b = images.shape
    a = b = np.empty(0, dtype=np.int64)
    while True:
        m = n - a.size + n // 10 + 16
        ga = rng.integers(n_groups, size=m)
        gb = (ga + rng.integers(1, n_groups, size=m)) % n_groups
        a = np.concatenate([a, images[ga, rng.integers(n_b, size=m)]])
        b = np.concatenate([b, images[gb, rng.integers(n_b, size=m)]])
        key = np.minimum(a, b) * (images.max() + 1) + np.maximum(a, b)
        first = np.sort(np.unique(key, return_index=True)[1])
        a, b = a[first], b[first]
        if a.size >= n:
            return a[:n], b[:n]


def _pairs(config: BFWWorldConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Image-index pairs ``(a, b)``, their fold, and the blocks used to score them.

    Blocks are ``("gram", images, iu, ju)`` (score = upper-triangle entries of the Gram
    matrix of ``images``) or ``("rows", a, b)`` (row-wise dot products).
    """
    rng = _rng(config.seed, _PAIRS)
    fold_of = _folds(config)
    n, k = config.identities_per_group, config.images_per_identity
    iu, ju = np.triu_indices(config.block_images, 1)
    impostor = np.flatnonzero(iu // k != ju // k)
    a_all, b_all, f_all, blocks = [], [], [], []
    for f in range(1, config.n_folds + 1):
        per_group = []
        for gi in range(len(BFW_GROUPS)):
            subj = gi * n + np.flatnonzero(fold_of[gi * n : (gi + 1) * n] == f)
            imgs = (subj[:, None] * k + np.arange(k)).ravel()
            per_group.append(imgs)
            keep = np.ones(iu.size, dtype=bool)
            if config.within_negatives != "all":
                keep[impostor] = False
                n_keep = int(config.within_negatives)
                keep[rng.choice(impostor, size=n_keep, replace=False)] = True
            bi, bj = iu[keep], ju[keep]
            blocks.append(("gram", imgs, bi, bj))
            a_all.append(imgs[bi])
            b_all.append(imgs[bj])
            f_all.append(np.full(bi.size, f, dtype=np.int8))
        n_cross = round(config.cross_negatives * config.genuine_per_fold)
        ca, cb = _distinct_cross(rng, np.stack(per_group), n_cross)
        blocks.append(("rows", ca, cb))
        a_all.append(ca)
        b_all.append(cb)
        f_all.append(np.full(ca.size, f, dtype=np.int8))
    a = np.concatenate(a_all).astype(np.int32)
    b = np.concatenate(b_all).astype(np.int32)
    return a, b, np.concatenate(f_all), blocks


def _score(emb: np.ndarray, blocks: list, bar: tqdm, chunk: int = 1 << 16) -> np.ndarray:
    """Cosine scores (float32, clipped to [-1, 1]) of every pair, in block order."""
    out = []
    for block in blocks:
        bar.update(1)
        if block[0] == "gram":
            _, imgs, bi, bj = block
            x = emb[imgs]
            out.append((x @ x.T)[bi, bj].astype(np.float32))
        else:
            _, a, b = block
            for s in range(0, a.size, chunk):
                xa, xb = emb[a[s : s + chunk]], emb[b[s : s + chunk]]
                out.append(np.einsum("ij,ij->i", xa, xb).astype(np.float32))
    scores = np.concatenate(out) if out else np.empty(0, dtype=np.float32)
    return np.clip(scores, -1.0, 1.0)


def image_paths(config: BFWWorldConfig) -> list[str]:
    """Relative path of every image index, in image-index order.

    Parameters
    ----------
    config : BFWWorldConfig
        The world's size.

    Returns
    -------
    list of str
        ``<BFW folder>/syn<subject:04d>/<image:04d>.png``, one per image.

    Examples
    --------
    >>> image_paths(BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2))[:3]
    ['asian_females/syn0000/0000.png', 'asian_females/syn0000/0001.png', 'asian_females/syn0001/0000.png']
    """
    n, k = config.identities_per_group, config.images_per_identity
    return [
        f"{BFW_FOLDERS[s // n]}/syn{s:04d}/{m:04d}.png"
        for s in range(len(BFW_GROUPS) * n)
        for m in range(k)
    ]


def image_embeddings(config: BFWWorldConfig, system: str) -> np.ndarray:
    """The unit embedding of every image for one system, from the same random stream as
    its scores: the cosine of two images' embeddings is their pair's score in
    :func:`make_bfw_world` (up to float32 rounding).

    Parameters
    ----------
    config : BFWWorldConfig
        The world.
    system : str
        The name of one of ``config.systems``.

    Returns
    -------
    numpy.ndarray
        Shape ``(8 * identities_per_group * images_per_identity, dim)``, float64 unit
        rows in image-index order (the order of :func:`image_paths` and
        :func:`image_table`).

    Raises
    ------
    ValueError
        If ``system`` is not one of the world's systems.

    Examples
    --------
    >>> c = BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2, dim=8)
    >>> x = image_embeddings(c, "sim_a")
    >>> x.shape, bool(np.allclose(np.linalg.norm(x, axis=1), 1))
    ((32, 8), True)
    """
    specs = {s.name: s for s in config.systems}
    if system not in specs:
        raise ValueError(f"system {system!r} is not in the world; its systems are {sorted(specs)}")
    return _embed_system(config, specs[system])


def image_table(config: BFWWorldConfig) -> pd.DataFrame:
    """One row per image, in image-index order: its path, subject id and subgroup.

    Parameters
    ----------
    config : BFWWorldConfig
        The world's size.

    Returns
    -------
    pandas.DataFrame
        Columns ``path`` (as :func:`image_paths`), ``id`` (int32 subject id, as ``id1`` /
        ``id2`` of the pair table) and ``group`` (str, one of :data:`BFW_GROUPS`).

    Examples
    --------
    >>> image_table(BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2)).iloc[[0, 4]]
                                 path  id group
    0  asian_females/syn0000/0000.png   0    AF
    4    asian_males/syn0002/0000.png   2    AM
    """
    n, k = config.identities_per_group, config.images_per_identity
    subject = np.arange(len(BFW_GROUPS) * n * k) // k
    return pd.DataFrame({"path": image_paths(config), "id": subject.astype(np.int32),
                         "group": np.asarray(BFW_GROUPS, dtype=object)[subject // n]})


def make_bfw_world(config: BFWWorldConfig | None = None, progress: bool = False) -> pd.DataFrame:
    """The synthetic BFW pair table: the 14 schema columns, then one float32 score per system.

    Parameters
    ----------
    config : BFWWorldConfig, optional
        Default ``BFWWorldConfig()``.
    progress : bool, default False
        Show a tqdm progress bar.

    Returns
    -------
    pandas.DataFrame
        ``fold`` 1..K and ``label`` (1 = genuine) are int8, ``id1``/``id2`` int32 subject
        ids ``0 .. 8 * identities_per_group - 1``; string columns are categoricals; each
        system's column holds cosine similarities in [-1, 1] (float32). Rows are ordered
        by fold; within a fold by subgroup block (upper triangle order), then the
        cross-subgroup pairs. ``attrs``: ``source = "synthetic"`` and ``world`` (the
        config's :meth:`~BFWWorldConfig.to_params`).

    Examples
    --------
    >>> c = BFWWorldConfig(identities_per_group=2, images_per_identity=2, n_folds=2, dim=8)
    >>> w = make_bfw_world(c)
    >>> w.shape, int(w["label"].sum()), w["sim_a"].dtype
    ((32, 16), 16, dtype('float32'))
    """
    config = config or BFWWorldConfig()
    n, k = config.identities_per_group, config.images_per_identity
    a, b, fold, blocks = _pairs(config)
    scores = {}
    total = len(config.systems) * len(blocks)
    with tqdm(total=total, desc="synthetic BFW world", unit="block", disable=not progress) as bar:
        for spec in config.systems:
            scores[spec.name] = _score(_embed_system(config, spec), blocks, bar)
    paths = pd.CategoricalDtype(image_paths(config))
    s1, s2 = a // k, b // k
    g1, g2 = (s1 // n).astype(np.int8), (s2 // n).astype(np.int8)
    cat = pd.Categorical.from_codes
    cols: dict[str, Any] = {
        "fold": fold,
        "p1": cat(a, dtype=paths),
        "p2": cat(b, dtype=paths),
        "label": (s1 == s2).astype(np.int8),
        "id1": s1.astype(np.int32),
        "id2": s2.astype(np.int32),
        "att1": cat(g1, dtype=ATT_DTYPE),
        "att2": cat(g2, dtype=ATT_DTYPE),
        "a1": cat(g1, dtype=GROUP_DTYPE),
        "a2": cat(g2, dtype=GROUP_DTYPE),
        "g1": cat(g1 % 2, dtype=GENDER_DTYPE),
        "g2": cat(g2 % 2, dtype=GENDER_DTYPE),
        "e1": cat(g1 // 2, dtype=ETHNICITY_DTYPE),
        "e2": cat(g2 // 2, dtype=ETHNICITY_DTYPE),
        **scores,
    }
    df = pd.DataFrame(cols, copy=False)
    df.attrs["source"] = "synthetic"
    df.attrs["world"] = config.to_params()
    return df


# --------------------------------------------------------------------------- truth
def planted_truth(config: BFWWorldConfig | None = None, n_ids: int = 20_000) -> pd.DataFrame:
    """Planted parameters and expected scores, one row per (system, group).

    Columns: ``system, group, rho, noise``; ``impostor_mean`` and ``genuine_mean``, the
    expected within-subgroup impostor and genuine cosine, estimated by a deterministic
    Monte Carlo of the same model (``n_ids`` identities x 2 images per row; standard
    error below 1e-3); and the first-order closed forms ``impostor_mean_approx =
    rho / (1 + sigma^2)``, ``genuine_mean_approx = 1 / (1 + sigma^2)`` (without spreads).
    The planted score *shape* (paper 002, Fig. 4) from the same Monte Carlo:
    ``impostor_median``, ``impostor_p99`` and ``impostor_p999`` (quantiles 0.5, 0.99,
    0.999 of the first images of the first ``min(n_ids, 2000)`` identities, all pairs)
    and ``genuine_sd`` (SD of the ``n_ids`` genuine pairs).

    Parameters
    ----------
    config : BFWWorldConfig, optional
        Default ``BFWWorldConfig()``.
    n_ids : int, default 20000
        Monte Carlo identities per (system, group).

    Returns
    -------
    pandas.DataFrame
        One row per (system, group) with the columns above.

    Examples
    --------
    >>> t = planted_truth(BFWWorldConfig(dim=8), n_ids=100)
    >>> t.loc[0, ["system", "group", "rho", "noise", "genuine_mean_approx"]].to_dict()
    {'system': 'sim_a', 'group': 'AF', 'rho': 0.275, 'noise': 1.0, 'genuine_mean_approx': 0.5}
    """
    config = config or BFWWorldConfig()
    rows = []
    for spec in config.systems:
        rng = _rng(config.seed, _TRUTH, _name_key(spec.name))
        for g in BFW_GROUPS:
            rho, sigma, kappa, tau = _group_args(spec, g)
            x = _embed_group(rng, rho, sigma, n_ids, 2, config.dim, kappa, tau).reshape(n_ids, 2, -1)
            per_id = x.sum(axis=1)  # sum of an identity's image embeddings
            total = per_id.sum(axis=0)
            same = np.einsum("ij,ij->", per_id, per_id)  # sum over same-identity ordered pairs
            first = x[: min(n_ids, 2000), 0]
            imp = (first @ first.T)[np.triu_indices(len(first), 1)]
            med, p99, p999 = np.quantile(imp, [0.5, 0.99, 0.999])
            rows.append(
                {
                    "system": spec.name,
                    "group": g,
                    "rho": rho,
                    "noise": sigma,
                    "impostor_mean": (total @ total - same) / (4 * n_ids * (n_ids - 1)),
                    "genuine_mean": (same - 2 * n_ids) / (2 * n_ids),
                    "impostor_mean_approx": rho / (1 + sigma**2),
                    "genuine_mean_approx": 1 / (1 + sigma**2),
                    "impostor_median": float(med),
                    "impostor_p99": float(p99),
                    "impostor_p999": float(p999),
                    "genuine_sd": float(np.einsum("ij,ij->i", x[:, 0], x[:, 1]).std(ddof=1)),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- files
def write_world(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a world table to parquet atomically, ``df.attrs`` included (see
    :func:`facebias.io.write_parquet`); :func:`read_world` reads it back.

    Parameters
    ----------
    df : pandas.DataFrame
        A :func:`make_bfw_world` table.
    path : str or os.PathLike
        The parquet file.
    """
    write_parquet(df, path)


def read_world(path: str | os.PathLike) -> pd.DataFrame:
    """Read a table written by :func:`write_world`, restoring ``df.attrs``.

    Parameters
    ----------
    path : str or os.PathLike
        The parquet file.

    Returns
    -------
    pandas.DataFrame
        The world table.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (the message says how to generate it).
    """
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path}: no synthetic world here; generate it with `dvc repro bfw_world` "
            "(or `facebias world --out PATH`)"
        )
    return read_parquet(path)
