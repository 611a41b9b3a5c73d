// The fused per-row body of FLCE, shared by the host path (with a sequential context) and the CUDA
// row kernel (with a block context): from one row of logits it computes the logsumexp, the row's
// cross-entropy and z-loss terms, and — in a second pass — the logits gradient, written in place
// or into a buffer of the storage type. Only the context's reduction differs between the two.
//
// Per non-ignored row with target t, logits z (bias added, then softcapped), class weights w
// (all 1 without class weights), W = sum_j w_j, smoothing e, vocabulary V and s =
// lse_square_scale (PyTorch's cross_entropy plus Liger-Kernel's z-loss and softcap):
//   lse = log sum_j exp(z_j)
//   ce  = w_t (1 - e) (lse - z_t) + (e / V) (W lse - sum_j w_j z_j)
//   zl  = s lse^2
//   d ce / d z_j = w_t (1 - e) (p_j - [j = t]) + (e / V) (W p_j - w_j),   p_j = exp(z_j - lse)
//   d zl / d z_j = 2 s lse p_j
// and, with a softcap c, d z_j / d raw_j = 1 - tanh(raw_j / c)^2.
#pragma once

#include <limits>

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../expr/scalar_math.hpp"

namespace tessel::flce {

// What is the same for every row of a call.
template <class C>
struct RowConstants {
  index_t ignore_index = -100;
  C one_minus_smoothing = 1;  // 1 - e
  C smoothing_per_class = 0;  // e / V
  C lse_square_scale = 0;     // s
  C softcap = 0;              // c; 0 turns the softcap off
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

// One row's loss terms before the reduction scales them (zero for an ignored row).
template <class C>
struct RowLoss {
  C ce = 0;  // the weighted, smoothed cross-entropy term
  C z = 0;   // lse_square_scale * lse^2
};

// The online-softmax state of a set of logits: their max, sum_j exp(z_j - max), and
// sum_j w_j z_j (for label smoothing).
template <class C>
struct SoftmaxPartial {
  C max = -std::numeric_limits<C>::infinity();
  C sum = 0;
  C weighted_sum = 0;
};

// Merges two online-softmax states (associative and commutative up to rounding).
struct CombineSoftmax {
  template <class C>
  TESSEL_HOST_DEVICE SoftmaxPartial<C> operator()(SoftmaxPartial<C> a, SoftmaxPartial<C> b) const {
    if (a.max < b.max) {
      SoftmaxPartial<C> t = a;
      a = b;
      b = t;
    }
    SoftmaxPartial<C> out = a;
    out.weighted_sum = a.weighted_sum + b.weighted_sum;
    // An empty state (no elements: a lane past the end of a short row) adds nothing; without
    // this test exp(-inf - -inf) would be NaN.
    if (b.max != -std::numeric_limits<C>::infinity())
      out.sum = a.sum + b.sum * math::exp(b.max - a.max);
    return out;
  }
};

// The fused row body. Ctx provides lane(), lanes() and reduce(partial, combine) (every lane gets
// the combined value). C is the compute type; T the storage type of bias and class weights.
// ce_grad_scale and z_grad_scale multiply the two gradient terms (the upstream gradient dy times
// 1/sum of target weights, resp. 1/non-ignored rows, for mean).
// @pre target == k.ignore_index or 0 <= target < vocab
// @post with r.grad set, r.grad[0, vocab) holds the scaled gradient (zeros for an ignored row)
template <class Ctx, class L, class G, class T, class C, Integer Vocab>
TESSEL_HOST_DEVICE RowLoss<C> fused_row(Ctx& ctx, RowRefs<L, G, T> const& r, Vocab vocab,
                                        index_t target, RowConstants<C> const& k, C ce_grad_scale,
                                        C z_grad_scale) {
  if (target == k.ignore_index) {
    if (r.grad != nullptr)
      for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) r.grad[j] = G(C(0));
    return {};
  }
  auto raw_logit = [&](index_t j) {
    C x = static_cast<C>(r.logits[j]);
    if (r.bias != nullptr) x += static_cast<C>(r.bias[j * r.bias_stride]);
    return x;
  };
  auto class_weight = [&](index_t j) {
    return r.class_weights != nullptr ? static_cast<C>(r.class_weights[j * r.class_weight_stride])
                                      : C(1);
  };
  bool const capped = k.softcap > C(0);
  auto cap = [&](C x) { return capped ? k.softcap * math::tanh(x / k.softcap) : x; };

  // The target's logit is read before the reduction: the reduction is a barrier for all lanes,
  // after which pass 2 may overwrite the logits in place.
  C const w_t = class_weight(target);
  C const z_t = cap(raw_logit(target));

  // Pass 1: max, sum of exponentials (one exp per element) and the smoothing sum.
  SoftmaxPartial<C> p{};
  for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) {
    C const z = cap(raw_logit(j));
    if (z > p.max) {
      p.sum = p.sum * math::exp(p.max - z) + C(1);
      p.max = z;
    } else {
      p.sum += math::exp(z - p.max);
    }
    if (k.smoothing) p.weighted_sum += class_weight(j) * z;
  }
  p = ctx.reduce(p, CombineSoftmax{});
  C const lse = p.max + math::log(p.sum);

  RowLoss<C> loss;
  loss.ce = w_t * k.one_minus_smoothing * (lse - z_t);
  if (k.smoothing) loss.ce += k.smoothing_per_class * (k.class_weight_sum * lse - p.weighted_sum);
  loss.z = k.lse_square_scale * lse * lse;

  if (r.grad == nullptr) return loss;

  // Pass 2: g_j = (a + b W + zc) p_j - a [j = t] - b w_j, times the softcap's derivative. The
  // target's -a is folded in before rounding to G, so p_t -> 1 does not cancel in 16 bits.
  C const a = ce_grad_scale * w_t * k.one_minus_smoothing;
  C const b = ce_grad_scale * k.smoothing_per_class;
  C const zc = z_grad_scale * C(2) * k.lse_square_scale * lse;
  C const p_coefficient = a + b * k.class_weight_sum + zc;
  for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) {
    C const x = raw_logit(j);
    C const t = capped ? math::tanh(x / k.softcap) : C(0);
    C const z = capped ? k.softcap * t : x;
    C g = p_coefficient * math::exp(z - lse);
    if (j == target) g -= a;
    if (k.smoothing) g -= b * class_weight(j);
    if (capped) g *= C(1) - t * t;
    r.grad[j] = G(g);
  }
  return loss;
}

}  // namespace tessel::flce
