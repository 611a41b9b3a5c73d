// The elementwise parts of the inverse-root computations, written once as TESSEL_HOST_DEVICE
// bodies: the eigenvalue map (Distributed Shampoo's perturbation rule or pseudo-inverse cut-off,
// then lambda^(-1/root)) and the coupled Newton pieces (M' = a M + (1 - a) I and |M - I|). The
// host (matrix_functions.hpp) and the CUDA kernels (shampoo/cuda/) call the same code.
#pragma once

#include <cmath>

#include "../core/config.hpp"

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

template <class Ctx, class S>
TESSEL_HOST_DEVICE void map_eigenvalues(Ctx const& ctx, index_t n, S* lambda, S lambda_min,
                                        S lambda_max, EigenvalueMap const& m) {
  for (index_t i = ctx.first(); i < n; i += ctx.stride())
    lambda[i] = map_eigenvalue(lambda[i], lambda_min, lambda_max, m);
}

// out = a M + (1 - a) I for a d x d matrix (the coupled Newton step's M').
template <class Ctx, class S>
TESSEL_HOST_DEVICE void newton_affine(Ctx const& ctx, index_t d, S const* M, S alpha, S* out) {
  for (index_t i = ctx.first(); i < d * d; i += ctx.stride())
    out[i] = alpha * M[i] + (i / d == i % d ? S(1) - alpha : S(0));
}

// |M[i] - I[i]|: the coupled Newton error is the largest of these.
template <class S>
TESSEL_HOST_DEVICE S distance_to_identity(S const* M, index_t d, index_t i) {
  S const x = M[i] - (i / d == i % d ? S(1) : S(0));
  return x < S(0) ? -x : x;
}

}  // namespace tessel::shampoo
