// Device copies of host vectors for the CUDA tests that keep their data in std::vector: a compact
// 1-D device tensor (exec/cuda/device_memory.hpp) filled from a vector, and a vector read back from
// a device tensor or pointer. Copies go through the legacy default stream and are waited for.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/tensor/tensor.hpp>

namespace tessel::test {

template <class T>
auto device_vector(std::vector<T> const& host) {
  auto const n = static_cast<index_t>(host.size());
  auto d = make_device_tensor<T>(make_shape(n));
  gpu::copy_to_device(d, make_tensor(host.data(), make_shape(n)), nullptr);
  TESSEL_CUDA_CHECK(cudaStreamSynchronize(nullptr), "copying a test vector to the device");
  return d;
}

template <class T>
std::vector<T> host_vector(T const* device, std::size_t n) {
  std::vector<T> out(n);
  if (n)
    TESSEL_CUDA_CHECK(cudaMemcpy(out.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost),
                      "copying a test vector to the host");
  return out;
}

template <class D>
auto host_vector(D const& device) {
  return host_vector(device.data(), static_cast<std::size_t>(to_index(size(device))));
}

}  // namespace tessel::test
