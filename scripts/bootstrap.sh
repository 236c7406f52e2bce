#!/usr/bin/env bash
# Installs the Debian packages Quorum builds against, when missing: a C++ toolchain and CMake, faiss (static),
# libtorch (CPU) and OpenBLAS. As root it runs apt-get; otherwise it prints the exact command and fails.
set -euo pipefail
# Extra packages can be named as arguments (CI adds chromium, which the HTML report's browser test uses, and the
# linux-arm64 cross toolchain: scripts/prebuild-arm64.sh).
packages=(build-essential cmake python3 libfaiss-dev libtorch-dev libgloo-dev libopenblas-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
# arm64 packages (the linux-arm64 cross-build: scripts/prebuild-arm64.sh) come through Debian's multiarch.
if printf '%s\n' "${missing[@]}" | grep -q ':arm64$' && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  cmd="dpkg --add-architecture arm64 && $cmd"
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  bash -c "$cmd"
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  echo "bootstrap: installing ${missing[*]} with sudo"
  sudo bash -c "$cmd"
else
  echo "bootstrap: missing Debian packages: ${missing[*]}" >&2
  echo "run as root: $cmd" >&2
  exit 1
fi
