// DPR-MUF's dense fusion of the experts' top-L lists (docs/methods/fusion.md#muf-fusion), per question b:
//   w_e   = c[e, b] / sum_e c[e, b]   (every weight 1 / E when no expert's c is above 0)
//   fill_e = min of expert e's scores for b
//   S(d)  = sum over e, in expert order, of w_e * (score of d in e's list, or fill_e where d is missing)
// over the union of the lists, best first, ties to the lower tie rank, then the lower row (the fusion registry orders ties by corpus id:
// the caller passes each row's rank in that order), cut at k. Accumulated in f64 in the registry's order of
// operations, so the order equals `fuse(runs, mufFusion, { confidence })` (lib/methods/muf/fusion.ts, the reference).
#pragma once
#include <cstddef>
#include <cstdint>

namespace quorum::kernels {

struct FuseList {
  const int32_t* ids;     // [batch, len] corpus rows (distinct within a question's list)
  const float* scores;    // [batch, len]
  size_t len;             // >= 1
  const float* weights;   // [batch]: the expert's confidence per question
};

// out_ids / out_scores [batch, k]; a question whose union holds fewer than k rows is padded with -1 / -inf.
// tie_rank [rows] or nullptr (ties to the lower row). Throws ERR_RANGE for a row outside [0, rows), a weight that is
// negative or not finite, or a score that is not finite, before writing anything.
void muf_fuse(const FuseList* lists, size_t count, size_t batch, const int32_t* tie_rank, size_t rows, size_t k,
              int32_t* out_ids, float* out_scores);

}  // namespace quorum::kernels
