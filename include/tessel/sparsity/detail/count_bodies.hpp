// The row body of the N:M checker: for groups of m blocks (single elements, for an element
// pattern), count the nonzero blocks of each group (a block is nonzero when any element compares
// unequal to zero: NaN counts, -0.0 does not) and report, per row, the first group holding more
// than n. Written once over an execution context, like the selection bodies: groups of at most
// small_scope blocks are batched small_scopes_per_row to a row with one lane per group; a larger
// group is one row whose lanes share its blocks and add their counts with ctx.reduce.
#pragma once

#include <cstddef>

#include "../../core/config.hpp"
#include "../../expr/element.hpp"
#include "scope_offsets.hpp"
#include "select_bodies.hpp"

namespace tessel::detail {

// A group and its nonzero blocks; group == `none` when a row holds no violation.
struct GroupCount {
  index_t group;
  index_t nonzeros;
};
struct FirstGroup {
  TESSEL_HOST_DEVICE GroupCount operator()(GroupCount a, GroupCount b) const {
    return b.group < a.group ? b : a;
  }
};

// first[row] = the lowest group of the row with more than `allowed` nonzero blocks (or `groups`
// when there is none) and nonzeros[row] its count. Members (blocks per group) and Elements
// (elements per block) are Int<N> when static, so the loops over a group unroll.
template <class T, std::size_t R, Integer Members = index_t, Integer Elements = index_t>
struct NMCountRows {
  BlockGroupSource<T const, R> source;
  index_t* first;
  index_t* nonzeros;
  index_t groups = 0;
  [[no_unique_address]] Members m{};
  [[no_unique_address]] Elements elements{};
  index_t allowed = 0;

  bool small() const { return to_index(m) <= small_scope; }
  index_t rows() const {
    return small() ? (groups + small_scopes_per_row - 1) / small_scopes_per_row : groups;
  }
  index_t row_work() const {
    return (small() ? small_scopes_per_row : 1) * to_index(m) * to_index(elements);
  }
  // The row that reports group g.
  index_t row_of(index_t g) const { return small() ? g / small_scopes_per_row : g; }

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t row) const {
    if (m <= small_scope) {  // folds away when Members is static
      index_t const lo = row * small_scopes_per_row;
      index_t const hi = lo + small_scopes_per_row < groups ? lo + small_scopes_per_row : groups;
      GroupCount found{groups, 0};
      for (index_t g = lo + ctx.lane(); g < hi; g += ctx.lanes()) {
        T const* const base = source.group_base(g);
        index_t c = 0;
        for (index_t j = 0; j < m; ++j) c += nonzero_block(base, j) ? 1 : 0;
        if (c > allowed && g < found.group) found = GroupCount{g, c};
      }
      report(ctx, row, ctx.reduce(found, FirstGroup{}));
    } else {
      T const* const base = source.group_base(row);
      index_t c = 0;
      for (index_t j = ctx.lane(); j < m; j += ctx.lanes()) c += nonzero_block(base, j) ? 1 : 0;
      c = ctx.reduce(c, Plus{});
      report(ctx, row, c > allowed ? GroupCount{row, c} : GroupCount{groups, 0});
    }
  }

 private:
  TESSEL_HOST_DEVICE bool nonzero_block(T const* group_base, index_t j) const {
    using C = compute_t<std::remove_cv_t<T>>;
    T const* const block = group_base + source.block(j);
    bool any = false;
    for (index_t e = 0; e < elements; ++e) any |= !(load_element(block[source.element(e)]) == C{});
    return any;
  }

  template <class Ctx>
  TESSEL_HOST_DEVICE void report(Ctx const& ctx, index_t row, GroupCount const& g) const {
    if (ctx.lane() == 0) {
      first[row] = g.group;
      nonzeros[row] = g.nonzeros;
    }
  }
};

}  // namespace tessel::detail
