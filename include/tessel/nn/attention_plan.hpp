// The attention tiling plan: how causal multi-head attention over (B, T, heads, head_dim) cuts the
// sequence into query tiles and key/value tiles, how many of each there are, the bytes one work
// item keeps hot and the scratch a backward call allocates. The third plan family beside FLCE's
// chunking plan (flce/plan.hpp) and Shampoo's blocking plan (shampoo/plan/): one constexpr value
// algorithm (attention_plan_values) that static shapes lift into a StaticAttentionPlan, whose
// extents are Int<...>s, and run-time shapes run as it is, into an AttentionPlan with the same
// numbers.
//
// A work item is one (batch, head, tile): the forward pass and the backward's dq pass have one per
// query tile, the backward's dk/dv pass one per key/value tile. Within one, the rows of the tile
// are the lanes' (exec/body/context.hpp), and every row walks the key/value tiles of its causal
// prefix, so the scores exist a key/value tile at a time (docs/attention.md).
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/int.hpp"

namespace tessel::nn {

// The largest tile the plan picks, in rows (FlashAttention-2's largest block).
inline constexpr index_t max_attention_tile = 128;
// The smallest tile the plan shrinks to when the budget is tight; a sequence shorter than this
// gets one tile of its own length (rounded up to a power of two).
inline constexpr index_t min_attention_tile = 16;

// The default bytes one work item may keep hot (attention_tile_bytes): 64 KiB, a GPU block's
// shared memory without opting in to more; GPT-2's head_dim 64 in f32 gets 64 x 64 tiles.
// Measured on the host (one core, forward + backward, B 4, 12 heads, head_dim 64, f32;
// docs/attention.md, "The plan"): at T 256 every budget from 16 to 256 KiB is within 10% of the
// best (32 KiB, 37.8 ms; 64 KiB 39.6 ms); at T 1024 larger tiles win (16 KiB 651 ms, 64 KiB
// 505 ms, 256 KiB 475 ms). 64 KiB is within 6% of the best at both.
inline constexpr index_t default_attention_tile_budget = index_t{64} << 10;

// Every scratch buffer starts on a multiple of this (exec::scratch_alignment).
inline constexpr index_t attention_scratch_alignment = 256;

// A run-time plan, and what a StaticAttentionPlan converts to. Both kinds answer the same extent
// queries (batch_extent(), ..., kv_tile_count()): an index_t here, an Int<N> in a static plan, so
// the kernel bodies written against them fold their index arithmetic when the plan is static.
struct AttentionPlan {
  index_t batch = 0;
  index_t heads = 1;
  index_t seq_len = 0;
  index_t head_dim = 1;
  index_t element_bytes = 4;  // of the storage type (and the compute type: f32 or f64)
  index_t q_tile = 1;         // query rows per work item of the forward and the dq pass
  index_t kv_tile = 1;        // key/value rows per step of a row's walk, and per dk/dv work item
  index_t num_q_tiles = 0;    // ceil(seq_len / q_tile)
  index_t num_kv_tiles = 0;   // ceil(seq_len / kv_tile)
  index_t tile_bytes = 0;     // what one work item keeps hot (attention_tile_bytes)
  index_t scratch_bytes = 0;  // what a backward call allocates: D = rowsum(dO * O), (B, heads, T)

  TESSEL_HOST_DEVICE constexpr index_t batch_extent() const { return batch; }
  TESSEL_HOST_DEVICE constexpr index_t heads_extent() const { return heads; }
  TESSEL_HOST_DEVICE constexpr index_t seq_extent() const { return seq_len; }
  TESSEL_HOST_DEVICE constexpr index_t head_dim_extent() const { return head_dim; }
  TESSEL_HOST_DEVICE constexpr index_t q_tile_extent() const { return q_tile; }
  TESSEL_HOST_DEVICE constexpr index_t kv_tile_extent() const { return kv_tile; }
  TESSEL_HOST_DEVICE constexpr index_t q_tile_count() const { return num_q_tiles; }
  TESSEL_HOST_DEVICE constexpr index_t kv_tile_count() const { return num_kv_tiles; }

  // Work items of the forward and the dq pass (one per batch, head and query tile), and of the
  // dk/dv pass (one per batch, head and key/value tile).
  constexpr index_t q_work_items() const { return batch * heads * num_q_tiles; }
  constexpr index_t kv_work_items() const { return batch * heads * num_kv_tiles; }

