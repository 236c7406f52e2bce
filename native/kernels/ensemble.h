// Ensemble mutual information and confidence (DPR-MUF; formulas in
// docs/methods/kernels.md#ensemble-mutual-information-and-confidence). For one query with K members' scores
// z[k, d] over n candidates and a temperature T that DIVIDES the scores (T = 1e-3 multiplies them by 1000):
//   p_k(d) = softmax_d((z[k, d] - max_d z[k, d]) / T)
//   M(d)   = mean_k p_k(d)
//   MI     = H[M] - mean_k H[p_k]          conf = clamp(1 - MI / ln K, 0, 1)
// Exact mode uses x log x := 0 at x = 0 (entropies from the log-sum-exp, no log of a probability); eps mode
// writes -sum x log(x + 1e-6) for both entropies, as DPR-MUF's code does, and reproduces its numbers.
// Softmax sums are f32 per SIMD lane, combined in f64.
#pragma once
#include <cstddef>
#include <cstdint>

namespace quorum::kernels {

struct EnsembleOps {
  const char* isa;
  // MI of one query: z row k starts at z + k * ldz and holds n candidates. scratch holds
  // 2 * ensemble_padded(n) floats.
  double (*mutual_information)(const float* z, size_t members, size_t n, size_t ldz, float inv_temp, bool eps_mode,
                               float* scratch);
};

// n rounded up to whole vectors of the widest variant (16 lanes).
inline size_t ensemble_padded(size_t n) { return (n + 15) / 16 * 16; }

const EnsembleOps& ensemble_scalar();
const EnsembleOps* ensemble_avx2();
const EnsembleOps* ensemble_avx512();
const EnsembleOps* ensemble_neon();  // AArch64 builds only (else nullptr)

// z [batch, members, len]; lengths [batch] (candidates used per query, in [1, len]) or null (all len).
// Writes mi [batch] and conf [batch]. Throws ERR_SHAPE for fewer than 2 members or len 0, ERR_RANGE for a
// temperature that is not positive and finite or a length outside [1, len].
void ensemble_mi(const float* z, size_t batch, size_t members, size_t len, const int32_t* lengths, float temperature,
                 bool eps_mode, float* mi, float* conf);

}  // namespace quorum::kernels
