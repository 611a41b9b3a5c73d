// FLCE's CUDA kernels. Each is a thin launch wrapper around a host/device body that the host
// path runs too (flce/row.hpp, flce/loop_bodies.hpp): only the block context differs.
//   prepare_kernel    one block: target summary (mean divisors, first invalid target)
//   row_kernel        one block per row of the chunk: the fused softmax cross-entropy row body
//   bias_grad_kernel  one thread per vocabulary column: grad_bias += column sums of the gradient
//   finalize_kernel   one block: the loss outputs from the per-row terms
//   scale kernels     backward's rescaling
#pragma once

#include <tessel/core/config.hpp>
#include <tessel/flce/backward.hpp>
#include <tessel/flce/loop_bodies.hpp>
#include <tessel/flce/plan.hpp>
#include <tessel/flce/row.hpp>

#include <tessel/exec/cuda/block_context.cuh>

namespace tessel::flce::device {

using exec::BlockContext;

// Threads of the row kernel's blocks. A row of 128256 logits is ~250 elements per thread per
// pass; four blocks fit an SM. Register use stays low: the body holds a few scalars per thread.
inline constexpr int row_threads = 512;
inline constexpr int single_block_threads = 1024;
inline constexpr int column_threads = 256;

// What the prepare kernel leaves in the scratch's scalar block for the later kernels and the host.
struct DeviceScalars {
  TargetSummary summary;
  LossScales scales;
  index_t bad_target = 0;  // the target at summary.first_bad_row
};
static_assert(sizeof(DeviceScalars) <= scratch_scalar_bytes);

template <class Y, class T>
__global__ void __launch_bounds__(single_block_threads)
    prepare_kernel(Y const* target, index_t target_stride, index_t bt, index_t vocab,
                   index_t ignore_index, T const* class_weights, index_t class_weight_stride,
                   Reduction reduction, DeviceScalars* out) {
  BlockContext<single_block_threads> ctx;
  TargetSummary const s = summarize_targets(ctx, target, target_stride, bt, vocab, ignore_index,
                                            class_weights, class_weight_stride);
  if (threadIdx.x == 0) {
    out->summary = s;
    out->scales = loss_scales(s, reduction);
    out->bad_target =
        s.first_bad_row >= 0 ? static_cast<index_t>(target[s.first_bad_row * target_stride]) : 0;
  }
}

// Everything the row kernel reads, by value (one kernel parameter block).
template <class C, class G, class T, class Y>
struct RowKernelArgs {
  C const* logits = nullptr;  // (rows, V) this chunk, leading dimension logits_ld
  index_t logits_ld = 0;
  G* grad = nullptr;  // (rows, V) the gradient (may equal logits); null: none
  index_t grad_ld = 0;
  T const* bias = nullptr;
  index_t bias_stride = 1;
  T const* class_weights = nullptr;
  index_t class_weight_stride = 1;
  Y const* target = nullptr;  // (BT)
  index_t target_stride = 1;
  C const* grad_output_rows = nullptr;  // (BT) or null
  index_t grad_output_stride = 1;
  double grad_output = 1;
  index_t first_row = 0;  // the chunk's first row in the batch
  RowConstants<C> k{};
  DeviceScalars const* scalars = nullptr;
  C* row_ce = nullptr;  // (BT)
  C* row_z = nullptr;   // (BT)
};

template <int Threads, class C, class G, class T, class Y, class Vocab>
__global__ void __launch_bounds__(Threads)
    row_kernel(RowKernelArgs<C, G, T, Y> const a, Vocab vocab) {
  index_t const i = blockIdx.x;
  index_t const row = a.first_row + i;
  double const dy = a.grad_output_rows != nullptr
                        ? static_cast<double>(a.grad_output_rows[row * a.grad_output_stride])
                        : a.grad_output;
  LossScales const s = a.scalars->scales;  // on the device: no host round trip needed
  RowRefs<C, G, T> refs;
  refs.logits = a.logits + i * a.logits_ld;
  refs.grad = a.grad != nullptr ? a.grad + i * a.grad_ld : nullptr;
  refs.bias = a.bias;
  refs.bias_stride = a.bias_stride;
  refs.class_weights = a.class_weights;
  refs.class_weight_stride = a.class_weight_stride;
  BlockContext<Threads> ctx;
  RowLoss<C> const l =
      fused_row(ctx, refs, vocab, static_cast<index_t>(a.target[row * a.target_stride]), a.k,
                static_cast<C>(dy * s.ce), static_cast<C>(dy * s.z));
  if (threadIdx.x == 0) {
    a.row_ce[row] = l.ce;
    a.row_z[row] = l.z;
  }
}

// grad_bias[j] (+)= sum over the chunk's rows of g(i, j).
template <class C, class G>
__global__ void __launch_bounds__(column_threads)
    bias_grad_kernel(G const* g, index_t rows, index_t ld, index_t vocab, C* grad_bias,
                     index_t grad_bias_stride, bool accumulate) {
  index_t const j = static_cast<index_t>(blockIdx.x) * column_threads + threadIdx.x;
  if (j >= vocab) return;
  C const s = column_sum<C>(g, rows, ld, j);
  C& out = grad_bias[j * grad_bias_stride];
  out = accumulate ? out + s : s;
}

template <class C>
__global__ void __launch_bounds__(single_block_threads)
    finalize_kernel(C const* row_ce, C const* row_z, index_t bt, Reduction reduction,
                    DeviceScalars const* scalars, C* loss, index_t loss_stride, C* z_loss,
                    index_t z_stride) {
  BlockContext<single_block_threads> ctx;
  finalize_losses(ctx, row_ce, row_z, bt, reduction, scalars->scales, loss, loss_stride, z_loss,
                  z_stride);
}

// m(i, j) *= factor, one thread per element of a (rows, cols) matrix.
template <class T, class S>
__global__ void scale_matrix_kernel(T* m, index_t rows, index_t cols, index_t ld, S factor) {
  index_t const e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * cols) return;
  flce::detail::scale_element(m[(e / cols) * ld + e % cols], factor);
}

// m(i, j) *= factors[i].
template <class T, class S>
__global__ void scale_rows_kernel(T* m, index_t rows, index_t cols, index_t ld, S const* factors,
                                  index_t factor_stride) {
  index_t const e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * cols) return;
  index_t const i = e / cols;
  flce::detail::scale_element(m[i * ld + e % cols], factors[i * factor_stride]);
}

}  // namespace tessel::flce::device
