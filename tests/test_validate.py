"""facebias.validate: missing-column checks name the source, the missing and the present columns."""

import re

import pandas as pd
import pytest

from facebias.validate import column_error, require_columns


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"score": [0.1, 0.9], "label": [0, 1], "group": ["AF", "WM"]})


def test_all_columns_present_passes(frame):
    assert require_columns(frame, ["score", "label", "group"], "pairs") is None
    assert require_columns(frame, [], "pairs") is None
    assert require_columns(frame, ("group", "group"), "pairs") is None
    assert column_error(frame.columns, ["label"]) is None


def test_one_missing_column_message(frame):
    with pytest.raises(ValueError) as err:
        require_columns(frame, ["score", "genuine"], "pairs")
    assert str(err.value) == ("pairs: column 'genuine' not found; "
                              "columns are ['score', 'label', 'group']")


def test_several_missing_columns_are_all_named_once_in_order(frame):
    with pytest.raises(ValueError) as err:
        require_columns(frame, ["a", "score", "b", "a", "c"], "votes.csv")
    assert str(err.value) == ("votes.csv: column 'a' not found (also missing: 'b', 'c'); "
                              "columns are ['score', 'label', 'group']")


def test_default_source_kind_and_hint(frame):
    with pytest.raises(ValueError, match=re.escape("frame: column 'x' not found")):
        require_columns(frame, ["x"])
    with pytest.raises(ValueError, match=re.escape("t: response column 'r1' not found")):
        require_columns(frame, ["r1"], "t", kind="response column")
    with pytest.raises(ValueError) as err:
        require_columns(frame, ["fold"], "bfw.csv", hint="the schema is ['fold']")
    assert str(err.value).endswith("columns are ['score', 'label', 'group']; the schema is ['fold']")


def test_a_single_string_is_one_name(frame):
    require_columns(frame, "score", "pairs")
    with pytest.raises(ValueError, match=re.escape("pairs: column 'genuine' not found")):
        require_columns(frame, "genuine", "pairs")


def test_non_string_labels(frame):
    numbered = pd.DataFrame([[1, 2]])
    require_columns(numbered, [0, 1], "matrix")
    with pytest.raises(ValueError, match=re.escape("matrix: column 2 not found; columns are [0, 1]")):
        require_columns(numbered, [2], "matrix")


def test_column_error_on_a_header_list():
    header = ["a", "b"]
    assert column_error(header, ["a"]) is None
    assert column_error(header, ["c"]) == "column 'c' not found; columns are ['a', 'b']"
