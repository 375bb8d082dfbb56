"""facebias.latent: hyperplanes, dual basis, projections, transects, prototypes, sequences,
max-min selection and 000's pair table, all against planted known truth."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from facebias import latent as L

D, K = 512, 7


def correlated_normals(k=K, d=D, shared=0.7, seed=0, unit=False):
    """Rows sharing a common component (pairwise cosine ~ shared²); unit length or random
    lengths in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(d)
    c /= np.linalg.norm(c)
    r = rng.standard_normal((k, d))
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    n = shared * c + np.sqrt(1 - shared**2) * r
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    if not unit:
        n *= rng.uniform(0.5, 2.0, (k, 1))
    return n, rng.standard_normal(k)


# --------------------------------------------------------------------------- dual basis
def test_orthogonalize_is_dual_basis():
    n, _ = correlated_normals()
    cos = (n @ n.T) / np.outer(np.linalg.norm(n, axis=1), np.linalg.norm(n, axis=1))
    assert cos[np.triu_indices(K, 1)].min() > 0.3  # genuinely correlated
    d = L.orthogonalize(n)
    assert d.shape == (K, D)
    assert np.abs(d @ n.T - np.eye(K)).max() < 1e-10
    # each direction lies in the span of the normals and is n_j minus its projection on the others
    for j in range(K):
        others = np.delete(n, j, axis=0)
        q, _ = np.linalg.qr(others.T)
        resid = n[j] - q @ (q.T @ n[j])
        cosine = resid @ d[j] / np.linalg.norm(resid) / np.linalg.norm(d[j])
        assert cosine == pytest.approx(1.0, abs=1e-12)


def test_printed_algorithm_2_is_only_lower_triangular():
    n, _ = correlated_normals(unit=True)
    p = L.orthogonalize_printed(n)
    g = p @ n.T  # g[i, k] = <ñ_i, n_k>
    lower = np.abs(g[np.tril_indices(K, -1)]).max()  # k < i
    upper = np.abs(g[np.triu_indices(K, 1)]).max()  # k > i
    assert lower < 1e-10
    assert upper > 0.1
    # and it equals R_ii Q_i
    q, r = np.linalg.qr(n.T)
    assert np.allclose(p, (q * np.diag(r)).T, atol=1e-10)


# --------------------------------------------------------------------------- projection
def test_projection_closed_form_and_alternating_agree():
    n, b = correlated_normals()
    rng = np.random.default_rng(1)
    z = 3 * rng.standard_normal((4, D))
    z0 = L.project_to_intersection(z, n, b)
    assert z0.shape == z.shape
    assert np.abs(L.decision_values(z0, n, b)).max() < 1e-10
    # closest point: the displacement lies in the span of the normals
    q, _ = np.linalg.qr(n.T)
    disp = z - z0
    assert np.abs(disp - (disp @ q) @ q.T).max() < 1e-10
    alt200 = L.project_alternating(z, n, b, n_iter=200)
    alt5 = L.project_alternating(z, n, b, n_iter=5)
    assert np.linalg.norm(alt200 - z0, axis=1).max() < 1e-8
    assert np.linalg.norm(alt5 - z0, axis=1).min() > 1e-3
    # single latent keeps its shape; tol stops early but still converges
    one = L.project_to_intersection(z[0], n, b)
    assert one.shape == (D,) and np.allclose(one, z0[0], atol=1e-12)
    early = L.project_alternating(z[0], n, b, n_iter=10_000, tol=1e-13)
    assert np.linalg.norm(early - z0[0]) < 1e-8


def test_alternating_is_exact_in_one_sweep_for_orthogonal_normals():
    rng = np.random.default_rng(2)
    q, _ = np.linalg.qr(rng.standard_normal((D, 3)))
    n = q.T * np.array([1.0, 2.0, 0.5])[:, None]
    b = rng.standard_normal(3)
    z = rng.standard_normal(D)
    assert np.allclose(L.project_alternating(z, n, b, n_iter=1), L.project_to_intersection(z, n, b),
                       atol=1e-12)


