// Shampoo's hyper-parameters with Distributed Shampoo's defaults (lr 1e-2, betas (0.9, 1.0),
// epsilon 1e-12, no momentum, decoupled weight decay 0, precondition_frequency 1, bias correction
// on, no grafting, eigendecomposed inverse roots); their checks are options_check.hpp.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"

namespace tessel::shampoo {

namespace detail {

// Error sentences are core's: numbers in their shortest round-trip form, shapes as shape_text.
using tessel::detail::sentence;

}  // namespace detail

// The diagonal method grafted onto Shampoo: each block's Shampoo direction is rescaled to the norm
// of this method's direction.
enum class GraftingType { none, sgd, adagrad, rmsprop, adam };

struct GraftingConfig {
  GraftingType type = GraftingType::none;
  double beta2 = 1.0;  // RMSprop 0.99 and Adam 0.999 by default (see the helpers below)
  double epsilon = 1e-10;
  // RMSprop and Adam: a <- beta2 a + g^2 instead of beta2 a + (1 - beta2) g^2, and no bias
  // correction (Distributed Shampoo's drop_weighting_factor_on_gsquare).
  bool drop_weighting_factor_on_gsquare = false;
};

constexpr GraftingConfig no_grafting() {
  return {};
}
constexpr GraftingConfig sgd_grafting() {
  return {GraftingType::sgd, 1.0, 1e-10, false};
}
constexpr GraftingConfig adagrad_grafting(double epsilon = 1e-10) {
  return {GraftingType::adagrad, 1.0, epsilon, false};
}
constexpr GraftingConfig rmsprop_grafting(double beta2 = 0.99, double epsilon = 1e-10) {
  return {GraftingType::rmsprop, beta2, epsilon, false};
}
constexpr GraftingConfig adam_grafting(double beta2 = 0.999, double epsilon = 1e-10) {
  return {GraftingType::adam, beta2, epsilon, false};
}

// How inverse roots are computed on amortized steps.
enum class RootMethod { eigen, coupled_newton };

// Eigendecomposition (Distributed Shampoo's EigenConfig): a failed decomposition in float is
// retried in double; the eigenvalues are shifted so the smallest is >= epsilon (perturbation), or,
// with pseudo_inverse, eigenvalues at or below max(rank_atol, rank_rtol * largest) are dropped.
struct EigenConfig {
  bool retry_double_precision = true;
  bool perturb_before_computation = true;
  bool pseudo_inverse = false;  // needs epsilon == 0
  double rank_atol = 0.0;
  double rank_rtol = 0.0;
};

// Coupled inverse Newton iteration (Distributed Shampoo's CoupledNewtonConfig).
struct CoupledNewtonConfig {
  index_t max_iterations = 100;
  double tolerance = 1e-6;
};

// How eigenvalue-corrected and eigendecomposed Shampoo decompose their factors on amortized
// steps (Distributed Shampoo's EighEigendecompositionConfig and QREigendecompositionConfig). Both
// start from the estimate B = Q^T A Q, Q the eigenvectors kept in the state (the identity before
// the first computation): when ||B - diag(B)||_F <= tolerance ||B||_F, eigh keeps Q and takes
// diag(B) as the eigenvalues instead of decomposing A, and the QR iteration stops. The QR
// iteration (roots/qr_iteration.hpp) repeats, up to max_iterations times, B = Q_k R_k,
// Q <- Q Q_k, B <- Q_k^T B Q_k, then orders the eigenvalues diag(B) ascending with their vectors.
enum class EigendecompositionMethod { eigh, qr };

struct EigendecompositionConfig {
  EigendecompositionMethod method = EigendecompositionMethod::eigh;
  double tolerance = 0.0;      // in [0, 1]; 0: eigh always decomposes, QR runs every iteration
  index_t max_iterations = 1;  // QR only
};

struct RootConfig {
  RootMethod method = RootMethod::eigen;
  EigenConfig eigen{};
  CoupledNewtonConfig coupled_newton{};
  EigendecompositionConfig eigendecomposition{};  // eigenvalue-corrected and eigendecomposed
};

// What turns a block's (filtered) gradient into its search direction: Shampoo's inverse roots of
// the factors; spectral descent (Muon), the orthogonalized gradient U V^T of a 2-D block, by a
// Newton-Schulz iteration (Distributed Shampoo's SpectralDescentPreconditionerConfig); or sign
// descent, sign(gradient) (SignDescentPreconditionerConfig with its default scale 1). The last two
// keep no factors and compute no roots; grafting, momentum and weight decay apply to all three.
// eigenvalue_corrected (SOAP, Distributed Shampoo's EigenvalueCorrectedShampooPreconditionerConfig
// with its default eigh): the factors' eigenvectors Q_k, refreshed on amortized steps, rotate the
// gradient into their basis, where a per-element Adam-style second moment V <- beta2 V + w G'^2
// (the corrected eigenvalues) divides it: direction = (x' / ((V / bc2)^e + epsilon)) rotated
// back, x' = x rotated, e = 1/2 or the block order's inverse_exponent_override (one exponent per
// order, as Distributed Shampoo's dict[int, float] for this config).
// eigendecomposed (Distributed Shampoo's EigendecomposedShampooPreconditionerConfig): Shampoo
// that caches each factor's eigendecomposition A + epsilon I = Q diag(lambda) Q^T (eigenvectors
// and eigenvalues, refreshed on amortized steps; the eigen root settings apply) instead of its
// inverse root, and forms the root Q diag(f(lambda)) Q^T from it on every step: the same
// direction as shampoo with the eigen root method, other state.
enum class PreconditionerType {
  shampoo,
  spectral_descent,
  sign_descent,
  eigenvalue_corrected,
  eigendecomposed
};

// The quintic Newton-Schulz iteration of spectral descent (NewtonSchulzOrthogonalizationConfig):
// from X = G / max(||G||_F, 1e-8), num_iterations times X <- a X + b (X X^T) X + c (X X^T)^2 X.
// Muon's coefficients (the default) drive the singular values into about [0.7, 1.3] rather than
// to 1; (3, -16/5, 6/5) converges to 1 (a + b + c == 1). The result is multiplied by
// scale_by_dims(d_in, d_out) (d_in the block's columns, d_out its rows) when it is set, e.g.
// sqrt(max(1, d_out / d_in)) as in Muon.
struct NewtonSchulzConfig {
  index_t num_iterations = 5;
  double a = 3.4445, b = -4.7750, c = 2.0315;
  std::function<double(index_t d_in, index_t d_out)> scale_by_dims{};
};

// How spectral descent orthogonalizes a block (Distributed Shampoo's orthogonalization_config):
// the Newton-Schulz iteration (NewtonSchulzOrthogonalizationConfig, the default) or the exact
// U V^T of the reduced SVD (SVDOrthogonalizationConfig).
enum class OrthogonalizationMethod { newton_schulz, svd };

// The exact orthogonalization (SVDOrthogonalizationConfig): U V^T of G = U S V^T, multiplied by
// the nuclear norm sum(S) when scale_by_nuclear_norm, then by scale_by_dims(d_in, d_out) when it is
// set. tessel forms U V^T = G (G^T G)^(-1/2) (tall G; (G G^T)^(-1/2) G when wide) from the
// eigendecomposition of the smaller Gram matrix (step/orthogonalize.hpp), with eigenvalues at or
// below max(rows, cols) * eps * largest taken as 0: singular values that small give no direction,
// where an SVD would pair them with arbitrary singular vectors (a zero gradient gives 0).
struct SvdOrthogonalizationConfig {
  bool scale_by_nuclear_norm = false;
  std::function<double(index_t d_in, index_t d_out)> scale_by_dims{};
};

// decoupled: the update gains weight_decay * w; l2: the gradient does, before preconditioning;
// corrected: the update gains weight_decay * (lr / peak_lr) * w, and independent:
// (weight_decay / peak_lr) * w, with peak_lr the lr the optimizer was built with (Distributed
// Shampoo's CORRECTED and INDEPENDENT, whose PEAK_LR is the constructor's lr).
enum class WeightDecayType { decoupled, l2, corrected, independent };

// Iterate averaging (Distributed Shampoo's GeneralizedPrimalAveragingConfig and
// ScheduleFreeConfig; its ClassicMomentumConfig is momentum / dampening / use_nesterov). Besides
// the parameters y (where gradients are taken) the optimizer keeps z, the plain descent sequence
// (state key weight_buffer, z = y at the first step): with u the step's update before weight
// decay, decay coefficient a and mu_x, mu_y the evaluation and training interpolation
// coefficients,
//   z' = (1 - lr a) z,   y <- y + (1 - mu_x) (z' - y) - (1 - mu_x mu_y) lr u,   z <- z' - lr u.
// generalized_primal: mu_x = eval_interp_coeff; schedule_free: mu_x = 1 - lr^p / sum_t lr_t^p with
// p = eval_coeff_lr_power (the sum, state key lr_sum, includes this step). eval(params) moves the
// parameters to the averaged sequence x = y + (1 - 1 / mu_y) (z - y), train(params) back.
enum class AveragingType { none, generalized_primal, schedule_free };

struct IterateAveragingConfig {
  AveragingType type = AveragingType::none;
  double eval_interp_coeff = 0.9;   // mu_x of generalized_primal, in [0, 1)
  double train_interp_coeff = 0.8;  // mu_y, in (0, 1]
  double eval_coeff_lr_power = 2;   // p of schedule_free
};

// Per tensor order: one exponent for every dimension, or exponents for some dimensions (the others
// keep the default 1 / (2 * max(order, 1))). An exponent of 0 leaves that dimension
// unpreconditioned; the root is 1 / exponent. Eigenvalue-corrected Shampoo reads one exponent per
// order, the power of its corrected eigenvalues (default 1/2), and refuses per-dimension ones.
using ExponentOverride = std::variant<double, std::map<index_t, double>>;
using InverseExponentOverride = std::map<index_t, ExponentOverride>;

// Eigenvalue-corrected Shampoo: per tensor order, the dimensions whose gradient is not rotated into
// its factor's eigenbasis (Distributed Shampoo's `ignored_basis_change_dims`). Such a dimension has
// no factor, no eigenvectors and no state; the corrected eigenvalues still cover every element, so
// ignoring every dimension gives Adam's per-element scaling.
using IgnoredBasisChangeDims = std::map<index_t, std::vector<index_t>>;

struct Options {
  double lr = 1e-2;
  double beta1 = 0.9;
  double beta2 = 1.0;
  double beta3 = -1.0;  // -1: equal to beta1
  double epsilon = 1e-12;
  double momentum = 0.0;
  double dampening = 0.0;
  bool use_nesterov = false;
  double weight_decay = 0.0;
  WeightDecayType weight_decay_type = WeightDecayType::decoupled;
  index_t precondition_frequency = 1;
  index_t start_preconditioning_step = -1;  // -1: precondition_frequency
  bool use_bias_correction = true;
  GraftingConfig grafting{};
  InverseExponentOverride inverse_exponent_override{};
  IgnoredBasisChangeDims ignored_basis_change_dims{};  // eigenvalue-corrected Shampoo
  RootConfig root{};
  DType factor_matrix_dtype = DType::f32;  // bf16, f16, f32 or f64
  // Keep each factor as its upper triangle, d (d + 1) / 2 elements instead of d * d, and save it
  // so (state/symmetric_packing.hpp); the step's numbers are the same. Shampoo's inverse roots
  // are saved so too (kept full in memory, made symmetric from their upper triangles when
  // computed). Off by default, unlike Distributed Shampoo, so that existing state files and code
  // reading factors as (d, d) keep their layout; load_state_dict reads either layout in both
  // modes.
  bool use_symmetric_packing = false;
  index_t num_tolerated_failed_amortized_computations = 3;
  // F <- beta2 F + G x G instead of beta2 F + (1 - beta2) G x G, and no bias correction of the
  // factors (Distributed Shampoo's drop_weighting_factor_on_gsquare).
  bool drop_weighting_factor_on_gsquare = false;
  // Before each root: F / bias_correction2 multiplied by max(trace, epsilon)^(-exponent), which
  // brings the factors of a block to a similar scale (Distributed Shampoo's use_trace_scaling).
  bool use_trace_scaling = false;
  double trace_scaling_exponent = 0.5;  // in (0, 1]
  PreconditionerType preconditioner = PreconditionerType::shampoo;
  // Eigenvalue-corrected Shampoo with beta1 != 0: keep the filtered gradient in the eigenbasis
  // too, filtered there from the rotated gradient the corrected eigenvalues already need, so that
  // a step that keeps its eigenvectors rotates once into the basis instead of twice (a 2-D block:
  // 4 matrix products instead of 6). Costs one more buffer of the parameters' size; the steps
  // agree with the default's to rounding, not bit for bit, and a run resumed from a state
  // dictionary (which does not hold the rotated copy) continues to rounding until the next
  // eigenbasis refresh. Off by default: Distributed Shampoo has no such setting, and the default
  // keeps its numbers.
  bool keep_rotated_filtered_grad = false;
  // Spectral descent's orthogonalization: the method, and the settings of each.
  OrthogonalizationMethod orthogonalization = OrthogonalizationMethod::newton_schulz;
  NewtonSchulzConfig newton_schulz{};
  SvdOrthogonalizationConfig svd{};
  // KL-Shampoo (Distributed Shampoo's RootInvKLShampooPreconditionerConfig and
  // EigendecomposedKLShampooPreconditionerConfig, with shampoo and eigendecomposed): factor k
  // accumulates the outer products of the gradient preconditioned along the block's other modes
  // by their current inverse roots, G x_{i != k} R_i, instead of the gradient's. With
  // eigenvalue_corrected: KL-SOAP (preconditioners/kl_soap.hpp), the roots from SOAP's eigenbasis.
  bool kl_shampoo = false;
  IterateAveragingConfig averaging{};  // with momentum 0
};

inline std::string_view grafting_name(GraftingType t) {
  switch (t) {
    case GraftingType::none:
      return "none";
    case GraftingType::sgd:
      return "sgd";
    case GraftingType::adagrad:
      return "adagrad";
    case GraftingType::rmsprop:
      return "rmsprop";
    case GraftingType::adam:
      return "adam";
  }
  return "unknown";
}

inline std::string_view preconditioner_name(PreconditionerType t) {
  switch (t) {
    case PreconditionerType::shampoo:
      return "shampoo";
    case PreconditionerType::spectral_descent:
      return "spectral descent";
    case PreconditionerType::sign_descent:
      return "sign descent";
    case PreconditionerType::eigenvalue_corrected:
      return "eigenvalue-corrected Shampoo";
    case PreconditionerType::eigendecomposed:
      return "eigendecomposed Shampoo";
  }
  return "unknown";
}

inline std::string_view eigendecomposition_name(EigendecompositionMethod m) {
  switch (m) {
    case EigendecompositionMethod::eigh:
      return "eigh";
    case EigendecompositionMethod::qr:
      return "the QR iteration";
  }
  return "unknown";
}

inline std::string_view orthogonalization_name(OrthogonalizationMethod m) {
  switch (m) {
    case OrthogonalizationMethod::newton_schulz:
      return "Newton-Schulz";
    case OrthogonalizationMethod::svd:
      return "SVD";
  }
  return "unknown";
}

inline std::string_view averaging_name(AveragingType t) {
  switch (t) {
    case AveragingType::none:
      return "none";
    case AveragingType::generalized_primal:
      return "generalized primal averaging";
    case AveragingType::schedule_free:
      return "schedule-free";
  }
  return "unknown";
}

inline std::string_view weight_decay_name(WeightDecayType t) {
  switch (t) {
    case WeightDecayType::decoupled:
      return "decoupled";
    case WeightDecayType::l2:
      return "l2";
    case WeightDecayType::corrected:
      return "corrected";
    case WeightDecayType::independent:
      return "independent";
  }
  return "unknown";
}

// The exponent of dimension `dim` of a block of order `order`.
inline double inverse_exponent(InverseExponentOverride const& overrides, index_t order,
                               index_t dim) {
  double const fallback = 1.0 / (2.0 * static_cast<double>(order > 1 ? order : 1));
  auto it = overrides.find(order);
  if (it == overrides.end()) return fallback;
  if (auto const* all = std::get_if<double>(&it->second)) return *all;
  auto const& per_dim = std::get<std::map<index_t, double>>(it->second);
  auto d = per_dim.find(dim);
  return d == per_dim.end() ? fallback : d->second;
}

// The power of the corrected eigenvalues in eigenvalue-corrected Shampoo's direction for blocks of
// order `order`: 1/2 unless overridden (validate() admits only one exponent > 0 per order there).
inline double corrected_eigenvalue_exponent(InverseExponentOverride const& overrides,
                                            index_t order) {
  auto it = overrides.find(order);
  if (it == overrides.end()) return 0.5;
  auto const* all = std::get_if<double>(&it->second);
  return all ? *all : 0.5;
}

// Whether eigenvalue-corrected Shampoo rotates dimension `dim` of a block of order `order`.
inline bool changes_basis(IgnoredBasisChangeDims const& ignored, index_t order, index_t dim) {
  auto it = ignored.find(order);
  return it == ignored.end() ||
         std::find(it->second.begin(), it->second.end(), dim) == it->second.end();
}

// Whether the preconditioner accumulates Kronecker factors (Shampoo, eigendecomposed and
// eigenvalue-corrected; spectral and sign descent keep none).
constexpr bool keeps_factors(PreconditionerType t) {
  return t == PreconditionerType::shampoo || t == PreconditionerType::eigenvalue_corrected ||
         t == PreconditionerType::eigendecomposed;
}

// Whether the preconditioner takes inverse roots of the factors (so that KL-Shampoo's factor
// update and the root settings apply).
constexpr bool takes_roots(PreconditionerType t) {
  return t == PreconditionerType::shampoo || t == PreconditionerType::eigendecomposed;
}

// Whether the preconditioner keeps eigendecompositions of its factors (so that the
// eigendecomposition settings apply).
constexpr bool decomposes_factors(PreconditionerType t) {
  return t == PreconditionerType::eigenvalue_corrected || t == PreconditionerType::eigendecomposed;
}

// start_preconditioning_step with -1 resolved.
// Spectral and sign descent compute no roots, so -1 means step 1 for them (Distributed Shampoo
// sets their precondition_frequency to 1).
inline index_t resolved_start_step(Options const& o) {
  if (o.start_preconditioning_step != -1) return o.start_preconditioning_step;
  return keeps_factors(o.preconditioner) ? o.precondition_frequency : 1;
}

// beta3 with -1 resolved.
inline double resolved_beta3(Options const& o) {
  return o.beta3 == -1.0 ? o.beta1 : o.beta3;
}

}  // namespace tessel::shampoo
