"""Claims as data: a paper's statement, what we measure for it, a rule declared before
looking, a verdict computed from the metrics and the kind of evidence it is.

A :class:`Claim` quotes the paper verbatim (with its section, figure or table), reads cells
from ``reports/metrics/*.json`` through their schemas (:mod:`facebias.schema`), and compares
them with a :class:`Rule`. Every cell may hold one value per world seed, so a verdict can say
"agrees in 9 of 10 seeds". The verdict is one of :data:`VERDICTS`:

- ``agrees``: every resolved check passes;
- ``disagrees``: no resolved check passes;
- ``partly``: some pass (the detail says n of m cells / seeds);
- ``not comparable``: we measure a different statistic than the paper's (the claim says which);
- ``unresolved``: no check could be decided (the data cannot resolve the rate, or a value is
  missing).

The kind (:class:`Kind`) says what the agreement is worth: *by construction* (the world
planted what is read back), *calibrated to the paper* (a named parameter was set to hit the
paper's number: never a reproduction), *real test* (it could have failed, and the claim says
how) or *measured on a learned generator* (no truth).

Values are plain floats; ``None`` or NaN is an unresolved value, never a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from facebias.schema import MetricsSchema, read_metrics

__all__ = ["VERDICTS", "Kind", "Rule", "Sign", "Between", "Within", "InInterval", "Order", "NotComparable",
           "Measured", "Metrics", "MetricsMissing", "Claim", "ClaimResult", "as_value", "verdict_of", "evaluate",
           "evaluate_all"]

#: The verdicts, in the order a page sorts them.
VERDICTS = ("agrees", "partly", "disagrees", "not comparable", "unresolved")

Value = float | None


class Kind(StrEnum):
    """The kind of evidence a claim's verdict is."""

    BY_CONSTRUCTION = "by construction"
    CALIBRATED = "calibrated to the paper"
    REAL_TEST = "real test"
    LEARNED = "measured on a learned generator"


def _ok(v: Any) -> bool:
    """A resolved value: a finite number."""
    return v is not None and not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)


def as_value(v: Any) -> float | None:
    """``v`` as a cell value: a float, or None when it is unresolved (None, NaN, not a number)."""
    return float(v) if _ok(v) else None


# --------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class Rule:
    """A comparison rule, declared with the claim before any metrics are read.

    :meth:`check` maps one seed's measured cells (cell -> value) and the paper's cells to
    checks: check name -> True (holds), False (fails) or None (unresolved). Cell-wise rules
    return one check per cell; :class:`Order` returns one check per seed.
    """

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Sign(Rule):
    """Each cell has the sign ``expected`` (+1 or -1), or, with ``expected=None``, the sign of
    the paper's value for that cell. A zero never matches a sign.

    Examples
    --------
    >>> Sign().check({"a": 0.3, "b": -0.1, "c": None}, {"a": 1.0, "b": 2.0, "c": 1.0})
    {'a': True, 'b': False, 'c': None}
    """

    expected: int | None = None

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        for cell, v in values.items():
            want = self.expected if self.expected is not None else paper.get(cell)
            if not _ok(v) or not _ok(want) or want == 0:
                out[cell] = None
            else:
                out[cell] = v != 0 and math.copysign(1, v) == math.copysign(1, want)
        return out

    def describe(self) -> str:
        if self.expected is None:
            return "same sign as the paper's value, cell by cell"
        return f"every cell {'positive' if self.expected > 0 else 'negative'}"


