"""Schema of the annotation store (:class:`facebias.annotate.store.AnnotationStore`): its
tables, the append-only and integrity triggers, and the column and source names.

Every statement is ``IF NOT EXISTS``: the store runs them all in one transaction when it is
opened writable, which is how a store written by an older version is migrated (tables and
triggers it lacks are added; rows already stored are untouched).
"""

from __future__ import annotations

__all__ = ["SOURCES", "VOTE_COLUMNS", "LABEL_COLUMNS", "ITEM_KINDS"]

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
