// logical_divide(layout, tiler) and its rearrangements zipped_divide, tiled_divide and
// flat_divide: a layout cut into tiles, as a layout whose outer part (the rest) walks the tiles
// and whose inner part (the tile) walks the elements of one tile.
//
// Row-major convention: the result is ((rest), (tile)), the rest first: logical_divide(l, t) is
// composition(l, (complement(t, size(l)), t)). The complement is the outer part of the
// bijection (complement, t) (complement.hpp): its row-major 1-D index j * size(t) + i has the
// tile's index i inner, so composing l with it keeps that order, and a tiler of consecutive
// indices, (n):(1), leaves the layout's 1-D index unchanged: logical_divide(l, n)(k) == l(k). CuTe
// composes with (t, complement(t, size(l))) and writes ((tile), (rest)), its first mode the fast
// one: the same tiles, the same offsets for the same (tile element, tile number). Grid outer, tile
// inner is also block_layout's order (BlockOrder::reordered is flat_divide by a shape,
// BlockOrder::merged is tiled_divide by one) and the products' (product.hpp), so the whole family
// reads as a row-major index into (tiles, elements of a tile).
//
// Tilers. A layout t (or an integer n, read as (n):(1)) tiles the layout's 1-D index space as a
// whole. A tuple of per-mode tilers (a shape such as (2, 4), or a tuple of layouts, integers and
// shapes; CuTe's Tile) divides mode k of the layout by tiler k; its rank must be the layout's.
// An integer tiler n of an integer mode s:d gives the integer modes (s / n, n):(n * d, d),
// static where s and n are static (block_layout's orders are these divides by a shape). Every
// other rest and tile is computed by the value code and is a flat tuple of modes, whose rank can
// depend on the values: a static layout tuple for static arguments, a DynRankTuple at run time.
//
// The tiler must divide the layout: (complement(t, size(l)), t) must cover exactly size(l)
// indices, and composition(l, that bijection) must be a layout. Failures throw tessel::Error (a
// static_assert when everything involved is static) naming the layout, the tiler and the values.
#pragma once

#include <string>
#include <utility>

#include "complement.hpp"
#include "composition.hpp"
#include "layout.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

// Why a divide or a product has no answer (none: it has one).
enum class TilingFailure {
  none,
  no_complement,    // divide: the tiler has none in size(layout); product: the layout has none
  does_not_divide,  // divide: the tiler and its complement cover another size than the layout's
  not_composable,   // what is composed does not line up with the extents it is composed into
};

// The two parts of a divide or a product, each a layout: outer (the rest of a divide, the
// repetition of a product) and inner (the tile of a divide, the layout of a product).
template <class Outer, class Inner>
struct TilingParts {
  Outer outer;
  Inner inner;
};

template <class Outer, class Inner>
TESSEL_HOST_DEVICE constexpr TilingParts<Outer, Inner> tiling_parts(Outer const& o,
                                                                    Inner const& i) {
  return {o, i};
}

template <std::size_t NA, std::size_t NT>
struct DivideValues {
  static constexpr std::size_t leaves = 2 * NT + 1;  // (complement, tiler): NT + 1 and NT
  static constexpr std::size_t capacity = ((NA > 0 ? NA : 1) + 1) * leaves;
  FlatLayoutValues<capacity> rest{};
  FlatLayoutValues<capacity> tile{};
  TilingFailure failure = TilingFailure::none;
  ComplementValues<NT> complement{};    // no_complement: why
  DynRankTuple<leaves> tiling_shape{};  // (complement, tiler), the bijection l is composed with
  DynRankTuple<leaves> tiling_stride{};
  index_t size = 0;     // size(layout)
  index_t covered = 0;  // does_not_divide: size(complement) * size(tiler)
  index_t leaf = -1;    // not_composable: the mode of (complement, tiler), its extent and stride
  index_t extent = 0;
  index_t stride = 0;
};

