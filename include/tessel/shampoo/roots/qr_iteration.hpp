// Eigendecompositions warm-started from the eigenvectors kept in the state (Distributed Shampoo's
// QREigendecompositionConfig, and the tolerance of its EighEigendecompositionConfig), for a batch
// of symmetric matrices at once. Both start from the estimate B = Q^T A Q of the eigenvalues, Q
// the previous eigenvectors: its relative off-diagonal norm ||B - diag(B)||_F / ||B||_F is how far
// Q is from diagonalizing A (it equals ||A - Q diag(B) Q^T||_F / ||A||_F), so at or below the
// tolerance eigh may keep Q (eigh_estimates_within_tolerance) and the QR iteration stops
// (qr_iteration). The QR iteration is orthogonal (simultaneous) iteration on B: B = Q_k R_k,
// Q <- Q Q_k, B <- R_k Q_k; a few iterations per amortized step track slowly moving eigenvectors
// at a fraction of eigh's cost. Each matrix stops on its own criterion (a mask, so the batch needs
// no wait per iteration). Runs on any executor through exec::Memory<X>: products by exec::gemm, Q_k
// by exec::qr_orthogonal_factor (exec/qr.hpp, exec/cuda/qr.cuh).
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

#include "../../exec/dense.hpp"
#include "../../exec/qr.hpp"
#include "../../expr/compare.hpp"
#include "../../expr/math.hpp"
#include "../../expr/where.hpp"
#include "../../tensor/views.hpp"
#include "batch.hpp"
#include "status.hpp"

