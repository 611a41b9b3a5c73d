// Layout = Shape : Stride. Maps natural (row-major) coordinates to linear offsets. Modes may be
// hierarchical; a 1-D index into a mode (a, b) means (i / b, i % b) — the last mode is fastest.
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "int_tuple.hpp"
#include "shape.hpp"

namespace tessel {

template <IntTuple S, IntTuple D>
struct Layout;

namespace detail {
template <class T>
struct is_layout : std::false_type {};
template <class S, class D>
struct is_layout<Layout<S, D>> : std::true_type {};
}  // namespace detail

// A tessel::Layout of any shape and stride.
template <class T>
concept LayoutType = detail::is_layout<std::remove_cvref_t<T>>::value;

// ---- coordinate → offset ----

template <class C, IntTuple S, IntTuple D>
TESSEL_HOST_DEVICE constexpr auto crd2idx(C const& c, S const& s, D const& d);

namespace detail {

// A 1-D index c into tuple mode s: the last sub-mode is fastest, the first takes the quotient
// (so an index past the end extends along the first sub-mode, as for a flat layout).
template <std::size_t I, class C, class S, class D>
TESSEL_HOST_DEVICE constexpr auto crd2idx_split(C const& c, S const& s, D const& d) {
  if constexpr (I == 0) {
    return crd2idx(c, get<0>(s), get<0>(d));
  } else {
    auto extent = size(get<I>(s));
    return crd2idx(c % extent, get<I>(s), get<I>(d)) + crd2idx_split<I - 1>(c / extent, s, d);
  }
}

}  // namespace detail

// Offset of coordinate c in the layout s:d. c is an integer (a 1-D row-major index into s) or a
// tuple congruent with s at the top level (each element again an integer or a tuple).
template <class C, IntTuple S, IntTuple D>
TESSEL_HOST_DEVICE constexpr auto crd2idx(C const& c, S const& s, D const& d) {
  if constexpr (Integer<C>) {
    if constexpr (Integer<S>) {
      return c * d;
    } else if constexpr (DynRank<S>) {
      index_t rest = to_index(c);
      index_t offset = 0;
      for (index_t k = s.rank() - 1; k > 0; --k) {
        offset += (rest % s[k]) * d[k];
        rest /= s[k];
      }
      if (s.rank() > 0) offset += rest * d[0];
      return offset;
    } else if constexpr (tuple_size_v<S> == 0) {
      return Int<0>{};
    } else {
      return detail::crd2idx_split<tuple_size_v<S> - 1>(c, s, d);
    }
  } else if constexpr (DynRank<C>) {
    static_assert(DynRank<S>, "tessel: a run-time-rank coordinate needs a run-time-rank shape.");
    index_t offset = 0;
    for (index_t k = 0; k < c.rank(); ++k) offset += c[k] * d[k];
    return offset;
  } else {
    static_assert(Tuple<C>, "tessel: a coordinate is an integer or a tuple of coordinates.");
    if constexpr (DynRank<S>) {
      index_t offset = 0;
      index_t k = 0;
      for_each(c, [&](auto const& ck) { offset += to_index(ck) * d[k++]; });
      return offset;
    } else {
      static_assert(!Integer<S>, "tessel: the coordinate has more modes than the shape.");
      static_assert(tuple_size_v<C> == tuple_size_v<S>,
                    "tessel: the coordinate's rank differs from the layout's rank.");
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (Int<0>{} + ... + crd2idx(get<I>(c), get<I>(s), get<I>(d)));
      }
      (std::make_index_sequence<tuple_size_v<S>>{});
    }
  }
}

// ---- the Layout type ----

// Shape S : Stride D, congruent. A fully static layout is an empty type.
template <IntTuple S, IntTuple D>
struct Layout : private tuple<S, D> {
  using shape_type = S;
  using stride_type = D;

