"""dvc.yaml: every stage depends on the library code it runs (issue 16), not on all of it.

`dvc repro` reruns a stage only when one of its deps changed, so a library module that a
stage imports but does not list leaves the stage "up to date" and its figure stale. Here each
stage's entry points are read from its ``cmd`` (a notebook ``notebooks/X.py``, a ``facebias
COMMAND`` call, a ``python -m facebias.X`` call), their imports are followed transitively
through lib/facebias with :mod:`ast` (static analysis only: nothing is imported or run), and
every module reached must be covered by a dep: the file itself or a folder above it.

The analysis is conservative: every import in a reached module counts, at any nesting level
(a lazy import inside a function runs when the function is called), ``importlib.import_module``
with a literal (or an f-string's literal package prefix: every module under it) counts, and
importing ``facebias.a.b`` also runs ``facebias/__init__.py`` and ``facebias/a/__init__.py``.
One exception: of lib/facebias/cli.py only the module level and the subcommand's handler (with
the cli.py functions it refers to) count, not the other subcommands' lazy imports.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"
PACKAGE = "facebias"
CLI = LIB / PACKAGE / "cli.py"

# Stages whose output cannot depend on library code, with the reason. Their code is still
# analysed (the stage must exist and its cmd must be understood), just not required as deps.
EXEMPT = {
    # the cmd pins the file's sha256, which the code checks before writing it: a change to the
    # code cannot change the output, and a rerun would need the network (`dvc repro` is offline)
    "stylegan2_weights": "output pinned by the sha256 in its cmd",
}


# --------------------------------------------------------------------------- import analysis
def module_file(name: str, lib: Path) -> Path | None:
    """The file of dotted module ``name`` under ``lib`` (a package's __init__.py), or None."""
    base = lib.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def module_name(path: Path, lib: Path) -> str:
    parts = list(path.relative_to(lib).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules(package: str, lib: Path) -> list[str]:
    """Dotted names of every module in ``package`` (recursively), the package included."""
    root = lib.joinpath(*package.split("."))
    return sorted(module_name(p, lib) for p in root.rglob("*.py") if "__pycache__" not in p.parts)


@dataclass
class Imports:
    modules: set[str] = field(default_factory=set)  # dotted names, may not exist under lib
    prefixes: set[str] = field(default_factory=set)  # "pkg.sub.": every module below pkg.sub
    unresolved: list[str] = field(default_factory=list)  # dynamic imports we cannot read


def _walk(node: ast.AST, into_functions: bool = True) -> Iterator[ast.AST]:
    """``ast.walk``; without ``into_functions``, function bodies are not entered."""
    skip = () if into_functions else (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, skip):
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def imports_in(nodes: Iterable[ast.AST], current: str | None, is_package: bool,
               into_functions: bool = True) -> Imports:
    """Every import under ``nodes`` of module ``current`` (None: a notebook, no relative
    imports): ``import``, ``from ... import`` (absolute or relative; a name imported may be a
    submodule) and ``importlib.import_module`` / ``__import__`` calls."""
    found = Imports()
    package = current if is_package else (current or "").rpartition(".")[0]
    for root in nodes:
        for node in _walk(root, into_functions):
            if isinstance(node, ast.Import):
                found.modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    if current is None:
                        found.unresolved.append(f"relative import at line {node.lineno} outside a package")
                        continue
                    parts = package.split(".")
                    base_parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                found.modules.add(base)
                found.modules.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
            elif isinstance(node, ast.Call) and _is_dynamic_import(node.func):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.modules.add(arg.value)
                elif (isinstance(arg, ast.JoinedStr) and arg.values
                      and isinstance(arg.values[0], ast.Constant) and "." in arg.values[0].value):
                    found.prefixes.add(arg.values[0].value.rpartition(".")[0] + ".")
                else:
                    found.unresolved.append(f"dynamic import at line {node.lineno}: {ast.unparse(node)}")
    return found


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in {"import_module", "__import__"}


def closure(seed: Imports, lib: Path, package: str = PACKAGE,
            via: dict[Path, Path | None] | None = None) -> tuple[set[Path], list[str]]:
    """The files under ``lib`` that importing ``seed`` runs, transitively through ``package``:
    each module, the __init__.py of every package above it, and everything they import.
    Also returns the dynamic imports (``file: what``) that could not be resolved. ``via``, if
    given, receives for each file the file whose import reached it (None: the seed)."""
    files: set[Path] = set()
    via = {} if via is None else via
    unresolved = list(seed.unresolved)
    # breadth first, in sorted order: ``via`` then names a shortest import chain, reproducibly
    todo = deque((m, None) for m in sorted(seed.modules))
    todo += [(m, None) for p in sorted(seed.prefixes) for m in _below(p, lib, package)]
    while todo:
        name, parent = todo.popleft()
        if name != package and not name.startswith(package + "."):
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # parents first: importing a.b runs a/__init__.py
            path = module_file(".".join(parts[:i]), lib)
            if path is None or path in files:
                continue
            files.add(path)
            via[path] = parent
            found = _file_imports(path, lib)
            todo.extend((m, path) for m in sorted(found.modules))
            todo.extend((m, path) for p in sorted(found.prefixes) for m in _below(p, lib, package))
            unresolved.extend(f"{path.relative_to(lib)}: {u}" for u in found.unresolved)
    return files, unresolved


@functools.cache
def _file_imports(path: Path, lib: Path) -> Imports:
    tree = ast.parse(path.read_text(), str(path))
    return imports_in([tree], module_name(path, lib), path.name == "__init__.py")


def _below(prefix: str, lib: Path, package: str) -> list[str]:
    pkg = prefix.rstrip(".")
    if pkg != package and not pkg.startswith(package + "."):
        return []
    return [m for m in all_modules(pkg, lib) if m.startswith(prefix)] if module_file(pkg, lib) else [pkg]


# --------------------------------------------------------------------------- the CLI
def cli_handlers(path: Path = CLI) -> dict[str, str]:
    """``{subcommand: handler function}``: each function that calls ``add_parser("NAME")``
    and ``set_defaults(func=HANDLER)``."""
    tree = ast.parse(path.read_text())
    handlers = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        names, funcs = [], []
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "add_parser" and isinstance(node.args[0], ast.Constant):
                    names.append(node.args[0].value)
                elif node.func.attr == "set_defaults":
                    funcs += [k.value.id for k in node.keywords
                              if k.arg == "func" and isinstance(k.value, ast.Name)]
        if names or funcs:
            assert len(names) == 1 and len(funcs) == 1, f"cli.py {fn.name}: cannot pair {names} with {funcs}"
            handlers[names[0]] = funcs[0]
    return handlers


def cli_imports(command: str, path: Path = CLI, lib: Path = LIB) -> Imports:
    """What ``facebias COMMAND`` imports: cli.py's module level, and the handler's body with
    every top-level function or class of cli.py it refers to (transitively)."""
    tree = ast.parse(path.read_text())
    current = module_name(path, lib)
    found = imports_in(tree.body, current, False, into_functions=False)
    defs = {n.name: n for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    handlers = cli_handlers(path)
    assert command in handlers, f"cli.py has no subcommand {command!r} (has {sorted(handlers)})"
    seen, todo = set(), [handlers[command]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        more = imports_in([defs[name]], current, False)
        found.modules |= more.modules
        found.prefixes |= more.prefixes
        found.unresolved += more.unresolved
        todo += [n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name) and n.id in defs]
    return found


# --------------------------------------------------------------------------- the stages
@functools.lru_cache(maxsize=1)
def _spec() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())


def stages() -> dict[str, dict]:
    """``{name: stage}`` of dvc.yaml; a foreach stage is its ``do`` block."""
    spec = _spec()
    return {name: stage.get("do", stage) for name, stage in spec["stages"].items()}


def cmd_text(stage: dict) -> str:
    spec = _spec()
    variables = {k: v for d in spec.get("vars", []) if isinstance(d, dict) for k, v in d.items()}
    cmd = stage["cmd"] if isinstance(stage["cmd"], str) else " && ".join(stage["cmd"])
    return re.sub(r"\$\{(\w+)\}", lambda m: str(variables.get(m.group(1), m.group(0))), cmd)


@dataclass
class Entry:
    what: str  # for messages
    files: set[Path]  # files the entry point itself runs (the notebook, cli.py)
    imports: Imports


def entry_points(stage: dict) -> list[Entry]:
    cmd = cmd_text(stage)
    entries = []
    for rel in re.findall(r"(?<![\w/.])(notebooks/[\w/]+\.py)\b", cmd):
        path = ROOT / rel
        assert path.is_file(), f"{rel} in cmd does not exist"
        entries.append(Entry(rel, {path}, imports_in([ast.parse(path.read_text())], None, False)))
    for command in re.findall(r"(?:^|&&|\||;)\s*facebias\s+([\w-]+)", cmd):
        entries.append(Entry(f"facebias {command}", {CLI}, cli_imports(command)))
    for mod in re.findall(r"\bpython3?\s+-m\s+([\w.]+)", cmd):
        path = module_file(mod, LIB)
        assert path is not None, f"python -m {mod}: no such module under lib/"
        entries.append(Entry(f"python -m {mod}", {path}, Imports(modules={mod})))
    return entries


def required(stage: dict) -> tuple[dict[Path, str], list[str]]:
    """``{file: what reached it}`` for every file the stage runs, and the dynamic imports on
    the way that could not be read."""
    files: dict[Path, str] = {}
    unresolved = []
    for entry in entry_points(stage):
        via: dict[Path, Path | None] = {}
        _, bad = closure(entry.imports, LIB, via=via)
        files.update({f: entry.what for f in entry.files})
        for f, parent in via.items():
            files.setdefault(f, entry.what if parent is None else str(parent.relative_to(ROOT)))
        unresolved += [f"{entry.what}: {b}" for b in bad]
    return files, unresolved


def lib_deps(stage: dict) -> list[Path]:
    return [ROOT / d for d in stage.get("deps", []) if isinstance(d, str) and "${" not in d]


def covered(path: Path, deps: Iterable[Path]) -> bool:
    return any(path == d or d in path.parents for d in deps)


# --------------------------------------------------------------------------- tests
def test_every_stage_runs_code_we_can_analyse():
    """Each stage's cmd names a notebook, a `facebias` subcommand or a `python -m` module (a new
    kind of cmd must be taught to this file, not slip through), and every dynamic import
    reached can be read."""
    problems = []
    for name, stage in stages().items():
        if not entry_points(stage):
            problems.append(f"{name}: no notebook, `facebias COMMAND` or `python -m` in its cmd")
        problems += [f"{name}: {u}" for u in required(stage)[1]]
    assert not problems, "\n".join(problems)


def test_stage_deps_cover_their_import_closure():
    """Every library module a stage runs (transitively) is one of its deps or under one."""
    missing = {}
    for name, stage in stages().items():
        files, _ = required(stage)
        deps = lib_deps(stage)
        gaps = sorted(f"{f.relative_to(ROOT)}  (imported by {files[f]})"
                      for f in files if not covered(f, deps))
        if gaps and name not in EXEMPT:
            missing[name] = gaps
    assert not missing, "stages missing deps on code they run (add them to dvc.yaml):\n" + "".join(
        f"  {name}:\n" + "".join(f"    {g}\n" for g in gaps) for name, gaps in missing.items())


def test_exempt_stages_exist():
    assert set(EXEMPT) <= set(stages()), "EXEMPT names a stage that dvc.yaml no longer has"


def test_no_stage_depends_on_the_whole_package():
    """Depending on lib/facebias (or lib/) would rerun every stage on every library change."""
    too_broad = {LIB, LIB / PACKAGE}
    offenders = {name: [str(d.relative_to(ROOT)) for d in lib_deps(stage) if d in too_broad]
                 for name, stage in stages().items()}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"stages depending on the whole library: {offenders}"


def test_stage_deps_exist():
    """A lib dep that is no file or folder (a typo, a moved module) covers nothing."""
    bad = {name: [str(d.relative_to(ROOT)) for d in lib_deps(stage) if not d.exists()]
           for name, stage in stages().items()}
    bad = {k: [d for d in v if d.startswith("lib/")] for k, v in bad.items()}
    assert not {k: v for k, v in bad.items() if v}, bad


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_closure_follows_lazy_and_relative_imports_and_not_more(tmp_path):
    """a imports b lazily inside a function, b imports sub.c with a relative import (so the
    package sub's __init__ runs too), d sits beside c and is reached by nothing."""
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "import os\n\n\ndef f():\n    from pkg import b\n    return b\n",
        "pkg/b.py": '"""Mentions pkg.sub.d only in a docstring."""\nfrom .sub import c\n',
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "import numpy\n",
        "pkg/sub/d.py": "",
        "pkg/unused.py": "from pkg.sub import d\n",
    })
    files, unresolved = closure(Imports(modules={"pkg.a"}), tmp_path, package="pkg")
    got = sorted(str(f.relative_to(tmp_path)) for f in files)
    assert got == ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/sub/__init__.py", "pkg/sub/c.py"]
    assert unresolved == []
    # covered: by the file or a folder above it, not by a sibling
    assert covered(tmp_path / "pkg/sub/c.py", [tmp_path / "pkg/sub"])
    assert not covered(tmp_path / "pkg/sub/c.py", [tmp_path / "pkg/sub/d.py", tmp_path / "pkg/b.py"])