# --------------------------------------------------------------------------- transects
def test_transect_orthogonal_is_exact_and_keeps_fixed_attributes():
    n, b = correlated_normals()
    rng = np.random.default_rng(3)
    z = 2 * rng.standard_normal(D)
    tn, tb = n[:2], b[:2]  # transect: two attributes (e.g. hair x skin)
    fn, fb = n[2:], b[2:]  # the other five keep the seed's value
    grids = [np.linspace(-1.5, 1.7, 5), np.array([-0.5, 0.0, 0.25])]
    t = L.transect(z, tn, tb, grids, orthogonal=True, fixed=fn)
    assert t.shape == (5, 3, D)
    vals = L.decision_values(t, tn, tb)
    want = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1)
    assert np.abs(vals - want).max() < 1e-9
    seed_fixed = L.decision_values(z, fn, fb)
    assert np.abs(L.decision_values(t, fn, fb) - seed_fixed).max() < 1e-9
    # without `fixed`, the base point is the plain projection and moves the others
    t0 = L.transect(z, tn, tb, grids, orthogonal=True)
    assert np.abs(L.decision_values(t0, tn, tb) - want).max() < 1e-9
    base = L.project_to_intersection(z, tn, tb)
    assert np.abs(L.decision_values(t0[0, 0], fn, fb) - seed_fixed).max() > 1e-3
    assert np.allclose(L.transect(z, tn, tb, [[0.0], [0.0]])[0, 0], base, atol=1e-12)
    # batches of seeds get a leading axis
    tb3 = L.transect(np.stack([z, -z, 2 * z]), tn, tb, grids, fixed=fn)
    assert tb3.shape == (3, 5, 3, D)
    assert np.allclose(tb3[0], t, atol=1e-12)


def test_transect_three_attributes_2x2x2():
    n, b = correlated_normals(k=3, seed=5)
    z = np.random.default_rng(5).standard_normal(D)
    grids = [[-1.0, 1.0]] * 3
    t = L.transect(z, n, b, grids)
    assert t.shape == (2, 2, 2, D)
    for idx in itertools.product(range(2), repeat=3):
        assert np.allclose(L.decision_values(t[idx], n, b), [grids[k][i] for k, i in enumerate(idx)],
                           atol=1e-9)


def test_transect_without_orthogonalisation_leaks():
    n, b = correlated_normals(unit=True)
    z = np.random.default_rng(4).standard_normal(D)
    hair, gender = n[[0]], n[[1]]
    grid = [np.linspace(-1, 1, 5)]
    plain = L.transect(z, hair, b[:1], grid, orthogonal=False)
    ortho = L.transect(z, hair, b[:1], grid, orthogonal=True, fixed=gender)
    # one attribute alone: the plain step moves its own value exactly too
    assert np.allclose(L.decision_values(plain, hair, b[:1])[:, 0], grid[0], atol=1e-9)
    # but it drags the correlated gender value along (004 Fig. 5) ...
    g_plain = L.decision_values(plain, gender, b[1:2])[:, 0]
    assert np.ptp(g_plain) > 0.5
    assert np.allclose(np.diff(g_plain), 0.5 * (hair[0] @ gender[0]), atol=1e-9)
    # ... which the dual basis removes
    assert np.ptp(L.decision_values(ortho, gender, b[1:2])[:, 0]) < 1e-9
    # two transect attributes leak into each other as well
    p2 = L.transect(z, n[:2], b[:2], [[0.0, 1.0], [0.0]], orthogonal=False)
    v = L.decision_values(p2[:, 0], n[:2], b[:2])
    assert abs(v[1, 1] - v[0, 1]) > 0.1
    # paper's printed step c/<v,n> v/||v|| with an unnormalised v would miss the value
    v_raw = 3.0 * n[0]
    printed = 1.7 / (v_raw @ n[0]) * v_raw / np.linalg.norm(v_raw)
    assert abs(n[0] @ printed - 1.7) > 0.5


