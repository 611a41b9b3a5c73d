// A blocking plan as a type. Shampoo<T, shampoo::static_plan<plan>> keeps a constexpr plan (a
// StaticPlan from make_plan with static shapes) as a template argument instead of converting it to
// a run-time Plan, so each batch group's block shape and each segment's grid and parameter strides
// reach the stage code as Int<> shapes (geometry.hpp) and the executors fold their index
// arithmetic. RuntimePlan is the other choice: the same templates with index_t extents, for plans
// computed at run time. group_layout_t<static_plan<plan>, G> names the layout of group G's state
// in the passes over the parameters' blocks (basic_shampoo.hpp's segment_geometry_t).
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "../../core/int.hpp"
#include "geometry.hpp"
#include "plan.hpp"
#include "segments.hpp"

namespace tessel::shampoo {

// The plan is a run-time value (shampoo::Plan), given to the optimizer's constructor.
struct RuntimePlan {};

// The plan is the constant Value (a StaticPlan); the optimizer is built from options alone.
template <auto Value>
struct static_plan {
  static constexpr auto value = Value;
  static constexpr std::size_t num_groups = Value.num_groups();
  static constexpr std::size_t num_segments = count_segments(Value);
  static constexpr auto segments = [] {
    std::array<SegmentPlan, num_segments> out{};
    std::size_t i = 0;
    detail::visit_segments(Value, [&](SegmentPlan const& s) { out[i++] = s; });
    return out;
  }();
};

template <class P>
inline constexpr bool is_static_plan_v = false;
template <auto V>
inline constexpr bool is_static_plan_v<static_plan<V>> = true;

// The plan tags the optimizer takes.
template <class P>
concept PlanTag = std::same_as<P, RuntimePlan> || is_static_plan_v<P>;

namespace detail {

// Extents e (rank r) as a shape of Int<>s.
template <Extents E>
constexpr auto static_extents() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_shape(Int<E[static_cast<index_t>(I)]>{}...);
  }
  (std::make_index_sequence<static_cast<std::size_t>(E.rank())>{});
}

}  // namespace detail

// Group G's block shape as Int<>s.
template <class P, std::size_t G>
requires is_static_plan_v<P>
using group_block_t = decltype(detail::static_extents<P::value.groups[G].shape>());

template <class P, std::size_t G>
requires is_static_plan_v<P>
using static_group_t = GroupGeometry<group_block_t<P, G>>;

// Segment S's geometry: grid, block shape and parameter strides as Int<>s.
template <class P, std::size_t S>
requires is_static_plan_v<P>
using static_segment_t =
    SegmentGeometry<decltype(detail::static_extents<P::segments[S].grid>()),
                    group_block_t<P, static_cast<std::size_t>(P::segments[S].group)>,
                    decltype(detail::static_extents<P::segments[S].param_stride>())>;

// Segment S of a static plan: its static shapes and its place in the plan.
template <class P, std::size_t S>
requires is_static_plan_v<P>
constexpr static_segment_t<P, S> static_segment() {
  static_segment_t<P, S> out{};
  out.param = P::segments[S].param;
  out.first_slot = P::segments[S].first_slot;
  out.offset = P::segments[S].offset;
  return out;
}

// The layout of group G's state in the passes over segments: (count, block...) : (numel, block
// strides...), the block extents and strides static for a static plan (count stays a run-time
// index_t, so groups of one shape in different plans share their instantiations).
template <class P, std::size_t G>
requires is_static_plan_v<P>
using group_layout_t = decltype(static_group_t<P, G>{}.state_layout());

}  // namespace tessel::shampoo
