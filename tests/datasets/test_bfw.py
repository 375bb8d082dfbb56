"""Loader of the published BFW datatable, on a schema-identical synthetic fixture."""

from __future__ import annotations

import hashlib
import importlib.util
from math import comb
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.datasets.bfw import (
    BFW_COLUMNS,
    BFW_GROUPS,
    BFW_PUBLISHED_SCORE_COLUMNS,
    bfw_summary,
    load_bfw,
)
from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world, write_world

FIXTURES = Path(__file__).parents[1] / "fixtures"
FIXTURE = FIXTURES / "bfw_datatable_small.csv"
PUBLISHED_ORDER = [*BFW_COLUMNS[:8], "vgg16", "resnet50", "senet50", *BFW_COLUMNS[8:], "sphereface"]


def _fixture_script():
    spec = importlib.util.spec_from_file_location(
        "make_bfw_fixture", FIXTURES / "make_bfw_fixture.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def raw() -> pd.DataFrame:
    return pd.read_csv(FIXTURE)


def _write(df: pd.DataFrame, tmp_path: Path, suffix: str = ".csv") -> Path:
    path = tmp_path / f"table{suffix}"
    if suffix == ".csv":
        df.to_csv(path, index=False)
    elif suffix == ".pkl":
        df.to_pickle(path)
    else:
        df.to_parquet(path, index=False)
    return path


# --------------------------------------------------------------------------- fixture
def test_fixture_layout_and_size():
    assert FIXTURE.stat().st_size < 200_000
    header = FIXTURE.read_text().splitlines()[0].split(",")
    assert header == PUBLISHED_ORDER
    assert tuple(sorted(BFW_PUBLISHED_SCORE_COLUMNS)) == tuple(
        sorted(set(header) - set(BFW_COLUMNS))
    )


def test_fixture_is_what_the_script_writes(tmp_path):
    out = _fixture_script().write_fixture(tmp_path / "again.csv")
    assert out.read_bytes() == FIXTURE.read_bytes()


def test_fixture_loads():
    df = load_bfw(FIXTURE)
    assert list(df.columns) == [*BFW_COLUMNS, *BFW_PUBLISHED_SCORE_COLUMNS]
    assert df.attrs == {"source": "real", "path": str(FIXTURE)}
    assert df.fold.dtype == np.int8 and df.label.dtype == np.int8 and df.id1.dtype == np.int32
    for c in ("p1", "p2", "att1", "att2", "a1", "a2", "g1", "g2", "e1", "e2"):
        assert isinstance(df[c].dtype, pd.CategoricalDtype), c
    assert list(df.a1.cat.categories) == list(BFW_GROUPS)
    assert (df.p1.cat.categories == df.p2.cat.categories).all()
    for c in BFW_PUBLISHED_SCORE_COLUMNS:
        assert np.isfinite(df[c]).all() and df[c].between(-1, 1).all()
    raw = pd.read_csv(FIXTURE)
    assert (df.p1.astype(str) == raw.p1).all() and (df.sphereface == raw.sphereface).all()


def test_summary_counts_table_1_style():
    df = load_bfw(FIXTURE)
    cfg = _fixture_script().CONFIG
    n, k = cfg.identities_per_group, cfg.images_per_identity
    s = bfw_summary(df)
    assert list(s.index) == [*BFW_GROUPS, "All"]
    assert (s.loc[list(BFW_GROUPS), "subjects"] == n).all()
    assert (s.loc[list(BFW_GROUPS), "images"] == n * k).all()
    assert (s.loc[list(BFW_GROUPS), "genuine"] == n * comb(k, 2)).all()
    assert (s.pairs == s.genuine + s.impostor).all()
    assert s.loc["All", "pairs"] == len(df) == s.loc[list(BFW_GROUPS), "pairs"].sum()
    assert s.loc["All", "subjects"] == 8 * n and s.loc["All", "images"] == 8 * n * k
    assert (s.duplicate_pairs == 0).all()


def test_summary_counts_duplicates_reversed_or_repeated():
    df = load_bfw(FIXTURE)
    extra = df.iloc[[3, 3, 500]].copy()
    extra.iloc[0, [1, 2]] = extra.iloc[0, [2, 1]].to_numpy()  # reversed copy of row 3
    both = pd.concat([df, extra], ignore_index=True)
    s = bfw_summary(both)
    assert s.loc["All", "duplicate_pairs"] == 3
    assert s.duplicate_pairs.drop("All").sum() == 3
    assert s.loc[str(df.a1.iloc[3]), "duplicate_pairs"] >= 2


def test_summary_of_a_world_matches_its_recipe():
    cfg = BFWWorldConfig(identities_per_group=10, images_per_identity=4, n_folds=5, seed=9)
    s = bfw_summary(make_bfw_world(cfg))
    assert (s.genuine.drop("All") == 10 * comb(4, 2)).all()
    within = cfg.n_folds * (comb(8, 2) - 2 * comb(4, 2))
    cross = cfg.cross_negatives * 8 * 10 * comb(4, 2)
    assert s.loc["All", "impostor"] == 8 * within + cross


# --------------------------------------------------------------------------- formats, files
@pytest.mark.parametrize("suffix", [".csv", ".pkl", ".parquet"])
def test_formats_load_the_same(raw, tmp_path, suffix):
    df = load_bfw(_write(raw, tmp_path, suffix))
    ref = load_bfw(FIXTURE)
    pd.testing.assert_frame_equal(df, ref)
    assert df.attrs["source"] == "real"


def test_saved_world_loads_and_stays_synthetic(tmp_path):
    world = make_bfw_world(BFWWorldConfig(identities_per_group=5, images_per_identity=3))
    write_world(world, tmp_path / "w.parquet")
    df = load_bfw(tmp_path / "w.parquet")
    assert df.attrs["source"] == "synthetic" and df.attrs["world"] == world.attrs["world"]
    assert list(df.columns) == list(world.columns)
    assert (df.sim_a.to_numpy() == world.sim_a.to_numpy()).all()


def test_missing_file_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        load_bfw(tmp_path / "bfw-v0.1.5-datatable.csv")
    msg = str(e.value)
    assert "registration form" in msg and "visionjo/facerec-bias-bfw" in msg
    assert "bfw.real" in msg and "params.yaml" in msg


def test_missing_file_message_names_the_folder_of_the_readme_and_params():
    """The folder the loader tells users to use is the one README.md and params.yaml show."""
    root = Path(__file__).resolve().parents[2]
    with pytest.raises(FileNotFoundError) as e:
        load_bfw(root / "no-such-datatable.pkl")
    msg = str(e.value)
    import re

    for doc in ("README.md", "params.yaml"):
        paths = set(re.findall(r"datatable: (\S+?),", (root / doc).read_text()))
        assert len(paths) == 1, (doc, paths)
        folder = str(Path(paths.pop()).parent)
        assert f" {folder}/ " in msg, (doc, folder, msg)
    assert " data/bfw/" not in msg


def test_checksum(tmp_path):
    good = hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    assert len(load_bfw(FIXTURE, sha256=good.upper())) > 0
    with pytest.raises(ValueError, match="sha256") as e:
        load_bfw(FIXTURE, sha256="0" * 64)
    assert "0" * 64 in str(e.value) and good in str(e.value)


def test_unsupported_suffix(raw, tmp_path):
    path = tmp_path / "table.xlsx"
    path.write_text("x")
    with pytest.raises(ValueError, match="unsupported"):
        load_bfw(path)


# --------------------------------------------------------------------------- bad input
def _set(row: int, col: str, value):
    def edit(df: pd.DataFrame) -> pd.DataFrame:
        df[col] = df[col].astype(object)
        df.loc[row, col] = value
        return df

    return edit


def _genuine_with_other_id(df: pd.DataFrame) -> pd.DataFrame:
    i = int(np.flatnonzero(df.label == 1)[4])
    same_fold = df[(df.fold == df.fold[i]) & (df.id2 != df.id1[i])]
    df.loc[i, "id2"] = same_fold.id2.iloc[0]
    return df


def _impostor_with_same_id(df: pd.DataFrame) -> pd.DataFrame:
    i = int(np.flatnonzero(df.label == 0)[6])
    df.loc[i, "id2"] = df.id1[i]
    return df


def _bad_row(df: pd.DataFrame, label: int, nth: int) -> int:
    return int(np.flatnonzero(df.label == label)[nth])


def _last_row_other_fold(df: pd.DataFrame) -> pd.DataFrame:
    i = len(df) - 1
    df.loc[i, "fold"] = df.fold[i] % 5 + 1
    return df


BAD = [
    # (edit, expected column text, expected row or a callable raw -> row, or None)
    (lambda d: d.drop(columns="e2"), "'e2'", None),
    (lambda d: d.drop(columns=list(BFW_PUBLISHED_SCORE_COLUMNS)), "no score column", None),
    (_set(5, "fold", 2.5), "'fold'", 5),
    (_set(6, "fold", "x"), "'fold'", 6),
    (_set(7, "fold", 0), "'fold'", 7),
    (_set(8, "fold", 9), "'fold'", 8),
    (_set(9, "label", 2), "'label'", 9),
    (_set(10, "label", "yes"), "'label'", 10),
    (_set(11, "a1", "XX"), "'a1'", 11),
    (_set(12, "a2", None), "'a2'", 12),
    (_set(13, "g1", "M"), "'g1'", 13),
    (_set(14, "e2", "W"), "'e2'", 14),
    (_set(15, "sphereface", np.nan), "'sphereface'", 15),
    (_set(16, "vgg16", np.inf), "'vgg16'", 16),
    (_set(17, "id1", 3.5), "'id1'", 17),
    (_set(18, "p2", None), "'p2'", 18),
    (_last_row_other_fold, "appears in folds", lambda d: len(d) - 1),
    (_genuine_with_other_id, "label-1 pair with id1 != id2", lambda d: _bad_row(d, 1, 4)),
    (_impostor_with_same_id, "label-0 pair with id1 == id2", lambda d: _bad_row(d, 0, 6)),
]


@pytest.mark.parametrize(("edit", "column", "row"), BAD)
def test_bad_input_names_column_and_row(raw, tmp_path, edit, column, row):
    path = _write(edit(raw.copy()), tmp_path)
    with pytest.raises(ValueError) as e:
        load_bfw(path)
    msg = str(e.value)
    assert str(path) in msg and column in msg
    if row is not None:
        r = row(raw) if callable(row) else row
        assert f"row {r} (line {r + 2})" in msg


def test_bad_row_in_pickle_has_no_line_number(raw, tmp_path):
    path = _write(_set(3, "label", 5)(raw.copy()), tmp_path, ".pkl")
    with pytest.raises(ValueError, match=r"'label'.*row 3: 5$"):
        load_bfw(path)
