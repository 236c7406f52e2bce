// The ensemble-MI hot loops over a vector type `Vec`, compiled per ISA by ensemble_<isa>.cc.

constexpr float kMufEps = 1e-6f;
constexpr float kTiny = 1e-37f;  // below this M(d) log M(d) < 1e-35: counted as 0 (also guards log(0))

double mutual_information(const float* z, size_t members, size_t n, size_t ldz, float inv_temp, bool eps_mode,
                          float* scratch) {
  using V = typename Vec::V;
  float* mix = scratch;     // M(d), accumulated over members
  float* e = scratch + n;   // exp((z - max) / T) of the current member
  std::fill(mix, mix + n, 0.f);
  const size_t full = n / Vec::W * Vec::W, rest = n - full;
  const V vt = Vec::set1(inv_temp), eps = Vec::set1(kMufEps);
  const V lowest = Vec::set1(-3.0e38f);  // a -inf score (a masked candidate) has p = 0, and 0 * a must stay 0
  double member_entropy = 0;
  for (size_t k = 0; k < members; ++k) {
    const float* row = z + k * ldz;
    V vmax = Vec::set1(-INFINITY);
    for (size_t d = 0; d < full; d += Vec::W) vmax = Vec::max(vmax, Vec::load(row + d));
    float mx = Vec::hmax(vmax);
    for (size_t d = full; d < n; ++d) mx = std::max(mx, row[d]);
    const V vm = Vec::set1(mx);
    // Pass 1: e = exp(a), a = (z - max) / T; sums of e and of e * a.
    V s = Vec::zero(), t = Vec::zero();
    for (size_t d = 0; d < full; d += Vec::W) {
      V a = Vec::max(Vec::mul(Vec::sub(Vec::load(row + d), vm), vt), lowest);
      V x = Vec::exp(a);
      Vec::store(e + d, x);
      s = Vec::add(s, x);
      t = Vec::fmadd(x, a, t);
    }
    if (rest) {
      // Lanes past n must contribute exactly 0: both e and a are zeroed there (a alone could be +inf).
      float ta[Vec::W] = {}, te[Vec::W] = {};
      Vec::storen(ta, Vec::max(Vec::mul(Vec::sub(Vec::loadn(row + full, rest), vm), vt), lowest), rest);
      V a = Vec::load(ta);
      Vec::storen(te, Vec::exp(a), rest);
      V x = Vec::load(te);
      Vec::storen(e + full, x, rest);
      s = Vec::add(s, x);
      t = Vec::fmadd(x, a, t);
    }
    const double sum = double(Vec::sum(s));
    const V inv = Vec::set1(float(1.0 / sum));
    const V scale = Vec::set1(float(1.0 / (sum * double(members))));
    // Pass 2: M += p / K; in eps mode also sum p log(p + eps).
    V h = Vec::zero();
    for (size_t d = 0; d < full; d += Vec::W) {
      V x = Vec::load(e + d);
      Vec::store(mix + d, Vec::fmadd(x, scale, Vec::load(mix + d)));
      if (eps_mode) {
        V p = Vec::mul(x, inv);
        h = Vec::fmadd(p, Vec::log(Vec::add(p, eps)), h);
      }
    }
    if (rest) {
      V x = Vec::loadn(e + full, rest);
      Vec::storen(mix + full, Vec::fmadd(x, scale, Vec::loadn(mix + full, rest)), rest);
      if (eps_mode) {
        V p = Vec::mul(x, inv);
        h = Vec::fmadd(p, Vec::log(Vec::add(p, eps)), h);  // p = 0 past n: adds 0 * log(eps)
      }
    }
    // Exact: H = -sum p a + log S = log S - (sum e a) / S.
    member_entropy += eps_mode ? -double(Vec::sum(h)) : std::log(sum) - double(Vec::sum(t)) / sum;
  }
  V hm = Vec::zero();
  const V tiny = Vec::set1(kTiny);
  for (size_t d = 0; d < n; d += Vec::W) {
    const size_t w = std::min(Vec::W, n - d);
    V m = Vec::loadn(mix + d, w);
    if (eps_mode) {
      hm = Vec::fmadd(m, Vec::log(Vec::add(m, eps)), hm);
    } else {
      auto live = Vec::gt(m, tiny);
      V safe = Vec::blend(live, Vec::set1(1.0f), m);
      hm = Vec::add(hm, Vec::blend(live, Vec::zero(), Vec::mul(m, Vec::log(safe))));
    }
  }
  return -double(Vec::sum(hm)) - member_entropy / double(members);
}