def test_closure_reads_import_module_with_an_fstring_package_prefix(tmp_path):
    """facebias.faces resolves names lazily with import_module(f"facebias.faces.{module}"):
    every module of that package counts; an import_module we cannot read is reported."""
    _write(tmp_path, {
        "pkg/__init__.py": "import importlib\n\n\ndef get(m):\n"
                           "    return importlib.import_module(f'pkg.lazy.{m}')\n",
        "pkg/lazy/__init__.py": "",
        "pkg/lazy/x.py": "",
        "pkg/lazy/y.py": "",
        "pkg/other.py": "",
        "pkg/weird.py": "import importlib\nimportlib.import_module(NAME)\n",
    })
    files, unresolved = closure(Imports(modules={"pkg"}), tmp_path, package="pkg")
    assert sorted(str(f.relative_to(tmp_path)) for f in files) == [
        "pkg/__init__.py", "pkg/lazy/__init__.py", "pkg/lazy/x.py", "pkg/lazy/y.py"]
    assert unresolved == []
    _, unresolved = closure(Imports(modules={"pkg.weird"}), tmp_path, package="pkg")
    assert len(unresolved) == 1 and "import_module(NAME)" in unresolved[0]


def test_cli_imports_only_the_subcommands_own_handler():
    """`facebias world` reaches facebias.worlds.bfw, not the modules other handlers import lazily."""
    handlers = cli_handlers()
    assert handlers["world"] == "_run_world" and handlers["synth"] == "_run_synth"
    files, _ = closure(cli_imports("world"), LIB)
    rel = {str(f.relative_to(LIB)) for f in files}
    assert {"facebias/__init__.py", "facebias/worlds/bfw.py", "facebias/io.py"} <= rel
    assert "facebias/generate/build.py" not in rel and "facebias/report.py" not in rel
