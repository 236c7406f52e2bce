#!/usr/bin/env bash
# Static instruction counts of the dense kernel's hot loops, NEON against AVX2 (issue 67: qemu's wall time says nothing
# about arm64 speed, so the kernels are compared by what they execute per multiply-add). Compiles dense_dot_neon.cc
# with the cross compiler and dense_dot_avx2.cc with the host's, both -O3 as the release build, and reads, for each
# corpus dtype, the steady-state loop of the full register tile (NEON: 4 queries x 4 rows x 4 lanes = 16 FMLA; AVX2:
# 2 queries x 4 rows x 8 lanes = 8 VFMADD; bf16: twice, even and odd) by the instructions only that dtype's loop
# has. Prints instructions per multiply-add (one lane of one FMA) for each, and their ratio.
# Then the int8 x int8 kernels (quant_dot: int8 queries over int8 codes) by byte products: NEON's SDOT forms (on cores
# with dotprod) against NEON's f32-over-u8 loop above, which is what int8 corpora run without it, and AVX-512 VNNI's.
#   bash bench/dense-insns.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
aarch64-linux-gnu-g++ -std=c++17 -O3 -S "$root/native/kernels/dense_dot_neon.cc" -o "$work/neon.s"
g++ -std=c++17 -O3 -S "$root/native/kernels/dense_dot_avx2.cc" -o "$work/avx2.s"
aarch64-linux-gnu-g++ -std=c++17 -O3 -S "$root/native/kernels/quant_dot_neon.cc" -o "$work/qneon.s"
g++ -std=c++17 -O3 -S "$root/native/kernels/quant_dot_avx512.cc" -o "$work/qavx512.s"
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

# int8 x int8: the block with `count` dot instructions; `macs` byte products it does (SDOT: 16, vpdpbusd: 64 each;
# the NEON 4 x 4 tile's 4 further SDOTs sum the queries' codes for the -128 shift of the rows, quant_dot_neon.cc).
echo
printf '%-34s %-22s %s\n' 'int8 queries x int8 codes' 'instr / byte product' 'vs NEON f32 over u8'
u8="$(pick "$work/neon.s" fmla 16 "uxtl,prfm" "")"
while IFS='|' read -r name file insn count macs; do
  n="$(pick "$work/$file" "$insn" "$count" "" "")"
  awk -v nm="$name" -v n="$n" -v m="$macs" -v u="$u8" 'BEGIN {
    printf "%-34s %-22s %.1fx fewer\n", nm, sprintf("%.3f (%d / %d)", n / m, n, m), (u / 64) / (n / m) }'
done <<'TABLE'
NEON SDOT, 4 queries x 4 rows|qneon.s|sdot|20|256
NEON SDOT by lane, 12 x 32 GEMM|qneon.s|sdot|64|1024
AVX-512 VNNI, 4 queries x 4 rows|qavx512.s|vpdpbusd|16|1024
AVX-512 VNNI, 12 x 32 GEMM (x2)|qavx512.s|vpdpbusd|48|3072
TABLE
