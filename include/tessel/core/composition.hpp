// composition(a, b): the layout c with c(x) == a(b(x)), where b's offsets are read as 1-D row-major
// indices into a. With b a compact layout of a new shape this is reshape: a view of the same
// elements with another shape, which exists exactly when the strides allow it. Each leaf of b
// becomes a (possibly hierarchical) mode of the result, so reshaping a strided view stays a view.
#pragma once

#include "coalesce.hpp"
#include "layout.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

// The modes one leaf of b turns into, outer to inner.
template <std::size_t N>
struct ComposedMode {
  DynRankTuple<N> shape;
  DynRankTuple<N> stride;
};

// The per-leaf results of composing a with every leaf of b, or the first failure.
template <std::size_t N, std::size_t LB>
struct ComposedLeaves {
  ComposedMode<N> modes[LB == 0 ? 1 : LB]{};
  index_t count = 0;
  bool ok = true;
  index_t failed_leaf = -1;  // which leaf of b could not be expressed
};

// Composes the flat, coalesced a (outer to inner) with the single mode s:d of b.
// Returns false when the result is not a layout (the strides do not line up).
template <std::size_t NA, std::size_t N>
TESSEL_HOST_DEVICE constexpr bool compose_leaf(DynRankTuple<NA> const& as,
                                               DynRankTuple<NA> const& ad, index_t s, index_t d,
                                               ComposedMode<N>& out) {
  out = ComposedMode<N>{};
  if (s == 1 || d == 0) {
    out.shape.push_back(s);
    out.stride.push_back(0);
    return true;
  }
  // Copy a so its innermost modes can be divided by d.
  DynRankTuple<NA> es = as;
  DynRankTuple<NA> ed = ad;
  index_t k = es.rank() - 1;
  index_t rest = d;
  bool outer_unbounded = false;
  constexpr index_t capacity = static_cast<index_t>(NA);
  while (rest > 1) {
    if (k < 0 || k >= capacity) return false;  // never true (a is coalesced, rank >= 1)
    if (k == 0) {
      // Past every inner mode: the outermost mode extends, as a 1-D index past the end does.
      ed[0] *= rest;
      outer_unbounded = true;
      rest = 1;
    } else if (rest % es[k] == 0) {
      rest /= es[k];
      --k;
    } else if (es[k] % rest == 0) {
      es[k] /= rest;
      ed[k] *= rest;
      rest = 1;
    } else {
      return false;
    }
  }
  // Take s consecutive 1-D indices of modes 0..k, innermost first.
  index_t inner_shape[N == 0 ? 1 : N]{};
  index_t inner_stride[N == 0 ? 1 : N]{};
  index_t taken = 0;
  rest = s;
  for (index_t j = k; j >= 0 && j < capacity && rest > 1; --j) {
    bool unbounded = (j == 0);  // the outermost mode may extend past its extent
    (void)outer_unbounded;
    if (unbounded || rest <= es[j]) {
      inner_shape[taken] = rest;
      inner_stride[taken] = ed[j];
      ++taken;
      rest = 1;
    } else if (rest % es[j] == 0) {
      inner_shape[taken] = es[j];
      inner_stride[taken] = ed[j];
      ++taken;
      rest /= es[j];
    } else {
      return false;
    }
  }
  if (taken == 0) {  // s == 0 or every index lands on offset 0
    out.shape.push_back(s);
    out.stride.push_back(0);
    return true;
  }
  for (index_t t = taken - 1; t >= 0; --t) {
    out.shape.push_back(inner_shape[t]);
    out.stride.push_back(inner_stride[t]);
  }
  return true;
}

