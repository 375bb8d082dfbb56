"""Inputs of the rapid test (paper 001): names list, scores tables, and image folders.

Three entry points:

* :func:`load_names` reads the frt-rapid-test ``names.csv`` (``person_id,name,race,gender``
  plus an optional ``upload_path``; ``person_id`` may be omitted, as in the authors'
  docstring, and is then numbered 0..n-1). The demographic key is
  ``group = race + " " + gender`` (the authors' ``race_gender``).
* :func:`load_scores` / :func:`validate_scores` check a scores table in the contract:
  ``query, face_a, face_b, system, score`` (raw similarities, higher = more alike; one row
  per unordered within-query pair and system). A cross-query table (impostor pairs, used
  for evaluation only) has the extra column ``query_b``: the query of ``face_b``.
* :func:`image_folder_study` (and :func:`image_folder_scores`, its scores only) runs the
  real pipeline on a folder of images per name: reading, the exactly-one-face rule,
  near-duplicate removal, embeddings of real face recognisers (dlib, SFace;
  :mod:`facebias.faces`), within-query pair scores and same-group cross-query pairs.

Row numbers in error messages are 0-based data rows; for a CSV file also its line.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "NAMES_COLUMNS",
    "SCORES_COLUMNS",
    "IMAGE_EXTENSIONS",
    "RapidImages",
    "load_names",
    "validate_names",
    "load_scores",
    "validate_scores",
    "perceptual_hash",
    "duplicate_groups",
    "cross_query_pairs",
    "image_folder_study",
    "image_folder_scores",
]

NAMES_COLUMNS: tuple[str, ...] = ("person_id", "name", "race", "gender")
SCORES_COLUMNS: tuple[str, ...] = ("query", "face_a", "face_b", "system", "score")
IMAGE_EXTENSIONS: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


# --------------------------------------------------------------------------- names.csv
def _where(i: int, csv: bool) -> str:
    return f"row {i} (line {i + 2})" if csv else f"row {i}"


def validate_names(df: pd.DataFrame, source: str = "names", min_per_group: int = 2,
                   on_small_group: str = "error", csv: bool = False) -> pd.DataFrame:
    """Check and normalise a names table; see :func:`load_names` for the rules.

    Returns a new frame with columns ``person_id, name, race, gender, group`` and
    ``upload_path`` (None where empty), in input order.
    """
    if on_small_group not in ("error", "warn"):
        raise ValueError(f"on_small_group must be 'error' or 'warn', got {on_small_group!r}")
    df = df.reset_index(drop=True)
    df.columns = [str(c).strip() for c in df.columns]
    need = [c for c in ("name", "race", "gender") if c not in df.columns]
    if need:
        raise ValueError(f"{source}: missing column(s) {need}; names.csv needs "
                         f"{list(NAMES_COLUMNS)} (person_id optional) and optionally upload_path; "
                         f"found {list(df.columns)}")
    if len(df) == 0:
        raise ValueError(f"{source}: no names")
    out = pd.DataFrame(index=df.index)
    if "person_id" in df.columns:
        pid = df["person_id"]
        bad = pid.isna() | (pid.astype(str).str.strip() == "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{source}: column 'person_id': empty value at {_where(i, csv)}")
        out["person_id"] = pid.astype(str).str.strip()
    else:
        out["person_id"] = [str(i) for i in range(len(df))]
    for col in ("name", "race", "gender"):
        val = df[col]
        text = val.astype(str).str.strip()
        bad = val.isna() | (text == "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{source}: column {col!r}: empty value at {_where(i, csv)} "
                             f"(person_id {out['person_id'].iloc[i]!r})")
        out[col] = text
    for col, what in (("person_id", "person_id"), ("name", "name")):
        key = out[col] if col == "person_id" else out[col].str.casefold().str.split().str.join(" ")
        dup = key.duplicated(keep=False).to_numpy()
        if dup.any():
            rows = np.flatnonzero(dup)
            first = rows[key.iloc[rows] == key.iloc[rows[0]]][:2]
            hint = (" (a person listed twice makes one identity two queries, and the method "
                    "then underestimates accuracy)") if col == "name" else ""
            raise ValueError(f"{source}: duplicate {what} {out[col].iloc[first[0]]!r} at "
                             f"{_where(int(first[0]), csv)} and {_where(int(first[1]), csv)}{hint}")
    out["group"] = out["race"] + " " + out["gender"]
    if "upload_path" in df.columns:
        up = df["upload_path"]
        text = up.astype(str).str.strip()
        vals = [None if (pd.isna(v) or t == "") else t for v, t in zip(up, text, strict=True)]
    else:
        vals = [None] * len(out)
    out["upload_path"] = pd.Series(vals, index=out.index, dtype=object)
    counts = out["group"].value_counts()
    small = counts[counts < min_per_group]
    if len(small):
        found = {str(k): int(v) for k, v in small.sort_index().items()}
        msg = (f"{source}: fewer than {min_per_group} names in race/gender group(s) {found}; "
               f"cross-query (impostor) pairs need at least {min_per_group} names per group "
               f"(the frt-rapid-test tool refuses such lists)")
        if on_small_group == "error":
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)
    return out.reset_index(drop=True)


def load_names(path: str | os.PathLike, min_per_group: int = 2,
               on_small_group: str = "error") -> pd.DataFrame:
    """Read a frt-rapid-test ``names.csv``.

    Columns: ``name, race, gender`` (required), ``person_id`` (optional; numbered 0..n-1
    when absent) and ``upload_path`` (optional; a folder of the person's images, relative
    to the images root or absolute; empty = the folder named after the person).
    Values are stripped of surrounding spaces. Errors (``ValueError`` naming the file, the
    column and the row): a missing column, an empty value, a duplicate ``person_id``, a
    duplicate name (compared case- and whitespace-insensitively: the paper's name hygiene).
    Every race/gender group must have at least ``min_per_group`` names (the authors'
    tool asserts 2; cross-query impostor pairs need 2 queries per group):
    ``on_small_group="error"`` (default) raises, ``"warn"`` only warns.

    Returns ``person_id, name, race, gender, group, upload_path`` with ``person_id`` as str
    and ``group = race + " " + gender``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"names file {path} not found")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""],
                         skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc})") from exc
    except pd.errors.EmptyDataError as exc:
        raise ValueError(f"{path}: empty file") from exc
    return validate_names(df, str(path), min_per_group, on_small_group, csv=True)


