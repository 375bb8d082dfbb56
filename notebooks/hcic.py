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
# # Face recognition judged by human identity consensus (HCIC) — the measurement side of paper 000
#
# Liang et al., *Benchmarking algorithmic bias in face recognition: an experimental approach
# using synthetic faces and human evaluation*. Prototypes of 6 demographic groups (WM WF BM BF
# AM AF) per seed, each varied along pose, lighting, age and expression; pairs of a prototype
# with its own sequence (intended same) and with 3 other same-group prototypes' sequences
# (intended different). Humans rate every pair (9 responses, 0 = likely same ... 4 = likely
# different); **HCIC** = trimmed mean of the middle 5 / 4, and a pair counts as *same* iff
# HCIC ≤ t_hcic (0.3 main, 0.2 / 0.4 supplement). Pairs with an uncanny image (normalised
# uncanny score ≥ 0.8) are dropped. Face recognition errors (FNMR vs FMR) are then broken down
# by the varied attribute and the group (Fig. 6); similarities by relation, attribute level and
# group (Fig. 5, Supp. 10-12).
#
# **What is substituted here.** Faces: the **procedural generator** (`data/synthetic/hcic`,
# 20 seeds × 6 groups × 17 = 2,040 renders, not the paper's EG3D images). Models: two real face
# recognisers that ship in registry packages — **SFace** (OpenCV, 128-d) and **dlib** (ResNet,
# 128-d) — instead of the paper's SFNet-20 / ResNet-34 models, plus a **toy simulated system**
# (`facebias.studies.hcic.simulate_embeddings`) with planted worse recognition of BF and AM.
# Annotators: a **simulated panel** (`facebias.annotate.simulate`), not the paper's 555,000 human
# answers. Every number below is about these substitutes; the paper's headline findings can only
# be checked with its data (`facebias.datasets.causalface`) and models.
#
# Conventions: scores are cosine similarities and a pair **matches iff s > t**
# (`facebias.metrics`; the paper writes s ≥ t). Fixed thresholds (Fig. 6 triangles): SFace's
# published cosine 0.363; dlib's published *distance* 0.6, i.e. cosine 1 − 0.6²/2 = 0.82 on unit
# vectors; the toy system uses the paper's t = 0.6.

# %% tags=["parameters"]
params_file = "params.yaml"
overrides = {}  # replaces keys of the `hcic` section (models, t_hcic, t_main, t_fixed, fmr, n_boot, ...)
synthetic = "data/synthetic"
image_votes = "data/annotations/hcic_image_votes.parquet"
pair_votes = "data/annotations/hcic_pair_votes.parquet"
cache_dir = "artifacts/embeddings"  # embedding cache (by pixel content and model); "" for none
compute = None  # where uncached embeddings run: None = params.yaml `compute` (Dask); "serial" = in-process
smoke = False  # tests: `smoke_seeds` seeds, the first model only, t_main only, 20 bootstrap replicates
smoke_seeds = 3
reports_dir = "reports"
name = "hcic"  # outputs: {reports_dir}/figures/{name}_*.png, {reports_dir}/metrics/{name}.json

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from facebias import plots
from facebias.annotate import SCALES_000, scores_from_votes
from facebias.compute import load_compute
from facebias.io import load_params, repo_root, write_json_atomic
from facebias.metrics import failure_to_enrol
from facebias.studies import hcic as H

t0 = time.time()
root = repo_root()
cfg = {**load_params(root / params_file, "hcic"), **overrides}
models = list(cfg["models"])  # real FR models on the renders: sface, dlib
t_hcic = list(cfg["t_hcic"])  # HCIC label thresholds (same identity iff HCIC <= t)
t_main = cfg["t_main"]  # the paper's main HCIC threshold (Fig. 6); the others give Supp. 15/16
t_fixed = cfg["t_fixed"]  # the paper's similarity threshold (Fig. 5 line, Fig. 6 triangles), toy system
fmr = cfg["fmr"]  # target FMR of the per-group FNMR table
n_boot = cfg["n_boot"]  # prototype-cluster bootstrap replicates
toy_noise = dict(cfg["toy_noise"])  # planted extra embedding noise of the toy system, by group
n_cross = cfg["n_cross"]  # cross-group partner prototypes per prototype (Fig. 5, third panel)
seed = cfg["seed"]
data = root / synthetic / "hcic"
fig_dir = root / reports_dir / "figures"
images = pd.read_parquet(data / "images.parquet")
pairs = pd.read_parquet(data / "pairs.parquet")
if smoke:
    keep_seeds = sorted(images["seed"].unique())[:smoke_seeds]
    images = images[images["seed"].isin(keep_seeds)].reset_index(drop=True)
    pairs = pairs[pairs["seed_a"].isin(keep_seeds) & pairs["seed_b"].isin(keep_seeds)].reset_index(drop=True)
    n_boot = min(n_boot, 20)
    models, t_hcic = list(models)[:1], [t_main]
