"""ipywidgets annotation front ends for real annotators (JupyterLab or voila).

* :class:`ImageAnnotator`: one image at a time, rated on several K-point scales
  (default :data:`~facebias.annotate.SCALES_000`; pass ``SCALES_004`` for the 004 study).
* :class:`PairAnnotator`: two faces side by side, the 000 identity question
  (:data:`~facebias.annotate.PAIR_SCALE`, 0 = "Likely same" .. 4 = "Likely different").

Every vote goes to :meth:`AnnotationStore.add_vote` with ``source='human'`` as soon as it is
final, one committed transaction per vote, so a crash loses at most the item on screen.

Rules (the store is append-only, so a stored vote is never changed by the widgets):

* **Image mode**: clicking a level (or typing its digit) sets the *pending* answer for that
  question; clicking again before *Next* only changes the pending answer. *Next* (or the
  ``n`` key / Enter) stores one vote per question, only when every question has an answer.
  A question already stored for the item (e.g. a crash in the middle of *Next*) is shown
  locked with its stored value and is never voted twice.
* **Pair mode**: a click or a number key is final: the vote is stored and the next pair
  shown. The browser itself shows the pairs (the next ones are sent ahead), stamps every
  answer with the pair on screen when it was given and queues it for the kernel, so fast keys
  are never lost nor moved to another pair; the kernel stores each answer against its stamped
  pair and ignores, saying so, one for a pair already answered. Clicks that come within
  ``min_interval`` seconds of a new pair appearing are ignored visibly, so a double-click
  cannot vote on the next pair unseen.

**Resume**: an item is done when this annotator has a vote for every question of it
(:meth:`AnnotationStore.answered`); a new annotator object on the same store starts at the
first item not done, and the progress count includes earlier sessions.

**Keyboard**: digits ``1..K`` choose level ``digit-1``; in image mode they answer the
current question (marked ▶) and move to the next one; ``n`` or Enter stores the item; ``p``
goes back one question. ``display(annotator)`` (as ``make annotate`` does) adds a small page
script (``_PAGE_JS``): keys work anywhere on a voila page (in JupyterLab once the tool has
been clicked), each key is stamped with the item on screen and appended to a hidden log that
the kernel reads in order, so none is lost while the kernel is busy; image mode ignores,
visibly, a key stamped with an image no longer on screen. Shown as ``annotator.widget``
alone (no script), a focused *shortcut* text field stands in, since ipywidgets has no key
events: each character typed is read (the last character of the field's value) and the
field is cleared; fast typing can lose keys there.

**Serving**: ``make annotate`` (``ANNOTATOR=you``, ``TASK=image``) converts
``notebooks/annotate.py`` and serves it with voila; only the tool shows, not the notebook's
prose or code.
"""

from __future__ import annotations

import base64
import html
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import PAIR_SCALE, SCALES_000, Scale
from facebias.annotate.store import AnnotationStore
from facebias.validate import require_columns

__all__ = ["ImageAnnotator", "PairAnnotator", "load_png"]

SOURCE = "human"
NEXT_KEYS = ("n", "N", "\n", "\r")
BACK_KEYS = ("p", "P")
_IMG_PX = 300  # displayed size of a face (CSS px): large enough to judge age and makeup
_CSS = ("<style>.facebias-answer .mod-active, .facebias-answer .mod-active:disabled "
        "{background: #1976d2; color: white; opacity: 1}"  # chosen level stands out
        # pair mode: the browser shows one card (the page script picks it; without the script,
        # the kernel's current pair, named by the rule in PairAnnotator.current_css)
        ".facebias-pair .facebias-card {display: none; gap: 24px; padding: 4px 0}"
        ".facebias-pair.facebias-js .facebias-card.facebias-on {display: flex}"
        ".facebias-js .facebias-shortcut {display: none} .facebias-js:focus {outline: none}"
        ".facebias-card figure {margin: 0; text-align: center; font-weight: bold}"
        f".facebias-card img {{width: {_IMG_PX}px; height: {_IMG_PX}px; display: block;"
        " object-fit: contain; background: #eee}"
        ".facebias-pair .widget-html {margin-top: 0; margin-bottom: 0}"
        ".facebias-pair .facebias-answer {font-size: 1.05em; height: 40px}</style>")

