// The FLCE chunk loop's small kernel bodies besides the row body, shared by the host path
// (sequential context) and the CUDA kernels (block context): the target summary taken before the
// loop (mean divisors, first invalid target) and the final loss reduction taken after it. Each is
// a function and a row body for exec::for_each_row (one row: a single team of lanes, one block on
// the GPU) that calls it.
#pragma once

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../expr/scalar_math.hpp"
#include "types.hpp"

namespace tessel::flce {

// What the mean divides by, and the first invalid target.
struct TargetSummary {
  double weight_sum = 0;        // sum of the non-ignored targets' class weights (count without)
  double class_weight_sum = 0;  // sum_j w_j over the vocabulary (V without class weights)
  index_t count = 0;            // non-ignored rows
  index_t first_bad_row = -1;   // smallest row whose target is invalid; -1 if none
  index_t first_bad_soft = -1;  // smallest row * K + k of an invalid soft target; -1 if none
};

struct CombineTargetSummary {
  TESSEL_HOST_DEVICE TargetSummary operator()(TargetSummary a, TargetSummary const& b) const {
    a.weight_sum += b.weight_sum;
    a.class_weight_sum += b.class_weight_sum;
    a.count += b.count;
    if (b.first_bad_row >= 0 && (a.first_bad_row < 0 || b.first_bad_row < a.first_bad_row))
      a.first_bad_row = b.first_bad_row;
    if (b.first_bad_soft >= 0 && (a.first_bad_soft < 0 || b.first_bad_soft < a.first_bad_soft))
      a.first_bad_soft = b.first_bad_soft;
    return a;
  }
};

// The target row `row` predicts. Without a shift (shift == 0), target[row]. With the causal-LM
// shift, the rows come in sequences of `shift` rows, row i predicts target[i + 1], and the last
// row of each sequence predicts nothing (ignore_index), as labels[..., 1:] does.
template <class Y>
TESSEL_HOST_DEVICE index_t target_of(Y const* target, index_t target_stride, index_t row,
                                     index_t shift, index_t ignore_index) {
  if (shift == 0) return static_cast<index_t>(target[row * target_stride]);
  if (row % shift == shift - 1) return ignore_index;
  return static_cast<index_t>(target[(row + 1) * target_stride]);
}

// The classes this rank holds: [offset, offset + size) of the vocabulary (all of it, offset 0,
// without vocabulary parallelism).
struct VocabSlice {
  index_t offset = 0;
  index_t size = 0;
};

// A class's index in the slice [offset, offset + size), or -1 when the slice does not hold it.
TESSEL_HOST_DEVICE inline index_t local_class(index_t t, index_t offset, index_t size) {
  return t >= offset && t - offset < size ? t - offset : -1;
}

// One row's soft targets: q_k = probs[k * prob_stride] on class classes[k * class_stride],
// k < count (repeated classes add up), and the slice [offset, offset + size) of the classes
// whose logits the row holds (the whole vocabulary but in a vocabulary-parallel call).
template <class C>
struct SoftRow {
  index_t const* classes = nullptr;
  index_t class_stride = 1;
  C const* probs = nullptr;
  index_t prob_stride = 1;
  index_t count = 0;
  index_t offset = 0;
  index_t size = 0;

  // Entry k's class among the row's logits, or -1 when another rank holds it.
  TESSEL_HOST_DEVICE index_t local(index_t k) const {
    index_t const c = classes[k * class_stride] - offset;
    return c >= 0 && c < size ? c : -1;
  }
  TESSEL_HOST_DEVICE C prob(index_t k) const { return probs[k * prob_stride]; }
};

// A call's soft targets, (BT, K): row i's entry k names class classes[i * class_row_stride +
// k * class_stride] with probability probs[i * prob_row_stride + k * prob_stride]. count = K; 0:
// none. The row bodies' logits are those of classes [offset, offset + size) (this rank's slice in
// a vocabulary-parallel call, else the whole vocabulary).
template <class C>
struct SoftTargets {
  index_t const* classes = nullptr;
  index_t class_row_stride = 0;
  index_t class_stride = 1;
  C const* probs = nullptr;
  index_t prob_row_stride = 0;
  index_t prob_stride = 1;
  index_t count = 0;
  index_t offset = 0;
  index_t size = 0;

  // Row i's, over the logits of classes [first, first + width).
  TESSEL_HOST_DEVICE SoftRow<C> row(index_t i, index_t first, index_t width) const {
    if (count == 0) return {};
    return {classes + i * class_row_stride,
            class_stride,
            probs + i * prob_row_stride,
            prob_stride,
            count,
            first,
            width};
  }
  // Row i's over the row bodies' logits.
  TESSEL_HOST_DEVICE SoftRow<C> row(index_t i) const { return row(i, offset, size); }
};

// A row without soft targets: the row bodies compile their epilogue without the soft targets'
// cursor (the call picks the body with SoftRowRef only when there are soft targets).
struct NoSoftTargets {};
template <class Soft>
inline constexpr bool has_soft_targets = !std::is_same_v<Soft, NoSoftTargets>;

// Row `row` of a call's soft targets, held as where to find it: the epilogue keeps this (on the
// GPU the soft targets stay in the kernel's parameters) rather than a SoftRow's seven numbers in
// registers across its loop.
template <class C>
struct SoftRowRef {
  SoftTargets<C> const* all = nullptr;  // null: no soft targets
  index_t row = 0;

