// 8-lane f32 vector for the AVX2 + FMA kernel variants. Include inside an anonymous namespace, after
// `#pragma GCC target("avx2,fma,f16c")` and after <immintrin.h>.
template <class V>
inline typename V::V vexp(typename V::V x);  // simd/vec_math.h
template <class V>
inline typename V::V vlog(typename V::V x);

struct Vec {
  static constexpr size_t W = 8;
  using V = __m256;
  using M = __m256;  // comparison results are all-ones / all-zeros lanes

  // Lanes i < n set.
  static M first(size_t n) {
    return _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(float(std::min<size_t>(n, 8))), _CMP_LT_OQ);
  }
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V loadn(const float* p, size_t n) {
    alignas(32) float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n && i < 8; ++i) t[i] = p[i];
    return _mm256_load_ps(t);
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void storen(float* p, V v, size_t n) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    for (size_t i = 0; i < n && i < 8; ++i) p[i] = t[i];
  }
  static V widen_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static __m128i load8(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static __m128i load8n(const uint16_t* p, size_t n) {
    alignas(16) uint16_t t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n && i < 8; ++i) t[i] = p[i];
    return _mm_load_si128(reinterpret_cast<const __m128i*>(t));
  }
  static V load_bf16(const uint16_t* p) { return widen_bf16(load8(p)); }
  static V loadn_bf16(const uint16_t* p, size_t n) { return widen_bf16(load8n(p, n)); }
  static V load_f16(const uint16_t* p) { return _mm256_cvtph_ps(load8(p)); }
  static V loadn_f16(const uint16_t* p, size_t n) { return _mm256_cvtph_ps(load8n(p, n)); }
  // 8 unsigned bytes (int8 scalar-quantized codes, 0..255) as f32.
  static V load_u8(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static V loadn_u8(const uint8_t* p, size_t n) {
    alignas(16) uint8_t t[16] = {};
    for (size_t i = 0; i < n && i < 8; ++i) t[i] = p[i];
    return load_u8(t);
  }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static M gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M ge(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }  // ordered: NaN never passes
  static uint32_t bits(M m) { return uint32_t(_mm256_movemask_ps(m)); }  // lane i -> bit i
  static bool any(M m) { return _mm256_movemask_ps(m) != 0; }
  static V blend(M m, V no, V yes) { return _mm256_blendv_ps(no, yes, m); }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // n integral in [-126, 127].
  static V pow2i(V n) {
    __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(i, 23));
  }
  static V frexp(V x, V& e) {
    __m256i b = _mm256_castps_si256(x);
    e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(127)));
    __m256i m = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000));
    return _mm256_castsi256_ps(m);
  }
  static V exp(V x) { return vexp<Vec>(x); }
  static V log(V x) { return vlog<Vec>(x); }
};
