"""Paper 003 (BA-test) study settings: :class:`BATestConfig`, the ``params.yaml`` section
``batest`` (its world is ``batest_world``, :class:`facebias.worlds.batest.BAWorldConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from facebias.config import RATE, Section, integer, listof, number, param, text
from facebias.studies.batest.factors import check_filters

__all__ = ["BATestConfig"]




@dataclass(frozen=True)
class BATestConfig(Section):
    """Settings of the balancing study (``params.yaml`` section ``batest``; its world is
    ``batest_world``, :class:`facebias.worlds.batest.BAWorldConfig`). Defaults: the committed study.

    Selection: ``filters`` (:func:`check_filters`; degrees, face-skin gray 0-255, fraction
    of the crop). Table 1 (the paper's method): pairs with face-mask IoU >
    ``iou_threshold`` (:func:`table1_pair_sets`). Extension (ours, labelled so): image-level
    matching of the genders within each race on ``balance_on`` with ``method``
    ``"strata"`` | ``"nn"``, ``bins`` (strata: pooled-quantile bins per factor), ``caliper``
    (nn: pooled SD units); see :func:`balance`. Table 3: ``reference_group`` and
    ``reference_fmr`` (:func:`fmr_at_reference`) on ``table3_identities`` identities per
    group with all their within-group impostors. Table 4: ``tpr_fmr`` (:func:`tpr_at_fmr`,
    one threshold over all impostors of the challenging subset of ``table4_subjects``
    subjects x ``table4_images`` images per group; the paper's 90 x 5). ``impostors_per_genuine``
    (impostor pairs drawn per genuine pair for d'), ``n_boot`` (identity-bootstrap
    replicates, 0 = none), ``seed`` (balancing, pair drawing and bootstrap). Seed sweep
    (:func:`facebias.studies.seeds.batest_seed_tables`): Table 1 on ``world_seeds`` world
    seeds, Tables 3 and 4 (each seed builds about 17 million all-pairs scores, about a minute)
    on ``world_seeds_tables34``, both from ``batest_world.seed`` on. Rates are fractions in
    (0, 1).

    Examples
    --------
    >>> cfg = BATestConfig.from_params({"bins": 5})
    >>> cfg.bins, cfg.method
    (5, 'strata')
    """

    section = "batest"
    filters: dict[str, dict[str, Any]] = param(factory=lambda: {
        "pose": {"columns": ("yaw", "pitch", "roll"), "max_abs": 20.0},
        "brightness": {"columns": ("brightness",), "min": 115.86, "max": 198.75},
        "face_area": {"columns": ("face_area",), "min": 0.20}}, check=check_filters)
    balance_on: tuple[str, ...] = param(("face_area", "quality"), listof(text()))
    method: str = param("strata", text("strata", "nn"))
    bins: int = param(4, integer(1))
    caliper: float = param(0.2, number(0.0, open_low=True))
    reference_group: str = param("WM", text())
    reference_fmr: tuple[float, ...] = param((0.001, 0.0001), listof(RATE))
    tpr_fmr: float = param(1e-5, RATE)
    table4_subjects: int = param(90, integer(2))
    table4_images: int = param(5, integer(2))
    iou_threshold: float = param(0.9, number(0.0, 1.0, open_high=True))
    table3_identities: int = param(100, integer(2))
    impostors_per_genuine: float = param(2.0, number(0.0, open_low=True))
    n_boot: int = param(200, integer(0))
    seed: int = param(11, integer(0))
    world_seeds: int = param(10, integer(1))
    world_seeds_tables34: int = param(3, integer(1))
