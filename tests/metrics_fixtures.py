"""Fake metrics files for tests: a partial dict completed to its schema (facebias.schema)."""

from __future__ import annotations

import json
from typing import Any

from facebias.schema import SCHEMAS, kind_of


def _fill(node: Any, parts: list[str]) -> None:
    """Create the key path ``parts`` under ``node`` (``*``: under every existing child, or one
    child ``"x"`` where there is none), with 0 at an absent leaf."""
    head, rest = parts[0], parts[1:]
    if head == "*" and not node:
        node["x"] = {} if rest else 0
    children = (list(node.values()) if head == "*" and isinstance(node, dict) else
                node if head == "*" else [node.setdefault(head, {} if rest else 0)])
    for child in children:
        if rest and isinstance(child, dict | list):
            _fill(child, rest)


def valid(name: str, partial: dict) -> dict:
    """``partial`` completed to the schema of the metrics file ``name`` and checked: absent
    required keys and declared paths become 0 / {}; paths under an absent optional key stay
    absent."""
    schema = SCHEMAS[kind_of(name)]
    out = json.loads(json.dumps(partial))
    for p in schema.paths:
        if not schema._absent_optional(out, p):
            _fill(out, p.split("/"))
    for k in schema.required:
        out.setdefault(k, 0)
    schema.check(out, name)
    return out
