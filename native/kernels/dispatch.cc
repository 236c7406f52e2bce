#include "dispatch.h"

#include <atomic>
#include <cstdlib>

#include "../common/cpu_features.h"
#include "../common/error.h"

namespace quorum::kernels {
namespace {

const DenseDotOps* supported(const std::string& name) {
  const auto& cpu = cpu_features();
  if (name == "avx512") return cpu.avx512 ? dense_dot_avx512() : nullptr;
  if (name == "avx2") return cpu.avx2_fma ? dense_dot_avx2() : nullptr;
  if (name == "scalar") return &dense_dot_scalar();
  return nullptr;
}

const DenseDotOps* best() {
  for (const auto& name : available_isas())
    if (auto* ops = supported(name)) return ops;
  return &dense_dot_scalar();
}

const DenseDotOps* initial() {
  if (const char* env = std::getenv("QUORUM_ISA"))
    if (auto* ops = supported(env)) return ops;
  return best();
}

std::atomic<const DenseDotOps*> g_dense{initial()};

}  // namespace

std::vector<std::string> available_isas() {
  std::vector<std::string> out;
  for (const char* name : {"avx512", "avx2", "scalar"})
    if (supported(name)) out.emplace_back(name);
  return out;
}

const char* active_isa() { return g_dense.load()->isa; }

void set_isa(const std::string& name) {
  if (name != "avx512" && name != "avx2" && name != "scalar")
    throw Error("ERR_ARG", "unknown ISA '" + name + "': expected 'avx512', 'avx2' or 'scalar'");
  const DenseDotOps* ops = supported(name);
  if (!ops) throw Error("ERR_UNSUPPORTED", "this CPU or build cannot run the '" + name + "' kernels");
  g_dense.store(ops);
}

const DenseDotOps& dense_dot() { return *g_dense.load(); }

}  // namespace quorum::kernels
