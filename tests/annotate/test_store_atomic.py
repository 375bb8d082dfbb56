"""AnnotationStore under concurrent writers and writers that bypass the Python API (issue 19,
defect 7): registration (items, questions, labellers) is idempotent and atomic, and the
schema itself (foreign keys plus triggers) rejects votes and labels of unknown items,
questions or labellers and values outside the question's scale, for any writer. Stores
written by the older schema are migrated on opening and keep every row."""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
import sqlite3

import pandas as pd
import pytest

from facebias.annotate import SCALES_TRANSECTS, AnnotationStore, Scale

AGE = SCALES_TRANSECTS["age"]  # k = 6
N_PROC = 4
N_TRIALS = 6

VOTE_SQL = ("INSERT INTO votes (vote_id, annotator, item_id, question, value, k, scale, time, "
            "source) VALUES (?, 'raw', ?, ?, ?, ?, ?, 0, 'human')")

# The schema as it was before the integrity triggers (commit 8d793ae), verbatim: a store
# created by that version has exactly these tables, indexes and triggers.
OLD_DDL = """
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
"""
OLD_DDL_LABELS = """
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


def _old_triggers(tables: tuple[str, ...]) -> str:
    return "".join(
        f"CREATE TRIGGER IF NOT EXISTS {t}_no_{op.lower()} BEFORE {op} ON {t} BEGIN SELECT "
        f"RAISE(ABORT, 'annotation store is append-only: {op} on {t} is not allowed'); END;\n"
        for t in tables for op in ("UPDATE", "DELETE"))


def _dump(path) -> dict[str, list[tuple]]:
    """Every row of every table, read through an independent connection."""
    con = sqlite3.connect(path)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence' "
            "ORDER BY name")]
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        con.close()


def _triggers(path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    finally:
        con.close()


# --------------------------------------------------------------------------- real concurrency
def _worker(op, paths, rank, open_first, barrier, results) -> None:
    """One process: per trial, its own connection, start together at the barrier, run ``op``."""
    for t, path in enumerate(paths):
        store = AnnotationStore(path) if open_first else None
        try:
            barrier.wait(timeout=120)
            try:
                if store is None:
                    store = AnnotationStore(path)
                out = ("ok", op(store, rank, t))
            except Exception as e:  # reported to the parent, which asserts on it
                out = ("error", f"{type(e).__name__}: {e}")
        finally:
            if store is not None:
                store.close()
        results.put((rank, t, out))


def _race(tmp_path, setup, op, *, open_first: bool = True, n_proc: int = N_PROC,
          n_trials: int = N_TRIALS) -> tuple[list[list[tuple]], list]:
    """Run ``op(store, rank, trial)`` in ``n_proc`` processes at once, ``n_trials`` times, each
    trial on a fresh store prepared by ``setup(path)``. Returns results[trial][rank], paths."""
    paths = []
    for t in range(n_trials):
        path = tmp_path / f"trial{t}.sqlite"
        setup(path)
        paths.append(path)
    ctx = mp.get_context("fork")  # the ops are closures; fork needs no pickling
    barrier, results = ctx.Barrier(n_proc), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(op, paths, r, open_first, barrier, results))
             for r in range(n_proc)]
    for p in procs:
        p.start()
    out: list[list] = [[None] * n_proc for _ in range(n_trials)]
    try:
        for _ in range(n_proc * n_trials):
            rank, t, res = results.get(timeout=180)
            out[t][rank] = res
    except queue.Empty:
        pytest.fail(f"race workers stopped answering; exit codes {[p.exitcode for p in procs]}")
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * n_proc
    return out, paths


def _new_store(items=("a",)):
    def setup(path):
        with AnnotationStore(path) as s:
            if items:
                s.register_items(list(items))
    return setup


def _failures(out) -> list[str]:
    return [f"trial {t} rank {r}: {res[1]}" for t, row in enumerate(out)
            for r, res in enumerate(row) if res[0] != "ok"]


def test_concurrent_add_items_of_the_same_items_all_succeed(tmp_path):
    """Every process registers the same 300 items at once: each call succeeds, each item is
    stored once, and the counts returned add up to the number of items."""
    ids = [f"img{i:04d}" for i in range(300)]
    frame = pd.DataFrame({"item_id": ids, "kind": "image", "image": [f"{i}.png" for i in ids]})
    out, paths = _race(tmp_path, _new_store(items=()), lambda s, rank, t: s.add_items(frame))
    assert _failures(out) == []
    for row, path in zip(out, paths, strict=True):
        assert sum(res[1] for res in row) == len(ids)
        with AnnotationStore(path) as s:
            got = s.items()
        assert sorted(got["item_id"]) == ids and got["image"].tolist() == [f"{i}.png" for i in got["item_id"]]


@pytest.mark.parametrize("api", ["add_vote", "add_votes"])
def test_concurrent_first_votes_on_a_new_question_all_stored(tmp_path, api):
    """Every process casts the first vote on the same new question at once: all are stored
    and the question is registered once, with its scale."""
    def op(s, rank, t):
        if api == "add_vote":
            return s.add_vote(f"w{rank}", "a", "q", rank % AGE.k, scale=AGE, vote_id=f"v{rank}")
        frame = pd.DataFrame({"annotator": [f"w{rank}"] * 2, "item_id": ["a", "b"],
                              "question": ["q", "smile"], "value": [rank % AGE.k, 1],
                              "vote_id": [f"v{rank}", f"s{rank}"]})
        return s.add_votes(frame, {"q": AGE, "smile": SCALES_TRANSECTS["smile"]}, chunk_size=1)

    out, paths = _race(tmp_path, _new_store(items=("a", "b")), op)
    assert _failures(out) == []
    per_proc = 1 if api == "add_vote" else 2
    for path in paths:
        with AnnotationStore(path) as s:
            votes = s.votes()
            assert len(votes) == per_proc * N_PROC
            assert sorted(votes.loc[votes["question"] == "q", "vote_id"]) == [f"v{r}" for r in range(N_PROC)]
            expect = {"q": AGE} | ({"smile": SCALES_TRANSECTS["smile"]} if api == "add_votes" else {})
            assert s.scales() == expect


def test_concurrent_conflicting_registrations_exactly_one_wins(tmp_path):
    """Processes register the same item id with different content, and cast the first vote on
    the same new question with different scales, at once: exactly one wins each; the others
    get an error naming the conflict (not a raw constraint failure), and what is stored is
    the winner's."""
    def attempt(fn) -> str:
        try:
            fn()
            return "ok"
        except ValueError as e:
            return str(e)

    def op(s, rank, t):
        scale = Scale("q", tuple(f"level{j}" for j in range(2 + rank)))
        return (attempt(lambda: s.register_items(["x"], image=f"x{rank}.png")),
                attempt(lambda: s.add_vote(f"w{rank}", "a", "q", 1, scale=scale)))

    out, paths = _race(tmp_path, _new_store(), op)
    assert _failures(out) == []
    for row, path in zip(out, paths, strict=True):
        item_winner = [r for r, res in enumerate(row) if res[1][0] == "ok"]
        vote_winner = [r for r, res in enumerate(row) if res[1][1] == "ok"]
        assert len(item_winner) == 1 and len(vote_winner) == 1, row
        for r, (_, (item, vote)) in enumerate(row):
            assert r in item_winner or "cannot redefine" in item, item
            assert r in vote_winner or "registered with scale" in vote, vote
        with AnnotationStore(path) as s:
            assert s.items().set_index("item_id").loc["x", "image"] == f"x{item_winner[0]}.png"
            assert s.scales()["q"].k == 2 + vote_winner[0]
            assert s.votes()["annotator"].tolist() == [f"w{vote_winner[0]}"]


