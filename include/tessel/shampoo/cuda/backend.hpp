// Backend<exec::Cuda>: a device Shampoo's state in device memory (DeviceArrayEngine, allocated at
// construction), per-call scratch from the stream-ordered pool (gpu::StreamBuffer), and copies of
// the values the step decides on queued on the executor's stream, waited for once where the step
// must decide (shampoo/step/backend.hpp has the contract; the host backend is its twin).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "../../exec/cuda/device_memory.hpp"
#include "../../exec/cuda/error.hpp"
#include "../../exec/cuda/scratch.hpp"
#include "../../exec/executors.hpp"
#include "../step/backend.hpp"

namespace tessel::shampoo {

namespace detail {

// n elements of U in a stream-ordered buffer.
template <class U>
class DeviceScratch {
 public:
  DeviceScratch(index_t n, cudaStream_t stream)
      : buffer_(std::make_unique<gpu::StreamBuffer>(static_cast<std::size_t>(n) * sizeof(U),
                                                    stream)) {}
  U* data() const noexcept { return static_cast<U*>(buffer_->data()); }

 private:
  std::unique_ptr<gpu::StreamBuffer> buffer_;
};

}  // namespace detail

template <>
struct Backend<exec::Cuda> {
  using space = DeviceSpace;

  template <class U>
  using Buffer = DeviceArrayEngine<U>;
  template <class U>
  static Buffer<U> allocate(index_t n) {
    return Buffer<U>(n);
  }

  template <class U>
  static detail::DeviceScratch<U> scratch(exec::Cuda const& x, index_t n) {
    return detail::DeviceScratch<U>(n, x.stream);
  }

  template <class U, class LayoutOrShape>
  static auto view(U* data, LayoutOrShape const& l) {
    return make_device_tensor(data, l);
  }

  template <class U>
  static void to_host(exec::Cuda const& x, U const* src, index_t n, U* dst) {
    if (n > 0)
      TESSEL_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(U),
                                        cudaMemcpyDeviceToHost, x.stream),
                        "copying Shampoo's step results to the host");
  }
  template <class U>
  static void from_host(exec::Cuda const& x, U const* src, index_t n, U* dst) {
    if (n > 0)
      TESSEL_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(U),
                                        cudaMemcpyHostToDevice, x.stream),
                        "copying Shampoo's state to the device");
  }

  static void wait(exec::Cuda const& x) {
    TESSEL_CUDA_CHECK(cudaStreamSynchronize(x.stream), "waiting for the Shampoo step");
  }
};

}  // namespace tessel::shampoo