@dataclass(frozen=True)
class Between(Rule):
    """Each cell lies in ``[lo, hi]`` (either bound may be None: unbounded), bounds declared
    with the claim (e.g. "per-subgroup thresholds bring every subgroup within 10 %": ``hi=10``).

    Examples
    --------
    >>> Between(hi=10).check({"a": 3.0, "b": 12.0}, {})
    {'a': True, 'b': False}
    """

    lo: float | None = None
    hi: float | None = None

    def __post_init__(self) -> None:
        if self.lo is None and self.hi is None:
            raise ValueError("Between needs lo, hi or both")
        if self.lo is not None and self.hi is not None and self.lo > self.hi:
            raise ValueError(f"Between: lo {self.lo} > hi {self.hi}")

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        return {c: (None if not _ok(v) else (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi))
                for c, v in values.items()}

    def describe(self) -> str:
        if self.lo is None:
            return f"every cell <= {self.hi:g}"
        if self.hi is None:
            return f"every cell >= {self.lo:g}"
        return f"every cell in [{self.lo:g}, {self.hi:g}]"


@dataclass(frozen=True)
class Within(Rule):
    """Each cell within ``pct`` percent of the paper's value for that cell (relative), or
    within ``abs`` of it (absolute); a cell the paper does not give is unresolved.

    Examples
    --------
    >>> Within(pct=20).check({"a": 1.1, "b": 1.5}, {"a": 1.0, "b": 1.0})
    {'a': True, 'b': False}
    """

    pct: float | None = None
    abs: float | None = None

    def __post_init__(self) -> None:
        if (self.pct is None) == (self.abs is None):
            raise ValueError("Within needs exactly one of pct= and abs=")
        if (self.pct if self.pct is not None else self.abs) < 0:
            raise ValueError("Within: the tolerance must be >= 0")

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        for cell, v in values.items():
            p = paper.get(cell)
            if not _ok(v) or not _ok(p):
                out[cell] = None
                continue
            tol = self.abs if self.abs is not None else self.pct / 100 * abs(p)
            out[cell] = abs(v - p) <= tol
        return out

    def describe(self) -> str:
        return (f"within ±{self.pct:g} % of the paper's value, cell by cell" if self.pct is not None
                else f"within ±{self.abs:g} of the paper's value, cell by cell")


@dataclass(frozen=True)
class InInterval(Rule):
    """Each cell inside the paper's interval for that cell (the paper's value is ``(lo, hi)``).

    Examples
    --------
    >>> InInterval().check({"a": 0.3, "b": 0.6}, {"a": (0.2, 0.4), "b": (0.2, 0.4)})
    {'a': True, 'b': False}
    """

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        for cell, v in values.items():
            p = paper.get(cell)
            if not _ok(v) or not isinstance(p, tuple | list) or len(p) != 2 or not all(_ok(x) for x in p):
                out[cell] = None
            else:
                out[cell] = p[0] <= v <= p[1]
        return out

    def describe(self) -> str:
        return "inside the paper's interval, cell by cell"


@dataclass(frozen=True)
class Order(Rule):
    """The cells, in the order given, are strictly decreasing (``descending=True``) or
    increasing: one check per seed (``"order"``), unresolved when a cell is.

    Examples
    --------
    >>> Order(("a", "b", "c")).check({"a": 3.0, "b": 2.0, "c": 1.0}, {})
    {'order': True}
    >>> Order(("a", "b")).check({"a": 1.0, "b": 2.0}, {})
    {'order': False}
    """

    order: tuple[str, ...] = ()
    descending: bool = True

    def __post_init__(self) -> None:
        if len(self.order) < 2:
            raise ValueError("Order needs at least two cells")

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        missing = [c for c in self.order if c not in values]
        if missing:
            raise KeyError(f"Order: the measurement has no cells {missing}")
        vals = [values[c] for c in self.order]
        if not all(_ok(v) for v in vals):
            return {"order": None}
        pairs = zip(vals, vals[1:], strict=False)
        return {"order": all(a > b for a, b in pairs) if self.descending else all(a < b for a, b in pairs)}

    def describe(self) -> str:
        return (" > " if self.descending else " < ").join(self.order)


@dataclass(frozen=True)
class NotComparable(Rule):
    """We measure a different statistic than the paper: ``reason`` says which. The verdict is
    ``not comparable`` whatever the values."""

    reason: str = ""

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("NotComparable needs a reason: which statistic differs from the paper's")

    def check(self, values: Mapping[str, Value], paper: Mapping[str, Any]) -> dict[str, bool | None]:
        return {}

    def describe(self) -> str:
        return f"not comparable: {self.reason}"


