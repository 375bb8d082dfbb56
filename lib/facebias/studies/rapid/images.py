"""The rapid test's image path (paper 001): folders of photos per name -> scores tables.

:func:`image_folder_study` runs the real pipeline on a folder of images per name (the
names list of :func:`facebias.datasets.rapid.load_names`): reading, the exactly-one-face
rule, near-duplicate removal (:func:`perceptual_hash`, :func:`duplicate_groups`),
embeddings of real face recognisers (dlib, SFace; :mod:`facebias.faces`), within-query
pair scores and same-group cross-query pairs (:func:`cross_query_pairs`). Its scores are
in the contract of :func:`facebias.datasets.rapid.validate_scores`, ready for
:func:`facebias.studies.rapid.estimate`. :func:`image_folder_scores` returns the scores only.

What stands in for the paper (001, §4 and App. B): the cloud services' face detectors are
replaced by offline detectors (YuNet, dlib HOG), and the paper's cross-service FaceID
grouping (IoU > 0.2, Kruskal with one box per service: :func:`face_id_groups`) by the
rule "each detector finds exactly one face, boxes overlap with IoU >= 0.2" (the same with
two detectors); the paper's duplicate removal (MobileNet cosine > 0.9 on images and on face
crops, weights not shipped) by a perceptual hash on images and on face crops. The paper's
Algorithm 1 (single-face images from a matcher's "multiple faces" error, for a service
with no detector) is :func:`single_face_images`; no offline model reports that error, so
the folder path does not use it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.datasets.rapid import SCORES_COLUMNS, validate_names
from facebias.faces.specs import ModelSpec
from facebias.studies.rapid.faceid import _iou, face_id_groups, single_face_images

__all__ = [
    "IMAGE_EXTENSIONS",
    "FACE_COLUMNS",
    "RapidImages",
    "perceptual_hash",
    "duplicate_groups",
    "face_id_groups",
    "single_face_images",
    "cross_query_pairs",
    "load_systems",
    "image_folder_study",
    "image_folder_scores",
]

IMAGE_EXTENSIONS: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
#: Columns of :attr:`RapidImages.faces`.
FACE_COLUMNS: tuple[str, ...] = ("face", "query", "name", "group", "race", "gender", "path",
                                 "width", "height", "box_x", "box_y", "box_w", "box_h")

#: One image or query not used: ``(query, path, stage, reason)``.
_Drop = tuple[str, str, str, str]
#: A photo with exactly one face: ``(image, path, detector box (x, y, w, h) in pixels)``.
_Face = tuple[np.ndarray, Path, tuple[float, ...]]


# --------------------------------------------------------------------------- duplicates
def perceptual_hash(image: np.ndarray) -> np.ndarray:
    """63-bit DCT perceptual hash of an RGB uint8 image (bool array).

    Gray, area-resized to 32 x 32; the 8 x 8 lowest DCT frequencies without the DC term,
    thresholded at their median. Re-encoding, resizing and brightness changes move it by
    0-2 bits; distinct photos differ in ~10-30 bits (measured on procedural renders).

    Parameters
    ----------
    image : numpy.ndarray
        (H, W, 3) RGB uint8 image.

    Returns
    -------
    numpy.ndarray
        (63,) bool hash; compare two with the number of differing bits.

    Examples
    --------
    >>> img = np.zeros((40, 40, 3), np.uint8)
    >>> img[:, 20:] = 255
    >>> brighter = (img.astype(int) + 10).clip(0, 255).astype(np.uint8)
    >>> int((perceptual_hash(img) != perceptual_hash(brighter)).sum())  # bits that differ
    0
    """
    import cv2
    from scipy.fft import dctn

    rgb = np.ascontiguousarray(image)
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    small = cv2.resize(gray, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float64)
    d = dctn(small, norm="ortho")[:8, :8].ravel()[1:]
    return d > np.median(d)


def duplicate_groups(hashes: Sequence[np.ndarray] | np.ndarray, max_bits: int) -> np.ndarray:
    """Connected components of "hash distance <= max_bits" (labels 0..k-1, input order).

    Parameters
    ----------
    hashes : sequence of numpy.ndarray or numpy.ndarray
        (n, b) bool, or (m, n, b) for m hash kinds: two items are linked when any kind
        is within ``max_bits`` bits.
    max_bits : int
        Largest Hamming distance of a duplicate.

    Returns
    -------
    numpy.ndarray
        (n,) component labels 0..k-1, numbered in input order.

    Examples
    --------
    >>> h = np.zeros((3, 63), bool)
    >>> h[1, :2] = True  # 2 bits from item 0: a duplicate
    >>> h[2, :] = True   # 63 bits away
    >>> duplicate_groups(h, max_bits=3)
    array([0, 0, 1])
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    h = np.asarray(hashes, dtype=bool)
    if h.ndim == 2:
        h = h[None]
    n = h.shape[1]
    if n == 0:
        return np.zeros(0, np.int64)
    link = np.zeros((n, n), bool)
    for k in h:
        link |= (k[:, None, :] != k[None, :, :]).sum(-1) <= max_bits
    _, labels = connected_components(csr_matrix(link), directed=False)
    return labels.astype(np.int64)