// The contract, as value code: c = complement(t, size(l)); (c, t) must cover size(l) indices;
// the modes that c's leaves become in composition(l, (c, t)) are the rest, those of t's leaves
// the tile, each flat, outer to inner.
template <std::size_t NA, std::size_t NT>
TESSEL_HOST_DEVICE constexpr DivideValues<NA, NT> divide_values(DynRankTuple<NA> const& as,
                                                                DynRankTuple<NA> const& ad,
                                                                DynRankTuple<NT> const& ts,
                                                                DynRankTuple<NT> const& td) {
  DivideValues<NA, NT> out{};
  bool overflow = false;
  out.size = checked_product(as, overflow);
  out.complement = complement_values(ts, td, out.size);
  if (out.complement.failure != ComplementFailure::none) {
    out.failure = TilingFailure::no_complement;
    return out;
  }
  auto const& c = out.complement.layout;
  for (index_t k = 0; k < c.shape.rank(); ++k) {
    out.tiling_shape.push_back(c.shape[k]);
    out.tiling_stride.push_back(c.stride[k]);
  }
  for (index_t k = 0; k < ts.rank(); ++k) {
    out.tiling_shape.push_back(ts[k]);
    out.tiling_stride.push_back(td[k]);
  }
  index_t covered = checked_product(out.tiling_shape, overflow);
  if (overflow || covered != out.size) {
    out.failure = TilingFailure::does_not_divide;
    out.covered = overflow ? index_max : covered;
    return out;
  }
  auto r = compose_values(as, ad, out.tiling_shape, out.tiling_stride);
  if (!r.ok) {
    out.failure = TilingFailure::not_composable;
    out.leaf = r.failed_leaf;
    out.extent = out.tiling_shape[r.failed_leaf];
    out.stride = out.tiling_stride[r.failed_leaf];
    return out;
  }
  out.rest = composed_modes(r, 0, c.shape.rank());
  out.tile = composed_modes(r, c.shape.rank(), r.count);
  return out;
}

// Each failure is a static_assert of its own; the template arguments name the values.
template <TilingFailure Failure, ComplementFailure Why, index_t Mode, index_t Extent,
          index_t Stride, index_t Span, index_t Size, index_t Cosize, index_t Covered>
struct StaticDivideCheck {
  static_assert(Failure != TilingFailure::no_complement || Why != ComplementFailure::broadcast_mode,
                "tessel: cannot divide by this static tiler: it is not injective, a mode of "
                "extent > 1 has stride 0 (see StaticDivideCheck<failure, why, mode, extent, "
                "stride, ...>).");
  static_assert(Failure != TilingFailure::no_complement ||
                    Why != ComplementFailure::strides_do_not_nest,
                "tessel: cannot divide by this static tiler: it has no complement, a mode's "
                "stride is not a multiple of the span of the modes of smaller stride (see "
                "StaticDivideCheck<failure, why, mode, extent, stride, span, ...>).");
  static_assert(Failure != TilingFailure::no_complement ||
                    Why != ComplementFailure::bound_below_cosize,
                "tessel: cannot divide by this static tiler: its cosize exceeds the static "
                "layout's size (see StaticDivideCheck<..., size, cosize, covered>).");
  static_assert(Failure != TilingFailure::does_not_divide,
                "tessel: the static tiler does not divide the static layout: the tiler and its "
                "complement cover another number of indices than the layout's size (see "
                "StaticDivideCheck<..., size, cosize, covered>).");
  static_assert(Failure != TilingFailure::not_composable,
                "tessel: cannot divide this static layout by this static tiler: a mode of "
                "(complement, tiler) does not line up with the layout's extents (see "
                "StaticDivideCheck<failure, why, mode, extent, stride, ...>).");
  static constexpr bool ok = true;
};

// The leaf a static failure names, with its extent and stride: the mode that does not line up
// (not_composable), otherwise the complement's offending mode. Shared by DivideStatic and
// ProductStatic, whose values both carry leaf/extent/stride and a complement.
struct ReportedMode {
  index_t mode = -1;
  index_t extent = 0;
  index_t stride = 0;
};

template <class Values>
TESSEL_HOST_DEVICE constexpr ReportedMode reported_mode(Values const& v) {
  if (v.failure == TilingFailure::not_composable) return {v.leaf, v.extent, v.stride};
  return {v.complement.mode, v.complement.extent, v.complement.stride};
}

template <class L, class T>
struct DivideStatic {
  static constexpr auto value = divide_values(leaf_values(L{}.shape()), leaf_values(L{}.stride()),
                                              leaf_values(T{}.shape()), leaf_values(T{}.stride()));
  static constexpr ReportedMode reported = reported_mode(value);
  static constexpr bool ok =
      StaticDivideCheck<value.failure, value.complement.failure, reported.mode, reported.extent,
                        reported.stride, value.complement.span, value.size, value.complement.cosize,
                        value.covered>::ok;
  struct RestShape {
    static constexpr auto value = DivideStatic::value.rest.shape;
  };
  struct RestStride {
    static constexpr auto value = DivideStatic::value.rest.stride;
  };
  struct TileShape {
    static constexpr auto value = DivideStatic::value.tile.shape;
  };
  struct TileStride {
    static constexpr auto value = DivideStatic::value.tile.stride;
  };
};

