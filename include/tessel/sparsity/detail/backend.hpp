// What the sparsity layer needs of an executor besides tessel::assign and exec::for_each_row
// (both found by argument-dependent lookup, so one template serves every executor): memory for
// its results and scratch in the executor's space, and a value read back to the host. Specialized
// here for the host executors and, for exec::Cuda, in <tessel/sparsity/cuda/backend.hpp> (part of
// <tessel/sparsity/cuda.cuh>). Every entry point first checks that its tensors live where its
// executor runs.
#pragma once

#include <type_traits>

#include "../../core/int_tuple.hpp"
#include "../../exec/executors.hpp"
#include "../../tensor/host_tensor.hpp"
#include "../../tensor/memory_space.hpp"
#include "../../tensor/tensor.hpp"

namespace tessel::detail {

template <class X>
inline constexpr bool sparsity_backend_included = false;

template <exec::Executor X>
struct SparsityBackend {
  static_assert(
      sparsity_backend_included<X>,
      "tessel: sparsity on device tensors needs <tessel/sparsity/cuda.cuh>, included from "
      "a CUDA translation unit.");
};

template <exec::HostExecutor X>
struct SparsityBackend<X> {
  // An owning tensor of shape s (results the caller receives, and scratch).
  template <class T, IntTuple S>
  static auto make(X const&, S const& s) {
    return make_host_tensor<T>(s);
  }
  // n elements of T that live as long as the returned object (read through data()).
  template <class T>
  static auto scratch(X const&, index_t n) {
    return make_host_tensor<T>(make_shape(n));
  }
  // A view of memory of this space.
  template <class T, class L>
  static auto view(T* p, L const& l) {
    return make_tensor(p, l);
  }
  // The element at p, on the host.
  template <class T>
  static T read(X const&, T const* p) {
    return *p;
  }
};

template <class X>
using backend_t = SparsityBackend<std::remove_cvref_t<X>>;

// Every tensor lives where X runs (a compile-time sentence otherwise).
template <class X, class... Ts>
constexpr void check_tensors_reach() {
  if constexpr (exec::HostExecutor<X>) {
    static_assert((std::is_same_v<typename std::remove_cvref_t<Ts>::space, HostSpace> && ...),
                  "tessel: these tensors live in device memory; pass exec::Cuda{stream} as the "
                  "executor (the last argument) and include <tessel/sparsity/cuda.cuh>.");
  } else {
    static_assert((std::is_same_v<typename std::remove_cvref_t<Ts>::space, DeviceSpace> && ...),
                  "tessel: exec::Cuda runs on device tensors, but these tensors live in host "
                  "memory; copy them to the device, or pass a host executor.");
  }
}

}  // namespace tessel::detail
