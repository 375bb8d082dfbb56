"""The pair annotation widget (:mod:`facebias.annotate.widgets`): two faces side by side, the
000 identity question; a click or a number key stores the vote at once.
"""

from __future__ import annotations

import base64
import html
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import PAIR_SCALE, Scale
from facebias.annotate.store import AnnotationStore
from facebias.annotate.widgets_base import _IMG_PX, _Annotator, _png

__all__ = ["PairAnnotator"]


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
