"""The claims mechanism: every rule and every verdict, on hand-computed cases."""

from __future__ import annotations

import json
import math

import pytest

from facebias.claims import (
    Between,
    Claim,
    InInterval,
    Kind,
    Measured,
    NotComparable,
    Order,
    Sign,
    Within,
    evaluate,
    evaluate_all,
    verdict_of,
)
from facebias.claims.readme import (
    README_BEGIN,
    README_END,
    block_filters,
    evidence_markdown,
    replace_block,
    replace_blocks,
)
from facebias.claims.render import claims_html, claims_markdown


def _claim(measure, rule, **kw):
    base = dict(key="demo.x", paper="999", quote="A is bigger than B.", where="Table 1",
                statistic="A and B", files=("headline_demo.json",), measure=measure, rule=rule,
                kind=Kind.REAL_TEST, evidence="could have come out either way")
    return Claim(**{**base, **kw})


@pytest.fixture
def metrics_dir(tmp_path):
    d = tmp_path / "metrics"
    d.mkdir()
    # a headline file: any of the shared columns, through its schema
    (d / "bfw.json").write_text(json.dumps({"bias": 3.0, "bias_after": -1.0, "fmr": 0.01}))
    return d


# ------------------------------------------------------------------ rules, cell by cell
@pytest.mark.parametrize("rule, values, paper, expected", [
    (Sign(), {"a": 0.3, "b": -0.1}, {"a": 2.0, "b": 1.0}, {"a": True, "b": False}),
    (Sign(+1), {"a": 0.0, "b": 1e-9}, {}, {"a": False, "b": True}),   # zero has no sign
    (Sign(-1), {"a": -2.0, "b": None}, {}, {"a": True, "b": None}),
    (Sign(), {"a": 1.0}, {"a": 0.0}, {"a": None}),                     # the paper's zero gives no sign
    (Between(lo=1, hi=2), {"a": 1.0, "b": 2.0, "c": 2.0001, "d": float("nan")}, {},
     {"a": True, "b": True, "c": False, "d": None}),
    (Within(pct=10), {"a": 109.0, "b": 111.0, "c": -95.0}, {"a": 100.0, "b": 100.0, "c": -100.0},
     {"a": True, "b": False, "c": True}),
    (Within(abs=0.01), {"a": 0.505, "b": 0.52, "c": 0.5}, {"a": 0.5, "b": 0.5}, {"a": True, "b": False, "c": None}),
    (InInterval(), {"a": 0.2, "b": 0.45, "c": 0.3}, {"a": (0.2, 0.4), "b": (0.2, 0.4), "c": None},
     {"a": True, "b": False, "c": None}),
    (Order(("x", "y", "z")), {"x": 3.0, "y": 2.0, "z": 1.0}, {}, {"order": True}),
    (Order(("x", "y", "z")), {"x": 3.0, "y": 3.0, "z": 1.0}, {}, {"order": False}),  # strict
    (Order(("x", "y"), descending=False), {"x": 1.0, "y": 2.0}, {}, {"order": True}),
    (Order(("x", "y")), {"x": 1.0, "y": None}, {}, {"order": None}),
    (NotComparable("EER, not FNMR"), {"a": 1.0}, {}, {}),
])
def test_rule_checks(rule, values, paper, expected):
    assert rule.check(values, paper) == expected
    assert rule.describe()


def test_rules_refuse_bad_declarations():
    with pytest.raises(ValueError, match="lo, hi"):
        Between()
    with pytest.raises(ValueError, match="lo 2"):
        Between(lo=2, hi=1)
    with pytest.raises(ValueError, match="exactly one"):
        Within(pct=1, abs=1)
    with pytest.raises(ValueError, match="exactly one"):
        Within()
    with pytest.raises(ValueError, match="two cells"):
        Order(("x",))
    with pytest.raises(ValueError, match="reason"):
        NotComparable("  ")
    with pytest.raises(KeyError, match="no cells"):
        Order(("x", "w")).check({"x": 1.0}, {})


# ------------------------------------------------------------------ verdicts
@pytest.mark.parametrize("checks, rule, verdict, detail", [
    ([{"a": True, "b": True}], Sign(), "agrees", "2 of 2 cells"),
    ([{"a": False, "b": False}], Sign(), "disagrees", "0 of 2 cells"),
    ([{"a": True, "b": False, "c": None}], Sign(), "partly", "1 of 2 cells; 1 check unresolved"),
    ([{"a": None}, {"a": None}], Sign(), "unresolved", "2 checks unresolved"),
    ([], Sign(), "unresolved", "nothing measured"),
    ([{"order": True}] * 9 + [{"order": False}], Order(("a", "b")), "partly", "9 of 10 seeds"),
    ([{"order": True}] * 10, Order(("a", "b")), "agrees", "10 of 10 seeds"),
    ([{"a": True, "b": True}, {"a": True, "b": False}, {"a": True, "b": True}], Sign(), "partly",
     "5 of 6 cell-seeds; every cell in 2 of 3 seeds"),
    ([{"a": True}], NotComparable("EER, not FNMR at FMR"), "not comparable", "EER, not FNMR at FMR"),
])
def test_verdicts(checks, rule, verdict, detail):
    assert verdict_of(checks, rule) == (verdict, detail)


