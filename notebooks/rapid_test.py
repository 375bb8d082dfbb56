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
# # Paper 001 — a rapid test for the accuracy and bias of face recognition
#
# Knott, Serna, Mann, Perona, *A Rapid Test for Accuracy and Bias of Face Recognition
# Technology* (WACV 2025). The images a web search returns for a name are labelled with that
# name; a fraction of them show someone else. Per query and system, the leading eigenvector of
# the normalised pairwise-score matrix picks out the dominant identity; queries whose
# eigen-structure is ambiguous are dropped; a strict majority vote across systems gives each
# face a label (1 = the queried person, 0 = someone else, −1 = excluded). FNMR-vs-FMR curves
# and per-group error rates then come from these estimated labels, with no human annotation.
# Method: `facebias.studies.rapid` (the authors' code rules: gap rule T = 4 / ratio 1.5,
# τ = 0.2 on z = λ₁u₁², ≥ 8 faces per query, ≥ 5 per cluster; spec `seed_001.md` §1.4–1.8).
#
# Claims checked here, on a known-truth world:
#
# 1. the estimated FNMR-vs-FMR curves lie on the true ones (Fig. 1); the naive labels
#    (every face = the queried person) do not;
# 2. per-group EERs are estimated well enough to see a planted bias (Fig. 5);
# 3. the majority vote helps, most for the weakest system (Fig. S.7);
# 4. annotating a fraction of the faces (excluded queries first, then the most ambiguous
#    faces) closes the remaining gap (App. G, Fig. S.15);
# 5. the method needs the queried person to be the *prevalent* identity: it breaks down when
#    too small a share p of a query's faces shows that person (the measured breakdown p,
#    `breakdown.p` in the metrics, is printed at the end of the p sweep).
#
# **Backend: a simulated world** (`facebias.worlds.rapid.make_rapid_world`): latent identities in 4
# groups, noisy queries with distractors and co-occurring identities, and 5 **simulated**
# systems of different quality and score scales (cosine, 0–100 confidence, logit, sigmoid,
# percent). Every number below is about that world; none is the paper's (its Celebrities and
# Athletes data and the five commercial services are not available). For real images, see
# `facebias.studies.rapid_images.image_folder_study` (dlib and SFace on your own folders).
#
# Conventions: scores are similarities; a pair matches iff `score > t`; rates are fractions;
# curves use the **raw** scores (normalisation is for estimation only). True curves use the
# true labels of *all* queries; estimated curves use only included queries.

# %% tags=["parameters"]
params_file = "params.yaml"  # reads the `rapid` (method), `rapid_experiment` and `rapid_world` sections
overrides = {}  # replaces keys of the `rapid` section (RapidConfig)
experiment_overrides = {}  # replaces keys of the `rapid_experiment` section (RapidExperimentConfig)
world_overrides = {}  # replaces keys of the `rapid_world` section (RapidWorldConfig)
reports_dir = "reports"
name = "rapid"  # outputs: {reports_dir}/figures/{name}_*.png and {reports_dir}/metrics/{name}.json

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import yaml

from facebias import plots
from facebias.io import load_params, repo_root
from facebias.schema import write_metrics
from facebias.studies import rapid as R
from facebias.worlds.rapid import RapidWorldConfig, make_rapid_world

t0 = time.time()
root = repo_root()
overrides, experiment_overrides, world_overrides = (  # `papermill -p NAME '{...}'` passes a string
    (yaml.safe_load(o) or {}) if isinstance(o, str) else o
    for o in (overrides, experiment_overrides, world_overrides))
method = R.RapidConfig.from_params({**load_params(root / params_file, "rapid"), **overrides})
experiment = R.RapidExperimentConfig.from_params(
    {**load_params(root / params_file, "rapid_experiment"), **experiment_overrides})
