"""Repository contracts: pinned environment, conda wrapper in step, DVC offline, two-command README."""

import configparser
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"requirements.txt: {line!r} is not pinned with =="
            pins[name.lower()] = version
    return pins


def test_requirements_are_pinned_and_torch_is_the_cpu_wheel_version():
    pins = requirements()
    assert pins["torch"] == "2.13.0"  # the CPU wheel on disk; unpinned torch pulls CUDA
    assert "torchvision" not in pins  # breaks beside this torch
    for pkg in ("jupyterlab", "papermill", "numpy", "pandas", "scikit-learn", "statsmodels",
                "matplotlib", "ipywidgets", "dvc", "ipykernel", "jupytext"):
        assert pkg in pins, pkg


def test_environment_yml_wraps_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip == ["-r requirements.txt", "-e ."]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python="))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    major_minor = python.split("=")[1]
    assert f">={major_minor}" in requires


def test_dvc_does_not_phone_home():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".dvc" / "config")
    assert cfg["core"]["analytics"] == "false" and cfg["core"]["check_update"] == "false"


def test_readme_quick_start_has_exactly_two_commands():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.S).group(1)
    commands = [ln.split("#")[0].strip() for ln in block.splitlines() if ln.split("#")[0].strip()]
    assert commands == ["make reproduce", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_params_section_read_by_a_stage_exists():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        body = stage.get("do", stage)
        for key in body.get("params", []):
            node = params
            for part in key.split("."):
                assert part in node, f"stage {name}: params.yaml has no {key}"
                node = node[part]
