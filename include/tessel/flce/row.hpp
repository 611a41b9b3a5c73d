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
// With soft targets q (a teacher's top-k: q_k on class c_k) and weight alpha, the row's ce above
// is scaled by (1 - alpha) and the soft cross-entropy (PyTorch's probability targets, smoothed)
//   soft = alpha [(1 - e) (Q lse - D) + (e / V) (W lse - sum_j w_j z_j)],
//   Q = sum_k w_{c_k} q_k,  D = sum_k w_{c_k} q_k z_{c_k}
//   d soft / d z_j = alpha [(1 - e) (Q p_j - w_j sum_{k: c_k = j} q_k) + (e / V) (W p_j - w_j)]
// is added (scaled like the z-loss for mean: over the non-ignored rows).
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
  C hard_weight = 1;          // 1 - alpha: the hard target's share (1 without soft targets)
  C soft_weight = 0;          // alpha: the soft targets' share (0 without)
};

// A lane's walk over the classes whose gradient has a target term, among the logits it writes
// (j = lane, lane + step, ... in increasing order, exec's epilogue contract): the hard target
// (`target`, its index among the row's logits or -1) and the soft targets' classes. `next` is
// the smallest such class >= the lane's position (-1: none left); `at_target` says whether it is
// the hard target, `q` sums the soft probabilities on it. The epilogue then pays one compare per
// element, as for the hard target alone; each seek scans the row's K soft entries, O(K) per
// class a lane meets (O(K^2) a row on the host's one lane; a GPU lane meets a class or two).
// The cursor is a value the lane keeps (in registers: nothing it holds is memory an exp call
// could change), moved on by seek_target, out of line.
template <class C>
struct TargetCursor {
  index_t next = -1;
  bool at_target = false;
  C q = 0;
};

// The cursor at the lane's first target class >= from (classes c = from + m * step).
template <class C>
TESSEL_HOST_DEVICE TESSEL_NOINLINE TargetCursor<C> seek_target(SoftRowRef<C> ref, index_t step,
                                                               index_t target, index_t from) {
  SoftRow<C> const soft = ref.get();
  auto const mine = [&](index_t c) { return c >= from && (c - from) % step == 0; };
  TargetCursor<C> t;
  t.next = mine(target) ? target : -1;
  for (index_t k = 0; k < soft.count; ++k) {
    index_t const c = soft.local(k);
    if (!mine(c)) continue;
    if (t.next < 0 || c < t.next) {
      t.next = c;
      t.q = soft.prob(k);
    } else if (c == t.next) {
      t.q += soft.prob(k);
    }
  }
  t.at_target = t.next >= 0 && t.next == target;
  return t;
}

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
  C soft = 0;            // the soft targets' cross-entropy, alpha included (0 without)
};

// With label smoothing the row reduces (z_j, w_j z_j) with this: the online logsumexp of the
// logits and the smoothing sum, in one sweep and one lane reduction. Its result is
// (lse, sum_j w_j z_j). Without, exec's LogSumExpOp alone.
template <class C>
using RowSoftmaxOp = exec::PairOp<exec::LogSumExpOp<C>, exec::SumOp<C>>;

// The reduction of one row variant: exec's logsumexp, or the softmax moments (lse and
// sum_j p_j z_j) with the entropy; the argmax beside it (exec::WithArgmax); paired with the
// smoothing sum of w_j z_j. No row pays per element for what it does not need.
template <class C, bool Smoothing, bool Entropy, bool Argmax>
struct RowOp {
  using moments = std::conditional_t<Entropy, exec::SoftmaxMomentOp<C>, exec::LogSumExpOp<C>>;
  using main = std::conditional_t<Argmax, exec::WithArgmax<moments>, moments>;
  using type = std::conditional_t<Smoothing, exec::PairOp<main, exec::SumOp<C>>, main>;
};

