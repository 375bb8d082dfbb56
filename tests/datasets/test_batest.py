"""BA-test label loader: the released benchmark list's accounting (notes B.7.1-2), schema
errors that name file, line and column, and pair counts against brute force."""

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.datasets.batest import (
    batest_summary,
    benchmark_pairs,
    load_batest_labels,
    pair_counts,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "batest_labels_small.csv"
RELEASED = ROOT.parent / "shared" / "data" / "batest" / "benchmark_labels.csv"


@pytest.fixture(scope="module")
def small():
    return load_batest_labels(FIXTURE)


def test_fixture_loads_with_derived_columns(small):
    assert len(small) == 96 and small["Identity"].nunique() == 24
    assert set(small["group"].astype(str)) == {"AF", "AM", "BF", "BM", "IF", "IM", "WF", "WM"}
    row = small.iloc[0]
    assert (row["race"], row["gender"], row["group"]) == ("W", "F", "WF")
    assert set(small["age"]) == {"Young", "Middle_Aged"}
    s = batest_summary(small)
    assert (s.loc["WF", ["images", "identities"]] == [12, 3]).all()
    assert s.loc["total", "images"] == 96 == s.loc["total", ["Young", "Middle_Aged"]].sum()


def test_pair_counts_match_brute_force(small):
    ids = small["Identity"].to_numpy()
    grp = small["group"].astype(str).to_numpy()
    genuine = within = 0
    for a, b in combinations(range(len(small)), 2):
        genuine += ids[a] == ids[b]
        within += ids[a] != ids[b] and grp[a] == grp[b]
    c = pair_counts(small)
    assert c == {"genuine": genuine, "impostor": len(small) * 95 // 2 - genuine,
                 "impostor_within_group": within}
    for mode, n_imp in (("within_group", within), ("all", c["impostor"])):
        p = benchmark_pairs(small, mode)
        assert (p["label"] == 1).sum() == genuine and (p["label"] == 0).sum() == n_imp
        assert (p["i"] < p["j"]).all()
        assert ((p["id1"] == p["id2"]) == (p["label"] == 1)).all()
        if mode == "within_group":
            assert (p["group1"] == p["group2"]).all()


def _write(tmp_path: Path, edit) -> Path:
    df = pd.read_csv(FIXTURE, dtype=str)
    edit(df)
    out = tmp_path / "labels.csv"
    df.to_csv(out, index=False)
    return out


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("Asian"), "column 'Asian' not found"),
        (lambda d: d.__setitem__("Male", d["Male"].where(d.index != 4, "0")), r"line 6, column 'Male'.*\+1/-1"),
        (lambda d: d.__setitem__("Black", d["Black"].where(d.index != 0, "1")), r"line 2.*one-hot"),
        (lambda d: d.__setitem__("Young", d["Young"].where(d.index != 3, d["Middle_Aged"])), r"line 5.*age must be one-hot"),
        (lambda d: d.__setitem__("Identity", d["Identity"].where(d.index != 7, "n7")), r"line 9, column 'Identity'"),
        (lambda d: d.__setitem__("Filename", d["Filename"].where(d.index != 2, d["Filename"][1])), r"line 4.*duplicate"),
        (lambda d: d.__setitem__("Male", d["Male"].where(d.index != 1, "1")), r"identity 107 has more than one gender"),
    ],
)
def test_schema_violations_name_file_line_and_column(tmp_path, edit, message):
    path = _write(tmp_path, edit)
    with pytest.raises(ValueError, match=message) as err:
        load_batest_labels(path)
    assert str(path) in str(err.value)


def test_missing_file_says_where_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="HaiyuWu/BA-test-dataset"):
        load_batest_labels(tmp_path / "nope.csv")


@pytest.mark.skipif(not RELEASED.exists(), reason=f"released list not at {RELEASED}")
def test_released_benchmark_list_accounting():
    """Notes B.7.1-2: 3,600 images, 720 ids, 8 groups x 90 ids x 5 images, 1,800 F / M,
    2,465 Young / 1,135 Middle / 0 Senior; 900 genuine pairs per group; 6,471,000
    cross-identity impostors, 801,000 of them within a group."""
    lab = load_batest_labels(RELEASED)
    s = batest_summary(lab)
    assert s.loc["total"].tolist() == [3600, 720, 2465, 1135, 0]
    groups = s.drop(index="total")
    assert (groups["images"] == 450).all() and (groups["identities"] == 90).all()
    assert (lab.groupby("Identity").size() == 5).all()
    assert (lab["gender"] == "F").sum() == 1800
    young = groups["Young"].to_dict()
    assert young == {"AF": 430, "AM": 378, "BF": 353, "BM": 197, "IF": 378, "IM": 188,
                     "WF": 324, "WM": 217}
    assert pair_counts(lab) == {"genuine": 7200, "impostor": 6_471_000,
                                "impostor_within_group": 801_000}
    p = benchmark_pairs(lab, "within_group")
    gen = p[p["label"] == 1].groupby("group1", observed=True).size()
    assert (gen == 900).all() and len(gen) == 8
    assert np.count_nonzero(p["label"] == 0) == 801_000