# --------------------------------------------------------------------------- cross pairs
def cross_query_pairs(faces: pd.DataFrame, seed: int = 2022) -> pd.DataFrame:
    """Cross-query same-group pairs, as many per group as within-query pairs (the tool's
    ``_gen_subsampled_photos``).

    ``faces``: columns ``face, query, group`` (``query`` sortable). For each group g with
    ``ratio_g = diff_g / same_g`` (``same_g = sum m_q (m_q - 1) / 2`` over its queries'
    face counts m_q, ``diff_g = sum_{q<q'} m_q m_q'``), every pair of its queries keeps
    ``max(1, round(m_q m_q' / ratio_g))`` of its face pairs, drawn without replacement
    with one ``np.random.RandomState(seed)`` in (group, query) order.

    Parameters
    ----------
    faces : pandas.DataFrame
        Columns ``face, query, group`` (``query`` sortable).
    seed : int, default 2022
        Seed of the draw.

    Returns
    -------
    pandas.DataFrame
        ``query, face_a, face_b, query_b, group`` (``face_a`` from ``query``).

    Examples
    --------
    >>> faces = pd.DataFrame({"face": ["a1", "a2", "b1", "b2", "c1"],
    ...                       "query": ["qa", "qa", "qb", "qb", "qc"],
    ...                       "group": ["AF", "AF", "AF", "AF", "BM"]})
    >>> cross_query_pairs(faces)  # AF: 2 within-query pairs, so 2 of the 4 cross pairs
      query face_a face_b query_b group
    0    qa     a2     b1      qb    AF
    1    qa     a2     b2      qb    AF
    """
    rng = np.random.RandomState(seed)
    rows = []
    for g, sub in faces.groupby("group", sort=True, observed=True):
        by_q = {q: s["face"].tolist() for q, s in sub.groupby("query", sort=True, observed=True)}
        qs = list(by_q)
        m = np.array([len(by_q[q]) for q in qs], np.float64)
        same = float((m * (m - 1) / 2).sum())
        diff = float((m.sum() ** 2 - (m**2).sum()) / 2)
        if len(qs) < 2 or diff == 0:
            continue
        ratio = diff / same if same > 0 else np.inf
        for i in range(len(qs)):
            for j in range(i + 1, len(qs)):
                fa, fb = by_q[qs[i]], by_q[qs[j]]
                prod = [(x, y) for x in fa for y in fb]
                rng.shuffle(prod)
                k = max(1, int(round(len(prod) / ratio))) if np.isfinite(ratio) else 1
                rows += [(qs[i], x, y, qs[j], g) for x, y in prod[:k]]
    return pd.DataFrame(rows, columns=["query", "face_a", "face_b", "query_b", "group"])