// A row's softmax statistics, from which its loss terms, per-row outputs and gradient follow:
// what the row's reduction gives (or, in a vocabulary-parallel call, the ranks' combined).
template <class C>
struct RowStats {
  C lse = 0;            // log sum_j exp(z_j)
  C mean = 0;           // sum_j p_j z_j (with RowConstants::entropy)
  C smooth = 0;         // sum_j w_j z_j (with RowConstants::smoothing)
  index_t argmax = -1;  // the first largest z_j's index (with RowConstants::argmax)
  C soft_mass = 0;      // Q = sum_k w_{c_k} q_k (with soft targets)
  C soft_dot = 0;       // D = sum_k w_{c_k} q_k z_{c_k}
};

// The RowStats in the result of RowOp<C, Smoothing, Entropy, Argmax>.
template <class C, bool Smoothing, bool Entropy, bool Argmax, class R>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowStats<C> row_stats_of(R const& result) {
  auto const& main = [&]() -> auto const& {
    if constexpr (Smoothing)
      return result.first;
    else
      return result;
  }
  ();
  auto const& moments = [&]() -> auto const& {
    if constexpr (Argmax)
      return main.first;
    else
      return main;
  }
  ();
  RowStats<C> s;
  if constexpr (Entropy) {
    s.lse = moments.first;
    s.mean = moments.second;
  } else {
    s.lse = moments;
  }
  if constexpr (Smoothing) s.smooth = result.second;
  if constexpr (Argmax) s.argmax = main.second;
  return s;
}

// f(smoothing, entropy, argmax) with the three as std::bool_constant tags, each combination a
// constant-folded copy of the row.
template <class C, class F>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto with_row_variant(RowConstants<C> const& k, F const& f) {
  auto with_argmax = [&](auto smoothing, auto entropy) {
    return k.argmax ? f(smoothing, entropy, std::true_type{})
                    : f(smoothing, entropy, std::false_type{});
  };
  auto with_entropy = [&](auto smoothing) {
    return k.entropy ? with_argmax(smoothing, std::true_type{})
                     : with_argmax(smoothing, std::false_type{});
  };
  return k.smoothing ? with_entropy(std::true_type{}) : with_entropy(std::false_type{});
}

// How a row's logits, bias and class weights are read, as the compute type C.
template <class L, class G, class T, class C>
struct RowReader {
  using grad_type = G;
  RowRefs<L, G, T> const& r;
  RowConstants<C> const& k;
  bool tempered;  // 1 / T != 1: multiply (T = 1, the default, keeps its bits)
  bool capped;    // a softcap

  TESSEL_HOST_DEVICE RowReader(RowRefs<L, G, T> const& refs, RowConstants<C> const& constants)
      : r(refs),
        k(constants),
        tempered(constants.inv_temperature != C(1)),
        capped(constants.softcap > C(0)) {}

  // The logit with the bias, divided by the temperature: before the softcap.
  TESSEL_HOST_DEVICE C raw(index_t j) const {
    C x = static_cast<C>(r.logits[j]);
    if (r.bias != nullptr) x += static_cast<C>(r.bias[j * r.bias_stride]);
    return tempered ? math::rounded_product(x, k.inv_temperature) : x;
  }
  TESSEL_HOST_DEVICE C weight(index_t j) const {
    return r.class_weights != nullptr ? static_cast<C>(r.class_weights[j * r.class_weight_stride])
                                      : C(1);
  }
  TESSEL_HOST_DEVICE C cap(C x) const {
    return capped ? math::rounded_product(k.softcap, math::tanh(x / k.softcap)) : x;
  }
  // z_j: what the softmax sees.
  TESSEL_HOST_DEVICE C logit(index_t j) const { return cap(raw(j)); }
};

