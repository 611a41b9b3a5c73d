// Text for integers, tuples and layouts: "(_2,4):(4,_1)" — static integers carry a leading
// underscore — and print_layout, a table of the offsets of a rank-1 or rank-2 layout.
#pragma once

#include <algorithm>
#include <ostream>
#include <string>

#include "int_tuple.hpp"
#include "layout.hpp"

namespace tessel {

template <LayoutType L>
std::string to_string(L const& l) {
  return to_string(l.shape()) + ":" + to_string(l.stride());
}

template <index_t N>
std::ostream& operator<<(std::ostream& os, Int<N>) {
  return os << '_' << N;
}
template <class... Ts>
requires IntTuple<tuple<Ts...>> std::ostream& operator<<(std::ostream& os, tuple<Ts...> const& t) {
  return os << to_string(t);
}
template <std::size_t M>
std::ostream& operator<<(std::ostream& os, DynRankTuple<M> const& t) {
  return os << to_string(t);
}
template <IntTuple S, IntTuple D>
std::ostream& operator<<(std::ostream& os, Layout<S, D> const& l) {
  return os << to_string(l);
}

// The layout's text, then a grid of its offsets: rows are the 1-D indices of mode 0, columns
// those of mode 1 (a rank-1 layout is one row).
template <LayoutType L>
void print_layout(std::ostream& os, L const& l) {
  static_assert(!DynRank<decltype(l.shape())>,
                "tessel: print_layout needs a layout whose rank is known at compile time.");
  constexpr index_t r = decltype(rank(l))::value;
  static_assert(r == 1 || r == 2, "tessel: print_layout prints rank-1 and rank-2 layouts.");
  index_t rows = 1;
  index_t cols = 0;
  auto offset = [&](index_t i, index_t j) -> index_t {
    if constexpr (r == 1) {
      (void)i;
      return to_index(l(j));
    } else {
      return to_index(l(i, j));
    }
  };
  if constexpr (r == 1) {
    cols = to_index(size(l));
  } else {
    rows = to_index(size(get<0>(l.shape())));
    cols = to_index(size(get<1>(l.shape())));
  }
  index_t widest = 1;
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      widest = std::max<index_t>(widest, static_cast<index_t>(std::to_string(offset(i, j)).size()));
  auto pad = [&](std::string s, index_t width) {
    return std::string(static_cast<std::size_t>(
                           std::max<index_t>(0, width - static_cast<index_t>(s.size()))),
                       ' ') +
           s;
  };
  index_t label = static_cast<index_t>(std::to_string(std::max<index_t>(rows - 1, 0)).size());
  std::string rule = std::string(static_cast<std::size_t>(label + 2), ' ') + "+";
  for (index_t j = 0; j < cols; ++j)
    rule += std::string(static_cast<std::size_t>(widest + 2), '-') + "+";
  os << to_string(l) << '\n';
  os << std::string(static_cast<std::size_t>(label + 3), ' ');
  for (index_t j = 0; j < cols; ++j) os << ' ' << pad(std::to_string(j), widest) << "  ";
  os << '\n' << rule << '\n';
  for (index_t i = 0; i < rows; ++i) {
    os << ' ' << pad(r == 1 ? std::string() : std::to_string(i), label) << " |";
    for (index_t j = 0; j < cols; ++j)
      os << ' ' << pad(std::to_string(offset(i, j)), widest) << " |";
    os << '\n' << rule << '\n';
  }
}

}  // namespace tessel
