"""Every module of ``lib/facebias`` runs the examples in its docstrings (numpydoc
``Examples`` sections) as doctests, one test per module; a module without examples passes.

The modules are walked with :mod:`pkgutil` rather than collected with pytest's
``--doctest-modules``, which would also collect the notebooks.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import facebias

MODULES = sorted(m.name for m in pkgutil.walk_packages(facebias.__path__, prefix="facebias."))
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failed = sum(runner.run(test, out=report.write).failed
                 for test in doctest.DocTestFinder().find(module, name))
    assert failed == 0, report.getvalue()
