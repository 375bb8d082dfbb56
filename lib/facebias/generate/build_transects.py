"""004's transects (Alg. 1, orthogonalised): K-D grids of decision values from each seed's
projection, the hyperplanes held fixed along them, and the machine annotators' readings of
every transect render on a backend without truth (``transects/readings.parquet``, keyed by
the pixels).

Part of :mod:`facebias.generate.build` (which re-exports every public name here).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from facebias import latent
from facebias.generate.hyperplanes import Hyperplanes

if TYPE_CHECKING:
    from facebias.generate.build import SynthConfig


#: A hyperplane this collinear with a transect axis (|cosine of the unit normals|) measures
#: nearly the same thing and is not held fixed on the transects (:func:`plan_transects`).
COLLINEAR_COSINE = 0.8


def held_attributes(hp: Hyperplanes, axes: Sequence[str], follow: Sequence[str] = ()) -> list[str]:
    """The hyperplanes a move along ``axes`` holds at the seed's decision values.

    Every hyperplane that is not an axis (nor a ``race_*`` one-vs-all plane), except

    * one whose normal is nearly collinear with an axis (|cosine| > :data:`COLLINEAR_COSINE`):
      it measures nearly the same thing and follows the axis. On the DCGAN, face luminance and
      face darkness (-ITA) have cosine about -0.93: holding luminance fixed would push the
      darkness step into the little that separates them, a colour cast at constant L*;
    * the ones named in ``follow`` (``generate.transect_follow``): readings that contain the
      axis itself. On the DCGAN's tight 64 px crops the face fills most of the image, so the
      whole-image exposure and white balance darken and shift with the face; holding them
      while the face darkens forces the rest of the image the other way, and the step leaves
      the faces the GAN draws (:mod:`facebias.studies.synthetic_faces.skin_axis` walks every variant and
      prints what each one moves).

    No pair of the procedural hyperplanes comes near the cosine limit.

    Parameters
    ----------
    hp : Hyperplanes
        The fitted hyperplanes.
    axes : Sequence of str
        The attributes moved.
    follow : Sequence of str, default ()
        Hyperplanes left free to follow the axes (names absent from ``hp`` are ignored).

    Returns
    -------
    list of str
        Hyperplane names in ``hp.names`` order.
    """
    normals, _ = hp.select(list(axes))
    return [n for n in hp.names if n not in axes and n not in follow and not n.startswith("race_")
            and np.abs(normals @ hp.select([n])[0][0]).max() <= COLLINEAR_COSINE]


def plan_transects(gen: Any, hp: Hyperplanes, cfg: SynthConfig) -> tuple[np.ndarray, pd.DataFrame]:
    """``n_transects`` K-D transects (004 Alg. 1, orthogonalised): latents (n, D) and one row
    per image with ``transect``, ``<axis>_idx`` and ``<axis>_c`` (intended decision value).

    The other attributes are held at each seed's value (:func:`held_attributes`: they are
    orthogonalised together with the transect normals and passed as ``fixed``).
    """
    axes = list(cfg.transect_axes)
    grids = [np.asarray(cfg.transect_axes[a], float) for a in axes]
    normals, offsets = hp.select(axes)
    others = held_attributes(hp, axes, cfg.transect_follow)
    fixed = hp.select(others)[0] if others else None
    seeds = gen.sample(cfg.n_transects, seed=cfg.seed + 3)
    shape = tuple(len(g) for g in grids)
    lat, rows = [], []
    for t, z in enumerate(seeds):
        grid = latent.transect(z, normals, offsets, grids, orthogonal=True, fixed=fixed)
        for idx in np.ndindex(*shape):
            lat.append(grid[idx])
            row: dict[str, Any] = {"transect": t}
            for a, i, g in zip(axes, idx, grids, strict=True):
                row[f"{a}_idx"] = i
                row[f"{a}_c"] = float(g[i])
            rows.append(row)
    table = pd.DataFrame(rows)
    table.insert(0, "image_id", [f"tr{t:04d}_" + "".join(str(r[f"{a}_idx"]) for a in axes)
                                 for t, r in zip(table["transect"], rows, strict=True)])
    table["yaw"] = 0.0
    table["light"] = "front"
    return np.asarray(lat), table


#: The machine annotators' readings of the transect renders, under ``transects/`` (backends
#: without truth only): one row per ``image_id`` (the order of ``images.parquet``), the
#: content key :data:`READINGS_KEY` and one float64 column per registered annotator.
TRANSECT_READINGS = "readings.parquet"
#: Column of :data:`TRANSECT_READINGS` holding each image's :func:`image_key`.
READINGS_KEY = "content_key"
#: Shorter side (px) the annotators see: the 64 px renders are upscaled bicubically to it
#: (:func:`facebias.annotate.machine.label_images`' default, what the notebooks used).
READINGS_MIN_SIZE = 256


def image_key(image: np.ndarray) -> str:
    """Content key of an image's pixels: blake2b (16-byte digest, hex) of its shape, dtype
    and C-order bytes.

    Parameters
    ----------
    image : numpy.ndarray
        The pixels, e.g. an (H, W, 3) RGB uint8 array as read from a PNG.

    Returns
    -------
    str
        32 hex digits; equal keys mean equal arrays (same shape, dtype and values).

    Examples
    --------
    >>> a = np.zeros((2, 2, 3), np.uint8)
    >>> image_key(a) == image_key(a.copy()), image_key(a) == image_key(a.reshape(4, 1, 3))
    (True, False)
    """
    import hashlib

    arr = np.asarray(image)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((arr.shape, arr.dtype.str)).encode())
    h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _label_chunk(images: Sequence[np.ndarray], names: Sequence[str], min_size: int) -> np.ndarray:
    """:func:`facebias.annotate.machine.label_images` of one chunk, as an array (a Dask task)."""
    from facebias.annotate.machine import label_images

    return label_images(list(images), list(names), min_size=min_size, progress=False).to_numpy(np.float64)


def label_transect_images(folder: str | Path, image_ids: Sequence[str], compute: Any = None,
                          chunk_size: int = 64) -> pd.DataFrame:
    """Every registered machine annotator's reading of each transect render
    ``folder/images/<image_id>.png``, as read back from the PNG: what
    :data:`TRANSECT_READINGS` holds.

    Each image is read as RGB uint8 (:func:`facebias.faces.images.read_image`, Pillow, the
    pixels the notebooks' ``Image.open(path).convert("RGB")`` give) and labelled by
    :func:`facebias.annotate.machine.label_images` with its defaults (upscaled bicubically to
    :data:`READINGS_MIN_SIZE` px on the shorter side); a reading depends only on its own
    image, so the chunks (``compute``: :mod:`facebias.compute`, ``None`` = in this process)
    do not change a value.

    Parameters
    ----------
    folder : str or Path
        The ``transects`` folder (``images/`` with the PNGs).
    image_ids : Sequence of str
        The images, in row order (``images.parquet``'s ``image_id``).
    compute : optional
        Where to label (a :mod:`facebias.compute` config, scheduler string or open client).
    chunk_size : int, default 64
        Images per task.

    Returns
    -------
    pandas.DataFrame
        One row per image: ``image_id``, :data:`READINGS_KEY` (:func:`image_key` of the
        pixels read) and one float64 column per annotator of
        :data:`facebias.annotate.machine.MACHINE_ANNOTATORS` (registration order), in its
        units (:attr:`~facebias.annotate.machine.MachineAnnotator.unit`), NaN where it could
        not measure (no face found).
    """
    from facebias.annotate.machine import MACHINE_ANNOTATORS
    from facebias.compute import map_chunks
    from facebias.faces.images import read_image

    ids = [str(i) for i in image_ids]
    names = list(MACHINE_ANNOTATORS)
    images = [read_image(Path(folder) / "images" / f"{i}.png") for i in ids]
    chunks = map_chunks(_label_chunk, images, compute, chunk_size=chunk_size,
                        shared=(tuple(names), READINGS_MIN_SIZE), desc="transect readings")
    values = np.concatenate(chunks) if chunks else np.empty((0, len(names)))
    table = pd.DataFrame({"image_id": ids, READINGS_KEY: [image_key(im) for im in images]})
    return pd.concat([table, pd.DataFrame(values, columns=names)], axis=1)


def transect_readings(folder: str | Path, image_ids: Sequence[str], images: Sequence[np.ndarray],
                      names: Sequence[str], measure: Any = None, verbose: bool = True) -> pd.DataFrame:
    """The machine annotators' readings of the transect images ``images`` (as loaded by the
    caller), from the generate stage's :data:`TRANSECT_READINGS` after checking that every
    image is the one that was read there.

    Each image's :func:`image_key` must equal the stored key of its ``image_id``, so a
    readings file left from other renders is never used. Where ``folder`` has no readings
    file (data built before the generate stage wrote one) the images are labelled here, with a
    warning: ``measure(images, names)``, default :func:`facebias.annotate.machine.label_images`
    (``progress=False``, upscaled to :data:`READINGS_MIN_SIZE` px), which is how the stored
    readings were made.

    Parameters
    ----------
    folder : str or Path
        The ``transects`` folder of a synth product.
    image_ids : Sequence of str
        The images' ids, row order of the result.
    images : Sequence of numpy.ndarray
        Their pixels as loaded (RGB uint8, (H, W, 3)), one per id.
    names : Sequence of str
        Annotator names (columns of the result, in this order).
    measure : callable, optional
        ``(images, names) -> DataFrame`` for the fallback (e.g.
        :func:`facebias.generate.checks.machine_measure`).
    verbose : bool, default True
        Print one line saying where the readings came from.

    Returns
    -------
    pandas.DataFrame
        ``(len(images), len(names))`` float64 with a RangeIndex, in the annotators' units,
        NaN where one could not measure: equal, bit for bit, to ``label_images(images, names,
        progress=False)``.

    Raises
    ------
    ValueError
        If ``images`` and ``image_ids`` differ in length, an id has no row in the readings
        file, an image's content key differs from the stored one (the first such id is
        named: the file is stale), or the file lacks a column of ``names``.

    Warns
    -----
    UserWarning
        When the readings file is missing and the images are labelled here.
    """
    ids = [str(i) for i in image_ids]
    images = list(images)
    names = list(names)
    if len(ids) != len(images):
        raise ValueError(f"transect_readings: {len(images)} images for {len(ids)} image ids")
    path = Path(folder) / TRANSECT_READINGS
    if not path.is_file():
        import warnings

        warnings.warn(f"{path} does not exist (data built by an older generate stage?): labelling the "
                      f"{len(images)} transect images here", stacklevel=2)
        if measure is None:
            from facebias.annotate.machine import label_images

            return label_images(images, names, min_size=READINGS_MIN_SIZE, progress=False)
        return measure(images, names)
    stored = pd.read_parquet(path).set_index("image_id")
    lacking = [n for n in names if n not in stored.columns]
    if lacking:
        raise ValueError(f"{path} has no readings of {lacking} (columns {list(stored.columns)}); rerun the generate stage")
    absent = [i for i in ids if i not in stored.index]
    if absent:
        raise ValueError(f"{path} has no row for image {absent[0]!r} ({len(absent)} missing); rerun the generate stage")
    keys = stored[READINGS_KEY].reindex(ids).to_numpy()
    for iid, key, im in zip(ids, keys, images, strict=True):
        if image_key(im) != key:
            raise ValueError(f"{path}: image {iid!r} is not the image its readings were made on "
                             "(content key differs; stale readings): rerun the generate stage")
    if verbose:
        print(f"machine readings of {len(ids)} transect images from {path} (content keys verified)")
    return pd.DataFrame(stored.reindex(ids)[names].to_numpy(np.float64), columns=names)
