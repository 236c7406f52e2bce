#!/usr/bin/env bash
# `npm run test:gpu`: builds quorum_cuda (and the core), bundles the CUDA tests and benchmark (scripts/bundle-gpu.mjs),
# and packs them with this machine's Node into .gpu/ (git-ignored), for a GPU machine that has no Node.js. Where a
# GPU is visible here it runs them (scripts/gpu-run.sh prints "N passed, N failed"); otherwise it says how to run
# them there: carry .gpu/ and run `bash .gpu/run.sh [--tests-only] [--quick]`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
npm run build:cuda
[ -f build/Release/quorum_cuda.node ] || { echo "test:gpu: quorum_cuda.node was not built (no nvcc found by CMake)" >&2; exit 1; }
mkdir -p .gpu
node scripts/bundle-gpu.mjs
cp build/Release/quorum_core.node build/Release/quorum_cuda.node .gpu/
cp bench/cuda_torch.py .gpu/
cp scripts/gpu-run.sh .gpu/run.sh
if [ ! -s .gpu/node.xz ] || [ "$(command -v node)" -nt .gpu/node.xz ]; then
  xz -T2 -6 -c "$(command -v node)" > .gpu/node.xz
fi
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  bash .gpu/run.sh "$@"
else
  echo "test:gpu: .gpu/ is ready ($(du -sh .gpu | cut -f1)); no GPU here: on the GPU machine run 'bash .gpu/run.sh --tests-only'"
fi
