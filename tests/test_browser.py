"""The transect browser: its logic in plain pytest (a tiny linear stand-in generator), and
the real notebook served by voila and driven in headless Chromium."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from facebias.browser import TransectBrowser, browser_app, grid_image, png_bytes
from facebias.generate.hyperplanes import Hyperplanes

# about 85 s under make test (make profile, 2 cores): handed out first; make test-fast skips it
pytestmark = pytest.mark.slow(seconds=85)

ROOT = Path(__file__).resolve().parents[1]


class LinearGenerator:
    """latent (D,) -> a 32x32 image whose pixels are a fixed linear map of the latent."""

    name = "linear"
    latent_dim = 12

    def __init__(self):
        self.w = np.random.default_rng(1).normal(size=(32 * 32 * 3, self.latent_dim))

    def sample(self, n, seed):
        return np.random.default_rng(seed).normal(size=(n, self.latent_dim))

    def synthesize(self, latents, yaw=None, light=None):
        x = np.atleast_2d(latents) @ self.w.T
        return np.clip(128 + 20 * x, 0, 255).astype(np.uint8).reshape(-1, 32, 32, 3)


@pytest.fixture
def browser():
    rng = np.random.default_rng(0)
    base = rng.normal(size=12)
    normals = np.stack([base + 0.8 * rng.normal(size=12) for _ in range(3)])  # correlated
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    hp = Hyperplanes(("gender", "hair_length", "age"), normals, np.array([0.1, -0.2, 0.3]))
    return TransectBrowser(LinearGenerator(), hp, seed=3)


def test_sliders_start_at_the_seed_and_set_decision_values_exactly(browser):
    np.testing.assert_allclose(list(browser.values.values()), browser.decision_values(browser.z))
    np.testing.assert_allclose(browser.latent_for(), browser.z, atol=1e-9)  # seed reproduced
    z = browser.latent_for({"gender": 1.5})
    dv = browser.decision_values(z)
    assert dv[0] == pytest.approx(1.5, abs=1e-9)
    np.testing.assert_allclose(dv[1:], [browser.values["hair_length"], browser.values["age"]], atol=1e-9)


def test_raw_normals_leak_into_other_attributes(browser):
    z = browser.latent_for({"gender": browser.values["gender"] + 2.0}, orthogonal=False)
    moved = browser.decision_values(z) - np.array(list(browser.values.values()))
    assert abs(moved[1]) > 0.1 and abs(moved[2]) > 0.1  # correlated normals drag the others


def test_seed_change_grid_and_captions(browser):
    first = browser.render()
    browser.set_seed(4)
    assert not np.array_equal(browser.render(), first)
    grid = browser.transect_grid("age", "gender", [-1, 0, 1], [-1, 1])
    assert grid.shape == (3, 2, 32, 32, 3)
    tiled = grid_image(grid, pad=2)
    assert tiled.shape == (3 * 34 + 2, 2 * 34 + 2, 3) and png_bytes(tiled)[:4] == b"\x89PNG"
    browser.models = {"ok": lambda img, ref: f"{img.mean():.0f}", "bad": lambda img, ref: 1 / 0}
    lines = browser.captions(browser.render())
    assert lines[0].startswith("ok: ") and "failed" in lines[1]
    with pytest.raises(ValueError, match="unknown attribute"):
        browser.transect_grid("nope", "age", [0], [0])
    with pytest.raises(ValueError, match="unknown attribute"):
        TransectBrowser(LinearGenerator(), browser.hp, attributes=["smile"])


def test_widget_builds_and_reacts(browser):
    import ipywidgets  # noqa: F401
    box = browser.widget()
    image = box.children[0].children[1].children[0]
    before = image.value
    slider = box.children[0].children[0].children[2]  # first attribute slider
    slider.value = slider.value + 1.0
    assert image.value != before


def _img_src(page) -> str:
    return page.eval_on_selector(".widget-image", "el => el.src")


@pytest.mark.timeout(300)
def test_browser_in_chromium_slider_changes_the_face(browser_page, voila, screenshots):
    """voila serves notebooks/transect_browser.py; moving a slider re-renders the face."""
    page = browser_page
    page.goto(voila(ROOT / "notebooks" / "transect_browser.py"), timeout=120_000)
    page.wait_for_selector(".widget-slider", timeout=180_000)
    page.wait_for_selector("text=P(male)", timeout=180_000)
    before = _img_src(page)
    caption = page.inner_text(".widget-html-content >> text=/decision values: /")
    assert before.startswith(("blob:", "data:"))
    page.screenshot(path=str(screenshots / "transect_browser_before.png"))
    page.locator(".widget-slider [role=slider]").nth(0).focus()
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("prev => document.querySelector('.widget-image').src !== prev",
                           arg=before, timeout=120_000)
    page.wait_for_function("prev => !document.body.innerText.includes(prev)", arg=caption, timeout=120_000)
    target = page.locator(".widget-slider .widget-readout").nth(0).inner_text().strip()  # e.g. 2.75
    page.wait_for_selector(f"text=/decision values: gender \\+{target[:3]}/", timeout=120_000)
    page.screenshot(path=str(screenshots / "transect_browser_after.png"))
    assert _img_src(page) != before


@pytest.mark.timeout(400)
def test_browser_on_the_dcgan_in_chromium(browser_page, voila, screenshots, tmp_path):
    """The same notebook with backend = "dcgan": hyperplanes fitted on machine labels of the
    GAN's renders, sliders over them, the labellers' readings under the image; moving the
    face-darkness slider re-renders the face and its reading."""
    src = (ROOT / "notebooks" / "transect_browser.py").read_text()
    src = src.replace('backend = "procedural"', 'backend = "dcgan"').replace("n_fit = 1500", "n_fit = 200")
    assert 'backend = "dcgan"' in src and "n_fit = 200" in src
    nb = tmp_path / "transect_browser_dcgan.py"
    nb.write_text(src)
    page = browser_page
    page.goto(voila(nb), timeout=120_000)
    page.wait_for_selector(".widget-slider", timeout=300_000)
    page.wait_for_selector("text=/labellers: ita/", timeout=180_000)
    # one slider per GAN hyperplane + the grid range
    from facebias.generate.hyperplanes import MACHINE_ATTRIBUTES

    assert page.locator(".widget-slider").count() == len(MACHINE_ATTRIBUTES) + 1
    before = _img_src(page)
    reading = page.inner_text(".widget-html-content >> text=/labellers: /")
    page.screenshot(path=str(screenshots / "transect_browser_dcgan_before.png"))
    page.locator(".widget-slider [role=slider]").nth(1).focus()  # face_darkness
    for _ in range(8):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("prev => document.querySelector('.widget-image').src !== prev",
                           arg=before, timeout=120_000)
    page.wait_for_function("prev => !document.body.innerText.includes(prev)", arg=reading, timeout=120_000)
    page.screenshot(path=str(screenshots / "transect_browser_dcgan_after.png"))
    assert _img_src(page) != before


def test_png_roundtrip():
    import cv2

    img = np.random.default_rng(0).integers(0, 256, (8, 9, 3), dtype=np.uint8)
    back = cv2.imdecode(np.frombuffer(png_bytes(img), np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    assert np.array_equal(back, img)
    assert base64.b64encode(png_bytes(img))  # encodable for widgets


# ---------------------------------------------------------------- issue 19, friction 3
def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _find(box, kind, description=None):
    """The first widget of class name ``kind`` (and ``description``) in the tree."""
    for w in _walk(box):
        if type(w).__name__ == kind and (description is None or w.description == description):
            return w
    raise LookupError(f"no {kind} {description!r} in the widget")


def _html_text(box) -> str:
    return "\n".join(w.value for w in _walk(box) if type(w).__name__ in ("HTML", "Label"))


def _expected_grid(seed, rows, cols, span, steps, values=None):
    """The 2-D transect png computed on a fresh browser (independent of the widget)."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=12)
    normals = np.stack([base + 0.8 * rng.normal(size=12) for _ in range(3)])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    hp = Hyperplanes(("gender", "hair_length", "age"), normals, np.array([0.1, -0.2, 0.3]))
    other = TransectBrowser(LinearGenerator(), hp, seed=seed)
    if values is not None:
        other.values = dict(values)
    r = np.linspace(span[0], span[1], steps)
    return png_bytes(grid_image(other.transect_grid(rows, cols, r, r)))