  friend constexpr bool operator==(AttentionPlan const&, AttentionPlan const&) = default;
};

namespace detail {

using namespace ::tessel::detail;

// What one work item keeps hot, FlashAttention's on-chip working set: a query tile, one key and
// one value tile (storage type), and the tile of scores (compute type, the same as storage here).
constexpr index_t attention_tile_bytes(index_t q_tile, index_t kv_tile, index_t head_dim,
                                       index_t element_bytes) {
  return (q_tile + 2 * kv_tile) * head_dim * element_bytes + q_tile * kv_tile * element_bytes;
}

constexpr index_t ceil_div(index_t a, index_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

constexpr index_t align_scratch(index_t bytes) {
  return (bytes + attention_scratch_alignment - 1) / attention_scratch_alignment *
         attention_scratch_alignment;
}

// The smallest power of two >= x (x >= 1), at most cap.
constexpr index_t pow2_at_least(index_t x, index_t cap) {
  index_t p = 1;
  while (p < x && p < cap) p *= 2;
  return p;
}

inline void throw_bad_attention_plan(char const* what, index_t value, char const* bound) {
  throw_error(sentence("an attention plan needs ", what, " ", bound, ", got ", value, "."));
}

// The tiles and counts, as values, for arguments that passed check_attention_arguments. Tiles
// start at min(128, next_pow2(T)) rows each; while the working set exceeds the budget they are
// halved in turn, the key/value tile first (so the query tile stays the larger), down to
// min_attention_tile rows (or the first tile, when that is shorter). The result's tile_bytes may
// still exceed the budget: the callers refuse that, with the numbers.
constexpr AttentionPlan attention_tiles(index_t batch, index_t heads, index_t seq_len,
                                        index_t head_dim, index_t element_bytes, index_t budget) {
  index_t const first = pow2_at_least(seq_len > 0 ? seq_len : 1, max_attention_tile);
  index_t const smallest = first < min_attention_tile ? first : min_attention_tile;
  AttentionPlan p;
  p.batch = batch;
  p.heads = heads;
  p.seq_len = seq_len;
  p.head_dim = head_dim;
  p.element_bytes = element_bytes;
  p.q_tile = first;
  p.kv_tile = first;
  while (attention_tile_bytes(p.q_tile, p.kv_tile, head_dim, element_bytes) > budget &&
         p.q_tile > smallest) {
    if (p.kv_tile == p.q_tile)
      p.kv_tile /= 2;
    else
      p.q_tile /= 2;
  }
  p.tile_bytes = attention_tile_bytes(p.q_tile, p.kv_tile, head_dim, element_bytes);
  p.num_q_tiles = ceil_div(seq_len, p.q_tile);
  p.num_kv_tiles = ceil_div(seq_len, p.kv_tile);
  p.scratch_bytes = align_scratch(batch * heads * seq_len * element_bytes);
  return p;
}

// The run-time checks of a plan's arguments, each a sentence naming the value.
constexpr void check_attention_arguments(index_t batch, index_t heads, index_t seq_len,
                                         index_t head_dim, index_t budget) {
  if (batch < 0) throw_bad_attention_plan("a batch size", batch, ">= 0");
  if (heads < 1) throw_bad_attention_plan("a head count", heads, ">= 1");
  if (seq_len < 0) throw_bad_attention_plan("a sequence length", seq_len, ">= 0");
  if (head_dim < 1) throw_bad_attention_plan("a head_dim", head_dim, ">= 1");
  if (budget < 0) throw_bad_attention_plan("a tile budget", budget, ">= 0 bytes");
  // (q + 2 kv) head_dim 8 + q kv 8 stays far below 2^63 with tiles <= 128.
  if (head_dim > (index_t{1} << 40)) throw_bad_attention_plan("a head_dim", head_dim, "<= 2^40");
  index_t rows = 0, bytes = 0;
  if (mul_overflow(batch, heads, rows) || mul_overflow(rows, seq_len, rows) ||
      mul_overflow(rows, index_t{8}, bytes) || bytes > index_max - attention_scratch_alignment)
    throw_error(sentence("an attention plan of batch ", batch, ", ", heads, " heads and ", seq_len,
                         " positions has more rows than a 64-bit size can count."));
}

// The plan from run-time values: checked, then attention_tiles.
constexpr AttentionPlan attention_plan_values(index_t batch, index_t heads, index_t seq_len,
                                              index_t head_dim, index_t element_bytes,
                                              index_t budget) {
  check_attention_arguments(batch, heads, seq_len, head_dim, budget);
  AttentionPlan const p = attention_tiles(batch, heads, seq_len, head_dim, element_bytes, budget);
  if (p.tile_bytes > budget)
    throw_error(sentence("an attention tile of ", p.q_tile, " x ", p.kv_tile, " rows at head_dim ",
                         head_dim, " needs ", p.tile_bytes, " bytes, more than the tile budget of ",
                         budget, " bytes."));
  return p;
}

// Each check is a class template so that a failure shows the offending values.
template <index_t B, index_t Heads, index_t T, index_t D, index_t Budget>
struct StaticAttentionPlanArguments {
  static_assert(B >= 0, "tessel: an attention plan needs a batch size >= 0.");
  static_assert(Heads >= 1, "tessel: an attention plan needs a head count >= 1.");
  static_assert(T >= 0, "tessel: an attention plan needs a sequence length >= 0.");
  static_assert(D >= 1, "tessel: an attention plan needs a head_dim >= 1.");
  static_assert(Budget >= 0, "tessel: an attention plan needs a tile budget >= 0 bytes.");
  static constexpr bool ok = true;
};
template <index_t QTile, index_t KvTile, index_t HeadDim, index_t TileBytes, index_t Budget>
struct StaticAttentionTileFitsBudget {
  static_assert(TileBytes <= Budget,
                "tessel: the smallest attention tile at this head_dim needs more bytes than the "
                "tile budget (the template arguments: query tile, key/value tile, head_dim, "
                "bytes, budget).");
  static constexpr bool ok = true;
};

}  // namespace detail

// A plan whose numbers are types: the extent queries return Int<...>, so the kernel bodies
// instantiated with it see T, head_dim and the tiles as constants. An empty object.
template <index_t B, index_t Heads, index_t T, index_t D, index_t ElementBytes, index_t Budget>
struct StaticAttentionPlan {
  static_assert(detail::StaticAttentionPlanArguments<B, Heads, T, D, Budget>::ok);
  static constexpr AttentionPlan value =
      detail::attention_tiles(B, Heads, T, D, ElementBytes, Budget);
  static_assert(detail::StaticAttentionTileFitsBudget<value.q_tile, value.kv_tile, D,
                                                      value.tile_bytes, Budget>::ok);
  static constexpr index_t batch = B;
  static constexpr index_t heads = Heads;
  static constexpr index_t seq_len = T;
  static constexpr index_t head_dim = D;
  static constexpr index_t element_bytes = ElementBytes;
  static constexpr index_t q_tile = value.q_tile;
  static constexpr index_t kv_tile = value.kv_tile;
  static constexpr index_t num_q_tiles = value.num_q_tiles;
  static constexpr index_t num_kv_tiles = value.num_kv_tiles;
  static constexpr index_t tile_bytes = value.tile_bytes;
  static constexpr index_t scratch_bytes = value.scratch_bytes;