cross = H.cross_group_pairs(images, n_per_prototype=n_cross, seed=seed, start_id=int(pairs["pair_id"].max()) + 1)
allp = pd.concat([pairs, cross], ignore_index=True)
allp["relation"] = H.relation(allp)
GROUPS = ["WM", "WF", "BM", "BF", "AM", "AF"]
SYSTEMS = [*models, "toy"]
FIXED = {**H.MODEL_THRESHOLDS, "toy": t_fixed}
n_annot = pd.read_parquet(root / pair_votes, columns=["annotator"])["annotator"].nunique()
provenance = (f"faces: procedural generator ({len(images)} renders, {synthetic}); models: "
              f"{', '.join('SFace' if m == 'sface' else m for m in models)} + toy simulated system "
              f"(planted noise {toy_noise}); annotators: simulated panel N={n_annot} — not the paper's data")
print(provenance)
print(f"{len(pairs)} annotated pairs ({int(pairs['label'].sum())} intended same) + {len(cross)} cross-group pairs")

# %% [markdown]
# ## Embeddings and similarities
# The real models run detection (YuNet), alignment and embedding on every render; embeddings
# are cached on disk by pixel content and model. A failure to enrol gives a NaN similarity
# and is reported (NIST practice), never silently dropped.

# %%
paths = [data / "images" / f"{i}.png" for i in images["image_id"]]
compute_cfg = load_compute(root / params_file, compute)
vectors, fte, timing = {}, {}, {}
for m in models:
    t = time.time()
    v, ok = H.embed_images(paths, m, cache_dir=root / cache_dir if cache_dir else None, compute=compute_cfg)
    timing[m] = time.time() - t
    vectors[m] = pd.DataFrame(v, index=images["image_id"].astype(str))
    fte[m] = failure_to_enrol(ok, images["group"].to_numpy())
    print(f"{m}: {ok.sum()}/{len(ok)} enrolled in {timing[m]:.1f} s")
vectors["toy"] = H.simulate_embeddings(images, group_noise=toy_noise, seed=seed)
for s in SYSTEMS:
    sc = H.pair_scores(allp, vectors[s])
    allp[f"score_{s}"] = sc
    print(s, sc.attrs)
display(pd.concat({m: f[["n", "n_fte", "fte_rate"]] for m, f in fte.items()}, axis=1))  # noqa: F821

# %% [markdown]
# ## Human annotations: HCIC, the realism filter, labels
# Single-image scores are the plain mean of the 9 responses (B4.13); the uncanny score is
# normalised to [0, 1] (mean / 4) and a pair is kept iff both images score below 0.8.
# Age and expression levels in the box plots are the annotated bins of width 0.8 (Supp. E).

# %%
pv = pd.read_parquet(root / pair_votes)
iv = pd.read_parquet(root / image_votes)
matrix = H.pair_vote_matrix(pv, pairs)
pairs["hcic"] = H.pair_hcic(matrix)
image_scores = scores_from_votes(iv, SCALES_000, agg="mean")  # plain mean / 4, in [0, 1]
means = {q: image_scores[q] * 4 for q in image_scores}  # raw 0-4 means (the annotated bins)
uncanny = image_scores["uncanny"]
pairs["keep"] = H.uncanny_pair_keep(pairs, uncanny)
for t in t_hcic:
    pairs[f"label_{t:g}"] = H.label_pairs(pairs, pairs["hcic"].to_numpy(), t)
allp["level_human"] = H.human_levels(allp, means)
label_counts = {}
for t in t_hcic:
    lab = pairs[f"label_{t:g}"]
    label_counts[f"{t:g}"] = {
        "positive_all": int(lab.sum()), "negative_all": int((1 - lab).sum()),
        "positive_kept": int(lab[pairs["keep"]].sum()), "negative_kept": int((1 - lab)[pairs["keep"]].sum()),
        "intended_same_judged_different": int(((pairs["label"] == 1) & (lab == 0)).sum()),
        "intended_different_judged_same": int(((pairs["label"] == 0) & (lab == 1)).sum()),
    }
