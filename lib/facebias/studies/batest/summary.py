"""Paper 003 metrics: :func:`summarise` builds what ``reports/metrics/batest.json`` and
``batest_details.json`` hold (notebooks/batest.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from facebias.studies.batest.config import BATestConfig
from facebias.studies.batest.table1 import gap_rel_error_mean, table1_percentages
from facebias.validate import require_columns

if TYPE_CHECKING:
    from facebias.worlds.batest import BAWorldConfig

__all__ = ["summarise"]


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]] | None:
    return None if df is None else df.to_dict(orient="records")


def _mask_iou_summary(pairs: pd.DataFrame, iou_col: str = "mask_iou") -> dict[str, Any]:
    """Pair count, pairs above paper 003's IoU cut (> 0.9, B.2) and the median IoU."""
    require_columns(pairs, [iou_col], "pairs")
    iou = pairs[iou_col]
    return {"n_pairs": len(pairs), "n_above_0.9": int((iou > 0.9).sum()), "median": float(iou.median())}


def summarise(*, provenance: str, config: BATestConfig, world: BAWorldConfig, images: pd.DataFrame,
              kept: pd.DataFrame, balanced: pd.DataFrame, accounting: pd.DataFrame, report: pd.DataFrame,
              gaps: pd.DataFrame, dprimes: pd.DataFrame, fmr_ref: pd.DataFrame, tpr_table: pd.DataFrame,
              real_factors: pd.DataFrame | None = None, real_fte: pd.DataFrame | None = None,
              lfw_fte: pd.DataFrame | None = None, lfw_accounting: pd.DataFrame | None = None,
              lfw_report: pd.DataFrame | None = None, lfw_pairs: pd.DataFrame | None = None,
              identity_count: Mapping[str, pd.DataFrame] | None = None,
              identity_noise: Mapping[str, Any] | None = None,
              challenging: pd.DataFrame | None = None,
              table1: pd.DataFrame | None = None, face_area: pd.DataFrame | None = None,
              table3_impostors: pd.DataFrame | None = None, n_balanced_pairs: int | None = None,
              table3_gamma: pd.DataFrame | None = None,
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(headline, details)``: what ``reports/metrics/<name>.json`` and
    ``<name>_details.json`` hold (notebooks/batest.py).

    ``world``: the known-truth world (its seed and planted gaps, M - F score units);
    ``images`` / ``kept`` / ``balanced``: all, filtered (:func:`apply_filters`, whose
    ``accounting`` this is) and image-matched (:func:`balance_within`, the extension)
    images; ``report``: :func:`balance_report`; ``gaps``: :func:`gender_gaps` (sets in
    evaluation order: Table 1's, then the extension's); ``dprimes``: set ->
    :func:`dprime_by_group` as columns; ``fmr_ref``: columns (set, FMR) of
    :func:`fmr_at_reference_table`; ``tpr_table``: :func:`tpr_at_fmr` tables stacked with
    index level ``set``; ``table1``: :func:`table1_measured` (its percentages vs the
    original are derived here); ``face_area``: :func:`face_area_by_gender`;
    ``table3_impostors``: impostor pairs per group (rows) and Table 3 set (columns);
    ``n_balanced_pairs``: pairs with IoU above the cut. The real-image parts are ``None`` when not run:
    ``real_factors`` (:func:`facebias.faces.factor_table` rows), ``real_fte`` / ``lfw_fte``
    (:func:`facebias.metrics.failure_to_enrol`), ``lfw_accounting``, ``lfw_report`` and
    ``lfw_pairs`` (one row per pair with ``mask_iou``). The headline's per-set gaps and
    :func:`gap_rel_error_mean` are derived here from ``gaps``.

    Parameters
    ----------
    provenance : str
        Where the images came from (written to the details).
    config : BATestConfig
        The study settings.
    world : facebias.worlds.batest.BAWorldConfig
        The known-truth world.
    images, kept, balanced : pandas.DataFrame
        All, filtered and balanced images.
    accounting, report, gaps : pandas.DataFrame
        :func:`apply_filters` accounting, :func:`balance_report`, :func:`gender_gaps`.
    dprimes, fmr_ref, tpr_table : pandas.DataFrame
        Per-set d', :func:`fmr_at_reference` FMRs, stacked :func:`tpr_at_fmr` tables.
    real_factors, real_fte, lfw_fte : pandas.DataFrame, optional
        Real-image factors and failure-to-enrol tables (``None`` when not run).
    lfw_accounting, lfw_report, lfw_pairs : pandas.DataFrame, optional
        LFW filter accounting, balance report and pairs (``None`` when not run).
    identity_count : dict of str to pandas.DataFrame, optional
        :func:`identity_count_experiment` output (Fig. 9), stored as records.
    identity_noise : dict, optional
        JSON-ready summary of :func:`identity_outliers` runs (Fig. 6a), stored as given.
    challenging : pandas.DataFrame, optional
        Per-group table of the :func:`challenging_subset` evaluation (columns
        ``(subset, quantity)``), stored as ``subset -> quantity -> group``.
    table1, face_area, table3_impostors : pandas.DataFrame, optional
        Table 1 (Δd'), Fig. 16's face-area table and Table 3's impostor counts.
    n_balanced_pairs : int, optional
        Pairs kept by the IoU cut.
    table3_gamma : pandas.DataFrame, optional
        :func:`fmr_at_reference_table` FMRs of a world whose factors raise impostor scores
        (``gamma < 0``), stored like ``fmr_ref``.

    Returns
    -------
    headline : dict
        ``source``, ``planted_gap_genuine``, ``gap_genuine`` (set -> race -> gap),
        ``gap_rel_error_mean`` (set -> fraction) and ``n_images``.
    details : dict
        JSON-ready records of every table (``None`` for parts not run).

    Raises
    ------
    ValueError
        As :func:`gap_rel_error_mean`.
    """
    truth = world.true_gender_gap()
    sets = gaps.index.get_level_values("set").unique()
    head: dict[str, Any] = {
        "source": "synthetic",
        "planted_gap_genuine": truth,
        "gap_genuine": {k: gaps.loc[k, "gap_genuine"].to_dict() for k in sets},
        "gap_rel_error_mean": gap_rel_error_mean(gaps, truth),
        "n_images": {"all": len(images), "filtered": len(kept), "matched_extension": len(balanced)},
    }
    if n_balanced_pairs is not None:
        head["n_pairs_iou_balanced"] = int(n_balanced_pairs)
    details: dict[str, Any] = {
        "paper": "003", "source": "synthetic", "provenance": provenance, "factors": list(config.balance_on),
        "method": config.method, "world": {"seed": world.seed},
        "accounting": _records(accounting),
        "balance_report": _records(report),
        "gender_gap": _records(gaps.reset_index()),
        "dprime": dprimes.to_dict(),
        "fmr_at_reference": {f"{s}@{f:g}": v.to_dict() for (s, f), v in fmr_ref.items()},
        "tpr_fmr": config.tpr_fmr,
        "tpr_at_fmr": _records(tpr_table.reset_index()),
        "real_images": _records(real_factors),
        "real_images_fte": None if real_fte is None else real_fte.to_dict(orient="index"),
        "lfw_fte": None if lfw_fte is None else lfw_fte.to_dict(orient="index"),
        "lfw_accounting": _records(lfw_accounting),
        "lfw_balance_report": _records(lfw_report),
        "lfw_pair_mask_iou": None if lfw_pairs is None else _mask_iou_summary(lfw_pairs),
        "identity_count": None if identity_count is None else {
            k: _records(v) for k, v in identity_count.items()},
        "identity_noise": None if identity_noise is None else dict(identity_noise),
        "challenging": None if challenging is None else {
            k: challenging[k].to_dict() for k in challenging.columns.get_level_values(0).unique()},
        "table1": None if table1 is None else _records(table1.reset_index()),
        "table1_pct": None if table1 is None else _records(table1_percentages(table1)),
        "face_area": None if face_area is None else _records(face_area.reset_index()),
        "table3_impostors": None if table3_impostors is None else table3_impostors.to_dict(),
        "fmr_at_reference_gamma_negative": None if table3_gamma is None else {
            f"{s}@{f:g}": v.to_dict() for (s, f), v in table3_gamma.items()},
    }
    return head, details
