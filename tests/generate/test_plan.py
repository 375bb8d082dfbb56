"""facebias.generate.plan: 000's prototypes, max-min seed selection and pair table, against
planted known truth and brute force."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from facebias import latent as L
from facebias.generate import plan as P

D = 512


def correlated_unit_normals(k, d=D, shared=0.7, seed=0):
    """``k`` unit rows sharing a common component (pairwise cosine ~ shared²) and ``k``
    standard-normal offsets."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(d)
    c /= np.linalg.norm(c)
    r = rng.standard_normal((k, d))
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    n = shared * c + np.sqrt(1 - shared**2) * r
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return n, rng.standard_normal(k)


# --------------------------------------------------------------------------- prototypes
def test_prototypes_hit_intended_values_and_differ_only_in_span():
    n, b = correlated_unit_normals(k=5, seed=11)
    gender = (n[0], b[0])
    races = {"White": (n[1], b[1]), "Black": (n[2], b[2]), "East Asian": (n[3], b[3])}
    z = np.random.default_rng(11).standard_normal(D)
    protos = P.prototypes(z, gender, races, c_gender=1.75, c_race=1.5, fixed=n[4:])
    assert list(protos) == list(P.GROUPS)
    stack = np.stack(list(protos.values()))
    vals = L.decision_values(stack, n[:4], b[:4])
    for (key, v) in zip(protos, vals, strict=True):
        race = {"W": 1, "B": 2, "A": 3}[key[0]]
        want = np.full(4, -1.5)
        want[0] = 1.75 if key[1] == "M" else -1.75
        want[race] = 1.5
        assert np.abs(v - want).max() < 1e-9, key
        assert np.argmax(v[1:]) + 1 == race
    # fixed attribute keeps the seed's value
    assert np.abs(L.decision_values(stack, n[4:], b[4:]) - L.decision_values(z, n[4:], b[4:])).max() < 1e-9
    # all six differ only within span(gender, race normals, fixed normal)
    q, _ = np.linalg.qr(n.T)
    diff = stack - stack[0]
    assert np.abs(diff - (diff @ q) @ q.T).max() < 1e-10
    q4, _ = np.linalg.qr(n[:4].T)
    p_plain = P.prototypes(z, gender, races)
    diff = np.stack(list(p_plain.values())) - p_plain["WM"]
    assert np.abs(diff - (diff @ q4) @ q4.T).max() < 1e-10
    # others="zero" and the leaky non-orthogonal variant
    pz = P.prototypes(z, gender, races, others="zero")
    assert np.allclose(L.decision_values(pz["BF"], n[:4], b[:4]), [-1.75, 0, 1.5, 0], atol=1e-9)
    pl = P.prototypes(z, gender, races, orthogonal=False)
    assert np.abs(L.decision_values(pl["BF"], n[:4], b[:4]) - [-1.75, -1.5, 1.5, -1.5]).max() > 0.1
    as_arrays = P.prototypes(z, (n[0], np.array([b[0]])), {k: (v[0], np.array(v[1])) for k, v in races.items()})
    assert all(np.allclose(as_arrays[k], p_plain[k]) for k in P.GROUPS)
    with pytest.raises(ValueError, match="offset must be one number"):
        P.prototypes(z, (n[0], b[:2]), races)
    with pytest.raises(ValueError, match="unknown race 'Martian'"):
        P.prototypes(z, gender, {"Martian": (n[1], b[1])})


def test_sequence_constants():
    assert P.POSE_SEQUENCE == (-30, -15, 0, 15, 30)
    assert P.LIGHT_SEQUENCE == ("up", "down", "left", "right")
    assert P.LIGHT_POWER == 0.7


# --------------------------------------------------------------------------- max-min
def brute_maxmin(x, n_select, first):
    chosen = [first]
    while len(chosen) < n_select:
        best, best_d = None, -1.0
        for s in range(x.shape[0]):
            if s in chosen:
                continue
            d = min(np.linalg.norm(x[s, g] - x[f, g]) for f in chosen for g in range(x.shape[1]))
            if d > best_d:
                best, best_d = s, d
        chosen.append(best)
    return chosen


def test_maxmin_matches_brute_force_and_is_non_increasing():
    x = np.random.default_rng(13).standard_normal((40, 6, 5))
    for first in (0, 7):
        got, dist = P.maxmin_select(x, 12, first=first, return_distances=True)
        assert got == brute_maxmin(x, 12, first)
        assert len(set(got)) == 12 and got[0] == first
        assert np.isinf(dist[0]) and np.all(np.diff(dist[1:]) <= 1e-12)
    assert P.maxmin_select(x, 40) == P.maxmin_select(x, 40)  # deterministic, all distinct
    assert sorted(P.maxmin_select(x, 40)) == list(range(40))


def test_maxmin_picks_one_per_cluster_first():
    rng = np.random.default_rng(14)
    centres = rng.standard_normal((5, 3, 4)) * 100
    labels = np.repeat(np.arange(5), 8)
    rng.shuffle(labels)
    x = centres[labels] + rng.standard_normal((40, 3, 4))
    got = P.maxmin_select(x, 5, first=3)
    assert sorted(labels[got]) == list(range(5))
    # same-group comparison: seeds far apart in every group count, cross-group never compared
    y = np.zeros((3, 2, 1))
    y[1, 0, 0] = 10.0  # seed 1 differs from seed 0 only in group 0 -> D = min over groups = 0
    y[2] = 5.0  # seed 2 differs in both groups by 5
    assert P.maxmin_select(y, 2) == [0, 2]


