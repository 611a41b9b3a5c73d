// logical_product(layout, tiler) and its rearrangements zipped_product, tiled_product,
// blocked_product and raked_product: a layout repeated, once per index of the tiler, into the
// offsets it does not reach.
//
// Row-major convention: the result is ((repetition), (layout)), the repetition first:
// logical_product(a, b) is ((composition(c, b)), (a)) with c = complement(a, size(a) *
// cosize(b)). c is the outer part of the bijection (c, a) (complement.hpp), so a copy of a is the
// inner (fast) part and b picks which copies, in b's order: result(j, i) == c(b(j)) + a(i), and for
// a compact a and b = (n):(1) the result is compact, result(k) == k. CuTe writes (a, composition(c,
// b)), its first mode the fast one: the same offsets for the same (element of a, index of b). The
// order matches the divides' ((rest), (tile)) (divide.hpp): what repeats or walks the tiles outer,
// the tile inner.
//
// Tilers as for the divides: a layout (or an integer n, read as (n):(1)) takes a as a whole; a
// tuple of per-mode tilers (a shape, or layouts) multiplies mode k of a by tiler k. The repetition
// is computed by the value code and is a flat tuple of modes (a DynRankTuple at run time); a keeps
// its shape tree. blocked_product and raked_product take two layouts (a shape is read as its
// compact row-major layout) of the same rank and interleave the result mode by mode: blocked,
// mode k is (repetition_k, a_k), so a's elements are contiguous along each mode (a block);
// raked, mode k is (a_k, repetition_k), so they are spread with the tiler's extent as step (a
// rake).
//
// The complement's bound is max(size(a) * cosize(b), cosize(a)): CuTe's size(a) * cosize(b),
// but never below what a itself reaches (only the outermost complement mode depends on it).
// Failures throw tessel::Error (a static_assert when everything is static) naming the layout,
// the tiler and the values: a has no complement (not injective, strides that do not nest), or b
// does not line up with the complement's extents.
#pragma once

#include <string>
#include <utility>

#include "complement.hpp"
#include "composition.hpp"
#include "divide.hpp"
#include "layout.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

template <std::size_t NA, std::size_t NB>
struct ProductValues {
  ComplementValues<NA> complement{};      // no_complement: why; else c
  ComposedLeaves<NA + 2, NB> composed{};  // composition(c, b), per leaf of b
  TilingFailure failure = TilingFailure::none;
  index_t bound = 0;  // the complement's bound
  index_t leaf = -1;  // not_composable: the leaf of b, its extent and stride
  index_t extent = 0;
  index_t stride = 0;
};

// The contract, as value code: c = complement(a, max(size(a) * cosize(b), cosize(a))), then
// composition(c, b), one group of modes per leaf of b.
template <std::size_t NA, std::size_t NB>
TESSEL_HOST_DEVICE constexpr ProductValues<NA, NB> product_values(DynRankTuple<NA> const& as,
                                                                  DynRankTuple<NA> const& ad,
                                                                  DynRankTuple<NB> const& bs,
                                                                  DynRankTuple<NB> const& bd) {
  ProductValues<NA, NB> out{};
  bool overflow = false;
  index_t size_a = checked_product(as, overflow);
  index_t cosize_a = cosize_values(as, ad);
  if (overflow || mul_overflow(size_a, cosize_values(bs, bd), out.bound)) out.bound = index_max;
  if (out.bound < cosize_a) out.bound = cosize_a;
  out.complement = complement_values(as, ad, out.bound);
  if (out.complement.failure != ComplementFailure::none) {
    out.failure = TilingFailure::no_complement;
    return out;
  }
  auto const& c = out.complement.layout;
  out.composed = compose_values(c.shape, c.stride, bs, bd);
  if (!out.composed.ok) {
    out.failure = TilingFailure::not_composable;
    out.leaf = out.composed.failed_leaf;
    out.extent = bs[out.leaf];
    out.stride = bd[out.leaf];
  }
  return out;
}

template <TilingFailure Failure, ComplementFailure Why, index_t Mode, index_t Extent,
          index_t Stride, index_t Span, index_t Bound>
struct StaticTilingProductCheck {
  static_assert(Failure != TilingFailure::no_complement || Why != ComplementFailure::broadcast_mode,
                "tessel: cannot form the product of this static layout: it is not injective, a "
                "mode of extent > 1 has stride 0 (see StaticTilingProductCheck<failure, why, mode, "
                "extent, stride, ...>).");
  static_assert(Failure != TilingFailure::no_complement ||
                    Why != ComplementFailure::strides_do_not_nest,
                "tessel: cannot form the product of this static layout: it has no complement, a "
                "mode's stride is not a multiple of the span of the modes of smaller stride (see "
                "StaticTilingProductCheck<failure, why, mode, extent, stride, span, ...>).");
  static_assert(Failure != TilingFailure::not_composable,
                "tessel: cannot form the product of these static layouts: a mode of the tiler "
                "does not line up with the extents of the layout's complement (see "
                "StaticTilingProductCheck<failure, why, mode, extent, stride, ..., bound>).");
  static constexpr bool ok = true;
};

