#!/usr/bin/env bash
# The package as a user gets it: `npm pack` (prepack compiles the TypeScript, ESM and CommonJS), `ldd` of the shipped
# binaries (the C/C++ runtime and libgomp only), then `npm install` of the tarball in a fresh directory whose PATH has
# node and npm but no C++ compiler, then a search through require() and through import, every subpath export through
# both, serving (test/package/serve.mjs: DenseIndex and a saved MUF directory, in a process that maps no libtorch,
# shared faiss or BLAS, or ONNX Runtime), and a CommonJS and an ES-module TypeScript consumer type-checked against it;
# then the fallback where no prebuild matches (the install step compiles the core from source).
# Needs the prebuilds (npm run build:prebuild) and, for the MUF directory and its reference hits, the checkout's
# libtorch module (built here when missing). Prints 'package: ok' last.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
for m in quorum_core quorum_faiss; do
  [ -f "prebuilds/linux-x64/$m.node" ] || { echo "check-package: no prebuilds/linux-x64/$m.node; run npm run build:prebuild first" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tarball="$(npm pack --silent --pack-destination "$work" | tail -1)"
echo "packed $tarball ($(du -h "$work/$tarball" | cut -f1))"
tar -tzf "$work/$tarball" > "$work/files.txt"
for must in package/prebuilds/linux-x64/ package/dist/lib/index.js package/dist/cjs/index.js package/dist/cjs/index.d.ts \
  package/dist/lib/entries/methods/muf.js package/dist/cjs/entries/methods/muf.js package/dist/cjs/entries/methods/muf.d.ts; do
  grep -q "^$must" "$work/files.txt" || { echo "check-package: $must is not in the tarball" >&2; exit 1; }
done
if grep -q '^package/bench/\|^package/native/baselines/\|^package/native/test/\|^package/test/' "$work/files.txt"; then
  echo "check-package: benchmark or test sources in the tarball" >&2; exit 1
fi

# The shipped binaries need nothing beyond the C/C++ runtime.
mkdir -p "$work/unpacked"
tar -xzf "$work/$tarball" -C "$work/unpacked" package/prebuilds
bash "$root/scripts/check-linked.sh" check-package "$work"/unpacked/package/prebuilds/linux-x64/*.node
echo "ldd: ok ($(ls "$work"/unpacked/package/prebuilds/linux-x64 | tr '\n' ' '))"

# A saved MUF directory (two 0-layer experts of the shipped model, small heads) and its hits through the checkout's
# libtorch MufRetriever: what the installed package's MufServer must reproduce.
[ -f build/Release/quorum_torch.node ] || npm run -s build:native > "$work/native.log" 2>&1 || { tail -20 "$work/native.log" >&2; echo "check-package: the native build failed" >&2; exit 1; }
node --import tsx lib/cli/main.ts muf train --data data/multidomain-mini --experts default:covid,default:selqa --members 4 \
  --hidden 32 --layers 1 --epochs 2 --out "$work/muf" > "$work/muf.log" 2>&1 || { tail -20 "$work/muf.log" >&2; echo "check-package: muf train failed" >&2; exit 1; }
node --import tsx test/package/muf-reference.ts "$work/muf" "$work/reference.json"

# A PATH with node, npm and a shell, and no compiler.
mkdir -p "$work/bin" "$work/app"
for tool in node npm npx sh bash env; do ln -s "$(command -v "$tool")" "$work/bin/$tool"; done
nocc="$work/bin"
if PATH="$nocc" command -v g++ >/dev/null || PATH="$nocc" command -v cc >/dev/null; then
  echo "check-package: a compiler is still on the restricted PATH" >&2; exit 1
fi
cp test/package/consumer.cjs test/package/consumer.mjs test/package/serve.mjs test/package/subpaths.cjs test/package/subpaths.mjs test/package/consumer-cjs.cts \
  test/package/consumer-esm.mts test/package/tsconfig.json "$work/app/"
cd "$work/app"
echo '{ "name": "quorum-consumer", "private": true }' > package.json
PATH="$nocc" CC=false CXX=false npm install --no-audit --no-fund --silent "$work/$tarball"
PATH="$nocc" node consumer.cjs
PATH="$nocc" node consumer.mjs
PATH="$nocc" node subpaths.cjs
PATH="$nocc" node subpaths.mjs
PATH="$nocc" node serve.mjs "$work/muf" "$work/reference.json"
# The type check uses the repository's TypeScript and Node types (the consumer's own install needs no compiler either).
mkdir -p node_modules/@types
ln -s "$root/node_modules/@types/node" node_modules/@types/node
PATH="$nocc" node "$root/node_modules/typescript/bin/tsc" -p tsconfig.json
echo "types: ok (CommonJS and ES-module consumers)"

# linux-arm64, when its prebuilds were built (npm run build:prebuild:arm64; CI does): the tarball carries them, they
# link only the C/C++ runtime, and the package installed above runs on an arm64 Node under qemu-user with no compiler
# (its install step finds the arm64 prebuild and builds nothing; require, import, every subpath, DenseIndex and the
# MUF directory trained on x64 against the same reference).
if [ -d "$root/prebuilds/linux-arm64" ]; then
  for m in quorum_core quorum_faiss; do
    grep -q "^package/prebuilds/linux-arm64/$m.node" "$work/files.txt" || { echo "check-package: prebuilds/linux-arm64/$m.node is not in the tarball" >&2; exit 1; }
  done
  bash "$root/scripts/check-linked.sh" check-package "$work"/unpacked/package/prebuilds/linux-arm64/*.node
  source "$root/scripts/arm64-env.sh"
  (cd node_modules/quorum-retrieval && PATH="$nocc" run_arm64 scripts/install.cjs) || { echo "check-package: the install step failed on arm64" >&2; exit 1; }
  [ ! -d node_modules/quorum-retrieval/build ] || { echo "check-package: the arm64 install step compiled instead of taking the prebuild" >&2; exit 1; }
  for script in consumer.cjs consumer.mjs subpaths.cjs subpaths.mjs; do PATH="$nocc" run_arm64 "$script"; done
  PATH="$nocc" run_arm64 serve.mjs "$work/muf" "$work/reference.json"
  echo "linux-arm64: ok (under qemu-user)"
fi

# The fallback where no prebuild matches: the install step compiles the core from the shipped sources.
mkdir -p "$work/fallback"
cp consumer.cjs "$work/fallback/"
cd "$work/fallback"
echo '{ "name": "quorum-fallback", "private": true }' > package.json
npm install --no-audit --no-fund --silent --ignore-scripts "$work/$tarball"
rm -rf node_modules/quorum-retrieval/prebuilds
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/common.gypi ]; then export npm_config_nodedir=/usr; fi
npm rebuild --silent quorum-retrieval > build.log 2>&1 || { tail -20 build.log >&2; echo "check-package: the source fallback failed" >&2; exit 1; }
[ -f node_modules/quorum-retrieval/build/Release/quorum_core.node ] || { echo "check-package: the fallback built no quorum_core.node" >&2; exit 1; }
node consumer.cjs
echo "source fallback: ok"
echo "package: ok"