def test_maxmin_bad_input():
    with pytest.raises(ValueError, match="n_select"):
        P.maxmin_select(np.zeros((3, 2, 2)), 4)
    with pytest.raises(ValueError, match="first"):
        P.maxmin_select(np.zeros((3, 2, 2)), 2, first=3)


# --------------------------------------------------------------------------- pairs
def synthetic_tables(n_seeds=100):
    protos = pd.DataFrame(
        [(s, g, f"s{s:03d}_{g}") for s in range(n_seeds) for g in P.GROUPS],
        columns=["seed", "group", "prototype_id"],
    )
    slots = ([("pose", lv) for lv in P.POSE_SEQUENCE]
             + [("light", lv) for lv in (*P.LIGHT_SEQUENCE, "original")]
             + [("age", lv) for lv in range(5)] + [("expression", lv) for lv in range(5)])
    rows = []
    for pid in protos["prototype_id"]:
        for attr, lv in slots:
            is_self = (attr == "pose" and lv == 0) or lv == "original" or (attr in ("age", "expression") and lv == 2)
            rows.append((pid, attr, lv, pid if is_self else f"{pid}_{attr}_{lv}", is_self))
    seq = pd.DataFrame(rows, columns=["prototype_id", "attribute", "level", "image_id", "is_self"])
    return protos, seq


def test_hcic_pairs_full_scale_counts():
    protos, seq = synthetic_tables()
    assert len(protos) == 600 and len(seq) == 12_000 and seq["image_id"].nunique() == 600 * 17
    pairs = P.hcic_pairs(protos, seq, n_negative=3, seed=0)
    assert len(pairs) == 48_000
    assert list(pairs.columns[:12]) == ["pair_id", "image_a", "image_b", "prototype_a", "prototype_b",
                                        "seed_a", "seed_b", "group", "attribute", "level", "label",
                                        "is_self_pair"]
    pos, neg = pairs[pairs.label == 1], pairs[pairs.label == 0]
    assert len(pos) == 12_000 and len(neg) == 36_000
    assert pairs["is_self_pair"].sum() == 2_400
    assert (pos.loc[pos.is_self_pair, "image_a"] == pos.loc[pos.is_self_pair, "image_b"]).all()
    assert (pos.prototype_a == pos.prototype_b).all() and (pos.seed_a == pos.seed_b).all()
    # negatives: same group, different seed, 3 distinct partners x 20 slots each
    b_group = neg["prototype_b"].str.slice(5)
    assert (b_group == neg["group"]).all() and (neg.seed_a != neg.seed_b).all()
    per = neg.groupby("prototype_a")["prototype_b"].agg(["nunique", "size"])
    assert (per["nunique"] == 3).all() and (per["size"] == 60).all()
    assert not neg["is_self_pair"].any()
    assert pairs["pair_id"].is_unique
    assert set(pairs["attribute"]) == {"pose", "light", "age", "expression"}
    counts = P.pair_counts(pairs)
    assert counts.loc["all"].to_dict() == {"n_pairs": 48_000, "n_positive": 12_000, "n_negative": 36_000,
                                          "n_self_pairs": 2_400, "n_prototypes": 600}
    assert (counts.loc[list(P.GROUPS), "n_pairs"] == 8_000).all()
    # deterministic given the seed, independent of row order; another seed changes partners
    again = P.hcic_pairs(protos.sample(frac=1, random_state=1), seq.sample(frac=1, random_state=2))
    key = ["prototype_a", "prototype_b", "attribute", "level"]
    norm = lambda p: p[key].astype(str).sort_values(key).reset_index(drop=True)  # noqa: E731
    assert norm(again).equals(norm(pairs))
    other = P.hcic_pairs(protos, seq, seed=1)
    assert not other[other.label == 0]["prototype_b"].reset_index(drop=True).equals(
        neg["prototype_b"].reset_index(drop=True))


def test_hcic_pairs_validation():
    protos, seq = synthetic_tables(n_seeds=3)
    with pytest.raises(ValueError, match="only 2 prototypes of the same group"):
        P.hcic_pairs(protos, seq, n_negative=3)
    assert len(P.hcic_pairs(protos, seq, n_negative=2)) == 18 * 20 * 3
    with pytest.raises(ValueError, match="column 'is_self' not found"):
        P.hcic_pairs(protos, seq.drop(columns="is_self"), n_negative=1)
    with pytest.raises(ValueError, match="not in prototype_table"):
        P.hcic_pairs(protos.iloc[1:], seq, n_negative=1)
    with pytest.raises(ValueError, match="duplicate slot"):
        P.hcic_pairs(protos, pd.concat([seq, seq.iloc[:1]]), n_negative=1)
    with pytest.raises(ValueError, match="duplicate prototype_id"):
        P.hcic_pairs(pd.concat([protos, protos.iloc[:1]]), seq, n_negative=1)
