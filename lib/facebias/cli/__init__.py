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
deps      each DVC stage's lib/ deps in dvc.yaml from its imports (``facebias.dvcdeps``; ``make deps``).
rapid     paper 001's rapid test on your photo folders (``facebias.studies.rapid.folders``).
rapid-example  an offline example photo folder with planted truth, to try ``facebias rapid`` on.
hcic      paper 000's study on generated faces with your own models (``facebias.studies.runs``).
transects paper 004's transect analysis of your own gender classifier (``facebias.classifiers.user``).
check-params  the params.yaml sections a notebook stage reads, checked before papermill (``facebias.sections``).

Every command reports bad input as ONE line on stderr,
``facebias: error: SOURCE: MESSAGE``, and exits with code 2; never a traceback. Rows of
a CSV file are named by their line number in the file (header = line 1, first data row =
line 2), so ``sed -n Np FILE`` shows the offending row. Exit code 0 means success.

Adding a command (e.g. ``facebias world``): in the module of its group, write
``_add_NAME(subparsers)`` that adds a subparser with ``set_defaults(func=_run_NAME)``, where
``_run_NAME(args) -> int`` raises ``InputError`` for bad input and imports what it runs inside
its body (so :mod:`facebias.dvcdeps` counts it for this command only); import ``_add_NAME`` here
at module level and append it to ``_COMMANDS``.

The commands live in one module per group; this package builds the parser and runs them.

==============  =================================================================
module          job
==============  =================================================================
``common``      :class:`InputError`, the program name, error wording, output checks
``tables``      :func:`read_pairs`: a pairs table from CSV, Parquet or pickle
``metrics``     ``facebias metrics``
``data``        ``facebias world``, ``synth``, ``annotate`` (the pipeline's data)
``reports``     ``facebias report``, ``claims``, ``plots``
``pipeline``    ``facebias repro``, ``deps``, ``check-params``
``rapid``       ``facebias rapid``, ``rapid-example`` (paper 001 on your photo folders)
``hcic``        ``facebias hcic``
``transects``   ``facebias transects``
``__main__``    ``python -m facebias.cli``
==============  =================================================================
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from facebias import __version__
from facebias.cli.common import PROG, InputError
from facebias.cli.data import _add_annotate, _add_synth, _add_world
from facebias.cli.hcic import _add_hcic
from facebias.cli.metrics import MAX_N_BOOT, _add_metrics
from facebias.cli.pipeline import _add_check_params, _add_deps, _add_repro
from facebias.cli.rapid import _add_rapid, _add_rapid_example
from facebias.cli.reports import _add_claims, _add_plots, _add_report
from facebias.cli.tables import read_pairs
from facebias.cli.transects import _add_transects

__all__ = ["main", "build_parser", "read_pairs", "InputError", "PROG", "MAX_N_BOOT"]


# --------------------------------------------------------------------------- entry point
_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_metrics, _add_world, _add_synth,
                                                                    _add_annotate, _add_report]
_COMMANDS.append(_add_claims)
_COMMANDS.append(_add_plots)
_COMMANDS.append(_add_repro)
_COMMANDS.append(_add_deps)
_COMMANDS.append(_add_check_params)
_COMMANDS.append(_add_rapid)
_COMMANDS.append(_add_rapid_example)
_COMMANDS.append(_add_hcic)
_COMMANDS.append(_add_transects)


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
