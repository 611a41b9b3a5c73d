// The fused per-row body of FLCE, shared by the host path (with a sequential context) and the CUDA
// row kernel (with a block context): from one row of logits it computes the logsumexp, the row's
// cross-entropy and z-loss terms, and — in the epilogue — the logits gradient, written in place
// or into a buffer of the storage type. Only the context's reduction differs between the two.
// The row is exec's row reduction with a fused epilogue (exec/body/row.hpp), the one softmax and
// log_softmax use; its reduction is exec's online logsumexp paired with a sum (exec::PairOp).
//
// Per non-ignored row with target t, logits z (bias added, divided by the temperature T, then
// softcapped), class weights w
// (all 1 without class weights), W = sum_j w_j, smoothing e, vocabulary V and s =
// lse_square_scale (PyTorch's cross_entropy plus Liger-Kernel's z-loss and softcap):
//   lse = log sum_j exp(z_j)
//   ce  = w_t (1 - e) (lse - z_t) + (e / V) (W lse - sum_j w_j z_j)
//   zl  = s lse^2
//   d ce / d z_j = w_t (1 - e) (p_j - [j = t]) + (e / V) (W p_j - w_j),   p_j = exp(z_j - lse)
//   d zl / d z_j = 2 s lse p_j
// and d z_j / d raw_j = (1 / T) (1 - tanh(raw_j / (T c))^2) with a softcap c, 1 / T without.
#pragma once

#include <type_traits>

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../exec/body/reduce_ops.hpp"
#include "../exec/body/row.hpp"
#include "../expr/scalar_math.hpp"
#include "loop_bodies.hpp"
#include "plan.hpp"

namespace tessel::flce {

// What is the same for every row of a call.
template <class C>
struct RowConstants {
  index_t ignore_index = -100;
  C one_minus_smoothing = 1;  // 1 - e
  C smoothing_per_class = 0;  // e / V
  C lse_square_scale = 0;     // s
  C softcap = 0;              // c; 0 turns the softcap off
  C inv_temperature = 1;      // 1 / T, applied to the raw logit before the softcap
  C entropy_bonus = 0;        // beta: each row's loss term gets -beta * H
  bool entropy = false;       // compute H (an entropy output, or a bonus)
  bool argmax = false;        // track the row's argmax (an argmax or accuracy output)
  C class_weight_sum = 0;     // W = sum_j w_j (V without class weights)
  bool smoothing = false;     // e > 0: accumulate sum_j w_j z_j
};

// Where one row's data lives. `grad` may equal `logits` (the gradient then overwrites the logits
// in place: each lane reads an element before it writes it); null means no gradient pass.
template <class L, class G, class T>
struct RowRefs {
  L const* logits = nullptr;  // (V) this row of x W^T, without the bias
  G* grad = nullptr;          // (V) d loss / d logits, scaled
  T const* bias = nullptr;    // (V) optional, stride bias_stride
  index_t bias_stride = 1;
  T const* class_weights = nullptr;  // (V) optional, stride class_weight_stride
  index_t class_weight_stride = 1;
};

// One row's loss terms before the reduction scales them, and its per-row outputs (all zero for
// an ignored row).
template <class C>
struct RowLoss {
  C ce = 0;              // the weighted, smoothed cross-entropy term
  C z = 0;               // lse_square_scale * lse^2
  C lse = 0;             // log sum_j exp(z_j)
  C target_logprob = 0;  // z_t - lse
  C entropy = 0;         // H = lse - sum_j p_j z_j
  index_t argmax = -1;   // the class of the largest logit (with RowConstants::argmax), else -1
};

// With label smoothing the row reduces (z_j, w_j z_j) with this: the online logsumexp of the
// logits and the smoothing sum, in one sweep and one lane reduction. Its result is
// (lse, sum_j w_j z_j). Without, exec's LogSumExpOp alone.
template <class C>
using RowSoftmaxOp = exec::PairOp<exec::LogSumExpOp<C>, exec::SumOp<C>>;

// The fused row body. Ctx provides lane(), lanes() and reduce(partial, combine) (every lane gets
// the combined value). C is the compute type; T the storage type of bias and class weights.
// ce_grad_scale and z_grad_scale multiply the two gradient terms (the upstream gradient dy times
// 1/sum of target weights, resp. 1/non-ignored rows, for mean). Vocab may be an Int<V>: the
// loops over the row then have a constant bound.
// @pre target == k.ignore_index or 0 <= target < vocab
// @post with r.grad set, r.grad[0, vocab) holds the scaled gradient (zeros for an ignored row)
template <class Ctx, class L, class G, class T, class C, Integer Vocab>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowLoss<C> fused_row(Ctx const& ctx,
                                                           RowRefs<L, G, T> const& r, Vocab vocab,
                                                           index_t target, RowConstants<C> const& k,
                                                           C ce_grad_scale, C z_grad_scale) {
  if (target == k.ignore_index) {
    if (r.grad != nullptr)
      for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) r.grad[j] = G(C(0));
    return {};
  }
  // The logit divided by the temperature (a multiply, skipped at T = 1: the default keeps its
  // bits), before the softcap.
  bool const tempered = k.inv_temperature != C(1);
  auto raw_logit = [&](index_t j) {
    C x = static_cast<C>(r.logits[j]);
    if (r.bias != nullptr) x += static_cast<C>(r.bias[j * r.bias_stride]);
    return tempered ? x * k.inv_temperature : x;
  };
  auto class_weight = [&](index_t j) {
    return r.class_weights != nullptr ? static_cast<C>(r.class_weights[j * r.class_weight_stride])
                                      : C(1);
  };
  bool const capped = k.softcap > C(0);
  auto cap = [&](C x) { return capped ? k.softcap * math::tanh(x / k.softcap) : x; };

