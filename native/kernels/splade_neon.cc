// AArch64 NEON variant of splade.h: the shared body over 4-lane vectors.
#include "splade.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quorum::kernels {
namespace {
#include "simd/vec_neon.h"
#include "simd/vec_math.h"
#include "splade_body.h"
const SpladeOps kOps{"neon", max_update, log1p_inplace};
}  // namespace

const SpladeOps* splade_neon() { return &kOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const SpladeOps* splade_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
