// SPLADE hot loops over a vector type `Vec`, compiled per ISA by splade_<isa>.cc.

// R token rows at once: best and arg are read and written once per R rows instead of once per row.
constexpr size_t kAhead = 256;  // elements (1 KiB of f32): 13.7 -> 14.2 GB/s measured

template <int R>
void max_rows(const void* const* rows, Dtype t, size_t n, const float* tok, float* best, float* arg) {
  using V = typename Vec::V;
  const size_t esize = dtype_size(t);
  if (!arg) {  // values only: no arg-max traffic
    size_t v = 0;
    for (; v + Vec::W <= n; v += Vec::W) {
      V b = Vec::load(best + v);
      for (int r = 0; r < R; ++r) {
        // The hardware prefetcher restarts at every 4 KiB page of each row; fetch ahead of it.
        if (v % 16 == 0) __builtin_prefetch(static_cast<const char*>(rows[r]) + (v + kAhead) * esize);
        b = Vec::max(vload<Vec>(rows[r], t, v), b);  // NaN logits never win
      }
      Vec::store(best + v, b);
    }
    if (v < n) {
      V b = Vec::loadn(best + v, n - v);
      for (int r = 0; r < R; ++r) b = Vec::max(vloadn<Vec>(rows[r], t, v, n - v), b);
      Vec::storen(best + v, b, n - v);
    }
    return;
  }
  V idx[R];
  for (int r = 0; r < R; ++r) idx[r] = Vec::set1(tok[r]);
  size_t v = 0;
  for (; v + Vec::W <= n; v += Vec::W) {
    V b = Vec::load(best + v), a = Vec::load(arg + v);
    for (int r = 0; r < R; ++r) {  // rows in token order, strict >: the lowest token keeps a tie
      if (v % 16 == 0) __builtin_prefetch(static_cast<const char*>(rows[r]) + (v + kAhead) * esize);
      V x = vload<Vec>(rows[r], t, v);
      auto m = Vec::gt(x, b);
      b = Vec::blend(m, b, x);
      a = Vec::blend(m, a, idx[r]);
    }
    Vec::store(best + v, b);
    Vec::store(arg + v, a);
  }
  if (v < n) {
    const size_t k = n - v;
    V b = Vec::loadn(best + v, k), a = Vec::loadn(arg + v, k);
    for (int r = 0; r < R; ++r) {
      V x = vloadn<Vec>(rows[r], t, v, k);
      auto m = Vec::gt(x, b);
      b = Vec::blend(m, b, x);
      a = Vec::blend(m, a, idx[r]);
    }
    Vec::storen(best + v, b, k);
    Vec::storen(arg + v, a, k);
  }
}

void max_update(const void* const* rows, size_t nrows, Dtype t, size_t n, const float* tok, float* best, float* arg) {
  switch (nrows) {
    case 4: max_rows<4>(rows, t, n, tok, best, arg); break;
    case 3: max_rows<3>(rows, t, n, tok, best, arg); break;
    case 2: max_rows<2>(rows, t, n, tok, best, arg); break;
    case 1: max_rows<1>(rows, t, n, tok, best, arg); break;
    default: break;
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
  r = Vec::blend(Vec::gt(x, Vec::set1(3.4028235e38f)), r, x);  // +inf stays +inf (inf / inf would be NaN)
  return Vec::blend(tiny, r, x);
}

void log1p_inplace(float* x, size_t n) {
  size_t v = 0;
  for (; v + Vec::W <= n; v += Vec::W) Vec::store(x + v, log1p_vec(Vec::load(x + v)));
  if (v < n) Vec::storen(x + v, log1p_vec(Vec::loadn(x + v, n - v)), n - v);
}
