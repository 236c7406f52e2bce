// Run-time choice of kernel variant. Defaults to the best the CPU supports; QUORUM_ISA or set_isa() can
// force a lower one (tests run every variant this way).
#pragma once
#include <string>
#include <vector>

#include "dense_dot.h"

namespace quorum::kernels {

// Variants this CPU can run, best first ("avx512", "avx2", "scalar").
std::vector<std::string> available_isas();
const char* active_isa();
// Throws quorum::Error ERR_UNSUPPORTED for a variant this CPU or build lacks, ERR_ARG for an unknown name.
void set_isa(const std::string& name);

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };
Isa active_level();

// The variant of one kernel family for the active ISA: the best of the given tables at or below it (a
// family may lack a variant in some builds, passed as nullptr).
template <class Ops>
const Ops& pick(const Ops& scalar, const Ops* avx2, const Ops* avx512) {
  Isa level = active_level();
  if (level == Isa::Avx512 && avx512) return *avx512;
  if (level >= Isa::Avx2 && avx2) return *avx2;
  return scalar;
}

const DenseDotOps& dense_dot();

}  // namespace quorum::kernels
