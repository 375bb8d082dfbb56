"""Inputs of the rapid test (paper 001): names.csv and scores tables (the image path:
tests/studies/rapid/test_images.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.datasets.rapid import SCORES_COLUMNS, load_names, load_scores, validate_scores

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rapid"


# --------------------------------------------------------------------------- names
def test_load_names_reads_the_published_schema():
    names = load_names(FIX / "names.csv")
    assert list(names.columns) == ["person_id", "name", "race", "gender", "group", "upload_path"]
    assert names["person_id"].tolist() == ["0", "1", "2", "3"]
    assert names["group"].tolist() == ["asian female"] * 2 + ["black male"] * 2
    assert names["upload_path"].tolist() == [None, "photos/bea", None, None]


def test_load_names_numbers_people_when_person_id_is_absent():
    names = load_names(FIX / "names_no_id.csv")
    assert names["person_id"].tolist() == ["0", "1"]
    assert names["upload_path"].isna().all()


@pytest.mark.parametrize("fixture, match", [
    ("names_empty_race.csv", r"names_empty_race.csv: column 'race': empty value at row 1 \(line 3\)"),
    ("names_duplicate_name.csv", r"duplicate name 'Alice Example' at row 0 \(line 2\) and row 2 \(line 4\)"),
    ("names_missing_column.csv", r"names_missing_column.csv: column 'race' not found; columns "
                                 r"are \['person_id', 'name', 'gender'\]; names.csv needs"),
    ("names_small_group.csv", r"fewer than 2 names in race/gender group\(s\) \{'black male': 1\}"),
])
def test_load_names_names_the_bad_row(fixture, match):
    with pytest.raises(ValueError, match=match):
        load_names(FIX / fixture)


def test_small_groups_can_be_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="black male"):
        names = load_names(FIX / "names_small_group.csv", on_small_group="warn")
    assert len(names) == 3
    dup = tmp_path / "dup_id.csv"
    dup.write_text("person_id,name,race,gender\n7,A B,x,f\n7,C D,x,f\n")
    with pytest.raises(ValueError, match=r"duplicate person_id '7' at row 0 \(line 2\) and row 1"):
        load_names(dup)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_names(tmp_path / "nope.csv")


# --------------------------------------------------------------------------- scores
def test_load_scores_accepts_the_contract():
    s = load_scores(FIX / "scores.csv")
    assert list(s.columns) == list(SCORES_COLUMNS)
    assert s["query"].tolist()[0] == "0" and s["score"].dtype == np.float64
    assert len(s) == 8


@pytest.mark.parametrize("fixture, match", [
    ("scores_bad_score.csv", r"column 'score': not a finite number; first offending row 1 \(line 3\): 'high'"),
    ("scores_duplicate_pair.csv", r"pair \('0/a.jpg', '0/b.jpg'\) scored twice by system 'dlib': "
                                  r"row 0 \(line 2\) and row 2 \(line 4\)"),
    ("scores_face_two_queries.csv", r"face '0/a.jpg' appears under several queries \['0', '1'\]"),
])
def test_load_scores_names_the_bad_row(fixture, match):
    with pytest.raises(ValueError, match=match):
        load_scores(FIX / fixture)


def test_validate_scores_frames():
    good = pd.DataFrame({"query": [1, 1], "face_a": ["a", "a"], "face_b": ["b", "c"],
                         "system": ["s", "s"], "score": [0.5, np.float32(0.2)]})
    assert validate_scores(good)["score"].dtype == np.float64
    with pytest.raises(ValueError, match=r"scores: column 'system' not found; columns are"):
        validate_scores(good.drop(columns="system"))
    with pytest.raises(ValueError, match=r"face_a == face_b.*row 1: 'a'"):
        validate_scores(good.assign(face_b=["b", "a"]))
    with pytest.raises(ValueError, match=r"column 'score': missing value; first offending row 0"):
        validate_scores(good.assign(score=[np.nan, 0.1]))
    with pytest.raises(ValueError, match="no rows"):
        validate_scores(good.iloc[:0])
    cross = good.assign(query_b=[2, 3], face_b=["x", "y"])
    assert len(validate_scores(cross, cross=True)) == 2
    with pytest.raises(ValueError, match=r"column 'query_b' not found.*a scores table has"):
        validate_scores(good, cross=True)
    with pytest.raises(ValueError, match="same query on both sides"):
        validate_scores(cross.assign(query_b=[1, 3]), cross=True)


def test_the_simulated_world_meets_the_scores_contract():
    from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world

    w = make_rapid_world(RapidWorldConfig(queries_per_group=3))
    assert len(validate_scores(w.scores)) == len(w.scores)
    assert len(validate_scores(w.cross_scores, cross=True)) == len(w.cross_scores)
