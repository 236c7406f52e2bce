// The ensemble-MI hot loops over a vector type `Vec`, compiled per ISA by ensemble_<isa>.cc.

constexpr float kMufEps = 1e-6f;
constexpr float kTiny = 1e-37f;  // below this M(d) log M(d) < 1e-35: counted as 0 (also guards log(0))

double mutual_information(const float* z, size_t members, size_t n, size_t ldz, float inv_temp, bool eps_mode,
                          float* scratch) {
  using V = typename Vec::V;
  // Both buffers are padded to whole vectors and their padding lanes hold exact zeros, so every pass below
  // runs on whole vectors; only the loads of z are masked. (A tail through a stack buffer, masked store then
  // full load, stalled store forwarding: L = 100 ran 35% slower than L = 96.)
  const size_t padded = (n + Vec::W - 1) / Vec::W * Vec::W;
  float* mix = scratch;         // M(d), accumulated over members
  float* e = scratch + padded;  // exp((z - max) / T) of the current member
  std::fill(mix, mix + padded, 0.f);
  const V vt = Vec::set1(inv_temp), eps = Vec::set1(kMufEps), log_eps = Vec::log(eps);
  const V lowest = Vec::set1(-3.0e38f);  // a -inf score (a masked candidate) has p = 0, and 0 * a must stay 0
  const V neg_inf = Vec::set1(-INFINITY);
  const size_t tail = n % Vec::W;
  const auto live = Vec::first(tail == 0 ? Vec::W : tail);  // the lanes of the last vector that are candidates
  const auto load_z = [&](const float* row, size_t d) {
    return d + Vec::W <= n ? Vec::load(row + d) : Vec::loadn(row + d, n - d);
  };
  // The member entropies are summed over members in vector lanes (ta = sum of e * a / S in exact mode, h =
  // sum of p log(p + eps) in eps mode) with one horizontal sum per query; sum of log S is the log of a running
  // product (each S is in [1, n]), renormalised before it could overflow.
  V ta = Vec::zero(), h = Vec::zero();
  double prod = 1, log_prod = 0;
  for (size_t k = 0; k < members; ++k) {
    const float* row = z + k * ldz;
    V vmax = neg_inf;
    for (size_t d = 0; d < padded; d += Vec::W) {
      const V x = load_z(row, d);
      vmax = Vec::max(vmax, d + Vec::W <= n ? x : Vec::blend(live, neg_inf, x));
    }
    const V vm = Vec::set1(Vec::hmax(vmax));
    // Pass 1: e = exp(a), a = (z - max) / T; sums of e and of e * a.
    V s = Vec::zero(), t = Vec::zero();
    for (size_t d = 0; d < padded; d += Vec::W) {
      V a = Vec::max(Vec::mul(Vec::sub(load_z(row, d), vm), vt), lowest);
      V x = Vec::exp(a);
      if (d + Vec::W > n) {  // lanes past n contribute exactly 0: both e and a (a alone could be +inf there)
        a = Vec::blend(live, Vec::zero(), a);
        x = Vec::blend(live, Vec::zero(), x);
      }
      Vec::store(e + d, x);
      s = Vec::add(s, x);
      t = Vec::fmadd(x, a, t);
    }
    const double sum = double(Vec::sum(s));
    const V inv = Vec::set1(float(1.0 / sum));
    const V scale = Vec::set1(float(1.0 / (sum * double(members))));
    if (!eps_mode) {
      ta = Vec::fmadd(t, inv, ta);
      prod *= sum;
      if (prod > 1e250) {
        log_prod += std::log(prod);
        prod = 1;
      }
    }
    // Pass 2: M += p / K; in eps mode also sum p log(p + eps) (p = 0 in the padding adds 0 * log(eps)).
    for (size_t d = 0; d < padded; d += Vec::W) {
      const V x = Vec::load(e + d);
      Vec::store(mix + d, Vec::fmadd(x, scale, Vec::load(mix + d)));
      if (eps_mode) {
        // Where p + eps rounds to eps (p < 5.7e-14: most candidates at MUF's temperature 1e-3), the log is
        // log(eps), the same value: skipping vlog for such vectors changes no bit of the result.
        const V p = Vec::mul(x, inv), q = Vec::add(p, eps);
        h = Vec::fmadd(p, Vec::any(Vec::gt(q, eps)) ? Vec::log(q) : log_eps, h);
      }
    }
  }
  // Exact: H_k = -sum p a + log S = log S - (sum e a) / S.
  const double member_entropy = eps_mode ? -double(Vec::sum(h)) : log_prod + std::log(prod) - double(Vec::sum(ta));
  V hm = Vec::zero();
  const V tiny = Vec::set1(kTiny);
  for (size_t d = 0; d < padded; d += Vec::W) {
    V m = Vec::load(mix + d);
    if (eps_mode) {
      hm = Vec::fmadd(m, Vec::log(Vec::add(m, eps)), hm);
    } else {
      auto big = Vec::gt(m, tiny);
      V safe = Vec::blend(big, Vec::set1(1.0f), m);
      hm = Vec::add(hm, Vec::blend(big, Vec::zero(), Vec::mul(m, Vec::log(safe))));
    }
  }
  return -double(Vec::sum(hm)) - member_entropy / double(members);
}
