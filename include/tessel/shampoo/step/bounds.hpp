// The overflow pre-check of a Shampoo step, run before anything is written. Entry (i, j) of the
// factor of mode k becomes beta2 F_ij + w (G x_k G)_ij, the second term a sum over the elements
// of the other modes, and by Cauchy-Schwarz |(G x_k G)_ij| <= sqrt(r_i r_j) with r_i =
// (G x_k G)_ii, the squared norm of row i of G along mode k. Two bounds on the new entries:
//   cheap:  beta2 B + w max_i r_i, with B a bound on max|F| known from the previous step;
//   tight:  max_ij beta2 |F_ij| + w sqrt(r_i r_j).
// The step first tries the cheap one (O(d) per factor after the row norms); only where it does
// not fit does it read the whole factor for the tight one. The tight bound holds for any stored F,
// and for the positive semi-definite factors Shampoo keeps (|F_ij| <= sqrt(F_ii F_jj)) its maximum
// is on the diagonal, where it is the new factor's largest entry: the check refuses exactly the
// steps that would overflow, up to rounding. Whichever bound passed, times the rounding of the
// step and of the storage (bound_rounding), is the next step's B; a built or loaded optimizer
// starts from B = 0 (zero factors) or B = inf (unknown: the first step reads the factors). The
// factor 1 + (m + 4) eps covers the rounding in T of sums of m + 1 terms (m = numel / d); the
// result must fit T and the stored dtype. On amortized steps the root is computed from
// F / bias_correction2, so bound / bias_correction2 must fit T too. A factor that already holds NaN
// or Inf (only a loaded state can), or a NaN parameter under L2 weight decay, makes the bound
// non-finite; when the gradient's part alone fits, that is left to the inverse-root check.
//   row_norm_inputs: r and max_i r_i per slot;  entry_bounds: the tight bound per slot;
//   factor_bound_error: the decision and its sentence, on the host.
#pragma once

#include <algorithm>
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

// The unit roundoff of a factor dtype: a value rounded to it moves by at most this, relatively.
inline double unit_roundoff(DType d) {
  if (d == DType::bf16) return 0x1p-8;
  if (d == DType::f16) return 0x1p-11;
  if (d == DType::f32) return 0x1p-24;
  return 0x1p-53;
}

}  // namespace detail

// What a bound on the exact new entries becomes for the entries computed in T (sums of m + 1
// terms, m = numel / d) and stored in `stored`.
template <class T>
double bound_rounding(index_t m, DType stored) {
  return (1.0 + (static_cast<double>(m) + 4.0) * std::numeric_limits<T>::epsilon()) *
         (1.0 + detail::unit_roundoff(stored));
}

namespace stages {

// For the count blocks of shape `block` at g (the gathered gradients), in double: norms (count, d)
// the squared row norms r_i along mode k, out[slot] = max_i r_i.
template <class X, class T>
void row_norm_inputs(X const& x, T const* g, index_t count, Extents const& block, index_t k,
                     double* norms, double* out) {
  using B = exec::Memory<X>;
  auto const a = detail::around_mode(block, k);
  index_t const numel = a.outer * a.d * a.inner;
  // Row i of mode k of a block: the (P, S) elements g[p, i, s], one hierarchical mode.
  auto const rows =
      B::view(g, make_layout(make_shape(count, a.d, make_shape(a.outer, a.inner)),
                             make_stride(numel, a.inner, make_stride(a.d * a.inner, Int<1>{}))));
  auto const r = B::view(norms, make_layout(make_shape(count, a.d)));
  assign(r, sum(cast<double>(rows) * cast<double>(rows), mode<2>), x);
  assign(B::view(out, make_layout(make_shape(count))), max(r, mode<1>), x);
}

// out[slot] = max_ij beta2 |F_ij| + w sqrt(r_i r_j) for the stored factors (count, d, d) of
// element type U, r from row_norm_inputs in norms (replaced by sqrt r).
template <class X, class U>
void entry_bounds(X const& x, U const* stored, index_t count, index_t d, double beta2, double w,
                  double* norms, double* out) {
  using B = exec::Memory<X>;
  auto const s = B::view(norms, make_layout(make_shape(count, d)));
  assign(s, sqrt(s), x);
  auto const f = B::view(stored, make_layout(make_shape(count, d, d)));
  auto const si =
      B::view(norms, make_layout(make_shape(count, d, d), make_stride(d, Int<1>{}, Int<0>{})));
  auto const sj =
      B::view(norms, make_layout(make_shape(count, d, d), make_stride(d, Int<0>{}, Int<1>{})));
  assign(B::view(out, make_layout(make_shape(count))),
         max(max(beta2 * abs(cast<double>(f)) + w * (si * sj), mode<2>), mode<1>), x);
}

}  // namespace stages

// Whether a finite bound on the new entries fits T and the stored dtype after rounding (and, on
// amortized steps, divided by the bias correction, T): the check passes on it alone.
template <class T>
bool bound_fits(double bound, index_t m, DType stored, StepScalars<T> const& s) {
  double const largest_t = static_cast<double>(std::numeric_limits<T>::max());
  double const reach = bound * bound_rounding<T>(m, stored);
  return std::isfinite(bound) && reach <= std::min(largest_t, detail::largest_finite(stored)) &&
         (!s.amortized || reach / s.bias_correction2 <= largest_t);
}

// The sentence for factor j (of mode k) of block `block` of parameter `param` at step `step` when
// the step could overflow it, or empty. bound: the cheap or the tight bound, largest_r = max_i r_i,
// m = numel / d.
template <class T>
std::string factor_bound_error(std::size_t j, index_t k, index_t param, index_t block, index_t step,
                               double bound, double largest_r, index_t m, DType stored,
                               StepScalars<T> const& s) {
  double const largest_t = static_cast<double>(std::numeric_limits<T>::max());
  double const weight = static_cast<double>(s.weight);
  double const rounding = bound_rounding<T>(m, stored);
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
