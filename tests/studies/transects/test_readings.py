"""The transect readings the synth stage writes on a backend without truth (the DCGAN):
``transects/readings.parquet`` equals, bit for bit, what the notebooks' labelling computes on
the PNGs read back from disk; a changed image makes the reader refuse the file; a missing
file falls back to labelling, with a warning; the procedural backend writes none."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from facebias.annotate.machine import MACHINE_ANNOTATORS, label_images
from facebias.generate import checks
from facebias.generate.build import (
    READINGS_KEY,
    TRANSECT_READINGS,
    SynthConfig,
    image_key,
    render_products,
    transect_readings,
    write_pngs,
)
from facebias.generate.dcgan import DCGANGenerator
from facebias.io import load_params, repo_root

# a tiny DCGAN build (120 fit-set renders, 2 transects = 16 images): about 15 s on 2 cores
pytestmark = pytest.mark.slow(seconds=25)

#: The two notebooks' labeller sets (synthetic_faces_dcgan.py's stab_names, transects_dcgan.py's names).
GAN_FACES = ["p_male", "ita", "age_years", "smile", "face_luminance", "yaw_deg", "light_asymmetry",
             "border_luminance", "image_luminance", "image_b_star", "face_b_star"]
TRANSECTS = ["p_male", "ita", "light_asymmetry", "face_luminance"]


@pytest.fixture(scope="module")
def gen() -> DCGANGenerator:
    return DCGANGenerator(device="cpu")


@pytest.fixture(scope="module")
def built(gen, tmp_path_factory) -> Path:
    """The synth stage on the DCGAN (params.yaml's generate_dcgan at smoke size)."""
    params = load_params(repo_root() / "params.yaml", "generate_dcgan")
    cfg = SynthConfig.from_params({**params, "scale": "smoke", "n_fit": 120, "n_transects": 2})
    out = tmp_path_factory.mktemp("dcgan")
    render_products(gen, cfg, out)
    return out / "transects"


def load_png(folder: Path, image_id: str) -> np.ndarray:
    """As the notebooks load a transect image."""
    return np.asarray(Image.open(folder / "images" / f"{image_id}.png").convert("RGB"))


def test_build_readings_equal_labelling_the_pngs(gen, built):
    table = pd.read_parquet(built / "images.parquet")
    stored = pd.read_parquet(built / TRANSECT_READINGS)
    ids = list(table["image_id"])
    assert list(stored.columns) == ["image_id", READINGS_KEY, *MACHINE_ANNOTATORS]
    assert list(stored["image_id"]) == ids and len(ids) == 16
    images = [load_png(built, i) for i in ids]
    # the key is of the pixels written: the PNGs read back, and the renders of the latents
    assert list(stored[READINGS_KEY]) == [image_key(im) for im in images]
    renders = gen.synthesize(np.load(built / "latents.npy"))
    assert list(stored[READINGS_KEY]) == [image_key(im) for im in renders]
    # every reading equals the notebooks' own labelling of the PNGs (NaN = NaN)
    names = list(MACHINE_ANNOTATORS)
    fresh = label_images(images, names, progress=False)
    pd.testing.assert_frame_equal(stored[names], fresh, check_exact=True)
    assert np.isfinite(fresh.to_numpy()).any()
    # the reader gives what each notebook computed before, in the order asked for
    images_stacked = np.stack(images)  # transects_dcgan.py labels views of one stacked array
    pd.testing.assert_frame_equal(
        transect_readings(built, table["image_id"], list(images_stacked), TRANSECTS),
        label_images(list(images_stacked), TRANSECTS, progress=False), check_exact=True)
    pd.testing.assert_frame_equal(transect_readings(built, ids, images, GAN_FACES),
                                  checks.machine_measure(images, GAN_FACES), check_exact=True)
    back = ids[::-1]
    got = transect_readings(built, back, images[::-1], ["p_male", "ita"], verbose=False)
    np.testing.assert_array_equal(got.to_numpy(), fresh[["p_male", "ita"]].to_numpy()[::-1])


def test_changed_image_is_refused(built, tmp_path):
    folder = tmp_path / "transects"
    shutil.copytree(built, folder)
    ids = list(pd.read_parquet(folder / "images.parquet")["image_id"])
    for k in (5, 9):  # one pixel of two images altered and written as the build writes PNGs
        img = load_png(folder, ids[k]).copy()
        img[10, 20, 1] ^= 1
        write_pngs(folder / "images", [ids[k]], [img])
    images = [load_png(folder, i) for i in ids]
    with pytest.raises(ValueError, match=f"image '{ids[5]}' is not the image") as err:
        transect_readings(folder, ids, images, TRANSECTS)
    assert "\n" not in str(err.value)
    # the untouched images still pass
    keep = [i for i in range(len(ids)) if i not in (5, 9)]
    transect_readings(folder, [ids[i] for i in keep], [images[i] for i in keep], TRANSECTS, verbose=False)
    with pytest.raises(ValueError, match="no row for image 'tr9999_000'"):
        transect_readings(folder, ["tr9999_000"], images[:1], TRANSECTS)
    with pytest.raises(ValueError, match="no readings of"):
        transect_readings(folder, ids[:1], images[:1], ["not_a_labeller"])
    with pytest.raises(ValueError, match="2 images for 1 image ids"):
        transect_readings(folder, ids[:1], images[:2], TRANSECTS)


def test_missing_readings_fall_back_to_labelling(built, tmp_path):
    folder = tmp_path / "transects"
    shutil.copytree(built, folder)
    (folder / TRANSECT_READINGS).unlink()
    ids = list(pd.read_parquet(folder / "images.parquet")["image_id"])[:6]
    images = [load_png(folder, i) for i in ids]
    with pytest.warns(UserWarning, match="does not exist.*labelling the 6 transect images here"):
        got = transect_readings(folder, ids, images, TRANSECTS)
    pd.testing.assert_frame_equal(got, label_images(images, TRANSECTS, progress=False), check_exact=True)
    calls = []

    def measure(ims, names):
        calls.append((len(ims), list(names)))
        return checks.machine_measure(ims, names)

    with pytest.warns(UserWarning, match="does not exist"):
        got = transect_readings(folder, ids, images, GAN_FACES, measure=measure)
    assert calls == [(6, GAN_FACES)]
    pd.testing.assert_frame_equal(got, label_images(images, GAN_FACES, progress=False), check_exact=True)
