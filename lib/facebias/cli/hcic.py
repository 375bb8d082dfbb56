"""``facebias hcic``: paper 000's machine side (FNMR by varied attribute and group, similarity
by relation and level, group tests) on the generated faces with the user's own models
(:mod:`facebias.studies.runs`, the DVC stage's notebook ``notebooks/hcic.py``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from facebias.cli.common import PROG, InputError, _check_out_folder, _problem, _write

__all__: list[str] = []


def _add_hcic(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hcic",
        help="paper 000's study (FNMR by attribute and group) on generated faces with your own models",
        description=(
            "Run the HCIC study's machine side (notebooks/hcic.py, the DVC stage's code) with the "
            "models of --models on a generated face set: the procedural renders (with the simulated "
            "panel's HCIC labels when data/annotations has them, else the intended labels), the DCGAN, "
            "or a StyleGAN2 or EG3D network pickle (--weights; EG3D's pose sequences are rendered by its "
            "camera). The set is rendered once and reused. Writes "
            "the executed notebook, figures and metrics under --out. Scores are cosine similarities; "
            "a pair matches iff score > t; rates are fractions."
        ),
        epilog=("example: facebias hcic --models sface,onnx:me.onnx?input_size=112 --backend dcgan "
                "--out results/hcic_mine"),
    )
    p.add_argument("--models", required=True, action="append", metavar="SPECS",
                   help="comma-separated model specs: sface, dlib, onnx:PATH[?input_size=&mean=&std="
                   "&layout=&rgb=&name=&threshold=], torch:MODULE:FUNCTION[?...] (repeatable)")
    p.add_argument("--backend", default="procedural", choices=("procedural", "dcgan", "stylegan2", "eg3d"),
                   help="which generated faces [default: procedural]")
    p.add_argument("--weights", default=None, metavar="PKL",
                   help="StyleGAN2 or EG3D network pickle (--backend stylegan2, --backend eg3d)")
    p.add_argument("--out", required=True, help="output folder (notebook, figures/, metrics/)")
    p.add_argument("--n-boot", type=int, default=None, metavar="N",
                   help="bootstrap replicates [default: the params section's n_boot]")
    p.add_argument("--params", default="params.yaml", help="params file [default: params.yaml]")
    p.add_argument("--serial", action="store_true",
                   help="embed in this process instead of the params file's compute section (Dask)")
    p.set_defaults(func=_run_hcic)


def _run_hcic(args: argparse.Namespace) -> int:
    from facebias.config import model_specs
    from facebias.faces.specs import check_model_spec, model_name, split_models
    from facebias.generate.build import SynthConfig
    from facebias.io import load_params, repo_root
    from facebias.studies.hcic import HCICConfig
    from facebias.studies.runs import (
        GENERATED_SETS,
        check_weights,
        generate_params,
        generated_set,
        run_notebook,
    )

    t0 = time.time()
    try:  # every check first, in one line each, before any model loads or any face renders
        specs = list(model_specs()([s for text in args.models for s in split_models(text)], "--models"))
    except ValueError as exc:
        raise InputError("--models", str(exc).removeprefix("--models: ").removeprefix("--models[0]: ")) from None
    if args.n_boot is not None and args.n_boot < 0:
        raise InputError("--n-boot", f"must be >= 0, got {args.n_boot}")
    _check_out_folder(args.out)
    root = repo_root()
    sets = GENERATED_SETS[args.backend]
    section = sets.hcic_section
    overrides = {"models": specs, **({"n_boot": args.n_boot} if args.n_boot is not None else {})}
    try:
        params = load_params(args.params)
    except (OSError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    try:
        gen_section = generate_params(params, args.backend, args.weights)
    except (KeyError, ValueError) as exc:
        raise InputError(args.weights or "--backend", _problem(exc, "")) from None
    try:  # the sections as the notebook and the renderer will read them
        HCICConfig.from_params({**params.get(section, {}), **overrides}, section)
        SynthConfig.from_params(gen_section)
    except ValueError as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    loaded = []
    for spec in specs:  # load every model once now: a bad file fails here, not after rendering
        try:
            emb = check_model_spec(spec)
        except ValueError as exc:
            raise InputError("--models", str(exc)) from None
        loaded.append(f"{model_name(spec)}: {emb.dim}-d, {emb.alignment} {emb.crop_size} px crops, "
                      f"model_id {emb.model_id}")
    if args.weights is not None:  # the pickle once now, as for the models: one line, before any render
        try:
            check_weights(gen_section, args.weights)
        except ValueError as exc:
            raise InputError("--weights", str(exc)) from None
    for line in loaded:
        print(line, file=sys.stderr)
    try:
        folder = generated_set(args.params, args.backend, args.weights, root=root,
                               log=lambda m: print(f"{PROG}: {m}", file=sys.stderr))
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    out = Path(args.out).resolve()
    # paths as the DVC stage passes them (relative to the repository root, the kernel's cwd), so
    # that the notebook records the same provenance as the stage
    votes = {k: f"data/annotations/hcic_{k}_votes.parquet" for k in ("image", "pair")}
    own_votes = args.backend == "procedural" and all((root / v).is_file() for v in votes.values())
    parameters = {
        "params_file": _relative(Path(args.params).resolve(), root), "section": section, "overrides": overrides,
        "synthetic": _relative(folder.resolve(), root), "reports_dir": str(out), "name": "hcic",
        "image_votes": votes["image"] if own_votes else "", "pair_votes": votes["pair"] if own_votes else "",
        # its own cache: the stages' caches are DVC outputs, which a user model must not change
        "cache_dir": f"artifacts/user_embeddings/{args.backend}",
        **({"compute": "serial"} if args.serial else {}),
    }
    print(f"{PROG}: running notebooks/hcic.py ({section}, {', '.join(map(model_name, specs))}) into {out}",
          file=sys.stderr)
    try:
        run_notebook(root / "notebooks" / "hcic.py", out / "hcic.ipynb", parameters, cwd=root)
    except RuntimeError as exc:
        raise InputError("notebooks/hcic.py", str(exc)) from None
    main = f"{HCICConfig.from_params({**params.get(section, {}), **overrides}, section).t_hcic_main:g}"
    _write(_summary(out, [model_name(s) for s in specs], main, time.time() - t0))
    return 0


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it lies under it, else absolute."""
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _summary(folder: Path, names: list[str], main: str, seconds: float) -> str:
    """Each model's FNMR at the study's FMR per group (main labels), from the metrics the
    notebook wrote; a ``facebias: warning`` line on stderr for every unresolved rate."""
    path = folder / "metrics" / "hcic_details.json"
    lines = [f"wrote {folder} in {seconds:.0f} s: hcic.ipynb (executed notebook), figures/hcic/, "
             "metrics/hcic.json and hcic_details.json"]
    try:
        details = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"{PROG}: warning: {path} was not written", file=sys.stderr)
        return lines[0]
    fmr = details.get("fmr_target")
    lines.append(f"FNMR at FMR {fmr:g} per group (95 % bootstrap interval over {details.get('bootstrap_unit', '?')}; "
                 f"labels: {details.get('labels')}; fixed thresholds in the metrics):")
    for name in names:
        per = details.get("fnmr_at_fmr", {}).get(name, {})
        key = main if main in per else next(iter(per), None)
        if key is None:
            print(f"{PROG}: warning: {name}: no FNMR table (no pairs scored)", file=sys.stderr)
            continue
        cells = []
        for group, r in per[key].items():
            if not r.get("resolved", True) or r.get("fnmr") is None:
                print(f"{PROG}: warning: {name}, group {group}: FNMR at FMR {fmr:g} unresolved "
                      f"({r.get('n_impostor')} impostors, {r.get('n_genuine')} genuine pairs; "
                      "fewer than 10/FMR impostors or no genuine pair)", file=sys.stderr)
                cells.append(f"{group} unresolved")
                continue
            cells.append(f"{group} {r['fnmr']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] (n={r['n_genuine']})")
        lines.append(f"  {name} (labels {key}): " + "; ".join(cells))
    return "\n".join(lines)
