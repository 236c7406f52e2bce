#!/usr/bin/env bash
# The package as a user gets it: `npm pack` (prepack compiles the TypeScript, ESM and CommonJS), then `npm install`
# of the tarball in a fresh directory whose PATH has node and npm but no C++ compiler, then a search through
# require() and through import, every subpath export through both, and a CommonJS and an ES-module TypeScript
# consumer type-checked against it; then the fallback where no prebuild matches (the install step compiles the core
# from source).
# Needs the prebuilt core (npm run build:prebuild). Prints 'package: ok' last.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
ls prebuilds/linux-x64/*.node >/dev/null 2>&1 || { echo "check-package: no prebuilds/linux-x64/*.node; run npm run build:prebuild first" >&2; exit 1; }

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

# A PATH with node, npm and a shell, and no compiler.
mkdir -p "$work/bin" "$work/app"
for tool in node npm npx sh bash env; do ln -s "$(command -v "$tool")" "$work/bin/$tool"; done
nocc="$work/bin"
if PATH="$nocc" command -v g++ >/dev/null || PATH="$nocc" command -v cc >/dev/null; then
  echo "check-package: a compiler is still on the restricted PATH" >&2; exit 1
fi
cp test/package/consumer.cjs test/package/consumer.mjs test/package/subpaths.cjs test/package/subpaths.mjs test/package/consumer-cjs.cts \
  test/package/consumer-esm.mts test/package/tsconfig.json "$work/app/"
cd "$work/app"
echo '{ "name": "quorum-consumer", "private": true }' > package.json
PATH="$nocc" CC=false CXX=false npm install --no-audit --no-fund --silent "$work/$tarball"
PATH="$nocc" node consumer.cjs
PATH="$nocc" node consumer.mjs
PATH="$nocc" node subpaths.cjs
PATH="$nocc" node subpaths.mjs
# The type check uses the repository's TypeScript and Node types (the consumer's own install needs no compiler either).
mkdir -p node_modules/@types
ln -s "$root/node_modules/@types/node" node_modules/@types/node
PATH="$nocc" node "$root/node_modules/typescript/bin/tsc" -p tsconfig.json
echo "types: ok (CommonJS and ES-module consumers)"

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
