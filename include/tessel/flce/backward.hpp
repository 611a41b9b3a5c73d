// flce::backward on the host: forward already computed the gradients for dy = grad_output, so
// backward only rescales them — by a scalar dy (no work when it is 1), or, for reduction none,
// by a per-row dy.
//
// A per-row dy rescales grad_input exactly (row i of grad_input comes from row i alone), but not
// grad_weight or grad_bias, where every row's contribution is already summed: for those, pass
// the per-row dy to forward as Options::grad_output_rows (a recompute, as Liger-Kernel's and
// Cut Cross-Entropy's backward passes do).
#pragma once

#include <cmath>
#include <type_traits>

#include "../tensor/memory_space.hpp"
#include "arguments.hpp"
#include "detail/openmp.hpp"
#include "options.hpp"
#include "types.hpp"
#include "validate.hpp"

namespace tessel::flce {

namespace detail {

template <class D, class S>
TESSEL_HOST_DEVICE inline void scale_element(D& d, S factor) {
  d = static_cast<D>(static_cast<S>(d) * factor);
}

template <class T, class S>
void scale_matrix(MatrixArg<T, HostSpace> const& m, S factor) {
  TESSEL_FLCE_PARALLEL_FOR(m.rows * m.cols)
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j) scale_element(m(i, j), factor);
}

}  // namespace detail

// Multiplies every gradient in `grads` by grad_output (its loss outputs are left alone).
// Throws tessel::Error, nothing written, when grad_output is not finite.
template <Element T>
void backward(double grad_output, Outputs<T, HostSpace> const& grads) {
  if (!std::isfinite(grad_output))
    detail::fail(tessel::detail::sentence("grad_output must be finite, got ",
                                          detail::number(grad_output), "."));
  if (grad_output == 1.0) return;
  using C = accum_t<T>;
  C const dy = static_cast<C>(grad_output);
  if (grads.grad_input.present) detail::scale_matrix(grads.grad_input, dy);
  if (grads.grad_weight.present) detail::scale_matrix(grads.grad_weight, dy);
  if (grads.grad_bias.present)
    for (index_t j = 0; j < grads.grad_bias.size; ++j)
      detail::scale_element(grads.grad_bias[j], dy);
}

// Multiplies row i of grads.grad_input by grad_output_rows[i] (reduction none). grad_weight and
// grad_bias must not be given (see the header comment); tessel::Error otherwise, nothing written.
template <Element T>
void backward(std::type_identity_t<VectorArg<accum_t<T> const, HostSpace>> const& grad_output_rows,
              Outputs<T, HostSpace> const& grads) {
  using tessel::detail::sentence;
  if (grads.grad_weight.present || grads.grad_bias.present)
    detail::fail(
        "a per-row grad_output cannot rescale grad_weight or grad_bias after forward summed the "
        "rows into them; pass it to forward as Options::grad_output_rows instead.");
  if (!grads.grad_input.present) return;
  if (grad_output_rows.size != grads.grad_input.rows)
    detail::fail(sentence("grad_output_rows has ", detail::elements_text(grad_output_rows.size),
                          " but grad_input has ", grads.grad_input.rows, " rows."));
  auto const& dx = grads.grad_input;
  TESSEL_FLCE_PARALLEL_FOR(dx.rows * dx.cols)
  for (index_t i = 0; i < dx.rows; ++i) {
    auto const dy = grad_output_rows[i];
    for (index_t j = 0; j < dx.cols; ++j) detail::scale_element(dx(i, j), dy);
  }
}

}  // namespace tessel::flce