# --------------------------------------------------------------------------- images
@dataclass
class RapidImages:
    """Result of :func:`image_folder_study`.

    Attributes
    ----------
    faces : pandas.DataFrame
        One row per kept face (:data:`FACE_COLUMNS`: ``face, query, name, group, race,
        gender, path, width, height, box_x, box_y, box_w, box_h``; pixels).
    scores : pandas.DataFrame
        Within-query pairs in the contract (``query, face_a, face_b, system, score``;
        cosine similarity of unit embeddings, higher = more alike).
    cross_scores : pandas.DataFrame
        Cross-query same-group pairs (same columns plus ``query_b``).
    dropped : pandas.DataFrame
        One row per image or query not used (``query, path, stage, reason``).
    embeddings : dict of str to numpy.ndarray
        ``{system: (n_faces, d) float32}`` in ``faces`` order.
    settings : dict
        The parameters used.
    """

    faces: pd.DataFrame
    scores: pd.DataFrame
    cross_scores: pd.DataFrame
    dropped: pd.DataFrame
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)


def load_systems(systems: Sequence[Any]) -> dict[str, Any]:
    """Load the models of ``systems`` (model specs), keyed by model name, in order.

    Parameters
    ----------
    systems : sequence of str, ModelSpec or BaseEmbedder
        Model specs (:func:`facebias.faces.specs.parse_model_spec`; a single string is one
        spec), or embedders already loaded (kept as they are; named by their ``spec``, else
        their ``name``). Every spec is parsed before any model is loaded.

    Returns
    -------
    dict of str to facebias.faces.embedders.BaseEmbedder
        ``{model_name(spec): embedder}``; each embedder's ``spec`` is the spec's text.

    Raises
    ------
    ValueError
        For no specs, a bad spec or a model that cannot be loaded (one line naming the
        spec, from :func:`facebias.faces.specs.check_model_spec`), or two specs with the
        same model name (set ``name=`` on one of them).

    Examples
    --------
    >>> load_systems(["sface", "onnx:a/sface.onnx"])
    Traceback (most recent call last):
    ...
    ValueError: systems: two models are named 'sface' ('sface' and 'onnx:a/sface.onnx'): each system needs its own name; add ?name=... to one of the specs
    """
    from facebias.faces.embedders import BaseEmbedder
    from facebias.faces.specs import check_model_spec, parse_model_spec

    if isinstance(systems, str | ModelSpec | BaseEmbedder):
        systems = [systems]
    if not systems:
        raise ValueError("systems is empty; give at least one model spec (sface, dlib, "
                         "onnx:PATH, torch:MODULE:FUNCTION)")
    items = []  # (name, text, spec or embedder): the syntax of all first, one line each
    for s in systems:
        if isinstance(s, BaseEmbedder):
            items.append((parse_model_spec(s.spec).name if s.spec else s.name, s.spec or s.name, s))
        else:
            sp = parse_model_spec(s)
            items.append((sp.name, sp.text, sp))
    seen: dict[str, str] = {}
    for name, text, _ in items:
        if name in seen:
            raise ValueError(f"systems: two models are named {name!r} ({seen[name]!r} and "
                             f"{text!r}): each system needs its own name; add ?name=... to "
                             "one of the specs")
        seen[name] = text
    return {name: obj if isinstance(obj, BaseEmbedder) else check_model_spec(obj)
            for name, _, obj in items}


