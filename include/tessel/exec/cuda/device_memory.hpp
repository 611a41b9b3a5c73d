// Owning device storage (RAII cudaMalloc / cudaFree) as a tensor engine, owning device tensors,
// and host <-> device copies of tensors on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "../../core/layout.hpp"
#include "../../tensor/tensor.hpp"
#include "error.hpp"

namespace tessel {

// Owning device storage of n elements, zero-filled. Move-only.
template <class T>
class DeviceArrayEngine {
 public:
  using value_type = T;
  using space = DeviceSpace;
  static constexpr bool owning = true;

  static_assert(std::is_trivially_copyable_v<T>,
                "tessel: device tensors hold trivially copyable types.");

  DeviceArrayEngine() = default;
  explicit DeviceArrayEngine(index_t n) : size_(n) {
    // A byte count that wraps around size_t would allocate a small buffer for a huge tensor.
    constexpr auto max_elements = std::numeric_limits<std::size_t>::max() / sizeof(T);
    if (n < 0 || static_cast<std::uint64_t>(n) > max_elements)
      detail::throw_error(detail::sentence("cannot allocate a device tensor of ", n, " elements."));
    std::size_t bytes = static_cast<std::size_t>(n > 0 ? n : 1) * sizeof(T);
    void* p = nullptr;
    gpu::check_cuda(cudaMalloc(&p, bytes), "cudaMalloc",
                    detail::sentence("allocating ", bytes, " bytes of device memory"));
    // cudaMemset is queued on the legacy default stream, which work on a non-blocking stream
    // (gpu::Stream) does not wait for: the zeros must have landed before the constructor returns,
    // or a kernel on the caller's stream could write the tensor first and be overwritten.
    cudaError_t status = cudaMemset(p, 0, bytes);
    if (status == cudaSuccess) status = cudaStreamSynchronize(cudaStreamLegacy);
    if (status != cudaSuccess) {
      cudaFree(p);  // the destructor does not run when a constructor throws
      gpu::check_cuda(status, "cudaMemset", "zero-filling new device memory");
    }
    buffer_ = static_cast<T*>(p);
  }

  DeviceArrayEngine(DeviceArrayEngine const&) = delete;
  DeviceArrayEngine& operator=(DeviceArrayEngine const&) = delete;
  // Host-device because Tensor's (host-device) move constructor calls it; it touches no memory.
  TESSEL_HOST_DEVICE DeviceArrayEngine(DeviceArrayEngine&& other) noexcept
      : buffer_(other.buffer_), size_(other.size_) {
    other.buffer_ = nullptr;
    other.size_ = 0;
  }
  DeviceArrayEngine& operator=(DeviceArrayEngine&& other) noexcept {
    if (this != &other) {
      release();
      buffer_ = std::exchange(other.buffer_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~DeviceArrayEngine() { release(); }

  TESSEL_HOST_DEVICE T* data() const noexcept { return buffer_; }
  TESSEL_HOST_DEVICE index_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    if (buffer_) cudaFree(buffer_);
    buffer_ = nullptr;
  }

  T* buffer_ = nullptr;  // owned; a raw pointer so data() is usable in device code
  index_t size_ = 0;
};

template <class T, LayoutType L>
using DeviceTensor = Tensor<DeviceArrayEngine<T>, L>;

// A zero-filled device tensor with the compact layout of shape, or with the given layout.
template <class T, class LayoutOrShape>
requires(!std::is_pointer_v<LayoutOrShape>) auto make_device_tensor(LayoutOrShape const& l) {
  auto layout = make_layout(l);
  return DeviceTensor<T, decltype(layout)>(DeviceArrayEngine<T>(to_index(cosize(layout))), layout);
}

namespace gpu {

namespace detail {

// Copies need both sides compact in the same row-major order, so one memcpy moves every element.
template <class Dst, class Src>
void check_copyable(Dst const& dst, Src const& src, char const* direction) {
  using tessel::detail::sentence;
  using tessel::detail::throw_error;
  auto ds = to_vector(product_each(dst.shape()));
  auto ss = to_vector(product_each(src.shape()));
  if (ds != ss)
    throw_error(sentence("cannot copy ", direction, ": the destination has shape ",
                         tessel::detail::shape_text(product_each(dst.shape())),
                         " but the source has shape ",
                         tessel::detail::shape_text(product_each(src.shape())), "."));
  auto compact = [](auto const& t) {
    auto l = coalesce(t.layout());
    return to_index(size(l)) <= 1 ||
           (to_index(rank(l)) == 1 && to_index(get<0>(leaf_values(l.stride()))) == 1);
  };
  if (!compact(dst) || !compact(src))
    throw_error(sentence(
        "cannot copy ", direction, " between non-compact tensors (layouts ",
        tessel::detail::shape_text(dst.shape()), ":", tessel::detail::shape_text(dst.stride()),
        " and ", tessel::detail::shape_text(src.shape()), ":",
        tessel::detail::shape_text(src.stride()), "); copy into a compact tensor first."));
}

}  // namespace detail

// Queues a copy of a compact host tensor into a compact device tensor of the same shape.
// The host memory must stay alive until the stream reaches the copy.
template <TensorType Dst, TensorType Src>
void copy_to_device(Dst const& dst, Src const& src, cudaStream_t stream) {
  static_assert(std::is_same_v<typename Dst::space, DeviceSpace> &&
                    std::is_same_v<typename Src::space, HostSpace>,
                "tessel: copy_to_device copies a host tensor into a device tensor.");
  static_assert(std::is_same_v<typename Dst::value_type, typename Src::value_type>,
                "tessel: copies do not convert element types; cast on the host first.");
  detail::check_copyable(dst, src, "to the device");
  std::size_t bytes =
      static_cast<std::size_t>(to_index(size(src))) * sizeof(typename Src::value_type);
  check_cuda(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync", "copying a tensor to the device");
}

// Queues a copy of a compact device tensor into a compact host tensor of the same shape.
template <TensorType Dst, TensorType Src>
void copy_to_host(Dst const& dst, Src const& src, cudaStream_t stream) {
  static_assert(std::is_same_v<typename Dst::space, HostSpace> &&
                    std::is_same_v<typename Src::space, DeviceSpace>,
                "tessel: copy_to_host copies a device tensor into a host tensor.");
  static_assert(std::is_same_v<typename Dst::value_type, typename Src::value_type>,
                "tessel: copies do not convert element types; cast on the host first.");
  detail::check_copyable(dst, src, "to the host");
  std::size_t bytes =
      static_cast<std::size_t>(to_index(size(src))) * sizeof(typename Src::value_type);
  check_cuda(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync", "copying a tensor to the host");
}

}  // namespace gpu

}  // namespace tessel
