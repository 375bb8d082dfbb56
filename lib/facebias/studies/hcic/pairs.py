"""Sequences and pair sets of paper 000 (Sec. 3.2, 3.4; ``docs/specs/hcic.md`` B1.3, B1.5).

The 20 sequence slots of each prototype (4 attributes x 5 levels, the prototype standing at
each sequence's centre), the groups in figure order, the model-only cross-group pairs of
Fig. 5's third panel, and how the two images of a pair are related (Fig. 5's three panels:
same prototype, same group, different group).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = [
    "RELATIONS",
    "ATTRIBUTES",
    "CENTRE_LEVEL",
    "PAIR_COLUMNS",
    "IMAGE_COLUMNS",
    "centre_levels",
    "group_order",
    "slots_from_images",
    "cross_group_pairs",
    "relation",
]


RELATIONS = ("same_prototype", "same_group", "different_group")
ATTRIBUTES = ("pose", "light", "age", "expression")
#: Centre (prototype) slot of each sequence on the procedural renderer (original light at 0).
CENTRE_LEVEL = {"pose": 2, "light": 0, "age": 2, "expression": 2}
PAIR_COLUMNS = ("pair_id", "image_a", "image_b", "prototype_a", "prototype_b", "seed_a", "seed_b",
                "group", "attribute", "level", "label", "is_self_pair", "b_is_prototype")
IMAGE_COLUMNS = ("image_id", "seed", "group", "prototype_id", "attribute", "level", "is_prototype")


def centre_levels(images: pd.DataFrame) -> dict[str, int]:
    """Each sequence's centre level (where the prototype stands), read from the images
    table: the one level of 0..4 that no image of that attribute has. Where that is not
    one level (no such images, or a subset with several levels missing) the procedural
    layout :data:`CENTRE_LEVEL` applies (pose 2, light 0, age 2, expression 2); the DCGAN's
    learned light direction gives light 2.

    Parameters
    ----------
    images : pandas.DataFrame
        The images table (needs ``attribute`` and ``level``).

    Returns
    -------
    dict of str to int
        Attribute -> centre level (0-based slot index).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> images = pd.DataFrame({"attribute": "light", "level": [0, 1, 3, 4]})
    >>> centre_levels(images)  # light has no image at 2: an ordered (learned) light sequence
    {'pose': 2, 'light': 2, 'age': 2, 'expression': 2}
    """
    require_columns(images, ["attribute", "level"], "images")
    out = dict(CENTRE_LEVEL)
    for attr in ATTRIBUTES:
        have = set(images.loc[images["attribute"] == attr, "level"].astype(int))
        free = [lv for lv in range(5) if lv not in have]
        if len(free) == 1 and have <= set(range(5)):
            out[attr] = free[0]
    return out


def group_order(images: pd.DataFrame, prefer: Sequence[str] = ()) -> list[str]:
    """The groups of the ``group`` column, in figure order. Groups come from the data;
    ``prefer`` only orders them.

    Parameters
    ----------
    images : pandas.DataFrame
        A table with a ``group`` column.
    prefer : sequence of str, default ()
        Groups to put first, in that order (a preferred group absent from the data is
        left out); the rest follow in order of first appearance.

    Returns
    -------
    list of str
        The groups.

    Raises
    ------
    ValueError
        For a missing ``group`` column.

    Examples
    --------
    >>> group_order(pd.DataFrame({"group": ["WM", "BF", "WM", "AF"]}), prefer=("AF", "XX"))
    ['AF', 'WM', 'BF']
    """
    require_columns(images, ["group"], "images")
    seen = [str(g) for g in pd.unique(images["group"].astype(str))]
    return [g for g in prefer if g in seen] + [g for g in seen if g not in set(prefer)]


def slots_from_images(images: pd.DataFrame, centre: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The 20 sequence slots per prototype from the images table; the centre slot of each
    sequence is the prototype image.

    Parameters
    ----------
    images : pandas.DataFrame
        The images table (``image_id, seed, group, prototype_id, attribute, level,
        is_prototype``).
    centre : mapping of str to int, optional
        Centre level per attribute; default :func:`centre_levels` of ``images``.

    Returns
    -------
    pandas.DataFrame
        ``prototype_id, attribute, level, image_id, is_self``, 4 attributes x 5 levels
        per prototype.

    Raises
    ------
    ValueError
        For a missing column, or a prototype without an image at a non-centre level.
    """
    require_columns(images, IMAGE_COLUMNS, "images")
    centre = centre_levels(images) if centre is None else {**CENTRE_LEVEL, **centre}
    protos = images[images["is_prototype"].astype(bool)].set_index("prototype_id")["image_id"]
    rows = []
    seq = images[images["attribute"].isin(ATTRIBUTES)]
    lookup = {(p, a, int(lv)): i for p, a, lv, i in
              zip(seq["prototype_id"], seq["attribute"], seq["level"], seq["image_id"], strict=True)}
    for pid, pimg in protos.items():
        for attr in ATTRIBUTES:
            for level in range(5):
                iid = lookup.get((pid, attr, level))
                if iid is None and level != centre[attr]:
                    raise ValueError(f"images: prototype {pid!r} has no {attr} image at level {level}")
                rows.append({"prototype_id": pid, "attribute": attr, "level": level,
                             "image_id": pimg if iid is None else iid, "is_self": iid is None})
    return pd.DataFrame(rows)


