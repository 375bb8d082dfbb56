"""Accuracy of the shortcut classifiers on their own renders (``docs/specs/transects.md``
A1.11 Models under test, A1.12 Error definition).

:func:`training_accuracy` on the training set, :func:`held_out_accuracy` /
:func:`accuracy_rows` on held-out renders drawn as the training set: all, congruent and
incongruent with the shortcut, and congruent by strength of the gender cue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.stats import wilson_interval
from facebias.studies.transects.error_model import errors
from facebias.studies.transects.no_truth import shortcut_incongruent
from facebias.validate import require_columns

__all__ = ["training_accuracy", "accuracy_rows", "held_out_accuracy"]


def training_accuracy(p_male: Any, y_male: Any, threshold: float = 0.5) -> dict[str, Any]:
    """A classifier on its own training set: ``accuracy_vs_intended`` = share of the scored
    renders (finite ``p_male``) whose call ``p_male > threshold`` equals ``y_male`` (0/1,
    the gender the render was made with), and ``n_scored`` (a render the classifier cannot
    score, e.g. a face SFace does not enrol, is NaN and left out).

    Parameters
    ----------
    p_male : array_like
        P(male) per training render (NaN = not scored).
    y_male : array_like
        Intended gender, 1 = male.
    threshold : float, default 0.5
        Male iff P(male) > threshold.

    Returns
    -------
    dict
        ``accuracy_vs_intended`` (a fraction) and ``n_scored``.

    Raises
    ------
    ValueError
        As :func:`errors`.

    Examples
    --------
    >>> acc = training_accuracy([0.9, 0.2, np.nan, 0.7], [1, 0, 1, 0])
    >>> round(acc["accuracy_vs_intended"], 3), acc["n_scored"]
    (0.667, 3)
    """
    p = np.asarray(p_male, dtype=float)
    return {"accuracy_vs_intended": float(1 - np.nanmean(errors(p, y_male, threshold))),
            "n_scored": int(np.isfinite(p).sum())}


def accuracy_rows(p_male: Any, y_male: Any, groups: Mapping[str, Any], threshold: float = 0.5,
                  ci: float = 0.95) -> dict[str, dict[str, Any]]:
    """A gender classifier's accuracy on subsets of its test images: per group (a boolean
    mask), ``k`` correct calls (``p_male > threshold`` equals ``y_male``) of ``n`` scored
    images (finite ``p_male``), ``accuracy`` = k / n (a fraction) and its Wilson interval
    ``ci`` ([low, high]); an empty group has NaN accuracy and interval (unresolved).

    Parameters
    ----------
    p_male : array_like
        (n,) P(male) per image (NaN = not scored).
    y_male : array_like
        (n,) the gender the image was made with (or read as), 1 = male.
    groups : mapping of str to array_like
        Group name -> (n,) bool mask.
    threshold : float, default 0.5
        Male iff P(male) > threshold.
    ci : float, default 0.95
        Coverage of the Wilson interval.

    Returns
    -------
    dict
        Group name -> ``k``, ``n``, ``accuracy``, ``ci``.

    Raises
    ------
    ValueError
        For a mask or ``y_male`` of another length, or as :func:`errors`.

    Examples
    --------
    >>> p, y = [0.9, 0.2, np.nan, 0.7], [1, 0, 1, 0]
    >>> rows = accuracy_rows(p, y, {"all": [True] * 4, "women": [False, True, False, True]})
    >>> {g: (r["k"], r["n"], r["accuracy"]) for g, r in rows.items()}
    {'all': (2, 3, 0.6666666666666666), 'women': (1, 2, 0.5)}
    """
    p = np.asarray(p_male, dtype=float)
    wrong = errors(p, y_male, threshold)  # NaN where not scored
    out = {}
    for name, mask in groups.items():
        m = np.asarray(mask, dtype=bool)
        if m.shape != p.shape:
            raise ValueError(f"accuracy_rows: group {name!r} has shape {m.shape}, expected {p.shape}")
        scored = m & np.isfinite(wrong)
        n, k = int(scored.sum()), int((wrong[scored] == 0).sum())
        lo, hi = wilson_interval([k], [n], ci) if n else ([float("nan")], [float("nan")])
        out[name] = {"k": k, "n": n, "accuracy": k / n if n else float("nan"), "ci": [float(lo[0]), float(hi[0])]}
    return out


def held_out_accuracy(p_male: Any, table: pd.DataFrame, shortcut: str, female_high: bool = True,
                      bins: Sequence[float] = (), threshold: float = 0.5, ci: float = 0.95
                      ) -> dict[str, dict[str, Any]]:
    """A shortcut classifier on held-out renders drawn as its training set
    (:func:`make_shortcut_training_set` with another seed): :func:`accuracy_rows` against
    the intended gender (``y_male``) on ``all`` of them, the ``congruent`` ones (the shortcut
    at the level the training set tied to the face's gender: where the shortcut does not
    mislead) and the ``incongruent`` ones, then the congruent ones per bin of |gender
    decision value| (``table["gender_c"]``; ``bins`` = edges, keys ``"congruent |gender| in
    [a, b)"``; the last bin closed): how the accuracy depends on the strength of the gender
    cue the render was asked for.

    Parameters
    ----------
    p_male : array_like
        (n,) the classifier's P(male) per render.
    table : pandas.DataFrame
        :func:`make_shortcut_training_set` table: ``y_male``, ``gender_c``, ``<shortcut>_c``.
    shortcut : str
        The shortcut attribute.
    female_high : bool, default True
        The training set put women at the shortcut's high end.
    bins : sequence of float, default ()
        Edges of |gender decision value| (at least two for any bin).
    threshold : float, default 0.5
        Male iff P(male) > threshold.
    ci : float, default 0.95
        Coverage of the Wilson intervals.

    Returns
    -------
    dict
        Group name -> :func:`accuracy_rows` row.

    Raises
    ------
    ValueError
        For a missing column, unsorted ``bins``, or as :func:`accuracy_rows`.

    Examples
    --------
    >>> table = pd.DataFrame({"y_male": [0, 0, 1, 1], "gender_c": [-0.3, -0.9, 0.5, 0.9],
    ...                       "light_c": [1.0, -1.0, -1.0, 1.0]})
    >>> acc = held_out_accuracy([0.2, 0.8, 0.9, 0.3], table, "light", bins=(0.2, 0.6, 1.0))
    >>> {g: r["accuracy"] for g, r in acc.items()}
    {'all': 0.5, 'congruent': 1.0, 'incongruent': 0.0, 'congruent |gender| in [0.2, 0.6)': 1.0,
     'congruent |gender| in [0.6, 1]': nan}
    """
    require_columns(table, ["y_male", "gender_c", f"{shortcut}_c"], "held_out_accuracy")
    edges = [float(b) for b in bins]
    if edges != sorted(set(edges)):
        raise ValueError(f"bins must be increasing edges, got {list(bins)}")
    y = table["y_male"].to_numpy().astype(int)
    high = (table[f"{shortcut}_c"].to_numpy(float) > 0).astype(int)
    inc = shortcut_incongruent(y, high, female_high)
    g = np.abs(table["gender_c"].to_numpy(float))
    groups: dict[str, np.ndarray] = {"all": np.ones(len(y), bool), "congruent": ~inc, "incongruent": inc}
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        last = i == len(edges) - 2
        groups[f"congruent |gender| in [{a:g}, {b:g}{']' if last else ')'}"] = \
            ~inc & (g >= a) & ((g <= b) if last else (g < b))
    return accuracy_rows(p_male, y, groups, threshold, ci)
