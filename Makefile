# Set-up and the commands the README shows. `make demo` and `make test` work on a fresh machine.
VENV ?= .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export HF_HUB_OFFLINE := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false

.PHONY: setup tesseract demo test test-fast lint corpus bench

setup: $(VENV)/.installed tesseract

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# OCR of scanned pages needs Tesseract from Debian; without it those pages are reported as lost.
tesseract:
	@command -v tesseract >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq tesseract-ocr; }

corpus: setup
	$(BIN)/python data/sample_corpus.py data/corpus

demo: setup
	$(BIN)/citesum ingest data/corpus
	$(BIN)/citesum summarize "What are the termination obligations?"

test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest

# The tests that need neither the Prefect engine nor a server process (markers engine, slow; README, Tests).
test-fast: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -m "not engine and not slow"

bench: setup
	$(BIN)/python tests/benchmarks/ingest_benchmark.py ../shared/eval/financebench/pdfs
