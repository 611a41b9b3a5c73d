// What every nn kernel checks before it writes: ranks (at compile time, with a sentence) and
// extents (at run time, a tessel::Error naming both shapes with the project's one shape
// formatter, detail::shape_text), and that its tensors live where its executor runs.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../../core/error.hpp"
#include "../../core/int_tuple.hpp"
#include "../../exec/executors.hpp"
#include "../../tensor/memory_space.hpp"
#include "../../tensor/tensor.hpp"

namespace tessel::nn::detail {

// The rank of T's shape: a compile-time constant for every tensor the nn kernels take.
template <TensorType T>
inline constexpr index_t rank_of =
    decltype(tessel::rank(std::declval<std::remove_cvref_t<T> const&>().shape()))::value;

// Every tensor lives where X runs.
template <class X, class... Ts>
constexpr void check_spaces() {
  if constexpr (exec::HostExecutor<X>) {
    static_assert((std::is_same_v<typename std::remove_cvref_t<Ts>::space, HostSpace> && ...),
                  "tessel: these tensors live in device memory; pass exec::Cuda{stream} as the "
                  "executor (the last argument) and include <tessel/nn/cuda.cuh>.");
  } else {
    static_assert((std::is_same_v<typename std::remove_cvref_t<Ts>::space, DeviceSpace> && ...),
                  "tessel: exec::Cuda runs on device tensors, but these tensors live in host "
                  "memory; copy them to the device, or pass a host executor.");
  }
}

// Outputs hold writable elements.
template <class... Ts>
constexpr void check_writable() {
  static_assert((!std::is_const_v<typename std::remove_cvref_t<Ts>::element_type> && ...),
                "tessel: an output of an nn kernel is a tensor of const elements; pass a "
                "writable tensor.");
}

// "layer_norm: y has shape (4,7) but x has shape (4,8); they need the same shape."
template <TensorType A, TensorType B>
void check_same_shape(char const* kernel, char const* a_name, A const& a, char const* b_name,
                      B const& b) {
  if (!equal(a.shape(), b.shape()))
    tessel::detail::throw_error(tessel::detail::sentence(
        kernel, ": ", a_name, " has shape ", tessel::detail::shape_text(a.shape()), " but ", b_name,
        " has shape ", tessel::detail::shape_text(b.shape()), "; they need the same shape."));
}

// "layer_norm: weight has shape (7) but x has shape (4,8); weight needs shape (8)."
template <TensorType A, TensorType B, IntTuple S>
void check_shape(char const* kernel, char const* a_name, A const& a, char const* b_name, B const& b,
                 S const& wanted) {
  if (!equal(a.shape(), wanted))
    tessel::detail::throw_error(tessel::detail::sentence(
        kernel, ": ", a_name, " has shape ", tessel::detail::shape_text(a.shape()), " but ", b_name,
        " has shape ", tessel::detail::shape_text(b.shape()), "; ", a_name, " needs shape ",
        tessel::detail::shape_text(wanted), "."));
}

}  // namespace tessel::nn::detail
