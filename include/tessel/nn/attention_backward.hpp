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
// over key/value tiles and adds dq with atomics; two passes recompute s and dp once more (7 row
// products per (i, j) instead of 5) and give the same bits whatever the threads (docs/attention.md).
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

namespace tessel::nn {

namespace detail {

// What both backward bodies read: the saved tensors, grad_out, D's scratch (B, heads, T) and the
// scale.
template <AnyAttentionPlan Plan, class Saved, class GO, class Delta>
struct AttentionBackwardArgs {
  using C = typename GO::value_type;
  Plan plan{};
  Saved saved;  // AttentionSaved of views
  GO grad_out;
  Delta delta;  // (B, heads, T) D_i = dO_i . O_i
  C scale = 1;

  // p_ij and ds_ij / sqrt(d) of query row i and key row j, with lse_i and D_i given.
  template <Integer D>
  TESSEL_HOST_DEVICE TESSEL_FORCEINLINE void probability(C const* qi, C const* doi, C const* kj,
                                                         C const* vj, C lse_i, C delta_i, D d,
                                                         C& p, C& ds) const {
    p = math::exp(scale * row_dot(qi, kj, d) - lse_i);
    ds = scale * (p * (row_dot(doi, vj, d) - delta_i));
  }
};

// The dq pass: work item = (batch, head, query tile); lane rows are query rows. Writes D_i too.
template <AnyAttentionPlan Plan, class Saved, class GO, class Delta, class DQ>
struct AttentionGradQRows : AttentionBackwardArgs<Plan, Saved, GO, Delta> {
  using args_type = AttentionBackwardArgs<Plan, Saved, GO, Delta>;
  using C = typename args_type::C;
  DQ grad_q;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t item) const {
    args_type const& a = *this;
    auto const d = a.plan.head_dim_extent();
    auto const q_tile = a.plan.q_tile_extent();
    AttentionItem const w = attention_item(a.plan, a.plan.q_tile_count(), item);
    index_t const b = w.batch, h = w.head;
    index_t const first = w.tile * q_tile;
    index_t const last =
        first + q_tile < a.plan.seq_extent() ? first + q_tile : a.plan.seq_extent();
    for (index_t i = first + ctx.lane(); i < last; i += ctx.lanes()) {
      C const* const qi = head_row(a.saved.q, b, i, h);
      C const* const doi = head_row(a.grad_out, b, i, h);
      C* const dqi = head_row(grad_q, b, i, h);
      C const delta_i = row_dot(doi, static_cast<C const*>(head_row(a.saved.out, b, i, h)), d);
      a.delta(b, h, i) = delta_i;
      C const lse_i = a.saved.lse(b, h, i);
      row_zero(dqi, d);
      for (index_t j = 0; j <= i; ++j) {
        C const* const kj = head_row(a.saved.k, b, j, h);
        C p, ds;
        a.probability(qi, doi, kj, head_row(a.saved.v, b, j, h), lse_i, delta_i, d, p, ds);
        row_axpy(dqi, ds, kj, d);
      }
    }
  }
};

// The dk/dv pass: work item = (batch, head, key/value tile); lane rows are key rows. Query rows
// are walked a query tile at a time, so a tile of q and dO rows serves every key row of the work
// item while it is in cache. Reads the D_i the dq pass wrote.
template <AnyAttentionPlan Plan, class Saved, class GO, class Delta, class DK, class DV>
struct AttentionGradKVRows : AttentionBackwardArgs<Plan, Saved, GO, Delta> {
  using args_type = AttentionBackwardArgs<Plan, Saved, GO, Delta>;
  using C = typename args_type::C;
  DK grad_k;
  DV grad_v;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t item) const {
    args_type const& a = *this;
    auto const d = a.plan.head_dim_extent();
    auto const kv_tile = a.plan.kv_tile_extent();
    auto const q_tile = a.plan.q_tile_extent();
    index_t const t = a.plan.seq_extent();
    AttentionItem const w = attention_item(a.plan, a.plan.kv_tile_count(), item);
    index_t const b = w.batch, h = w.head;
    index_t const first = w.tile * kv_tile;
    index_t const last = first + kv_tile < t ? first + kv_tile : t;
    for (index_t j = first + ctx.lane(); j < last; j += ctx.lanes()) {
      row_zero(head_row(grad_k, b, j, h), d);
      row_zero(head_row(grad_v, b, j, h), d);
    }
    // Query tiles from the one holding the work item's first key row (the earlier ones are
    // masked for every key row here).
    for (index_t tile_first = first / q_tile * q_tile; tile_first < t; tile_first += q_tile) {
      index_t const tile_last = tile_first + q_tile < t ? tile_first + q_tile : t;
      for (index_t j = first + ctx.lane(); j < last; j += ctx.lanes()) {
        C const* const kj = head_row(a.saved.k, b, j, h);
        C const* const vj = head_row(a.saved.v, b, j, h);
        C* const dkj = head_row(grad_k, b, j, h);
        C* const dvj = head_row(grad_v, b, j, h);
        for (index_t i = tile_first > j ? tile_first : j; i < tile_last; ++i) {
          C const* const qi = head_row(a.saved.q, b, i, h);
          C const* const doi = head_row(a.grad_out, b, i, h);
          C p, ds;
          a.probability(qi, doi, kj, vj, a.saved.lse(b, h, i), a.delta(b, h, i), d, p, ds);
          row_axpy(dvj, p, doi, d);
          row_axpy(dkj, ds, qi, d);
        }
      }
    }
  }
};

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
  auto const& views = saved;  // views already
  using Args = detail::AttentionBackwardArgs<Plan, decltype(views), decltype(grad_out.view()),
                                             decltype(delta)>;
  Args const args{plan, views, grad_out.view(), delta,
                  detail::attention_scale<C>(index_t{plan.head_dim_extent()})};
  index_t const row_work = index_t{plan.q_tile_extent()} * index_t{plan.seq_extent()} *
                           index_t{plan.head_dim_extent()};
  using exec::for_each_row;  // and exec::Cuda's, found through the executor's namespace
  for_each_row(executor, plan.q_work_items(), row_work,
               detail::AttentionGradQRows<Plan, decltype(views), decltype(grad_out.view()),
                                          decltype(delta), decltype(grads.q.view())>{
                   args, grads.q.view()});
  for_each_row(executor, plan.kv_work_items(), row_work,
               detail::AttentionGradKVRows<Plan, decltype(views), decltype(grad_out.view()),
                                           decltype(delta), decltype(grads.k.view()),
                                           decltype(grads.v.view())>{
                   args, grads.k.view(), grads.v.view()});
}

// The same with the plan make_attention_plan gives q's shape.
template <class Q, class K, class V, class O, class L, TensorType GO, class DQ, class DK,
          class DV, exec::Executor X = exec::Auto>
void attention_backward(AttentionSaved<Q, K, V, O, L> const& saved, GO const& grad_out,
                        AttentionGrads<DQ, DK, DV> const& grads, X const& executor = {}) {
  attention_backward(make_attention_plan_for<typename GO::value_type>(saved.q.shape()), saved,
                     grad_out, grads, executor);
}

}  // namespace tessel::nn
