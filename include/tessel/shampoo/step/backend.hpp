// Where a Shampoo optimizer keeps its state, by executor: Backend<X> says how to allocate storage
// in the executor's memory space, view it as tensors, allocate per-call scratch, copy the few
// values the step decides on to the host, and wait for them. The host executors (Serial, OpenMP,
// Auto) get host memory here, where copies are immediate and waiting is free; exec::Cuda gets
// device memory in shampoo/cuda/backend.hpp. Everything else in the step is written once over
// these operations, tessel::assign, and the dense primitives of exec/.
#pragma once

#include <cstring>

#include "../../exec/executors.hpp"
#include "../../tensor/engine.hpp"
#include "../../tensor/tensor.hpp"

namespace tessel::shampoo {

template <class X>
struct Backend;

template <exec::HostExecutor X>
struct Backend<X> {
  using space = HostSpace;

  // Owning storage of n elements, zero-filled; data() is its first element.
  template <class U>
  using Buffer = HostArrayEngine<U>;
  template <class U>
  static Buffer<U> allocate(index_t n) {
    return Buffer<U>(n);
  }

  // Storage for the duration of one call (zero-filled here; unspecified on a device).
  template <class U>
  static Buffer<U> scratch(X const&, index_t n) {
    return Buffer<U>(n);
  }

  // A view of memory in this space.
  template <class U, class LayoutOrShape>
  static auto view(U* data, LayoutOrShape const& l) {
    return make_tensor(data, l);
  }

  // n elements from this space to the host / from the host to this space, queued on the executor
  // (immediate here). The host side must stay alive until wait().
  template <class U>
  static void to_host(X const&, U const* src, index_t n, U* dst) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
  }
  template <class U>
  static void from_host(X const&, U const* src, index_t n, U* dst) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
  }

  // Waits for the work queued on the executor (nothing is queued on the host).
  static void wait(X const&) {}
};

}  // namespace tessel::shampoo
