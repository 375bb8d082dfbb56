"""The rapid test (paper 001) on the user's own photo folders: ``FOLDER/<query>/*.jpg`` ->
estimated labels, FNMR at FMR per model and group, the dropped photos, a figure and a summary.

One folder per searched name (a *query*: what a web image search for that name returned),
photos directly in it (:data:`~facebias.studies.rapid.images.IMAGE_EXTENSIONS`; hidden
files and sub-folders ignored). The chain, each step a library function:

1. :func:`list_query_folders` and :func:`read_groups` (optional ``query,group`` CSV; else one
   group, ``"everyone"``) -> the names table (:func:`folder_names`);
2. :func:`facebias.studies.rapid.images.image_folder_study`: read, exactly one face, near
   duplicates, embeddings of every model (model specs, :mod:`facebias.faces.specs`),
   within-query and same-group cross-query scores;
3. :func:`facebias.studies.rapid.estimate` (GMM fitted on within- and cross-query scores, as
   the study does): the labels, 1 = the queried person, 0 = someone else, -1 = excluded;
4. :func:`facebias.studies.rapid.genuine_impostor_pairs` on the estimated labels and
   :func:`facebias.studies.rapid.fnmr_table`: FNMR at each target FMR per model and group.

:func:`rapid_folder_study` runs it and returns the tables; :func:`run_rapid_folders` also
writes them (:func:`write_rapid_outputs`). Nothing is annotated by hand: every rate rests
on labels the method estimated, and its minimums (:func:`rapid_minimums`) decide what can be
measured. A table that comes back empty or with unresolved rates warns (``warnings``),
naming the rule: :class:`~facebias.studies.rapid.estimation.NoQueryIncludedWarning`,
:class:`~facebias.studies.rapid.evaluation.UnresolvedRateWarning` and
:class:`RapidFolderWarning`. Conventions: scores are cosine similarities (match iff
score > threshold); rates are fractions.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.studies.rapid.config import RapidConfig
from facebias.studies.rapid.images import IMAGE_EXTENSIONS
from facebias.studies.rapid.tables import ALL

__all__ = [
    "DEFAULT_FMR",
    "NO_GROUP",
    "RapidFolderWarning",
    "RapidFolderResult",
    "list_query_folders",
    "read_groups",
    "folder_names",
    "rapid_minimums",
    "minimums_lines",
    "rapid_folder_study",
    "label_table",
    "query_table",
    "rate_table",
    "truth_check",
    "plot_rates",
    "write_rapid_outputs",
    "run_rapid_folders",
]

#: Target FMRs by default: a few hundred photos give a few hundred impostor pairs, enough for
#: FMR 0.1 (100 needed); FMR 0.01 needs 1000 (``min_impostor_factor / FMR``).
DEFAULT_FMR: tuple[float, ...] = (0.1, 0.01)
#: The one group of a folder without a groups table.
NO_GROUP = "everyone"
#: The files :func:`write_rapid_outputs` writes, and what each holds.
OUTPUT_FILES: dict[str, str] = {
    "labels.csv": "one row per kept face: the estimated label (majority of the models) and each model's",
    "queries.csv": "one row per query folder: photos, dropped, faces, included or why not, labels",
    "rates.csv": "FNMR at each target FMR per model and group, with counts and resolved",
    "dropped.csv": "every photo not labelled: stage and reason",
    "pairs.csv": "the genuine and impostor pairs the rates are computed from, with scores",
    "rates.png": "FNMR at each target FMR per model and group (pair counts; unresolved marked)",
    "summary.json": "models (spec, model_id), settings, minimums, counts, warnings",
}


class RapidFolderWarning(UserWarning):
    """A folder study's table is empty or partly empty (a query or group with nothing left)."""


