"""The headline numbers of each study: a few shared columns that ``dvc metrics show`` and
``dvc metrics diff`` render on one screen.

Every study writes its full results to ``reports/metrics/<name>_details.json`` (every table,
not a DVC metric) and, through :func:`write_study_metrics`, a headline file
``reports/metrics/<name>.json`` (the DVC metric) with at most these columns:

- ``fmr``: the false match rate the headline rates are read at (where there is one);
- ``bias``: the study's headline disparity on its default system (see each study below);
- ``bias_after``: the same measure after the paper's remedy (where the paper has one);
- ``planted``: the value the known-truth world planted for ``bias`` (absent on real data);
- ``truth_error``: the headline known-truth recovery error, an error against planted truth
  or absent (0 = exact; not named ``error``,
  which ``dvc metrics show`` takes for a file that failed to load);
- ``recovered``: share of the study's checks against planted truth that came out as planted
  (1 = all); a flag that is reported but was never planted does not count.

The columns are shared so that the nine studies fit one table; what each means per study is
in :data:`DEFINITIONS` (and the README). The values are read from the details dict, which
the studies' tested functions produce; nothing here computes a new statistic beyond a mean,
a max or a share of booleans.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from facebias.schema import write_metrics

__all__ = ["COLUMNS", "DEFINITIONS", "bfw_headline_far", "bfw_seed_worst", "headline", "seed_mean",
           "write_study_metrics"]

#: The headline columns, in the order they are written.
COLUMNS = ("fmr", "bias", "bias_after", "planted", "truth_error", "recovered")


def _at(node: Any, *keys: Any) -> Any:
    """``node[k1][k2]...``, or None where a level is missing, None or a NaN float (a smoke-scale
    run may leave a coefficient unfitted; an unresolved rate is NaN in memory, null on disk)."""
    for k in keys:
        if not isinstance(node, Mapping) or node.get(k) is None:
            return None
        node = node[k]
    return None if isinstance(node, float) and math.isnan(node) else node


def _mean(values: Mapping[str, float] | None) -> float | None:
    vals = [v for v in (values or {}).values() if v is not None and math.isfinite(v)]
    return float(sum(vals) / len(vals)) if vals else None


def _share(flags: Mapping[str, Any] | None) -> float | None:
    """Share of True among the flags that were decided (None: not evaluated, left out)."""
    vals = [bool(v) for v in (flags or {}).values() if v is not None]
    return float(sum(vals) / len(vals)) if vals else None


def bfw_headline_far(dev: Mapping[str, Mapping[str, float | None]]) -> str | None:
    """The FAR key at which a BFW system's headline deviation is read: the smallest FAR of
    the grid where both the global and the per-subgroup deviation are resolved (not None:
    :func:`facebias.metrics.enough_impostors`), or None when none is.

    Parameters
    ----------
    dev : mapping
        ``{"global": {far: pct}, "group": {far: pct}}`` (``max_abs_fmr_dev_pct`` of one system).

    Returns
    -------
    str or None

    Examples
    --------
    >>> bfw_headline_far({"global": {"0.01": 20.0, "0.0001": None}, "group": {"0.01": 1.0, "0.0001": 3.0}})
    '0.01'
    """
    ok = [f for f in dev["global"] if _at(dev, "global", f) is not None and _at(dev, "group", f) is not None]
    return min(ok, key=float) if ok else None


def seed_mean(values: list[float | None]) -> float | None:
    """Mean over world seeds of the resolved values (None: no seed resolved it)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return float(sum(vals) / len(vals)) if vals else None


def bfw_seed_worst(seeds: Mapping[str, Any], policy: str, far: str) -> list[float | None]:
    """Per world seed, max over subgroups of |FPR deviation| (%) under ``policy`` at ``far``
    (None where a subgroup is unresolved), from ``bfw_details["seeds"]``."""
    per: dict[int, list[float | None]] = {s: [] for s in seeds["world_seeds"]}
    for r in seeds["fmr_dev_pct"]:
        if r["policy"] == policy and r["fmr"] == far:
            per[r["seed"]].append(r["dev_pct"])
    return [None if not v or any(x is None or not math.isfinite(x) for x in v) else max(abs(x) for x in v)
            for v in per.values()]


def _bfw(d: Mapping[str, Any]) -> dict[str, Any]:
    systems = d["overview"]["systems"]
    dev = systems[next(iter(systems))]["max_abs_fmr_dev_pct"]
    far = bfw_headline_far(dev)
    if far is None:
        return {}
    if d.get("seeds"):  # the mean over world seeds
        return {"fmr": float(far), "bias": seed_mean(bfw_seed_worst(d["seeds"], "global", far)),
                "bias_after": seed_mean(bfw_seed_worst(d["seeds"], "group", far))}
    return {"fmr": float(far), "bias": dev["global"][far], "bias_after": dev["group"][far]}


