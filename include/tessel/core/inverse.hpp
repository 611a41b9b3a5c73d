// Inverses of layouts, as layouts from offsets back to 1-D (row-major) indices:
// right_inverse(l) undoes l on the offsets 0, 1, 2, ... that l reaches contiguously;
// left_inverse(l) undoes an injective l on every offset it reaches; max_common_layout(a, b) is
// the part of b's right inverse on which a agrees, the elements two layouts both store
// contiguously (what a vectorized copy between them may move at once).
#pragma once

#include "coalesce.hpp"
#include "complement.hpp"
#include "layout.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

// The weight of each leaf in the 1-D row-major index: the product of the extents after it.
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr DynRankTuple<N> index_weights(DynRankTuple<N> const& s) {
  DynRankTuple<N> w{};
  w.count = s.rank();
  index_t weight = 1;
  for (index_t k = s.rank() - 1; k >= 0; --k) {
    w[k] = weight;
    weight *= s[k];
  }
  return w;
}

// The contract, as value code: walking the leaves of extent > 1 by increasing stride while each
// stride is the product of the extents walked so far (1 first), the walked leaves k become the
// modes s_k:w_k of the result (w_k the leaf's index weight), the first walked innermost;
// coalesced. An empty layout gives (0):(1).
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr FlatLayoutValues<(N > 0 ? N : 1)> right_inverse_values(
    DynRankTuple<N> const& s, DynRankTuple<N> const& d) {
  constexpr std::size_t M = N > 0 ? N : 1;
  DynRankTuple<M> shape{};
  DynRankTuple<M> stride{};
  for (index_t k = 0; k < s.rank(); ++k) {
    if (s[k] == 0) {
      shape.push_back(0);
      stride.push_back(1);
      return coalesce_values(shape, stride);
    }
  }
  DynRankTuple<N> w = index_weights(s);
  DynRankTuple<N> order = leaves_by_stride(s, d);
  DynRankTuple<M> chain{};  // walked leaves, inner to outer
  index_t span = 1;
  for (index_t j = 0; j < order.rank() && d[order[j]] == span; ++j) {
    chain.push_back(order[j]);
    span *= s[order[j]];
  }
  for (index_t j = chain.rank() - 1; j >= 0; --j) {
    shape.push_back(s[chain[j]]);
    stride.push_back(w[chain[j]]);
  }
  return coalesce_values(shape, stride);
}

template <class L>
struct RightInverseStatic {
  static constexpr auto value =
      right_inverse_values(leaf_values(L{}.shape()), leaf_values(L{}.stride()));
  struct Shape {
    static constexpr auto value = RightInverseStatic::value.shape;
  };
  struct Stride {
    static constexpr auto value = RightInverseStatic::value.stride;
  };
};

template <std::size_t N>
struct LeftInverseValues {
  FlatLayoutValues<2 * N + 1> layout{};
  ComplementValues<N> complement{};  // its failure says why there is no left inverse
};

// right_inverse of the concatenation (complement(l), l): that concatenation is a bijection, and
// l(i) is its element (0, i), whose 1-D index is i.
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr LeftInverseValues<N> left_inverse_values(DynRankTuple<N> const& s,
                                                                      DynRankTuple<N> const& d) {
  LeftInverseValues<N> out{};
  out.complement = complement_values(s, d, cosize_values(s, d));
  if (out.complement.failure != ComplementFailure::none) return out;
  DynRankTuple<2 * N + 1> cs{};
  DynRankTuple<2 * N + 1> cd{};
  auto const& c = out.complement.layout;
  for (index_t k = 0; k < c.shape.rank(); ++k) {
    cs.push_back(c.shape[k]);
    cd.push_back(c.stride[k]);
  }
  for (index_t k = 0; k < s.rank(); ++k) {
    cs.push_back(s[k]);
    cd.push_back(d[k]);
  }
  out.layout = right_inverse_values(cs, cd);
  return out;
}

template <ComplementFailure Failure, index_t Mode, index_t Extent, index_t Stride, index_t Span>
struct StaticLeftInverseCheck {
  static_assert(
      Failure != ComplementFailure::broadcast_mode,
      "tessel: this static layout has no left inverse: it is not injective, a mode of "
      "extent > 1 has stride 0 (see StaticLeftInverseCheck<failure, mode, extent, stride, "
      "span>).");
  static_assert(Failure != ComplementFailure::strides_do_not_nest,
                "tessel: this static layout has no left inverse: a mode's stride is not a multiple "
                "of the span of the modes of smaller stride, so it is not injective or its strides "
                "do not nest (see StaticLeftInverseCheck<failure, mode, extent, stride, span>).");
  static constexpr bool ok = true;
};

