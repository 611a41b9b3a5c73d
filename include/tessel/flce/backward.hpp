// flce::backward: forward already computed the gradients for dy = grad_output, so backward only
// rescales them — by a scalar dy (no work when it is 1), or, for reduction none, by a per-row dy —
// as one expression assignment per gradient on the executor (host here; device tensors with
// exec::Cuda in <tessel/flce/cuda.cuh>).
//
// A per-row dy rescales grad_input exactly (row i of grad_input comes from row i alone), but not
// grad_weight or grad_bias, where every row's contribution is already summed: for those, pass
// the per-row dy to forward as Options::grad_output_rows (a recompute, as Liger-Kernel's and
// Cut Cross-Entropy's backward passes do).
#pragma once

#include <cmath>
#include <type_traits>

#include "../core/int.hpp"
#include "../core/layout.hpp"
#include "../exec/executors.hpp"
#include "../tensor/memory_space.hpp"
#include "arguments.hpp"
#include "backend.hpp"
#include "options.hpp"
#include "types.hpp"
#include "validate.hpp"

namespace tessel::flce {

namespace detail {

// m as a tensor of its executor's memory space.
template <class Backend, class T, class Space>
auto matrix_view(MatrixArg<T, Space> const& m) {
  return Backend::view(
      m.data, make_layout(make_shape(m.rows, m.cols), make_stride(m.row_stride, m.col_stride)));
}

// Multiplies every gradient in `grads` by grad_output, on the executor.
template <class T, class Space, class Executor>
void rescale(double grad_output, Outputs<T, Space> const& grads, Executor const& executor) {
  using B = Backend<Executor>;
  if (!std::isfinite(grad_output))
    fail(tessel::detail::sentence("grad_output must be finite, got ", grad_output, "."));
  if (grad_output == 1.0) return;
  auto const dy = static_cast<accum_t<T>>(grad_output);
  if (grads.grad_input.present) {
    auto const dx = matrix_view<B>(grads.grad_input);
    B::assign(executor, dx, dx * dy);
  }
  if (grads.grad_weight.present) {
    auto const dw = matrix_view<B>(grads.grad_weight);
    B::assign(executor, dw, dw * dy);
  }
  if (grads.grad_bias.present) {
    auto const& b = grads.grad_bias;
    auto const db = B::view(b.data, make_layout(make_shape(b.size), make_stride(b.stride)));
    B::assign(executor, db, db * dy);
  }
}

// Multiplies row i of grads.grad_input by grad_output_rows[i], on the executor.
template <class T, class Space, class Executor>
void rescale_rows(VectorArg<accum_t<T> const, Space> const& grad_output_rows,
                  Outputs<T, Space> const& grads, Executor const& executor) {
  using B = Backend<Executor>;
  using tessel::detail::sentence;
  if (grads.grad_weight.present || grads.grad_bias.present)
    fail(
        "a per-row grad_output cannot rescale grad_weight or grad_bias after forward summed the "
        "rows into them; pass it to forward as Options::grad_output_rows instead.");
  if (!grads.grad_input.present) return;
  if (grad_output_rows.size != grads.grad_input.rows)
    fail(sentence("grad_output_rows has ", elements_text(grad_output_rows.size),
                  " but grad_input has ", grads.grad_input.rows, " rows."));
  auto const dx = matrix_view<B>(grads.grad_input);
  // (BT, 1): broadcast along each row.
  auto const dy =
      B::view(grad_output_rows.data, make_layout(make_shape(grad_output_rows.size, Int<1>{}),
                                                 make_stride(grad_output_rows.stride, Int<0>{})));
  B::assign(executor, dx, dx * dy);
}

}  // namespace detail

// Multiplies every gradient in `grads` by grad_output (its loss outputs are left alone).
// Throws tessel::Error, nothing written, when grad_output is not finite.
template <Element T, exec::HostExecutor Executor = exec::Auto>
void backward(double grad_output, Outputs<T, HostSpace> const& grads,
              Executor const& executor = {}) {
  detail::rescale(grad_output, grads, executor);
}

// Multiplies row i of grads.grad_input by grad_output_rows[i] (reduction none). grad_weight and
// grad_bias must not be given (see the header comment); tessel::Error otherwise, nothing written.
template <Element T, exec::HostExecutor Executor = exec::Auto>
void backward(std::type_identity_t<VectorArg<accum_t<T> const, HostSpace>> const& grad_output_rows,
              Outputs<T, HostSpace> const& grads, Executor const& executor = {}) {
  detail::rescale_rows(grad_output_rows, grads, executor);
}

}  // namespace tessel::flce