def image_folder_study(
    names: pd.DataFrame,
    root: str | os.PathLike,
    systems: Sequence[Any] = ("dlib", "sface"),
    cache_dir: str | os.PathLike | None = None,
    detectors: Sequence[str] = ("yunet", "dlib_hog"),
    iou_min: float = 0.2,
    dedup_bits: int = 3,
    min_photos: int = 10,
    max_photos: int = 100,
    cross_seed: int = 2022,
    progress: bool = False,
) -> RapidImages:
    """The rapid test's image path on local folders (no web access needed).

    ``names`` comes from :func:`facebias.datasets.rapid.load_names`; each person's images
    are in ``root/<upload_path>`` (or the absolute ``upload_path``), else ``root/<name>``; a
    missing folder is an error naming it. Per query, files with :data:`IMAGE_EXTENSIONS`
    are taken in sorted order, at most ``max_photos`` (the tool's demo cap, 100). Steps:

    1. **Read** (:func:`facebias.faces.read_image`); an unreadable file is dropped with
       the reader's message. A query with fewer than ``min_photos`` readable photos is
       dropped (the tool's ``N = 10``).
    2. **Exactly one face** (paper §4): every detector in ``detectors`` (stand-ins for
       the services' detection APIs) must find exactly one face, and their boxes must
       overlap with IoU >= ``iou_min`` (0.2; with one box per detector the tool's
       cross-service FaceID grouping, :func:`face_id_groups`, reduces to this for two
       detectors; with more, this pairwise rule is stricter than its chained groups). The embedders re-detect with
       their own detector (YuNet by default, part of ``detectors``), so they embed that
       same face.
    3. **Near duplicates** within a query (substitute for the paper's MobileNet cosine >
       0.9, whose weights need a download): two photos are duplicates when the
       :func:`perceptual_hash` of the whole images, or of the face crops (detector box
       padded 25% per side: the paper's second, face-crop pass), differ in at most
       ``dedup_bits`` of 63 bits (default 3: re-encoded, resized, re-lit or re-framed
       copies measure 0-2; distinct renders >= 4). Groups are connected components; the
       medoid is kept (least summed hash distance, then larger image, then file name).
       FR embeddings were not used for this: same-person photos reach dlib cosines of
       0.98-0.997, and a resized copy only 0.86 with SFace.
    4. **Embeddings** per system (each a model spec, :mod:`facebias.faces.specs`: ``"sface"``,
       ``"dlib"``, ``"onnx:PATH[?...]"``, ``"torch:MODULE:FUNCTION[?...]"``; through
       :class:`facebias.faces.EmbeddingCache` under ``cache_dir`` when given, keyed by the
       model's ``model_id``: a user model's weights hash). A face that fails to enrol in any
       system is dropped from all (every system scores the same faces). Every model is
       loaded (:func:`facebias.faces.specs.check_model_spec`) before any image is read, so
       a bad spec fails at once with one line naming it.
    5. **Scores**: all within-query pairs of kept faces, cosine similarity of the unit
       embeddings per system (dlib's native Euclidean distance d relates as
       ``cos = 1 - d^2 / 2``); and cross-query same-group pairs from
       :func:`cross_query_pairs` (seed ``cross_seed``), for evaluation only.

    Face ids are ``"<person_id>/<file name>"``; ``query`` is the ``person_id``; ``system`` in
    the scores is each model's name (:func:`facebias.faces.specs.model_name`: the built-in
    name, the ONNX file's stem, the torch function's name, or the spec's ``name=``).
    Queries are processed one at a time (read, detect, deduplicate, embed), so memory
    holds one query's images at most; only scores, vectors and aggregates are returned.

    Parameters
    ----------
    names : pandas.DataFrame
        The names list (:func:`facebias.datasets.rapid.load_names`).
    root : str or os.PathLike
        Folder of the per-person image folders.
    systems : sequence of str, ModelSpec or BaseEmbedder, default ("dlib", "sface")
        Model specs (:func:`facebias.faces.specs.parse_model_spec`), or embedders already
        loaded (:func:`load_systems`); their names (:func:`facebias.faces.specs.model_name`)
        must differ.
    cache_dir : str or os.PathLike, optional
        Embedding cache folder.
    detectors : sequence of str, default ("yunet", "dlib_hog")
        Detectors of the exactly-one-face rule.
    iou_min : float, default 0.2
        Least IoU of the detectors' boxes.
    dedup_bits : int, default 3
        Largest hash distance of a near duplicate (of 63 bits).
    min_photos : int, default 10
        Least readable photos per query.
    max_photos : int, default 100
        Most photos read per query.
    cross_seed : int, default 2022
        Seed of :func:`cross_query_pairs`.
    progress : bool, default False
        Show progress bars.

    Returns
    -------
    RapidImages
        Faces, scores, cross-query scores, dropped images, embeddings and settings
        (``systems``: the model names; ``specs``: name -> spec as written; ``models``:
        name -> ``model_id``).

    Raises
    ------
    ValueError
        For an invalid names table, no systems or no detectors, an unknown detector, a
        bad model spec or a model that cannot be loaded (one line naming the spec), two
        specs with the same model name, or a missing image folder (the message names it).
    """
    from facebias.faces import EmbeddingCache, load_detector

    root = Path(root)
    names = validate_names(names, "names", min_per_group=0) if "group" not in names else names
    embedders = load_systems(systems)  # before any image: a bad spec fails at once
    if not detectors:
        raise ValueError("detectors is empty; the exactly-one-face rule needs one or more")
    dets = [load_detector(d) for d in detectors]
    cache = EmbeddingCache(cache_dir) if cache_dir else None
    dropped: list[_Drop] = []
    kept_rows: list[dict] = []
    vec_parts: dict[str, list[np.ndarray]] = {s: [] for s in embedders}

    for i, row in names.iterrows():
        q = str(row["person_id"])
        images, paths = _read_query(i, row, root, max_photos, dropped)  # step 1
        if len(images) < min_photos:
            why = f"query has {len(images)} readable photos < min_photos={min_photos}"
            dropped += [(q, str(p), "query", why) for p in paths]
            continue
        found = _exactly_one_face(q, images, paths, dets, iou_min, dropped)  # step 2
        if not found:
            continue
        kept = _deduplicate(q, found, dedup_bits, dropped)  # step 3
        # step 4 now, so only vectors outlive the query (bounded memory)
        ok, vecs = _embed_query(q, kept, embedders, cache, progress, dropped)
        kept_rows += [_face_row(q, row, face) for face, enrolled in zip(kept, ok, strict=True)
                      if enrolled]
        for s in embedders:
            vec_parts[s].append(vecs[s][ok])
        del images, found, kept

    faces = pd.DataFrame(kept_rows, columns=list(FACE_COLUMNS))
    vectors = {s: (np.concatenate(v) if v else np.zeros((0, embedders[s].dim), np.float32))
               for s, v in vec_parts.items()}
    scores = _within_query_scores(faces, vectors)  # step 5
    cross = _cross_query_scores(faces, vectors, cross_seed)
    drop = pd.DataFrame(dropped, columns=["query", "path", "stage", "reason"])
    settings = {"systems": list(embedders), "specs": {s: e.spec or e.name for s, e in embedders.items()},
                "detectors": list(detectors), "iou_min": iou_min,
                "dedup_bits": dedup_bits, "min_photos": min_photos, "max_photos": max_photos,
                "cross_seed": cross_seed, "root": str(root),
                "models": {s: e.model_id for s, e in embedders.items()}}
    return RapidImages(faces, scores, cross, drop, vectors, settings)


