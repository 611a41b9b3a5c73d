// Where the sparsity layer's row bodies find their elements: a tensor seen as scopes of members
// (blocks of the score grid, or groups of an N:M pattern), each member a block of elements. Every
// level is a flat row-major index turned into a storage offset by the coalesced layout of that
// level (exec::NestIndexer: fast division, none at all for the common one-mode case), so a body
// reads any view — strided, transposed, a block view — without a copy, on the host and on the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "../../core/block_layout.hpp"
#include "../../core/coalesce.hpp"
#include "../../core/int_tuple.hpp"
#include "../../core/layout.hpp"
#include "../../exec/body/nest.hpp"
#include "../../expr/element.hpp"

namespace tessel::detail {

// The offset of flat (row-major) index f of a layout with at most N leaves.
template <std::size_t N>
struct FlatOffsets {
  exec::NestIndexer<std::uint64_t, N> index;  // the coalesced modes' extents as divisors
  index_t stride[N] = {};

  // Collects c * stride[m] as NestIndexer::seek hands out each mode's coordinate c.
  struct Sum {
    index_t const* stride;
    index_t offset = 0;
    TESSEL_HOST_DEVICE void advance(int m, index_t c) { offset += c * stride[m]; }
  };

  // @pre 0 <= f < the layout's size
  TESSEL_HOST_DEVICE index_t operator()(index_t f) const {
    if (index.rank == 1) return f * stride[0];
    Sum sum{stride};
    index.seek(0, index.rank, static_cast<std::uint64_t>(f), sum);
    return sum.offset;
  }
};

// The flat offsets of the layout (shape, stride), coalesced first.
template <IntTuple S, IntTuple D>
auto flat_offsets(S const& shape, D const& stride) {
  auto const c = coalesce_values(leaf_values(shape), leaf_values(stride));
  constexpr std::size_t n = std::remove_cvref_t<decltype(c.shape)>::max_rank;
  FlatOffsets<n> out;
  out.index.rank = static_cast<int>(c.shape.rank());
  out.index.outer = 0;
  for (index_t m = 0; m < c.shape.rank(); ++m) {
    out.index.extent[m] = exec::FastDivmod<std::uint64_t>(
        static_cast<std::uint64_t>(c.shape[m] > 0 ? c.shape[m] : 1));
    out.stride[m] = c.stride[m];
  }
  return out;
}

// Modes [0, R) of a tuple.
template <std::size_t R, class T>
auto leading_modes(T const& t) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple(get<I>(t)...);
  }
  (std::make_index_sequence<R>{});
}

// A rank-R tensor of T seen as scopes of members: element (s, i) is member i (row-major in the
// scope shape) of scope s (row-major in the scope grid).
template <class T, std::size_t R>
struct ScopeSource {
  T* data;
  FlatOffsets<R> scope;
  FlatOffsets<R> member;

  // Scope s's first element; member i of that scope is at(base, i).
  TESSEL_HOST_DEVICE T* base(index_t s) const { return data + scope(s); }
  TESSEL_HOST_DEVICE T& at(T* scope_base, index_t i) const { return scope_base[member(i)]; }
  TESSEL_HOST_DEVICE T& operator()(index_t s, index_t i) const { return at(base(s), i); }
};

// The scope source of a rank-R flat layout whose element (at data) tiles into scopes of
// scope_shape. @pre scope_shape has rank R and divides the layout's shape (checked by the caller,
// with the caller's sentence)
template <class T, LayoutType L, Tuple G>
auto scope_source(T* data, L const& layout, G const& scope_shape) {
  constexpr std::size_t r = tuple_size_v<std::remove_cvref_t<decltype(layout.shape())>>;
  auto const v = block_layout(layout, scope_shape, BlockOrder::merged);  // (S..., (g...))
  return ScopeSource<T, r>{data,
                           flat_offsets(leading_modes<r>(v.shape()), leading_modes<r>(v.stride())),
                           flat_offsets(get<r>(v.shape()), get<r>(v.stride()))};
}

// A rank-R tensor seen as groups of blocks of elements: element (g, j, e) is element e of block j
// of group g, each index row-major in its own shape.
template <class T, std::size_t R>
struct BlockGroupSource {
  T* data;
  FlatOffsets<R> group;
  FlatOffsets<R> block;
  FlatOffsets<R> element;

  TESSEL_HOST_DEVICE T* group_base(index_t g) const { return data + group(g); }
  TESSEL_HOST_DEVICE T& operator()(index_t g, index_t j, index_t e) const {
    return data[group(g) + block(j) + element(e)];
  }
};

// The block-group source of a rank-R flat layout cut into blocks of block_shape, whose block grid
// is cut into groups of group_shape. @pre both divide (checked by the caller)
template <class T, LayoutType L, Tuple B, Tuple G>
auto block_group_source(T* data, L const& layout, B const& block_shape, G const& group_shape) {
  constexpr std::size_t r = tuple_size_v<std::remove_cvref_t<decltype(layout.shape())>>;
  auto const blocks = block_layout(layout, block_shape, BlockOrder::merged);  // (B..., (b...))
  auto const grid = Layout(leading_modes<r>(blocks.shape()), leading_modes<r>(blocks.stride()));
  auto const groups = scope_source(data, grid, group_shape);
  return BlockGroupSource<T, r>{data, groups.scope, groups.member,
                                flat_offsets(get<r>(blocks.shape()), get<r>(blocks.stride()))};
}

}  // namespace tessel::detail
