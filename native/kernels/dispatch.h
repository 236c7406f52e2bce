// Run-time choice of kernel variant. Defaults to the best the CPU supports; QUORUM_ISA or set_isa() can
// force a lower one (tests run every variant this way).
#pragma once
#include <string>
#include <vector>

#include "dense_dot.h"

namespace quorum::kernels {

// Variants this CPU can run, best first ("avx512", "avx2", "scalar" on x86-64; "neon", "scalar" on AArch64).
std::vector<std::string> available_isas();
const char* active_isa();
// Throws quorum::Error ERR_UNSUPPORTED for a variant this CPU or build lacks, ERR_ARG for an unknown name.
void set_isa(const std::string& name);

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2, Neon = 3 };
Isa active_level();

// The variant of one kernel family for the active ISA: the best of the given tables at or below it (a
// family may lack a variant in some builds, passed as nullptr; an x86 build has no NEON table, an AArch64 build no
// AVX ones).
template <class Ops>
const Ops& pick(const Ops& scalar, const Ops* avx2, const Ops* avx512, const Ops* neon) {
  switch (active_level()) {
    case Isa::Avx512:
      if (avx512) return *avx512;
      [[fallthrough]];
    case Isa::Avx2: return avx2 ? *avx2 : scalar;
    case Isa::Neon: return neon ? *neon : scalar;
    case Isa::Scalar: break;
  }
  return scalar;
}

const DenseDotOps& dense_dot();

}  // namespace quorum::kernels
