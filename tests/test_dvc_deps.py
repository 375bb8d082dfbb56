"""dvc.yaml: every stage depends on the library code it runs (issue 16), not on all of it, and
its ``lib/`` deps are exactly what :mod:`facebias.dvcdeps` derives from the stage's imports
(``facebias deps`` writes them; the analysis itself is tested here on small packages)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from facebias.dvcdeps import (
    EXEMPT,
    PACKAGE,
    Imports,
    cli_handlers,
    cli_imports,
    closure,
    covered,
    entry_points,
    expected_lib_deps,
    lib_deps,
    render_deps,
    required,
    stages,
    write_deps,
)

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"


# --------------------------------------------------------------------------- tests
def test_every_stage_runs_code_we_can_analyse():
    """Each stage's cmd names a notebook, a `facebias` subcommand or a `python -m` module (a new
    kind of cmd must be taught to facebias.dvcdeps, not slip through), and every dynamic import
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


def test_committed_deps_are_what_facebias_deps_writes():
    """Every stage's lib/ deps equal the import analysis exactly (no stale extra module, no
    folder broader than what the stage runs): `facebias deps` would change nothing."""
    assert write_deps(ROOT, check=True) == [], "run `make deps` (facebias deps) and commit dvc.yaml"
    assert render_deps((ROOT / "dvc.yaml").read_text(), ROOT) == (ROOT / "dvc.yaml").read_text()


def test_render_deps_rewrites_only_the_lib_entries(tmp_path):
    """On a small repository: a stale module and a too-broad folder are replaced by what the
    notebook imports (a folder where every module of it runs), other deps, comments and the
    exempt stage stay as written, and a second pass changes nothing."""
    _write(tmp_path, {
        "lib/facebias/__init__.py": "",
        "lib/facebias/a.py": "from facebias import sub\n",
        "lib/facebias/unused.py": "",
        "lib/facebias/sub/__init__.py": "from facebias.sub import x, y\n",
        "lib/facebias/sub/x.py": "", "lib/facebias/sub/y.py": "",
        "lib/facebias/other/__init__.py": "", "lib/facebias/other/z.py": "", "lib/facebias/other/w.py": "",
        "lib/facebias/cli.py": "",
        "notebooks/n.py": "from facebias import a\nfrom facebias.other import z\n",
    })
    text = ("stages:\n"
            "  one:  # a comment\n"
            "    cmd: papermill notebooks/n.py out.ipynb\n"
            "    deps:\n"
            "      - notebooks/n.py\n"
            "      - lib/facebias/unused.py\n"
            "      - lib/facebias/other\n"
            "      - data/x.csv  # kept\n"
            "    outs:\n"
            "      - out.ipynb\n"
            "  stylegan2_weights:\n"
            "    cmd: python -m facebias.a\n"
            "    deps:\n"
            "      - lib/facebias/unused.py\n")
    (tmp_path / "dvc.yaml").write_text(text)
    assert write_deps(tmp_path, check=True) == ["one"]
    assert (tmp_path / "dvc.yaml").read_text() == text  # --check writes nothing
    assert write_deps(tmp_path) == ["one"]
    got = (tmp_path / "dvc.yaml").read_text()
    assert got == text.replace(
        "      - lib/facebias/unused.py\n      - lib/facebias/other\n",
        "      - lib/facebias/__init__.py\n      - lib/facebias/a.py\n      - lib/facebias/other/__init__.py\n"
        "      - lib/facebias/other/z.py\n      - lib/facebias/sub\n", 1)
    assert yaml.safe_load(got)["stages"]["stylegan2_weights"]["deps"] == ["lib/facebias/unused.py"]  # exempt
    assert write_deps(tmp_path) == [] and (tmp_path / "dvc.yaml").read_text() == got
    stage = stages(tmp_path)["one"]
    assert expected_lib_deps(stage, tmp_path) == [d for d in stage["deps"] if d.startswith("lib/")]
    with pytest.raises(ValueError, match="no readable deps list"):
        render_deps(got.replace("    deps:\n", "    deps: [notebooks/n.py]\n    x:\n", 1), tmp_path)


def test_check_params_counts_the_config_modules_of_the_stage_it_names():
    """`facebias check-params STAGE` imports its sections' config modules by name (a dynamic
    import): the analysis reads them from facebias.sections' tables, per stage, so the stage's
    deps hold them and no other study's."""
    from facebias.dvcdeps import check_params_modules
    from facebias.sections import SECTIONS, STAGE_SECTIONS

    lib = Path(__file__).resolve().parents[1] / "lib"
    assert check_params_modules(["rapid"], lib) == {"facebias.studies.rapid.config", "facebias.worlds.rapid"}
    assert check_params_modules(["hcic_dcgan"], lib) == {"facebias.studies.hcic.config"}
    for stage, sections in STAGE_SECTIONS.items():  # the tables the analysis reads are the ones run
        assert check_params_modules([stage], lib) == {SECTIONS[s].partition(":")[0] for s in sections}