template <class A, class B>
struct ProductStatic {
  static constexpr auto value = product_values(leaf_values(A{}.shape()), leaf_values(A{}.stride()),
                                               leaf_values(B{}.shape()), leaf_values(B{}.stride()));
  static constexpr ReportedMode reported = reported_mode(value);
  static constexpr bool ok =
      StaticTilingProductCheck<value.failure, value.complement.failure, reported.mode,
                               reported.extent, reported.stride, value.complement.span,
                               value.bound>::ok;
};

// The modes that b's leaves [First, Last) became, as static types.
template <class Plan, index_t First, index_t Last>
struct ProductGroup {
  static constexpr auto modes = composed_modes(Plan::value.composed, First, Last);
  struct Shape {
    static constexpr auto value = ProductGroup::modes.shape;
  };
  struct Stride {
    static constexpr auto value = ProductGroup::modes.stride;
  };
};

template <LayoutType W, class T, std::size_t NA, std::size_t NB>
std::string product_failure(W const& whole, index_t mode, T const& tiler,
                            ProductValues<NA, NB> const& v) {
  std::string head = tiling_head(TilingKind::product, whole, mode, tiler);
  if (v.failure == TilingFailure::no_complement)
    return head + no_complement_text("the layout", v.complement, v.bound);
  auto const& c = v.complement.layout;
  return head + sentence("the tiler's mode ", v.leaf, " (extent ", v.extent, ", stride ", v.stride,
                         ") does not line up with the extents of the layout's "
                         "complement ",
                         shape_text(c.shape), ":", shape_text(c.stride), ".");
}

// The first leaf of each top-level mode of a shape type, and the end: the groups a
// per-mode product cuts composition(c, b) into. A run-time-rank b is one group.
template <class S>
constexpr std::size_t top_modes() {
  if constexpr (Integer<S> || DynRank<S>) {
    return 1;
  } else {
    return tuple_size_v<S>;
  }
}
template <class S, std::size_t K>
constexpr index_t first_leaf() {
  if constexpr (Integer<S> || DynRank<S>) {
    return 0;
  } else {
    return static_cast<index_t>(leaf_offset<S, K>());
  }
}

// composition(complement(a, bound), b), as one flat layout per top-level mode of b (PerMode) or
// one for all of b. whole, mode and tiler are what an error sentence names.
template <bool PerMode, LayoutType A, LayoutType B, LayoutType W, class Tiler>
TESSEL_HOST_DEVICE constexpr auto product_repetition(A const& a, B const& b,
                                                     [[maybe_unused]] W const& whole,
                                                     [[maybe_unused]] index_t mode,
                                                     [[maybe_unused]] Tiler const& tiler) {
  using BS = std::remove_cvref_t<decltype(b.shape())>;
  constexpr std::size_t groups = PerMode ? top_modes<BS>() : 1;
  if constexpr (is_static_layout_v<A> && is_static_layout_v<B>) {
    using Plan = ProductStatic<A, B>;
    static_assert(Plan::ok);
    return [&]<std::size_t... G>(std::index_sequence<G...>) {
      constexpr index_t count = Plan::value.composed.count;
      constexpr index_t first[] = {(PerMode ? first_leaf<BS, G>() : 0)..., count};
      return make_tuple(
          Layout(lift_flat<typename ProductGroup<Plan, first[G], first[G + 1]>::Shape>(),
                 lift_flat<typename ProductGroup<Plan, first[G], first[G + 1]>::Stride>())...);
    }
    (std::make_index_sequence<groups>{});
  } else {
    auto v = product_values(leaf_values(a.shape()), leaf_values(a.stride()), leaf_values(b.shape()),
                            leaf_values(b.stride()));
#if !TESSEL_DEVICE_PASS
    if (v.failure != TilingFailure::none) throw_error(product_failure(whole, mode, tiler, v));
#endif
    return [&]<std::size_t... G>(std::index_sequence<G...>) {
      index_t const first[] = {(PerMode ? first_leaf<BS, G>() : 0)..., v.composed.count};
      auto group = [&](std::size_t g) {
        auto m = composed_modes(v.composed, first[g], first[g + 1]);
        return Layout(m.shape, m.stride);
      };
      return make_tuple(group(G)...);
    }
    (std::make_index_sequence<groups>{});
  }
}

// (repetition, a) for a taken as a whole.
template <LayoutType A, class T>
TESSEL_HOST_DEVICE constexpr auto product_whole(A const& a, T const& tiler) {
  return tiling_parts(get<0>(product_repetition<false>(a, make_layout(tiler), a, -1, tiler)), a);
}

// (repetition_K, a_K) for mode K of a and tiler K of tilers.
template <std::size_t K, LayoutType A, Tuple Tilers>
TESSEL_HOST_DEVICE constexpr auto product_mode(A const& a, Tilers const& tilers) {
  auto m = get<K>(a);
  auto const& t = get<K>(tilers);
  return tiling_parts(
      get<0>(product_repetition<false>(m, make_layout(t), a, static_cast<index_t>(K), t)), m);
}

