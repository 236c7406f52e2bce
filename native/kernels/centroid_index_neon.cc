// AArch64 NEON variant of centroid_index.h: the shared body over 4-lane vectors.
#include "centroid_index.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../common/dtype.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quorum::kernels {
namespace {
#include "simd/vec_neon.h"
#include "simd/vec_math.h"
#include "centroid_index_body.h"
const CentroidOps kOps{"neon", centroid_approx<int32_t>, centroid_approx<uint16_t>};
}  // namespace

const CentroidOps* centroid_neon() { return &kOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const CentroidOps* centroid_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
