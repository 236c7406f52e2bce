#!/usr/bin/env bash
# Issue 20's full-size experiment: the multi-domain benchmark built from ../shared/data (13,348 passages, 21,553
# questions over six tasks), each preset trained by `quorum train` on every task's train split (best epoch by dev
# MRR), then `quorum eval` on the test split per task: BM25, the GloVe average (IDF, centred), the trained model, and
# the dense + BM25 hybrid with alpha tuned on the dev split.
#   bash bench/full-benchmark.sh [OUT_DIR] [EPOCHS] [BUDGET_SECONDS] [PRESETS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/quorum-full}
epochs=${2:-2}
budget=${3:-1500}
presets=${4:-taser,bi-encoder,siamese}
quorum() { node --import tsx lib/cli/main.ts "$@"; }
mkdir -p "$out"
[ -f "$out/data/corpus.jsonl" ] || quorum data build --data ../shared/data --out "$out/data"
for preset in ${presets//,/ }; do
  /usr/bin/time -f "$preset: %e s wall (train)" node --import tsx lib/cli/main.ts train --data "$out/data" --preset "$preset" \
    --epochs "$epochs" --budget "$budget" --out "$out/$preset"
  quorum eval --data "$out/data" --model "$out/$preset" --methods dense,hybrid --metrics recall@20,mrr@10 --by-task \
    --out "$out/eval-$preset"
done
quorum eval --data "$out/data" --methods bm25,glove --metrics recall@20,mrr@10 --by-task --out "$out/eval-baselines"
