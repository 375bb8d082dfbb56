"""Append-only SQLite store of annotation votes: one row per vote.

A vote is ``(vote_id, annotator, item_id, question, value, k, scale, time, source)``:
``value`` is the 0-based level index (0..k-1) on the question's scale, ``time`` is UNIX time in
seconds (float) and ``source`` is ``'human'``, ``'simulated'`` or ``'imported'``.

A *machine label* is ``(item_id, labeller, attribute, value, unit, time)``: a real model's
measurement of one image (:mod:`facebias.annotate.machine`), on its own continuous scale
(``unit``). ``value`` is NaN where the model could not measure (no face found): the failure
is stored, never dropped. Each labeller labels an item at most once; its attribute and unit
are fixed when it first writes. Source is always ``'machine'``, so machine labels are never
mistaken for votes.

Guarantees
----------
* **Append-only.** ``UPDATE`` and ``DELETE`` on every table are aborted by triggers; a vote,
  once stored, is never changed. A wrong vote is corrected by a later vote, not by editing.
* **One transaction per vote** in :meth:`AnnotationStore.add_vote`: it returns only after the
  vote is committed, so a killed process loses at most the vote in flight. The database runs
  in WAL mode; with the default ``synchronous='NORMAL'`` a commit survives a crash or kill of
  the writing process (the WAL is in the OS page cache) but the last commits may be lost on a
  power failure or OS crash; pass ``synchronous='FULL'`` to fsync each commit as well.
* **Bad input changes nothing.** Every vote is validated before anything is written
  (integer value in 0..k-1, known item, unique vote id, known source, the question's scale equal
  to the one already registered for it); a bad vote raises ``ValueError`` and the store is
  unchanged. The same rules are in the schema, so another writer (a plain ``sqlite3``
  connection included) cannot bypass them: CHECK / UNIQUE / FOREIGN KEY constraints, and,
  since SQLite enforces foreign keys only on connections that set ``PRAGMA foreign_keys=ON``,
  triggers that abort a vote of an unknown item or question, a vote whose ``k`` or ``scale``
  differs from its question's or whose value is outside the question's ``0..k-1``, and a
  machine label of an unknown item or labeller (``sqlite3.IntegrityError`` for such a writer).
* **Registration is idempotent and atomic.** Items, questions (on their first vote) and
  labellers are checked and registered inside the write transaction (``BEGIN IMMEDIATE``,
  ``INSERT ... ON CONFLICT DO NOTHING``), so processes registering the same item, or casting
  the first vote on the same new question, at the same time all succeed; registering an id
  again with different content (another item path, another scale, another unit) is a
  ``ValueError``, also when two processes race.
* **Older stores are migrated on opening** (not when opened read-only): tables and triggers
  that a store written by an earlier version lacks are created, in one transaction; rows
  already stored are kept as they are (the new triggers check rows written after).

Several processes may read while one writes (WAL); writers wait up to ``timeout`` seconds for
the lock.

Modules (every public name is importable from this one):

* :mod:`facebias.annotate.store` (this one): :class:`AnnotationStore`: opening (and
  migrating) a store, its items and questions (scales);
* :mod:`facebias.annotate.store_schema`: the tables, triggers, column and source names;
* :mod:`facebias.annotate.store_votes`: storing, reading and exporting votes;
* :mod:`facebias.annotate.store_labels`: storing and reading machine labels.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import Scale
from facebias.annotate.store_labels import _LabelMethods
from facebias.annotate.store_schema import (
    _ITEM_PATHS,
    _SCHEMA,
    ITEM_KINDS,
    LABEL_COLUMNS,
    SOURCES,
    VOTE_COLUMNS,
    _append_only_triggers,
    _integrity_triggers,
)
from facebias.annotate.store_votes import _VoteMethods
from facebias.validate import require_columns

__all__ = ["AnnotationStore", "SOURCES", "VOTE_COLUMNS", "LABEL_COLUMNS", "synthetic_image_path"]


def synthetic_image_path(subset: str, image_id: Any) -> str:
    """Store path of a synthetic face image, relative to the synthetic folder (``data/synthetic``).

    Parameters
    ----------
    subset : str
        Sub-folder of the synthetic data, e.g. ``"hcic"``.
    image_id : Any
        The image's id (formatted with ``str``).

    Returns
    -------
    str
        ``<subset>/images/<image_id>.png``.

    Examples
    --------
    >>> synthetic_image_path("hcic", 12)
    'hcic/images/12.png'
    """
    return f"{subset}/images/{image_id}.png"


def _per_item(values: Any, n: int, name: str) -> list:
    """``values`` as one entry per item: a scalar (or None) repeated, or a sequence of ``n``."""
    if values is None or isinstance(values, (str, os.PathLike)) or np.ndim(values) == 0:
        return [values] * n
    out = list(values)
    if len(out) != n:
        raise ValueError(f"{name}: {len(out)} values for {n} items")
    return out


def _nullable(x) -> str | None:
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return None
    return str(x)


class AnnotationStore(_VoteMethods, _LabelMethods):
    """Append-only vote store in the SQLite file ``path`` (created if missing).

    ``read_only=True`` reads an existing store without changing it: nothing is created,
    the schema is not touched (a store written before machine labels existed reads as one
    without labels) and the connection runs with ``PRAGMA query_only``, so any write
    fails. Unlike SQLite's ``mode=ro`` it leaves no ``-wal`` / ``-shm`` files behind.

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file; its folder is created when writable.
    synchronous : {"NORMAL", "FULL", "EXTRA"}, default "NORMAL"
        SQLite ``PRAGMA synchronous`` (see the module doc).
    timeout : float, default 30.0
        Seconds to wait for another writer's lock.
    read_only : bool, default False
        Open an existing store for reading only.

    Raises
    ------
    ValueError
        For an unknown ``synchronous``, or (read-only) a file that is not a store.
    FileNotFoundError
        If ``read_only`` and the file does not exist.
    RuntimeError
        If SQLite cannot switch to WAL mode.

    Examples
    --------
    Votes are 0-based level indices on the question's scale; a machine label of NaN is a
    stored failure to measure:

    >>> import tempfile
    >>> from facebias.annotate.scales import Scale
    >>> smile = Scale("smile", ("Frown", "Neutral", "Smile"))
    >>> with tempfile.TemporaryDirectory() as d, AnnotationStore(f"{d}/s.sqlite") as s:
    ...     s.register_items(["a", "b"])
    ...     s.add_vote("ann1", "a", "smile", 2, scale=smile, vote_id="v1")
    ...     s.add_labels(pd.DataFrame({"item_id": ["a", "b"], "value": [31.5, np.nan]}),
    ...                  labeller="agenet", attribute="age", unit="years")
    ...     s.votes()[["annotator", "item_id", "value", "k"]]
    ...     s.labels()[["item_id", "value", "unit"]]
    2
    'v1'
    2
      annotator item_id  value  k
    0      ann1       a      2  3
      item_id  value   unit
    0       a   31.5  years
    1       b    NaN  years
    """

    def __init__(self, path: str | os.PathLike, *, synchronous: str = "NORMAL",
                 timeout: float = 30.0, read_only: bool = False):
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA, got {synchronous!r}")
        self.path = Path(path)
        self.read_only = bool(read_only)
        self._has_labels = True
        if self.read_only:
            if not self.path.is_file():
                raise FileNotFoundError(f"{self.path}: no annotation store to read")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # isolation_level=None: no implicit transactions; every write below is an explicit
        # BEGIN IMMEDIATE ... COMMIT. check_same_thread=False + a lock: widget callbacks may
        # arrive on another thread than the one that opened the store. A read-only store is
        # opened read-write (mode=rw: never created) with query_only, so that closing it
        # cleans up the WAL files as every other connection does.
        target = f"{self.path.resolve().as_uri()}?mode=rw" if self.read_only else self.path
        self._conn = sqlite3.connect(target, isolation_level=None, timeout=timeout,
                                     check_same_thread=False, uri=self.read_only)
        c = self._conn
        if self.read_only:
            c.execute("PRAGMA query_only=ON")
            try:
                tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            except sqlite3.DatabaseError as e:
                c.close()
                raise ValueError(f"{self.path}: not an annotation store ({e})") from e
            missing = sorted({"items", "questions", "votes"} - tables)
            if missing:
                c.close()
                raise ValueError(f"{self.path}: not an annotation store (no table(s) {missing})")
            self._has_labels = {"labellers", "labels"} <= tables
            return
        mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RuntimeError(f"{self.path}: could not switch SQLite to WAL mode (got {mode})")
        c.execute(f"PRAGMA synchronous={synchronous.upper()}")
        c.execute("PRAGMA foreign_keys=ON")
        with self._lock:
            c.execute("BEGIN IMMEDIATE")
            try:
                # statement by statement: executescript() would COMMIT implicitly. Every
                # statement is IF NOT EXISTS: on a store written by an older version this is
                # the migration (tables and triggers it lacks are added, in this one
                # transaction; rows already stored are untouched).
                stmts = ([x for x in _SCHEMA.split(";") if x.strip()] + _append_only_triggers()
                         + _integrity_triggers())
                for stmt in stmts:
                    c.execute(stmt)
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ basics
    def close(self) -> None:
        """Close the connection (further calls fail)."""
        self._conn.close()

    def __enter__(self) -> AnnotationStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AnnotationStore({str(self.path)!r}, n_votes={self.n_votes})"

    @property
    def n_votes(self) -> int:
        """Number of stored votes."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM votes").fetchone()[0])

    def _write(self, fn) -> None:
        """Run ``fn(conn)`` inside one ``BEGIN IMMEDIATE .. COMMIT`` transaction."""
        if self.read_only:
            raise ValueError(f"{self.path}: opened read-only; nothing stored")
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                fn(c)
                c.execute("COMMIT")
            except sqlite3.IntegrityError as e:
                # e.g. another process stored the same vote_id between our check and insert
                c.execute("ROLLBACK")
                raise ValueError(f"{self.path}: rejected by the store's constraints ({e}); "
                                 "nothing stored") from e
            except BaseException:
                c.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ items
    def items(self) -> pd.DataFrame:
        """All registered items, in registration order.

        Returns
        -------
        pandas.DataFrame
            Columns ``item_id, kind`` (image|pair), ``image, image_a, image_b`` (paths or
            ids, None where absent).
        """
        with self._lock:
            return pd.read_sql_query(
                "SELECT item_id, kind, image, image_a, image_b FROM items ORDER BY rowid",
                self._conn)

    def add_items(self, items: pd.DataFrame) -> int:
        """Register items in one transaction; ids already stored with identical fields are
        ignored, also when another process registers them at the same time (the check is
        repeated inside the write transaction). Callers use :meth:`register_items`.

        Parameters
        ----------
        items : pandas.DataFrame
            Columns ``item_id`` (non-empty str), ``kind`` (image|pair) and optional
            ``image`` or ``image_a``/``image_b`` path or id columns.

        Returns
        -------
        int
            Number of new items stored.

        Raises
        ------
        ValueError
            For a missing column, a bad row, an id repeated with different fields, a
            conflicting redefinition of a stored item, or a read-only store; nothing is
            stored.
        """
        if not isinstance(items, pd.DataFrame):
            raise ValueError(f"items must be a DataFrame, got {type(items).__name__}")
        require_columns(items, ["item_id", "kind"], "items")
        rows = []
        seen: dict[str, tuple] = {}
        for i, r in enumerate(items.itertuples(index=False)):
            d = r._asdict()
            item_id = d["item_id"]
            if not isinstance(item_id, str) or not item_id:
                raise ValueError(f"items row {i}: item_id must be a non-empty string, got {item_id!r}")
            if d["kind"] not in ITEM_KINDS:
                raise ValueError(f"items row {i} ({item_id!r}): kind must be one of {ITEM_KINDS}, "
                                 f"got {d['kind']!r}")
            rec = (d["kind"], *(_nullable(d.get(p)) for p in _ITEM_PATHS))
            if item_id in seen:
                if seen[item_id] != rec:
                    raise ValueError(f"items row {i}: item_id {item_id!r} appears twice with "
                                     "different fields")
                continue
            seen[item_id] = rec
            rows.append((item_id, *rec))
        stored: list[int] = []

        def new_rows(c: sqlite3.Connection) -> list[tuple]:
            """The rows not stored yet; ValueError for one stored with other fields."""
            existing = {r[0]: tuple(r[1:]) for r in c.execute(
                "SELECT item_id, kind, image, image_a, image_b FROM items")}
            new = []
            for row in rows:
                old = existing.get(row[0])
                if old is None:
                    new.append(row)
                elif old != tuple(row[1:]):
                    raise ValueError(f"items: item_id {row[0]!r} is already stored as {old}, "
                                     f"cannot redefine it as {tuple(row[1:])}")
            return new

        def write(c: sqlite3.Connection) -> None:
            # checked again inside the write transaction: another process may have stored
            # some of these items since the first check (below; items are never changed
            # or deleted, so an item it found identical stays so)
            new = new_rows(c)
            c.executemany("INSERT INTO items (item_id, kind, image, image_a, image_b) "
                          "VALUES (?,?,?,?,?) ON CONFLICT (item_id) DO NOTHING", new)
            stored.append(len(new))

        with self._lock:
            if new_rows(self._conn):  # nothing new: no write (so also on a read-only store)
                self._write(write)
        return sum(stored)

    def register_items(self, item_ids: Iterable[str], *, image: Any = None, image_a: Any = None,
                       image_b: Any = None) -> int:
        """Register image items or, when ``image_a`` and ``image_b`` are given, pair items.

        The one way callers register items: a front end of :meth:`add_items`, whose rules
        (idempotent, conflicts raise, one transaction) apply.

        Parameters
        ----------
        item_ids : iterable of str
            The items' ids.
        image, image_a, image_b : Any, optional
            Each item's image path or id, as a sequence matched to ``item_ids`` by
            position or one value for every item; ``None``: no path. Give ``image`` for
            image items, or both ``image_a`` and ``image_b`` for pair items.

        Returns
        -------
        int
            Number of new items stored.

        Raises
        ------
        ValueError
            For ``image`` given with ``image_a``/``image_b`` or only one of those, a
            sequence whose length differs from ``item_ids``, or as :meth:`add_items`.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d, AnnotationStore(f"{d}/s.sqlite") as s:
        ...     s.register_items(["a", "b"], image=["a.png", "b.png"])
        ...     s.register_items(["p1"], image_a="a.png", image_b="b.png")
        ...     s.items()["kind"].tolist()
        2
        1
        ['image', 'image', 'pair']
        """
        ids = list(item_ids)
        if image_a is None and image_b is None:
            frame = {"item_id": ids, "kind": ["image"] * len(ids),
                     "image": _per_item(image, len(ids), "image")}
        elif image is not None or image_a is None or image_b is None:
            raise ValueError("register_items: give image (image items) or both image_a and image_b "
                             "(pair items)")
        else:
            frame = {"item_id": ids, "kind": ["pair"] * len(ids),
                     "image_a": _per_item(image_a, len(ids), "image_a"),
                     "image_b": _per_item(image_b, len(ids), "image_b")}
        return self.add_items(pd.DataFrame(frame))

    # ------------------------------------------------------------------ scales
    def scales(self) -> dict[str, Scale]:
        """Registered questions and their scales.

        Returns
        -------
        dict of str to Scale
            Question -> the :class:`~facebias.annotate.scales.Scale` it was registered with.
        """
        with self._lock:
            rows = self._conn.execute("SELECT question, scale, levels FROM questions").fetchall()
        return {q: Scale(name, tuple(json.loads(levels))) for q, name, levels in rows}

    def _check_scale(self, question: str, scale: Scale, registered: Mapping[str, Scale],
                     where: str) -> bool:
        """Validate ``scale`` for ``question``; True if the question is new."""
        if not isinstance(question, str) or not question:
            raise ValueError(f"{where}: question must be a non-empty string, got {question!r}")
        if not isinstance(scale, Scale):
            raise ValueError(f"{where}: scale must be a Scale, got {type(scale).__name__}")
        old = registered.get(question)
        if old is None:
            return True
        if old != scale:
            raise ValueError(f"{where}: question {question!r} is registered with scale "
                             f"{old.name!r} {list(old.levels)}, got {scale.name!r} {list(scale.levels)}")
        return False

    def _register(self, c: sqlite3.Connection, question: str, scale: Scale, where: str) -> None:
        """Register ``question`` with ``scale`` unless it is; inside a write transaction.

        Idempotent, so that writers racing to cast the first vote on a new question all
        succeed; ValueError if the question is registered with another scale.
        """
        c.execute("INSERT INTO questions (question, scale, levels, k) VALUES (?,?,?,?) "
                  "ON CONFLICT (question) DO NOTHING",
                  (question, scale.name, json.dumps(list(scale.levels)), scale.k))
        name, levels = c.execute("SELECT scale, levels FROM questions WHERE question = ?",
                                 (question,)).fetchone()
        self._check_scale(question, scale, {question: Scale(name, tuple(json.loads(levels)))},
                          where)
