// Hot loops of pair_distance.h, written once over Vec (included by each ISA's variant). Four independent
// accumulators hide the FMA latency; the tail is one masked load.

template <bool kL2>
inline typename Vec::V pair_step(typename Vec::V a, typename Vec::V b, typename Vec::V acc) {
  if (kL2) {
    typename Vec::V d = Vec::sub(a, b);
    return Vec::fmadd(d, d, acc);
  }
  return Vec::fmadd(a, b, acc);
}

template <bool kL2>
inline float reduce_pairs(const float* a, const float* b, size_t n) {
  constexpr size_t W = Vec::W;
  typename Vec::V s0 = Vec::zero(), s1 = Vec::zero(), s2 = Vec::zero(), s3 = Vec::zero();
  size_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    s0 = pair_step<kL2>(Vec::load(a + i), Vec::load(b + i), s0);
    s1 = pair_step<kL2>(Vec::load(a + i + W), Vec::load(b + i + W), s1);
    s2 = pair_step<kL2>(Vec::load(a + i + 2 * W), Vec::load(b + i + 2 * W), s2);
    s3 = pair_step<kL2>(Vec::load(a + i + 3 * W), Vec::load(b + i + 3 * W), s3);
  }
  for (; i + W <= n; i += W) s0 = pair_step<kL2>(Vec::load(a + i), Vec::load(b + i), s0);
  if (i < n) s1 = pair_step<kL2>(Vec::loadn(a + i, n - i), Vec::loadn(b + i, n - i), s1);
  return Vec::sum(Vec::add(Vec::add(s0, s1), Vec::add(s2, s3)));
}

float pair_dot(const float* a, const float* b, size_t n) { return reduce_pairs<false>(a, b, n); }
float pair_l2sq(const float* a, const float* b, size_t n) { return reduce_pairs<true>(a, b, n); }
