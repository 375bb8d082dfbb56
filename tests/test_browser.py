"""The transect browser: its logic in plain pytest (a tiny linear stand-in generator), and
the real notebook served by voila and driven in headless Chromium."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from facebias.browser import TransectBrowser, grid_image, png_bytes
from facebias.generate.hyperplanes import Hyperplanes

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
    skin-tone slider re-renders the face and its reading."""
    src = (ROOT / "notebooks" / "transect_browser.py").read_text()
    src = src.replace('backend = "procedural"', 'backend = "dcgan"').replace("n_fit = 1500", "n_fit = 200")
    assert 'backend = "dcgan"' in src and "n_fit = 200" in src
    nb = tmp_path / "transect_browser_dcgan.py"
    nb.write_text(src)
    page = browser_page
    page.goto(voila(nb), timeout=120_000)
    page.wait_for_selector(".widget-slider", timeout=300_000)
    page.wait_for_selector("text=/labellers: ita/", timeout=180_000)
    # one slider per GAN hyperplane (gender, skin tone, age, smile, luminance, yaw, light) + the grid range
    assert page.locator(".widget-slider").count() == 7 + 1
    before = _img_src(page)
    reading = page.inner_text(".widget-html-content >> text=/labellers: /")
    page.screenshot(path=str(screenshots / "transect_browser_dcgan_before.png"))
    page.locator(".widget-slider [role=slider]").nth(1).focus()  # skin_tone
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
