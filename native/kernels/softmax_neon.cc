// AArch64 NEON variant of softmax.h: the shared body over 4-lane vectors.
#include "softmax.h"

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
#include "softmax_body.h"
const SoftmaxOps kOps{"neon", exp_shift, row_max, count_greater, scale, dot, scale_cols, sub_scaled};
}  // namespace

const SoftmaxOps* softmax_neon() { return &kOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const SoftmaxOps* softmax_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
