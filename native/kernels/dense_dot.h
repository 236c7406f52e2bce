// Contract of the dense dot-product kernel family: the building block of scoreTopK, score and gatherScores.
//
// A variant scores query rows (f32) against corpus rows stored as f32, bf16, f16 or u8 (int8 scalar-quantized
// codes 0..255, read as their values: quant.h folds the scale and offset into the query), accumulating in f32.
// Queries are first "prepared" into the layout the variant reads (zero-padded, and for bf16 split into even
// and odd elements so that a bf16 pair converts to two f32 vectors with one shift and one mask). Corpus rows
// are passed as pointers, so one entry point serves contiguous blocks and gathered ids alike.
//
// Results differ between variants only by the order of the f32 additions.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/dtype.h"

namespace quorum::kernels {

struct DenseDotOps {
  const char* isa;
  // Floats per prepared query row for this dim and corpus dtype (>= dim).
  size_t (*prepared_stride)(size_t dim, Dtype corpus);
  // Writes prepared_stride(dim, corpus) floats for one query row.
  void (*prepare)(const float* query, size_t dim, Dtype corpus, float* out);
  // out[i * ldo + j] = dot(query i, rows[j]) for i < nq, j < nrows. Prepared query i starts at
  // prepared + i * stride.
  void (*score)(const float* prepared, size_t stride, size_t nq, const uint8_t* const* rows, size_t nrows,
                size_t dim, Dtype corpus, float* out, size_t ldo);
  // Writes the indices j < n with s[j] >= thr (ordered comparison: NaN never passes) to idx; returns how many.
  // idx must hold n + 16 entries (a variant may store whole vectors past the last hit).
  size_t (*select_ge)(const float* s, size_t n, float thr, uint32_t* idx);
};

const DenseDotOps& dense_dot_scalar();
// nullptr when the build has no such variant (not an x86-64 build).
const DenseDotOps* dense_dot_avx2();
const DenseDotOps* dense_dot_avx512();
const DenseDotOps* dense_dot_neon();  // AArch64 builds only (else nullptr)

}  // namespace quorum::kernels
