// Block scores: one number per block of a tensor — L1 norm, L2 norm, sum of squares, or any
// callable over the block — as a grid tensor of shape (s0/b0, s1/b1, ...). Each block is read
// through the merged block view, so strided and transposed tensors need no copy.
#pragma once

#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/block_layout.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/for_each_coordinate.hpp"
#include "../tensor/host_tensor.hpp"
#include "../tensor/slicer.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"

namespace tessel {

namespace detail {

// Scores of floating-point tensors keep their type; integer tensors score in double.
template <class V>
using score_type_t = std::conditional_t<std::is_floating_point_v<V>, V, double>;

template <class V>
constexpr V abs_value(V const& x) {
  if constexpr (std::is_unsigned_v<V>) {
    return x;
  } else {
    return x < V{} ? static_cast<V>(-x) : x;
  }
}

// The block at grid coordinate g of a merged block view: a rank-1 view over its elements.
template <TensorType BV, std::size_t R>
auto block_at(BV const& blocks, std::array<index_t, R> const& g) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return blocks(g[I]..., _);
  }
  (std::make_index_sequence<R>{});
}

// Sum of f(x) over a rank-1 view, accumulated in double.
template <TensorType Block, class F>
double block_sum(Block const& block, F f) {
  double acc = 0.0;
  index_t n = to_index(size(block.layout()));
  for (index_t i = 0; i < n; ++i) acc += f(static_cast<double>(block(i)));
  return acc;
}

}  // namespace detail

// Sum of absolute values.
struct L1Norm {
  template <TensorType Block>
  auto operator()(Block const& block) const {
    using S = detail::score_type_t<typename Block::value_type>;
    return static_cast<S>(detail::block_sum(block, [](double x) { return std::fabs(x); }));
  }
};

// Euclidean norm, sqrt of the sum of squares (sparsekit's block norms).
struct L2Norm {
  template <TensorType Block>
  auto operator()(Block const& block) const {
    using S = detail::score_type_t<typename Block::value_type>;
    return static_cast<S>(std::sqrt(detail::block_sum(block, [](double x) { return x * x; })));
  }
};

// Sum of squares: ranks blocks as L2Norm does, without the square root.
struct SumOfSquares {
  template <TensorType Block>
  auto operator()(Block const& block) const {
    using S = detail::score_type_t<typename Block::value_type>;
    return static_cast<S>(detail::block_sum(block, [](double x) { return x * x; }));
  }
};

// The scores of every block: result(g0, g1, ...) == score(block g), where block g is the rank-1
// view of that block's elements in row-major order (block(i), 0 <= i < b0 * b1 * ...). score is
// L1Norm, L2Norm, SumOfSquares or any callable taking such a view; its return type is the grid's
// element type. The grid has shape block_grid_shape(t, block_shape); static extents stay static.
// tessel::Error (nothing computed) when the block shape does not divide t's shape.
template <TensorType T, class B, class Score = L2Norm>
auto block_scores(T const& t, B const& block_shape, Score const& score = {}) {
  constexpr std::size_t r = detail::flat_rank<T>();
  auto b = detail::block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  auto grid_shape = block_grid_shape(t.shape(), b);
  auto view = t.view();
  auto blocks = block_view(view, b, BlockOrder::merged);  // (B0, B1, ..., (b0, b1, ...))
  using Block = decltype(detail::block_at(blocks, std::array<index_t, r>{}));
  static_assert(std::invocable<Score const&, Block const&>,
                "tessel: a block score is a callable taking the block as a rank-1 tensor view.");
  using S = std::remove_cvref_t<std::invoke_result_t<Score const&, Block const&>>;
  auto out = make_host_tensor<S>(grid_shape);
  for_each_coordinate(grid_shape, [&](auto... g) {
    out(g...) = score(detail::block_at(blocks, std::array<index_t, r>{g...}));
  });
  return out;
}

}  // namespace tessel
