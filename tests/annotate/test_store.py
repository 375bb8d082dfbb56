"""AnnotationStore: append-only SQLite vote store (one transaction per vote)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from facebias.annotate import PAIR_SCALE, SCALES_TRANSECTS, AnnotationStore, Scale

AGE = SCALES_TRANSECTS["age"]  # k = 6


def _dump(path) -> dict[str, list[tuple]]:
    """Every row of every table, read through an independent connection."""
    con = sqlite3.connect(path)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                for t in ("items", "questions", "votes")}
    finally:
        con.close()


@pytest.fixture
def store(tmp_path):
    s = AnnotationStore(tmp_path / "votes.sqlite")
    s.add_items(pd.DataFrame({"item_id": ["a", "b", "c"], "kind": "image",
                              "image": ["a.png", "b.png", "c.png"]}))
    s.add_items(pd.DataFrame({"item_id": ["p1"], "kind": "pair", "image_a": ["a.png"],
                              "image_b": ["b.png"]}))
    yield s
    s.close()


def test_scales_shape():
    assert {k: s.k for k, s in SCALES_TRANSECTS.items()} == {
        "age": 6, "skin_color": 6, "gender": 5, "hair_length": 5, "facial_hair": 4,
        "makeup": 4, "smile": 5, "uncanny": 5}
    assert SCALES_TRANSECTS["smile"].levels == ("Frown", "Serious", "Neutral", "Smile", "Broad smile")
    assert PAIR_SCALE.levels[0] == "Likely same" and PAIR_SCALE.levels[4] == "Likely different"
    np.testing.assert_allclose(AGE.normalise([0, 1, 5, np.nan]), [0, 0.2, 1, np.nan])
    with pytest.raises(ValueError, match="0..5"):
        AGE.normalise([6])
    with pytest.raises(ValueError, match="duplicate"):
        Scale("x", ("a", "a"))


def test_add_vote_roundtrip_and_visible_from_second_connection(store):
    vid = store.add_vote("ann1", "a", "age", 3, scale=AGE, time=100.0)
    # committed as soon as add_vote returns: a separate connection sees it
    con = sqlite3.connect(store.path)
    row = con.execute("SELECT vote_id, annotator, item_id, question, value, k, scale, time, source "
                      "FROM votes").fetchall()
    con.close()
    assert row == [(vid, "ann1", "a", "age", 3, 6, "age", 100.0, "human")]
    store.add_vote("ann1", "b", "age", np.int64(0), scale=AGE, source="imported", vote_id="v2")
    store.add_vote("ann2", "p1", "identity", 4.0, scale=PAIR_SCALE, source="simulated")
    df = store.votes()
    assert list(df.columns) == ["vote_id", "annotator", "item_id", "question", "value", "k",
                                "time", "source"]
    assert df["item_id"].tolist() == ["a", "b", "p1"]          # insertion order
    assert df["value"].tolist() == [3, 0, 4] and df["k"].tolist() == [6, 6, 5]
    assert df["value"].dtype == np.int64
    assert store.votes(question="age")["vote_id"].tolist() == [vid, "v2"]
    assert store.votes(source="simulated")["item_id"].tolist() == ["p1"]
    assert store.answered("ann1", "age") == {"a", "b"}
    assert store.answered("ann2", "age") == set()
    assert store.n_votes == 3
    assert store.scales() == {"age": AGE, "identity": PAIR_SCALE}
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


@pytest.mark.parametrize("kwargs, match", [
    (dict(item_id="a", value=6), "outside"),
    (dict(item_id="a", value=-1), "outside"),
    (dict(item_id="a", value=2.5), "integer"),
    (dict(item_id="a", value=True), "integer"),
    (dict(item_id="a", value="3"), "integer"),
    (dict(item_id="zzz", value=1), "unknown item_id"),
    (dict(item_id="a", value=1, vote_id="v1"), "duplicate vote_id"),
    (dict(item_id="a", value=1, source="mturk"), "source"),
    (dict(item_id="a", value=1, scale=Scale("age", ("young", "old"))), "registered"),
])
def test_bad_vote_rejected_and_nothing_changes(store, kwargs, match):
    store.add_vote("ann1", "a", "age", 2, scale=AGE, vote_id="v1")
    before = _dump(store.path)
    kw = dict(scale=AGE) | kwargs
    with pytest.raises(ValueError, match=match):
        store.add_vote("ann1", kw.pop("item_id"), "age", kw.pop("value"), **kw)
    assert _dump(store.path) == before


def test_add_votes_bad_row_stores_nothing(store):
    store.add_vote("ann0", "a", "age", 1, scale=AGE, vote_id="old")
    before = _dump(store.path)
    good = pd.DataFrame({"annotator": ["x", "y", "z"], "item_id": ["a", "b", "c"],
                         "question": ["age", "smile", "age"], "value": [0, 4, 5]})
    cases = [
        (good.assign(value=[0, 5, 1]), "row 1.*outside"),               # smile has k=5
        (good.assign(item_id=["a", "b", "nope"]), "row 2.*unknown item"),
        (good.assign(vote_id=["n1", "n2", "n1"]), "row 2.*duplicate vote_id.*within"),
        (good.assign(vote_id=["n1", "old", "n3"]), "row 1.*duplicate vote_id.*already"),
        (good.assign(question=["age", "smile", "nosuch"]), "row 2.*nosuch"),
        (good.assign(value=[0, 1.5, 1]), "row 1.*integer"),
    ]
    for frame, match in cases:
        with pytest.raises(ValueError, match=match):
            store.add_votes(frame, SCALES_TRANSECTS, source="imported")
        assert _dump(store.path) == before
    # the new question 'smile' was not half-registered by the failed loads
    assert "smile" not in store.scales()
    with pytest.raises(ValueError, match="source"):
        store.add_votes(good, SCALES_TRANSECTS, source="bogus")
    assert store.add_votes(good, SCALES_TRANSECTS, source="imported", chunk_size=2) == 3
    assert store.votes()["annotator"].tolist() == ["ann0", "x", "y", "z"]
    assert set(store.votes()["source"].iloc[1:]) == {"imported"}
    assert store.scales()["smile"] == SCALES_TRANSECTS["smile"]


def test_update_and_delete_blocked_by_triggers(store):
    store.add_vote("ann1", "a", "age", 2, scale=AGE)
    before = _dump(store.path)
    con = sqlite3.connect(store.path)
    for sql in ["UPDATE votes SET value = 0", "DELETE FROM votes",
                "UPDATE items SET kind = 'pair'", "DELETE FROM items",
                "DELETE FROM questions", "UPDATE questions SET k = 9"]:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute(sql)
        con.rollback()
    # the schema constraints hold for writers that bypass the Python API
    with pytest.raises(sqlite3.IntegrityError):
        con.execute("INSERT INTO votes (vote_id, annotator, item_id, question, value, k, scale, "
                    "time, source) VALUES ('x', 'a', 'a', 'age', 7, 6, 'age', 0, 'human')")
    con.rollback()
    con.close()
    assert _dump(store.path) == before


def test_add_items_idempotent_and_conflicts(store):
    before = _dump(store.path)
    same = pd.DataFrame({"item_id": ["a"], "kind": "image", "image": ["a.png"]})
    assert store.add_items(same) == 0
    with pytest.raises(ValueError, match="redefine"):
        store.add_items(pd.DataFrame({"item_id": ["d", "a"], "kind": "image",
                                      "image": ["d.png", "other.png"]}))
    with pytest.raises(ValueError, match="kind"):
        store.add_items(pd.DataFrame({"item_id": ["d"], "kind": ["video"]}))
    assert _dump(store.path) == before
    assert store.add_items(pd.DataFrame({"item_id": ["d"], "kind": ["image"]})) == 1
    assert store.items()["item_id"].tolist() == ["a", "b", "c", "p1", "d"]


def test_register_items_equals_add_items(tmp_path, store):
    """register_items stores exactly what the hand-built add_items frames of the fixture do."""
    with AnnotationStore(tmp_path / "other.sqlite") as other:
        assert other.register_items(pd.Series(["a", "b", "c"], index=[5, 3, 9]),
                                    image=pd.Series(["a.png", "b.png", "c.png"], index=[0, 1, 2])) == 3
        assert other.register_items(["p1"], image_a="a.png", image_b=["b.png"]) == 1
        pd.testing.assert_frame_equal(other.items(), store.items())
        assert other.register_items(["a"], image=["a.png"]) == 0  # idempotent
        assert other.register_items(["d", "e"]) == 2  # no path
        assert other.items().set_index("item_id").loc[["d", "e"], "image"].isna().all()


def test_register_items_bad_input_changes_nothing(store):
    before = _dump(store.path)
    with pytest.raises(ValueError, match="redefine"):
        store.register_items(["d", "a"], image=["d.png", "other.png"])
    with pytest.raises(ValueError, match="image: 1 values for 2 items"):
        store.register_items(["d", "e"], image=["d.png"])
    with pytest.raises(ValueError, match="both image_a and image_b"):
        store.register_items(["q"], image_a="a.png")
    with pytest.raises(ValueError, match="both image_a and image_b"):
        store.register_items(["q"], image="a.png", image_a="a.png", image_b="b.png")
    with pytest.raises(ValueError, match="non-empty string"):
        store.register_items([3])
    assert _dump(store.path) == before


def test_export_parquet_roundtrip(store, tmp_path):
    store.add_vote("ann1", "a", "age", 2, scale=AGE, time=5.0)
    store.add_vote("ann2", "p1", "identity", 1, scale=PAIR_SCALE, source="simulated", time=6.0)
    out = store.export_parquet(tmp_path / "out" / "votes.parquet")
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(back, store.votes())
    assert not list((tmp_path / "out").glob(".*tmp"))


def test_reopen_keeps_votes(tmp_path):
    path = tmp_path / "s.sqlite"
    with AnnotationStore(path) as s:
        s.add_items(pd.DataFrame({"item_id": ["a"], "kind": ["image"]}))
        s.add_vote("u", "a", "age", 1, scale=AGE, vote_id="v")
    with AnnotationStore(path) as s:
        assert s.votes()["vote_id"].tolist() == ["v"]
        with pytest.raises(ValueError, match="duplicate"):
            s.add_vote("u", "a", "age", 1, scale=AGE, vote_id="v")


def test_read_only_reads_and_changes_nothing(tmp_path):
    """read_only=True: the votes and labels are read; the file keeps its bytes, no -wal/-shm
    file is left behind, and every write is refused. A missing file or one that is not a
    store is an error, and nothing is created; a store from before machine labels existed
    (no labels tables) reads as one without labels, and is not upgraded."""
    path = tmp_path / "people.sqlite"
    with AnnotationStore(path) as s:
        s.add_items(pd.DataFrame({"item_id": ["a", "b"], "kind": ["image", "image"]}))
        s.add_vote("u", "a", "age", 2, scale=AGE, vote_id="v", time=1.0)
        s.add_labels(pd.DataFrame({"item_id": ["b"], "value": [0.5]}), "p_male", "gender", "probability")
    before = path.read_bytes()
    with AnnotationStore(path, read_only=True) as s:
        assert s.votes()["vote_id"].tolist() == ["v"] and s.labels()["value"].tolist() == [0.5]
        with pytest.raises(ValueError, match="read-only"):
            s.add_vote("u", "b", "age", 1, scale=AGE)
        with pytest.raises(ValueError, match="read-only"):
            s.add_items(pd.DataFrame({"item_id": ["c"], "kind": ["image"]}))
        with pytest.raises(sqlite3.OperationalError, match="readonly"):  # query_only below the API
            s._conn.execute("INSERT INTO items (item_id, kind) VALUES ('d', 'image')")
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["people.sqlite"]
    with pytest.raises(FileNotFoundError):
        AnnotationStore(tmp_path / "missing.sqlite", read_only=True)
    (tmp_path / "notes.sqlite").write_text("not a database " * 100)
    with pytest.raises(ValueError, match="not an annotation store"):
        AnnotationStore(tmp_path / "notes.sqlite", read_only=True)
    old = tmp_path / "old.sqlite"
    con = sqlite3.connect(old)
    con.executescript("CREATE TABLE items (item_id TEXT); CREATE TABLE questions (question TEXT); "
                      "CREATE TABLE votes (vote_id TEXT);")
    con.close()
    old_bytes = old.read_bytes()
    with AnnotationStore(old, read_only=True) as s:
        assert s.labels().empty and s.labellers().empty
    assert old.read_bytes() == old_bytes
    assert sorted(os.listdir(tmp_path)) == ["notes.sqlite", "old.sqlite", "people.sqlite"]


def test_sigkill_loses_at_most_the_vote_in_flight(tmp_path):
    """A writer killed with SIGKILL mid-stream: every vote whose add_vote returned is stored."""
    path = tmp_path / "kill.sqlite"
    code = textwrap.dedent(f"""
        import sys, pandas as pd
        from facebias.annotate import AnnotationStore, SCALES_TRANSECTS
        s = AnnotationStore({str(path)!r})
        s.add_items(pd.DataFrame({{"item_id": ["a"], "kind": ["image"]}}))
        i = 0
        while True:
            vid = s.add_vote("w", "a", "age", i % 6, scale=SCALES_TRANSECTS["age"], vote_id=f"v{{i}}")
            print(vid, flush=True)
            i += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    acknowledged = []
    try:
        for line in proc.stdout:
            acknowledged.append(line.strip())
            if len(acknowledged) >= 300:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    with AnnotationStore(path) as s:
        stored = s.votes()["vote_id"].tolist()
    assert len(acknowledged) == 300
    # every acknowledged vote survived, in order; beyond that at most what was in flight
    # (the child may have committed a few more before its print reached us)
    assert stored[:300] == acknowledged
    assert stored == [f"v{i}" for i in range(len(stored))]