def test_concurrent_first_labels_of_a_new_labeller_all_stored(tmp_path):
    """Processes store the first labels of the same new machine labeller at once (each its
    own item): all are stored, the labeller once."""
    def op(s, rank, t):
        return s.add_labels(pd.DataFrame({"item_id": [f"i{rank}"], "value": [rank / 10]}),
                            labeller="p_male", attribute="gender", unit="probability")

    out, paths = _race(tmp_path, _new_store(items=[f"i{r}" for r in range(N_PROC)]), op)
    assert _failures(out) == []
    for path in paths:
        with AnnotationStore(path) as s:
            assert sorted(s.labels()["item_id"]) == [f"i{r}" for r in range(N_PROC)]
            assert s.labellers()["labeller"].tolist() == ["p_male"]


# --------------------------------------------------------------------------- any writer
@pytest.fixture
def populated(tmp_path):
    path = tmp_path / "s.sqlite"
    with AnnotationStore(path) as s:
        s.register_items(["a", "b"])
        s.add_vote("u", "a", "age", 2, scale=AGE, vote_id="v1")
        s.add_labels(pd.DataFrame({"item_id": ["a"], "value": [0.5]}), "p_male", "gender", "probability")
    return path


@pytest.mark.parametrize("sql, args, match", [
    (VOTE_SQL, ("x", "zzz", "age", 1, 6, "age"), "unknown item"),
    (VOTE_SQL, ("x", "a", "nosuch", 1, 6, "nosuch"), "unknown question"),
    (VOTE_SQL, ("x", "a", "age", 50, 99, "age"), "outside the question's scale"),
    (VOTE_SQL, ("x", "a", "age", 6, 99, "age"), "outside the question's scale"),
    (VOTE_SQL, ("x", "a", "age", 3, 99, "age"), "differ from the question's"),
    (VOTE_SQL, ("x", "a", "age", 3, 6, "smile"), "differ from the question's"),
    ("INSERT INTO labels (item_id, labeller, value, source) VALUES (?, ?, ?, 'machine')",
     ("zzz", "p_male", 0.1), "unknown item"),
    ("INSERT INTO labels (item_id, labeller, value, source) VALUES (?, ?, ?, 'machine')",
     ("b", "nobody", 0.1), "unknown labeller"),
])
def test_raw_sqlite_writer_cannot_store_what_the_api_rejects(populated, sql, args, match):
    """A plain sqlite3 connection (foreign_keys off, as every new connection has it) is held to
    the same rules by the schema's triggers; nothing is stored."""
    before = _dump(populated)
    con = sqlite3.connect(populated)
    try:
        assert con.execute("PRAGMA foreign_keys").fetchone() == (0,)
        with pytest.raises(sqlite3.IntegrityError, match=match):
            con.execute(sql, args)
        con.commit()
    finally:
        con.close()
    assert _dump(populated) == before


