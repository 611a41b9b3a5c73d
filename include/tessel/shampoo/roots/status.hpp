// What an inverse-root computation reports per matrix (RootStatus, RootResult) and the argument
// checks no matrix can pass (check_root_arguments). Numerical failure is reported, never thrown,
// so the optimizer can keep the previous inverse root.
#pragma once

#include <cmath>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../options.hpp"

namespace tessel::shampoo {

enum class RootStatus {
  ok,
  solver_failed,     // the eigensolver did not converge (in float and, if retried, in double)
  not_converged,     // coupled Newton stopped at max_iterations above the tolerance
  non_finite,        // the result holds NaN or Inf
  non_finite_input,  // the matrix itself holds NaN or Inf (nothing was computed)
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
    case RootStatus::non_finite_input:
      return "the matrix has NaN or Inf values";
  }
  return "an unknown status";  // unreachable: every enumerator is handled above
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

}  // namespace tessel::shampoo
