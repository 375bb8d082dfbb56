"""``facebias rapid``: paper 001's rapid test on the user's own photo folders
(:func:`facebias.studies.rapid.folders.run_rapid_folders`), and ``facebias rapid-example``: an
example folder with a known truth to try it on
(:func:`facebias.studies.rapid.example.make_example_folder`).

This module parses and prints; the library does the work. Output: stdout has the minimums
(before any photo is read), one line per query (photos, dropped and why, faces, labels), the
rates and the files written; stderr has one ``facebias: warning: ...`` line per empty or
unresolved table, naming the rule.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Sequence

from facebias.cli.common import PROG, InputError, _check_out_folder, _problem, _write

__all__ = ["split_models"]

_DEFAULT_MODELS = "sface,dlib"
#: A comma-separated piece that continues the options of the spec before it (``mean=0.5,0.5``).
_CONTINUES = re.compile(r"^[-+.0-9]")
#: Library prefixes left off the warning lines (the CLI names no functions).
_PREFIXES = ("fnmr_table: ", "estimate_labels: ")


def split_models(values: Sequence[str]) -> list[str]:
    """The model specs of ``--models`` values: comma-separated, and repeatable.

    A comma inside a spec's options (``mean=0.5,0.5,0.5``) does not start a new spec: a piece
    that starts with a digit, sign or dot after a spec with options continues it.

    Examples
    --------
    >>> split_models(["sface,dlib", "onnx:me.onnx?mean=0,0,0&std=255"])
    ['sface', 'dlib', 'onnx:me.onnx?mean=0,0,0&std=255']
    """
    out: list[str] = []
    for value in values:
        for piece in value.split(","):
            p = piece.strip()
            if out and "?" in out[-1] and _CONTINUES.match(p):
                out[-1] += "," + p
            elif not p:
                raise InputError("--models", f"empty model in {value!r}; separate models with "
                                             "single commas, e.g. sface,dlib,onnx:me.onnx")
            else:
                out.append(p)
    return out


# --------------------------------------------------------------------------- facebias rapid
def _add_rapid(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rapid",
        help="paper 001's rapid test on your photo folders: labels, FNMR per model and group",
        description=(
            "The rapid test of paper 001 (Knott et al.) on folders of photos, one folder per "
            "searched name: FOLDER/<query>/*.jpg|png|.... Every model embeds every photo with "
            "exactly one face; the method estimates which photos show the queried person "
            "(label 1) and which someone else (0) by a vote across the models, with no "
            "annotation; FNMR is then measured at each target FMR per model and group, the "
            "threshold set on cross-query impostor pairs of the same group (match iff score "
            "> threshold). Rates are fractions. The minimums are printed first; every empty "
            "or unresolved table gives a 'facebias: warning:' line on stderr."),
        epilog=("example: facebias rapid-example ex && facebias rapid ex --models sface,dlib "
                "--groups ex/groups.csv --truth ex/truth.csv --out ex_results"),
    )
    p.add_argument("folder", metavar="FOLDER", help="one sub-folder of photos per query (searched name)")
    p.add_argument(
        "--models", action="append", metavar="M1,M2,...", default=None,
        help="model specs, comma-separated (or --models repeated): sface, dlib, "
        "onnx:PATH[?input_size=112&mean=127.5&std=127.5&layout=nchw&rgb=1&name=N], "
        "torch:MODULE:FUNCTION[?...]; the method votes across them, so give two or more "
        f"[default: {_DEFAULT_MODELS}]")
    p.add_argument("--out", required=True, metavar="OUT", help="output folder (created)")
    p.add_argument("--groups", metavar="GROUPS.csv", default=None,
                   help="CSV with columns query,group (one row per query folder) [default: one group]")
    p.add_argument("--min-photos", type=int, default=10, metavar="N",
                   help="least readable photos a query folder needs [default: 10, the tool's N]")
    p.add_argument("--max-photos", type=int, default=100, metavar="N",
                   help="most photos read per query folder (sorted by name) [default: 100]")
    p.add_argument("--fmr", action="extend", nargs="+", type=float, metavar="F", default=None,
                   help="target false match rate(s) in (0, 1); a rate needs >= 10/F impostor "
                   "pairs [default: 0.1 0.01]")
    p.add_argument("--cache", metavar="DIR", default=None,
                   help="embedding cache folder: a rerun reuses every embedding [default: none]")
    p.add_argument("--seed", type=int, default=2022, metavar="K",
                   help="seed of the cross-query (impostor) pair draw [default: 2022]")
    p.add_argument("--truth", metavar="TRUTH.csv", default=None,
                   help="CSV with columns face (<query>/<file>),is_target (1 = the queried "
                   "person): score the estimated labels against it (rapid-example writes one)")
    p.set_defaults(func=_run_rapid)


def _models(values: Sequence[str] | None) -> dict:
    """The models of ``--models``, loaded (name -> embedder): every spec's syntax, distinct
    names, and each file or module, before any other work."""
    from facebias.studies.rapid.images import load_systems

    try:
        return load_systems(split_models(values or [_DEFAULT_MODELS]))
    except ValueError as exc:
        raise InputError("--models", " ".join(str(exc).split()).removeprefix("systems: ")) from None


def _print_queries(res) -> None:
    _write("queries (photos -> dropped -> faces -> labels):")
    for r in res.queries.itertuples(index=False):
        dropped = f"{r.n_dropped} dropped ({r.dropped_why})" if r.n_dropped else "0 dropped"
        if r.included:
            fate = f"included: {r.n_person} the person, {r.n_other} someone else"
        elif r.reason == "dropped":
            fate = "no face left"
        else:
            fate = f"excluded: {r.reason}"
        _write(f"  {r.query} ({r.group}): {r.n_files} photos, {dropped}; {r.n_faces} faces; {fate}")


def _print_rates(res) -> None:
    _write("FNMR at FMR (threshold from the impostor pairs, match iff score > threshold; "
           "95% Wilson interval; pairs genuine/impostor):")
    width = max([len(s) for s in res.rates["system"]] + [5])
    gwidth = max([len(str(g)) for g in res.rates["group"]] + [5])
    for r in res.rates.itertuples(index=False):
        head = f"  {r.system:<{width}}  {r.group!s:<{gwidth}}  FMR {r.fmr:<6g}"
        if r.resolved:
            _write(f"{head}  FNMR {r.fnmr:.3f} [{r.fnmr_lo:.3f}, {r.fnmr_hi:.3f}]  threshold "
                   f"{r.threshold:.4f}  FMR measured {r.fmr_measured:.3f}  pairs {r.n_genuine}/{r.n_impostor}")
        elif r.n_genuine == 0:
            _write(f"{head}  n/a: no genuine pairs  pairs {r.n_genuine}/{r.n_impostor}")
        else:
            _write(f"{head}  n/a: {r.n_impostor} impostor pairs < {r.min_impostors}  "
                   f"pairs {r.n_genuine}/{r.n_impostor}")


def _print_truth(res, source: str) -> None:
    t = res.truth
    pl, pe = t["planted"], t["person"]
    _write(f"truth ({source}): label accuracy {t['label_accuracy']:.3f} on {t['n_labelled']} labelled "
           f"photos of {t['n_truth']}")
    _write(f"  planted photos of other people: {pl['labelled_other']} of {pl['n']} labelled someone "
           f"else, {pl['labelled_person']} labelled the person, {pl['excluded']} excluded, "
           f"{pl['dropped']} dropped before labelling")
    _write(f"  photos of the queried person: {pe['labelled_person']} of {pe['n']} labelled the person, "
           f"{pe['labelled_other']} labelled someone else, {pe['excluded']} excluded, {pe['dropped']} "
           "dropped before labelling")


def _run_rapid(args: argparse.Namespace) -> int:
    from pathlib import Path

    from facebias.metrics import check_rates
    from facebias.studies.rapid.folders import (
        DEFAULT_FMR,
        list_query_folders,
        minimums_lines,
        rapid_minimums,
        read_groups,
        run_rapid_folders,
    )

    embedders = _models(args.models)  # before any work
    args.folder = str(Path(args.folder))
    if args.groups is not None:
        args.groups = str(Path(args.groups))
    fmr = args.fmr if args.fmr else list(DEFAULT_FMR)
    try:
        check_rates(fmr, "--fmr")
    except ValueError as exc:
        raise InputError("--fmr", _problem(exc, "--fmr")) from None
    if args.min_photos < 1:
        raise InputError("--min-photos", f"must be >= 1, got {args.min_photos}")
    if args.max_photos < args.min_photos:
        raise InputError("--max-photos", f"must be >= --min-photos ({args.min_photos}), got {args.max_photos}")
    _check_out_folder(args.out)
    try:
        folders = list_query_folders(args.folder)
    except ValueError as exc:
        raise InputError(args.folder, _problem(exc, args.folder)) from None
    if args.groups is not None:
        with warnings.catch_warnings(record=True) as early:
            warnings.simplefilter("always")
            try:  # checked here for a one-line error before any work; the study reads it again
                read_groups(args.groups, folders["query"].tolist())
            except ValueError as exc:
                raise InputError(args.groups, _problem(exc, args.groups)) from None
        _warn(early)

    _write(f"{PROG} rapid: {len(folders)} query folders with {int(folders['n_files'].sum())} image "
           f"files in {args.folder}; models {', '.join(e.spec or n for n, e in embedders.items())}; "
           f"{'groups from ' + args.groups if args.groups else 'one group'}")
    _write("minimums:")
    for line in minimums_lines(rapid_minimums(min_photos=args.min_photos, max_photos=args.max_photos,
                                              fmr=fmr)):
        _write(f"  {line}")
    sys.stdout.flush()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = run_rapid_folders(args.folder, args.out, list(embedders.values()), groups=args.groups,
                                    min_photos=args.min_photos, max_photos=args.max_photos, fmr=fmr,
                                    cache_dir=args.cache, cross_seed=args.seed, truth=args.truth)
        except ValueError as exc:
            msg = " ".join(str(exc).split())
            if args.truth and msg.startswith((str(args.truth), "truth:")):
                raise InputError(args.truth, _problem(exc, str(args.truth))) from None
            raise InputError(args.folder, _problem(exc, args.folder)) from None
    _print_queries(res)
    _print_rates(res)
    if res.truth is not None:
        _print_truth(res, args.truth)
    files = ", ".join(res.settings["files"])
    _write(f"wrote {args.out}/: {files} ({res.seconds:.1f} s)")
    _warn(caught)
    return 0


def _warn(caught) -> None:
    """One ``facebias: warning:`` line per distinct user warning, in order."""
    seen = []
    for w in caught:
        if not issubclass(w.category, UserWarning):
            continue
        text = " ".join(str(w.message).split())
        for p in _PREFIXES:
            text = text.removeprefix(p)
        if text not in seen:
            seen.append(text)
            print(f"{PROG}: warning: {text}", file=sys.stderr)


# --------------------------------------------------------------------------- facebias rapid-example
def _add_rapid_example(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rapid-example",
        help="an example photo folder with a known truth for facebias rapid (offline)",
        description=(
            "Render known identities (the procedural face generator) into OUT/<query>/*.png, "
            "the way a web search returns them: most photos of the queried person, a few "
            "planted photos of other people of the same group; plus a near-duplicate copy and "
            "a photo with no face, which the folder path drops. Writes OUT/truth.csv (which "
            "photo shows the queried person) and OUT/groups.csv."),
        epilog=("example: facebias rapid-example ex && facebias rapid ex --models sface,dlib "
                "--groups ex/groups.csv --truth ex/truth.csv --out ex_results"),
    )
    p.add_argument("out", metavar="OUT", help="a new or empty folder")
    p.add_argument("--queries", type=int, default=8, metavar="N",
                   help="query folders; groups alternate female, male [default: 8]")
    p.add_argument("--photos", type=int, default=12, metavar="N",
                   help="photos per query folder, the planted ones included [default: 12]")
    p.add_argument("--others", type=int, default=2, metavar="N",
                   help="planted photos of other people per folder [default: 2]")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="seed [default: 0]")
    p.set_defaults(func=_run_rapid_example)


def _run_rapid_example(args: argparse.Namespace) -> int:
    import time

    from facebias.studies.rapid.example import make_example_folder

    _check_out_folder(args.out)
    if args.seed < 0:
        raise InputError("--seed", f"must be >= 0, got {args.seed}")
    t0 = time.perf_counter()
    try:
        ex = make_example_folder(args.out, queries=args.queries, photos=args.photos,
                                 others=args.others, seed=args.seed)
    except ValueError as exc:
        word = str(exc).split(":")[0]
        source = f"--{word}" if word in ("queries", "photos", "others") else args.out
        raise InputError(source, _problem(exc, word if source.startswith("--") else args.out)) from None
    kinds = ex.truth["kind"].value_counts()
    extra = []
    if kinds.get("copy", 0):
        extra.append(f"{kinds['copy']} near-duplicate copy")
    if kinds.get("no_face", 0):
        extra.append(f"{kinds['no_face']} photo without a face")
    _write(f"wrote {args.out}: {args.queries} query folders x {args.photos} photos ({args.others} "
           f"planted of other people in each){', ' + ', '.join(extra) if extra else ''}; truth.csv, "
           f"groups.csv ({time.perf_counter() - t0:.1f} s)")
    _write(f"next: {PROG} rapid {args.out} --models sface,dlib --groups {args.out}/groups.csv "
           f"--truth {args.out}/truth.csv --out {args.out}_results")
    return 0
