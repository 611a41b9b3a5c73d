// The row body of apply_mask and apply_keep_mask: zero every block whose grid value (as a bool)
// says so, and touch nothing else. An elementwise where(mask, 0, t) would read and rewrite every
// element of t; this reads only the grid and writes only the zeroed blocks — a quarter of the
// memory traffic for half the blocks masked. Written once over an execution context, like the
// selection bodies: blocks of at most small_scope elements are batched small_scopes_per_row to a
// row with one lane per block, a larger block is one row whose lanes share its elements.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../../core/config.hpp"
#include "../../core/int.hpp"
#include "../../expr/element.hpp"
#include "scope_offsets.hpp"
#include "select_bodies.hpp"

namespace tessel::detail {

// For every block s of `blocks`: when bool(grid[cells(s)]) == ZeroIf, its elements become T{}.
// Elements (per block) is an Int<N> when the block shape is static.
template <class T, class G, std::size_t R, class Cells, Integer Elements, bool ZeroIf>
struct ZeroBlocksRows {
  ScopeSource<T, R> blocks;
  G const* grid;
  Cells cells;        // FlatOffsets of the grid's layout: block s's grid value is grid[cells(s)]
  index_t count = 0;  // blocks
  [[no_unique_address]] Elements elements{};

  bool small() const { return to_index(elements) <= small_scope; }
  index_t rows() const {
    return small() ? (count + small_scopes_per_row - 1) / small_scopes_per_row : count;
  }
  index_t row_work() const { return (small() ? small_scopes_per_row : 1) * to_index(elements); }

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t row) const {
    if (elements <= small_scope) {  // folds away when Elements is static
      index_t const first = row * small_scopes_per_row;
      index_t const last =
          first + small_scopes_per_row < count ? first + small_scopes_per_row : count;
      for (index_t s = first + ctx.lane(); s < last; s += ctx.lanes())
        if (zeroed(s)) {
          T* const base = blocks.base(s);
          for (index_t e = 0; e < elements; ++e) blocks.at(base, e) = T{};
        }
    } else if (zeroed(row)) {
      T* const base = blocks.base(row);
      for (index_t e = ctx.lane(); e < elements; e += ctx.lanes()) blocks.at(base, e) = T{};
    }
  }

 private:
  TESSEL_HOST_DEVICE bool zeroed(index_t s) const {
    return static_cast<bool>(load_element(grid[cells(s)])) == ZeroIf;
  }
};

}  // namespace tessel::detail
