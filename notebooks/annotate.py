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
# # Annotate synthetic faces (papers 000 and 004)
#
# A small annotation tool for **real annotators**. Two tasks:
#
# * `task = "pair"` — the 000 identity question: two faces side by side, five answers from
#   *Likely same* to *Likely different*. A click (or its number key) saves the answer at once
#   and shows the next pair.
# * `task = "image"` — one face at a time rated on five-point scales (000: age, expression,
#   gender, skin colour, uncanniness) or, with `image_set = "transects"`, on the 004 scales
#   (also hair length, facial hair, makeup, smile). *Next* saves all answers of the image.
#
# **Keys** work anywhere on the page (in JupyterLab: click the tool once): digits `1`..`K`
# answer (pair task: the pair on screen; image task: the question marked ▶), `n` or Enter
# saves the image (image task), `p` goes back one question. Each key is stamped with the item
# on screen and queued, so fast typing loses nothing and never answers an item not yet shown.
#
# Every answer is written to the SQLite store (`store`, append-only, one transaction per
# vote, `source = 'human'`) as soon as it is final: closing the page or a crash loses at most
# the image on screen. Re-open the notebook with the **same annotator, seed and n_items** to
# resume where you left off; the progress count includes earlier sessions.
#
# The faces are the **procedural** generator's renders from `data/synthetic` (run
# `make reproduce`, or `dvc repro synth`, first; without them the page says so).
#
# **Start it** from the repository root with one command:
# `make annotate ANNOTATOR=yourname` (`TASK=image` for the single-image task). It converts this
# file to a notebook under `build/` and serves it with voila at http://localhost:8866; the
# annotator sees only the tool (instructions, faces, answers, progress), not this prose or
# the code. Or run it in JupyterLab (`make lab`).

# %% tags=["parameters"]
task = "pair"  # "pair" (000 identity) or "image" (single-image scales)
store = "data/real/annotations/human.sqlite"  # the vote store (created if missing; tracked by data.dvc)
annotator = "annotator01"  # your annotator id
synthetic = "data/synthetic"  # written by the `synth` stage
n_items = 40  # items in this annotation list
seed = 0  # which items, in which order (keep it to resume)
image_set = "hcic"  # task "image": "hcic" (SCALES_HCIC) or "transects" (SCALES_TRANSECTS)

# %%
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from facebias.annotate import (
    SCALES_HCIC,
    SCALES_TRANSECTS,
    AnnotationStore,
    pair_item_ids,
    synthetic_image_path,
)
from facebias.annotate.widgets import ImageAnnotator, PairAnnotator
from facebias.io import repo_root

try:
    root = repo_root()
except FileNotFoundError:  # served outside the repository (e.g. by the tests)
    root = Path.cwd()
data = root / synthetic
subset = "hcic" if task == "pair" else image_set
table = data / subset / ("pairs.parquet" if task == "pair" else "images.parquet")
images = data / subset / "images"
# what is wrong is shown on the page (voila hides raised errors behind "There was an error")
message = None
if task not in ("pair", "image"):
    message = f"**Unknown task** `{task}`: use `TASK=pair` or `TASK=image` (`make annotate TASK=pair`)."
elif image_set not in ("hcic", "transects"):
    message = f"**Unknown image set** `{image_set}`: use `hcic` or `transects`."
elif not table.exists():
    message = (
        "**No faces to annotate yet.** The synthetic faces are not generated: "
        f"`{table}` is missing.\n\nIn the repository folder run `make reproduce` "
        "(or `.venv/bin/dvc repro synth`, a few minutes), then reload this page. "
        "To use faces from another folder, set `synthetic` in the notebook's parameters.")
ready = message is None
if not ready:
    message = Markdown(message)
    display(message)

# %% [markdown]
# ## The annotation list
# `n_items` items drawn at random (`seed`) and shown in that random order; registered in the
# store so that every vote refers to a known item. Conventions as in the simulated store
# (`facebias.annotate.simulate`): item ids are image ids (`pair_{pair_id:05d}` for pairs), item
# images are paths relative to `synthetic`, single-image questions carry the study as a prefix
# (`hcic/age`, `transects/age`: the two studies' age scales differ), the pair question is
# `identity`.

# %%
tool = None
if ready:
    db = AnnotationStore(root / store)
    rows = pd.read_parquet(table)
    pick = rows.sample(n=min(int(n_items), len(rows)), random_state=int(seed))
if ready and task == "pair":
    items = pd.DataFrame({
        "item_id": pair_item_ids(pick["pair_id"]),
        "path_a": [str(images / f"{i}.png") for i in pick["image_a"]],
        "path_b": [str(images / f"{i}.png") for i in pick["image_b"]],
    })
    db.register_items(items["item_id"], image_a=[synthetic_image_path(subset, i) for i in pick["image_a"]],
                      image_b=[synthetic_image_path(subset, i) for i in pick["image_b"]])
    tool = PairAnnotator(db, items, annotator)
elif ready:
    items = pd.DataFrame({"item_id": pick["image_id"].astype(str).to_numpy(),
                          "path": [str(images / f"{i}.png") for i in pick["image_id"]]})
    db.register_items(items["item_id"], image=[synthetic_image_path(subset, i) for i in items["item_id"]])
    scales = SCALES_HCIC if image_set == "hcic" else SCALES_TRANSECTS
    tool = ImageAnnotator(db, items, annotator, scales={f"{subset}/{q}": s for q, s in scales.items()})

# %% [markdown]
# `display(tool)` shows only the tool; in pair mode it also adds the page script that takes
# number keys anywhere on the page. Developer details (item ids, the store's path) stay out of
# the page: `tool.item_ids`, `db.path`, `tool.n_done`.

# %%
if ready:
    display(tool)