def test_non_unit_normals_are_respected():
    n, b = correlated_normals(k=3, seed=9)  # lengths 0.5..2
    z = np.random.default_rng(9).standard_normal(D)
    t = L.transect(z, n, b, [[-2.0, 2.0], [1.0], [0.0]], orthogonal=False)
    vals = L.decision_values(t, n, b)
    assert np.allclose(vals[1, 0, 0, 0] - vals[0, 0, 0, 0], 4.0, atol=1e-9)


# --------------------------------------------------------------------------- fitting
def planted(seed=0, n=4000, d=64):
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal(d)
    normal /= np.linalg.norm(normal)
    offset = 0.3
    x = rng.standard_normal((n, d))
    return rng, x, normal, offset, x @ normal + offset


def test_fit_ridge_recovers_normal_and_offset():
    rng, x, normal, offset, dist = planted()
    y = 0.5 + 0.1 * dist + 0.02 * rng.standard_normal(dist.size)  # tau = 0.5 at the boundary
    h = L.fit_hyperplane(x, y, kind="ridge", alpha=1.0)
    assert h.kind == "ridge" and h.tau == 0.5 and h.n_samples == x.shape[0]
    assert np.linalg.norm(h.normal) == pytest.approx(1.0)
    assert h.normal @ normal > 0.99
    assert h.offset == pytest.approx(offset, abs=0.05)
    assert h.weight_norm == pytest.approx(0.1, rel=0.05)
    assert h.score > 0.9
    assert np.allclose(h.decision(x[:5]), x[:5] @ h.normal + h.offset)
    # a sigmoid squashed into [0, 1] keeps the direction and the midpoint
    ys = 1 / (1 + np.exp(-1.5 * dist))
    hs = L.fit_hyperplane(x, ys, kind="ridge")
    assert hs.normal @ normal > 0.95 and abs(hs.offset - offset) < 0.1
    # standardisation maps back to the same hyperplane in latent coordinates
    hz = L.fit_hyperplane(x * 3 + 1, y, kind="ridge", standardize=True)
    assert hz.normal @ normal > 0.99
    assert np.allclose(hz.decision(x[:20] * 3 + 1), 3 * h.decision(x[:20]), atol=0.05)  # distances scale with the space


def test_fit_svm_recovers_normal_and_offset():
    rng, x, normal, offset, dist = planted(seed=1)
    labels = dist + 0.1 * rng.standard_normal(dist.size) > 0
    h = L.fit_hyperplane(x, labels.astype(float), kind="svm", C=1.0, threshold=0.5)
    assert h.kind == "svm" and h.tau == 0.0 and h.n_positive == int(labels.sum())
    assert h.normal @ normal > 0.95
    assert h.offset == pytest.approx(offset, abs=0.1)
    assert h.score > 0.9
    # bool labels and [0, 1] scores binarised at the threshold give the same fit
    h2 = L.fit_hyperplane(x, labels, kind="svm")
    assert np.allclose(h.normal, h2.normal)
    scores = np.where(labels, 0.8, 0.2)
    h3 = L.fit_hyperplane(x, scores, kind="svm", threshold=0.5)
    assert np.allclose(h.normal, h3.normal)


def test_fit_hyperplanes_from_table():
    rng, x, normal, offset, dist = planted(seed=2, n=2000, d=32)
    other = rng.standard_normal(32)
    other /= np.linalg.norm(other)
    table = pd.DataFrame({
        "age": np.clip(0.5 + 0.1 * dist, 0, 1),
        "smile": (x @ other > 0).astype(float),
    })
    names, normals, offsets = L.fit_hyperplanes(x, table, {"age": "ridge", "smile": {"kind": "svm", "C": 0.5}})
    assert names == ["age", "smile"]
    assert normals.shape == (2, 32) and offsets.shape == (2,)
    assert normals[0] @ normal > 0.98 and normals[1] @ other > 0.95
    with pytest.raises(ValueError, match="missing column 'hair'"):
        L.fit_hyperplanes(x, table, {"hair": "ridge"})
    bad = table.copy()
    bad.loc[3, "age"] = np.nan
    with pytest.raises(ValueError, match=r"table\['age'\]: missing value in row 3"):
        L.fit_hyperplanes(x, bad, {"age": "ridge"})
    with pytest.raises(ValueError, match="attribute 'smile'.*both classes"):
        L.fit_hyperplanes(x, table.assign(smile=1.0), {"smile": "svm"})


