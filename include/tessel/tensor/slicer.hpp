// Slicers for Tensor::operator(): `_` keeps a whole mode, `range(b, e)` keeps [b, e) of a flat
// mode, an integer drops the mode (fixing its coordinate).
#pragma once

#include <type_traits>

#include "../core/int.hpp"

namespace tessel {

struct Underscore {};
// Keeps a whole mode: t(_, 3) is column 3 of a matrix.
inline constexpr Underscore _{};

// Keeps [begin, end) of a mode. Static bounds give a static extent.
template <Integer B, Integer E>
struct Range {
  B begin;
  E end;
};

template <Integer B, Integer E>
TESSEL_HOST_DEVICE constexpr Range<B, E> range(B begin, E end) {
  return {begin, end};
}

namespace detail {
template <class T>
struct is_range : std::false_type {};
template <class B, class E>
struct is_range<Range<B, E>> : std::true_type {};
}  // namespace detail

// `_` or a Range: a coordinate that keeps its mode.
template <class T>
concept Slicer = std::same_as<std::remove_cvref_t<T>, Underscore> ||
    detail::is_range<std::remove_cvref_t<T>>::value;

}  // namespace tessel
