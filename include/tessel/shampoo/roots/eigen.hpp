// Inverse roots by eigendecomposition, for a batch of symmetric matrices at once (Distributed
// Shampoo's EigenConfig): X = Q diag(f(lambda)) Q^T with A + epsilon I = Q diag(lambda) Q^T (the
// ridge only with perturb_before_computation and without the pseudo-inverse) and f the eigenvalue
// map (eigenvalue_map.hpp). One exec::eigh call decomposes the batch; the eigenvalue map and the
// column scaling are expressions; one exec::gemm forms X. Eigendecomposed Shampoo keeps Q and
// lambda instead (factor_eigendecomposition) and forms X from them on every step
// (eigendecomposed_inverse_roots). A matrix whose decomposition in T failed
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
#include "../../expr/math.hpp"
#include "../../expr/where.hpp"
#include "../../tensor/views.hpp"
#include "../options.hpp"
#include "batch.hpp"
#include "eigenvalue_map.hpp"
#include "status.hpp"

namespace tessel::shampoo {

namespace detail {

// The eigenvalue map of the eigen settings (eigenvalue_map.hpp), for fresh and cached
// decompositions alike.
inline EigenvalueMap eigenvalue_map_of(double root, double epsilon, EigenConfig const& config) {
  return {root,
          epsilon,
          config.pseudo_inverse,
          config.perturb_before_computation,
          config.rank_atol,
          config.rank_rtol};
}

// Whether A + epsilon I is decomposed (perturbation before the computation, not the
// pseudo-inverse).
inline bool adds_ridge(EigenConfig const& config) {
  return config.perturb_before_computation && !config.pseudo_inverse;
}

// out_b = Q_b diag(f(lambda_b)) Q_b^T, f the eigenvalue map, from the eigendecomposition
// q(b, i, j) = Q_b[i][j] (any layout) and lambda (count, d), which is read, not changed: the
// inverse root of a fresh decomposition (eigen_roots_in) and of a cached one (eigendecomposed
// Shampoo, every step). f is never negative (map_eigenvalue shifts or cuts the spectrum to >= 0
// before the power), so out_b = S S^T with S = Q diag(sqrt f): one batched SYRK, half a GEMM's
// flops, and an exactly symmetric result. A non-finite f stays non-finite in S, as in the GEMM.
// Two expressions and the SYRK. S is laid out like q (q's layout spans count * d * d elements), so
// forming it reads q in storage order: a fresh decomposition's q is column-major, and a row-major
// S made from it read every element across a stride of d; the SYRK takes either.
template <class S, class X, class Q, class Out>
void roots_from_eigendecomposition(X const& x, Q const& q, S const* lambda, index_t count,
                                   index_t d, EigenvalueMap const& rule, Out const& out) {
  using B = exec::Memory<X>;
  auto mapped = B::template scratch<S>(x, count * d);
  auto extremes = B::template scratch<S>(x, 2 * count);
  auto scaled = B::template scratch<S>(x, count * d * d);
  auto l = B::view(lambda, make_layout(make_shape(count, d)));
  auto lmin = B::view(extremes.data(), make_layout(make_shape(count)));
  auto lmax = B::view(extremes.data() + count, make_layout(make_shape(count)));
  assign(lmin, min(l, mode<1>), x);
  assign(lmax, max(l, mode<1>), x);
  assign(
      B::view(mapped.data(), make_layout(make_shape(count, d))),
      sqrt(map(MapEigenvalue{rule}, l,
               B::view(static_cast<S const*>(extremes.data()), per_row_layout(count, d)),
               B::view(static_cast<S const*>(extremes.data()) + count, per_row_layout(count, d)))),
      x);
  // X = S S^T: column j of Q scaled by sqrt(f_j), then one batched rank-d update.
  auto s = B::view(scaled.data(), q.layout());
  assign(s, q * B::view(static_cast<S const*>(mapped.data()), per_column_layout(count, d)), x);
  syrk(x, out, s);
}

// work (count, d, d) row-major holds A (+ ridge) in S; on return it holds the eigenvectors
// (column-major: work's row j is eigenvector j), out = Q diag(f(lambda)) Q^T, and info(b) is the
// solver's verdict on matrix b (0: converged).
template <class S, class X, class Out>
void eigen_roots_in(X const& x, S* work, index_t count, index_t d, EigenvalueMap const& rule,
                    Out const& out, int* info) {
  using B = exec::Memory<X>;
  auto lambda = B::template scratch<S>(x, count * d);
  auto q =
      permute<0, 2, 1>(B::view(work, detail::matrices_layout(count, d)));  // q(b, i, j): Q_b[i][j]
  eigh(x, B::view(lambda.data(), make_layout(make_shape(count, d))), q,
       B::view(info, make_layout(make_shape(count))));
  roots_from_eigendecomposition(x, q, static_cast<S const*>(lambda.data()), count, d, rule, out);
}

// The double retry's input: work (count, d, d) = A rounded to T (as the T solve saw it), plus
// the ridge epsilon (rounded to T likewise) on the diagonals when `ridge`.
template <class T, class X, class In>
void retry_input(X const& x, In const& in, double* work, index_t count, index_t d, double epsilon,
                 bool ridge) {
  using B = exec::Memory<X>;
  assign(B::view(work, matrices_layout(count, d)), cast<T>(in), x);
  if (ridge) {
    auto diagonal = B::view(work, diagonal_layout(count, d));
    assign(diagonal, diagonal + static_cast<double>(static_cast<T>(epsilon)), x);
  }
}

// Which matrices take the double retry's result: those whose T solve failed (info != 0, input
// finite) and whose double solve converged; they are marked retried, and their info cleared.
// Returns the choice per matrix as T(1) / T(0), for a where() over the batch.
template <class T>
std::vector<T> retry_choice(std::span<RootResult> results, std::vector<int>& host_info,
                            std::vector<int> const& host_info64) {
  std::vector<T> take(host_info.size(), T(0));
  for (std::size_t i = 0; i < take.size(); ++i) {
    if (results[i].status != RootStatus::ok || host_info[i] == 0) continue;
    results[i].retried_in_double = true;
    if (host_info64[i] == 0) {
      take[i] = T(1);
      host_info[i] = 0;
    }
  }
  return take;
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
  EigenvalueMap const rule = detail::eigenvalue_map_of(root, epsilon, config);
  bool const ridge = detail::adds_ridge(config);
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
    detail::retry_input<T>(x, in, work64.data(), count, d, epsilon, ridge);
    auto x64 = B::view(out64.data(), detail::matrices_layout(count, d));
    detail::eigen_roots_in<double>(x, work64.data(), count, d, rule, x64, info64.data());
    std::vector<int> host_info64(static_cast<std::size_t>(count));
    B::to_host(x, info64.data(), count, host_info64.data());
    B::wait(x);
    std::vector<T> const take = detail::retry_choice<T>(results, host_info, host_info64);
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

// Eigendecomposed Shampoo's amortized computation (Distributed Shampoo's
// matrix_eigendecomposition with its eigh config): A_b + epsilon I = Q_b diag(lambda_b) Q_b^T for
// the count matrices of `in` (an expression or tensor of shape (count, d, d), symmetric; the
// ridge only with perturb_before_computation and without the pseudo-inverse), into q (count, d, d)
// row-major, q(b, i, j) = Q_b[i][j], and lambda (count * d, ascending per matrix). A decomposition
// that failed in T is retried in double when retry_double_precision is set, its results rounded to
// T. results[b]: non_finite_input for a matrix holding NaN or Inf, solver_failed where no solve
// converged, non_finite for NaN or Inf in Q_b or lambda_b; q_b and lambda_b are unspecified unless
// ok. The inverse root on each step: eigendecomposed_inverse_roots.
template <class T, class X, class In, class Q>
void factor_eigendecomposition(X const& x, In const& in, Q const& q, T* lambda, index_t count,
                               index_t d, double epsilon, EigenConfig const& config,
                               std::span<RootResult> results) {
  using B = exec::Memory<X>;
  for (auto& r : results) r = RootResult{};
  if (count == 0 || d == 0) return;
  bool const ridge = detail::adds_ridge(config);
  auto info = B::template scratch<int>(x, count);
  auto flags = B::template scratch<T>(x, 3 * count);  // input, Q, lambda: NaN when not finite
  auto flag = [&](index_t k) {
    return B::view(flags.data() + k * count, make_layout(make_shape(count)));
  };
  auto const l = B::view(lambda, make_layout(make_shape(count, d)));
  assign(q, in, x);
  detail::non_finite_flags(x, B::view(q.data(), detail::matrix_rows_layout(count, d)), flag(0));
  if (ridge) {
    auto diagonal = B::view(q.data(), detail::diagonal_layout(count, d));
    assign(diagonal, diagonal + static_cast<T>(epsilon), x);
  }
  eigh(x, l, q, B::view(info.data(), make_layout(make_shape(count))));
  std::vector<int> host_info(static_cast<std::size_t>(count));
  std::vector<T> host_flags(static_cast<std::size_t>(3 * count));
  B::to_host(x, info.data(), count, host_info.data());
  B::to_host(x, flags.data(), count, host_flags.data());
  B::wait(x);
  bool retry = false;
  for (index_t b = 0; b < count; ++b) {
    auto const i = static_cast<std::size_t>(b);
    if (!(host_flags[i] == T(0)))
      results[i].status = RootStatus::non_finite_input;
    else if (host_info[i] != 0)
      retry = true;
  }
  if (retry && config.retry_double_precision && !std::is_same_v<T, double>) {
    // The failed matrices again, in double: A is rounded to T first (as the T solve saw it).
    auto q64 = B::template scratch<double>(x, count * d * d);
    auto l64 = B::template scratch<double>(x, count * d);
    auto info64 = B::template scratch<int>(x, count);
    detail::retry_input<T>(x, in, q64.data(), count, d, epsilon, ridge);
    auto a64 = B::view(q64.data(), detail::matrices_layout(count, d));
    eigh(x, B::view(l64.data(), make_layout(make_shape(count, d))), a64,
         B::view(info64.data(), make_layout(make_shape(count))));
    std::vector<int> host_info64(static_cast<std::size_t>(count));
    B::to_host(x, info64.data(), count, host_info64.data());
    B::wait(x);
    std::vector<T> const take = detail::retry_choice<T>(results, host_info, host_info64);
    auto const chosen = B::template scratch<T>(x, count);
    B::from_host(x, take.data(), count, chosen.data());
    T const* pick = chosen.data();
    assign(q, where(B::view(pick, detail::per_matrix_layout(count, d)) != T(0), cast<T>(a64), q),
           x);
    assign(l,
           where(B::view(pick, detail::per_row_layout(count, d)) != T(0),
                 cast<T>(B::view(static_cast<double const*>(l64.data()),
                                 make_layout(make_shape(count, d)))),
                 l),
           x);
  }
  detail::non_finite_flags(x, B::view(q.data(), detail::matrix_rows_layout(count, d)), flag(1));
  detail::non_finite_flags(x, l, flag(2));
  B::to_host(x, flags.data() + count, 2 * count, host_flags.data() + count);
  B::wait(x);
  for (index_t b = 0; b < count; ++b) {
    auto const i = static_cast<std::size_t>(b);
    if (results[i].status != RootStatus::ok) continue;
    if (host_info[i] != 0)
      results[i].status = RootStatus::solver_failed;
    else if (!(host_flags[static_cast<std::size_t>(count) + i] == T(0)) ||
             !(host_flags[static_cast<std::size_t>(2 * count) + i] == T(0)))
      results[i].status = RootStatus::non_finite;
  }
}

// Eigendecomposed Shampoo's inverse roots on every step: out_b = Q_b diag(f(lambda_b)) Q_b^T from
// a cached decomposition (factor_eigendecomposition's q and lambda, or the identity and ones it
// starts from), f the eigenvalue map of `root`, `epsilon` and `config` (eigenvalue_map.hpp).
template <class T, class X, class Q, class Out>
void eigendecomposed_inverse_roots(X const& x, Q const& q, T const* lambda, index_t count,
                                   index_t d, double root, double epsilon,
                                   EigenConfig const& config, Out const& out) {
  if (count == 0 || d == 0) return;
  EigenvalueMap const rule = detail::eigenvalue_map_of(root, epsilon, config);
  detail::roots_from_eigendecomposition(x, q, lambda, count, d, rule, out);
}

}  // namespace tessel::shampoo
