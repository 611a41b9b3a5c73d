// One `tessel flce` computation, held in host vectors: what flce_commands.cpp reads from .npy
// files, hands to the host path or (flce_cuda.cu) the CUDA path, and writes back.
#pragma once

#include <cstdint>
#include <vector>

#include <tessel/flce/options.hpp>
#include <tessel/flce/types.hpp>

namespace tessel::cli {

template <class T>
struct FlceJob {
  using C = flce::accum_t<T>;
  std::int64_t bt = 0, hidden = 0, vocab = 0;
  std::vector<T> input, weight, bias, class_weights;  // bias / class_weights empty: not given
  std::vector<std::int64_t> target;
  std::vector<C> grad_output_rows;  // empty: the scalar grad_output
  // Soft targets (BT, soft_k), row-major; soft_k = 0: none.
  std::int64_t soft_k = 0;
  std::vector<std::int64_t> soft_indices;
  std::vector<C> soft_probs;
  double soft_target_weight = 1;
  flce::Reduction reduction = flce::Reduction::mean;
  std::int64_t ignore_index = -100;
  std::int64_t shift_sequence_length = 0;
  double label_smoothing = 0, lse_square_scale = 0, softcap = 0, temperature = 1, grad_output = 1;
  double entropy_bonus = 0;
  bool want_z_loss = false, want_grad_input = false, want_grad_weight = false,
       want_grad_bias = false, want_lse = false, want_target_logprob = false, want_entropy = false,
       want_argmax = false, want_accuracy = false;
  // Results (sized by the runner; the per-row ones (BT) when wanted, accuracy like the loss).
  std::vector<C> loss, z_loss, grad_weight, grad_bias, lse, target_logprob, entropy, accuracy;
  std::vector<std::int64_t> argmax;
  std::vector<T> grad_input;

  std::int64_t loss_size() const { return reduction == flce::Reduction::none ? bt : 1; }
};

#if defined(TESSEL_CLI_CUDA)
// Runs the job on the CUDA path (flce_cuda.cu): copies in, forward, copies out.
template <class T>
void run_flce_cuda(FlceJob<T>& job);
#endif

}  // namespace tessel::cli
