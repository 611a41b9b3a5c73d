// The layouts the step's stages see, for one batch group and for one segment (segments.hpp),
// written once over IntTuples: static extents (a static plan, static_plan.hpp) give static layouts,
// so the executor's index arithmetic folds; run-time ones give the same layouts in index_t.
//   group state   (count, block...)        : (numel, row-major block strides...)
//   segment       (grid..., block...) of the parameter, of the group's state, and of one value
//                 per slot broadcast over its block (stride 0 along the block modes)
#pragma once

#include <cstddef>
#include <utility>

#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"
#include "../../core/layout.hpp"
#include "../../core/tuple.hpp"
#include "plan.hpp"
#include "segments.hpp"

namespace tessel::shampoo {

namespace detail {

template <Tuple A, Tuple B>
constexpr auto multiply_each(A const& a, B const& b) {
  return transform(a, b, [](auto x, auto y) { return x * y; });
}
template <Tuple A, class S>
constexpr auto scale_each(A const& a, S s) {
  return transform(a, [&](auto x) { return x * s; });
}
template <Tuple A>
constexpr auto zeros_like(A const& a) {
  return transform(a, [](auto) { return Int<0>{}; });
}

// A run-time rank-r Extents as R index_t modes: leading modes of extent `fill` (1 for shapes,
// anything for strides, which then address nothing), so row-major order is unchanged.
template <std::size_t R>
constexpr auto padded(Extents const& e, index_t fill) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    constexpr index_t r = static_cast<index_t>(R);
    return make_shape(
        (static_cast<index_t>(I) < r - e.rank() ? fill : e[static_cast<index_t>(I) - (r - e.rank())])...);
  }
  (std::make_index_sequence<R>{});
}

}  // namespace detail

// One batch group: its block shape (static or run-time extents), index and slot count.
template <FlatIntTuple Block>
struct GroupGeometry {
  Block block{};
  index_t index = 0;
  index_t count = 0;

  constexpr auto numel() const { return size(block); }
  // The group's state: (count, block...) compact.
  constexpr auto state_layout() const {
    return make_layout(prepend(block, count), prepend(compact_row_major_strides(block), numel()));
  }
  // The same elements as (count, numel): the per-slot reductions' view.
  constexpr auto slot_rows_layout() const { return make_layout(make_shape(count, numel())); }
};

// One segment: its grid, block shape and parameter strides (static or run-time), and where it
// lies (run-time values, so segments of equal shapes share one instantiation of every stage).
template <FlatIntTuple Grid, FlatIntTuple Block, FlatIntTuple Stride>
struct SegmentGeometry {
  Grid grid{};
  Block block{};
  Stride param_stride{};
  index_t param = 0;
  index_t first_slot = 0;
  index_t offset = 0;  // in the parameter

  // The segment in its parameter: (grid..., block...).
  constexpr auto param_layout() const {
    return make_layout(concat(grid, block),
                       concat(detail::multiply_each(block, param_stride), param_stride));
  }
  // The segment's slots of the group's state, block by block: (grid..., block...).
  constexpr auto state_layout() const {
    auto const numel = size(block);
    return make_layout(concat(grid, block),
                       concat(detail::scale_each(compact_row_major_strides(grid), numel),
                              compact_row_major_strides(block)));
  }
  // One value per slot (a (count) tensor from first_slot on), broadcast over each block.
  constexpr auto slot_layout() const {
    return make_layout(concat(grid, block),
                       concat(compact_row_major_strides(grid), detail::zeros_like(block)));
  }
};

// Run-time plans pad every block to this rank, so one instantiation serves every parameter rank.
inline constexpr std::size_t runtime_rank = max_param_rank;

using RuntimeExtents = decltype(detail::padded<runtime_rank>(Extents{}, 1));
using RuntimeGroup = GroupGeometry<RuntimeExtents>;
using RuntimeSegment = SegmentGeometry<RuntimeExtents, RuntimeExtents, RuntimeExtents>;

inline RuntimeGroup runtime_group(BatchGroup const& g, index_t index) {
  return {detail::padded<runtime_rank>(g.shape, 1), index, g.count};
}

inline RuntimeSegment runtime_segment(SegmentPlan const& s, Extents const& block) {
  return {detail::padded<runtime_rank>(s.grid, 1),
          detail::padded<runtime_rank>(block, 1),
          detail::padded<runtime_rank>(s.param_stride, 1),
          s.param,
          s.first_slot,
          s.offset};
}

}  // namespace tessel::shampoo
