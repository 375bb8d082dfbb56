"""``facebias metrics``: per-group error rates and fairness summaries of a table of scored pairs,
in sample (:func:`facebias.metrics.group_report`) or held out with ``--folds K``
(:func:`facebias.metrics.heldout_report`)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.cli.common import PROG, InputError, _write
from facebias.cli.tables import _PARQUET, _PICKLE, _encoding, _first, _locate, _suffixes, read_pairs

__all__ = ["MAX_N_BOOT", "check_direction"]

#: Largest --n-boot the CLI accepts (each replicate recomputes every rate of every group).
MAX_N_BOOT = 100_000


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
            "is a match iff score > t. Rates are fractions, not percentages. Without --folds the "
            "thresholds are fitted on the pairs they are measured on (in-sample: fmr_group is at its "
            "target by construction); with --folds K they are fitted on the other folds and measured "
            "on the held-out one, averaged over the folds."
        ),
        epilog=(
            "examples: facebias metrics pairs.csv --score-col score --label-col genuine "
            "--group-col race gender --id-cols id1 id2 --fmr 1e-3 1e-4 --json | "
            "held out: facebias metrics pairs.csv --score-col score --label-col genuine "
            "--group-col race --folds auto (the table's 'fold' column) or --folds 5 --id-cols id1 id2 "
            "(identity-disjoint folds)"
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
        help="the pair's two identity columns: bootstrap identities instead of pairs; with --folds "
        "and no fold column, deal identities to K folds",
    )
    p.add_argument(
        "--folds", metavar="K", default=None,
        help="held-out thresholds: fit each threshold on the other folds, measure on the held-out "
        "fold, average over folds. Folds: the table's fold column (--fold-col, default 'fold') if "
        "it has one (K must be its number of folds, or 'auto'), else identities of --id-cols dealt "
        "to K >= 2 folds by a permutation seeded --seed (a pair is in a fold iff both identities "
        "are; pairs spanning two folds are dropped and counted) [default: in-sample thresholds]",
    )
    p.add_argument(
        "--fold-col", metavar="F", default=None,
        help="with --folds: the fold column [default: 'fold' if the table has it]",
    )
    p.add_argument(
        "--fmr", action="extend", nargs="+", type=float, metavar="F", default=None,
        help="target false match rate(s) in (0, 1) [default: 1e-3]",
    )
    p.add_argument("--n-boot", type=int, default=None, metavar="N",
                   help=f"bootstrap replicates, 0 .. {MAX_N_BOOT:,}; 0 = no intervals; in-sample only "
                   "(held-out rates give their spread across folds, fmr_*_sd) [default: 200]")
    p.add_argument("--ci", type=float, default=0.95, help="interval coverage in (0, 1) [default: 0.95]")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="bootstrap seed; with --folds --id-cols, the seed of the identity folds [default: 0]")
    p.add_argument("--alpha", type=float, default=0.5,
                   help="weight of FMR against FNMR in FDR, GARBE, inequity rate [default: 0.5]")
    p.add_argument(
        "--distance", action="store_true",
        help="the scores are distances (lower = more alike): rates are computed on -score, so a "
        "pair is a match iff distance < t; without it a table whose genuine pairs score lower "
        "than its impostors on average is refused",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    p.set_defaults(func=_run_metrics)


def check_direction(score: pd.Series, genuine: pd.Series, distance: bool) -> str | None:
    """The error message when the scores run the other way than declared, else ``None``:
    :func:`facebias.metrics.direction_problem` in the CLI's words (``--distance``).

    Similarities (``distance`` false) must put genuine pairs above impostors on average;
    distances below. A table with one kind of pair only passes (nothing to compare).

    Examples
    --------
    >>> s, g = pd.Series([0.9, 0.8, 0.2, 0.1]), pd.Series([1, 1, 0, 0])
    >>> check_direction(s, g, distance=False) is None
    True
    >>> check_direction(1 - s, g, distance=False)
    'genuine pairs score lower than impostors on average (mean 0.15 vs 0.85): these look like distances; pass --distance'
    """
    from facebias.metrics import direction_problem

    return direction_problem(score.to_numpy(dtype=np.float64), genuine.astype(bool).to_numpy(), not distance,
                             declared="--distance", flip="pass --distance", keep="leave --distance out")


def _table_columns(path: str) -> list[str] | None:
    """The header of the pairs table at ``path`` without reading its rows (a pickle is read
    whole); ``None`` when it cannot be read (:func:`read_pairs` then says why)."""
    p = Path(path)
    try:
        last = p.suffix.lower()
        if last in _PARQUET:
            import pyarrow.parquet as pq

            return [str(c) for c in pq.read_schema(p).names]
        if last in _PICKLE:
            from facebias.io import read_pickle_frame

            return [str(c) for c in read_pickle_frame(p).columns]
        sep = "\t" if ".tsv" in _suffixes(p) else ","
        return [str(c) for c in pd.read_csv(p, sep=sep, nrows=0, index_col=False, encoding=_encoding(p)).columns]
    except Exception:  # noqa: BLE001 - read_pairs reports the problem on one line
        return None


def _fold_plan(args: argparse.Namespace, src: str) -> tuple[str | None, int | None]:
    """``(fold column or None, K or None for 'auto')`` of ``--folds``/``--fold-col``; one-line
    errors for a bad K or a plan without folds."""
    text = str(args.folds).strip().lower()
    if text == "auto":
        k = None
    else:
        try:
            k = int(text)
        except ValueError:
            raise InputError(src, f"--folds: expected a number of folds K >= 2 or 'auto', got {args.folds!r}") from None
        if k < 2:
            raise InputError(src, f"--folds: need at least 2 folds (fit on the others, measure on one), got {k}")
    if args.fold_col is not None:
        return args.fold_col, k
    header = _table_columns(src)
    fold_col = "fold" if header is not None and "fold" in header else None
    if fold_col is None and header is not None:
        if not args.id_cols:
            raise InputError(src, "--folds: the table has no 'fold' column; pass --id-cols ID1 ID2 to deal "
                                  "identities to K folds, or --fold-col NAME to name its fold column")
        if k is None:
            raise InputError(src, "--folds auto: takes the table's 'fold' column, which it lacks; give the number "
                                  "of identity folds, e.g. --folds 5 (with --id-cols)")
    return fold_col, k


def _print_warnings(caught: list[warnings.WarningMessage], src: str) -> None:
    """The library's unresolved-rate warnings as ``facebias: warning: SRC: ...`` lines; any
    other warning is shown as Python would."""
    from facebias.metrics import UnresolvedRatesWarning

    for w in caught:
        if issubclass(w.category, UnresolvedRatesWarning):
            print(f"{PROG}: warning: {src}: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _run_metrics(args: argparse.Namespace) -> int:
    from facebias.metrics import IN_SAMPLE, check_rates, group_report, heldout_report

    src = args.pairs
    held_out = args.folds is not None
    if args.fold_col is not None and not held_out:
        raise InputError(src, "--fold-col: names the fold column of --folds; pass --folds too")
    if held_out and args.n_boot:
        raise InputError(src, "--n-boot: held-out rates (--folds) have no bootstrap intervals (fmr_*_sd gives "
                              "their spread across folds); leave --n-boot out")
    n_boot = 200 if args.n_boot is None else args.n_boot
    fmr = args.fmr if args.fmr else [1e-3]
    try:
        check_rates(fmr, "--fmr")
    except ValueError as exc:
        raise InputError(src, str(exc)) from None
    if not 0 < args.ci < 1:
        raise InputError(src, f"--ci: must lie in (0, 1), got {args.ci!r}")
    if not 0 <= n_boot <= MAX_N_BOOT:  # beyond ~1e4 replicates a 95 % interval moves in the 3rd digit
        raise InputError(src, f"--n-boot: must lie in 0 .. {MAX_N_BOOT:,}, got {args.n_boot!r}")
    if args.seed < 0:  # numpy would say only "expected non-negative integer"
        raise InputError(src, f"--seed: must be >= 0, got {args.seed!r}")
    if not 0 <= args.alpha <= 1:
        raise InputError(src, f"--alpha: must lie in [0, 1], got {args.alpha!r}")
    group_cols = list(dict.fromkeys(args.group_col or []))
    ids = list(args.id_cols or [])
    fold_col, k = _fold_plan(args, src) if held_out else (None, None)
    if fold_col is not None:
        ids = []  # the table's folds are used; identities are not dealt (nor bootstrapped)

    df, word = read_pairs(src, [args.score_col, args.label_col, *group_cols, *ids,
                                *([fold_col] if fold_col else [])])
    if held_out and fold_col is None and not ids:  # the header could not be read before
        raise InputError(src, "--folds: the table has no 'fold' column; pass --id-cols ID1 ID2 to deal "
                              "identities to K folds, or --fold-col NAME to name its fold column")

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
    for col, what in [*((g, "group") for g in group_cols), *((i, "identity") for i in ids),
                      *([(fold_col, "fold")] if fold_col else [])]:
        missing = df[col].isna()
        if missing.any():
            raise InputError(src, f"column {col!r}: missing {what} in {word} {_first(missing)}")

    labels = pd.to_numeric(df[args.label_col], errors="coerce")
    finite = np.isfinite(df[args.score_col].to_numpy(dtype=np.float64, na_value=np.nan)).all()
    if finite and labels.isin([0, 1]).all():  # else group_report names the bad value and its line
        wrong = check_direction(df[args.score_col], labels, args.distance)
        if wrong:
            raise InputError(src, wrong)
    if fold_col is not None and k is not None and df[fold_col].nunique() != k:
        values = np.sort(df[fold_col].unique())
        shown = ", ".join(map(str, values[:10])) + (", ..." if values.size > 10 else "")
        raise InputError(src, f"--folds {k}: column {fold_col!r} has {values.size} folds ({shown}); pass "
                              f"--folds {values.size} or --folds auto")

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
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if held_out:
                report = heldout_report(
                    df, args.score_col, args.label_col, group, fmr, fold=fold_col,
                    ids=tuple(ids) if ids else None, k=k, seed=args.seed, alpha=args.alpha,
                    higher_is_match=not args.distance,
                )
            else:
                report = group_report(
                    df, args.score_col, args.label_col, group, fmr,
                    ids=tuple(ids) if ids else None,
                    n_boot=n_boot, ci=args.ci, seed=args.seed, alpha=args.alpha,
                    higher_is_match=not args.distance,
                )
    except ValueError as exc:
        msg = str(exc)
        for api, cli in (("k: ", f"--folds {k}: "), ("ids: ", "--id-cols: ")):  # heldout_report's names
            if held_out and msg.startswith(api):
                msg = cli + msg.removeprefix(api)
        raise InputError(src, _locate(msg, word)) from None
    if not held_out:
        report.meta["thresholds"] = IN_SAMPLE
    report.meta["pairs"] = src
    report.meta["group_cols"] = group_cols
    _print_warnings(caught, src)
    _write(report.to_json() if args.json else str(report))
    return 0