def test_grid_follows_the_seed_at_once(browser):
    box = browser.widget()
    grid = [w for w in _walk(box) if type(w).__name__ == "Image"][1]
    rows, cols = _find(box, "Dropdown", "rows"), _find(box, "Dropdown", "columns")
    span, steps = _find(box, "FloatRangeSlider"), _find(box, "BoundedIntText", "steps")
    assert grid.value == _expected_grid(3, rows.value, cols.value, span.value, steps.value)
    _find(box, "IntText" if any(type(w).__name__ == "IntText" for w in _walk(box)) else "BoundedIntText",
          "seed").value = 4
    assert grid.value == _expected_grid(4, rows.value, cols.value, span.value, steps.value)
    assert "seed 4" in _html_text(box) and "seed 3" not in _html_text(box)


def test_range_readout_formats_both_ends_alike(browser):
    box = browser.widget()
    span = _find(box, "FloatRangeSlider")
    assert span.readout is False  # the built-in readout clips "-1.50 – 1.5"; ours is wide enough
    assert "-1.50 – 1.50" in _html_text(box)
    span.value = (-2.0, 0.5)
    assert "-2.00 – 0.50" in _html_text(box)
    assert TransectBrowser.range_text(-1.5, 1.5) == "-1.50 – 1.50"