  // The target's logit is read before the reduction: the reduction is a barrier for all lanes,
  // after which the epilogue may overwrite the logits in place.
  C const w_t = class_weight(target);
  C const z_t = cap(raw_logit(target));

  // The reduction then the epilogue, compiled with and without label smoothing, the entropy and
  // the argmax: a plain row reduces its logits with exec's logsumexp alone; smoothing pairs it
  // with the sum of w_j z_j (RowSoftmaxOp); the entropy replaces it with the softmax moments (lse
  // and sum_j p_j z_j); the argmax rides along the main reduction (exec::WithArgmax), so no row
  // pays for work it does not need per element. The
  // epilogue: g_j = (a + b W + zc) p_j - a [j = t] - b w_j, times the softcap's derivative; the
  // target's -a is folded in before rounding to G, so p_t -> 1 does not cancel in 16 bits. A
  // loss-only pass writes nothing (its empty loop is dropped): one reduction site for both cases
  // keeps the row one inlined loop nest.
  bool const writes = r.grad != nullptr;
  auto row = [&](auto smoothing_tag, auto entropy_tag, auto argmax_tag) {
    constexpr bool smoothing = decltype(smoothing_tag)::value;
    constexpr bool entropy = decltype(entropy_tag)::value;
    constexpr bool argmax = decltype(argmax_tag)::value;
    using Moments = std::conditional_t<entropy, exec::SoftmaxMomentOp<C>, exec::LogSumExpOp<C>>;
    using Main = std::conditional_t<argmax, exec::WithArgmax<Moments>, Moments>;
    using Op = std::conditional_t<smoothing, exec::PairOp<Main, exec::SumOp<C>>, Main>;
    auto element = [&](index_t j) {
      C const z = cap(raw_logit(j));
      if constexpr (smoothing)
        return exec::Pair<C, C>{z, class_weight(j) * z};
      else
        return z;
    };
    // The main reduction's result ((lse, or (lse, sum_j p_j z_j)), with the argmax beside it)
    // and the smoothing sum.
    auto main_of = [](auto const& s) {
      if constexpr (smoothing)
        return s.first;
      else
        return s;
    };
    auto moments_of = [&](auto const& s) {
      if constexpr (argmax)
        return main_of(s).first;
      else
        return main_of(s);
    };
    auto lse_of = [&](auto const& s) {
      if constexpr (entropy)
        return moments_of(s).first;
      else
        return moments_of(s);
    };
    auto mean_of = [&](auto const& s) {
      if constexpr (entropy)
        return moments_of(s).second;
      else
        return C(0);
    };
    auto gradient = [&](auto const& s) {
      C const lse = lse_of(s);
      C const mean = mean_of(s);
      // d z / d raw carries 1 / T: folded into the coefficients. The entropy bonus -beta H has
      // d/dz_j = beta p_j (z_j - sum_k p_k z_k), scaled like the cross-entropy.
      C const a = ce_grad_scale * w_t * k.one_minus_smoothing * k.inv_temperature;
      C const b = ce_grad_scale * k.smoothing_per_class * k.inv_temperature;
      C const zc = z_grad_scale * C(2) * k.lse_square_scale * lse * k.inv_temperature;
      C const eh = ce_grad_scale * k.entropy_bonus * k.inv_temperature;
      C const p_coefficient = a + b * k.class_weight_sum + zc;
      return [&, lse, mean, a, b, eh, p_coefficient](index_t j) {
        if (!writes) return;
        C const x = raw_logit(j);
        C const t = capped ? math::tanh(x / k.softcap) : C(0);
        C const z = capped ? k.softcap * t : x;
        C const p = math::exp(z - lse);
        C g;
        if constexpr (entropy)
          g = (p_coefficient + eh * (z - mean)) * p;
        else
          g = p_coefficient * p;
        if (j == target) g -= a;
        if constexpr (smoothing) g -= b * class_weight(j);
        if (capped) g *= C(1) - t * t;
        r.grad[j] = G(g);
      };
    };
    auto const s = exec::row_reduce_epilogue_body(ctx, Op{}, element, vocab, gradient);
    C const lse = lse_of(s);
    RowLoss<C> loss;
    loss.ce = w_t * k.one_minus_smoothing * (lse - z_t);
    if constexpr (smoothing)
      loss.ce += k.smoothing_per_class * (k.class_weight_sum * lse - s.second);
    if constexpr (entropy) {
      loss.entropy = lse - mean_of(s);
      loss.ce -= k.entropy_bonus * loss.entropy;
    }
    loss.z = k.lse_square_scale * lse * lse;
    loss.lse = lse;
    loss.target_logprob = z_t - lse;
    if constexpr (argmax) loss.argmax = main_of(s).second;
    return loss;
  };
  // The eight variants, each a constant-folded copy of the row.
  auto with_argmax = [&](auto smoothing_tag, auto entropy_tag) {
    return k.argmax ? row(smoothing_tag, entropy_tag, std::true_type{})
                    : row(smoothing_tag, entropy_tag, std::false_type{});
  };
  auto with_entropy = [&](auto smoothing_tag) {
    return k.entropy ? with_argmax(smoothing_tag, std::true_type{})
                     : with_argmax(smoothing_tag, std::false_type{});
  };
  return k.smoothing ? with_entropy(std::true_type{}) : with_entropy(std::false_type{});
}