def test_measured_shapes_and_summary():
    m = Measured({"a": [1.0, None, 3.0], "b": [float("nan"), 2.0, 2.0]}, seeds=(7, 8, 9))
    assert m.n_seeds == 3
    assert m.seed(1) == {"a": None, "b": 2.0}
    assert m.summary("a") == (2.0, 1.0, 3.0, 2)
    assert m.summary("b") == (2.0, 2.0, 2.0, 2)
    with pytest.raises(ValueError, match="different numbers of seeds"):
        Measured({"a": [1.0], "b": [1.0, 2.0]})
    with pytest.raises(ValueError, match="2 seeds but 1"):
        Measured({"a": [1.0]}, seeds=(1, 2))


def test_from_records_places_each_seed_and_refuses_duplicates():
    recs = [{"seed": 2, "g": "a", "v": 0.7}, {"seed": 1, "g": "a", "v": 0.5}, {"seed": 1, "g": "b", "v": None},
            {"seed": 3, "g": "a", "v": 9.0}]  # seed 3 is not asked for
    m = Measured.from_records(recs, [1, 2], lambda r: r["g"], "v")
    assert m.cells == {"a": [0.5, 0.7], "b": [None, None]}
    assert m.seeds == (1, 2)
    with pytest.raises(ValueError, match="two records"):
        Measured.from_records(recs + [{"seed": 1, "g": "a", "v": 0.0}], [1, 2], lambda r: r["g"], "v")


# ------------------------------------------------------------------ claims, evaluated on files
def test_claim_declarations_are_checked():
    m = lambda r: Measured.one({"a": 1.0})  # noqa: E731
    with pytest.raises(ValueError, match="quote is empty"):
        _claim(m, Sign(+1), quote=" ")
    with pytest.raises(ValueError, match="calibrated parameters are named iff"):
        _claim(m, Sign(+1), kind=Kind.CALIBRATED)
    with pytest.raises(ValueError, match="calibrated parameters are named iff"):
        _claim(m, Sign(+1), calibrated=("world.seed",))
    with pytest.raises(TypeError, match="kind must be a Kind"):
        _claim(m, Sign(+1), kind="real test")
    assert _claim(m, Sign(+1), kind=Kind.CALIBRATED, calibrated=("world.seed",)).calibrated == ("world.seed",)


def test_evaluate_reads_through_the_schema_and_records_paths(metrics_dir):
    c = _claim(lambda m: Measured.one({"bias": m("bfw.json", "bias"), "after": m("bfw.json", "bias_after")}),
               Sign(+1), files=("bfw.json",))
    r = evaluate(c, metrics_dir)
    assert (r.verdict, r.detail) == ("partly", "1 of 2 cells")
    assert r.reads == ("bfw.json:bias", "bfw.json:bias_after")
    assert [row["holds"] for row in r.cell_rows()] == [1.0, 0.0]
    # an undeclared key is an error, not a blank
    bad = _claim(lambda m: Measured.one({"x": m("bfw.json", "no_such_column")}), Sign(+1), files=("bfw.json",))
    with pytest.raises(Exception, match="no_such_column"):
        evaluate(bad, metrics_dir)


def test_missing_metrics_file_is_not_run(metrics_dir):
    c = _claim(lambda m: Measured.one({"a": m("rapid.json", "bias")}), Sign(+1), files=("rapid.json",))
    r = evaluate(c, metrics_dir)
    assert r.verdict == "not run" and "rapid.json" in r.detail and r.measured is None


def test_every_verdict_renders_with_its_numbers(metrics_dir):
    claims = [
        _claim(lambda m: Measured.one({"bias": m("bfw.json", "bias")}), Sign(+1), files=("bfw.json",),
               key="d.agree"),
        _claim(lambda m: Measured({"s": [1.0, -1.0, 2.0]}, seeds=(10, 11, 12)), Sign(+1), files=("bfw.json",),
               key="d.partly"),
        _claim(lambda m: Measured.one({"bias": m("bfw.json", "bias")}), Between(hi=1), files=("bfw.json",),
               key="d.disagree"),
        _claim(lambda m: Measured.one({"x": math.nan}), Sign(+1), files=("bfw.json",), key="d.unres"),
        _claim(lambda m: Measured.one({"x": 1.0}), NotComparable("we measure EER"), files=("bfw.json",),
               key="d.nc", kind=Kind.CALIBRATED, calibrated=("world.seed",)),
        _claim(lambda m: Measured.one({"x": 1.0}), Sign(+1), files=("absent.json",), key="d.missing"),
    ]
    results = evaluate_all(claims, metrics_dir)
    assert [r.verdict for r in results] == ["agrees", "partly", "disagrees", "unresolved", "not comparable",
                                            "not run"]
    page = claims_html(results)
    for text in ("agrees", "partly", "disagrees", "unresolved", "not comparable", "not run", "2 of 3 seeds",
                 "3 world seeds (10–12)", "0.667 [-1 … 2]", "world.seed", "calibrated to the paper"):
        assert text in page, text
    md = claims_markdown(results)
    assert "| main | **partly** (2 of 3 seeds) |" in md and "**`d.partly`**" in md
    table = evidence_markdown(results)
    assert table.count("\n") == 2 + len(claims)
    assert "calibrated to the paper (`world.seed`)" in table