def test_seed_box_refuses_out_of_range_seeds_on_screen(browser):
    from facebias.browser import SEED_MAX

    box = browser.widget()
    seed_box = [w for w in _walk(box) if getattr(w, "description", None) == "seed"][0]
    seed_box.value = -5
    assert browser.seed == 3 and seed_box.value == 3  # refused, box back to the seed shown
    assert "-5" in _html_text(box) and f"{SEED_MAX}" in _html_text(box)
    seed_box.value = 10**7  # beyond the old silent clamp at 10**6
    assert browser.seed == 10**7 and seed_box.value == 10**7
    assert "-5" not in _html_text(box)  # the message goes once a valid seed is in
    with pytest.raises(ValueError, match="seed"):
        browser.set_seed(SEED_MAX + 1)


def test_rows_and_columns_never_share_an_attribute(browser):
    box = browser.widget()
    rows, cols = _find(box, "Dropdown", "rows"), _find(box, "Dropdown", "columns")
    assert rows.value != cols.value
    for first, second in ((rows, cols), (cols, rows), (rows, cols)):
        for choice in list(first.options):
            first.value = choice
            assert second.value != choice
            assert set(second.options) == set(browser.attributes) - {choice}
            assert set(first.options) == set(browser.attributes) - {second.value}
    from traitlets import TraitError

    with pytest.raises(TraitError):  # the attribute the columns show is not offered for rows
        rows.value = cols.value
    with pytest.raises(ValueError, match="differ"):
        browser.transect_grid("age", "age", [0], [0])


def test_toggling_orthogonal_keeps_the_face_and_says_what_raw_mode_does(browser):
    box = browser.widget()
    face = [w for w in _walk(box) if type(w).__name__ == "Image"][0]
    orth = _find(box, "Checkbox")
    sliders = {s.description: s for s in _walk(box) if type(s).__name__ == "FloatSlider"}
    sliders["gender"].value += 1.0
    shown = face.value
    orth.value = False
    assert face.value == shown  # the face stays until a slider moves
    assert "unit normal" in _html_text(box)  # the raw-normals mode is explained on screen
    z0 = browser.latent_for()
    sliders["gender"].value += 0.5  # raw mode: a step of 0.5 along gender's unit normal
    np.testing.assert_allclose(browser.latent_for() - z0, 0.5 * browser.normals[0], atol=1e-9)
    assert face.value != shown
    shown, z1 = face.value, browser.latent_for()
    orth.value = True
    assert face.value == shown  # and stays when ticking back: the sliders follow the face
    np.testing.assert_allclose(browser.latent_for(), z1, atol=1e-9)
    np.testing.assert_allclose([sliders[a].value for a in browser.attributes], browser.decision_values(z1),
                               atol=1e-9)


