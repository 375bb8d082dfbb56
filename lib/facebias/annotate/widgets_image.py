"""The image-question annotation widget (:mod:`facebias.annotate.widgets`): one image at a
time, rated on several K-point scales; *Next* stores one vote per question.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.scales import SCALES_HCIC, Scale
from facebias.annotate.store import AnnotationStore
from facebias.annotate.widgets_base import _IMG_PX, BACK_KEYS, NEXT_KEYS, _Annotator, _png, _title

__all__ = ["ImageAnnotator"]


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
        Question -> scale; default :data:`~facebias.annotate.SCALES_HCIC`.
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
        super().__init__(store, items, annotator, SCALES_HCIC if scales is None else scales,
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
