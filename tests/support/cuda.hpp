// What the CUDA tests share: skipping with a message where no GPU is present (the tests are built
// and linked everywhere, and their host twins are tested in the layer's own tests), copies of
// whole tensors between the host and the device on a stream, and device copies of std::vectors
// (through the legacy default stream, waited for).
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/tensor.hpp>

// Skips the test, saying what was built and where its host twin is tested, without a GPU.
#define TESSEL_REQUIRE_GPU(what, twins)                                                       \
  do {                                                                                        \
    if (::tessel::gpu::device_count() == 0)                                                   \
      GTEST_SKIP() << "no CUDA device: " << (what) << " was built, not run (its host twins " \
                   << "are tested in " << (twins) << ").";                                    \
  } while (0)

namespace tessel::test {

// A device copy of host tensor h (same layout), queued on s.
template <class H>
auto to_device(H const& h, gpu::Stream const& s) {
  auto d = make_device_tensor<typename H::value_type>(h.layout());
  gpu::copy_to_device(d, h, s);
  return d;
}

// A host copy of device tensor d (same layout), once s has reached it.
template <class D>
auto to_host(D const& d, gpu::Stream const& s) {
  auto h = make_host_tensor<typename D::value_type>(d.layout());
  gpu::copy_to_host(h, d, s);
  s.synchronize();
  return h;
}

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

// The same elements (bit for bit, in layout order) in a device result brought back and its host
// twin's result, or the same up to a relative tolerance.
template <class A, class B>
void expect_same(A const& a, B const& b) {
  index_t const n = to_index(size(a.layout()));
  ASSERT_EQ(n, to_index(size(b.layout())));
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << "at flat index " << i;
}

template <class A, class B>
void expect_close(A const& a, B const& b, double tol) {
  index_t const n = to_index(size(a.layout()));
  ASSERT_EQ(n, to_index(size(b.layout())));
  for (index_t i = 0; i < n; ++i) {
    double const x = static_cast<double>(a.data()[i]), y = static_cast<double>(b.data()[i]);
    ASSERT_NEAR(x, y, tol * (1.0 + std::abs(y))) << "at flat index " << i;
  }
}

}  // namespace tessel::test
