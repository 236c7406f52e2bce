// A file mapping whose file someone truncates in place faults (SIGBUS) at the first touch of a page past the new
// end: the process dies. The guard makes that a typed error instead (issue 65):
// - every mapping Quorum makes (Tensor.map, DenseIndex.map) is registered with its file (device, inode and the
//   size the mapping needs);
// - check() before each use stats the file: shorter than needed is ERR_IO, before any page is touched;
// - a SIGBUS inside a registered mapping (the file shrank during a call) replaces the mapping's pages with zeros, so
//   the faulting read returns, and marks it damaged: the call's result is not trusted (check() after it, and every
//   later check(), is ERR_IO). A SIGBUS anywhere else goes to the handler that was there before.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace quorum::mapping_guard {

// Registers [p, p + bytes) mapped from `path`, whose file must hold at least `needed` bytes; returns the slot, or -1
// when every slot is taken (the mapping then works unguarded: check() only stats the file).
int add(const void* p, size_t bytes, const std::string& path, uint64_t needed, bool writable);
// Forgets the slot (before the mapping goes away). -1 is ignored.
void remove(int slot);
// ERR_IO when the slot's mapping was damaged by a fault or its file is now shorter than the mapping needs.
void check(int slot);

}  // namespace quorum::mapping_guard
