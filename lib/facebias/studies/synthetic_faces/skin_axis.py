"""Is a learned "skin tone" direction skin tone? Readings along it and a gate declared in advance
(notebooks/synthetic_faces_dcgan.py; the skin axis of paper 004's transects,
``docs/specs/transects.md`` sections A1.7-A1.8 and A5.4).

A direction fitted on a skin-colour label (−ITA of face-skin pixels) can move anything
that moves that label: the exposure of the whole image, the background, a colour cast.
On a learned generator with no truth the only evidence is what the images show, so this
module walks seeds along a candidate direction, measures every render with the machine
annotators and judges the walk against a gate fixed before the run
(:class:`SkinGate`, issue 29):

* the **border** (background, hair) L* moves by at most ``max_border_delta`` over the
  transect range: a skin direction does not darken the room;
* the face's median **b\\*** stays above ``min_face_b`` at every level: real skin is
  yellow (b\\* > 0), a blue face is a colour cast;
* the median **ITA** stays inside ``ita_range`` at every level (the real-skin range,
  Chardon's darkest class starts at −30°);
* the **detection rate** at each level is within ``max_detection_drop`` of the lightest
  level: a direction that makes faces undetectable selects the faces that are measured.

Conventions: ``level`` is the candidate's decision value (latent SD units, higher = darker
on the −ITA label), readings are in the annotators' units (CIELAB L\\*, a\\*, b\\*; ITA in
degrees, higher = lighter). A reading that could not be measured (no face found) is NaN and
counts as not detected; face colour statistics are over detected faces only, which is why
the detection rate is part of the gate.

Candidate directions (:func:`candidate_step`): the dual-basis step that moves the axis by
one decision-value unit while a chosen set of other hyperplanes is held at the seed's
value (:func:`facebias.latent.orthogonalize`). "Held" names what the direction must not
move; a hyperplane that is not held is free to follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SkinGate", "READINGS", "candidate_step", "readings_along", "level_summary", "gate_table",
           "gate_passes", "candidate_sets", "walk_candidates", "gate_by_candidate", "gate_metrics"]

#: The machine annotators read along a candidate (:mod:`facebias.annotate.machine`), and the
#: face-measured ones among them (NaN when no face is found).
READINGS = ("face_luminance", "face_a_star", "face_b_star", "ita", "border_luminance", "image_luminance",
            "image_b_star")
FACE_READINGS = ("face_luminance", "face_a_star", "face_b_star", "ita")


@dataclass(frozen=True)
class SkinGate:
    """The validity gate of a skin-tone direction, declared before the run.

    Parameters
    ----------
    max_border_delta : float, default 5.0
        Largest allowed change of the mean border L* between any two levels (L* units).
    min_face_b : float, default 0.0
        Every level's median face b* must exceed this (b* units).
    ita_range : tuple of float, default (-30.0, 60.0)
        Every level's median ITA (degrees) must lie inside (inclusive).
    max_detection_drop : float, default 0.10
        Every level's detection rate must be at least the lightest level's minus this (share).
    """

    max_border_delta: float = 5.0
    min_face_b: float = 0.0
    ita_range: tuple[float, float] = (-30.0, 60.0)
    max_detection_drop: float = 0.10

    def __post_init__(self) -> None:
        lo, hi = (float(v) for v in self.ita_range)
        if not lo < hi:
            raise ValueError(f"ita_range must be (low, high) with low < high, got {self.ita_range!r}")
        if self.max_border_delta < 0 or not 0 <= self.max_detection_drop <= 1:
            raise ValueError("max_border_delta must be >= 0 and max_detection_drop in [0, 1]")
        object.__setattr__(self, "ita_range", (lo, hi))

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any]) -> SkinGate:
        """From a ``params.yaml`` mapping with the field names (unknown keys raise)."""
        unknown = sorted(set(spec) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"skin gate: unknown key(s) {unknown}; allowed {sorted(cls.__dataclass_fields__)}")
        return cls(**{k: tuple(v) if k == "ita_range" else float(v) for k, v in spec.items()})

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def candidate_step(normals: np.ndarray, names: Sequence[str], axis: str, held: Sequence[str]) -> np.ndarray:
    """Unit-decision-value step along ``axis`` with the ``held`` hyperplanes unchanged.

    Parameters
    ----------
    normals : numpy.ndarray
        (K, D) unit normals of the hyperplanes ``names``.
    names : Sequence of str
        Hyperplane names, one per row of ``normals``.
    axis : str
        The direction's attribute.
    held : Sequence of str
        Attributes whose decision values the step keeps fixed (may be empty: the raw normal).

    Returns
    -------
    numpy.ndarray
        (D,) step: ``step @ normals[axis] == 1`` and ``step @ normals[h] == 0`` for each held ``h``.

    Raises
    ------
    ValueError
        For an unknown name, ``axis`` in ``held``, or normals that are linearly dependent.
    """
    from facebias import latent

    names = list(names)
    missing = [n for n in [axis, *held] if n not in names]
    if missing:
        raise ValueError(f"no hyperplane named {missing}; have {names}")
    if axis in held:
        raise ValueError(f"axis {axis!r} cannot also be held")
    idx = [names.index(n) for n in [axis, *held]]
    return latent.orthogonalize(np.asarray(normals, float)[idx])[0]


def readings_along(z: np.ndarray, step: np.ndarray, start: np.ndarray, levels: Sequence[float],
                   render: Callable[[np.ndarray], np.ndarray],
                   measure: Callable[[Sequence[np.ndarray]], pd.DataFrame]) -> pd.DataFrame:
    """Move seeds to each level along ``step`` and measure the renders.

    Seed ``i`` at level ``c`` is ``z[i] + (c - start[i]) * step`` (its decision value on the
    axis becomes ``c`` when ``step`` is a unit-decision-value step and ``start`` the seeds'
    decision values).

    Parameters
    ----------
    z : numpy.ndarray
        (n, D) seed latents.
    step : numpy.ndarray
        (D,) unit-decision-value step (:func:`candidate_step`).
    start : numpy.ndarray
        (n,) the seeds' decision values on the axis.
    levels : Sequence of float
        Decision values visited (ascending = darker on the −ITA label).
    render : callable
        (m, D) latents -> (m, H, W, 3) uint8 images.
    measure : callable
        images -> DataFrame with (at least) the :data:`READINGS` columns, one row per image, NaN
        where not measured.

    Returns
    -------
    pandas.DataFrame
        One row per (seed, level): ``seed``, ``level``, the readings and ``detected`` (bool: the
        face readings are finite).
    """
    z = np.atleast_2d(np.asarray(z, float))
    start = np.asarray(start, float).reshape(-1)
    levels = [float(c) for c in levels]
    if len(start) != len(z):
        raise ValueError(f"start: {len(start)} values for {len(z)} seeds")
    if not levels:
        raise ValueError("levels: empty")
    moved = np.concatenate([z + (c - start)[:, None] * np.asarray(step, float)[None, :] for c in levels])
    read = measure(render(moved)).reset_index(drop=True)
    missing = [c for c in READINGS if c not in read.columns]
    if missing:
        raise ValueError(f"measure returned no column(s) {missing}")
    out = read[list(READINGS)].copy()
    out.insert(0, "level", np.repeat(levels, len(z)))
    out.insert(0, "seed", np.tile(np.arange(len(z)), len(levels)))
    out["detected"] = np.isfinite(out[list(FACE_READINGS)]).all(axis=1)
    return out


def level_summary(readings: pd.DataFrame) -> pd.DataFrame:
    """Per level: ``n`` seeds, ``detect_rate``, the median face readings over detected faces
    (``face_L``, ``face_a``, ``face_b``, ``ita``; NaN when none detected), and the mean border /
    image L* and image b* over all renders (``border_L``, ``image_L``, ``image_b``).

    Parameters
    ----------
    readings : pandas.DataFrame
        :func:`readings_along`'s table.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``level`` (ascending).
    """
    rows = []
    for c, g in readings.groupby("level", sort=True):
        det = g[g["detected"]]
        def med(col: str, d: pd.DataFrame = det) -> float:
            return float(d[col].median()) if len(d) else float("nan")

        rows.append({"level": float(c), "n": len(g), "n_detected": len(det), "detect_rate": float(g["detected"].mean()),
                     "face_L": med("face_luminance"), "face_a": med("face_a_star"), "face_b": med("face_b_star"),
                     "ita": med("ita"), "border_L": float(g["border_luminance"].mean()),
                     "image_L": float(g["image_luminance"].mean()), "image_b": float(g["image_b_star"].mean())})
    return pd.DataFrame(rows).set_index("level")


def gate_table(summary: pd.DataFrame, gate: SkinGate) -> pd.DataFrame:
    """The gate's four checks on a :func:`level_summary`.

    Returns
    -------
    pandas.DataFrame
        One row per check: ``check``, ``measured`` (the worst value over the levels), ``bound``,
        ``worst_level``, ``passed`` (bool; False when the measured value is NaN, e.g. no face
        detected at some level).
    """
    if summary.empty:
        raise ValueError("gate_table: empty level summary")
    lightest = summary.index.min()
    border_delta = float(summary["border_L"].max() - summary["border_L"].min())
    b_level = summary["face_b"].idxmin() if summary["face_b"].notna().any() else float("nan")
    lo, hi = gate.ita_range
    ita = summary["ita"]
    outside = np.maximum(lo - ita, ita - hi)  # > 0 outside the range
    ita_level = outside.idxmax() if outside.notna().any() else float("nan")
    drop = summary.loc[lightest, "detect_rate"] - summary["detect_rate"]
    rows = [
        {"check": "border L* change over the levels (max - min)", "measured": border_delta,
         "bound": f"<= {gate.max_border_delta:g}",
         "worst_level": float(summary["border_L"].idxmin()), "passed": border_delta <= gate.max_border_delta},
        {"check": "lowest per-level median face b*", "measured": float(summary["face_b"].min()),
         "bound": f"> {gate.min_face_b:g}", "worst_level": float(b_level),
         "passed": bool(summary["face_b"].notna().all() and (summary["face_b"] > gate.min_face_b).all())},
        {"check": "per-level median ITA farthest from the real-skin range (degrees)",
         "measured": float(ita[ita_level]) if np.isfinite(ita_level) else float("nan"),
         "bound": f"in [{lo:g}, {hi:g}]", "worst_level": float(ita_level),
         "passed": bool(ita.notna().all() and ((ita >= lo) & (ita <= hi)).all())},
        {"check": "largest detection-rate drop below the lightest level", "measured": float(drop.max()),
         "bound": f"<= {gate.max_detection_drop:g}", "worst_level": float(drop.idxmax()),
         "passed": bool(drop.max() <= gate.max_detection_drop)},
    ]
    return pd.DataFrame(rows)


def gate_passes(table: pd.DataFrame) -> bool:
    """True iff every check of :func:`gate_table` passed."""
    return bool(table["passed"].all())


# --------------------------------------------------------------------------- candidates


def candidate_sets(names: Sequence[str], axis: str, transect_held: Sequence[str],
                   room: Sequence[str] = ("background", "exposure", "white_balance")) -> dict[str, list[str]]:
    """The candidate directions judged by the gate: name -> the hyperplanes each holds.

    * ``"raw normal"``: nothing held (the fitted normal itself);
    * ``"room free"``: the transects' held set without the ``room`` planes;
    * ``"transects"``: exactly the transects' held set (``transect_held``,
      :func:`facebias.generate.build.held_attributes`);
    * ``"room held"``: the transects' held set plus every ``room`` plane;
    * ``"everything held"``: every other hyperplane, including the ones collinear with the axis.

    Parameters
    ----------
    names : Sequence of str
        Every hyperplane name (``race_*`` planes are ignored).
    axis : str
        The direction's attribute.
    transect_held : Sequence of str
        The hyperplanes the transects hold.
    room : Sequence of str
        Planes of what a skin direction must not move (those absent from ``names`` are skipped).

    Returns
    -------
    dict
        Candidate name -> list of held hyperplanes, in ``names`` order (a set equal to an
        earlier candidate's is dropped).
    """
    others = [n for n in names if n != axis and not n.startswith("race_")]
    held = set(transect_held)
    sets = {"raw normal": set(), "room free": held - set(room), "transects": held,
            "room held": held | (set(room) & set(others)), "everything held": set(others)}
    out: dict[str, list[str]] = {}
    for k, v in sets.items():
        if all(set(w) != v for w in out.values()):
            out[k] = [n for n in others if n in v]
    return out


def walk_candidates(generator: Any, hp: Any, axis: str, candidates: Mapping[str, Sequence[str]],
                    levels: Sequence[float], n_seeds: int, seed: int,
                    measure: Callable[[Sequence[np.ndarray]], pd.DataFrame] | None = None) -> pd.DataFrame:
    """:func:`readings_along` for each candidate, on the same seeds: one tidy table with a
    ``candidate`` column.

    Parameters
    ----------
    generator : object
        ``sample(n, seed)`` and ``synthesize(z)`` (frontal renders).
    hp : facebias.generate.hyperplanes.Hyperplanes
        The fitted hyperplanes.
    axis : str
        The direction's attribute.
    candidates : Mapping
        Name -> held hyperplanes (:func:`candidate_sets`).
    levels : Sequence of float
        Decision values visited.
    n_seeds : int
        Seeds (the same for every candidate).
    seed : int
        Seed of the seeds.
    measure : callable, optional
        images -> readings (default: the machine annotators of :data:`READINGS`, on renders
        upscaled to 256 px).

    Returns
    -------
    pandas.DataFrame
        ``candidate, seed, level``, the readings and ``detected``.
    """
    if measure is None:
        from facebias.annotate.machine import label_images

        def measure(images: Sequence[np.ndarray]) -> pd.DataFrame:
            return label_images(list(images), list(READINGS), progress=False)

    z = generator.sample(int(n_seeds), int(seed))
    start = hp.values(z)[axis].to_numpy()
    frames = []
    for name, held in candidates.items():
        step = candidate_step(hp.normals, hp.names, axis, list(held))
        r = readings_along(z, step, start, levels, generator.synthesize, measure)
        frames.append(r.assign(candidate=name))
    out = pd.concat(frames, ignore_index=True)
    return out[["candidate", *[c for c in out.columns if c != "candidate"]]]


def gate_by_candidate(readings: pd.DataFrame, gate: SkinGate) -> pd.DataFrame:
    """:func:`gate_table` per candidate of :func:`walk_candidates`' table (column
    ``candidate`` first, candidates in their order of appearance)."""
    frames = [gate_table(level_summary(g), gate).assign(candidate=name)
              for name, g in readings.groupby("candidate", sort=False)]
    out = pd.concat(frames, ignore_index=True)
    return out[["candidate", *[c for c in out.columns if c != "candidate"]]]


def gate_metrics(readings: pd.DataFrame, gate: SkinGate, candidates: Mapping[str, Sequence[str]],
                 axis: str, chosen: str) -> dict[str, Any]:
    """The metrics record of the gate: the declared gate, every candidate's held set, checks
    (measured, bound, passed) and per-level summary, ``passes`` per candidate, ``any_passes``,
    and ``chosen`` (the candidate the study uses) with its verdict.

    Parameters
    ----------
    readings : pandas.DataFrame
        :func:`walk_candidates`' table.
    gate : SkinGate
        The gate declared in advance.
    candidates : Mapping
        Name -> held hyperplanes.
    axis : str
        The direction's attribute (as named in the hyperplanes).
    chosen : str
        The candidate the transects use (a key of ``candidates``).

    Returns
    -------
    dict
        JSON-ready.
    """
    if chosen not in candidates:
        raise ValueError(f"chosen candidate {chosen!r} is not one of {list(candidates)}")
    table = gate_by_candidate(readings, gate)
    out: dict[str, Any] = {"axis": axis, "gate": gate.as_dict(), "levels": sorted(set(readings["level"].astype(float))),
                           "n_seeds": int(readings["seed"].nunique()), "chosen": chosen, "candidates": {}}
    for name, g in readings.groupby("candidate", sort=False):
        t = table[table["candidate"] == name]
        summary = level_summary(g)
        out["candidates"][name] = {
            "held": list(candidates[name]), "passes": gate_passes(t),
            "checks": [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                        for k, v in r.items() if k != "candidate"} for r in t.to_dict("records")],
            "levels": {f"{c:+.2f}": {k: (None if not np.isfinite(v) else float(v)) for k, v in row.items()}
                       for c, row in summary.iterrows()}}
    out["any_passes"] = any(c["passes"] for c in out["candidates"].values())
    out["chosen_passes"] = out["candidates"][chosen]["passes"]
    return out
