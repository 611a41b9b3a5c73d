// The overflow pre-check of a Shampoo step, run before anything is written. Entry (i, j) of the
// factor of mode k becomes beta2 F_ij + w (G x_k G)_ij, the second term a sum over the elements
// of the other modes, and by Cauchy-Schwarz |(G x_k G)_ij| <= sqrt(r_i r_j) with r_i =
// (G x_k G)_ii, the squared norm of row i of G along mode k. So
//   |new F_ij| <= beta2 |F_ij| + w sqrt(r_i r_j),  and  bound := max_ij of the right side.
// The bound holds for any stored F, and for the positive semi-definite factors Shampoo keeps
// (|F_ij| <= sqrt(F_ii F_jj)) its maximum sits on the diagonal, where it is the new factor's
// largest entry itself: the check refuses exactly the steps that would overflow, up to rounding.
// It costs one pass over F, as max|F| would. The factor 1 + (m + 4) eps covers the rounding in T
// of those sums of m + 1 terms (m = numel / d); the result must fit T and the stored dtype. On
// amortized steps the root is computed from F / bias_correction2, so bound / bias_correction2 must
// fit T too. A factor that already holds NaN or Inf (only a loaded state can), or a NaN parameter
// under L2 weight decay, makes the bound non-finite; when the gradient's part alone fits, that is
// left to the inverse-root computation's check.
//   factor_bound_inputs: the bound and max_i r_i per slot, reductions on the executor;
//   factor_bound_error:  the decision and its sentence, on the host.
#pragma once

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "../../core/dtype.hpp"
#include "../../core/layout.hpp"
#include "../../exec/memory.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/math.hpp"
#include "../../expr/reduce.hpp"
#include "../options.hpp"
#include "factors.hpp"
#include "scalars.hpp"

namespace tessel::shampoo {

namespace detail {

inline std::string block_name(index_t param, index_t block) {
  return tessel::detail::sentence("parameter ", param, ", block ", block);
}

// The shortest text that reads back as x in its own type (0.99 for the float 0.99f).
template <class T>
std::string shortest_text(T x) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
  return ec == std::errc{} ? std::string(buffer, end) : std::string("?");
}

// The largest finite value of a factor dtype (bf16: (2 - 2^-7) 2^127).
inline double largest_finite(DType d) {
  if (d == DType::bf16) return 3.3895313892515355e38;
  if (d == DType::f16) return 65504.0;
  if (d == DType::f32) return static_cast<double>(std::numeric_limits<float>::max());
  return std::numeric_limits<double>::max();
}

}  // namespace detail

namespace stages {

// For the count blocks of shape `block` at g (the gathered gradients) and their stored factors
// (count, d, d) of element type U, in double: out[0, count) the bound above per slot,
// out[count, 2 count) max_i r_i. norms: count * d doubles of scratch (r, then sqrt r).
template <class X, class U, class T>
void factor_bound_inputs(X const& x, U const* stored, T const* g, index_t count,
                         Extents const& block, index_t k, double beta2, double w, double* norms,
                         double* out) {
  using B = exec::Memory<X>;
  auto const a = detail::around_mode(block, k);
  index_t const numel = a.outer * a.d * a.inner;
  // Row i of mode k of a block: the (P, S) elements g[p, i, s], one hierarchical mode.
  auto const rows =
      B::view(g, make_layout(make_shape(count, a.d, make_shape(a.outer, a.inner)),
                             make_stride(numel, a.inner, make_stride(a.d * a.inner, Int<1>{}))));
  auto const r = B::view(norms, make_layout(make_shape(count, a.d)));
  assign(r, sum(cast<double>(rows) * cast<double>(rows), mode<2>), x);
  assign(B::view(out + count, make_layout(make_shape(count))), max(r, mode<1>), x);
  assign(r, sqrt(r), x);
  auto const f = B::view(stored, make_layout(make_shape(count, a.d, a.d)));
  auto const si = B::view(
      norms, make_layout(make_shape(count, a.d, a.d), make_stride(a.d, Int<1>{}, Int<0>{})));
  auto const sj = B::view(
      norms, make_layout(make_shape(count, a.d, a.d), make_stride(a.d, Int<0>{}, Int<1>{})));
  assign(B::view(out, make_layout(make_shape(count))),
         max(max(beta2 * abs(cast<double>(f)) + w * (si * sj), mode<2>), mode<1>), x);
}

}  // namespace stages

// The sentence for factor j (of mode k) of block `block` of parameter `param` at step `step` when
// the step could overflow it, or empty. bound and largest_r = max_i r_i from factor_bound_inputs,
// m = numel / d.
template <class T>
std::string factor_bound_error(std::size_t j, index_t k, index_t param, index_t block, index_t step,
                               double bound, double largest_r, index_t m, DType stored,
                               StepScalars<T> const& s) {
  double const largest_t = static_cast<double>(std::numeric_limits<T>::max());
  double const weight = static_cast<double>(s.weight);
  double const rounding = 1.0 + (static_cast<double>(m) + 4.0) * std::numeric_limits<T>::epsilon();
  double const largest_stored = detail::largest_finite(stored);
  bool const stored_is_narrower = largest_stored < largest_t;
  double const limit = stored_is_narrower ? largest_stored : largest_t;
  DType const limiting = stored_is_narrower ? stored : dtype_of_v<T>;
  if (!std::isfinite(bound)) {
    // A non-finite old factor or parameter: the root's check names it, unless the gradient's part
    // alone overflows.
    double const fresh = weight * largest_r;
    if (!std::isfinite(fresh) || !(fresh * rounding <= limit))
      bound = fresh;
    else
      return {};
  }
  auto const failure = [&](double reach, DType dtype, double largest, char const* how) {
    return detail::sentence(
        "factor matrix ", j, " of ", detail::block_name(param, block), " would overflow at step ",
        step, ": ", how, reach, " (", detail::shortest_text(s.beta2), " times the old entry plus ",
        detail::shortest_text(s.weight),
        " times the gradient's part, whose squared row norms along mode ", k, " reach ", largest_r,
        "), more than ", dtype_name(dtype), " holds (", largest, "); nothing was changed.");
  };
  if (!(bound * rounding <= limit))
    return failure(bound, limiting, limit, "its largest entry could reach ");
  if (s.amortized && !(bound * rounding / s.bias_correction2 <= largest_t))
    return failure(bound / s.bias_correction2, dtype_of_v<T>, largest_t,
                   "divided by the bias correction, its largest entry could reach ");
  return {};
}

}  // namespace tessel::shampoo