filt = {"intended_positive_kept": int(pairs.loc[pairs["keep"], "label"].sum()),
        "intended_negative_kept": int((1 - pairs.loc[pairs["keep"], "label"]).sum()),
        "images_uncanny": int((uncanny >= 0.8).sum()), "images_realistic_share": float((uncanny < 0.8).mean())}
display(pd.DataFrame(label_counts))  # noqa: F821
print("realism filter:", filt)

# %% [markdown]
# ## Similarity by relation, attribute level and group (Fig. 5, Supp. 10-12)
# Median (marker) and 15-85 % range (bar). Rows: same prototype; same group, other seed;
# other group and seed. Dashed: the fixed threshold of the model.

# %%
LEVEL_NAMES = {"pose": ["-30°", "-15°", "0°", "15°", "30°"], "light": ["orig", "up", "down", "left", "right"],
               "age": [f"bin {i}" for i in range(5)], "expression": [f"bin {i}" for i in range(5)]}
summaries, ordering = {}, {}
for s in SYSTEMS:
    summ = H.similarity_summary(allp, f"score_{s}", by=["relation", "attribute", "level_human", "group"])
    summaries[s] = summ
    med = allp.groupby("relation")[f"score_{s}"].median()
    ordering[s] = {**{k: float(v) for k, v in med.items()},
                   "ordered": bool(med["same_prototype"] > med["same_group"] > med["different_group"])}
    fig, axes = plt.subplots(3, 4, figsize=(15, 9.5), sharey=True)
    for r, rel in enumerate(H.RELATIONS):
        for c, attr in enumerate(H.ATTRIBUTES):
            ax = axes[r, c]
            sub = summ[(summ["relation"] == rel) & (summ["attribute"] == attr)]
            for j, g in enumerate(GROUPS):
                gs = sub[sub["group"] == g]
                x = gs["level_human"].to_numpy() + (j - 2.5) * 0.12
                ax.errorbar(x, gs["median"], yerr=plots.interval_err(gs["median"], gs["q15"], gs["q85"]),
                            fmt="o", ms=3.5, lw=1, color=plots.group_color(g), label=g if r == c == 0 else None)
            ax.axhline(FIXED[s], color="C3", ls="--", lw=1)
            ax.set_xticks(range(5), LEVEL_NAMES[attr], fontsize=8)
            if r == 0:
                ax.set_title(attr + (" (annotated bin)" if attr in ("age", "expression") else ""))
            if c == 0:
                ax.set_ylabel(f"{rel.replace('_', ' ')}\ncosine similarity")
    axes[0, 0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"{s}: similarity by attribute level and group (median, 15-85 %); dashed: t = {FIXED[s]:.3g}")
    fig.tight_layout(rect=(0, 0.01, 1, 0.98))
    plots.stamp(fig, provenance)
    plots.save(fig, fig_dir / f"{name}_similarity" / f"{s}.png")  # one per system
    plt.close(fig)
display(pd.DataFrame(ordering).round(3))  # noqa: F821

# %% [markdown]
# Extension (B1.11 [REC], not in the paper): the expected similarity drop from changing one
# attribute, Δ(level) = mean over prototypes of s(P, P) − s(P, seq[level]).

# %%
delta = {s: H.delta_attr(allp, f"score_{s}") for s in SYSTEMS}
display(pd.concat({s: d.set_index(["attribute", "level"])["delta"] for s, d in delta.items()}, axis=1)  # noqa: F821
        .unstack("level").round(3))

# %% [markdown]
# ## FNMR vs FMR per attribute and group (Fig. 6; Supp. 15, 16)
# Ground truth = HCIC labels on the pairs kept by the realism filter. Triangles: the fixed
# threshold of each model. Each (attribute, group) cell has about 100 intended-same and 300
# intended-different pairs, so FMR below ~3e-3 is not resolved. Same-prototype pairs that the
# annotators judged different become *impostors* with similarities near 1; at low FMR they set
# the threshold, so the FNMR there reflects the annotations as much as the model. The table
# with the intended labels separates the two.

# %%
kept = pairs[pairs["keep"]].copy()
for s in SYSTEMS:
    kept[f"score_{s}"] = allp.loc[: len(pairs) - 1, f"score_{s}"].to_numpy()[pairs["keep"].to_numpy()]
