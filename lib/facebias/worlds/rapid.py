"""The known-truth world for the rapid test (001): noisy web-search queries, scored.

Score level, no images (spec section 1.9). Everything is **synthetic**
(``attrs["source"] == "synthetic"``) and deterministic given :class:`RapidWorldConfig`.

* Groups g: unit centre c_g in R^dim. Identity mu = normalize(a c_g + sqrt(1 - a^2) n),
  n a random unit vector (a = group_weight; a = 0.45 gives within-group cosine ~ 0.2).
* Query q (one per queried person, ``queries_per_group`` per group): n_q ~ U[faces_min,
  faces_max) faces; a fraction ~ N(p, p_sd), clipped to [0.05, 1], shows the queried
  person (is_target); the rest are distractors. With probability ``co_occur`` one
  co-occurring identity (spouse, co-star) takes 1 .. half of the distractor slots; the
  others are singletons. A distractor is from the query's group with probability
  ``same_group`` (else a random other group). Distractors are never queried persons.
* Face appearance x = mu + sigma_img N(0, I/dim), shared by all systems (correlated errors).
* System s embeds e_s = normalize(x + sigma_s N(0, I/dim)) (sigma_s x the ``bias`` factor
  of the face identity's group, if any: the dataclass default plants none, the committed
  ``params.yaml`` plants ``sys_a`` x 2 on AF so that paper 001's Fig. 5 analysis has a bias to
  detect) and reports f_s(cos) with a monotone transform
  (:data:`RAPID_TRANSFORMS`: different score scales).
* Pairs: every within-query pair (face_a < face_b); cross-query pairs: per group, as many
  (x cross_ratio) distinct random pairs of faces from different queries of that group as
  the group has within-query pairs (seeded), scored by every system.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.config import Section, integer, number, param
from facebias.worlds._common import _R_CROSS, _R_FACES, _R_QUERIES, _name_key, _number, _rng, _unit

__all__ = ["RAPID_TRANSFORMS", "RapidWorldConfig", "RapidWorld", "make_rapid_world"]

#: monotone score transforms of cosine similarity c (name -> function)
RAPID_TRANSFORMS: dict[str, Any] = {
    "cosine": lambda c: c,                                    # [-1, 1]
    "confidence": lambda c: 50.0 + 50.0 * c,                  # 0-100 confidence
    "percent": lambda c: 100.0 * c,                           # scaled cosine
    "logit": lambda c: 8.0 * (c - 0.3),                       # unbounded logit
    "sigmoid": lambda c: 1.0 / (1.0 + np.exp(-8.0 * (c - 0.3))),  # probability-like
}

_RAPID_SYSTEMS: dict[str, dict[str, Any]] = {
    "sys_a": {"noise": 0.50, "transform": "cosine"},
    "sys_b": {"noise": 0.60, "transform": "confidence"},
    "sys_c": {"noise": 0.72, "transform": "logit"},
    "sys_d": {"noise": 0.85, "transform": "sigmoid"},
    "sys_e": {"noise": 1.00, "transform": "percent"},
}
_RAPID_GROUPS: tuple[str, ...] = ("AF", "AM", "BF", "BM")


_PROB = number(0.0, 1.0)
_NONNEG = number(0.0)


def _groups(value: Any, name: str) -> tuple[str, ...]:
    """Distinct group names, as a tuple of str."""
    groups = tuple(str(g) for g in value)
    if not groups or len(set(groups)) != len(groups):
        raise ValueError(f"{name} must be distinct and non-empty, got {groups}")
    return groups


def _systems(value: Any, name: str) -> Any:
    """System name -> ``{noise: >= 0, transform: one of RAPID_TRANSFORMS}`` (kept as given)."""
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"{name} must be a non-empty mapping name -> spec")
    for s, spec in value.items():
        if not isinstance(spec, Mapping) or set(spec) - {"noise", "transform"}:
            raise ValueError(f"{name}.{s}: expected keys noise, transform; got {spec!r}")
        if _number(spec.get("noise", 0.7), f"{name}.{s}.noise") < 0:
            raise ValueError(f"{name}.{s}.noise must be >= 0")
        if spec.get("transform", "cosine") not in RAPID_TRANSFORMS:
            raise ValueError(f"{name}.{s}.transform must be one of "
                             f"{sorted(RAPID_TRANSFORMS)}, got {spec.get('transform')!r}")
    return value


@dataclass(frozen=True)
class RapidWorldConfig(Section):
    """Noisy web-search queries and simulated FR systems (see the module docstring).

    Parameters
    ----------
    seed : int, default 1001
        Seeds every random stream.
    p : float, default 0.7
        Mean fraction of a query's faces that show the queried person, in [0, 1]
        (1 - p is the label noise).
    p_sd : float, default 0.15
        SD of that fraction across queries (>= 0).
    groups : tuple of str, default ("AF", "AM", "BF", "BM")
        Distinct group names.
    queries_per_group : int, default 25
        Queried persons per group (>= 1).
    faces_min, faces_max : int, default 15, 60
        A query has ``U[faces_min, faces_max)`` faces (``2 <= faces_min < faces_max``).
    dim : int, default 64
        Embedding dimension (>= 2).
    group_weight : float, default 0.45
        Weight ``a`` of the group centre in an identity, in [0, 1].
    sigma_img : float, default 0.6
        Appearance noise shared by all systems (>= 0).
    co_occur : float, default 0.3
        Probability that a query has a co-occurring identity, in [0, 1].
    same_group : float, default 0.7
        Probability that a distractor is from the query's group, in [0, 1].
    cross_ratio : float, default 1.0
        Cross-query pairs per within-query pair, per group (0 = none).
    systems : dict
        Name -> ``{"noise": sigma_s, "transform": one of RAPID_TRANSFORMS}``.
    bias : dict
        System -> group -> factor (> 0) on sigma_s (bias injection).

    Raises
    ------
    ValueError
        For an integer field that is negative or not an integer, a bad face range, a
        probability outside [0, 1], a negative SD or ratio, duplicate or no groups, a bad
        system spec, or a bias naming an unknown system or group or a factor <= 0.

    Examples
    --------
    >>> RapidWorldConfig(systems={"good": {"noise": 0.3}, "poor": {"noise": 0.9}}).truth()
      system  noise transform  rank
    0   good    0.3    cosine     1
    1   poor    0.9    cosine     2
    """

    section = "rapid_world"
    seed: int = param(1001, integer(0))
    p: float = param(0.7, _PROB)
    p_sd: float = param(0.15, _NONNEG)
    groups: tuple[str, ...] = param(_RAPID_GROUPS, _groups)
    queries_per_group: int = param(25, integer(1))
    faces_min: int = param(15, integer(2))
    faces_max: int = param(60, integer(0))
    dim: int = param(64, integer(2))
    group_weight: float = param(0.45, _PROB)
    sigma_img: float = param(0.6, _NONNEG)
    co_occur: float = param(0.3, _PROB)
    same_group: float = param(0.7, _PROB)
    cross_ratio: float = param(1.0, _NONNEG)
    systems: dict[str, dict[str, Any]] = param(factory=lambda: dict(_RAPID_SYSTEMS), check=_systems)
    bias: dict[str, dict[str, float]] = param(factory=dict)

    def check(self) -> None:
        w = "rapid_world"
        if not self.faces_min < self.faces_max:
            raise ValueError(f"{w}: need 2 <= faces_min < faces_max, got "
                             f"{self.faces_min}, {self.faces_max}")
        for name, per in self.bias.items():
            if name not in self.systems:
                raise ValueError(f"{w}.bias: unknown system {name!r}; systems are {list(self.systems)}")
            for g, f in per.items():
                if g not in self.groups or _number(f, f"{w}.bias.{name}.{g}") <= 0:
                    raise ValueError(f"{w}.bias.{name}: group {g!r} must be one of {self.groups} "
                                     f"with a factor > 0, got {f!r}")

    def truth(self) -> pd.DataFrame:
        """The planted system quality (what a system ranking should recover).

        Returns
        -------
        pandas.DataFrame
            One row per system: ``system, noise, transform, rank`` (1 = least noise;
            ties share the lowest rank).
        """
        names = list(self.systems)
        noise = np.array([float(self.systems[s].get("noise", 0.7)) for s in names])
        return pd.DataFrame({
            "system": names, "noise": noise,
            "transform": [self.systems[s].get("transform", "cosine") for s in names],
            "rank": pd.Series(noise).rank(method="min").astype(int).to_numpy(),
        })


@dataclass(frozen=True)
class RapidWorld:
    """What :func:`make_rapid_world` returns (unpacks as a 4-tuple, like a NamedTuple).

    Attributes
    ----------
    faces : pandas.DataFrame
        One row per face: ``face`` (a unique int, the row number), ``query``, ``group``
        (the query's group), ``true_identity`` (= the query's index for targets),
        ``is_target``, ``identity_group`` (the face identity's own group).
    scores : pandas.DataFrame
        Within-query pairs ``query, face_a, face_b, system, score`` (``face_a < face_b``;
        each system on its own score scale, higher = more alike).
    cross_scores : pandas.DataFrame
        Cross-query same-group pairs, the same columns + ``query_b`` (the query of
        ``face_b``).
    truth : pandas.DataFrame
        :meth:`RapidWorldConfig.truth`.
    """

    faces: pd.DataFrame
    scores: pd.DataFrame
    cross_scores: pd.DataFrame
    truth: pd.DataFrame

    def __iter__(self):
        return iter((self.faces, self.scores, self.cross_scores, self.truth))


def _rapid_faces(c: RapidWorldConfig) -> tuple[pd.DataFrame, np.ndarray]:
    """The face table and the shared appearance vectors ``x`` (n_faces x dim)."""
    rng = _rng(c.seed, _R_QUERIES)
    G, D = len(c.groups), c.dim
    centres = _unit(rng.standard_normal((G, D)))
    a = c.group_weight

    def identity(g: np.ndarray) -> np.ndarray:
        n = _unit(rng.standard_normal((g.size, D)))
        return _unit(a * centres[g] + np.sqrt(1 - a * a) * n)

    nq = G * c.queries_per_group
    qgroup = np.repeat(np.arange(G), c.queries_per_group)
    target = identity(qgroup)
    sizes = rng.integers(c.faces_min, c.faces_max, nq)
    frac = np.clip(rng.normal(c.p, c.p_sd, nq), 0.05, 1.0)
    n_target = np.clip(np.round(frac * sizes).astype(int), 1, sizes)
    ident_parts, group_parts, mu_parts = [], [], []
    next_id = nq
    for q in range(nq):
        n_d = int(sizes[q] - n_target[q])
        slots = np.arange(n_d)
        co = 0
        if n_d >= 2 and rng.random() < c.co_occur:
            co = int(rng.integers(1, n_d // 2 + 1))
        n_single = n_d - co
        n_ids = n_single + (1 if co else 0)
        other = (qgroup[q] + rng.integers(1, G, n_ids)) % G if G > 1 else np.full(n_ids, qgroup[q])
        g_ids = np.where(rng.random(n_ids) < c.same_group, qgroup[q], other)
        mus = identity(g_ids)
        # slot -> distractor identity: the first `co` slots are the co-occurring one (index 0)
        who = np.r_[np.zeros(co, int), np.arange(n_single) + (1 if co else 0)][: slots.size]
        ident_parts.append(np.r_[np.full(n_target[q], q), next_id + who])
        group_parts.append(np.r_[np.full(n_target[q], qgroup[q]), g_ids[who]])
        mu_parts.append(np.vstack([np.repeat(target[q : q + 1], n_target[q], 0), mus[who]]))
        next_id += n_ids
    ident = np.concatenate(ident_parts)
    id_group = np.concatenate(group_parts)
    mu = np.vstack(mu_parts)
    x = mu + c.sigma_img * rng.standard_normal(mu.shape) / np.sqrt(D)
    query = np.repeat(np.arange(nq), sizes)
    width = len(str(nq - 1))
    qnames = np.array([f"q{i:0{width}d}" for i in range(nq)])
    faces = pd.DataFrame({
        "face": np.arange(ident.size, dtype=np.int64),
        "query": pd.Categorical(qnames[query], categories=qnames),
        "group": pd.Categorical(np.array(c.groups)[qgroup[query]], categories=list(c.groups)),
        "true_identity": ident.astype(np.int64),
        "is_target": ident == query,
        "identity_group": pd.Categorical(np.array(c.groups)[id_group], categories=list(c.groups)),
    })
    return faces, x


def _rapid_embed(c: RapidWorldConfig, x: np.ndarray, id_group: np.ndarray, name: str) -> np.ndarray:
    rng = _rng(c.seed, _R_FACES, _name_key(name))
    sigma = np.full(x.shape[0], float(c.systems[name].get("noise", 0.7)))
    for g, f in c.bias.get(name, {}).items():
        sigma[id_group == c.groups.index(g)] *= float(f)
    eps = rng.standard_normal(x.shape) / np.sqrt(c.dim)
    return _unit(x + sigma[:, None] * eps).astype(np.float32)


def _within_pairs(query_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (a < b) face pairs within each query (faces are contiguous per query)."""
    starts = np.flatnonzero(np.r_[True, query_codes[1:] != query_codes[:-1]])
    sizes = np.diff(np.r_[starts, query_codes.size])
    a_parts, b_parts = [], []
    for n in np.unique(sizes):
        ia, ib = np.triu_indices(int(n), 1)
        s0 = starts[sizes == n]
        a_parts.append((s0[:, None] + ia).ravel())
        b_parts.append((s0[:, None] + ib).ravel())
    a, b = np.concatenate(a_parts), np.concatenate(b_parts)
    order = np.lexsort((b, a))
    return a[order], b[order]


def _cross_pairs(c: RapidWorldConfig, faces: pd.DataFrame, n_within: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Distinct random cross-query pairs within each group (``n_within`` per group x ratio)."""
    rng = _rng(c.seed, _R_CROSS)
    qc = faces["query"].cat.codes.to_numpy()
    gc = faces["group"].cat.codes.to_numpy()
    a_parts, b_parts = [], []
    for g in range(len(c.groups)):
        rows = np.flatnonzero(gc == g)
        want = int(round(c.cross_ratio * n_within[g]))
        if want == 0 or np.unique(qc[rows]).size < 2:
            continue
        got_a, got_b = np.zeros(0, np.int64), np.zeros(0, np.int64)
        for _ in range(20):
            ia, ib = rng.choice(rows, (2, int(1.3 * want) + 16))
            ok = qc[ia] != qc[ib]
            lo = np.r_[got_a, np.minimum(ia[ok], ib[ok])]
            hi = np.r_[got_b, np.maximum(ia[ok], ib[ok])]
            _, first = np.unique(lo * faces.shape[0] + hi, return_index=True)
            first.sort()
            got_a, got_b = lo[first], hi[first]
            if got_a.size >= want:
                break
        a_parts.append(got_a[:want])
        b_parts.append(got_b[:want])
    if not a_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(a_parts), np.concatenate(b_parts)


def _score_frame(c: RapidWorldConfig, faces: pd.DataFrame, emb: dict[str, np.ndarray],
                 a: np.ndarray, b: np.ndarray, cross: bool) -> pd.DataFrame:
    names = list(c.systems)
    scores = []
    for s in names:
        cos = np.einsum("ij,ij->i", emb[s][a], emb[s][b])
        scores.append(RAPID_TRANSFORMS[c.systems[s].get("transform", "cosine")](cos)
                      .astype(np.float32))
    k = len(names)
    q = faces["query"].to_numpy()
    out = {
        "query": pd.Categorical.from_codes(np.tile(faces["query"].cat.codes.to_numpy()[a], k),
                                           dtype=faces["query"].dtype),
        "face_a": np.tile(a, k).astype(np.int64),
        "face_b": np.tile(b, k).astype(np.int64),
        "system": pd.Categorical.from_codes(np.repeat(np.arange(k), a.size), categories=names),
        "score": np.concatenate(scores) if scores else np.zeros(0, np.float32),
    }
    if cross:
        out["query_b"] = pd.Categorical(np.tile(q[b], k), dtype=faces["query"].dtype)
    return pd.DataFrame(out)


def make_rapid_world(config: RapidWorldConfig | None = None) -> RapidWorld:
    """The rapid-test known-truth world: ``(faces, scores, cross_scores, truth)``.

    Deterministic given ``config`` (byte-identical frames); every frame carries
    ``attrs["source"] = "synthetic"``. Face ids are the row numbers of ``faces``, and the
    faces of one query are contiguous.

    Parameters
    ----------
    config : RapidWorldConfig, optional
        Default ``RapidWorldConfig()``.

    Returns
    -------
    RapidWorld
        ``faces, scores, cross_scores, truth``; see :class:`RapidWorld` for the columns.

    Examples
    --------
    >>> c = RapidWorldConfig(groups=("AF", "AM"), queries_per_group=2, faces_min=4, faces_max=6,
    ...                      systems={"s1": {"noise": 0.3}, "s2": {"noise": 0.9}})
    >>> faces, scores, cross_scores, truth = make_rapid_world(c)
    >>> len(faces), len(scores), sorted(scores["system"].unique())  # every pair x 2 systems
    (18, 64, ['s1', 's2'])
    """
    c = config or RapidWorldConfig()
    faces, x = _rapid_faces(c)
    id_group = faces["identity_group"].cat.codes.to_numpy()
    emb = {s: _rapid_embed(c, x, id_group, s) for s in c.systems}
    qc = faces["query"].cat.codes.to_numpy()
    a, b = _within_pairs(qc)
    scores = _score_frame(c, faces, emb, a, b, cross=False)
    gc = faces["group"].cat.codes.to_numpy()
    n_within = np.bincount(gc[a], minlength=len(c.groups))
    ca, cb = _cross_pairs(c, faces, n_within)
    cross = _score_frame(c, faces, emb, ca, cb, cross=True)
    truth = c.truth()
    for df in (faces, scores, cross, truth):
        df.attrs["source"] = "synthetic"
    return RapidWorld(faces, scores, cross, truth)
