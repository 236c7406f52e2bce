// Scalar reference variant of softmax.h: the shared body over one-lane vectors.
#include <algorithm>
#include <cmath>

#include "softmax.h"

#include "../common/dtype.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "softmax_body.h"
const SoftmaxOps kOps{"scalar", exp_shift, row_max, count_greater, scale, dot, scale_cols, sub_scaled};
}  // namespace

const SoftmaxOps& softmax_scalar() { return kOps; }

}  // namespace quorum::kernels
