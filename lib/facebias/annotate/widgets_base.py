"""Shared parts of the annotation widgets (:mod:`facebias.annotate.widgets`): the page's CSS
and script, image loading, and the state both tools share (items in order, questions, what
this annotator has done, progress, header, the shortcut field and the page script's answer
log).
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import Scale
from facebias.annotate.store import AnnotationStore
from facebias.validate import require_columns

__all__ = ["load_png", "SOURCE", "NEXT_KEYS", "BACK_KEYS"]

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
