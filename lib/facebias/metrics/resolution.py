"""Resolution of a rate: whether enough impostor scores stand behind a rate at a target FMR
(:func:`enough_impostors`, the ``n >= 10 / f`` rule of every study), and the label
:data:`TOO_FEW_IMPOSTORS` of a rate left NaN (unresolved) by it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TOO_FEW_IMPOSTORS", "enough_impostors"]


#: Label of a rate left NaN by :func:`enough_impostors` (too few impostors for its FMR).
TOO_FEW_IMPOSTORS = "too few impostors"


def enough_impostors(n_impostor: Any, fmr: Any, factor: float = 10.0) -> bool | np.ndarray:
    """Whether ``n_impostor`` impostor scores are enough to measure a rate at ``fmr``:
    ``n_impostor >= factor / fmr`` (at least ``factor`` expected false matches; the rule of
    ``studies.rapid.fnmr_table``). A rate that fails it is reported NaN and labelled
    :data:`TOO_FEW_IMPOSTORS`, never 0.

    Parameters
    ----------
    n_impostor : int or array_like
        Number of impostor scores the rate (or its threshold) is computed from.
    fmr : float or array_like
        Target (or reference) FMR, a fraction in (0, 1); broadcasts against ``n_impostor``.
    factor : float, default 10.0
        Least expected false matches, ``n_impostor * fmr``.

    Returns
    -------
    bool or numpy.ndarray
        A bool for scalar inputs, else a bool array.

    Raises
    ------
    ValueError
        For an ``fmr`` outside (0, 1) or a ``factor`` < 0.

    Examples
    --------
    >>> enough_impostors(9999, 1e-3), enough_impostors(10000, 1e-3)
    (False, True)
    """
    rates = np.asarray(fmr, dtype=np.float64)
    if not ((rates > 0) & (rates < 1)).all():
        raise ValueError(f"fmr: must lie in (0, 1), got {fmr!r}")
    if factor < 0:
        raise ValueError(f"factor: must be >= 0, got {factor!r}")
    ok = np.asarray(n_impostor) >= factor / rates
    return bool(ok) if ok.ndim == 0 else ok
