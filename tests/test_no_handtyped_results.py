"""Issue 28: no measured number typed by hand in the README's prose or a notebook's markdown.

Results live on ``reports/index.html`` and in the generated evidence tables (the README's and
each ``docs/papers/`` page's); prose says what is computed and how. This test reads the prose a
reviewer reads — README.md outside fenced code, outside the generated claims blocks and outside
the sections listed in :data:`EXEMPT_SECTIONS`; the pages under ``docs/`` and ``docs/papers/``
it points to, read the same way; every markdown cell of ``notebooks/*.py`` — and fails on every number that looks like a result (a decimal, a
percentage, a ratio such as ``2.5x`` or a number in scientific notation) unless it is

- a parameter: equal, at its printed precision, to a numeric leaf of ``params.yaml``;
- the paper's: equal to a number in a registered claim's quote, its ``paper_values`` or its
  declared rule bounds (:mod:`facebias.claims.registry`);
- a reference, not a value: preceded by one of :data:`REFERENCE_WORDS` (``Sec. 3.4``);
- listed in :data:`ALLOWED` with the text it must appear in and a reason.

Integers without a unit (counts, sizes, seeds) are not checked. ``docs/specs/`` is not read:
it restates the papers (their numbers, in our words) and holds no measurement.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
import yaml

from facebias.claims.readme import README_BEGIN, README_END, block_filters

ROOT = Path(__file__).resolve().parents[1]

#: Sections (heading line, exactly) of the README or a docs page whose numbers are not study
#: results, with why. A section covers its subsections.
EXEMPT_SECTIONS: dict[str, str] = {
    "## Quick start": "build and test timings, each labelled with the date and commit it was measured on",
    "## The headline columns": "definitions of the `dvc metrics show` columns, no measurements "
                               "(docs/results.md)",
    "# Performance": "benchmark speeds of the code, each with the command that measures it (`make bench`, "
                     "`make gpu-bench`), not study results (docs/performance.md)",
    "## Layout": "the file tree",
}

#: Words after which a number names a part of a paper or a piece of software, not a value.
REFERENCE_WORDS = ("Sec.", "Section", "section", "Fig.", "Figs", "Figs.", "Table", "Tables", "Supp.", "Alg.",
                   "Algorithm", "Python", "torch", "pandas", "numpy", "NumPy", "version")


@dataclass(frozen=True)
class Allowed:
    """The number ``number`` (as printed, without sign) allowed on a line where the regular
    expression ``context`` matches, for ``reason``."""

    number: str
    context: str
    reason: str


#: Numbers that are neither parameters nor the papers' but are not results either.
ALLOWED: tuple[Allowed, ...] = (
    Allowed("0.363", r"SFace|cosine", "SFace's published cosine match threshold (OpenCV model zoo): a "
                                      "constant of the model, used as its fixed threshold"),
    Allowed("0.82", r"0\.6²/2 = 0\.82", "dlib's published distance threshold 0.6 written as a cosine on "
                                       "unit vectors: arithmetic on a constant"),
    Allowed("127.5", r"mean|std", "the default input normalisation of a model spec, (pixel - 127.5) / "
                                  "127.5: a setting"),
    Allowed("95", r"95 ?%[^.;]*\b(interval|CI)", "the confidence level of an interval: a setting"),
    Allowed("3.14159", r"tan\(fov", "EG3D's released focal-length formula: a constant of its code"),
    Allowed("1.414", r"tan\(fov", "EG3D's released focal-length formula: a constant of its code"),
    Allowed("18.837", r"18\.837° gives f", "EG3D's FFHQ field of view (gen_samples.py's default): a setting"),
    Allowed("4.26339", r"18\.837° gives f", "the focal length the released formula gives for it: arithmetic"),
    Allowed("4.2647", r"one official script hard-codes", "a constant of EG3D's released gen_videos.py"),
    Allowed("1e-10", r"transmittance", "EG3D's ray marcher's epsilon: a constant of its code"),
)

_INT = r"\d{1,3}(?:,\d{3})+|\d+"
NUMBER = re.compile(
    rf"(?<![\w.])(?P<sign>[-+−±]?)(?P<num>(?:{_INT})(?:\.\d+)*(?:[eE][-+−]?\d+)?)"
    r"(?P<suffix>\s?%|[x×](?![\w]))?")


@dataclass(frozen=True)
class Hit:
    file: str
    line: int
    text: str
    number: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.number!r} in: {self.text.strip()}"


def result_numbers(line: str) -> Iterator[tuple[str, str, bool, str]]:
    """(number as printed, digits, is a percentage, text before it) for every result-like
    number of ``line``: decimals, percentages, ratios and scientific notation. Dotted
    versions (``2.13.0``) and integers without a unit are skipped."""
    for m in NUMBER.finditer(line):
        num, suffix = m.group("num"), (m.group("suffix") or "").strip()
        if num.count(".") > 1:
            continue
        decimal = "." in num or "e" in num.lower()
        if not (decimal or suffix):
            continue
        yield m.group(0).strip(), num.replace(",", "").replace("−", "-"), suffix == "%", line[: m.start()]


def _leaves(node) -> Iterator[float]:
    if isinstance(node, bool):
        return
    if isinstance(node, int | float):
        if math.isfinite(node):
            yield float(node)
    elif isinstance(node, dict):
        for v in node.values():
            yield from _leaves(v)
    elif isinstance(node, list | tuple):
        for v in node:
            yield from _leaves(v)


def params_values(path: Path = ROOT / "params.yaml") -> set[float]:
    """Every numeric leaf of params.yaml (comments are not values)."""
    return set(_leaves(yaml.safe_load(path.read_text(encoding="utf-8"))))


@dataclass(frozen=True)
class Sources:
    """Where an allowed number may come from: ``params`` (a percentage matches a fraction:
    ``20%`` is 0.2) and ``paper`` (a percentage matches either way: papers give both)."""

    params: frozenset[float]
    paper: frozenset[float] = frozenset()


def _registered_claims() -> list:
    """Every claim of the registry; while a study's registry module is not written yet, the
    claims of the modules that import."""
    from facebias.claims.registry import STUDIES, all_claims

    try:
        return list(all_claims())
    except ImportError:
        claims = []
        for s in STUDIES:
            try:
                claims += list(import_module(f"facebias.claims.{s}").CLAIMS)
            except ImportError:
                continue
        return claims


def paper_values() -> set[float]:
    """Numbers the papers state, as the claims registry records them: numbers in each quote,
    its paper_values and its rule's declared bounds."""
    out: set[float] = set()
    for c in _registered_claims():
        for _, digits, _, _ in result_numbers(c.quote):
            out.add(float(digits))
        for m in re.finditer(_INT, c.quote):
            out.add(float(m.group(0).replace(",", "")))
        out |= set(_leaves(dict(c.paper_values)))
        out |= {float(v) for k, v in vars(c.rule).items() if k in ("lo", "hi", "pct", "abs") and v is not None}
    return out