# --------------------------------------------------------------------------- scores
def validate_scores(scores: pd.DataFrame, source: str = "scores", cross: bool = False,
                    csv: bool = False) -> pd.DataFrame:
    """Check a scores table in the contract and return it (row order kept, index reset).

    ``cross=False`` (within-query pairs): columns :data:`SCORES_COLUMNS`; every face belongs
    to one query only. ``cross=True`` (cross-query impostor pairs): also ``query_b`` (the
    query of ``face_b``), which must differ from ``query``. Always: no missing values,
    numeric finite scores, ``face_a != face_b``, and no unordered pair twice for the same
    system. Raises ``ValueError`` naming the source, the column and the first bad row.
    """
    need = list(SCORES_COLUMNS) + (["query_b"] if cross else [])
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"{source}: expected a pandas DataFrame, got {type(scores).__name__}")
    missing = [c for c in need if c not in scores.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing}; a scores table has "
                         f"{need} (raw similarities, one row per pair and system); "
                         f"found {list(scores.columns)}")
    df = scores.reset_index(drop=True)
    if len(df) == 0:
        raise ValueError(f"{source}: the table has no rows")

    def fail(col: str, problem: str, bad: np.ndarray) -> None:
        i = int(np.flatnonzero(bad)[0])
        v = df[col].iloc[i]
        v = v.item() if isinstance(v, np.generic) else v
        raise ValueError(f"{source}: column {col!r}: {problem}; first offending "
                         f"{_where(i, csv)}: {v!r}")

    for c in need:
        bad = df[c].isna().to_numpy()
        if c != "score" and not pd.api.types.is_numeric_dtype(df[c]):
            bad = bad | (df[c].astype(str).str.strip() == "").to_numpy()
        if bad.any():
            fail(c, "missing value", bad)
    if pd.api.types.is_bool_dtype(df["score"]):
        raise ValueError(f"{source}: column 'score' is boolean; scores are raw similarities")
    s = pd.to_numeric(df["score"], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(s).all():
        fail("score", "not a finite number", ~np.isfinite(s))
    df["score"] = s
    a, b = df["face_a"].astype(str).to_numpy(), df["face_b"].astype(str).to_numpy()
    if (a == b).any():
        fail("face_b", "a face paired with itself (face_a == face_b)", a == b)
    q = df["query"].astype(str).to_numpy()
    if cross:
        qb = df["query_b"].astype(str).to_numpy()
        if (q == qb).any():
            fail("query_b", "same query on both sides of a cross-query pair", q == qb)
        owner = pd.DataFrame({"face": np.r_[a, b], "query": np.r_[q, qb]})
    else:
        owner = pd.DataFrame({"face": np.r_[a, b], "query": np.r_[q, q]})
    n_q = owner.drop_duplicates().groupby("face")["query"].nunique()
    if (n_q > 1).any():
        face = n_q.index[(n_q > 1).to_numpy()][0]
        qs = sorted(owner.loc[owner["face"] == face, "query"].unique())[:3]
        rows = np.flatnonzero((a == face) | (b == face))[:2]
        raise ValueError(f"{source}: face {face!r} appears under several queries {qs} "
                         f"(e.g. {_where(int(rows[0]), csv)}); a photo belongs to exactly one "
                         f"query (the search that returned it)")
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = pd.DataFrame({"s": df["system"].astype(str).to_numpy(), "lo": lo, "hi": hi})
    dup = key.duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        r0 = rows[0]
        same = rows[(key.iloc[rows] == key.iloc[r0]).all(axis=1).to_numpy()]
        raise ValueError(f"{source}: pair ({lo[r0]!r}, {hi[r0]!r}) scored twice by system "
                         f"{key['s'].iloc[r0]!r}: {_where(int(same[0]), csv)} and "
                         f"{_where(int(same[1]), csv)} (one row per unordered pair and system)")
    return df


def load_scores(path: str | os.PathLike, cross: bool = False) -> pd.DataFrame:
    """Read and validate a scores table (``.csv`` or ``.parquet``); see
    :func:`validate_scores`. ``query``, ``face_*`` and ``system`` are read as strings."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"scores file {path} not found")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        keys = {c: str for c in ("query", "query_b", "face_a", "face_b", "system")}
        try:
            df = pd.read_csv(path, dtype=keys)
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise ValueError(f"{path}: not a readable CSV file ({exc})") from exc
        return validate_scores(df, str(path), cross=cross, csv=True)
    if suffix == ".parquet":
        return validate_scores(pd.read_parquet(path), str(path), cross=cross)
    raise ValueError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")


# --------------------------------------------------------------------------- duplicates
def perceptual_hash(image: np.ndarray) -> np.ndarray:
    """63-bit DCT perceptual hash of an RGB uint8 image (bool array).

    Gray, area-resized to 32 x 32; the 8 x 8 lowest DCT frequencies without the DC term,
    thresholded at their median. Re-encoding, resizing and brightness changes move it by
    0-2 bits; distinct photos differ in ~10-30 bits (measured on procedural renders).
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

    ``hashes`` is (n, b) bool, or (m, n, b) for m hash kinds: two items are linked when
    any kind is within ``max_bits`` bits.
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
    with one ``np.random.RandomState(seed)`` in (group, query) order. Returns
    ``query, face_a, face_b, query_b, group`` (``face_a`` from ``query``).
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

    ``faces``: one row per kept face (``face, query, name, group, race, gender, path,
    width, height, box_x, box_y, box_w, box_h``); ``scores``: within-query pairs in the
    contract (``query, face_a, face_b, system, score``; cosine similarity of unit
    embeddings); ``cross_scores``: cross-query same-group pairs (same columns plus
    ``query_b``); ``dropped``: one row per image or query not used (``query, path,
    stage, reason``); ``embeddings``: ``{system: (n_faces, d) float32}`` in ``faces`` order;
    ``settings``: the parameters used.
    """

    faces: pd.DataFrame
    scores: pd.DataFrame
    cross_scores: pd.DataFrame
    dropped: pd.DataFrame
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw = max(0.0, min(ax + aw, bx + bw) - max(ax, bx))
    ih = max(0.0, min(ay + ah, by + bh) - max(ay, by))
    inter = iw * ih
    union = aw * ah + bw * bh - inter
    return inter / union if union > 0 else 0.0


def _face_crop(image: np.ndarray, box: tuple[float, ...], pad: float = 0.25) -> np.ndarray:
    x, y, w, h = box
    x0, y0 = int(max(0, x - pad * w)), int(max(0, y - pad * h))
    x1 = int(min(image.shape[1], x + (1 + pad) * w))
    y1 = int(min(image.shape[0], y + (1 + pad) * h))
    if x1 <= x0 or y1 <= y0:
        return image
    return np.ascontiguousarray(image[y0:y1, x0:x1])


def _folder(row: pd.Series, root: Path) -> Path:
    up = row.get("upload_path")
    if isinstance(up, str) and up:
        p = Path(up)
        return p if p.is_absolute() else root / p
    return root / row["name"]


def image_folder_study(
    names: pd.DataFrame,
    root: str | os.PathLike,
    systems: Sequence[str] = ("dlib", "sface"),
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

    ``names`` comes from :func:`load_names`; each person's images are in
    ``root/<upload_path>`` (or the absolute ``upload_path``), else ``root/<name>``; a
    missing folder is an error naming it. Per query, files with :data:`IMAGE_EXTENSIONS`
    are taken in sorted order, at most ``max_photos`` (the tool's demo cap, 100). Steps:

    1. **Read** (:func:`facebias.faces.read_image`); an unreadable file is dropped with
       the reader's message. A query with fewer than ``min_photos`` readable photos is
       dropped (the tool's ``N = 10``).
    2. **Exactly one face** (paper §4): every detector in ``detectors`` (stand-ins for
       the services' detection APIs) must find exactly one face, and their boxes must
       overlap with IoU >= ``iou_min`` (0.2; with one box per detector the tool's
       cross-service FaceID grouping reduces to this). The embedders re-detect with
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
    4. **Embeddings** per system (``facebias.faces.load_embedder(name)``; through
       :class:`facebias.faces.EmbeddingCache` under ``cache_dir`` when given). A face that
       fails to enrol in any system is dropped from all (every system scores the same
       faces).
    5. **Scores**: all within-query pairs of kept faces, cosine similarity of the unit
       embeddings per system (dlib's native Euclidean distance d relates as
       ``cos = 1 - d^2 / 2``); and cross-query same-group pairs from
       :func:`cross_query_pairs` (seed ``cross_seed``), for evaluation only.

    Face ids are ``"<person_id>/<file name>"``; ``query`` is the ``person_id``.
    Queries are processed one at a time (read, detect, deduplicate, embed), so memory
    holds one query's images at most; only scores, vectors and aggregates are returned.
    """
    from facebias.faces import EmbeddingCache, load_detector, load_embedder, read_image
    from facebias.faces.images import ImageReadError

    root = Path(root)
    names = validate_names(names, "names", min_per_group=0) if "group" not in names else names
    if not systems:
        raise ValueError("systems is empty; give at least one embedder name (dlib, sface)")
    if not detectors:
        raise ValueError("detectors is empty; the exactly-one-face rule needs one or more")
    dets = [load_detector(d) for d in detectors]
    embedders = {s: load_embedder(s) for s in systems}
    cache = EmbeddingCache(cache_dir) if cache_dir else None
    dropped: list[tuple[str, str, str, str]] = []
    kept_rows: list[dict] = []
    vec_parts: dict[str, list[np.ndarray]] = {s: [] for s in embedders}

    for i, row in names.iterrows():
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
        if len(images) < min_photos:
            why = f"query has {len(images)} readable photos < min_photos={min_photos}"
            dropped += [(q, str(p), "query", why) for p in paths]
            continue
        boxes = []
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
            boxes.append((img, p, bx[0]))
        if not boxes:
            continue
        h_full = np.array([perceptual_hash(img) for img, _, _ in boxes])
        h_crop = np.array([perceptual_hash(_face_crop(img, b)) for img, _, b in boxes])
        labels = duplicate_groups(np.stack([h_full, h_crop]), dedup_bits)
        keep = np.ones(len(boxes), bool)
        for lab in np.unique(labels):
            members = np.flatnonzero(labels == lab)
            if members.size < 2:
                continue
            dist = (h_full[members][:, None] != h_full[members][None]).sum((1, 2))
            size = np.array([boxes[m][0].shape[0] * boxes[m][0].shape[1] for m in members])
            order = np.lexsort(([boxes[m][1].name for m in members], -size, dist))
            medoid = members[order[0]]
            for m in members:
                if m != medoid:
                    keep[m] = False
                    dropped.append((q, str(boxes[m][1]), "duplicate",
                                    f"near-duplicate of {boxes[medoid][1].name} "
                                    f"(perceptual hash within {dedup_bits} bits)"))
        kept = [boxes[k] for k in np.flatnonzero(keep)]
        # embed this query's faces now, so only vectors outlive the loop (bounded memory)
        imgs = [img for img, _, _ in kept]
        ok = np.ones(len(kept), bool)
        why: list[str | None] = [None] * len(kept)
        vecs = {}
        for s, emb in embedders.items():
            res = (cache.embed(emb, imgs, progress=progress) if cache is not None
                   else emb.embed(imgs))
            vecs[s] = res.vectors
            for j in np.flatnonzero(~res.enrolled & ok):
                why[j] = f"failed to enrol in {s}: {res.reasons[j]}"
            ok &= res.enrolled
        for j, (img, p, (x, y, w, h)) in enumerate(kept):
            if not ok[j]:
                dropped.append((q, str(p), "embed", why[j]))
                continue
            kept_rows.append({"face": f"{q}/{p.name}", "query": q, "name": row["name"],
                              "group": row["group"], "race": row["race"], "gender": row["gender"],
                              "path": str(p), "width": img.shape[1], "height": img.shape[0],
                              "box_x": x, "box_y": y, "box_w": w, "box_h": h})
        for s in embedders:
            vec_parts[s].append(vecs[s][ok])
        del images, boxes, kept, imgs

    faces = pd.DataFrame(kept_rows, columns=["face", "query", "name", "group", "race", "gender",
                                             "path", "width", "height", "box_x", "box_y",
                                             "box_w", "box_h"])
    vectors = {s: (np.concatenate(v) if v else np.zeros((0, embedders[s].dim), np.float32))
               for s, v in vec_parts.items()}

    index = pd.Series(np.arange(len(faces)), index=faces["face"])
    parts = []
    for q, sub in faces.groupby("query", sort=False):
        idx = sub.index.to_numpy()
        a, b = np.triu_indices(idx.size, 1)
        for s, v in vectors.items():
            sc = np.einsum("ij,ij->i", v[idx[a]].astype(np.float64), v[idx[b]].astype(np.float64))
            parts.append(pd.DataFrame({"query": q, "face_a": faces["face"].to_numpy()[idx[a]],
                                       "face_b": faces["face"].to_numpy()[idx[b]], "system": s,
                                       "score": sc}))
    scores = (pd.concat(parts, ignore_index=True) if parts
              else pd.DataFrame(columns=list(SCORES_COLUMNS)))
    pairs = cross_query_pairs(faces, seed=cross_seed)
    cparts = []
    if len(pairs):
        ia, ib = index[pairs["face_a"]].to_numpy(), index[pairs["face_b"]].to_numpy()
        for s, v in vectors.items():
            sc = np.einsum("ij,ij->i", v[ia].astype(np.float64), v[ib].astype(np.float64))
            cparts.append(pairs[["query", "face_a", "face_b"]].assign(system=s, score=sc,
                                                                      query_b=pairs["query_b"]))
    cross = (pd.concat(cparts, ignore_index=True) if cparts
             else pd.DataFrame(columns=[*SCORES_COLUMNS, "query_b"]))
    drop = pd.DataFrame(dropped, columns=["query", "path", "stage", "reason"])
    settings = {"systems": list(systems), "detectors": list(detectors), "iou_min": iou_min,
                "dedup_bits": dedup_bits, "min_photos": min_photos, "max_photos": max_photos,
                "cross_seed": cross_seed, "root": str(root),
                "models": {s: e.model_id for s, e in embedders.items()}}
    return RapidImages(faces, scores, cross, drop, vectors, settings)


def image_folder_scores(names: pd.DataFrame, root: str | os.PathLike,
                        systems: Sequence[str] = ("dlib", "sface"),
                        cache_dir: str | os.PathLike | None = None, **kwargs) -> pd.DataFrame:
    """Within-query scores of :func:`image_folder_study` (the contract's columns)."""
    return image_folder_study(names, root, systems, cache_dir, **kwargs).scores