// The row body of one chunk, for exec::for_each_row: row i of the chunk is row first_row + i of
// the batch, its logits at logits + i * V. Plan is the call's plan (StaticFlcePlan or FlcePlan):
// V comes from plan.vocab_extent(), so with a static plan the row's offset and every loop bound
// are constants. The body is copied to the device by value (pointers and scalars only).
template <AnyFlcePlan Plan, class C, class G, class T, class Y>
struct ChunkRows {
  using plan_type = Plan;
  using vocab_type = decltype(Plan{}.vocab_extent());  // Int<V>, or index_t

  Plan plan{};
  C const* logits = nullptr;  // (rows, V) this chunk's logits, row stride V
  G* grad = nullptr;          // (rows, V) the gradient (may equal logits); null: loss only
  T const* bias = nullptr;
  index_t bias_stride = 1;
  T const* class_weights = nullptr;
  index_t class_weight_stride = 1;
  Y const* target = nullptr;  // (BT)
  index_t target_stride = 1;
  index_t shift = 0;                    // Options::shift_sequence_length
  C const* grad_output_rows = nullptr;  // (BT) per-row dy, or null: grad_output for every row
  index_t grad_output_stride = 1;
  double grad_output = 1;
  LossScales scales{};  // the mean's divisors as multipliers
  RowConstants<C> k{};
  C* row_ce = nullptr;  // (BT) each row's cross-entropy term
  C* row_z = nullptr;   // (BT) each row's z-loss term
  C* lse = nullptr;     // (BT) Outputs::lse, or null
  index_t lse_stride = 1;
  C* target_logprob = nullptr;  // (BT) Outputs::target_logprob, or null
  index_t target_logprob_stride = 1;
  C* entropy = nullptr;  // (BT) Outputs::entropy, or null
  index_t entropy_stride = 1;
  index_t* argmax = nullptr;  // (BT) Outputs::argmax, or null
  index_t argmax_stride = 1;
  unsigned char* row_correct = nullptr;  // (BT) 1 where the argmax is the target, with k.argmax
  index_t first_row = 0;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t i) const {
    vocab_type const vocab = plan.vocab_extent();
    index_t const row = first_row + i;
    double const dy = grad_output_rows != nullptr
                          ? static_cast<double>(grad_output_rows[row * grad_output_stride])
                          : grad_output;
    RowRefs<C, G, T> refs;
    refs.logits = logits + i * vocab;
    refs.grad = grad != nullptr ? grad + i * vocab : nullptr;
    refs.bias = bias;
    refs.bias_stride = bias_stride;
    refs.class_weights = class_weights;
    refs.class_weight_stride = class_weight_stride;
    // A local copy: the gradient's stores (through refs.grad) cannot alias it, so its fields stay
    // in registers across the row's loops instead of being reloaded after every store.
    RowConstants<C> const constants = k;
    index_t const t = target_of(target, target_stride, row, shift, constants.ignore_index);
    RowLoss<C> const l = fused_row(ctx, refs, vocab, t, constants, static_cast<C>(dy * scales.ce),
                                   static_cast<C>(dy * scales.z));
    if (ctx.lane() == 0) {
      row_ce[row] = l.ce;
      row_z[row] = l.z;
      if (lse != nullptr) lse[row * lse_stride] = l.lse;
      if (target_logprob != nullptr) target_logprob[row * target_logprob_stride] = l.target_logprob;
      if (entropy != nullptr) entropy[row * entropy_stride] = l.entropy;
      if (argmax != nullptr) argmax[row * argmax_stride] = l.argmax;
      // An ignored row (argmax -1) is never a hit.
      if (row_correct != nullptr) row_correct[row] = l.argmax >= 0 && l.argmax == t ? 1 : 0;
    }
  }
};

}  // namespace tessel::flce