#: The tools' page script (see ``_ipython_display_``): keys anywhere on the page and clicks
#: on the pair answers are stamped with the item on screen and appended to a hidden log field
#: (one JSON list: whatever the kernel has not read yet travels with the next update, so
#: nothing is dropped while the kernel is busy). Pair mode shows the next pair (sent ahead)
#: at once; image mode leaves the display to the kernel, which ignores, visibly, keys stamped
#: with an image no longer on screen.
_PAGE_JS = """
(function () {
  if (window.__facebiasKeys) { window.__facebiasKeys.sync(); return; }
  const sent = new Set();  // pair item#generation answered from this page
  const roots = () => [...document.querySelectorAll('.facebias-pair, .facebias-image-tool')];
  const cards = r => [...r.querySelectorAll('.facebias-card')]
    .sort((a, b) => Number(a.dataset.order) - Number(b.dataset.order));
  const tag = c => c.dataset.item + '#' + c.dataset.gen;
  function say(r, text) {  // shown for 4 s, however many answers follow
    const el = r.querySelector('.facebias-client-status');
    if (!el) { return; }
    el.textContent = text;
    clearTimeout(r.__sayTimer);
    r.__sayTimer = setTimeout(() => { el.textContent = ''; }, 4000);
  }
  function log(r, entry) {
    const input = r.querySelector('.facebias-keylog input');
    let entries = [];
    try { entries = JSON.parse(input.value || '[]'); } catch (e) { entries = []; }
    entries.push(entry);
    input.value = JSON.stringify(entries);
    input.dispatchEvent(new Event('input', {bubbles: true}));
  }
  function sync() {
    for (const r of roots()) {
      r.classList.add('facebias-js');
      if (!r.hasAttribute('tabindex')) { r.setAttribute('tabindex', '-1'); }  // a click focuses it
      const all = cards(r);
      const open = all.find(c => !sent.has(tag(c)));
      for (const c of all) { c.classList.toggle('facebias-on', c === open); }
      const id = open ? tag(open) : null;
      if (r.__shown !== id) { r.__shown = id; r.__shownAt = performance.now(); }
    }
  }
  function vote(r, value, how) {
    if (r.querySelector('.facebias-all-done')) { return; }
    const card = cards(r).find(c => c.classList.contains('facebias-on'));
    if (!card) {
      say(r, 'Ignored ' + how + ': the next pair is still loading; answer it when it appears.');
      return;
    }
    const k = Number(card.dataset.k);
    if (!(value >= 0 && value < k)) { say(r, 'Ignored ' + how + ': use 1..' + k + '.'); return; }
    if (how === 'click' && performance.now() - r.__shownAt < Number(card.dataset.minInterval)) {
      say(r, 'Ignored a click that came before this pair was on screen.');
      return;
    }
    log(r, [card.dataset.item, value, Number(card.dataset.gen)]);
    sent.add(tag(card));
    sync();
  }
  // voila: keys anywhere on the page; elsewhere (JupyterLab) only once the tool has the focus
  const app = document.body.dataset.voila === 'voila';
  document.addEventListener('keydown', e => {
    if (e.ctrlKey || e.altKey || e.metaKey) { return; }
    const t = e.target;
    const inside = t && t.closest ? t.closest('.facebias-pair, .facebias-image-tool') : null;
    if (t && t.matches && t.matches('input, textarea, select, [contenteditable]') && !inside) {
      return;  // typing elsewhere on the page
    }
    const r = app ? roots().find(x => x.offsetParent !== null) : inside;
    if (!r) { return; }
    const image = r.classList.contains('facebias-image-tool');
    const key = e.key === 'Enter' ? '\\n' : e.key;
    if (!(image ? /^[0-9nNpP\\n]$/ : /^[0-9]$/).test(key)) { return; }
    e.preventDefault();
    e.stopPropagation();
    if (e.repeat) { say(r, 'Ignored a held-down key: press it once.'); return; }
    if (!image) { vote(r, Number(key) - 1, 'key ' + key); return; }
    const marker = r.querySelector('.facebias-item-marker');
    if (!marker) { return; }  // all done
    log(r, [marker.dataset.item, key]);
  }, true);
  document.addEventListener('click', e => {
    const b = e.target.closest && e.target.closest('.facebias-pair .facebias-answer');
    if (!b) { return; }
    e.preventDefault();
    e.stopImmediatePropagation();
    const m = [...b.classList].map(c => /^facebias-level-([0-9]+)$/.exec(c)).find(Boolean);
    if (m) { vote(b.closest('.facebias-pair'), Number(m[1]), 'click'); }
  }, true);
  new MutationObserver(sync).observe(document.body, {childList: true, subtree: true});
  window.__facebiasKeys = {sync};
  sync();
})();
"""


def _title(question: str) -> str:
    """Display name of a question key: ``'hcic/skin_color'`` -> ``'skin color'``."""
    return question.rsplit("/", 1)[-1].replace("_", " ")


def load_png(path: str | os.PathLike) -> np.ndarray | None:
    """Read an image file for display (the annotators' default ``load_image``).

    Parameters
    ----------
    path : str or os.PathLike
        Image file (any format PIL reads).

    Returns
    -------
    numpy.ndarray or None
        (H, W, 3) RGB uint8 array; ``None`` if the file does not exist (a placeholder is
        shown instead).
    """
    from PIL import Image

    p = Path(path)
    if not p.is_file():
        return None
    with Image.open(p) as im:
        return np.asarray(im.convert("RGB"))


