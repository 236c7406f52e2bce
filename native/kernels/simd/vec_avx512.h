// 16-lane f32 vector for the AVX-512 kernel variants. Include inside an anonymous namespace, after
// `#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,...")` and after <immintrin.h>.
template <class V>
inline typename V::V vexp(typename V::V x);  // simd/vec_math.h
template <class V>
inline typename V::V vlog(typename V::V x);

struct Vec {
  static constexpr size_t W = 16;
  using V = __m512;
  using M = __mmask16;

  static M first(size_t n) { return n >= 16 ? M(0xffff) : M((1u << n) - 1u); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V loadn(const float* p, size_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void storen(float* p, V v, size_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
  static V widen_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static V load_bf16(const uint16_t* p) { return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V loadn_bf16(const uint16_t* p, size_t n) { return widen_bf16(_mm256_maskz_loadu_epi16(first(n), p)); }
  static V load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V loadn_f16(const uint16_t* p, size_t n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p)); }
  // 16 unsigned bytes (int8 scalar-quantized codes, 0..255) as f32.
  static V load_u8(const uint8_t* p) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))); }
  static V loadn_u8(const uint8_t* p, size_t n) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(first(n), p))); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M ge(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }  // ordered: NaN never passes
  static uint32_t bits(M m) { return uint32_t(m); }  // lane i -> bit i
  static bool any(M m) { return m != 0; }
  // Lanes where m is set take `yes`, the others `no`.
  static V blend(M m, V no, V yes) { return _mm512_mask_blend_ps(m, no, yes); }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  static V round(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2i(V n) { return _mm512_scalef_ps(set1(1.0f), n); }
  static V frexp(V x, V& e) {
    e = _mm512_getexp_ps(x);
    return _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
  }
  static V exp(V x) { return vexp<Vec>(x); }
  static V log(V x) { return vlog<Vec>(x); }
};
