"""Which way the scores run: :func:`direction_problem`, the guard that refuses a table whose
genuine pairs score on the wrong side of its impostors on average (distances passed as
similarities give FNMR = 1 in every group, a wrong result without a word).

Used by :func:`facebias.metrics.group_report`, :func:`facebias.metrics.heldout_rates` and the
``facebias metrics`` command, each with its own name for the switch (``higher_is_match`` in the
API, ``--distance`` in the CLI).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["direction_problem"]


def direction_problem(
    scores: Any,
    is_genuine: Any,
    higher_is_match: bool = True,
    *,
    declared: str = "higher_is_match=False",
    flip: str = "pass higher_is_match=False",
    keep: str = "pass higher_is_match=True",
) -> str | None:
    """Why the scores run the other way than declared, or ``None`` when they do not.

    Similarities (``higher_is_match`` true: a match iff ``score > t``) must put genuine pairs
    above impostors on average; distances (false: a match iff ``score < t``) below. The rule
    compares the two means over the whole table; a table with one kind of pair only passes
    (nothing to compare).

    Parameters
    ----------
    scores : array_like
        1-D finite scores, one per pair.
    is_genuine : array_like
        1-D bool (or 0/1) labels, True/1 = genuine.
    higher_is_match : bool, default True
        The declared direction: True for similarities, False for distances.
    declared : str, default "higher_is_match=False"
        How the caller names the distance declaration (prefix of the message when distances
        look like similarities); the CLI passes ``"--distance"``.
    flip : str, default "pass higher_is_match=False"
        What to do when similarities look like distances.
    keep : str, default "pass higher_is_match=True"
        What to do when distances look like similarities.

    Returns
    -------
    str or None
        A one-line message (no trailing period) naming both means and ``flip`` or ``keep``.

    Examples
    --------
    >>> s, g = np.array([0.9, 0.8, 0.2, 0.1]), np.array([1, 1, 0, 0])
    >>> direction_problem(s, g) is None
    True
    >>> direction_problem(1 - s, g)
    'genuine pairs score lower than impostors on average (mean 0.15 vs 0.85): these look like distances; pass higher_is_match=False'
    >>> direction_problem(s, g, higher_is_match=False, declared="--distance", keep="leave --distance out")
    '--distance: genuine pairs score higher than impostors on average (mean 0.85 vs 0.15): these look like similarities; leave --distance out'
    """
    s = np.asarray(scores, dtype=np.float64)
    gen = np.asarray(is_genuine).astype(bool)
    if gen.all() or not gen.any():
        return None
    mg, mi = float(s[gen].mean()), float(s[~gen].mean())
    if higher_is_match and mg < mi:
        return (f"genuine pairs score lower than impostors on average (mean {mg:.3g} vs {mi:.3g}): "
                f"these look like distances; {flip}")
    if not higher_is_match and mg > mi:
        return (f"{declared}: genuine pairs score higher than impostors on average (mean {mg:.3g} vs "
                f"{mi:.3g}): these look like similarities; {keep}")
    return None
