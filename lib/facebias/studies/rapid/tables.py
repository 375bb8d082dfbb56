"""Paper 001, the tables that flow between the rapid test's stages (``docs/specs/rapid.md``
section 1.0, data model), and the check of a scores table.

Conventions: scores are similarities (a pair matches iff ``score > t``); rates are
fractions. Score tables have columns ``query, face_a, face_b, system, score`` (one row
per within-query pair and system); cross-query tables add ``query_b`` (the query of
``face_b``). Label tables have ``query, face, label`` with label 1 (the queried person),
0 (someone else) or -1 (excluded). Face tables have ``face, query, group`` (+
``is_target`` in the synthetic world, :func:`facebias.worlds.rapid.make_rapid_world`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from facebias.metrics import check_scores
from facebias.validate import require_columns

SCORE_COLUMNS: tuple[str, ...] = ("query", "face_a", "face_b", "system", "score")
ALL = "all"  # the group name of the pooled curves


def _check_scores_frame(scores: pd.DataFrame, what: str = "scores") -> np.ndarray:
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"{what}: expected a DataFrame, got {type(scores).__name__}")
    require_columns(scores, SCORE_COLUMNS, what)
    return check_scores(scores["score"].to_numpy(), f"{what}.score", scores.index)