// An integer tiler of a static integer mode; the template arguments name the values.
template <std::size_t Mode, index_t Extent, index_t TileExtent>
struct StaticTileDivides {
  static_assert(TileExtent > 0,
                "tessel: a by-mode tiler's extents must be > 0 (see StaticTileDivides<mode, "
                "extent, tile extent>).");
  static_assert(TileExtent <= 0 || Extent % TileExtent == 0,
                "tessel: a by-mode tiler does not divide the static layout: the layout's extent "
                "in that mode is not a multiple of the tile extent (see StaticTileDivides<mode, "
                "extent, tile extent>).");
  static constexpr bool ok = true;
};

// ---- sentences ----

// A tiler as given: a layout, a shape, an integer, or a tuple of those.
template <class T>
std::string tiler_text(T const& t) {
  if constexpr (LayoutType<T>) {
    return layout_text(t);
  } else if constexpr (IntTuple<T>) {
    return shape_text(t);
  } else {
    std::string out = "(";
    for_each_indexed(t, [&](auto i, auto const& m) {
      if (i != 0) out.push_back(',');
      out.append(tiler_text(m));
    });
    out.push_back(')');
    return out;
  }
}

enum class TilingKind { divide, product };

// "cannot divide layout W by tiler T: " or "cannot form the product of mode 1 of layout W and
// tiler T: ". mode < 0: the whole layout.
template <LayoutType W, class T>
std::string tiling_head(TilingKind kind, W const& whole, index_t mode, T const& tiler) {
  std::string what = mode < 0 ? sentence("layout ", layout_text(whole))
                              : sentence("mode ", mode, " of layout ", layout_text(whole));
  if (kind == TilingKind::divide)
    return sentence("cannot divide ", what, " by tiler ", tiler_text(tiler), ": ");
  return sentence("cannot form the product of ", what, " and tiler ", tiler_text(tiler), ": ");
}

// Why `subject` ("the tiler", "the layout") has no complement.
template <std::size_t N>
std::string no_complement_text(char const* subject, ComplementValues<N> const& v, index_t bound) {
  if (v.failure == ComplementFailure::broadcast_mode)
    return sentence(subject, " is not injective: its mode ", v.mode, " has extent ", v.extent,
                    " and stride 0.");
  if (v.failure == ComplementFailure::strides_do_not_nest)
    return sentence(subject, " has no complement: its mode ", v.mode, " has stride ", v.stride,
                    ", which is not a multiple of ", v.span,
                    ", the span of its modes before it in stride order.");
  return sentence(subject, "'s cosize ", v.cosize, " exceeds ", bound, ".");
}

template <LayoutType W, class T, std::size_t NA, std::size_t NT>
std::string divide_failure(W const& whole, index_t mode, T const& tiler,
                           DivideValues<NA, NT> const& v) {
  std::string head = tiling_head(TilingKind::divide, whole, mode, tiler);
  if (v.failure == TilingFailure::no_complement) {
    if (v.complement.failure == ComplementFailure::bound_below_cosize)
      return head + sentence("the tiler's cosize ", v.complement.cosize,
                             " exceeds the layout's size ", v.size, ".");
    return head + no_complement_text("the tiler", v.complement, v.size);
  }
  std::string tiling = shape_text(v.tiling_shape) + ":" + shape_text(v.tiling_stride);
  if (v.failure == TilingFailure::does_not_divide)
    return head + sentence("it does not divide the layout: the tiler and its complement, ", tiling,
                           ", cover ", v.covered, " indices, not ", v.size, ".");
  return head + sentence("mode ", v.leaf, " (extent ", v.extent, ", stride ", v.stride,
                         ") of the tiler and its complement, ", tiling,
                         ", does not line up with the layout's extents.");
}

// ---- the parts ----

// The rest and the tile of l divided by the layout t (the general case). whole, mode and tiler
// are what an error sentence names.
template <LayoutType L, LayoutType T, LayoutType W, class Tiler>
TESSEL_HOST_DEVICE constexpr auto divide_parts(L const& l, T const& t,
                                               [[maybe_unused]] W const& whole,
                                               [[maybe_unused]] index_t mode,
                                               [[maybe_unused]] Tiler const& tiler) {
  if constexpr (is_static_layout_v<L> && is_static_layout_v<T>) {
    using Plan = DivideStatic<L, T>;
    static_assert(Plan::ok);
    return tiling_parts(
        Layout(lift_flat<typename Plan::RestShape>(), lift_flat<typename Plan::RestStride>()),
        Layout(lift_flat<typename Plan::TileShape>(), lift_flat<typename Plan::TileStride>()));
  } else {
    auto v = divide_values(leaf_values(l.shape()), leaf_values(l.stride()), leaf_values(t.shape()),
                           leaf_values(t.stride()));
#if !TESSEL_DEVICE_PASS
    if (v.failure != TilingFailure::none) throw_error(divide_failure(whole, mode, tiler, v));
#endif
    return tiling_parts(Layout(v.rest.shape, v.rest.stride), Layout(v.tile.shape, v.tile.stride));
  }
}