// Q and D of the soft targets among the row's logits (into s.soft_mass, s.soft_dot). Every lane
// reads all K entries (K is small: no lane reduction), before the reduction lets the epilogue
// overwrite the logits.
template <class Reader, class C>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE void add_soft_sums(Reader const& rd, SoftRow<C> const& soft,
                                                         RowStats<C>& s) {
  for (index_t k = 0; k < soft.count; ++k) {
    index_t const c = soft.local(k);
    if (c < 0) continue;
    C const wq = math::rounded_product(rd.weight(c), soft.prob(k));
    s.soft_mass += wq;
    s.soft_dot += math::rounded_product(wq, rd.logit(c));
  }
}

// What the row's reduction (RowOp) reads at j: z_j, paired with w_j z_j for the smoothing sum.
template <bool Smoothing, class Reader>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto row_element(Reader const& rd) {
  return [&rd](index_t j) {
    auto const z = rd.logit(j);
    if constexpr (Smoothing)
      return exec::Pair<decltype(z), decltype(z)>{z, math::rounded_product(rd.weight(j), z)};
    else
      return z;
  };
}

// A non-ignored row's loss terms and per-row outputs from its statistics, its target's class
// weight w_t and logit z_t.
template <bool Smoothing, bool Entropy, class C>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowLoss<C> row_loss(RowStats<C> const& s, C w_t, C z_t,
                                                          RowConstants<C> const& k) {
  RowLoss<C> loss;
  auto const mul = [](C a, C b) { return math::rounded_product(a, b); };
  loss.ce = mul(w_t * k.one_minus_smoothing, s.lse - z_t);
  // The smoothing term's sum_j w_j (lse - z_j), from the row's sums.
  auto const smoothing_term = [&] {
    return mul(k.smoothing_per_class, mul(k.class_weight_sum, s.lse) - s.smooth);
  };
  if constexpr (Smoothing) loss.ce += smoothing_term();
  if (k.soft_weight != C(0)) {
    loss.soft = mul(k.one_minus_smoothing, mul(s.soft_mass, s.lse) - s.soft_dot);
    if constexpr (Smoothing) loss.soft += smoothing_term();
    loss.soft = mul(loss.soft, k.soft_weight);
    loss.ce = mul(loss.ce, k.hard_weight);
  }
  if constexpr (Entropy) {
    loss.entropy = s.lse - s.mean;
    loss.ce -= mul(k.entropy_bonus, loss.entropy);
  }
  loss.z = mul(mul(k.lse_square_scale, s.lse), s.lse);
  loss.lse = s.lse;
  loss.target_logprob = z_t - s.lse;
  loss.argmax = s.argmax;
  return loss;
}

// The coefficients of a non-ignored row's gradient g_j = p_coefficient p_j - a [j = t] - b w_j
// - sq w_j q_j (+ eh p_j (z_j - mean)), before the softcap's derivative: d z / d raw's 1 / T
// folded in, the upstream scales applied.
template <class C>
struct RowGradientScales {
  C a;              // the hard target's term
  C b;              // the smoothing term's, per unit class weight
  C sq;             // the soft targets', per unit weighted probability
  C eh;             // the entropy bonus's
  C p_coefficient;  // p_j's: a + b W + 2 s lse (z-loss) + sq Q
};

template <class C>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowGradientScales<C> row_gradient_scales(
    RowConstants<C> const& k, RowStats<C> const& s, C w_t, C ce_grad_scale, C z_grad_scale,
    C soft_grad_scale) {
  auto const mul = [](C x, C y) { return math::rounded_product(x, y); };
  C const hard = mul(ce_grad_scale, k.hard_weight);  // the hard cross-entropy's scale
  C const sq = mul(soft_grad_scale * k.soft_weight * k.one_minus_smoothing, k.inv_temperature);
  C const a = mul(hard * w_t * k.one_minus_smoothing, k.inv_temperature);
  C const b =
      mul((hard + mul(soft_grad_scale, k.soft_weight)) * k.smoothing_per_class, k.inv_temperature);
  C const zc = mul(z_grad_scale * C(2) * k.lse_square_scale * s.lse, k.inv_temperature);
  C const eh = mul(ce_grad_scale * k.entropy_bonus, k.inv_temperature);
  return {a, b, sq, eh, a + mul(b, k.class_weight_sum) + zc + mul(sq, s.soft_mass)};
}

