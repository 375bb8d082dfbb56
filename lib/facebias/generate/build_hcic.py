"""000's HCIC set, planned in latent space: the demographic groups, prototypes per seed, the
human seed filter on the candidate prototypes, max-min seed selection, the four attribute
sequences of 5 per prototype and their image / slot tables (the pairs are
:func:`facebias.generate.plan.hcic_pairs`).

Pose and light sequences come from the backend's physical controls where it has them
(:func:`backend_controls`, :func:`sequence_kind`): both rendered (``render``: the procedural
renderer's yaw and lights), pose rendered and light learned (``camera``: EG3D's camera, no
light control), or both along learned latent directions (``latent``: the GANs).

Part of :mod:`facebias.generate.build` (which re-exports every public name here).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from facebias import latent
from facebias.generate import plan
from facebias.generate.build_render import _frontal, _with_truth, render
from facebias.generate.build_transects import held_attributes
from facebias.generate.hyperplanes import Hyperplanes

if TYPE_CHECKING:
    from facebias.generate.build import SynthConfig


#: 000's six groups: race initial + gender initial; race names as in the generator.
GROUPS: dict[str, tuple[str, str]] = {
    "WM": ("White", "male"), "WF": ("White", "female"),
    "BM": ("Black", "male"), "BF": ("Black", "female"),
    "AM": ("East Asian", "male"), "AF": ("East Asian", "female"),
}
#: Where no race labeller exists (the GAN): the lighter / darker side of the ``tone_axis``
#: hyperplane (on the DCGAN: face darkness, -ITA; not validated as skin tone) x gender.
TONE_GROUPS: dict[str, tuple[str, str]] = {
    "LM": ("lighter", "male"), "LF": ("lighter", "female"),
    "DM": ("darker", "male"), "DF": ("darker", "female"),
}


#: Attributes that 000's sequences step along; prototypes start at their neutral level.
SEQUENCE_ATTRIBUTES = ("age", "smile")
#: Pose and light along learned directions (backends without yaw/light controls).
LATENT_SEQUENCE_ATTRIBUTES = ("yaw", "light")
#: How the pose and light sequences are made (:func:`sequence_kind`): ``render`` (the backend's
#: ``yaw=`` and ``light=``), ``camera`` (pose by its ``yaw=``, light along the learned light
#: direction), ``latent`` (both along learned directions).
SEQUENCE_KINDS = ("render", "camera", "latent")
#: The physical controls each kind needs of the backend's ``synthesize``.
SEQUENCE_CONTROLS: dict[str, tuple[str, ...]] = {"render": ("yaw", "light"), "camera": ("yaw",), "latent": ()}
#: The hyperplanes each kind steps along (beside :data:`SEQUENCE_ATTRIBUTES`) and so needs.
SEQUENCE_HYPERPLANES: dict[str, tuple[str, ...]] = {"render": (), "camera": ("light",),
                                                    "latent": LATENT_SEQUENCE_ATTRIBUTES}
#: Controls of the backends that do not declare a ``controls`` attribute (:func:`backend_controls`).
KNOWN_CONTROLS: dict[str, tuple[str, ...]] = {"procedural": ("yaw", "light"), "eg3d": ("yaw",)}


def group_kind(hp: Hyperplanes, cfg: SynthConfig) -> str:
    """``race_gender`` (000's six groups; needs the race hyperplanes) or ``tone_gender``."""
    if cfg.groups != "auto":
        return cfg.groups
    return "race_gender" if all(f"race_{r}" in hp.names for r, _ in GROUPS.values()) else "tone_gender"


def group_table(kind: str) -> dict[str, dict[str, str]]:
    """Each group's descriptive columns: ``race``/``gender`` or ``tone``/``gender``."""
    if kind == "race_gender":
        return {g: {"race": r, "gender": s} for g, (r, s) in GROUPS.items()}
    return {g: {"tone": k, "gender": s} for g, (k, s) in TONE_GROUPS.items()}


def backend_controls(gen: Any) -> tuple[str, ...]:
    """The physical controls of ``gen.synthesize`` among ``"yaw"`` and ``"light"``.

    A backend declares them as a ``controls`` attribute (e.g. ``controls = ("yaw",)``: its
    ``yaw=`` turns the face, degrees, + = toward the image's right); one that does not gets
    its entry in :data:`KNOWN_CONTROLS` by ``name`` (the procedural renderer: yaw and light;
    EG3D: its camera's yaw), else none (the DCGAN, StyleGAN2).

    Parameters
    ----------
    gen : Generator
        The backend.

    Returns
    -------
    tuple of str
        The controls, e.g. ``("yaw", "light")``; ``()`` for none.
    """
    declared = getattr(gen, "controls", None)
    if declared is None:
        return KNOWN_CONTROLS.get(getattr(gen, "name", ""), ())
    return tuple(str(c) for c in declared)


def sequence_kind(gen: Any, cfg: SynthConfig) -> str:
    """How the pose and light sequences are made (:data:`SEQUENCE_KINDS`).

    ``cfg.sequences`` when given; ``auto`` picks from :func:`backend_controls`: ``render``
    with yaw and light controls (the procedural renderer), ``camera`` with yaw only (EG3D:
    pose by its camera, light along the learned light direction), else ``latent`` (the
    GANs: both along learned directions).

    Raises
    ------
    ValueError
        For a kind given in ``cfg.sequences`` whose controls the backend lacks (before any
        render: its ``synthesize`` would refuse the ``yaw=`` / ``light=`` of the sequences).
    """
    controls = backend_controls(gen)
    if cfg.sequences == "auto":
        if {"yaw", "light"} <= set(controls):
            return "render"
        return "camera" if "yaw" in controls else "latent"
    lacking = [c for c in SEQUENCE_CONTROLS[cfg.sequences] if c not in controls]
    if lacking:
        raise ValueError(f"generate.sequences: {cfg.sequences!r} needs the backend's {' and '.join(lacking)} "
                         f"control, which {getattr(gen, 'name', type(gen).__name__)!r} lacks (it has "
                         f"{list(controls)}); use 'auto'")
    return cfg.sequences


def check_sequence_hyperplanes(hp: Hyperplanes, seq: str) -> None:
    """``ValueError`` unless ``hp`` has every hyperplane sequences of kind ``seq`` step along:
    age and smile, plus light for ``camera`` and yaw and light for ``latent``."""
    attrs = [n for n in hp.names if not n.startswith("race_")]
    need = [a for a in SEQUENCE_ATTRIBUTES + SEQUENCE_HYPERPLANES[seq] if a not in attrs]
    if need:
        raise ValueError(f"plan_hcic: no hyperplane for {need} (have {attrs}); 000's sequences need them")


def _neutral_attributes(hp: Hyperplanes, seq: str) -> list[str]:
    """The hyperplanes a prototype is set to the neutral level of (decision value 0): age and
    smile where fitted, the learned directions its sequences step along, and for ``camera``
    a fitted yaw hyperplane (so the prototype faces the camera at the rendered 0 degrees)."""
    names = [a for a in SEQUENCE_ATTRIBUTES if a in hp.names]
    names += list(SEQUENCE_HYPERPLANES[seq])
    if seq == "camera" and "yaw" in hp.names:
        names.append("yaw")
    return names


def _prototypes(z: np.ndarray, hp: Hyperplanes, cfg: SynthConfig, groups: str = "race_gender",
                seq: str = "render") -> dict[str, np.ndarray]:
    """000's prototypes of seed ``z``. Age and expression (and, for latent sequences, yaw and
    light) are first set to their neutral hyperplanes (decision value 0) and held there, so
    every prototype has room for its age (to 0.8) and expression (to 0.9) sequences; a seed
    that already smiled at 0.94 would otherwise get a sequence of five identical images.
    ``race_gender``: the six race x gender prototypes of 000 (race one-vs-all hyperplanes);
    ``tone_gender``: the 2 x 2 transect cell at ``cfg.tone_axis`` -/+ ``c_race`` and gender
    -/+ ``c_gender`` (:data:`TONE_GROUPS`), with every other hyperplane held as on the
    transects (:func:`held_attributes`)."""
    s_n, s_b = hp.select(_neutral_attributes(hp, seq))
    neutral = latent.project_to_intersection(z, s_n, s_b)
    g_n, g_b = hp.select(["gender"])
    if groups == "race_gender":
        races = {r: tuple(a[0] for a in hp.select([f"race_{r}"])) for r in sorted({r for r, _ in GROUPS.values()})}
        return plan.prototypes(neutral, (g_n[0], g_b[0]), races, c_gender=cfg.c_gender, c_race=cfg.c_race,
                               fixed=s_n)
    axes = [cfg.tone_axis, "gender"]
    normals, offsets = hp.select(axes)
    held = list(dict.fromkeys(_neutral_attributes(hp, seq) + held_attributes(hp, axes, cfg.transect_follow)))
    grid = latent.transect(neutral, normals, offsets, [[-cfg.c_race, cfg.c_race], [-cfg.c_gender, cfg.c_gender]],
                           orthogonal=True, fixed=hp.select(held)[0])
    return {g: grid["LD".index(g[0]), "FM".index(g[1])] for g in TONE_GROUPS}


def select_seeds(candidates: np.ndarray, meshes: np.ndarray, n_select: int,
                 eligible: np.ndarray | None = None) -> list[int]:
    """Max-min selection (000 Supp. Alg. 1) of candidate seeds whose prototypes all gave
    a face mesh; ``meshes`` is (n_candidates, n_groups, F) with NaN rows for failures.
    ``eligible`` (bool, one per candidate; default all) restricts it to, e.g., the seeds the
    seed filter kept."""
    okay = np.isfinite(meshes).all(axis=(1, 2))
    if eligible is not None:
        okay &= np.asarray(eligible, dtype=bool)
    ok = np.flatnonzero(okay)
    if ok.size < n_select:
        raise ValueError(f"only {ok.size} eligible candidate seeds have a face mesh for all {meshes.shape[1]} "
                         f"prototypes; {n_select} wanted (raise n_candidates or seed_filter_keep)")
    picked = plan.maxmin_select(meshes[ok], n_select)
    return [int(ok[i]) for i in picked]


def plan_hcic(gen: Any, hp: Hyperplanes, seeds: np.ndarray, cfg: SynthConfig,
              seed_ids: Sequence[int] | None = None) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame]:
    """Prototypes and sequences of ``seeds`` (n, D): ``(latents, images, slots)``.

    ``images``: one row per distinct image (17 per prototype) with ``image_id, seed,
    group``, the group's columns (:func:`group_table`), ``prototype_id, attribute, level,
    yaw, light, is_prototype``; ``slots``: the 20 sequence slots per prototype
    (``prototype_id, attribute, level, image_id, is_self``), 4 of which are the prototype.
    Pose and light sequences use the backend's yaw/light controls (``render``: 000's
    -30..30 degrees and four lights), its yaw control and the learned light direction
    (``camera``: the same yaws, recorded in ``yaw``; light as for ``latent``) or step along
    the orthogonalised ``yaw`` / ``light`` directions (``latent``: levels at -/+
    ``latent_step`` and half of it, ``yaw`` 0 and ``light`` front in the table). Age and
    expression step along their orthogonalised directions until the fitted label predictor
    reaches ``age_target`` / ``expression_target`` (no truth is read).
    """
    seed_ids = list(range(len(seeds))) if seed_ids is None else list(seed_ids)
    kind, seq = group_kind(hp, cfg), sequence_kind(gen, cfg)
    columns = group_table(kind)
    attrs = [n for n in hp.names if not n.startswith("race_")]
    ortho = dict(zip(attrs, latent.orthogonalize(hp.select(attrs)[0]), strict=True))
    check_sequence_hyperplanes(hp, seq)
    lat: list[np.ndarray] = []
    images: list[dict[str, Any]] = []
    slots: list[dict[str, Any]] = []

    def add(row: dict[str, Any], z: np.ndarray) -> str:
        lat.append(z)
        images.append(row)
        return row["image_id"]

    def slot(pid: str, attribute: str, level: int, iid: str, proto_img: str) -> None:
        slots.append({"prototype_id": pid, "attribute": attribute, "level": level,
                      "image_id": iid, "is_self": iid == proto_img})

    n = cfg.sequence_n
    for sid, z in zip(seed_ids, seeds, strict=True):
        for group, proto in _prototypes(z, hp, cfg, kind, seq).items():
            pid = f"s{sid:04d}_{group}"
            base = {"seed": sid, "group": group, **columns[group], "prototype_id": pid}
            proto_img = add({**base, "image_id": pid, "attribute": "prototype", "level": 0,
                             "yaw": 0.0, "light": "front", "is_prototype": True}, proto)
            learned = [("pose", "yaw")] if seq == "latent" else []
            if seq != "latent":  # the backend's yaw: render, camera
                for level, yaw in enumerate(plan.POSE_SEQUENCE):
                    iid = proto_img if yaw == 0 else add(
                        {**base, "image_id": f"{pid}_pose{level}", "attribute": "pose", "level": level,
                         "yaw": float(yaw), "light": "front", "is_prototype": False}, proto)
                    slot(pid, "pose", level, iid, proto_img)
            if seq == "render":
                for level, light in enumerate(["front", *plan.LIGHT_SEQUENCE]):
                    iid = proto_img if light == "front" else add(
                        {**base, "image_id": f"{pid}_light{level}", "attribute": "light", "level": level,
                         "yaw": 0.0, "light": light, "is_prototype": False}, proto)
                    slot(pid, "light", level, iid, proto_img)
            else:  # the learned light direction: camera, latent
                learned.append(("light", "light"))
            for attr, column in learned:
                for level, k in enumerate(range(-n, n + 1)):
                    iid = proto_img if k == 0 else add(
                        {**base, "image_id": f"{pid}_{attr}{level}", "attribute": attr, "level": level,
                         "yaw": 0.0, "light": "front", "is_prototype": False},
                        proto + (k * cfg.latent_step / n) * ortho[column])
                    slot(pid, attr, level, iid, proto_img)
            for attr, column, target in (("age", "age", cfg.age_target), ("expression", "smile", cfg.expression_target)):
                seq_z, _d = latent.attribute_sequence(
                    proto, ortho[column], lambda zz, c=column: hp.predict(zz, c),
                    target, step=cfg.sequence_step, n=n, max_distance=cfg.max_distance)
                for level, zz in enumerate(seq_z):
                    iid = proto_img if level == n else add(
                        {**base, "image_id": f"{pid}_{attr}{level}", "attribute": attr, "level": level,
                         "yaw": 0.0, "light": "front", "is_prototype": False}, zz)
                    slot(pid, attr, level, iid, proto_img)
    return np.asarray(lat), pd.DataFrame(images), pd.DataFrame(slots)


