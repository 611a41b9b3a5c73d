// flce::forward and flce::backward for tensors in device memory, run by exec::Cuda{stream}
// (include from CUDA translation units; link CUDA::cudart and CUDA::cublas). The chunk loop is
// the host's (flce/chunk_loop.hpp) on the CUDA executor: per chunk, exec::gemm queues a cuBLAS
// GEMM for the logits (f32 output, f32 accumulation; f64 for f64), exec::for_each_row the fused
// row kernel (one block per row, the row body instantiated with the call's plan), then cuBLAS
// GEMMs for grad_weight (accumulated in f32 across chunks) and grad_input, and the grad_bias
// column sums as an expression (a row reduction kernel). All of it is queued on the executor's
// stream, with the scratch from its stream-ordered pool (gpu::StreamBuffer). One synchronization
// happens, before the loop and before any output is written: the host reads back the target
// check so that it can throw the same sentence as the host path. None happens inside the loop
// or after.
#pragma once

#include <climits>
#include <cstddef>
#include <type_traits>

#include <cuda_runtime_api.h>

#include <tessel/core/error.hpp>
#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/dense.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/cuda/memory.hpp>
#include <tessel/exec/cuda/rows.cuh>
#include <tessel/exec/executors.hpp>
#include <tessel/flce/backward.hpp>
#include <tessel/flce/chunk_loop.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/flce/vocab_parallel.hpp>

namespace tessel::flce {

namespace detail {

// A size cuBLAS's 32-bit dimensions can hold, checked before anything is queued.
inline void check_cublas_dimension(index_t value, char const* what) {
  if (value > INT_MAX)
    fail(tessel::detail::sentence(what, " ", value, " exceeds cuBLAS's 32-bit dimension limit (",
                                  INT_MAX, ")."));
}

// exec::Cuda: cuBLAS through exec::gemm (16-bit operands read as they are, by the tensor cores),
// the row bodies as one-block-per-row kernels, memory and scratch exec::Cuda's
// (exec/cuda/memory.hpp).
template <>
struct Backend<exec::Cuda> : exec::Memory<exec::Cuda> {
  static constexpr Device device = Device::cuda;
  // What the GEMMs read: the storage type (f16/bf16 products accumulate in f32).
  template <class T>
  using gemm_t = T;

  // Every size the GEMMs will hand cuBLAS fits its int, so no chunk fails half-way.
  template <class Plan, class Call>
  static void check_call(Plan const& plan, Call const& call) {
    auto leading = [](auto const& m) { return m.row_stride > m.cols ? m.row_stride : m.cols; };
    index_t const rows = plan.bt < plan.chunk_size ? plan.bt : plan.chunk_size;
    check_cublas_dimension(rows, "the chunk's row count");
    check_cublas_dimension(plan.hidden, "the hidden size");
    check_cublas_dimension(plan.vocab, "the vocabulary size");
    check_cublas_dimension(leading(call.input), "input's row stride");
    check_cublas_dimension(leading(call.weight), "weight's row stride");
    if (call.outputs.grad_input.present)
      check_cublas_dimension(leading(call.outputs.grad_input), "grad_input's row stride");
    if (call.outputs.grad_weight.present)
      check_cublas_dimension(leading(call.outputs.grad_weight), "grad_weight's row stride");
  }

  template <int Threads, class Body>
  static void rows(exec::Cuda const& executor, index_t rows, index_t row_work, Body const& body) {
    exec::for_each_row<Threads>(executor, rows, row_work, body);
  }
  template <class C, class A, class B>
  static void gemm(exec::Cuda const& executor, C const& c, A const& a, B const& b,
                   exec::DenseScale scale) {
    exec::gemm(executor, c, a, b, scale);
  }
  template <class D, class S>
  static void assign(exec::Cuda const& executor, D const& dst, S const& src) {
    tessel::assign(dst, src, executor);
  }
};

}  // namespace detail

// forward for device tensors: the same contract as the host forward (flce/forward.hpp), queued on
// executor.stream (exec::Cuda{} is the legacy default stream; cuBLAS runs on this host thread's
// handle for the device, gpu::cublas_handle). Returns once the work is queued (after the one
// synchronization that validates the targets). Throws tessel::Error, nothing written, for any
// invalid shape, option or target, and for CUDA or cuBLAS failures before the first write.
template <class X, class W, class Y, exec::DeviceExecutor Executor = exec::Cuda>
requires MatrixTensor<X, DeviceSpace> && MatrixTensor<W, DeviceSpace> &&
    TargetTensor<Y, DeviceSpace>
        FlcePlan
        forward(X const& input, W const& weight, Y const& target,
                std::type_identity_t<Options<tensor_value_t<X>, DeviceSpace>> const& options,
                std::type_identity_t<Outputs<tensor_value_t<X>, DeviceSpace>> const& outputs,
                Executor const& executor = {}) {
  return detail::run_forward(input, weight, target, options, outputs, executor);
}

// The same with the plan given (flce/forward.hpp's forward(plan, ...)): a StaticFlcePlan's chunk
// size reaches the kernels as a constant.
template <AnyFlcePlan Plan, class X, class W, class Y, exec::DeviceExecutor Executor = exec::Cuda>
requires MatrixTensor<X, DeviceSpace> && MatrixTensor<W, DeviceSpace> &&
    TargetTensor<Y, DeviceSpace>
        FlcePlan
        forward(Plan const& plan, X const& input, W const& weight, Y const& target,
                std::type_identity_t<Options<tensor_value_t<X>, DeviceSpace>> const& options,
                std::type_identity_t<Outputs<tensor_value_t<X>, DeviceSpace>> const& outputs,
                Executor const& executor = {}) {
  return detail::run_forward(input, weight, target, options, outputs, executor, plan);
}

// The vocabulary-parallel forward for device tensors (flce/vocab_parallel.hpp), over an NCCL
// communicator created on executor.stream (its collectives are then ordered with the chunk
// loop's kernels). Waits for the stream before each collective.
template <class X, class W, class Y, exec::DeviceExecutor Executor = exec::Cuda>
requires MatrixTensor<X, DeviceSpace> && MatrixTensor<W, DeviceSpace> &&
    TargetTensor<Y, DeviceSpace>
        VocabParallelPlan
        forward(X const& input, W const& weight, Y const& target, VocabParallel const& parallel,
                std::type_identity_t<Options<tensor_value_t<X>, DeviceSpace>> const& options,
                std::type_identity_t<Outputs<tensor_value_t<X>, DeviceSpace>> const& outputs,
                Executor const& executor = {}) {
  return detail::run_vocab_parallel(input, weight, target, parallel, options, outputs, executor);
}

// backward for device gradients: multiplies them by grad_output (no work when it is 1), one
// elementwise kernel per gradient on executor.stream.
template <Element T, exec::DeviceExecutor Executor = exec::Cuda>
void backward(double grad_output, Outputs<T, DeviceSpace> const& grads,
              Executor const& executor = {}) {
  detail::rescale(grad_output, grads, executor);
}

// backward for device gradients with a per-row grad_output (reduction none): scales grad_input's
// rows; grad_weight and grad_bias must not be given (see flce/backward.hpp).
template <Element T, exec::DeviceExecutor Executor = exec::Cuda>
void backward(
    std::type_identity_t<VectorArg<accum_t<T> const, DeviceSpace>> const& grad_output_rows,
    Outputs<T, DeviceSpace> const& grads, Executor const& executor = {}) {
  detail::rescale_rows(grad_output_rows, grads, executor);
}

}  // namespace tessel::flce
