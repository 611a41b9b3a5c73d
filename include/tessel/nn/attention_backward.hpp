// Causal multi-head attention, backward: dq, dk and dv from the forward's inputs, output and saved
// log-sum-exp, and grad_out, FlashAttention-2's backward. The probabilities are recomputed per
// row from the log-sum-exp, never stored:
//   p_ij  = exp(s_ij - lse_i),  s_ij = (q_i . k_j) / sqrt(d),  j <= i
//   D_i   = sum_c dO_ic O_ic                     (= sum_j p_ij dp_ij)
//   dp_ij = dO_i . v_j,   ds_ij = p_ij (dp_ij - D_i)
//   dq_i  = sum_{j <= i} ds_ij k_j / sqrt(d)
//   dk_j  = sum_{i >= j} ds_ij q_i / sqrt(d),   dv_j = sum_{i >= j} p_ij dO_i
// in two passes, each parallel without atomics: the dq pass (work item = batch, head, query tile;
// a lane owns query rows) computes D_i into scratch and dq_i; the dk/dv pass (work item = batch,
// head, key/value tile; a lane owns key rows) then dk_j and dv_j. FlashAttention-2 makes one pass
// over key/value tiles and adds dq with atomics; two passes compute S and dP twice (7 tile
// products instead of 5) and give the same bits whatever the threads (docs/attention.md).
#pragma once

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../core/layout.hpp"
#include "../exec/executors.hpp"
#include "../exec/memory.hpp"
#include "../exec/rows.hpp"
#include "../expr/scalar_math.hpp"
#include "../tensor/tensor.hpp"
#include "attention_checks.hpp"
#include "attention_forward.hpp"
#include "attention_plan.hpp"
#include "attention_rows.hpp"
#include "attention_tensors.hpp"
#include "attention_tiles.hpp"

namespace tessel::nn {

namespace detail {

// What both backward bodies read: the saved tensors, grad_out, D's scratch (B, heads, T) and the
// scale.
template <AnyAttentionPlan Plan, class Saved, class GO, class Delta>
struct AttentionBackwardArgs {
  using C = typename GO::value_type;
  Plan plan{};
  Saved saved;  // AttentionSaved (views)
  GO grad_out;
  Delta delta;  // (B, heads, T) D_i = dO_i . O_i
  C scale = 1;

