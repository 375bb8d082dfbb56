"""``facebias metrics``: per-group error rates and fairness summaries of a table of scored pairs
(:func:`facebias.metrics.group_report`)."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from facebias.cli.common import PROG, InputError, _write
from facebias.cli.tables import _first, _locate, read_pairs

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
    p.add_argument(
        "--distance", action="store_true",
        help="the scores are distances (lower = more alike): rates are computed on -score, so a "
        "pair is a match iff distance < t; without it a table whose genuine pairs score lower "
        "than its impostors on average is refused",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    p.set_defaults(func=_run_metrics)


def check_direction(score: pd.Series, genuine: pd.Series, distance: bool) -> str | None:
    """The error message when the scores run the other way than declared, else ``None``.

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
    gen, imp = score[genuine.astype(bool)], score[~genuine.astype(bool)]
    if gen.empty or imp.empty:
        return None
    mg, mi = float(gen.mean()), float(imp.mean())
    if not distance and mg < mi:
        return (f"genuine pairs score lower than impostors on average (mean {mg:.3g} vs {mi:.3g}): "
                "these look like distances; pass --distance")
    if distance and mg > mi:
        return (f"--distance: genuine pairs score higher than impostors on average (mean {mg:.3g} vs "
                f"{mi:.3g}): these look like similarities; leave --distance out")
    return None


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

    labels = pd.to_numeric(df[args.label_col], errors="coerce")
    finite = np.isfinite(df[args.score_col].to_numpy(dtype=np.float64, na_value=np.nan)).all()
    if finite and labels.isin([0, 1]).all():  # else group_report names the bad value and its line
        wrong = check_direction(df[args.score_col], labels, args.distance)
        if wrong:
            raise InputError(src, wrong)
    if args.distance:
        df[args.score_col] = -df[args.score_col].astype(np.float64)

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
    if args.distance:  # thresholds were set on -distance: give them back as distances
        report.meta["scores"] = "distances: a match iff distance < threshold"
        t = report.table
        for col in ("threshold_global", "threshold_group"):
            t[col] = -t[col]
        if "threshold_group_lo" in t:  # bootstrap bounds (none with --n-boot 0): negated, so swapped
            t["threshold_group_lo"], t["threshold_group_hi"] = -t["threshold_group_hi"], -t["threshold_group_lo"]
            t["threshold_group_lo_mcse"], t["threshold_group_hi_mcse"] = (t["threshold_group_hi_mcse"],
                                                                          t["threshold_group_lo_mcse"])
    unresolved = report.table[~report.table["resolved"]]
    for f, rows in unresolved.groupby("fmr_target", sort=False):
        factor = report.meta["min_impostor_factor"]
        print(f"{PROG}: warning: {src}: --fmr {f:g}: too few impostors in "
              f"{', '.join(f'{g!s} ({n})' for g, n in zip(rows['group'], rows['n_impostor'], strict=True))}, "
              f"fewer than {factor:g}/FMR = {factor / f:g}; those rates are NaN (resolved false)", file=sys.stderr)
    _write(report.to_json() if args.json else str(report))
    return 0
