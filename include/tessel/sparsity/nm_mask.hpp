// N:M masks: keep the N largest of every group of M along a mode, as a keep mask (true = kept),
// and apply them in place. Groups of elements (|w| decides), groups of blocks (a block score
// decides), and coupled tensors that share one mask (the sum of their |w| decides). Any view works
// as input: a transposed or permuted view moves the groups to another mode, a block view groups
// inside blocks.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/for_each_coordinate.hpp"
#include "../tensor/host_tensor.hpp"
#include "../tensor/tensor.hpp"
#include "block_scores.hpp"
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
                           " has shape ", plain_string(shape), "."));
  }
  return nm_group_shape<Mode, r>(p);
}

// |t| as an owning host tensor of score type S (shape product_each(shape(t))).
template <class S, TensorType T>
auto abs_scores(T const& t) {
  auto shape = product_each(t.shape());
  auto out = make_host_tensor<S>(shape);
  for_each_coordinate(shape, [&](auto... c) { out(c...) = static_cast<S>(abs_value(t(c...))); });
  return out;
}

template <TensorType A, TensorType B>
void check_coupled_shapes(A const& a, B const& b) {
  auto sa = product_each(a.shape());
  auto sb = product_each(b.shape());
  if (!(leaf_values(sa) == leaf_values(sb)))
    throw_error(sentence("coupled tensors have shapes ", plain_string(sa), " and ",
                         plain_string(sb), "; every coupled tensor needs the same shape."));
}

}  // namespace detail

// The N:M keep mask of a score tensor: in every group of p.m consecutive entries along mode Mode
// (-1: the last mode), the p.n highest scores are kept (ties: the lower index). The mask is an
// owning bool host tensor of the scores' shape.
template <int Mode = -1, TensorType S, class N, class M>
auto nm_mask_from_scores(S const& scores, NMPattern<N, M> const& p) {
  auto shape = product_each(scores.shape());
  auto group = detail::checked_nm_group<Mode>(shape, p, false, "score tensor");
  return topk_mask(scores, group, p.n);
}

// The N:M keep mask of t: in every group of p.m consecutive elements along mode Mode (-1: the
// last mode, the input dimension of an (out, in) weight), the p.n largest |t| are kept.
// tessel::Error (or a static_assert for static values) when the pattern is invalid or p.m does
// not divide that extent: "a 2:4 pattern along mode 1 needs a multiple of 4 elements along that
// mode, but the tensor has shape (4,10)."
// @post every group has exactly p.n kept entries; each kept |t| >= each dropped |t| of its group
template <int Mode = -1, TensorType T, class N, class M>
auto nm_mask(T const& t, NMPattern<N, M> const& p) {
  auto group = detail::checked_nm_group<Mode>(product_each(t.shape()), p, false, "tensor");
  using S = detail::score_type_t<typename T::value_type>;
  return topk_mask(detail::abs_scores<S>(t), group, p.n);
}

// The N:M keep mask over the blocks of t: blocks of block_shape are scored (L2Norm by default),
// and in every group of p.m consecutive blocks along mode Mode the p.n best are kept. The mask has
// the block grid's shape; with a static pattern, block shape and tensor shape it is static.
template <int Mode = -1, TensorType T, class N, class M, class B, class Score = L2Norm>
auto nm_mask(T const& t, NMPattern<N, M> const& p, B const& block_shape, Score const& score = {}) {
  auto grid = block_grid_shape(t, block_shape);
  auto group = detail::checked_nm_group<Mode>(grid, p, true, "block grid");
  return topk_mask(block_scores(t, block_shape, score), group, p.n);
}

// Prunes t in place to the N:M pattern (the N largest |t| of every group survive) and returns the
// keep mask it applied. Nothing is written when a check fails.
template <int Mode = -1, class T, class N, class M>
requires TensorType<T>
auto apply_nm(T&& t, NMPattern<N, M> const& p) {
  auto keep = nm_mask<Mode>(t, p);
  apply_keep_mask(t, keep);
  return keep;
}

// Prunes t in place to the N:M pattern over blocks of block_shape; returns the block keep mask.
template <int Mode = -1, class T, class N, class M, class B, class Score = L2Norm>
requires TensorType<T>
auto apply_nm(T&& t, NMPattern<N, M> const& p, B const& block_shape, Score const& score = {}) {
  auto keep = nm_mask<Mode>(t, p, block_shape, score);
  apply_keep_mask(t, keep, block_shape);
  return keep;
}

// One N:M keep mask shared by tensors viewed the same way (e.g. a weight and the transposed view
// of its partner): an element's score is the sum of |t_i| at that coordinate over all tensors.
// tessel::Error when the shapes differ ("coupled tensors have shapes (4,8) and (8,4); every
// coupled tensor needs the same shape.").
template <int Mode = -1, class N, class M, TensorType T0, TensorType... Ts>
auto nm_mask_coupled(NMPattern<N, M> const& p, T0 const& t0, Ts const&... ts) {
  (detail::check_coupled_shapes(t0, ts), ...);
  auto group = detail::checked_nm_group<Mode>(product_each(t0.shape()), p, false, "tensor");
  using S = std::common_type_t<detail::score_type_t<typename T0::value_type>,
                               detail::score_type_t<typename Ts::value_type>...>;
  auto scores = detail::abs_scores<S>(t0);
  auto add = [&](auto const& t) {
    for_each_coordinate(product_each(scores.shape()), [&](auto... c) {
      scores(c...) += static_cast<S>(detail::abs_value(t(c...)));
    });
  };
  (add(ts), ...);
  return topk_mask(scores, group, p.n);
}

// Prunes every tensor in place with one shared N:M mask (see nm_mask_coupled); returns the mask.
// All checks happen before any tensor is written.
template <int Mode = -1, class N, class M, class... Ts>
requires(sizeof...(Ts) > 0 &&
         (TensorType<Ts> && ...)) auto apply_nm_coupled(NMPattern<N, M> const& p, Ts&&... ts) {
  auto keep = nm_mask_coupled<Mode>(p, ts...);
  (apply_keep_mask(ts, keep), ...);
  return keep;
}

}  // namespace tessel