def candidate_prototypes(gen: Any, flat: np.ndarray, groups: Sequence[str], kind: str,
                         images: Sequence[np.ndarray] | None = None,
                         min_size: int = 256) -> tuple[pd.DataFrame, str]:
    """The seed filter's items: one row per candidate prototype (``flat``: candidate ``i``'s
    group ``g`` at ``i * len(groups) + g``) with ``item_id, seed, group`` and the group's
    columns, and the realism signal the filter reads:

    * a backend **with truth** (the procedural renderer): ``true_uncanny`` for the simulated
      panel (the backend's ``uncanny`` truth, else
      :func:`facebias.annotate.simulate.realism_truth` of the latent: a simulation) and,
      where the truth gives the intended race and gender, ``group_match``
      (:func:`facebias.annotate.seed_filter.intended_group_agreement`);
    * a backend **without truth** (the DCGAN): ``face_confidence``, **measured** on the
      frontal renders (:func:`facebias.annotate.seed_filter.face_confidence`, enlarged to
      ``min_size``): ``images`` in the order of ``flat``, rendered here when None. Nothing is
      read from the latent.

    Returns the table and why the group question is skipped (``""`` when it is asked)."""
    from facebias.annotate.seed_filter import face_confidence, intended_group_agreement
    from facebias.annotate.simulate import realism_truth

    columns = group_table(kind)
    n = len(flat) // len(groups)
    rows = pd.DataFrame([{"item_id": f"cand{i:05d}_{g}", "seed": i, "group": g, **columns[g]}
                         for i in range(n) for g in groups])
    if not hasattr(gen, "truth"):
        if images is None:
            images = render(gen, np.asarray(flat), _frontal(len(flat)), desc="seed-filter prototypes")
        if len(images) != len(rows):
            raise ValueError(f"candidate_prototypes: {len(images)} images for {len(rows)} prototypes")
        rows["face_confidence"] = face_confidence(images, min_size=min_size)
        return rows, "the backend has no truth, so no intended-group truth (and no panel: realism is measured)"
    rows = _with_truth(gen, flat, rows)
    rows["true_uncanny"] = (rows["true_uncanny"] if "true_uncanny" in rows.columns
                            else realism_truth(np.asarray(flat)))
    try:
        rows["group_match"] = intended_group_agreement(rows).to_numpy()
    except ValueError as err:
        return rows, f"no intended-group truth: {err}"
    return rows, ""