  TESSEL_HOST_DEVICE SoftRow<C> get() const {
    return all != nullptr ? all->row(row) : SoftRow<C>{};
  }
};

// A soft target's entry is valid when its class lies in [0, vocab) and its probability is finite
// and >= 0.
template <class C>
TESSEL_HOST_DEVICE bool valid_soft_entry(index_t c, C q, index_t vocab) {
  return c >= 0 && c < vocab && q >= C(0) && math::isfinite(q);
}

// Every lane's share of the targets and class weights, combined over lanes. `class_weights` are
// the slice's; a target outside the slice adds to the count but not to the weight sums, which
// the ranks of a vocabulary-parallel call add up (without class weights a target weighs 1 on the
// rank that holds its class). The soft targets of non-ignored rows are checked too (ignored
// rows' are never read).
// @post every lane gets the whole summary (of the slice's weights)
template <class Ctx, class Y, class T>
TESSEL_HOST_DEVICE TargetSummary summarize_targets(Ctx const& ctx, Y const* target,
                                                   index_t target_stride, index_t shift, index_t bt,
                                                   index_t vocab, index_t ignore_index,
                                                   T const* class_weights,
                                                   index_t class_weight_stride, VocabSlice slice,
                                                   SoftTargets<accum_t<T>> const& soft = {}) {
  using C = accum_t<T>;
  TargetSummary s;
  for (index_t i = ctx.lane(); i < bt; i += ctx.lanes()) {
    index_t const t = target_of(target, target_stride, i, shift, ignore_index);
    if (t == ignore_index) continue;
    if (t < 0 || t >= vocab) {
      if (s.first_bad_row < 0) s.first_bad_row = i;  // a lane visits its rows in order
      continue;
    }
    ++s.count;
    if (s.first_bad_soft < 0) {
      SoftRow<C> const r = soft.row(i, 0, vocab);
      for (index_t k = 0; k < r.count; ++k)
        if (!valid_soft_entry(r.classes[k * r.class_stride], r.prob(k), vocab)) {
          s.first_bad_soft = i * r.count + k;
          break;
        }
    }
    index_t const local = local_class(t, slice.offset, slice.size);
    if (local < 0) continue;
    s.weight_sum +=
        class_weights != nullptr
            ? static_cast<double>(static_cast<C>(class_weights[local * class_weight_stride]))
            : 1.0;
  }
  if (class_weights != nullptr) {
    for (index_t j = ctx.lane(); j < slice.size; j += ctx.lanes())
      s.class_weight_sum +=
          static_cast<double>(static_cast<C>(class_weights[j * class_weight_stride]));
  } else if (ctx.lane() == 0) {
    s.class_weight_sum = static_cast<double>(slice.size);
  }
  return ctx.reduce(s, CombineTargetSummary{});
}

// What the target check leaves for the host: the summary and the first invalid target's value
// (and the first invalid soft target's).
struct TargetCheck {
  TargetSummary summary;
  index_t bad_target = 0;      // the target at summary.first_bad_row (when >= 0)
  index_t bad_soft_class = 0;  // the soft target at summary.first_bad_soft (when >= 0)
  double bad_soft_prob = 0;
};

// summarize_targets as a row body of one row: lane 0 writes the check to *out.
template <class Y, class T>
struct SummarizeTargets {
  using C = accum_t<T>;
  Y const* target = nullptr;  // (BT)
  index_t target_stride = 1;
  index_t shift = 0;  // Options::shift_sequence_length
  index_t bt = 0;
  index_t vocab = 1;
  index_t ignore_index = -100;
  T const* class_weights = nullptr;  // (slice.size) or null
  index_t class_weight_stride = 1;
  TargetCheck* out = nullptr;
  VocabSlice slice{};  // this rank's classes ({0, vocab} without vocabulary parallelism)
  SoftTargets<C> soft{};

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t) const {
    TargetSummary const s =
        summarize_targets(ctx, target, target_stride, shift, bt, vocab, ignore_index, class_weights,
                          class_weight_stride, slice, soft);
    if (ctx.lane() == 0) {
      // Every field is written (the host reads the whole check back; compute-sanitizer's
      // initcheck flagged the soft-target fields a valid call left unwritten).
      TargetCheck c{.summary = s};
      if (s.first_bad_row >= 0)
        c.bad_target = target_of(target, target_stride, s.first_bad_row, shift, ignore_index);
      if (s.first_bad_soft >= 0) {
        SoftRow<C> const r = soft.row(s.first_bad_soft / soft.count, 0, vocab);
        index_t const k = s.first_bad_soft % soft.count;
        c.bad_soft_class = r.classes[k * r.class_stride];
        c.bad_soft_prob = static_cast<double>(r.prob(k));
      }
      *out = c;
    }
  }
};