# the default world: RapidWorldConfig fields from `rapid_world`, then world_overrides
world_params = {**load_params(root / params_file, "rapid_world"), **world_overrides}
fmrs = list(experiment.fmr)  # FNMR is read at these FMRs (the first is the headline)
p_sweep = list(experiment.p_sweep)  # correct-identity fractions for the sweep
sweep_seeds = list(experiment.sweep_seeds)  # world seeds per p
sweep_qpg = experiment.sweep_queries_per_group  # world size in the sweep
semi_p = experiment.semi_p  # the world of the partial-annotation curve
semi_fractions = list(experiment.semi_fractions)
semi_seed = experiment.semi_seed
world_cfg = RapidWorldConfig.from_params(world_params)
fig_dir = root / reports_dir / "figures"
systems = list(world_cfg.systems)
provenance = (f"backend: simulated world (facebias.worlds.rapid.make_rapid_world, seed {world_cfg.seed}), "
              f"simulated systems {', '.join(systems)} — not the paper's data or services")
print(provenance)
print(f"method: {method}")
print(f"world: p = {world_cfg.p}, {len(world_cfg.groups)} groups x {world_cfg.queries_per_group} "
      f"queries, {world_cfg.faces_min}-{world_cfg.faces_max - 1} faces per query; FMRs {fmrs}")


def run(world, cfg=method):
    """Estimate labels on a world's within-query scores (GMM also fit on cross pairs)."""
    return R.estimate(world.scores, cfg, fit_scores=world.cross_scores)


def delta(est_pairs, true_pairs):
    """|FNMR_est - FNMR_true| per system (rows) and FMR (columns), pooled groups."""
    return R.delta_fnmr_by_system(est_pairs, true_pairs, fmrs)


# %% [markdown]
# ## The default world and the estimate
# Queries included, label agreement on the included faces, and the error types of the paper
# (Type A: a face left out because its query was dropped; Type B: an included face labelled
# wrongly). Confusion matrix: true label (rows) × estimate (columns).

# %%
world = make_rapid_world(world_cfg)
est = run(world)
labels = est.labels
truth_pairs = R.true_pairs(world.faces, world.scores, world.cross_scores)
est_pairs = R.world_pairs(world, labels)
agree = R.label_agreement(labels, world.faces)
y_true = R.true_labels(world.faces).astype({"query": str})
cm = labels.astype({"query": str}).merge(y_true, on=["query", "face"], suffixes=("", "_true"))
confusion = pd.crosstab(cm["label_true"], cm["label"], rownames=["true"], colnames=["estimate"])
print(f"{len(world.faces):,} faces in {est.queries.shape[0]} queries; "
      f"{int(est.queries['included'].sum())} queries included "
      f"({est.queries['reason'].replace('', 'included').value_counts().to_dict()})")
print({k: round(v, 4) if isinstance(v, float) else v for k, v in agree.items()})
confusion

# %% [markdown]
# ## Estimated vs true FNMR-vs-FMR curves (Fig. 1 style), with the naive baseline
# Thick pale: true labels (all queries). Thin dark: the method's estimate. Dashed grey: naive
# labels (every face of a query is the queried person), which count distractor pairs as
# genuine and so overstate FNMR.

# %%
naive_pairs = R.world_pairs(world, R.naive_labels(world.scores))
curves = {"true": R.curves_by_system_group(truth_pairs),
          "estimate": R.curves_by_system_group(est_pairs),
          "naive": R.curves_by_system_group(naive_pairs)}
style = {"true": dict(lw=5, alpha=0.35), "estimate": dict(lw=1.2), "naive": dict(lw=1.0, ls="--",
                                                                                  color="0.45")}
fig, axes = plt.subplots(1, len(systems), figsize=(3.3 * len(systems), 3.4), squeeze=False,
                         layout="constrained", sharey=True)
for i, (ax, s) in enumerate(zip(axes[0], systems, strict=True)):
    plots.det_axes(ax, fmr_min=1e-4, fnmr_min=1e-4)
    for kind in ("true", "estimate", "naive"):
        c = curves[kind].get((s, R.ALL))
        if c is not None:
            t = plots.thin_curve(c)
            kw = {"color": f"C{i}", **style[kind]}
            ax.plot(t.fmr, t.fnmr, label=kind, **kw)
    ax.set_title(f"{s} ({world_cfg.systems[s]['transform']})", fontsize=9)
    if i:
        ax.set_ylabel("")
