// AArch64 NEON variant of ensemble.h: the shared body over 4-lane vectors.
#include "ensemble.h"

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
#include "ensemble_body.h"
const EnsembleOps kOps{"neon", mutual_information};
}  // namespace

const EnsembleOps* ensemble_neon() { return &kOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const EnsembleOps* ensemble_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
