"""The machine labellers' offline checks, the skin-tone palette: the nearest swatch of the Monk
Skin Tone scale (:mod:`facebias.annotate.palette`) to each face's colour, its agreement with
ITA and face luminance, and how many faces no swatch is near (not a skin colour of the scale).
Part of :mod:`facebias.studies.synthetic_faces.labeller_checks` (which re-exports every name
here); notebooks/synthetic_faces_dcgan.py reports them for the skin-tone labels of paper 004's
transects (``docs/specs/transects.md`` sections A1.2-A1.3: attributes, scales and scores).

Conventions: readings are DataFrames with one column per labeller in its own unit (CIELAB
L*, a*, b*; ITA in degrees), NaN = not measured (no face found).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from facebias.annotate.palette import FAR_DELTA_E
from facebias.validate import require_columns

__all__ = ["palette_readings", "palette_agreement", "palette_by_level"]


def palette_readings(readings: pd.DataFrame, L: str = "face_luminance", a: str = "face_a_star",
                     b: str = "face_b_star") -> pd.DataFrame:
    """The Monk Skin Tone palette labeller on a readings table: per image, the nearest MST
    swatch and its CIE76 Delta E (:func:`facebias.annotate.palette.nearest_swatch`).

    Parameters
    ----------
    readings : pandas.DataFrame
        One row per image with the face's CIELAB columns (NaN = not measured).
    L, a, b : str
        Columns of the face L* (0-100), a* and b* (default the machine annotators
        ``face_luminance`` (mean L* of the skin mask), ``face_a_star``, ``face_b_star``
        (medians)).

    Returns
    -------
    pandas.DataFrame
        ``readings``' index, columns ``mst_index`` (1 lightest .. 10 darkest, float; NaN
        where a coordinate is NaN) and ``mst_delta_e`` (CIELAB units).

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> r = pd.DataFrame({"face_luminance": [55.1, np.nan], "face_a_star": [7.8, 1.0], "face_b_star": [26.7, 9.0]})
    >>> palette_readings(r).round(1).to_dict("list")
    {'mst_index': [6.0, nan], 'mst_delta_e': [0.1, nan]}
    """
    from facebias.annotate.palette import nearest_swatch

    require_columns(readings, [L, a, b], "readings")
    idx, de = nearest_swatch(*(readings[c].to_numpy(np.float64) for c in (L, a, b)))
    return pd.DataFrame({"mst_index": idx, "mst_delta_e": de}, index=readings.index)


def palette_agreement(readings: pd.DataFrame, L: str = "face_luminance", a: str = "face_a_star",
                      b: str = "face_b_star", ita: str = "ita", far_delta_e: float = FAR_DELTA_E, n_boot: int = 1000,
                      seed: int = 0, ci: float = 0.95, cluster: str | None = None) -> dict[str, Any]:
    """How the Monk Skin Tone palette labeller agrees with ITA and with face luminance, and
    how many faces no swatch of the scale is near.

    The palette labeller (:func:`palette_readings`) gives each face the nearest of the ten
    MST swatches (1 lightest .. 10 darkest) in CIE76 Delta E. Its agreement with a reading is
    Spearman's rho between the MST index and the reading, **sign-corrected** so that agreement
    is positive: a darker swatch (higher index) should go with a lower ITA and a lower L*, so
    ``spearman = -rho(MST index, reading)``. All three read the same skin pixels, so a high
    rho is expected and shows consistency of the readings, not that they read skin; the
    distance says more: a face whose nearest swatch is more than ``far_delta_e`` away (about
    10 Delta E, a clearly visible difference) has a colour no step of the scale resembles, i.e.
    on that scale it is not a skin colour (a colour cast, an underexposed face), whatever
    ITA or L* it has.

    Parameters
    ----------
    readings : pandas.DataFrame
        One row per image with the columns ``L``, ``a``, ``b``, ``ita`` (and ``cluster``);
        NaN = not measured (no face).
    L, a, b, ita : str
        Columns of the face L* (0-100), a*, b* (CIELAB D65) and ITA (degrees, higher =
        lighter).
    far_delta_e : float, default :data:`facebias.annotate.palette.FAR_DELTA_E`
        Delta E*ab (CIE76) above which the nearest swatch counts as far.
    n_boot : int, default 1000
        Bootstrap replicates (:func:`facebias.stats.bootstrap_weights`): over images, or over
        ``cluster`` when given.
    seed : int, default 0
        Bootstrap seed.
    ci : float, default 0.95
        Interval coverage (percentile, :func:`facebias.stats.percentile_interval`).
    cluster : str, optional
        Column of the resampled unit when images are not independent (e.g. the seed of a
        walk: its renders share a latent).

    Returns
    -------
    dict
        JSON-ready (plain floats and ints): ``scale`` and ``delta_e`` (what was used),
        ``n`` (rows), ``n_measured`` (L*, a*, b* all finite), ``far_delta_e``, ``n_far``,
        ``share_far`` (of the measured faces), ``median_mst_index``, ``median_delta_e``,
        ``mst_counts`` (swatch -> faces), ``n_boot``, ``ci``, ``bootstrap_unit``, and
        ``agreement``: one record per reading (``reading``, ``column``, ``n`` pairs,
        ``spearman`` (sign-corrected), ``spearman_lo``, ``spearman_hi``, ``sign`` (-1)).
        Values that cannot be computed are None.

    Raises
    ------
    ValueError
        If a column is missing, ``far_delta_e`` is not positive or ``n_boot < 1``.

    Examples
    --------
    >>> from facebias.annotate.machine import ita_degrees
    >>> from facebias.annotate.palette import swatches_lab
    >>> sw = swatches_lab()
    >>> r = pd.DataFrame({"face_luminance": sw[:, 0], "face_a_star": sw[:, 1], "face_b_star": sw[:, 2],
    ...                   "ita": ita_degrees(sw[:, 0], sw[:, 2])})
    >>> m = palette_agreement(r, n_boot=50)
    >>> [(g["reading"], round(g["spearman"], 3)) for g in m["agreement"]], m["share_far"]
    ([('ita', 1.0), ('face_luminance', 0.988)], 0.0)

    (The swatches themselves: ITA falls with every step of the scale, L* does not quite:
    swatch 3 is lighter than swatch 2.)
    """
    from facebias.annotate.machine import agreement
    from facebias.annotate.palette import MONK_SKIN_TONES
    from facebias.stats import bootstrap_weights, percentile_interval, percentile_mc_error

    if not (np.isfinite(far_delta_e) and far_delta_e > 0):
        raise ValueError(f"far_delta_e: must be a positive number, got {far_delta_e}")
    if n_boot < 1:
        raise ValueError(f"n_boot: must be >= 1, got {n_boot}")
    require_columns(readings, [L, a, b, ita, *([cluster] if cluster else [])], "readings")
    r = readings.reset_index(drop=True)
    pal = palette_readings(r, L, a, b)
    idx, de = pal["mst_index"].to_numpy(), pal["mst_delta_e"].to_numpy()
    ok = np.isfinite(idx)

    def num(v: float) -> float | None:
        return float(v) if np.isfinite(v) else None

    ids = None if cluster is None else r[cluster].to_numpy()
    weights = list(bootstrap_weights(len(r), n_boot, seed, id1=ids, id2=ids))
    rows = []
    for reading, col in (("ita", ita), ("face_luminance", L)):
        y = r[col].to_numpy(np.float64)
        both = np.flatnonzero(ok & np.isfinite(y))
        rho = -agreement(idx[both], y[both])["spearman"]
        reps = np.array([-agreement(idx[k], y[k])["spearman"]
                         for k in (np.repeat(both, w[both].astype(int)) for w in weights)])
        lo, hi = percentile_interval(reps, ci)
        lo_se, hi_se = percentile_mc_error(reps, ci)
        rows.append({"reading": reading, "column": col, "n": int(len(both)), "spearman": num(rho),
                     "spearman_lo": num(lo), "spearman_hi": num(hi), "spearman_lo_mcse": num(lo_se),
                     "spearman_hi_mcse": num(hi_se), "sign": -1.0})
    n_ok = int(ok.sum())
    far = de[ok] > far_delta_e
    return {"scale": f"Monk Skin Tone ({len(MONK_SKIN_TONES)} swatches, 1 lightest)",
            "delta_e": "CIE76 (Euclidean in CIELAB D65)", "n": len(r), "n_measured": n_ok,
            "far_delta_e": float(far_delta_e), "n_far": int(far.sum()),
            "share_far": float(far.mean()) if n_ok else None,
            "median_mst_index": float(np.median(idx[ok])) if n_ok else None,
            "median_delta_e": float(np.median(de[ok])) if n_ok else None,
            "mst_counts": {str(k): int((idx[ok] == k).sum()) for k in range(1, len(MONK_SKIN_TONES) + 1)},
            "n_boot": int(n_boot), "ci": float(ci), "bootstrap_unit": cluster or "image", "agreement": rows}


def palette_by_level(readings: pd.DataFrame, by: Sequence[str], L: str = "face_luminance",
                     a: str = "face_a_star", b: str = "face_b_star", far_delta_e: float = FAR_DELTA_E) -> pd.DataFrame:
    """Per group of images (levels of the design columns ``by``): the median MST index and
    the median Delta E of the palette labeller over the measured faces, and the share of
    them whose nearest swatch is farther than ``far_delta_e`` (no skin colour of the scale).

    Parameters
    ----------
    readings : pandas.DataFrame
        One row per image with the columns ``by`` and ``L``, ``a``, ``b`` (NaN = no face).
    by : sequence of str
        Grouping columns (e.g. ``["candidate", "level"]`` of a skin-gate walk).
    L, a, b : str
        The face's CIELAB columns (:func:`palette_readings`).
    far_delta_e : float, default :data:`facebias.annotate.palette.FAR_DELTA_E`
        Delta E*ab (CIE76) above which the nearest swatch counts as far.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``n``, ``n_measured``, ``median_mst_index``, ``median_delta_e``,
        ``share_far`` (NaN with no measured face), sorted by ``by``.

    Raises
    ------
    ValueError
        If ``by`` is empty, a column is missing or ``far_delta_e`` is not positive.

    Examples
    --------
    >>> r = pd.DataFrame({"level": [0, 0, 1], "face_luminance": [55.1, 53.0, 40.0],
    ...                   "face_a_star": [7.8, 8.0, 0.0], "face_b_star": [26.7, 25.0, -15.0]})
    >>> palette_by_level(r, ["level"])[["level", "median_mst_index", "share_far"]].to_dict("records")
    [{'level': 0, 'median_mst_index': 6.0, 'share_far': 0.0}, {'level': 1, 'median_mst_index': 9.0, 'share_far': 1.0}]
    """
    if not len(by):
        raise ValueError("by: no grouping columns")
    if not (np.isfinite(far_delta_e) and far_delta_e > 0):
        raise ValueError(f"far_delta_e: must be a positive number, got {far_delta_e}")
    require_columns(readings, list(by), "readings")
    pal = palette_readings(readings, L, a, b).reset_index(drop=True)
    d = readings[list(by)].reset_index(drop=True).join(pal)
    rows = []
    for keys, g in d.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        m = g[g["mst_index"].notna()]
        rows.append({**dict(zip(by, keys, strict=True)), "n": len(g), "n_measured": len(m),
                     "median_mst_index": float(m["mst_index"].median()) if len(m) else float("nan"),
                     "median_delta_e": float(m["mst_delta_e"].median()) if len(m) else float("nan"),
                     "share_far": float((m["mst_delta_e"] > far_delta_e).mean()) if len(m) else float("nan")})
    return pd.DataFrame(rows)
