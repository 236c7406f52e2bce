// The parts of libtorch Quorum's modules use, instead of <torch/torch.h>, which adds the data loaders, the nn
// modules and the JIT: parsing headers is most of a libtorch file's compile time (17 s for these, 27 s for all).
#pragma once

#include <vector>

// First: the other headers assume its declarations (torch/nn/utils.h does not include what it uses).
#include <torch/types.h>

#include <torch/autograd.h>
#include <torch/nn/utils.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>
#include <torch/utils.h>