def _placeholder() -> np.ndarray:
    return np.full((64, 64, 3), 200, np.uint8)


def _png(load: Callable[[Any], np.ndarray | None], path: Any) -> tuple[bytes, bool]:
    """(PNG bytes to display, whether the image was found)."""
    from facebias.faces.images import png_bytes

    img = load(path)
    if img is None:
        return png_bytes(_placeholder()), False
    return png_bytes(np.asarray(img, dtype=np.uint8)), True


class _Annotator:
    """Shared state: items in order, the questions, done set, progress, header, shortcut field."""

    def __init__(self, store: AnnotationStore, items: pd.DataFrame, annotator: str,
                 questions: Mapping[str, Scale], path_columns: tuple[str, ...],
                 load_image: Callable[[Any], np.ndarray | None] | None):
        if not isinstance(annotator, str) or not annotator.strip():
            raise ValueError(f"annotator must be a non-empty string, got {annotator!r}")
        if not isinstance(items, pd.DataFrame):
            raise ValueError(f"items must be a DataFrame, got {type(items).__name__}")
        require_columns(items, ["item_id", *path_columns], "items")
        ids = [str(x) for x in items["item_id"]]
        dup = pd.Index(ids)[pd.Index(ids).duplicated()].unique().tolist()
        if dup:
            raise ValueError(f"items: duplicate item_id(s) {dup[:5]}")
        if not questions:
            raise ValueError("no questions (scales) given")
        for q, sc in questions.items():
            if not isinstance(sc, Scale):
                raise ValueError(f"question {q!r}: scale must be a Scale, got {type(sc).__name__}")
        registered = store.scales()
        for q, sc in questions.items():
            if q in registered and registered[q] != sc:
                raise ValueError(
                    f"question {q!r} is registered in {store.path} with scale {registered[q].name!r} "
                    f"{list(registered[q].levels)}, not {list(sc.levels)}: use another store file")
        known = set(store.items()["item_id"])
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ValueError(f"{len(unknown)} item(s) not registered in the store, e.g. "
                             f"{unknown[:3]}: register them first with store.register_items(...)")
        self.store = store
        self.annotator = annotator
        self.questions: dict[str, Scale] = dict(questions)
        self.item_ids: list[str] = ids
        self.paths = {i: tuple(r) for i, r in zip(ids, items[list(path_columns)].itertuples(index=False),
                                                   strict=True)}
        self.load_image = load_image or load_png
        mine = store.votes()
        mine = mine[(mine["annotator"] == annotator) & mine["item_id"].isin(set(ids))]
        # (item, question) -> stored value (the last one if there are several)
        self._saved: dict[tuple[str, str], int] = {
            (i, q): int(v) for i, q, v in zip(mine["item_id"], mine["question"], mine["value"],
                                               strict=True)}
        answered = {q: store.answered(annotator, q) for q in self.questions}
        self._done: set[str] = {i for i in ids if all(i in answered[q] for q in self.questions)}
        self.index = self._first_open()
        self._build_common()

    # ------------------------------------------------------------------ state
    def _first_open(self) -> int:
        """Index of the first item not done (len(items) when all are done)."""
        return next((k for k, i in enumerate(self.item_ids) if i not in self._done),
                    len(self.item_ids))

    @property
    def done(self) -> bool:
        """True when this annotator has answered every question of every item."""
        return len(self._done) == len(self.item_ids)

    @property
    def n_done(self) -> int:
        """Items done by this annotator (earlier sessions included)."""
        return len(self._done)

    @property
    def current_item(self) -> str | None:
        """item_id on screen, ``None`` when all are done."""
        return None if self.done else self.item_ids[self.index]

    def _store_vote(self, item: str, question: str, value: int) -> str:
        vid = self.store.add_vote(self.annotator, item, question, int(value),
                                  scale=self.questions[question], source=SOURCE)
        self._saved[(item, question)] = int(value)
        return vid

    def _mark_done(self, item: str) -> None:
        self._done.add(item)
        self.index = self._first_open()

    # ------------------------------------------------------------------ widgets
    def _build_common(self) -> None:
        import ipywidgets as W

        self._W = W
        self.header = W.HTML()
        self.css = W.HTML(_CSS)
        self.progress = W.IntProgress(min=0, max=max(len(self.item_ids), 1), value=0,
                                      layout=W.Layout(width="300px"))
        self.progress_label = W.Label()
        self.status = W.HTML()
        self.shortcut = W.Text(value="", placeholder="click here, then type keys",
                               description="shortcut", continuous_update=True,
                               layout=W.Layout(width="320px"))
        self.shortcut.add_class("facebias-shortcut")
        self.shortcut.observe(self._on_shortcut, names="value")
        self.shortcut.on_msg(self._on_shortcut_msg)  # Enter arrives as a 'submit' event
        # the page script's channel (see _PAGE_JS): a JSON list the page only appends to
        self.client_status = W.HTML()  # written by the page script only
        self.client_status.add_class("facebias-client-status")
        self.answer_log = W.Text(value="", continuous_update=True, layout=W.Layout(display="none"))
        self.answer_log.add_class("facebias-keylog")
        self.answer_log.observe(self._on_answer_log, names="value")
        self._log_seen = 0  # entries of the page's log handled so far

    def _on_answer_log(self, change: dict) -> None:
        """Handle the new entries of the page's log, each stamped with the item on screen."""
        try:
            entries = json.loads(change["new"] or "[]")
            if not isinstance(entries, list):
                raise ValueError("not a list")
        except ValueError:
            self._say("ignored a malformed answer log from the page", "error")
            return
        fresh, self._log_seen = entries[self._log_seen:], len(entries)
        for entry in fresh:
            if not isinstance(entry, list) or len(entry) < 2:
                self._say(f"ignored a malformed entry from the page: {entry!r}", "error")
                continue
            self._from_page(str(entry[0]), entry[1])

    def _from_page(self, item: str, what: Any) -> None:
        """One key or answer from the page script, for ``item`` (the one on screen then)."""
        raise NotImplementedError

    def _on_shortcut(self, change: dict) -> None:
        text = change["new"]
        if not text:
            return
        key = text[-1]  # fast typing may deliver several characters before the clear arrives
        self.shortcut.value = ""
        self.key(key)

    def _on_shortcut_msg(self, _widget: Any, content: dict, _buffers: Any = None) -> None:
        if content.get("event") == "submit":
            self.key("\n")

    def key(self, key: str) -> None:
        """Handle one keyboard shortcut (as typed into the shortcut field)."""
        raise NotImplementedError

    def _say(self, message: str, kind: str = "info") -> None:
        color = {"info": "#333", "warn": "#a15c00", "error": "#b00020", "ok": "#1b7f2a"}[kind]
        self.status.value = f'<span style="color:{color}">{html.escape(message)}</span>'

    def _refresh_common(self) -> None:
        n = len(self.item_ids)
        self.progress.value = self.n_done
        self.progress_label.value = f"{self.n_done} / {n} done"
        who = f"Annotator <b>{html.escape(self.annotator)}</b>"
        if self.done:
            self.header.value = f"{who} · <b>all done</b>"
            self.status.value = (
                '<div class="facebias-all-done" style="font-size:1.4em;color:#1b7f2a;padding:1em 0">'
                f"All done: {n} of {n} items annotated by {html.escape(self.annotator)}. "
                "Thank you! Your answers are saved; you can close this page.</div>")
            self.shortcut.disabled = True
            self.shortcut.layout.display = "none"
            if hasattr(self, "help"):
                self.help.layout.display = "none"
        else:  # no item ids: the annotator sees faces, answers and progress only
            self.header.value = who

    def _ipython_display_(self) -> None:
        """``display(annotator)``: :attr:`widget` and the page script that takes keys anywhere
        on the page, stamps each with the item on screen and queues it for the kernel."""
        from IPython.display import HTML, display

        display(self.widget)
        display(HTML(f"<script>{_PAGE_JS}</script>"))