def test_raw_sqlite_writer_may_store_valid_rows(populated):
    """The triggers reject only bad rows: a valid vote and label written by plain sqlite3 are
    stored and read back through the API."""
    con = sqlite3.connect(populated)
    con.execute(VOTE_SQL, ("v2", "b", "age", 5, 6, "age"))
    con.execute("INSERT INTO labels (item_id, labeller, value, source) VALUES ('b', 'p_male', 0.9, 'machine')")
    con.commit()
    con.close()
    with AnnotationStore(populated) as s:
        assert s.votes()[["vote_id", "item_id", "value", "k"]].values.tolist() == [
            ["v1", "a", 2, 6], ["v2", "b", 5, 6]]
        assert s.labels()["value"].tolist() == [0.5, 0.9]


def test_api_errors_from_the_schema_are_value_errors(populated):
    """Where only the schema can see the conflict (the API's check ran on an older snapshot),
    the caller still gets a ValueError and nothing is stored."""
    with AnnotationStore(populated) as s:
        before = _dump(populated)
        with pytest.raises(ValueError, match="unknown item"):
            s._write(lambda c: c.execute(VOTE_SQL, ("x", "zzz", "age", 1, 6, "age")))
        assert _dump(populated) == before


# --------------------------------------------------------------------------- migration
def _old_store(path, *, with_labels: bool) -> None:
    """A store as the old schema wrote it (WAL, old DDL), holding rows of every table,
    including an out-of-scale vote that the old schema let a raw writer store."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    tables = ("items", "questions", "votes") + (("labellers", "labels") if with_labels else ())
    con.executescript(OLD_DDL + (OLD_DDL_LABELS if with_labels else "") + _old_triggers(tables))
    con.execute("BEGIN")
    con.execute("INSERT INTO items VALUES ('a', 'image', 'a.png', NULL, NULL), "
                "('p', 'pair', NULL, 'a.png', 'b.png')")
    con.execute("INSERT INTO questions VALUES ('age', 'age', ?, 6)", (json.dumps(list(AGE.levels)),))
    con.execute(VOTE_SQL, ("v1", "a", "age", 3, 6, "age"))
    con.execute(VOTE_SQL, ("bad", "a", "age", 50, 99, "age"))  # accepted by the old schema
    if with_labels:
        con.execute("INSERT INTO labellers VALUES ('p_male', 'gender', 'probability', '')")
        con.execute("INSERT INTO labels (item_id, labeller, value, time, source) "
                    "VALUES ('a', 'p_male', 0.25, 1.0, 'machine')")
    con.execute("COMMIT")
    con.close()


@pytest.mark.parametrize("with_labels", [True, False], ids=["before-triggers", "before-labels"])
def test_old_store_is_migrated_and_keeps_every_row(tmp_path, with_labels):
    path = tmp_path / "old.sqlite"
    _old_store(path, with_labels=with_labels)
    before = _dump(path)
    old_triggers = _triggers(path)
    with AnnotationStore(path) as s:
        assert s.scales() == {"age": AGE}
        assert s.votes()["vote_id"].tolist() == ["v1", "bad"]  # nothing stored is lost
        s.add_vote("u", "p", "age", 1, scale=AGE, vote_id="v2")  # the API writes as before
    after = _dump(path)
    for table, rows in before.items():
        assert after[table][:len(rows)] == rows
    assert after["votes"][-1][1] == "v2" and len(after["votes"]) == len(before["votes"]) + 1
    migrated = _triggers(path)
    assert old_triggers < migrated
    # the migrated store holds raw writers to the new rules
    con = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="outside the question's scale"):
        con.execute(VOTE_SQL, ("x", "a", "age", 50, 99, "age"))
    with pytest.raises(sqlite3.IntegrityError, match="unknown item"):
        con.execute(VOTE_SQL, ("x", "zzz", "age", 1, 6, "age"))
    con.close()
    # opening again changes nothing (the migration is idempotent)
    schema = sqlite3.connect(path).execute("SELECT * FROM sqlite_master ORDER BY name").fetchall()
    with AnnotationStore(path):
        pass
    assert sqlite3.connect(path).execute("SELECT * FROM sqlite_master ORDER BY name").fetchall() == schema
    assert _dump(path) == after


def test_old_store_opened_by_several_processes_at_once(tmp_path):
    """Several processes open the same old store at once (each migrating it) and vote: all
    succeed and every vote, old and new, is there."""
    def setup(path):
        _old_store(path, with_labels=True)

    def op(s, rank, t):
        return s.add_vote(f"w{rank}", "a", "age", rank % 6, scale=AGE, vote_id=f"w{rank}")

    out, paths = _race(tmp_path, setup, op, open_first=False)
    assert _failures(out) == []
    for path in paths:
        with AnnotationStore(path) as s:
            assert sorted(s.votes()["vote_id"]) == sorted(["v1", "bad"] + [f"w{r}" for r in range(N_PROC)])
        con = sqlite3.connect(path)
        with pytest.raises(sqlite3.IntegrityError):
            con.execute(VOTE_SQL, ("x", "a", "age", 50, 99, "age"))
        con.close()
