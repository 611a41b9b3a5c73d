// FLCE's binding, split by storage type: module.cpp checks what is common to every dtype and
// dispatches on the input's; flce_f32.cpp, flce_f64.cpp, flce_f16.cpp and flce_bf16.cpp each
// instantiate flce::forward for one storage type (flce_run.hpp), so that Ninja compiles them in
// parallel and a serial build pays each once.
#pragma once

#include "arrays.hpp"
#include "flce_scalars.hpp"

namespace tessel_python {

// The outputs besides the loss and the gradients that a call asks for (flce::Outputs' z_loss, lse,
// target_logprob, entropy, argmax, accuracy); tessel computes only these.
struct FlceExtras {
  bool z_loss = false, lse = false, target_logprob = false, entropy = false, argmax = false,
       accuracy = false;
};

// One call of tessel.linear_cross_entropy as the binding received it: the arrays (bias,
// class_weights, grad_output_rows and the soft targets may be invalid: not given), the scalar
// options, and which gradients to compute (each one left out is work and memory saved: a frozen
// LM head needs no (vocab, hidden) grad_weight; none is an evaluation pass).
struct FlceCall {
  InArray input, weight, target, bias, class_weights, grad_output_rows;
  InArray soft_target_indices, soft_target_probs;
  FlceScalars scalars;
  bool grad_input = false, grad_weight = false, grad_bias = false;
  FlceExtras extras;
};

// (loss, grad_input, grad_weight, grad_bias, extras) of flce::forward on storage type T (float,
// double, tessel::half, tessel::bfloat16), as fresh NumPy arrays or None; extras is a dict from
// the name of each extra asked for (FlceExtras) to its array. The loss, grad_weight, grad_bias and
// the floating extras are in accum_t<T> (float for 16-bit storage), argmax in int64, grad_input in
// T: float16 for half, and for bfloat16, which NumPy lacks, uint16 holding its bits (tessel.torch
// views them as torch.bfloat16). grad_output_rows and soft_target_probs must be accum_t<T>,
// soft_target_indices i64.
// @pre call.input is a host array of rank 2 and dtype T; call.target one of rank 1 and dtype i64
//      or i32
template <class T>
nb::tuple run_linear_cross_entropy(FlceCall const& call);

}  // namespace tessel_python
