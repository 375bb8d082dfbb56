"""Pickled tables load through a restricted unpickler: DataFrames round-trip, code never runs.

Covers ``facebias.io.read_pickle_frame`` and its two users, ``facebias metrics x.pkl``
(``facebias.cli.read_pairs``) and ``facebias.datasets.bfw.load_bfw`` (issue 19, defect 3).
"""

from __future__ import annotations

import builtins
import datetime
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias.cli import main, read_pairs
from facebias.datasets.bfw import load_bfw
from facebias.io import read_pickle_frame

FIXTURES = Path(__file__).parent / "fixtures"
LEGACY = FIXTURES / "legacy_pickles"


# --------------------------------------------------------------------------- crafted pickles
class _Reduce:
    """Pickles as ``func(*args)``: what a crafted file asks the unpickler to call."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _crafted(kind: str, target: Path) -> tuple[bytes, str]:
    """(pickle bytes that would create ``target`` when loaded unsafely, the global it names)."""
    if kind == "os.system":
        return pickle.dumps(_Reduce(os.system, f"touch {target}")), "system"
    if kind == "exec":
        return pickle.dumps(_Reduce(builtins.exec, f"open({str(target)!r}, 'w').close()")), "exec"
    if kind == "eval":
        return pickle.dumps(_Reduce(builtins.eval, f"open({str(target)!r}, 'w')")), "eval"
    if kind == "memmap":  # an ndarray subclass that creates files
        return pickle.dumps(_Reduce(np.memmap, str(target), np.uint8, "w+", 0, (4,))), "memmap"
    if kind == "getattr":  # getattr(DataFrame, "to_pickle")(df, target), protocol 0 by hand
        text = (f"cbuiltins\ngetattr\n(cpandas\nDataFrame\nVto_pickle\ntR"
                f"(cpandas\nDataFrame\n)RV{target}\ntR.")
        return text.encode(), "getattr"
    if kind == "dotted":  # a dotted name reaches any attribute: pandas.DataFrame.to_pickle
        def text(s: str) -> bytes:
            return pickle.SHORT_BINUNICODE + bytes([len(s.encode())]) + s.encode()

        body = (pickle.PROTO + bytes([4]) + text("pandas") + text("DataFrame.to_pickle")
                + pickle.STACK_GLOBAL + pickle.MARK + text("pandas") + text("DataFrame")
                + pickle.STACK_GLOBAL + pickle.EMPTY_TUPLE + pickle.REDUCE + text(str(target))
                + pickle.TUPLE + pickle.REDUCE + pickle.STOP)
        return body, "DataFrame.to_pickle"
    if kind == "nested":  # a real DataFrame with the payload in an object column
        df = pd.DataFrame({"score": [0.5], "x": pd.Series([_Reduce(os.system, f"touch {target}")],
                                                           dtype=object)})
        return pickle.dumps(df, protocol=5), "system"
    raise AssertionError(kind)


CRAFTED = ["os.system", "exec", "eval", "memmap", "getattr", "dotted", "nested"]


@pytest.mark.parametrize("kind", CRAFTED)
def test_crafted_pickle_is_refused_and_runs_nothing(tmp_path, kind):
    target = tmp_path / "pwned"
    data, name = _crafted(kind, target)
    path = tmp_path / "evil.pkl"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="refused") as e:
        read_pickle_frame(path)
    assert str(path) in str(e.value) and name in str(e.value)
    with pytest.raises(ValueError, match="refused"):
        load_bfw(path)
    assert not target.exists()


@pytest.mark.parametrize("kind", ["os.system", "exec", "nested"])
def test_cli_refuses_a_crafted_pickle_in_one_line(tmp_path, capsys, kind):
    target = tmp_path / "pwned"
    data, name = _crafted(kind, target)
    path = tmp_path / "pairs.pkl"
    path.write_bytes(data)
    code = main(["metrics", str(path), "--score-col", "score", "--label-col", "genuine"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"facebias: error: {path}: refused") and name in err
    assert not target.exists()


def test_crafted_pickle_would_have_run_with_pandas(tmp_path):
    """The payload is real: pandas' own reader runs it (so the tests above test something)."""
    target = tmp_path / "pwned"
    path = tmp_path / "evil.pkl"
    path.write_bytes(_crafted("exec", target)[0])
    pd.read_pickle(path)
    assert target.exists()