// Mode K of l divided by tiler K of tilers: an integer of an integer mode by arithmetic, keeping
// static integers static; anything else as a layout, by divide_parts.
template <std::size_t K, LayoutType L, Tuple Tilers>
TESSEL_HOST_DEVICE constexpr auto divide_mode(L const& l, Tilers const& tilers) {
  auto const& t = get<K>(tilers);
  using T = std::remove_cvref_t<decltype(t)>;
  auto m = get<K>(l);
  using S = std::remove_cvref_t<decltype(m.shape())>;
  if constexpr (Integer<T> && Integer<S>) {
    auto s = m.shape();
    auto d = m.stride();
    if constexpr (StaticInt<S> && StaticInt<T>) {
      static_assert(StaticTileDivides<K, S::value, T::value>::ok);
    } else {
#if !TESSEL_DEVICE_PASS
      if (to_index(t) <= 0)
        throw_error(
            tiling_head(TilingKind::divide, l, -1, tilers) +
            sentence("mode ", K, "'s tile extent is ", to_index(t), "; tile extents must be > 0."));
      if (to_index(s) % to_index(t) != 0)
        throw_error(tiling_head(TilingKind::divide, l, -1, tilers) +
                    sentence("mode ", K, " has extent ", to_index(s),
                             ", which is not a multiple of ", to_index(t), "."));
#endif
    }
    return tiling_parts(Layout(s / t, d * t), Layout(t, d));
  } else {
    return divide_parts(m, make_layout(t), l, static_cast<index_t>(K), t);
  }
}

// A by-mode tiler has one tiler per mode of l: a static_assert for a layout of static rank, a
// run-time check for a run-time-rank one.
template <LayoutType L, class T>
TESSEL_HOST_DEVICE constexpr void check_tiler_rank([[maybe_unused]] TilingKind kind,
                                                   [[maybe_unused]] L const& l,
                                                   [[maybe_unused]] T const& tiler) {
  using R = decltype(rank(l));
  if constexpr (StaticInt<R>) {
    static_assert(R::value == static_cast<index_t>(tuple_size_v<T>),
                  "tessel: a by-mode tiler needs one tiler per mode of the layout: its rank "
                  "differs from the layout's rank.");
  } else {
#if !TESSEL_DEVICE_PASS
    if (rank(l) != static_cast<index_t>(tuple_size_v<T>))
      throw_error(tiling_head(kind, l, -1, tiler) + sentence("the tiler has ", tuple_size_v<T>,
                                                             " modes but the layout has ", rank(l),
                                                             "."));
#endif
  }
}

// The parts of every mode of l, divided by the tuple of per-mode tilers t.
template <LayoutType L, Tuple T>
TESSEL_HOST_DEVICE constexpr auto divide_by_mode(L const& l, T const& t) {
  check_tiler_rank(TilingKind::divide, l, t);
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return make_tuple(divide_mode<K>(l, t)...);
  }
  (std::make_index_sequence<tuple_size_v<T>>{});
}

// The parts of a whole-layout tiler (a layout, or an integer n read as (n):(1)).
template <LayoutType L, class T>
TESSEL_HOST_DEVICE constexpr auto divide_whole(L const& l, T const& t) {
  return divide_parts(l, make_layout(t), l, -1, t);
}

// (outer, inner) of one pair of parts, as one layout.
template <class P>
TESSEL_HOST_DEVICE constexpr auto pair_layout(P const& p) {
  return Layout(make_tuple(p.outer.shape(), p.inner.shape()),
                make_tuple(p.outer.stride(), p.inner.stride()));
}

// Per-mode parts rearranged: (p_0, p_1, ...) each (outer, inner); ((outer...), (inner...));
// (outer..., (inner...)); (outer..., inner...).
enum class TilingArrangement { by_mode, zipped, tiled, flat };

