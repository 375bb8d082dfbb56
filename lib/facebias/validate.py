"""Input-validation helpers shared by the library: the one home of missing-column checks.

Every table a function reads is checked up front, and a failure names its source (a
frame's role such as ``"pairs"`` or a file path), the missing column(s) and the columns
the table has, in one message::

    pairs: column 'score' not found; columns are ['a', 'b']
    votes.csv: column 'question' not found (also missing: 'value'); columns are ['item_id']

:func:`require_columns` raises that as a ``ValueError``; :func:`column_error` returns the
text after the source (or ``None``), for callers that raise their own exception type.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

import pandas as pd

__all__ = ["column_error", "require_columns"]


def column_error(columns: Iterable[Hashable], names: Iterable[Hashable] | str, *,
                 kind: str = "column", hint: str = "") -> str | None:
    """Message naming those of ``names`` that are not among ``columns``, or ``None``.

    Parameters
    ----------
    columns : iterable of hashable
        The columns a table has.
    names : iterable of hashable or str
        The columns required, checked in order, each once (a single string is one name).
    kind : str, default "column"
        What the column is, e.g. ``"response column"``.
    hint : str, default ""
        Appended as ``"; <hint>"`` when given.

    Returns
    -------
    str or None
        ``"<kind> 'a' not found; columns are [...]"``, with ``" (also missing: 'b', 'c')"``
        after the first name when several are missing; ``None`` when none is missing.

    Examples
    --------
    >>> column_error(["a"], ["b", "c"], hint="run the join first")
    "column 'b' not found (also missing: 'c'); columns are ['a']; run the join first"
    >>> column_error(["a"], "a") is None
    True
    """
    present = list(columns)
    have = set(present)
    wanted = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    missing = [n for n in wanted if n not in have]
    if not missing:
        return None
    also = f" (also missing: {', '.join(map(repr, missing[1:]))})" if len(missing) > 1 else ""
    tail = f"; {hint}" if hint else ""
    return f"{kind} {missing[0]!r} not found{also}; columns are {present}{tail}"


def require_columns(df: pd.DataFrame, names: Iterable[Hashable] | str, what: str = "frame", *,
                    kind: str = "column", hint: str = "") -> None:
    """Raise ``ValueError`` unless every one of ``names`` is a column of ``df``.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    names : iterable of hashable or str
        The columns required (a single string is one name).
    what : str, default "frame"
        Start of the message: the frame's role or the file it came from.
    kind, hint : str
        As in :func:`column_error`.

    Raises
    ------
    ValueError
        ``"<what>: "`` followed by :func:`column_error`'s message: the missing column(s)
        and the columns ``df`` has.

    Examples
    --------
    >>> require_columns(pd.DataFrame({"a": [1]}), ["a", "b"], "pairs")
    Traceback (most recent call last):
    ...
    ValueError: pairs: column 'b' not found; columns are ['a']
    """
    message = column_error(df.columns, names, kind=kind, hint=hint)
    if message is not None:
        raise ValueError(f"{what}: {message}")
