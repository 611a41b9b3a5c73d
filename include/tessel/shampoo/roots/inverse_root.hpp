// Inverse roots X = A^(-1/root) of symmetric positive semi-definite matrices: the one place that
// picks the method (eigendecomposition, roots/eigen.hpp, or coupled Newton,
// roots/coupled_newton.hpp) for a batch on any executor, and matrix_inverse_root, the same
// computation for one row-major matrix on the host.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>

#include "../../core/error.hpp"
#include "../../exec/executors.hpp"
#include "../../tensor/host_tensor.hpp"
#include "../options.hpp"
#include "coupled_newton.hpp"
#include "eigen.hpp"
#include "status.hpp"

namespace tessel::shampoo {

// X_b = A_b^(-1/root) for the count matrices of `in` ((count, d, d), T) into `out`, by
// config.method; results[b] says what happened to matrix b (out_b is unspecified unless ok).
// @pre check_root_arguments(root, epsilon, config) holds; results.size() == count
template <class T, class X, class In, class Out>
void inverse_roots(X const& x, In const& in, Out const& out, index_t count, index_t d,
                   double root, double epsilon, RootConfig const& config,
                   std::span<RootResult> results) {
  switch (config.method) {
    case RootMethod::eigen:
      eigen_inverse_roots<T>(x, in, out, count, d, root, epsilon, config.eigen, results);
      return;
    case RootMethod::coupled_newton:
      coupled_newton_inverse_roots<T>(x, in, out, count, d, root, epsilon, config.coupled_newton,
                                      results);
      return;
  }
  tessel::detail::throw_error(tessel::detail::sentence(
      "root method ", static_cast<int>(config.method), " is not a RootMethod."));
}

// X = A^(-1/root) for one symmetric d x d matrix A (row-major; X may not alias A), on the host.
// Eigen method: A + epsilon I is decomposed in T, then in double when that fails and
// retry_double_precision is set. Coupled Newton runs in double. X is written only when the result
// is ok.
// @pre check_root_arguments(root, epsilon, config) holds
template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double> RootResult matrix_inverse_root(
    T const* A, index_t d, double root, double epsilon, RootConfig const& config, T* X) {
  RootResult result;
  if (d == 0) return result;
  auto const in = make_tensor(A, make_shape(index_t{1}, d, d));
  auto out = make_host_tensor<T>(make_shape(index_t{1}, d, d));
  inverse_roots<T>(exec::Serial{}, in, out.view(), 1, d, root, epsilon, config,
                   std::span<RootResult>(&result, 1));
  if (result.ok()) std::copy(out.data(), out.data() + d * d, X);
  return result;
}

}  // namespace tessel::shampoo
