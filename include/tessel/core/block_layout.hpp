// block_layout(layout, block_shape, order): the layout of the block view of a flat layout.
// With grid extents B_i = s_i / b_i:
//   interleaved  (B0, b0, B1, b1, ...)
//   reordered    (B0, B1, ..., b0, b1, ...)
//   merged       (B0, B1, ..., (b0, b1, ...))   — one hierarchical mode, indexed row-major, so
//                                                 the view never needs a copy whatever the strides.
// Static extents stay static; a static non-dividing block fails to compile.
//
// The three orders are the divides by the block shape (divide.hpp), one mechanism: reordered is
// flat_divide, merged is tiled_divide, interleaved is logical_divide flattened. What block_layout
// adds is its own checks first, whose sentences name the block shape and the shape.
#pragma once

#include "divide.hpp"
#include "error.hpp"
#include "layout.hpp"
#include "select.hpp"

namespace tessel {

// The three block orders are distinct types so that the result's type can depend on the order.
struct InterleavedOrder {};
struct ReorderedOrder {};
struct MergedOrder {};

struct BlockOrder {
  static constexpr InterleavedOrder interleaved{};
  static constexpr ReorderedOrder reordered{};
  static constexpr MergedOrder merged{};
};

template <class T>
concept BlockOrderTag = std::same_as<std::remove_cvref_t<T>, InterleavedOrder> ||
    std::same_as<std::remove_cvref_t<T>, ReorderedOrder> ||
    std::same_as<std::remove_cvref_t<T>, MergedOrder>;

namespace detail {

template <index_t Extent, index_t BlockExtent>
struct StaticBlockDivides {
  static_assert(BlockExtent > 0, "tessel: block extents must be > 0.");
  static_assert(BlockExtent <= 0 || Extent % BlockExtent == 0,
                "tessel: the block shape does not divide the shape (extent % block extent != 0 "
                "for the values in StaticBlockDivides<extent, block extent>).");
  static constexpr bool ok = true;
};

// Checks every mode: static pairs at compile time, the rest here; the message names both shapes
// and the first offending mode.
template <class S, class B>
TESSEL_HOST_DEVICE constexpr void check_block_shape(S const& s, B const& b) {
  static_assert(FlatIntTuple<S> && FlatIntTuple<B> && !DynRank<S> && !DynRank<B>,
                "tessel: block views need a flat layout and a flat block shape of static rank.");
  static_assert(tuple_size_v<S> == tuple_size_v<B>,
                "tessel: the block shape's rank differs from the layout's rank.");
  [[maybe_unused]] index_t bad_mode = -1;
  for_each_indexed(s, [&](auto i, auto si) {
    auto bi = get<decltype(i)::value>(b);
    if constexpr (StaticInt<decltype(si)> && StaticInt<decltype(bi)>) {
      static_assert(StaticBlockDivides<decltype(si)::value, decltype(bi)::value>::ok);
    } else {
      if (bad_mode < 0 && (to_index(bi) <= 0 || to_index(si) % to_index(bi) != 0))
        bad_mode = static_cast<index_t>(decltype(i)::value);
    }
  });
#if !TESSEL_DEVICE_PASS
  if (bad_mode >= 0) {
    auto sv = leaf_values(s);
    auto bv = leaf_values(b);
    if (bv[bad_mode] <= 0)
      throw_error(sentence("block shape ", detail::shape_text(b), " has extent ", bv[bad_mode],
                           " in mode ", bad_mode, "; block extents must be > 0."));
    throw_error(sentence("block shape ", detail::shape_text(b), " does not divide shape ",
                         detail::shape_text(s), ": mode ", bad_mode, " has extent ", sv[bad_mode],
                         ", which is not a multiple of ", bv[bad_mode], "."));
  }
#endif
}

// False when check_block_shape's static_asserts fail (the ranks differ, or a static block extent
// does not divide its static extent): block_layout then does not instantiate the divide, which
// would say it a second time.
template <class S, class B>
constexpr bool static_blocks_may_divide() {
  if constexpr (!(Tuple<S> && Tuple<B>)) {
    return false;
  } else if constexpr (tuple_size_v<S> != tuple_size_v<B>) {
    return false;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      auto mode_may_divide = []<class SI, class BI>(SI, BI) {
        if constexpr (StaticInt<SI> && StaticInt<BI>) {
          return BI::value > 0 && SI::value % BI::value == 0;
        } else {
          return true;
        }
      };
      return (true && ... &&
              mode_may_divide(std::tuple_element_t<I, S>{}, std::tuple_element_t<I, B>{}));
    }
    (std::make_index_sequence<tuple_size_v<S>>{});
  }
}

}  // namespace detail

// @pre layout flat; rank(block_shape) == rank(layout); every block extent > 0 divides its extent
// @post size(result) == size(layout); the result maps (grid coord, in-block coord) to the offset
//       of element (grid * block + in-block) of the original layout
template <class L, IntTuple B, BlockOrderTag Order>
TESSEL_HOST_DEVICE constexpr auto block_layout(L const& layout_or_shape, B const& block_shape,
                                               Order) {
  auto l = make_layout(layout_or_shape);
  auto b = detail::normalize_int_tuple(block_shape);
  detail::check_block_shape(l.shape(), b);
  using S = std::remove_cvref_t<decltype(l.shape())>;
  if constexpr (!detail::static_blocks_may_divide<S, decltype(b)>()) {
    return l;  // not reached: the static_assert above fails the compilation
  } else if constexpr (std::same_as<Order, InterleavedOrder>) {
    // An integer tile of an integer mode s:d is (s / b, b):(b * d, d) in the divides, so every
    // static extent and stride stays static.
    return flatten(logical_divide(l, b));
  } else if constexpr (std::same_as<Order, ReorderedOrder>) {
    return flat_divide(l, b);
  } else {
    return tiled_divide(l, b);
  }
}

// The grid extents (B0, B1, ...) = shape / block_shape, with the same checks as block_layout.
template <IntTuple S, IntTuple B>
TESSEL_HOST_DEVICE constexpr auto block_grid_shape(S const& shape, B const& block_shape) {
  auto s = detail::normalize_int_tuple(shape);
  auto b = detail::normalize_int_tuple(block_shape);
  detail::check_block_shape(s, b);
  return transform(s, b, [](auto si, auto bi) { return si / bi; });
}

}  // namespace tessel
