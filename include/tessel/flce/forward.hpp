// flce::forward for host tensors: the loss and, in the same pass, the gradients of
// cross_entropy(input @ weight.T + bias, target) without ever holding more than one (chunk, V)
// block of logits, run by a host executor (exec::Serial, exec::OpenMP, exec::Auto). Per chunk:
// exec::gemm for the logits (Eigen), the fused row body (row.hpp, the CUDA kernel's host twin)
// over the chunk's rows through exec::for_each_row, then exec::gemm for grad_weight and
// grad_input (flce/chunk_loop.hpp). The CUDA overload is in <tessel/flce/cuda.cuh>.
#pragma once

#include <type_traits>

#include "../exec/executors.hpp"
#include "../tensor/memory_space.hpp"
#include "../tensor/tensor.hpp"
#include "call.hpp"
#include "chunk_loop.hpp"
#include "options.hpp"
#include "plan.hpp"

namespace tessel::flce {

// The loss of cross_entropy(input @ weight.T + bias, target) (PyTorch's semantics plus
// Liger-Kernel's z-loss and softcap; see Options) and, in the same pass, the gradients asked for
// in `outputs`, already multiplied by grad_output.
//   input  (BT, H), weight (V, H): the same Element type, unit stride along the last mode
//   target (BT): class indices in [0, V), or ignore_index
//   executor: how many host threads share the work; every executor gives the same bits
// Returns the plan used. Throws tessel::Error (nothing written) for any invalid shape, option or
// target.
template <class X, class W, class Y, exec::HostExecutor Executor = exec::Auto>
requires MatrixTensor<X, HostSpace> && MatrixTensor<W, HostSpace> && TargetTensor<Y, HostSpace>
    FlcePlan forward(X const& input, W const& weight, Y const& target,
                     std::type_identity_t<Options<tensor_value_t<X>, HostSpace>> const& options,
                     std::type_identity_t<Outputs<tensor_value_t<X>, HostSpace>> const& outputs,
                     Executor const& executor = {}) {
  return detail::run_forward(input, weight, target, options, outputs, executor);
}

// The same with the plan given: its chunk size instead of the heuristic's, and with a
// StaticFlcePlan (make_plan(Int<BT>{}, Int<H>{}, Int<V>{}, Int<C>{})) a chunk loop whose numbers
// are all constants, the chunk size included. The plan must be the call's: its BT, H and V are the
// tensors' (a static_assert where both are static, tessel::Error otherwise), and options.chunk_size
// is 0 or the plan's chunk size.
template <AnyFlcePlan Plan, class X, class W, class Y, exec::HostExecutor Executor = exec::Auto>
requires MatrixTensor<X, HostSpace> && MatrixTensor<W, HostSpace> && TargetTensor<Y, HostSpace>
    FlcePlan forward(Plan const& plan, X const& input, W const& weight, Y const& target,
                     std::type_identity_t<Options<tensor_value_t<X>, HostSpace>> const& options,
                     std::type_identity_t<Outputs<tensor_value_t<X>, HostSpace>> const& outputs,
                     Executor const& executor = {}) {
  return detail::run_forward(input, weight, target, options, outputs, executor, plan);
}

}  // namespace tessel::flce
