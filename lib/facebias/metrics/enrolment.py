"""Failure to enrol: the share of images without a template, per group, with Wilson
intervals (NIST practice: report it beside every error rate).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from facebias.metrics.checks import check_labels
from facebias.stats import wilson_interval

__all__ = ["failure_to_enrol"]


def failure_to_enrol(enrolled: Any, groups: Any = None, reasons: Any = None,
                     ci: float = 0.95) -> pd.DataFrame:
    """Failure-to-enrol table (NIST practice: report it beside every error rate).

    Parameters
    ----------
    enrolled : array_like of bool
        Per image, whether a template was made (``EmbedResult.enrolled``); 0/1 accepted.
    groups : array_like, optional
        A label per image: one row per group plus ``"all"``; without it one row ``"all"``.
    reasons : array_like of str, optional
        Failure reason per image (None where enrolled); the most frequent is shown.
    ci : float, default 0.95
        Coverage of the Wilson interval.

    Returns
    -------
    pandas.DataFrame
        Indexed by group, columns ``n, n_fte, fte_rate`` (a fraction), ``fte_lo, fte_hi``
        (Wilson interval at ``ci``) and ``top_reason``.

    Raises
    ------
    ValueError
        If ``enrolled`` holds a missing or non-0/1 value, or ``groups``/``reasons`` do not
        have one entry per image.

    Examples
    --------
    >>> t = failure_to_enrol([True, False, True, True], groups=["a", "a", "b", "b"],
    ...                      reasons=[None, "no face", None, None])
    >>> t[["n", "n_fte", "fte_rate", "top_reason"]]
         n  n_fte  fte_rate top_reason
    a    2      1      0.50    no face
    b    2      0      0.00        NaN
    all  4      1      0.25    no face
    """
    ok = check_labels(pd.Series(np.asarray(enrolled)), "enrolled")
    n = ok.size
    g = np.full(n, "all", dtype=object) if groups is None else np.asarray(groups, dtype=object)
    if g.shape != (n,):
        raise ValueError(f"groups: expected {n} labels, got shape {g.shape}")
    r = np.full(n, None, dtype=object) if reasons is None else np.asarray(reasons, dtype=object)
    if r.shape != (n,):
        raise ValueError(f"reasons: expected {n} entries, got shape {r.shape}")
    rows = {}
    levels = [*pd.unique(g)] + (["all"] if groups is not None else [])
    for level in levels:
        m = np.ones(n, bool) if (level == "all" and groups is not None) else g == level
        fails = ~ok & m
        top = pd.Series(r[fails]).dropna().value_counts()
        rows[level] = {"n": int(m.sum()), "n_fte": int(fails.sum()),
                       "top_reason": top.index[0] if len(top) else None}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.insert(2, "fte_rate", table["n_fte"] / table["n"])
    lo, hi = wilson_interval(table["n_fte"].to_numpy(), table["n"].to_numpy(), ci)
    table.insert(3, "fte_lo", lo)
    table.insert(4, "fte_hi", hi)
    return table
