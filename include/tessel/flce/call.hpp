// What every FLCE entry point (host forward, CUDA forward) shares: the tensor concepts of its
// arguments, the plan of a call (kept static when the shapes are) and the per-call row constants.
#pragma once

#include <type_traits>

#include "../core/int.hpp"
#include "../tensor/tensor.hpp"
#include "arguments.hpp"
#include "plan.hpp"
#include "row.hpp"
#include "types.hpp"

namespace tessel::flce {

namespace detail {
template <class X, class Space, int Rank>
consteval bool is_call_tensor() {
  using U = std::remove_cvref_t<X>;
  if constexpr (!TensorType<U>) {
    return false;
  } else if constexpr (flat_rank<U>() != Rank || !std::is_same_v<typename U::space, Space>) {
    return false;
  } else if constexpr (Rank == 2) {
    return Element<typename U::value_type>;
  } else {
    return TargetElement<typename U::value_type>;
  }
}
}  // namespace detail

// The input or weight of an FLCE call in Space: a flat 2-D tensor of an Element type.
template <class X, class Space>
concept MatrixTensor = detail::is_call_tensor<X, Space, 2>();

// The targets of an FLCE call in Space: a flat 1-D tensor of 32- or 64-bit signed integers.
template <class Y, class Space>
concept TargetTensor = detail::is_call_tensor<Y, Space, 1>();

template <class X>
using tensor_value_t = typename std::remove_cvref_t<X>::value_type;

namespace detail {

// Extents the compiler knows, checked by the compiler: the weight's hidden size must be the
// input's, and the target must have one entry per input row. Each check is a class template whose
// arguments are the offending values, so the diagnostic shows them (docs/design.md, "Errors").
template <index_t InputHidden, index_t WeightHidden>
struct StaticHiddenSizesAgree {
  static_assert(InputHidden == WeightHidden,
                "tessel: FLCE's weight (V, H) must have the input's hidden size H; these static "
                "extents differ (see the template arguments: input H, weight H).");
  static constexpr bool ok = true;
};
template <index_t InputRows, index_t Targets>
struct StaticTargetCountAgrees {
  static_assert(InputRows == Targets,
                "tessel: FLCE's target needs one entry per input row; these static extents "
                "differ (see the template arguments: input rows, targets).");
  static constexpr bool ok = true;
};

template <class A, class B>
constexpr bool both_static() {
  return StaticInt<A> && StaticInt<B>;
}

// True, after checking every pair of extents that are both static.
template <class X, class W, class Y>
constexpr bool static_shapes_agree() {
  using XS = std::remove_cvref_t<decltype(std::declval<X const&>().shape())>;
  using WS = std::remove_cvref_t<decltype(std::declval<W const&>().shape())>;
  using YS = std::remove_cvref_t<decltype(std::declval<Y const&>().shape())>;
  using XH = std::remove_cvref_t<decltype(get<1>(std::declval<XS const&>()))>;
  using WH = std::remove_cvref_t<decltype(get<1>(std::declval<WS const&>()))>;
  using XR = std::remove_cvref_t<decltype(get<0>(std::declval<XS const&>()))>;
  using YR = std::remove_cvref_t<decltype(get<0>(std::declval<YS const&>()))>;
  if constexpr (both_static<XH, WH>())
    static_assert(StaticHiddenSizesAgree<XH::value, WH::value>::ok);
  if constexpr (both_static<XR, YR>())
    static_assert(StaticTargetCountAgrees<XR::value, YR::value>::ok);
  return true;
}

template <class X, class W>
struct SameElement {
  static_assert(std::is_same_v<tensor_value_t<X>, tensor_value_t<W>>,
                "tessel: FLCE's input and weight must have the same element type.");
  static constexpr bool ok = true;
};

}  // namespace detail

// The plan of a call whose tensors live in Space: make_host_plan for host tensors,
// make_device_plan for device tensors.
template <class Space, Integer BT, Integer H, Integer V>
constexpr auto make_call_plan(BT bt, H h, V v) {
  if constexpr (std::is_same_v<Space, HostSpace>)
    return make_host_plan(bt, h, v);
  else
    return make_device_plan(bt, h, v);
}

// The plan type of a call with input X and weight W (and no forced chunk size): a StaticFlcePlan
// when BT, H and V are all static extents, an FlcePlan otherwise.
template <class X, class W>
using call_plan_t = decltype(make_call_plan<typename std::remove_cvref_t<X>::space>(
    get<0>(std::declval<X const&>().shape()), get<1>(std::declval<X const&>().shape()),
    get<0>(std::declval<W const&>().shape())));

namespace detail {

// f(plan) with the plan of a call: the static plan when every extent is static and no chunk size
// is forced (its numbers then reach the loop as constants), an FlcePlan otherwise.
template <class X, class W, class F>
void with_plan(X const& input, W const& weight, index_t forced_chunk, F&& f) {
  auto const bt = get<0>(input.shape());
  auto const h = get<1>(input.shape());
  auto const v = get<0>(weight.shape());
  if (forced_chunk > 0)
    f(FlcePlan(make_plan(to_index(bt), to_index(h), to_index(v), forced_chunk)));
  else
    f(make_call_plan<typename X::space>(bt, h, v));
}

template <index_t TensorExtent, index_t PlanExtent>
struct StaticPlanExtentAgrees {
  static_assert(TensorExtent == PlanExtent,
                "tessel: an FLCE plan given to forward must be the plan of the call's shapes; a "
                "static extent of the tensors differs from the plan's (see the template "
                "arguments: tensor extent, plan extent).");
  static constexpr bool ok = true;
};

template <class A, class B>
constexpr bool static_extents_agree() {
  if constexpr (both_static<A, B>()) return StaticPlanExtentAgrees<A::value, B::value>::ok;
  return true;
}

// A plan the caller gives (forward(plan, ...)) describes the call: its BT, H and V are the
// tensors' (checked by the compiler where both are static), and options.chunk_size, which it
// would override, is 0 or its chunk size.
template <class X, class W, AnyFlcePlan Plan>
void check_given_plan(X const& input, W const& weight, Plan const& plan, index_t forced_chunk) {
  auto const bt = get<0>(input.shape());
  auto const h = get<1>(input.shape());
  auto const v = get<0>(weight.shape());
  static_assert(static_extents_agree<decltype(bt), decltype(plan.batch_extent())>() &&
                static_extents_agree<decltype(h), decltype(plan.hidden_extent())>() &&
                static_extents_agree<decltype(v), decltype(plan.vocab_extent())>());
  if (to_index(bt) != to_index(plan.batch_extent()) ||
      to_index(h) != to_index(plan.hidden_extent()) || to_index(v) != to_index(plan.vocab_extent()))
    throw_error(sentence("the FLCE plan is for BT ", to_index(plan.batch_extent()), ", H ",
                         to_index(plan.hidden_extent()), " and V ", to_index(plan.vocab_extent()),
                         ", but the call has BT ", to_index(bt), ", H ", to_index(h), " and V ",
                         to_index(v), " (input ", shape_text(input.shape()), ", weight ",
                         shape_text(weight.shape()), ")."));
  if (forced_chunk != 0 && forced_chunk != to_index(plan.rows_per_chunk()))
    throw_error(sentence("options.chunk_size is ", forced_chunk,
                         ", but the plan given to forward "
                         "has chunks of ",
                         to_index(plan.rows_per_chunk()),
                         " rows; leave chunk_size at 0 when passing a plan."));
}

template <class C>
RowConstants<C> row_constants(double label_smoothing, double lse_square_scale, double softcap,
                              double temperature, double entropy_bonus, bool entropy_wanted,
                              bool argmax_wanted, index_t ignore_index, index_t vocab,
                              double class_weight_sum, double soft_target_weight = 0.0) {
  RowConstants<C> k;
  k.soft_weight = static_cast<C>(soft_target_weight);
  k.hard_weight = static_cast<C>(1.0 - soft_target_weight);
  k.argmax = argmax_wanted;
  k.inv_temperature = static_cast<C>(1.0 / temperature);
  k.entropy_bonus = static_cast<C>(entropy_bonus);
  k.entropy = entropy_wanted || entropy_bonus != 0.0;
  k.ignore_index = ignore_index;
  k.one_minus_smoothing = static_cast<C>(1.0 - label_smoothing);
  k.smoothing_per_class = static_cast<C>(label_smoothing / static_cast<double>(vocab));
  k.lse_square_scale = static_cast<C>(lse_square_scale);
  k.softcap = static_cast<C>(softcap);
  k.class_weight_sum = static_cast<C>(class_weight_sum);
  k.smoothing = label_smoothing > 0.0;
  return k;
}

}  // namespace detail

}  // namespace tessel::flce