# --------------------------------------------------------------------------- prototypes
def test_prototypes_hit_intended_values_and_differ_only_in_span():
    n, b = correlated_normals(k=5, seed=11, unit=True)
    gender = (n[0], b[0])
    races = {"White": (n[1], b[1]), "Black": (n[2], b[2]), "East Asian": (n[3], b[3])}
    z = np.random.default_rng(11).standard_normal(D)
    protos = L.prototypes(z, gender, races, c_gender=1.75, c_race=1.5, fixed=n[4:])
    assert list(protos) == list(L.GROUPS)
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
    p_plain = L.prototypes(z, gender, races)
    diff = np.stack(list(p_plain.values())) - p_plain["WM"]
    assert np.abs(diff - (diff @ q4) @ q4.T).max() < 1e-10
    # others="zero" and the leaky non-orthogonal variant
    pz = L.prototypes(z, gender, races, others="zero")
    assert np.allclose(L.decision_values(pz["BF"], n[:4], b[:4]), [-1.75, 0, 1.5, 0], atol=1e-9)
    pl = L.prototypes(z, gender, races, orthogonal=False)
    assert np.abs(L.decision_values(pl["BF"], n[:4], b[:4]) - [-1.75, -1.5, 1.5, -1.5]).max() > 0.1
    as_arrays = L.prototypes(z, (n[0], np.array([b[0]])), {k: (v[0], np.array(v[1])) for k, v in races.items()})
    assert all(np.allclose(as_arrays[k], p_plain[k]) for k in L.GROUPS)
    with pytest.raises(ValueError, match="offset must be one number"):
        L.prototypes(z, (n[0], b[:2]), races)
    with pytest.raises(ValueError, match="unknown race 'Martian'"):
        L.prototypes(z, gender, {"Martian": (n[1], b[1])})


# --------------------------------------------------------------------------- sequences
def test_attribute_sequence_linear_closed_form():
    rng = np.random.default_rng(12)
    a = rng.standard_normal(D) * 0.05
    a0 = 0.3
    z = rng.standard_normal(D)
    z -= (a @ z) * a / (a @ a)  # pred(z) = a0 = 0.3
    calls = []

    def score(batch):
        calls.append(len(batch))
        return batch @ a + a0

    seq, d = L.attribute_sequence(z, a, score, L.AGE_TARGET, step=0.05, n=2, max_distance=20)
    closed = (L.AGE_TARGET - (a @ z + a0)) / np.linalg.norm(a)
    assert d == pytest.approx(closed, abs=1e-9)
    assert seq.shape == (5, D)
    assert np.array_equal(seq[2], z)
    u = a / np.linalg.norm(a)
    assert np.allclose(seq - z, np.outer([-d, -d / 2, 0, d / 2, d], u), atol=1e-12)
    assert score(seq[-1:])[0] == pytest.approx(L.AGE_TARGET, abs=1e-9)
    assert max(calls) <= 16
    # without refinement: the first grid step at or past the target
    _, d_grid = L.attribute_sequence(z, a, score, L.AGE_TARGET, step=0.05, refine=False, max_distance=20)
    assert closed <= d_grid < closed + 0.05 + 1e-12


def test_attribute_sequence_edge_cases_warn():
    a = np.zeros(8)
    a[0] = 1.0
    z = np.zeros(8)
    with pytest.warns(L.SequenceCalibrationWarning, match="already scores"):
        seq, d = L.attribute_sequence(z, a, lambda x: x @ a + 0.95, L.EXPRESSION_TARGET)
    assert d == 0.0 and np.allclose(seq, z)
    with pytest.warns(L.SequenceCalibrationWarning, match="never reached"):
        seq, d = L.attribute_sequence(z, a, lambda x: 0.01 * (x @ a), 0.9, max_distance=3.0)
    assert d == 3.0 and np.allclose(seq[-1], 3.0 * a)
    cal = L.calibrate_distance(z, a, lambda x: 0.01 * (x @ a), 0.9, max_distance=3.0)
    assert cal.status == "not_reached" and cal.n_evaluated == 61
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert L.calibrate_distance(z, 2 * a, lambda x: x @ a, 0.5).status == "reached"
    with pytest.raises(ValueError, match="returned 1 scores for"):
        L.attribute_sequence(z, a, lambda x: [0.0], 0.5)
    with pytest.raises(ValueError, match="zero vector"):
        L.attribute_sequence(z, np.zeros(8), lambda x: x[:, 0], 0.5)


