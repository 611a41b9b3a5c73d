// tessel io: .npy and safetensors readers and writers. Separate from tessel.hpp because the
// safetensors header needs nlohmann/json, which is heavy to compile.
#pragma once

#include "io/npy.hpp"
#include "io/npy_tensor.hpp"
#include "io/safetensors.hpp"