template <std::size_t NA, std::size_t NB>
TESSEL_HOST_DEVICE constexpr auto compose_values(DynRankTuple<NA> const& as,
                                                 DynRankTuple<NA> const& ad,
                                                 DynRankTuple<NB> const& bs,
                                                 DynRankTuple<NB> const& bd) {
  auto a = coalesce_values(as, ad);
  constexpr std::size_t N = (NA > 0 ? NA : 1) + 1;
  ComposedLeaves<N, NB> out{};
  bool a_is_empty = false;
  for (index_t k = 0; k < as.rank(); ++k) a_is_empty = a_is_empty || as[k] == 0;
  for (index_t i = 0; i < bs.rank(); ++i) {
    if (a_is_empty) {  // no element to address: every mode is a plain extent of stride 0
      out.modes[i] = ComposedMode<N>{};
      out.modes[i].shape.push_back(bs[i]);
      out.modes[i].stride.push_back(0);
      ++out.count;
      continue;
    }
    if (!compose_leaf(a.shape, a.stride, bs[i], bd[i], out.modes[i])) {
      out.ok = false;
      out.failed_leaf = i;
      return out;
    }
    ++out.count;
  }
  // Composing leaf by leaf is exact only when a is additive over the sums b forms: true when a is
  // one linear mode, or when b's leaves use disjoint index ranges (sorted by stride, each leaf
  // ends before the next begins), since each leaf's stride then lies on a digit boundary of a.
  if (a.shape.rank() > 1 && !a_is_empty) {
    for (index_t i = 0; i < bs.rank(); ++i) {
      if (bs[i] <= 1 || bd[i] == 0) continue;
      for (index_t j = 0; j < bs.rank(); ++j) {
        if (j == i || bs[j] <= 1 || bd[j] == 0) continue;
        // Leaf i must end at or below leaf j's start when its stride is smaller (ties: by order).
        bool i_below = bd[i] < bd[j] || (bd[i] == bd[j] && i > j);
        index_t end_i = 0;
        if (i_below && (mul_overflow(bd[i], bs[i], end_i) || end_i > bd[j])) {
          out.ok = false;
          out.failed_leaf = i;
          return out;
        }
      }
    }
  }
  return out;
}

template <class A, class B>
struct ComposeStatic {
  static constexpr auto value = compose_values(leaf_values(A{}.shape()), leaf_values(A{}.stride()),
                                               leaf_values(B{}.shape()), leaf_values(B{}.stride()));
  template <std::size_t Leaf>
  struct Shape {
    static constexpr auto value = ComposeStatic::value.modes[Leaf].shape;
  };
  template <std::size_t Leaf>
  struct Stride {
    static constexpr auto value = ComposeStatic::value.modes[Leaf].stride;
  };
};

// Number of leaves before element I of tuple type T.
template <class T, std::size_t I>
constexpr std::size_t leaf_offset() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    return (std::size_t{0} + ... + max_leaves_v<std::tuple_element_t<J, T>>);
  }
  (std::make_index_sequence<I>{});
}

template <class Plan, std::size_t Leaf>
constexpr auto static_composed_mode_shape() {
  auto s = lift_flat<typename Plan::template Shape<Leaf>>();
  if constexpr (tuple_size_v<decltype(s)> == 1) {
    return get<0>(s);
  } else {
    return s;
  }
}
template <class Plan, std::size_t Leaf>
constexpr auto static_composed_mode_stride() {
  auto s = lift_flat<typename Plan::template Stride<Leaf>>();
  if constexpr (tuple_size_v<decltype(s)> == 1) {
    return get<0>(s);
  } else {
    return s;
  }
}

// Rebuilds b's tree with each leaf replaced by its composed mode (a single integer, or a tuple when
// the leaf became several modes). Leaves are numbered in row-major order from First.
template <class Plan, std::size_t First, bool WantShape, class T>
constexpr auto static_composed(T const& t) {
  if constexpr (Integer<T>) {
    if constexpr (WantShape) {
      return static_composed_mode_shape<Plan, First>();
    } else {
      return static_composed_mode_stride<Plan, First>();
    }
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple(
          static_composed<Plan, First + leaf_offset<T, I>(), WantShape>(get<I>(t))...);
    }
    (std::make_index_sequence<tuple_size_v<T>>{});
  }
}

// Same for run-time results: every leaf becomes a DynRankTuple mode.
template <std::size_t N, std::size_t LB, class T>
TESSEL_HOST_DEVICE constexpr auto dynamic_composed(ComposedLeaves<N, LB> const& r, T const& t,
                                                   std::size_t first, bool want_shape) {
  if constexpr (Integer<T>) {
    (void)t;
    return want_shape ? r.modes[first].shape : r.modes[first].stride;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple(dynamic_composed(r, get<I>(t), first + leaf_offset<T, I>(), want_shape)...);
    }
    (std::make_index_sequence<tuple_size_v<T>>{});
  }
}

