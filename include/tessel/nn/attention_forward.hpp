// Causal multi-head attention, forward: out = softmax(q k^T / sqrt(head_dim) + causal mask) v for
// every batch and head, and each row's log-sum-exp of the scaled scores, which the backward pass
// recomputes the probabilities from. FlashAttention's online softmax: a query row walks the
// key/value tiles of its causal prefix, keeping its running maximum m and sum l (exec::LseState,
// the state of exec's online logsumexp) and its unnormalized output; when a tile raises the
// maximum to m', the sum and the output are rescaled by exp(m - m'):
//   s_j = (q_i . k_j) / sqrt(d),  j <= i, j in the tile
//   m'  = max(m, max_j s_j),  p_j = exp(s_j - m')
//   l   = l exp(m - m') + sum_j p_j,  o = o exp(m - m') + sum_j p_j v_j
// and at the end out_i = o / l, lse_i = m + log l. No more than one tile of scores exists per row;
// the masked scores (j > i) of a diagonal tile are -inf, so their probabilities are 0.
#pragma once

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../core/layout.hpp"
#include "../exec/body/reduce_ops.hpp"
#include "../exec/executors.hpp"
#include "../exec/rows.hpp"
#include "../expr/scalar_math.hpp"
#include "../tensor/tensor.hpp"
#include "attention_checks.hpp"
#include "attention_plan.hpp"
#include "attention_rows.hpp"
#include "attention_tensors.hpp"
#include "attention_tiles.hpp"

namespace tessel::nn {

namespace detail {

// The forward body: work item = (batch, head, query tile); the tile's rows are dealt to the
// lanes, and each lane works on its rows as a matrix: per key/value tile, its scores S = Q K^T /
// sqrt(d) (one product), the online-softmax update of each row, and O += P V (one product).
template <AnyAttentionPlan Plan, class Q, class K, class V, class O, class L>
struct AttentionForwardRows {
  using C = typename O::value_type;
  Plan plan{};
  Q q;
  K k;
  V v;
  O out;
  L lse;
  C scale = 1;  // 1 / sqrt(head_dim)

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t item) const {
    using QTile = decltype(plan.q_tile_extent());
    using KvTile = decltype(plan.kv_tile_extent());
    constexpr index_t rows_cap = lane_rows_capacity_v<Ctx, tile_capacity_v<QTile>>;
    constexpr index_t cols_cap = tile_capacity_v<KvTile>;
    auto const d = plan.head_dim_extent();
    auto const q_tile = plan.q_tile_extent();
    auto const kv_tile = plan.kv_tile_extent();
    LaneTile const w = lane_tile(ctx, plan, plan.q_tile_count(), q_tile, item);
    index_t const b = w.batch, h = w.head;
    LaneRows const mine = w.rows;
    if (mine.count == 0) return;
    C const* const qs = head_row(q, b, mine.first, h);  // (count, d) this lane's query rows
    C* const os = head_row(out, b, mine.first, h);      // (count, d) their output rows
    auto const ldq = lane_row_stride(q, ctx.lanes());
    auto const ldo = lane_row_stride(out, ctx.lanes());
    auto const ldk = get<1>(k.stride());
    auto const ldv = get<1>(v.stride());
    C s[rows_cap * cols_cap];  // (count, kv_tile) scores, then probabilities, rows cols_cap apart
    exec::LogSumExpOp<C> const lse_op{};
    exec::LseState<C> state[rows_cap];  // each row's running maximum and sum
    for (index_t r = 0; r < mine.count; ++r) {
      row_zero(os + r * ldo, d);
      state[r] = lse_op.identity();
    }
    for (index_t first = 0; first <= mine.last(); first += kv_tile) {
      index_t const cols =
          first + kv_tile <= mine.last() + 1 ? index_t{kv_tile} : mine.last() + 1 - first;
      product_abt(mine.count, cols, d, scale, qs, ldq, head_row(k, b, first, h), ldk, C(0), s,
                  Int<cols_cap>{});
      for (index_t r = 0; r < mine.count; ++r) {
        C* const sr = s + r * cols_cap;
        index_t const kept = mine.row(r) + 1 - first;  // key rows j <= i of this tile
        if (kept <= 0) {                               // the whole tile is masked for this row
          row_zero(sr, cols);
          continue;
        }
        index_t const n = kept < cols ? kept : cols;
        for (index_t j = n; j < cols; ++j) sr[j] = C(0);
        // The tile's state (m_t, sum_j exp(s_j - m_t)) merged into the row's, as exec::LogSumExpOp
        // merges two states: both rescaled to m' = max(m, m_t); exp(m - m') also rescales the
        // output row, exp(m_t - m') the probabilities.
        exec::ShiftedExp<C> const tile = exp_shifted_row(sr, n);
        C const m = math::max(state[r].max, tile.max);
        C const old_factor = math::exp(state[r].max - m);  // 0 for the first tile
        C const tile_factor = math::exp(tile.max - m);
        state[r] = {m, state[r].sum * old_factor + tile.sum * tile_factor};
        if (old_factor != C(1)) row_scale(os + r * ldo, old_factor, d);
        if (tile_factor != C(1)) row_scale(sr, tile_factor, n);
      }
      product_add_ab(mine.count, d, cols, s, Int<cols_cap>{}, head_row(v, b, first, h), ldv, os,
                     ldo);
    }
    for (index_t r = 0; r < mine.count; ++r) {
      row_scale(os + r * ldo, C(1) / state[r].sum, d);
      lse(b, h, mine.row(r)) = lse_op.finalize(state[r], 0);
    }
  }
};

template <AnyAttentionPlan Plan, class Q, class K, class V, class O, class L>
AttentionForwardRows(Plan, Q, K, V, O, L, typename O::value_type)
    -> AttentionForwardRows<Plan, Q, K, V, O, L>;

// 1 / sqrt(head_dim) in the compute type.
template <class C>
C attention_scale(index_t head_dim) {
  return C(1) / math::sqrt(static_cast<C>(head_dim));
}

}  // namespace detail

