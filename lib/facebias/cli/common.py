"""What every ``facebias`` command shares: the program name, :class:`InputError` (bad input as
one line ``facebias: error: SOURCE: MESSAGE``, exit code 2), the wording of library errors,
writing to stdout, and the checks of an output path."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

__all__ = ["PROG", "InputError"]

PROG = "facebias"


#: numpy scalar reprs (numpy >= 2) in library messages: np.float64(0.0), np.str_('a'), np.True_
_NP_SCALAR = re.compile(r"\bnp\.(?:float|int|uint|complex|longdouble|str_|bytes_)\w*\(([^()]*)\)")
_NP_BOOL = re.compile(r"\bnp\.(True|False)_\b")


class InputError(Exception):
    """Bad user input: printed as ``facebias: error: SOURCE: MESSAGE``, exit code 2."""

    def __init__(self, source: str, message: str):
        self.source = source
        # one line; numpy scalars as plain numbers: np.float64(2.0) -> 2.0
        self.message = _NP_BOOL.sub(r"\1", _NP_SCALAR.sub(r"\1", " ".join(str(message).split())))
        super().__init__(f"{source}: {self.message}")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _problem(exc: BaseException, source: str) -> str:
    """A library's ``ValueError``/``KeyError`` message without its class name and without
    the ``SOURCE: `` prefix the error line already has; other errors as :func:`_describe`."""
    if type(exc) not in (ValueError, KeyError, FileNotFoundError) or not exc.args:
        return _describe(exc)
    return " ".join(str(exc.args[0]).split()).removeprefix(f"{source}: ")


def _check_out_file(out: str) -> None:
    """Raise ``InputError`` when ``out`` cannot be a file: a folder, or under a file."""
    p = Path(out)
    if p.is_dir():
        raise InputError(out, "is a folder; give the path of the file to write")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(out, f"{parent} is a file, not a folder")
            break


def _check_out_folder(out: str) -> None:
    """Raise ``InputError`` when ``out`` cannot be a folder: a file, or under a file."""
    p = Path(out)
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise InputError(out, "is a file, not a folder" if q == p else f"{q} is a file, not a folder")
            break


def _write(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `facebias metrics ... | head`: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
