"""Every paper's claims, in one place: the registries of :mod:`facebias.claims` (one module
per study) gathered in paper order."""

from __future__ import annotations

from importlib import import_module

from facebias.claims.core import Claim

__all__ = ["STUDIES", "PAPER_ORDER", "all_claims", "claims_of"]

#: Registry modules under facebias.claims, one per study.
STUDIES = ("bfw", "batest", "transects", "hcic", "rapid")
#: The order the report shows the papers in.
PAPER_ORDER = ("002", "003", "004", "000", "001")


def all_claims() -> tuple[Claim, ...]:
    """Every registered claim, in paper order then registry order; keys are unique."""
    claims = [c for s in STUDIES for c in import_module(f"facebias.claims.{s}").CLAIMS]
    keys = [c.key for c in claims]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"claim keys registered twice: {dup}")
    return tuple(sorted(claims, key=lambda c: PAPER_ORDER.index(c.paper)))


def claims_of(paper: str, backend: str | None = None) -> tuple[Claim, ...]:
    """The claims of one paper (``"002"``), optionally of one backend (``"main"``, ``"dcgan"``)."""
    return tuple(c for c in all_claims() if c.paper == paper and (backend is None or c.backend == backend))
