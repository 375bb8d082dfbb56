"""Annotation widgets: their logic in plain pytest (clicks, shortcut keys, resume, no duplicate
votes, all-done), the notebook's item selection, and the pair tool served by voila and driven
in headless Chromium down to the row in the SQLite file."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import ipywidgets  # noqa: F401
import numpy as np
import pandas as pd
import pytest

from facebias.annotate import PAIR_SCALE, SCALES_HCIC, SCALES_TRANSECTS, AnnotationStore, Scale
from facebias.annotate.widgets import ImageAnnotator, PairAnnotator, load_png

# about 63 s under make test (make profile, 2 cores): handed out first; make test-fast skips it
pytestmark = pytest.mark.slow(seconds=63)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "annotate.py"
QUESTIONS = list(SCALES_HCIC)  # age, expression, gender, skin_color, uncanny


def _png(path: Path, shade: int) -> None:
    from PIL import Image

    img = np.zeros((16, 16, 3), np.uint8)
    img[..., 0] = shade
    img[4:12, 4:12] = 255 - shade
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path)


@pytest.fixture
def db(tmp_path) -> AnnotationStore:
    s = AnnotationStore(tmp_path / "votes.sqlite")
    yield s
    s.close()


@pytest.fixture
def images(tmp_path, db) -> pd.DataFrame:
    """3 image items, registered in the store."""
    items = pd.DataFrame({"item_id": ["img_a", "img_b", "img_c"]})
    items["path"] = [str(tmp_path / f"{i}.png") for i in items["item_id"]]
    for k, p in enumerate(items["path"]):
        _png(Path(p), 40 * k)
    db.add_items(pd.DataFrame({"item_id": items["item_id"], "kind": "image", "image": items["item_id"]}))
    return items


@pytest.fixture
def pairs(tmp_path, db) -> pd.DataFrame:
    """4 pair items, registered in the store."""
    ids = [f"pair_{k:05d}" for k in range(4)]
    for k in range(5):
        _png(tmp_path / f"f{k}.png", 50 * k)
    items = pd.DataFrame({"item_id": ids, "path_a": [str(tmp_path / "f0.png")] * 4,
                          "path_b": [str(tmp_path / f"f{k + 1}.png") for k in range(4)]})
    db.add_items(pd.DataFrame({"item_id": ids, "kind": "pair", "image_a": "f0",
                               "image_b": [f"f{k + 1}" for k in range(4)]}))
    return items


def _mine(db: AnnotationStore, annotator: str) -> pd.DataFrame:
    v = db.votes()
    return v[v["annotator"] == annotator]


def _card_pngs(tool: PairAnnotator, item: str) -> list[bytes]:
    """The two face PNGs of ``item``'s card in the pair tool's slots (what the browser gets)."""
    import base64
    import re

    cards = [sl.value for sl in tool.slots if f'data-item="{item}"' in sl.value]
    assert len(cards) == 1, f"{item} is in {len(cards)} slots"
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', cards[0])]


def _slot_items(tool: PairAnnotator) -> list[str]:
    """Pairs sent to the browser, in the order it shows them."""
    import re

    found = [re.search(r'data-item="([^"]+)" data-order="(\d+)"', sl.value) for sl in tool.slots]
    return [m[1] for m in sorted((m for m in found if m), key=lambda m: int(m[2]))]


def _submit_key(tool) -> None:
    """Enter in the shortcut field: the frontend sends a custom 'submit' message."""
    tool.shortcut._handle_custom_msg({"event": "submit"}, [])


# ---------------------------------------------------------------- image mode
def test_image_clicks_and_keys_store_one_human_vote_per_question(db, images):
    tool = ImageAnnotator(db, images, "ann1")
    assert tool.questions == SCALES_HCIC and tool.current_item == "img_a"
    assert tool.progress_label.value == "0 / 3 done" and "ann1" in tool.header.value
    assert "img_a" not in tool.header.value and tool.image.value[:4] == b"\x89PNG"  # no item ids
    # item 1 with the mouse: a toggle click sets the pending answer; nothing stored yet
    clicks = {"age": 2, "expression": 0, "gender": 4, "skin_color": 1, "uncanny": 3}
    for q, v in clicks.items():
        tool.toggles[q].value = v
    assert db.n_votes == 0
    tool.next_button.click()
    v = _mine(db, "ann1")
    assert dict(zip(v["question"], v["value"], strict=True)) == clicks
    assert set(v["item_id"]) == {"img_a"} and set(v["source"]) == {"human"}
    assert dict(zip(v["question"], v["k"], strict=True)) == {q: 5 for q in QUESTIONS}
    assert tool.current_item == "img_b" and tool.progress.value == 1
    assert tool.progress_label.value == "1 / 3 done"
    # item 2 with the keyboard: each digit answers the ▶ question and moves on
    assert tool.current_question == "age" and "▶" in tool.labels["age"].value
    for key, q in zip("51234", QUESTIONS, strict=True):
        assert tool.current_question == q
        tool.shortcut.value = key
        assert tool.shortcut.value == ""  # the field clears itself
    assert tool.toggles["age"].value == 4  # the buttons show the keyed answers
    assert db.n_votes == 5
    tool.shortcut.value = "n"
    v = _mine(db, "ann1").query("item_id == 'img_b'")
    assert dict(zip(v["question"], v["value"], strict=True)) == dict(zip(QUESTIONS, [4, 0, 1, 2, 3],
                                                                         strict=True))
    # item 3: fast typing delivers "12" before the clear arrives -> read as the key "2"
    tool.shortcut.value = "1"
    tool.shortcut.value = "12"
    assert tool.pending["age"] == 0 and tool.pending["expression"] == 1
    for key in "345":
        tool.shortcut.value = key
    _submit_key(tool)  # Enter
    assert tool.done and db.n_votes == 15


def test_image_changing_a_pending_answer_and_incomplete_submit(db, images):
    tool = ImageAnnotator(db, images, "ann1", scales={q: SCALES_HCIC[q] for q in ("age", "gender")})
    tool.toggles["age"].value = 1
    tool.toggles["age"].value = 3  # a second click before Next changes the pending answer
    with pytest.raises(ValueError, match="missing: \\['gender'\\]"):
        tool.submit()
    tool.next_button.click()  # Next with an open question: a warning, nothing stored
    assert db.n_votes == 0 and "gender" in tool.status.value
    assert tool.current_question == "gender" and tool.current_item == "img_a"
    tool.shortcut.value = "p"  # back to age, re-key it
    assert tool.current_question == "age"
    tool.shortcut.value = "5"
    tool.shortcut.value = "9"  # out of range for gender (1..5): ignored with a hint
    assert "1..5" in tool.status.value and tool.pending["gender"] is None
    tool.answer("gender", 2)
    tool.answer("gender", 0)
    ids = tool.submit()
    v = db.votes()
    assert len(ids) == 2 and list(v["vote_id"]) == ids
    assert dict(zip(v["question"], v["value"], strict=True)) == {"age": 4, "gender": 0}
    with pytest.raises(ValueError, match="0..4"):
        tool.answer("age", 5)
    with pytest.raises(ValueError, match="unknown question"):
        tool.answer("smile", 1)


def test_image_resume_and_no_second_vote_for_a_stored_question(db, images):
    scales = {q: SCALES_HCIC[q] for q in ("age", "gender")}
    first = ImageAnnotator(db, images, "ann1", scales=scales)
    first.answer("age", 1)
    first.answer("gender", 2)
    first.submit()  # img_a done
    # a crash in the middle of Next on img_b: only 'age' reached the store
    db.add_vote("ann1", "img_b", "age", 3, scale=scales["age"], source="human")
    # ... and img_c done in another session (out of order)
    for q in scales:
        db.add_vote("ann1", "img_c", q, 0, scale=scales[q], source="human")
    n = db.n_votes
    again = ImageAnnotator(db, images, "ann1", scales=scales)
    assert again.current_item == "img_b" and again.n_done == 2
    assert again.progress_label.value == "2 / 3 done"
    assert again.toggles["age"].disabled and again.toggles["age"].value == 3  # stored, locked
    assert "(saved)" in again.labels["age"].value and again.current_question == "gender"
    with pytest.raises(ValueError, match="already stored"):
        again.answer("age", 0)
    again.toggles["age"].value = 0  # a click on a locked row changes nothing
    assert again.pending["age"] is None and again.toggles["age"].value == 3
    again.shortcut.value = "4"
    again.shortcut.value = "n"
    assert db.n_votes == n + 1  # only gender was new
    assert again.done and again.current_item is None
    b = ImageAnnotator(db, images, "ann2", scales=scales)  # another annotator starts at the top
    assert b.current_item == "img_a" and b.n_done == 0
    counts = db.votes().groupby(["annotator", "item_id", "question"]).size()
    assert counts.max() == 1  # never two votes by one annotator on one question of one item


def test_image_all_done_state(db, images):
    scales = {"uncanny": SCALES_HCIC["uncanny"]}
    tool = ImageAnnotator(db, images, "ann1", scales=scales)
    for _ in range(3):
        tool.shortcut.value = "2"
        tool.shortcut.value = "n"
    assert tool.done and tool.progress_label.value == "3 / 3 done" and tool.progress.value == 3
    assert "All done" in tool.status.value and "facebias-all-done" in tool.status.value
    assert "all done" in tool.header.value
    assert tool.next_button.disabled and tool.shortcut.disabled
    assert tool.face_box.layout.display == "none"
    tool.shortcut.value = "3"
    tool.next_button.click()
    assert db.n_votes == 3
    with pytest.raises(ValueError, match="all items are done"):
        tool.submit()
    assert ImageAnnotator(db, images, "ann1", scales=scales).done  # done stays done


def test_image_keys_stamped_by_the_page_apply_to_their_image_only(db, images):
    """Image mode's page log ``[item, key]``: keys that arrive together (kernel busy) are all
    handled, in order; a key stamped with an image no longer on screen is ignored, visibly,
    instead of answering the next image unseen."""
    import json

    scales = {q: SCALES_HCIC[q] for q in ("age", "gender")}
    tool = ImageAnnotator(db, images, "ann1", scales=scales)
    assert 'data-item="img_a"' in tool.item_marker.value
    log: list = []

    def send(*entries):
        log.extend(list(e) for e in entries)
        tool.answer_log.value = json.dumps(log)

    send(["img_a", "3"], ["img_a", "5"], ["img_a", "n"])  # one update: nothing dropped
    v = db.votes()
    assert dict(zip(v["question"], v["value"], strict=True)) == {"age": 2, "gender": 4}
    assert set(v["item_id"]) == {"img_a"} and tool.current_item == "img_b"
    assert 'data-item="img_b"' in tool.item_marker.value
    send(["img_a", "1"], ["img_a", "n"])  # typed before img_b was on screen
    assert tool.pending == {"age": None, "gender": None} and db.n_votes == 2
    assert "previous image" in tool.status.value
    send(["img_b", "2"], ["img_b", "1"], ["img_b", "\n"], ["img_c", "4"], ["img_c", "4"], ["img_c", "n"])
    v = db.votes()
    assert list(zip(v["item_id"], v["question"], v["value"], strict=True))[2:] == [
        ("img_b", "age", 1), ("img_b", "gender", 0), ("img_c", "age", 3), ("img_c", "gender", 3)]
    assert tool.done and tool.item_marker.value == ""
    send(["img_c", "1"])
    assert db.n_votes == 6


def test_image_scales_004_missing_image_and_bad_input(db, images, tmp_path):
    items = images.copy()
    items.loc[1, "path"] = str(tmp_path / "nope.png")
    tool = ImageAnnotator(db, items, "ann1", scales=SCALES_TRANSECTS)
    assert tool.toggles["age"].options[-1] == ("6 Senior (65+)", 5)
    tool.answer("age", 5)
    assert tool.current_question == "skin_color"
    for q in list(SCALES_TRANSECTS)[1:]:
        tool.answer(q, 0)
    tool.submit()
    assert tool.current_item == "img_b" and "image not found" in tool.image_caption.value
    # a store whose 'age' question uses the 6-level 004 scale cannot take 000 votes
    with pytest.raises(ValueError, match="another store"):
        ImageAnnotator(db, items, "ann1", scales=SCALES_HCIC)
    with pytest.raises(ValueError, match="not registered"):
        ImageAnnotator(db, pd.DataFrame({"item_id": ["zzz"], "path": ["x.png"]}), "a",
                       scales=SCALES_TRANSECTS)
    with pytest.raises(ValueError, match="items: column 'path' not found"):
        ImageAnnotator(db, items.drop(columns="path"), "a", scales=SCALES_TRANSECTS)
    with pytest.raises(ValueError, match="annotator"):
        ImageAnnotator(db, items, " ", scales=SCALES_TRANSECTS)
    assert load_png(tmp_path / "nope.png") is None
    assert load_png(images["path"][0]).shape == (16, 16, 3)


# ---------------------------------------------------------------- pair mode
def test_pair_clicks_and_keys_store_final_votes(db, pairs):
    tool = PairAnnotator(db, pairs, "ann1", min_interval=0)
    assert [b.description for b in tool.buttons][0] == "1 · Likely same"
    assert tool.current_item == "pair_00000" and tool.progress_label.value == "0 / 4 done"
    a, b = _card_pngs(tool, "pair_00000")
    assert a[:4] == b"\x89PNG" and a != b
    tool.buttons[4].click()  # a click is final: stored at once, next pair shown
    assert db.n_votes == 1 and tool.current_item == "pair_00001"
    tool.buttons[1].click()
    tool.shortcut.value = "3"
    assert tool.shortcut.value == ""
    tool.shortcut.value = "7"  # not an option: a hint, nothing stored
    assert "1..5" in tool.status.value and db.n_votes == 3
    v = db.votes()
    assert list(v["item_id"]) == ["pair_00000", "pair_00001", "pair_00002"]
    assert list(v["value"]) == [4, 1, 2] and set(v["question"]) == {"identity"}
    assert set(v["source"]) == {"human"} and set(v["annotator"]) == {"ann1"}
    assert set(v["k"]) == {PAIR_SCALE.k} and tool.progress_label.value == "3 / 4 done"
    assert "pair_0" not in tool.header.value  # no item ids on the page
    # resume: a new object on the same store continues at the open pair
    again = PairAnnotator(db, pairs, "ann1", min_interval=0)
    assert again.current_item == "pair_00003" and again.progress.value == 3
    assert again.answer(0)
    assert again.done and again.current_item is None and "All done" in again.status.value
    assert all(b.disabled for b in again.buttons) and again.shortcut.disabled
    again.buttons[0].click()
    again.shortcut.value = "1"
    with pytest.raises(ValueError, match="all pairs are done"):
        again.answer(1)
    assert db.n_votes == 4
    assert db.votes().groupby(["annotator", "item_id"]).size().max() == 1


def test_pair_double_click_does_not_vote_on_the_next_pair(db, pairs):
    tool = PairAnnotator(db, pairs, "ann1")  # default min_interval = 0.3 s
    time.sleep(0.35)
    tool.buttons[0].click()
    tool.buttons[0].click()  # second half of a double-click, on a pair not yet seen
    tool.shortcut.value = "2"
    assert db.n_votes == 1 and tool.current_item == "pair_00001"
    assert "ignored" in tool.status.value
    time.sleep(0.35)
    tool.buttons[2].click()
    assert db.n_votes == 2 and list(db.votes()["value"]) == [0, 2]


def test_pair_answers_stamped_by_the_page_go_to_their_pair_or_are_ignored_visibly(db, pairs, monkeypatch):
    """The page script's answer log (a JSON list the page only appends to): each entry is
    stored against the pair it names, in order, also when several arrive in one update (the
    kernel was busy); one for a pair already answered, or not in the list, is ignored with a
    message; a pair the store refused is sent again (new generation)."""
    import json

    tool = PairAnnotator(db, pairs, "ann1", lookahead=2)  # stamped answers have no time guard
    assert _slot_items(tool) == ["pair_00000", "pair_00001"]  # the next pair is sent ahead
    log: list = []

    def send(*entries):
        log.extend(list(e) for e in entries)
        tool.answer_log.value = json.dumps(log)

    send(["pair_00000", 4, 0], ["pair_00001", 0, 0])  # two keys coalesced into one update
    v = db.votes()
    assert list(zip(v["item_id"], v["value"], strict=True)) == [("pair_00000", 4), ("pair_00001", 0)]
    assert tool.current_item == "pair_00002" and _slot_items(tool) == ["pair_00002", "pair_00003"]
    send(["pair_00001", 2, 0])  # e.g. a second view of the page: never a second vote
    assert db.n_votes == 2 and "already answered" in tool.status.value
    send(["pair_99999", 1, 0])
    assert db.n_votes == 2 and "not in this list" in tool.status.value
    real = db.add_vote
    calls = []

    def flaky(*args, **kwargs):  # the store refuses the first attempt
        calls.append(args)
        if len(calls) == 1:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(db, "add_vote", flaky)
    send(["pair_00003", 1, 0])  # answered out of order: stored against its own pair ...
    assert db.n_votes == 2 and "shown again" in tool.status.value
    assert 'data-item="pair_00003" data-order="3" data-gen="1"' in "".join(s.value for s in tool.slots)
    send(["pair_00003", 1, 1])  # ... once the store takes it
    assert tool.current_item == "pair_00002" and tool.n_done == 3
    with pytest.raises(ValueError, match="already answered"):
        tool.answer(0, item="pair_00003")
    send(["pair_00002", 3, 0])
    v = db.votes()
    assert list(zip(v["item_id"], v["value"], strict=True)) == [
        ("pair_00000", 4), ("pair_00001", 0), ("pair_00003", 1), ("pair_00002", 3)]
    assert tool.done and "All done" in tool.status.value and _slot_items(tool) == []


def test_pair_custom_scale_and_out_of_order_resume(db, pairs):
    three = Scale("same3", ("same", "unsure", "different"))
    db.add_vote("ann1", "pair_00001", "same3", 2, scale=three)  # done out of order
    tool = PairAnnotator(db, pairs, "ann1", scale=three, question="same3", min_interval=0)
    assert tool.current_item == "pair_00000" and tool.n_done == 1
    tool.shortcut.value = "3"
    assert tool.current_item == "pair_00002"  # pair_00001 is skipped: already done
    tool.shortcut.value = "4"
    assert db.n_votes == 2 and "1..3" in tool.status.value


# ---------------------------------------------------------------- the notebook
def _tiny_synthetic(root: Path, n_pairs: int = 3) -> Path:
    """data/synthetic look-alike: hcic/pairs.parquet, hcic/images.parquet, hcic/images/*.png."""
    hcic = root / "hcic"
    ids = ["s0000_AF", "s0000_AF_pose1", "s0001_BM", "s0001_BM_age3"]
    for k, i in enumerate(ids):
        _png(hcic / "images" / f"{i}.png", 60 * k)
    pd.DataFrame({"image_id": ids, "prototype_id": ["s0000_AF"] * 2 + ["s0001_BM"] * 2}).to_parquet(
        hcic / "images.parquet")
    k = np.arange(n_pairs) % 3  # more than 3 pairs repeat the three image pairs
    pairs = pd.DataFrame({"pair_id": np.arange(n_pairs) * 7 + 3,
                          "image_a": np.array(["s0000_AF", "s0000_AF", "s0001_BM"])[k],
                          "image_b": np.array(["s0000_AF_pose1", "s0001_BM", "s0001_BM_age3"])[k],
                          "label": np.array([1, 0, 1])[k]})
    pairs.to_parquet(hcic / "pairs.parquet")
    return root


def _notebook_with(params: dict, out: Path) -> Path:
    """A copy of notebooks/annotate.py at ``out`` with its parameters cell replaced."""
    import jupytext

    nb = jupytext.read(NOTEBOOK)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    names = [line.split("=")[0].strip() for line in cells[0].source.splitlines() if "=" in line]
    assert set(params) <= set(names), "unknown notebook parameter"
    cells[0].source = "\n".join(f"{k} = {params.get(k)!r}" if k in params else line
                                for k, line in zip(names, cells[0].source.splitlines(), strict=True))
    jupytext.write(nb, out, fmt="py:percent")
    return out


def _run_notebook(path: Path) -> dict:
    import jupytext

    ns: dict = {}
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(path), "exec"), ns)  # noqa: S102 - our own notebook
    return ns


def test_notebook_registers_items_and_says_what_to_run_without_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the repo: relative paths are from the cwd
    nb = _notebook_with({"synthetic": "missing/synthetic"}, tmp_path / "nb_missing.py")
    ns = _run_notebook(nb)  # no error (voila would hide it): the page says what to run
    assert ns["tool"] is None and not ns["ready"]
    assert "make reproduce" in ns["message"].data and "missing/synthetic" in ns["message"].data
    syn = _tiny_synthetic(tmp_path / "syn")
    ns = _run_notebook(_notebook_with({"task": "image", "synthetic": str(syn), "store": "h.sqlite",
                                       "n_items": 3, "seed": 1}, tmp_path / "nb_image.py"))
    tool, store = ns["tool"], ns["db"]
    assert isinstance(tool, ImageAnnotator)
    assert tool.questions == {f"hcic/{q}": s for q, s in SCALES_HCIC.items()}  # as in simulate
    assert len(tool.item_ids) == 3 and set(tool.item_ids) < set(pd.read_parquet(
        syn / "hcic" / "images.parquet")["image_id"])
    assert store.path == tmp_path / "h.sqlite" and set(store.items()["kind"]) == {"image"}
    assert set(store.items()["image"]) == {f"hcic/images/{i}.png" for i in tool.item_ids}
    tool.shortcut.value = "1"
    assert tool.labels["hcic/expression"].value == "<b>▶ expression</b>"
    ns = _run_notebook(_notebook_with({"task": "pair", "synthetic": str(syn), "store": "h2.sqlite",
                                       "n_items": 40}, tmp_path / "nb_pair.py"))
    tool = ns["tool"]
    assert isinstance(tool, PairAnnotator) and sorted(tool.item_ids) == ["pair_00003", "pair_00010",
                                                                         "pair_00017"]
    assert tool.paths["pair_00010"] == (str(syn / "hcic/images/s0000_AF.png"),
                                        str(syn / "hcic/images/s0001_BM.png"))
    items = ns["db"].items().set_index("item_id")
    assert items.loc["pair_00010", "image_b"] == "hcic/images/s0001_BM.png"


def _rows(db_path: Path, n: int, timeout: float = 60.0) -> list[tuple]:
    """Vote rows read straight from the SQLite file, once there are at least ``n``."""
    deadline = time.monotonic() + timeout
    while True:
        rows = []
        if db_path.exists():
            con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
            try:
                rows = con.execute("SELECT annotator, item_id, question, value, source FROM votes "
                                   "ORDER BY seq").fetchall()
            except sqlite3.OperationalError:
                rows = []  # schema not there yet
            finally:
                con.close()
        if len(rows) >= n or time.monotonic() > deadline:
            return rows
        time.sleep(0.25)


@pytest.mark.timeout(300)
def test_pair_annotator_in_chromium_writes_votes_to_sqlite(browser_page, voila, screenshots, tmp_path):
    """voila serves notebooks/annotate.py (pair task); a click and a number key in Chromium
    each put a 'human' row into the SQLite store, for the pair on screen."""
    syn = _tiny_synthetic(tmp_path / "syn")
    db_path = tmp_path / "annotations" / "human.sqlite"
    nb = _notebook_with({"task": "pair", "synthetic": str(syn), "store": str(db_path),
                         "annotator": "browser01", "n_items": 3, "seed": 0}, tmp_path / "annotate.py")
    order = [f"pair_{p:05d}" for p in pd.read_parquet(syn / "hcic" / "pairs.parquet")
             .sample(n=3, random_state=0)["pair_id"]]
    page = browser_page
    page.goto(voila(nb), timeout=120_000)
    answer = page.locator(".facebias-answer", has_text="Possibly different")
    answer.wait_for(timeout=180_000)
    on = ".facebias-card.facebias-on[data-item='{}']"
    page.wait_for_selector(on.format(order[0]), timeout=60_000)
    page.wait_for_function("() => [...document.querySelectorAll('.facebias-on img')]"
                           ".filter(i => i.naturalWidth > 0).length >= 2", timeout=60_000)
    page.wait_for_timeout(500)  # clicks within min_interval (0.3 s) of a new pair are ignored
    answer.dblclick()  # the second click lands on the next pair at once: ignored, visibly
    page.wait_for_selector("text=Ignored a click that came before this pair was on screen",
                           timeout=10_000)
    rows = _rows(db_path, 1)
    assert rows == [("browser01", order[0], "identity", 3, "human")]
    page.wait_for_selector("text=1 / 3 done", timeout=60_000)
    page.wait_for_selector(on.format(order[1]), timeout=60_000)
    page.screenshot(path=str(screenshots / "annotate_pair.png"))
    page.keyboard.press("1")  # "Likely same": keys work anywhere on the page
    rows = _rows(db_path, 2)
    assert rows[1] == ("browser01", order[1], "identity", 0, "human")
    page.wait_for_selector("text=2 / 3 done", timeout=60_000)
    page.wait_for_selector(on.format(order[2]), timeout=60_000)
    page.keyboard.press("5")
    page.wait_for_selector(".facebias-all-done", timeout=60_000)
    rows = _rows(db_path, 3)
    assert [r[1] for r in rows] == order and rows[2][3] == 4 and len(rows) == 3
    page.screenshot(path=str(screenshots / "annotate_pair_done.png"))


@pytest.mark.timeout(300)
def test_pair_rapid_keys_in_chromium_all_stored_against_the_pair_on_screen(browser_page, voila, tmp_path):
    """Keys 50 ms apart (faster than the kernel answers): every key is stored, against the
    pair that was on screen when it was pressed, in the order the pairs were shown."""
    n = 12
    syn = _tiny_synthetic(tmp_path / "syn", n_pairs=n)
    db_path = tmp_path / "annotations" / "human.sqlite"
    nb = _notebook_with({"task": "pair", "synthetic": str(syn), "store": str(db_path),
                         "annotator": "fast01", "n_items": n, "seed": 0}, tmp_path / "annotate.py")
    order = [f"pair_{p:05d}" for p in pd.read_parquet(syn / "hcic" / "pairs.parquet")
             .sample(n=n, random_state=0)["pair_id"]]
    keys = "152431234512"
    page = browser_page
    page.goto(voila(nb), timeout=120_000)
    page.locator(".facebias-answer").first.wait_for(timeout=180_000)
    page.wait_for_function("() => [...document.querySelectorAll('img')]"
                           ".filter(i => i.naturalWidth > 0 && i.offsetWidth > 0).length >= 2",
                           timeout=60_000)
    page.wait_for_timeout(500)
    shown = []
    t0 = time.monotonic()
    for key in keys:  # the pair on screen (the browser's own record) when each key goes down
        shown.append(page.evaluate("() => document.querySelector('.facebias-card.facebias-on')"
                                   "?.dataset.item ?? null"))
        page.keyboard.press(key)
        page.wait_for_timeout(50)
    assert time.monotonic() - t0 < 0.2 * n  # they really came fast
    rows = _rows(db_path, n, timeout=30)
    assert shown == order
    assert [(r[1], r[3]) for r in rows] == [(i, int(k) - 1) for i, k in zip(order, keys, strict=True)]
    assert {r[0] for r in rows} == {"fast01"} and {r[4] for r in rows} == {"human"}
    page.wait_for_selector(".facebias-all-done", timeout=60_000)
    assert len(_rows(db_path, n + 1, timeout=1)) == n  # nothing more, nothing twice


def _annotate(make_ui, tmp: Path, params: str, task: str = "pair") -> str:
    """``make annotate`` (the documented command) serving into ``tmp`` with
    ``ANNOTATE_PARAMS=params``; the page's URL (conftest's ``make_ui`` stops it)."""
    return make_ui("annotate", f"ANNOTATE_DIR={tmp / 'ui'}", f"ANNOTATE_PARAMS={params}", "ANNOTATOR=layout01",
                   f"TASK={task}", port_var="ANNOTATE_PORT")


@pytest.mark.timeout(300)
def test_make_annotate_without_data_says_what_to_run(browser_page, make_ui, tmp_path, screenshots):
    """Fresh clone, no faces: `make annotate` serves a page that says to run make reproduce
    (not voila's "There was an error when executing cell")."""
    url = _annotate(make_ui, tmp_path, f"-p synthetic {tmp_path / 'no_faces'} -p store {tmp_path / 'h.sqlite'}")
    page = browser_page
    page.goto(url, timeout=120_000)
    # visible only once voila shows the rendered cells, i.e. after the last cell ran
    page.wait_for_selector("text=No faces to annotate yet", timeout=180_000)
    text = page.inner_text("body")
    page.screenshot(path=str(screenshots / "annotate_no_data.png"))
    assert "make reproduce" in text and str(tmp_path / "no_faces") in text
    assert "There was an error" not in text and "Traceback" not in text
    assert not (tmp_path / "h.sqlite").exists()  # nothing written without faces


@pytest.mark.timeout(300)
def test_make_annotate_shows_the_annotator_only_the_tool_above_the_fold(browser_page, make_ui, tmp_path,
                                                                        screenshots):
    """At 1280x900 the annotator sees instructions, faces >= 256 px, the answers (no scrolling)
    and progress; no developer text (code, notebook prose, item ids, module names)."""
    syn = _tiny_synthetic(tmp_path / "syn")
    params = f"-p synthetic {syn} -p store {tmp_path / 'h.sqlite'} -p n_items 3"
    url = _annotate(make_ui, tmp_path, params)
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(url, timeout=120_000)
    page.locator(".facebias-answer").first.wait_for(timeout=180_000)
    page.wait_for_function("() => [...document.querySelectorAll('img')]"
                           ".filter(i => i.naturalWidth > 0 && i.offsetWidth > 0).length >= 2",
                           timeout=60_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(screenshots / "annotate_pair_1280x900.png"))
    answers = [b.bounding_box() for b in page.locator(".facebias-answer").all()]
    faces = [i.bounding_box() for i in page.locator("img").all() if i.is_visible()]
    scroll_y = page.evaluate("() => window.scrollY")
    text = page.inner_text("body")
    assert len(answers) == 5 and all(b is not None and b["y"] >= 0 and b["y"] + b["height"] <= 900
                                     for b in answers) and scroll_y == 0
    assert len(faces) == 2 and all(f["width"] >= 256 and f["y"] + f["height"] <= 900 for f in faces)
    assert "same person" in text and "0 / 3 done" in text and "layout01" in text
    for dev in ("facebias.annotate", "pair_0", "pair_{", "simulate", ".sqlite", "import ",
                "annotation list", "register_items", str(syn)):
        assert dev not in text, f"developer text {dev!r} on the annotator's page"


@pytest.mark.timeout(300)
def test_make_annotate_image_task_fast_keys_and_layout(browser_page, make_ui, tmp_path, screenshots):
    """Image task served by `make annotate TASK=image` at 1280x900: face >= 256 px, answers and
    Next above the fold, no developer text; keys typed 50 ms apart anywhere on the page are
    all stored, for the image on screen."""
    syn = _tiny_synthetic(tmp_path / "syn")
    db_path = tmp_path / "h.sqlite"
    params = f"-p synthetic {syn} -p store {db_path} -p n_items 2 -p seed 0"
    marker = "() => document.querySelector('.facebias-item-marker')?.dataset.item ?? null"
    url = _annotate(make_ui, tmp_path, params, task="image")
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(url, timeout=120_000)
    page.locator(".facebias-next").wait_for(timeout=180_000)
    page.wait_for_function("() => [...document.querySelectorAll('img.facebias-image')]"
                           ".filter(i => i.naturalWidth > 0).length == 1", timeout=60_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(screenshots / "annotate_image_1280x900.png"))
    face = page.locator("img.facebias-image").bounding_box()
    buttons = [b.bounding_box() for b in page.locator(".facebias-answer button").all()]
    buttons.append(page.locator(".facebias-next").bounding_box())
    text = page.inner_text("body")
    first = page.evaluate(marker)
    page.keyboard.type("12345n", delay=50)  # 5 questions and Next, fast
    page.wait_for_selector("text=1 / 2 done", timeout=60_000)
    page.wait_for_function(f"() => ({marker})() !== {first!r}", timeout=60_000)
    second = page.evaluate(marker)
    page.keyboard.type("54321", delay=50)
    page.keyboard.press("Enter")
    page.wait_for_selector(".facebias-all-done", timeout=60_000)
    assert face["width"] >= 256 and face["y"] + face["height"] <= 900
    assert len(buttons) == 5 * 5 + 1 and all(b["y"] + b["height"] <= 900 for b in buttons)
    assert "Rate the face" in text and "0 / 2 done" in text and "skin color" in text
    for dev in ("facebias.annotate", "hcic/", "s000", ".sqlite", "import ", str(syn)):
        assert dev not in text, f"developer text {dev!r} on the annotator's page"
    rows = _rows(db_path, 10, timeout=5)
    assert [(r[1], r[2], r[3]) for r in rows] == (
        [(first, f"hcic/{q}", v) for q, v in zip(QUESTIONS, range(5), strict=True)]
        + [(second, f"hcic/{q}", v) for q, v in zip(QUESTIONS, range(4, -1, -1), strict=True)])