def _batest_seeds(seeds: Mapping[str, Any]) -> dict[str, Any]:
    """Per world seed, the race means of the genuine gap (original, balanced + NFH), the
    planted one and the relative error, then their means over seeds."""
    per: dict[str, list[float | None]] = {"bias": [], "bias_after": [], "planted": [], "truth_error": []}
    for s in seeds["world_seeds"]:
        rows = [r for r in seeds["gaps"] if r["seed"] == s]
        orig = _mean({r["race"]: r["gap_genuine"] for r in rows if r["set"] == "original"})
        nfh = _mean({r["race"]: r["gap_genuine"] for r in rows if r["set"] == "balanced_nfh"})
        planted = _mean({r["race"]: r["planted_gap"] for r in rows if r["set"] == "original"})
        per["bias"].append(orig)
        per["bias_after"].append(nfh)
        per["planted"].append(planted)
        per["truth_error"].append(None if nfh is None or not planted else abs(nfh - planted) / abs(planted))
    return {k: seed_mean(v) for k, v in per.items()}


def _batest(d: Mapping[str, Any]) -> dict[str, Any]:
    if (d.get("seeds") or {}).get("gaps"):  # the mean over world seeds
        return _batest_seeds(d["seeds"])
    o = d["overview"]
    return {"bias": _mean(o["gap_genuine"]["original"]), "bias_after": _mean(o["gap_genuine"]["balanced_nfh"]),
            "planted": _mean(o["planted_gap_genuine"]), "truth_error": o["gap_rel_error_mean"]["balanced_nfh"]}


def _synthetic(d: Mapping[str, Any]) -> dict[str, Any]:
    # no truth_error: the orthogonality error of Gram-Schmidt normals is a numerical identity, not truth
    g = d["overview"]["hair_transect_gender_range"]
    return {"bias": _at(g, "raw"), "bias_after": _at(g, "orthogonal")}


def _synthetic_dcgan(d: Mapping[str, Any]) -> dict[str, Any]:
    # every (axis, attribute) cell whose raw drift is resolved, none picked: median |drift|
    rows = [r for r in d["drift"] if r.get("raw_resolved") and all(
        r.get(k) is not None and math.isfinite(r[k]) for k in ("drift_raw", "drift_orthogonal"))]
    out: dict[str, Any] = {}
    if rows:
        out.update(bias=statistics.median(abs(r["drift_raw"]) for r in rows),
                   bias_after=statistics.median(abs(r["drift_orthogonal"]) for r in rows))
    return out


def _transects(d: Mapping[str, Any]) -> dict[str, Any]:
    return {"bias": _at(d, "headline", "planted", "experimental", "hair_long", "coef"),
            "recovered": _share(_at(d, "planted_recovered", "planted"))}


def _transects_dcgan(d: Mapping[str, Any]) -> dict[str, Any]:
    clf = next(iter(d["headline"]))  # the trained shortcut classifier comes first
    exp = _at(d, "headline", clf, "experimental") or {}
    shortcut = next((k for k in exp if k not in ("tone_dark", "gender_male") and not k.endswith("_high")), None)
    flags = _at(d, "planted_recovered", clf) or {}
    planted = {k: v for k, v in flags.items() if k in SHORTCUT_PLANTED_FLAGS}  # not the reported-only flags
    return {"bias": _at(exp, shortcut, "coef"), "recovered": _share(planted)}


def _hcic(d: Mapping[str, Any]) -> dict[str, Any]:
    rates = d["fnmr_at_fmr_intended_labels"]
    toy = rates.get("toy") or rates[next(iter(rates))]
    fnmr = [v["fnmr"] for v in toy.values() if v.get("fnmr") is not None and math.isfinite(v["fnmr"])]
    # no recovered: the similarity ordering of real models on renders is a measurement, not a planted truth
    out: dict[str, Any] = {"fmr": d["fmr_target"]}
    if fnmr:
        out["bias"] = max(fnmr) - min(fnmr)
    return out