def _decimals(digits: str) -> int:
    mant = digits.lower().split("e")[0]
    return len(mant.split(".")[1]) if "." in mant else 0


def _equal(digits: str, value: float) -> bool:
    """``digits`` is ``value`` printed at the precision of ``digits`` (signs ignored: prose
    writes them apart); scientific notation compares the numbers."""
    x, v = abs(float(digits)), abs(value)
    if "e" in digits.lower():
        return math.isclose(x, v, rel_tol=1e-9)
    d = _decimals(digits)
    return f"{v:.{d}f}" == f"{x:.{d}f}"


def matches(digits: str, pct: bool, sources: Sources) -> bool:
    """The printed number is a parameter or a paper's number (see :class:`Sources`)."""
    if any(_equal(digits, 100 * v if pct else v) for v in sources.params):
        return True
    return any(_equal(digits, v) or (pct and _equal(digits, 100 * v)) for v in sources.paper)


def _reference(before: str) -> bool:
    """The text before a number ends with a reference word (``Sec. 3.4``), a section sign
    (``§1.4``), or either followed by the start of a range (``§1.4–``, ``Sec. 3.4–``)."""
    words = before.split()
    if not words or not before.endswith((" ", "§", "–", "-")):
        return False
    last = words[-1]
    if last.endswith("§") or re.fullmatch(r"§[\d.]+[–-]", last):
        return True
    if re.fullmatch(r"[\d.]+[–-]", last):
        return len(words) > 1 and words[-2].strip("(") in REFERENCE_WORDS
    return before.endswith(" ") and last.strip("(") in REFERENCE_WORDS