def test_sequence_constants():
    assert L.POSE_SEQUENCE == (-30, -15, 0, 15, 30)
    assert L.LIGHT_SEQUENCE == ("up", "down", "left", "right")
    assert L.LIGHT_POWER == 0.7
    assert 2 * L.SEQUENCE_N + 1 == 5


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
        got, dist = L.maxmin_select(x, 12, first=first, return_distances=True)
        assert got == brute_maxmin(x, 12, first)
        assert len(set(got)) == 12 and got[0] == first
        assert np.isinf(dist[0]) and np.all(np.diff(dist[1:]) <= 1e-12)
    assert L.maxmin_select(x, 40) == L.maxmin_select(x, 40)  # deterministic, all distinct
    assert sorted(L.maxmin_select(x, 40)) == list(range(40))


def test_maxmin_picks_one_per_cluster_first():
    rng = np.random.default_rng(14)
    centres = rng.standard_normal((5, 3, 4)) * 100
    labels = np.repeat(np.arange(5), 8)
    rng.shuffle(labels)
    x = centres[labels] + rng.standard_normal((40, 3, 4))
    got = L.maxmin_select(x, 5, first=3)
    assert sorted(labels[got]) == list(range(5))
    # same-group comparison: seeds far apart in every group count, cross-group never compared
    y = np.zeros((3, 2, 1))
    y[1, 0, 0] = 10.0  # seed 1 differs from seed 0 only in group 0 -> D = min over groups = 0
    y[2] = 5.0  # seed 2 differs in both groups by 5
    assert L.maxmin_select(y, 2) == [0, 2]


def test_normalize_mesh():
    rng = np.random.default_rng(15)
    p = rng.standard_normal((478, 3))
    v = L.normalize_mesh(p)
    assert v.shape == (478 * 3,)
    c = v.reshape(478, 3)
    assert np.allclose(c.mean(axis=0), 0, atol=1e-12)
    assert np.sqrt((c**2).sum(axis=1).mean()) == pytest.approx(1.0)
    assert np.allclose(L.normalize_mesh(5 * p + 7), v)  # position and scale invariant
    with pytest.raises(ValueError, match="coincide"):
        L.normalize_mesh(np.ones((10, 2)))
    with pytest.raises(ValueError, match=r"\(P, 2\) or \(P, 3\)"):
        L.normalize_mesh(np.ones((10, 4)))


