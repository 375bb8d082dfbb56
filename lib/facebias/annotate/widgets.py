"""ipywidgets annotation front ends for real annotators (JupyterLab or voila).

* :class:`ImageAnnotator`: one image at a time, rated on several K-point scales
  (default :data:`~facebias.annotate.SCALES_HCIC`; pass ``SCALES_TRANSECTS`` for the 004 study).
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

Modules (every public name is importable from this one): :mod:`facebias.annotate.widgets_base`
(the page's CSS and script, :func:`load_png`, the state both tools share),
:mod:`facebias.annotate.widgets_image` (:class:`ImageAnnotator`) and
:mod:`facebias.annotate.widgets_pair` (:class:`PairAnnotator`).
"""

from __future__ import annotations

from facebias.annotate.widgets_base import BACK_KEYS, NEXT_KEYS, SOURCE, load_png  # noqa: F401
from facebias.annotate.widgets_image import ImageAnnotator
from facebias.annotate.widgets_pair import PairAnnotator

__all__ = ["ImageAnnotator", "PairAnnotator", "load_png"]
