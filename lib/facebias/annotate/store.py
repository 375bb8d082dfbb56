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
"""

from __future__ import annotations

import json
import math
import numbers
import os
import sqlite3
import threading
import time as _time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import Scale
from facebias.io import atomic_path
from facebias.validate import require_columns

__all__ = ["AnnotationStore", "SOURCES", "VOTE_COLUMNS", "LABEL_COLUMNS", "synthetic_image_path"]

SOURCES = ("human", "simulated", "imported")
VOTE_COLUMNS = ["vote_id", "annotator", "item_id", "question", "value", "k", "time", "source"]
LABEL_COLUMNS = ["item_id", "labeller", "attribute", "value", "unit", "time", "source"]
ITEM_KINDS = ("image", "pair")
_ITEM_PATHS = ("image", "image_a", "image_b")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    item_id  TEXT PRIMARY KEY NOT NULL CHECK (length(item_id) > 0),
    kind     TEXT NOT NULL CHECK (kind IN ('image', 'pair')),
    image    TEXT,
    image_a  TEXT,
    image_b  TEXT
);
CREATE TABLE IF NOT EXISTS questions (
    question TEXT PRIMARY KEY NOT NULL CHECK (length(question) > 0),
    scale    TEXT NOT NULL,
    levels   TEXT NOT NULL,              -- JSON list of level names, index = level
    k        INTEGER NOT NULL CHECK (k >= 2)
);
CREATE TABLE IF NOT EXISTS votes (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,   -- insertion order
    vote_id   TEXT NOT NULL UNIQUE CHECK (length(vote_id) > 0),
    annotator TEXT NOT NULL CHECK (length(annotator) > 0),
    item_id   TEXT NOT NULL REFERENCES items (item_id),
    question  TEXT NOT NULL REFERENCES questions (question),
    value     INTEGER NOT NULL CHECK (typeof(value) = 'integer' AND value >= 0 AND value < k),
    k         INTEGER NOT NULL,
    scale     TEXT NOT NULL,
    time      REAL,                                -- UNIX seconds
    source    TEXT NOT NULL CHECK (source IN ('human', 'simulated', 'imported'))
);
CREATE INDEX IF NOT EXISTS votes_annotator_question ON votes (annotator, question);
CREATE TABLE IF NOT EXISTS labellers (
    labeller    TEXT PRIMARY KEY NOT NULL CHECK (length(labeller) > 0),
    attribute   TEXT NOT NULL CHECK (length(attribute) > 0),
    unit        TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS labels (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id  TEXT NOT NULL REFERENCES items (item_id),
    labeller TEXT NOT NULL REFERENCES labellers (labeller),
    value    REAL,                                  -- NULL: the model could not measure
    time     REAL,
    source   TEXT NOT NULL CHECK (source = 'machine'),
    UNIQUE (item_id, labeller)
);
"""


def _append_only_triggers() -> list[str]:
    sql = []
    for table in ("items", "questions", "votes", "labellers", "labels"):
        for op in ("UPDATE", "DELETE"):
            sql.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'annotation store is append-only: "
                f"{op} on {table} is not allowed'); END;"
            )
    return sql


def _integrity_triggers() -> list[str]:
    """Triggers that hold every writer to the rules the API checks (issue 19, defect 7).

    The FOREIGN KEY clauses bind only connections that set ``PRAGMA foreign_keys=ON``, which a
    plain ``sqlite3`` writer does not; these triggers abort, for any connection, an insert
    (or update) of a vote of an unknown item or question, with a ``k`` or ``scale`` other than
    the question's or a value outside ``0..k-1`` of the question's scale, and of a machine
    label of an unknown item or labeller. ``IF NOT EXISTS``: creating them again is a no-op,
    which is how an older store is migrated when it is opened.
    """
    votes = (
        "SELECT RAISE(ABORT, 'votes: unknown item_id, not in items') WHERE NOT EXISTS "
        "(SELECT 1 FROM items WHERE item_id = NEW.item_id); "
        "SELECT RAISE(ABORT, 'votes: unknown question, not in questions') WHERE NOT EXISTS "
        "(SELECT 1 FROM questions WHERE question = NEW.question); "
        "SELECT RAISE(ABORT, 'votes: value outside the question''s scale (levels 0..k-1 of "
        "questions.k)') WHERE NEW.value < 0 OR NEW.value >= "
        "(SELECT k FROM questions WHERE question = NEW.question); "
        "SELECT RAISE(ABORT, 'votes: k and scale must not differ from the question''s in "
        "questions') WHERE EXISTS (SELECT 1 FROM questions WHERE question = NEW.question "
        "AND (k IS NOT NEW.k OR scale IS NOT NEW.scale)); ")
    labels = (
        "SELECT RAISE(ABORT, 'labels: unknown item_id, not in items') WHERE NOT EXISTS "
        "(SELECT 1 FROM items WHERE item_id = NEW.item_id); "
        "SELECT RAISE(ABORT, 'labels: unknown labeller, not in labellers') WHERE NOT EXISTS "
        "(SELECT 1 FROM labellers WHERE labeller = NEW.labeller); ")
    return [f"CREATE TRIGGER IF NOT EXISTS {table}_check_{op.lower()} BEFORE {op} ON {table} "
            f"BEGIN {body}END;"
            for table, body in (("votes", votes), ("labels", labels))
            for op in ("INSERT", "UPDATE")]


