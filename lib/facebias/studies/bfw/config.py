"""Paper 002 study parameters: :class:`BFWConfig`, the ``params.yaml`` section ``bfw``
(the FAR grid of Table 3 / Fig. 6, the pair grouping, the bootstrap and the world-seed
sweep)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from facebias.config import RATE, Section, integer, listof, param, param_str, text
from facebias.studies.bfw.pairs import GROUPINGS


def _real(value: Any, name: str) -> Any:
    """Name -> ``{datatable: path, systems: "a,b"}`` (kept as given)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping name -> {{datatable, systems}}, got {value!r}")
    for key, entry in value.items():
        if not isinstance(entry, Mapping) or set(entry) != {"datatable", "systems"}:
            raise ValueError(f"{name}.{key} must have exactly the keys datatable and systems, got {entry!r}")
        param_str(entry["datatable"], f"{name}.{key}.datatable")
        param_str(entry["systems"], f"{name}.{key}.systems")
    return value

__all__ = ["BFWConfig"]


@dataclass(frozen=True)
class BFWConfig(Section):
    """Parameters of the study (``params.yaml`` section ``bfw``).

    Parameters
    ----------
    systems : tuple of str, default ("sim_a", "sim_b")
        Score columns of the synthetic world.
    fmr : tuple of float, default (0.3, 0.1, 0.01, 0.001, 0.0001)
        The FAR grid of the threshold analysis (fractions, descending as in the paper).
    grouping : {"query", "intra"}, default "query"
        A pair's subgroup (``query`` = its query's ``a1``; ``intra`` keeps ``a1 == a2``
        only).
    grouping_legacy : {"query", "intra"}, default "intra"
        The same for the released Table 3 computation.
    report_fmr : tuple of float, default (0.01, 0.001)
        FMRs of the group report.
    n_boot : int, default 200
        Identity-bootstrap replicates (>= 0).
    seed : int, default 7
        Bootstrap seed (>= 0).
    world_seeds : int, default 10
        World seeds of the seed sweep (:func:`facebias.studies.seeds.bfw_seed_table`): the
        held-out FPR deviations are recomputed on the world under this many seeds, from the
        world's own seed on (1 = the committed world only).
    real : dict, default {}
        The opt-in released datatables, name -> ``{datatable: path, systems: "a,b"}``
        (one DVC stage ``bfw_real@<name>`` each).

    Raises
    ------
    ValueError
        For a mistyped value, a rate outside (0, 1], an unknown grouping, a negative
        count, or a malformed ``real`` entry.

    Examples
    --------
    >>> BFWConfig.from_params({"n_boot": 0}).n_boot
    0
    >>> BFWConfig.from_params({"fmr": [5]})  # a percentage, not a fraction
    Traceback (most recent call last):
    ...
    ValueError: bfw.fmr[0] must lie in (0, 1), got 5
    """

    section = "bfw"
    systems: tuple[str, ...] = param(("sim_a", "sim_b"), listof(text()))
    fmr: tuple[float, ...] = param((0.3, 0.1, 0.01, 0.001, 0.0001), listof(RATE))
    grouping: str = param("query", text(*GROUPINGS))
    grouping_legacy: str = param("intra", text(*GROUPINGS))
    report_fmr: tuple[float, ...] = param((0.01, 0.001), listof(RATE))
    n_boot: int = param(200, integer(0))
    seed: int = param(7, integer(0))
    world_seeds: int = param(10, integer(1))
    real: dict[str, dict[str, str]] = param(factory=dict, check=_real)