// The epilogue's writer of a non-ignored row's gradient, write(j) for each of this lane's logits
// in increasing order (j = lane, lane + lanes, ...): g_j = (a + b W + zc + sq Q) p_j - a [j = t]
// - b w_j - sq w_j q_j (plus the entropy bonus's beta p_j (z_j - mean)), times the softcap's
// derivative; q_j sums the soft targets on class j, found by the lane's TargetCursor. d z / d raw
// carries 1 / T: folded into the coefficients. The target's -a and the soft -sq w_j q_j are
// folded in before rounding to G, so p_j -> 1 does not cancel in 16 bits. `target` is the
// target's index among the row's logits (-1: not among them, in a vocabulary-parallel call).
// Writes nothing without a gradient buffer.
// `target` is the hard target's index among the row's logits (-1: another rank's), `soft` the
// row's soft targets; `lane`, `lanes` the writer's (its cursor walks its elements).
template <bool Smoothing, bool Entropy, class Reader, class C, class Soft>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE auto row_gradient(Reader const& rd, RowStats<C> const& s,
                                                        index_t target, C w_t, C ce_grad_scale,
                                                        C z_grad_scale, Soft soft,
                                                        C soft_grad_scale, index_t lane,
                                                        index_t lanes) {
  constexpr bool soft_targets = has_soft_targets<Soft>;
  using G = typename Reader::grad_type;
  RowConstants<C> const& k = rd.k;
  RowGradientScales<C> const scales =
      row_gradient_scales(k, s, w_t, ce_grad_scale, z_grad_scale, soft_grad_scale);
  C const a = scales.a, b = scales.b, sq = scales.sq, eh = scales.eh;
  C const p_coefficient = scales.p_coefficient;
  C const lse = s.lse, mean = s.mean;
  // Without soft targets the hard target is the only special class: no cursor.
  auto cursor = [&] {
    if constexpr (soft_targets)
      return seek_target(soft, lanes, target, lane);
    else
      return 0;
  }();
  // Captures by copy what the variant uses (an explicit list would name values some variants
  // leave unused, which clang's -Wunused-lambda-capture rejects).
  return [=, &rd, &k](index_t j) mutable {
    if (rd.r.grad == nullptr) return;
    C const x = rd.raw(j);
    C const t = rd.capped ? math::tanh(x / k.softcap) : C(0);
    C const z = rd.capped ? math::rounded_product(k.softcap, t) : x;
    C const p = math::exp(z - lse);
    C g;
    if constexpr (Entropy)
      g = math::rounded_product(p_coefficient + math::rounded_product(eh, z - mean), p);
    else
      g = math::rounded_product(p_coefficient, p);
    if constexpr (soft_targets) {
      if (j == cursor.next) [[unlikely]] {
        if (cursor.at_target) g -= a;
        g -= math::rounded_product(sq * rd.weight(j), cursor.q);  // 0 without soft targets on j
        cursor = seek_target(soft, lanes, target, j + lanes);
      }
    } else {
      if (j == target) g -= a;
    }
    if constexpr (Smoothing) g -= math::rounded_product(b, rd.weight(j));
    if (rd.capped) g *= C(1) - math::rounded_product(t, t);
    rd.r.grad[j] = G(g);
  };
}

