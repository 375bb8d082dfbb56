"""Rates and thresholds of sorted score sets under bootstrap weights (per-row
multiplicities), without copying or gathering: the engine of the bootstrap replicates of
:func:`facebias.metrics.group_report` and of BA-test Table 4's identity bootstrap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__: list[str] = []


class _SortedScores:
    """A contiguous run ``[start, stop)`` of scores sorted ascending, for rates and
    thresholds under many weightings without copying or gathering.

    Weights are per-row multiplicities from a bootstrap replicate, laid out in the same
    order as the scores (``weights=None`` means 1). ``weigh`` returns the cumulative
    weights, which ``threshold`` and ``count_above`` take, so one replicate sums each
    run's weights once.
    """

    def __init__(self, sorted_scores: np.ndarray, start: int = 0, stop: int | None = None):
        self.start = start
        self.stop = sorted_scores.size if stop is None else stop
        self.values = sorted_scores[self.start : self.stop]

    def weigh(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Cumulative weights in score order (1, 2, 3, ... without weights)."""
        if weights is None:
            return np.arange(1, self.values.size + 1, dtype=np.float64)
        return np.cumsum(weights[self.start : self.stop], dtype=np.float64)

    def threshold(self, fmr: np.ndarray, cw: np.ndarray | None = None) -> np.ndarray:
        """Smallest score t with weighted FMR(t) <= fmr (NaN if the total weight is 0).

        The first position j with ``(total - cw[j]) / total <= fmr`` starts the first tie
        run that satisfies the rule (the share above a run is read at its last element,
        where it is smallest), so no run bookkeeping is needed.
        """
        cw = self.weigh() if cw is None else cw
        total = cw[-1]
        if total == 0:
            return np.full(fmr.shape, np.nan)
        above = (total - cw) / total  # non-increasing
        j = np.searchsorted(-above, -fmr, side="left")
        return self.values[j].astype(np.float64)

    def threshold_from_top(self, fmr: np.ndarray, total: float,
                           top: Callable[[int], np.ndarray]) -> np.ndarray:
        """``threshold(fmr, cw)`` from the total weight and the weights of the highest scores
        alone, for integer-valued weights (bootstrap multiplicities).

        ``top(k)`` returns the weights of the ``k`` highest scores, ascending by score. With
        integer weights the weight above a position is the same exact integer whether summed
        from the top or as ``total - cw``, so the shares, and the threshold, are the same
        floats as :meth:`threshold`'s; only the top is read (doubled until the position
        below it fails every target, which proves the answer lies inside).
        """
        n = self.values.size
        if total == 0:
            return np.full(fmr.shape, np.nan)
        hi = float(np.max(fmr))
        k = min(n, 64 + int(4 * hi * n))
        while True:
            w = top(k)
            above = np.cumsum(w[::-1])[::-1]  # above[i]: weight of the top k - i scores
            if k == n or above[0] / total > hi:
                break
            k = min(n, 2 * k)
        share = np.r_[above[1:], 0.0] / total  # share above position n - k + i
        j = n - k + np.searchsorted(-share, -fmr, side="left")
        return self.values[j].astype(np.float64)

    def count_above(self, t: np.ndarray, cw: np.ndarray | None = None) -> np.ndarray:
        """Weighted number of scores > t."""
        cw = self.weigh() if cw is None else cw
        i = np.searchsorted(self.values, t, side="right")
        return cw[-1] - np.where(i > 0, cw[np.maximum(i - 1, 0)], 0.0)

    def fraction_above(self, t: np.ndarray, cw: np.ndarray | None = None) -> np.ndarray:
        """Weighted share of scores > t (NaN where t is NaN or the total weight is 0)."""
        cw = self.weigh() if cw is None else cw
        if cw[-1] == 0:
            return np.full(np.shape(t), np.nan)
        return np.where(np.isnan(t), np.nan, self.count_above(t, cw) / cw[-1])


def _pooled_threshold(
    candidates: np.ndarray, sets: Sequence[_SortedScores], cws: Sequence[np.ndarray],
    fmr: np.ndarray,
) -> np.ndarray:
    """``threshold`` on the union of several weighted score sets, without merging them.

    ``candidates`` are all their scores sorted. Binary search for the smallest candidate
    t with ``sum_g count_above_g(t) / sum_g total_g <= fmr``: O(log n) per set and
    target instead of gathering every weight into pooled order.
    """
    total = float(sum(cw[-1] for cw in cws))
    if total == 0:
        return np.full(fmr.shape, np.nan)
    lo = np.zeros(fmr.size, dtype=np.int64)
    hi = np.full(fmr.size, candidates.size - 1)  # the largest score always qualifies
    while (lo < hi).any():
        mid = (lo + hi) // 2
        t = candidates[mid]
        above = sum(st.count_above(t, cw) for st, cw in zip(sets, cws, strict=True))
        ok = above / total <= fmr
        hi = np.where(ok, mid, hi)  # hi always qualifies, so a converged entry stays put
        lo = np.where(ok, lo, mid + 1)
    return candidates[lo].astype(np.float64)