  // ds = p (dp - D) / sqrt(d) over a (rows, cols) tile whose p and dp are rows cols_cap apart,
  // D per row (delta_col 0) or per column (delta_row 0); written over dp.
  template <index_t ColsCap, class DR, class DC>
  TESSEL_HOST_DEVICE void score_gradient(C const* p, C* dp, index_t rows, index_t cols, C const* d,
                                         DR delta_row, DC delta_col) const {
    for (index_t r = 0; r < rows; ++r)
      for (index_t j = 0; j < cols; ++j) {
        index_t const at = r * ColsCap + j;
        dp[at] = scale * (p[at] * (dp[at] - d[r * delta_row + j * delta_col]));
      }
  }
};

// The dq pass: work item = (batch, head, query tile); a lane's rows are query rows. Per key/value
// tile: S = Q K^T / sqrt(d), P = exp(S - lse) (masked: 0), dP = dO V^T, dS = P (dP - D) /
// sqrt(d), dQ += dS K. Writes D_i (for the dk/dv pass) first.
template <AnyAttentionPlan Plan, class Saved, class GO, class Delta, class DQ>
struct AttentionGradQRows : AttentionBackwardArgs<Plan, Saved, GO, Delta> {
  using args_type = AttentionBackwardArgs<Plan, Saved, GO, Delta>;
  using C = typename args_type::C;
  DQ grad_q;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t item) const {
    args_type const& a = *this;
    using QTile = decltype(a.plan.q_tile_extent());
    using KvTile = decltype(a.plan.kv_tile_extent());
    constexpr index_t rows_cap = lane_rows_capacity_v<Ctx, tile_capacity_v<QTile>>;
    constexpr index_t cols_cap = tile_capacity_v<KvTile>;
    auto const d = a.plan.head_dim_extent();
    auto const q_tile = a.plan.q_tile_extent();
    auto const kv_tile = a.plan.kv_tile_extent();
    LaneTile const w = lane_tile(ctx, a.plan, a.plan.q_tile_count(), q_tile, item);
    index_t const b = w.batch, h = w.head;
    LaneRows const mine = w.rows;
    if (mine.count == 0) return;
    auto const& sv = a.saved;
    C const* const qs = head_row(sv.q, b, mine.first, h);         // (count, d)
    C const* const dos = head_row(a.grad_out, b, mine.first, h);  // (count, d)
    C* const dqs = head_row(grad_q, b, mine.first, h);            // (count, d)
    auto const ldq = lane_row_stride(sv.q, ctx.lanes());
    auto const lddo = lane_row_stride(a.grad_out, ctx.lanes());
    auto const lddq = lane_row_stride(grad_q, ctx.lanes());
    auto const ldk = get<1>(sv.k.stride());
    auto const ldv = get<1>(sv.v.stride());
    C p[rows_cap * cols_cap];   // (count, kv_tile) scores, then probabilities
    C dp[rows_cap * cols_cap];  // (count, kv_tile) dO V^T, then dS
    C lse_rows[rows_cap], delta_rows[rows_cap];
    for (index_t r = 0; r < mine.count; ++r) {
      index_t const i = mine.row(r);
      delta_rows[r] = row_dot(dos + r * lddo, static_cast<C const*>(head_row(sv.out, b, i, h)), d);
      a.delta(b, h, i) = delta_rows[r];
      lse_rows[r] = sv.lse(b, h, i);
      row_zero(dqs + r * lddq, d);
    }
    for (index_t first = 0; first <= mine.last(); first += kv_tile) {
      index_t const cols =
          first + kv_tile <= mine.last() + 1 ? index_t{kv_tile} : mine.last() + 1 - first;
      C const* const ks = head_row(sv.k, b, first, h);
      product_abt(mine.count, cols, d, a.scale, qs, ldq, ks, ldk, C(0), p, Int<cols_cap>{});
      for (index_t r = 0; r < mine.count; ++r) {
        index_t const kept = mine.row(r) + 1 - first;  // key rows j <= i of this tile
        for (index_t j = kept > 0 ? kept : 0; j < cols; ++j)
          p[r * cols_cap + j] = -math::infinity<C>();
      }
      exp_shifted(p, mine.count, cols, Int<cols_cap>{}, lse_rows, Int<1>{}, Int<0>{});
      product_abt(mine.count, cols, d, C(1), dos, lddo, head_row(sv.v, b, first, h), ldv, C(0), dp,
                  Int<cols_cap>{});
      a.template score_gradient<cols_cap>(p, dp, mine.count, cols, delta_rows, Int<1>{}, Int<0>{});
      product_add_ab(mine.count, d, cols, dp, Int<cols_cap>{}, ks, ldk, dqs, lddq);
    }
  }
};

// The dk/dv pass: work item = (batch, head, key/value tile); a lane's rows are key rows. Per
// query tile from the diagonal on: S^T = K Q^T / sqrt(d), P^T = exp(S^T - lse) (masked: 0),
// dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - D) / sqrt(d), dK += dS^T Q. Reads the D_i the
// dq pass wrote.
template <AnyAttentionPlan Plan, class Saved, class GO, class Delta, class DK, class DV>
struct AttentionGradKVRows : AttentionBackwardArgs<Plan, Saved, GO, Delta> {
  using args_type = AttentionBackwardArgs<Plan, Saved, GO, Delta>;
  using C = typename args_type::C;
  DK grad_k;
  DV grad_v;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t item) const {
    args_type const& a = *this;
    using QTile = decltype(a.plan.q_tile_extent());
    using KvTile = decltype(a.plan.kv_tile_extent());
    constexpr index_t rows_cap = lane_rows_capacity_v<Ctx, tile_capacity_v<KvTile>>;
    constexpr index_t cols_cap = tile_capacity_v<QTile>;
    auto const d = a.plan.head_dim_extent();
    auto const q_tile = a.plan.q_tile_extent();
    auto const kv_tile = a.plan.kv_tile_extent();
    index_t const t = a.plan.seq_extent();
    LaneTile const w = lane_tile(ctx, a.plan, a.plan.kv_tile_count(), kv_tile, item);
    index_t const b = w.batch, h = w.head;
    LaneRows const mine = w.rows;
    if (mine.count == 0) return;
    auto const& sv = a.saved;
    C const* const ks = head_row(sv.k, b, mine.first, h);  // (count, d)
    C const* const vs = head_row(sv.v, b, mine.first, h);  // (count, d)
    C* const dks = head_row(grad_k, b, mine.first, h);     // (count, d)
    C* const dvs = head_row(grad_v, b, mine.first, h);     // (count, d)
    auto const ldk = lane_row_stride(sv.k, ctx.lanes());
    auto const ldv = lane_row_stride(sv.v, ctx.lanes());
    auto const lddk = lane_row_stride(grad_k, ctx.lanes());
    auto const lddv = lane_row_stride(grad_v, ctx.lanes());
    auto const ldq = get<1>(sv.q.stride());
    auto const lddo = get<1>(a.grad_out.stride());
    auto const lse_stride = get<2>(sv.lse.stride());
    auto const delta_stride = get<2>(a.delta.stride());
    for (index_t r = 0; r < mine.count; ++r) {
      row_zero(dks + r * lddk, d);
      row_zero(dvs + r * lddv, d);
    }
    C p[rows_cap * cols_cap];   // (count, q_tile) scores S^T, then probabilities P^T
    C dp[rows_cap * cols_cap];  // (count, q_tile) V dO^T, then dS^T
    // Query tiles from the one holding the lane's first key row (earlier ones are masked).
    for (index_t first = mine.first / q_tile * q_tile; first < t; first += q_tile) {
      index_t const cols = first + q_tile <= t ? index_t{q_tile} : t - first;
      C const* const qs = head_row(sv.q, b, first, h);
      C const* const dos = head_row(a.grad_out, b, first, h);
      product_abt(mine.count, cols, d, a.scale, ks, ldk, qs, ldq, C(0), p, Int<cols_cap>{});
      for (index_t r = 0; r < mine.count; ++r)
        for (index_t c = 0; c < cols && first + c < mine.row(r); ++c)
          p[r * cols_cap + c] = -math::infinity<C>();
      exp_shifted(p, mine.count, cols, Int<cols_cap>{}, &sv.lse(b, h, first), Int<0>{}, lse_stride);
      product_add_ab(mine.count, d, cols, p, Int<cols_cap>{}, dos, lddo, dvs, lddv);
      product_abt(mine.count, cols, d, C(1), vs, ldv, dos, lddo, C(0), dp, Int<cols_cap>{});
      a.template score_gradient<cols_cap>(p, dp, mine.count, cols, &a.delta(b, h, first), Int<0>{},
                                          delta_stride);
      product_add_ab(mine.count, d, cols, dp, Int<cols_cap>{}, qs, ldq, dks, lddk);
    }
  }
};