for t in t_hcic:
    lab = f"label_{t:g}"
    fig, axes = plt.subplots(4, len(SYSTEMS), figsize=(4.2 * len(SYSTEMS), 15), squeeze=False)
    for c, s in enumerate(SYSTEMS):
        curves = H.error_curves(kept, f"score_{s}", lab, missing="drop")
        pts = H.fixed_threshold_points(kept, f"score_{s}", lab, t=FIXED[s], missing="drop")
        for r, attr in enumerate(H.ATTRIBUTES):
            ax = axes[r, c]
            plots.plot_det(ax, {g: curves[(attr, g)] for g in GROUPS if (attr, g) in curves},
                           fmr_min=1e-3, fnmr_min=1e-3)
            for _, p in pts[pts["attribute"] == attr].iterrows():
                ax.plot(max(p["fmr"], 1e-3), max(p["fnmr"], 1e-3), marker="^", ms=8, ls="none",
                        color=plots.group_color(p["group"]), mec="k", mew=0.5)
            ax.set_title(f"{s} — {attr}", fontsize=10)
            if (r, c) != (0, 0):
                ax.get_legend().remove()
            if r < 3:
                ax.set_xlabel("")
            if c > 0:
                ax.set_ylabel("")
    fig.suptitle(f"FNMR vs FMR with HCIC labels (t_hcic = {t:g}); triangles: fixed threshold")
    fig.tight_layout(rect=(0, 0.01, 1, 0.98))
    plots.stamp(fig, provenance)
    plots.save(fig, fig_dir / f"{name}_det" / f"t{int(round(t * 100)):02d}.png")  # one per t_hcic
    plt.close(fig)

# %%
fnmr_tables = {}
for s in SYSTEMS:
    for t in t_hcic:
        tab = H.fnmr_at_fmr_by_group(kept, f"score_{s}", f"label_{t:g}", fmr=fmr, n_boot=n_boot,
                                     seed=seed, missing="drop")
        fnmr_tables[(s, t)] = tab
intended_tables = {s: H.fnmr_at_fmr_by_group(kept, f"score_{s}", "label", fmr=fmr, n_boot=n_boot, seed=seed,
                                              missing="drop") for s in SYSTEMS}
main = pd.concat({s: fnmr_tables[(s, t_main)].set_index("group")[["fnmr_group", "fnmr_group_lo",
                                                                   "fnmr_group_hi"]] for s in SYSTEMS}, axis=1)
display(main.round(3))  # noqa: F821
print("the same with the intended labels (no human relabelling):")
display(pd.concat({s: t.set_index("group")["fnmr_group"] for s, t in intended_tables.items()}, axis=1).round(3))  # noqa: F821
fig, axes = plt.subplots(1, len(SYSTEMS), figsize=(4.2 * len(SYSTEMS), 3.6), squeeze=False)
for ax, s in zip(axes[0], SYSTEMS, strict=True):
    tab = fnmr_tables[(s, t_main)].set_index("group")
    tab = tab.loc[[g for g in GROUPS if g in tab.index]]
    ax.bar(tab.index, tab["fnmr_group"], color=[plots.group_color(g) for g in tab.index],
           yerr=plots.interval_err(tab["fnmr_group"], tab["fnmr_group_lo"], tab["fnmr_group_hi"]), capsize=3)
    ax.set_title(f"{s}: FNMR at FMR = {fmr:g}", fontsize=10)
    ax.set_ylabel("FNMR (95 % prototype bootstrap CI)")
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_fnmr_by_group.png")
plt.close(fig)

# %% [markdown]
# ## Annotations: consistency (Supp. 13), validation (Fig. 3, Supp. 9), group independence (Fig. 4, Supp. 14)

# %%
sd, consistency = H.annotator_consistency(matrix, pairs)
display(consistency.round(3))  # noqa: F821
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
ax = axes[0]
ax.errorbar(consistency["attribute"], consistency["median"],
            yerr=plots.interval_err(consistency["median"], consistency["q15"], consistency["q85"]),
            fmt="o", capsize=4)
ax.set(ylabel="per-pair SD / 4", title="annotator consistency (median, 15-85 %)", ylim=(0, 0.6))
ax = axes[1]
for lab_, ls in ((1, "-"), (0, "--")):
    ax.hist(pairs.loc[pairs["label"] == lab_, "hcic"], bins=np.arange(-0.025, 1.05, 0.05), histtype="step",
            ls=ls, label="intended same" if lab_ else "intended different")
for t in t_hcic:
    ax.axvline(t, color="0.5", lw=0.8)
ax.set(xlabel="HCIC (0 = same ... 1 = different)", ylabel="pairs", title="HCIC distribution")
ax.legend(fontsize=8)
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_annotator_consistency.png")
plt.close(fig)

