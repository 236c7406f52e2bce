// 4-lane f32 vector for the AArch64 NEON kernel variants (Advanced SIMD is part of every ARMv8-A core, FMA and
// half-precision conversion included). Include inside an anonymous namespace, after <arm_neon.h>.
//
// Where x86 and the scalar reference agree on a NaN's fate, so does this type: max / min return the second operand
// unless the first compares greater / less (x86's maxps / minps, the reference's `a > b ? a : b`), not NEON's
// NaN-propagating vmaxq / vminq.
template <class V>
inline typename V::V vexp(typename V::V x);  // simd/vec_math.h
template <class V>
inline typename V::V vlog(typename V::V x);

struct Vec {
  static constexpr size_t W = 4;
  using V = float32x4_t;
  using M = uint32x4_t;  // comparison results are all-ones / all-zeros lanes

  // Lanes i < n set.
  static M first(size_t n) {
    const uint32_t lanes[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(uint32_t(std::min<size_t>(n, 4))));
  }
  static V zero() { return vdupq_n_f32(0.f); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static V loadn(const float* p, size_t n) {
    float t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n && i < 4; ++i) t[i] = p[i];
    return vld1q_f32(t);
  }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static void storen(float* p, V v, size_t n) {
    float t[4];
    vst1q_f32(t, v);
    for (size_t i = 0; i < n && i < 4; ++i) p[i] = t[i];
  }
  static V widen_bf16(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }
  static uint16x4_t load4n(const uint16_t* p, size_t n) {
    uint16_t t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n && i < 4; ++i) t[i] = p[i];
    return vld1_u16(t);
  }
  static V load_bf16(const uint16_t* p) { return widen_bf16(vld1_u16(p)); }
  static V loadn_bf16(const uint16_t* p, size_t n) { return widen_bf16(load4n(p, n)); }
  static V load_f16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static V loadn_f16(const uint16_t* p, size_t n) { return vcvt_f32_f16(vreinterpret_f16_u16(load4n(p, n))); }
  // 4 unsigned bytes (int8 scalar-quantized codes, 0..255) as f32: the 4 bytes loaded straight into a vector's low
  // lane (one LDR S, the rest zeroed; through a general register and a DUP it was two), two widenings and a
  // conversion (bench/dense-insns.sh: 59 -> 55 instructions a 64-multiply-add step, 1.59x -> 1.49x AVX2's).
  static V load_u8(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    const uint8x8_t b = vreinterpret_u8_f32(vset_lane_f32(f, vdup_n_f32(0.f), 0));
    return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(b))));
  }
  static V loadn_u8(const uint8_t* p, size_t n) {
    uint8_t t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n && i < 4; ++i) t[i] = p[i];
    return load_u8(t);
  }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V max(V a, V b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
  static V min(V a, V b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
  static M gt(V a, V b) { return vcgtq_f32(a, b); }
  static M lt(V a, V b) { return vcltq_f32(a, b); }
  static M ge(V a, V b) { return vcgeq_f32(a, b); }  // ordered: NaN never passes
  static uint32_t bits(M m) {                         // lane i -> bit i
    const uint32_t weights[4] = {1, 2, 4, 8};
    return vaddvq_u32(vandq_u32(m, vld1q_u32(weights)));
  }
  static bool any(M m) { return vmaxvq_u32(m) != 0; }
  static V blend(M m, V no, V yes) { return vbslq_f32(m, yes, no); }
  static float sum(V v) { return vaddvq_f32(v); }
  static float hmax(V v) {
    const float32x2_t h = vget_high_f32(v), l = vget_low_f32(v);
    const float32x2_t m = vbsl_f32(vcgt_f32(l, h), l, h);
    const float a = vget_lane_f32(m, 0), b = vget_lane_f32(m, 1);
    return a > b ? a : b;
  }
  static V round(V x) { return vrndnq_f32(x); }  // to nearest, ties to even
  // n integral in [-126, 127].
  static V pow2i(V n) {
    const int32x4_t i = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(i, 23));
  }
  static V frexp(V x, V& e) {
    const uint32x4_t b = vreinterpretq_u32_f32(x);
    e = vcvtq_f32_s32(vsubq_s32(vreinterpretq_s32_u32(vshrq_n_u32(b, 23)), vdupq_n_s32(127)));
    const uint32x4_t m = vorrq_u32(vandq_u32(b, vdupq_n_u32(0x007fffff)), vdupq_n_u32(0x3f800000));
    return vreinterpretq_f32_u32(m);
  }
  static V exp(V x) { return vexp<Vec>(x); }
  static V log(V x) { return vlog<Vec>(x); }
};
