// cuda::std::mdspan (CCCL) <-> tessel tensor views, both ways without copying:
//   to_mdspan(t)        any flat tensor as an mdspan with layout_stride
//   to_mdspan_right(t)  a compact row-major tensor as an mdspan with layout_right
//   make_tensor(m)      an mdspan (layout_right, layout_left, layout_stride) as a tensor view
// Static extents stay static in both directions: an Int<4> mode is extents<..., 4>, and back.
// Available when <cuda/std/mdspan> is on the include path (the CUDA toolkit's include/cccl);
// otherwise this header declares nothing.
#pragma once

#if __has_include(<cuda/std/mdspan>)

#include <cuda/std/mdspan>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../core/print.hpp"
#include "../tensor/tensor.hpp"

#define TESSEL_HAS_MDSPAN 1

namespace tessel {

namespace detail {

template <class E>
constexpr std::size_t mdspan_extent_v = static_cast<std::size_t>(::cuda::std::dynamic_extent);
template <index_t N>
constexpr std::size_t mdspan_extent_v<Int<N>> = static_cast<std::size_t>(N);

template <class S>
constexpr auto flat_modes(S const& s) {
  if constexpr (Integer<S>) {
    return make_tuple(s);
  } else {
    return s;
  }
}

// The cuda::std::extents of a flat shape type: static extents for Int<N> modes.
template <class S>
struct MdspanExtents;
template <class... Es>
struct MdspanExtents<tuple<Es...>> {
  using type = ::cuda::std::extents<index_t, mdspan_extent_v<Es>...>;
};

template <TensorType T>
using mdspan_extents_t = typename MdspanExtents<
    std::remove_cvref_t<decltype(flat_modes(std::declval<T const&>().shape()))>>::type;

template <TensorType T>
void check_mdspan_source(T const&) {
  using S = std::remove_cvref_t<decltype(std::declval<T const&>().shape())>;
  static_assert(FlatIntTuple<S> && !DynRank<S>,
                "tessel: an mdspan needs a tensor with flat modes and a rank known at compile "
                "time (flatten(t) first).");
  static_assert(std::is_same_v<typename std::remove_cvref_t<T>::space, HostSpace> ||
                    std::is_same_v<typename std::remove_cvref_t<T>::space, DeviceSpace>,
                "tessel: unknown memory space.");
}

}  // namespace detail

// A tensor with flat modes as an mdspan with layout_stride over the same memory. Throws
// tessel::Error for layouts an mdspan cannot describe: two elements at one address (a broadcast,
// stride-0 mode of extent > 1, or overlapping strides).
template <TensorType T>
auto to_mdspan(T const& t) {
  detail::check_mdspan_source(t);
  using Ext = detail::mdspan_extents_t<T>;
  using Mapping = ::cuda::std::layout_stride::mapping<Ext>;
  constexpr std::size_t R = Ext::rank();
  auto const shape = detail::flat_modes(t.shape());
  auto const stride = detail::flat_modes(t.stride());
  ::cuda::std::array<index_t, R> extents{};
  ::cuda::std::array<index_t, R> strides{};
  std::size_t k = 0;
  for_each_leaf(shape, [&](auto e) { extents[k++] = to_index(e); });
  k = 0;
  for_each_leaf(stride, [&](auto d) { strides[k++] = to_index(d); });
  // layout_stride requires a unique mapping: ordered by stride, each mode of extent > 1 must
  // step past everything the smaller-stride modes reach.
  bool ok = true;
  for (std::size_t a = 0; a < R && ok; ++a) {
    if (extents[a] <= 1) continue;
    index_t reach = 0;
    for (std::size_t b = 0; b != R; ++b)
      if (b != a && extents[b] > 1 &&
          (strides[b] < strides[a] || (strides[b] == strides[a] && b > a)))
        reach += (extents[b] - 1) * strides[b];
    ok = strides[a] > reach;
  }
  if (!ok)
    detail::throw_error(detail::sentence("a tensor with layout ",
                                         tessel::detail::layout_text(t.layout()),
                                         " maps several coordinates to one element, which an "
                                         "mdspan with layout_stride cannot describe."));
  return ::cuda::std::mdspan<typename T::element_type, Ext, ::cuda::std::layout_stride>(
      t.data(), Mapping(Ext(extents), strides));
}

// A compact row-major tensor as an mdspan with layout_right; tessel::Error for any other layout.
template <TensorType T>
auto to_mdspan_right(T const& t) {
  detail::check_mdspan_source(t);
  using Ext = detail::mdspan_extents_t<T>;
  auto const shape = detail::flat_modes(t.shape());
  auto const compact = make_layout(shape);
  bool ok = true;
  auto const sv = leaf_values(shape);
  auto const have = leaf_values(detail::flat_modes(t.stride()));
  auto const want = leaf_values(compact.stride());
  for (index_t k = 0; k < sv.rank(); ++k) ok = ok && (sv[k] <= 1 || have[k] == want[k]);
  if (!ok)
    detail::throw_error(
        detail::sentence("an mdspan with layout_right needs a compact row-major "
                         "tensor, not one with layout ",
                         tessel::detail::layout_text(t.layout()), "."));
  ::cuda::std::array<index_t, Ext::rank()> extents{};
  std::size_t k = 0;
  for_each_leaf(shape, [&](auto e) { extents[k++] = to_index(e); });
  return ::cuda::std::mdspan<typename T::element_type, Ext, ::cuda::std::layout_right>(
      t.data(), Ext(extents));
}

namespace detail {
template <class E, std::size_t R>
auto mdspan_extent(E const& e) {
  if constexpr (E::static_extent(R) != ::cuda::std::dynamic_extent) {
    return Int<static_cast<index_t>(E::static_extent(R))>{};
  } else {
    return static_cast<index_t>(e.extent(R));
  }
}
}  // namespace detail

// A host tensor view of an mdspan's elements (write-through). Static extents become Int<N>;
// layout_right gives compact row-major strides, any other strided mapping its strides.
template <class T, class Extents, class LayoutPolicy, class Accessor>
auto make_tensor(::cuda::std::mdspan<T, Extents, LayoutPolicy, Accessor> const& m) {
  static_assert(std::is_same_v<Accessor, ::cuda::std::default_accessor<T>>,
                "tessel: only mdspans with the default accessor can be viewed as tensors.");
  constexpr std::size_t R = Extents::rank();
  auto const shape = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_shape(detail::mdspan_extent<Extents, I>(m.extents())...);
  }
  (std::make_index_sequence<R>{});
  if constexpr (std::is_same_v<LayoutPolicy, ::cuda::std::layout_right>) {
    return make_tensor(m.data_handle(), make_layout(shape));
  } else {
    static_assert(LayoutPolicy::template mapping<Extents>::is_always_strided(),
                  "tessel: the mdspan's layout mapping is not strided.");
    auto const stride = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_stride(static_cast<index_t>(m.stride(I))...);
    }
    (std::make_index_sequence<R>{});
    return make_tensor(m.data_handle(), make_layout(shape, stride));
  }
}

}  // namespace tessel

#endif  // __has_include(<cuda/std/mdspan>)
