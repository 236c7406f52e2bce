// Integer helpers shared by the blocked kernels.
#pragma once
#include <cstddef>

namespace quorum {

// Blocks of size b needed to cover a items.
constexpr size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

}  // namespace quorum
