"""An example photo folder for the rapid test (paper 001) with a known truth, made offline.

:func:`make_example_folder` renders known identities with the procedural generator
(:class:`facebias.generate.procedural.ProceduralGenerator`) into ``OUT/<query>/*.png``, one
folder per searched name, the way a web image search returns them: most photos show the
queried person (each with its own head yaw, lighting, framing and background), and a few
show **other people** of the same group (the planted wrong identities; each is a different
person). Two extra files show what the folder path drops: a re-encoded JPEG copy of a photo
in the first folder (a near duplicate) and a photo without a face in the second. It writes
``OUT/truth.csv`` (which photo shows the queried person) and ``OUT/groups.csv`` (each
query's group: the rendered gender, ``female`` / ``male``, alternating), the inputs of
``facebias rapid OUT --groups OUT/groups.csv --truth OUT/truth.csv``
(:func:`facebias.studies.rapid.folders.run_rapid_folders`).

What it tests: whether the method finds the planted photos (labels them 0) and keeps the
queried person's (labels them 1) on real detectors and face-recognition models. The
renders are simpler than web photos, so the label accuracy here is an upper bound of what
to expect on real folders, not an estimate of it. The method needs the queried person to be
the prevalent identity (``others`` well under half of ``photos``; paper 001 §5).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["TRUTH_COLUMNS", "ExampleFolder", "make_example_folder"]

#: Columns of ``truth.csv``: ``is_target`` 1 = the queried person; ``kind`` is ``person``,
#: ``other`` (a planted photo of someone else), ``copy`` (a re-encoded copy of a person
#: photo) or ``no_face``.
TRUTH_COLUMNS: tuple[str, ...] = ("face", "query", "file", "identity", "is_target", "kind")
_YAWS = (-20.0, -12.0, -4.0, 4.0, 12.0, 20.0)  # degrees; |yaw| <= 20 keeps dlib's HOG detector
_GROUPS = ("female", "male")


@dataclass
class ExampleFolder:
    """What :func:`make_example_folder` wrote.

    Attributes
    ----------
    root : pathlib.Path
        The folder (``root/<query>/*.png``, ``truth.csv``, ``groups.csv``).
    truth : pandas.DataFrame
        :data:`TRUTH_COLUMNS`, one row per photo (``face`` = ``"<query>/<file>"``).
    groups : pandas.DataFrame
        ``query, group``.
    """

    root: Path
    truth: pd.DataFrame
    groups: pd.DataFrame


def _check_counts(queries: int, photos: int, others: int, size: int) -> None:
    for name, v, lo in (("queries", queries, 2), ("photos", photos, 1), ("others", others, 0)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
            raise ValueError(f"{name}: must be an integer >= {lo}, got {v!r}")
    if others >= photos:
        raise ValueError(f"others: must be fewer than photos={photos} (each folder needs photos of "
                         f"its person), got {others}")
    if not 64 <= size <= 512:
        raise ValueError(f"size: must be in 64..512 pixels, got {size!r}")


def _pick_identities(gen, queries: int, others: int, seed: int) -> tuple[np.ndarray, list[str], list[list[int]]]:
    """Latents of the queried people and of the planted others, and each query's group.

    Returns ``(latents, group per query, planted identity indices per query)``; identity
    ``k < queries`` is query ``k``'s person, the others are distinct people of that group."""
    group = [_GROUPS[k % 2] for k in range(queries)]
    need = {g: group.count(g) * (1 + others) for g in _GROUPS}
    pool, pool_group, batch = [], [], 0
    while any(sum(pg == g for pg in pool_group) < need[g] for g in _GROUPS):
        z = gen.sample(64, seed=seed * 1000 + batch)
        male = gen.truth(z)["gender"].to_numpy() > 0.5
        pool += list(z)
        pool_group += [_GROUPS[int(m)] for m in male]
        batch += 1
        if batch > 100:  # pragma: no cover - the generator's gender is balanced
            raise ValueError("could not draw enough identities of each gender")
    by_group = {g: [i for i, pg in enumerate(pool_group) if pg == g] for g in _GROUPS}
    chosen = [by_group[g].pop(0) for g in group]  # query k's person
    planted = [[by_group[g].pop(0) for _ in range(others)] for g in group]
    order = chosen + [i for p in planted for i in p]
    latents = np.array([pool[i] for i in order])
    index = {i: k for k, i in enumerate(order)}
    return latents, group, [[index[i] for i in p] for p in planted]


def _gradient(size: int, rng: np.random.Generator) -> np.ndarray:
    """A (size, size, 3) uint8 background: a linear blend of two random colours at a random
    angle (web photos' backgrounds differ; a plain canvas would make every render a near
    duplicate of the next)."""
    c0, c1 = rng.integers(30, 226, 3), rng.integers(30, 226, 3)
    a = rng.uniform(0, 2 * np.pi)
    yy, xx = np.mgrid[0:size, 0:size] / max(size - 1, 1)
    t = (np.cos(a) * (xx - 0.5) + np.sin(a) * (yy - 0.5)) / 1.42 + 0.5
    return (c0 * (1 - t[..., None]) + c1 * t[..., None]).round().clip(0, 255).astype(np.uint8)


def _as_photo(render: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The render on a random background, zoomed by 0.8-1.0 and placed at a random spot.

    The background is the render's pure-white canvas connected to its border."""
    import cv2

    size = render.shape[0]
    white = np.all(render == 255, axis=-1).astype(np.uint8)
    _, lab = cv2.connectedComponents(white, connectivity=4)
    edge = np.unique(np.r_[lab[0], lab[-1], lab[:, 0], lab[:, -1]])
    head = ~np.isin(lab, edge[edge > 0])
    k = int(round(size * rng.uniform(0.8, 1.0)))
    small = cv2.resize(render, (k, k), interpolation=cv2.INTER_AREA)
    mask = cv2.resize(head.astype(np.uint8), (k, k), interpolation=cv2.INTER_NEAREST).astype(bool)
    photo = _gradient(size, rng)
    ox, oy = (int(v) for v in rng.integers(0, size - k + 1, 2))
    region = photo[oy:oy + k, ox:ox + k]
    region[mask] = small[mask]
    return photo


def make_example_folder(out: str | os.PathLike, queries: int = 8, photos: int = 12,
                        others: int = 2, seed: int = 0, size: int = 128,
                        extras: bool = True) -> ExampleFolder:
    """Write an example folder of ``queries`` searched names with a known truth.

    Each query folder ``out/<query>/`` (``person_00``, ``person_01``, ...) holds
    ``photos`` PNG files in shuffled order: ``photos - others`` of the queried person
    (distinct yaw in +-20 degrees and lighting, random framing and background) and
    ``others`` planted photos of other people of the same group, each a different person.
    With ``extras``, the first folder also holds a re-encoded JPEG copy of one of its
    person's photos (a near duplicate the folder path drops) and the second a photo with
    no face (dropped at detection). Deterministic in ``seed``.

    Parameters
    ----------
    out : str or os.PathLike
        A new or empty folder.
    queries : int, default 8
        Query folders (>= 2); groups alternate female, male, so impostor pairs need >= 4.
    photos : int, default 12
        Photos per folder (before the extras), including the planted ones.
    others : int, default 2
        Planted photos of other people per folder, ``0 <= others < photos``.
    seed : int, default 0
        Seed of the identities, the photos' variations and their order.
    size : int, default 128
        Side of the square photos, pixels (64-512).
    extras : bool, default True
        Add the near-duplicate copy and the no-face photo.

    Returns
    -------
    ExampleFolder
        The folder, its truth table and its groups table.

    Raises
    ------
    ValueError
        For a count out of range, or an ``out`` that is a file or a non-empty folder.
    """
    from PIL import Image

    from facebias.generate import LIGHTS
    from facebias.generate.procedural import ProceduralGenerator

    _check_counts(queries, photos, others, size)
    root = Path(out)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"{root}: exists and is {'a file' if not root.is_dir() else 'not empty'}; "
                         "give a new folder for the example")
    gen = ProceduralGenerator(size)
    latents, group, planted = _pick_identities(gen, queries, others, seed)
    rng = np.random.default_rng([seed, 1729])
    combos = [(y, light) for y in _YAWS for light in LIGHTS]
    ident, yaws, lights, owner = [], [], [], []
    for q in range(queries):
        n_person = photos - others
        pick = rng.choice(len(combos), n_person, replace=n_person > len(combos))
        ident += [q] * n_person + planted[q]
        pick = list(pick) + list(rng.choice(len(combos), others))
        yaws += [combos[i][0] for i in pick]
        lights += [combos[i][1] for i in pick]
        owner += [q] * photos
    renders = gen.synthesize(latents[ident], yaw=np.array(yaws), light=lights)
    rows = []
    for q in range(queries):
        query = f"person_{q:02d}"
        folder = root / query
        folder.mkdir(parents=True, exist_ok=True)
        idx = [i for i, o in enumerate(owner) if o == q]
        slots = rng.permutation(photos)
        for i, slot in zip(idx, slots, strict=True):
            file = f"photo_{slot:02d}.png"
            Image.fromarray(_as_photo(renders[i], rng)).save(folder / file)
            who = ident[i]
            rows.append((f"{query}/{file}", query, file, f"id_{who:03d}", int(who == q),
                         "person" if who == q else "other"))
        if extras and q == 0:
            src = next(r for r in rows if r[1] == query and r[5] == "person")
            file = src[2].replace(".png", "_copy.jpg")
            Image.open(folder / src[2]).save(folder / file, quality=80)
            rows.append((f"{query}/{file}", query, file, src[3], 1, "copy"))
        if extras and q == 1:
            file = f"photo_{photos:02d}.png"
            Image.fromarray(_gradient(size, rng)).save(folder / file)
            rows.append((f"{query}/{file}", query, file, "", 0, "no_face"))
    truth = pd.DataFrame(rows, columns=list(TRUTH_COLUMNS)).sort_values("face", ignore_index=True)
    groups = pd.DataFrame({"query": [f"person_{q:02d}" for q in range(queries)], "group": group})
    truth.to_csv(root / "truth.csv", index=False)
    groups.to_csv(root / "groups.csv", index=False)
    return ExampleFolder(root, truth, groups)
