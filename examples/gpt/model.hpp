// A GPT-2-style transformer written with tessel: token and position embeddings, pre-LN blocks
// (causal attention, a 4x MLP with GELU), a final LayerNorm and an LM head tied to the token
// embedding whose loss and gradients come from FLCE without the (BT, V) logits. Every extent is a
// type (config.hpp), so each view below is a static layout, the attention plan and the FLCE plan
// are types, and a step is instantiated for exactly its shapes. Forward and backward are the
// library's kernels (tessel::nn, exec::gemm, flce::forward) and expressions, all through one
// executor; nothing here loops over elements.
//
// Parameters live in one flat buffer in GPT-2's order and under GPT-2's names (params.hpp);
// Linear weights are stored (in, out) as GPT-2's Conv1D stores them, so y = x W + b.
#pragma once

#include <cstdint>
#include <span>

#include <tessel/exec/dense.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/nn.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>

#include "config.hpp"
#include "params.hpp"

namespace gpt {

using namespace tessel;

// What the forward keeps for the backward, per block and at the end (Cfg, Bt: config.hpp).
template <class Cfg, class Bt, class T>
struct Activations {
  static constexpr auto N = Bt::tokens;
  static constexpr auto C = Cfg::channels;
  static constexpr auto L = Cfg::layers;
  using Rows = decltype(make_host_tensor<T>(make_shape(L, N, C)));
  // The residual stream entering each block, and the one leaving the last: (L + 1, N, C).
  decltype(make_host_tensor<T>(make_shape(Int<L + 1>{}, N, C))) residual =
      make_host_tensor<T>(make_shape(Int<L + 1>{}, N, C));
  Rows residual_mid = make_host_tensor<T>(make_shape(L, N, C));  // after each block's attention
  Rows ln1 = make_host_tensor<T>(make_shape(L, N, C));
  Rows ln2 = make_host_tensor<T>(make_shape(L, N, C));
  Rows attn = make_host_tensor<T>(make_shape(L, N, C));  // attention's output, (B, T, H, D) rows
  decltype(make_host_tensor<T>(make_shape(L, N, Int<3 * C>{}))) qkv =
      make_host_tensor<T>(make_shape(L, N, Int<3 * C>{}));
  decltype(make_host_tensor<T>(make_shape(L, N, Int<4 * C>{}))) fc =
      make_host_tensor<T>(make_shape(L, N, Int<4 * C>{}));  // before the GELU
  decltype(make_host_tensor<T>(make_shape(L, N, Int<4 * C>{}))) fc_gelu =
      make_host_tensor<T>(make_shape(L, N, Int<4 * C>{}));
  decltype(make_host_tensor<T>(make_shape(L, Bt::batch, Cfg::heads, Bt::seq))) lse =
      make_host_tensor<T>(make_shape(L, Bt::batch, Cfg::heads, Bt::seq));
  decltype(make_host_tensor<T>(make_shape(L, Int<2>{}, N))) ln1_stats =
      make_host_tensor<T>(make_shape(L, Int<2>{}, N));  // mean, rstd
  decltype(make_host_tensor<T>(make_shape(L, Int<2>{}, N))) ln2_stats =
      make_host_tensor<T>(make_shape(L, Int<2>{}, N));
  decltype(make_host_tensor<T>(make_shape(N, C))) lnf = make_host_tensor<T>(make_shape(N, C));
  decltype(make_host_tensor<T>(make_shape(Int<2>{}, N))) lnf_stats =
      make_host_tensor<T>(make_shape(Int<2>{}, N));
};

// The model for configuration Cfg and batch shape Bt in element type T (float or double), run by
// executor X (a host executor).
template <class Cfg, class Bt, class T, exec::HostExecutor X = exec::Auto>
class Model {
  static constexpr auto B = Bt::batch;
  static constexpr auto S = Bt::seq;
  static constexpr auto N = Bt::tokens;
  static constexpr auto C = Cfg::channels;
  static constexpr auto H = Cfg::heads;
  static constexpr auto D = Cfg::head_dim;
  static constexpr auto V = Cfg::vocab;
  static_assert(S.value <= Cfg::context.value, "gpt: a step's sequence exceeds the context.");

 public:
  using config = Cfg;
  using value_type = T;
  // The attention plan every block runs: a type, its tiles constants.
  static constexpr auto attention_plan = nn::make_attention_plan<T>(B, H, S, D);
  // The LM head's FLCE plan for (B T, C) rows over V classes: a type too.
  static constexpr auto head_plan = flce::make_host_plan(N, C, V);

  explicit Model(X executor = {}) : executor_(executor) {}