class ImageAnnotator(_Annotator):
    """One image at a time, one row of level buttons per question; *Next* stores the answers.

    Display ``annotator.widget`` in a notebook. The methods below drive the same state
    without a display (tests, scripts).

    Parameters
    ----------
    store : AnnotationStore
        Where votes go (``source='human'``).
    items : pandas.DataFrame
        Columns ``item_id`` (registered in ``store``, unique) and ``path``.
    annotator : str
        Non-empty annotator id; earlier votes of this annotator in ``store`` are resumed.
    scales : mapping of str to Scale, optional
        Question -> scale; default :data:`~facebias.annotate.SCALES_000`.
    load_image : callable, optional
        ``load_image(path)`` -> RGB uint8 array or ``None``; default :func:`load_png`.

    Raises
    ------
    ValueError
        For an empty annotator, a missing column, duplicate or unregistered item ids, no
        questions, a non-Scale scale, or a question registered in ``store`` with another
        scale.

    Examples
    --------
    Answers are 0-based level indices, pending until :meth:`submit` stores them:

    >>> import tempfile
    >>> from facebias.annotate.scales import Scale
    >>> smile = Scale("smile", ("Frown", "Neutral", "Smile"))
    >>> with tempfile.TemporaryDirectory() as d, AnnotationStore(f"{d}/s.sqlite") as s:
    ...     _ = s.register_items(["i1"])
    ...     ui = ImageAnnotator(s, pd.DataFrame({"item_id": ["i1"], "path": ["i1.png"]}), "ann1",
    ...                         scales={"smile": smile}, load_image=lambda path: None)
    ...     ui.answer("smile", 2)
    ...     (s.n_votes, len(ui.submit()), s.n_votes, ui.done)
    (0, 1, 1, True)
    """

    def __init__(self, store: AnnotationStore, items: pd.DataFrame, annotator: str,
                 scales: Mapping[str, Scale] | None = None,
                 load_image: Callable[[Any], np.ndarray | None] | None = None):
        super().__init__(store, items, annotator, SCALES_000 if scales is None else scales,
                         ("path",), load_image)
        self.pending: dict[str, int | None] = {}
        self.q_index = 0
        self._syncing = False
        self._build()
        self._show()

    # ------------------------------------------------------------------ logic
    @property
    def question_names(self) -> list[str]:
        """Questions in display order."""
        return list(self.questions)

    @property
    def current_question(self) -> str:
        """The question the digit keys answer (marked ▶)."""
        return self.question_names[self.q_index]

    def _locked(self, question: str) -> bool:
        item = self.current_item
        return item is not None and (item, question) in self._saved

    def answer(self, question: str, value: int) -> None:
        """Set the pending answer for ``question`` on the current item.

        Replaces an earlier pending answer; nothing is stored until :meth:`submit`.

        Parameters
        ----------
        question : str
            One of :attr:`question_names`.
        value : int
            0-based level index, 0..K-1.

        Raises
        ------
        ValueError
            If all items are done, the question is unknown, the value is not an integer in
            0..K-1, or the question is already stored for this item (locked).
        """
        if self.done:
            raise ValueError("all items are done")
        if question not in self.questions:
            raise ValueError(f"unknown question {question!r}; questions are {self.question_names}")
        k = self.questions[question].k
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < k:
            raise ValueError(f"question {question!r}: value must be an integer in 0..{k - 1}, got {value!r}")
        if self._locked(question):
            raise ValueError(f"question {question!r} of item {self.current_item!r} is already stored")
        self.pending[question] = int(value)
        qi = self.question_names.index(question)
        self.q_index = min(qi + 1, len(self.questions) - 1)
        self._refresh()

    def missing(self) -> list[str]:
        """Questions of the current item with neither a pending nor a stored answer.

        Returns
        -------
        list of str
            In display order; empty when :meth:`submit` may store the item.
        """
        return [q for q in self.question_names if self.pending.get(q) is None and not self._locked(q)]

    def submit(self) -> list[str]:
        """Store the current item's answers (one vote per question not stored yet) and move
        to the next open item.

        Returns
        -------
        list of str
            The new vote ids.

        Raises
        ------
        ValueError
            If all items are done or a question has no answer.
        """
        if self.done:
            raise ValueError("all items are done")
        missing = self.missing()
        if missing:
            raise ValueError(f"answer every question first; missing: {missing}")
        item = self.current_item
        ids = []
        for q in self.question_names:
            if not self._locked(q):
                ids.append(self._store_vote(item, q, self.pending[q]))
        self._mark_done(item)
        self._show()
        return ids

    def key(self, key: str) -> None:
        """Handle one keyboard shortcut: digits 1..K answer the current question (level
        ``digit - 1``), ``n``/Enter submit, ``p`` goes back one question.

        Parameters
        ----------
        key : str
            One character, as typed into the shortcut field; others show a hint.
        """
        if self.done:
            return
        if key.isdigit():
            q = self.current_question
            k = self.questions[q].k
            level = int(key) - 1
            if not 0 <= level < k:
                self._say(f"key {key}: {_title(q)} has levels 1..{k}", "warn")
            elif self._locked(q):
                self._say(f"{_title(q)} is already saved for this item", "warn")
                self.q_index = min(self.q_index + 1, len(self.questions) - 1)
                self._refresh()
            else:
                self.answer(q, level)
        elif key in NEXT_KEYS:
            self._submit_ui()
        elif key in BACK_KEYS:
            self.q_index = max(self.q_index - 1, 0)
            self._refresh()
        else:
            self._say(f"unknown key {key!r}: use 1..9, n (next) or p (previous question)", "warn")

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        W = self._W
        self.image = W.Image(format="png", width=_IMG_PX, height=_IMG_PX)
        self.image.add_class("facebias-image")
        self.image_caption = W.HTML()
        self.labels: dict[str, Any] = {}
        self.toggles: dict[str, Any] = {}
        rows = []
        for q, sc in self.questions.items():
            lab = W.HTML(layout=W.Layout(width="130px"))
            tb = W.ToggleButtons(options=[(f"{i + 1} {name}", i) for i, name in enumerate(sc.levels)],
                                 value=None, style={"button_width": "auto"})
            tb.add_class("facebias-answer")
            tb.observe(lambda ch, q=q: self._on_toggle(q, ch), names="value")
            self.labels[q], self.toggles[q] = lab, tb
            rows.append(W.HBox([lab, tb]))
        self.next_button = W.Button(description="Next (n / Enter)", button_style="primary",
                                    icon="check")
        self.next_button.add_class("facebias-next")
        self.next_button.on_click(lambda _b: self._submit_ui())
        kmax = max(sc.k for sc in self.questions.values())
        self.help = W.HTML(
            "<b>Rate the face on each question</b>: click a level, or press "
            f"<b>1</b>..<b>{kmax}</b> to answer the question marked ▶ and move to the next; "
            "<b>n</b> or <b>Enter</b> saves this image and shows the next; <b>p</b> goes back "
            "one question. Clicking a level again before saving changes your answer; saved "
            "answers cannot be changed.")
        self.item_marker = W.HTML()  # the image on screen, for the page script's key stamps
        self.question_box = W.VBox(rows)
        self.face_box = W.VBox([self.image, self.image_caption])
        self.widget = W.VBox([
            self.css,
            W.HBox([self.header, self.progress, self.progress_label],
                   layout=W.Layout(align_items="center", grid_gap="12px")),
            self.help,
            W.HBox([self.face_box, self.question_box]),
            W.HBox([self.next_button, self.shortcut]),
            self.client_status,
            self.status,
            self.item_marker,
            self.answer_log,
        ])
        self.widget.add_class("facebias-image-tool")

    def _from_page(self, item: str, what: Any) -> None:
        """A key the page stamped with ``item``: handled if that image is still the current
        one, else ignored with a message (it was typed for an image no longer on screen)."""
        if not isinstance(what, str) or len(what) != 1:
            self._say(f"ignored a malformed key from the page: {what!r}", "error")
            return
        if self.done:
            return
        if item != self.current_item:
            self._say(f"Ignored key {what!r}: it was typed for the previous image.", "warn")
            return
        self.key(what)

    def _on_toggle(self, question: str, change: dict) -> None:
        if self._syncing or change["new"] is None or self.done:
            return
        try:
            self.answer(question, change["new"])
        except ValueError as e:
            self._say(str(e), "warn")
            self._refresh()

    def _submit_ui(self) -> None:
        missing = self.missing()
        if missing:
            self.q_index = self.question_names.index(missing[0])
            self._refresh()
            self._say(f"Answer every question first (missing: {', '.join(map(_title, missing))})",
                      "warn")
            return
        item = self.current_item
        try:
            self.submit()
        except Exception as e:  # shown to the annotator, item stays on screen
            self._say(f"could not save {item}: {e}", "error")
            self._refresh()
            return
        if not self.done:
            self._say(f"saved {item}", "ok")

    def _show(self) -> None:
        """Put the current item on screen (fresh pending answers)."""
        self.pending = {q: None for q in self.questions}
        if self.done:
            self.item_marker.value = ""
            self._refresh()
            return
        item = self.current_item
        (path,) = self.paths[item]
        png, found = _png(self.load_image, path)
        self.image.value = png
        self.image_caption.value = "" if found else f"<b>image not found:</b> {html.escape(str(path))}"
        open_q = [q for q in self.question_names if not self._locked(q)]
        self.q_index = self.question_names.index(open_q[0]) if open_q else 0
        self.item_marker.value = (f'<span class="facebias-item-marker" '
                                  f'data-item="{html.escape(item, quote=True)}"></span>')
        self._refresh()

    def _refresh(self) -> None:
        """Sync the widgets with the state."""
        self._refresh_common()
        done = self.done
        self.face_box.layout.display = "none" if done else None
        self.question_box.layout.display = "none" if done else None
        self.next_button.disabled = done
        self._syncing = True
        try:
            for i, q in enumerate(self.question_names):
                tb, locked = self.toggles[q], self._locked(q)
                stored = self._saved.get((self.current_item, q)) if locked else None
                tb.value = stored if locked else (None if done else self.pending.get(q))
                tb.disabled = done or locked
                mark = "▶ " if (i == self.q_index and not done) else ""
                extra = " <small>(saved)</small>" if locked else ""
                self.labels[q].value = f"<b>{mark}{html.escape(_title(q))}</b>{extra}"
        finally:
            self._syncing = False


