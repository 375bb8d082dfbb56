"""A gender classifier with *planted* causes of error (paper 004's known truth).

Its error probability is a logistic function of attribute values in [0, 1], with effects
chosen here. In the study the values are the generator's **truth** (the intended latent
attributes, ``true_*`` columns; :data:`TRUTH_COLUMNS`), not the annotators' perceived scores
that the transect regression uses as covariates, so recovering the causes from perceived
attributes is a real test of the method rather than a read-back of its own inputs. Optional
pairwise ``interactions`` plant a cause the 004 main-effects regression cannot express (the
mis-specified scenario).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from facebias.validate import require_columns

__all__ = ["DEFAULT_EFFECTS", "TRUTH_COLUMNS", "simulated_gender_classifier"]

#: Planted effects of :func:`simulated_gender_classifier` (log-odds of an error per unit of
#: score): short hair, female, no beard, no makeup and older age raise the error; skin none.
DEFAULT_EFFECTS: dict[str, float] = {"hair_length": -3.0, "gender": -2.0, "facial_hair": -1.5,
                                     "makeup": -1.0, "age": 2.0}
#: Effect key (004 score name) -> the generator-truth column that carries it (``columns="truth"``).
TRUTH_COLUMNS: dict[str, str] = {"gender": "true_gender", "skin_color": "true_skin_tone",
                                 "hair_length": "true_hair_length", "age": "true_age",
                                 "facial_hair": "true_facial_hair", "makeup": "true_makeup",
                                 "smile": "true_smile"}


def simulated_gender_classifier(frame: pd.DataFrame, effects: Mapping[str, float] | None = None,
                                base: float = -2.0, seed: int = 0,
                                columns: Mapping[str, str] | str | None = None,
                                interactions: Mapping[tuple[str, str], float] | None = None) -> np.ndarray:
    """A gender classifier with *planted* causes of error; returns P(male) per row.

    Error probability ``sigmoid(base + sum_k effects[k] * (x_k - 0.5) + sum_(a, b)
    interactions[a, b] * 4 (x_a - 0.5)(x_b - 0.5))``, where ``x_k`` is the column that
    ``columns`` maps key ``k`` to (default :data:`DEFAULT_EFFECTS`: short hair, female, no beard,
    no makeup and older age raise the error; skin tone has no effect). An interaction term is
    ``+beta`` where both attributes sit at the same end (0, 0 or 1, 1) and ``-beta`` at
    opposite ends: with no main effects it is a pure interaction, invisible to a main-effects
    regression on a balanced design. The true class is ``x_gender > 0.5``; a confidence
    ``c ~ U(0.5, 1)`` is drawn and ``P(male) = c`` on the correct side or ``1 - c`` on the
    wrong one, so at threshold 0.5 the answers differ from the true class exactly by the
    planted Bernoulli draws. Deterministic given ``seed``.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per image with the columns read (values in [0, 1]).
    effects : mapping of str to float, optional
        Key -> log-odds of an error per unit of the attribute; default :data:`DEFAULT_EFFECTS`.
    base : float, default -2.0
        Log-odds of an error at every value 0.5.
    seed : int, default 0
        Seeds the errors and confidences.
    columns : mapping of str to str, or "truth", optional
        Key -> column of ``frame`` (``gender`` included: the true class); ``"truth"``:
        :data:`TRUTH_COLUMNS` (the generator's intended attributes, the study's choice);
        None or a key absent from the mapping: the column named like the key.
    interactions : mapping of (str, str) to float, optional
        ``(key_a, key_b)`` -> ``beta`` of the interaction term above.

    Returns
    -------
    numpy.ndarray
        (n,) P(male) in [0, 1]; the classifier says male iff P(male) > 0.5.

    Raises
    ------
    ValueError
        For a missing column, or an unknown ``columns`` string.

    Examples
    --------
    >>> frame = pd.DataFrame({"gender": [0.9, 0.1, 0.8, 0.2]})
    >>> p = simulated_gender_classifier(frame, effects={}, base=-50.0)  # errors switched off
    >>> (p > 0.5).tolist()
    [True, False, True, False]
    >>> truth = pd.DataFrame({"true_gender": [0.9, 0.1], "gender": [0.1, 0.9]})
    >>> (simulated_gender_classifier(truth, {}, base=-50.0, columns="truth") > 0.5).tolist()
    [True, False]
    """
    effects = dict(DEFAULT_EFFECTS if effects is None else effects)
    interactions = {tuple(k): float(v) for k, v in (interactions or {}).items()}
    if isinstance(columns, str):
        if columns != "truth":
            raise ValueError(f"columns must be a mapping, 'truth' or None, got {columns!r}")
        columns = TRUTH_COLUMNS
    col = dict(columns or {})
    keys = ["gender", *effects, *(k for pair in interactions for k in pair)]
    require_columns(frame, list(dict.fromkeys(col.get(k, k) for k in keys)), "simulated_gender_classifier")

    def x(k: str) -> np.ndarray:
        return frame[col.get(k, k)].to_numpy(dtype=float)

    logit = np.full(len(frame), float(base))
    for k, beta in effects.items():
        logit += float(beta) * (x(k) - 0.5)
    for (a, b), beta in interactions.items():
        logit += 4.0 * beta * (x(a) - 0.5) * (x(b) - 0.5)
    rng = np.random.default_rng([int(seed), 4004])
    wrong = rng.random(len(frame)) < 1.0 / (1.0 + np.exp(-logit))
    conf = rng.uniform(0.5, 1.0, len(frame))
    male = x("gender") > 0.5
    says_male = male != wrong
    return np.where(says_male, conf, 1.0 - conf)
