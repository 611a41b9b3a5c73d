// What an FLCE call computes: Options (settings and optional inputs, PyTorch's and Liger-Kernel's
// names) and Outputs (where results go; each one optional). Both are aggregates meant for
// designated initializers: `{.reduction = Reduction::sum, .label_smoothing = 0.1}`.
#pragma once

#include "../tensor/memory_space.hpp"
#include "arguments.hpp"
#include "types.hpp"

namespace tessel::flce {

// Settings and optional inputs. T is the storage type of the input and weight; Space where
// the tensors live.
template <Element T, MemorySpace Space = HostSpace>
struct Options {
  Reduction reduction = Reduction::mean;
  // Rows whose target equals this are ignored (no loss, zero gradient); it may lie in [0, V).
  index_t ignore_index = -100;
  // PyTorch's label_smoothing, in [0, 1].
  double label_smoothing = 0.0;
  // Liger-Kernel's z-loss: lse_square_scale * lse^2 added per non-ignored row (>= 0).
  double lse_square_scale = 0.0;
  // Liger-Kernel's softcap: logits become softcap * tanh(logits / softcap) before the softmax.
  // 0 turns it off.
  double softcap = 0.0;
  // The sampling temperature of RL-style training (GRPO, PPO): logits are divided by it before
  // the softcap and the softmax, and the gradients carry the 1 / temperature. Finite and > 0.
  double temperature = 1.0;
  // The entropy bonus of PPO-style objectives: each non-ignored row's loss term gets
  // -entropy_bonus * H, H the entropy of the row's softmax (after temperature and softcap),
  // reduced like the cross-entropy (mean: divided by the sum of the non-ignored targets' class
  // weights, the row count without class weights), with its gradient. Finite; 0: off.
  double entropy_bonus = 0.0;
  // Soft targets (distillation against a teacher's top-k; PyTorch's probability targets without
  // the (BT, V) matrix): row i's target distribution puts soft_target_probs(i, k) on class
  // soft_target_indices(i, k), k < K (repeated classes add up; the probabilities need not sum to
  // 1). Each non-ignored row's loss is then (1 - alpha) times its cross-entropy with `target` plus
  // alpha times -sum_j w_j q'_j log p_j, q' = (1 - e) q + e / V (PyTorch's, with label smoothing
  // and class weights), alpha = soft_target_weight; mean divides the soft part by the non-ignored
  // rows (PyTorch divides probability targets by the row count). Rows whose target is
  // ignore_index stay ignored (their soft targets are not read); soft targets belong to the rows
  // as given (shift_sequence_length shifts only `target`).
  MatrixArg<index_t const, Space> soft_target_indices{};   // (BT, K) classes in [0, V)
  MatrixArg<accum_t<T> const, Space> soft_target_probs{};  // (BT, K) finite, >= 0
  double soft_target_weight = 1.0;                         // alpha, in [0, 1]
  // (V) PyTorch's `weight`: a rescaling weight per class. Mean divides by the sum of the
  // non-ignored targets' weights.
  VectorArg<T const, Space> class_weights{};
  // (V) the linear layer's bias: logits = input @ weight.T + bias.
  VectorArg<T const, Space> bias{};
  // The upstream gradient dy the gradients are multiplied by (d loss / d output).
  double grad_output = 1.0;
  // (BT) per-row upstream gradients, for reduction none (replaces grad_output).
  VectorArg<accum_t<T> const, Space> grad_output_rows{};
  // The causal-LM label shift (Apple CCE's `shift`, what `labels[..., 1:]` does before a loss):
  // the rows are sequences of this many tokens, row i is scored against target[i + 1], and the
  // last row of each sequence is ignored. 0 (the default): row i against target[i]. BT must be a
  // multiple of it.
  index_t shift_sequence_length = 0;
  // Rows per chunk; 0 takes the plan's heuristic (make_host_plan on the host, make_device_plan on
  // CUDA).
  // A memory budget: the chunk's logits take chunk_size * V * 4 bytes (8 for f64).
  index_t chunk_size = 0;
  // Gradient accumulation over micro-batches: grad_weight and grad_bias get this call's gradients
  // added to what they hold (+=) instead of overwritten. grad_input is always overwritten (it is
  // the gradient of this call's input). Scale by dy through grad_output / grad_output_rows here:
  // backward would rescale the whole sum.
  bool accumulate = false;
};

// Where results go; leave out what is not wanted. Gradients are computed only when at least one
// gradient output is given (a loss-only call is an evaluation pass).
template <Element T, MemorySpace Space = HostSpace>
struct Outputs {
  // (1) for mean and sum, (BT) for none. The total loss: cross-entropy plus z-loss.
  VectorArg<accum_t<T>, Space> loss{};
  // Same shape as loss: the z-loss part alone (for logging).
  VectorArg<accum_t<T>, Space> z_loss{};
  // (BT, H) d loss / d input, in the storage type.
  MatrixArg<T, Space> grad_input{};
  // (V, H) d loss / d weight, accumulated and returned in accum_t<T> (f32, or f64 for f64).
  MatrixArg<accum_t<T>, Space> grad_weight{};
  // (V) d loss / d bias, in accum_t<T>; needs Options::bias.
  VectorArg<accum_t<T>, Space> grad_bias{};
  // (BT) per row, whatever the reduction: the log-sum-exp of the row's logits (after temperature
  // and softcap; Apple CCE's return_lse), and the target's log-probability z_t - lse (what RL
  // objectives weight by advantages). 0 for ignored rows. Free when not asked for: the row pass
  // computes both anyway. Their gradients: with reduction none and no smoothing or z-loss a row's
  // loss is -target_logprob, so grad_output_rows = -advantages gives d(sum_i A_i logp_i).
  VectorArg<accum_t<T>, Space> lse{};
  VectorArg<accum_t<T>, Space> target_logprob{};
  // (BT) each row's softmax entropy H = lse - sum_j p_j z_j (0 for ignored rows); asking for it
  // costs one more multiply-add per logit in the row pass (also paid with an entropy bonus).
  VectorArg<accum_t<T>, Space> entropy{};
  // (BT) each row's predicted class: the argmax of its logits (after temperature and softcap;
  // ties to the lowest class, as torch.argmax), -1 for ignored rows. Tracked in the same sweep as
  // the log-sum-exp.
  VectorArg<index_t, Space> argmax{};
  // Same shape as loss: the token accuracy, [argmax == target] over the non-ignored rows, reduced
  // like the loss but unweighted (mean: the fraction of non-ignored rows predicted right, 0 when
  // all are ignored; sum: how many; none: 1 or 0 per row, 0 for ignored rows). Class weights and
  // smoothing do not enter it.
  VectorArg<accum_t<T>, Space> accuracy{};

  constexpr bool wants_gradients() const {
    return grad_input.present || grad_weight.present || grad_bias.present;
  }
};

}  // namespace tessel::flce
