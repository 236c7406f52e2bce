// Scalar reference variant of maxsim.h: the shared body over one-lane vectors.
#include <cmath>

#include "maxsim.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "maxsim_body.h"
const MaxSimOps kOps{"scalar", Vec::W, size_t(kTokTile), maxsim_update, to_f32};
}  // namespace

const MaxSimOps& maxsim_scalar() { return kOps; }

}  // namespace quorum::kernels