# ---------------------------------------------------------------- issue 19, friction 1
def test_app_says_what_to_run_when_the_hyperplanes_are_missing(tmp_path, monkeypatch):
    (tmp_path / "dvc.yaml").write_text("stages:\n  generate_dcgan:\n    cmd: facebias synth\n"
                                       "    outs:\n      - data/synthetic_dcgan\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # voila's kernel runs in the notebook's folder
    app = browser_app(hyperplanes="data/synthetic_dcgan/hyperplanes.npz")
    assert type(app).__name__ == "HTML"  # a message on the page, not an exception
    assert "dvc repro generate_dcgan" in app.value
    assert str(tmp_path / "data" / "synthetic_dcgan" / "hyperplanes.npz") in app.value
    other = browser_app(hyperplanes=str(tmp_path / "elsewhere.npz"))
    assert "facebias synth" in other.value and "elsewhere.npz" in other.value


def test_app_shows_a_failure_on_the_page_and_runs_without_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no dvc.yaml, no data
    bad = browser_app(backend="nope", with_models=False)
    assert type(bad).__name__ == "HTML" and "could not start" in bad.value and "nope" in bad.value
    app = browser_app(n_fit=200, with_models=False, seed=2)
    assert type(app).__name__ == "VBox"
    assert sum(type(w).__name__ == "FloatSlider" for w in _walk(app)) == 7  # procedural attributes
    assert "seed 2" in _html_text(app)


def test_hyperplanes_of_another_generator_are_refused(browser):
    hp = Hyperplanes(("gender",), np.eye(1, 5), np.zeros(1))
    with pytest.raises(ValueError, match="5-dimensional.*12-dimensional"):
        TransectBrowser(LinearGenerator(), hp)


CLIPPED_JS = """els => els.filter(e => {
  const r = e.getBoundingClientRect();
  if (e.offsetParent === null || r.width === 0) return false;  // not shown
  if (e.scrollWidth > e.clientWidth + 1) return true;  // its text overflows its own box
  for (let a = e.parentElement; a; a = a.parentElement) {  // or a clipping ancestor cuts it
    const st = getComputedStyle(a);
    if (st.overflowX !== "visible") {
      const ar = a.getBoundingClientRect();
      if (r.right > ar.right + 1 || r.left < ar.left - 1) return true;
    }
  }
  return false;
}).map(e => e.textContent)"""


def _not_clipped(page, selector: str) -> list[str]:
    """Texts of visible elements matching ``selector`` that are cut off, by their own box or
    by an ancestor that hides overflow."""
    return page.eval_on_selector_all(selector, CLIPPED_JS)


@pytest.mark.timeout(300)
def test_make_browse_opens_the_browser_and_the_grid_follows_the_seed(browser_page, make_ui, screenshots):
    """`make browse` serves the browser; the grid follows a new seed at once; no readout clips."""
    page = browser_page
    url = make_ui("browse", "BROWSE_PARAMS=-p with_models False", port_var="BROWSE_PORT")
    page.goto(url, timeout=120_000)
    page.wait_for_selector(".widget-slider", timeout=180_000)
    page.wait_for_selector("text=/seed 0: /", timeout=120_000)  # the grid's caption
    assert "There was an error" not in page.inner_text("body")
    readout = page.locator(".widget-label", has_text="1.50")
    assert [t.strip() for t in readout.all_inner_texts()] == ["-1.50 – 1.50"]
    assert _not_clipped(page, ".widget-readout, .widget-label, .widget-html-content") == []
    grid_before = page.eval_on_selector_all(".widget-image", "els => els[1].src")
    page.screenshot(path=str(screenshots / "transect_browser_make_browse.png"))
    seed = page.locator(".widget-text:has(label:text-is('seed')) input")
    seed.fill("7")
    seed.press("Enter")
    page.wait_for_selector("text=/seed 7: /", timeout=120_000)
    assert page.eval_on_selector_all(".widget-image", "els => els[1].src") != grid_before
    assert "seed 0" not in page.inner_text("body")
    seed.fill("-5")
    seed.press("Enter")
    page.wait_for_selector("text=/seed -5 refused/", timeout=60_000)
    assert seed.input_value() == "7"
    assert _not_clipped(page, ".widget-readout, .widget-label, .widget-html-content") == []
    page.screenshot(path=str(screenshots / "transect_browser_seed7.png"))


@pytest.mark.timeout(300)
def test_make_browse_without_the_data_says_what_to_run(browser_page, make_ui, tmp_path, screenshots):
    page = browser_page
    missing = tmp_path / "no_such" / "hyperplanes.npz"
    url = make_ui("browse", f"BROWSE_PARAMS=-p backend dcgan -p hyperplanes {missing}", port_var="BROWSE_PORT")
    page.goto(url, timeout=120_000)
    page.wait_for_selector("text=The hyperplanes file is missing", timeout=180_000)
    body = page.inner_text("body")
    assert str(missing) in body and "facebias synth" in body and "make browse" in body
    assert "There was an error" not in body
    page.screenshot(path=str(screenshots / "transect_browser_missing_data.png"))
