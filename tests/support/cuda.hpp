// What the CUDA tests share: skipping with a message where no GPU is present (the tests are built
// and linked everywhere, and their host twins are tested in the layer's own tests), and copies of
// whole tensors between the host and the device on a stream.
#pragma once

#include <gtest/gtest.h>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/tensor/host_tensor.hpp>

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

}  // namespace tessel::test
