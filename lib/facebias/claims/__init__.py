"""The papers' claims as data (:mod:`facebias.claims.core`), one registry module per study
(``bfw``, ``batest``, ``transects``, ``hcic``, ``rapid``), and their rendering
(:mod:`facebias.claims.render`) for the report page, the README and the notebooks."""

from facebias.claims.core import (
    VERDICTS,
    Between,
    Claim,
    ClaimResult,
    InInterval,
    Kind,
    Measured,
    Metrics,
    MetricsMissing,
    NotComparable,
    Order,
    Rule,
    Sign,
    Within,
    evaluate,
    evaluate_all,
    verdict_of,
)

__all__ = ["VERDICTS", "Between", "Claim", "ClaimResult", "InInterval", "Kind", "Measured", "Metrics",
           "MetricsMissing", "NotComparable", "Order", "Rule", "Sign", "Within", "evaluate", "evaluate_all",
           "verdict_of"]