# --------------------------------------------------------------------------- inputs
def _image_files(folder: Path) -> list[Path]:
    """The image files of a query folder, as :func:`image_folder_study` takes them."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                  and p.suffix.lower() in IMAGE_EXTENSIONS)


def list_query_folders(root: str | os.PathLike) -> pd.DataFrame:
    """The query folders of ``root`` (its non-hidden sub-folders), sorted by name.

    Parameters
    ----------
    root : str or os.PathLike
        ``root/<query>/*.jpg|png|...``.

    Returns
    -------
    pandas.DataFrame
        ``query`` (the folder name), ``path``, ``n_files`` (image files in it).

    Raises
    ------
    ValueError
        One line when ``root`` does not exist, is a file, is empty, has no sub-folders, or
        none of its sub-folders holds an image file.
    """
    root = Path(root)
    layout = f"put each searched name's photos in its own folder, {root}/<query>/*.jpg"
    if not root.exists():
        raise ValueError(f"{root}: no such folder")
    if not root.is_dir():
        raise ValueError(f"{root}: is a file, not a folder of query folders; {layout}")
    entries = [p for p in root.iterdir() if not p.name.startswith(".")]
    if not entries:
        raise ValueError(f"{root}: the folder is empty; {layout}")
    subs = sorted((p for p in entries if p.is_dir()), key=lambda p: p.name)
    if not subs:
        loose = sum(p.suffix.lower() in IMAGE_EXTENSIONS for p in entries)
        raise ValueError(f"{root}: no query sub-folders ({loose} image files directly in it); {layout}")
    counts = [len(_image_files(p)) for p in subs]
    if not any(counts):
        raise ValueError(f"{root}: none of its {len(subs)} query folders holds an image file "
                         f"({', '.join(IMAGE_EXTENSIONS)})")
    return pd.DataFrame({"query": [p.name for p in subs], "path": [str(p) for p in subs],
                         "n_files": counts})


def read_groups(groups: str | os.PathLike | Mapping[str, str] | pd.DataFrame | pd.Series,
                queries: Sequence[str]) -> pd.Series:
    """Each query's group, from a ``query,group`` CSV file, table or mapping.

    Parameters
    ----------
    groups : str, os.PathLike, mapping, pandas.DataFrame or pandas.Series
        A CSV file or table with columns ``query, group``, or a mapping (or Series) query
        -> group.
    queries : sequence of str
        The query folders; each needs a group.

    Returns
    -------
    pandas.Series
        Group (str) indexed by query, in ``queries`` order.

    Raises
    ------
    ValueError
        One line for a missing file or column, an empty value, a query listed twice, the
        reserved group name ``"all"`` (the pooled rows), or query folders with no group.

    Warns
    -----
    RapidFolderWarning
        For listed queries that have no folder (they are ignored).

    Examples
    --------
    >>> read_groups({"a": "F", "b": "M"}, ["a", "b"]).tolist()
    ['F', 'M']
    >>> read_groups({"a": "F"}, ["a", "b"])
    Traceback (most recent call last):
    ...
    ValueError: groups: no group for 1 query folder(s): 'b'; add a row query,group for each
    """
    source = "groups"
    if isinstance(groups, str | os.PathLike):
        source = str(groups)
        path = Path(groups)
        if not path.is_file():
            raise ValueError(f"{source}: no such file (expected a CSV with columns query,group)")
        try:
            groups = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise ValueError(f"{source}: not a readable CSV file ({' '.join(str(exc).split())})") from exc
    if isinstance(groups, pd.Series):
        groups = groups.to_dict()
    if isinstance(groups, Mapping):
        groups = pd.DataFrame({"query": list(groups), "group": list(groups.values())})
    df = groups.rename(columns=lambda c: str(c).strip())
    missing = [c for c in ("query", "group") if c not in df.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing}; expected columns query,group "
                         f"(found {list(df.columns)})")
    q, g = df["query"].astype(str).str.strip(), df["group"].astype(str).str.strip()
    for col, v in (("query", q), ("group", g)):
        empty = (v == "") | df[col].isna().to_numpy()
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise ValueError(f"{source}: empty {col} in row {i} (line {i + 2})")
    dup = q.duplicated()
    if dup.any():
        raise ValueError(f"{source}: query {q[dup].iloc[0]!r} is listed twice")
    if (g == ALL).any():
        raise ValueError(f"{source}: group name {ALL!r} is reserved for the pooled rows; rename it")
    table = pd.Series(g.to_numpy(), index=q.to_numpy())
    lacking = [x for x in queries if x not in table.index]
    if lacking:
        shown = ", ".join(repr(x) for x in lacking[:5]) + (", ..." if len(lacking) > 5 else "")
        raise ValueError(f"{source}: no group for {len(lacking)} query folder(s): {shown}; add a row "
                         "query,group for each")
    extra = [x for x in table.index if x not in set(queries)]
    if extra:
        warnings.warn(f"{source}: {len(extra)} listed query(ies) have no folder and are ignored: "
                      + ", ".join(repr(x) for x in extra[:5]), RapidFolderWarning, stacklevel=2)
    return table.loc[list(queries)]


def folder_names(folders: pd.DataFrame, groups: pd.Series | None = None) -> pd.DataFrame:
    """The names table of :func:`~facebias.studies.rapid.images.image_folder_study` for
    query folders.

    Parameters
    ----------
    folders : pandas.DataFrame
        :func:`list_query_folders` output (``query, path``).
    groups : pandas.Series, optional
        Group by query (:func:`read_groups`); default one group, :data:`NO_GROUP`.

    Returns
    -------
    pandas.DataFrame
        ``person_id``, ``name`` and ``upload_path`` (the folder's name, under the root),
        ``race`` (the group), ``gender`` (empty) and ``group``.

    Examples
    --------
    >>> f = pd.DataFrame({"query": ["ann", "bo"], "path": ["/x/ann", "/x/bo"]})
    >>> folder_names(f)[["person_id", "group", "upload_path"]].to_numpy().tolist()
    [['ann', 'everyone', 'ann'], ['bo', 'everyone', 'bo']]
    """
    q = folders["query"].astype(str).to_numpy()
    g = (np.full(len(q), NO_GROUP, dtype=object) if groups is None
         else groups.loc[q].astype(str).to_numpy())
    return pd.DataFrame({"person_id": q, "name": q, "race": g, "gender": "", "group": g,
                         "upload_path": q})


def rapid_minimums(cfg: RapidConfig | None = None, min_photos: int = 10, max_photos: int = 100,
                   fmr: Sequence[float] = DEFAULT_FMR,
                   min_impostor_factor: float = 10.0) -> dict[str, Any]:
    """What a folder needs before anything can be measured.

    Parameters
    ----------
    cfg : RapidConfig, optional
        The method's parameters; default ``RapidConfig()``.
    min_photos, max_photos : int
        Least readable photos per query, and most photos read per query.
    fmr : sequence of float
        Target FMRs (fractions).
    min_impostor_factor : float, default 10.0
        A rate at FMR f needs at least ``min_impostor_factor / f`` impostor pairs.

    Returns
    -------
    dict
        ``min_photos``, ``max_photos``, ``min_faces_query`` (faces left after detection,
        de-duplication and enrolment), ``min_faces_cluster`` (faces every model must put in
        the queried person's cluster), ``min_queries_per_group`` (2: impostor pairs are
        cross-query pairs within a group), ``min_impostor_factor`` and ``min_impostors``
        (FMR as text -> impostor pairs needed).

    Examples
    --------
    >>> rapid_minimums(fmr=[0.1, 0.01])["min_impostors"]
    {'0.1': 100, '0.01': 1000}
    """
    cfg = cfg or RapidConfig()
    return {"min_photos": int(min_photos), "max_photos": int(max_photos),
            "min_faces_query": int(max(cfg.min_faces_query, 1)),
            "min_faces_cluster": int(cfg.min_faces_cluster), "min_queries_per_group": 2,
            "min_impostor_factor": float(min_impostor_factor),
            "min_impostors": {f"{a:g}": int(np.ceil(min_impostor_factor / a - 1e-9)) for a in fmr}}


def minimums_lines(minimums: Mapping[str, Any]) -> list[str]:
    """:func:`rapid_minimums` in words, one line per rule.

    Examples
    --------
    >>> print("\\n".join(minimums_lines(rapid_minimums(fmr=[0.1]))))
    a query is used if its folder has >= 10 readable photos (at most 100 are read)
    a query is included if >= 8 of them are kept (exactly one face, not a near duplicate, enrolled by every model) and every model puts >= 5 in one cluster, and no face in a second
    impostor pairs are pairs of faces from two included queries of the same group: a group needs >= 2 included queries
    a rate at FMR f needs >= 10/f impostor pairs: 100 at FMR 0.1
    """
    m = minimums
    need = ", ".join(f"{n} at FMR {f}" for f, n in m["min_impostors"].items())
    return [
        f"a query is used if its folder has >= {m['min_photos']} readable photos (at most "
        f"{m['max_photos']} are read)",
        f"a query is included if >= {m['min_faces_query']} of them are kept (exactly one face, not a "
        f"near duplicate, enrolled by every model) and every model puts >= {m['min_faces_cluster']} "
        "in one cluster, and no face in a second",
        "impostor pairs are pairs of faces from two included queries of the same group: a group "
        f"needs >= {m['min_queries_per_group']} included queries",
        f"a rate at FMR f needs >= {m['min_impostor_factor']:g}/f impostor pairs: {need}",
    ]


# --------------------------------------------------------------------------- the study
@dataclass
class RapidFolderResult:
    """Result of :func:`rapid_folder_study` (every table is a pandas DataFrame).

    Attributes
    ----------
    labels : pandas.DataFrame
        :func:`label_table`.
    queries : pandas.DataFrame
        :func:`query_table`.
    rates : pandas.DataFrame
        :func:`rate_table`.
    dropped : pandas.DataFrame
        ``query, path, stage, reason``: every photo not labelled, in folder order
        (stages ``read``, ``query``, ``detect``, ``duplicate``, ``embed`` of
        :func:`~facebias.studies.rapid.images.image_folder_study`, then ``estimate``: a
        kept face of an excluded query, or a face without every pair score).
    pairs : pandas.DataFrame
        :func:`~facebias.studies.rapid.genuine_impostor_pairs` of the estimated labels.
    images : facebias.studies.rapid.images.RapidImages
        The image step's output (faces, scores, embeddings, settings).
    minimums : dict
        :func:`rapid_minimums`.
    settings : dict
        Folder, models (spec and ``model_id``), groups, the method's parameters, FMRs, seed.
    warnings : list of str
        The warnings the run gave (empty or unresolved tables), in order.
    truth : dict or None
        :func:`truth_check` summary, when a truth table was given.
    truth_faces : pandas.DataFrame or None
        :func:`truth_check` per-photo table.
    seconds : float
        Wall time of the run.
    """

    labels: pd.DataFrame
    queries: pd.DataFrame
    rates: pd.DataFrame
    dropped: pd.DataFrame
    pairs: pd.DataFrame
    images: Any
    minimums: dict
    settings: dict
    warnings: list[str] = field(default_factory=list)
    truth: dict | None = None
    truth_faces: pd.DataFrame | None = None
    seconds: float = 0.0


def rapid_folder_study(root: str | os.PathLike, models: Sequence[str] = ("sface", "dlib"),
                       groups: str | os.PathLike | Mapping[str, str] | pd.DataFrame | None = None,
                       *, cfg: RapidConfig | None = None, min_photos: int = 10,
                       max_photos: int = 100, fmr: Sequence[float] = DEFAULT_FMR,
                       min_impostor_factor: float = 10.0, cache_dir: str | os.PathLike | None = None,
                       cross_seed: int = 2022,
                       truth: str | os.PathLike | pd.DataFrame | None = None,
                       progress: bool = False) -> RapidFolderResult:
    """The rapid test on ``root/<query>/*`` photo folders (module docstring).

    Parameters
    ----------
    root : str or os.PathLike
        One sub-folder of photos per query.
    models : sequence of str, default ("sface", "dlib")
        Model specs (:mod:`facebias.faces.specs`) or loaded embedders
        (:func:`~facebias.studies.rapid.images.load_systems`); the method votes across them,
        so two or more (paper 001 used five services), and their names must differ. Every
        model is loaded before anything else is done.
    groups : str, os.PathLike, mapping or pandas.DataFrame, optional
        ``query,group`` (:func:`read_groups`); default one group, :data:`NO_GROUP`.
    cfg : RapidConfig, optional
        The method's parameters (``params.yaml`` section ``rapid``); default
        ``RapidConfig()``.
    min_photos, max_photos : int, default 10, 100
        Least readable photos per query, most read.
    fmr : sequence of float, default (0.1, 0.01)
        Target FMRs, fractions in (0, 1).
    min_impostor_factor : float, default 10.0
        A rate at FMR f needs ``min_impostor_factor / f`` impostor pairs, else NaN.
    cache_dir : str or os.PathLike, optional
        Embedding cache (reruns reuse every embedding; user models are keyed by their
        weights' hash).
    cross_seed : int, default 2022
        Seed of the cross-query (impostor) pair draw.
    truth : str, os.PathLike or pandas.DataFrame, optional
        ``face, is_target`` (:func:`truth_check`): scores the estimated labels.
    progress : bool, default False
        Progress bars while embedding.

    Returns
    -------
    RapidFolderResult

    Raises
    ------
    ValueError
        One line for a bad model spec or a model that cannot be loaded (before any photo is
        read), a folder without query folders or images, a bad groups or truth table, or a
        target FMR outside (0, 1).

    Warns
    -----
    NoQueryIncludedWarning, UnresolvedRateWarning, RapidFolderWarning
        For every table that comes back empty or with unresolved rates (the message names
        the rule); the same lines are in ``result.warnings``.
    """
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _study(root, models, groups, cfg or RapidConfig(), min_photos, max_photos, fmr,
                     min_impostor_factor, cache_dir, cross_seed, truth, progress)
    seen = []
    for w in caught:  # give every warning back to the caller, and keep the rapid ones
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        text = str(w.message)
        if issubclass(w.category, UserWarning) and text not in seen:
            seen.append(text)
    res.warnings = seen
    res.seconds = time.perf_counter() - t0
    return res


def _study(root: Any, models: Sequence[str], groups: Any, cfg: RapidConfig, min_photos: int,
           max_photos: int, fmr: Sequence[float], min_impostor_factor: float, cache_dir: Any,
           cross_seed: int, truth: Any, progress: bool) -> RapidFolderResult:
    """:func:`rapid_folder_study` inside its warnings record."""
    from facebias.metrics import check_rates
    from facebias.studies.rapid.estimation import (
        NoQueryIncludedWarning,
        estimate,
        exclusion_message,
    )
    from facebias.studies.rapid.evaluation import genuine_impostor_pairs
    from facebias.studies.rapid.images import image_folder_study, load_systems

    embedders = load_systems(models)  # every model loaded first: a bad one fails before any work
    fmr = [float(a) for a in check_rates(list(fmr), "fmr")[0]]
    folders = list_query_folders(root)
    group_of = None if groups is None else read_groups(groups, folders["query"].tolist())
    truth_df = _read_truth(truth) if truth is not None else None
    names = folder_names(folders, group_of)
    images = image_folder_study(names, root, systems=list(embedders.values()), cache_dir=cache_dir,
                                min_photos=min_photos, max_photos=max_photos,
                                cross_seed=cross_seed, progress=progress)
    systems = list(images.settings["systems"])
    declared = list(dict.fromkeys(names["group"]))
    for q, n in zip(folders["query"], folders["n_files"], strict=True):
        if n == 0:
            warnings.warn(f"query {q!r}: its folder holds no image file", RapidFolderWarning, stacklevel=3)
    cross = images.cross_scores if len(images.cross_scores) else None  # none: one query per group
    if images.faces.empty:
        warnings.warn("no face left to label: every query was dropped before estimation ("
                      + _drop_words(images.dropped) + ")", RapidFolderWarning, stacklevel=3)
        est, labels = None, label_table(None, images)
    else:  # a query with one face has no pair: it is not in the scores, so not estimated
        est = (estimate(images.scores, cfg, fit_scores=cross)
               if len(images.scores) else None)
        labels = label_table(est, images)
        per_query = labels.groupby("query", sort=False)["label"].max()
        reason = (est.queries.set_index("query")["reason"] if est is not None
                  else pd.Series(dtype=object)).reindex(per_query.index).fillna("too_few_faces")
        msg = exclusion_message(pd.DataFrame({"query": per_query.index, "included": per_query >= 0,
                                              "reason": reason.to_numpy()}), cfg)
        if msg is not None:
            warnings.warn(msg, NoQueryIncludedWarning, stacklevel=3)
    pairs = (genuine_impostor_pairs(labels, images.faces, images.scores, cross)
             if len(labels) and len(images.scores) else _empty_pairs())
    rates = rate_table(pairs, systems, declared, fmr, min_impostor_factor,
                       by_group=groups is not None)
    queries = query_table(folders, names, images, est)
    dropped = _all_dropped(images, labels)
    minimums = rapid_minimums(cfg, min_photos, max_photos, fmr, min_impostor_factor)
    settings = {"folder": str(root), "models": {s: {"spec": images.settings["specs"][s],
                                                     "model_id": images.settings["models"][s]}
                                                for s in systems},
                "groups": None if groups is None else (str(groups) if isinstance(groups, str | os.PathLike)
                                                       else "table"),
                "method": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
                "fmr": fmr, "min_impostor_factor": float(min_impostor_factor),
                "cross_seed": int(cross_seed),
                "cache": None if cache_dir is None else str(cache_dir),
                "image_step": {k: images.settings[k] for k in ("detectors", "iou_min", "dedup_bits",
                                                                "min_photos", "max_photos")}}
    res = RapidFolderResult(labels, queries, rates, dropped, pairs, images, minimums, settings)
    if truth_df is not None:
        res.truth, res.truth_faces = truth_check(labels, dropped, truth_df)
    return res


def _empty_pairs() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
        ("system", object), ("group", object), ("query", object), ("query_b", object),
        ("face_a", object), ("face_b", object), ("score", float), ("genuine", bool))})


# --------------------------------------------------------------------------- tables
def label_table(est: Any, images: Any) -> pd.DataFrame:
    """The estimated labels per kept face, with each model's own label.

    Parameters
    ----------
    est : RapidEstimate or None
        :func:`~facebias.studies.rapid.estimate` of the folder's scores (None: no face
        was kept).
    images : RapidImages
        The image step's output.

    Returns
    -------
    pandas.DataFrame
        ``query, group, face, path, label`` (the estimate: a strict majority of the models,
        1 = the queried person, 0 = someone else, -1 = excluded), ``votes``,
        ``n_systems_agree``, ``ambiguity``, ``reason`` (why excluded, "" if labelled), then
        ``label_<model>`` per model (its own label on the same faces; -1 excluded).
    """
    systems = list(images.settings["systems"])
    cols = ["query", "group", "face", "path", "label", "votes", "n_systems_agree", "ambiguity",
            "reason", *(f"label_{s}" for s in systems)]
    if images.faces.empty:
        return pd.DataFrame(columns=cols)
    lab = (est.labels.copy() if est is not None
           else pd.DataFrame(columns=["query", "face", "label", "votes", "n_systems_agree",
                                      "ambiguity", "reason"]))
    # faces of a query with one face (no pair, so not estimated): excluded, too_few_faces
    alone = images.faces[~images.faces["face"].isin(lab["face"])]
    if len(alone):
        lab = pd.concat([lab, pd.DataFrame({
            "query": alone["query"].to_numpy(), "face": alone["face"].to_numpy(), "label": -1,
            "votes": 0, "n_systems_agree": 0, "ambiguity": np.nan, "reason": "too_few_faces"})],
            ignore_index=True)
    faces = images.faces.set_index("face")
    lab["group"] = faces.loc[lab["face"], "group"].to_numpy()
    lab["path"] = faces.loc[lab["face"], "path"].to_numpy()
    own = (est.system_labels.pivot(index="face", columns="system", values="label")
           if est is not None else pd.DataFrame(columns=systems))
    for s in systems:
        lab[f"label_{s}"] = own[s].reindex(lab["face"]).fillna(-1).to_numpy().astype(np.int64)
    for c in ("label", "votes", "n_systems_agree"):
        lab[c] = lab[c].astype(np.int64)
    lab["ambiguity"] = lab["ambiguity"].astype(float)
    return lab[cols].reset_index(drop=True)


def _reason_kind(stage: str, reason: str) -> str:
    """A short name of a drop reason, for counts: the reason before its details."""
    if stage == "duplicate":
        return "near duplicate"
    if stage == "embed":
        return "failed to enrol"
    if stage == "query":  # "query has 4 readable photos < min_photos=10"
        return f"in a query with fewer than {reason.rpartition('< ')[2]} readable photos"
    if stage == "read":
        return "over max_photos" if reason.startswith("over max_photos") else "unreadable"
    if stage == "estimate":
        return reason.split(":")[0]
    return reason.split(" (")[0]


def _drop_words(dropped: pd.DataFrame) -> str:
    """``"detect: 2 no face, 1 not exactly one face; duplicate: 1 near duplicate"``."""
    if dropped.empty:
        return "no photo dropped"
    kinds = [(s, _reason_kind(s, r)) for s, r in zip(dropped["stage"], dropped["reason"], strict=True)]
    parts = []
    for stage in dict.fromkeys(s for s, _ in kinds):
        counts = pd.Series([k for s, k in kinds if s == stage]).value_counts(sort=False)
        parts.append(f"{stage}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "; ".join(parts)


def _all_dropped(images: Any, labels: pd.DataFrame) -> pd.DataFrame:
    """The image step's dropped photos, then the kept faces the estimate excluded."""
    d = images.dropped[["query", "path", "stage", "reason"]]
    ex = labels[labels["label"] == -1]
    if len(ex):
        ex = ex.assign(stage="estimate", reason=[f"{r}: the query was excluded" if r not in (
            "missing_pairs", "missing_system") else f"{r}: a pair score is missing"
            for r in ex["reason"]])[["query", "path", "stage", "reason"]]
        d = pd.concat([d, ex], ignore_index=True)
    return d.reset_index(drop=True)


def query_table(folders: pd.DataFrame, names: pd.DataFrame, images: Any, est: Any) -> pd.DataFrame:
    """One row per query folder: photos, what was dropped, faces, the estimate.

    Returns
    -------
    pandas.DataFrame
        ``query, group, n_files`` (image files), ``n_dropped`` and per stage
        ``dropped_read, dropped_query, dropped_detect, dropped_duplicate, dropped_embed``,
        ``dropped_why`` (counts per reason, in words), ``n_faces`` (kept), ``included``,
        ``reason`` (why not; ``dropped`` when no face was kept), ``n_person`` (label 1),
        ``n_other`` (label 0).
    """
    d = images.dropped
    rows = []
    inc = (est.queries.set_index("query") if est is not None
           else pd.DataFrame(columns=["included", "reason"]))
    lab = est.labels if est is not None else pd.DataFrame(columns=["query", "label"])
    person = lab[lab["label"] == 1].groupby("query").size()
    other = lab[lab["label"] == 0].groupby("query").size()
    n_faces = images.faces.groupby("query").size()
    for q, g, n in zip(folders["query"], names["group"], folders["n_files"], strict=True):
        dq = d[d["query"] == q]
        row = {"query": q, "group": g, "n_files": int(n), "n_dropped": len(dq)}
        for stage in ("read", "query", "detect", "duplicate", "embed"):
            row[f"dropped_{stage}"] = int((dq["stage"] == stage).sum())
        row["dropped_why"] = _drop_words(dq) if len(dq) else ""
        row["n_faces"] = int(n_faces.get(q, 0))
        if q in inc.index:
            row.update(included=bool(inc.loc[q, "included"]), reason=str(inc.loc[q, "reason"]))
        else:  # no face left, or one face (no pair to estimate from)
            row.update(included=False, reason="too_few_faces" if row["n_faces"] else "dropped")
        row["n_person"], row["n_other"] = int(person.get(q, 0)), int(other.get(q, 0))
        rows.append(row)
    return pd.DataFrame(rows)


def rate_table(pairs: pd.DataFrame, systems: Sequence[str], groups: Sequence[str],
               fmr: Sequence[float], min_impostor_factor: float = 10.0,
               by_group: bool = True) -> pd.DataFrame:
    """FNMR at each target FMR per model and group (and pooled, ``"all"``), complete.

    :func:`~facebias.studies.rapid.fnmr_table` of ``pairs`` (threshold from the impostor
    scores, match iff score > threshold; Wilson 95 % interval over genuine pairs), with a
    row for every (model, group, FMR) even where no pair is left, the FMR measured at the
    threshold, and whether the rate is resolved.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`~facebias.studies.rapid.genuine_impostor_pairs` output.
    systems, groups : sequence of str
        Every model and every declared group.
    fmr : sequence of float
        Target FMRs.
    min_impostor_factor : float, default 10.0
        Least impostor pairs, times ``1 / fmr``.
    by_group : bool, default True
        Rows per group besides the pooled ``"all"`` (False: one group only).

    Returns
    -------
    pandas.DataFrame
        ``system, group, fmr, threshold, fnmr, fnmr_lo, fnmr_hi, fmr_measured, n_genuine,
        n_impostor, min_impostors, resolved`` (rates are fractions; NaN when unresolved).

    Warns
    -----
    UnresolvedRateWarning
        Per target FMR with a NaN rate (from :func:`~facebias.studies.rapid.fnmr_table`).
    RapidFolderWarning
        For a (model, group) with no pair at all.
    """
    from facebias.metrics import fmr_at
    from facebias.studies.rapid.evaluation import _split, fnmr_table

    table = fnmr_table(pairs, fmr, min_impostor_factor, by_group) if len(pairs) else None
    measured = {}
    if len(pairs):
        for s, g, _gen, imp in _split(pairs, by_group):
            sub = table[(table["system"] == s) & (table["group"] == g)]
            for a, t in zip(sub["fmr"], sub["threshold"], strict=True):
                measured[(s, g, a)] = float(fmr_at(imp, t)) if np.isfinite(t) else np.nan
    cells = [(s, g) for s in systems for g in ([ALL, *groups] if by_group else [ALL])]
    have = set() if table is None else set(zip(table["system"], table["group"], strict=True))
    absent = [c for c in cells if c not in have]
    if absent:
        if table is None:
            warnings.warn("rates: no genuine or impostor pairs for any model (no face labelled as "
                          "the queried person in any included query)", RapidFolderWarning, stacklevel=3)
        else:
            warnings.warn("rates: no pairs for " + ", ".join(f"{s}/{g}" for s, g in absent)
                          + " (none of the group's queries is included)", RapidFolderWarning,
                          stacklevel=3)
    rows = []
    for s, g in cells:
        for a in fmr:
            hit = (table[(table["system"] == s) & (table["group"] == g) & (table["fmr"] == a)]
                   if table is not None else pd.DataFrame())
            if len(hit):
                r = hit.iloc[0]
                vals = [float(r[c]) for c in ("threshold", "fnmr", "fnmr_lo", "fnmr_hi")]
                n_gen, n_imp = int(r["n_genuine"]), int(r["n_impostor"])
            else:
                vals, n_gen, n_imp = [np.nan] * 4, 0, 0
            rows.append((s, g, a, *vals, measured.get((s, g, a), np.nan), n_gen, n_imp,
                         int(np.ceil(min_impostor_factor / a - 1e-9)), bool(np.isfinite(vals[1]))))
    return pd.DataFrame(rows, columns=["system", "group", "fmr", "threshold", "fnmr", "fnmr_lo",
                                       "fnmr_hi", "fmr_measured", "n_genuine", "n_impostor",
                                       "min_impostors", "resolved"])


# --------------------------------------------------------------------------- truth
def _read_truth(truth: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    """A truth table ``face, is_target`` (file or frame), checked; one-line errors."""
    source = "truth"
    if not isinstance(truth, pd.DataFrame):
        source = str(truth)
        if not Path(truth).is_file():
            raise ValueError(f"{source}: no such file (expected a CSV with columns face,is_target)")
        try:
            truth = pd.read_csv(truth, dtype={"face": str}, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise ValueError(f"{source}: not a readable CSV file ({' '.join(str(exc).split())})") from exc
    missing = [c for c in ("face", "is_target") if c not in truth.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing}; expected face (<query>/<file>) and "
                         "is_target (1 = the queried person, 0 = someone else)")
    y = pd.to_numeric(truth["is_target"], errors="coerce")
    if not y.isin([0, 1]).all():
        i = int(np.flatnonzero(~y.isin([0, 1]).to_numpy())[0])
        raise ValueError(f"{source}: is_target must be 0 or 1, got {truth['is_target'].iloc[i]!r} in "
                         f"row {i} (line {i + 2})")
    face = truth["face"].astype(str)
    if face.duplicated().any():
        raise ValueError(f"{source}: face {face[face.duplicated()].iloc[0]!r} is listed twice")
    return pd.DataFrame({"face": face, "query": face.str.split("/").str[0],
                         "is_target": y.astype(np.int64)})


def truth_check(labels: pd.DataFrame, dropped: pd.DataFrame,
                truth: str | os.PathLike | pd.DataFrame) -> tuple[dict[str, Any], pd.DataFrame]:
    """The estimated labels against a known truth (e.g. the example folder's ``truth.csv``).

    Parameters
    ----------
    labels : pandas.DataFrame
        :func:`label_table` (``query, face, label``).
    dropped : pandas.DataFrame
        The photos not labelled (``query, path, stage``), for photos the truth lists but
        no label covers.
    truth : str, os.PathLike or pandas.DataFrame
        ``face`` (``"<query>/<file>"``) and ``is_target`` (1 = the queried person).

    Returns
    -------
    (dict, pandas.DataFrame)
        Summary: ``label_accuracy`` (share of labelled photos, label 1 or 0, whose label
        is right: :func:`~facebias.studies.rapid.label_agreement`'s ``agreement``),
        ``coverage``, ``n_truth``, ``n_labelled``, ``n_unlisted`` (labelled faces the truth
        does not list), and for ``planted`` (is_target 0) and ``person`` (is_target 1) the
        counts ``n``, ``labelled_other``, ``labelled_person``, ``excluded`` (label -1) and
        ``dropped`` (before estimation), and ``found`` (planted: share of the labelled ones
        labelled 0; person: share labelled 1). Table: one row per truth photo, ``face,
        query, is_target, label`` (-1 excluded, NaN dropped), ``stage`` (``labelled``,
        ``excluded``, a drop stage, or ``missing``: no such photo).

    Raises
    ------
    ValueError
        For a bad truth table, or one that lists none of the folder's photos.
    """
    from facebias.studies.rapid.truth import label_agreement

    t = _read_truth(truth)
    lab = labels.set_index("face")["label"] if len(labels) else pd.Series(dtype=np.int64)
    dface = (dropped["query"].astype(str) + "/" + dropped["path"].map(lambda p: Path(p).name)
             if len(dropped) else pd.Series(dtype=object))
    dstage = dict(zip(dface, dropped["stage"], strict=True)) if len(dropped) else {}
    label = t["face"].map(lab)
    stage = np.where(label.notna(), np.where(label == -1, "excluded", "labelled"),
                     t["face"].map(dstage).fillna("missing"))
    table = t.assign(label=label, stage=stage)
    if (table["stage"] == "missing").all():
        raise ValueError("truth: none of its faces is a photo of this folder (faces are "
                         "'<query folder>/<file name>')")
    listed = labels[labels["face"].isin(t["face"])]
    agree = label_agreement(listed.assign(label=listed["label"].astype(np.int64)),
                            t) if len(listed) else {"agreement": np.nan, "coverage": np.nan}
    summary: dict[str, Any] = {
        "label_accuracy": agree["agreement"], "coverage": agree["coverage"],
        "n_truth": len(t), "n_labelled": int((table["stage"] == "labelled").sum()),
        "n_unlisted": int((~labels["face"].isin(t["face"])).sum()) if len(labels) else 0}
    for key, y in (("planted", 0), ("person", 1)):
        sub = table[table["is_target"] == y]
        n0, n1 = int((sub["label"] == 0).sum()), int((sub["label"] == 1).sum())
        right = n0 if y == 0 else n1
        summary[key] = {"n": len(sub), "labelled_other": n0, "labelled_person": n1,
                        "excluded": int((sub["stage"] == "excluded").sum()),
                        "dropped": int((~sub["stage"].isin(["labelled", "excluded"])).sum()),
                        "found": right / (n0 + n1) if n0 + n1 else np.nan}
    return summary, table.reset_index(drop=True)


# --------------------------------------------------------------------------- figure and files
def plot_rates(rates: pd.DataFrame, title: str = "") -> Any:
    """FNMR at each target FMR (one panel each) per group (x) and model (bars), with Wilson
    95 % intervals; each bar is labelled with its genuine/impostor pair counts, and an
    unresolved rate with ``n/a`` and the impostor pairs it had against those it needed.

    Parameters
    ----------
    rates : pandas.DataFrame
        :func:`rate_table`.
    title : str, optional
        A line under the panels (the provenance stamp).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from facebias.plots import interval_err, stamp

    fmrs = list(dict.fromkeys(rates["fmr"]))
    systems = list(dict.fromkeys(rates["system"]))
    groups = list(dict.fromkeys(rates["group"]))
    panel = max(3.0, 0.8 + 0.5 * max(len(groups), 1) * max(len(systems), 1))
    fig, axes = plt.subplots(1, max(len(fmrs), 1), figsize=(panel * max(len(fmrs), 1), 3.6),
                             squeeze=False, layout="constrained")
    width = 0.8 / max(len(systems), 1)
    for ax, a in zip(axes[0], fmrs, strict=False):
        sub = rates[rates["fmr"] == a]
        top = float(np.nanmax(sub["fnmr_hi"].to_numpy(float))) if sub["resolved"].any() else 0.0
        ymax = max(0.1, min(1.0, top * 1.35 + 0.02))
        for k, s in enumerate(systems):
            r = sub[sub["system"] == s].set_index("group").reindex(groups)
            x = np.arange(len(groups)) + (k - (len(systems) - 1) / 2) * width
            ok = r["resolved"].fillna(False).to_numpy(bool)
            ax.bar(x[ok], r["fnmr"].to_numpy(float)[ok], width * 0.9, color=f"C{k}",
                   label=s, yerr=interval_err(r["fnmr"][ok], r["fnmr_lo"][ok], r["fnmr_hi"][ok]),
                   error_kw={"lw": 0.8, "capsize": 2})
            ax.plot(x[ok], r["fnmr"].to_numpy(float)[ok], "o", ms=3, color=f"C{k}")  # FNMR 0 shows
            ax.bar(x[~ok], np.full((~ok).sum(), ymax), width * 0.9, color="none",
                   edgecolor=f"C{k}", hatch="//", lw=0.5, alpha=0.35)
            for xi, (_, row) in zip(x, r.iterrows(), strict=True):
                if row["resolved"]:
                    ax.text(xi, min(row["fnmr_hi"], ymax) + ymax * 0.02,
                            f"{int(row['n_genuine'])}/{int(row['n_impostor'])}", ha="center",
                            va="bottom", fontsize=6, rotation=90)
                else:
                    ax.text(xi, ymax * 0.03, f"n/a: {int(row['n_impostor'])} < {int(row['min_impostors'])}"
                            if row["n_genuine"] > 0 else "n/a: no genuine", ha="center", va="bottom",
                            fontsize=6, rotation=90, color="0.2",
                            bbox={"fc": "white", "ec": "none", "pad": 1})
        ax.set_xticks(range(len(groups)), [str(g) for g in groups], fontsize=8)
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.set_ylim(0, ymax)
        ax.set_ylabel("FNMR (estimated labels)", fontsize=8)
        ax.set_title(f"FNMR at FMR {a:g}", fontsize=9)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7, title="model", title_fontsize=7)
    fig.suptitle("labels over bars: genuine/impostor pairs; n/a: impostor pairs < 10/FMR "
                 "(unresolved)", fontsize=7, color="0.35")
    if title:
        stamp(fig, title)
    return fig


def write_rapid_outputs(res: RapidFolderResult, out: str | os.PathLike) -> dict[str, Path]:
    """Write :data:`OUTPUT_FILES` (and ``truth_check.csv`` with a truth) under ``out``.

    Parameters
    ----------
    res : RapidFolderResult
        :func:`rapid_folder_study` output.
    out : str or os.PathLike
        Output folder (created).

    Returns
    -------
    dict of str to pathlib.Path
        File name -> path written.
    """
    import matplotlib.pyplot as plt

    from facebias.io import atomic_path, write_json_atomic
    from facebias.plots import save

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    pairs = res.pairs.assign(genuine=res.pairs["genuine"].astype(np.int64))
    tables = {"labels.csv": res.labels, "queries.csv": res.queries, "rates.csv": res.rates,
              "dropped.csv": res.dropped, "pairs.csv": pairs}
    if res.truth_faces is not None:
        tables["truth_check.csv"] = res.truth_faces
    for name, df in tables.items():
        with atomic_path(out / name) as tmp:
            df.to_csv(tmp, index=False)
        written[name] = out / name
    models = ", ".join(res.settings["models"])
    fig = plot_rates(res.rates, f"facebias rapid on {res.settings['folder']}: models {models}; "
                                "labels estimated from the photos (no annotation)")
    written["rates.png"] = save(fig, out / "rates.png")
    plt.close(fig)
    lab = res.labels
    summary = {
        "folder": res.settings["folder"], "models": res.settings["models"],
        "settings": {k: v for k, v in res.settings.items() if k not in ("folder", "models")},
        "minimums": res.minimums,
        "counts": {"queries": len(res.queries), "image_files": int(res.queries["n_files"].sum()),
                   "photos_dropped": int(res.queries["n_dropped"].sum()),
                   "faces": len(lab), "queries_included": int(res.queries["included"].sum()),
                   "labelled_person": int((lab["label"] == 1).sum()),
                   "labelled_other": int((lab["label"] == 0).sum()),
                   "excluded": int((lab["label"] == -1).sum()),
                   "rates_resolved": int(res.rates["resolved"].sum()), "rates": len(res.rates)},
        "warnings": res.warnings, "truth": res.truth, "seconds": round(res.seconds, 1),
        "files": {**{k: OUTPUT_FILES[k] for k in OUTPUT_FILES},
                  **({"truth_check.csv": "each truth photo: its label and stage"}
                     if res.truth_faces is not None else {})},
    }
    written["summary.json"] = write_json_atomic(out / "summary.json", summary)
    return written


def run_rapid_folders(root: str | os.PathLike, out: str | os.PathLike,
                      models: Sequence[str] = ("sface", "dlib"), **kwargs: Any) -> RapidFolderResult:
    """:func:`rapid_folder_study` of ``root``, written to ``out`` (:func:`write_rapid_outputs`).

    Parameters
    ----------
    root, models, **kwargs
        As in :func:`rapid_folder_study`.
    out : str or os.PathLike
        Output folder.

    Returns
    -------
    RapidFolderResult
        With ``settings["out"]`` and ``settings["files"]`` (name -> path).
    """
    res = rapid_folder_study(root, models, **kwargs)
    res.settings["out"] = str(out)
    res.settings["files"] = {k: str(v) for k, v in write_rapid_outputs(res, out).items()}
    return res