def image_folder_scores(names: pd.DataFrame, root: str | os.PathLike,
                        systems: Sequence[str | ModelSpec] = ("dlib", "sface"),
                        cache_dir: str | os.PathLike | None = None, **kwargs: Any) -> pd.DataFrame:
    """Within-query scores of :func:`image_folder_study` (the contract's columns).

    Parameters
    ----------
    names, root, systems, cache_dir
        As in :func:`image_folder_study`.
    **kwargs
        Further :func:`image_folder_study` arguments.

    Returns
    -------
    pandas.DataFrame
        ``query, face_a, face_b, system, score`` (cosine similarities).

    Raises
    ------
    ValueError
        As :func:`image_folder_study`.
    """
    return image_folder_study(names, root, systems, cache_dir, **kwargs).scores


# --------------------------------------------------------------------------- pipeline steps
# Each step of image_folder_study appends the images it drops to ``dropped``, in order.
def _folder(row: pd.Series, root: Path) -> Path:
    """A person's image folder: ``upload_path`` (absolute, or under ``root``), else
    ``root/<name>``."""
    up = row.get("upload_path")
    if isinstance(up, str) and up:
        p = Path(up)
        return p if p.is_absolute() else root / p
    return root / row["name"]


def _read_query(i: Any, row: pd.Series, root: Path, max_photos: int,
                dropped: list[_Drop]) -> tuple[list[np.ndarray], list[Path]]:
    """Step 1: the readable images of names row ``i`` (sorted file names with an image
    extension, hidden files skipped, at most ``max_photos``) and their paths."""
    from facebias.faces import read_image
    from facebias.faces.images import ImageReadError

    q = str(row["person_id"])
    folder = _folder(row, root)
    if not folder.is_dir():
        raise ValueError(f"names row {i} (person_id {q!r}, name {row['name']!r}): image "
                         f"folder {folder} does not exist")
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and not p.name.startswith(".")
                   and p.suffix.lower() in IMAGE_EXTENSIONS)
    for p in files[max_photos:]:
        dropped.append((q, str(p), "read", f"over max_photos={max_photos}"))
    images, paths = [], []
    for p in files[:max_photos]:
        try:
            images.append(read_image(p))
            paths.append(p)
        except ImageReadError as exc:
            dropped.append((q, str(p), "read", str(exc)))
    return images, paths


