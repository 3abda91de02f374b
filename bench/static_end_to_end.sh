#!/usr/bin/env bash
# The figures of bench/static_end_to_end.md (issue 25): keyword vs hybrid with MiniLM (int8 ONNX) vs hybrid
# with the static code model, end to end through the engine, on
#   - the validation split of bench/training_repos.json: 8 styles, bench/acceptance.py (golden.json over
#     corpus/ via validate.run_set, changes.json over the parent snapshots in changes-index)
#   - the change-description eval set (split eval): bench/eval_changes.py run
# then bench/paired_bootstrap.py. The sets come from bench/make_training_set.py --split validation --split eval.
#
# Each model gets its own copy of every index (an index keeps the built-in model that embedded it): the
# keyword-only indexes the set builder made (index/, changes-index/) stay as they are and are copied to
# index-$TAG/, changes-index-$TAG/ for TAG minilm and $STATIC_TAG.
#
# Usage: bench/static_end_to_end.sh STEP ...  (run from the repository root; every step is resumable)
#   copy            the index copies (skipped where one exists)
#   embed-static    embed the static copies (code-static: seconds to a few minutes)
#   embed-minilm    embed the MiniLM copies (~100k chunks: an hour or more on 2 busy cores)
#   run-keyword run-minilm run-static   the searches (runs under $OUT/runs)
#   compare         the tables (paired bootstrap)
# Env: TRAIN (default ~/.cache/codebase-index-train), OUT (default $TRAIN/e2e), PY (default .venv/bin/python),
#   ENGINE (a checkout's python/ folder to import the engine from; default the package the venv imports),
#   STATIC_TAG (default static) and STATIC_MODEL (default code-static: the embeddingModel value): a newer
#   static model gets its own tag, e.g. STATIC_TAG=static-v2 STATIC_MODEL=/path/to/model-folder, and only
#   `copy embed-static run-static compare` need running again.
set -euo pipefail
TRAIN=${TRAIN:-$HOME/.cache/codebase-index-train}
OUT=${OUT:-$TRAIN/e2e}
PY=${PY:-.venv/bin/python}
STATIC_TAG=${STATIC_TAG:-static}
STATIC_MODEL=${STATIC_MODEL:-code-static}
BIN=$(dirname "$PY")
if [[ -n "${ENGINE:-}" ]]; then export PYTHONPATH=$ENGINE${PYTHONPATH:+:$PYTHONPATH}; fi
mkdir -p "$OUT/runs"
printf '{"embeddingModel": "minilm"}\n' >"$OUT/minilm.json"
printf '{"embeddingModel": "%s"}\n' "$STATIC_MODEL" >"$OUT/$STATIC_TAG.json"
repos() { # the set folders of a split
  "$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]))
for r in m["repos"]:
    if r["split"] == sys.argv[2]: print(r["repo"].replace("/", "+"))' "$TRAIN/manifest.json" "$1"
}
log() { echo "[$(date +%T)] $*" >&2; }

copy() {
  local tag repo
  for tag in minilm "$STATIC_TAG"; do
    for repo in $(repos validation); do
      [[ -d "$TRAIN/repos/$repo/index-$tag" ]] || cp -a "$TRAIN/repos/$repo/index" "$TRAIN/repos/$repo/index-$tag"
    done
    for repo in $(repos validation) $(repos eval); do
      [[ ! -d "$TRAIN/repos/$repo/changes-index" || -d "$TRAIN/repos/$repo/changes-index-$tag" ]] ||
        cp -a "$TRAIN/repos/$repo/changes-index" "$TRAIN/repos/$repo/changes-index-$tag"
    done
  done
}

embed() { # TAG: embed the golden corpora's copies (an index pass, which waits for the vectors) and the
  # change snapshots' copies (every cd-* catalog)
  local tag=$1 repo
  export CODEBASE_INDEX_CONFIG=$OUT/$tag.json
  for repo in $(repos validation); do
    log "embed $tag $repo"
    nice -n 10 "$BIN/codebase-index" index --root "$TRAIN/repos/$repo/corpus" --index-dir "$TRAIN/repos/$repo/index-$tag"
  done
  for split in validation eval; do
    log "embed $tag changes $split"
    nice -n 10 "$PY" bench/eval_changes.py embed --split "$split" --index-name "changes-index-$tag"
  done
  unset CODEBASE_INDEX_CONFIG
}

search() { # NAME MODE TAG: the validation split (acceptance.py) and the eval set (eval_changes.py)
  local name=$1 mode=$2 tag=$3 config=()
  if [[ -n "$tag" ]]; then config=("CODEBASE_INDEX_CONFIG=$OUT/$tag.json"); fi
  local suffix=${tag:+-$tag}
  log "run $name: validation"
  env "${config[@]}" nice -n 10 "$PY" bench/acceptance.py --split validation --mode "$mode" \
    --index-name "index$suffix" --changes-index "changes-index$suffix" --save "$OUT/runs/validation-$name.json" \
    >"$OUT/runs/validation-$name.txt"
  log "run $name: eval changes"
  env "${config[@]}" nice -n 10 "$PY" bench/eval_changes.py run --system "ours-$mode" \
    --index-name "changes-index$suffix" --out "$OUT/runs/changes-$name.json"
}

compare() {
  local pairs=(--pair "$STATIC_TAG-minilm" --pair "$STATIC_TAG-keyword" --pair minilm-keyword)
  local v=(keyword="$OUT/runs/validation-keyword.json" minilm="$OUT/runs/validation-minilm.json"
    "$STATIC_TAG=$OUT/runs/validation-$STATIC_TAG.json")
  local c=(keyword="$OUT/runs/changes-keyword.json" minilm="$OUT/runs/changes-minilm.json"
    "$STATIC_TAG=$OUT/runs/changes-$STATIC_TAG.json")
  "$PY" bench/paired_bootstrap.py validation "${v[@]}" "${pairs[@]}" | tee "$OUT/runs/compare-validation-$STATIC_TAG.md"
  "$PY" bench/paired_bootstrap.py changes "${c[@]}" "${pairs[@]}" | tee "$OUT/runs/compare-changes-$STATIC_TAG.md"
}

for step in "$@"; do
  case $step in
  copy) copy ;;
  embed-static) embed "$STATIC_TAG" ;;
  embed-minilm) embed minilm ;;
  run-keyword) search keyword keyword "" ;;
  run-minilm) search minilm hybrid minilm ;;
  run-static) search "$STATIC_TAG" hybrid "$STATIC_TAG" ;;
  compare) compare ;;
  *) echo "unknown step $step" >&2 && exit 2 ;;
  esac
done
