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

namespace detail {

// The grid of offsets offset(i * cols + j) for i < rows, j < cols, with row and column labels,
// each cell `widest` characters: print_layout's picture of one 2-D slice.
template <class Offset>
void print_offset_grid(std::ostream& os, index_t rows, index_t cols, bool row_labels,
                       index_t widest, Offset const& offset) {
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
  os << std::string(static_cast<std::size_t>(label + 3), ' ');
  for (index_t j = 0; j < cols; ++j) os << ' ' << pad(std::to_string(j), widest) << "  ";
  os << '\n' << rule << '\n';
  for (index_t i = 0; i < rows; ++i) {
    os << ' ' << pad(row_labels ? std::to_string(i) : std::string(), label) << " |";
    for (index_t j = 0; j < cols; ++j)
      os << ' ' << pad(std::to_string(offset(i * cols + j)), widest) << " |";
    os << '\n' << rule << '\n';
  }
}

}  // namespace detail

// What print_layout draws: a shape, a text and an offset for each 1-D index (a Layout, or the
// SwizzledLayout of swizzle.hpp).
template <class L>
concept PrintableLayout = requires(L const& l) {
  l.shape();
  to_string(l);
  { l(index_t{0}) } -> Integer;
};

// The layout's text, then a grid of its offsets: rows are the 1-D indices of mode 0, columns
// those of mode 1 (a rank-1 layout is one row). A layout of rank r > 2 prints as a list of 2-D
// slices over its last two modes, each headed by its leading coordinates ("(1,_,_):" for rank 3).
template <PrintableLayout L>
void print_layout(std::ostream& os, L const& l) {
  static_assert(!DynRank<decltype(l.shape())>,
                "tessel: print_layout needs a layout whose rank is known at compile time.");
  constexpr index_t r = decltype(rank(l.shape()))::value;
  os << to_string(l) << '\n';
  if constexpr (r == 0) {
    os << to_index(l(0)) << '\n';
  } else {
    auto const extents = to_vector(product_each(l.shape()));
    index_t const cols = extents[static_cast<std::size_t>(r - 1)];
    index_t const rows = r >= 2 ? extents[static_cast<std::size_t>(r - 2)] : 1;
    index_t slices = 1;
    for (index_t k = 0; k + 2 < r; ++k) slices *= extents[static_cast<std::size_t>(k)];
    index_t widest = 1;  // one cell width for every slice, so they line up
    for (index_t i = 0; i < slices * rows * cols; ++i)
      widest =
          std::max<index_t>(widest, static_cast<index_t>(std::to_string(to_index(l(i))).size()));
    for (index_t s = 0; s < slices; ++s) {
      if (r > 2) {
        // The slice's leading coordinates, row-major over modes 0 .. r-3.
        std::string head;
        index_t rest = s;
        for (index_t k = r - 3; k >= 0; --k) {
          index_t const e = extents[static_cast<std::size_t>(k)];
          head = std::to_string(rest % e) + (head.empty() ? "" : ",") + head;
          rest /= e;
        }
        os << (s > 0 ? "\n" : "") << '(' << head << ",_,_):\n";
      }
      detail::print_offset_grid(os, rows, cols, r >= 2, widest,
                                [&](index_t i) { return to_index(l(s * rows * cols + i)); });
    }
  }
}

}  // namespace tessel
