"""Paper 001, integer codes of a scores table for the label estimation
(``docs/specs/rapid.md`` section 1.5; :func:`facebias.studies.rapid.estimate`).

A node is a (query, face) pair: :class:`_NodeIndex` numbers the queries, faces, systems and
nodes of a scores table, and each query's common face set (the faces scored by every
system), without sorting the score rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class _NodeIndex:
    """Integer codes of a scores table for :func:`estimate`.

    A node is a (query, face) pair, numbered query-major; ``nodes`` holds ``query * n_f +
    face`` (query codes of the sorted names ``q_names``, face codes of ``f_names`` in
    first-appearance order), ``node_q`` its query; systems are codes of the sorted names
    ``s_names``. ``present`` (n_sys, n_nodes): the node appears in a row of the system.
    ``common``: the node is scored by every system and not ``dropped`` (for a missing
    pair, :meth:`without`); per query ``n_faces``, ``n_common`` and ``first_common``
    (rank of its first common node among all common nodes); per node ``local``: its index
    within its query's common set (-1 if not common).
    """

    q_names: pd.Index
    s_names: pd.Index
    f_names: pd.Index
    nodes: np.ndarray
    node_q: np.ndarray
    present: np.ndarray
    common: np.ndarray
    dropped: np.ndarray
    n_faces: np.ndarray
    n_common: np.ndarray
    first_common: np.ndarray
    local: np.ndarray

    @property
    def n_q(self) -> int:
        return len(self.q_names)

    @property
    def n_sys(self) -> int:
        return len(self.s_names)

    @property
    def n_nodes(self) -> int:
        return self.nodes.size

    @classmethod
    def of(cls, scores: pd.DataFrame) -> tuple[_NodeIndex, np.ndarray, np.ndarray, np.ndarray]:
        """Index ``scores`` (columns ``query, system, face_a, face_b``): the index, and per
        row its system ``s_codes`` and the cells ``sa``, ``sb`` of its two faces (a cell is
        a (system, node) pair, numbered ``system * n_nodes + node``), kept out of the index
        so that they can be freed before it is."""
        q_codes, q_names = _factorize_sorted(scores["query"])
        s_codes, s_names = _factorize_sorted(scores["system"])
        n_sys = len(s_names)
        # the rows' arrays are updated in place: each is a fresh array of the row count
        ka, kb, f_names = _face_codes(scores["face_a"], scores["face_b"])
        n_f, n_q = len(f_names), len(q_names)
        qf = q_codes.astype(np.int64)
        qf *= n_f
        ka += qf  # node keys: query * n_f + face
        kb += qf
        del qf
        nodes, sa, sb = _sorted_codes(ka, kb, n_q * n_f)  # the rows' nodes ...
        del ka, kb
        node_q = nodes // n_f
        n_nodes = nodes.size
        cell = s_codes.astype(np.int64)
        cell *= n_nodes
        sa += cell  # ... and their cells
        sb += cell
        del cell
        present = np.zeros(n_sys * n_nodes, bool)
        present[sa] = True
        present[sb] = True
        present = present.reshape(n_sys, n_nodes)
        common = present.all(axis=0)
        n_faces = np.bincount(node_q, minlength=n_q)
        ix = cls(q_names, s_names, f_names, nodes, node_q, present, common,
                 np.zeros(n_nodes, bool), n_faces, *_common_layout(common, node_q, n_q))
        return ix, s_codes, sa, sb

    def without(self, drop: np.ndarray) -> _NodeIndex:
        """The index with the nodes ``drop`` (bool per node) out of the common sets."""
        common = self.common & ~drop
        return dataclasses.replace(self, common=common, dropped=self.dropped | (drop & self.common),
                                   **dict(zip(("n_common", "first_common", "local"),
                                              _common_layout(common, self.node_q, self.n_q),
                                              strict=True)))


def _common_layout(common: np.ndarray, node_q: np.ndarray,
                   n_q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query ``n_common`` and ``first_common``, per node ``local`` (see
    :class:`_NodeIndex`) of the common nodes ``common``."""
    n_common = np.bincount(node_q[common], minlength=n_q)
    # local index of each common node within its query
    csum = np.cumsum(common) - 1
    first_common = np.cumsum(n_common) - n_common
    local = np.where(common, csum - first_common[node_q], -1)
    return n_common, first_common, local


