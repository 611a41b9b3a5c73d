// CUDA runtime errors as tessel::Error: every runtime call made by tessel goes through
// check_cuda, whose message names the call, the error and what tessel was doing.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "../../core/error.hpp"

namespace tessel::gpu {

// Throws tessel::Error("<what>: <call> failed with <name> (<description>).") unless ok.
inline void check_cuda(cudaError_t status, std::string_view call, std::string_view what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky non-fatal error so later calls are not blamed
  detail::throw_error(detail::sentence(what, ": ", call, " failed with ", cudaGetErrorName(status),
                                       " (", cudaGetErrorString(status), ")."));
}

// Number of CUDA devices visible to this process (0 when there is none or no driver).
inline int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace tessel::gpu

// Wraps a CUDA runtime call: TESSEL_CUDA_CHECK(cudaMemsetAsync(p, 0, n, s), "zeroing the output").
#define TESSEL_CUDA_CHECK(call, what) ::tessel::gpu::check_cuda((call), #call, (what))