template <class L>
struct LeftInverseStatic {
  static constexpr auto value =
      left_inverse_values(leaf_values(L{}.shape()), leaf_values(L{}.stride()));
  static constexpr bool ok =
      StaticLeftInverseCheck<value.complement.failure, value.complement.mode,
                             value.complement.extent, value.complement.stride,
                             value.complement.span>::ok;
  struct Shape {
    static constexpr auto value = LeftInverseStatic::value.layout.shape;
  };
  struct Stride {
    static constexpr auto value = LeftInverseStatic::value.layout.stride;
  };
};

template <std::size_t N>
struct CommonValues {
  FlatLayoutValues<N> layout{};
  index_t vector = 1;  // size(layout)
};

// The contract, as value code. Both layouts are coalesced and split into their common row-major
// refinement, from the innermost mode outwards while one extent divides the other: modes
// (extent e, stride in a, stride in b, index weight w). Then, with span = 1, the mode whose
// strides in a and in b are both span (e > 1) is walked, span *= e, until none is; the walked
// modes e:w, the first walked innermost, coalesced, are the result. Empty layouts give (1):(0).
// Room for the common refinement: each of its modes ends a mode of a or of b (a rank-0 layout
// coalesces to one mode).
template <std::size_t NA, std::size_t NB>
inline constexpr std::size_t common_capacity = (NA > 0 ? NA : 1) + (NB > 0 ? NB : 1);

template <std::size_t NA, std::size_t NB>
TESSEL_HOST_DEVICE constexpr CommonValues<common_capacity<NA, NB>> max_common_values(
    DynRankTuple<NA> const& as, DynRankTuple<NA> const& ad, DynRankTuple<NB> const& bs,
    DynRankTuple<NB> const& bd) {
  constexpr std::size_t N = common_capacity<NA, NB>;
  CommonValues<N> out{};
  DynRankTuple<N> shape{};
  DynRankTuple<N> stride{};
  bool empty = false;
  for (index_t k = 0; k < as.rank(); ++k) empty = empty || as[k] == 0;
  for (index_t k = 0; k < bs.rank(); ++k) empty = empty || bs[k] == 0;
  if (empty) {
    shape.push_back(1);
    stride.push_back(0);
    out.layout = coalesce_values(shape, stride);
    return out;
  }
  auto a = coalesce_values(as, ad);
  auto b = coalesce_values(bs, bd);
  DynRankTuple<N> e{};
  DynRankTuple<N> sa{};
  DynRankTuple<N> sb{};
  DynRankTuple<N> w{};
  index_t i = a.shape.rank() - 1;
  index_t j = b.shape.rank() - 1;
  index_t ea = a.shape[i], da = a.stride[i];
  index_t eb = b.shape[j], db = b.stride[j];
  index_t weight = 1;
  while (true) {
    index_t common = 0;
    if (ea % eb == 0) {
      common = eb;
    } else if (eb % ea == 0) {
      common = ea;
    } else {
      break;  // no common refinement further out
    }
    e.push_back(common);
    sa.push_back(da);
    sb.push_back(db);
    w.push_back(weight);
    weight *= common;
    ea /= common;
    da *= common;
    eb /= common;
    db *= common;
    if (ea == 1) {
      if (--i < 0) break;
      ea = a.shape[i];
      da = a.stride[i];
    }
    if (eb == 1) {
      if (--j < 0) break;
      eb = b.shape[j];
      db = b.stride[j];
    }
  }
  DynRankTuple<N> chain{};  // walked modes, inner to outer
  bool used[N == 0 ? 1 : N]{};
  index_t span = 1;
  for (bool found = true; found;) {
    found = false;
    for (index_t m = 0; m < e.rank() && !found; ++m) {
      if (used[m] || e[m] <= 1 || sa[m] != span || sb[m] != span) continue;
      used[m] = true;
      chain.push_back(m);
      span *= e[m];
      found = true;
    }
  }
  for (index_t k = chain.rank() - 1; k >= 0; --k) {
    shape.push_back(e[chain[k]]);
    stride.push_back(w[chain[k]]);
  }
  out.layout = coalesce_values(shape, stride);
  out.vector = span;
  return out;
}

