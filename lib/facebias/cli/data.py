"""The commands that write the pipeline's data: ``facebias world`` (the synthetic known-truth BFW
pair table, DVC stage ``bfw_world``), ``facebias synth`` (the synthetic faces of papers 004 and
000, stage ``generate``) and ``facebias annotate`` (the simulated panel's votes, stage
``annotate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from facebias.cli.common import InputError, _check_out_file, _check_out_folder, _describe, _problem

__all__: list[str] = []


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
