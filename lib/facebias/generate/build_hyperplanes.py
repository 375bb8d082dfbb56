"""The hyperplanes of the synthetic products (004 A1.4, 000 B1.2): the fit set ``D_z`` is
labelled through the annotation store (the simulated panel, machine annotators on renders
of any backend, or human votes, read-only) and one linear model per attribute is fitted on
those labels (:mod:`facebias.generate.hyperplanes`).

Part of :mod:`facebias.generate.build` (which re-exports
:func:`fit_attribute_hyperplanes`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from facebias.generate.build_render import _frontal, render, write_pngs
from facebias.generate.hyperplanes import (
    AttributeLabel,
    Hyperplanes,
    dz_item_ids,
    fit_from_labels,
    label_with_machines,
    label_with_panel,
    read_labels,
    register_dz,
    vote_sources,
)

if TYPE_CHECKING:
    from facebias.generate.build import SynthConfig


def _check_vote_store(cfg: SynthConfig, attrs: Sequence[AttributeLabel]) -> None:
    """Machine mode: the attributes that name a vote question need ``cfg.label_store``."""
    voted = [a.name for a in attrs if a.question is not None]
    if voted and not cfg.label_store:
        raise ValueError(f"generate.attributes: {voted} are labelled by vote questions, which labels "
                         "'machine' reads from generate.label_store (an annotation store with votes on the "
                         "dz_* items); set label_store, or give these attributes a machine labeller")


def _vote_store(cfg: SynthConfig, mode: str) -> Path | None:
    """The store whose votes the vote questions are read from when it is not the store the
    run writes: ``cfg.label_store`` in ``machine`` mode with question attributes (opened
    read-only), else ``None``. Raises ``ValueError`` if it is needed but not set or missing."""
    if mode != "machine":
        return None
    attrs = cfg.attribute_labels(mode)
    _check_vote_store(cfg, attrs)
    if not any(a.question is not None for a in attrs):
        return None
    path = Path(cfg.label_store)
    if not path.is_file():
        raise ValueError(f"generate.label_store: {path} does not exist (the annotation store with the votes "
                         f"on {[a.question for a in attrs if a.question is not None]})")
    return path


def fit_attribute_hyperplanes(gen: Any, cfg: SynthConfig, store_path: str | Path | None = None,
                              image_dir: str | Path | None = None, compute: Any = None,
                              return_labels: bool = False) -> Hyperplanes | tuple[Hyperplanes, pd.DataFrame]:
    """Label the fit set ``D_z`` (``cfg.n_fit`` latents) through an annotation store and fit
    every attribute's hyperplane on those labels (:mod:`facebias.generate.hyperplanes`).

    ``store_path``: the store to write to and read from (``cfg.label_store`` for
    ``labels="store"``; default a temporary one). Labels already there are reused, so an
    interrupted run resumes. In ``machine`` mode the vote questions are read from
    ``cfg.label_store`` instead, read-only (:class:`SynthConfig`); it may not be
    ``store_path``. ``image_dir``: where the fit set's renders are written
    (``dz_#####.png``) when machine annotators or people label them. ``return_labels``:
    also return the per-item label table the planes were fitted on (index ``item_id``).
    """
    hp, labels, _origin = _fit_hyperplanes(gen, cfg, store_path, image_dir, compute)
    return (hp, labels) if return_labels else hp


def _fit_hyperplanes(gen: Any, cfg: SynthConfig, store_path: str | Path | None, image_dir: str | Path | None,
                     compute: Any) -> tuple[Hyperplanes, pd.DataFrame, dict[str, Any]]:
    """:func:`fit_attribute_hyperplanes`, plus where the votes came from: ``label_store``
    (the path of the store read, as configured; ``None`` = the run's own store) and
    ``vote_sources`` (each question attribute's vote sources, e.g. ``['human']``)."""
    from contextlib import nullcontext

    from facebias.annotate import AnnotationStore

    mode = cfg.label_mode(gen)
    attrs = cfg.attribute_labels(mode)
    votes_path = _vote_store(cfg, mode)
    if votes_path is not None and store_path is not None and Path(store_path).resolve() == votes_path.resolve():
        raise ValueError(f"generate.label_store: {votes_path} is read-only in labels 'machine' (people's votes); "
                         "the machine labels need another store_path")
    questions = [a for a in attrs if a.question is not None]
    z = gen.sample(cfg.n_fit, seed=cfg.seed + 1)
    ids = dz_item_ids(len(z))
    if mode == "store":
        store_path = cfg.label_store
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(store_path) if store_path is not None else Path(tmp) / "labels.sqlite"
        if mode == "store" and not path.exists():
            raise ValueError(f"generate.label_store: {path} does not exist")
        people = AnnotationStore(votes_path, read_only=True) if votes_path is not None else nullcontext()
        with people as votes, AnnotationStore(path) as store:
            if votes is not None:  # fail before rendering if the votes cannot fit the planes
                have = read_labels(votes, ids, questions).notna().sum()
                short = {a: int(n) for a, n in have.items() if n < cfg.min_labelled}
                if short:
                    raise ValueError(f"generate.label_store: {votes_path} has votes on too few of the "
                                     f"{len(ids)} fit-set items dz_00000...: {short} (at least "
                                     f"{cfg.min_labelled} each are needed)")
            register_dz(store, len(z), image_dir)
            if mode == "panel" and questions:
                label_with_panel(store, gen, z, attrs, n_votes=cfg.n_votes)
            machines = [a.labeller for a in attrs if a.labeller is not None]
            if mode != "store" and machines:
                images = render(gen, z, _frontal(len(z)), cfg.batch_size, "D_z for the machine annotators", compute)
                if image_dir is not None:
                    write_pngs(Path(image_dir), ids, images)
                label_with_machines(store, images, ids, machines)
            labels = read_labels(store, ids, attrs, votes=votes)
            origin = {"label_store": cfg.label_store if mode == "store" or votes is not None else None,
                      "vote_sources": vote_sources(store if votes is None else votes, questions)}
    hp = fit_from_labels(z, labels, attrs, min_labelled=cfg.min_labelled)
    return hp, labels, origin