// The two passes' bodies over the checked views and D's (B, heads, T) scratch view: the dq pass
// (plan.q_work_items() items), then the dk/dv pass (plan.kv_work_items()).
template <class Plan, class Saved, class GO, class Grads, class Delta>
auto attention_backward_bodies(Plan const& plan, Saved const& saved, GO const& grad_out,
                               Grads const& grads, Delta const& delta) {
  using C = typename GO::value_type;
  using Args = AttentionBackwardArgs<Plan, Saved, GO, Delta>;
  Args const args{plan, saved, grad_out, delta,
                  attention_scale<C>(index_t{plan.head_dim_extent()})};
  struct Bodies {
    AttentionGradQRows<Plan, Saved, GO, Delta, decltype(grads.q)> grad_q;
    AttentionGradKVRows<Plan, Saved, GO, Delta, decltype(grads.k), decltype(grads.v)> grad_kv;
  };
  return Bodies{{args, grads.q}, {args, grads.k, grads.v}};
}

}  // namespace detail

// The gradients of attention_forward's out with respect to q, k and v, given grad_out (B, T,
// heads, head_dim) = d loss / d out and the forward's tensors with its saved lse. Writes every
// element of grads.q, grads.k and grads.v (they need no zeroing). Allocates the plan's
// scratch_bytes (D, one value a row) from the executor's memory. Checks every shape and stride
// before anything is written.
// @pre the gradients do not overlap each other or the inputs
template <AnyAttentionPlan Plan, class Q, class K, class V, class O, class L, TensorType GO,
          class DQ, class DK, class DV, exec::Executor X = exec::Auto>
void attention_backward(Plan const& plan, AttentionSaved<Q, K, V, O, L> const& saved,
                        GO const& grad_out, AttentionGrads<DQ, DK, DV> const& grads,
                        X const& executor = {}) {
  detail::check_attention_types<X, Plan, DQ, DK, DV, Q, K, V, O, L, GO>(plan);
  detail::check_head_tensor<0>(plan, saved.q);
  detail::check_head_tensor<1>(plan, saved.k);
  detail::check_head_tensor<2>(plan, saved.v);
  detail::check_head_tensor<3>(plan, saved.out);
  detail::check_lse_tensor(plan, saved.lse);
  detail::check_head_tensor<5>(plan, grad_out);
  detail::check_head_tensor<6>(plan, grads.q);
  detail::check_head_tensor<7>(plan, grads.k);
  detail::check_head_tensor<8>(plan, grads.v);
  using C = typename GO::value_type;
  if (plan.q_work_items() == 0) return;
  auto const delta_storage = exec::Memory<X>::template scratch<C>(
      executor, index_t{plan.batch_extent()} * plan.heads_extent() * plan.seq_extent(),
      "attention");
  auto const delta = exec::Memory<X>::view(
      delta_storage.data(),
      make_layout(make_shape(plan.batch_extent(), plan.heads_extent(), plan.seq_extent())));
  auto const bodies = detail::attention_backward_bodies(plan, saved, grad_out.view(), grads, delta);
  index_t const row_work =
      index_t{plan.q_tile_extent()} * index_t{plan.seq_extent()} * index_t{plan.head_dim_extent()};
  using exec::for_each_row;  // and exec::Cuda's, found through the executor's namespace
  for_each_row(executor, plan.q_work_items(), row_work, bodies.grad_q);
  for_each_row(executor, plan.kv_work_items(), row_work, bodies.grad_kv);
}

// The same with the plan make_attention_plan gives q's shape.
template <class Q, class K, class V, class O, class L, TensorType GO, class DQ, class DK, class DV,
          exec::Executor X = exec::Auto>
void attention_backward(AttentionSaved<Q, K, V, O, L> const& saved, GO const& grad_out,
                        AttentionGrads<DQ, DK, DV> const& grads, X const& executor = {}) {
  attention_backward(make_attention_plan_for<typename GO::value_type>(saved.q.shape()), saved,
                     grad_out, grads, executor);
}

}  // namespace tessel::nn