template <TilingArrangement How, Tuple Parts>
TESSEL_HOST_DEVICE constexpr auto arrange(Parts const& parts) {
  return apply(parts, [](auto const&... p) {
    if constexpr (How == TilingArrangement::by_mode) {
      return Layout(make_tuple(make_tuple(p.outer.shape(), p.inner.shape())...),
                    make_tuple(make_tuple(p.outer.stride(), p.inner.stride())...));
    } else if constexpr (How == TilingArrangement::zipped) {
      return Layout(make_tuple(make_tuple(p.outer.shape()...), make_tuple(p.inner.shape()...)),
                    make_tuple(make_tuple(p.outer.stride()...), make_tuple(p.inner.stride()...)));
    } else if constexpr (How == TilingArrangement::tiled) {
      return Layout(make_tuple(p.outer.shape()..., make_tuple(p.inner.shape()...)),
                    make_tuple(p.outer.stride()..., make_tuple(p.inner.stride()...)));
    } else {
      return Layout(make_tuple(p.outer.shape()..., p.inner.shape()...),
                    make_tuple(p.outer.stride()..., p.inner.stride()...));
    }
  });
}

// The two flat parts of a whole-layout tiling as one flat layout: (outer leaves, inner leaves).
template <class P>
TESSEL_HOST_DEVICE constexpr auto flat_pair_layout(P const& p) {
  if constexpr (is_static_layout_v<decltype(p.outer)> && is_static_layout_v<decltype(p.inner)>) {
    return Layout(concat(p.outer.shape(), p.inner.shape()),
                  concat(p.outer.stride(), p.inner.stride()));
  } else {
    return Layout(leaf_values(make_tuple(p.outer.shape(), p.inner.shape())),
                  leaf_values(make_tuple(p.outer.stride(), p.inner.stride())));
  }
}

}  // namespace detail

// A tiler: a layout, an integer (the tile (n):(1)), or a tuple of per-mode tilers (integers,
// shapes, layouts).
template <class T>
concept Tiler = LayoutType<T> || Integer<T> || Tuple<T>;

// The layout l cut into tiles, ((rest), (tile)) for a layout tiler t:
//   result(j, i) == l(c(j) + t(i)) with c = complement(t, size(l)),
// and, for a tuple of per-mode tilers, one ((rest_k), (tile_k)) per mode k of l. A rest or tile
// whose rank depends on the values is a flat tuple of modes (a DynRankTuple at run time); an
// integer tiler n of an integer mode s:d gives the integer modes (s / n, n):(n * d, d). Throws
// tessel::Error (a static_assert when the layout and the tiler are static) when the tiler has
// no complement in size(l), does not divide it, does not line up with l's extents, or, per mode,
// when the ranks differ.
// @post size(result) == size(l); the tile modes have the tilers' sizes; for a layout tiler,
//       result(k) == l((c, t)(k)) for every 1-D index k, so a tiler (n):(1) gives result(k) ==
//       l(k)
template <LayoutType L, Tiler T>
TESSEL_HOST_DEVICE constexpr auto logical_divide(L const& l, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::by_mode>(detail::divide_by_mode(l, tiler));
  } else {
    return detail::pair_layout(detail::divide_whole(l, tiler));
  }
}

// logical_divide with the tile modes gathered: ((rest_0, rest_1, ...), (tile_0, tile_1, ...))
// for per-mode tilers; ((rest), (tile)) for a layout tiler. result(j, i): tile j, element i.
// @post size(result) == size(l); size(mode 1) == size of the tiler(s)
template <LayoutType L, Tiler T>
TESSEL_HOST_DEVICE constexpr auto zipped_divide(L const& l, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::zipped>(detail::divide_by_mode(l, tiler));
  } else {
    return detail::pair_layout(detail::divide_whole(l, tiler));
  }
}

// zipped_divide with the rest modes unpacked: (rest_0, rest_1, ..., (tile_0, tile_1, ...)); a
// layout tiler's rest is one mode, ((rest), (tile)). result(j0, j1, ..., i): tile (j0, j1, ...).
// @post size(result) == size(l); the last mode has the size of the tiler(s)
template <LayoutType L, Tiler T>
TESSEL_HOST_DEVICE constexpr auto tiled_divide(L const& l, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::tiled>(detail::divide_by_mode(l, tiler));
  } else {
    return detail::pair_layout(detail::divide_whole(l, tiler));
  }
}

// Both unpacked: (rest_0, rest_1, ..., tile_0, tile_1, ...); for a layout tiler, the modes of
// the rest and then those of the tile, one flat layout.
// @post size(result) == size(l)
template <LayoutType L, Tiler T>
TESSEL_HOST_DEVICE constexpr auto flat_divide(L const& l, T const& tiler) {
  if constexpr (Tuple<T>) {
    return detail::arrange<detail::TilingArrangement::flat>(detail::divide_by_mode(l, tiler));
  } else {
    return detail::flat_pair_layout(detail::divide_whole(l, tiler));
  }
}

}  // namespace tessel
