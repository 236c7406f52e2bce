// AVX2 + FMA variant of centroid_index.h: the shared body over 8-lane vectors.
#include "centroid_index.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx2.h"
#include "simd/vec_math.h"
#include "centroid_index_body.h"
const CentroidOps kOps{"avx2", centroid_approx<int32_t>, centroid_approx<uint16_t>};
}  // namespace

const CentroidOps* centroid_avx2() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const CentroidOps* centroid_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