def _factorize_sorted(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(values, sort=True)``; for a categorical column without missing values
    read from its codes (no hashing of the rows; then the codes may be a narrower integer
    type, and read-only). ``ValueError`` for a missing value."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.array.codes
        if codes.size and codes.min() >= 0:
            used = np.bincount(codes, minlength=len(values.cat.categories)) > 0
            rank = codes if used.all() else (np.cumsum(used) - 1)[codes]
            return rank, pd.CategoricalIndex(
                pd.Categorical.from_codes(np.flatnonzero(used), dtype=values.dtype))
    codes, names = pd.factorize(values, sort=True)
    _require_no_missing(codes, values.name)
    return codes, names


def _require_no_missing(codes: np.ndarray, column: Any) -> None:
    """``ValueError`` if ``pd.factorize`` codes hold -1 (a missing value in ``column``)."""
    if codes.size and codes.min() < 0:
        raise ValueError(f"scores.{column}: missing values (NaN/None) in row(s) {np.flatnonzero(codes < 0)[:5].tolist()}")


def _face_codes(face_a: pd.Series, face_b: pd.Series) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """``pd.factorize`` of ``face_a`` then ``face_b`` concatenated: the codes of ``face_a``,
    of ``face_b`` (in order of first appearance; two new writable ``intp`` arrays) and the
    names; without hashing the rows when the ids are integers of a range at most twice the
    rows (then by first positions in a table over that range)."""
    a, b = face_a.to_numpy(), face_b.to_numpy()
    n = a.size
    lo = hi = 0
    if a.dtype == b.dtype and a.dtype.kind in "iu" and n:
        lo, hi = int(min(a.min(), b.min())), int(max(a.max(), b.max()))
        lo = 0 if 0 <= lo and hi <= 2 * n + 1024 else lo  # ids from 0: no shift
    if hi - lo > 2 * n + 1024 or not (a.dtype == b.dtype and a.dtype.kind in "iu" and n):
        codes, names = pd.factorize(pd.concat([face_a, face_b], ignore_index=True), sort=False)
        _require_no_missing(codes[:n], face_a.name)
        _require_no_missing(codes[n:], face_b.name)
        return codes[:n], codes[n:], names
    if lo:
        a, b = a - lo, b - lo
    first = np.full(hi - lo + 1, 2 * n, np.int64)  # first position in a ++ b of each id
    np.minimum.at(first, b, np.arange(n, 2 * n))
    np.minimum.at(first, a, np.arange(n))
    ids = np.flatnonzero(first < 2 * n)
    ids = ids[np.argsort(first[ids])]
    code = np.empty(hi - lo + 1, np.intp)
    code[ids] = np.arange(ids.size)
    return code[a], code[b], pd.Index((ids + lo).astype(face_a.dtype))


def _sorted_codes(key_a: np.ndarray, key_b: np.ndarray,
                  domain: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``numpy.unique(np.r_[key_a, key_b], return_inverse=True)`` for non-negative integer
    keys below ``domain``, the inverse split back into ``key_a``'s and ``key_b``'s (two new
    writable ``intp`` arrays), without sorting the keys: a table over ``range(domain)``
    when that is at most twice the keys, else a hash table (``pandas.factorize``)."""
    n = key_a.size
    if domain > 4 * n + 1024:
        inv, uniq = pd.factorize(np.concatenate([key_a, key_b]), sort=True)
        return np.asarray(uniq, np.int64), inv[:n], inv[n:]
    seen = np.zeros(domain, bool)
    seen[key_a] = True
    seen[key_b] = True
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen), rank[key_a], rank[key_b]