template <class A, class B>
struct MaxCommonStatic {
  static constexpr auto value =
      max_common_values(leaf_values(A{}.shape()), leaf_values(A{}.stride()),
                        leaf_values(B{}.shape()), leaf_values(B{}.stride()));
  struct Shape {
    static constexpr auto value = MaxCommonStatic::value.layout.shape;
  };
  struct Stride {
    static constexpr auto value = MaxCommonStatic::value.layout.stride;
  };
};

}  // namespace detail

// The layout r from offsets to 1-D indices of l with l(r(k)) == k for 0 <= k < size(r): the
// longest run of offsets 0, 1, 2, ... that l reaches through modes whose strides chain (sorted by
// stride, each the product of the extents before it). Always exists; (1):(0) when l does not
// reach offset 1 with a stride-1 mode, (0):(1) for an empty l.
// @post composition(l, r)(k) == k and r(k) < size(l) for 0 <= k < size(r); r is coalesced
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto right_inverse(L const& l) {
  if constexpr (detail::is_static_layout_v<L>) {
    using Plan = detail::RightInverseStatic<L>;
    return Layout(detail::lift_flat<typename Plan::Shape>(),
                  detail::lift_flat<typename Plan::Stride>());
  } else {
    auto v = detail::right_inverse_values(leaf_values(l.shape()), leaf_values(l.stride()));
    return Layout(v.shape, v.stride);
  }
}

// The layout g from offsets to 1-D indices of an injective l with g(l(i)) == i for every
// 0 <= i < size(l): the right inverse of the concatenation (complement(l), l). Its domain,
// [0, size(g)), holds every offset l reaches. Throws tessel::Error (a static_assert for a static
// l) when l has no complement: when it is not injective or its strides do not nest.
// @post g(l(i)) == i for 0 <= i < size(l); cosize(l) <= size(g); g is coalesced
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto left_inverse(L const& l) {
  if constexpr (detail::is_static_layout_v<L>) {
    using Plan = detail::LeftInverseStatic<L>;
    static_assert(Plan::ok);
    return Layout(detail::lift_flat<typename Plan::Shape>(),
                  detail::lift_flat<typename Plan::Stride>());
  } else {
    auto v = detail::left_inverse_values(leaf_values(l.shape()), leaf_values(l.stride()));
#if !TESSEL_DEVICE_PASS
    if (v.complement.failure != detail::ComplementFailure::none)
      detail::throw_error(detail::complement_failure("left-invert", l, v.complement, 0));
#endif
    return Layout(v.layout.shape, v.layout.stride);
  }
}

// The layout m of the 1-D indices whose elements a and b both store at offsets 0, 1, 2, ...:
// a(m(k)) == k and b(m(k)) == k for 0 <= k < size(m), the longest such run that is a layout
// (built from modes that a and b share, their strides chaining from 1 in both). a and b are read
// over their common 1-D index space (their shapes may differ; their common row-major
// refinement, from the innermost mode, is compared). Never fails: no common run gives (1):(0),
// as does an empty layout (a width of 1 is always safe).
// @post for 0 <= k < size(m): a(m(k)) == k, b(m(k)) == k; m is coalesced
template <LayoutType A, LayoutType B>
TESSEL_HOST_DEVICE constexpr auto max_common_layout(A const& a, B const& b) {
  if constexpr (detail::is_static_layout_v<A> && detail::is_static_layout_v<B>) {
    using Plan = detail::MaxCommonStatic<A, B>;
    return Layout(detail::lift_flat<typename Plan::Shape>(),
                  detail::lift_flat<typename Plan::Stride>());
  } else {
    auto v = detail::max_common_values(leaf_values(a.shape()), leaf_values(a.stride()),
                                       leaf_values(b.shape()), leaf_values(b.stride()));
    return Layout(v.layout.shape, v.layout.stride);
  }
}

// size(max_common_layout(a, b)): how many consecutive elements a and b both store contiguously
// from offset 0, e.g. the widest vector a copy from b to a may move (>= 1). Static when a and b
// are.
template <LayoutType A, LayoutType B>
TESSEL_HOST_DEVICE constexpr auto max_common_vector(A const& a, B const& b) {
  if constexpr (detail::is_static_layout_v<A> && detail::is_static_layout_v<B>) {
    return Int<detail::MaxCommonStatic<A, B>::value.vector>{};
  } else {
    return detail::max_common_values(leaf_values(a.shape()), leaf_values(a.stride()),
                                     leaf_values(b.shape()), leaf_values(b.stride()))
        .vector;
  }
}

}  // namespace tessel
