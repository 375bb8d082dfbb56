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

.PHONY: reproduce test lint bench gpu-check lab venv clean system-data plots

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

reproduce: $(STAMP)
	@git rev-parse --git-dir >/dev/null 2>&1 || (echo "make reproduce needs a git checkout (dvc uses git)"; exit 1)
	$(BIN)/dvc repro
	@echo "figures: reports/figures/  metrics: reports/metrics/ (dvc metrics show)  notebooks: reports/notebooks/"

# test files spread over TEST_WORKERS processes (pytest-xdist; whole files, so module fixtures
# such as the DVC pipeline run once); TEST_WORKERS=0 runs them in this process
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

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
	$(BIN)/python benchmarks/bench_rapid.py
	$(BIN)/python benchmarks/bench_compute.py

# StyleGAN2 on CUDA (fp32 equals the CPU, fp16 close): needs a GPU; the tests never do
gpu-check: $(STAMP)
	$(BIN)/python benchmarks/check_cuda.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks

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