# --------------------------------------------------------------------------- measurements
@dataclass(frozen=True)
class Measured:
    """What a claim reads: for each cell, its value in each world seed.

    Parameters
    ----------
    cells : mapping of str to sequence of float or None
        Cell -> one value per seed (the same seeds, in the same order, for every cell); a
        single draw is a sequence of length 1. None / NaN is unresolved.
    seeds : sequence of int, optional
        The world seeds, when the values come from several (shown on the page).
    """

    cells: Mapping[str, Sequence[Value]]
    seeds: Sequence[int] | None = None

    def __post_init__(self) -> None:
        lengths = {len(v) for v in self.cells.values()}
        if len(lengths) > 1:
            raise ValueError(f"Measured: cells have different numbers of seeds {sorted(lengths)}")
        if self.seeds is not None and lengths and lengths != {len(self.seeds)}:
            raise ValueError(f"Measured: {len(self.seeds)} seeds but {lengths.pop()} values per cell")

    @classmethod
    def one(cls, cells: Mapping[str, Value]) -> Measured:
        """One draw: cell -> value."""
        return cls({c: [v] for c, v in cells.items()})

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]], seeds: Sequence[int],
                     cell: Callable[[Mapping[str, Any]], str | None],
                     value: Callable[[Mapping[str, Any]], Value] | str) -> Measured:
        """Cells from tidy per-seed records (each with a ``seed`` field).

        ``cell(record)`` names the record's cell (None: not part of the claim); ``value`` is
        the record's field or a function of the record. A cell a seed lacks is unresolved
        in that seed; two records of one cell and seed are an error.

        Examples
        --------
        >>> recs = [{"seed": 1, "g": "a", "v": 0.5}, {"seed": 2, "g": "a", "v": 0.7},
        ...         {"seed": 2, "g": "b", "v": 0.1}]
        >>> Measured.from_records(recs, [1, 2], lambda r: r["g"], "v").cells
        {'a': [0.5, 0.7], 'b': [None, 0.1]}
        """
        get = (lambda r: r[value]) if isinstance(value, str) else value
        index = {int(s): i for i, s in enumerate(seeds)}
        cells: dict[str, list[Value]] = {}
        seen: set[tuple[str, int]] = set()
        for r in records:
            name = cell(r)
            if name is None or int(r["seed"]) not in index:
                continue
            key = (name, int(r["seed"]))
            if key in seen:
                raise ValueError(f"two records for cell {name!r} in seed {r['seed']}")
            seen.add(key)
            v = get(r)
            cells.setdefault(name, [None] * len(index))[index[int(r["seed"])]] = as_value(v)
        return cls(cells, tuple(int(s) for s in seeds))

    @property
    def n_seeds(self) -> int:
        return len(next(iter(self.cells.values()))) if self.cells else 0

    def seed(self, i: int) -> dict[str, Value]:
        """Cell -> value of seed number ``i`` (0-based)."""
        return {c: as_value(v[i]) for c, v in self.cells.items()}

    def summary(self, cell: str) -> tuple[float | None, float | None, float | None, int]:
        """(mean, min, max, n resolved) of one cell over the seeds."""
        vals = [float(v) for v in self.cells[cell] if _ok(v)]
        if not vals:
            return None, None, None, 0
        return sum(vals) / len(vals), min(vals), max(vals), len(vals)


class MetricsMissing(LookupError):
    """A metrics file a claim reads does not exist (the study has not run)."""


