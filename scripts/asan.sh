#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of quorum_core and quorum_faiss (into build-asan/), then
# the robustness tests (test/robustness-*.test.ts, child processes included) against it. Any sanitizer report
# aborts the process, which fails the test. Not part of CI: the build alone takes ~10 minutes on 2 cores.
#   bash scripts/asan.sh [more vitest arguments]      (npm run test:asan)
set -euo pipefail
cd "$(dirname "$0")/.."
npx cmake-js configure --out build-asan --CDQUORUM_SANITIZE=ON --CDQUORUM_TORCH=OFF --CDQUORUM_BASELINES=OFF
npx cmake-js build --out build-asan
# Refuse to report a clean run of modules that are not instrumented.
for m in quorum_core quorum_faiss; do
  # (grep -c reads all of nm's output: with -q, nm could die of SIGPIPE and fail the pipeline)
  [ "$(nm -D "build-asan/Release/$m.node" | grep -c __asan_report)" -gt 0 ] || { echo "asan: build-asan/Release/$m.node is not instrumented" >&2; exit 1; }
done
# Node itself is not instrumented: the ASan runtime must be loaded first. Node keeps memory to the end (no leak
# check), and V8 installs its own SEGV handler (let it).
export LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
export ASAN_OPTIONS="detect_leaks=0:allow_user_segv_handler=1:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export QUORUM_CORE_PATH="$PWD/build-asan/Release/quorum_core.node"
export QUORUM_FAISS_PATH="$PWD/build-asan/Release/quorum_faiss.node"
npx vitest run test/robustness-*.test.ts "$@"
