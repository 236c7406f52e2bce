// AArch64 NEON variant of maxsim.h: the shared body over 4-lane vectors.
#include "maxsim.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quorum::kernels {
namespace {
#include "simd/vec_neon.h"
#include "simd/vec_math.h"
#include "maxsim_body.h"
const MaxSimOps kOps{"neon", Vec::W, size_t(kTokTile), maxsim_update, to_f32};
}  // namespace

const MaxSimOps* maxsim_neon() { return &kOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const MaxSimOps* maxsim_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
