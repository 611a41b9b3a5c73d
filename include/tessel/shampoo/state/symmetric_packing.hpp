// Symmetric packing (Distributed Shampoo's use_symmetric_packing): a Kronecker factor is symmetric,
// so only its upper triangle is kept, row by row, as one vector of d (d + 1) / 2 elements:
// F[0][0..d), F[1][1..d), ..., F[d-1][d-1]. This is torch.triu_indices(d, d) order, the layout
// Distributed Shampoo stores and saves (a 1-D tensor of that length per factor and per inverse
// root).
//
// The step still computes on full matrices: unpack_symmetric expands a group's packed factors into
// scratch before the dense stages and pack_symmetric stores the upper triangles back after, so the
// numbers are those of unpacked storage and only the persistent state shrinks. Inverse roots stay
// full in memory, made exactly symmetric from their upper triangles (mirror_upper_triangle) so
// that saving them packed loses nothing. All are row- and strip-wise assignments through the
// executor (row i of the triangle is a strided view of both layouts; the triangle as a whole is
// not an affine layout), so host and device run the same code. The *_bytes functions convert one
// matrix on the host, for state dictionaries.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "../../core/error.hpp"
#include "../../core/layout.hpp"
#include "../../exec/host.hpp"
#include "../../exec/memory.hpp"

namespace tessel::shampoo {

// Elements of a packed d x d symmetric matrix. @pre d >= 0
constexpr index_t packed_size(index_t d) noexcept {
  return d * (d + 1) / 2;
}

// Where element (i, j) of the upper triangle (i <= j) sits in the packed vector: the rows before i
// hold d + (d - 1) + ... + (d - i + 1) = i (2d - i + 1) / 2 elements.
// @pre 0 <= i <= j < d
constexpr index_t packed_index(index_t d, index_t i, index_t j) noexcept {
  return i * (2 * d - i + 1) / 2 + (j - i);
}

// The d whose packed size is n, or -1 when n is not d (d + 1) / 2 for any d.
constexpr index_t packed_dim(index_t n) noexcept {
  if (n < 0) return -1;
  index_t d = 0;
  while (packed_size(d) < n) ++d;
  return packed_size(d) == n ? d : -1;
}

// The lower triangles of full (count, d, d) <- the transposed upper ones, in place, so each matrix
// is exactly symmetric: in strips of 32 rows, each the transpose of a strip of 32 columns: reading
// a column element by element misses the cache on every element, while a 32-column strip of a
// 1024 x 1024 float factor stays in L2 while its rows are written (unpacking 8 such factors: 470
// ms column by column, 180 ms in strips, measured on the host).
template <class X, class V>
void mirror_upper_triangle(X const& x, V* full, index_t count, index_t d) {
  using B = exec::Memory<X>;
  constexpr index_t strip = 32;
  for (index_t r0 = 0; r0 < d; r0 += strip) {
    index_t const h = std::min(strip, d - r0);
    // Rows [r0, r0 + h), columns [0, r0): column strip [r0, r0 + h) of the rows above, transposed.
    if (r0 > 0)
      assign(B::view(full + r0 * d,
                     make_layout(make_shape(count, h, r0), make_stride(d * d, d, Int<1>{}))),
             B::view(static_cast<V const*>(full) + r0,
                     make_layout(make_shape(count, h, r0), make_stride(d * d, 1, d))),
             x);
    // Inside the diagonal tile: row r from column r above it.
    for (index_t r = r0 + 1; r < r0 + h; ++r)
      assign(B::view(full + r * d + r0,
                     make_layout(make_shape(count, r - r0), make_stride(d * d, Int<1>{}))),
             B::view(static_cast<V const*>(full) + r0 * d + r,
                     make_layout(make_shape(count, r - r0), make_stride(d * d, d))),
             x);
  }
}

// full (count, d, d) <- the symmetric matrices whose upper triangles are packed (count,
// packed_size(d)); U and V may differ (a stored dtype and the computation dtype). The upper
// triangle comes row by row, the lower is mirrored from it (mirror_upper_triangle).
template <class X, class U, class V>
void unpack_symmetric(X const& x, U const* packed, V* full, index_t count, index_t d) {
  using B = exec::Memory<X>;
  index_t const p = packed_size(d);
  for (index_t i = 0; i < d; ++i)
    assign(B::view(full + i * d + i,
                   make_layout(make_shape(count, d - i), make_stride(d * d, Int<1>{}))),
           B::view(packed + packed_index(d, i, i),
                   make_layout(make_shape(count, d - i), make_stride(p, Int<1>{}))),
           x);
  mirror_upper_triangle(x, full, count, d);
}

// packed (count, packed_size(d)) <- the upper triangles of full (count, d, d), rounded to U.
template <class X, class V, class U>
void pack_symmetric(X const& x, V const* full, U* packed, index_t count, index_t d) {
  using B = exec::Memory<X>;
  index_t const p = packed_size(d);
  for (index_t i = 0; i < d; ++i)
    assign(B::view(packed + packed_index(d, i, i),
                   make_layout(make_shape(count, d - i), make_stride(p, Int<1>{}))),
           B::view(full + i * d + i,
                   make_layout(make_shape(count, d - i), make_stride(d * d, Int<1>{}))),
           x);
}

// One d x d matrix of `element` bytes per entry, row-major at full, packed into packed_size(d)
// entries at packed (bytes copied, so exact for every dtype).
inline void pack_symmetric_bytes(std::byte const* full, std::byte* packed, index_t d,
                                 std::size_t element) {
  for (index_t i = 0; i < d; ++i)
    std::memcpy(packed + static_cast<std::size_t>(packed_index(d, i, i)) * element,
                full + static_cast<std::size_t>(i * d + i) * element,
                static_cast<std::size_t>(d - i) * element);
}

// The inverse: the d x d symmetric matrix whose upper triangle is packed.
inline void unpack_symmetric_bytes(std::byte const* packed, std::byte* full, index_t d,
                                   std::size_t element) {
  for (index_t i = 0; i < d; ++i)
    for (index_t j = i; j < d; ++j) {
      std::byte const* from = packed + static_cast<std::size_t>(packed_index(d, i, j)) * element;
      std::memcpy(full + static_cast<std::size_t>(i * d + j) * element, from, element);
      std::memcpy(full + static_cast<std::size_t>(j * d + i) * element, from, element);
    }
}

}  // namespace tessel::shampoo
