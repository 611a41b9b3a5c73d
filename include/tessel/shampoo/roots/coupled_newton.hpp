// Inverse roots by the coupled inverse Newton iteration (Distributed Shampoo's
// CoupledNewtonConfig), for a batch of matrices at once, in double: with A' = A + epsilon I,
// z = (p + 1) / (2 |A'|_F), X = z^(1/p) I and M = z A', repeat M' = (1 - a) I + a M (a = -1/p),
// X <- X M', M <- M'^p M until max |M - I| <= tolerance or max_iterations. Each iteration is a few
// batched exec::gemm calls over the whole batch; a matrix that has converged (or failed) keeps
// its X and M (a where-assignment), so every matrix iterates exactly as it would alone. The
// convergence test is decided on the host: one wait per iteration.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "../../exec/dense.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/compare.hpp"
#include "../../expr/map.hpp"
#include "../../expr/math.hpp"
#include "../../expr/where.hpp"
#include "../options.hpp"
#include "batch.hpp"
#include "status.hpp"

namespace tessel::shampoo {

// X_b = A_b^(-1/root) by coupled Newton for the count matrices of `in` (an expression or tensor of
// shape (count, d, d) in T), into `out` (count, d, d) of T; results[b] as in eigen.hpp, with the
// iterations and the final error. out_b is unspecified unless results[b].ok().
// @pre check_root_arguments(root, epsilon, {coupled_newton}) holds (root is a whole number);
//      results.size() == count
template <class T, class X, class In, class Out>
void coupled_newton_inverse_roots(X const& x, In const& in, Out const& out, index_t count,
                                  index_t d, double root, double epsilon,
                                  CoupledNewtonConfig const& config,
                                  std::span<RootResult> results) {
  using B = exec::Memory<X>;
  for (auto& r : results) r = RootResult{};
  if (count == 0 || d == 0) return;
  index_t const p = static_cast<index_t>(std::llround(root));
  double const alpha = -1.0 / static_cast<double>(p);
  auto const n = count * d * d;
  auto input = B::template scratch<T>(x, n);
  auto buffers = B::template scratch<double>(x, 5 * n);
  auto per_matrix = B::template scratch<double>(x, 3 * count);  // z / error, active, flags
  auto identity = B::template scratch<double>(x, d * d);
  auto mats = [&](double* at) { return B::view(at, detail::matrices_layout(count, d)); };
  auto vec = [&](index_t k) {
    return B::view(per_matrix.data() + k * count, make_layout(make_shape(count)));
  };
  auto each = [&](index_t k) {
    return B::view(per_matrix.data() + k * count, detail::per_matrix_layout(count, d));
  };
  double* const xs = buffers.data();
  double* const ms = xs + n;
  double* const mps = ms + n;
  double* const power = mps + n;
  double* const next = power + n;
  auto const eye = B::view(identity.data(), make_layout(make_shape(d, d)));
  std::vector<double> host_eye(static_cast<std::size_t>(d * d), 0.0);
  for (index_t i = 0; i < d; ++i) host_eye[static_cast<std::size_t>(i * (d + 1))] = 1.0;
  B::from_host(x, host_eye.data(), d * d, identity.data());
  // The input in T, checked for NaN / Inf, then A' = A + epsilon I in double.
  assign(B::view(input.data(), detail::matrices_layout(count, d)), in, x);
  detail::non_finite_flags(x, B::view(input.data(), detail::matrix_rows_layout(count, d)), vec(2));
  auto const a = mats(ms);
  assign(a, cast<double>(B::view(input.data(), detail::matrices_layout(count, d))), x);
  auto const diagonal = B::view(ms, detail::diagonal_layout(count, d));
  assign(diagonal, diagonal + epsilon, x);
  // z = (p + 1) / (2 |A'|_F); X = z^(1/p) I; M = z A'.
  assign(vec(0),
         sum(B::view(ms, detail::matrix_rows_layout(count, d)) *
                 B::view(ms, detail::matrix_rows_layout(count, d)),
             mode<1>),
         x);
  assign(vec(0), static_cast<double>(p + 1) / (2.0 * sqrt(vec(0))), x);
  assign(mats(xs), eye * pow(each(0), -alpha), x);
  assign(a, a * each(0), x);
  auto const error = [&] {
    assign(vec(0),
           max(abs(B::view(ms, detail::matrix_rows_layout(count, d)) -
                   B::view(identity.data(),
                           make_layout(make_shape(count, d * d), make_stride(Int<0>{}, Int<1>{})))),
               mode<1>),
           x);
  };
  error();
  std::vector<double> host(static_cast<std::size_t>(3 * count));
  B::to_host(x, per_matrix.data(), count, host.data());
  B::to_host(x, per_matrix.data() + 2 * count, count, host.data() + 2 * count);
  B::wait(x);
  std::vector<double> active(static_cast<std::size_t>(count), 0.0);
  auto const decide = [&] {
    bool any = false;
    for (index_t b = 0; b < count; ++b) {
      auto const i = static_cast<std::size_t>(b);
      RootResult& r = results[i];
      r.error = host[i];
      // As one matrix would: iterate while above the tolerance, below max_iterations, and (after
      // the first iteration) finite.
      bool const on = host[2 * static_cast<std::size_t>(count) + i] == 0.0 &&
                      r.error > config.tolerance && r.iterations < config.max_iterations &&
                      (r.iterations == 0 || std::isfinite(r.error));
      active[i] = on ? 1.0 : 0.0;
      any = any || on;
    }
    return any;
  };
  while (decide()) {
    B::from_host(x, active.data(), count, per_matrix.data() + count);
    auto const on = each(1) != 0.0;
    assign(mats(mps), alpha * mats(ms) + (1.0 - alpha) * eye, x);
    gemm(x, mats(next), mats(xs), mats(mps));
    assign(mats(xs), where(on, mats(next), mats(xs)), x);
    // M'^p by repeated products, ping-ponging between two buffers.
    double* pw = power;
    double* nx = next;
    assign(mats(pw), mats(mps), x);
    for (index_t k = 1; k < p; ++k) {
      gemm(x, mats(nx), mats(pw), mats(mps));
      std::swap(pw, nx);
    }
    gemm(x, mats(nx), mats(pw), mats(ms));
    assign(mats(ms), where(on, mats(nx), mats(ms)), x);
    error();
    B::to_host(x, per_matrix.data(), count, host.data());
    B::wait(x);
    for (index_t b = 0; b < count; ++b)
      if (active[static_cast<std::size_t>(b)] != 0.0)
        ++results[static_cast<std::size_t>(b)].iterations;
  }
  // The result in T, and whether it is finite (in double and after rounding to T).
  assign(out, cast<T>(mats(xs)), x);
  detail::non_finite_flags(x, B::view(out.data(), detail::matrix_rows_layout(count, d)), vec(1));
  B::to_host(x, per_matrix.data() + count, count, host.data() + count);
  B::wait(x);
  for (index_t b = 0; b < count; ++b) {
    auto const i = static_cast<std::size_t>(b);
    RootResult& r = results[i];
    r.error = host[i];
    if (host[2 * static_cast<std::size_t>(count) + i] != 0.0)
      r.status = RootStatus::non_finite_input;
    else if (!std::isfinite(r.error) || host[static_cast<std::size_t>(count) + i] != 0.0)
      r.status = RootStatus::non_finite;
    else if (r.error > config.tolerance)
      r.status = RootStatus::not_converged;
  }
}

}  // namespace tessel::shampoo
