// Lifting the result of value code into types. Plans are computed once, by ordinary constexpr
// functions over run-time integers; when their inputs were static, the answer is read back here
// as Int<...> types. That is how static and dynamic arguments get the same answer from the same
// code.
#pragma once

#include <cstddef>
#include <utility>

#include "int.hpp"
#include "tuple.hpp"

namespace tessel::detail {

// tuple<Int<v[0]>, ..., Int<v[n-1]>> where Values::value is a constexpr DynRankTuple (or any
// constexpr object with rank() and operator[]).
template <class Values>
constexpr auto lift_flat() {
  constexpr std::size_t n = static_cast<std::size_t>(Values::value.rank());
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return tuple<Int<Values::value[static_cast<index_t>(I)]>...>{};
  }
  (std::make_index_sequence<n>{});
}

// Values::value as a static integer.
template <auto V>
constexpr auto lift_int() {
  return Int<static_cast<index_t>(V)>{};
}

}  // namespace tessel::detail
