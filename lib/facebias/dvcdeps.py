"""Which library files each DVC stage runs, and dvc.yaml's dependency lists written from it.

``dvc repro`` reruns a stage only when one of its deps changed, so a library module a stage
imports but does not list leaves the stage "up to date" and its figures stale, while a stage
that lists the whole package reruns on every change. Here each stage's entry points are read
from its ``cmd`` (a notebook ``notebooks/X.py``, a ``facebias COMMAND`` call, a ``python -m
facebias.X`` call), their imports are followed transitively through lib/facebias with
:mod:`ast` (static analysis only: nothing is imported or run), and the files reached are the
stage's library deps.

The analysis is conservative: every import in a reached module counts, at any nesting level
(a lazy import inside a function runs when the function is called), ``importlib.import_module``
with a literal (or an f-string's literal package prefix: every module under it) counts, and
importing ``facebias.a.b`` also runs ``facebias/__init__.py`` and ``facebias/a/__init__.py``.
One exception: of the CLI (the package lib/facebias/cli/, or a single lib/facebias/cli.py) only
the module level of its modules and the subcommand's handler (with the CLI functions it refers
to, in any of its modules) count, not the other subcommands' lazy imports.

:func:`write_deps` rewrites the ``lib/`` entries of every stage's ``deps`` in dvc.yaml from
that analysis (``facebias deps``; ``--check`` only reports), a folder standing for its modules
when the stage runs every one of them; the rest of the file (other deps, comments, order) is
kept as written. ``tests/test_dvc_deps.py`` checks that the committed file is what it would
write.
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

__all__ = ["PACKAGE", "Imports", "closure", "imports_in", "cli_modules", "cli_handlers", "cli_imports", "stages",
           "entry_points",
           "required", "lib_deps", "covered", "expected_lib_deps", "render_deps", "write_deps", "EXEMPT"]

PACKAGE = "facebias"

# Stages whose output cannot depend on library code, with the reason. Their code is still
# analysed (the stage must exist and its cmd must be understood); their deps are left as written.
EXEMPT = {
    # the cmd pins the file's sha256, which the code checks before writing it: a change to the
    # code cannot change the output, and a rerun would need the network (`dvc repro` is offline)
    "stylegan2_weights": "output pinned by the sha256 in its cmd",
}


def _root() -> Path:
    from facebias.io import repo_root

    return repo_root()


def _cli_file(lib: Path) -> Path:
    """The CLI's entry file under ``lib``: the package's ``facebias/cli/__init__.py``, else
    the single module ``facebias/cli.py``."""
    init = lib / PACKAGE / "cli" / "__init__.py"
    return init if init.is_file() else lib / PACKAGE / "cli.py"


def _cli() -> Path:
    return _cli_file(_root() / "lib")


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


#: A comment on the line of a dynamic import that never loads a library module (the user's
#: own module of a ``torch:`` model spec) or whose modules a stage's command names
#: (``facebias check-params STAGE``: :func:`check_params_modules`); the analysis skips it.
NOT_LIB = "# dvcdeps: not a lib import"


@functools.cache
def _file_imports(path: Path, lib: Path) -> Imports:
    text = path.read_text()
    tree = ast.parse(text, str(path))
    found = imports_in([tree], module_name(path, lib), path.name == "__init__.py")
    lines = text.splitlines()
    marked = {i + 1 for i, ln in enumerate(lines) if NOT_LIB in ln}
    found.unresolved = [u for u in found.unresolved
                        if not (m := re.match(r"dynamic import at line (\d+):", u)) or int(m.group(1)) not in marked]
    return found


def check_params_modules(stage_names: Iterable[str], lib: Path) -> set[str]:
    """The config modules ``facebias check-params STAGE...`` imports: read statically from the
    literal tables ``SECTIONS`` and ``STAGE_SECTIONS`` of ``facebias/sections.py``."""
    tree = ast.parse((lib / PACKAGE / "sections.py").read_text())
    tables = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id in ("SECTIONS", "STAGE_SECTIONS"):
            tables[target.id] = ast.literal_eval(node.value)
    return {tables["SECTIONS"][s].partition(":")[0] for st in stage_names for s in tables["STAGE_SECTIONS"][st]}


def _below(prefix: str, lib: Path, package: str) -> list[str]:
    pkg = prefix.rstrip(".")
    if pkg != package and not pkg.startswith(package + "."):
        return []
    return [m for m in all_modules(pkg, lib) if m.startswith(prefix)] if module_file(pkg, lib) else [pkg]


# --------------------------------------------------------------------------- the CLI
def _lib_of(path: Path) -> Path:
    """The folder holding the package of the CLI file ``path``."""
    return next(p.parent for p in path.parents if p.name == PACKAGE)


def _in_cli(name: str, cli: str) -> bool:
    return name == cli or name.startswith(cli + ".")


def cli_modules(path: Path | None = None, lib: Path | None = None) -> dict[str, Path]:
    """``{module: file}`` of the CLI: its entry file ``path`` (the package's __init__.py or
    cli.py) and every module of the CLI that a module level reached imports, transitively:
    what ``facebias COMMAND`` runs before its handler is called."""
    path = path or _cli()
    lib = lib or _lib_of(path)
    cli = module_name(path, lib)
    found: dict[str, Path] = {}
    todo = [cli]
    while todo:
        name = todo.pop()
        file = module_file(name, lib)
        if name in found or file is None:
            continue
        found[name] = file
        top = imports_in(ast.parse(file.read_text()).body, name, file.name == "__init__.py", into_functions=False)
        todo += sorted(m for m in top.modules if _in_cli(m, cli))
    return found


def _from_cli(tree: ast.Module, current: str, is_package: bool, cli: str) -> dict[str, tuple[str, str]]:
    """``{alias: (module, name)}`` of the module-level ``from CLI-MODULE import name``."""
    package = current if is_package else current.rpartition(".")[0]
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if _in_cli(base, cli):
            out.update({a.asname or a.name: (base, a.name) for a in node.names if a.name != "*"})
    return out


class _CLI:
    """The CLI's modules parsed: top-level definitions by (module, name), the names each module
    imports from another, and the subcommands' handlers."""

    def __init__(self, path: Path | None = None, lib: Path | None = None):
        path = path or _cli()
        self.lib = lib or _lib_of(path)
        self.name = module_name(path, self.lib)
        self.files = cli_modules(path, self.lib)
        self.trees = {m: ast.parse(f.read_text()) for m, f in self.files.items()}
        self.defs = {(m, n.name): n for m, tree in self.trees.items() for n in tree.body
                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        self.imported = {m: _from_cli(tree, m, self.is_package(m), self.name) for m, tree in self.trees.items()}
        self.handlers: dict[str, tuple[str, str]] = {}
        for m, tree in self.trees.items():
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
                    assert len(names) == 1 and len(funcs) == 1, f"{m} {fn.name}: cannot pair {names} with {funcs}"
                    self.handlers[names[0]] = (m, funcs[0])

    def is_package(self, module: str) -> bool:
        return self.files[module].name == "__init__.py"

    def resolve(self, module: str, name: str) -> tuple[str, str] | None:
        """The top-level definition ``name`` refers to in CLI module ``module`` (following
        ``from`` imports between the CLI's modules), or None."""
        for _ in range(len(self.trees) + 1):
            if (module, name) in self.defs:
                return module, name
            if name not in self.imported.get(module, {}):
                return None
            module, name = self.imported[module][name]
        return None


def cli_handlers(path: Path | None = None) -> dict[str, str]:
    """``{subcommand: handler function}``: each function of the CLI's modules that calls
    ``add_parser("NAME")`` and ``set_defaults(func=HANDLER)``."""
    return {command: func for command, (_, func) in _CLI(path).handlers.items()}


def cli_imports(command: str, path: Path | None = None, lib: Path | None = None) -> Imports:
    """What ``facebias COMMAND`` imports: the module level of the CLI's modules, and the
    handler's body with every top-level function or class of the CLI it refers to
    (transitively, across the CLI's modules). The CLI's own modules are left out (they are
    the entry point's files, :func:`cli_modules`); the packages above the CLI are in."""
    cli = _CLI(path, lib)
    found = Imports()
    for m, tree in cli.trees.items():
        more = imports_in(tree.body, m, cli.is_package(m), into_functions=False)
        found.modules |= more.modules
        found.prefixes |= more.prefixes
        found.unresolved += more.unresolved
    assert command in cli.handlers, f"the CLI has no subcommand {command!r} (has {sorted(cli.handlers)})"
    start = cli.resolve(*cli.handlers[command])
    assert start is not None, f"the CLI's handler {cli.handlers[command]} is not defined in {sorted(cli.files)}"
    seen, todo = set(), [start]
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        more = imports_in([cli.defs[key]], key[0], cli.is_package(key[0]))
        found.modules |= more.modules
        found.prefixes |= more.prefixes
        found.unresolved += more.unresolved
        todo += [r for n in ast.walk(cli.defs[key]) if isinstance(n, ast.Name) and (r := cli.resolve(key[0], n.id))]
    found.modules = {m for m in found.modules if not _in_cli(m, cli.name)}
    if "." in cli.name:  # importing the CLI runs the packages above it
        found.modules.add(cli.name.rpartition(".")[0])
    return found


# --------------------------------------------------------------------------- the stages
@functools.lru_cache(maxsize=4)
def _spec(root: Path | None = None) -> dict:
    return yaml.safe_load(((root or _root()) / "dvc.yaml").read_text())


def stages(root: Path | None = None) -> dict[str, dict]:
    """``{name: stage}`` of ``root``'s dvc.yaml; a foreach stage is its ``do`` block."""
    spec = _spec(root)
    return {name: stage.get("do", stage) for name, stage in spec["stages"].items()}


def cmd_text(stage: dict, root: Path | None = None) -> str:
    """The stage's command with dvc.yaml's ``vars`` substituted."""
    spec = _spec(root)
    variables = {k: v for d in spec.get("vars", []) if isinstance(d, dict) for k, v in d.items()}
    cmd = stage["cmd"] if isinstance(stage["cmd"], str) else " && ".join(stage["cmd"])
    return re.sub(r"\$\{(\w+)\}", lambda m: str(variables.get(m.group(1), m.group(0))), cmd)


@dataclass
class Entry:
    what: str  # for messages
    files: set[Path]  # files the entry point itself runs (the notebook, the CLI's modules)
    imports: Imports


def entry_points(stage: dict, root: Path | None = None) -> list[Entry]:
    """What a stage's command runs: its notebooks, ``facebias COMMAND`` calls and
    ``python -m`` modules, each with the imports it makes."""
    root = root or _root()
    lib = root / "lib"
    cmd = cmd_text(stage, root)
    entries = []
    for rel in re.findall(r"(?<![\w/.])(notebooks/[\w/]+\.py)\b", cmd):
        path = root / rel
        assert path.is_file(), f"{rel} in cmd does not exist"
        entries.append(Entry(rel, {path}, imports_in([ast.parse(path.read_text())], None, False)))
    for command, args in re.findall(r"(?:^|&&|\||;)\s*facebias\s+([\w-]+)((?:[ \t]+[\w.-]+)*)", cmd):
        cli = _cli_file(lib)
        imports = cli_imports(command, cli, lib)
        if command == "check-params":  # the sections' config modules, named by the stage argument(s)
            imports.modules |= check_params_modules([a for a in args.split() if not a.startswith("-")], lib)
        entries.append(Entry(f"facebias {command}", set(cli_modules(cli, lib).values()), imports))
    for mod in re.findall(r"\bpython3?\s+-m\s+([\w.]+)", cmd):
        path = module_file(mod, lib)
        assert path is not None, f"python -m {mod}: no such module under lib/"
        entries.append(Entry(f"python -m {mod}", {path}, Imports(modules={mod})))
    return entries


def required(stage: dict, root: Path | None = None) -> tuple[dict[Path, str], list[str]]:
    """``{file: what reached it}`` for every file the stage runs, and the dynamic imports on
    the way that could not be read."""
    root = root or _root()
    files: dict[Path, str] = {}
    unresolved = []
    for entry in entry_points(stage, root):
        via: dict[Path, Path | None] = {}
        _, bad = closure(entry.imports, root / "lib", via=via)
        files.update({f: entry.what for f in entry.files})
        for f, parent in via.items():
            files.setdefault(f, entry.what if parent is None else str(parent.relative_to(root)))
        unresolved += [f"{entry.what}: {b}" for b in bad]
    return files, unresolved


def lib_deps(stage: dict, root: Path | None = None) -> list[Path]:
    """The stage's deps as paths (entries with ``${...}`` left out)."""
    root = root or _root()
    return [root / d for d in stage.get("deps", []) if isinstance(d, str) and "${" not in d]


def covered(path: Path, deps: Iterable[Path]) -> bool:
    """Whether ``path`` is one of ``deps`` or lies in a folder among them."""
    return any(path == d or d in path.parents for d in deps)


def expected_lib_deps(stage: dict, root: Path | None = None) -> list[str]:
    """The ``lib/`` deps the stage should list, relative to ``root``, sorted: every library
    file it runs, a folder instead of its files when the stage runs all of that folder's
    modules (never the package folder itself, which would rerun the stage on any change)."""
    root = root or _root()
    lib = root / "lib"
    pkg = lib / PACKAGE
    files = {f for f in required(stage, root)[0] if pkg in f.parents}
    folders = sorted({d for f in files for d in f.parents if pkg in d.parents}, key=lambda d: -len(d.parts))
    chosen = set(files)
    for d in folders:  # deepest first, so a folder can absorb the folders below it
        members = {p for p in d.rglob("*.py") if "__pycache__" not in p.parts}
        if members and members <= files:
            chosen = {p for p in chosen if d not in p.parents} | {d}
    return sorted(str(p.relative_to(root)) for p in chosen)


_STAGE = re.compile(r"^  ([\w@-]+):\s*(#.*)?$")
_DEPS = re.compile(r"^(\s+)deps:\s*(#.*)?$")
_ITEM = re.compile(r"^(\s+)- (\S+)\s*(#.*)?$")


def _is_lib(dep: str) -> bool:
    return dep.startswith("lib/")


def render_deps(text: str, root: Path | None = None) -> str:
    """dvc.yaml ``text`` with each stage's ``lib/`` deps replaced by :func:`expected_lib_deps`,
    placed where the first of them was (or after the stage's other deps); every other line
    as it was. Stages in :data:`EXEMPT` are left alone.

    Raises
    ------
    ValueError
        If a stage with deps has no ``deps:`` list the text layout can be read from.
    """
    root = root or _root()
    spec = stages(root)
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    stage, done, i = None, set(), 0
    while i < len(lines):
        line = lines[i]
        m = _STAGE.match(line)
        if m:
            stage = m.group(1)
        d = _DEPS.match(line)
        out.append(line)
        i += 1
        if not (d and stage in spec and stage not in EXEMPT and stage not in done):
            continue
        block = []
        while i < len(lines) and (it := _ITEM.match(lines[i])) and len(it.group(1)) > len(d.group(1)):
            block.append((lines[i], it.group(2)))
            i += 1
        indent = _ITEM.match(block[0][0]).group(1) if block else d.group(1) + "  "
        new = [f"{indent}- {p}\n" for p in expected_lib_deps(spec[stage], root)]
        first = next((k for k, (_, dep) in enumerate(block) if _is_lib(dep)), len(block))
        before = [ln for ln, dep in block[:first] if not _is_lib(dep)]
        after = [ln for ln, dep in block[first:] if not _is_lib(dep)]
        out += before + new + after
        done.add(stage)
    missing = [s for s, st in spec.items() if s not in EXEMPT and s not in done and st.get("deps")]
    if missing:
        raise ValueError(f"dvc.yaml: no readable deps list for stage(s) {missing}")
    return "".join(out)


def write_deps(root: Path | None = None, check: bool = False) -> list[str]:
    """Rewrite ``root``'s dvc.yaml deps (:func:`render_deps`); with ``check``, only compare.

    Parameters
    ----------
    root : Path, optional
        The repository (default: the one this package is installed from).
    check : bool, default False
        Report, write nothing.

    Returns
    -------
    list of str
        The stages whose ``lib/`` deps differ(ed) from what the analysis gives.
    """
    root = root or _root()
    spec = stages(root)
    changed = [s for s, st in spec.items() if s not in EXEMPT and st.get("deps") is not None and
               sorted(d for d in st["deps"] if isinstance(d, str) and _is_lib(d)) != expected_lib_deps(st, root)]
    if changed and not check:
        from facebias.io import write_text_atomic

        path = root / "dvc.yaml"
        write_text_atomic(path, render_deps(path.read_text(), root))
        _spec.cache_clear()
    return changed
