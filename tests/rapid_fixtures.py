"""Hand-built paper-001 score tables shared by tests/studies/rapid/ (the spectral step and its
batched version)."""

import numpy as np
import pandas as pd


def random_matrix_world(seed: int, n_queries: int = 30, systems=("a", "b", "c"),
                        hole_rate: float = 0.0) -> pd.DataFrame:
    """Scores (already in [0, 1]) of random hand-built queries, a third of each kind: one
    identity with unrelated distractors; one identity with weakly alike distractors (a
    second eigenvalue over T, often with no face in its cluster); one identity and a second,
    smaller one. ``hole_rate``: a share of the rows left out at random (missing pairs); in
    query q00 face 2 is not scored by system a and by system b with about a third of the
    faces only (so b's other faces miss a pair with it), and face 0 of q01 is not scored by
    system a."""
    rng = np.random.default_rng(seed)
    rows, first = [], 0
    for qi in range(n_queries):
        n = int(rng.integers(9, 45))
        m1 = int(rng.integers(5, max(6, n // 2)))
        base = rng.uniform(0.0, 0.1, (n, n))
        if qi % 3 == 1:
            base[m1:, m1:] += rng.uniform(0.08, 0.2)
        elif qi % 3 == 2 and n - m1 >= 4:
            m2 = int(rng.integers(3, min(n - m1, m1) + 1))
            base[m1:m1 + m2, m1:m1 + m2] = rng.uniform(0.6, 1.0)
        base[:m1, :m1] = rng.uniform(0.6, 1.0)
        faces = np.arange(first, first + n)
        first += n
        a, b = np.triu_indices(n, 1)
        for s in systems:
            e = rng.normal(0.0, 0.05, (n, n))
            c = np.clip(base + (e + e.T) / 2, 0.0, 1.0)
            rows.append(pd.DataFrame({"query": f"q{qi:02d}", "face_a": faces[a], "face_b": faces[b],
                                      "system": s, "score": c[a, b]}))
    scores = pd.concat(rows, ignore_index=True)
    out = rng.random(len(scores)) < hole_rate
    sys_ = scores["system"].to_numpy()

    def rows_of(face):
        return ((scores["face_a"] == face) | (scores["face_b"] == face)).to_numpy()

    out |= rows_of(2) & (sys_ == "a")
    out |= rows_of(2) & (sys_ == "b") & (rng.random(len(scores)) < 0.67)
    out |= rows_of(scores.loc[scores["query"] == "q01", "face_a"].min()) & (sys_ == "a")
    return scores[~out].reset_index(drop=True)
