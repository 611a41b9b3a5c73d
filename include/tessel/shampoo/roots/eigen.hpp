// Inverse roots by eigendecomposition, for a batch of symmetric matrices at once (Distributed
// Shampoo's EigenConfig): X = Q diag(f(lambda)) Q^T with A + epsilon I = Q diag(lambda) Q^T (the
// ridge only with perturb_before_computation and without the pseudo-inverse) and f the eigenvalue
// map (eigenvalue_map.hpp). One exec::eigh call decomposes the batch; the eigenvalue map and the
// column scaling are expressions; one exec::gemm forms X. A matrix whose decomposition in T failed
// is decomposed again in double when retry_double_precision is set (the whole batch is redone in
// double then, a rare path). Runs on any executor through exec::Memory<X> (exec/memory.hpp).
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "../../exec/dense.hpp"
#include "../../exec/eigh.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/compare.hpp"
#include "../../expr/map.hpp"
#include "../../expr/where.hpp"
#include "../../tensor/views.hpp"
#include "../options.hpp"
#include "batch.hpp"
#include "eigenvalue_map.hpp"
#include "status.hpp"

namespace tessel::shampoo {

namespace detail {

// work (count, d, d) row-major holds A (+ ridge) in S; on return it holds the eigenvectors
// (column-major: work's row j is eigenvector j), out = Q diag(f(lambda)) Q^T, and info(b) is the
// solver's verdict on matrix b (0: converged).
template <class S, class X, class Out>
void eigen_roots_in(X const& x, S* work, index_t count, index_t d, EigenvalueMap const& rule,
                    Out const& out, int* info) {
  using B = exec::Memory<X>;
  auto lambda = B::template scratch<S>(x, count * d);
  auto extremes = B::template scratch<S>(x, 2 * count);
  auto scaled = B::template scratch<S>(x, count * d * d);
  auto q =
      permute<0, 2, 1>(B::view(work, detail::matrices_layout(count, d)));  // q(b, i, j): Q_b[i][j]
  auto l = B::view(lambda.data(), make_layout(make_shape(count, d)));
  eigh(x, l, q, B::view(info, make_layout(make_shape(count))));
  auto lmin = B::view(extremes.data(), make_layout(make_shape(count)));
  auto lmax = B::view(extremes.data() + count, make_layout(make_shape(count)));
  assign(lmin, min(l, mode<1>), x);
  assign(lmax, max(l, mode<1>), x);
  assign(l,
         map(MapEigenvalue{rule}, l, B::view(extremes.data(), per_row_layout(count, d)),
             B::view(extremes.data() + count, per_row_layout(count, d))),
         x);
  // X = (Q diag(f)) Q^T: column j of Q scaled by f_j, then one batched product with Q^T.
  auto s = B::view(scaled.data(), detail::matrices_layout(count, d));
  assign(s, q * B::view(lambda.data(), per_column_layout(count, d)), x);
  gemm(x, out, s, permute<0, 2, 1>(q));
}

}  // namespace detail

// X_b = A_b^(-1/root) for the count matrices of `in` (an expression or tensor of shape
// (count, d, d) in T, symmetric; read twice when a retry in double is needed), into `out`
// (count, d, d) of T; results[b] says what happened to matrix b. out_b is unspecified unless
// results[b].ok(). Waits for the executor once (twice when a retry is needed).
// @pre check_root_arguments(root, epsilon, {eigen, config}) holds; results.size() == count
template <class T, class X, class In, class Out>
void eigen_inverse_roots(X const& x, In const& in, Out const& out, index_t count, index_t d,
                         double root, double epsilon, EigenConfig const& config,
                         std::span<RootResult> results) {
  using B = exec::Memory<X>;
  for (auto& r : results) r = RootResult{};
  if (count == 0 || d == 0) return;
  EigenvalueMap const rule{root,
                           epsilon,
                           config.pseudo_inverse,
                           config.perturb_before_computation,
                           config.rank_atol,
                           config.rank_rtol};
  bool const ridge = config.perturb_before_computation && !config.pseudo_inverse;
  auto work = B::template scratch<T>(x, count * d * d);
  auto info = B::template scratch<int>(x, count);
  auto flags = B::template scratch<T>(x, 2 * count);  // input, output: NaN when not finite
  auto a = B::view(work.data(), detail::matrices_layout(count, d));
  assign(a, in, x);
  detail::non_finite_flags(x, B::view(work.data(), detail::matrix_rows_layout(count, d)),
                           B::view(flags.data(), make_layout(make_shape(count))));
  if (ridge) {
    auto diagonal = B::view(work.data(), detail::diagonal_layout(count, d));
    assign(diagonal, diagonal + static_cast<T>(epsilon), x);
  }
  detail::eigen_roots_in<T>(x, work.data(), count, d, rule, out, info.data());
  auto const rows_of_out = [&] {
    return B::view(out.data(), detail::matrix_rows_layout(count, d));
  };
  detail::non_finite_flags(x, rows_of_out(),
                           B::view(flags.data() + count, make_layout(make_shape(count))));
  std::vector<int> host_info(static_cast<std::size_t>(count));
  std::vector<T> host_flags(static_cast<std::size_t>(2 * count));
  B::to_host(x, info.data(), count, host_info.data());
  B::to_host(x, flags.data(), 2 * count, host_flags.data());
  B::wait(x);
  auto const finite = [](T v) { return v == T(0); };  // the flags are 0 or NaN
  bool retry = false;
  for (index_t b = 0; b < count; ++b) {
    auto const i = static_cast<std::size_t>(b);
    if (!finite(host_flags[i]))
      results[i].status = RootStatus::non_finite_input;
    else if (host_info[i] != 0)
      retry = true;
  }
  if (retry && config.retry_double_precision && !std::is_same_v<T, double>) {
    // The failed matrices again, in double: A is rounded to T first (as the T solve saw it).
    auto work64 = B::template scratch<double>(x, count * d * d);
    auto out64 = B::template scratch<double>(x, count * d * d);
    auto info64 = B::template scratch<int>(x, count);
    auto a64 = B::view(work64.data(), detail::matrices_layout(count, d));
    assign(a64, cast<T>(in), x);
    if (ridge) {
      auto diagonal = B::view(work64.data(), detail::diagonal_layout(count, d));
      assign(diagonal, diagonal + static_cast<double>(static_cast<T>(epsilon)), x);
    }
    auto x64 = B::view(out64.data(), detail::matrices_layout(count, d));
    detail::eigen_roots_in<double>(x, work64.data(), count, d, rule, x64, info64.data());
    std::vector<int> host_info64(static_cast<std::size_t>(count));
    B::to_host(x, info64.data(), count, host_info64.data());
    B::wait(x);
    // Take the double result where the T solve failed and the double one did not.
    std::vector<T> take(static_cast<std::size_t>(count), T(0));
    for (index_t b = 0; b < count; ++b) {
      auto const i = static_cast<std::size_t>(b);
      if (results[i].status != RootStatus::ok || host_info[i] == 0) continue;
      results[i].retried_in_double = true;
      if (host_info64[i] == 0) {
        take[i] = T(1);
        host_info[i] = 0;
      }
    }
    auto const chosen = B::template scratch<T>(x, count);
    B::from_host(x, take.data(), count, chosen.data());
    auto const pick = B::view(chosen.data(), detail::per_matrix_layout(count, d));
    assign(out, where(pick != T(0), cast<T>(x64), out), x);
    detail::non_finite_flags(x, rows_of_out(),
                             B::view(flags.data() + count, make_layout(make_shape(count))));
    B::to_host(x, flags.data() + count, count, host_flags.data() + count);
    B::wait(x);
  }
  for (index_t b = 0; b < count; ++b) {
    auto const i = static_cast<std::size_t>(b);
    if (results[i].status != RootStatus::ok) continue;
    if (host_info[i] != 0)
      results[i].status = RootStatus::solver_failed;
    else if (!finite(host_flags[static_cast<std::size_t>(count) + i]))
      results[i].status = RootStatus::non_finite;
  }
}

// The eigenvectors Q_b (columns, ascending eigenvalues) of the count symmetric matrices of `in`
// (an expression or tensor of shape (count, d, d) in T) into `out` (count, d, d) row-major:
// eigenvalue-corrected Shampoo's basis. results[b]: non_finite_input for a matrix holding NaN or
// Inf, solver_failed where the solver did not converge; out_b is unspecified unless ok. No retry
// in double. Waits for the executor once.
template <class T, class X, class In, class Out>
void factor_eigenvectors(X const& x, In const& in, Out const& out, index_t count, index_t d,
                         std::span<RootResult> results) {
  using B = exec::Memory<X>;
  for (auto& r : results) r = RootResult{};
  if (count == 0 || d == 0) return;
  auto lambda = B::template scratch<T>(x, count * d);
  auto info = B::template scratch<int>(x, count);
  auto flags = B::template scratch<T>(x, count);
  assign(out, in, x);
  detail::non_finite_flags(x, B::view(out.data(), detail::matrix_rows_layout(count, d)),
                           B::view(flags.data(), make_layout(make_shape(count))));
  // eigh overwrites its matrices with the eigenvectors as columns: out(b, i, j) = Q_b[i][j].
  eigh(x, B::view(lambda.data(), make_layout(make_shape(count, d))), out,
       B::view(info.data(), make_layout(make_shape(count))));
  std::vector<int> host_info(static_cast<std::size_t>(count));
  std::vector<T> host_flags(static_cast<std::size_t>(count));
  B::to_host(x, info.data(), count, host_info.data());
  B::to_host(x, flags.data(), count, host_flags.data());
  B::wait(x);
  for (index_t b = 0; b < count; ++b) {
    auto const i = static_cast<std::size_t>(b);
    if (!(host_flags[i] == T(0)))
      results[i].status = RootStatus::non_finite_input;
    else if (host_info[i] != 0)
      results[i].status = RootStatus::solver_failed;
  }
}

}  // namespace tessel::shampoo
