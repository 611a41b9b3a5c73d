// flce::forward on the host: the loss and, in the same pass, the gradients of
// cross_entropy(input @ weight.T + bias, target) without ever holding more than one (chunk, V)
// block of logits. Per chunk: an Eigen GEMM for the logits, the fused row body (row.hpp, the CUDA
// kernel's host twin) over the rows with OpenMP, then Eigen GEMMs for grad_weight and grad_input.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <type_traits>

// Eigen 3.4 annotates defaulted special members __host__ __device__, which nvcc warns about
// (#20012); the warning is Eigen's, and CUDA translation units include this header through
// tessel.hpp.
#if defined(__CUDACC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20012
#endif
#include <Eigen/Core>
#if defined(__CUDACC__)
#pragma nv_diagnostic pop
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/int.hpp"
#include "../exec/body/context.hpp"
#include "../tensor/memory_space.hpp"
#include "../tensor/tensor.hpp"
#include "arguments.hpp"
#include "call.hpp"
#include "detail/openmp.hpp"
#include "loop_bodies.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "row.hpp"
#include "types.hpp"
#include "validate.hpp"

namespace tessel::flce {

namespace detail {

struct AlignedFree {
  void operator()(void* p) const noexcept { std::free(p); }
};

// One allocation for all of a call's scratch (see ScratchLayout).
inline std::unique_ptr<std::byte, AlignedFree> allocate_scratch(index_t bytes) {
  void* p = std::aligned_alloc(static_cast<std::size_t>(scratch_alignment),
                               static_cast<std::size_t>(bytes > 0 ? bytes : scratch_alignment));
  if (p == nullptr)
    fail(tessel::detail::sentence("cannot allocate ", bytes, " bytes of FLCE scratch memory."));
  return std::unique_ptr<std::byte, AlignedFree>(static_cast<std::byte*>(p));
}

template <class C>
using RowMajor = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class C>
using ConstMap = Eigen::Map<RowMajor<C> const, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class C>
using MutableMap = Eigen::Map<RowMajor<C>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class C>
ConstMap<C> const_map(C const* data, index_t rows, index_t cols, index_t row_stride) {
  return ConstMap<C>(data, rows, cols, Eigen::OuterStride<>(row_stride > 0 ? row_stride : cols));
}
template <class C>
MutableMap<C> mutable_map(C* data, index_t rows, index_t cols, index_t row_stride) {
  return MutableMap<C>(data, rows, cols, Eigen::OuterStride<>(row_stride > 0 ? row_stride : cols));
}

// Calls f(begin, count) on [0, n) cut into one tile per OpenMP thread (tiles of at least `grain`),
// in parallel when `work` is large enough. The GEMMs are parallelized this way rather than by
// Eigen: Eigen's own parallel GEMM packs its whole right-hand side (kc x V floats, 41 MB at V =
// 32000) and synchronizes its threads per block, which costs more than it gains for the few
// rows of a chunk. Inside the parallel region Eigen runs single-threaded.
template <class F>
void for_tiles(index_t n, index_t grain, [[maybe_unused]] index_t work, F const& f) {
  index_t threads = 1;
#if defined(_OPENMP)
  if (work >= parallel_work_threshold) threads = omp_get_max_threads();
#endif
  index_t const most = (n + grain - 1) / grain;
  index_t const tiles = threads < most ? threads : (most > 0 ? most : 1);
  index_t const step = (n + tiles - 1) / tiles;
  TESSEL_FLCE_PARALLEL_FOR(tiles > 1 ? work : 0)
  for (index_t t = 0; t < tiles; ++t) {
    index_t const begin = t * step;
    index_t const count = n - begin < step ? n - begin : step;
    if (count > 0) f(begin, count);
  }
}

// Rounds (rows, cols) values of src into the storage type of dst (or copies them).
template <class D, class S>
void convert_rows(D* dst, index_t dst_stride, S const* src, index_t src_stride, index_t rows,
                  index_t cols) {
  TESSEL_FLCE_PARALLEL_FOR(rows * cols)
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      dst[i * dst_stride + j] =
          static_cast<D>(static_cast<accum_t<std::remove_cv_t<S>>>(src[i * src_stride + j]));
}

// The host chunk loop. Everything has been validated; this writes the outputs.
template <class T, class Y, Integer Vocab>
void run_host(FlcePlan const& plan, Vocab vocab_extent, MatrixArg<T const, HostSpace> const& x,
              MatrixArg<T const, HostSpace> const& w, VectorArg<Y const, HostSpace> const& y,
              Options<T, HostSpace> const& o, Outputs<T, HostSpace> const& out,
              TargetSummary const& summary) {
  using C = accum_t<T>;
  constexpr bool narrow = is_narrow_v<T>;
  index_t const bt = plan.bt, h = plan.hidden, v = plan.vocab;
  ScratchLayout const layout = plan.scratch_layout(dtype_of_v<T>, Device::host);
  auto scratch = allocate_scratch(layout.total);
  std::byte* base = scratch.get();
  C* logits = reinterpret_cast<C*>(base + layout.logits);      // (R, V)
  C* row_loss = reinterpret_cast<C*>(base + layout.row_loss);  // (BT)
  C* row_z = reinterpret_cast<C*>(base + layout.row_z);        // (BT)

  RowConstants<C> const k = row_constants<C>(o.label_smoothing, o.lse_square_scale, o.softcap,
                                             o.ignore_index, v, summary.class_weight_sum);
  LossScales const scales = loss_scales(summary, o.reduction);
  bool const grads = out.wants_gradients();

  // The weight as the GEMMs read it: the caller's memory, or (16-bit) a float copy made once.
  C const* w_data = reinterpret_cast<C const*>(w.data);
  index_t w_stride = w.row_stride;
  if constexpr (narrow) {
    float* w32 = reinterpret_cast<float*>(base + layout.weight_f32);
    convert_rows(w32, h, w.data, w.row_stride, v, h);
    w_data = w32;
    w_stride = h;
  }
  auto weight = const_map<C>(w_data, v, h, w_stride);  // (V, H)

  if (out.grad_bias.present)
    for (index_t j = 0; j < v; ++j) out.grad_bias[j] = C(0);
  if (out.grad_weight.present && bt == 0)
    mutable_map(out.grad_weight.data, v, h, out.grad_weight.row_stride).setZero();

  for (index_t chunk = 0; chunk < plan.num_chunks; ++chunk) {
    index_t const r0 = chunk * plan.chunk_size;
    index_t const rows = bt - r0 < plan.chunk_size ? bt - r0 : plan.chunk_size;
    C const* x_data = reinterpret_cast<C const*>(x.row(r0));
    index_t x_stride = x.row_stride;
    if constexpr (narrow) {
      float* x32 = reinterpret_cast<float*>(base + layout.input_f32);
      convert_rows(x32, h, x.row(r0), x.row_stride, rows, h);
      x_data = x32;
      x_stride = h;
    }
    auto input = const_map<C>(x_data, rows, h, x_stride);  // (rows, H)
    auto block = mutable_map(logits, rows, v, v);          // (rows, V)
    for_tiles(v, 256, rows * v * h, [&](index_t j0, index_t n) {
      block.middleCols(j0, n).noalias() = input * weight.middleRows(j0, n).transpose();
    });

    TESSEL_FLCE_PARALLEL_FOR(rows * v)
    for (index_t i = 0; i < rows; ++i) {
      index_t const row = r0 + i;
      double const dy =
          o.grad_output_rows.present ? static_cast<double>(o.grad_output_rows[row]) : o.grad_output;
      RowRefs<C, C, T> refs;
      refs.logits = logits + i * v;
      refs.grad = grads ? logits + i * v : nullptr;
      refs.bias = o.bias.data;
      refs.bias_stride = o.bias.stride;
      refs.class_weights = o.class_weights.data;
      refs.class_weight_stride = o.class_weights.stride;
      exec::SequentialContext ctx;
      RowLoss<C> const l = fused_row(ctx, refs, vocab_extent, static_cast<index_t>(y[row]), k,
                                     static_cast<C>(dy * scales.ce), static_cast<C>(dy * scales.z));
      row_loss[row] = l.ce;
      row_z[row] = l.z;
    }
    if (!grads) continue;

    auto g = const_map<C>(logits, rows, v, v);  // (rows, V) d loss / d logits
    // grad_weight (and grad_bias) before grad_input, so a grad_input that overwrites the input
    // still works.
    if (out.grad_weight.present || out.grad_bias.present) {
      for_tiles(v, 256, rows * v * h, [&](index_t j0, index_t n) {
        if (out.grad_weight.present) {
          auto dw = mutable_map(out.grad_weight.row(j0), n, h, out.grad_weight.row_stride);
          if (chunk == 0)
            dw.noalias() = g.middleCols(j0, n).transpose() * input;
          else
            dw.noalias() += g.middleCols(j0, n).transpose() * input;
        }
        if (out.grad_bias.present)
          for (index_t j = j0; j < j0 + n; ++j)
            out.grad_bias[j] += column_sum<C>(logits, rows, v, j);
      });
    }
    if (out.grad_input.present) {
      C* dx_data = nullptr;
      index_t dx_stride = h;
      if constexpr (narrow) {
        dx_data = reinterpret_cast<float*>(base + layout.grad_input_f32);
      } else {
        dx_data = out.grad_input.row(r0);
        dx_stride = out.grad_input.row_stride;
      }
      auto dx = mutable_map(dx_data, rows, h, dx_stride);  // (rows, H)
      for_tiles(h, 64, rows * v * h, [&](index_t k0, index_t n) {
        dx.middleCols(k0, n).noalias() = g * weight.middleCols(k0, n);
      });
      if constexpr (narrow)
        convert_rows(out.grad_input.row(r0), out.grad_input.row_stride,
                     static_cast<float const*>(dx_data), h, rows, h);
    }
  }

  exec::SequentialContext ctx;
  finalize_losses(ctx, row_loss, row_z, bt, o.reduction, scales, out.loss.data, out.loss.stride,
                  out.z_loss.data, out.z_loss.stride);
}

}  // namespace detail

// The loss of cross_entropy(input @ weight.T + bias, target) (PyTorch's semantics plus
// Liger-Kernel's z-loss and softcap; see Options) and, in the same pass, the gradients asked for
// in `outputs`, already multiplied by grad_output.
//   input  (BT, H), weight (V, H): the same Element type, unit stride along the last mode
//   target (BT): class indices in [0, V), or ignore_index
// Returns the plan used. Throws tessel::Error (nothing written) for any invalid shape, option or
// target.
template <class X, class W, class Y>
requires MatrixTensor<X, HostSpace> && MatrixTensor<W, HostSpace> && TargetTensor<Y, HostSpace>
    FlcePlan forward(X const& input, W const& weight, Y const& target,
                     std::type_identity_t<Options<tensor_value_t<X>, HostSpace>> const& options,
                     std::type_identity_t<Outputs<tensor_value_t<X>, HostSpace>> const& outputs) {
  static_assert(detail::SameElement<X, W>::ok);
  using T = tensor_value_t<X>;
  using TargetT = tensor_value_t<Y>;
  MatrixArg<T const, HostSpace> const x(input);
  MatrixArg<T const, HostSpace> const w(weight);
  VectorArg<TargetT const, HostSpace> const y(target);
  detail::validate_call(x, w, y, options, outputs);
  FlcePlan const plan = detail::plan_for(input, weight, options.chunk_size);
  exec::SequentialContext ctx;
  TargetSummary const summary =
      summarize_targets(ctx, y.data, y.stride, y.size, w.rows, options.ignore_index,
                        options.class_weights.data, options.class_weights.stride);
  if (summary.first_bad_row >= 0)
    detail::fail_bad_target(static_cast<index_t>(y[summary.first_bad_row]), summary.first_bad_row,
                            w.rows, options.ignore_index);
  detail::run_host(plan, get<0>(weight.shape()), x, w, y, options, outputs, summary);
  return plan;
}

}  // namespace tessel::flce
