#include "softmax.h"

#include "dispatch.h"

namespace quorum::kernels {

const SoftmaxOps& softmax_ops() { return pick(softmax_scalar(), softmax_avx2(), softmax_avx512(), softmax_neon()); }

}  // namespace quorum::kernels
