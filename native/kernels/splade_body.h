// SPLADE hot loops over a vector type `Vec`, compiled per ISA by splade_<isa>.cc.

void max_update(const void* row, Dtype t, size_t n, float tok, float* best, float* arg) {
  using V = typename Vec::V;
  const V idx = Vec::set1(tok);
  size_t v = 0;
  for (; v + Vec::W <= n; v += Vec::W) {
    V x = vload<Vec>(row, t, v), b = Vec::load(best + v);
    auto m = Vec::gt(x, b);
    Vec::store(best + v, Vec::blend(m, b, x));
    Vec::store(arg + v, Vec::blend(m, Vec::load(arg + v), idx));
  }
  if (v < n) {
    size_t r = n - v;
    V x = vloadn<Vec>(row, t, v, r), b = Vec::loadn(best + v, r);
    auto m = Vec::gt(x, b);
    Vec::storen(best + v, Vec::blend(m, b, x), r);
    Vec::storen(arg + v, Vec::blend(m, Vec::loadn(arg + v, r), idx), r);
  }
}

// log1p(x) = log(u) * x / (u - 1) with u = 1 + x: the division cancels the rounding of u, so small x keeps
// full relative precision; where u rounds to 1, log1p(x) = x.
inline typename Vec::V log1p_vec(typename Vec::V x) {
  using V = typename Vec::V;
  V u = Vec::add(x, Vec::set1(1.0f));
  V d = Vec::sub(u, Vec::set1(1.0f));
  auto tiny = Vec::gt(Vec::set1(1e-30f), d);  // d == 0 (d >= 0 since x >= 0)
  V safe_d = Vec::blend(tiny, d, Vec::set1(1.0f));
  V r = Vec::mul(Vec::log(u), Vec::div(x, safe_d));
  return Vec::blend(tiny, r, x);
}

void log1p_inplace(float* x, size_t n) {
  size_t v = 0;
  for (; v + Vec::W <= n; v += Vec::W) Vec::store(x + v, log1p_vec(Vec::load(x + v)));
  if (v < n) Vec::storen(x + v, log1p_vec(Vec::loadn(x + v, n - v)), n - v);
}
