// flce::forward and flce::backward for tensors in device memory (include from CUDA translation
// units; link CUDA::cudart and CUDA::cublas). Per chunk, on one stream: a cuBLAS GEMM for the
// logits (f32 output, f32 accumulation; f64 for f64), the fused row kernel, then cuBLAS GEMMs for
// grad_weight (accumulated in f32 across chunks) and grad_input, and the grad_bias column sums.
// The mean's divisors are computed on the device and read there. One synchronization happens,
// before the loop and before any output is written: the host reads back the first invalid target
// so that it can throw the same sentence as the host path. None happens inside the loop or after.
#pragma once

#include <climits>
#include <type_traits>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/flce/arguments.hpp>
#include <tessel/flce/backward.hpp>
#include <tessel/flce/call.hpp>
#include <tessel/flce/gemm_calls.hpp>
#include <tessel/flce/loop_bodies.hpp>
#include <tessel/flce/options.hpp>
#include <tessel/flce/plan.hpp>
#include <tessel/flce/types.hpp>
#include <tessel/flce/validate.hpp>

#include "cuda/kernels.cuh"

namespace tessel::flce {

// Where the CUDA path runs: a stream (null: the legacy default stream) and a cuBLAS handle (null:
// a handle tessel creates once per host thread). The handle's stream is set to `stream`.
struct CudaExec {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
};

namespace device {

inline void check(cublasStatus_t status, char const* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    flce::detail::fail(tessel::detail::sentence("cuBLAS error in ", what, ": ",
                                                cublasGetStatusString(status), "."));
}

inline cublasHandle_t default_cublas_handle() {
  struct Holder {
    cublasHandle_t handle = nullptr;
    ~Holder() {
      if (handle != nullptr) cublasDestroy(handle);
    }
  };
  thread_local Holder holder;
  if (holder.handle == nullptr) check(cublasCreate(&holder.handle), "cublasCreate");
  return holder.handle;
}

template <class T>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, double>) return CUDA_R_64F;
  if constexpr (std::is_same_v<T, half>) return CUDA_R_16F;
  return CUDA_R_16BF;
}

