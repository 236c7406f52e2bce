// AVX-512 variant of maxsim.h: the shared body over 16-lane vectors.
#include "maxsim.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx512.h"
#include "simd/vec_math.h"
#include "maxsim_body.h"
const MaxSimOps kOps{"avx512", Vec::W, size_t(kTokTile), maxsim_update, to_f32};
}  // namespace

const MaxSimOps* maxsim_avx512() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const MaxSimOps* maxsim_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
