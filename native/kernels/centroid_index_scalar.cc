// Scalar reference variant of centroid_index.h: the shared body over one-lane vectors.
#include "centroid_index.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "../common/dtype.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "centroid_index_body.h"
const CentroidOps kOps{"scalar", centroid_approx<int32_t>, centroid_approx<uint16_t>};
}  // namespace

const CentroidOps& centroid_scalar() { return kOps; }

}  // namespace quorum::kernels
