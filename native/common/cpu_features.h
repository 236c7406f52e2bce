// Which instruction sets this CPU (and OS) can run. Queried once; kernels dispatch on it.
#pragma once

namespace quorum {

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;       // F + BW + VL + DQ: what our AVX-512 kernels use
  bool avx512_bf16 = false;  // reported only (see bf16 below)
  bool f16c = false;
  bool avx512_vnni = false;       // int8 x int8 dots (quant_dot's score_s8)
  bool avx512_vpopcntdq = false;  // popcount of 64-bit lanes (quant_dot's score_bits)
  bool neon = false;     // AArch64 Advanced SIMD: every ARMv8-A core has it
  bool dotprod = false;  // AArch64 SDOT / UDOT (ARMv8.2+): int8 x int8 dots (quant_dot_neon.cc)
  // AArch64 BF16 (ARMv8.6+): reported only. BFDOT / BFMMLA take bf16 on both sides and round as Arm defines (not
  // IEEE), so a bf16 corpus against f32 queries would lose the queries' precision: dense_dot widens instead, as on x86
  // (avx512_bf16). docs/results/arm64.md.
  bool bf16 = false;
};

const CpuFeatures& cpu_features();

}  // namespace quorum
