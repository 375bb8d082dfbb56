"""Command-line interface: ``facebias COMMAND ...`` (also ``python -m facebias.cli``).

Commands
--------
metrics   per-group error rates and fairness summaries of a table of scored pairs
          (``facebias.metrics.group_report``).
world     the synthetic known-truth BFW pair table (DVC stage ``bfw_world``).
synth     the synthetic faces of papers 004 and 000 (DVC stage ``generate``).
annotate  the simulated annotator panel's votes on them (DVC stage ``annotate``).
report    reports/index.html, every paper's claims beside our measurements (stage ``report``).
claims    the claims' computed verdicts as evidence tables (``--readme README.md docs/papers/*.md``).
plots     an offline page of DVC's plots, no scripts (``facebias.dvcplots``; ``make plots``).
repro     the pipeline's stale stages, several at a time (``facebias.repro``; ``make reproduce``).

Every command reports bad input as ONE line on stderr,
``facebias: error: SOURCE: MESSAGE``, and exits with code 2; never a traceback. Rows of
a CSV file are named by their line number in the file (header = line 1, first data row =
line 2), so ``sed -n Np FILE`` shows the offending row. Exit code 0 means success.

Adding a command (e.g. ``facebias world``): write ``_add_NAME(subparsers)`` that adds a
subparser with ``set_defaults(func=_run_NAME)``, where ``_run_NAME(args) -> int`` raises
``InputError`` for bad input, and append ``_add_NAME`` to ``_COMMANDS``.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import io
import lzma
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from facebias import __version__
from facebias.validate import column_error

__all__ = ["main", "build_parser", "read_pairs", "InputError"]

PROG = "facebias"


#: numpy scalar reprs (numpy >= 2) in library messages: np.float64(0.0), np.str_('a'), np.True_
_NP_SCALAR = re.compile(r"\bnp\.(?:float|int|uint|complex|longdouble|str_|bytes_)\w*\(([^()]*)\)")
_NP_BOOL = re.compile(r"\bnp\.(True|False)_\b")


class InputError(Exception):
    """Bad user input: printed as ``facebias: error: SOURCE: MESSAGE``, exit code 2."""

    def __init__(self, source: str, message: str):
        self.source = source
        # one line; numpy scalars as plain numbers: np.float64(2.0) -> 2.0
        self.message = _NP_BOOL.sub(r"\1", _NP_SCALAR.sub(r"\1", " ".join(str(message).split())))
        super().__init__(f"{source}: {self.message}")


# --------------------------------------------------------------------------- reading tables
_OPENERS: dict[str, Callable[..., IO[bytes]]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_PARQUET = {".parquet", ".pq"}
_PICKLE = {".pkl", ".pickle"}
#: Largest --n-boot the CLI accepts (each replicate recomputes every rate of every group).
MAX_N_BOOT = 100_000


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


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _problem(exc: BaseException, source: str) -> str:
    """A library's ``ValueError``/``KeyError`` message without its class name and without
    the ``SOURCE: `` prefix the error line already has; other errors as :func:`_describe`."""
    if type(exc) not in (ValueError, KeyError, FileNotFoundError) or not exc.args:
        return _describe(exc)
    return " ".join(str(exc.args[0]).split()).removeprefix(f"{source}: ")


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


# --------------------------------------------------------------------------- facebias metrics
def _add_metrics(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metrics",
        help="per-group FMR/FNMR and fairness summaries of a table of scored pairs",
        description=(
            "Per-group false match and false non-match rates at one threshold set on all "
            "impostors (global, NIST style) and at each group's own threshold (BFW style), "
            "with bootstrap percentile intervals and fairness summaries across groups "
            "(max/min ratios, FDR, GARBE, inequity rate). Scores are similarities: a pair "
            "is a match iff score > t. Rates are fractions, not percentages."
        ),
        epilog=(
            "example: facebias metrics pairs.csv --score-col score --label-col genuine "
            "--group-col race gender --id-cols id1 id2 --fmr 1e-3 1e-4 --json"
        ),
    )
    p.add_argument(
        "pairs", metavar="PAIRS",
        help="pairs table: .csv (default; UTF-8, or UTF-16 with a byte-order mark), .tsv, "
        ".parquet or .pkl; give it before "
        "--group-col and --fmr, which take several values. A .pkl is read by a restricted "
        "unpickler that accepts only a pandas DataFrame (numpy arrays, pandas indexes, "
        "categoricals, dates), so no code in the file runs; anything else is refused",
    )
    p.add_argument("--score-col", required=True, metavar="S", help="similarity score column")
    p.add_argument("--label-col", required=True, metavar="L", help="label column: 1 = genuine, 0 = impostor")
    p.add_argument(
        "--group-col", action="extend", nargs="+", metavar="G", default=None,
        help="group column(s); several give their combination (values joined by '/') "
        "[default: one group named 'all']",
    )
    p.add_argument(
        "--id-cols", nargs=2, metavar=("ID1", "ID2"), default=None,
        help="the pair's two identity columns: bootstrap identities instead of pairs",
    )
    p.add_argument(
        "--fmr", action="extend", nargs="+", type=float, metavar="F", default=None,
        help="target false match rate(s) in (0, 1) [default: 1e-3]",
    )
    p.add_argument("--n-boot", type=int, default=200, metavar="N",
                   help=f"bootstrap replicates, 0 .. {MAX_N_BOOT:,}; 0 = no intervals [default: 200]")
    p.add_argument("--ci", type=float, default=0.95, help="interval coverage in (0, 1) [default: 0.95]")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="bootstrap seed [default: 0]")
    p.add_argument("--alpha", type=float, default=0.5,
                   help="weight of FMR against FNMR in FDR, GARBE, inequity rate [default: 0.5]")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    p.set_defaults(func=_run_metrics)


def _run_metrics(args: argparse.Namespace) -> int:
    from facebias.metrics import check_rates, group_report

    src = args.pairs
    fmr = args.fmr if args.fmr else [1e-3]
    try:
        check_rates(fmr, "--fmr")
    except ValueError as exc:
        raise InputError(src, str(exc)) from None
    if not 0 < args.ci < 1:
        raise InputError(src, f"--ci: must lie in (0, 1), got {args.ci!r}")
    if not 0 <= args.n_boot <= MAX_N_BOOT:  # beyond ~1e4 replicates a 95 % interval moves in the 3rd digit
        raise InputError(src, f"--n-boot: must lie in 0 .. {MAX_N_BOOT:,}, got {args.n_boot!r}")
    if args.seed < 0:  # numpy would say only "expected non-negative integer"
        raise InputError(src, f"--seed: must be >= 0, got {args.seed!r}")
    if not 0 <= args.alpha <= 1:
        raise InputError(src, f"--alpha: must lie in [0, 1], got {args.alpha!r}")
    group_cols = list(dict.fromkeys(args.group_col or []))
    ids = list(args.id_cols or [])

    df, word = read_pairs(src, [args.score_col, args.label_col, *group_cols, *ids])

    # Checks the library also makes, here to name the file's column and line exactly.
    score = df[args.score_col]
    if not pd.api.types.is_numeric_dtype(score):
        numeric = pd.to_numeric(score, errors="coerce")
        bad = numeric.isna() & score.notna()
        if bad.any():
            row = _first(bad)
            raise InputError(
                src, f"column {args.score_col!r}: score {score.loc[row]!r} is not a number in {word} {row}"
            )
        df[args.score_col] = numeric.astype(np.float64)
    for col, what in [*((g, "group") for g in group_cols), *((i, "identity") for i in ids)]:
        missing = df[col].isna()
        if missing.any():
            raise InputError(src, f"column {col!r}: missing {what} in {word} {_first(missing)}")

    if not group_cols:
        group = next(n for n in ("group", "_group", "__group") if n not in df.columns)
        df[group] = "all"
    elif len(group_cols) == 1:
        group = group_cols[0]
    else:
        group = "/".join(group_cols)
        if group in df.columns:
            raise InputError(src, f"--group-col: the combined column name {group!r} is already a column")
        combined = df[group_cols[0]].astype(str)
        for col in group_cols[1:]:
            combined = combined + "/" + df[col].astype(str)
        df[group] = combined

    try:
        report = group_report(
            df, args.score_col, args.label_col, group, fmr,
            ids=tuple(ids) if ids else None,
            n_boot=args.n_boot, ci=args.ci, seed=args.seed, alpha=args.alpha,
        )
    except ValueError as exc:
        raise InputError(src, _locate(str(exc), word)) from None
    report.meta["pairs"] = src
    report.meta["group_cols"] = group_cols
    unresolved = report.table[~report.table["resolved"]]
    for f, rows in unresolved.groupby("fmr_target", sort=False):
        factor = report.meta["min_impostor_factor"]
        print(f"{PROG}: warning: {src}: --fmr {f:g}: too few impostors in "
              f"{', '.join(f'{g!s} ({n})' for g, n in zip(rows['group'], rows['n_impostor'], strict=True))}, "
              f"fewer than {factor:g}/FMR = {factor / f:g}; those rates are NaN (resolved false)", file=sys.stderr)
    _write(report.to_json() if args.json else str(report))
    return 0


# --------------------------------------------------------------------------- outputs
def _check_out_file(out: str) -> None:
    """Raise ``InputError`` when ``out`` cannot be a file: a folder, or under a file."""
    p = Path(out)
    if p.is_dir():
        raise InputError(out, "is a folder; give the path of the file to write")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(out, f"{parent} is a file, not a folder")
            break


def _check_out_folder(out: str) -> None:
    """Raise ``InputError`` when ``out`` cannot be a folder: a file, or under a file."""
    p = Path(out)
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise InputError(out, "is a file, not a folder" if q == p else f"{q} is a file, not a folder")
            break


# --------------------------------------------------------------------------- world
def _add_world(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "world",
        help="write the synthetic known-truth BFW pair table (DVC stage `bfw_world`)",
        description="Generate the known-truth world of facebias.worlds.bfw from the `bfw_world` section "
        "of a params file and write it as parquet (atomically). Everything in it is synthetic.",
    )
    p.add_argument("--params", default="params.yaml", help="params file [default: params.yaml]")
    p.add_argument("--out", required=True, help="output .parquet path")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_world)


def _run_world(args: argparse.Namespace) -> int:
    from facebias.io import load_params
    from facebias.worlds.bfw import BFWWorldConfig, make_bfw_world, write_world

    try:
        config = BFWWorldConfig.from_params(load_params(args.params, "bfw_world"))
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    _check_out_file(args.out)
    df = make_bfw_world(config, progress=not args.quiet)
    try:
        write_world(df, args.out)
    except OSError as exc:  # e.g. a read-only folder, a full disk
        raise InputError(args.out, f"cannot write: {_describe(exc)}") from None
    print(f"wrote {len(df):,} synthetic pairs ({', '.join(s.name for s in config.systems)}) "
          f"to {args.out}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- synth
def _add_synth(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "synth",
        help="render the synthetic faces of papers 004 and 000 (DVC stage `generate`)",
        description="Fit the attribute hyperplanes, plan the transects (004) and the prototypes, "
        "sequences and pairs (000) from the `generate` section (or --section) of a params file, "
        "with hyperplanes fitted on labels of sampled renders collected through the annotation "
        "store (the simulated panel, machine annotators or human votes; never a backend's truth), render them "
        "and write images, latents and tables under OUT (each file atomically). The `compute` "
        "section says where rendering runs (a Dask LocalCluster by default; same bytes either way).",
    )
    p.add_argument("--params", default="params.yaml", help="params file [default: params.yaml]")
    p.add_argument("--section", default="generate",
                   help="params section to read [default: generate; generate_dcgan: the GAN study]")
    p.add_argument("--out", required=True, help="output folder, e.g. data/synthetic")
    p.set_defaults(func=_run_synth)


def _run_synth(args: argparse.Namespace) -> int:
    from facebias.compute import ComputeConfig
    from facebias.generate.build import write_products
    from facebias.io import load_params

    _check_out_folder(args.out)
    try:
        params = load_params(args.params, args.section)
        compute = ComputeConfig.from_params(load_params(args.params).get("compute"))
        summary = write_products(params, Path(args.out), compute=compute)
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    print(f"wrote {summary['transects']['n_images']:,} transect images and "
          f"{summary['hcic']['n_images']:,} HCIC images ({summary['backend']}) to {args.out}",
          file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- annotate
def _add_annotate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "annotate",
        help="simulate the annotator panel on the synthetic faces (DVC stage `annotate`)",
        description="Let the simulated annotator panel of the `annotate` section of a params file "
        "rate the transect images (paper 004), the HCIC images and pairs (paper 000) under SYNTHETIC, "
        "through the annotation store (source 'simulated'), and export the votes as parquet under OUT.",
    )
    p.add_argument("--params", default="params.yaml", help="params file [default: params.yaml]")
    p.add_argument("--synthetic", default="data/synthetic", help="output of `facebias synth`")
    p.add_argument("--out", required=True, help="output folder, e.g. data/annotations")
    p.set_defaults(func=_run_annotate)


def _run_annotate(args: argparse.Namespace) -> int:
    from facebias.annotate.simulate import Panel, simulate_synthetic
    from facebias.io import load_params

    _check_out_folder(args.out)
    try:
        params = dict(load_params(args.params, "annotate"))
        panel = Panel(**params.pop("panel", {}))
        paths = simulate_synthetic(args.synthetic, args.out, panel=panel, **params)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    print(f"wrote simulated votes ({panel.n_annotators} annotators) to "
          f"{', '.join(str(p) for p in paths.values())}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- report
def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write reports/index.html: each paper's claims beside our measurements (DVC stage `report`)",
        description="Read reports/metrics/*.json, reports/figures and reports/notebooks and write one "
        "offline HTML page (no scripts) with every paper's claims, our measured numbers, the backend "
        "that produced them, the figures and links to the executed notebooks.",
    )
    p.add_argument("--reports", default="reports", help="reports folder [default: reports]")
    p.set_defaults(func=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from facebias.report import write_report

    if not Path(args.reports).is_dir():  # never create it: a typo would give an empty page
        what = "is a file, not a folder" if Path(args.reports).exists() else "no such folder"
        raise InputError(args.reports, f"{what}; --reports is the folder the pipeline wrote "
                                       "(reports/metrics, reports/figures): run `make reproduce` first")
    try:
        path = write_report(args.reports)
    except (OSError, ValueError) as exc:
        raise InputError(args.reports, _describe(exc)) from None
    print(f"wrote {path}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- claims
def _add_claims(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "claims",
        help="every paper's claims with their computed verdicts (the README's evidence table)",
        description="Evaluate every registered claim (facebias.claims) on reports/metrics and print the "
        "evidence table as Markdown: paper, claim, backend, verdict (computed), kind of evidence. "
        "--readme rewrites the generated blocks of each file given (a block's begin marker may "
        "limit it to one paper: `<!-- claims:begin paper=002 (generated by ...; do not edit) -->`); "
        "--check exits 1 when any of them is stale.",
    )
    p.add_argument("--metrics", default="reports/metrics", help="metrics folder [default: reports/metrics]")
    p.add_argument("--readme", default=None, nargs="+", action="extend", metavar="FILE",
                   help="rewrite the generated claims blocks of these Markdown files (repeatable)")
    p.add_argument("--check", action="store_true",
                   help="with --readme: only check the blocks, exit 1 if any file is stale")
    p.set_defaults(func=_run_claims)


def _run_claims(args: argparse.Namespace) -> int:
    from facebias.claims.core import evaluate_all
    from facebias.claims.readme import evidence_markdown, replace_blocks, write_blocks
    from facebias.claims.registry import all_claims

    if not Path(args.metrics).is_dir():
        raise InputError(args.metrics, "no such folder; run `make reproduce` first")
    try:
        results = evaluate_all(all_claims(), args.metrics)
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(args.metrics, _describe(exc)) from None
    if args.readme is None:
        _write(evidence_markdown(results))
        return 0
    stale = []
    for readme in args.readme:
        try:
            if args.check:
                text = Path(readme).read_text(encoding="utf-8")
                if replace_blocks(text, results, readme) != text:
                    stale.append(readme)
                continue
            changed = write_blocks(readme, results)
        except (OSError, ValueError) as exc:
            raise InputError(readme, _describe(exc)) from None
        print(f"{'rewrote' if changed else 'unchanged:'} the claims blocks of {readme}", file=sys.stderr)
    if stale:
        print(f"the claims blocks are stale in {', '.join(stale)}; run "
              f"`facebias claims --readme {' '.join(args.readme)}`", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------- plots
def _add_plots(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plots",
        help="write an offline page of DVC's plots (dvc plots show --json; no scripts)",
        description="Run `dvc plots show --json` and write one self-contained HTML page: image "
        "plots embedded as data: URIs, data plots rendered to inline SVG by vl-convert. No scripts "
        "and no external URLs, so it opens offline (DVC's own page loads vega from a CDN).",
    )
    p.add_argument("-o", "--out", default="reports/plots.html",
                   help="HTML file to write [default: reports/plots.html]")
    p.add_argument("--repo", default=None,
                   help="DVC repository [default: the folder holding dvc.yaml, searched upwards]")
    p.set_defaults(func=_run_plots)


def _run_plots(args: argparse.Namespace) -> int:
    from facebias.dvcplots import PlotsError, write_plots_page

    try:
        page = write_plots_page(args.out, args.repo)
    except PlotsError as exc:
        raise InputError(args.repo or "plots", str(exc)) from None
    except OSError as exc:  # e.g. the output folder is not writable
        raise InputError(args.out, _describe(exc)) from None
    for line in page.missing:
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    print(f"wrote {args.out} (images: {page.n_images}, data plots: {page.n_data}, "
          f"missing or failed: {len(page.missing)})", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- repro
def _add_repro(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "repro",
        help="reproduce the pipeline's stale stages side by side (dvc repro, several stages at a time)",
        description="Run `dvc --wait-for-lock repro --single-item STAGE` for every stale stage and "
        "everything downstream of it, up to --jobs at once, each after the stages it depends on "
        "(critical path first). DVC decides, runs, caches and records each stage; a `dvc repro` "
        "afterwards has nothing to do. Logs and times: build/repro/.",
    )
    p.add_argument("targets", nargs="*", help="only these stages and their upstream [default: all]")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="stages at once [default: the usable cores, at least 1]")
    p.add_argument("--repo", default=".", help="DVC repository [default: .]")
    p.add_argument("-q", "--quiet", action="store_true", help="stage output to the logs only")
    p.set_defaults(func=_run_repro)


def _run_repro(args: argparse.Namespace) -> int:
    from facebias.compute import usable_cpus
    from facebias.repro import repro

    jobs = usable_cpus() if args.jobs is None else args.jobs
    if jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {jobs}")
    if not (Path(args.repo) / "dvc.yaml").is_file():
        raise InputError(args.repo, "no dvc.yaml here; --repo is the repository root")
    try:
        result = repro(args.repo, jobs=jobs, targets=args.targets or None,
                       echo=None if args.quiet else sys.stdout)
    except ValueError as exc:
        raise InputError("targets", str(exc)) from None
    return 0 if result.ok else 1


def _add_deps(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "deps",
        help="write each DVC stage's lib/ deps in dvc.yaml from the code it imports",
        description="Follow each stage's notebook / facebias command / python -m module through "
        "its imports (static analysis, facebias.dvcdeps) and write the library files it runs as "
        "its lib/ deps in dvc.yaml (a folder where it runs all of it); other lines are kept. "
        "--check only lists the stages that differ (exit 1).",
    )
    p.add_argument("--repo", default=".", help="repository root [default: .]")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a stage differs")
    p.set_defaults(func=_run_deps)


def _run_deps(args: argparse.Namespace) -> int:
    from facebias.dvcdeps import write_deps

    root = Path(args.repo).resolve()
    if not (root / "dvc.yaml").is_file():
        raise InputError(args.repo, "no dvc.yaml here; --repo is the repository root")
    changed = write_deps(root, check=args.check)
    verb = "differ" if args.check else "rewritten"
    print(f"dvc.yaml: lib/ deps {verb} for {', '.join(changed)}" if changed else "dvc.yaml: lib/ deps up to date")
    return 1 if (changed and args.check) else 0


# --------------------------------------------------------------------------- entry point
_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_metrics, _add_world, _add_synth,
                                                                    _add_annotate, _add_report]
_COMMANDS.append(_add_claims)
_COMMANDS.append(_add_plots)
_COMMANDS.append(_add_repro)
_COMMANDS.append(_add_deps)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Measuring bias in face recognition: metrics and reproducible studies.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


def _write(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `facebias metrics ... | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: list[str] | None = None) -> int:
    """Run ``facebias`` with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    0: success. 2: bad input or usage, reported on stderr (bad input as one line
    ``facebias: error: SOURCE: MESSAGE``).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
