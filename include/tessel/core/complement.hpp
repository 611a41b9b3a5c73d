// complement(l, bound): the layout of the offsets in [0, bound) that l does not reach, as the
// outer (slow) part of a bijection whose inner (fast) part is l. It is what tilings are built
// from: a tile l and its complement index every element of [0, bound) exactly once.
//
// Row-major convention: the concatenation of c = complement(l, bound) and l is the layout
// (c, l) whose 1-D index is j * size(l) + i (c's index j outer, l's index i inner), so that
// (c, l)(j * size(l) + i) == c(j) + l(i). CuTe writes the same pair the other way round,
// (l, c), because its first mode is the fast one; the offsets are the same.
#pragma once

#include "coalesce.hpp"
#include "layout.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

// Why a layout has no complement (none: it has one).
enum class ComplementFailure {
  none,
  broadcast_mode,       // a mode of extent > 1 has stride 0: not injective
  strides_do_not_nest,  // a stride is not a multiple of the span of the modes below it
  bound_below_cosize,   // the layout reaches offsets at or past the bound
};

// The leaves that move the offset or repeat it (extent > 1), ordered by stride, smallest first;
// among equal strides the inner (later) leaf comes first, as row-major order makes it faster.
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr DynRankTuple<N> leaves_by_stride(DynRankTuple<N> const& s,
                                                              DynRankTuple<N> const& d) {
  DynRankTuple<N> order{};
  for (index_t k = s.rank() - 1; k >= 0; --k) {
    if (s[k] <= 1) continue;
    order.push_back(k);
    // Insertion sort, stable: a later-inserted (outer) leaf moves only past strictly larger ones.
    for (index_t j = order.rank() - 1; j > 0 && d[order[j - 1]] > d[order[j]]; --j) {
      index_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  }
  return order;
}

// cosize as value code: 0 for an empty layout, saturating at index_max on overflow.
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr index_t cosize_values(DynRankTuple<N> const& s,
                                                   DynRankTuple<N> const& d) {
  for (index_t k = 0; k < s.rank(); ++k)
    if (s[k] == 0) return 0;
  index_t cosize = 1;
  for (index_t k = 0; k < s.rank(); ++k) {
    index_t term = 0;
    if (mul_overflow(s[k] - 1, d[k], term) || add_overflow(cosize, term, cosize)) return index_max;
  }
  return cosize;
}

template <std::size_t N>
struct ComplementValues {
  FlatLayoutValues<N + 1> layout{};
  ComplementFailure failure = ComplementFailure::none;
  index_t mode = -1;   // the offending leaf (broadcast_mode, strides_do_not_nest)
  index_t extent = 0;  // its extent
  index_t stride = 0;  // its stride
  index_t span = 0;    // strides_do_not_nest: the span of the leaves before it in stride order
  index_t cosize = 0;  // bound_below_cosize: the layout's cosize (index_max when it overflows)
};

// The contract, as value code. With the leaves of extent > 1 sorted by stride (s_0:d_0, ...,
// s_m:d_m) and span_0 = 1, span_{j+1} = s_j * d_j, each d_j must be a multiple of span_j; the
// complement has the gap modes (d_j / span_j):(span_j), inner to outer, and outermost the rest
// mode (ceil(bound / span_{m+1})):(span_{m+1}), coalesced. An empty layout reaches nothing: its
// complement is (bound):(1).
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr ComplementValues<N> complement_values(DynRankTuple<N> const& s,
                                                                   DynRankTuple<N> const& d,
                                                                   index_t bound) {
  ComplementValues<N> out{};
  DynRankTuple<N + 1> shape{};
  DynRankTuple<N + 1> stride{};
  index_t cosize = cosize_values(s, d);
  if (bound < cosize) {
    out.failure = ComplementFailure::bound_below_cosize;
    out.cosize = cosize;
    return out;
  }
  if (cosize == 0) {  // empty
    shape.push_back(bound);
    stride.push_back(1);
    out.layout = coalesce_values(shape, stride);
    return out;
  }
  DynRankTuple<N> order = leaves_by_stride(s, d);
  DynRankTuple<N + 1> gap_shape{};  // inner to outer
  DynRankTuple<N + 1> gap_stride{};
  index_t span = 1;
  for (index_t j = 0; j < order.rank(); ++j) {
    index_t k = order[j];
    if (d[k] == 0 || d[k] % span != 0) {
      out.failure =
          d[k] == 0 ? ComplementFailure::broadcast_mode : ComplementFailure::strides_do_not_nest;
      out.mode = k;
      out.extent = s[k];
      out.stride = d[k];
      out.span = span;
      return out;
    }
    gap_shape.push_back(d[k] / span);
    gap_stride.push_back(span);
    // s[k] * d[k] fits unless bound is near index_max; saturate, a later leaf then cannot nest.
    if (mul_overflow(s[k], d[k], span)) span = index_max;
  }
  shape.push_back(bound / span + (bound % span != 0 ? 1 : 0));
  stride.push_back(span);
  for (index_t j = gap_shape.rank() - 1; j >= 0; --j) {
    shape.push_back(gap_shape[j]);
    stride.push_back(gap_stride[j]);
  }
  out.layout = coalesce_values(shape, stride);
  return out;
}

// Each failure is a static_assert of its own; the template arguments name the values in the
// "required from" line of the diagnostic.
template <ComplementFailure Failure, index_t Mode, index_t Extent, index_t Stride, index_t Span,
          index_t Bound, index_t Cosize>
struct StaticComplementCheck {
  static_assert(Failure != ComplementFailure::broadcast_mode,
                "tessel: this static layout has no complement: it is not injective, a mode of "
                "extent > 1 has stride 0 (see StaticComplementCheck<failure, mode, extent, stride, "
                "...>).");
  static_assert(
      Failure != ComplementFailure::strides_do_not_nest,
      "tessel: this static layout has no complement: a mode's stride is not a multiple of "
      "the span of the modes of smaller stride, so it is not injective or its strides do "
      "not nest (see StaticComplementCheck<failure, mode, extent, stride, span, ...>).");
  static_assert(Failure != ComplementFailure::bound_below_cosize,
                "tessel: complement bound smaller than the static layout's cosize (see "
                "StaticComplementCheck<..., bound, cosize>).");
  static constexpr bool ok = true;
};

template <class L, index_t Bound>
struct ComplementStatic {
  static constexpr auto value =
      complement_values(leaf_values(L{}.shape()), leaf_values(L{}.stride()), Bound);
  static constexpr bool ok =
      StaticComplementCheck<value.failure, value.mode, value.extent, value.stride, value.span,
                            Bound, value.cosize>::ok;
  struct Shape {
    static constexpr auto value = ComplementStatic::value.layout.shape;
  };
  struct Stride {
    static constexpr auto value = ComplementStatic::value.layout.stride;
  };
};

// The sentence for a failure; `verb` is what was asked ("complement", "left-invert").
template <LayoutType L, std::size_t N>
std::string complement_failure(char const* verb, L const& l, ComplementValues<N> const& v,
                               index_t bound) {
  std::string const layout = layout_text(l);
  if (v.failure == ComplementFailure::broadcast_mode)
    return sentence("cannot ", verb, " layout ", layout, ": it is not injective: mode ", v.mode,
                    " has extent ", v.extent, " and stride 0.");
  if (v.failure == ComplementFailure::strides_do_not_nest)
    return sentence("cannot ", verb, " layout ", layout, ": mode ", v.mode, " has stride ",
                    v.stride, ", which is not a multiple of ", v.span,
                    ", the span of the modes before it in stride order; the layout is not "
                    "injective or its strides do not nest.");
  return sentence("cannot ", verb, " layout ", layout, " in [0, ", bound, "): its cosize ",
                  v.cosize, " exceeds the bound.");
}

}  // namespace detail

