"""Reading a table of scored pairs for ``facebias metrics``: CSV (compressed, UTF-16/32 with a
byte-order mark), Parquet or a pickled DataFrame (restricted unpickler), with each row named by
its line in the file so that an error says where to look."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from facebias.cli.common import InputError, _describe
from facebias.validate import column_error

__all__ = ["read_pairs"]

# --------------------------------------------------------------------------- reading tables
_OPENERS: dict[str, Callable[..., IO[bytes]]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_PARQUET = {".parquet", ".pq"}
_PICKLE = {".pkl", ".pickle"}


def _suffixes(path: Path) -> list[str]:
    return [s.lower() for s in path.suffixes]


def _open_binary(path: Path) -> IO[bytes] | None:
    """The file's bytes, decompressed for .gz/.bz2/.xz; None for other compressions."""
    last = path.suffix.lower()
    if last in _OPENERS:
        return _OPENERS[last](path, "rb")
    if last in {".zip", ".zst", ".tar"}:
        return None
    return open(path, "rb")


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def _encoding(path: Path) -> str:
    """``utf-32`` or ``utf-16`` when the (decompressed) file starts with that byte-order
    mark, else ``utf-8`` (a UTF-8 byte-order mark is skipped by pandas and :func:`_records`);
    ``binary`` when its first 64 KiB hold a NUL byte (never in UTF-8 CSV text)."""
    try:
        f = _open_binary(path)
        if f is None:
            return "utf-8"
        with f:
            head = f.read(1 << 16)
    except (OSError, EOFError, lzma.LZMAError):
        return "utf-8"
    encoding = next((enc for bom, enc in _BOMS if head.startswith(bom)), "utf-8")
    return "binary" if encoding == "utf-8" and b"\x00" in head else encoding


def _not_utf8(path: Path) -> str:
    """Why a file that pandas could not decode as UTF-8 is not CSV text, with its line."""
    try:
        f = _open_binary(path)
        data = b"" if f is None else f.read(64 << 20)
    except (OSError, EOFError, lzma.LZMAError):
        data = b""
    fix = "save it as UTF-8 text (or UTF-16 with a byte-order mark)"
    if b"\x00" in data[:1 << 16]:
        return f"binary data (NUL bytes), not UTF-8 CSV text (or UTF-16 without a byte-order mark); {fix}"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return f"not UTF-8 text: byte 0x{data[exc.start]:02x} in line {line}; {fix}"
    return f"not UTF-8 text; {fix}"


def _records(path: Path, sep: str, encoding: str = "utf-8") -> Iterator[tuple[int, list[str]]]:
    """``(first line, fields)`` of every non-blank record, header included, as pandas
    tokenises them (blank lines skipped, quoted fields may span lines)."""
    f = _open_binary(path)
    if f is None:
        return
    encoding = "utf-8-sig" if encoding == "utf-8" else encoding
    with io.TextIOWrapper(f, encoding=encoding, errors="replace", newline="") as text:
        reader = csv.reader(text, delimiter=sep)
        prev = 0
        for record in reader:
            start, prev = prev + 1, reader.line_num
            if record and not (len(record) == 1 and not record[0].strip()):
                yield start, record


def _csv_line_numbers(path: Path, sep: str, n_rows: int, encoding: str = "utf-8") -> np.ndarray | None:
    """File line number (1-based) where each of the ``n_rows`` data rows starts.

    Fast path: when the file has exactly ``n_rows + 1`` physical lines, row ``i`` is on
    line ``i + 2``. Otherwise (blank lines, quoted fields spanning lines, CR line
    endings) the file is re-tokenised with :mod:`csv`. Returns None when the two
    tokenisers disagree on the number of rows.
    """
    try:
        if encoding == "utf-8":  # in UTF-16/32 a byte 0x0a is not a line end: decode instead
            f = _open_binary(path)
            if f is None:
                return None
            with f:
                newlines, last = 0, b""
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    newlines += chunk.count(b"\n")
                    last = chunk[-1:]
            if newlines + (last not in (b"\n", b"")) == n_rows + 1:
                return np.arange(2, n_rows + 2, dtype=np.int64)
        starts = [line for line, _ in _records(path, sep, encoding)][1:]
    except (OSError, csv.Error, EOFError, lzma.LZMAError):
        return None
    return np.asarray(starts, dtype=np.int64) if len(starts) == n_rows else None


