// Boost.Hana sees tessel::tuple as a Sequence, so every Hana algorithm (transform, fold_left,
// filter, ...) works on shapes and strides in host code:
//   boost::hana::transform(make_shape(Int<2>{}, 3), f)
// tessel's own algorithms do not go through Hana: its global function objects are not usable in
// device code, and a lean tuple compiles several times faster (docs/design.md has the figures).
#pragma once

#include <boost/hana/fwd/at.hpp>
#include <boost/hana/fwd/concept/sequence.hpp>
#include <boost/hana/fwd/core/make.hpp>
#include <boost/hana/fwd/core/tag_of.hpp>
#include <boost/hana/fwd/drop_front.hpp>
#include <boost/hana/fwd/is_empty.hpp>
#include <boost/hana/fwd/length.hpp>
#include <boost/hana/fwd/unpack.hpp>
#include <boost/hana/integral_constant.hpp>

#include "tuple.hpp"

namespace tessel::detail {
struct hana_tuple_tag {};
}  // namespace tessel::detail

namespace boost::hana {

template <class... Ts>
struct tag_of<tessel::tuple<Ts...>> {
  using type = tessel::detail::hana_tuple_tag;
};

template <>
struct at_impl<tessel::detail::hana_tuple_tag> {
  template <class Xs, class N>
  static constexpr decltype(auto) apply(Xs&& xs, N const&) {
    return tessel::get<N::value>(static_cast<Xs&&>(xs));
  }
};

template <>
struct length_impl<tessel::detail::hana_tuple_tag> {
  template <class... Ts>
  static constexpr auto apply(tessel::tuple<Ts...> const&) {
    return hana::size_c<sizeof...(Ts)>;
  }
};

template <>
struct drop_front_impl<tessel::detail::hana_tuple_tag> {
  template <std::size_t N, class Xs, std::size_t... I>
  static constexpr auto drop_helper(Xs const& xs, std::index_sequence<I...>) {
    return tessel::make_tuple(tessel::get<I + N>(xs)...);
  }
  template <class Xs, class N>
  static constexpr auto apply(Xs const& xs, N const&) {
    constexpr std::size_t len = tessel::tuple_size_v<Xs>;
    constexpr std::size_t n = N::value < len ? N::value : len;
    return drop_helper<n>(xs, std::make_index_sequence<len - n>{});
  }
};

template <>
struct is_empty_impl<tessel::detail::hana_tuple_tag> {
  template <class... Ts>
  static constexpr auto apply(tessel::tuple<Ts...> const&) {
    return hana::bool_c<sizeof...(Ts) == 0>;
  }
};

template <>
struct unpack_impl<tessel::detail::hana_tuple_tag> {
  template <class Xs, class F>
  static constexpr decltype(auto) apply(Xs&& xs, F&& f) {
    return tessel::apply(xs, static_cast<F&&>(f));
  }
};

template <>
struct make_impl<tessel::detail::hana_tuple_tag> {
  template <class... Xs>
  static constexpr auto apply(Xs&&... xs) {
    return tessel::tuple<std::decay_t<Xs>...>(static_cast<Xs&&>(xs)...);
  }
};

template <>
struct Sequence<tessel::detail::hana_tuple_tag> {
  static constexpr bool value = true;
};

}  // namespace boost::hana