def test_the_cli_help_says_pickles_are_restricted(capsys):
    assert main(["metrics", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "restricted unpickler" in text and "no code" in text


# --------------------------------------------------------------------------- real tables
def _frame(index: str) -> pd.DataFrame:
    n = 7
    df = pd.DataFrame({
        "i": np.arange(n, dtype=np.int64) * 3 - 5,
        "i8": np.arange(n, dtype=np.int8),
        "f": np.linspace(-1.0, 1.0, n),
        "f32": np.linspace(0.0, 1.0, n, dtype=np.float32),
        "s": list("abcdefg"),
        "so": pd.Series(["p", "q", None, "r", "s", "t", "u"], dtype=object),
        "c": pd.Categorical(list("xyxyzxz"), categories=["z", "y", "x"]),
        "co": pd.Categorical(list("lhlhlhl"), categories=["l", "h"], ordered=True),
        "dt": pd.date_range("2021-03-01", periods=n, freq="D"),
        "dtz": pd.date_range("2021-03-01", periods=n, freq="h", tz="UTC"),
        "dtny": pd.date_range("2021-03-01", periods=n, freq="h", tz="America/New_York"),
        "b": [True, False, True, True, False, False, True],
        "nan": [np.nan, 1.5, 2.5, np.nan, 0.0, -0.0, np.inf],
    })
    if index == "index":
        df.index = pd.Index([10, 3, 7, 1, 2, 99, 5], name="k")
    elif index == "str":
        df = df.set_index("s")
    elif index == "multi":
        df = df.set_index(["s", "i"])
    df.attrs = {"source": "real", "n": 7}
    return df


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("index", ["range", "index", "str", "multi"])
def test_dataframes_round_trip_exactly(tmp_path, index, protocol):
    df = _frame(index)
    path = tmp_path / "t.pkl"
    df.to_pickle(path, protocol=protocol)
    got = read_pickle_frame(path)
    pd.testing.assert_frame_equal(got, df, check_exact=True)
    assert got.attrs == df.attrs
    if index == "range":
        assert isinstance(got.index, pd.RangeIndex)


def test_cli_reader_round_trips_a_pickle(tmp_path):
    df = _frame("range")
    path = tmp_path / "pairs.pkl"
    df.to_pickle(path)
    cols = ["f", "i", "s", "c", "dt", "b"]
    got, word = read_pairs(str(path), cols)
    assert word == "row"
    expected = df[cols].set_axis(pd.Index(np.arange(1, len(df) + 1), name="row"))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_not_a_dataframe_or_not_a_pickle(tmp_path):
    path = tmp_path / "s.pkl"
    pd.Series([1.0, 2.0]).to_pickle(path)
    with pytest.raises(ValueError, match="expected a pickled pandas DataFrame, got Series"):
        read_pickle_frame(path)
    path.write_bytes(b"score,genuine\n0.1,1\n")
    with pytest.raises(ValueError, match="not a readable pickle"):
        read_pickle_frame(path)


# --------------------------------------------------------------------------- older pandas
def test_pickle_of_pandas_1_5_round_trips():
    """Written by pandas 1.5.3 (tests/fixtures/make_legacy_pickles.py): an Int64Index, strings
    as objects, the old block layout."""
    n = 6
    expected = pd.DataFrame(
        {
            "i": np.arange(n, dtype=np.int64) * 7,
            "f": np.linspace(0.0, 1.0, n),
            "s": list("abcdef"),
            "c": pd.Categorical(list("xyxyzx"), categories=pd.Index(["z", "y", "x"], dtype=object)),
            "dt": pd.date_range("2020-01-01", periods=n, freq="D").as_unit("ns"),
            "dtz": pd.date_range("2020-01-01", periods=n, freq="h",
                                 tz=datetime.UTC).as_unit("ns"),
            "b": [True, False, True, True, False, False],
        },
        index=pd.Index(np.arange(10, 10 + n, dtype=np.int64)),
    )
    expected = expected.astype({"s": object})  # strings and labels as pandas 1.5 kept them
    expected.columns = expected.columns.astype(object)
    got = read_pickle_frame(LEGACY / "mixed_pandas153.pkl")
    pd.testing.assert_frame_equal(got, expected, check_exact=True, check_freq=False)


def test_bfw_pickle_of_pandas_1_5_loads_like_the_csv(tmp_path):
    raw = pd.read_csv(FIXTURES / "bfw_datatable_small.csv")
    csv = tmp_path / "fold1.csv"
    raw[raw["fold"] == 1].to_csv(csv, index=False)
    got = load_bfw(LEGACY / "bfw_fold1_pandas153.pkl")
    ref = load_bfw(csv)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)
    assert got.attrs["source"] == "real" and len(got) == 168
