#include "pair_distance.h"

#include "dispatch.h"

namespace quorum::kernels {

const PairDistanceOps& pair_distance() { return pick(pair_distance_scalar(), pair_distance_avx2(), pair_distance_avx512(), pair_distance_neon()); }

}  // namespace quorum::kernels
