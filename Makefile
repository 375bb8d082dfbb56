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

.PHONY: reproduce test lint bench lab venv clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

reproduce: $(STAMP)
	@git rev-parse --git-dir >/dev/null 2>&1 || (echo "make reproduce needs a git checkout (dvc uses git)"; exit 1)
	$(BIN)/dvc repro
	@echo "figures: reports/figures/  metrics: reports/metrics/ (dvc metrics show)  notebooks: reports/notebooks/"

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check lib tests notebooks benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_metrics.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
