// One-lane "vector" for the scalar reference variants: the same kernel bodies, plain C++ arithmetic, libm
// exp and log. Include inside an anonymous namespace.
struct Vec {
  static constexpr size_t W = 1;
  using V = float;
  using M = bool;

  static M first(size_t n) { return n > 0; }
  static V zero() { return 0.f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static V loadn(const float* p, size_t n) { return n ? *p : 0.f; }
  static void store(float* p, V v) { *p = v; }
  static void storen(float* p, V v, size_t n) { if (n) *p = v; }
  static V load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
  static V loadn_bf16(const uint16_t* p, size_t n) { return n ? bf16_to_f32(*p) : 0.f; }
  static V load_f16(const uint16_t* p) { return f16_to_f32(*p); }
  static V loadn_f16(const uint16_t* p, size_t n) { return n ? f16_to_f32(*p) : 0.f; }
  static V load_u8(const uint8_t* p) { return float(*p); }
  static V loadn_u8(const uint8_t* p, size_t n) { return n ? float(*p) : 0.f; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static M gt(V a, V b) { return a > b; }
  static M lt(V a, V b) { return a < b; }
  static M ge(V a, V b) { return a >= b; }  // ordered: NaN never passes
  static uint32_t bits(M m) { return m ? 1u : 0u; }  // lane i -> bit i
  static bool any(M m) { return m; }
  static V blend(M m, V no, V yes) { return m ? yes : no; }
  static float sum(V v) { return v; }
  static float hmax(V v) { return v; }
  static V exp(V x) { return std::exp(x); }
  static V log(V x) { return std::log(x); }
};
