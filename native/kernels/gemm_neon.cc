// AArch64 NEON variant of gemm.h: the shared body over 4-lane vectors.
#include "gemm.h"

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
#include "gemm_body.h"
}  // namespace

const GemmOps* gemm_neon() { return &kGemmOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const GemmOps* gemm_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