def _as_level(value, where: str) -> int:
    """``value`` as a Python int; ValueError unless it is an integer (integral floats pass)."""
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{where}: value must be an integer level index, got {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise ValueError(f"{where}: value must be an integer level index, got {value!r}")


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


class AnnotationStore:
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

    # ------------------------------------------------------------------ machine labels
    def labellers(self) -> pd.DataFrame:
        """Registered machine labellers, in registration order.

        Returns
        -------
        pandas.DataFrame
            Columns ``labeller, attribute, unit, description`` (empty for a store written
            before machine labels existed).
        """
        if not self._has_labels:
            return pd.DataFrame(columns=["labeller", "attribute", "unit", "description"], dtype=str)
        with self._lock:
            return pd.read_sql_query("SELECT labeller, attribute, unit, description FROM labellers "
                                     "ORDER BY rowid", self._conn)

    def add_labels(self, labels: pd.DataFrame, labeller: str, attribute: str, unit: str,
                   description: str = "", time: float | None = None) -> int:
        """Store one machine labeller's measurements, validated first, in one transaction.

        Parameters
        ----------
        labels : pandas.DataFrame
            Columns ``item_id`` (registered items) and ``value`` (float in ``unit``; NaN or
            None = could not measure, stored as a failure).
        labeller : str
            Non-empty labeller id; it labels each item at most once.
        attribute : str
            Non-empty attribute measured (fixed at the labeller's first write).
        unit : str
            Unit of ``value`` (fixed at the labeller's first write).
        description : str, default ""
            Free text stored with a new labeller.
        time : float, optional
            UNIX seconds; default now.

        Returns
        -------
        int
            Number of labels stored.

        Raises
        ------
        ValueError
            Nothing stored: for an empty labeller or attribute, a non-string unit, a
            missing column, an unknown item, a non-numeric or infinite value, an item this
            labeller already labelled, the labeller registered with another attribute or
            unit, or a read-only store.
        """
        where = f"labels of {labeller!r}"
        for name, v in (("labeller", labeller), ("attribute", attribute)):
            if not isinstance(v, str) or not v:
                raise ValueError(f"{where}: {name} must be a non-empty string, got {v!r}")
        if not isinstance(unit, str):
            raise ValueError(f"{where}: unit must be a string, got {unit!r}")
        if not isinstance(labels, pd.DataFrame):
            raise ValueError(f"{where}: labels must be a DataFrame, got {type(labels).__name__}")
        require_columns(labels, ["item_id", "value"], where)
        t = _time.time() if time is None else float(time)
        with self._lock:
            known_items = {r[0] for r in self._conn.execute("SELECT item_id FROM items")}

            def check_labeller(c: sqlite3.Connection) -> None:
                old = c.execute("SELECT attribute, unit FROM labellers WHERE labeller = ?",
                                (labeller,)).fetchone()
                if old is not None and tuple(old) != (attribute, unit):
                    raise ValueError(f"{where}: registered for attribute {old[0]!r} in "
                                     f"{old[1]!r}, got {attribute!r} in {unit!r}")

            check_labeller(self._conn)
            done = {r[0] for r in self._conn.execute("SELECT item_id FROM labels WHERE labeller = ?",
                                                     (labeller,))}
            rows, seen = [], set()
            for i, (item, value) in enumerate(zip(labels["item_id"].tolist(), labels["value"].tolist(),
                                                  strict=True)):
                here = f"{where}, row {i} ({item!r})"
                if item not in known_items:
                    raise ValueError(f"{here}: unknown item_id (register it with add_items)")
                if item in seen or item in done:
                    raise ValueError(f"{here}: this labeller already labelled the item")
                seen.add(item)
                if value is None or value is pd.NA:
                    v = None
                elif isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
                    v = None if math.isnan(value) else float(value)
                    if v is not None and not math.isfinite(v):
                        raise ValueError(f"{here}: value must be finite or NaN, got {value!r}")
                else:
                    raise ValueError(f"{here}: value must be a number or NaN, got {value!r}")
                rows.append((item, labeller, v, t, "machine"))

            def write(c: sqlite3.Connection) -> None:
                # idempotent, checked inside the transaction: another process may register
                # the same labeller at the same time
                c.execute("INSERT INTO labellers (labeller, attribute, unit, description) "
                          "VALUES (?,?,?,?) ON CONFLICT (labeller) DO NOTHING",
                          (labeller, attribute, unit, str(description)))
                check_labeller(c)
                c.executemany("INSERT INTO labels (item_id, labeller, value, time, source) "
                              "VALUES (?,?,?,?,?)", rows)

            if rows:
                self._write(write)
        return len(rows)

    def labels(self, attribute: str | None = None, labeller: str | None = None) -> pd.DataFrame:
        """Stored machine labels in insertion order, optionally one attribute and/or labeller.

        Parameters
        ----------
        attribute : str, optional
            Keep only labels of this attribute.
        labeller : str, optional
            Keep only this labeller's labels.

        Returns
        -------
        pandas.DataFrame
            Columns :data:`LABEL_COLUMNS`: ``item_id, labeller, attribute, value`` (NaN =
            failed to measure), ``unit``, ``time`` (UNIX seconds), ``source`` (always
            ``"machine"``).
        """
        sql = ("SELECT l.item_id, l.labeller, r.attribute, l.value, r.unit, l.time, l.source "
               "FROM labels l JOIN labellers r ON l.labeller = r.labeller")
        cond, args = [], []
        if attribute is not None:
            cond.append("r.attribute = ?")
            args.append(attribute)
        if labeller is not None:
            cond.append("l.labeller = ?")
            args.append(labeller)
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY l.seq", args).fetchall() if self._has_labels else []
        df = pd.DataFrame(rows, columns=LABEL_COLUMNS)
        return df.astype({"item_id": str, "labeller": str, "attribute": str, "value": "float64",
                          "unit": str, "time": "float64", "source": str})