// The scratch, freed in stream order however the call ends.
class Scratch {
 public:
  Scratch(index_t bytes, cudaStream_t stream) : stream_(stream) {
    TESSEL_CUDA_CHECK(cudaMallocAsync(&data_, static_cast<std::size_t>(bytes), stream),
                      "allocating the FLCE scratch");
  }
  ~Scratch() { cudaFreeAsync(data_, stream_); }
  Scratch(Scratch const&) = delete;
  Scratch& operator=(Scratch const&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// One GemmCall (flce/gemm_calls.hpp) through cublasGemmEx, accumulating in Compute.
template <class Compute>
void gemm(cublasHandle_t handle, GemmCall const& g, void const* a, cudaDataType_t a_type,
          void const* b, cudaDataType_t b_type, void* c, cudaDataType_t c_type, char const* what) {
  auto const i = [](index_t x) { return static_cast<int>(x); };
  cublasOperation_t const op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t const op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if constexpr (std::is_same_v<Compute, double>) {
    double const one = 1, beta = g.beta;
    check(cublasGemmEx(handle, op_a, op_b, i(g.m), i(g.n), i(g.k), &one, a, a_type, i(g.lda), b,
                       b_type, i(g.ldb), &beta, c, c_type, i(g.ldc), CUBLAS_COMPUTE_64F,
                       CUBLAS_GEMM_DEFAULT),
          what);
  } else {
    float const one = 1, beta = static_cast<float>(g.beta);
    check(cublasGemmEx(handle, op_a, op_b, i(g.m), i(g.n), i(g.k), &one, a, a_type, i(g.lda), b,
                       b_type, i(g.ldb), &beta, c, c_type, i(g.ldc), CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          what);
  }
}

// A leading dimension cuBLAS accepts: a one-row matrix may have any row stride.
template <class T>
index_t leading(MatrixArg<T, DeviceSpace> const& m) {
  return m.row_stride > m.cols ? m.row_stride : (m.cols > 0 ? m.cols : 1);
}

inline void check_int(index_t value, char const* what) {
  if (value > INT_MAX)
    flce::detail::fail(tessel::detail::sentence(
        what, " ", value, " exceeds cuBLAS's 32-bit dimension limit (", INT_MAX, ")."));
}

template <class T, class Y>
void validate_device(MatrixArg<T const, DeviceSpace> const& x,
                     MatrixArg<T const, DeviceSpace> const& w, Outputs<T, DeviceSpace> const& out,
                     index_t chunk_size) {
  check_int(x.rows < chunk_size ? x.rows : chunk_size, "the chunk's row count");
  check_int(x.cols, "the hidden size");
  check_int(w.rows, "the vocabulary size");
  check_int(leading(x), "input's row stride");
  check_int(leading(w), "weight's row stride");
  if (out.grad_input.present) check_int(leading(out.grad_input), "grad_input's row stride");
  if (out.grad_weight.present) check_int(leading(out.grad_weight), "grad_weight's row stride");
}

template <class T, class Y, Integer Vocab>
void run(FlcePlan const& plan, Vocab vocab_extent, MatrixArg<T const, DeviceSpace> const& x,
         MatrixArg<T const, DeviceSpace> const& w, VectorArg<Y const, DeviceSpace> const& y,
         Options<T, DeviceSpace> const& o, Outputs<T, DeviceSpace> const& out, CudaExec exec) {
  using C = accum_t<T>;
  constexpr bool narrow = is_narrow_v<T>;
  using G = std::conditional_t<narrow, T, C>;  // what the gradient GEMMs read
  index_t const bt = plan.bt, h = plan.hidden, v = plan.vocab;
  cudaStream_t const stream = exec.stream;
  ScratchLayout const layout = plan.scratch_layout(dtype_of_v<T>, Device::cuda);
  Scratch scratch(layout.total, stream);
  std::byte* base = scratch.data();
  C* logits = reinterpret_cast<C*>(base + layout.logits);  // (R, V)
  G* grad = narrow ? reinterpret_cast<G*>(base + layout.gradient) : reinterpret_cast<G*>(logits);
  C* row_ce = reinterpret_cast<C*>(base + layout.row_loss);
  C* row_z = reinterpret_cast<C*>(base + layout.row_z);
  auto* scalars = reinterpret_cast<DeviceScalars*>(base + layout.scalars);

  prepare_kernel<<<1, single_block_threads, 0, stream>>>(
      y.data, y.stride, bt, v, o.ignore_index, o.class_weights.data, o.class_weights.stride,
      o.reduction, scalars);
  TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE prepare kernel");
  // The one synchronization: an invalid target must throw before any output is written.
  DeviceScalars host{};
  TESSEL_CUDA_CHECK(cudaMemcpyAsync(&host, scalars, sizeof host, cudaMemcpyDeviceToHost, stream),
                    "reading back the FLCE target summary");
  TESSEL_CUDA_CHECK(cudaStreamSynchronize(stream), "waiting for the FLCE target summary");
  if (host.summary.first_bad_row >= 0)
    flce::detail::fail_bad_target(host.bad_target, host.summary.first_bad_row, v, o.ignore_index);

  cublasHandle_t const handle = exec.cublas != nullptr ? exec.cublas : default_cublas_handle();
  check(cublasSetStream(handle, stream), "cublasSetStream");
  cudaDataType_t const t_type = cuda_type<T>(), c_type = cuda_type<C>(), g_type = cuda_type<G>();
  bool const grads = out.wants_gradients();

  RowKernelArgs<C, G, T, Y> args;
  args.logits_ld = v;
  args.grad_ld = v;
  args.bias = o.bias.data;
  args.bias_stride = o.bias.stride;
  args.class_weights = o.class_weights.data;
  args.class_weight_stride = o.class_weights.stride;
  args.target = y.data;
  args.target_stride = y.stride;
  args.grad_output_rows = o.grad_output_rows.present ? o.grad_output_rows.data : nullptr;
  args.grad_output_stride = o.grad_output_rows.stride;
  args.grad_output = o.grad_output;
  args.k = flce::detail::row_constants<C>(o.label_smoothing, o.lse_square_scale, o.softcap,
                                          o.ignore_index, v, host.summary.class_weight_sum);
  args.scalars = scalars;
  args.row_ce = row_ce;
  args.row_z = row_z;
  index_t const column_blocks = (v + column_threads - 1) / column_threads;

  for (index_t chunk = 0; chunk < plan.num_chunks; ++chunk) {
    index_t const r0 = chunk * plan.chunk_size;
    index_t const rows = bt - r0 < plan.chunk_size ? bt - r0 : plan.chunk_size;
    T const* x_chunk = x.row(r0);
    gemm<C>(handle, logits_gemm(rows, h, v, leading(w), leading(x), v), w.data, t_type, x_chunk,
            t_type, logits, c_type, "the logits GEMM");
    args.logits = logits;
    args.grad = grads ? grad : nullptr;
    args.first_row = r0;
    row_kernel<row_threads>
        <<<static_cast<unsigned>(rows), row_threads, 0, stream>>>(args, vocab_extent);
    TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE row kernel");
    if (!grads) continue;
    // grad_weight before grad_input, so a grad_input that overwrites the input still works.
    if (out.grad_weight.present)
      gemm<C>(handle,
              grad_weight_gemm(rows, h, v, leading(x), v, leading(out.grad_weight), chunk != 0),
              x_chunk, t_type, grad, g_type, out.grad_weight.data, c_type, "the grad_weight GEMM");
    if (out.grad_bias.present) {
      bias_grad_kernel<<<static_cast<unsigned>(column_blocks), column_threads, 0, stream>>>(
          static_cast<G const*>(grad), rows, v, v, out.grad_bias.data, out.grad_bias.stride,
          chunk != 0);
      TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE grad_bias kernel");
    }
    if (out.grad_input.present)
      gemm<C>(handle, grad_input_gemm(rows, h, v, leading(w), v, leading(out.grad_input)), w.data,
              t_type, grad, g_type, out.grad_input.row(r0), t_type, "the grad_input GEMM");
  }

  if (bt == 0) {  // no chunk wrote the accumulated gradients
    if (out.grad_weight.present)
      TESSEL_CUDA_CHECK(
          cudaMemset2DAsync(
              out.grad_weight.data, static_cast<std::size_t>(leading(out.grad_weight)) * sizeof(C),
              0, static_cast<std::size_t>(h) * sizeof(C), static_cast<std::size_t>(v), stream),
          "zeroing grad_weight");
    if (out.grad_bias.present) {
      bias_grad_kernel<<<static_cast<unsigned>(column_blocks), column_threads, 0, stream>>>(
          static_cast<G const*>(grad), index_t{0}, v, v, out.grad_bias.data, out.grad_bias.stride,
          false);
      TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE grad_bias kernel");
    }
  }
  finalize_kernel<<<1, single_block_threads, 0, stream>>>(row_ce, row_z, bt, o.reduction, scalars,
                                                          out.loss.data, out.loss.stride,
                                                          out.z_loss.data, out.z_loss.stride);
  TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE finalize kernel");
}

}  // namespace device

// forward for device tensors: the same contract as the host forward (flce/forward.hpp), enqueued
// on exec.stream. Returns once the work is enqueued (after the one synchronization that
// validates the targets). Throws tessel::Error, nothing written, for any invalid shape, option or
// target, and for CUDA or cuBLAS failures before the first write.
template <class X, class W, class Y>
requires MatrixTensor<X, DeviceSpace> && MatrixTensor<W, DeviceSpace> &&
    TargetTensor<Y, DeviceSpace>
        FlcePlan
        forward(X const& input, W const& weight, Y const& target,
                std::type_identity_t<Options<tensor_value_t<X>, DeviceSpace>> const& options,
                std::type_identity_t<Outputs<tensor_value_t<X>, DeviceSpace>> const& outputs,
                CudaExec exec = {}) {
  static_assert(detail::SameElement<X, W>::ok);
  using T = tensor_value_t<X>;
  using TargetT = tensor_value_t<Y>;
  MatrixArg<T const, DeviceSpace> const x(input);
  MatrixArg<T const, DeviceSpace> const w(weight);
  VectorArg<TargetT const, DeviceSpace> const y(target);
  detail::validate_call(x, w, y, options, outputs);
  FlcePlan const plan = detail::plan_for(input, weight, options.chunk_size);
  device::validate_device<T, TargetT>(x, w, outputs, plan.chunk_size);
  device::run(plan, get<0>(weight.shape()), x, w, y, options, outputs, exec);
  return plan;
}

// backward for device gradients: multiplies them by grad_output (no work when it is 1).
template <Element T>
void backward(double grad_output, Outputs<T, DeviceSpace> const& grads, CudaExec exec = {}) {
  if (!std::isfinite(grad_output))
    detail::fail(tessel::detail::sentence("grad_output must be finite, got ",
                                          detail::number(grad_output), "."));
  if (grad_output == 1.0) return;
  using C = accum_t<T>;
  C const dy = static_cast<C>(grad_output);
  auto scale = [&](auto* data, index_t rows, index_t cols, index_t ld) {
    index_t const n = rows * cols;
    if (n == 0) return;
    device::scale_matrix_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, exec.stream>>>(
        data, rows, cols, ld, dy);
    TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE scale kernel");
  };
  auto const& g = grads;
  if (g.grad_input.present)
    scale(g.grad_input.data, g.grad_input.rows, g.grad_input.cols, g.grad_input.row_stride);
  if (g.grad_weight.present)
    scale(g.grad_weight.data, g.grad_weight.rows, g.grad_weight.cols, g.grad_weight.row_stride);
  if (g.grad_bias.present)
    scale(g.grad_bias.data, g.grad_bias.size, index_t{1}, g.grad_bias.stride);
}

// backward for device gradients with a per-row grad_output (reduction none): scales grad_input's
// rows; grad_weight and grad_bias must not be given (see flce/backward.hpp).
template <Element T>
void backward(
    std::type_identity_t<VectorArg<accum_t<T> const, DeviceSpace>> const& grad_output_rows,
    Outputs<T, DeviceSpace> const& grads, CudaExec exec = {}) {
  if (grads.grad_weight.present || grads.grad_bias.present)
    detail::fail(
        "a per-row grad_output cannot rescale grad_weight or grad_bias after forward summed the "
        "rows into them; pass it to forward as Options::grad_output_rows instead.");
  auto const& dx = grads.grad_input;
  if (!dx.present) return;
  if (grad_output_rows.size != dx.rows)
    detail::fail(tessel::detail::sentence("grad_output_rows has ",
                                          detail::elements_text(grad_output_rows.size),
                                          " but grad_input has ", dx.rows, " rows."));
  index_t const n = dx.rows * dx.cols;
  if (n == 0) return;
  device::scale_rows_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, exec.stream>>>(
      dx.data, dx.rows, dx.cols, dx.row_stride, grad_output_rows.data, grad_output_rows.stride);
  TESSEL_CUDA_CHECK(cudaGetLastError(), "launching the FLCE scale kernel");
}

}  // namespace tessel::flce
