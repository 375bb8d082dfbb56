"""facebias.latent: hyperplanes, dual basis, projections, transects and sequences, all
against planted known truth."""

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


def test_orthogonality_error_hand_case_and_dual_basis():
    n = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])  # correlated attributes
    dual = np.array([[1.0, -1.0, 0.0], [0.0, 1.0, 0.5]])  # <d_j, n_k> = [j == k] (the 0.5 is off-span)
    assert L.orthogonality_error(n, dual) == 0.0
    assert L.orthogonality_error(n, 2 * dual) == 1.0  # steps of 2: the diagonal is off by 1
    # the raw normals leak: <n_0, n_1> = 1 and <n_1, n_1> = 2
    assert L.orthogonality_error(n, n) == 1.0
    # the printed Algorithm 2 is orthogonal to the earlier normals only: <ñ_0, n_1> = 1
    assert L.orthogonality_error(n, L.orthogonalize_printed(n)) == pytest.approx(1.0, abs=1e-12)
    # the default is orthogonalize's own output, to round-off, and equals the direct formula
    nn, _ = correlated_normals()
    d = L.orthogonalize(nn)
    assert L.orthogonality_error(nn) == L.orthogonality_error(nn, d) == np.abs(d @ nn.T - np.eye(K)).max()
    assert L.orthogonality_error(nn) < 1e-10
    assert L.orthogonality_error(nn, L.orthogonalize_printed(nn)) > 0.1
    assert L.orthogonality_error([3.0, 4.0], [0.12, 0.16]) == pytest.approx(0.0, abs=1e-15)  # one (D,) normal
    with pytest.raises(ValueError, match=r"directions: expected shape \(2, 3\)"):
        L.orthogonality_error(n, dual[:1])
    with pytest.raises(ValueError, match="directions: 1 non-finite"):
        L.orthogonality_error(n, np.where(dual == 0.5, np.nan, dual))
    with pytest.raises(ValueError, match="rank deficient"):  # no dual basis to compare with
        L.orthogonality_error(np.vstack([n[0], n[0]]))


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


def test_transect_frame_sets_decision_values_and_builds_transects():
    n, b = correlated_normals(k=4, seed=10)
    z = np.random.default_rng(10).standard_normal((3, D))
    base, steps = L.transect_frame(z, n[:3], b[:3], fixed=n[3:])
    assert base.shape == z.shape and steps.shape == (3, D)
    c = np.array([0.5, -1.25, 2.0])
    moved = base + c @ steps
    assert np.abs(L.decision_values(moved, n[:3], b[:3]) - c).max() < 1e-9
    assert np.abs(L.decision_values(moved, n[3:], b[3:]) - L.decision_values(z, n[3:], b[3:])).max() < 1e-9
    grid = L.transect(z, n[:3], b[:3], [[0.5], [-1.25], [2.0]], fixed=n[3:])
    assert np.allclose(grid[:, 0, 0, 0], moved, rtol=0, atol=1e-12)


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
    with pytest.raises(ValueError, match="table: column 'hair' not found"):
        L.fit_hyperplanes(x, table, {"hair": "ridge"})
    bad = table.copy()
    bad.loc[3, "age"] = np.nan
    with pytest.raises(ValueError, match=r"table\['age'\]: missing value in row 3"):
        L.fit_hyperplanes(x, bad, {"age": "ridge"})
    with pytest.raises(ValueError, match="attribute 'smile'.*both classes"):
        L.fit_hyperplanes(x, table.assign(smile=1.0), {"smile": "svm"})


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
    assert 2 * L.SEQUENCE_N + 1 == 5


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
