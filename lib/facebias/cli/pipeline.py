"""The commands that run the pipeline itself: ``facebias repro`` (the stale stages, several at a
time; :mod:`facebias.repro`) and ``facebias deps`` (each stage's ``lib/`` deps in dvc.yaml;
:mod:`facebias.dvcdeps`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from facebias.cli.common import InputError

__all__: list[str] = []


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


# --------------------------------------------------------------------------- check-params
def _add_check_params(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check-params",
        help="check the params.yaml sections a notebook stage reads (one line per mistake)",
        description="Validate every params.yaml section the notebook STAGE reads with its config "
        "class (facebias.sections), so a mistake is one line naming section.key before papermill "
        "starts (each notebook stage in dvc.yaml runs this first). Exit 0: all good.",
    )
    p.add_argument("stages", nargs="+", metavar="STAGE", help="notebook stage(s), e.g. hcic transects")
    p.add_argument("--params", default="params.yaml", help="params file [default: params.yaml]")
    p.set_defaults(func=_run_check_params)


def _run_check_params(args: argparse.Namespace) -> int:
    from facebias.cli.common import _problem
    from facebias.sections import STAGE_SECTIONS, check_stage

    for stage in args.stages:
        if stage not in STAGE_SECTIONS:
            raise InputError(stage, f"not a notebook stage; known: {', '.join(STAGE_SECTIONS)}")
        try:
            check_stage(args.params, stage)
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise InputError(args.params, _problem(exc, args.params)) from None
    return 0
