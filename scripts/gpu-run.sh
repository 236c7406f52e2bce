#!/usr/bin/env bash
# Runs on the GPU machine from the carried .gpu/ folder (scripts/gpu-tests.sh fills it): the CUDA test suite, then
# (unless --tests-only) bench/cuda.ts and PyTorch's bench/cuda_torch.py in the same run. --quick shrinks the
# benchmark 100-fold. Logs and JSON go to $OUT (or .gpu/out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
node=$(command -v node || true)
if [ -z "$node" ]; then
  xz -d -c "$here/node.xz" > /tmp/quorum-node && chmod +x /tmp/quorum-node
  node=/tmp/quorum-node
fi
export QUORUM_CORE_PATH="$here/quorum_core.node" QUORUM_CUDA_PATH="$here/quorum_cuda.node"
nvidia-smi -L 2>&1 | tee "$out/device.log"
quick=""
for a in "$@"; do [ "$a" = --quick ] && quick=--quick; done
timeout 150 "$node" --test --test-reporter=spec "$here/cuda.test.mjs" > "$out/tests.log" 2>&1
pass=$(grep -E '^ℹ pass [0-9]+' "$out/tests.log" | awk '{print $3}')
fail=$(grep -E '^ℹ fail [0-9]+' "$out/tests.log" | awk '{print $3}')
skip=$(grep -E '^ℹ skipped [0-9]+' "$out/tests.log" | awk '{print $3}')
grep -E -A3 '✖|not ok|Error|expected' "$out/tests.log" | head -80
echo "${pass:-0} passed, ${fail:-0} failed (${skip:-0} skipped)"
for a in "$@"; do [ "$a" = --tests-only ] && exit 0; done
timeout 200 "$node" "$here/bench-cuda.mjs" --out="$out/quorum.json" $quick 2>&1 | tee "$out/bench.log"
PYTHONUNBUFFERED=1 timeout 200 python3 "$here/cuda_torch.py" --out="$out/torch.json" $quick 2>&1 | tee -a "$out/bench.log"
