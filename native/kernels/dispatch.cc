#include "dispatch.h"

#include <atomic>
#include <cstdlib>

#include "../common/cpu_features.h"
#include "../common/error.h"
#include "quant_dot.h"

namespace quorum::kernels {
namespace {

constexpr const char* kNames[] = {"scalar", "avx2", "avx512", "neon"};

// Every family has the same variants as dense_dot, so its tables decide what the build supports.
bool supported(Isa level) {
  const auto& cpu = cpu_features();
  switch (level) {
    case Isa::Avx512: return cpu.avx512 && dense_dot_avx512();
    case Isa::Avx2: return cpu.avx2_fma && dense_dot_avx2();
    case Isa::Neon: return cpu.neon && dense_dot_neon();
    case Isa::Scalar: return true;
  }
  return false;
}

bool parse(const std::string& name, Isa& out) {
  for (int i = 0; i < 4; ++i)
    if (name == kNames[i]) {
      out = Isa(i);
      return true;
    }
  return false;
}

Isa initial() {
  Isa level;
  if (const char* env = std::getenv("QUORUM_ISA"))
    if (parse(env, level) && supported(level)) return level;
  for (Isa l : {Isa::Avx512, Isa::Avx2, Isa::Neon})
    if (supported(l)) return l;
  return Isa::Scalar;
}

std::atomic<Isa> g_level{initial()};

}  // namespace

std::vector<std::string> available_isas() {
  std::vector<std::string> out;
  for (Isa l : {Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Scalar})
    if (supported(l)) out.emplace_back(kNames[int(l)]);
  return out;
}

Isa active_level() { return g_level.load(std::memory_order_relaxed); }

const char* active_isa() { return kNames[int(active_level())]; }

void set_isa(const std::string& name) {
  Isa level;
  if (!parse(name, level))
    throw Error("ERR_ARG", "unknown ISA '" + name + "': expected 'avx512', 'avx2', 'neon' or 'scalar'");
  if (!supported(level)) throw Error("ERR_UNSUPPORTED", "this CPU or build cannot run the '" + name + "' kernels");
  g_level.store(level);
}

const DenseDotOps& dense_dot() { return pick(dense_dot_scalar(), dense_dot_avx2(), dense_dot_avx512(), dense_dot_neon()); }

}  // namespace quorum::kernels

namespace quorum::kernels {
const QuantDotOps& quant_dot() { return pick(quant_dot_scalar(), quant_dot_avx2(), quant_dot_avx512(), quant_dot_neon()); }
}  // namespace quorum::kernels