def test_readme_block_is_replaced_between_markers():
    text = f"intro\n{README_BEGIN}\nold\n{README_END}\noutro\n"
    assert replace_block(text, "new\n") == f"intro\n{README_BEGIN}\nnew\n{README_END}\noutro\n"
    with pytest.raises(ValueError, match="one claims:begin"):
        replace_block("no markers", "x")


def _page_results(metrics_dir):
    claims = [
        _claim(lambda m: Measured.one({"bias": m("bfw.json", "bias")}), Sign(+1), files=("bfw.json",),
               key="bfw.a", paper="002"),
        _claim(lambda m: Measured.one({"bias": m("bfw.json", "bias")}), Sign(-1), files=("bfw.json",),
               key="bfw.b", paper="002"),
        _claim(lambda m: Measured.one({"x": 1.0}), Sign(+1), files=("bfw.json",), key="transects.o",
               paper="004"),
        _claim(lambda m: Measured.one({"x": 1.0}), Sign(+1), files=("bfw.json",), key="transects.o.dcgan",
               paper="004", backend="dcgan"),
    ]
    return evaluate_all(claims, metrics_dir)


def _begin(filters: str = "") -> str:
    return f"<!-- claims:begin{filters} (generated by `facebias claims --readme x.md`; do not edit) -->"


def test_a_filtered_block_gets_only_its_papers_rows_and_an_unfiltered_block_all(metrics_dir):
    results = _page_results(metrics_dir)
    page = "\n".join(["# page", _begin(" paper=002"), "old", README_END, "prose",
                      _begin(" paper=004 backend=dcgan"), README_END,
                      _begin(" key=transects.o*"), "stale row", README_END,
                      _begin(), README_END, "end"]) + "\n"
    new = replace_blocks(page, results)
    blocks = [b.split(README_END)[0] for b in new.split("<!-- claims:begin")[1:]]
    rows = [[ln for ln in b.splitlines() if ln.startswith("| 0")] for b in blocks]
    assert [len(r) for r in rows] == [2, 1, 2, 4]
    assert all(r.startswith("| 002 |") for r in rows[0]) and "(`bfw.a`)" in rows[0][0]
    assert "(`transects.o.dcgan`) | dcgan |" in rows[1][0]
    assert new.startswith("# page\n") and "\nprose\n" in new and new.endswith("end\n")
    assert "old" not in new and "stale row" not in new
    assert replace_blocks(new, results) == new  # idempotent
    # the README's own marker is an unfiltered block: the same table as replace_block writes
    readme = f"intro\n{README_BEGIN}\nold\n{README_END}\n"
    assert replace_blocks(readme, results) == replace_block(readme, evidence_markdown(results))


def test_block_markers_are_parsed_and_bad_blocks_refused(metrics_dir):
    results = _page_results(metrics_dir)
    assert block_filters(README_BEGIN) == {}
    assert block_filters(_begin(" paper=002,003 key=bfw.*")) == {"paper": ("002", "003"), "key": ("bfw.*",)}
    assert block_filters("<!-- claims:end -->") is None and block_filters("| 002 | x |") is None
    with pytest.raises(ValueError, match="unknown filter 'study'"):
        block_filters(_begin(" study=bfw"))
    with pytest.raises(ValueError, match="select no claim"):
        replace_blocks(f"{_begin(' paper=02')}\n{README_END}\n", results)
    with pytest.raises(ValueError, match="p.md:1: claims:begin without a claims:end"):
        replace_blocks(f"{_begin(' paper=002')}\nrow\n", results, "p.md")
    with pytest.raises(ValueError, match="claims:end without"):
        replace_blocks(f"x\n{README_END}\n", results)
    with pytest.raises(ValueError, match="inside the block"):
        replace_blocks(f"{_begin()}\n{_begin()}\n{README_END}\n", results)
    with pytest.raises(ValueError, match="no claims:begin"):
        replace_blocks("no markers\n", results)
    # a marker quoted in fenced code is text
    fenced = f"```\n{_begin(' paper=999')}\n```\n{_begin(' paper=004')}\n{README_END}\n"
    assert replace_blocks(fenced, results).startswith(f"```\n{_begin(' paper=999')}\n```\n")