axes[0][0].legend(fontsize=7)
fig.suptitle(f"Estimated vs true curves, p = {world_cfg.p}")
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_curves.png")
plt.show()
d_method, d_naive = delta(est_pairs, truth_pairs), delta(naive_pairs, truth_pairs)
oracle_pairs = R.world_pairs(world, R.oracle_labels(labels, world.faces))
d_type_a, d_type_b = delta(oracle_pairs, truth_pairs), delta(est_pairs, oracle_pairs)
tau_rank = R.ranking_agreement(est_pairs, truth_pairs, fmrs[0])
pd.concat({"|ΔFNMR| method": d_method, "naive": d_naive, "Type A (oracle vs true)": d_type_a,
           "Type B (estimate vs oracle)": d_type_b}, axis=1).round(4)

# %% [markdown]
# ## EER per group, estimate vs truth (Fig. 5 style)
# Wilson 95 % intervals with n = min(genuine, impostor) pairs (pairs are not independent, so
# these are optimistic). Impostors are cross-query pairs of the same group whose two faces are
# both labelled 1.

# %%
eer_est, eer_true = R.eer_by_group(est_pairs), R.eer_by_group(truth_pairs)
groups = list(world_cfg.groups)
fig, axes = plt.subplots(1, len(systems), figsize=(3.0 * len(systems), 3.2), squeeze=False,
                         layout="constrained", sharey=True)
for i, (ax, s) in enumerate(zip(axes[0], systems, strict=True)):
    for kind, table, off, kw in (("true", eer_true, -0.12, dict(ms=11, alpha=0.35)),
                                 ("estimate", eer_est, 0.12, dict(ms=4))):
        t = table[(table["system"] == s) & (table["group"] != R.ALL)].set_index("group")
        t = t.reindex([g for g in groups if g in t.index])
        x = np.arange(len(t)) + off
        ax.errorbar(x, t["eer"], yerr=plots.interval_err(t["eer"], t["eer_lo"], t["eer_hi"]), fmt="o",
                    color=f"C{i}", capsize=2, label=kind, **kw)
        ax.set_xticks(np.arange(len(t)), t.index)
    ax.set_yscale("log")
    ax.set_title(s, fontsize=9)
    ax.grid(True, alpha=0.3)
axes[0][0].set_ylabel("EER")
axes[0][0].legend(fontsize=7)
fig.suptitle("Equal error rate per group (pale: truth, dark: estimate; 95 % Wilson)")
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_eer_groups.png")
plt.show()
eer_cmp = R.eer_comparison(est_pairs, truth_pairs)
eer_cmp.pivot(index="system", columns="group", values=["eer_true", "eer_est"]).round(4)

# %% [markdown]
# ## Voting ablation (Fig. S.7)
# |ΔFNMR| at the first FMR for each system, evaluated with: the majority vote (MV, the
# method); that system's own labels without the vote (same inclusion set); the method run on
# the single best-separated system alone; the connected-components graph baseline; and the
# naive labels.

# %%
ablation = R.voting_ablation(world, est, method, fmrs[0], true=truth_pairs)
fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
ablation.plot.bar(ax=ax, width=0.8, logy=True, rot=0)
ax.set_ylabel(f"|ΔFNMR| at FMR = {fmrs[0]:g}")
ax.set_title(f"Label source vs error of the estimated FNMR (p = {world_cfg.p})")
ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.08))
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_voting.png")
plt.show()
ablation.round(4)

# %% [markdown]
# ## Partial annotation (semi-supervised extension, App. G / Fig. S.15)
# A budget of a fraction f of the faces is annotated: first the faces of excluded queries
# (whole queries, seeded random order), then the included faces with the most ambiguous z
# (smallest min_s |z_s − τ|). At f = 1 every label is the true one and the curves coincide.