class Metrics:
    """The metrics files of a reports folder as claims read them: ``m("bfw_details.json",
    "a/b")`` is the value at that key path, through the file's schema (an undeclared path
    raises). Every ``file:path`` read is recorded in :attr:`reads`."""

    def __init__(self, metrics_dir: str | Path):
        self.dir = Path(metrics_dir)
        self._cache: dict[str, tuple[dict[str, Any], MetricsSchema]] = {}
        self.reads: list[str] = []

    def __call__(self, file: str, path: str, default: Any = None) -> Any:
        if file not in self._cache:
            p = self.dir / file
            if not p.is_file():
                raise MetricsMissing(f"reports/metrics/{file} does not exist (run make reproduce)")
            self._cache[file] = read_metrics(p)
        metrics, schema = self._cache[file]
        self.reads.append(f"{file}:{path}")
        return schema.get(metrics, path, default)

    def has(self, file: str) -> bool:
        return (self.dir / file).is_file()


# --------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class Claim:
    """One claim of a paper, and how we check it.

    Parameters
    ----------
    key : str
        Unique id, ``"<study>.<name>"``.
    paper : str
        The paper's short key (``"002"``).
    quote : str
        The paper's words, verbatim.
    where : str
        Section, figure or table of the quote.
    statistic : str
        What we measure for it, in our words (cells, units, which seeds).
    files : tuple of str
        The metrics files it reads (under ``reports/metrics/``).
    measure : callable
        :class:`Metrics` -> :class:`Measured`.
    rule : Rule
        The comparison, declared before looking.
    kind : Kind
        The kind of evidence.
    evidence : str
        Why it is that kind: what was planted (by construction), which parameter was set to
        hit the paper (calibrated), how it could have failed (real test), or what the learned
        generator's labels are (learned).
    paper_values : mapping, optional
        The paper's value per cell (a number, or ``(lo, hi)`` for :class:`InInterval`), shown
        beside ours and used by :class:`Sign`, :class:`Within` and :class:`InInterval`.
    calibrated : tuple of str, optional
        ``params.yaml`` keys (``section.key``) set to make a number land on the paper's;
        required for :attr:`Kind.CALIBRATED`.
    backend : str, default "main"
        The backend it is measured on (``"main"`` or e.g. ``"dcgan"``).
    fmt : str, default ".3g"
        Format of a measured value on the page; ``unit`` is appended.
    """

    key: str
    paper: str
    quote: str
    where: str
    statistic: str
    files: tuple[str, ...]
    measure: Callable[[Metrics], Measured]
    rule: Rule
    kind: Kind
    evidence: str
    paper_values: Mapping[str, Any] = field(default_factory=dict)
    calibrated: tuple[str, ...] = ()
    backend: str = "main"
    fmt: str = ".3g"
    unit: str = ""

    def __post_init__(self) -> None:
        for name in ("key", "paper", "quote", "where", "statistic", "evidence"):
            if not str(getattr(self, name)).strip():
                raise ValueError(f"claim {self.key or '?'}: {name} is empty")
        if not isinstance(self.kind, Kind):
            raise TypeError(f"claim {self.key}: kind must be a Kind, got {self.kind!r}")
        if (self.kind is Kind.CALIBRATED) != bool(self.calibrated):
            raise ValueError(f"claim {self.key}: calibrated parameters are named iff the kind is "
                             f"'{Kind.CALIBRATED.value}' (kind {self.kind.value!r}, calibrated {self.calibrated})")
        if not self.files:
            raise ValueError(f"claim {self.key}: files is empty")