// The modes of b's leaves [first, last), outer to inner, leaf after leaf, as one flat layout
// (the divides and products cut a composition into such groups).
template <std::size_t N, std::size_t LB>
TESSEL_HOST_DEVICE constexpr FlatLayoutValues<N*(LB == 0 ? 1 : LB)> composed_modes(
    ComposedLeaves<N, LB> const& r, index_t first, index_t last) {
  FlatLayoutValues<N*(LB == 0 ? 1 : LB)> out{};
  for (index_t i = first; i < last; ++i) {
    for (index_t k = 0; k < r.modes[i].shape.rank(); ++k) {
      out.shape.push_back(r.modes[i].shape[k]);
      out.stride.push_back(r.modes[i].stride[k]);
    }
  }
  return out;
}

// The same as one flat layout: every leaf's modes, outer to inner, leaf after leaf.
template <std::size_t N, std::size_t LB>
TESSEL_HOST_DEVICE constexpr auto flat_composed(ComposedLeaves<N, LB> const& r) {
  auto v = composed_modes(r, 0, r.count);
  return Layout(v.shape, v.stride);
}

template <LayoutType A, LayoutType B>
std::string composition_failure(A const& a, B const& b, index_t leaf) {
  auto bs = leaf_values(b.shape());
  auto bd = leaf_values(b.stride());
  return sentence("layout ", detail::shape_text(a.shape()), ":", detail::shape_text(a.stride()),
                  " cannot be composed with ", detail::shape_text(b.shape()), ":",
                  detail::shape_text(b.stride()), ": mode ", leaf, " (extent ", bs[leaf],
                  ", stride ", bd[leaf], ") does not line up with its extents.");
}

template <IntTuple S>
TESSEL_HOST_DEVICE constexpr auto as_tuple(S const& s) {
  if constexpr (Integer<S>) {
    return make_tuple(s);
  } else {
    return s;
  }
}

template <LayoutType B>
TESSEL_HOST_DEVICE constexpr auto rank1_as_tuple(B const& b) {
  return Layout(as_tuple(b.shape()), as_tuple(b.stride()));
}

}  // namespace detail

// c(x) == a(b(x)) for every coordinate x of b; c has b's shape tree. b may be a layout or a shape
// (read as its compact row-major layout); a run-time-rank b (a DynRankTuple layout, as coalesce,
// complement or right_inverse of run-time layouts return) gives a flat run-time-rank c, the
// same 1-D mapping without the tree. Throws tessel::Error (static_assert when both are
// static) when no layout has that mapping.
// @post size(c) == size(b); c(i) == a(b(i)) for 0 <= i < size(b)
template <LayoutType A, class BArg>
TESSEL_HOST_DEVICE constexpr auto composition(A const& a, BArg const& b_arg) {
  auto b = detail::rank1_as_tuple(make_layout(b_arg));
  using B = decltype(b);
  static_assert(DynRank<decltype(b.shape())> ||
                    !detail::has_dyn_rank<std::remove_cvref_t<decltype(b.shape())>>::value,
                "tessel: composition needs b's rank to be known at compile time, or b to be a "
                "flat run-time-rank layout.");
  using AS = std::remove_cvref_t<decltype(a.shape())>;
  using AD = std::remove_cvref_t<decltype(a.stride())>;
  using BS = std::remove_cvref_t<decltype(b.shape())>;
  using BD = std::remove_cvref_t<decltype(b.stride())>;
  if constexpr (is_static_v<AS> && is_static_v<AD> && is_static_v<BS> && is_static_v<BD>) {
    using Plan = detail::ComposeStatic<A, B>;
    static_assert(Plan::value.ok,
                  "tessel: these static layouts cannot be composed: a mode of b does not line up "
                  "with the extents and strides of a (see the mode in ComposeStatic<...>).");
    return Layout(detail::static_composed<Plan, 0, true>(BS{}),
                  detail::static_composed<Plan, 0, false>(BS{}));
  } else {
    auto r = detail::compose_values(leaf_values(a.shape()), leaf_values(a.stride()),
                                    leaf_values(b.shape()), leaf_values(b.stride()));
#if !TESSEL_DEVICE_PASS
    if (!r.ok) detail::throw_error(detail::composition_failure(a, b, r.failed_leaf));
#endif
    if constexpr (DynRank<BS>) {
      // A run-time-rank b (what the value-dependent algebra returns) has no tree to keep: the
      // result is flat, the modes of b's leaves in order.
      return detail::flat_composed(r);
    } else {
      return Layout(detail::dynamic_composed(r, b.shape(), 0, true),
                    detail::dynamic_composed(r, b.shape(), 0, false));
    }
  }
}