  constexpr Layout() = default;
  TESSEL_HOST_DEVICE constexpr Layout(S const& s, D const& d) : tuple<S, D>(s, d) {}

  TESSEL_HOST_DEVICE constexpr decltype(auto) shape() const {
    return tessel::get<0>(static_cast<tuple<S, D> const&>(*this));
  }
  TESSEL_HOST_DEVICE constexpr decltype(auto) stride() const {
    return tessel::get<1>(static_cast<tuple<S, D> const&>(*this));
  }

  // layout(i, j, ...) with one coordinate per mode, or layout(i) with a 1-D row-major index.
  template <class... C>
  TESSEL_HOST_DEVICE constexpr auto operator()(C const&... c) const {
    if constexpr (sizeof...(C) == 1) {
      return crd2idx(c..., shape(), stride());
    } else {
      return crd2idx(make_tuple(c...), shape(), stride());
    }
  }
};

template <IntTuple S, IntTuple D>
Layout(S, D) -> Layout<S, D>;

namespace detail {

// (strides in the structure of s, multiplier after the whole of s), walking leaves from the last.
template <IntTuple S, class M>
TESSEL_HOST_DEVICE constexpr auto compact_row_major(S const& s, M m);

template <std::size_t I, class S, class M, class Acc>
TESSEL_HOST_DEVICE constexpr auto compact_row_major_from(S const& s, M m, Acc const& acc) {
  auto r = compact_row_major(get<I>(s), m);
  auto strides = prepend(acc, get<0>(r));
  if constexpr (I == 0) {
    return make_tuple(strides, get<1>(r));
  } else {
    return compact_row_major_from<I - 1>(s, get<1>(r), strides);
  }
}

template <IntTuple S, class M>
TESSEL_HOST_DEVICE constexpr auto compact_row_major(S const& s, M m) {
  if constexpr (Integer<S>) {
    return make_tuple(m, m * s);
  } else if constexpr (DynRank<S>) {
    DynRankTuple<S::max_rank> d{};
    d.count = s.rank();
    index_t cur = to_index(m);
    for (index_t k = s.rank() - 1; k >= 0; --k) {
      d[k] = cur;
      cur *= s[k];
    }
    return make_tuple(d, cur);
  } else if constexpr (tuple_size_v<S> == 0) {
    return make_tuple(tuple<>{}, m);
  } else {
    return compact_row_major_from<tuple_size_v<S> - 1>(s, m, tuple<>{});
  }
}

}  // namespace detail

// Row-major compact strides for s: the last leaf has stride 1.
template <IntTuple S>
TESSEL_HOST_DEVICE constexpr auto compact_row_major_strides(S const& s) {
  return get<0>(detail::compact_row_major(s, Int<1>{}));
}

// Layout with explicit strides. Shape and stride must be congruent; extents and strides >= 0.
template <IntTuple S, IntTuple D>
TESSEL_HOST_DEVICE constexpr auto make_layout(S const& s, D const& d) {
  if constexpr (DynRank<S> || DynRank<D>) {
    static_assert(DynRank<S> && DynRank<D>,
                  "tessel: a run-time-rank shape needs a run-time-rank stride.");
#if !TESSEL_DEVICE_PASS
    if (s.rank() != d.rank())
      detail::throw_error(detail::sentence("shape ", detail::shape_text(s), " has rank ", s.rank(),
                                           " but stride ", detail::shape_text(d), " has rank ",
                                           d.rank(), "."));
#endif
  } else {
    static_assert(congruent(S{}, D{}),
                  "tessel: shape and stride are not congruent (different nesting or rank).");
  }
  auto sn = detail::normalize_int_tuple(s);
  auto dn = detail::normalize_int_tuple(d);
  check_extents(sn);
  check_strides(dn);
  return Layout<decltype(sn), decltype(dn)>(sn, dn);
}

