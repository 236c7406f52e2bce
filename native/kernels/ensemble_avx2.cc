// AVX2 + FMA variant of ensemble.h: the shared body over 8-lane vectors.
#include "ensemble.h"

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx2.h"
#include "simd/vec_math.h"
#include "ensemble_body.h"
const EnsembleOps kOps{"avx2", mutual_information};
}  // namespace

const EnsembleOps* ensemble_avx2() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const EnsembleOps* ensemble_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