  TESSEL_HOST_DEVICE static constexpr Int<B> batch_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<Heads> heads_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<T> seq_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<D> head_dim_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<q_tile> q_tile_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<kv_tile> kv_tile_extent() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<num_q_tiles> q_tile_count() { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<num_kv_tiles> kv_tile_count() { return {}; }
  static constexpr index_t q_work_items() { return value.q_work_items(); }
  static constexpr index_t kv_work_items() { return value.kv_work_items(); }

  constexpr operator AttentionPlan() const { return value; }
};

namespace detail {
template <class P>
struct is_static_attention_plan : std::false_type {};
template <index_t B, index_t H, index_t T, index_t D, index_t E, index_t Budget>
struct is_static_attention_plan<StaticAttentionPlan<B, H, T, D, E, Budget>> : std::true_type {};
}  // namespace detail

// A plan of either kind.
template <class P>
concept AnyAttentionPlan = std::same_as<std::remove_cvref_t<P>, AttentionPlan> ||
    detail::is_static_attention_plan<std::remove_cvref_t<P>>::value;

// The plan of causal attention over (batch, seq_len, heads, head_dim) tensors of Element (float
// or double), with at most budget_bytes kept hot per work item (attention_tile_bytes):
//   tiles start at min(128, next_pow2(seq_len)) rows each; while (q + 2 kv) head_dim S + q kv S
//   > budget (S = sizeof(Element)) they are halved in turn, the key/value tile first, down to 16;
//   num_q_tiles = ceil(seq_len / q_tile), num_kv_tiles = ceil(seq_len / kv_tile),
//   scratch_bytes = align256(batch heads seq_len S).
// Every extent (and the budget) static gives a StaticAttentionPlan; otherwise an AttentionPlan
// with the same numbers, from the same code.
// @pre batch >= 0, heads >= 1, seq_len >= 0, head_dim >= 1, budget_bytes >= 0, and the smallest
//      tile within the budget (tessel::Error, or a static_assert when static)
template <class Element, Integer B, Integer Heads, Integer T, Integer D,
          Integer Budget = Int<default_attention_tile_budget>>
constexpr auto make_attention_plan(B batch, Heads heads, T seq_len, D head_dim,
                                   Budget budget_bytes = {}) {
  static_assert(std::is_same_v<Element, float> || std::is_same_v<Element, double>,
                "tessel: attention computes on float or double tensors.");
  constexpr index_t bytes = static_cast<index_t>(sizeof(Element));
  if constexpr (StaticInt<B> && StaticInt<Heads> && StaticInt<T> && StaticInt<D> &&
                StaticInt<Budget>) {
    return StaticAttentionPlan<B::value, Heads::value, T::value, D::value, bytes, Budget::value>{};
  } else {
    return detail::attention_plan_values(to_index(batch), to_index(heads), to_index(seq_len),
                                         to_index(head_dim), bytes, to_index(budget_bytes));
  }
}

}  // namespace tessel::nn
