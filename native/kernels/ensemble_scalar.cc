// Scalar reference variant of ensemble.h: the shared body over one-lane vectors.
#include <algorithm>
#include <cmath>

#include "ensemble.h"

#include "../common/dtype.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "ensemble_body.h"
const EnsembleOps kOps{"scalar", mutual_information};
}  // namespace

const EnsembleOps& ensemble_scalar() { return kOps; }

}  // namespace quorum::kernels