# %%
panels = [("age", "step"), ("expression", "step"), ("gender", "group"), ("skin_color", "group"), ("uncanny", "group")]
fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4))
for ax, (q, by) in zip(axes, panels, strict=True):
    tab = H.response_histogram(iv, images, q, by=by)
    for j, (key, row) in enumerate(tab.iterrows()):
        color = plots.group_color(key) if by == "group" else plt.cm.viridis(j / 4)
        ax.plot(row.index, row.to_numpy(), marker="o", ms=3, color=color, label=str(key))
    ax.set(xlabel=f"{q} response (0..4)", ylabel="share of responses",
           title=f"{q} by {'intended step' if by == 'step' else 'group'}")
    ax.legend(fontsize=6, ncol=2)
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_validation.png")
plt.close(fig)

# %%
chi = H.group_independence_test(matrix, pairs)
display(chi.round(4))  # noqa: F821
fig, axes = plt.subplots(2, 4, figsize=(15, 6), sharey=True)
for r, lab_ in enumerate((1, 0)):
    for c, attr in enumerate(H.ATTRIBUTES):
        ax = axes[r, c]
        m = (pairs["attribute"] == attr) & (pairs["label"] == lab_)
        for g in GROUPS:
            vals = matrix[m & (pairs["group"] == g)].to_numpy().ravel()
            if vals.size == 0:
                continue
            share = np.bincount(vals.astype(int), minlength=5) / vals.size
            ax.plot(range(5), share, marker="o", ms=3, color=plots.group_color(g), label=g)
        ax.set_xticks(range(5), ["L same", "P same", "unsure", "P diff", "L diff"], fontsize=7)
        ax.set_title(f"{attr}: {'same seed' if lab_ else 'different seed'}", fontsize=9)
axes[0, 0].legend(fontsize=7, ncol=2)
axes[0, 0].set_ylabel("share of responses")
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_identity_responses.png")
plt.close(fig)

# %% [markdown]
# ## Metrics for DVC

# %%
def fnmr_json(tab: pd.DataFrame) -> dict:
    return {r["group"]: {"fnmr": r["fnmr_group"], "lo": r.get("fnmr_group_lo"), "hi": r.get("fnmr_group_hi"),
                         "threshold": r["threshold_group"], "n_genuine": int(r["n_genuine"]),
                         "n_impostor": int(r["n_impostor"])} for _, r in tab.iterrows()}


head = {
    "source": "synthetic (procedural generator, simulated annotators)",
    "provenance": provenance,
    "smoke": bool(smoke),
    "n_pairs": len(pairs), "n_cross_group_pairs": len(cross),
    "fmr_target": fmr, "n_boot": int(n_boot), "bootstrap_unit": "prototype (anchor) clusters",
    "fixed_thresholds": FIXED,
    "failure_to_enrol": {m: int(f.loc["all", "n_fte"]) for m, f in fte.items()},
    "similarity_by_relation": ordering,
    "fnmr_at_fmr": {s: {f"{t:g}": fnmr_json(fnmr_tables[(s, t)]) for t in t_hcic} for s in SYSTEMS},
    "fnmr_at_fmr_intended_labels": {s: fnmr_json(t) for s, t in intended_tables.items()},
    "fixed_threshold_rates": {s: H.fixed_threshold_points(kept, f"score_{s}", f"label_{t_main:g}", t=FIXED[s],
                                                          by=("group",), missing="drop")
                              .set_index("group")[["fmr", "fnmr"]].to_dict(orient="index") for s in SYSTEMS},
    "labels": label_counts, "realism_filter": filt,
    "per_pair_sd": {"median": float(sd.median()),
                    "by_attribute": consistency.set_index("attribute")["median"].to_dict()},
    "group_independence": {"n_tests": len(chi), "n_rejected_bonferroni": int(chi["reject"].sum()) if len(chi) else 0},
    "delta_attr_extension": {s: d[d["level"].isin([0, 4])].set_index(["attribute", "level"])["delta"]
                             .rename(index=str).to_dict() for s, d in delta.items()},
}
head["delta_attr_extension"] = {s: {f"{a}_{lv}": v for (a, lv), v in d.items()}
                                for s, d in head["delta_attr_extension"].items()}
write_json_atomic(root / reports_dir / "metrics" / f"{name}.json", head)
print(f"done in {time.time() - t0:.0f} s (embedding: " + ", ".join(f"{m} {t:.0f} s" for m, t in timing.items()) + ")")
{k: head[k] for k in ("similarity_by_relation", "labels", "per_pair_sd")}
