// Scalar reference variant of splade.h: the shared body over one-lane vectors.
#include <cmath>

#include "splade.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "splade_body.h"
const SpladeOps kOps{"scalar", max_update, log1p_inplace};
}  // namespace

const SpladeOps& splade_scalar() { return kOps; }

}  // namespace quorum::kernels
