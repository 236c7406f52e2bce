#!/usr/bin/env bash
# What a shipped module may link (docs/building.md, Prebuilt binaries): the C/C++ runtime, libgomp and the loader,
# and no Fortran symbol left undefined. Each MODULE is checked with ldd on this machine's own architecture and with the
# cross binutils (readelf's NEEDED entries) when it is an aarch64 binary. Silent when all pass; otherwise names the
# first module at fault, prefixed by WHO, and fails.
#   bash scripts/check-linked.sh WHO MODULE...
set -euo pipefail
who="$1"
shift
for module in "$@"; do
  if file "$module" | grep -q 'ARM aarch64'; then
    allowed='^(libc|libm|libstdc\+\+|libgcc_s|libgomp|ld-linux-aarch64)\.so'
    needs="$(aarch64-linux-gnu-readelf -d "$module" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')"
    nm=aarch64-linux-gnu-nm
  else
    allowed='^(linux-vdso|libc|libm|libstdc\+\+|libgcc_s|libgomp|ld-linux-x86-64)\.so'
    needs="$(ldd "$module" | awk '{print $1}' | sed 's#.*/##')"
    nm=nm
  fi
  extra="$(echo "$needs" | grep -Ev "$allowed" || true)"
  if [ -n "$extra" ]; then echo "$who: $module needs $(echo $extra)" >&2; exit 1; fi
  fortran="$("$nm" -D --undefined-only "$module" | grep -o '_gfortran_[A-Za-z0-9_]*' || true)"
  if [ -n "$fortran" ]; then echo "$who: $module leaves $(echo $fortran) undefined" >&2; exit 1; fi
done
