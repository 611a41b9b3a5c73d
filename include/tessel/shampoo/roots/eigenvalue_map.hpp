// The eigenvalue map of the eigendecomposed inverse root, written once as a TESSEL_HOST_DEVICE
// function: Distributed Shampoo's perturbation rule or pseudo-inverse cut-off, then
// lambda^(-1/root). roots/eigen.hpp applies it as an expression (map(MapEigenvalue{...}, ...)), so
// the host and CUDA executors run the same code.
#pragma once

#include <cmath>

#include "../../core/config.hpp"

namespace tessel::shampoo {

// How eigenvalues become inverse-root factors; built on the host, passed by value to kernels.
struct EigenvalueMap {
  double root = 2.0;
  double epsilon = 0.0;
  bool pseudo_inverse = false;
  bool perturb_before_computation = true;
  double rank_atol = 0.0;
  double rank_rtol = 0.0;
};

// lambda -> its factor in X = Q diag(f(lambda)) Q^T, given the smallest and largest eigenvalue of
// the same matrix. With perturbation, a spectrum whose smallest eigenvalue is below epsilon (A +
// epsilon I decomposed) is shifted in two additions, as Distributed Shampoo does, so that the
// smallest becomes exactly 0 first and a float epsilon far below |lambda_min| is not rounded away.
template <class S>
TESSEL_HOST_DEVICE S map_eigenvalue(S lambda, S lambda_min, S lambda_max, EigenvalueMap const& m) {
  using std::pow;
  S const exponent = static_cast<S>(-1.0 / m.root);
  if (m.pseudo_inverse) {
    S const largest = lambda_max > S(0) ? lambda_max : S(0);
    S cutoff = static_cast<S>(m.rank_rtol) * largest;
    if (cutoff < static_cast<S>(m.rank_atol)) cutoff = static_cast<S>(m.rank_atol);
    return lambda <= cutoff ? S(0) : pow(lambda, exponent);
  }
  S const eps = static_cast<S>(m.epsilon);
  if (m.perturb_before_computation) {
    if (lambda_min < eps) {
      lambda -= lambda_min;
      lambda += eps;
    }
  } else {
    lambda -= lambda_min < S(0) ? lambda_min : S(0);
    lambda += eps;
  }
  return pow(lambda, exponent);
}

// map_eigenvalue as an expression functor: map(MapEigenvalue{m}, lambda, lambda_min, lambda_max)
// with the minimum and maximum broadcast over each matrix's eigenvalues (roots/eigen.hpp).
struct MapEigenvalue {
  EigenvalueMap map;

  template <class S>
  TESSEL_HOST_DEVICE S operator()(S lambda, S lambda_min, S lambda_max) const {
    return map_eigenvalue(lambda, lambda_min, lambda_max, map);
  }
};

}  // namespace tessel::shampoo