def cross_group_pairs(images: pd.DataFrame, n_per_prototype: int = 1, seed: int = 0,
                      start_id: int = 0) -> pd.DataFrame:
    """Model-only pairs of Fig. 5's third panel: each prototype with the 20 sequence slots
    of ``n_per_prototype`` prototypes of a **different group and a different seed**, drawn
    uniformly without replacement (``default_rng(seed)``, prototypes in sorted order).

    Parameters
    ----------
    images : pandas.DataFrame
        The images table (see :func:`slots_from_images`).
    n_per_prototype : int, default 1
        Partner prototypes per prototype (>= 1).
    seed : int, default 0
        Seeds the choice of partners.
    start_id : int, default 0
        First ``pair_id``.

    Returns
    -------
    pandas.DataFrame
        The columns of ``pairs.parquet`` (``group`` = prototype A's group, ``label`` 0)
        plus ``group_a, group_b, relation`` (= ``different_group``); ``pair_id`` from
        ``start_id``.

    Raises
    ------
    ValueError
        For a bad ``n_per_prototype``, too few prototypes of another group and seed, or
        as :func:`slots_from_images`.
    """
    if int(n_per_prototype) != n_per_prototype or n_per_prototype < 1:
        raise ValueError(f"n_per_prototype: expected a positive integer, got {n_per_prototype!r}")
    slots = slots_from_images(images)
    protos = (images[images["is_prototype"].astype(bool)][["prototype_id", "image_id", "seed", "group"]]
              .sort_values("prototype_id", kind="mergesort").reset_index(drop=True))
    rng = np.random.default_rng(seed)
    seeds, groups = protos["seed"].to_numpy(), protos["group"].to_numpy()
    a_idx, b_idx = [], []
    for i in range(len(protos)):
        ok = np.flatnonzero((groups != groups[i]) & (seeds != seeds[i]))
        if ok.size < n_per_prototype:
            raise ValueError(f"prototype {protos['prototype_id'].iloc[i]!r}: only {ok.size} prototypes of "
                             f"another group and seed, {n_per_prototype} wanted")
        a_idx += [i] * n_per_prototype
        b_idx += list(np.sort(rng.choice(ok, n_per_prototype, replace=False)))
    a = protos.iloc[a_idx].reset_index(drop=True)
    b = protos.iloc[b_idx].reset_index(drop=True)
    partner = pd.DataFrame({"image_a": a["image_id"], "prototype_a": a["prototype_id"],
                            "prototype_b": b["prototype_id"], "seed_a": a["seed"].astype(np.int64),
                            "seed_b": b["seed"].astype(np.int64), "group": a["group"],
                            "group_a": a["group"], "group_b": b["group"]})
    sl = slots.rename(columns={"prototype_id": "prototype_b", "image_id": "image_b",
                               "is_self": "b_is_prototype"})
    out = partner.merge(sl, on="prototype_b", how="left", sort=False)
    out["level"] = out["level"].astype(np.int64)
    out["label"] = 0
    out["is_self_pair"] = False
    out = out[[c for c in PAIR_COLUMNS if c != "pair_id"] + ["group_a", "group_b"]]
    out.insert(0, "pair_id", np.arange(start_id, start_id + len(out)))
    out["relation"] = "different_group"
    return out


def relation(pairs: pd.DataFrame) -> pd.Series:
    """How the two images of each pair are related.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``prototype_a``, ``prototype_b`` and optionally ``group_a``/``group_b`` (where
        those are missing the pair's ``group`` applies to both images, as in
        ``pairs.parquet``; without them every pair is within one group).

    Returns
    -------
    pandas.Series
        ``same_prototype`` (same seed and group), ``same_group`` (other seed, same group)
        or ``different_group``, named ``relation``.

    Raises
    ------
    ValueError
        For a missing prototype column.

    Examples
    --------
    >>> pairs = pd.DataFrame({"prototype_a": "p0", "prototype_b": ["p0", "p1", "p2"],
    ...                       "group_a": "WM", "group_b": ["WM", "WM", "BF"]})
    >>> relation(pairs).tolist()
    ['same_prototype', 'same_group', 'different_group']
    """
    require_columns(pairs, ["prototype_a", "prototype_b"], "pairs")
    same_p = (pairs["prototype_a"] == pairs["prototype_b"]).to_numpy()
    if "group_a" in pairs.columns and "group_b" in pairs.columns:
        ga, gb = pairs["group_a"], pairs["group_b"]
        if "group" in pairs.columns:  # rows of pairs.parquet concatenated with cross pairs
            ga, gb = ga.fillna(pairs["group"]), gb.fillna(pairs["group"])
        same_g = (ga == gb).to_numpy()
    else:
        same_g = np.ones(len(pairs), bool)
    rel = np.where(same_p, RELATIONS[0], np.where(same_g, RELATIONS[1], RELATIONS[2]))
    return pd.Series(rel, index=pairs.index, name="relation")
