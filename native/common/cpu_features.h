// Which instruction sets this CPU (and OS) can run. Queried once; kernels dispatch on it.
#pragma once

namespace quorum {

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;       // F + BW + VL + DQ: what our AVX-512 kernels use
  bool avx512_bf16 = false;  // reported only; no kernel needs it yet
  bool f16c = false;
  bool avx512_vnni = false;       // int8 x int8 dots (quant_dot's score_s8)
  bool avx512_vpopcntdq = false;  // popcount of 64-bit lanes (quant_dot's score_bits)
  bool neon = false;     // AArch64 Advanced SIMD: every ARMv8-A core has it
  bool dotprod = false;  // AArch64 SDOT / UDOT (ARMv8.2+): reported; no kernel needs it yet
  bool bf16 = false;     // AArch64 BF16 (ARMv8.6+): reported; no kernel needs it yet
};

const CpuFeatures& cpu_features();

}  // namespace quorum
