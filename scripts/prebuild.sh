#!/usr/bin/env bash
# Builds the core's prebuilt binary for this platform into prebuilds/<platform>-<arch>/ (prebuildify, Node-API, no
# system dependencies, no -march=native). prebuildify runs node-gyp in the package directory, which would wipe the
# cmake-js build in build/; it runs in a scratch copy of the sources instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# node-gyp needs Node's headers offline: use the system's when present (Debian's nodejs ships them in /usr).
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/common.gypi ]; then export npm_config_nodedir=/usr; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/package.json" "$root/binding.gyp" "$root/native" "$work/"
ln -s "$root/node_modules" "$work/node_modules"
(cd "$work" && "$root/node_modules/.bin/prebuildify" --napi --strip)
mkdir -p "$root/prebuilds"
cp -r "$work/prebuilds/." "$root/prebuilds/"
find "$root/prebuilds" -name '*.node' -printf 'prebuilt %p (%s bytes)\n'