// The offsets of [0, bound) that l does not reach, as a flat layout c such that the row-major
// concatenation (c, l) is a bijection from [0, size(c) * size(l)) onto itself. Leaves of extent
// 1 are ignored. Throws tessel::Error (a static_assert when both arguments are static) when l is
// not injective, when its strides do not nest (sorted by stride, each is a multiple of the span
// extent * stride of the one before), or when bound < cosize(l).
// @post for a non-empty l: size(c) * size(l) is the smallest multiple of w >= bound, where w is
//       the largest extent * stride over l's leaves of extent > 1 (1 if none), so it is bound
//       when w divides bound; c is coalesced, its strides decreasing. An empty l gives the
//       coalesced (bound):(1).
template <LayoutType L, Integer B>
TESSEL_HOST_DEVICE constexpr auto complement(L const& l, B const& bound) {
  using S = std::remove_cvref_t<decltype(l.shape())>;
  using D = std::remove_cvref_t<decltype(l.stride())>;
  if constexpr (is_static_v<S> && is_static_v<D> && StaticInt<B>) {
    using Plan = detail::ComplementStatic<L, B::value>;
    static_assert(Plan::ok);
    return Layout(detail::lift_flat<typename Plan::Shape>(),
                  detail::lift_flat<typename Plan::Stride>());
  } else {
    auto v =
        detail::complement_values(leaf_values(l.shape()), leaf_values(l.stride()), to_index(bound));
#if !TESSEL_DEVICE_PASS
    if (v.failure != detail::ComplementFailure::none)
      detail::throw_error(detail::complement_failure("complement", l, v, to_index(bound)));
#endif
    return Layout(v.layout.shape, v.layout.stride);
  }
}

// complement(l, cosize(l)): the holes of l inside its own span.
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto complement(L const& l) {
  return complement(l, cosize(l));
}

}  // namespace tessel
