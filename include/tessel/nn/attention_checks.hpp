// The checks an attention call makes before anything is written: every tensor has the plan's
// shape ((B, T, heads, head_dim), or (B, heads, T) for the log-sum-exp) and its head_dim rows at
// stride 1, the element type is the plan's, and host executors get host tensors. A static extent
// that disagrees with a static plan fails to compile with both numbers; the rest is a
// tessel::Error naming the tensor and both shapes.
#pragma once

#include <type_traits>

#include "../core/error.hpp"
#include "../core/int.hpp"
#include "../core/int_tuple.hpp"
#include "../core/tuple.hpp"
#include "../exec/executors.hpp"
#include "../tensor/memory_space.hpp"
#include "../tensor/tensor.hpp"
#include "attention_plan.hpp"

namespace tessel::nn {

// The plan for tensors of (B, T, heads, head_dim) shape `shape` and Element: static when the
// extents are.
template <class Element, class Shape>
constexpr auto make_attention_plan_for(Shape const& shape) {
  return make_attention_plan<Element>(get<0>(shape), get<2>(shape), get<1>(shape), get<3>(shape));
}

namespace detail {

// Mode `Mode` of tensor `Name` (an index into attention_tensor_names) has static extent Got where
// the static plan has Expected.
template <int Name, int Mode, index_t Got, index_t Expected>
struct StaticAttentionExtentAgrees {
  static_assert(Got == Expected,
                "tessel: an attention tensor's static extent differs from the static plan's (the "
                "template arguments: the tensor, 0 q, 1 k, 2 v, 3 out, 4 lse, 5 grad_out, 6 "
                "grad_q, 7 grad_k, 8 grad_v; its mode; its extent; the plan's).");
  static constexpr bool ok = true;
};

inline constexpr char const* attention_tensor_names[] = {
    "q", "k", "v", "out", "lse", "grad_out", "grad_q", "grad_k", "grad_v"};

template <int Name, int Mode, class Got, class Expected>
constexpr void check_static_extent(Got, Expected) {
  if constexpr (StaticInt<Got> && StaticInt<Expected>)
    static_assert(StaticAttentionExtentAgrees<Name, Mode, Got::value, Expected::value>::ok);
}

// A (B, T, heads, head_dim) tensor of the plan: shape and unit innermost stride.
template <int Name, class Plan, TensorType Tensor>
void check_head_tensor(Plan const& plan, Tensor const& t) {
  static_assert(decltype(rank(t.layout()))::value == 4,
                "tessel: attention's q, k, v, out and their gradients are rank-4 tensors (B, T, "
                "heads, head_dim).");
  auto const s = t.shape();
  check_static_extent<Name, 0>(get<0>(s), plan.batch_extent());
  check_static_extent<Name, 1>(get<1>(s), plan.seq_extent());
  check_static_extent<Name, 2>(get<2>(s), plan.heads_extent());
  check_static_extent<Name, 3>(get<3>(s), plan.head_dim_extent());
  auto const expected = make_shape(index_t{plan.batch_extent()}, index_t{plan.seq_extent()},
                                   index_t{plan.heads_extent()}, index_t{plan.head_dim_extent()});
  auto const got = make_shape(to_index(get<0>(s)), to_index(get<1>(s)), to_index(get<2>(s)),
                              to_index(get<3>(s)));
  if (to_vector(got) != to_vector(expected))
    throw_error(sentence(attention_tensor_names[Name], " has shape ", shape_text(got),
                         " but the attention plan's (B, T, heads, head_dim) is ",
                         shape_text(expected), "."));
  index_t const inner = to_index(get<3>(t.stride()));
  if (inner != 1 && to_index(get<3>(s)) > 1)
    throw_error(sentence(attention_tensor_names[Name],
                         " must be contiguous along head_dim (stride 1), got stride ", inner, "."));
}

// The (B, heads, T) log-sum-exp tensor of the plan.
template <class Plan, TensorType Tensor>
void check_lse_tensor(Plan const& plan, Tensor const& t) {
  static_assert(decltype(rank(t.layout()))::value == 3,
                "tessel: attention's lse is a rank-3 tensor (B, heads, T).");
  auto const s = t.shape();
  check_static_extent<4, 0>(get<0>(s), plan.batch_extent());
  check_static_extent<4, 1>(get<1>(s), plan.heads_extent());
  check_static_extent<4, 2>(get<2>(s), plan.seq_extent());
  auto const expected = make_shape(index_t{plan.batch_extent()}, index_t{plan.heads_extent()},
                                   index_t{plan.seq_extent()});
  auto const got = make_shape(to_index(get<0>(s)), to_index(get<1>(s)), to_index(get<2>(s)));
  if (to_vector(got) != to_vector(expected))
    throw_error(sentence("lse has shape ", shape_text(got),
                         " but the attention plan's (B, heads, T) is ", shape_text(expected), "."));
}

// One element type, float or double, the plan's size; tensors in the executor's space.
template <class X, class Plan, class First, class... Tensors>
void check_attention_types(Plan const& plan) {
  using C = typename First::value_type;
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>,
                "tessel: attention computes on float or double tensors.");
  static_assert(
      (std::is_same_v<typename Tensors::value_type, C> && ...) &&
          !std::is_const_v<typename First::element_type>,
      "tessel: every attention tensor has the same element type (the first, an output, not "
      "const).");
  static_assert(
      !exec::HostExecutor<X> || (std::is_same_v<typename First::space, HostSpace> &&
                                 (std::is_same_v<typename Tensors::space, HostSpace> && ...)),
      "tessel: a host executor runs attention on host tensors; pass exec::Cuda for "
      "device tensors (<tessel/nn/attention_cuda.cuh>).");
  if (plan.element_bytes != index_t{sizeof(C)})
    throw_error(sentence("the attention plan was made for ", plan.element_bytes,
                         "-byte elements but the tensors hold ", sizeof(C), "-byte ones."));
}

}  // namespace detail

}  // namespace tessel::nn
