// Hot loop of centroid_index.h, written once over Vec (included by each ISA's variant): one passage's approximate
// MaxSim. The question's tokens are the lanes (padded to a multiple of 16 with zero scores, which add nothing to a
// passage that has tokens); up to four vectors of lanes stay in registers while the passage's codes stream by. Codes
// are int32 (CAME's token index) or uint16 (the ColBERT index's, up to 65,536 centroids).
template <class Code>
inline float centroid_approx(const float* ct, size_t lanes, const Code* codes, size_t len) {
  constexpr size_t W = Vec::W;
  float total = 0;
  for (size_t j = 0; j < lanes; j += 4 * W) {
    const size_t nv = std::min<size_t>(4, (lanes - j) / W);
    const typename Vec::V lo = Vec::set1(-std::numeric_limits<float>::infinity());
    typename Vec::V m0 = lo, m1 = lo, m2 = lo, m3 = lo;
    for (size_t t = 0; t < len; ++t) {
      const float* row = ct + size_t(codes[t]) * lanes + j;
      m0 = Vec::max(m0, Vec::load(row));
      if (nv > 1) m1 = Vec::max(m1, Vec::load(row + W));
      if (nv > 2) m2 = Vec::max(m2, Vec::load(row + 2 * W));
      if (nv > 3) m3 = Vec::max(m3, Vec::load(row + 3 * W));
    }
    typename Vec::V s = m0;
    if (nv > 1) s = Vec::add(s, m1);
    if (nv > 2) s = Vec::add(s, m2);
    if (nv > 3) s = Vec::add(s, m3);
    total += Vec::sum(s);
  }
  return total;
}