def _exactly_one_face(q: str, images: list[np.ndarray], paths: list[Path], dets: list,
                      iou_min: float, dropped: list[_Drop]) -> list[_Face]:
    """Step 2: the photos in which every detector finds exactly one face and all boxes
    overlap with IoU >= ``iou_min``; the first detector's box is kept."""
    faces = []
    for img, p in zip(images, paths, strict=True):
        found = [d.detect(img) for d in dets]
        counts = [len(f) for f in found]
        if any(c != 1 for c in counts):
            what = ", ".join(f"{d.name}: {c}" for d, c in zip(dets, counts, strict=True))
            kind = "no face" if max(counts) == 0 else "not exactly one face"
            dropped.append((q, str(p), "detect", f"{kind} ({what})"))
            continue
        bx = [f[0].box for f in found]
        worst = min((_iou(bx[a], bx[b]) for a in range(len(bx)) for b in range(a + 1, len(bx))),
                    default=1.0)
        if worst < iou_min:
            dropped.append((q, str(p), "detect",
                            f"detectors disagree on the face (IoU {worst:.2f} < {iou_min})"))
            continue
        faces.append((img, p, bx[0]))
    return faces


def _face_crop(image: np.ndarray, box: tuple[float, ...], pad: float = 0.25) -> np.ndarray:
    """The box padded by ``pad`` of its size per side, clipped to the image (the whole
    image if nothing is left)."""
    x, y, w, h = box
    x0, y0 = int(max(0, x - pad * w)), int(max(0, y - pad * h))
    x1 = int(min(image.shape[1], x + (1 + pad) * w))
    y1 = int(min(image.shape[0], y + (1 + pad) * h))
    if x1 <= x0 or y1 <= y0:
        return image
    return np.ascontiguousarray(image[y0:y1, x0:x1])


def _deduplicate(q: str, faces: list[_Face], dedup_bits: int, dropped: list[_Drop]) -> list[_Face]:
    """Step 3: one photo per group of near duplicates (whole-image or face-crop hashes
    within ``dedup_bits``), the medoid: least summed whole-image hash distance, then the
    larger image, then the file name."""
    h_full = np.array([perceptual_hash(img) for img, _, _ in faces])
    h_crop = np.array([perceptual_hash(_face_crop(img, b)) for img, _, b in faces])
    labels = duplicate_groups(np.stack([h_full, h_crop]), dedup_bits)
    keep = np.ones(len(faces), bool)
    for lab in np.unique(labels):
        members = np.flatnonzero(labels == lab)
        if members.size < 2:
            continue
        dist = (h_full[members][:, None] != h_full[members][None]).sum((1, 2))
        size = np.array([faces[m][0].shape[0] * faces[m][0].shape[1] for m in members])
        order = np.lexsort(([faces[m][1].name for m in members], -size, dist))
        medoid = members[order[0]]
        for m in members:
            if m != medoid:
                keep[m] = False
                dropped.append((q, str(faces[m][1]), "duplicate",
                                f"near-duplicate of {faces[medoid][1].name} "
                                f"(perceptual hash within {dedup_bits} bits)"))
    return [faces[k] for k in np.flatnonzero(keep)]


