// Cache-tiled traversals of the (i, j) / (j, i) element pairs of an n x n matrix, for the loops
// that copy one into the other: a symmetric matrix's triangle mirrored onto the other one
// (exec::syrk's result, LAPACK's input in kernels/syevd.cpp), a matrix stored transposed. Untiled,
// one of the two accesses walks a column element by element, a new cache line per element, and a
// 1024 x 1024 float matrix does not fit in L2 (mirroring one took 2.2 ms untiled, 0.8 ms in
// tiles of 32 on an Intel Xeon). The tiles are 8 x 8: the rows of a 1024-wide float matrix are
// 4 KB apart and fall into the same L1 sets, so the rows of a 32 x 32 tile evicted each other
// (on an AMD Zen 4, tiles of 32 0.97 ms, of 16 0.59 ms, of 8 0.34 ms; docs/benchmarks.md).
#pragma once

#include <algorithm>

#include "../../core/config.hpp"

namespace tessel::exec::detail {

inline constexpr index_t transposed_pair_tile = 8;

// Calls f(i, j) for every i < j (the upper triangle), tile by tile.
template <class F>
void for_each_upper_pair(index_t n, F const& f) {
  constexpr index_t tile = transposed_pair_tile;
  for (index_t i0 = 0; i0 < n; i0 += tile)
    for (index_t j0 = i0; j0 < n; j0 += tile)
      for (index_t i = i0; i < std::min(i0 + tile, n); ++i)
        for (index_t j = std::max(j0, i + 1); j < std::min(j0 + tile, n); ++j) f(i, j);
}

// Copies the lower triangle of the n x n matrix m onto its upper triangle; m(i, j) is a reference
// to element (i, j) (an Eigen matrix, or a callable over a raw buffer).
template <class M>
void mirror_lower_to_upper(M&& m, index_t n) {
  for_each_upper_pair(n, [&](index_t i, index_t j) { m(i, j) = m(j, i); });
}

// Calls f(i, j) for every i and j < n, tile by tile.
template <class F>
void for_each_pair(index_t n, F const& f) {
  constexpr index_t tile = transposed_pair_tile;
  for (index_t i0 = 0; i0 < n; i0 += tile)
    for (index_t j0 = 0; j0 < n; j0 += tile)
      for (index_t i = i0; i < std::min(i0 + tile, n); ++i)
        for (index_t j = j0; j < std::min(j0 + tile, n); ++j) f(i, j);
}

}  // namespace tessel::exec::detail