// Compact row-major layout of s (the last mode is fastest).
template <IntTuple S>
TESSEL_HOST_DEVICE constexpr auto make_layout(S const& s) {
  return make_layout(s, compact_row_major_strides(detail::normalize_int_tuple(s)));
}

// A layout is its own layout (lets generic code accept layouts and tensors alike).
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto make_layout(L const& l) {
  return l;
}

namespace detail {
// A layout as every error sentence writes it: "(4,3):(0,1)", shape_text's numbers (to_string
// marks static ones, "(4,3):(_0,1)", for printing).
template <LayoutType L>
std::string layout_text(L const& l) {
  return shape_text(l.shape()) + ":" + shape_text(l.stride());
}

// Every extent and stride of the layout is an Int<N>: the algebra answers with a type.
template <LayoutType L>
constexpr bool is_static_layout_v = is_static_v<typename std::remove_cvref_t<L>::shape_type>&&
    is_static_v<typename std::remove_cvref_t<L>::stride_type>;

}  // namespace detail

// ---- queries ----

template <LayoutType L>
TESSEL_HOST_DEVICE constexpr decltype(auto) shape(L const& l) {
  return l.shape();
}
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr decltype(auto) stride(L const& l) {
  return l.stride();
}
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto rank(L const& l) {
  return rank(l.shape());
}
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto depth(L const& l) {
  return depth(l.shape());
}
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto size(L const& l) {
  return size(l.shape());
}

// Mode I as a layout of its own.
template <std::size_t I, LayoutType L>
TESSEL_HOST_DEVICE constexpr auto get(L const& l) {
  return Layout(get<I>(l.shape()), get<I>(l.stride()));
}

namespace detail {

// 1 + sum of (extent - 1) * stride over leaves, from static leaves only.
template <class S, class D>
TESSEL_HOST_DEVICE constexpr auto static_span(S const& s, D const& d) {
  if constexpr (Integer<S>) {
    return (s - Int<1>{}) * d;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (Int<0>{} + ... + static_span(get<I>(s), get<I>(d)));
    }
    (std::make_index_sequence<tuple_size_v<S>>{});
  }
}

}  // namespace detail

// 1 + the largest offset the layout reaches (0 for an empty layout). Static for a static layout;
// a run-time overflow throws tessel::Error on the host.
// @post every offset layout(i), 0 <= i < size(layout), is < cosize(layout)
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto cosize(L const& l) {
  using S = std::remove_cvref_t<decltype(l.shape())>;
  using D = std::remove_cvref_t<decltype(l.stride())>;
  if constexpr (is_static_v<S> && is_static_v<D>) {
    if constexpr (decltype(size(S{}))::value == 0) {
      return Int<0>{};
    } else {
      return decltype(Int<1>{} + detail::static_span(S{}, D{})){};
    }
  } else {
    auto sv = leaf_values(l.shape());
    auto dv = leaf_values(l.stride());
    bool overflow = false;
    index_t span = 0;
    bool empty = false;
    for (index_t k = 0; k < sv.rank(); ++k) {
      if (sv[k] == 0) empty = true;
      index_t term = 0;
      if (sv[k] > 0 && detail::mul_overflow(sv[k] - 1, dv[k], term)) overflow = true;
      if (detail::add_overflow(span, term, span)) overflow = true;
    }
    if (empty) return index_t{0};
#if !TESSEL_DEVICE_PASS
    if (overflow || span == __INT64_MAX__)
      detail::throw_error(detail::sentence("the cosize of layout ", detail::shape_text(l.shape()),
                                           ":", detail::shape_text(l.stride()),
                                           " overflows int64."));
#endif
    return span + 1;
  }
}

// Two layouts are equal when their shapes and strides are equal by value.
template <LayoutType A, LayoutType B>
TESSEL_HOST_DEVICE constexpr bool operator==(A const& a, B const& b) {
  return equal(a.shape(), b.shape()) && equal(a.stride(), b.stride());
}

}  // namespace tessel