// The fused row body. Ctx provides lane(), lanes() and reduce(partial, combine) (every lane gets
// the combined value). C is the compute type; T the storage type of bias and class weights.
// ce_grad_scale and z_grad_scale multiply the two gradient terms (the upstream gradient dy times
// 1/sum of target weights, resp. 1/non-ignored rows, for mean). Vocab may be an Int<V>: the
// loops over the row then have a constant bound.
// @pre target == k.ignore_index or 0 <= target < vocab
// With soft targets (k.soft_weight > 0) `soft` names them and soft_grad_scale scales their term
// (dy times 1/non-ignored rows, for mean).
// @post with r.grad set, r.grad[0, vocab) holds the scaled gradient (zeros for an ignored row)
template <class Ctx, class L, class G, class T, class C, Integer Vocab, class Soft = NoSoftTargets>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowLoss<C> fused_row(Ctx const& ctx,
                                                           RowRefs<L, G, T> const& r, Vocab vocab,
                                                           index_t target, RowConstants<C> const& k,
                                                           C ce_grad_scale, C z_grad_scale,
                                                           Soft soft = {},
                                                           C soft_grad_scale = C(0)) {
  if (target == k.ignore_index) {
    if (r.grad != nullptr)
      for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) r.grad[j] = G(C(0));
    return {};
  }
  RowReader<L, G, T, C> const rd(r, k);
  // The target's logit is read before the reduction: the reduction is a barrier for all lanes,
  // after which the epilogue may overwrite the logits in place.
  C const w_t = rd.weight(target);
  C const z_t = rd.logit(target);
  RowStats<C> soft_sums;  // the soft targets' logits too
  if constexpr (has_soft_targets<Soft>) add_soft_sums(rd, soft.get(), soft_sums);

  // The reduction (RowOp) then the epilogue (row_gradient) in one exec row reduction with a fused
  // epilogue. A loss-only pass writes nothing (its empty loop is dropped): one reduction site for
  // both cases keeps the row one inlined loop nest.
  return with_row_variant(k, [&](auto smoothing_tag, auto entropy_tag, auto argmax_tag) {
    constexpr bool smoothing = decltype(smoothing_tag)::value;
    constexpr bool entropy = decltype(entropy_tag)::value;
    constexpr bool argmax = decltype(argmax_tag)::value;
    using Op = typename RowOp<C, smoothing, entropy, argmax>::type;
    auto const element = row_element<smoothing>(rd);
    auto stats = [&](auto const& reduced) {
      RowStats<C> s = row_stats_of<C, smoothing, entropy, argmax>(reduced);
      s.soft_mass = soft_sums.soft_mass;
      s.soft_dot = soft_sums.soft_dot;
      return s;
    };
    auto const result =
        exec::row_reduce_epilogue_body(ctx, Op{}, element, vocab, [&](auto const& reduced) {
          return row_gradient<smoothing, entropy>(rd, stats(reduced), target, w_t, ce_grad_scale,
                                                  z_grad_scale, soft, soft_grad_scale,
                                                  index_t{ctx.lane()}, index_t{ctx.lanes()});
        });
    return row_loss<smoothing, entropy>(stats(result), w_t, z_t, k);
  });
}

// One rank's share of a row in a vocabulary-parallel call: the statistics over its slice of the
// vocabulary, which the ranks exchange (an all-gather) and combine (combine_shard_stats).
template <class C>
struct ShardRowStats {
  C lse = 0;            // log sum_j exp(z_j) over this rank's classes
  C mean = 0;           // sum_j p_j z_j with p over this rank's classes (with the entropy)
  C smooth = 0;         // sum_j w_j z_j over this rank's classes (with smoothing)
  C top = 0;            // the largest z_j here (with the argmax)
  C target_weight = 0;  // w_t, when this rank holds the target's class
  C target_logit = 0;   // z_t, likewise
  C soft_mass = 0;      // Q and D over the soft targets whose classes this rank holds
  C soft_dot = 0;
  index_t argmax = -1;  // the class (global index) of `top`
  index_t holds_target = 0;
};

