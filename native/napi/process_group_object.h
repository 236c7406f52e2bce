// The JS ProcessGroup of quorum_torch (lib/train/distributed.ts): one rank's membership in a data-parallel group.
#pragma once
#include <napi.h>

#include <memory>

#include "../torch/distributed.h"

namespace quorum::napi {

// The class, registered once per environment (its constructor is kept to recognise its instances).
Napi::Function ProcessGroupClass(Napi::Env env);

// The joined group `v` names, or nullptr for undefined / null; ERR_ARG for another value, ERR_STATE for a group
// not joined yet or left.
std::shared_ptr<torchx::ProcessGroup> group_arg(const Napi::Value& v);

}  // namespace quorum::napi
