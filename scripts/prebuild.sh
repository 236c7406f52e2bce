#!/usr/bin/env bash
# Builds the prebuilt binaries for this platform into prebuilds/<platform>-<arch>/ (docs/building.md, Prebuilt
# binaries), each Node-API, stripped, without -march=native:
#   quorum_core.node   the kernels (node-gyp through prebuildify; no system libraries)
#   quorum_faiss.node  DenseIndex, with faiss and OpenBLAS linked in (cmake-js, -DQUORUM_STATIC_FAISS=ON; needs
#                      libfaiss-dev and libopenblas-dev: scripts/bootstrap.sh)
# Both build in scratch directories, so the cmake-js build in build/ is left alone. Each shipped module may need only
# the C/C++ runtime (and libgomp): the script fails if ldd lists anything else, or if a Fortran symbol is undefined.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
platform="$(node -p 'process.platform + "-" + process.arch')"
out="$root/prebuilds/$platform"
# node-gyp needs Node's headers offline: use the system's when present (Debian's nodejs ships them in /usr).
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/common.gypi ]; then export npm_config_nodedir=/usr; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/core" "$out"
cp -r "$root/package.json" "$root/binding.gyp" "$root/native" "$work/core/"
ln -s "$root/node_modules" "$work/core/node_modules"
(cd "$work/core" && "$root/node_modules/.bin/prebuildify" --napi --strip)
cp "$work/core/prebuilds/$platform/"*.node "$out/quorum_core.node"

# cmake-js reads CMakeLists.txt from the working directory; the build tree goes to the scratch directory.
(cd "$root" && "$root/node_modules/.bin/cmake-js" configure --out "$work/faiss" --CDQUORUM_TORCH=OFF \
  --CDQUORUM_STATIC_FAISS=ON --CDCMAKE_BUILD_TYPE=Release > "$work/faiss.log" 2>&1) \
  || { tail -20 "$work/faiss.log" >&2; echo "prebuild: configuring quorum_faiss failed" >&2; exit 1; }
cmake --build "$work/faiss" --target quorum_faiss -j "$(nproc)" >> "$work/faiss.log" 2>&1 \
  || { tail -20 "$work/faiss.log" >&2; echo "prebuild: building quorum_faiss failed" >&2; exit 1; }
strip --strip-unneeded -o "$out/quorum_faiss.node" "$work/faiss/Release/quorum_faiss.node"

bash "$root/scripts/check-linked.sh" prebuild "$out"/*.node
for module in "$out"/*.node; do
  printf 'prebuilt %s (%s bytes)\n' "${module#$root/}" "$(stat -c %s "$module")"
done