# %%
semi_world = make_rapid_world(RapidWorldConfig.from_params({**world_params, "p": semi_p}))
semi_est = run(semi_world).labels
semi_truth = R.true_pairs(semi_world.faces, semi_world.scores, semi_world.cross_scores)
weakest = world_cfg.truth().sort_values("rank")["system"].iloc[-1]
semi, semi_curves = R.semi_supervised_curve(semi_world, semi_est, semi_fractions, fmrs[0],
                                            seed=semi_seed, true=semi_truth)
semi_curves = {f: c.get(weakest) for f, c in semi_curves.items()}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
for i, s in enumerate(systems):
    ax1.plot(semi.index, semi[s], marker="o", ms=3, color=f"C{i}", label=s)
ax1.set_ylim(bottom=0)
ax1.grid(True, alpha=0.3)
ax1.set_xlabel("fraction of faces annotated")
ax1.set_ylabel(f"|ΔFNMR| at FMR = {fmrs[0]:g}")
ax1.legend(fontsize=7)
ax1.set_title(f"p = {semi_p}: error vs annotation budget", fontsize=9)
plots.det_axes(ax2, fmr_min=1e-4, fnmr_min=1e-4)
tc = semi_truth[semi_truth["system"] == weakest]
t = plots.thin_curve(R.curves_by_system_group(tc)[(weakest, R.ALL)])
ax2.plot(t.fmr, t.fnmr, lw=5, alpha=0.3, color="k", label="true")
for j, f in enumerate(semi_fractions):
    if semi_curves[f] is not None and f in (0.0, 0.5, 1.0):
        t = plots.thin_curve(semi_curves[f])
        ax2.plot(t.fmr, t.fnmr, lw=1.1, color=plt.cm.viridis(j / max(len(semi_fractions) - 1, 1)),
                 label=f"f = {f:g}")
ax2.legend(fontsize=7)
ax2.set_title(f"{weakest} (weakest system)", fontsize=9)
plots.stamp(fig, provenance.replace(f"seed {world_cfg.seed}", f"seed {world_cfg.seed}, p {semi_p}"))
plots.save(fig, fig_dir / f"{name}_semi_supervised.png")
plt.show()
semi.round(4)

# %% [markdown]
# ## Agreement and curve error against p, down to the breakdown
# For each p (mean fraction of a query's faces that show the queried person) and seed: a
# fresh world, the estimate, label agreement on included faces, the share of queries kept,
# and |ΔFNMR| (worst over systems) for the method and for the naive labels.

# %%
def sweep_world(p, seed):
    return make_rapid_world(RapidWorldConfig.from_params(
        {**world_params, "p": p, "seed": seed, "queries_per_group": sweep_qpg}))


sweep = R.p_sweep(sweep_world, p_sweep, sweep_seeds, method, fmrs)
by_p = R.sweep_by_p(sweep)
f0 = fmrs[0]
p_break = R.breakdown_p(sweep, f0)  # the largest p where the method is no better than naive
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
ax1.plot(sweep["p"], sweep["agreement"], "o", ms=3, color="C0", alpha=0.5)
ax1.plot(by_p.index, by_p["agreement"], "-", color="C0", label="label agreement (included)")
ax1.plot(by_p.index, by_p["queries_included"], "-s", ms=3, color="C1", label="queries included")
ax1.set_xlabel("p (fraction of a query's faces showing the queried person)")
ax1.set_ylim(0, 1.02)
ax1.legend(fontsize=7)
ax2.plot(sweep["p"], sweep[f"method_worst@{f0:g}"], "o", ms=3, color="C3", alpha=0.5)
ax2.plot(by_p.index, by_p[f"method_worst@{f0:g}"], "-", color="C3", label="method, worst system")
ax2.plot(by_p.index, by_p[f"method_mean@{f0:g}"], ":", color="C3", label="method, mean")
ax2.plot(by_p.index, by_p[f"naive_min@{f0:g}"], "--", color="0.4", label="naive, best system")
ax2.set_yscale("log")
ax2.set_xlabel("p")
ax2.set_ylabel(f"|ΔFNMR| at FMR = {f0:g}")
ax2.legend(fontsize=7)
above = by_p.index[by_p.index > p_break] if p_break is not None else []
for ax in (ax1, ax2):  # shade up to halfway to the next swept p above the breakdown
    if p_break is not None:
        ax.axvspan(min(p_sweep) - 0.03, (p_break + above.min()) / 2 if len(above) else p_break + 0.03,
                   color="0.85", zorder=0)
    ax.grid(True, alpha=0.3)
