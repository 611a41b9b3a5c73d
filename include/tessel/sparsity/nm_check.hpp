// The N:M checker: does a tensor satisfy a pattern (at most N nonzero elements, or nonzero blocks,
// in every group of M along a mode), and if not, which group is the first to break it. The groups
// are counted by a row body (detail/count_bodies.hpp) through the executor, where the tensor lives;
// the verdict (one index, and a count on a violation) comes back to the host.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/rows.hpp"
#include "../expr/reduce.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "detail/backend.hpp"
#include "detail/count_bodies.hpp"
#include "detail/scope_offsets.hpp"
#include "keep_mask.hpp"
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

// One pass of the count body over the groups (one row per batch of small groups, or per large
// group), then the lowest violating group by a min-reduction of the rows' reports; one value (two
// on a violation) comes back to the host.
template <int Mode, exec::Executor X, TensorType T, class N, class M, class B>
std::optional<NMViolation> first_nm_violation(X const& executor, T const& t,
                                              NMPattern<N, M> const& p, B const& block_shape,
                                              bool blocks) {
  check_tensors_reach<X, T>();
  constexpr std::size_t r = flat_rank<T>();
  auto b = block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  auto grid = block_grid_shape(t.shape(), b);
  auto group = checked_nm_group<Mode>(grid, p, blocks, blocks ? "block grid" : "tensor");
  using V = std::remove_cv_t<typename T::value_type>;
  using Backend = backend_t<X>;
  auto v = t.view();
  auto const m = size(group);     // static when the pattern is
  auto const elements = size(b);  // static when the block shape is (Int<1> for elements)
  NMCountRows<V, r, std::remove_const_t<decltype(m)>, std::remove_const_t<decltype(elements)>> body{
      block_group_source<V const>(v.data(), v.layout(), b, group),
      nullptr,
      nullptr,
      to_index(m) > 0 ? to_index(size(grid)) / to_index(m) : 0,
      m,
      elements,
      to_index(p.n)};
  index_t const rows = body.rows();
  if (rows == 0) return std::nullopt;
  auto first = Backend::template scratch<index_t>(executor, rows);
  auto nonzeros = Backend::template scratch<index_t>(executor, rows);
  body.first = first.data();
  body.nonzeros = nonzeros.data();
  for_each_row(executor, rows, body.row_work(), body);
  auto lowest = Backend::template scratch<index_t>(executor, 1);
  assign(Backend::view(lowest.data(), make_shape(Int<1>{})),
         min(Backend::view(first.data(), make_shape(rows)), keep), executor);
  index_t const g = Backend::read(executor, lowest.data());
  if (g >= body.groups) return std::nullopt;
  NMViolation found;
  // Group g, row-major in the grid of groups, starts at element (its coordinate * group * block).
  auto const groups_along = leaf_values(scope_grid_shape(grid, group));
  auto const gv = leaf_values(group);
  auto const bv = leaf_values(b);
  found.group_start.assign(r, 0);
  for (index_t rest = g, i = static_cast<index_t>(r) - 1; i >= 0; --i) {
    found.group_start[static_cast<std::size_t>(i)] = rest % groups_along[i] * gv[i] * bv[i];
    rest /= groups_along[i];
  }
  found.mode = resolve_mode<Mode, r>();
  found.nonzeros = Backend::read(executor, nonzeros.data() + body.row_of(g));
  found.n = to_index(p.n);
  found.m = to_index(p.m);
  found.blocks = blocks;
  return found;
}

}  // namespace detail

// The first group of p.m consecutive elements along mode Mode (-1: the last) with more than p.n
// nonzeros, or nullopt when t satisfies the pattern. tessel::Error when the pattern is invalid or
// p.m does not divide that extent (the same sentence as nm_mask).
template <int Mode = -1, TensorType T, class N, class M, exec::Executor X = exec::Auto>
std::optional<NMViolation> first_violation(T const& t, NMPattern<N, M> const& p,
                                           X const& executor = {}) {
  return detail::first_nm_violation<Mode>(executor, t, p,
                                          detail::unit_block<detail::flat_rank<T>()>(), false);
}

// The same over blocks of block_shape: a block counts as nonzero when any of its elements is.
template <int Mode = -1, TensorType T, class N, class M, IntTuple B, exec::Executor X = exec::Auto>
std::optional<NMViolation> first_violation(T const& t, NMPattern<N, M> const& p,
                                           B const& block_shape, X const& executor = {}) {
  return detail::first_nm_violation<Mode>(executor, t, p, block_shape, true);
}

// True when every group of p.m along mode Mode has at most p.n nonzeros.
template <int Mode = -1, TensorType T, class N, class M, exec::Executor X = exec::Auto>
bool satisfies(T const& t, NMPattern<N, M> const& p, X const& executor = {}) {
  return !first_violation<Mode>(t, p, executor).has_value();
}

// True when every group of p.m blocks along mode Mode has at most p.n nonzero blocks.
template <int Mode = -1, TensorType T, class N, class M, IntTuple B, exec::Executor X = exec::Auto>
bool satisfies(T const& t, NMPattern<N, M> const& p, B const& block_shape, X const& executor = {}) {
  return !first_violation<Mode>(t, p, block_shape, executor).has_value();
}

// Throws tessel::Error with the first violation's sentence when t does not satisfy the pattern.
template <int Mode = -1, TensorType T, class N, class M, exec::Executor X = exec::Auto>
void check_nm(T const& t, NMPattern<N, M> const& p, X const& executor = {}) {
  if (auto v = first_violation<Mode>(t, p, executor)) detail::throw_error(to_string(*v));
}

}  // namespace tessel
