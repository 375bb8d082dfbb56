"""Paper 000's plan in latent space: demographic prototypes, max-min seed selection and
the annotation pairs (B1.2-B1.5, Supp. Algorithm 1).

Pure numpy / pandas on latents and tables: no generator, no images, no I/O
(:mod:`facebias.generate.build` runs the plan on a backend and renders it). The latent
algebra it builds on (decision values, dual basis, projections) is :mod:`facebias.latent`,
whose conventions hold here: latents are rows, a hyperplane is a ``(normal, offset)`` pair
with positive = more of the attribute, and the prototypes' ``c`` values are decision
values (latent-space distances for unit normals; generator specific).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.latent import check_hyperplanes, finite_array, transect_frame
from facebias.validate import require_columns

__all__ = [
    "POSE_SEQUENCE",
    "LIGHT_SEQUENCE",
    "LIGHT_POWER",
    "RACE_CODES",
    "GENDER_CODES",
    "GROUPS",
    "PROTOTYPE_COLUMNS",
    "SEQUENCE_COLUMNS",
    "PAIR_COLUMNS",
    "prototypes",
    "maxmin_select",
    "hcic_pairs",
    "pair_counts",
]

# --------------------------------------------------------------------------- constants
#: EG3D camera yaw angles in degrees of the pose sequence (0 is the prototype itself).
POSE_SEQUENCE: tuple[int, ...] = (-30, -15, 0, 15, 30)
#: Light-source directions of the DPR relighting sequence (the 5th slot is the prototype).
LIGHT_SEQUENCE: tuple[str, ...] = ("up", "down", "left", "right")
#: DPR light power of the lighting sequence ("strong but not overwhelming").
LIGHT_POWER: float = 0.7
#: Race name -> one-letter group code (000's groups WM, WF, BM, BF, AM, AF).
RACE_CODES: dict[str, str] = {"White": "W", "Black": "B", "East Asian": "A"}
#: Gender code -> sign of the gender decision value (positive = male).
GENDER_CODES: dict[str, int] = {"M": 1, "F": -1}
#: The six protected groups of 000 in the paper's order.
GROUPS: tuple[str, ...] = ("WM", "WF", "BM", "BF", "AM", "AF")


# --------------------------------------------------------------------------- prototypes
def prototypes(z: Any, gender: tuple[Any, Any], races: Mapping[str, tuple[Any, Any]],
               c_gender: float = 1.75, c_race: float = 1.5, orthogonal: bool = True,
               others: str = "negative", fixed: Any = None) -> dict[str, np.ndarray]:
    """000's race x gender prototypes of one seed latent ``z`` (D,) (B1.2).

    ``gender = (normal, offset)`` with positive = male; ``races`` maps a race name to its
    one-vs-all ``(normal, offset)`` (positive = that race). Race names map to group codes
    through :data:`RACE_CODES` (White -> W, Black -> B, East Asian -> A; a one-letter name
    is used as its own code); gender M = +``c_gender``, F = -``c_gender``. The default
    races give the keys ``WM, WF, BM, BF, AM, AF`` (:data:`GROUPS`, in that order).

    Procedure: project ``z`` onto the intersection of the gender and race hyperplanes
    (keeping the ``fixed`` (M, D) attributes at the seed's value, see
    :func:`facebias.latent.transect_frame`), then set the target race's decision value to
    ``+c_race``, every other race's to ``-c_race`` (``others="negative"``, so the target
    is the argmax with margin
    ``2 c_race``) or 0 (``others="zero"``), and gender to ``±c_gender``. With
    ``orthogonal=True`` (dual basis) these decision values are exact and the prototypes
    of a seed differ only in the span of the gender and race normals. With
    ``orthogonal=False`` the moves are along the unit normals (leaky, as in the paper's
    "move along the normal directions"). The ``c`` values are generator specific.

    Parameters
    ----------
    z : array_like
        (D,) seed latent.
    gender : tuple
        ``(normal (D,), offset)`` of the gender hyperplane, positive = male.
    races : mapping
        Race name -> one-vs-all ``(normal (D,), offset)``, positive = that race.
    c_gender : float, default 1.75
        Gender decision value of the prototypes (> 0): M = +c, F = -c.
    c_race : float, default 1.5
        Target race's decision value (> 0).
    orthogonal : bool, default True
        Dual-basis moves (exact decision values) instead of the leaky normal moves.
    others : {"negative", "zero"}, default "negative"
        Decision value of the other races: ``-c_race`` or 0.
    fixed : array_like, optional
        (M, D) normals of attributes kept at the seed's values.

    Returns
    -------
    dict of str to numpy.ndarray
        Group code (e.g. ``"WM"``) -> (D,) prototype latent, races in ``races`` order,
        M before F.

    Raises
    ------
    ValueError
        For a bad ``others``, a non-positive ``c``, no or unknown races, duplicate group
        codes, a malformed ``(normal, offset)`` pair, normals of different lengths or
        rank-deficient normals, or more than one seed latent.

    Examples
    --------
    >>> from facebias.latent import decision_values
    >>> e = np.eye(3)  # gender, White and Black normals along the axes, offsets 0
    >>> p = prototypes(np.zeros(3), (e[0], 0.0), {"White": (e[1], 0.0), "Black": (e[2], 0.0)})
    >>> list(p)
    ['WM', 'WF', 'BM', 'BF']
    >>> decision_values(p["BF"], e, np.zeros(3))  # gender -c_gender, White -c_race, Black +c_race
    array([-1.75, -1.5 ,  1.5 ])
    """
    if others not in ("negative", "zero"):
        raise ValueError(f"others: expected 'negative' or 'zero', got {others!r}")
    if not (c_gender > 0 and c_race > 0):
        raise ValueError(f"c_gender and c_race must be positive, got {c_gender!r}, {c_race!r}")
    if not isinstance(races, Mapping) or len(races) == 0:
        raise ValueError("races: expected a non-empty dict race -> (normal, offset)")
    try:
        gn, gb = gender
    except (TypeError, ValueError) as exc:
        raise ValueError("gender: expected a (normal, offset) pair") from exc
    codes = []
    for race in races:
        code = RACE_CODES.get(race, race if isinstance(race, str) and len(race) == 1 else None)
        if code is None:
            raise ValueError(
                f"races: unknown race {race!r}; use one of {list(RACE_CODES)} or a one-letter code"
            )
        codes.append(code)
    if len(set(codes)) != len(codes):
        raise ValueError(f"races: group codes {codes} are not unique")
    def offset(x: Any, name: str) -> float:
        v = np.ravel(np.asarray(x, dtype=np.float64))
        if v.size != 1:
            raise ValueError(f"{name}: the offset must be one number, got shape {np.shape(x)}")
        return float(v[0])

    rows, offs = [np.ravel(np.asarray(gn, dtype=np.float64))], [offset(gb, "gender")]
    for race, pair in races.items():
        try:
            rn, rb = pair
        except (TypeError, ValueError) as exc:
            raise ValueError(f"races[{race!r}]: expected a (normal, offset) pair") from exc
        rows.append(np.ravel(np.asarray(rn, dtype=np.float64)))
        offs.append(offset(rb, f"races[{race!r}]"))
    if len({r.shape for r in rows}) != 1:
        raise ValueError(f"gender and race normals differ in length: {[r.shape for r in rows]}")
    n, b = check_hyperplanes(np.vstack(rows), np.asarray(offs, dtype=np.float64),
                             name="gender and race normals")
    base, steps = transect_frame(z, n, b, orthogonal=orthogonal, fixed=fixed)
    if base.ndim != 1:
        raise ValueError(f"z: expected one seed latent (D,), got shape {base.shape}")
    other = -c_race if others == "negative" else 0.0
    out: dict[str, np.ndarray] = {}
    for r, code in enumerate(codes):
        for g, sign in GENDER_CODES.items():
            target = np.full(n.shape[0], other, dtype=np.float64)
            target[0] = sign * c_gender
            target[1 + r] = c_race
            out[code + g] = base + target @ steps
    return out


# --------------------------------------------------------------------------- max-min seeds
def maxmin_select(features: Any, n_select: int, first: int = 0,
                  return_distances: bool = False) -> list[int] | tuple[list[int], np.ndarray]:
    """000 Supp. Algorithm 1: greedy max-min (farthest-point) selection of seeds.

    ``features`` is ``(n_seeds, n_groups, F)`` (e.g.
    :func:`facebias.faces.mesh.normalize_mesh` of each group's prototype; ``(n_seeds, F)``
    is one group). Starting from ``first``, repeatedly
    add the unselected seed ``s`` maximising
    ``D(s) = min_{f selected, g} ||features[s, g] - features[f, g]||`` (same-group
    comparisons only). Ties go to the lowest index, so the result is deterministic.

    Parameters
    ----------
    features : array_like
        ``(n_seeds, n_groups, F)`` or ``(n_seeds, F)`` finite features.
    n_select : int
        Seeds to select, 1..n_seeds.
    first : int, default 0
        Index of the first seed.
    return_distances : bool, default False
        Also return ``D`` of each added seed.

    Returns
    -------
    list of int
        The ``n_select`` seed indices in selection order.
    numpy.ndarray, optional
        With ``return_distances``: ``D`` of each added seed (``inf`` for the first;
        non-increasing), in feature units.

    Raises
    ------
    ValueError
        For non-finite or wrongly shaped features, or ``n_select`` / ``first`` out of
        range.

    Examples
    --------
    >>> maxmin_select([[0.0], [1.0], [5.0], [2.0]], 3, return_distances=True)
    ([0, 2, 3], array([inf,  5.,  2.]))
    """
    x = finite_array(features, "features", (2, 3))
    if x.ndim == 2:
        x = x[:, None, :]
    n_seeds = x.shape[0]
    if int(n_select) != n_select or not 1 <= n_select <= n_seeds:
        raise ValueError(f"n_select: expected an integer in [1, {n_seeds}], got {n_select!r}")
    if int(first) != first or not 0 <= first < n_seeds:
        raise ValueError(f"first: expected a seed index in [0, {n_seeds}), got {first!r}")
    chosen = [int(first)]
    dists = [np.inf]
    dmin = np.full(n_seeds, np.inf)
    taken = np.zeros(n_seeds, dtype=bool)
    taken[first] = True
    for _ in range(int(n_select) - 1):
        f = chosen[-1]
        d_new = np.sqrt(np.einsum("sgf,sgf->sg", x - x[f], x - x[f])).min(axis=1)
        dmin = np.minimum(dmin, d_new)
        cand = np.where(taken, -np.inf, dmin)
        s = int(np.argmax(cand))
        chosen.append(s)
        dists.append(float(dmin[s]))
        taken[s] = True
    if return_distances:
        return chosen, np.asarray(dists)
    return chosen


# --------------------------------------------------------------------------- pairs
PROTOTYPE_COLUMNS = ("seed", "group", "prototype_id")
SEQUENCE_COLUMNS = ("prototype_id", "attribute", "level", "image_id", "is_self")
PAIR_COLUMNS = ("pair_id", "image_a", "image_b", "prototype_a", "prototype_b", "seed_a", "seed_b",
                "group", "attribute", "level", "label", "is_self_pair", "b_is_prototype")


def _require(table: Any, cols: Sequence[str], name: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"{name}: expected a DataFrame, got {type(table).__name__}")
    require_columns(table, cols, name)
    if table.empty:
        raise ValueError(f"{name}: no rows")
    na = table[list(cols)].isna().any()
    if na.any():
        raise ValueError(f"{name}: missing values in column {na[na].index[0]!r}")


def hcic_pairs(prototype_table: pd.DataFrame, sequence_table: pd.DataFrame, n_negative: int = 3,
               seed: int = 0) -> pd.DataFrame:
    """000's annotation pairs (B1.5): positives and same-group negatives.

    ``prototype_table``: one row per prototype, columns ``seed, group, prototype_id``
    (unique) and optionally ``image_id`` (the prototype's own image; default: the
    ``prototype_id``). ``sequence_table``: one row per sequence slot, columns
    ``prototype_id, attribute, level, image_id, is_self`` (``is_self`` = the slot is the
    prototype image: pose 0, original light, age / expression centre).

    * Positives: each prototype with every sequence slot of itself (600 x 20 = 12,000 at
      full scale, of which the ``is_self`` slots, 2,400, are identical-image pairs tagged
      ``is_self_pair``).
    * Negatives: each prototype with every sequence slot of ``n_negative`` other
      prototypes of the same group from different seeds, drawn uniformly without
      replacement with ``numpy.random.default_rng(seed)`` (600 x 3 x 20 = 36,000).

    Columns: ``pair_id, image_a`` (the prototype image) ``, image_b, prototype_a,
    prototype_b, seed_a, seed_b, group, attribute, level, label`` (1 = same identity
    intended, 0 = different) ``, is_self_pair, b_is_prototype`` (``image_b`` is
    ``prototype_b``'s own image). Positives come first, each block ordered by
    ``prototype_id`` and then by the slots' order in ``sequence_table``; the negative
    partners depend only on the tables' content, not on their row order.

    Parameters
    ----------
    prototype_table : pandas.DataFrame
        Columns :data:`PROTOTYPE_COLUMNS` (+ optional ``image_id``), no missing values.
    sequence_table : pandas.DataFrame
        Columns :data:`SEQUENCE_COLUMNS`, no missing values; ``is_self`` bool or 0/1.
    n_negative : int, default 3
        Negative partners per prototype (>= 0).
    seed : int, default 0
        Seeds the choice of negative partners.

    Returns
    -------
    pandas.DataFrame
        The pairs, columns :data:`PAIR_COLUMNS`.

    Raises
    ------
    ValueError
        For a non-DataFrame, a missing column or value, an empty table, a bad
        ``n_negative``, duplicate prototypes or slots, a slot of an unknown prototype, a
        prototype without slots, a bad ``is_self``, or too few same-group prototypes
        from other seeds.

    Examples
    --------
    >>> protos = pd.DataFrame({"seed": [0, 1], "group": "WM", "prototype_id": ["p0", "p1"]})
    >>> seq = pd.DataFrame({"prototype_id": ["p0", "p0", "p1", "p1"], "attribute": "pose",
    ...                     "level": [0, 1, 0, 1], "image_id": ["p0", "p0_yaw", "p1", "p1_yaw"],
    ...                     "is_self": [True, False, True, False]})
    >>> hcic_pairs(protos, seq, n_negative=1)[["image_a", "image_b", "label", "is_self_pair"]]
      image_a image_b  label  is_self_pair
    0      p0      p0      1          True
    1      p0  p0_yaw      1         False
    2      p1      p1      1          True
    3      p1  p1_yaw      1         False
    4      p0      p1      0         False
    5      p0  p1_yaw      0         False
    6      p1      p0      0         False
    7      p1  p0_yaw      0         False
    """
    _require(prototype_table, PROTOTYPE_COLUMNS, "prototype_table")
    _require(sequence_table, SEQUENCE_COLUMNS, "sequence_table")
    if int(n_negative) != n_negative or n_negative < 0:
        raise ValueError(f"n_negative: expected a non-negative integer, got {n_negative!r}")
    protos = prototype_table.copy()
    if "image_id" not in protos.columns:
        protos["image_id"] = protos["prototype_id"]
    dup = protos["prototype_id"].duplicated()
    if dup.any():
        raise ValueError(f"prototype_table: duplicate prototype_id {protos.loc[dup, 'prototype_id'].iloc[0]!r}")
    protos = protos.sort_values("prototype_id", kind="mergesort").reset_index(drop=True)
    seq = sequence_table[list(SEQUENCE_COLUMNS)].copy()
    known = seq["prototype_id"].isin(protos["prototype_id"])
    if not known.all():
        raise ValueError(
            f"sequence_table: prototype_id {seq.loc[~known, 'prototype_id'].iloc[0]!r} is not in prototype_table"
        )
    dup = seq.duplicated(["prototype_id", "attribute", "level"])
    if dup.any():
        r = seq.loc[dup].iloc[0]
        raise ValueError(
            f"sequence_table: duplicate slot prototype_id={r['prototype_id']!r}, "
            f"attribute={r['attribute']!r}, level={r['level']!r}"
        )
    if seq["is_self"].dtype != bool and not seq["is_self"].isin([0, 1]).all():
        raise ValueError("sequence_table: is_self must be bool or 0/1")
    seq["is_self"] = seq["is_self"].astype(bool)
    without = ~protos["prototype_id"].isin(seq["prototype_id"])
    if without.any():
        raise ValueError(
            f"sequence_table: prototype {protos.loc[without, 'prototype_id'].iloc[0]!r} has no sequence slots"
        )
    seq["_slot"] = np.arange(len(seq))  # slots keep the sequence_table's order
    seq = seq.rename(columns={"prototype_id": "prototype_b", "image_id": "image_b",
                              "is_self": "b_is_prototype"})
    a_cols = protos.rename(columns={"prototype_id": "prototype_a", "seed": "seed_a",
                                    "image_id": "image_a"})[["prototype_a", "seed_a", "group", "image_a"]]

    # partners: prototype_a -> prototype_b (itself for positives, n_negative others for negatives)
    rng = np.random.default_rng(seed)
    neg_a, neg_b = [], []
    ids = protos["prototype_id"].to_numpy()
    seeds = protos["seed"].to_numpy()
    groups = protos["group"].to_numpy()
    for i in range(len(protos)):
        cand = np.flatnonzero((groups == groups[i]) & (seeds != seeds[i]))
        if cand.size < n_negative:
            raise ValueError(
                f"prototype {ids[i]!r} (group {groups[i]!r}): only {cand.size} prototypes of the same "
                f"group from other seeds, need n_negative={n_negative}"
            )
        pick = np.sort(rng.choice(cand, size=int(n_negative), replace=False))
        neg_a.extend([ids[i]] * pick.size)
        neg_b.extend(ids[pick])
    partners = pd.concat([
        pd.DataFrame({"prototype_a": ids, "prototype_b": ids, "label": 1}),
        pd.DataFrame({"prototype_a": neg_a, "prototype_b": neg_b, "label": 0}),
    ], ignore_index=True)
    partners["_order"] = np.arange(len(partners))
    b_info = protos.rename(columns={"prototype_id": "prototype_b", "seed": "seed_b"})[["prototype_b", "seed_b"]]
    pairs = (partners.merge(a_cols, on="prototype_a", how="left")
             .merge(b_info, on="prototype_b", how="left")
             .merge(seq, on="prototype_b", how="inner"))
    pairs = pairs.sort_values(["_order", "_slot"], kind="mergesort").reset_index(drop=True)
    pairs["label"] = pairs["label"].astype(np.int64)
    pairs["is_self_pair"] = (pairs["label"] == 1) & pairs["b_is_prototype"]
    pairs["pair_id"] = np.arange(len(pairs), dtype=np.int64)
    return pairs[list(PAIR_COLUMNS)]


def pair_counts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Summary of :func:`hcic_pairs`.

    Parameters
    ----------
    pairs : pandas.DataFrame
        A :func:`hcic_pairs` table (needs ``group, label, is_self_pair, prototype_a``).

    Returns
    -------
    pandas.DataFrame
        One int64 row per group plus ``"all"``, columns ``n_pairs, n_positive,
        n_negative, n_self_pairs, n_prototypes``.

    Raises
    ------
    ValueError
        For a non-DataFrame, a missing column or value, or an empty table.
    """
    _require(pairs, ("group", "label", "is_self_pair", "prototype_a"), "pairs")
    g = pairs.groupby("group", sort=True)
    out = pd.DataFrame({
        "n_pairs": g.size(),
        "n_positive": g["label"].apply(lambda s: int((s == 1).sum())),
        "n_negative": g["label"].apply(lambda s: int((s == 0).sum())),
        "n_self_pairs": g["is_self_pair"].apply(lambda s: int(s.sum())),
        "n_prototypes": g["prototype_a"].nunique(),
    })
    total = pd.DataFrame({
        "n_pairs": [len(pairs)],
        "n_positive": [int((pairs["label"] == 1).sum())],
        "n_negative": [int((pairs["label"] == 0).sum())],
        "n_self_pairs": [int(pairs["is_self_pair"].sum())],
        "n_prototypes": [int(pairs["prototype_a"].nunique())],
    }, index=["all"])
    out.index = out.index.astype(object)
    return pd.concat([out, total]).astype(np.int64)