namespace detail {

// Every leaf of b became exactly one mode: the composition is a layout with b's shape tree.
template <std::size_t N, std::size_t LB>
TESSEL_HOST_DEVICE constexpr bool all_single_modes(ComposedLeaves<N, LB> const& r) {
  for (index_t i = 0; i < r.count; ++i)
    if (r.modes[i].shape.rank() != 1) return false;
  return r.ok;
}

template <class Plan, std::size_t First, bool WantShape, class T>
constexpr auto static_single_modes(T const& t) {
  if constexpr (Integer<T>) {
    if constexpr (WantShape) {
      return Int<Plan::value.modes[First].shape[0]>{};
    } else {
      return Int<Plan::value.modes[First].stride[0]>{};
    }
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple(
          static_single_modes<Plan, First + leaf_offset<T, I>(), WantShape>(get<I>(t))...);
    }
    (std::make_index_sequence<tuple_size_v<T>>{});
  }
}

template <std::size_t N, std::size_t LB, class T>
TESSEL_HOST_DEVICE constexpr auto dynamic_single_modes(ComposedLeaves<N, LB> const& r, T const& t,
                                                       std::size_t first, bool want_shape) {
  if constexpr (Integer<T>) {
    (void)t;
    return want_shape ? r.modes[first].shape[0] : r.modes[first].stride[0];
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple(
          dynamic_single_modes(r, get<I>(t), first + leaf_offset<T, I>(), want_shape)...);
    }
    (std::make_index_sequence<tuple_size_v<T>>{});
  }
}

}  // namespace detail

// The same elements seen with a new shape, in row-major order: a view, as torch.view gives one.
// The result has new_shape's tree with one stride per extent. Throws tessel::Error naming both
// shapes (a static_assert when everything is static) when the sizes differ or when the strides
// would need a copy or a hierarchical mode (composition() gives the latter).
// @post shape(result) == new_shape; result(i) == l(i) for every 1-D index i
template <LayoutType L, IntTuple S>
TESSEL_HOST_DEVICE constexpr auto reshape(L const& l, S const& new_shape) {
  static_assert(!detail::has_dyn_rank<S>::value,
                "tessel: reshape needs a new shape whose rank is known at compile time.");
  using LS = std::remove_cvref_t<decltype(l.shape())>;
  using LD = std::remove_cvref_t<decltype(l.stride())>;
  auto target = detail::normalize_int_tuple(new_shape);
  auto b = make_layout(target);
  using B = decltype(b);
  if constexpr (is_static_v<LS> && is_static_v<LD> && is_static_v<S>) {
    static_assert(decltype(size(LS{}))::value == decltype(size(S{}))::value,
                  "tessel: reshape to a shape with a different number of elements.");
    using Plan = detail::ComposeStatic<L, B>;
    static_assert(detail::all_single_modes(Plan::value),
                  "tessel: this static layout cannot be reshaped to that shape without a copy; "
                  "its strides do not allow the grouping.");
    return Layout(detail::static_single_modes<Plan, 0, true>(target),
                  detail::static_single_modes<Plan, 0, false>(target));
  } else {
#if !TESSEL_DEVICE_PASS
    if (to_index(size(l)) != to_index(size(target)))
      detail::throw_error(detail::sentence("cannot reshape shape ", detail::shape_text(l.shape()),
                                           " (", to_index(size(l)), " elements) to shape ",
                                           detail::shape_text(target), " (", to_index(size(target)),
                                           " elements)."));
#endif
    auto r = detail::compose_values(leaf_values(l.shape()), leaf_values(l.stride()),
                                    leaf_values(b.shape()), leaf_values(b.stride()));
#if !TESSEL_DEVICE_PASS
    if (!detail::all_single_modes(r))
      detail::throw_error(
          detail::sentence("cannot reshape layout ", detail::shape_text(l.shape()), ":",
                           detail::shape_text(l.stride()), " to shape ", detail::shape_text(target),
                           " without a copy: its strides do not allow that grouping."));
#endif
    return Layout(detail::dynamic_single_modes(r, target, 0, true),
                  detail::dynamic_single_modes(r, target, 0, false));
  }
}

}  // namespace tessel
