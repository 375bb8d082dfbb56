"""Claims rendered for people: HTML rows for ``reports/index.html`` and a Markdown conclusion
for each notebook (the README's table is :mod:`facebias.claims.readme`). Everything shown is
computed from :class:`~facebias.claims.core.ClaimResult` objects; nothing here types a number."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from facebias.claims.core import ClaimResult, Sign, _ok

__all__ = ["format_value", "cells_text", "claims_html", "claims_markdown"]

_VERDICT_CLASS = {"agrees": "agree", "partly": "partly", "disagrees": "disagree", "not comparable": "nc",
                  "unresolved": "unres", "not run": "missing"}


def format_value(v: Any, fmt: str = ".3g", unit: str = "") -> str:
    """A measured or published value as text: a number with ``fmt`` and ``unit``, an interval
    ``[lo, hi]``, or "unresolved" for None / NaN."""
    if isinstance(v, tuple | list) and len(v) == 2:
        return f"[{format_value(v[0], fmt)}, {format_value(v[1], fmt)}]{unit}"
    if not _ok(v):
        return "unresolved" if v is None or isinstance(v, float) else str(v)
    return format(v, fmt) + unit


def _ours(row: dict[str, Any], fmt: str, unit: str) -> str:
    if row["n"] == 0:
        return "unresolved"
    if row["n_seeds"] == 1:
        return format_value(row["mean"], fmt, unit)
    text = (f"{format_value(row['mean'], fmt, unit)} [{format_value(row['min'], fmt)} … "
            f"{format_value(row['max'], fmt)}]")
    return text + ("" if row["n"] == row["n_seeds"] else f" ({row['n']} of {row['n_seeds']} seeds resolved)")


def cells_text(result: ClaimResult) -> list[tuple[str, str, str, str]]:
    """(cell, paper, ours, holds) per cell; ours is the mean [min … max] over seeds when there
    are several, holds the share of seeds whose check of the cell passes."""
    c = result.claim
    out = []
    for row in result.cell_rows():
        if row["paper"] is None:
            paper = "—"
        elif isinstance(c.rule, Sign) and c.rule.expected is None and _ok(row["paper"]) and abs(row["paper"]) == 1:
            paper = "+" if row["paper"] > 0 else "−"  # a sign the paper states, not a number
        else:
            paper = format_value(row["paper"], c.fmt, c.unit)
        holds = "" if row["holds"] is None else (
            "yes" if row["holds"] == 1 else "no" if row["holds"] == 0 else f"{row['holds']:.0%} of seeds")
        out.append((row["cell"], paper, _ours(row, c.fmt, c.unit), holds))
    return out


def _seeds_note(result: ClaimResult) -> str:
    m = result.measured
    if m is None or m.seeds is None:
        return "one draw" if m is not None else ""
    s = list(m.seeds)
    if not s:
        return "no world seeds in the metrics"
    span = f"{s[0]}–{s[-1]}" if s == list(range(s[0], s[0] + len(s))) else ", ".join(map(str, s))
    return f"{len(s)} world seeds ({span})"


def claims_html(results: Sequence[ClaimResult]) -> str:
    """One HTML table: per claim, the quote and where, our statistic and rule, every cell
    (paper / ours / holds), the verdict with its detail and the kind with its reason."""
    esc = html.escape
    rows = []
    for r in results:
        c = r.claim
        cells = cells_text(r)
        table = ""
        if cells:
            body = "".join(f"<tr><td>{esc(a)}</td><td>{esc(b)}</td><td>{esc(d)}</td><td>{esc(e)}</td></tr>"
                           for a, b, d, e in cells)
            table = ('<table class="cells"><tr><th>cell</th><th>paper</th><th>ours</th><th>holds</th></tr>'
                     + body + "</table>")
        calibrated = (f"<br><b>calibrated:</b> <code>{esc(', '.join(c.calibrated))}</code>" if c.calibrated else "")
        reads = "<br>".join(esc(x) for x in r.reads)
        rows.append(
            f'<tr id="{esc(c.key)}"><td><q>{esc(c.quote)}</q><br><span class="prov">{esc(c.where)}</span></td>'
            f"<td>{esc(c.statistic)}<br><span class=\"prov\">rule: {esc(c.rule.describe())}; {esc(_seeds_note(r))}"
            f"</span>{table}<span class=\"prov\">{reads}</span></td>"
            f'<td class="{_VERDICT_CLASS[r.verdict]}"><b>{esc(r.verdict)}</b><br>{esc(r.detail)}</td>'
            f"<td><b>{esc(c.kind.value)}</b><br>{esc(c.evidence)}{calibrated}</td></tr>")
    return ('<table class="claims"><tr><th>The paper says</th><th>We measure</th><th>Verdict</th>'
            "<th>Kind of evidence</th></tr>" + "".join(rows) + "</table>")


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def claims_markdown(results: Sequence[ClaimResult]) -> str:
    """A notebook's conclusion: one Markdown table of claims with verdict and kind, then each
    claim's cells (paper / ours / holds)."""
    lines = ["| claim | where | backend | verdict | kind |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| {_md(r.claim.quote)} | {_md(r.claim.where)} | {r.claim.backend} "
                     f"| **{r.verdict}** ({_md(r.detail)}) | {r.claim.kind.value} |")
    for r in results:
        cells = cells_text(r)
        if not cells:
            continue
        lines += ["", f"**`{r.claim.key}`** ({_md(r.claim.where)}; backend {r.claim.backend}) — "
                  f"{_md(r.claim.statistic)} (rule: {_md(r.claim.rule.describe())}; {_seeds_note(r)})", "",
                  "| cell | paper | ours | holds |", "| --- | --- | --- | --- |"]
        lines += [f"| {_md(a)} | {_md(b)} | {_md(d)} | {_md(e)} |" for a, b, d, e in cells]
    return "\n".join(lines) + "\n"


def _short(quote: str, n: int = 110) -> str:
    q = re.sub(r"\s+", " ", quote).strip()
    return q if len(q) <= n else q[: q.rfind(" ", 0, n)] + " …"
