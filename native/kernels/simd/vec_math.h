// exp and log for any SIMD vector type built from a few primitives (round, 2^n, frexp). Polynomials are the
// Cephes single-precision ones (max error ~2 ulp on the ranges the kernels use); only the SIMD variants use
// them: the scalar variant calls libm.
//
// Include inside the same anonymous namespace as the vector type, after the target pragma.

// e^x. Inputs below -87.3 (where the result leaves the normal range) give exactly 0; inputs above 88 give
// e^88 (the kernels only exponentiate values with their maximum already subtracted, so x <= 0 in practice).
template <class Vec>
inline typename Vec::V vexp(typename Vec::V x) {
  using V = typename Vec::V;
  const V lo = Vec::set1(-87.33654f);
  auto underflow = Vec::lt(x, lo);
  x = Vec::min(Vec::max(x, lo), Vec::set1(88.0f));
  V n = Vec::round(Vec::mul(x, Vec::set1(1.44269504088896341f)));
  V r = Vec::fmadd(n, Vec::set1(-0.693359375f), x);
  r = Vec::fmadd(n, Vec::set1(2.12194440e-4f), r);
  V p = Vec::set1(1.9875691500e-4f);
  p = Vec::fmadd(p, r, Vec::set1(1.3981999507e-3f));
  p = Vec::fmadd(p, r, Vec::set1(8.3334519073e-3f));
  p = Vec::fmadd(p, r, Vec::set1(4.1665795894e-2f));
  p = Vec::fmadd(p, r, Vec::set1(1.6666665459e-1f));
  p = Vec::fmadd(p, r, Vec::set1(5.0000001201e-1f));
  p = Vec::fmadd(p, Vec::mul(r, r), Vec::add(r, Vec::set1(1.0f)));
  return Vec::blend(underflow, Vec::mul(p, Vec::pow2i(n)), Vec::zero());
}

// Natural log for positive normal x (callers guard zero and subnormals).
template <class Vec>
inline typename Vec::V vlog(typename Vec::V x) {
  using V = typename Vec::V;
  V e;
  V m = Vec::frexp(x, e);  // x = m * 2^e, m in [1, 2)
  auto big = Vec::gt(m, Vec::set1(1.41421356237f));
  m = Vec::blend(big, m, Vec::mul(m, Vec::set1(0.5f)));
  e = Vec::blend(big, e, Vec::add(e, Vec::set1(1.0f)));
  V f = Vec::sub(m, Vec::set1(1.0f));
  V z = Vec::mul(f, f);
  V y = Vec::set1(7.0376836292e-2f);
  y = Vec::fmadd(y, f, Vec::set1(-1.1514610310e-1f));
  y = Vec::fmadd(y, f, Vec::set1(1.1676998740e-1f));
  y = Vec::fmadd(y, f, Vec::set1(-1.2420140846e-1f));
  y = Vec::fmadd(y, f, Vec::set1(1.4249322787e-1f));
  y = Vec::fmadd(y, f, Vec::set1(-1.6668057665e-1f));
  y = Vec::fmadd(y, f, Vec::set1(2.0000714765e-1f));
  y = Vec::fmadd(y, f, Vec::set1(-2.4999993993e-1f));
  y = Vec::fmadd(y, f, Vec::set1(3.3333331174e-1f));
  y = Vec::mul(Vec::mul(y, f), z);
  y = Vec::fmadd(e, Vec::set1(-2.12194440e-4f), y);
  y = Vec::fmadd(z, Vec::set1(-0.5f), y);
  V r = Vec::add(f, y);
  return Vec::fmadd(e, Vec::set1(0.693359375f), r);
}

// Element i of a row stored as f32, bf16 or f16, as f32 lanes (n of them, the rest zero, for the loadn forms).
template <class Vec>
inline typename Vec::V vload(const void* row, Dtype t, size_t i) {
  if (t == Dtype::F32) return Vec::load(static_cast<const float*>(row) + i);
  if (t == Dtype::BF16) return Vec::load_bf16(static_cast<const uint16_t*>(row) + i);
  return Vec::load_f16(static_cast<const uint16_t*>(row) + i);
}

template <class Vec>
inline typename Vec::V vloadn(const void* row, Dtype t, size_t i, size_t n) {
  if (t == Dtype::F32) return Vec::loadn(static_cast<const float*>(row) + i, n);
  if (t == Dtype::BF16) return Vec::loadn_bf16(static_cast<const uint16_t*>(row) + i, n);
  return Vec::loadn_f16(static_cast<const uint16_t*>(row) + i, n);
}
