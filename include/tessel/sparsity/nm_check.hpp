// The N:M checker: does a tensor satisfy a pattern (at most N nonzero elements, or nonzero blocks,
// in every group of M along a mode), and if not, which group is the first to break it.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/for_each_coordinate.hpp"
#include "../tensor/host_tensor.hpp"
#include "../tensor/tensor.hpp"
#include "nm_mask.hpp"
#include "nm_pattern.hpp"
#include "scope.hpp"

namespace tessel {

// The first group (in row-major order of the groups) that has more than n nonzeros.
struct NMViolation {
  std::vector<index_t> group_start;  // the coordinate in the tensor of the group's first element
  std::size_t mode = 0;              // the mode the groups run along
  index_t nonzeros = 0;              // nonzero elements (or nonzero blocks) in the group
  index_t n = 0;                     // the pattern's N and M
  index_t m = 0;
  bool blocks = false;  // groups of blocks (a block is nonzero when any element is)
};

// "the group at (0,4) along mode 1 has 3 nonzero elements; a 2:4 pattern allows at most 2."
inline std::string to_string(NMViolation const& v) {
  std::string at = "(";
  for (std::size_t i = 0; i < v.group_start.size(); ++i) {
    if (i) at.push_back(',');
    at.append(std::to_string(v.group_start[i]));
  }
  at.push_back(')');
  return detail::sentence("the group at ", at, " along mode ", v.mode, " has ", v.nonzeros,
                          v.blocks ? " nonzero blocks" : " nonzero elements", "; a ", v.n, ":", v.m,
                          " pattern allows at most ", v.n, ".");
}

namespace detail {

template <int Mode, TensorType T, class N, class M, class B>
std::optional<NMViolation> first_nm_violation(T const& t, NMPattern<N, M> const& p,
                                              B const& block_shape, bool blocks) {
  constexpr std::size_t r = flat_rank<T>();
  auto b = block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  auto grid = block_grid_shape(t.shape(), b);
  auto group = checked_nm_group<Mode>(grid, p, blocks, blocks ? "block grid" : "tensor");
  using V = typename T::value_type;
  auto nonzero = make_host_tensor<bool>(grid);  // is block g nonzero?
  auto bv = to_array(b);
  for_each_coordinate(product_each(t.shape()), [&](auto... c) {
    if (!(t(c...) == V{})) {
      std::array<index_t, r> e{c...};
      for (std::size_t i = 0; i < r; ++i) e[i] /= bv[i];
      at_coordinate(nonzero, e) = true;
    }
  });
  auto groups = scope_view(nonzero, group);  // (G0, G1, ..., (group))
  index_t per_group = to_index(size(group));
  auto gv = to_array(group);
  std::optional<NMViolation> found;
  for_each_coordinate(scope_grid_shape(grid, group), [&](auto... c) {
    if (found) return;
    index_t count = 0;
    for (index_t i = 0; i < per_group; ++i) count += groups(c..., i) ? 1 : 0;
    if (count > to_index(p.n)) {
      std::array<index_t, r> g{c...};
      NMViolation v;
      for (std::size_t i = 0; i < r; ++i) v.group_start.push_back(g[i] * gv[i] * bv[i]);
      v.mode = resolve_mode<Mode, r>();
      v.nonzeros = count;
      v.n = to_index(p.n);
      v.m = to_index(p.m);
      v.blocks = blocks;
      found = std::move(v);
    }
  });
  return found;
}

}  // namespace detail

// The first group of p.m consecutive elements along mode Mode (-1: the last) with more than p.n
// nonzeros, or nullopt when t satisfies the pattern. tessel::Error when the pattern is invalid or
// p.m does not divide that extent (the same sentence as nm_mask).
template <int Mode = -1, TensorType T, class N, class M>
std::optional<NMViolation> first_violation(T const& t, NMPattern<N, M> const& p) {
  return detail::first_nm_violation<Mode>(t, p, detail::unit_block<detail::flat_rank<T>()>(),
                                          false);
}

// The same over blocks of block_shape: a block counts as nonzero when any of its elements is.
template <int Mode = -1, TensorType T, class N, class M, class B>
std::optional<NMViolation> first_violation(T const& t, NMPattern<N, M> const& p,
                                           B const& block_shape) {
  return detail::first_nm_violation<Mode>(t, p, block_shape, true);
}

// True when every group of p.m along mode Mode has at most p.n nonzeros.
template <int Mode = -1, TensorType T, class N, class M>
bool satisfies(T const& t, NMPattern<N, M> const& p) {
  return !first_violation<Mode>(t, p).has_value();
}

// True when every group of p.m blocks along mode Mode has at most p.n nonzero blocks.
template <int Mode = -1, TensorType T, class N, class M, class B>
bool satisfies(T const& t, NMPattern<N, M> const& p, B const& block_shape) {
  return !first_violation<Mode>(t, p, block_shape).has_value();
}

// Throws tessel::Error with the first violation's sentence when t does not satisfy the pattern.
template <int Mode = -1, TensorType T, class N, class M>
void check_nm(T const& t, NMPattern<N, M> const& p) {
  if (auto v = first_violation<Mode>(t, p)) detail::throw_error(to_string(*v));
}

}  // namespace tessel
