#include "cpu_features.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace quorum {

static CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.avx512_vpopcntdq = f.avx512 && __builtin_cpu_supports("avx512vpopcntdq");
  f.f16c = __builtin_cpu_supports("avx") && f.avx2_fma;  // every AVX2+FMA CPU shipped has F16C
#endif
#if defined(__aarch64__)
  f.neon = true;
#if defined(__linux__)
  // The kernel's hwcaps (asm/hwcap.h): HWCAP_ASIMDDP is bit 20 of AT_HWCAP, HWCAP2_BF16 bit 14 of AT_HWCAP2.
  f.dotprod = (getauxval(AT_HWCAP) >> 20) & 1;
  f.bf16 = (getauxval(AT_HWCAP2) >> 14) & 1;
#endif
#endif
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace quorum