# --------------------------------------------------------------------------- machine labels
def _labels_dump(path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return (con.execute("SELECT * FROM labellers ORDER BY rowid").fetchall()
                + con.execute("SELECT * FROM labels ORDER BY rowid").fetchall())
    finally:
        con.close()


def test_machine_labels_roundtrip_failures_kept(store):
    n = store.add_labels(pd.DataFrame({"item_id": ["a", "b", "c"], "value": [0.25, np.nan, 0.75]}),
                         labeller="p_male", attribute="gender", unit="probability", time=5.0)
    assert n == 3
    got = store.labels()
    assert got["item_id"].tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(got["value"].to_numpy(), [0.25, np.nan, 0.75])  # the failure is a row
    assert set(got["source"]) == {"machine"} and set(got["attribute"]) == {"gender"}
    assert store.labels(attribute="skin_tone").empty and len(store.labels(labeller="p_male")) == 3
    assert store.n_votes == 0  # labels are not votes
    # a second labeller of another attribute; reading one attribute keeps them apart
    store.add_labels(pd.DataFrame({"item_id": ["a"], "value": [41.0]}), "ita", "skin_tone", "degrees")
    assert store.labels(attribute="skin_tone")["value"].tolist() == [41.0]
    assert store.labellers()["labeller"].tolist() == ["p_male", "ita"]


@pytest.mark.parametrize("frame, kwargs, match", [
    ({"item_id": ["a", "zz"], "value": [0.1, 0.2]}, {}, "unknown item_id"),
    ({"item_id": ["a", "a"], "value": [0.1, 0.2]}, {}, "already labelled"),
    ({"item_id": ["a"], "value": [np.inf]}, {}, "finite"),
    ({"item_id": ["a"], "value": ["high"]}, {}, "number"),
    ({"item_id": ["a"], "value": [0.1]}, {"unit": "years"}, "registered for attribute"),
    ({"item_id": ["b"], "value": [0.1]}, {"attribute": "age"}, "registered for attribute"),
    ({"item_id": ["c"]}, {}, "'value' not found"),
])
def test_bad_machine_labels_change_nothing(store, frame, kwargs, match):
    store.add_labels(pd.DataFrame({"item_id": ["c"], "value": [0.5]}), "p_male", "gender", "probability")
    before = _labels_dump(store.path)
    args = {"labeller": "p_male", "attribute": "gender", "unit": "probability", **kwargs}
    with pytest.raises(ValueError, match=match):
        store.add_labels(pd.DataFrame(frame), **args)
    assert _labels_dump(store.path) == before


def test_machine_labels_append_only(store):
    store.add_labels(pd.DataFrame({"item_id": ["a"], "value": [0.5]}), "p_male", "gender", "probability")
    con = sqlite3.connect(store.path)
    try:
        for sql in ("UPDATE labels SET value = 0.9", "DELETE FROM labels", "UPDATE labellers SET unit = 'x'"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                con.execute(sql)
        with pytest.raises(sqlite3.IntegrityError):  # only machine labels in this table
            con.execute("INSERT INTO labels (item_id, labeller, value, source) VALUES ('b', 'p_male', 1, 'human')")
    finally:
        con.close()
    assert store.labels()["value"].tolist() == [0.5]
