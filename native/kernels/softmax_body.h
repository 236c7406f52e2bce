// Softmax hot loops over a vector type `Vec`, compiled per ISA by softmax_<isa>.cc.

double exp_shift(const float* x, size_t n, float shift, float scale, float* out) {
  using V = typename Vec::V;
  const V s = Vec::set1(shift), k = Vec::set1(scale);
  V acc = Vec::zero();
  size_t j = 0;
  for (; j + Vec::W <= n; j += Vec::W) {
    V e = Vec::exp(Vec::mul(Vec::sub(Vec::load(x + j), s), k));
    Vec::store(out + j, e);
    acc = Vec::add(acc, e);
  }
  double sum = double(Vec::sum(acc));
  for (; j < n; ++j) {
    out[j] = std::exp((x[j] - shift) * scale);
    sum += double(out[j]);
  }
  return sum;
}

float row_max(const float* x, size_t n) {
  using V = typename Vec::V;
  V m = Vec::set1(-INFINITY);
  size_t j = 0;
  for (; j + Vec::W <= n; j += Vec::W) m = Vec::max(Vec::load(x + j), m);  // NaN in x keeps m
  float r = Vec::hmax(m);
  for (; j < n; ++j) r = x[j] > r ? x[j] : r;
  return r;
}

size_t count_greater(const float* x, size_t n, float t) {
  using V = typename Vec::V;
  const V tv = Vec::set1(t), one = Vec::set1(1.f);
  size_t c = 0, j = 0;
  // The lanes count in f32, exact below 2^24: blocks of 2^20 elements keep every lane far below that.
  for (size_t end = n - n % Vec::W; j < end;) {
    const size_t stop = std::min(end, j + (size_t(1) << 20));
    V acc = Vec::zero();
    for (; j < stop; j += Vec::W) acc = Vec::add(acc, Vec::blend(Vec::gt(Vec::load(x + j), tv), Vec::zero(), one));
    c += size_t(Vec::sum(acc));
  }
  for (; j < n; ++j) c += x[j] > t;
  return c;
}

void scale(float* x, size_t n, float k) {
  const typename Vec::V kv = Vec::set1(k);
  size_t j = 0;
  for (; j + Vec::W <= n; j += Vec::W) Vec::store(x + j, Vec::mul(Vec::load(x + j), kv));
  for (; j < n; ++j) x[j] *= k;
}

double dot(const float* x, const float* y, size_t n) {
  typename Vec::V acc = Vec::zero();
  size_t j = 0;
  for (; j + Vec::W <= n; j += Vec::W) acc = Vec::fmadd(Vec::load(x + j), Vec::load(y + j), acc);
  double sum = double(Vec::sum(acc));
  for (; j < n; ++j) sum += double(x[j]) * double(y[j]);
  return sum;
}

void scale_cols(const float* x, const float* k, size_t n, float a, float* out) {
  const typename Vec::V av = Vec::set1(a);
  size_t j = 0;
  for (; j + Vec::W <= n; j += Vec::W) Vec::store(out + j, Vec::mul(Vec::load(x + j), Vec::mul(av, Vec::load(k + j))));
  for (; j < n; ++j) out[j] = x[j] * (a * k[j]);
}

void sub_scaled(float* g, const float* x, size_t n, float c, float k) {
  const typename Vec::V cv = Vec::set1(c), kv = Vec::set1(k);
  size_t j = 0;
  for (; j + Vec::W <= n; j += Vec::W)
    Vec::store(g + j, Vec::mul(Vec::sub(Vec::load(g + j), Vec::mul(cv, Vec::load(x + j))), kv));
  for (; j < n; ++j) g[j] = (g[j] - c * x[j]) * k;
}
