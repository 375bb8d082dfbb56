"""facebias.dvcplots / `facebias plots`: DVC's plots as one offline page (no scripts, no URLs).

The `dvc plots show --json` input is real: a tiny git + DVC repository in tmp_path with a
top-level plots section (one tidy CSV data plot through the repo's own det_lines template,
one PNG image plot and one image that does not exist).
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from facebias import dvcplots
from facebias.cli import main
from facebias.dvcplots import PlotsError, render_page

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / ".dvc" / "plots" / "det_lines.json"
SYSTEMS = ["sys_a", "sys_b"]
SUBGROUPS = ["G1", "G2", "G3"]
X_TITLE = "planted FMR axis title"
Y_TITLE = "planted FNMR axis title"


def _png_bytes() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (12, 8), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


def _make_repo(root: Path) -> None:
    """git + dvc repository with a DET-shaped tidy CSV, one PNG and one missing PNG."""
    env = {"DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run([str(Path(sys.executable).parent / "dvc"), "init", "-q"], cwd=root, check=True,
                   env=env)
    (root / ".dvc" / "plots").mkdir(exist_ok=True)
    shutil.copy(TEMPLATE, root / ".dvc" / "plots" / TEMPLATE.name)
    (root / "r").mkdir()
    rows = ["system,subgroup,fmr,fnmr"]
    for s in SYSTEMS:
        for k, g in enumerate(SUBGROUPS):
            rows.append(f"{s},{g},1,0")  # a zero rate: left out on the log axes, not a broken line
            for j in range(12):  # down to 3e-6: "%.6g" writes 3.16228e-06, which sorts as text
                fmr = 10.0 ** (-j / 2)  # after 0.5; the template must order lines by number
                rows.append(f"{s},{g},{fmr:.6g},{min(1.0, 0.01 * (k + 1) * fmr ** -0.3):.6g}")
    (root / "r" / "det.csv").write_text("\n".join(rows) + "\n")
    (root / "r" / "img.png").write_bytes(_png_bytes())
    (root / "dvc.yaml").write_text(yaml.safe_dump({"plots": [
        {"r/det.csv": {"template": "det_lines", "x": "fmr", "y": "fnmr",
                       "x_label": X_TITLE, "y_label": Y_TITLE, "title": "planted DET"}},
        "r/img.png",
        "r/gone.png",
    ]}))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import dvc  # noqa: F401
    root = tmp_path_factory.mktemp("dvcrepo")
    _make_repo(root)
    return root


@pytest.fixture(scope="module")
def plots_json(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`dvc plots show --json` of the tiny repository (images copied to a kept folder)."""
    return dvcplots.dvc_plots_json(repo, tmp_path_factory.mktemp("dvcout"))


@pytest.fixture(scope="module")
def page(plots_json: dict) -> dvcplots.Page:
    import vl_convert  # noqa: F401
    return render_page(plots_json)


def test_json_shape_is_what_the_renderer_reads(plots_json: dict) -> None:
    data = plots_json["data"]
    assert [e["type"] for e in data["r/det.csv"]] == ["vega"]
    assert [e["type"] for e in data["r/img.png"]] == ["image"]
    assert any(err["name"] == "r/gone.png" for err in plots_json["errors"])


def test_page_is_self_contained(page: dvcplots.Page) -> None:
    html = page.html
    assert (page.n_data, page.n_images) == (1, 1)
    assert html.count("<svg") == 1  # one inline SVG per data plot
    assert html.count("<img") == 1 and html.count("data:image/png;base64,") == 1
    for bad in ("<script", "src=\"http", "href=\"http", "@import", "url(http", "<link", "<iframe"):
        assert bad not in html.lower(), bad
    b64 = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html).group(1)
    assert base64.b64decode(b64) == _png_bytes()  # the planted image, byte for byte


def test_data_plot_draws_one_line_per_planted_series(page: dvcplots.Page) -> None:
    svg = page.html[page.html.index("<svg"): page.html.index("</svg>")]
    lines = re.findall(r'<g class="mark-line role-mark[^"]*"[^>]*>(.*?)</g>', svg, flags=re.S)
    assert len(lines) == len(SYSTEMS) * len(SUBGROUPS)  # one panel per system, a line per subgroup
    for body in lines:
        assert body.count("<path") == 1
        d = re.search(r'\sd="([^"]+)"', body).group(1)
        assert "NaN" not in d and "Infinity" not in d
        assert d.count("L") == 11  # 12 positive points; the zero-rate row is left out
        xs = [float(x) for x in re.findall(r"[ML]\s*(-?[\d.]+(?:e-?\d+)?)[ ,]", d)]
        assert len(xs) == 12 and xs == sorted(xs)  # drawn left to right in FMR, no jump back
    assert X_TITLE in svg and Y_TITLE in svg
    for name in (*SYSTEMS, *SUBGROUPS):
        assert f">{name}</text>" in svg


