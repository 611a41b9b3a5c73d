// Causal multi-head attention, forward: out = softmax(q k^T / sqrt(head_dim) + causal mask) v for
// every batch and head, and each row's log-sum-exp of the scaled scores, which the backward pass
// recomputes the probabilities from. FlashAttention's online softmax: a query row walks the
// key/value tiles of its causal prefix, keeping its running maximum m and sum l (exec::LseState,
// the state of exec's online logsumexp) and its unnormalized output; when a tile raises the
// maximum to m', the sum and the output are rescaled by exp(m - m'):
//   s_j = (q_i . k_j) / sqrt(d),  j <= i, j in the tile
//   m'  = max(m, max_j s_j),  p_j = exp(s_j - m')
//   l   = l exp(m - m') + sum_j p_j,  o = o exp(m - m') + sum_j p_j v_j
// and at the end out_i = o / l, lse_i = m + log l. No more than one tile of scores exists per row.
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

namespace tessel::nn {

namespace detail {

// The forward body: work item = (batch, head, query tile); the tile's rows are the lanes'.
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
    auto const d = plan.head_dim_extent();
    auto const q_tile = plan.q_tile_extent();
    AttentionItem const w = attention_item(plan, plan.q_tile_count(), item);
    index_t const first = w.tile * q_tile;
    index_t const last = first + q_tile < plan.seq_extent() ? first + q_tile : plan.seq_extent();
    for (index_t i = first + ctx.lane(); i < last; i += ctx.lanes()) row(w, i, d);
  }

 private:
  // Query row i of (w.batch, w.head): its output row and log-sum-exp.
  template <Integer D>
  TESSEL_HOST_DEVICE void row(AttentionItem const& w, index_t i, D d) const {
    auto const kv_tile = plan.kv_tile_extent();
    index_t const b = w.batch, h = w.head;
    C const* const qi = head_row(q, b, i, h);
    C* const oi = head_row(out, b, i, h);
    row_zero(oi, d);
    exec::LogSumExpOp<C> const lse_op{};
    exec::LseState<C> state = lse_op.identity();
    C s[kv_tile_capacity_v<Plan>];  // (kv_tile) this row's scores against one key/value tile
    for (index_t first = 0; first <= i; first += kv_tile) {
      index_t const n = first + kv_tile <= i + 1 ? index_t{kv_tile} : i + 1 - first;
      C tile_max = -math::infinity<C>();
      for (index_t j = 0; j < n; ++j) {
        s[j] = scale * row_dot(qi, head_row(k, b, first + j, h), d);
        tile_max = math::max(tile_max, s[j]);
      }
      C const m = math::max(state.max, tile_max);
      C const rescale = math::exp(state.max - m);  // 0 for the first tile (max -inf)
      C sum = 0;
      for (index_t j = 0; j < n; ++j) {
        s[j] = math::exp(s[j] - m);
        sum += s[j];
      }
      state = {m, state.sum * rescale + sum};
      if (rescale != C(1)) row_scale(oi, rescale, d);
      for (index_t j = 0; j < n; ++j) row_axpy(oi, s[j], head_row(v, b, first + j, h), d);
    }
    row_scale(oi, C(1) / state.sum, d);
    lse(b, h, i) = lse_op.finalize(state, 0);
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
      plan,     q.view(),
      k.view(), v.view(),
      out.view(), lse.view(),
      detail::attention_scale<C>(index_t{plan.head_dim_extent()})};
  // A query tile's rows, each over half the sequence on average, head_dim wide.
  index_t const row_work = index_t{plan.q_tile_extent()} * index_t{plan.seq_extent()} *
                           index_t{plan.head_dim_extent()};
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
