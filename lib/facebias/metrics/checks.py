"""Input validation shared by every metric: similarity scores, target rates, pair labels.

Each check raises ``ValueError`` naming the argument (or DataFrame column) and the problem
(NaN or infinite scores, labels that are not 0/1, rates outside (0, 1)); nothing is dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["check_scores", "check_rates", "check_labels"]


def _row(label: Any) -> Any:
    """A row label as plain Python (numpy 2 would print ``np.int64(7)``)."""
    return label.item() if isinstance(label, np.generic) else label


def check_scores(scores: Any, name: str = "scores", index: Any = None) -> np.ndarray:
    """Return ``scores`` as a non-empty 1-D float array of finite similarity scores.

    float32 input stays float32 (no copy); integers and bools become float64.

    Parameters
    ----------
    scores : array_like
        1-D similarity scores (higher = more alike).
    name : str, default "scores"
        Name of the argument or column, used in error messages.
    index : sequence, optional
        Row labels used in error messages (e.g. a DataFrame's index); without it the
        message names the position.

    Returns
    -------
    numpy.ndarray
        The scores as a 1-D float array (float32 kept, anything else float64).

    Raises
    ------
    ValueError
        If ``scores`` is not 1-D, is empty, is not real numbers, or holds a NaN or an
        infinity (never dropped silently).

    Examples
    --------
    >>> check_scores([1, 2])
    array([1., 2.])
    >>> check_scores([0.5, float("nan")], "genuine")
    Traceback (most recent call last):
    ...
    ValueError: genuine: 1 non-finite score(s) (NaN or inf), first in position 1 ...
    """
    a = np.asarray(scores)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of scores, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name}: no scores (empty array)")
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: scores must be real numbers, got dtype {a.dtype}") from exc
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    finite = np.isfinite(a)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        where = f"row {_row(index[bad[0]])!r}" if index is not None else f"position {bad[0]}"
        raise ValueError(
            f"{name}: {bad.size} non-finite score(s) (NaN or inf), first in {where} "
            f"(value {a[bad[0]]}); scores are never dropped silently"
        )
    return a


def check_rates(rates: Any, name: str = "fmr") -> tuple[np.ndarray, bool]:
    """Validate target rates: fractions in the open interval (0, 1), never percentages.

    Parameters
    ----------
    rates : float or sequence of float
        One target rate or a 1-D list of them.
    name : str, default "fmr"
        Name of the argument, used in error messages.

    Returns
    -------
    rates : numpy.ndarray
        The rates as a 1-D float64 array.
    scalar : bool
        Whether the input was a single number.

    Raises
    ------
    ValueError
        If the input is empty or not 1-D, or a rate lies outside (0, 1).

    Examples
    --------
    >>> check_rates(0.1)
    (array([0.1]), True)
    >>> check_rates([1e-3, 1e-2])
    (array([0.001, 0.01 ]), False)
    >>> check_rates(5)  # a percentage, not a fraction
    Traceback (most recent call last):
    ...
    ValueError: fmr: target rates must lie in (0, 1), got 5.0
    """
    a = np.asarray(rates, dtype=np.float64)
    scalar = a.ndim == 0
    a = np.atleast_1d(a)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name}: expected a number or a 1-D list of numbers, got {rates!r}")
    bad = ~((a > 0) & (a < 1))
    if bad.any():
        raise ValueError(f"{name}: target rates must lie in (0, 1), got {float(a[bad][0])!r}")
    return a, scalar


def check_labels(labels: Any, name: str = "label") -> np.ndarray:
    """Return pair labels as a bool array (True = genuine, False = impostor).

    Parameters
    ----------
    labels : array_like or pandas.Series
        One label per pair: 0/1 (1 = genuine) or bool. A Series' index names the row in
        error messages.
    name : str, default "label"
        Name of the argument or column, used in error messages.

    Returns
    -------
    numpy.ndarray
        1-D bool array, True for genuine pairs.

    Raises
    ------
    ValueError
        If a label is missing or is anything other than 0/1 or bool.

    Examples
    --------
    >>> check_labels([1, 0, True])
    array([ True, False,  True])
    >>> check_labels([1, 2])
    Traceback (most recent call last):
    ...
    ValueError: label: labels must be 0/1 or bool (1 = genuine), got 2 in row 1
    """
    s = pd.Series(labels) if not isinstance(labels, pd.Series) else labels
    if s.isna().any():
        raise ValueError(f"{name}: missing label in row {_row(s.index[s.isna().to_numpy()][0])!r}")
    if s.dtype == bool:
        return s.to_numpy()
    values = pd.to_numeric(s, errors="coerce")
    ok = values.isin([0, 1]).to_numpy()
    if not ok.all():
        row = s.index[~ok][0]
        raise ValueError(
            f"{name}: labels must be 0/1 or bool (1 = genuine), got {_row(s.loc[row])!r} "
            f"in row {_row(row)!r}"
        )
    return values.to_numpy() == 1