def test_missing_image_is_reported_not_a_crash(page: dvcplots.Page) -> None:
    assert len(page.missing) == 1 and page.missing[0].startswith("missing: r/gone.png (")
    assert "missing: r/gone.png" in page.html


def test_cli_writes_page_and_warns(repo: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import vl_convert  # noqa: F401
    out = tmp_path / "sub" / "plots.html"
    assert main(["plots", "-o", str(out), "--repo", str(repo)]) == 0
    err = capsys.readouterr().err
    assert "warning: missing: r/gone.png" in err and "(images: 1, data plots: 1, missing or failed: 1)" in err
    text = out.read_text()
    assert text.count("<svg") == 1 and "<script" not in text
    assert not list(out.parent.glob(".*.tmp"))  # written atomically, no temp file left
    assert not (repo / "dvc_plots").exists()  # dvc's image copies went to a temp folder


def test_render_page_pure_cases() -> None:
    """Hand-made dict: unreadable image and unknown type are reported; errors without data shown."""
    def read(path: str) -> bytes:
        if path.endswith("ok.png"):
            return b"\x89PNG..."
        raise FileNotFoundError(path)

    data = {"data": {"a/ok.png": [{"type": "image", "revisions": ["workspace"], "url": "/x/ok.png"}],
                     "a/lost.png": [{"type": "image", "revisions": ["workspace"], "url": "/x/lost.png"}],
                     "a/odd": [{"type": "plotly", "revisions": ["workspace"]}]},
            "errors": [{"name": "a/dir", "type": "FileNotFoundError", "msg": "gone"}]}
    page = render_page(data, read=read, to_svg=lambda spec: "<svg/>")
    assert page.n_images == 1 and page.n_data == 0
    assert [m.split(" (")[0] for m in page.missing] == ["missing: a/lost.png", "failed: a/odd",
                                                        "missing: a/dir"]
    assert page.html.count("<section") == 4 and "<script" not in page.html


def test_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PlotsError, match="not a DVC repository"):
        dvcplots.dvc_plots_json(tmp_path, tmp_path / "out")
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import fails as if not installed
    with pytest.raises(PlotsError, match="pip install vl-convert-python"):
        dvcplots.vegalite_to_svg({})
    with pytest.raises(PlotsError, match="pip install vl-convert-python"):  # not swallowed
        render_page({"data": {"d.csv": [{"type": "vega", "content": {}}]}})
    (tmp_path / ".dvc").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nopython"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PlotsError, match="dvc not found"):
        dvcplots.dvc_plots_json(tmp_path, tmp_path / "out")


def test_repo_declares_every_figure_and_the_bfw_det_data_plot() -> None:
    """dvc.yaml's top-level plots list every PNG/figure folder that a stage writes to
    reports/figures (templated foreach stages aside) and the folder of BFW DET CSVs with
    det_lines."""
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    declared = {}
    for item in spec["plots"]:
        name, props = next(iter(item.items())) if isinstance(item, dict) else (item, {})
        declared[name] = props or {}
    figures = {str(o if isinstance(o, str) else next(iter(o))) for stage in spec["stages"].values()
               for o in stage.get("outs", [])}
    figures = {f for f in figures if f.startswith("reports/figures/") and "${" not in f}
    assert figures and figures <= set(declared)
    det = declared["reports/plots/"]  # the folder: every stage's DET CSV, synthetic and real
    assert (det["template"], det["x"], det["y"]) == ("det_lines", "fmr", "fnmr")
    # not cached, so DVC writes no .gitignore into the folder (it would be read as a plot)
    outs = {k: v for stage in (spec["stages"]["bfw"], spec["stages"]["bfw_real"]["do"])
            for o in stage["outs"] if isinstance(o, dict) for k, v in o.items()}
    for csv in ("reports/plots/bfw_det.csv", "reports/plots/bfw_real_${key}_det.csv"):
        assert outs[csv] == {"cache": False}
    assert json.loads(TEMPLATE.read_text())["spec"]["encoding"]["color"]["field"] == "subgroup"
