// Inverse roots of symmetric positive semi-definite matrices on the host, X = A^(-1/root): by
// eigendecomposition (Eigen's SelfAdjointEigenSolver, retried in double when the float solve
// fails) with Distributed Shampoo's perturbation rule or a pseudo-inverse, or by the coupled
// inverse Newton iteration. Numerical failure is reported, never thrown, so the optimizer can keep
// the previous inverse root.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <Eigen/Dense>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "context.hpp"
#include "options.hpp"
#include "root_bodies.hpp"

namespace tessel::shampoo {

enum class RootStatus {
  ok,
  solver_failed,  // the eigensolver did not converge (in float and, if retried, in double)
  not_converged,  // coupled Newton stopped at max_iterations above the tolerance
  non_finite      // the result holds NaN or Inf
};

struct RootResult {
  RootStatus status = RootStatus::ok;
  bool retried_in_double = false;
  index_t iterations = 0;  // coupled Newton
  double error = 0.0;      // coupled Newton: max |M - I| at exit

  bool ok() const { return status == RootStatus::ok; }
};

inline char const* root_status_name(RootStatus s) {
  switch (s) {
    case RootStatus::ok:
      return "ok";
    case RootStatus::solver_failed:
      return "the eigensolver did not converge";
    case RootStatus::not_converged:
      return "coupled Newton did not reach its tolerance";
    case RootStatus::non_finite:
      return "the inverse root has NaN or Inf values";
  }
  return "unknown";
}

// Throws tessel::Error for arguments no matrix can satisfy: root <= 0 or not finite, a negative
// epsilon, epsilon != 0 with the pseudo-inverse, or a root that is not a whole number with coupled
// Newton.
inline void check_root_arguments(double root, double epsilon, RootConfig const& config) {
  auto bad = [](auto const&... pieces) {
    tessel::detail::throw_error(detail::sentence(pieces...));
  };
  if (!(root > 0.0) || !std::isfinite(root)) bad("the root must be > 0, got ", root, ".");
  if (!(epsilon >= 0.0) || !std::isfinite(epsilon)) bad("epsilon must be >= 0, got ", epsilon, ".");
  if (config.method == RootMethod::eigen && config.eigen.pseudo_inverse && epsilon != 0.0)
    bad("epsilon must be 0 when the pseudo-inverse is used, got ", epsilon, ".");
  if (config.method == RootMethod::coupled_newton &&
      std::abs(root - std::round(root)) > 1e-9 * root)
    bad("coupled Newton needs a whole-number root, got ", root, ".");
}

namespace detail {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

// Eigenvalues -> their inverse-root factors (root_bodies.hpp, shared with the CUDA path).
template <class V>
void invert_eigenvalues(V& L, double root, double epsilon, EigenConfig const& config) {
  using S = typename V::Scalar;
  if (L.size() == 0) return;
  EigenvalueMap const m{root,
                        epsilon,
                        config.pseudo_inverse,
                        config.perturb_before_computation,
                        config.rank_atol,
                        config.rank_rtol};
  map_eigenvalues(HostContext{}, L.size(), L.data(), static_cast<S>(L.minCoeff()),
                  static_cast<S>(L.maxCoeff()), m);
}

template <class S>
bool eigen_inverse_root(ColMatrix<S> const& A, double root, double epsilon,
                        EigenConfig const& config, ColMatrix<S>& X) {
  Eigen::SelfAdjointEigenSolver<ColMatrix<S>> solver(A, Eigen::ComputeEigenvectors);
  if (solver.info() != Eigen::Success) return false;
  Eigen::Matrix<S, Eigen::Dynamic, 1> L = solver.eigenvalues();
  invert_eigenvalues(L, root, epsilon, config);
  auto const& Q = solver.eigenvectors();
  X.noalias() = Q * L.asDiagonal() * Q.transpose();
  return true;
}

// Coupled inverse Newton, in double: X <- X M', M <- M'^p M with M' = (1 - a) I + a M, a = -1/p,
// starting from z = (p + 1) / (2 |A|_F), X = z^(1/p) I, M = z A, until max|M - I| <= tolerance.
inline RootResult coupled_newton(ColMatrix<double> const& A, index_t p,
                                 CoupledNewtonConfig const& config, ColMatrix<double>& X) {
  RootResult r;
  index_t const d = A.rows();
  double const alpha = -1.0 / static_cast<double>(p);
  ColMatrix<double> const I = ColMatrix<double>::Identity(d, d);
  double const z = static_cast<double>(p + 1) / (2.0 * A.norm());
  X = std::pow(z, -alpha) * I;
  ColMatrix<double> M = z * A;
  ColMatrix<double> Mp(d, d), power(d, d), next(d, d);
  auto error = [&] {
    double e = 0.0;
    for (index_t i = 0; i < d * d; ++i) {
      double const x = distance_to_identity(M.data(), d, i);
      if (!(x <= e)) e = x;  // NaN propagates
    }
    return e;
  };
  r.error = error();
  while (r.error > config.tolerance && r.iterations < config.max_iterations) {
    ++r.iterations;
    newton_affine(HostContext{}, d, M.data(), alpha, Mp.data());
    next.noalias() = X * Mp;
    X.swap(next);
    power = Mp;
    for (index_t k = 1; k < p; ++k) {
      next.noalias() = power * Mp;
      power.swap(next);
    }
    next.noalias() = power * M;
    M.swap(next);
    r.error = error();
    if (!std::isfinite(r.error)) break;
  }
  if (!std::isfinite(r.error) || !X.allFinite())
    r.status = RootStatus::non_finite;
  else if (r.error > config.tolerance)
    r.status = RootStatus::not_converged;
  return r;
}

}  // namespace detail

// X = A^(-1/root) for a symmetric d x d matrix A (row-major; X may not alias A). Eigen method:
// A + epsilon I is decomposed in T, then in double when that fails and retry_double_precision is
// set. Coupled Newton runs in double. X is written only when the result is ok.
// @pre check_root_arguments(root, epsilon, config) holds; A is finite
template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double> RootResult matrix_inverse_root(
    T const* A, index_t d, double root, double epsilon, RootConfig const& config, T* X) {
  RootResult result;
  if (d == 0) return result;
  Eigen::Map<detail::RowMatrix<T> const> a(A, d, d);
  Eigen::Map<detail::RowMatrix<T>> x(X, d, d);
  if (config.method == RootMethod::coupled_newton) {
    detail::ColMatrix<double> ad = a.template cast<double>();
    ad.diagonal().array() += epsilon;
    detail::ColMatrix<double> xd(d, d);
    result = detail::coupled_newton(ad, static_cast<index_t>(std::llround(root)),
                                    config.coupled_newton, xd);
    if (!result.ok()) return result;
    detail::ColMatrix<T> out = xd.template cast<T>();
    if (!out.allFinite()) {
      result.status = RootStatus::non_finite;
      return result;
    }
    x = out;
    return result;
  }
  EigenConfig const& ec = config.eigen;
  detail::ColMatrix<T> a_ridge = a;
  if (ec.perturb_before_computation && !ec.pseudo_inverse)
    a_ridge.diagonal().array() += static_cast<T>(epsilon);
  detail::ColMatrix<T> out(d, d);
  bool solved = detail::eigen_inverse_root<T>(a_ridge, root, epsilon, ec, out);
  if (!solved && ec.retry_double_precision && !std::is_same_v<T, double>) {
    result.retried_in_double = true;
    detail::ColMatrix<double> a64 = a_ridge.template cast<double>();
    detail::ColMatrix<double> out64(d, d);
    solved = detail::eigen_inverse_root<double>(a64, root, epsilon, ec, out64);
    if (solved) out = out64.template cast<T>();
  }
  if (!solved) {
    result.status = RootStatus::solver_failed;
    return result;
  }
  if (!out.allFinite()) {
    result.status = RootStatus::non_finite;
    return result;
  }
  x = out;
  return result;
}

}  // namespace tessel::shampoo
