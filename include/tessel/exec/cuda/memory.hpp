// exec::Memory<exec::Cuda> (the contract is in exec/memory.hpp): state in device memory
// (DeviceArrayEngine, allocated and zero-filled at construction), per-call scratch from the
// stream-ordered pool (gpu::StreamBuffer, so no step calls cudaMalloc or waits for a free), and
// copies queued on the executor's stream, waited for only where the host must decide. Needs the
// CUDA runtime, not nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"
#include "../../tensor/tensor.hpp"
#include "../executors.hpp"
#include "../memory.hpp"
#include "device_memory.hpp"
#include "error.hpp"
#include "scratch.hpp"

namespace tessel::exec {

// n uninitialized elements of U in a stream-ordered buffer, freed in stream order.
template <class U>
class DeviceScratch {
 public:
  DeviceScratch(index_t n, cudaStream_t stream)
      : buffer_(std::make_unique<gpu::StreamBuffer>(
            static_cast<std::size_t>(n > 0 ? n : 0) * sizeof(U), stream)) {}
  U* data() const noexcept { return static_cast<U*>(buffer_->data()); }

 private:
  std::unique_ptr<gpu::StreamBuffer> buffer_;  // movable, as the host scratch is
};

template <>
inline constexpr bool memory_included<Cuda> = true;

template <>
struct Memory<Cuda> {
  using space = DeviceSpace;

  template <class U>
  using Buffer = DeviceArrayEngine<U>;
  template <class U>
  static Buffer<U> allocate(index_t n) {
    return Buffer<U>(n);
  }

  template <class U, IntTuple S>
  static auto make(Cuda const&, S const& s) {
    return make_device_tensor<U>(s);
  }

  template <class U>
  static DeviceScratch<U> scratch(Cuda const& x, index_t n, char const* /*what*/ = nullptr) {
    return DeviceScratch<U>(n, x.stream);
  }

  template <class U, class LayoutOrShape>
  static auto view(U* data, LayoutOrShape const& l) {
    return make_device_tensor(data, l);
  }

  template <class U>
  static void to_host(Cuda const& x, U const* src, index_t n, U* dst) {
    if (n > 0)
      TESSEL_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(U),
                                        cudaMemcpyDeviceToHost, x.stream),
                        "copying a result to the host");
  }
  template <class U>
  static void from_host(Cuda const& x, U const* src, index_t n, U* dst) {
    if (n > 0)
      TESSEL_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(U),
                                        cudaMemcpyHostToDevice, x.stream),
                        "copying host values to the device");
  }

  static void wait(Cuda const& x) {
    TESSEL_CUDA_CHECK(cudaStreamSynchronize(x.stream), "waiting for the executor's stream");
  }

  template <class U>
  static U read(Cuda const& x, U const* p) {
    U value{};
    to_host(x, p, 1, &value);
    wait(x);
    return value;
  }
};

}  // namespace tessel::exec
