"""Generator-agnostic latent-space algebra for synthetic-face bias studies (papers 004, 000).

Everything here is pure numpy / pandas on latent vectors: no generator, no images, no I/O.
A generator (StyleGAN2 ``w``, EG3D ``w``, a toy linear model) maps the latents this module
produces to images; see ``docs/specs/transects.md`` A1.4-A1.8 and ``docs/specs/hcic.md``
B1.2-B1.5.

Conventions (used everywhere in this module)
--------------------------------------------
* Latents are rows: one latent is ``(D,)``, a batch is ``(n, D)``.
* K attribute hyperplanes are ``normals`` ``(K, D)`` (one normal per **row**) and
  ``offsets`` ``(K,)``. The **decision value** of latent ``z`` for attribute ``k`` is
  ``normals[k] @ z + offsets[k]``; the hyperplane is where it is 0. Normals are *not*
  assumed to be unit length; :func:`fit_hyperplane` returns unit normals, for which the
  decision value is the signed Euclidean distance to the hyperplane (A1.5).
* Sign: positive = more of the attribute (higher level on the annotation scale; male for
  gender, the target class for a one-vs-all race SVM).
* Grid values ``c`` (transects; 000's prototypes in :mod:`facebias.generate.plan`) are
  decision values, i.e. latent-space distances for unit normals. They are generator
  specific and must be re-tuned.
* The "dual basis" ``orthogonalize(normals)`` (rows ``d_j`` with ``d_j @ n_k = [j == k]``)
  moves one attribute's decision value by exactly 1 per unit step and leaves the others
  unchanged. The paper's printed Algorithm 2 does not (:func:`orthogonalize_printed`).

Every function validates its input and raises ``ValueError`` naming the argument and the
problem (shape mismatch, NaN/inf, rank-deficient normals, empty grids, missing columns).

Modules (module -> job, spec section)
-------------------------------------
* :mod:`~facebias.latent.checks`: input validation, :data:`MAX_CONDITION` (A1.7).
* :mod:`~facebias.latent.algebra`: decision values, dual basis, projections onto the
  intersection of the hyperplanes (A1.5-A1.7).
* :mod:`~facebias.latent.transects`: 004 Algorithm 1, transect grids around a seed
  (A1.7-A1.8).
* :mod:`~facebias.latent.fitting`: attribute hyperplanes fitted by ridge / linear SVM
  (A1.5, B1.2).
* :mod:`~facebias.latent.sequences`: 000's calibrated age / expression sequences (B1.3).

Every public name is re-exported here: ``from facebias.latent import X`` works for all of
them.
"""

from __future__ import annotations

from facebias.latent.algebra import (
    decision_values,
    orthogonality_error,
    orthogonalize,
    orthogonalize_printed,
    project_alternating,
    project_to_intersection,
)
from facebias.latent.checks import MAX_CONDITION, check_hyperplanes, finite_array
from facebias.latent.fitting import KINDS, Hyperplane, fit_hyperplane, fit_hyperplanes
from facebias.latent.sequences import (
    AGE_TARGET,
    EXPRESSION_TARGET,
    SEQUENCE_N,
    Calibration,
    SequenceCalibrationWarning,
    attribute_sequence,
    calibrate_distance,
)
from facebias.latent.transects import transect, transect_frame

__all__ = [
    "AGE_TARGET",
    "EXPRESSION_TARGET",
    "SEQUENCE_N",
    "MAX_CONDITION",
    "Hyperplane",
    "KINDS",
    "Calibration",
    "SequenceCalibrationWarning",
    "finite_array",
    "check_hyperplanes",
    "decision_values",
    "orthogonalize",
    "orthogonalize_printed",
    "orthogonality_error",
    "project_to_intersection",
    "project_alternating",
    "transect_frame",
    "transect",
    "fit_hyperplane",
    "fit_hyperplanes",
    "calibrate_distance",
    "attribute_sequence",
]
