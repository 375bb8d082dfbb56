"""Paper 003 section 3.2 (preliminary data preparation): identities.

Identity-label noise (intra-class noise, Fig. 6a): :func:`identity_outliers` (per-identity
DBSCAN). Identity count vs accuracy (Fig. 9): :func:`identity_count_experiment` over the
:data:`IDENTITY_COUNT_DESIGNS` subsets (:func:`identity_count_subset`), with d' and its
identity-bootstrap interval (:func:`dprime_identity_bootstrap`) and the KS test between
subsets (:func:`score_ks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

from facebias.metrics import d_prime
from facebias.stats import bootstrap_weights, percentile_interval, percentile_mc_error
from facebias.studies.batest.verification import _scores_labels
from facebias.validate import require_columns

__all__ = ["identity_outliers", "IDENTITY_COUNT_DESIGNS", "identity_count_subset", "dprime_identity_bootstrap",
           "score_ks", "identity_count_experiment"]


def identity_outliers(
    embeddings: Any,
    identities: Any,
    eps: float = 0.6,
    min_samples: int | None = None,
) -> np.ndarray:
    """Identity-noise cleaning (paper 003, intra-class noise, Fig. 6a): per identity,
    DBSCAN (``sklearn.cluster.DBSCAN``, cosine distance ``1 - cos``) on that identity's
    embeddings; an image is an outlier (to drop) when it is DBSCAN noise or outside the
    identity's largest cluster.

    The paper runs DBSCAN on ArcFace and MagFace features but gives no parameters; the
    defaults are the spec's suggestion (``docs/specs/batest.md`` B.6 item 6):
    ``eps = 0.6`` (neighbours have cosine >= 0.4) and ``min_samples = max(3, 5 % of the
    identity's images)``. Ties for the largest cluster keep the one DBSCAN found first; an
    identity where DBSCAN finds no cluster at all has every image flagged. To combine two
    matchers as the spec suggests, OR their masks.

    Parameters
    ----------
    embeddings : array_like
        (n_images, dim) features, finite, no zero row (the cosine needs a direction).
    identities : array_like
        (n_images,) identity label of each image (the folder it was filed under).
    eps : float, default 0.6
        DBSCAN neighbourhood radius in cosine distance, in (0, 2).
    min_samples : int, optional
        DBSCAN core-point count (the point itself included); default
        ``max(3, ceil(0.05 * n))`` per identity of ``n`` images.

    Returns
    -------
    numpy.ndarray
        (n_images,) bool, True = outlier (drop), in the input order.

    Raises
    ------
    ValueError
        For a non-2-D, non-finite or zero-norm ``embeddings``, ``identities`` of another
        length or with missing values, ``eps`` outside (0, 2) or ``min_samples < 1``.

    Examples
    --------
    >>> emb = np.array([[1, 0], [0.99, 0.1], [0.98, -0.1], [0, 1.0]])
    >>> identity_outliers(emb, ["a"] * 4)  # the 4th is 90 degrees off the other three
    array([False, False, False,  True])
    """
    from sklearn.cluster import DBSCAN

    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"embeddings: must be a finite 2-D array, got shape {x.shape}")
    if (np.linalg.norm(x, axis=1) == 0).any():
        raise ValueError("embeddings: a row has zero norm (no direction for the cosine)")
    ids = pd.Series(np.asarray(identities, dtype=object))
    if len(ids) != len(x) or ids.isna().any():
        raise ValueError(f"identities: need {len(x)} labels without missing values, got {len(ids)}")
    if not 0 < eps < 2:
        raise ValueError(f"eps: must lie in (0, 2), got {eps!r}")
    if min_samples is not None and min_samples < 1:
        raise ValueError(f"min_samples: must be >= 1, got {min_samples!r}")
    drop = np.zeros(len(x), dtype=bool)
    for rows in ids.groupby(ids, sort=False).indices.values():
        ms = min_samples if min_samples is not None else max(3, int(np.ceil(0.05 * rows.size)))
        lab = DBSCAN(eps=eps, min_samples=ms, metric="cosine").fit_predict(x[rows])
        clustered = lab[lab >= 0]
        if clustered.size == 0:
            drop[rows] = True
            continue
        drop[rows] = lab != np.bincount(clustered).argmax()
    return drop


#: Paper 003 Fig. 9 / section 3.2: (identities, images per identity) per group subset.
IDENTITY_COUNT_DESIGNS: tuple[tuple[int, int], ...] = ((200, 15), (100, 20), (50, 25))


def identity_count_subset(images: pd.DataFrame, n_identities: int, n_images: int, seed: int = 0,
                          identity: str = "identity", group: str = "group") -> pd.DataFrame:
    """Per group, ``n_identities`` random identities with ``n_images`` random images each
    (paper 003 Fig. 9: "AF-200-15" = 200 identities x 15 images of AF).

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image with ``identity`` and ``group`` columns.
    n_identities, n_images : int
        Subset size per group (>= 1 and >= 2).
    seed : int, default 0
        Seeds the draw.
    identity, group : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        The chosen rows of ``images`` (original index), group by group.

    Raises
    ------
    ValueError
        For a missing column, or a group with fewer than ``n_identities`` identities
        that have at least ``n_images`` images.

    Examples
    --------
    >>> imgs = pd.DataFrame({"group": "AF", "identity": np.repeat(np.arange(4), 3)})
    >>> identity_count_subset(imgs, 2, 2).groupby("identity").size().tolist()
    [2, 2]
    """
    require_columns(images, [identity, group], "images")
    if n_identities < 1 or n_images < 2:
        raise ValueError(f"need n_identities >= 1 and n_images >= 2, got {n_identities}, {n_images}")
    rng = np.random.default_rng(seed)
    keep = []
    for g in sorted(pd.unique(images[group].astype(str))):
        sub = images[images[group].astype(str) == g]
        sizes = sub.groupby(identity, sort=True).size()
        ok = sizes.index[sizes >= n_images].to_numpy()
        if ok.size < n_identities:
            raise ValueError(f"group {g!r}: {ok.size} identities have >= {n_images} images, "
                             f"need {n_identities}")
        for i in rng.choice(ok, n_identities, replace=False):
            rows = sub.index[sub[identity].to_numpy() == i].to_numpy()
            keep.append(rng.choice(rows, n_images, replace=False))
    return images.loc[np.concatenate(keep)]


def _weighted_dprime(s: np.ndarray, gen: np.ndarray, w: np.ndarray) -> float:
    def mv(m: np.ndarray) -> tuple[float, float]:
        ww = w[m]
        if ww.sum() <= 0:
            return np.nan, np.nan
        mu = float(np.average(s[m], weights=ww))
        return mu, float(np.average((s[m] - mu) ** 2, weights=ww))

    (mg, vg), (mi, vi) = mv(gen), mv(~gen)
    spread = np.sqrt((vg + vi) / 2)
    return float(abs(mg - mi) / spread) if spread > 0 else np.nan


def dprime_identity_bootstrap(pairs: pd.DataFrame, n_boot: int = 200, seed: int = 0, ci: float = 0.95,
                              ids: tuple[str, str] = ("id1", "id2"), score: str = "score",
                              group: str = "group", label: str = "label") -> pd.DataFrame:
    """d' per group with a percentile interval from the identity (cluster) bootstrap of
    :func:`facebias.stats.bootstrap_weights` (each replicate a weighted d').

    Parameters
    ----------
    pairs : pandas.DataFrame
        Pair table (``ids``, group, label, score; similarities).
    n_boot : int, default 200
        Replicates per group (0 = no interval: NaN bounds).
    seed : int, default 0
        Bootstrap seed.
    ci : float, default 0.95
        Interval coverage.
    ids : tuple of str, default ("id1", "id2")
        Identity columns resampled.
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        Indexed by group: ``n_genuine, n_impostor, dprime, dprime_lo, dprime_hi`` and the
        bounds' Monte Carlo errors ``dprime_lo_mcse, dprime_hi_mcse`` (NaN without replicates).

    Raises
    ------
    ValueError
        As :func:`dprime_by_group`, or a missing identity column.
    """
    s, gen = _scores_labels(pairs, score, label)
    require_columns(pairs, [group, *ids], "pairs")
    g = pairs[group].astype(str).to_numpy()
    rows = []
    for grp in sorted(pd.unique(g)):
        m = g == grp
        sg, gg = s[m], gen[m]
        point = d_prime(sg[gg], sg[~gg])
        lo = hi = lo_se = hi_se = np.nan
        if n_boot:
            reps = np.array([_weighted_dprime(sg, gg, w) for w in bootstrap_weights(
                int(m.sum()), n_boot, seed, id1=pairs[ids[0]].to_numpy()[m], id2=pairs[ids[1]].to_numpy()[m])])
            lo, hi = (float(v) for v in percentile_interval(reps, ci))
            lo_se, hi_se = (float(v) for v in percentile_mc_error(reps, ci))
        rows.append({group: grp, "n_genuine": int(gg.sum()), "n_impostor": int((~gg).sum()),
                     "dprime": point, "dprime_lo": lo, "dprime_hi": hi,
                     "dprime_lo_mcse": lo_se, "dprime_hi_mcse": hi_se})
    return pd.DataFrame(rows).set_index(group)


def _ks_stats(x: np.ndarray, sides: np.ndarray) -> np.ndarray:
    """KS statistic of ``x[side]`` vs ``x[~side]`` for each row of bool ``sides``."""
    order = np.argsort(x, kind="stable")
    last = np.r_[x[order][1:] != x[order][:-1], True]  # compare the CDFs after each tie run
    a = sides[:, order]
    ca = np.cumsum(a, axis=1)[:, last] / a.sum(axis=1, keepdims=True)
    cb = np.cumsum(~a, axis=1)[:, last] / (~a).sum(axis=1, keepdims=True)
    return np.abs(ca - cb).max(axis=1)


def score_ks(pairs_a: pd.DataFrame, pairs_b: pd.DataFrame, n_perm: int = 0, seed: int = 0,
             block: str = "id1", score: str = "score", group: str = "group",
             label: str = "label") -> pd.DataFrame:
    """Two-sample KS test (``scipy.stats.ks_2samp``) of the genuine and of the impostor
    score distributions of each group between two pair tables.

    ``ks_2samp`` treats pairs as independent, but pairs of one identity share its images
    (their factor effects), so its ``p_value`` is anti-conservative on pair tables: in a
    null world it rejects at a KS distance of a few hundredths with ~20,000 pairs. With
    ``n_perm > 0`` a permutation p-value that respects the clustering is added: whole
    identity blocks (pairs grouped by ``block``, per table) are reassigned between the
    two tables, keeping each table's number of blocks, and the KS statistic recomputed:
    ``p_perm = (1 + #{ks_perm >= ks}) / (1 + n_perm)``.

    Parameters
    ----------
    pairs_a, pairs_b : pandas.DataFrame
        Pair tables (group, label, score, and ``block`` for the permutation).
    n_perm : int, default 0
        Identity-block permutations (0 = no ``p_perm`` column).
    seed : int, default 0
        Permutation seed.
    block : str, default "id1"
        Column whose values define the blocks (an impostor pair goes with its first
        identity).
    score, group, label : str
        Column names.

    Returns
    -------
    pandas.DataFrame
        ``group, kind`` ("genuine" / "impostor"), ``n_a, n_b, ks, p_value`` (and
        ``p_perm``), for the groups with such pairs in both tables.

    Raises
    ------
    ValueError
        For a missing column, a bad label or a non-finite score.

    Examples
    --------
    >>> a = pd.DataFrame({"group": "AF", "label": [1, 1, 0, 0], "score": [0.8, 0.7, 0.1, 0.2]})
    >>> b = a.assign(score=[0.6, 0.5, 0.1, 0.2])
    >>> score_ks(a, b)[["kind", "ks"]].values.tolist()
    [['genuine', 1.0], ['impostor', 0.0]]
    """
    sa, ga = _scores_labels(pairs_a, score, label)
    sb, gb = _scores_labels(pairs_b, score, label)
    cols = [group, block] if n_perm else [group]
    require_columns(pairs_a, cols, "pairs_a")
    require_columns(pairs_b, cols, "pairs_b")
    grp_a, grp_b = pairs_a[group].astype(str).to_numpy(), pairs_b[group].astype(str).to_numpy()
    rng = np.random.default_rng(seed)
    rows = []
    for grp in sorted(set(grp_a) & set(grp_b)):
        for kind, want in (("genuine", True), ("impostor", False)):
            ma, mb = (grp_a == grp) & (ga == want), (grp_b == grp) & (gb == want)
            xa, xb = sa[ma], sb[mb]
            if not (xa.size and xb.size):
                continue
            res = _st.ks_2samp(xa, xb)
            row = {"group": grp, "kind": kind, "n_a": xa.size, "n_b": xb.size,
                   "ks": float(res.statistic), "p_value": float(res.pvalue)}
            if n_perm:
                ca = pd.factorize(pairs_a[block].to_numpy()[ma])[0]
                cb = pd.factorize(pairs_b[block].to_numpy()[mb])[0]
                ka, kb = ca.max() + 1, cb.max() + 1
                codes, x = np.r_[ca, cb + ka], np.r_[xa, xb]
                sides = np.zeros((n_perm, ka + kb), dtype=bool)
                for r in range(n_perm):
                    sides[r, rng.permutation(ka + kb)[:ka]] = True
                perm = np.concatenate([_ks_stats(x, sides[i:i + 25, codes]) for i in range(0, n_perm, 25)])
                row["p_perm"] = float((1 + np.sum(perm >= row["ks"] - 1e-12)) / (1 + n_perm))
            rows.append(row)
    return pd.DataFrame(rows, columns=["group", "kind", "n_a", "n_b", "ks", "p_value"]
                        + (["p_perm"] if n_perm else []))


def identity_count_experiment(
    images: pd.DataFrame,
    pairs_fn: Any,
    designs: Sequence[tuple[int, int]] = IDENTITY_COUNT_DESIGNS,
    n_boot: int = 200,
    seed: int = 0,
    ci: float = 0.95,
    n_perm: int = 200,
) -> dict[str, pd.DataFrame]:
    """Paper 003 Fig. 9 / section 3.2: per group, subsets of identities x images per
    identity (default 200 x 15, 100 x 20, 50 x 25); d' per subset with identity-bootstrap
    intervals (:func:`dprime_identity_bootstrap`) and the KS test (:func:`score_ks`) of
    genuine and impostor scores between every two subsets. The paper's claim ("identity
    count is not what drives accuracy") is that the distributions coincide.

    Subsets are drawn independently (each with its own seed), so they may share
    identities and pairs; shared pairs make the KS test conservative.

    Parameters
    ----------
    images : pandas.DataFrame
        One row per image (``identity``, ``group``).
    pairs_fn : callable
        Maps an image subset to its scored pair table (``id1, id2, group, label, score``),
        e.g. ``functools.partial(facebias.worlds.batest.batest_pairs, config=...)``.
    designs : sequence of (int, int), default :data:`IDENTITY_COUNT_DESIGNS`
        (identities, images per identity) per subset.
    n_boot : int, default 200
        Bootstrap replicates per subset and group.
    seed : int, default 0
        Seeds the subsets (``seed + k`` for the k-th) and the bootstrap.
    ci : float, default 0.95
        Interval coverage.
    n_perm : int, default 200
        Identity-block permutations of :func:`score_ks` (its ``p_perm``; ``p_value`` from
        ``ks_2samp`` assumes independent pairs and is anti-conservative here).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"dprime"``: ``design`` (e.g. ``"200x15"``), ``n_identities, n_images, group,
        n_genuine, n_impostor, dprime, dprime_lo, dprime_hi, dprime_lo_mcse, dprime_hi_mcse``;
        ``"ks"``: ``design_a,
        design_b`` and the :func:`score_ks` columns.

    Raises
    ------
    ValueError
        As :func:`identity_count_subset` (world too small for a design) and
        :func:`dprime_identity_bootstrap`.
    """
    pair_sets, rows = {}, []
    for k, (n_ids, n_img) in enumerate(designs):
        name = f"{n_ids}x{n_img}"
        pairs = pairs_fn(identity_count_subset(images, n_ids, n_img, seed=seed + k))
        pair_sets[name] = pairs
        d = dprime_identity_bootstrap(pairs, n_boot=n_boot, seed=seed, ci=ci).reset_index()
        rows.append(d.assign(design=name, n_identities=n_ids, n_images=n_img))
    dp = pd.concat(rows, ignore_index=True)
    dp = dp[["design", "n_identities", "n_images", "group", "n_genuine", "n_impostor", "dprime",
             "dprime_lo", "dprime_hi", "dprime_lo_mcse", "dprime_hi_mcse"]]
    names = list(pair_sets)
    ks = [score_ks(pair_sets[a], pair_sets[b], n_perm=n_perm, seed=seed).assign(design_a=a, design_b=b)
          for i, a in enumerate(names) for b in names[i + 1:]]
    ks_cols = ["design_a", "design_b", "group", "kind", "n_a", "n_b", "ks", "p_value"] + (
        ["p_perm"] if n_perm else [])
    ks = pd.concat(ks, ignore_index=True)[ks_cols] if ks else pd.DataFrame(columns=ks_cols)
    return {"dprime": dp, "ks": ks}
