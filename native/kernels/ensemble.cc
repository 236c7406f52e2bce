#include "ensemble.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/thread_pool.h"
#include "contract.h"
#include "dispatch.h"

namespace quorum::kernels {

void ensemble_mi(const float* z, size_t batch, size_t members, size_t len, const int32_t* lengths, float temperature,
                 bool eps_mode, float* mi, float* conf) {
  const contract::EnsembleShape shape =
      contract::ensemble_scores(Dtype::F32, {int64_t(batch), int64_t(members), int64_t(len)});
  contract::temperature(temperature);
  if (lengths) contract::ensemble_lengths(lengths, shape);
  const EnsembleOps& o = pick(ensemble_scalar(), ensemble_avx2(), ensemble_avx512(), ensemble_neon());
  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  std::vector<AlignedBuffer> scratch(size_t(lease.threads()));
  for (auto& s : scratch) s.reset(2 * ensemble_padded(len) * sizeof(float));
  const double ln_k = std::log(double(members));
  const float inv_t = 1.f / temperature;
  constexpr size_t kChunk = 64;
  pool.parallel_for((batch + kChunk - 1) / kChunk, [&](size_t task, int worker) {
    float* sp = scratch[size_t(worker)].as<float>();
    for (size_t b = task * kChunk, end = std::min(batch, b + kChunk); b < end; ++b) {
      const size_t n = lengths ? size_t(lengths[b]) : len;
      double m = o.mutual_information(z + b * members * len, members, n, len, inv_t, eps_mode, sp);
      mi[b] = float(m);
      conf[b] = float(std::clamp(1.0 - m / ln_k, 0.0, 1.0));
    }
  });
}

}  // namespace quorum::kernels
