#!/usr/bin/env bash
# Issue 22: DPR-MUF's Table 3 in small, on the multi-domain benchmark built from ../shared/data. One expert per task
# (`quorum train --tasks <task>`), the joint multi-task model (every task's train split, no task markers: the mixed
# test does not say a question's task), the MUF heads (train split, DPR-MUF's 100 epochs) and temperatures (dev
# split), then the test split: each expert alone, the joint model, uniform fusion, the oracle indicator, MUF and
# MUF + BM25; then ensemble sizes K = 1, 2, 5, 10, 20 (heads trained 30 epochs each, to fit the time) and the speed
# measurements (bench/muf.ts).
#   bash bench/muf-table.sh [OUT_DIR] [EPOCHS] [PRESET] [LAYERS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/quorum-muf}
epochs=${2:-3}
preset=${3:-siamese}
layers=${4:-0}
data=${MUF_DATA:-$out/data}
tasks="wiki reddit covid climate selqa"
quorum() { node --import tsx lib/cli/main.ts "$@"; }
mkdir -p "$out"
[ -f "$data/corpus.jsonl" ] || quorum data build --data ../shared/data --out "$data"
experts=""
for t in $tasks; do
  [ -f "$out/expert-$t/model.json" ] || /usr/bin/time -f "expert $t: %e s" node --import tsx lib/cli/main.ts train --data "$data" \
    --preset "$preset" --layers "$layers" --tasks "$t" --epochs "$epochs" --out "$out/expert-$t"
  experts="$experts${experts:+,}$out/expert-$t"
done
[ -f "$out/joint/model.json" ] || /usr/bin/time -f "joint: %e s" node --import tsx lib/cli/main.ts train --data "$data" \
  --preset "$preset" --layers "$layers" --epochs "$epochs" --no-task-markers --out "$out/joint"
[ -f "$out/muf/muf.json" ] || /usr/bin/time -f "muf heads: %e s" node --import tsx lib/cli/main.ts muf train --data "$data" \
  --experts "$experts" --out "$out/muf"
quorum eval --data "$data" --model "$out/joint" --methods dense,bm25 --muf "$out/muf" \
  --metrics recall@20,recall@100,mrr@10 --by-task --out "$out/eval"
sizes=""
for k in 1 2 5 10 20; do
  [ -f "$out/muf-k$k/muf.json" ] || quorum muf train --data "$data" --experts "$experts" --members "$k" --epochs 30 --out "$out/muf-k$k"
  sizes="$sizes${sizes:+,}$out/muf-k$k"
done
node --import tsx bench/muf.ts --data="$data" --muf="$out/muf" --sizes="$sizes"
