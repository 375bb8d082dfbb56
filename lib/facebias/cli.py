"""Command-line interface: ``facebias COMMAND ...`` (also ``python -m facebias.cli``).

Commands
--------
metrics   per-group error rates and fairness summaries of a table of scored pairs
          (``facebias.metrics.group_report``).
world     the synthetic known-truth BFW pair table (DVC stage ``world``).
synth     the synthetic faces of papers 004 and 000 (DVC stage ``synth``).
annotate  the simulated annotator panel's votes on them (DVC stage ``annotations``).
report    reports/index.html, every paper's claims beside our measurements (stage ``report``).
plots     an offline page of DVC's plots, no scripts (``facebias.dvcplots``; ``make plots``).

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


class InputError(Exception):
    """Bad user input: printed as ``facebias: error: SOURCE: MESSAGE``, exit code 2."""

    def __init__(self, source: str, message: str):
        self.source = source
        # one line; numpy scalars as plain numbers: np.float64(2.0) -> 2.0
        self.message = " ".join(str(message).split())
        super().__init__(f"{source}: {self.message}")


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


def _records(path: Path, sep: str) -> Iterator[tuple[int, list[str]]]:
    """``(first line, fields)`` of every non-blank record, header included, as pandas
    tokenises them (blank lines skipped, quoted fields may span lines)."""
    f = _open_binary(path)
    if f is None:
        return
    with io.TextIOWrapper(f, encoding="utf-8-sig", errors="replace", newline="") as text:
        reader = csv.reader(text, delimiter=sep)
        prev = 0
        for record in reader:
            start, prev = prev + 1, reader.line_num
            if record and not (len(record) == 1 and not record[0].strip()):
                yield start, record


def _csv_line_numbers(path: Path, sep: str, n_rows: int) -> np.ndarray | None:
    """File line number (1-based) where each of the ``n_rows`` data rows starts.

    Fast path: when the file has exactly ``n_rows + 1`` physical lines, row ``i`` is on
    line ``i + 2``. Otherwise (blank lines, quoted fields spanning lines, CR line
    endings) the file is re-tokenised with :mod:`csv`. Returns None when the two
    tokenisers disagree on the number of rows.
    """
    try:
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
        starts = [line for line, _ in _records(path, sep)][1:]
    except (OSError, csv.Error, EOFError, lzma.LZMAError):
        return None
    return np.asarray(starts, dtype=np.int64) if len(starts) == n_rows else None


def _ragged(path: Path, sep: str) -> str | None:
    """``line N has K fields, the header H`` for the first data row longer than the header."""
    try:
        records = _records(path, sep)
        _, header = next(records)
        for line, record in records:
            if len(record) > len(header) and any(x.strip() for x in record[len(header):]):
                return f"line {line} has {len(record)} fields, the header line {len(header)}"
    except (StopIteration, OSError, csv.Error, EOFError, lzma.LZMAError):
        pass
    return None


def read_pairs(path: str, columns: list[str]) -> tuple[pd.DataFrame, str]:
    """Read ``columns`` of a pairs table from CSV (default; .tsv: tab separated; .gz, .bz2,
    .xz, .zip compressed), Parquet (.parquet, .pq) or a pickled DataFrame (.pkl, .pickle).

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
    try:
        if kind == "csv":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                # index_col=False: never take the first column as the index; a first
                # data row longer than the header then warns instead (made an error)
                warnings.simplefilter("error", pd.errors.ParserWarning)
                df = pd.read_csv(p, sep=sep, index_col=False)
                # pandas renames a repeated header name ("score" -> "score.1"): check the raw header
                raw = pd.read_csv(p, sep=sep, header=None, nrows=1, dtype=str, index_col=False)
                _check_columns(path, raw.iloc[0].fillna("").tolist(), columns)
        elif kind == "parquet":
            import pyarrow.parquet as pq

            _check_columns(path, list(pq.read_schema(p).names), columns)
            df = pd.read_parquet(p, columns=list(dict.fromkeys(columns)))
        else:
            df = pd.read_pickle(p)
            if not isinstance(df, pd.DataFrame):
                raise InputError(path, f"expected a pickled pandas DataFrame, got {type(df).__name__}")
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        raise InputError(path, "empty file: no header line") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        where = _ragged(p, sep) or _describe(exc).removeprefix("ParserError: ")
        raise InputError(path, f"cannot read csv file: {where}") from None
    except Exception as exc:  # any failure to read is bad input, reported on one line
        raise InputError(path, f"cannot read {kind} file: {_describe(exc)}") from None
    _check_columns(path, list(df.columns), columns)
    df = df[list(dict.fromkeys(columns))]
    if len(df) == 0:
        raise InputError(path, "no data rows (only a header)" if kind == "csv" else "the table has no rows")

    lines = _csv_line_numbers(p, sep, len(df)) if kind == "csv" else None
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
        help="pairs table: .csv (default), .tsv, .parquet or .pkl; give it before "
        "--group-col and --fmr, which take several values",
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
                   help="bootstrap replicates; 0 = no intervals [default: 200]")
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
    if args.n_boot < 0:
        raise InputError(src, f"--n-boot: must be >= 0, got {args.n_boot!r}")
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
    _write(report.to_json() if args.json else str(report))
    return 0


# --------------------------------------------------------------------------- world
def _add_world(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "world",
        help="write the synthetic known-truth BFW pair table (DVC stage `world`)",
        description="Generate the known-truth world of facebias.worlds.bfw from the `world` section "
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
        config = BFWWorldConfig.from_params(load_params(args.params, "world"))
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(args.params, _describe(exc)) from None
    df = make_bfw_world(config, progress=not args.quiet)
    write_world(df, args.out)
    print(f"wrote {len(df):,} synthetic pairs ({', '.join(s.name for s in config.systems)}) "
          f"to {args.out}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- synth
def _add_synth(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "synth",
        help="render the synthetic faces of papers 004 and 000 (DVC stage `synth`)",
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

    try:
        params = load_params(args.params, args.section)
        compute = ComputeConfig.from_params(load_params(args.params).get("compute"))
        summary = write_products(params, Path(args.out), compute=compute)
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(args.params, _describe(exc)) from None
    print(f"wrote {summary['transects']['n_images']:,} transect images and "
          f"{summary['hcic']['n_images']:,} HCIC images ({summary['backend']}) to {args.out}",
          file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- annotate
def _add_annotate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "annotate",
        help="simulate the annotator panel on the synthetic faces (DVC stage `annotations`)",
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

    try:
        params = dict(load_params(args.params, "annotate"))
        panel = Panel(**params.pop("panel", {}))
        paths = simulate_synthetic(args.synthetic, args.out, panel=panel, **params)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise InputError(args.params, _describe(exc)) from None
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

    try:
        path = write_report(args.reports)
    except (OSError, ValueError) as exc:
        raise InputError(args.reports, _describe(exc)) from None
    print(f"wrote {path}", file=sys.stderr)
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


# --------------------------------------------------------------------------- entry point
_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_metrics, _add_world, _add_synth,
                                                                    _add_annotate, _add_report]
_COMMANDS.append(_add_plots)


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