namespace tessel::shampoo {

namespace detail {

// within(b) = 1 where ||B_b - diag(B_b)||_F <= tolerance ||B_b||_F, else 0 (a NaN in B_b: 0).
// The off-diagonal norm is sqrt(||B||^2 - ||diag B||^2), as Distributed Shampoo computes it.
// norms: scratch of 2 * count.
template <class T, class X>
void estimate_within_tolerance(X const& x, T const* b, index_t count, index_t d, double tolerance,
                               T* norms, T* within) {
  using B = exec::Memory<X>;
  auto const total = B::view(norms, make_layout(make_shape(count)));
  auto const diagonal = B::view(norms + count, make_layout(make_shape(count)));
  auto const rows = B::view(b, matrix_rows_layout(count, d));
  auto const diag = B::view(b, diagonal_layout(count, d));
  assign(total, sum(rows * rows, mode<1>), x);
  assign(diagonal, sum(diag * diag, mode<1>), x);
  auto const t = B::view(static_cast<T const*>(norms), make_layout(make_shape(count)));
  auto const g = B::view(static_cast<T const*>(norms) + count, make_layout(make_shape(count)));
  assign(B::view(within, make_layout(make_shape(count))),
         where(sqrt(t - g) <= static_cast<T>(tolerance) * sqrt(t), T(1), T(0)), x);
}

// a (count, d, d) row-major = `in` + ridge I, and flag(b) NaN where `in`'s matrix b holds NaN or
// Inf (0 otherwise).
template <class T, class X, class In>
void ridged_input(X const& x, In const& in, T* a, index_t count, index_t d, double ridge, T* flag) {
  using B = exec::Memory<X>;
  assign(B::view(a, matrices_layout(count, d)), in, x);
  non_finite_flags(x, B::view(a, matrix_rows_layout(count, d)),
                   B::view(flag, make_layout(make_shape(count))));
  if (ridge != 0.0) {
    auto diagonal = B::view(a, diagonal_layout(count, d));
    assign(diagonal, diagonal + static_cast<T>(ridge), x);
  }
}

// b = q^T a q, the eigenvalue estimate; t: scratch of count * d * d.
template <class T, class X, class Q>
void eigenvalue_estimate(X const& x, T const* a, Q const& q, T* t, T* b, index_t count, index_t d) {
  using B = exec::Memory<X>;
  auto const layout = matrices_layout(count, d);
  gemm(x, B::view(t, layout), B::view(a, layout), q);
  gemm(x, B::view(b, layout), permute<0, 2, 1>(q), B::view(static_cast<T const*>(t), layout));
}

// For each matrix, the indices of its values in ascending order, ties in index order.
template <class T>
std::vector<index_t> ascending_order(std::vector<T> const& values, index_t count, index_t d) {
  std::vector<index_t> order(values.size());
  for (index_t b = 0; b < count; ++b) {
    auto const first = order.begin() + b * d;
    std::iota(first, first + d, index_t{0});
    T const* v = values.data() + b * d;
    std::stable_sort(first, first + d, [v](index_t i, index_t j) { return v[i] < v[j]; });
  }
  return order;
}

}  // namespace detail

// The QR iteration (Distributed Shampoo's qr_algorithm) for the count matrices A_b + ridge I,
// `in` an expression or tensor (count, d, d) of A (symmetric), warm-started from q (count, d, d)
// row-major, q(b, i, j) = Q_b[i][j], the previous eigenvectors as columns. Up to max_iterations
// times, for each matrix whose estimate B = Q^T (A + ridge I) Q is not within `tolerance`
// (estimate_within_tolerance): B = Q_k R_k, Q <- Q Q_k, B <- Q_k^T B Q_k (R_k Q_k in exact
// arithmetic: one more product, no triangular factor to keep). Then the columns of Q are ordered
// by diag(B) ascending (stable), and lambda (count * d) = diag(B) in that order.
// results[b]: non_finite_input for NaN or Inf in A_b, non_finite for NaN or Inf in the new Q_b or
// lambda_b (q_b and lambda_b are then unspecified); there is no solver to fail. Waits once.
// @pre tolerance in [0, 1], max_iterations >= 0, results.size() == count
template <class T, class X, class In, class Q>
void qr_iteration(X const& x, In const& in, Q const& q, T* lambda, index_t count, index_t d,
                  double ridge, index_t max_iterations, double tolerance,
                  std::span<RootResult> results) {
  using B = exec::Memory<X>;
  for (auto& r : results) r = RootResult{};
  if (count == 0 || d == 0) return;
  index_t const n = count * d * d;
  auto const layout = detail::matrices_layout(count, d);
  auto a = B::template scratch<T>(x, n);
  auto b = B::template scratch<T>(x, n);
  auto t = B::template scratch<T>(x, n);
  auto next = B::template scratch<T>(x, n);
  auto qk_data = B::template scratch<T>(x, n);
  auto norms = B::template scratch<T>(x, 2 * count);
  auto active = B::template scratch<T>(x, count);
  auto flags = B::template scratch<T>(x, 3 * count);  // input, Q, lambda: NaN when not finite
  detail::ridged_input(x, in, a.data(), count, d, ridge, flags.data());
  detail::eigenvalue_estimate(x, static_cast<T const*>(a.data()), q, t.data(), b.data(), count, d);
  auto const bv = B::view(b.data(), layout);
  auto const tv = B::view(t.data(), layout);
  auto const nv = B::view(next.data(), layout);
  // Q_k column-major (cuSOLVER's order): its storage holds B transposed, a row-major view of it.
  auto const qk = permute<0, 2, 1>(B::view(qk_data.data(), layout));
  auto const still =
      B::view(static_cast<T const*>(active.data()), detail::per_matrix_layout(count, d)) == T(0);
  for (index_t k = 0; k < max_iterations; ++k) {
    detail::estimate_within_tolerance(x, static_cast<T const*>(b.data()), count, d, tolerance,
                                      norms.data(), active.data());
    assign(qk, bv, x);
    qr_orthogonal_factor(x, qk);
    gemm(x, tv, bv, qk);
    gemm(x, nv, permute<0, 2, 1>(qk), tv);
    assign(bv, where(still, nv, bv), x);  // active(b) == 1: converged, kept as it is
    gemm(x, tv, q, qk);
    assign(q, where(still, tv, q), x);
  }
  // Order the eigenvalues ascending, their vectors with them: a permutation matrix P per matrix,
  // Q <- Q P by one product (exact: each element is one product by 1 plus zeros).
  std::vector<T> values(static_cast<std::size_t>(count * d));
  auto const diag = B::view(b.data(), detail::diagonal_layout(count, d));
  auto const l = B::view(lambda, make_layout(make_shape(count, d)));
  assign(l, diag, x);
  std::vector<T> host_flags(static_cast<std::size_t>(3 * count));
  B::to_host(x, lambda, count * d, values.data());
  B::to_host(x, flags.data(), count, host_flags.data());
  B::wait(x);
  std::vector<index_t> const order = detail::ascending_order(values, count, d);
  bool sorted = true;
  for (index_t i = 0; i < count * d; ++i) sorted = sorted && order[i] == i % d;
  if (!sorted) {
    std::vector<T> permutation(static_cast<std::size_t>(n), T(0));
    std::vector<T> ordered(values.size());
    for (index_t bi = 0; bi < count; ++bi)
      for (index_t j = 0; j < d; ++j) {
        index_t const from = order[bi * d + j];
        permutation[bi * d * d + from * d + j] = T(1);
        ordered[bi * d + j] = values[bi * d + from];
      }
    B::from_host(x, permutation.data(), n, next.data());
    gemm(x, tv, q, B::view(static_cast<T const*>(next.data()), layout));
    assign(q, tv, x);
    B::from_host(x, ordered.data(), count * d, lambda);
  }
  detail::non_finite_flags(x, B::view(q.data(), detail::matrix_rows_layout(count, d)),
                           B::view(flags.data() + count, make_layout(make_shape(count))));
  detail::non_finite_flags(x, l, B::view(flags.data() + 2 * count, make_layout(make_shape(count))));
  B::to_host(x, flags.data() + count, 2 * count, host_flags.data() + count);
  B::wait(x);
  for (index_t bi = 0; bi < count; ++bi) {
    auto const i = static_cast<std::size_t>(bi);
    if (!(host_flags[i] == T(0)))
      results[i].status = RootStatus::non_finite_input;
    else if (!(host_flags[static_cast<std::size_t>(count) + i] == T(0)) ||
             !(host_flags[static_cast<std::size_t>(2 * count) + i] == T(0)))
      results[i].status = RootStatus::non_finite;
  }
}

// eigh's tolerance (Distributed Shampoo's EighEigendecompositionConfig.tolerance): which of the
// count matrices A_b + ridge I (`in` (count, d, d), symmetric) the previous eigenvectors q
// (count, d, d) row-major, as columns, already diagonalize within `tolerance`
// (estimate_within_tolerance); for those the caller keeps Q_b and takes estimate_b (count * d,
// diag(Q^T (A + ridge I) Q), in Q's column order, not sorted) as the eigenvalues instead of
// decomposing. A matrix holding NaN or Inf is never within. Waits once.
template <class T, class X, class In, class Q>
std::vector<char> eigh_estimates_within_tolerance(X const& x, In const& in, Q const& q, T* estimate,
                                                  index_t count, index_t d, double ridge,
                                                  double tolerance) {
  using B = exec::Memory<X>;
  std::vector<char> within(static_cast<std::size_t>(count), 0);
  if (count == 0 || d == 0) return within;
  index_t const n = count * d * d;
  auto a = B::template scratch<T>(x, n);
  auto b = B::template scratch<T>(x, n);
  auto t = B::template scratch<T>(x, n);
  auto norms = B::template scratch<T>(x, 2 * count);
  auto flags = B::template scratch<T>(x, 2 * count);  // input NaN flag, within
  detail::ridged_input(x, in, a.data(), count, d, ridge, flags.data());
  detail::eigenvalue_estimate(x, static_cast<T const*>(a.data()), q, t.data(), b.data(), count, d);
  detail::estimate_within_tolerance(x, static_cast<T const*>(b.data()), count, d, tolerance,
                                    norms.data(), flags.data() + count);
  assign(B::view(estimate, make_layout(make_shape(count, d))),
         B::view(static_cast<T const*>(b.data()), detail::diagonal_layout(count, d)), x);
  std::vector<T> host(static_cast<std::size_t>(count));
  B::to_host(x, flags.data() + count, count, host.data());
  B::wait(x);
  for (std::size_t i = 0; i < within.size(); ++i) within[i] = host[i] == T(1) ? 1 : 0;
  return within;
}

}  // namespace tessel::shampoo
