"""Synthetic paper-000 tables shared by studies/hcic/test_study.py (the procedural renderer's six
race x gender groups) and studies/hcic/test_backends.py (the DCGAN's four skin x gender groups):
an images table in the ``synth`` schema, its HCIC pairs, and module fixtures of both."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import pytest

from facebias.generate import plan
from facebias.studies import hcic as H


def make_images(n_seeds: int, groups: Mapping[str, tuple[str, str]],
                centre: Mapping[str, int] = H.CENTRE_LEVEL,
                columns: tuple[str, str] = ("race", "gender"),
                extra: Mapping[str, object] | None = None) -> pd.DataFrame:
    """An images table: n_seeds x groups x 17 images (a prototype and 4 levels of each
    attribute, the centre level left out). ``groups`` maps a group to the values of the two
    ``columns`` (e.g. ``("race", "gender")``); ``centre`` is each attribute's centre level
    (default the procedural renderer's layout); ``extra`` adds constant columns."""
    rows = []
    for s in range(n_seeds):
        for g, (first, second) in groups.items():
            pid = f"s{s:04d}_{g}"
            base = {"seed": s, "group": g, columns[0]: first, columns[1]: second,
                    "prototype_id": pid, **(extra or {})}
            rows.append({**base, "image_id": pid, "attribute": "prototype", "level": 0, "is_prototype": True})
            for attr in H.ATTRIBUTES:
                for level in range(5):
                    if level != centre[attr]:
                        rows.append({**base, "image_id": f"{pid}_{attr}{level}", "attribute": attr,
                                     "level": level, "is_prototype": False})
    return pd.DataFrame(rows)


def make_pairs(images: pd.DataFrame, n_negative: int = 3, seed: int = 0) -> pd.DataFrame:
    """The HCIC pairs of ``images`` (plan.hcic_pairs on its prototypes and slots)."""
    protos = images[images["is_prototype"]][["seed", "group", "prototype_id"]]
    return plan.hcic_pairs(protos, H.slots_from_images(images), n_negative=n_negative, seed=seed)


def table_fixtures(make: Callable[[int], pd.DataFrame], n_seeds: int = 50):
    """Module-scoped ``images`` (``make(n_seeds)``, e.g. a ``partial`` of make_images) and
    ``pairs`` fixtures; a test module binds them with ``images, pairs = table_fixtures(...)``."""

    @pytest.fixture(scope="module")
    def images():
        return make(n_seeds)

    @pytest.fixture(scope="module")
    def pairs(images):
        return make_pairs(images)

    return images, pairs
