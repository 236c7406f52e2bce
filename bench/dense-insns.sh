#!/usr/bin/env bash
# Static instruction counts of the dense kernel's hot loops, NEON against AVX2 (issue 67: qemu's wall time says nothing
# about arm64 speed, so the kernels are compared by what they execute per multiply-add). Compiles dense_dot_neon.cc
# with the cross compiler and dense_dot_avx2.cc with the host's, both -O3 as the release build, and reads, for each
# corpus dtype, the steady-state loop of the full register tile (NEON: 4 queries x 4 rows x 4 lanes = 16 FMLA; AVX2:
# 2 queries x 4 rows x 8 lanes = 8 VFMADD; bf16: twice, even and odd) by the instructions only that dtype's loop
# has. Prints instructions per multiply-add (one lane of one FMA) for each, and their ratio.
#   bash bench/dense-insns.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
aarch64-linux-gnu-g++ -std=c++17 -O3 -S "$root/native/kernels/dense_dot_neon.cc" -o "$work/neon.s"
g++ -std=c++17 -O3 -S "$root/native/kernels/dense_dot_avx2.cc" -o "$work/avx2.s"
# Blocks between labels: "<fma count> <instruction count> <mnemonics>".
blocks() {
  awk -v fma="$2" '
    /^\.L[0-9]+:/ { if (n) print c, n, m; c = 0; n = 0; m = ""; next }
    /^\t[a-z]/ { n++; m = m " " $1; if ($1 ~ fma) c++ }
    END { if (n) print c, n, m }' "$1"
}
# The leanest block with `want` FMAs, having every mnemonic of `has` and none of `not`.
pick() { # file fma want has not
  blocks "$1" "$2" | awk -v want="$3" -v has="$4" -v not="$5" '
    $1 == want { ok = 1; split(has, h, ","); for (i in h) if (h[i] != "" && index($0, " " h[i]) == 0) ok = 0;
      split(not, x, ","); for (i in x) if (x[i] != "" && index($0, " " x[i]) > 0) ok = 0;
      if (ok && (best == "" || $2 < best)) best = $2 }
    END { print best }'
}
printf '%-6s %-22s %-22s %s\n' dtype 'NEON instr / MAC' 'AVX2 instr / MAC' ratio
while IFS='|' read -r dtype nhas nnot ahas anot mult; do
  n="$(pick "$work/neon.s" fmla $((16 * mult)) "$nhas" "$nnot")"
  a="$(pick "$work/avx2.s" vfmadd $((8 * mult)) "$ahas" "$anot")"
  awk -v d="$dtype" -v n="$n" -v a="$a" -v m="$mult" 'BEGIN {
    pn = n / (64 * m); pa = a / (64 * m); printf "%-6s %-22s %-22s %.2f\n", d, sprintf("%.3f (%d / %d)", pn, n, 64 * m), sprintf("%.3f (%d / %d)", pa, a, 64 * m), pn / pa }'
done <<'TABLE'
f32||shl,fcvtl,uxtl,ldp|prefetcht0|vpslld,vcvtph2ps,vpmovzxbd|1
f16|fcvtl,prfm||vcvtph2ps,prefetcht0||1
u8|uxtl,prfm||vpmovzxbd,prefetcht0||1
bf16|shl,prfm||vpslld,prefetcht0||2
TABLE
