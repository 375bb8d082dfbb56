"""Votes of the annotation store (:class:`facebias.annotate.store.AnnotationStore`): storing
one vote or a validated frame of votes, reading them back and exporting them to parquet.

The methods are those of :class:`~facebias.annotate.store.AnnotationStore` (a mixin it
inherits; the connection, lock, transaction and scale checks are the store's own).
"""

from __future__ import annotations

import math
import numbers
import os
import sqlite3
import time as _time
import uuid
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.annotate.scales import Scale
from facebias.annotate.store_schema import SOURCES, VOTE_COLUMNS
from facebias.io import atomic_path
from facebias.validate import require_columns


def _as_level(value, where: str) -> int:
    """``value`` as a Python int; ValueError unless it is an integer (integral floats pass)."""
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{where}: value must be an integer level index, got {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise ValueError(f"{where}: value must be an integer level index, got {value!r}")


class _VoteMethods:
    """:class:`~facebias.annotate.store.AnnotationStore`'s votes: writing, reading, export."""

    # ------------------------------------------------------------------ votes
    def add_vote(self, annotator: str, item_id: str, question: str, value: int, *,
                 scale: Scale, source: str = "human", vote_id: str | None = None,
                 time: float | None = None) -> str:
        """Store one vote in its own transaction; returns once it is committed.

        Parameters
        ----------
        annotator : str
            Non-empty annotator id.
        item_id : str
            A registered item.
        question : str
            The question; registered with ``scale`` on its first vote.
        value : int
            0-based level index on ``scale`` (0..k-1; integral floats pass).
        scale : Scale
            The question's scale; must equal the one already registered for it.
        source : {"human", "simulated", "imported"}, default "human"
            Where the vote came from.
        vote_id : str, optional
            Unique id; default a random UUID hex.
        time : float, optional
            UNIX seconds; default now.

        Returns
        -------
        str
            The vote's id.

        Raises
        ------
        ValueError
            Nothing stored: on a value outside 0..k-1 or not an integer, an unknown item,
            a duplicate vote id, an empty annotator, an unknown source, a scale differing
            from the one registered for ``question``, or a read-only store.
        """
        where = f"vote ({annotator!r}, {item_id!r}, {question!r})"
        if source not in SOURCES:
            raise ValueError(f"{where}: source must be one of {SOURCES}, got {source!r}")
        if not isinstance(annotator, str) or not annotator:
            raise ValueError(f"{where}: annotator must be a non-empty string")
        with self._lock:
            self._check_scale(question, scale, self.scales(), where)
            v = _as_level(value, where)
            if not 0 <= v < scale.k:
                raise ValueError(f"{where}: value {v} outside the scale {scale.name!r} "
                                 f"(levels 0..{scale.k - 1})")
            if not isinstance(item_id, str) or self._conn.execute(
                    "SELECT 1 FROM items WHERE item_id = ?", (item_id,)).fetchone() is None:
                raise ValueError(f"{where}: unknown item_id {item_id!r} (register it with add_items)")
            vid = uuid.uuid4().hex if vote_id is None else vote_id
            if not isinstance(vid, str) or not vid:
                raise ValueError(f"{where}: vote_id must be a non-empty string, got {vid!r}")
            if self._conn.execute("SELECT 1 FROM votes WHERE vote_id = ?", (vid,)).fetchone():
                raise ValueError(f"{where}: duplicate vote_id {vid!r} (already stored)")
            t = _time.time() if time is None else float(time)

            def write(c: sqlite3.Connection) -> None:
                self._register(c, question, scale, where)
                c.execute(
                    "INSERT INTO votes (vote_id, annotator, item_id, question, value, k, scale, "
                    "time, source) VALUES (?,?,?,?,?,?,?,?,?)",
                    (vid, annotator, item_id, question, v, scale.k, scale.name, t, source))

            self._write(write)
        return vid

    def add_votes(self, votes: pd.DataFrame, scales: Mapping[str, Scale], source: str = "human",
                  *, chunk_size: int = 1) -> int:
        """Validate every row of ``votes``, then store them all.

        All validation happens before the first commit, so bad input never leaves a
        partial load behind.

        Parameters
        ----------
        votes : pandas.DataFrame
            Columns ``annotator, item_id, question, value`` (0-based level index);
            optional ``vote_id`` (default random) and ``time`` (UNIX seconds, default now).
        scales : mapping of str to Scale
            Each question's scale.
        source : {"human", "simulated", "imported"}, default "human"
            Where the votes came from.
        chunk_size : int, default 1
            Votes committed per transaction: ``1`` gives the same one-vote-per-transaction
            guarantee as :meth:`add_vote`; a larger value is faster for bulk loads
            (simulations, imports) at the cost that a kill mid-load loses up to one whole
            chunk in flight (earlier chunks stay committed, so a killed bulk load can
            leave a prefix of the frame stored).

        Returns
        -------
        int
            Number of votes stored.

        Raises
        ------
        ValueError
            Naming the first bad row, nothing stored: an unknown source, a missing column,
            a question without a scale or with a scale differing from the registered one,
            a value outside 0..k-1, an unknown item, a duplicate vote id, a bad
            ``chunk_size`` or a read-only store.
        """
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if not isinstance(votes, pd.DataFrame):
            raise ValueError(f"votes must be a DataFrame, got {type(votes).__name__}")
        require_columns(votes, ["annotator", "item_id", "question", "value"], "votes")
        if not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        n = len(votes)
        if n == 0:
            return 0
        with self._lock:
            registered = self.scales()
            known_items = {r[0] for r in self._conn.execute("SELECT item_id FROM items")}
            rows = self._validate_votes(votes, scales, registered, known_items, source)
            questions = sorted({r[3] for r in rows})

            done = 0
            for start in range(0, n, chunk_size):
                chunk = rows[start:start + chunk_size]

                def write(c: sqlite3.Connection, chunk=chunk, first=start == 0) -> None:
                    if first:  # register the questions (idempotent) with the first vote(s)
                        for q in questions:
                            self._register(c, q, scales[q], f"votes: question {q!r}")
                    c.executemany(
                        "INSERT INTO votes (vote_id, annotator, item_id, question, value, k, "
                        "scale, time, source) VALUES (?,?,?,?,?,?,?,?,?)", chunk)

                self._write(write)
                done += len(chunk)
        return done

    def _validate_votes(self, votes: pd.DataFrame, scales: Mapping[str, Scale],
                        registered: Mapping[str, Scale], known_items: set[str],
                        source: str) -> list[tuple]:
        """All rows as insert tuples, or ValueError naming the first bad row."""
        checked: dict[str, Scale] = {}
        for q in pd.unique(votes["question"]):
            where = f"votes: question {q!r}"
            if q not in scales:
                row = int(np.flatnonzero((votes["question"] == q).to_numpy())[0])
                raise ValueError(f"votes row {row}: question {q!r} has no scale in `scales` "
                                 f"(known: {sorted(scales)})")
            self._check_scale(q, scales[q], registered, where)
            checked[q] = scales[q]
        has_id = "vote_id" in votes.columns
        has_time = "time" in votes.columns
        now = _time.time()
        ids = votes["vote_id"].tolist() if has_id else [None] * len(votes)
        if has_id:
            existing = {r[0] for r in self._conn.execute("SELECT vote_id FROM votes")}
        else:
            existing = set()
        seen: set[str] = set()
        rows: list[tuple] = []
        cols = [votes[c].tolist() for c in ("annotator", "item_id", "question", "value")]
        times = votes["time"].tolist() if has_time else None
        for i, (ann, item, q, value) in enumerate(zip(*cols, strict=True)):
            where = f"votes row {i} ({ann!r}, {item!r}, {q!r})"
            if not isinstance(ann, str) or not ann:
                raise ValueError(f"{where}: annotator must be a non-empty string")
            if item not in known_items:
                raise ValueError(f"{where}: unknown item_id {item!r} (register it with add_items)")
            sc = checked[q]
            v = _as_level(value, where)
            if not 0 <= v < sc.k:
                raise ValueError(f"{where}: value {v} outside the scale {sc.name!r} "
                                 f"(levels 0..{sc.k - 1})")
            vid = ids[i]
            if vid is None or (isinstance(vid, float) and math.isnan(vid)):
                vid = uuid.uuid4().hex
            if not isinstance(vid, str) or not vid:
                raise ValueError(f"{where}: vote_id must be a non-empty string, got {vid!r}")
            if vid in seen:
                raise ValueError(f"{where}: duplicate vote_id {vid!r} within the frame")
            if vid in existing:
                raise ValueError(f"{where}: duplicate vote_id {vid!r} (already stored)")
            seen.add(vid)
            if times is None or times[i] is None:
                t = now
            else:
                t = float(times[i])
                if math.isnan(t):
                    t = now
            rows.append((vid, ann, item, q, v, sc.k, sc.name, t, source))
        return rows

    # ------------------------------------------------------------------ reading
    def votes(self, question: str | None = None, source: str | None = None) -> pd.DataFrame:
        """Stored votes in insertion order, optionally only one question and/or source.

        Parameters
        ----------
        question : str, optional
            Keep only this question's votes.
        source : {"human", "simulated", "imported"}, optional
            Keep only votes from this source.

        Returns
        -------
        pandas.DataFrame
            Columns :data:`VOTE_COLUMNS`: ``vote_id, annotator, item_id, question, value``
            (0-based level index), ``k`` (number of levels), ``time`` (UNIX seconds),
            ``source``.

        Raises
        ------
        ValueError
            For an unknown ``source``.
        """
        sql = "SELECT " + ", ".join(VOTE_COLUMNS) + " FROM votes"
        cond, args = [], []
        if question is not None:
            cond.append("question = ?")
            args.append(question)
        if source is not None:
            if source not in SOURCES:
                raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
            cond.append("source = ?")
            args.append(source)
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        sql += " ORDER BY seq"
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        df = pd.DataFrame(rows, columns=VOTE_COLUMNS)
        # str: pandas' default string dtype, so the frame equals its parquet round trip
        return df.astype({"vote_id": str, "annotator": str, "item_id": str, "question": str,
                          "value": "int64", "k": "int64", "time": "float64", "source": str})

    def answered(self, annotator: str, question: str) -> set[str]:
        """Items that ``annotator`` has voted on for ``question``.

        Parameters
        ----------
        annotator : str
            Annotator id.
        question : str
            The question.

        Returns
        -------
        set of str
            The item ids.
        """
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT item_id FROM votes WHERE annotator = ? AND question = ?",
                (annotator, question)).fetchall()
        return {r[0] for r in rows}

    def export_parquet(self, path: str | os.PathLike, question: str | None = None,
                       source: str | None = None) -> Path:
        """Write :meth:`votes` (optionally filtered) to a parquet file, atomically.

        Parameters
        ----------
        path : str or os.PathLike
            The parquet file.
        question, source : str, optional
            Filters, as in :meth:`votes`.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        ValueError
            For an unknown ``source``.
        """
        df = self.votes(question=question, source=source)
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        return Path(path)
