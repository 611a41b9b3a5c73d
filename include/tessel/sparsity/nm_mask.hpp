// N:M masks: keep the N largest of every group of M along a mode, as a keep mask (true = kept),
// and apply them in place. Groups of elements (|w| decides), groups of blocks (a block score
// decides), and coupled tensors that share one mask (the sum of their |w| decides). Any view works
// as input: a transposed or permuted view moves the groups to another mode, a block view groups
// inside blocks. Every function takes an executor last (exec::Auto{} by default; exec::Cuda{stream}
// for device tensors, whose masks are then device tensors): the groups are the scopes of the top-k
// row body, which reads |w| where it lies, so nothing is copied.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../exec/executors.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "block_scores.hpp"
#include "detail/backend.hpp"
#include "detail/scope_offsets.hpp"
#include "detail/select_bodies.hpp"
#include "keep_mask.hpp"
#include "nm_pattern.hpp"
#include "topk.hpp"

namespace tessel {

namespace detail {

template <index_t Extent, index_t M>
struct StaticNMDivides {
  static_assert(Extent % M == 0,
                "tessel: the N:M group size M does not divide the extent along the pattern's mode "
                "(values in StaticNMDivides<extent, M>).");
  static constexpr bool ok = true;
};

// Checks the pattern and that M divides the extent of shape along the pattern's mode; returns the
// group shape. `noun` names what has that shape in the sentence ("tensor", "block grid").
template <int Mode, Tuple S, class N, class M>
auto checked_nm_group(S const& shape, NMPattern<N, M> const& p, bool blocks, char const* noun) {
  check_pattern(p);
  constexpr std::size_t r = tuple_size_v<S>;
  constexpr std::size_t mode = resolve_mode<Mode, r>();
  auto extent = get<mode>(shape);
  if constexpr (StaticInt<decltype(extent)> && StaticInt<M>) {
    static_assert(StaticNMDivides<decltype(extent)::value, M::value>::ok);
  } else {
    if (to_index(extent) % to_index(p.m) != 0)
      throw_error(sentence("a ", to_string(p), " pattern", blocks ? " of blocks" : "",
                           " along mode ", mode, " needs a multiple of ", to_index(p.m),
                           blocks ? " blocks" : " elements", " along that mode, but the ", noun,
                           " has shape ", shape_text(shape), "."));
  }
  return nm_group_shape<Mode, r>(p);
}

template <TensorType A, TensorType B>
void check_coupled_shapes(A const& a, B const& b) {
  auto sa = product_each(a.shape());
  auto sb = product_each(b.shape());
  if (!(leaf_values(sa) == leaf_values(sb)))
    throw_error(sentence("coupled tensors have shapes ", shape_text(sa), " and ", shape_text(sb),
                         "; every coupled tensor needs the same shape."));
}

// f(executor, tensors...) for arguments (tensors..., [executor]): the trailing executor, or
// exec::Auto{} when the last argument is a tensor.
template <class F, class... Args>
decltype(auto) with_trailing_executor(F&& f, Args&&... args) {
  using Last = std::remove_cvref_t<std::tuple_element_t<sizeof...(Args) - 1, std::tuple<Args...>>>;
  if constexpr (exec::Executor<Last>) {
    auto all = std::forward_as_tuple(args...);
    return [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
      return f(std::get<sizeof...(Args) - 1>(all), std::get<I>(all)...);
    }
    (std::make_index_sequence<sizeof...(Args) - 1>{});
  } else {
    return f(exec::Auto{}, args...);
  }
}

// The scopes of t for the top-k body: groups of `group` over t's own layout, as elements of V.
template <TensorType T, Tuple G>
auto element_scopes(T const& t, G const& group) {
  using V = std::remove_cv_t<typename T::value_type>;
  auto v = t.view();
  return scope_source<V const>(v.data(), v.layout(), group);
}

template <int Mode, exec::Executor X, class N, class M, TensorType T0, TensorType... Ts>
auto nm_mask_coupled_on(X const& executor, NMPattern<N, M> const& p, T0 const& t0,
                        Ts const&... ts) {
  check_tensors_reach<X, T0, Ts...>();
  (check_coupled_shapes(t0, ts), ...);
  auto shape = product_each(t0.shape());
  auto group = checked_nm_group<Mode>(shape, p, false, "tensor");
  using S = std::common_type_t<score_type_t<std::remove_cv_t<typename T0::value_type>>,
                               score_type_t<std::remove_cv_t<typename Ts::value_type>>...>;
  return topk_keep(executor, shape, group, to_index(p.n),
                   abs_sum_scores<S>(element_scopes(t0, group), element_scopes(ts, group)...));
}

}  // namespace detail

// The N:M keep mask of a score tensor: in every group of p.m consecutive entries along mode Mode
// (-1: the last mode), the p.n highest scores are kept (ties: the lower index). The mask is an
// owning bool tensor of the scores' shape, where the scores live.
template <int Mode = -1, TensorType S, class N, class M, exec::Executor X = exec::Auto>
auto nm_mask_from_scores(S const& scores, NMPattern<N, M> const& p, X const& executor = {}) {
  auto shape = product_each(scores.shape());
  auto group = detail::checked_nm_group<Mode>(shape, p, false, "score tensor");
  return topk_mask(scores, group, p.n, executor);
}

// The N:M keep mask of t: in every group of p.m consecutive elements along mode Mode (-1: the
// last mode, the input dimension of an (out, in) weight), the p.n largest |t| are kept.
// tessel::Error (or a static_assert for static values) when the pattern is invalid or p.m does
// not divide that extent: "a 2:4 pattern along mode 1 needs a multiple of 4 elements along that
// mode, but the tensor has shape (4,10)."
// @post every group has exactly p.n kept entries; each kept |t| >= each dropped |t| of its group
template <int Mode = -1, TensorType T, class N, class M, exec::Executor X = exec::Auto>
auto nm_mask(T const& t, NMPattern<N, M> const& p, X const& executor = {}) {
  return detail::nm_mask_coupled_on<Mode>(executor, p, t);
}

// The N:M keep mask over the blocks of t: blocks of block_shape are scored (L2Norm by default; see
// block_scores for which scores run on device tensors), and in every group of p.m consecutive
// blocks along mode Mode the p.n best are kept. The mask has the block grid's shape; with a static
// pattern, block shape and tensor shape it is static.
template <int Mode = -1, TensorType T, class N, class M, IntTuple B, BlockScore Score = L2Norm,
          exec::Executor X = exec::Auto>
auto nm_mask(T const& t, NMPattern<N, M> const& p, B const& block_shape, Score const& score = {},
             X const& executor = {}) {
  detail::check_tensors_reach<X, T>();
  auto grid = block_grid_shape(t, block_shape);
  auto group = detail::checked_nm_group<Mode>(grid, p, true, "block grid");
  return topk_mask(block_scores(t, block_shape, score, executor), group, p.n, executor);
}

// nm_mask over blocks scored by L2Norm, with an executor.
template <int Mode = -1, TensorType T, class N, class M, IntTuple B, exec::Executor X>
auto nm_mask(T const& t, NMPattern<N, M> const& p, B const& block_shape, X const& executor) {
  return nm_mask<Mode>(t, p, block_shape, L2Norm{}, executor);
}

// Prunes t in place to the N:M pattern (the N largest |t| of every group survive) and returns the
// keep mask it applied. Nothing is written when a check fails.
template <int Mode = -1, class T, class N, class M, exec::Executor X = exec::Auto>
requires TensorType<T>
auto apply_nm(T&& t, NMPattern<N, M> const& p, X const& executor = {}) {
  auto keep = nm_mask<Mode>(t, p, executor);
  apply_keep_mask(t, keep, executor);
  return keep;
}

// Prunes t in place to the N:M pattern over blocks of block_shape; returns the block keep mask.
template <int Mode = -1, class T, class N, class M, IntTuple B, BlockScore Score = L2Norm,
          exec::Executor X = exec::Auto>
requires TensorType<T>
auto apply_nm(T&& t, NMPattern<N, M> const& p, B const& block_shape, Score const& score = {},
              X const& executor = {}) {
  auto keep = nm_mask<Mode>(t, p, block_shape, score, executor);
  apply_keep_mask(t, keep, block_shape, executor);
  return keep;
}

// apply_nm over blocks scored by L2Norm, with an executor.
template <int Mode = -1, class T, class N, class M, IntTuple B, exec::Executor X>
requires TensorType<T>
auto apply_nm(T&& t, NMPattern<N, M> const& p, B const& block_shape, X const& executor) {
  return apply_nm<Mode>(std::forward<T>(t), p, block_shape, L2Norm{}, executor);
}

// One N:M keep mask shared by tensors viewed the same way (e.g. a weight and the transposed view
// of its partner): an element's score is the sum of |t_i| at that coordinate over all tensors,
// added in argument order. The arguments are the tensors, then optionally the executor.
// tessel::Error when the shapes differ ("coupled tensors have shapes (4,8) and (8,4); every
// coupled tensor needs the same shape.").
template <int Mode = -1, class N, class M, class... Args>
auto nm_mask_coupled(NMPattern<N, M> const& p, Args const&... args) {
  static_assert(sizeof...(Args) > 0, "tessel: nm_mask_coupled takes at least one tensor.");
  return detail::with_trailing_executor(
      [&](auto const& executor, auto const&... ts) {
        static_assert(sizeof...(ts) > 0 && (TensorType<std::remove_cvref_t<decltype(ts)>> && ...),
                      "tessel: nm_mask_coupled takes tensors, then optionally an executor.");
        return detail::nm_mask_coupled_on<Mode>(executor, p, ts...);
      },
      args...);
}

// Prunes every tensor in place with one shared N:M mask (see nm_mask_coupled); returns the mask.
// The arguments are the tensors, then optionally the executor. All checks happen before any
// tensor is written.
template <int Mode = -1, class N, class M, class... Args>
auto apply_nm_coupled(NMPattern<N, M> const& p, Args&&... args) {
  static_assert(sizeof...(Args) > 0, "tessel: apply_nm_coupled takes at least one tensor.");
  return detail::with_trailing_executor(
      [&](auto const& executor, auto&&... ts) {
        static_assert(sizeof...(ts) > 0 && (TensorType<std::remove_cvref_t<decltype(ts)>> && ...),
                      "tessel: apply_nm_coupled takes tensors, then optionally an executor.");
        auto keep = detail::nm_mask_coupled_on<Mode>(executor, p, ts...);
        (apply_keep_mask(ts, keep, executor), ...);
        return keep;
      },
      std::forward<Args>(args)...);
}

}  // namespace tessel
