"""Study configuration: one declarative base for every ``params.yaml`` section.

A section is a frozen dataclass deriving from :class:`Section`. Each field names its default
and its check with :func:`param`; the base applies the checks in field order (each check
returns the value in its Python type, e.g. a YAML list becomes a tuple) and refuses unknown
keys by name. Checks that relate several fields go in :meth:`Section.check`. A backend
section (``hcic_dcgan``) derives from its study's section and overrides only the fields
whose defaults differ, and its ``section`` name.

Every check is a callable ``check(value, name) -> value`` that raises ``ValueError`` naming
the key (``name``, e.g. ``"batest.bins"``) and the value it got. ``bool`` is never a number
here (YAML ``true``).

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy(Section):
...     section = "toy"
...     n_boot: int = param(200, integer(1))
...     ci: float = param(0.95, number(0, 1, open_low=True, open_high=True))
...     fmr: tuple = param((1e-3, 1e-4), listof(number(0, 1)))
>>> Toy.from_params({"fmr": [0.01]})
Toy(n_boot=200, ci=0.95, fmr=(0.01,))
>>> Toy.from_params({"n_boot": 0})
Traceback (most recent call last):
...
ValueError: toy.n_boot must be >= 1, got 0
>>> Toy.from_params({"nboot": 10})
Traceback (most recent call last):
...
ValueError: toy: unknown key(s) ['nboot']; known keys are ['ci', 'fmr', 'n_boot']
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

__all__ = ["Check", "Section", "config_from_params", "flag", "integer", "interval", "listof",
           "number", "optional", "param", "param_bool", "param_float", "param_int",
           "param_interval", "param_list", "param_str", "text"]

#: A field check: ``check(value, name) -> value`` (raises ``ValueError`` naming ``name``).
Check = Callable[[Any, str], Any]
_CHECK = "facebias.check"


# --------------------------------------------------------------------------- the typed values
def param_int(value: Any, name: str, minimum: int | None = None) -> int:
    """``value`` as an ``int`` (a YAML integer; float, str and bool raise), ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def param_float(value: Any, name: str, low: float | None = None, high: float | None = None,
                open_low: bool = False, open_high: bool = False) -> float:
    """``value`` (a YAML int or float) as a ``float`` in ``[low, high]``; ``open_low`` /
    ``open_high`` exclude that end. NaN, str and bool raise."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    below = low is not None and (v <= low if open_low else v < low)
    above = high is not None and (v >= high if open_high else v > high)
    if math.isnan(v) or below or above:
        lo, hi = ("-inf" if low is None else low), ("inf" if high is None else high)
        interval = f"{'(' if open_low else '['}{lo}, {hi}{')' if open_high else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return v


def param_str(value: Any, name: str, choices: tuple[str, ...] | None = None) -> str:
    """``value`` as a ``str``, one of ``choices`` when given."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    if choices is not None and value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def param_list(value: Any, name: str, item: Check, min_len: int = 1) -> tuple:
    """``value`` (a YAML list) as a tuple of ``item(v, f"{name}[i]")`` of its elements, with
    at least ``min_len`` elements."""
    if not isinstance(value, list | tuple):
        raise ValueError(f"{name} must be a list, got {value!r}")
    if len(value) < min_len:
        raise ValueError(f"{name} needs at least {min_len} value(s), got {list(value)!r}")
    return tuple(item(v, f"{name}[{i}]") for i, v in enumerate(value))