def verdict_of(checks: Sequence[Mapping[str, bool | None]], rule: Rule) -> tuple[str, str]:
    """The verdict and its detail from one seed's checks per element of ``checks``.

    Parameters
    ----------
    checks : sequence of mapping
        One mapping per seed: check name (a cell, or ``"order"``) -> True / False / None.
    rule : Rule
        The rule that made them (:class:`NotComparable` gives ``not comparable``).

    Returns
    -------
    (str, str)
        The verdict (one of :data:`VERDICTS`) and a detail such as ``"9 of 10 seeds"``.

    Examples
    --------
    >>> verdict_of([{"order": True}] * 9 + [{"order": False}], Order(("a", "b")))
    ('partly', '9 of 10 seeds')
    >>> verdict_of([{"a": True, "b": False}], Sign())
    ('partly', '1 of 2 cells')
    >>> verdict_of([{"a": None}], Sign())
    ('unresolved', '1 check unresolved')
    """
    if isinstance(rule, NotComparable):
        return "not comparable", rule.reason
    n_seeds = len(checks)
    flat = [v for c in checks for v in c.values()]
    resolved = [v for v in flat if v is not None]
    n_unres = len(flat) - len(resolved)
    unres = f"{n_unres} check{'s' if n_unres != 1 else ''} unresolved"
    if not resolved:
        return "unresolved", unres if flat else "nothing measured"
    n_ok = sum(resolved)
    cells = {k for c in checks for k in c}
    if n_seeds == 1:
        unit = "cells" if len(cells) > 1 or "order" not in cells else "checks"
        detail = f"{n_ok} of {len(resolved)} {unit}"
    elif len(cells) == 1:
        detail = f"{n_ok} of {len(resolved)} seeds"
    else:
        whole = sum(all(v is True for v in c.values()) for c in checks)
        detail = f"{n_ok} of {len(resolved)} cell-seeds; every cell in {whole} of {n_seeds} seeds"
    if n_unres:
        detail += f"; {unres}"
    verdict = "agrees" if n_ok == len(resolved) else "disagrees" if n_ok == 0 else "partly"
    return verdict, detail


@dataclass(frozen=True)
class ClaimResult:
    """A claim evaluated on a reports folder.

    ``verdict`` is one of :data:`VERDICTS`, or ``"not run"`` when a metrics file is missing;
    ``checks`` holds one mapping per seed (check -> True / False / None); ``reads`` the
    ``file:path`` references the measurement read.
    """

    claim: Claim
    verdict: str
    detail: str
    measured: Measured | None
    checks: tuple[Mapping[str, bool | None], ...] = ()
    reads: tuple[str, ...] = ()

    def cell_rows(self) -> list[dict[str, Any]]:
        """One row per cell: paper value, our mean / min / max over seeds, seeds resolved and
        the share of seeds whose check of this cell holds (None for seed-level rules)."""
        if self.measured is None:
            return []
        rows = []
        for cell in self.measured.cells:
            mean, lo, hi, n = self.measured.summary(cell)
            held = [c[cell] for c in self.checks if c.get(cell) is not None]
            rows.append({"cell": cell, "paper": self.claim.paper_values.get(cell), "mean": mean, "min": lo,
                         "max": hi, "n": n, "n_seeds": self.measured.n_seeds,
                         "holds": (sum(held) / len(held)) if held else None})
        return rows


def evaluate(claim: Claim, metrics: Metrics | str | Path) -> ClaimResult:
    """Read ``claim``'s cells from the metrics and compute its verdict.

    Parameters
    ----------
    claim : Claim
    metrics : Metrics or path
        The metrics reader, or ``reports/metrics``.

    Returns
    -------
    ClaimResult
        ``verdict == "not run"`` when a metrics file the claim reads is missing.
    """
    m = metrics if isinstance(metrics, Metrics) else Metrics(metrics)
    missing = [f for f in claim.files if not m.has(f)]
    if missing:
        return ClaimResult(claim, "not run", f"reports/metrics/{', '.join(missing)} missing (run make reproduce)",
                           None)
    start = len(m.reads)
    measured = claim.measure(m)
    reads = tuple(dict.fromkeys(m.reads[start:])) or claim.files
    checks = tuple(claim.rule.check(measured.seed(i), claim.paper_values) for i in range(measured.n_seeds))
    verdict, detail = verdict_of(checks, claim.rule)
    return ClaimResult(claim, verdict, detail, measured, checks, reads)


def evaluate_all(claims: Sequence[Claim], metrics_dir: str | Path) -> list[ClaimResult]:
    """:func:`evaluate` every claim on one reports/metrics folder (one reader, files read once)."""
    m = Metrics(metrics_dir)
    return [evaluate(c, m) for c in claims]
