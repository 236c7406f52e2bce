#!/usr/bin/env bash
# The quick start: makes sure system packages, npm packages and the native build are in place, then runs
#   demo   the main job on the embedded dataset (quorum demo)
#   test   the test suite (npm test), ending with 'N passed, N failed'
#   bench  the benchmarks (npm run bench)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-demo}
shift || true

bash scripts/bootstrap.sh
# onnxruntime-node (development dependency) has its CPU binary inside; its install script only fetches GPU files.
export ONNXRUNTIME_NODE_INSTALL=skip
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# Rebuild when any native or TypeScript source is newer than the build outputs. The demo needs the core, faiss and
# libtorch modules; the tests add the test hooks, the benchmarks their baseline modules.
case "$what" in
  test) stamp=build/Release/quorum_torch_test.node; build=build:test ;;
  bench) stamp=build/Release/quorum_baselines.node; build=build:bench ;;
  *) stamp=build/Release/quorum_core.node; build=build:native ;;
esac
if [ ! -f $stamp ] || [ -n "$(find native CMakeLists.txt -newer $stamp -print -quit)" ]; then
  npm run $build
fi
if [ ! -f dist/lib/index.js ] || [ -n "$(find lib tsconfig.json -newer dist/lib/index.js -print -quit)" ]; then
  npm run build:ts
fi

case "$what" in
  demo) node dist/lib/cli/main.js demo "$@" ;;
  test)
    report=$(mktemp)
    status=0
    npm test -- --reporter=default --reporter=json --outputFile="$report" "$@" || status=$?
    node -e '
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
    ' "$report" || echo "0 passed, 1 failed"
    rm -f "$report"
    exit $status
    ;;
  bench) npm run bench -- "$@" ;;
  *) echo "usage: scripts/run.sh demo|test|bench [args]" >&2; exit 2 ;;
esac
