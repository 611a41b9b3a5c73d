// Engines: what a tensor's layout offsets index into. A ViewEngine is a pointer (plus, when
// known, the extent of the storage it points into, so views can be bounds-checked when they are
// made); a HostArrayEngine owns aligned host storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "memory_space.hpp"

namespace tessel {

// A non-owning pointer into memory of space Space.
template <class T, MemorySpace Space = HostSpace>
struct ViewEngine {
  using value_type = T;
  using space = Space;
  static constexpr bool owning = false;

  T* ptr = nullptr;
  // The storage ptr points into: [storage, storage + storage_size). storage_size < 0: unknown
  // (a view made from a raw pointer).
  T* storage = nullptr;
  index_t storage_size = -1;

  TESSEL_HOST_DEVICE constexpr T* data() const noexcept { return ptr; }
  TESSEL_HOST_DEVICE constexpr bool bounded() const noexcept { return storage_size >= 0; }
};

// Cache-line alignment for owned host storage, so vector loads start on a line.
inline constexpr std::size_t host_alignment = 64;

// Owning, zero-initialized, 64-byte-aligned host storage of n elements. Move-only.
template <class T>
class HostArrayEngine {
 public:
  using value_type = T;
  using space = HostSpace;
  static constexpr bool owning = true;

  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "tessel: owning tensors hold trivially copyable element types.");

  HostArrayEngine() = default;
  explicit HostArrayEngine(index_t n) : size_(n) {
    // A byte count that wraps around size_t would allocate a small buffer for a huge tensor.
    constexpr auto max_elements =
        (std::numeric_limits<std::size_t>::max() - host_alignment) / sizeof(T);
    if (n < 0 || static_cast<std::uint64_t>(n) > max_elements)
      detail::throw_error(detail::sentence("cannot allocate a tensor of ", n, " elements."));
    std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);
    std::size_t rounded = (bytes + host_alignment - 1) / host_alignment * host_alignment;
    if (rounded == 0) rounded = host_alignment;
    void* p = std::aligned_alloc(host_alignment, rounded);
    if (!p)
      detail::throw_error(
          detail::sentence("cannot allocate ", bytes, " bytes of host memory for a tensor."));
    std::memset(p, 0, rounded);
    buffer_ = static_cast<T*>(p);
  }

  HostArrayEngine(HostArrayEngine const&) = delete;
  HostArrayEngine& operator=(HostArrayEngine const&) = delete;
  // constexpr so that Tensor's host-device constructor may move it (nvcc relaxed constexpr).
  constexpr HostArrayEngine(HostArrayEngine&& other) noexcept
      : buffer_(std::exchange(other.buffer_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  HostArrayEngine& operator=(HostArrayEngine&& other) noexcept {
    if (this != &other) {
      release();
      buffer_ = std::exchange(other.buffer_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~HostArrayEngine() { release(); }

  TESSEL_HOST_DEVICE T* data() const noexcept { return buffer_; }
  TESSEL_HOST_DEVICE index_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    if (buffer_) std::free(buffer_);
    buffer_ = nullptr;
  }

  T* buffer_ = nullptr;  // owned; a raw pointer so data() is usable in device code
  index_t size_ = 0;
};

template <class E>
concept Engine = requires(E const& e) {
  typename E::value_type;
  typename E::space;
  {e.data()};
};

}  // namespace tessel