def _ragged(path: Path, sep: str, encoding: str = "utf-8") -> str | None:
    """``line N has K fields, the header H`` for the first data row longer than the header."""
    try:
        records = _records(path, sep, encoding)
        _, header = next(records)
        for line, record in records:
            if len(record) > len(header) and any(x.strip() for x in record[len(header):]):
                return f"line {line} has {len(record)} fields, the header line {len(header)}"
    except (StopIteration, OSError, csv.Error, EOFError, lzma.LZMAError):
        pass
    return None


def read_pairs(path: str, columns: list[str]) -> tuple[pd.DataFrame, str]:
    """Read ``columns`` of a pairs table from CSV (default; .tsv: tab separated; .gz, .bz2,
    .xz, .zip compressed), Parquet (.parquet, .pq) or a pickled DataFrame (.pkl, .pickle;
    read by the restricted ``facebias.io.read_pickle_frame``, which runs no code from the file).

    CSV text is UTF-8, or UTF-16/32 when it starts with that byte-order mark.
    Returns the table and the word naming its index: for a CSV file the index holds file
    line numbers ("line"); if those cannot be established (the csv module and pandas
    disagree, an unusual compression) it holds 1-based data row numbers ("data row");
    for Parquet and pickle files 1-based row numbers ("row").
    Raises ``InputError`` for a missing or unreadable file, a row with more fields than
    the header, no data rows or a missing column.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(path, "no such file")
    if p.is_dir():
        raise InputError(path, "is a directory, not a file")
    last = p.suffix.lower()
    kind = "parquet" if last in _PARQUET else "pickle" if last in _PICKLE else "csv"
    sep = "\t" if ".tsv" in _suffixes(p) else ","
    encoding = _encoding(p) if kind == "csv" else "utf-8"
    if encoding == "binary":
        raise InputError(path, f"cannot read csv file: {_not_utf8(p)}")
    try:
        if kind == "csv":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                # index_col=False: never take the first column as the index; a first
                # data row longer than the header then warns instead (made an error)
                warnings.simplefilter("error", pd.errors.ParserWarning)
                df = pd.read_csv(p, sep=sep, index_col=False, encoding=encoding)
                # pandas renames a repeated header name ("score" -> "score.1"): check the raw header
                raw = pd.read_csv(p, sep=sep, header=None, nrows=1, dtype=str, index_col=False,
                                  encoding=encoding)
                _check_columns(path, raw.iloc[0].fillna("").tolist(), columns)
        elif kind == "parquet":
            import pyarrow.parquet as pq

            _check_columns(path, list(pq.read_schema(p).names), columns)
            df = pd.read_parquet(p, columns=list(dict.fromkeys(columns)))
        else:
            from facebias.io import read_pickle_frame

            try:  # restricted unpickler: a crafted pickle cannot run code
                df = read_pickle_frame(p)
            except ValueError as exc:
                raise InputError(path, str(exc).removeprefix(f"{p}: ")) from None
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        raise InputError(path, "empty file: no header line") from None
    except UnicodeDecodeError:
        raise InputError(path, f"cannot read {kind} file: {_not_utf8(p)}") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        where = _ragged(p, sep, encoding) or _describe(exc).removeprefix("ParserError: ")
        raise InputError(path, f"cannot read csv file: {where}") from None
    except Exception as exc:  # any failure to read is bad input, reported on one line
        raise InputError(path, f"cannot read {kind} file: {_describe(exc)}") from None
    _check_columns(path, list(df.columns), columns)
    df = df[list(dict.fromkeys(columns))]
    if len(df) == 0:
        raise InputError(path, "no data rows (only a header)" if kind == "csv" else "the table has no rows")

    lines = _csv_line_numbers(p, sep, len(df), encoding) if kind == "csv" else None
    if lines is not None:
        word = "line"
    else:
        lines = np.arange(1, len(df) + 1, dtype=np.int64)
        word = "data row" if kind == "csv" else "row"
    df.index = pd.Index(lines, name=word)
    return df, word


def _check_columns(path: str, header: list[str], columns: list[str]) -> None:
    message = column_error(header, columns)
    if message is not None:
        raise InputError(path, message)
    names = [str(h) for h in header]
    for col in dict.fromkeys(columns):
        if names.count(str(col)) > 1:
            raise InputError(path, f"column {col!r} appears {names.count(str(col))} times in the header: "
                                   "rename or drop the duplicates so the one meant is unambiguous")


_ROW = re.compile(r"\brow (-?\d+)\b")


def _locate(message: str, word: str) -> str:
    """Rewrite a library message's ``row LABEL`` as ``line N`` (or ``word N``)."""
    return _ROW.sub(lambda m: f"{word} {m.group(1)}", message)


def _first(mask: pd.Series) -> int:
    return int(mask.index[mask.to_numpy()][0])