class PairAnnotator(_Annotator):
    """Two faces side by side and the K identity options; a click stores the vote at once.

    Display ``annotator.widget`` in a notebook; :meth:`answer` drives the same state
    without a display.

    Parameters
    ----------
    store : AnnotationStore
        Where votes go (``source='human'``).
    pairs : pandas.DataFrame
        Columns ``item_id`` (registered in ``store``, unique), ``path_a``, ``path_b``.
    annotator : str
        Non-empty annotator id; earlier votes of this annotator in ``store`` are resumed.
    scale : Scale, default PAIR_SCALE
        The identity scale, 0 = "Likely same" .. 4 = "Likely different".
    question : str, default "identity"
        Question name in the store.
    load_image : callable, optional
        ``load_image(path)`` -> RGB uint8 array or ``None``; default :func:`load_png`.
    min_interval : float, default 0.3
        Seconds after a pair appears during which clicks are ignored (double-click guard);
        without the page script, keys too.
    lookahead : int, default 8
        Pairs sent to the browser ahead of time, so that it shows the next pair at once
        after an answer, before the kernel has stored it.

    Raises
    ------
    ValueError
        As :class:`ImageAnnotator`.

    Examples
    --------
    >>> import tempfile
    >>> pairs = pd.DataFrame({"item_id": ["p1", "p2"], "path_a": "a.png", "path_b": "b.png"})
    >>> with tempfile.TemporaryDirectory() as d, AnnotationStore(f"{d}/s.sqlite") as s:
    ...     _ = s.register_items(["p1", "p2"], image_a="a.png", image_b="b.png")
    ...     ui = PairAnnotator(s, pairs, "ann1", load_image=lambda path: None)
    ...     _ = ui.answer(4)  # level 4 = "Likely different", stored at once
    ...     (ui.current_item, s.votes()["value"].tolist())
    ('p2', [4])

    Display it with ``display(ui)`` (``make annotate`` does): the page script then takes
    number keys anywhere on the page.
    """

    def __init__(self, store: AnnotationStore, pairs: pd.DataFrame, annotator: str,
                 scale: Scale = PAIR_SCALE, question: str = "identity",
                 load_image: Callable[[Any], np.ndarray | None] | None = None,
                 min_interval: float = 0.3, lookahead: int = 8):
        super().__init__(store, pairs, annotator, {question: scale}, ("path_a", "path_b"),
                         load_image)
        if isinstance(lookahead, bool) or not isinstance(lookahead, int) or lookahead < 1:
            raise ValueError(f"lookahead must be a positive integer, got {lookahead!r}")
        self.question = question
        self.scale = scale
        self.min_interval = float(min_interval)
        self.lookahead = lookahead
        self._shown_at = -np.inf
        self._order = {i: k for k, i in enumerate(self.item_ids)}
        self._gen: dict[str, int] = {}  # item -> times the store refused it (the browser retries)
        self._cards: dict[str, str] = {}  # item -> card HTML (images encoded once)
        self._build()
        self._show()

    def answer(self, value: int, item: str | None = None) -> str:
        """Store ``value`` for a pair (default: the current one) and show the next open pair.

        Parameters
        ----------
        value : int
            0-based level index on ``scale`` (0 = "Likely same" on the default scale).
        item : str, optional
            The pair answered (as the browser stamps each answer); default
            :attr:`current_item`.

        Returns
        -------
        str
            The vote id.

        Raises
        ------
        ValueError
            If all pairs are done, ``value`` is not an integer in 0..K-1, or ``item`` is not
            in this list or already answered by this annotator.
        """
        if self.done:
            raise ValueError("all pairs are done")
        k = self.scale.k
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < k:
            raise ValueError(f"value must be an integer in 0..{k - 1}, got {value!r}")
        if item is None:
            item = self.current_item
        elif item not in self._order:
            raise ValueError(f"item {item!r} is not in this annotation list")
        elif item in self._done:
            raise ValueError(f"item {item!r} is already answered by {self.annotator}")
        vid = self._store_vote(item, self.question, int(value))
        self._mark_done(item)
        self._show()
        return vid

    def key(self, key: str) -> None:
        """Handle one keyboard shortcut: digits 1..K answer the current pair (level
        ``digit - 1``); other keys are ignored with a hint.

        Parameters
        ----------
        key : str
            One character, as typed into the shortcut field.
        """
        if self.done:
            return
        if key.isdigit() and 1 <= int(key) <= self.scale.k:
            self._vote_ui(int(key) - 1)
        else:
            self._say(f"key {key!r}: use 1..{self.scale.k}", "warn")

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        W = self._W
        k = self.scale.k
        self._uid = f"facebias-pair-{id(self):x}"
        self.buttons = []
        for i, name in enumerate(self.scale.levels):
            b = W.Button(description=f"{i + 1} · {name}", layout=W.Layout(width="auto"),
                         tooltip=f"key {i + 1}")
            b.add_class("facebias-answer")
            b.add_class(f"facebias-level-{i}")  # the page script reads the level from here
            b.on_click(lambda _b, i=i: self._vote_ui(i))
            self.buttons.append(b)
        self.help = W.HTML(
            f"<b>Are A and B the same person?</b> Press a number key <b>1</b>..<b>{k}</b> or "
            "click an answer. Each answer is saved at once and the next pair appears; saved "
            "answers cannot be changed.")
        # the current pair and the next ones, one card per slot; an answered pair's slot gets
        # the next pair, the others stay untouched (no reload of the pair on screen)
        self.slots = [W.HTML() for _ in range(self.lookahead)]
        self._slot_items: list[str | None] = [None] * self.lookahead
        for sl in self.slots:
            sl.add_class("facebias-slot")
        self.current_css = W.HTML()  # without the page script: show the kernel's current pair
        self.face_box = W.VBox([W.VBox(self.slots), W.HBox(self.buttons)])
        self.widget = W.VBox([
            self.css,
            self.current_css,
            W.HBox([self.header, self.progress, self.progress_label],
                   layout=W.Layout(align_items="center", grid_gap="12px")),
            self.help,
            self.face_box,
            self.client_status,
            self.status,
            self.shortcut,
            self.answer_log,
        ])
        self.widget.add_class("facebias-pair")
        self.widget.add_class(self._uid)

    def _card(self, item: str) -> str:
        """HTML of one pair: both faces inline (PNG data URIs), tagged for the page script."""
        if item not in self._cards:
            figs = []
            for name, path in zip("AB", self.paths[item], strict=True):
                png, found = _png(self.load_image, path)
                src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
                lost = "" if found else (f'<figcaption style="color:#b00020">image not found: '
                                         f"{html.escape(str(path))}</figcaption>")
                figs.append(f'<figure>{name}<img src="{src}" alt="face {name}" '
                            f'width="{_IMG_PX}" height="{_IMG_PX}">{lost}</figure>')
            self._cards[item] = "".join(figs)
        return (f'<div class="facebias-card" data-item="{html.escape(item, quote=True)}" '
                f'data-order="{self._order[item]}" data-gen="{self._gen.get(item, 0)}" '
                f'data-k="{self.scale.k}" data-min-interval="{round(self.min_interval * 1000)}">'
                f"{self._cards[item]}</div>")

    def _fill_slots(self) -> None:
        """Put the next ``lookahead`` open pairs into the slots, touching only changed slots."""
        want = [i for i in self.item_ids if i not in self._done][:self.lookahead]
        keep = set(want)
        for j, it in enumerate(self._slot_items):
            if it is not None and it not in keep:
                self._slot_items[j] = None
                self.slots[j].value = ""
        free = [j for j, it in enumerate(self._slot_items) if it is None]
        have = set(self._slot_items)
        for it in want:
            if it not in have:
                j = free.pop(0)
                self._slot_items[j] = it
                self.slots[j].value = self._card(it)

    def _from_page(self, item: str, what: Any) -> None:
        """Store an answer (level ``what``) the page stamped with ``item``, or say why not."""
        if isinstance(what, bool) or not isinstance(what, int):
            self._say(f"ignored a malformed answer from the page: {what!r}", "error")
            return
        value = what
        if item not in self._order:
            self._say(f"Ignored an answer for {item!r}: not in this list.", "warn")
        elif item in self._done:
            self._say("Ignored an answer for a pair that was already answered.", "warn")
        elif not 0 <= value < self.scale.k:
            self._say(f"Ignored an answer: use 1..{self.scale.k}.", "warn")
        else:
            try:
                self.answer(value, item=item)
            except Exception as e:  # the store refused: the browser shows the pair again
                self._gen[item] = self._gen.get(item, 0) + 1
                if item in self._slot_items:
                    self.slots[self._slot_items.index(item)].value = self._card(item)
                self._say(f"Could not save your answer ({e}); that pair is shown again.", "error")
                return
            if not self.done:
                self._say(f"Saved: {self.scale.levels[value]}.", "ok")

    def _vote_ui(self, value: int) -> None:
        """A click or shortcut key that reached the kernel (no page script): the current pair."""
        if self.done:
            return
        if time.monotonic() - self._shown_at < self.min_interval:
            # a double-click's second half: never vote on a pair not yet seen
            self._say("ignored: that answer came before the new pair was on screen", "warn")
            return
        try:
            self.answer(value)
        except Exception as e:  # shown to the annotator, pair stays on screen
            self._say(f"could not save your answer: {e}", "error")
            return
        if not self.done:
            self._say(f"Saved: {self.scale.levels[value]}.", "ok")

    def _show(self) -> None:
        self.face_box.layout.display = "none" if self.done else None
        for b in self.buttons:
            b.disabled = self.done
        self._fill_slots()
        if self.done:
            self.current_css.value = ""
            self.help.layout.display = "none"
        else:
            self.current_css.value = (
                f"<style>.{self._uid}:not(.facebias-js) .facebias-card"
                f'[data-order="{self._order[self.current_item]}"] {{display: flex}}</style>')
            self._shown_at = time.monotonic()
        self._refresh_common()
