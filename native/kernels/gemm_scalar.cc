// Scalar reference variant of gemm.h: the shared body over one-lane vectors.
#include <algorithm>
#include <cmath>

#include "gemm.h"

#include "../common/dtype.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "gemm_body.h"
}  // namespace

const GemmOps& gemm_scalar() { return kGemmOps; }

}  // namespace quorum::kernels