template <LayoutType A, Tuple T>
TESSEL_HOST_DEVICE constexpr auto product_by_mode(A const& a, T const& t) {
  check_tiler_rank(TilingKind::product, a, t);
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return make_tuple(product_mode<K>(a, t)...);
  }
  (std::make_index_sequence<tuple_size_v<T>>{});
}

// blocked_product and raked_product: mode k of the result is (repetition_k, a_k) (blocked) or
// (a_k, repetition_k) (raked), the repetition cut at b's top-level modes.
template <bool Blocked, class AArg, class BArg>
TESSEL_HOST_DEVICE constexpr auto interleaved_product(AArg const& a_arg, BArg const& b_arg) {
  auto a = make_layout(a_arg);
  auto b = make_layout(b_arg);
  using RA = decltype(rank(a));
  using RB = decltype(rank(b));
  static_assert(StaticInt<RA> && StaticInt<RB>,
                "tessel: blocked_product and raked_product need layouts whose rank is known at "
                "compile time.");
  static_assert(RA::value == RB::value,
                "tessel: blocked_product and raked_product need a layout and a tiler of the same "
                "rank.");
  auto rep = product_repetition<true>(a, b, a, -1, b_arg);
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    if constexpr (Blocked) {
      return Layout(make_tuple(make_tuple(get<K>(rep).shape(), get<K>(a.shape()))...),
                    make_tuple(make_tuple(get<K>(rep).stride(), get<K>(a.stride()))...));
    } else {
      return Layout(make_tuple(make_tuple(get<K>(a.shape()), get<K>(rep).shape())...),
                    make_tuple(make_tuple(get<K>(a.stride()), get<K>(rep).stride())...));
    }
  }
  (std::make_index_sequence<static_cast<std::size_t>(RA::value)>{});
}

}  // namespace detail

// a repeated by the tiler, ((repetition), (a)) for a layout (or shape) tiler b:
//   result(j, i) == c(b(j)) + a(i) with c = complement(a, max(size(a) * cosize(b), cosize(a))),
// the repetition composition(c, b), flat; for a tuple of per-mode tilers, one
// ((repetition_k), (a_k)) per mode k of a. Throws tessel::Error (a static_assert when a and b
// are static) when a has no complement (not injective, or its strides do not nest), when b does
// not line up with the complement's extents, or, per mode, when the ranks differ.
// @post size(result) == size(a) * size(b); result(j, i) == c(b(j)) + a(i); injective when a
//       and b are
template <LayoutType A, Tiler T>
TESSEL_HOST_DEVICE constexpr auto logical_product(A const& a, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::by_mode>(detail::product_by_mode(a, tiler));
  } else {
    return detail::pair_layout(detail::product_whole(a, tiler));
  }
}

// logical_product gathered: ((repetition_0, repetition_1, ...), (a_0, a_1, ...)) for per-mode
// tilers; ((repetition), (a)) for a layout tiler.
// @post size(result) == size(a) * size(tiler(s)); mode 1 is a's modes
template <LayoutType A, Tiler T>
TESSEL_HOST_DEVICE constexpr auto zipped_product(A const& a, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::zipped>(detail::product_by_mode(a, tiler));
  } else {
    return detail::pair_layout(detail::product_whole(a, tiler));
  }
}

// zipped_product with the repetitions unpacked: (repetition_0, repetition_1, ..., (a_0, a_1,
// ...)); ((repetition), (a)) for a layout tiler.
// @post size(result) == size(a) * size(tiler(s)); the last mode is a's modes
template <LayoutType A, Tiler T>
TESSEL_HOST_DEVICE constexpr auto tiled_product(A const& a, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::tiled>(detail::product_by_mode(a, tiler));
  } else {
    return detail::pair_layout(detail::product_whole(a, tiler));
  }
}

// The block a repeated over the grid b (layouts or shapes of the same static rank): mode k is
// (repetition_k, a_k), so along every mode a's elements are consecutive (one block), and the
// blocks follow b: result(r_0, r_1, ...) with r_k == j_k * size(a_k) + i_k is c(b(j)) + a(i).
// A (2, 2) block over a (3, 4) grid is a (6, 8) layout of 2 x 2 blocks.
// @post size(result) == size(a) * size(b); mode k has size size(a_k) * size(b_k)
template <class AArg, class BArg>
TESSEL_HOST_DEVICE constexpr auto blocked_product(AArg const& a, BArg const& b) {
  return detail::interleaved_product<true>(a, b);
}

// The block a raked over the grid b: mode k is (a_k, repetition_k), so along every mode a's
// elements are size(b_k) apart: result(r_0, ...) with r_k == i_k * size(b_k) + j_k is
// c(b(j)) + a(i).
// @post size(result) == size(a) * size(b); mode k has size size(a_k) * size(b_k)
template <class AArg, class BArg>
TESSEL_HOST_DEVICE constexpr auto raked_product(AArg const& a, BArg const& b) {
  return detail::interleaved_product<false>(a, b);
}

}  // namespace tessel
