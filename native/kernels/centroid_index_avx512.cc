// AVX-512 variant of centroid_index.h: the shared body over 16-lane vectors.
#include "centroid_index.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx512.h"
#include "simd/vec_math.h"
#include "centroid_index_body.h"
const CentroidOps kOps{"avx512", centroid_approx<int32_t>, centroid_approx<uint16_t>};
}  // namespace

const CentroidOps* centroid_avx512() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const CentroidOps* centroid_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