fig.suptitle("Accuracy of the estimate vs label noise (shaded: the method breaks, no better than naive)")
plots.stamp(fig, provenance.replace(f"seed {world_cfg.seed}", f"seeds {sweep_seeds}, "
                                    f"{sweep_qpg} queries/group"))
plots.save(fig, fig_dir / f"{name}_p_sweep.png")
plt.show()
by_p.round(4)

# %% [markdown]
# **Where it breaks.** The method labels the *prevalent* identity of a query. When only a
# small share of a query's faces show the queried person, the eigenvector the method reads
# no longer belongs to that person (distractors, or a co-occurring identity such as a spouse;
# on this world the break at p = 0.3 also happens with `co_occur = 0`: agreement 0.23–0.67
# over seeds 1001, 7 and 3), and wrong faces are labelled confidently: label agreement falls,
# and the curve error becomes *no better than the naive labels'* although the queries are
# still included, so nothing warns the user. The **breakdown p** (`R.breakdown_p`, stored as
# `breakdown` in the metrics) is the largest swept p at which the method's worst-system
# |ΔFNMR| at the first FMR is at least the naive labels' best-system |ΔFNMR| (means over the
# sweep's seeds); the method beats the naive labels at every swept p above it, and the figure
# shades the sweep up to it. Its value and the numbers of this run are printed below.

# %%
for p in by_p.index:
    print(f"p = {p:g}: agreement {by_p.loc[p, 'agreement']:.3f}, queries kept "
          f"{by_p.loc[p, 'queries_included']:.2f}, |ΔFNMR@{f0:g}| method worst "
          f"{by_p.loc[p, f'method_worst@{f0:g}']:.3f} vs naive best "
          f"{by_p.loc[p, f'naive_min@{f0:g}']:.3f}")
if p_break is None:
    print(f"no breakdown in the sweep: the method beats the naive labels at every p in {list(by_p.index)}")
else:
    print(f"breakdown p = {p_break:g}: label agreement {by_p.loc[p_break, 'agreement']:.3f}, "
          f"|ΔFNMR@{f0:g}| method worst {by_p.loc[p_break, f'method_worst@{f0:g}']:.3f} >= naive best "
          f"{by_p.loc[p_break, f'naive_min@{f0:g}']:.3f}")
    if len(above):
        print(f"p > {p_break:g}: agreement >= {by_p.loc[above, 'agreement'].min():.3f}, worst "
              f"|ΔFNMR@{f0:g}| <= {by_p.loc[above, f'method_worst@{f0:g}'].max():.3f} "
              f"(naive >= {by_p.loc[above, f'naive_min@{f0:g}'].min():.3f})")

# %% [markdown]
# ## Metrics for DVC
# `reports/metrics/{name}.json`: the headline numbers of the default world, the ablation, the
# annotation curve and the p sweep.

# %%
metrics_out = R.summarise(
    provenance=provenance, world_config=world_cfg, world=world, estimate=est, agreement=agree,
    deltas={"method": d_method, "naive": d_naive, "type_a": d_type_a, "type_b": d_type_b}, kendall_tau=tau_rank,
    eer=eer_cmp, voting=ablation, semi=semi, semi_p=semi_p, fmr=fmrs, by_p=by_p, breakdown=p_break)
write_metrics(root / reports_dir / "metrics" / f"{name}.json", metrics_out, "rapid")
print(f"done in {time.time() - t0:.0f} s")
pd.Series({k: v for k, v in metrics_out.items() if isinstance(v, float | int)}).round(4)
