"""Paper 001, the estimate against the true labels (``docs/specs/rapid.md`` section 1.7):
:func:`true_labels`, the oracle labels of spec B2 (:func:`oracle_labels`: only the
exclusion error left) and :func:`label_agreement` (agreement, coverage, Type-A and Type-B
errors)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from facebias.validate import require_columns


def _shared_codes(*columns: Any) -> tuple[list[np.ndarray], pd.Index]:
    """Integer codes of several columns over one shared set of values (-1: missing).

    Each column is factorised on its own (categoricals by their codes), and only the
    small sets of distinct values are matched, so large string columns are not copied.
    """
    facts = []
    for c in columns:
        s = c if isinstance(c, pd.Series) else pd.Series(np.asarray(c, dtype=object))
        if isinstance(s.dtype, pd.CategoricalDtype):
            facts.append((s.cat.codes.to_numpy().astype(np.int64), s.cat.categories))
        else:
            codes, uniq = pd.factorize(s)
            facts.append((codes.astype(np.int64), uniq))
    objs = [np.asarray(u, dtype=object) for _, u in facts]
    values = pd.Index(pd.unique(np.concatenate(objs)) if objs else [], dtype=object)
    out = []
    for (codes, _), u in zip(facts, objs, strict=True):
        m = values.get_indexer(u) if u.size else np.zeros(1, np.int64)
        out.append(np.where(codes >= 0, m[np.maximum(codes, 0)], -1))
    return out, values


def _lookup(table: pd.DataFrame, query: Any, face: Any, what: str = "labels",
            column: str = "label") -> np.ndarray:
    """``table[column]`` at the (query, face) keys; -1 where the key is absent."""
    require_columns(table, ["query", "face", column], what)
    (tq, q), qv = _shared_codes(table["query"], query)
    (tf, f), fv = _shared_codes(table["face"], face)
    tk = tq.astype(np.int64) * (len(fv) + 1) + tf
    k = q.astype(np.int64) * (len(fv) + 1) + f
    order = np.argsort(tk, kind="stable")
    sk = tk[order]
    if (sk[1:] == sk[:-1]).any():
        raise ValueError(f"{what}: (query, face) keys must be unique")
    pos = np.clip(np.searchsorted(sk, k), 0, max(sk.size - 1, 0))
    vals = table[column].to_numpy().astype(np.int64)[order]
    hit = (sk.size > 0) & (sk[pos] == k) & (q >= 0) & (f >= 0) if sk.size else np.zeros(k.size, bool)
    return np.where(hit, vals[pos] if sk.size else -1, -1)


def true_labels(faces: pd.DataFrame) -> pd.DataFrame:
    """Ground truth as a label table (1 iff ``is_target``).

    Parameters
    ----------
    faces : pandas.DataFrame
        ``query, face, is_target`` (the synthetic world's face table).

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (int8 1/0).

    Raises
    ------
    ValueError
        For a missing column.

    Examples
    --------
    >>> faces = pd.DataFrame({"face": [0, 1], "query": "q0", "is_target": [True, False]})
    >>> true_labels(faces)
      query  face  label
    0    q0     0      1
    1    q0     1      0
    """
    require_columns(faces, ["query", "face", "is_target"], "faces")
    return pd.DataFrame({"query": faces["query"].astype(object).to_numpy(),
                         "face": faces["face"].to_numpy(),
                         "label": faces["is_target"].to_numpy().astype(np.int8)})


def oracle_labels(labels: pd.DataFrame, faces: pd.DataFrame) -> pd.DataFrame:
    """Spec B2: the true labels on the estimated test set (faces with ``label != -1``),
    -1 elsewhere; only Type-A (exclusion) error remains.

    Parameters
    ----------
    labels : pandas.DataFrame
        Estimated labels (``query, face, label``).
    faces : pandas.DataFrame
        The world's faces (``query, face, is_target``).

    Returns
    -------
    pandas.DataFrame
        ``query, face, label`` (int8 1/0/-1; -1 also for a face missing from ``faces``).

    Raises
    ------
    ValueError
        For a missing column or duplicate (query, face) keys in ``faces``.

    Examples
    --------
    >>> faces = pd.DataFrame({"face": [0, 1, 2], "query": "q0", "is_target": [True, True, False]})
    >>> labels = pd.DataFrame({"query": "q0", "face": [0, 1, 2], "label": [1, -1, 1]})
    >>> oracle_labels(labels, faces)["label"].tolist()
    [1, -1, 0]
    """
    y = _lookup(true_labels(faces), labels["query"], labels["face"], "faces")
    out = labels[["query", "face"]].copy()
    out["label"] = np.where(labels["label"].to_numpy() == -1, -1, y).astype(np.int8)
    return out


def label_agreement(labels: pd.DataFrame, faces: pd.DataFrame) -> dict[str, float]:
    """Estimated vs true labels.

    Parameters
    ----------
    labels : pandas.DataFrame
        Estimated labels (``query, face, label``).
    faces : pandas.DataFrame
        The world's faces (``query, face, is_target``).

    Returns
    -------
    dict
        Shares (fractions): ``agreement`` (of included faces, ``label != -1``, whose label
        is right), ``coverage`` (faces not -1), ``accuracy_all`` (right with -1 counted
        wrong), the error types ``type_a`` (excluded) and ``type_b`` (wrong among all
        faces); counts ``n_faces``, ``n_included``.

    Raises
    ------
    ValueError
        For a missing column or a labelled face that is not in ``faces``.

    Examples
    --------
    >>> faces = pd.DataFrame({"face": [0, 1, 2, 3], "query": "q0",
    ...                       "is_target": [True, True, True, False]})
    >>> labels = pd.DataFrame({"query": "q0", "face": [0, 1, 2, 3], "label": [1, 1, -1, 1]})
    >>> a = label_agreement(labels, faces)
    >>> a["coverage"], a["type_a"], a["type_b"]  # face 2 excluded, face 3 wrong
    (0.75, 0.25, 0.25)
    """
    require_columns(labels, ["query", "face", "label"], "labels")
    y = _lookup(true_labels(faces), labels["query"], labels["face"], "faces")
    if (y < 0).any():
        raise ValueError("label_agreement: some labelled faces are not in faces")
    est = labels["label"].to_numpy()
    inc = est != -1
    n, k = est.size, int(inc.sum())
    right = est == y
    return {
        "agreement": float(right[inc].mean()) if k else float("nan"),
        "coverage": k / n if n else float("nan"),
        "accuracy_all": float(right.mean()) if n else float("nan"),
        "n_faces": int(n), "n_included": k,
        "type_a": float((~inc).mean()) if n else float("nan"),
        "type_b": float((inc & ~right).mean()) if n else float("nan"),
    }
