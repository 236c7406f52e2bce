#!/usr/bin/env bash
# Cross-builds the linux-arm64 prebuilt binaries on an x86-64 Debian 12 machine into prebuilds/linux-arm64/
# (docs/building.md#linux-arm64): quorum_core.node (the kernels, NEON variants picked at run time) and
# quorum_faiss.node (DenseIndex, with the arm64 faiss and OpenBLAS archives linked in), each Node-API, stripped. The
# toolchain is cmake/aarch64-linux-gnu.cmake: g++-aarch64-linux-gnu and the :arm64 packages of Debian's multiarch,
# installed through scripts/bootstrap.sh. As scripts/prebuild.sh for x64, the script fails if a module needs a
# library beyond the C/C++ runtime and libgomp, or leaves a Fortran symbol undefined (scripts/check-linked.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/bootstrap.sh" g++-aarch64-linux-gnu binutils-aarch64-linux-gnu libfaiss-dev:arm64 libopenblas-dev:arm64
out="$root/prebuilds/linux-arm64"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
(cd "$root" && "$root/node_modules/.bin/cmake-js" configure --out "$work/build" --CDQUORUM_TORCH=OFF --CDQUORUM_STATIC_FAISS=ON \
  --CDCMAKE_BUILD_TYPE=Release --CDCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" > "$work/build.log" 2>&1) \
  || { tail -20 "$work/build.log" >&2; echo "prebuild-arm64: configuring failed" >&2; exit 1; }
cmake --build "$work/build" --target quorum_core quorum_faiss -j "$(nproc)" >> "$work/build.log" 2>&1 \
  || { tail -20 "$work/build.log" >&2; echo "prebuild-arm64: building failed" >&2; exit 1; }
for m in quorum_core quorum_faiss; do
  aarch64-linux-gnu-strip --strip-unneeded -o "$out/$m.node" "$work/build/Release/$m.node"
done

for module in "$out"/*.node; do
  file "$module" | grep -q 'ARM aarch64' || { echo "prebuild-arm64: $module is not an aarch64 binary" >&2; exit 1; }
done
bash "$root/scripts/check-linked.sh" prebuild-arm64 "$out"/*.node
for module in "$out"/*.node; do
  printf 'prebuilt %s (%s bytes)\n' "${module#$root/}" "$(stat -c %s "$module")"
done
