"""Paper 001, the paper's face rules for the image path (``docs/specs/rapid.md`` section
1.2; paper §4 and App. B): the cross-service FaceID grouping of the boxes found in one image
(:func:`face_id_groups`, IoU of two boxes) and Algorithm 1, single-face images for a
service without a detection API (:func:`single_face_images`). The folder path
(:func:`facebias.studies.rapid.images.image_folder_study`) uses the IoU rule with offline
detectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["face_id_groups", "single_face_images"]


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Intersection over union of two ``(x, y, w, h)`` boxes."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw = max(0.0, min(ax + aw, bx + bw) - max(ax, bx))
    ih = max(0.0, min(ay + ah, by + bh) - max(ay, by))
    inter = iw * ih
    union = aw * ah + bw * bh - inter
    return inter / union if union > 0 else 0.0


def face_id_groups(boxes: Sequence[tuple[float, ...]], services: Sequence[Any],
                   iou_min: float = 0.2) -> np.ndarray:
    """The paper's cross-service FaceID grouping of the boxes detected in one image (§4).

    Every pair of boxes from *different* services with IoU >= ``iou_min`` is an edge; edges
    are taken in descending IoU (Kruskal's order) and two groups are merged unless the
    merge would put two boxes of the same service in one group (the authors' code,
    ``FaceClusterer``: the paper's "IoU > 0.2" is ">= 0.2" there). Unmerged boxes stay
    singletons. :func:`image_folder_study` keeps an image when each detector (the stand-in
    services) finds exactly one face and all boxes overlap with IoU >= ``iou_min``; with
    two detectors that is the same as one group holding both boxes.

    Parameters
    ----------
    boxes : sequence of (x, y, w, h)
        The boxes, in pixels.
    services : sequence
        The service (detector) of each box.
    iou_min : float, default 0.2
        Least IoU of an edge, in [0, 1].

    Returns
    -------
    numpy.ndarray
        Group labels 0..k-1 (int), in order of first appearance.

    Raises
    ------
    ValueError
        If ``boxes`` and ``services`` differ in length, or ``iou_min`` is outside [0, 1].

    Examples
    --------
    >>> face = (10, 10, 20, 20)
    >>> shifted = (15, 10, 20, 20)   # IoU 0.6 with face
    >>> far = (100, 100, 20, 20)
    >>> face_id_groups([face, shifted, far, shifted], ["A", "B", "A", "A"]).tolist()
    [0, 1, 2, 1]
    >>> face_id_groups([face, shifted, far], ["A", "B", "C"]).tolist()
    [0, 0, 1]
    """
    if len(boxes) != len(services):
        raise ValueError(f"face_id_groups: {len(boxes)} boxes but {len(services)} services")
    if not 0 <= iou_min <= 1:
        raise ValueError(f"iou_min must be in [0, 1], got {iou_min}")
    n = len(boxes)
    edges = sorted((-_iou(boxes[i], boxes[j]), i, j) for i in range(n) for j in range(i + 1, n)
                   if services[i] != services[j] and _iou(boxes[i], boxes[j]) >= iou_min)
    parent = list(range(n))
    members = [{services[i]} for i in range(n)]

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for _, i, j in edges:
        a, b = root(i), root(j)
        if a == b or members[a] & members[b]:
            continue
        parent[b] = a
        members[a] |= members[b]
    roots = [root(i) for i in range(n)]
    first: dict[int, int] = {}
    return np.array([first.setdefault(r, len(first)) for r in roots], dtype=int)


def single_face_images(image_pairs: Sequence[tuple[Any, Any]], compare: Any
                       ) -> tuple[set, set, dict[tuple[Any, Any], float]]:
    """The paper's Algorithm 1: single-face images for a service without a detection API.

    Pairs are compared in order; a pair with an image already known to be invalid is
    skipped. When the service answers ``"invalid"`` (it saw several faces), the image of
    the pair not yet known to be valid is marked invalid (if neither is known valid,
    nothing is marked, as the paper writes it); otherwise the confidence is stored and both
    images are valid. Offline FR models have no such error, so the folder path
    (:func:`image_folder_study`) uses detectors instead; this is the rule itself, for a
    matcher that reports it.

    Parameters
    ----------
    image_pairs : sequence of (image, image)
        The pairs to compare, in order.
    compare : callable
        ``compare(i1, i2)`` -> a confidence (float) or the string ``"invalid"``.

    Returns
    -------
    valid : set
        Images seen in a successful comparison.
    invalid : set
        Images marked as showing several faces.
    confidences : dict
        ``(i1, i2)`` -> confidence of each successful comparison.

    Examples
    --------
    >>> multi = {"c"}   # image c shows two faces
    >>> cmp = lambda a, b: "invalid" if a in multi or b in multi else 0.5
    >>> valid, invalid, conf = single_face_images([("a", "b"), ("a", "c"), ("c", "b")], cmp)
    >>> sorted(valid), sorted(invalid), conf
    (['a', 'b'], ['c'], {('a', 'b'): 0.5})
    """
    valid: set = set()
    invalid: set = set()
    conf: dict[tuple[Any, Any], float] = {}
    for i1, i2 in image_pairs:
        if i1 in invalid or i2 in invalid:
            continue
        result = compare(i1, i2)
        if isinstance(result, str) and result == "invalid":
            if i1 in valid:
                invalid.add(i2)
            if i2 in valid:
                invalid.add(i1)
        else:
            conf[(i1, i2)] = float(result)
            valid.update((i1, i2))
    return valid, invalid, conf