def _embed_query(q: str, faces: list[_Face], embedders: dict, cache: Any, progress: bool,
                 dropped: list[_Drop]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Step 4: ``(enrolled in every system, {system: vectors of all faces})``; a face
    that fails in any system is dropped with the first system's reason."""
    imgs = [img for img, _, _ in faces]
    ok = np.ones(len(faces), bool)
    why: list[str | None] = [None] * len(faces)
    vecs = {}
    for s, emb in embedders.items():
        res = (cache.embed(emb, imgs, progress=progress) if cache is not None
               else emb.embed(imgs))
        vecs[s] = res.vectors
        for j in np.flatnonzero(~res.enrolled & ok):
            why[j] = f"failed to enrol in {s}: {res.reasons[j]}"
        ok &= res.enrolled
    for j in np.flatnonzero(~ok):
        dropped.append((q, str(faces[j][1]), "embed", why[j]))
    return ok, vecs


def _face_row(q: str, row: pd.Series, face: _Face) -> dict:
    """One :data:`FACE_COLUMNS` row of a kept face of query ``q`` (names row ``row``)."""
    img, p, (x, y, w, h) = face
    return {"face": f"{q}/{p.name}", "query": q, "name": row["name"], "group": row["group"],
            "race": row["race"], "gender": row["gender"], "path": str(p),
            "width": img.shape[1], "height": img.shape[0],
            "box_x": x, "box_y": y, "box_w": w, "box_h": h}


def _cosines(v: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Row-wise dot products (float64) of unit vectors ``v[ia]`` and ``v[ib]``."""
    return np.einsum("ij,ij->i", v[ia].astype(np.float64), v[ib].astype(np.float64))


def _within_query_scores(faces: pd.DataFrame, vectors: dict[str, np.ndarray]) -> pd.DataFrame:
    """Step 5: every within-query pair of ``faces`` per system, in the scores contract."""
    parts = []
    for q, sub in faces.groupby("query", sort=False):
        idx = sub.index.to_numpy()
        a, b = np.triu_indices(idx.size, 1)
        for s, v in vectors.items():
            sc = _cosines(v, idx[a], idx[b])
            parts.append(pd.DataFrame({"query": q, "face_a": faces["face"].to_numpy()[idx[a]],
                                       "face_b": faces["face"].to_numpy()[idx[b]], "system": s,
                                       "score": sc}))
    return (pd.concat(parts, ignore_index=True) if parts
            else pd.DataFrame(columns=list(SCORES_COLUMNS)))


def _cross_query_scores(faces: pd.DataFrame, vectors: dict[str, np.ndarray],
                        seed: int) -> pd.DataFrame:
    """Step 5: the :func:`cross_query_pairs` of ``faces`` per system (scores contract plus
    ``query_b``)."""
    index = pd.Series(np.arange(len(faces)), index=faces["face"])
    pairs = cross_query_pairs(faces, seed=seed)
    cparts = []
    if len(pairs):
        ia, ib = index[pairs["face_a"]].to_numpy(), index[pairs["face_b"]].to_numpy()
        for s, v in vectors.items():
            sc = _cosines(v, ia, ib)
            cparts.append(pairs[["query", "face_a", "face_b"]].assign(system=s, score=sc,
                                                                      query_b=pairs["query_b"]))
    return (pd.concat(cparts, ignore_index=True) if cparts
            else pd.DataFrame(columns=[*SCORES_COLUMNS, "query_b"]))