// This rank's share of a row: its slice's reduction, no epilogue. `vocab_offset` is the slice's
// first class; `local_target` the target's index in the slice or -1. An ignored row gives {}.
template <class Ctx, class L, class G, class T, class C, Integer Vocab>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE ShardRowStats<C> shard_row_stats(
    Ctx const& ctx, RowRefs<L, G, T> const& r, Vocab vocab, index_t target, index_t local_target,
    index_t vocab_offset, RowConstants<C> const& k, SoftRow<C> const& soft = {}) {
  if (target == k.ignore_index) return {};
  RowReader<L, G, T, C> const rd(r, k);
  return with_row_variant(k, [&](auto smoothing_tag, auto entropy_tag, auto argmax_tag) {
    constexpr bool smoothing = decltype(smoothing_tag)::value;
    constexpr bool entropy = decltype(entropy_tag)::value;
    constexpr bool argmax = decltype(argmax_tag)::value;
    using Op = typename RowOp<C, smoothing, entropy, argmax>::type;
    auto const element = row_element<smoothing>(rd);
    RowStats<C> const s =
        row_stats_of<C, smoothing, entropy, argmax>(exec::row_reduction(ctx, Op{}, element, vocab));
    ShardRowStats<C> out;
    out.lse = s.lse;
    out.mean = s.mean;
    out.smooth = s.smooth;
    RowStats<C> soft_sums;
    add_soft_sums(rd, soft, soft_sums);
    out.soft_mass = soft_sums.soft_mass;
    out.soft_dot = soft_sums.soft_dot;
    if (s.argmax >= 0) {
      out.top = rd.logit(s.argmax);
      out.argmax = vocab_offset + s.argmax;
    }
    if (local_target >= 0) {
      out.holds_target = 1;
      out.target_weight = rd.weight(local_target);
      out.target_logit = rd.logit(local_target);
    }
    return out;
  });
}

// The row's statistics over the whole vocabulary from the ranks' shares shard[r * stride], r in
// [0, ranks), in the order of their slices: the logsumexp of the ranks' lse, the softmax mean as
// the ranks' means weighted by exp(lse_r - lse), the smoothing and soft-target sums added, the
// first largest
// logit's class (ArgmaxOp's rules); w_t and z_t from the rank that holds the target. Every rank
// combines the same shares in the same order, so all get the same bits; one rank's share is its
// own statistics exactly (exp(0) = 1, log(1) = 0).
template <class C>
TESSEL_HOST_DEVICE RowStats<C> combine_shard_stats(ShardRowStats<C> const* shard, index_t stride,
                                                   index_t ranks, C& w_t, C& z_t) {
  C m = -math::infinity<C>();
  for (index_t q = 0; q < ranks; ++q) m = math::max(m, shard[q * stride].lse);
  C const sh = exec::LogSumExpOp<C>::shift(m);
  C sum = 0;
  for (index_t q = 0; q < ranks; ++q) sum += math::exp(shard[q * stride].lse - sh);
  RowStats<C> s;
  s.lse = sh + math::log(sum);
  exec::ArgState<C> best = exec::ArgmaxOp<C>{}.identity();
  w_t = z_t = C(0);
  for (index_t q = 0; q < ranks; ++q) {
    ShardRowStats<C> const& p = shard[q * stride];
    C const weight = math::exp(p.lse - s.lse);
    s.mean += exec::SoftmaxMomentOp<C>::weighted_term(weight, p.mean);
    s.smooth += p.smooth;
    s.soft_mass += p.soft_mass;
    s.soft_dot += p.soft_dot;
    if (p.argmax >= 0) best = exec::ArgmaxOp<C>{}(best, exec::ArgState<C>{p.top, p.argmax});
    if (p.holds_target) {
      w_t = p.target_weight;
      z_t = p.target_logit;
    }
  }
  s.argmax = best.index;
  return s;
}

