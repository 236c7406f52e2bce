#!/usr/bin/env bash
# The report's screenshot in docs/: evaluates BM25, the shipped dense model and their hybrid on the embedded
# benchmark (with a MUF directory as $1, its fusions and calibration too), writes the HTML report and has headless
# Chromium (Debian's chromium package) draw it into docs/report.png.
#   bash scripts/report-screenshot.sh [MUF_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
muf=()
if [ -n "${1:-}" ]; then muf=(--muf "$1"); fi
node --import tsx lib/cli/main.ts eval --data data/multidomain-mini --methods bm25,dense,hybrid --model default \
  --by-task --metrics ndcg@10,mrr@10,recall@20 --latency 50 "${muf[@]}" --report "$out/report.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=15000 --window-size=1000,3000 \
  --screenshot="$PWD/docs/report.png" "file://$out/report.html" 2>/dev/null
echo "wrote docs/report.png"
