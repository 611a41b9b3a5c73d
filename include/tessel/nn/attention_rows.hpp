// What the attention kernel bodies share: the walk from a work item to its (batch, head, tile)
// and to a lane's rows of it, and the row arithmetic every body is made of (a dot product of two
// head_dim rows, y += a x, y *= a). Host and device: the bodies run with
// exec::SequentialContext on the host (exec/rows.hpp) and as one CUDA block per work item
// (exec/cuda/rows.cuh).
//
// The tile products and exponentials built from these are in attention_tiles.hpp.
#pragma once

#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../expr/scalar_math.hpp"
#include "../tensor/tensor.hpp"
#include "attention_plan.hpp"

namespace tessel::nn {

namespace detail {

// The (batch, head, tile) of work item `item`, tiles fastest; with a static plan every divisor is
// a constant.
struct AttentionItem {
  index_t batch;
  index_t head;
  index_t tile;
};
template <class Plan, Integer Tiles>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE AttentionItem attention_item(Plan const& plan, Tiles tiles,
                                                                   index_t item) {
  index_t const bh = item / tiles;
  return {bh / plan.heads_extent(), bh % plan.heads_extent(), item % tiles};
}

// Row (b, i, h) of a (B, T, heads, head_dim) tensor: head_dim elements at stride 1 (checked on
// the host before any launch).
template <class Tensor>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto* head_row(Tensor const& t, index_t b, index_t i,
                                                     index_t h) {
  return &t(b, i, h, Int<0>{});
}

// sum_c a[c] b[c] in eight partial sums (c mod 8), added pairwise at the end: the host's
// compiler keeps them in vector lanes without reassociating anything, so the result is the same
// bits whether n is static or not, and the loop runs in SIMD registers without -ffast-math.
template <class C, Integer N>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE C row_dot(C const* a, C const* b, N n) {
  C acc[8] = {};
  index_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int u = 0; u < 8; ++u) acc[u] += a[c + u] * b[c + u];
  for (int u = 0; c < n; ++c, ++u) acc[u] += a[c] * b[c];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// y[c] += a x[c].
template <class C, Integer N>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE void row_axpy(C* y, C a, C const* x, N n) {
  for (index_t c = 0; c < n; ++c) y[c] += a * x[c];
}

// y[c] = a y[c].
template <class C, Integer N>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE void row_scale(C* y, C a, N n) {
  for (index_t c = 0; c < n; ++c) y[c] *= a;
}

template <class C, Integer N>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE void row_zero(C* y, N n) {
  for (index_t c = 0; c < n; ++c) y[c] = C(0);
}

// A tile's rows at most: the static plan's, or the largest any plan picks (a local array needs
// a constant bound).
template <class Extent>
inline constexpr index_t tile_capacity_v = [] {
  if constexpr (StaticInt<Extent>)
    return Extent::value;
  else
    return max_attention_tile;
}();

// The rows of a tile of at most Capacity rows that one lane of Ctx owns, at most: a tile's rows
// are dealt to the lanes in turn, so with a static lane count (a CUDA block's) each lane keeps
// ceil(Capacity / lanes) rows, with a run-time one all of them.
template <class Ctx, index_t Capacity>
inline constexpr index_t lane_rows_capacity_v = [] {
  using Lanes = decltype(std::declval<Ctx const&>().lanes());
  if constexpr (StaticInt<Lanes>)
    return (Capacity + Lanes::value - 1) / Lanes::value;
  else
    return Capacity;
}();

// The rows of a tile [tile_first, tile_end) that a lane owns: first, first + step, ..., `count`
// of them (0 when the lane has none).
struct LaneRows {
  index_t first;
  index_t step;
  index_t count;
  TESSEL_HOST_DEVICE index_t row(index_t r) const { return first + r * step; }
  TESSEL_HOST_DEVICE index_t last() const { return first + (count - 1) * step; }
};
template <class Ctx>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE LaneRows lane_rows(Ctx const& ctx, index_t tile_first,
                                                         index_t tile_end) {
  index_t const first = tile_first + ctx.lane();
  index_t const step = ctx.lanes();
  return {first, step, first < tile_end ? (tile_end - first + step - 1) / step : 0};
}

// Work item `item` of a pass over the sequence's tiles of `tile` rows (`tiles` of them per batch
// and head): its batch and head, and the rows of its tile (clipped to the sequence) this lane owns.
struct LaneTile {
  index_t batch;
  index_t head;
  LaneRows rows;
};
template <class Ctx, class Plan, Integer Tiles, Integer Tile>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE LaneTile lane_tile(Ctx const& ctx, Plan const& plan,
                                                         Tiles tiles, Tile tile, index_t item) {
  AttentionItem const w = attention_item(plan, tiles, item);
  index_t const first = w.tile * tile;
  index_t const t = plan.seq_extent();
  return {w.batch, w.head, lane_rows(ctx, first, first + tile < t ? first + tile : t)};
}

// The stride between rows (positions) of a (B, T, heads, head_dim) tensor, times `lanes`: the
// row stride of a lane's rows as a matrix.
template <class Tensor, Integer Lanes>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto lane_row_stride(Tensor const& t, Lanes lanes) {
  return get<1>(t.stride()) * lanes;
}

}  // namespace detail

}  // namespace tessel::nn
