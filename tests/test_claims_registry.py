"""The registry as a whole: unique keys, every paper covered, calibrated parameters that exist
in params.yaml and say so there, and a README whose evidence table is the generated one."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from facebias.claims import Kind, evaluate_all
from facebias.claims.readme import README_BEGIN, README_END, evidence_markdown, replace_block
from facebias.claims.registry import PAPER_ORDER, all_claims
from facebias.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _lookup(params: dict, dotted: str):
    node = params
    for part in dotted.split("."):
        assert isinstance(node, dict) and part in node, f"{dotted}: no {part!r} in params.yaml"
        node = node[part]
    return node


def test_every_paper_has_claims_with_unique_keys_and_justified_kinds():
    claims = all_claims()
    assert [c.paper for c in claims] == sorted((c.paper for c in claims), key=PAPER_ORDER.index)
    assert {c.paper for c in claims} == set(PAPER_ORDER)
    assert len({c.key for c in claims}) == len(claims)
    for c in claims:
        assert c.key.split(".")[0] in {"bfw", "batest", "transects", "hcic", "rapid"}, c.key
        assert len(c.evidence) > 30, (c.key, c.evidence)  # a reason, not a label


def test_calibrated_parameters_exist_and_are_marked_in_params_yaml():
    text = (ROOT / "params.yaml").read_text()
    params = yaml.safe_load(text)
    calibrated = [(c.key, p) for c in all_claims() if c.kind is Kind.CALIBRATED for p in c.calibrated]
    assert calibrated  # the registry names at least one
    for key, dotted in calibrated:
        _lookup(params, dotted)
        leaf = dotted.split(".")[-1]
        # the key's line, or the comment lines just above it, say "calibrated"
        lines = text.splitlines()
        hits = [i for i, line in enumerate(lines) if re.match(rf"\s*{re.escape(leaf)}\s*:", line)]
        assert any("calibrated" in " ".join(lines[max(0, i - 3): i + 1]) for i in hits), (key, dotted)


def test_readme_evidence_table_is_the_generated_one(capsys):
    readme = (ROOT / "README.md").read_text()
    assert readme.count(README_BEGIN) == 1 and readme.count(README_END) == 1
    block = evidence_markdown(evaluate_all(all_claims(), ROOT / "reports" / "metrics"))
    assert replace_block(readme, block) == readme, "run: facebias claims --readme README.md"
    assert main(["claims", "--metrics", str(ROOT / "reports" / "metrics"), "--readme", str(ROOT / "README.md"),
                 "--check"]) == 0


def test_claims_cli_prints_the_table_and_checks_a_stale_readme(tmp_path, capsys):
    assert main(["claims", "--metrics", str(ROOT / "reports" / "metrics")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| paper | the paper's claim |") and out.rstrip("\n").count("\n") == 1 + len(all_claims())
    stale = tmp_path / "README.md"
    stale.write_text(f"# x\n{README_BEGIN}\nold\n{README_END}\n")
    assert main(["claims", "--metrics", str(ROOT / "reports" / "metrics"), "--readme", str(stale), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main(["claims", "--metrics", str(ROOT / "reports" / "metrics"), "--readme", str(stale)]) == 0
    assert "| paper | the paper's claim |" in stale.read_text()
    assert main(["claims", "--metrics", str(tmp_path / "nope")]) == 2
