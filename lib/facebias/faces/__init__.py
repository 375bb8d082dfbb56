"""Real face processing with models that ship inside registry packages (all offline).

Data flow: image (RGB uint8, H x W x 3) -> :mod:`detect` (box, 5 landmarks, confidence)
-> :mod:`align` (112 x 112 ArcFace template, dlib 150 x 150 chips) -> :mod:`embed`
(L2-normalised vectors, NaN rows for failures to enrol) with :mod:`cache` on disk;
:mod:`landmarks` (dlib 68 points), :mod:`factors` (pose, brightness, BRISQUE, sharpness,
face area) and :mod:`attributes` (age, gender) measure what drives accuracy.

Submodules import OpenCV / dlib / onnxruntime, which are slow to load, so the names
below are resolved lazily: ``import facebias.faces`` costs nothing until one is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # detection
    "Detection": "detect",
    "detect_faces": "detect",
    "detect_images": "detect",
    "load_detector": "detect",
    "primary_face": "detect",
    # alignment
    "ARCFACE_TEMPLATE": "align",
    "align_arcface": "align",
    "estimate_transform": "align",
    "dlib_chip": "align",
    # images
    "read_image": "images",
    "ImageReadError": "images",
    # embedding
    "EmbedResult": "embed",
    "load_embedder": "embed",
    "OnnxEmbedder": "embed",
    "TorchEmbedder": "embed",
    "EmbeddingCache": "cache",
    "ModelSpec": "specs",
    "parse_model_spec": "specs",
    "check_model_spec": "specs",
    "model_name": "specs",
    # factors and attributes
    "measure_factors": "factors",
    "FACTOR_KEYS": "factors",
    "factor_table": "factors",
    "aligned_face_mask": "factors",
    "mask_iou": "factors",
    "predict_age_gender": "attributes",
    # geometry
    "face_mesh": "mesh",
    "mesh_vector": "mesh",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` on first use and cache it (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'facebias.faces' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"facebias.faces.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The lazily exported names."""
    return __all__