def _finite(values: list[Any]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _rapid(d: Mapping[str, Any]) -> dict[str, Any]:
    delta = d["delta_fnmr"]
    f = max(delta, key=float)
    seeds = d.get("seeds")
    if seeds:  # the mean over world seeds of each seed's worst |dFNMR|; flags pooled over seeds
        worst = [max(errs) if errs else None for errs in
                 (_finite([r["delta"] for r in seeds["fnmr"] if r["seed"] == s and r["fmr"] == f])
                  for s in seeds["world_seeds"])]
        flags = {f"{r['seed']}/{r['metric']}/{r['system']}": r["flags_agree"] for r in seeds["bias_recovery"]
                 if r.get("world", "planted") == "planted"}
        return {"fmr": float(f), "truth_error": seed_mean(worst), "recovered": _share(flags)}
    rec = d["bias"]["recovery"]
    flags = {f"{m}/{s}": v.get("flags_agree") for m, per in rec.items() for s, v in per.items()}
    errs = _finite(list(delta[f].values()))
    return {"fmr": float(f), "truth_error": max(errs) if errs else None, "recovered": _share(flags)}


#: The flags of :func:`facebias.studies.transects.shortcut_recovered` that check something
#: planted in the shortcut CNN's training set; its tone flags are reported, not planted.
SHORTCUT_PLANTED_FLAGS = ("experimental_shortcut_significant_planted_sign",
                          "experimental_shortcut_significant_planted_sign_clusters",
                          "observational_tone_significant_confounded_sign",
                          "observational_with_shortcut_reduces_tone")


#: kind -> (what each column means, the function reading them from the details dict).
DEFINITIONS: dict[str, tuple[dict[str, str], Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "bfw": ({"fmr": "the smallest FMR of bfw.fmr at which every subgroup's rate is resolved",
             "bias": "first system: max over subgroups of |FMR - target| / target, in %, one global threshold; "
                     "mean over the world seeds (bfw.world_seeds) on the synthetic world",
             "bias_after": "the same with per-subgroup thresholds"}, _bfw),
    "batest": ({"bias": "genuine-score gap F - M averaged over races, all pairs; mean over the world seeds "
                        "(batest.world_seeds)",
                "bias_after": "the same on IoU-balanced pairs without facial hair",
                "planted": "the planted genuine gap, averaged over races",
                "truth_error": "relative error of the balanced + NFH gap against the planted one"}, _batest),
    "synthetic_faces": ({"bias": "gender score range along a hair transect, raw normals",
                   "bias_after": "the same, orthogonalised normals"}, _synthetic),
    "synthetic_faces_dcgan": ({"bias": "median |drift| (SD) of every other attribute along every raw normal, over the "
                                 "cells whose raw interval excludes 0, read by machine labellers (a learned "
                                 "generator: no truth)",
                         "bias_after": "the same cells along the orthogonalised directions"}, _synthetic_dcgan),
    "transects": ({"bias": "planted classifier: long-hair coefficient (log-odds of an error) on transects",
                   "recovered": "share of the planted classifier's known-truth checks recovered"}, _transects),
    "transects_dcgan": ({"bias": "shortcut CNN: coefficient of its planted shortcut on transects",
                         "recovered": "share of the shortcut CNN's checks of what was planted in its training set "
                                      "(SHORTCUT_PLANTED_FLAGS; the reported-only skin flags "
                                      "are left out)"}, _transects_dcgan),
    "hcic": ({"fmr": "hcic.fmr", "bias": "PLANTED: the toy FR system's max - min FNMR over groups (intended labels); "
                                         "its group noise is planted, so this reads back the plant"}, _hcic),
    "rapid": ({"fmr": "the largest FMR of the grid",
               "truth_error": "max over systems of |estimated - true| FNMR; mean over the world seeds",
               "recovered": "share of (rate, system) whose flagged groups agree with the true labels', pooled over "
                            "the world seeds (planted world)"}, _rapid),
}


def headline(kind: str, details: Mapping[str, Any]) -> dict[str, float]:
    """The headline columns of one study from its details dict.

    Parameters
    ----------
    kind : str
        A key of :data:`DEFINITIONS` (the study's metrics kind without ``_details``).
    details : mapping
        The dict the study writes to ``<name>_details.json``.

    Returns
    -------
    dict
        Column -> float, columns in :data:`COLUMNS` order; a value that is None or NaN is left
        out (``dvc metrics show`` prints "-").

    Raises
    ------
    KeyError
        For an unknown kind, naming the known ones.

    Examples
    --------
    >>> d = {"overview": {"hair_transect_gender_range": {"raw": 0.5, "orthogonal": 0.02},
    ...                   "orthogonality_max_error": 1e-15}}
    >>> headline("synthetic_faces", d)
    {'bias': 0.5, 'bias_after': 0.02}
    """
    if kind not in DEFINITIONS:
        raise KeyError(f"no headline for kind {kind!r}; known {sorted(DEFINITIONS)}")
    meaning, read = DEFINITIONS[kind]
    values = read(details)
    assert set(values) <= set(meaning), (kind, sorted(set(values) - set(meaning)))  # noqa: S101 - a coding slip
    return {c: float(values[c]) for c in COLUMNS
            if c in values and values[c] is not None and math.isfinite(float(values[c]))}


def write_study_metrics(metrics_dir: str | os.PathLike, name: str, details: Mapping[str, Any], kind: str,
                        overview: Mapping[str, Any] | None = None) -> tuple[Path, Path]:
    """Write a study's ``<name>_details.json`` (every table; checked against the
    ``<kind>_details`` schema) and its headline ``<name>.json`` (the DVC metric).

    Parameters
    ----------
    metrics_dir : str or os.PathLike
        ``reports/metrics``.
    name : str
        File stem, e.g. ``"hcic_dcgan"``.
    details : mapping
        The study's full results.
    kind : str
        The study's kind (a key of :data:`DEFINITIONS`).
    overview : mapping, optional
        A study's summary tables (bfw, batest, synthetic), stored under ``"overview"`` in the
        details file.

    Returns
    -------
    (pathlib.Path, pathlib.Path)
        The details file and the headline file.

    Raises
    ------
    facebias.schema.MetricsSchemaError
        If either dict breaks its schema (the details file is checked first; nothing is
        written for a broken one).
    """
    full = dict(details) if overview is None else {**details, "overview": dict(overview)}
    d = Path(metrics_dir)
    out = write_metrics(d / f"{name}_details.json", full, f"{kind}_details")
    return out, write_metrics(d / f"{name}.json", headline(kind, full), "headline")
