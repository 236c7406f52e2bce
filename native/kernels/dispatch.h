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

const DenseDotOps& dense_dot();

}  // namespace quorum::kernels
