# facebias: `make reproduce` regenerates every figure (dvc repro); `make test` runs the tests.
# Both create the virtual environment .venv on first use (pip only; torch is the CPU wheel).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export DVC_NO_ANALYTICS := 1
# stage commands (facebias, jupytext, papermill) run from the venv
export PATH := $(abspath $(BIN)):$(PATH)
export PYTHONHASHSEED := 0

.PHONY: reproduce tracked-data test test-fast lint bench profile deps gpu-check gpu-bench lab venv clean system-data plots browse annotate

venv: $(STAMP)

# BRISQUE model files come from Debian's opencv-data (not in any OpenCV wheel)
BRISQUE_YML := /usr/share/opencv4/quality/brisque_model_live.yml

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -e .
	$(BIN)/pip install --quiet --no-deps -r requirements-nodeps.txt
	@$(MAKE) --no-print-directory system-data
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# facebias repro runs the stale stages REPRO_JOBS at a time (each `dvc repro --single-item`,
# after the stages it depends on; logs and times in build/repro/); the `dvc repro` after it
# then has nothing left to do, and says so.
REPRO_JOBS ?= 2
reproduce: $(STAMP) tracked-data
	@git rev-parse --git-dir >/dev/null 2>&1 || (echo "make reproduce needs a git checkout (dvc uses git)"; exit 1)
	$(BIN)/facebias repro --jobs $(REPRO_JOBS)
	$(BIN)/dvc repro
	$(BIN)/facebias claims --readme README.md $(sort $(wildcard docs/papers/*.md))
	@echo "figures: reports/figures/  metrics: reports/metrics/ (dvc metrics show)  notebooks: reports/notebooks/"

# data.dvc tracks the human annotations (data/real/annotations). A fresh clone records that
# folder empty: create it and cache the record, so that `dvc status` is clean after
# `make reproduce`. `dvc commit` without -f never changes a record that differs (votes you
# have not pulled, or new votes you have not committed yet: the note says which command).
tracked-data:
	@test -e data/real/annotations || mkdir -p data/real/annotations
	@$(BIN)/dvc commit -q data.dvc </dev/null >/dev/null 2>&1 \
	|| echo "note: data/real/annotations differs from data.dvc: 'dvc commit data.dvc' records new votes, 'dvc pull data.dvc' fetches recorded ones"

# test files spread over TEST_WORKERS processes (pytest-xdist; whole files, so module fixtures
# such as the DVC pipeline run once); TEST_WORKERS=0 runs them in this process. Files are
# handed out longest first (tests/conftest.py orders them by their slow(seconds=) marker;
# --no-loadscope-reorder keeps xdist from re-sorting them by test count). test-fast leaves
# the modules marked slow out, for iteration; make test (and CI) runs everything.
TEST_WORKERS ?= 2
PYTEST_XDIST = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: $(STAMP)
	$(BIN)/pytest -q $(PYTEST_XDIST)

test-fast: $(STAMP)
	$(BIN)/pytest -q $(PYTEST_XDIST) -m "not slow"

# offline page of every DVC plot (dvc plots show --json; images inline, data plots as SVG, no scripts)
plots: $(STAMP)
	$(BIN)/facebias plots -o reports/plots.html

lint: $(STAMP)
	$(BIN)/ruff check lib tests notebooks benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_faces.py
	$(BIN)/python benchmarks/bench_generate.py
	$(BIN)/python benchmarks/bench_annotators.py
	$(BIN)/python benchmarks/bench_stylegan2.py
	$(BIN)/python benchmarks/bench_eg3d.py
	$(BIN)/python benchmarks/bench_rapid.py
	$(BIN)/python benchmarks/bench_compute.py
	$(BIN)/python benchmarks/bench_mask_iou.py
	$(BIN)/python benchmarks/bench_bootstrap.py
	$(BIN)/python benchmarks/budget.py

# where the time goes: wall + CPU per test file and per DVC stage (each forced on its own), a
# no-op dvc repro, and cProfile's top functions of the 3 slowest notebook stages; printed and
# written to build/profile/profile.json. PROFILE_ARGS="--only tests" (or stages, hotspots) runs a part.
PROFILE_ARGS ?=
# each DVC stage's lib/ deps in dvc.yaml, written from the code it imports (facebias.dvcdeps);
# tests/test_dvc_deps.py checks the committed file is what this writes
deps: $(STAMP)
	$(BIN)/facebias deps

profile: $(STAMP) tracked-data
	$(BIN)/python benchmarks/time_profile.py $(PROFILE_ARGS)

# StyleGAN2 and EG3D on CUDA (fp32 equals the CPU, StyleGAN2's fp16 close): needs a GPU; the tests never do
gpu-check: $(STAMP)
	$(BIN)/python benchmarks/check_cuda.py

# every GPU path beside its CPU peer (StyleGAN2 and EG3D incl. the checks above, DCGAN, batched TorchEmbedder)
gpu-bench: $(STAMP)
	$(BIN)/python benchmarks/bench_gpu.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks

# the transect browser as an app (needs no data): jupytext converts the .py source into the
# gitignored build/transect_browser.ipynb (papermill --prepare-only sets BROWSE_PARAMS, e.g.
# BROWSE_PARAMS="-p backend dcgan -p hyperplanes data/synthetic_dcgan/hyperplanes.npz"), voila
# serves it on BROWSE_PORT and opens a web browser (VOILA_ARGS=--no-browser does not)
BROWSE_PORT ?= 8866
BROWSE_PARAMS ?=
VOILA_ARGS ?=
browse: $(STAMP)
	@mkdir -p build
	$(BIN)/jupytext --quiet --to ipynb -o build/transect_browser.ipynb notebooks/transect_browser.py
	$(BIN)/papermill --prepare-only --log-level ERROR --kernel python3 \
	  build/transect_browser.ipynb build/transect_browser.ipynb $(BROWSE_PARAMS)
	$(BIN)/voila build/transect_browser.ipynb --port=$(BROWSE_PORT) --strip_sources=True $(VOILA_ARGS)

# the annotation tool as an app, from a fresh clone: `make annotate ANNOTATOR=yourname`
# (TASK=image for single images; ANNOTATE_PARAMS="-p n_items 80 -p seed 1" sets other notebook
# parameters). jupytext converts notebooks/annotate.py into the gitignored
# $(ANNOTATE_DIR)/annotate.ipynb, papermill --prepare-only sets the parameters, and voila serves
# only the tool (no code, no markdown) on ANNOTATE_PORT; without data the page says what to run
ANNOTATOR ?= annotator01
TASK ?= pair
ANNOTATE_PARAMS ?=
ANNOTATE_PORT ?= 8867
ANNOTATE_DIR ?= build
annotate: $(STAMP)
	@mkdir -p $(ANNOTATE_DIR)
	$(BIN)/jupytext --quiet --to ipynb -o $(ANNOTATE_DIR)/annotate.ipynb notebooks/annotate.py
	$(BIN)/papermill --prepare-only --log-level ERROR --kernel python3 \
	  $(ANNOTATE_DIR)/annotate.ipynb $(ANNOTATE_DIR)/annotate.ipynb \
	  -p annotator '$(ANNOTATOR)' -p task '$(TASK)' $(ANNOTATE_PARAMS)
	$(BIN)/voila $(ANNOTATE_DIR)/annotate.ipynb --port=$(ANNOTATE_PORT) --strip_sources=True \
	  --TemplateExporter.exclude_markdown=True $(VOILA_ARGS)

# Debian packages: opencv-data (BRISQUE yml) and chromium (real-browser tests). Installed
# when we may (root + apt-get); otherwise BRISQUE is reported as missing, never invented,
# and the browser tests skip saying so.
CHROMIUM := /usr/bin/chromium
system-data:
	@test -f $(BRISQUE_YML) -a -x $(CHROMIUM) \
	|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	     && { apt-get install -y -q opencv-data chromium >/dev/null 2>&1 \
	          || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q opencv-data chromium >/dev/null 2>&1; }; }; } \
	|| echo "note: opencv-data or chromium missing (apt-get install opencv-data chromium); BRISQUE is reported as missing and browser tests skip"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