# --------------------------------------------------------------------------- pairs
def synthetic_tables(n_seeds=100):
    protos = pd.DataFrame(
        [(s, g, f"s{s:03d}_{g}") for s in range(n_seeds) for g in L.GROUPS],
        columns=["seed", "group", "prototype_id"],
    )
    slots = ([("pose", lv) for lv in L.POSE_SEQUENCE]
             + [("light", lv) for lv in (*L.LIGHT_SEQUENCE, "original")]
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
    pairs = L.hcic_pairs(protos, seq, n_negative=3, seed=0)
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
    counts = L.pair_counts(pairs)
    assert counts.loc["all"].to_dict() == {"n_pairs": 48_000, "n_positive": 12_000, "n_negative": 36_000,
                                          "n_self_pairs": 2_400, "n_prototypes": 600}
    assert (counts.loc[list(L.GROUPS), "n_pairs"] == 8_000).all()
    # deterministic given the seed, independent of row order; another seed changes partners
    again = L.hcic_pairs(protos.sample(frac=1, random_state=1), seq.sample(frac=1, random_state=2))
    key = ["prototype_a", "prototype_b", "attribute", "level"]
    norm = lambda p: p[key].astype(str).sort_values(key).reset_index(drop=True)  # noqa: E731
    assert norm(again).equals(norm(pairs))
    other = L.hcic_pairs(protos, seq, seed=1)
    assert not other[other.label == 0]["prototype_b"].reset_index(drop=True).equals(
        neg["prototype_b"].reset_index(drop=True))


def test_hcic_pairs_validation():
    protos, seq = synthetic_tables(n_seeds=3)
    with pytest.raises(ValueError, match="only 2 prototypes of the same group"):
        L.hcic_pairs(protos, seq, n_negative=3)
    assert len(L.hcic_pairs(protos, seq, n_negative=2)) == 18 * 20 * 3
    with pytest.raises(ValueError, match="column 'is_self' not found"):
        L.hcic_pairs(protos, seq.drop(columns="is_self"), n_negative=1)
    with pytest.raises(ValueError, match="not in prototype_table"):
        L.hcic_pairs(protos.iloc[1:], seq, n_negative=1)
    with pytest.raises(ValueError, match="duplicate slot"):
        L.hcic_pairs(protos, pd.concat([seq, seq.iloc[:1]]), n_negative=1)
    with pytest.raises(ValueError, match="duplicate prototype_id"):
        L.hcic_pairs(pd.concat([protos, protos.iloc[:1]]), seq, n_negative=1)


# --------------------------------------------------------------------------- bad input
def test_bad_input_raises_clear_errors():
    n, b = correlated_normals(k=3)
    z = np.zeros(D)
    with pytest.raises(ValueError, match=r"offsets: expected shape \(3,\)"):
        L.project_to_intersection(z, n, b[:2])
    with pytest.raises(ValueError, match="latent dimension 10 does not match the normals' 512"):
        L.project_to_intersection(np.zeros(10), n, b)
    bad = n.copy()
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"normals: 1 non-finite value\(s\).*index \(1, 4\)"):
        L.orthogonalize(bad)
    with pytest.raises(ValueError, match="z: 1 non-finite"):
        L.project_to_intersection(np.where(np.arange(D) == 0, np.nan, 0.0), n, b)
    dep = np.vstack([n, n[0] + 2 * n[1]])
    with pytest.raises(ValueError, match="rank deficient"):
        L.orthogonalize(dep)
    with pytest.raises(ValueError, match="rank deficient"):
        L.project_to_intersection(z, np.vstack([n[0], n[0]]), [0.0, 1.0])
    with pytest.raises(ValueError, match="rank deficient"):
        L.orthogonalize(np.ones((3, 2)))
    with pytest.raises(ValueError, match="rank deficient"):
        L.transect(z, n[:1], b[:1], [[0.0]], fixed=n[:1])
    with pytest.raises(ValueError, match=r"grids\[1\]: expected a non-empty 1-D array"):
        L.transect(z, n[:2], b[:2], [[0.0], []])
    with pytest.raises(ValueError, match="expected 2 grids"):
        L.transect(z, n[:2], b[:2], [[0.0]])
    with pytest.raises(ValueError, match="one array"):
        L.transect(z, n[:1], b[:1], np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="kind: expected one of"):
        L.fit_hyperplane(np.zeros((4, 2)), np.zeros(4), kind="lasso")
    with pytest.raises(ValueError, match=r"y: expected shape \(4,\)"):
        L.fit_hyperplane(np.random.default_rng(0).standard_normal((4, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="y: 1 non-finite"):
        L.fit_hyperplane(np.random.default_rng(0).standard_normal((4, 2)), [0, 1, np.nan, 0])
    with pytest.raises(ValueError, match="zero vector"):
        L.project_alternating(z, np.zeros((1, D)), [0.0])
    with pytest.raises(ValueError, match="n_select"):
        L.maxmin_select(np.zeros((3, 2, 2)), 4)
    with pytest.raises(ValueError, match="first"):
        L.maxmin_select(np.zeros((3, 2, 2)), 2, first=3)
