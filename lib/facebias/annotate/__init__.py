"""Human (and simulated) annotation: rating scales, an append-only vote store, aggregation
rules of the two studies, a simulated annotator panel and readers for released formats.

Widgets live in :mod:`facebias.annotate.widgets` (imported separately: needs ipywidgets).
"""

from __future__ import annotations

from facebias.annotate.aggregate import (
    hcic,
    icc,
    item_sd,
    krippendorff_alpha,
    score,
    scores_from_votes,
    trimmed_mean,
    uncanny_keep,
    votes_matrix,
)
from facebias.annotate.formats import read_sagemaker, read_transects_pkl, read_votes_csv
from facebias.annotate.scales import PAIR_SCALE, SCALES_HCIC, SCALES_TRANSECTS, Scale, pair_item_ids
from facebias.annotate.simulate import (
    Panel,
    simulate_image_votes,
    simulate_pair_votes,
    simulate_synthetic,
)
from facebias.annotate.store import AnnotationStore, synthetic_image_path

__all__ = ["Scale", "SCALES_TRANSECTS", "SCALES_HCIC", "PAIR_SCALE", "pair_item_ids", "AnnotationStore",
           "trimmed_mean", "hcic", "score", "scores_from_votes", "item_sd", "krippendorff_alpha", "icc",
           "uncanny_keep", "votes_matrix", "Panel", "simulate_image_votes",
           "simulate_pair_votes", "simulate_synthetic", "read_sagemaker", "read_votes_csv",
           "read_transects_pkl", "synthetic_image_path"]
