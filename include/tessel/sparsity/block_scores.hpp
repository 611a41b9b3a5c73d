// Block scores: one number per block of a tensor — L1 norm, L2 norm, sum of squares, or any
// callable over the block — as a grid tensor of shape (s0/b0, s1/b1, ...). Each block is read
// through the merged block view (B0, B1, ..., (b0, b1, ...)), so strided and transposed tensors
// need no copy.
//
// The built-in scores are reductions over the view's last mode, accumulated in double, assigned
// through the executor: one row reduction per block (one kernel on exec::Cuda; L2Norm's square
// root is a second, grid-sized pass). A score type may join them by giving an expression of the
// block view: `static auto of_blocks(E const& blocks)`, blocks being the view cast to double, the
// result of rank one less. Any other callable is called once per block with a host view of it,
// so it runs on the host only, from several threads at once under a parallel executor.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/block_layout.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/rows.hpp"
#include "../expr/arithmetic.hpp"
#include "../expr/cast.hpp"
#include "../expr/math.hpp"
#include "../expr/reduce.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "detail/backend.hpp"

namespace tessel {

namespace detail {

// Scores of floating-point tensors keep their type; integer tensors score in double.
template <class V>
using score_type_t = std::conditional_t<std::is_floating_point_v<V>, V, double>;

// The merged block view with its grid modes grouped into one: ((B0, B1, ...), (b0, b1, ...)), so
// that v(g, _) is block g (row-major in the grid).
template <TensorType BV>
auto grid_by_block(BV const& blocks) {
  constexpr std::size_t r = tuple_size_v<std::remove_cvref_t<decltype(blocks.shape())>> - 1;
  auto const& s = blocks.shape();
  auto const& d = blocks.stride();
  auto lead = [](auto const& t) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple(get<I>(t)...);
    }
    (std::make_index_sequence<r>{});
  };
  return view_as(blocks, Layout(make_tuple(lead(s), get<r>(s)), make_tuple(lead(d), get<r>(d))));
}

}  // namespace detail

// Sum of absolute values.
struct L1Norm {
  template <class E>
  static auto of_blocks(E const& blocks) {
    return sum(abs(blocks), mode<-1>);
  }
};

// Euclidean norm, sqrt of the sum of squares (sparsekit's block norms).
struct L2Norm {
  template <class E>
  static auto of_blocks(E const& blocks) {
    return sqrt(sum(blocks * blocks, mode<-1>));
  }
};

// Sum of squares: ranks blocks as L2Norm does, without the square root.
struct SumOfSquares {
  template <class E>
  static auto of_blocks(E const& blocks) {
    return sum(blocks * blocks, mode<-1>);
  }
};

// What may stand in block_scores' score place: anything but an executor (an executor there is the
// last argument of the overload without a score). Which scores work is decided inside: a type with
// of_blocks (any executor), else a callable over a host view of a block.
template <class S>
concept BlockScore = !exec::Executor<S>;

// A score given as an expression of the (double) block view: runs through any executor.
template <class Score, class Blocks>
concept BlockScoreExpression = requires(Blocks const& blocks) {
  Score::of_blocks(cast<double>(blocks));
};

// The scores of every block: result(g0, g1, ...) == score(block g). score is L1Norm, L2Norm,
// SumOfSquares (or another type with of_blocks, see above), which accumulate in double and return
// the tensor's floating type (double for integer tensors); or any callable taking the block as a
// rank-1 view of its elements in row-major order (block(i), 0 <= i < b0 * b1 * ...), whose return
// type is the grid's element type — host tensors only. The grid has shape
// block_grid_shape(t, block_shape) (static extents stay static) and lives where t does.
// tessel::Error (nothing computed) when the block shape does not divide t's shape.
template <TensorType T, IntTuple B, BlockScore Score = L2Norm, exec::Executor X = exec::Auto>
auto block_scores(T const& t, B const& block_shape, Score const& score = {},
                  X const& executor = {}) {
  detail::check_tensors_reach<X, T>();
  constexpr std::size_t r = detail::flat_rank<T>();
  auto b = detail::block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  auto grid_shape = block_grid_shape(t.shape(), b);
  auto view = t.view();
  auto blocks = block_view(view, b, BlockOrder::merged);  // (B0, B1, ..., (b0, b1, ...))
  if constexpr (BlockScoreExpression<Score, decltype(blocks)>) {
    using S = detail::score_type_t<typename T::value_type>;
    auto out = detail::backend_t<X>::template make<S>(executor, grid_shape);
    assign(out.view(), Score::of_blocks(cast<double>(blocks)), executor);
    return out;
  } else if constexpr (!exec::HostExecutor<X>) {
    static_assert(exec::HostExecutor<X>,
                  "tessel: a block score given as a callable runs on the host only (it is called "
                  "with a host view of each block); score device tensors with L1Norm, L2Norm or "
                  "SumOfSquares.");
  } else {
    auto by_block = detail::grid_by_block(blocks);  // ((B0, B1, ...), (b0, b1, ...))
    using Block = decltype(by_block(index_t{0}, _));
    static_assert(std::invocable<Score const&, Block const&>,
                  "tessel: a block score is a callable taking the block as a rank-1 tensor view.");
    using S = std::remove_cvref_t<std::invoke_result_t<Score const&, Block const&>>;
    auto out = make_host_tensor<S>(grid_shape);
    auto out_view = out.view();
    index_t const grid_size = to_index(size(out.layout()));
    auto score_block = [&](exec::SequentialContext const&, index_t g) {
      out_view[g] = score(by_block(g, _));
    };
    exec::for_each_row(executor, grid_size, to_index(size(b)), score_block);
    return out;
  }
}

// block_scores with the default score (L2Norm) and an executor.
template <TensorType T, IntTuple B, exec::Executor X>
auto block_scores(T const& t, B const& block_shape, X const& executor) {
  return block_scores(t, block_shape, L2Norm{}, executor);
}

}  // namespace tessel