def check_lines(file: str, lines: Iterable[tuple[int, str]], sources: Sources,
                allowed: Iterable[Allowed] = ALLOWED) -> list[Hit]:
    """Every result-like number of ``lines`` ((line number, text)) that nothing allows. An
    :class:`Allowed` context may match the line or the end of the line before (wrapped prose)."""
    allowed = tuple(allowed)
    hits = []
    prev = ""
    for no, text in lines:
        window, prev = f"{prev} {text}", text
        for printed, digits, pct, before in result_numbers(text):
            if _reference(before):
                continue
            if any(a.number == digits.lstrip("+-") and re.search(a.context, window) for a in allowed):
                continue
            if matches(digits, pct, sources):
                continue
            hits.append(Hit(file, no, text, printed))
    return hits


# ------------------------------------------------------------------ what is read
def _heading(line: str) -> tuple[int, str] | None:
    m = re.match(r"(#{1,6}) \S", line)
    return (len(m.group(1)), line.strip()) if m else None


def readme_prose(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of the README's checked prose: outside fenced code, outside the
    generated claims blocks (filtered ones too) and outside :data:`EXEMPT_SECTIONS` (and their
    subsections)."""
    fenced = generated = False
    stack: list[tuple[int, str]] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not fenced and block_filters(line) is not None:
            generated = True
            continue
        if line.strip() == README_END:
            generated = False
            continue
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or generated:
            continue
        h = _heading(line)
        if h:
            stack = [s for s in stack if s[0] < h[0]] + [h]
        if any(s[1] in EXEMPT_SECTIONS for s in stack):
            continue
        yield no, line


def notebook_markdown(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every markdown cell of a jupytext percent source."""
    in_md = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("# %%"):
            in_md = "[markdown]" in line
            continue
        if in_md:
            if line.startswith("#"):
                yield no, line[1:]
            elif line.strip():
                in_md = False


NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.py"))
DOCS = sorted(str(p.relative_to(ROOT / "docs")) for pattern in ("*.md", "papers/*.md")
              for p in (ROOT / "docs").glob(pattern))


@pytest.fixture(scope="module")
def sources() -> Sources:
    return Sources(frozenset(params_values()), frozenset(paper_values()))


def test_exempt_sections_exist():
    """Every exempt heading is in the README or a docs page (a renamed section must not
    silently widen the check's hole, nor leave a stale entry)."""
    pages = [ROOT / "README.md"] + [ROOT / "docs" / d for d in DOCS]
    headings = {_heading(ln)[1] for page in pages for ln in page.read_text(encoding="utf-8").splitlines()
                if _heading(ln)}
    assert set(EXEMPT_SECTIONS) <= headings, set(EXEMPT_SECTIONS) - headings
    assert any(d.startswith("papers/") for d in DOCS)  # the per-paper pages are read


def test_readme_has_one_generated_claims_block():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines.count(README_BEGIN) == 1 and lines.count(README_END) == 1
    assert lines.index(README_BEGIN) < lines.index(README_END)


def test_readme_prose_has_no_handtyped_result(sources):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    hits = check_lines("README.md", readme_prose(text), sources)
    assert not hits, "numbers no metrics value produced (render them from the metrics, or drop them):\n" + \
        "\n".join(map(str, hits))


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_markdown_has_no_handtyped_result(notebook, sources):
    text = (ROOT / "notebooks" / notebook).read_text(encoding="utf-8")
    hits = check_lines(f"notebooks/{notebook}", notebook_markdown(text), sources)
    assert not hits, "numbers no metrics value produced (print them from the metrics, or drop them):\n" + \
        "\n".join(map(str, hits))


@pytest.mark.parametrize("doc", DOCS)
def test_docs_have_no_handtyped_result(doc, sources):
    """The pages the README points to (docs/*.md, docs/papers/*.md) are prose like the
    README's: fenced code, generated claims blocks and exempt sections are skipped."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    hits = check_lines(f"docs/{doc}", readme_prose(text), sources)
    assert not hits, "numbers no metrics value produced (render them from the metrics, or drop them):\n" + \
        "\n".join(map(str, hits))


# ------------------------------------------------------------------ the checker itself
def test_checker_catches_a_planted_result_and_accepts_parameters():
    params = params_values()
    assert 0.9 in params and 0.2 in params  # batest.iou_threshold, batest.filters.face_area.min
    src = Sources(frozenset(params))
    readme = "\n".join([
        "# t", "## Quick start", "`make test` took 9.5 min on 2026-11-25 (abc123).",
        "## Results", "The gap closes to 0.823 after balancing (IoU > 0.9).",
        "```", "x = 0.777", "```", README_BEGIN, "| 0.555 |", README_END,
        "It moved 173% and 2.5x; FMR 1e-3, 24 %.",
        "<!-- claims:begin paper=002 (generated by `facebias claims --readme p.md`; do not edit) -->",
        "| 0.444 |", README_END, "and then 0.333",
    ])
    hits = check_lines("README.md", readme_prose(readme), src)
    assert [(h.line, h.number) for h in hits] == [(5, "0.823"), (12, "173%"), (12, "2.5x"), (12, "24 %"),
                                                  (16, "0.333")]
    # parameters (a percentage as a fraction), references and versions are allowed
    ok = ["IoU > 0.9 and 20% face area", "Sec. 3.4 of the paper", "spec §1.4–1.8", "gan-face-generate 1.1.1",
          "FMR 1e-4 and 1e-3", "with 95 % bootstrap intervals"]
    assert check_lines("x.md", enumerate(ok, 1), src) == []
    # a parameter's value as a percentage is not the parameter: 7 (bfw.seed) is not 7 %
    assert 7.0 in params
    assert [h.number for h in check_lines("x.md", [(1, "7 % of images")], src)] == ["7 %"]
    # a number of the paper, as the claims registry records it
    paper = Sources(frozenset(params), frozenset({200.0, 2.0}))
    assert check_lines("x.md", [(1, "the paper's 2× (i.e., 200%)")], paper) == []
    # a listed number only in its context
    assert check_lines("x.md", [(1, "SFace's threshold 0.363")], src) == []
    assert [h.number for h in check_lines("x.md", [(1, "the median is 0.82")], src)] == ["0.82"]


def test_checker_reads_notebook_markdown_only():
    src = "\n".join(["# %% [markdown]", "# AUC 0.964 here", "", "# %%", "x = 0.964  # 0.964",
                     "# %% [markdown]", "# and 12.5 % there"])
    hits = check_lines("nb.py", notebook_markdown(src), Sources(frozenset(params_values())))
    assert [(h.line, h.number) for h in hits] == [(2, "0.964"), (7, "12.5 %")]


def test_registry_numbers_are_collected():
    """The paper's numbers come from the registered claims: quotes, paper values, rule bounds."""
    from facebias.claims.bfw import CLAIMS

    values = paper_values()
    assert 200.0 in values and 2.0 in values  # bfw.global_threshold_skews_fpr: "2× (i.e., 200%)"
    assert 10.0 in values and 0.75 in values  # its declared rule bounds
    assert len(CLAIMS) <= len(_registered_claims())