  // The mean cross-entropy of predicting targets[i] after tokens[0..i] of each sequence, and its
  // gradient with respect to every parameter into grads (overwritten; GPT-2's layout, as params).
  // tokens, targets: B x T row-major, token ids in [0, V).
  double forward_backward(std::span<T const> params, std::span<T> grads,
                          std::span<std::int32_t const> tokens,
                          std::span<std::int32_t const> targets) {
    check_sizes(params.size(), tokens.size(), targets.size());
    check(grads.size() == params.size(), "gpt: grads has ", grads.size(), " values, params ",
          params.size(), ".");
    ParamViews<Cfg, T const> const p(params.data());
    ParamViews<Cfg, T> const g(grads.data());
    auto const ids = make_tensor(tokens.data(), make_shape(N));
    auto const y = make_tensor(targets.data(), make_shape(N));
    forward_blocks(p, ids);
    // The LM head: FLCE's forward gives the loss and, in the same pass, d loss / d ln_f output
    // and d loss / d wte (written first: the embedding's backward adds into it).
    auto dlnf = make_host_tensor<T>(make_shape(N, C));
    accum loss[1] = {};
    flce::forward(head_plan, a_.lnf, p.wte(), y, {},
                  {.loss = make_tensor(loss, make_shape(Int<1>{})),
                   .grad_input = dlnf,
                   .grad_weight = g.wte()},
                  executor_);
    backward_blocks(p, g, ids, dlnf);
    return static_cast<double>(loss[0]);
  }

  // The loss alone (no gradient): evaluation.
  double loss(std::span<T const> params, std::span<std::int32_t const> tokens,
              std::span<std::int32_t const> targets) {
    check_sizes(params.size(), tokens.size(), targets.size());
    ParamViews<Cfg, T const> const p(params.data());
    forward_blocks(p, make_tensor(tokens.data(), make_shape(N)));
    accum loss[1] = {};
    flce::forward(head_plan, a_.lnf, p.wte(), make_tensor(targets.data(), make_shape(N)), {},
                  {.loss = make_tensor(loss, make_shape(Int<1>{}))}, executor_);
    return static_cast<double>(loss[0]);
  }

  // The final LayerNorm's output of the last forward, (B T, C): the LM head's input (sampling
  // multiplies its last row by wte^T).
  auto const& final_hidden() const { return a_.lnf; }

 private:
  using accum = flce::accum_t<T>;

  static void check_sizes(std::size_t params, std::size_t tokens, std::size_t targets) {
    check(params == static_cast<std::size_t>(Cfg::num_params), "gpt: params has ", params,
          " values but the model has ", Cfg::num_params, " parameters.");
    check(
        tokens == static_cast<std::size_t>(N.value) && targets == static_cast<std::size_t>(N.value),
        "gpt: a step takes ", N.value, " tokens and targets (B ", B.value, " x T ", S.value,
        "), not ", tokens, " and ", targets, ".");
  }

  // y = start + x W over rows, y (n, out), x (n, in), W (in, out): `start` (the bias broadcast
  // over the rows, plus the residual where there is one) is written first, then the product is
  // added to it (DenseScale{1, 1}), so a residual branch needs no temporary.
  template <class Y, class Start, class Xin, class W>
  void add_product(Y const& y, Start const& start, Xin const& x, W const& w) {
    assign(y, start, executor_);
    exec::gemm(executor_, y, x, w, {1.0, 1.0});
  }

  // The (B, T, H, D) view of rows (N, C) and q, k, v of qkv rows (N, 3 C).
  template <class R>
  static auto heads_of(R const& rows) {
    return reshape(rows, make_shape(B, S, H, D));
  }
  template <class R>
  static auto qkv_of(R const& rows) {
    auto const all = reshape(rows, make_shape(B, S, Int<3>{}, H, D));
    return std::tuple(all(_, _, 0, _, _), all(_, _, 1, _, _), all(_, _, 2, _, _));
  }

  template <class P, class Ids>
  void forward_blocks(P const& p, Ids const& ids) {
    // x0 = wte[tokens] + wpe[positions].
    auto const x0 = a_.residual(0, _, _);
    nn::embedding(x0, ids, p.wte(), executor_);
    auto const x0_bt = reshape(x0, make_shape(B, S, C));
    auto const positions = p.wpe()(range(Int<0>{}, S), _);
    assign(x0_bt, x0_bt + broadcast_to(positions, x0_bt.shape()), executor_);
    for (index_t l = 0; l < Cfg::layers; ++l) {
      auto const w = p.block(l);
      auto const x = a_.residual(l, _, _);
      auto const mid = a_.residual_mid(l, _, _);
      auto const out = a_.residual(l + 1, _, _);
      auto const ln1 = a_.ln1(l, _, _);
      auto const qkv = a_.qkv(l, _, _);
      auto const attn = a_.attn(l, _, _);
      nn::layer_norm(ln1, a_.ln1_stats(l, 0, _), a_.ln1_stats(l, 1, _), x, w.ln_1_weight,
                     w.ln_1_bias, {}, executor_);
      add_product(qkv, broadcast_to(w.c_attn_bias, qkv.shape()), ln1, w.c_attn_weight);
      auto const [q, k, v] = qkv_of(qkv);
      nn::attention_forward(attention_plan, q, k, v, heads_of(attn), a_.lse(l, _, _, _), executor_);
      // mid = x + attn W_o + b_o.
      add_product(mid, x + broadcast_to(w.attn_proj_bias, mid.shape()), attn, w.attn_proj_weight);
      auto const ln2 = a_.ln2(l, _, _);
      auto const fc = a_.fc(l, _, _);
      auto const act = a_.fc_gelu(l, _, _);
      nn::layer_norm(ln2, a_.ln2_stats(l, 0, _), a_.ln2_stats(l, 1, _), mid, w.ln_2_weight,
                     w.ln_2_bias, {}, executor_);
      add_product(fc, broadcast_to(w.fc_bias, fc.shape()), ln2, w.fc_weight);
      assign(act, nn::gelu(fc), executor_);
      // out = mid + gelu(fc) W_p + b_p.
      add_product(out, mid + broadcast_to(w.mlp_proj_bias, out.shape()), act, w.mlp_proj_weight);
    }
    nn::layer_norm(a_.lnf, a_.lnf_stats(0, _), a_.lnf_stats(1, _), a_.residual(Cfg::layers, _, _),
                   p.ln_f_weight(), p.ln_f_bias(), {}, executor_);
  }