// The mean's divisors as multipliers: 1/divisor, or 0 when the divisor is 0 (every row ignored:
// loss 0 and zero gradients, where PyTorch gives NaN). Other reductions do not divide.
struct LossScales {
  double ce = 1;  // multiplies the cross-entropy terms
  double z = 1;   // multiplies the z-loss terms
};

TESSEL_HOST_DEVICE inline LossScales loss_scales(TargetSummary const& s, Reduction r) {
  LossScales k;
  if (r == Reduction::mean) {
    k.ce = s.weight_sum != 0 ? 1.0 / s.weight_sum : 0.0;
    k.z = s.count != 0 ? 1.0 / static_cast<double>(s.count) : 0.0;
  }
  return k;
}

struct LossSums {
  double ce = 0;
  double z = 0;
  double soft = 0;
  index_t hits = 0;  // rows whose argmax is their target
};
struct CombineLossSums {
  TESSEL_HOST_DEVICE LossSums operator()(LossSums a, LossSums const& b) const {
    a.ce += b.ce;
    a.z += b.z;
    a.soft += b.soft;
    a.hits += b.hits;
    return a;
  }
};

// Where the token accuracy goes: the per-row hits the row pass wrote, reduced like the loss but
// unweighted (mean: hits over non-ignored rows, the z-loss's divisor; sum: the hit count; none:
// 1 or 0 per row). A null `out` means it is not wanted.
template <class C>
struct AccuracyOut {
  unsigned char const* row_correct = nullptr;  // (BT)
  C* out = nullptr;
  index_t stride = 1;
};

// Writes the loss outputs from the per-row terms: per row for none (loss = ce + z + soft),
// otherwise the scaled sums (accumulated in double; the soft-target terms are scaled like the
// z-loss's, over the non-ignored rows). loss / z_loss may be null (not wanted); so may
// accuracy.out and row_soft (no soft targets).
template <class Ctx, class C>
TESSEL_HOST_DEVICE void finalize_losses(Ctx const& ctx, C const* row_ce, C const* row_z, index_t bt,
                                        Reduction reduction, LossScales scales, C* loss,
                                        index_t loss_stride, C* z_loss, index_t z_stride,
                                        AccuracyOut<C> const& accuracy = {},
                                        C const* row_soft = nullptr) {
  if (reduction == Reduction::none) {
    for (index_t i = ctx.lane(); i < bt; i += ctx.lanes()) {
      if (loss != nullptr)
        loss[i * loss_stride] = row_ce[i] + row_z[i] + (row_soft != nullptr ? row_soft[i] : C(0));
      if (z_loss != nullptr) z_loss[i * z_stride] = row_z[i];
      if (accuracy.out != nullptr) accuracy.out[i * accuracy.stride] = C(accuracy.row_correct[i]);
    }
    return;
  }
  LossSums s;
  for (index_t i = ctx.lane(); i < bt; i += ctx.lanes()) {
    s.ce += static_cast<double>(row_ce[i]);
    s.z += static_cast<double>(row_z[i]);
    if (row_soft != nullptr) s.soft += static_cast<double>(row_soft[i]);
    if (accuracy.out != nullptr) s.hits += accuracy.row_correct[i];
  }
  s = ctx.reduce(s, CombineLossSums{});
  if (ctx.lane() == 0) {
    if (loss != nullptr)
      *loss = static_cast<C>(math::rounded_product(s.ce, scales.ce) +
                             math::rounded_product(s.z + s.soft, scales.z));
    if (z_loss != nullptr) *z_loss = static_cast<C>(s.z * scales.z);
    if (accuracy.out != nullptr)
      *accuracy.out = static_cast<C>(static_cast<double>(s.hits) * scales.z);
  }
}

// finalize_losses as a row body of one row.
template <class C>
struct FinalizeLosses {
  C const* row_ce = nullptr;  // (BT)
  C const* row_z = nullptr;   // (BT)
  index_t bt = 0;
  Reduction reduction = Reduction::mean;
  LossScales scales{};
  C* loss = nullptr;  // null: not wanted
  index_t loss_stride = 1;
  C* z_loss = nullptr;  // null: not wanted
  index_t z_stride = 1;
  AccuracyOut<C> accuracy{};
  C const* row_soft = nullptr;  // (BT) or null: no soft targets

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t) const {
    finalize_losses(ctx, row_ce, row_z, bt, reduction, scales, loss, loss_stride, z_loss, z_stride,
                    accuracy, row_soft);
  }
};

}  // namespace tessel::flce