def param_bool(value: Any, name: str) -> bool:
    """``value`` as a ``bool``: only YAML ``true`` / ``false`` (0, 1 and strings raise)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def param_interval(value: Any, name: str, item: Check = param_float) -> tuple:
    """``value`` (a YAML list ``[lo, hi]``) as a tuple of two ``item``-checked values with
    ``lo < hi``."""
    c = param_list(value, name, item, 2)
    if len(c) != 2 or not c[0] < c[1]:
        raise ValueError(f"{name} must be [lo, hi] with lo < hi, got {list(c)}")
    return c


# --------------------------------------------------------------------------- check constructors
def integer(minimum: int | None = None) -> Check:
    """An integer ``>= minimum``."""
    return partial(param_int, minimum=minimum)


def number(low: float | None = None, high: float | None = None, open_low: bool = False,
           open_high: bool = False) -> Check:
    """A number in ``[low, high]`` (``open_*`` exclude an end), returned as ``float``."""
    return partial(param_float, low=low, high=high, open_low=open_low, open_high=open_high)


def text(*choices: str) -> Check:
    """A string, one of ``choices`` when any are given."""
    return partial(param_str, choices=tuple(choices) or None)


def flag(value: Any, name: str) -> bool:
    """YAML ``true`` / ``false`` only."""
    return param_bool(value, name)


def listof(item: Check, min_len: int = 1) -> Check:
    """A list of at least ``min_len`` ``item``-checked values, returned as a tuple."""
    return partial(param_list, item=item, min_len=min_len)


def interval(item: Check = param_float) -> Check:
    """``[lo, hi]`` of two ``item``-checked values with ``lo < hi``, returned as a tuple."""
    return partial(param_interval, item=item)


#: A rate or probability strictly between 0 and 1 (an FMR target, a level, a coverage).
RATE: Check = number(0, 1, open_low=True, open_high=True)


def model_spec(value: Any, name: str) -> str:
    """A model spec (:mod:`facebias.faces.specs`: ``sface``, ``dlib``, ``onnx:PATH?...``,
    ``torch:MODULE:FUNCTION?...``), syntax checked (files are opened when the study starts)."""
    from facebias.faces.specs import parse_model_spec

    try:
        return parse_model_spec(param_str(value, name)).text
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def model_specs(min_len: int = 1) -> Check:
    """A list of :func:`model_spec` values whose system names (:func:`facebias.faces.specs.model_name`)
    differ, returned as a tuple."""
    def checked(value: Any, name: str) -> tuple:
        from facebias.faces.specs import model_name

        specs = param_list(value, name, model_spec, min_len)
        names = [model_name(s) for s in specs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"{name}: two models named {twice[0]!r}; give one of them ?name=...")
        return specs
    return checked


def optional(check: Check) -> Check:
    """``None`` (YAML ``null``) or a value that passes ``check``."""
    def checked(value: Any, name: str) -> Any:
        return None if value is None else check(value, name)
    return checked


def param(default: Any = dataclasses.MISSING, check: Check | None = None, *,
          factory: Callable[[], Any] | None = None) -> Any:
    """A :class:`Section` field: its default (or a ``factory`` for a mutable one) and its
    check (``None``: taken as given)."""
    meta = {_CHECK: check} if check is not None else {}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# --------------------------------------------------------------------------- the base
def config_from_params(cls: type, params: Any, section: str) -> Any:
    """Build the dataclass ``cls`` from a ``params.yaml`` section (missing keys take the
    defaults); an unknown key raises ``ValueError`` naming the section and the known keys.

    Parameters
    ----------
    cls : type
        A dataclass; its ``__post_init__`` validates the values.
    params : dict
        The section's keys and values.
    section : str
        The section's name, for error messages.

    Returns
    -------
    Any
        ``cls(**params)``.

    Raises
    ------
    ValueError
        If ``params`` is not a dict or has a key that is not a field of ``cls``.
    """
    if not isinstance(params, dict):
        raise ValueError(f"{section}: expected a mapping, got {type(params).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - known, key=str)
    if unknown:
        raise ValueError(f"{section}: unknown key(s) {unknown}; known keys are {sorted(known)}")
    return cls(**params)


@dataclasses.dataclass(frozen=True)
class Section:
    """Base of every ``params.yaml`` section's config (a frozen dataclass).

    Subclasses set ``section`` (the ``params.yaml`` key, used in error messages) and declare
    their fields with :func:`param`; override :meth:`check` for checks across fields.
    """

    section = ""  # not annotated: a class attribute, not a field (nor a ClassVar entry in __dataclass_fields__)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check = f.metadata.get(_CHECK)
            if check is not None:
                object.__setattr__(self, f.name, check(getattr(self, f.name), f"{self.section}.{f.name}"))
        self.check()

    def check(self) -> None:
        """Checks that relate several fields (after each field's own); raise ``ValueError``."""

    def _set(self, key: str, value: Any) -> None:
        """Replace a field's value while checking (the dataclass is frozen)."""
        object.__setattr__(self, key, value)

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None) -> Any:
        """Build from the section's ``params.yaml`` mapping (``None``: every default).

        Missing keys take the defaults; an unknown key or a mistyped or out-of-range value
        raises ``ValueError`` naming the key.
        """
        return config_from_params(cls, dict(params or {}), cls.section)