def candidate_seed_filter(gen: Any, flat: np.ndarray, groups: Sequence[str], kind: str,
                          cfg: SynthConfig, eligible: np.ndarray | None = None,
                          images: Sequence[np.ndarray] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """000's seed filter on the candidate prototypes, before max-min selection, keeping the
    best :attr:`SynthConfig.n_kept_by_filter` seeds (at most the eligible ones) of the
    ``eligible`` candidates (bool, one per candidate; default all; the stage passes those
    whose prototypes all gave a face mesh, as max-min needs one) (:func:`candidate_prototypes`):

    * backend with truth (procedural): a **simulated panel** rates every prototype through a
      temporary annotation store (:func:`facebias.annotate.seed_filter.human_seed_filter`),
      from the backend's realism and group truth: a simulation, said so in the summary;
    * backend without truth (the DCGAN): the realism signal is **measured**, YuNet's face
      confidence on the frontal render (``images``, in the order of ``flat``; rendered when
      None) (:func:`facebias.annotate.seed_filter.measured_seed_filter`); no panel, no latent
      norm.

    Returns the per-seed table (rated candidates) and a summary (sizes, rule, the realism
    signal and whether it is simulated)."""
    from facebias.annotate.seed_filter import (
        FACE_SCORE_THRESHOLD,
        human_seed_filter,
        measured_seed_filter,
        measured_seed_filter_rule,
        seed_filter_rule,
    )
    from facebias.annotate.simulate import Panel

    n_cand = len(flat) // len(groups)
    eligible = np.ones(n_cand, bool) if eligible is None else np.asarray(eligible, dtype=bool)
    if eligible.shape != (n_cand,) or not eligible.any():
        raise ValueError(f"candidate_seed_filter: eligible must be {n_cand} bools with at least one True")
    items, skipped = candidate_prototypes(gen, flat, groups, kind, images=images)
    items = items[eligible[items["seed"].to_numpy()]].reset_index(drop=True)
    n_keep = min(cfg.n_kept_by_filter, int(eligible.sum()))
    measured = "face_confidence" in items.columns
    if measured:
        table = measured_seed_filter(items, n_keep, threshold=FACE_SCORE_THRESHOLD)
        realism = {"realism_source": "measured", "simulated": False,
                   "realism_signal": (f"YuNet face confidence on the frontal render enlarged to 256 px (bicubic); "
                                      f"realistic iff >= {FACE_SCORE_THRESHOLD:g}"),
                   "questions": [], "n_votes": 0, "rule": measured_seed_filter_rule(FACE_SCORE_THRESHOLD)}
    else:
        with tempfile.TemporaryDirectory() as tmp:
            table = human_seed_filter(items.drop(columns=["group_match"], errors="ignore") if skipped else items,
                                      n_keep, Path(tmp) / "seed_filter.sqlite", Panel(seed=cfg.seed + 5),
                                      n_votes=cfg.seed_filter_votes)
        truth = ("the backend's uncanny truth" if "uncanny" in gen.truth(flat[:1]).columns
                 else "realism_truth(latent), a function of the latent's norm")
        realism = {"realism_source": "simulated", "simulated": True,
                   "realism_signal": f"SIMULATION: a simulated panel's uncanny votes, drawn from {truth}",
                   "questions": ["seed_filter/uncanny"] + ([] if skipped else ["seed_filter/group_match"]),
                   "n_votes": cfg.seed_filter_votes, "rule": seed_filter_rule(group=not skipped)}
    share = int(round(cfg.seed_filter_keep * cfg.n_candidates))
    summary = {"n_candidates": n_cand, "n_rated": int(eligible.sum()), "keep_share": float(cfg.seed_filter_keep),
               "n_kept_by_filter": int(table["kept"].sum()),
               "raised_to_n_seeds": bool(share < cfg.n_seeds),
               "group_question_skipped": skipped or None, **realism,
               "n_acceptable": int(table["acceptable"].sum()),
               "n_unrealistic": int((~table["realistic"]).sum()),
               "n_group_mismatch": int((~table["group_ok"]).sum()),
               "kept_seeds": sorted(int(x) for x in table.loc[table["kept"], "seed"])}
    return table, summary
