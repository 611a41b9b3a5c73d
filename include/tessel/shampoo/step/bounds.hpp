// The overflow pre-check of a Shampoo step, run before anything is written. Entry (i, j) of the
// factor of mode k becomes beta2 F_ij + w sum g_i. g_j. (a sum over the elements of the other
// modes), and by Cauchy-Schwarz |sum g_i. g_j.| <= sqrt(r_i r_j) <= max_i r_i with r_i = sum g_i.^2
// (the diagonal of G G^T), so |new F_ij| <= beta2 max|F| + w max_i r_i =: bound. The factor
// 1 + (m + 4) eps covers the rounding in T of those sums of m + 1 terms (m = numel / d); the result
// must fit T and the stored dtype. On amortized steps the root is computed from F /
// bias_correction2, so bound / bias_correction2 must fit T too. A factor that already holds NaN or
// Inf (only a loaded state can), or a NaN bound (a NaN parameter under L2 weight decay), is left to
// the inverse-root computation's check.
//   factor_bound_inputs: max|F| and max_i r_i per slot, two reductions on the executor;
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

// out[0, count): max |F_b| over the stored factor (count, d, d) of element type U;
// out[count, 2 count): max_i sum over the other modes of G_b^2 along mode k of the gathered
// gradients g (count blocks of shape `block`). Both in double.
template <class X, class U, class T>
void factor_bound_inputs(X const& x, U const* stored, T const* g, index_t count,
                         Extents const& block, index_t k, double* out) {
  using B = exec::Memory<X>;
  auto const a = detail::around_mode(block, k);
  index_t const numel = a.outer * a.d * a.inner;
  auto const f = B::view(stored, make_layout(make_shape(count, a.d * a.d)));
  assign(B::view(out, make_layout(make_shape(count))), max(abs(cast<double>(f)), mode<1>), x);
  // Row i of mode k of a block: the (P, S) elements g[p, i, s], one hierarchical mode.
  auto const rows =
      B::view(g, make_layout(make_shape(count, a.d, make_shape(a.outer, a.inner)),
                             make_stride(numel, a.inner, make_stride(a.d * a.inner, Int<1>{}))));
  assign(B::view(out + count, make_layout(make_shape(count))),
         max(sum(cast<double>(rows) * cast<double>(rows), mode<2>), mode<1>), x);
}

}  // namespace stages

// The sentence for factor j (of mode k) of block `block` of parameter `param` at step `step` when
// the step could overflow it, or empty. largest_f = max|F|, largest_r = max_i r_i, m = numel / d.
template <class T>
std::string factor_bound_error(std::size_t j, index_t k, index_t param, index_t block, index_t step,
                               double largest_f, double largest_r, index_t m, DType stored,
                               StepScalars<T> const& s) {
  if (!std::isfinite(largest_f)) return {};
  double const largest_t = static_cast<double>(std::numeric_limits<T>::max());
  double const beta2 = static_cast<double>(s.beta2);
  double const weight = static_cast<double>(s.weight);
  double const bound = beta2 * largest_f + weight * largest_r;
  if (std::isnan(bound)) return {};  // a NaN parameter under L2 decay: left to the root's check
  double const rounding = 1.0 + (static_cast<double>(m) + 4.0) * std::numeric_limits<T>::epsilon();
  double const largest_stored = detail::largest_finite(stored);
  bool const stored_is_narrower = largest_stored < largest_t;
  double const limit = stored_is_narrower ? largest_stored : largest_t;
  DType const limiting = stored_is_narrower ? stored : dtype_of_v<T>;
  auto const failure = [&](double reach, DType dtype, double largest, char const* how) {
    return detail::sentence(
        "factor matrix ", j, " of ", detail::block_name(param, block), " would overflow at step ",
        step, ": ", how, reach, " (", detail::shortest_text(s.beta2),
        " times its largest magnitude ", largest_f, " plus ", detail::shortest_text(s.weight),
        " times the gradient's largest squared norm along mode ", k, ", ", largest_r,
        "), more than ", dtype_name(dtype), " holds (", largest, "); nothing was changed.");
  };
  if (!(bound * rounding <= limit))
    return failure(bound, limiting, limit, "its entries could reach ");
  if (s.amortized && !(bound * rounding / s.bias_correction2 <= largest_t))
    return failure(bound / s.bias_correction2, dtype_of_v<T>, largest_t,
                   "divided by the bias correction, its entries could reach ");
  return {};
}

}  // namespace tessel::shampoo
