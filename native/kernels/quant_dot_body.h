// The portable form of quant_dot.h's score_bits, written once and compiled by the scalar variant (its reference) and
// by the AVX2 variant under `target("popcnt")`, where __builtin_popcountll is one instruction. Include inside an
// anonymous namespace.
void score_bits(const uint8_t* q, size_t qstride, size_t planes, size_t nq, const uint8_t* const* rows, size_t nrows,
                size_t words, float* out, size_t ldo) {
  for (size_t i = 0; i < nq; ++i) {
    const uint8_t* qi = q + i * qstride;
    BitsQueryTail t;
    std::memcpy(&t, qi + planes * words * 8, sizeof t);
    for (size_t j = 0; j < nrows; ++j) {
      const uint8_t* r = rows[j];
      uint64_t a = 0;
      for (size_t w = 0; w < words; ++w) {
        uint64_t y;
        std::memcpy(&y, r + w * 8, 8);
        for (size_t p = 0; p < planes; ++p) {
          uint64_t x;
          std::memcpy(&x, qi + (p * words + w) * 8, 8);
          a += uint64_t(__builtin_popcountll(x & y)) << p;
        }
      }
      BitsRowTail rt;
      std::memcpy(&rt, r + words * 8, sizeof rt);
      out[i * ldo + j] = bits_score(t, rt, uint32_t(a));
    }
  }
}