// Causal attention over (B, T, heads, head_dim) tensors q, k, v (views of any strides whose
// head_dim is contiguous: slices of a (B, T, 3 C) qkv tensor are), with the scale
// 1 / sqrt(head_dim): out (B, T, heads, head_dim) and lse (B, heads, T), the log-sum-exp of each
// row's scaled, masked scores. PyTorch: F.scaled_dot_product_attention(q', k', v',
// is_causal=True) with q' = q.transpose(1, 2). Runs on the executor (a host executor for host
// tensors; exec::Cuda with <tessel/nn/attention_cuda.cuh>). Checks every shape and stride before
// anything is written.
// @pre out does not overlap q, k or v
template <AnyAttentionPlan Plan, TensorType Q, TensorType K, TensorType V, TensorType O,
          TensorType L, exec::Executor X = exec::Auto>
void attention_forward(Plan const& plan, Q const& q, K const& k, V const& v, O const& out,
                       L const& lse, X const& executor = {}) {
  detail::check_attention_types<X, Plan, O, Q, K, V, L>(plan);
  detail::check_head_tensor<0>(plan, q);
  detail::check_head_tensor<1>(plan, k);
  detail::check_head_tensor<2>(plan, v);
  detail::check_head_tensor<3>(plan, out);
  detail::check_lse_tensor(plan, lse);
  using C = typename O::value_type;
  detail::AttentionForwardRows const body{
      plan,
      q.view(),
      k.view(),
      v.view(),
      out.view(),
      lse.view(),
      detail::attention_scale<C>(index_t{plan.head_dim_extent()})};
  // A query tile's rows, each over half the sequence on average, head_dim wide.
  index_t const row_work =
      index_t{plan.q_tile_extent()} * index_t{plan.seq_extent()} * index_t{plan.head_dim_extent()};
  using exec::for_each_row;  // and exec::Cuda's, found through the executor's namespace
  for_each_row(executor, plan.q_work_items(), row_work, body);
}

// The same with the plan make_attention_plan gives q's shape (static when q's shape is).
template <TensorType Q, TensorType K, TensorType V, TensorType O, TensorType L,
          exec::Executor X = exec::Auto>
void attention_forward(Q const& q, K const& k, V const& v, O const& out, L const& lse,
                       X const& executor = {}) {
  attention_forward(make_attention_plan_for<typename O::value_type>(q.shape()), q, k, v, out, lse,
                    executor);
}

}  // namespace tessel::nn