  // The backward of y = x W + b given dy: dW = x^T dy, db = the sum of dy's rows, dx = dy W^T.
  template <class DX, class DY, class Xin, class W, class DW, class DB>
  void linear_backward(DX const& dx, DY const& dy, Xin const& x, W const& w, DW const& dw,
                       DB const& db) {
    exec::gemm(executor_, dw, transpose(x), dy);
    assign(db, sum(dy, mode<0>), executor_);
    exec::gemm(executor_, dx, dy, transpose(w));
  }

  template <class P, class G, class Ids, class DLnf>
  void backward_blocks(P const& p, G const& g, Ids const& ids, DLnf const& dlnf) {
    // d (residual stream), running from the top; scratch for each sublayer's input gradient.
    auto dx = make_host_tensor<T>(make_shape(N, C));
    auto dln = make_host_tensor<T>(make_shape(N, C));
    auto dattn = make_host_tensor<T>(make_shape(N, C));
    auto dqkv = make_host_tensor<T>(make_shape(N, Int<3 * C>{}));
    auto dfc = make_host_tensor<T>(make_shape(N, Int<4 * C>{}));
    nn::layer_norm_backward(dx, g.ln_f_weight(), g.ln_f_bias(), dlnf,
                            a_.residual(Cfg::layers, _, _), p.ln_f_weight(), a_.lnf_stats(0, _),
                            a_.lnf_stats(1, _), executor_);
    for (index_t l = Cfg::layers - 1; l >= 0; --l) {
      auto const w = p.block(l);
      auto const gw = g.block(l);
      // out = mid + gelu(fc) W_p + b_p: d mid = d out (kept in dx) + the MLP branch's.
      linear_backward(dfc, dx, a_.fc_gelu(l, _, _), w.mlp_proj_weight, gw.mlp_proj_weight,
                      gw.mlp_proj_bias);
      assign(dfc, nn::gelu_backward(dfc, a_.fc(l, _, _)), executor_);
      linear_backward(dln, dfc, a_.ln2(l, _, _), w.fc_weight, gw.fc_weight, gw.fc_bias);
      nn::layer_norm_backward(dattn, gw.ln_2_weight, gw.ln_2_bias, dln, a_.residual_mid(l, _, _),
                              w.ln_2_weight, a_.ln2_stats(l, 0, _), a_.ln2_stats(l, 1, _),
                              executor_);
      assign(dx, dx + dattn, executor_);
      // mid = x + attn W_o + b_o: d x = d mid + the attention branch's.
      linear_backward(dattn, dx, a_.attn(l, _, _), w.attn_proj_weight, gw.attn_proj_weight,
                      gw.attn_proj_bias);
      auto const [q, k, v] = qkv_of(a_.qkv(l, _, _));
      auto const [dq, dk, dv] = qkv_of(dqkv);
      nn::attention_backward(
          attention_plan,
          nn::AttentionSaved{q, k, v, heads_of(a_.attn(l, _, _)), a_.lse(l, _, _, _)},
          heads_of(dattn), nn::AttentionGrads{dq, dk, dv}, executor_);
      linear_backward(dln, dqkv, a_.ln1(l, _, _), w.c_attn_weight, gw.c_attn_weight,
                      gw.c_attn_bias);
      nn::layer_norm_backward(dattn, gw.ln_1_weight, gw.ln_1_bias, dln, a_.residual(l, _, _),
                              w.ln_1_weight, a_.ln1_stats(l, 0, _), a_.ln1_stats(l, 1, _),
                              executor_);
      assign(dx, dx + dattn, executor_);
    }
    // x0 = wte[tokens] + wpe[positions]: wpe's rows [0, T) get the batch's sum, the rest 0; wte
    // gets the scatter-add on top of the LM head's gradient.
    auto const dwpe = g.wpe();
    assign(dwpe, T(0), executor_);
    assign(dwpe(range(Int<0>{}, S), _), sum(reshape(dx, make_shape(B, S, C)), mode<0>), executor_);
    nn::embedding_backward(g.wte(), ids, dx, executor_);
  }

  X executor_;
  Activations<Cfg, Bt, T> a_;
};

}  // namespace gpt
