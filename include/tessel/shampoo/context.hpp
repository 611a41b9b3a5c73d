// Execution contexts of the TESSEL_HOST_DEVICE bodies: a body visits indices first(),
// first() + stride(), ... below its bound. HostContext visits them all in order on the host; the
// CUDA kernels pass a grid-stride context (shampoo/cuda/step_kernels.cuh).
#pragma once

#include "../core/config.hpp"

namespace tessel::shampoo {

struct HostContext {
  TESSEL_HOST_DEVICE constexpr index_t first() const { return 0; }
  TESSEL_HOST_DEVICE constexpr index_t stride() const { return 1; }
};

}  // namespace tessel::shampoo