// A row of a vocabulary-parallel call from its combined statistics: the loss terms and per-row
// outputs (the same on every rank), and the gradient of this rank's slice of the logits.
// `target` is the global class (for the ignore check), `local_target` its index in the slice or
// -1.
// @post with r.grad set, r.grad[0, vocab) holds this slice's scaled gradient
template <class Ctx, class L, class G, class T, class C, Integer Vocab, class Soft = NoSoftTargets>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowLoss<C> sharded_row(
    Ctx const& ctx, RowRefs<L, G, T> const& r, Vocab vocab, index_t target, index_t local_target,
    RowStats<C> const& s, C w_t, C z_t, RowConstants<C> const& k, C ce_grad_scale, C z_grad_scale,
    Soft soft = {}, C soft_grad_scale = C(0)) {
  if (target == k.ignore_index) {
    if (r.grad != nullptr)
      for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) r.grad[j] = G(C(0));
    return {};
  }
  RowReader<L, G, T, C> const rd(r, k);
  return with_row_variant(k, [&](auto smoothing_tag, auto entropy_tag, auto) {
    constexpr bool smoothing = decltype(smoothing_tag)::value;
    constexpr bool entropy = decltype(entropy_tag)::value;
    auto write = row_gradient<smoothing, entropy>(rd, s, local_target, w_t, ce_grad_scale,
                                                  z_grad_scale, soft, soft_grad_scale,
                                                  index_t{ctx.lane()}, index_t{ctx.lanes()});
    for (index_t j = ctx.lane(); j < vocab; j += ctx.lanes()) write(j);
    return row_loss<smoothing, entropy>(s, w_t, z_t, k);
  });
}

// What a chunk's row bodies read and write, the same for each of its kernels (ChunkRows,
// ChunkShardStats).
template <AnyFlcePlan Plan, class C, class G, class T, class Y>
struct ChunkRowsArgs {
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
  SoftTargets<C> soft{};                 // none: count 0
  C* row_soft = nullptr;                 // (BT) each row's soft-target term (with soft targets)
  index_t first_row = 0;
  // Sharded: the logits are this rank's slice of the classes, starting at vocab_offset, and
  // shard_stats holds every rank's share of each row of the chunk (shard_stats[q * shard_stride
  // + i], ranks q in slice order).
  ShardRowStats<C> const* shard_stats = nullptr;
  index_t shard_stride = 0;
  index_t ranks = 1;
  index_t vocab_offset = 0;

  // Row i of the chunk: its logits and gradient, `vocab` wide (this rank's slice when sharded).
  template <Integer Vocab>
  TESSEL_HOST_DEVICE TESSEL_FORCEINLINE RowRefs<C, G, T> row_refs(index_t i, Vocab vocab) const {
    RowRefs<C, G, T> r;
    r.logits = logits + i * vocab;
    r.grad = grad != nullptr ? grad + i * vocab : nullptr;
    r.bias = bias;
    r.bias_stride = bias_stride;
    r.class_weights = class_weights;
    r.class_weight_stride = class_weight_stride;
    return r;
  }
  // Row i's target class (global), or ignore_index for an ignored or shifted-out row.
  TESSEL_HOST_DEVICE TESSEL_FORCEINLINE index_t row_target(index_t i) const {
    return target_of(target, target_stride, first_row + i, shift, k.ignore_index);
  }
  // Row i's scales of the cross-entropy and z-loss gradient terms: its dy times the mean's
  // multipliers.
  TESSEL_HOST_DEVICE TESSEL_FORCEINLINE void row_scales(index_t i, C& ce, C& z) const {
    index_t const row = first_row + i;
    double const dy = grad_output_rows != nullptr
                          ? static_cast<double>(grad_output_rows[row * grad_output_stride])
                          : grad_output;
    ce = static_cast<C>(dy * scales.ce);
    z = static_cast<C>(dy * scales.z);
  }
  // Row i's loss terms and per-row outputs, its target t.
  TESSEL_HOST_DEVICE void write_row(index_t i, index_t t, RowLoss<C> const& l) const {
    index_t const row = first_row + i;
    row_ce[row] = l.ce;
    row_z[row] = l.z;
    if (row_soft != nullptr) row_soft[row] = l.soft;
    if (lse != nullptr) lse[row * lse_stride] = l.lse;
    if (target_logprob != nullptr) target_logprob[row * target_logprob_stride] = l.target_logprob;
    if (entropy != nullptr) entropy[row * entropy_stride] = l.entropy;
    if (argmax != nullptr) argmax[row * argmax_stride] = l.argmax;
    // An ignored row (argmax -1) is never a hit.
    if (row_correct != nullptr) row_correct[row] = l.argmax >= 0 && l.argmax == t ? 1 : 0;
  }
};

