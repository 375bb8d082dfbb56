"""A gender classifier with *planted* causes of error (paper 004's known truth).

Its error probability is a logistic function of perceived-attribute scores in [0, 1] (the
004 scale keys: ``gender``, ``hair_length``, ``facial_hair``, ``makeup``, ``age``, ...),
with effects chosen here; the transect analysis must find exactly these causes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["DEFAULT_EFFECTS", "simulated_gender_classifier"]

#: Planted effects of :func:`simulated_gender_classifier` (log-odds of an error per unit of
#: score): short hair, female, no beard, no makeup and older age raise the error; skin none.
DEFAULT_EFFECTS: dict[str, float] = {"hair_length": -3.0, "gender": -2.0, "facial_hair": -1.5,
                                     "makeup": -1.0, "age": 2.0}


def simulated_gender_classifier(frame: pd.DataFrame, effects: Mapping[str, float] | None = None,
                                base: float = -2.0, seed: int = 0) -> np.ndarray:
    """A gender classifier with *planted* causes of error; returns P(male) per row.

    Error probability ``sigmoid(base + sum_k effects[k] * (frame[k] - 0.5))`` over score
    columns ``k`` (default :data:`DEFAULT_EFFECTS`: short hair, female, no beard, no makeup
    and older age raise the error; skin tone has no effect). The true class is ``gender >
    0.5``; a confidence ``c ~ U(0.5, 1)`` is drawn and ``P(male) = c`` on the correct side
    or ``1 - c`` on the wrong one, so at threshold 0.5 the errors are exactly the planted
    Bernoulli draws. Deterministic given ``seed``.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per image: ``gender`` and every column of ``effects`` (scores in [0, 1]).
    effects : mapping of str to float, optional
        Score column -> log-odds of an error per unit of score; default
        :data:`DEFAULT_EFFECTS`.
    base : float, default -2.0
        Log-odds of an error at every score 0.5.
    seed : int, default 0
        Seeds the errors and confidences.

    Returns
    -------
    numpy.ndarray
        (n,) P(male) in [0, 1]; the classifier says male iff P(male) > 0.5.

    Raises
    ------
    ValueError
        For a missing score column.

    Examples
    --------
    >>> frame = pd.DataFrame({"gender": [0.9, 0.1, 0.8, 0.2]})
    >>> p = simulated_gender_classifier(frame, effects={}, base=-50.0)  # errors switched off
    >>> (p > 0.5).tolist()
    [True, False, True, False]
    """
    effects = dict(DEFAULT_EFFECTS if effects is None else effects)
    require_columns(frame, ["gender", *effects], "simulated_gender_classifier")
    logit = np.full(len(frame), float(base))
    for k, beta in effects.items():
        logit += float(beta) * (frame[k].to_numpy(dtype=float) - 0.5)
    rng = np.random.default_rng([int(seed), 4004])
    wrong = rng.random(len(frame)) < 1.0 / (1.0 + np.exp(-logit))
    conf = rng.uniform(0.5, 1.0, len(frame))
    male = frame["gender"].to_numpy(dtype=float) > 0.5
    says_male = male != wrong
    return np.where(says_male, conf, 1.0 - conf)