// The row body of one chunk, for exec::for_each_row: row i of the chunk is row first_row + i of
// the batch, its logits at logits + i * V. Plan is the call's plan (StaticFlcePlan or FlcePlan):
// V comes from plan.vocab_extent(), so with a static plan the row's offset and every loop bound
// are constants. The body is copied to the device by value (pointers and scalars only). Sharded:
// a vocabulary-parallel call's rows (V is this rank's slice; each row's statistics come from
// shard_stats), compiled only for such calls. Soft: rows with soft targets (their cursor in the
// epilogue), compiled into its own kernel, launched only for calls with soft targets.
template <AnyFlcePlan Plan, class C, class G, class T, class Y, bool Sharded = false,
          bool Soft = false>
struct ChunkRows : ChunkRowsArgs<Plan, C, G, T, Y> {
  using plan_type = Plan;
  using vocab_type = decltype(Plan{}.vocab_extent());  // Int<V>, or index_t
  using args_type = ChunkRowsArgs<Plan, C, G, T, Y>;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t i) const {
    args_type const& a = *this;
    vocab_type const vocab = a.plan.vocab_extent();
    index_t const row = a.first_row + i;
    RowRefs<C, G, T> const refs = a.row_refs(i, vocab);
    // A local copy: the gradient's stores (through refs.grad) cannot alias it, so its fields stay
    // in registers across the row's loops instead of being reloaded after every store.
    RowConstants<C> const constants = a.k;
    index_t const t = a.row_target(i);
    C ce_scale, z_scale;
    a.row_scales(i, ce_scale, z_scale);
    auto const soft_row = [&] {
      if constexpr (Soft)
        return SoftRowRef<C>{&a.soft, row};
      else
        return NoSoftTargets{};
    }();
    RowLoss<C> l;
    if constexpr (!Sharded) {
      l = fused_row(ctx, refs, vocab, t, constants, ce_scale, z_scale, soft_row, z_scale);
    } else {
      C w_t, z_t;
      RowStats<C> const s =
          combine_shard_stats(a.shard_stats + i, a.shard_stride, a.ranks, w_t, z_t);
      l = sharded_row(ctx, refs, vocab, t, local_class(t, a.vocab_offset, vocab), s, w_t, z_t,
                      constants, ce_scale, z_scale, soft_row, z_scale);
    }
    if (ctx.lane() == 0) a.write_row(i, t, l);
  }
};

// The phase before the rows of a vocabulary-parallel chunk (ChunkRows with shard_stats), over
// the same arguments: each row's share over this rank's slice of the classes, into out[i]. It
// reads the logits only (no gradient is written).
template <AnyFlcePlan Plan, class C, class G, class T, class Y>
struct ChunkShardStats : ChunkRowsArgs<Plan, C, G, T, Y> {
  using vocab_type = decltype(Plan{}.vocab_extent());  // the slice's width
  using args_type = ChunkRowsArgs<Plan, C, G, T, Y>;

  ShardRowStats<C>* out = nullptr;  // (rows)

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t i) const {
    args_type const& a = *this;
    vocab_type const vocab = a.plan.vocab_extent();
    RowRefs<C, G, T> refs = a.row_refs(i, vocab);
    refs.grad = nullptr;
    RowConstants<C> const constants = a.k;
    index_t const t = a.row_target(i);
    ShardRowStats<C> const s =
        shard_row_stats(ctx, refs, vocab, t, local_class(t, a.vocab_offset, vocab), a.vocab_offset,
                        constants, a.soft.row(a.first_row + i));
    if (ctx.lane() == 0) out[i] = s;
  }
};

}  // namespace tessel::flce
