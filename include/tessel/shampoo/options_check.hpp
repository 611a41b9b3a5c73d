// The checks of Options: validate() refuses an invalid hyper-parameter with a sentence naming it
// and its value; ignored_options() lists the options that are set but have no effect as combined
// (another option switches them off), which the optimizers hand to tessel's warning handler.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "options.hpp"

namespace tessel::shampoo {

// The options that `o` sets but that have no effect as combined (another option switches them
// off), one sentence each, in the order of Options' members. Not errors: sweeps set such
// combinations on purpose. Optimizers hand each to tessel's warning handler (core/warning.hpp)
// when they are built. An option is "set" when it differs from its default: a default value
// cannot be told from an explicit one.
inline std::vector<std::string> ignored_options(Options const& o) {
  std::vector<std::string> out;
  auto note = [&](auto const&... pieces) { out.push_back(detail::sentence(pieces...)); };
  Options const d{};
  if (o.momentum == 0.0) {
    if (o.dampening != d.dampening)
      note("dampening ", o.dampening, " has no effect with momentum 0.");
    if (o.use_nesterov) note("use_nesterov has no effect with momentum 0.");
  }
  if (!o.use_trace_scaling && o.trace_scaling_exponent != d.trace_scaling_exponent)
    note("trace_scaling_exponent ", o.trace_scaling_exponent,
         " has no effect without use_trace_scaling.");
  if (o.drop_weighting_factor_on_gsquare && o.beta2 == 1.0 && keeps_factors(o.preconditioner))
    note(
        "drop_weighting_factor_on_gsquare has no effect with beta2 1 (the weight is already 1 "
        "and there is no bias correction).");
  if (o.weight_decay == 0.0 && o.weight_decay_type != d.weight_decay_type)
    note("weight_decay_type ", weight_decay_name(o.weight_decay_type),
         " has no effect with weight_decay 0.");
  GraftingConfig const g = o.grafting;
  bool const uses_beta2 = g.type == GraftingType::rmsprop || g.type == GraftingType::adam;
  bool const uses_epsilon = uses_beta2 || g.type == GraftingType::adagrad;
  if (!uses_beta2 && g.drop_weighting_factor_on_gsquare)
    note("grafting drop_weighting_factor_on_gsquare has no effect with ", grafting_name(g.type),
         " grafting (rmsprop and adam use it).");
  if (!uses_beta2 && g.beta2 != 1.0)
    note("grafting beta2 ", g.beta2, " has no effect with ", grafting_name(g.type),
         " grafting (rmsprop and adam use it).");
  if (!uses_epsilon && g.epsilon != GraftingConfig{}.epsilon)
    note("grafting epsilon ", g.epsilon, " has no effect with ", grafting_name(g.type),
         " grafting (adagrad, rmsprop and adam use it).");
  NewtonSchulzConfig const ns_default{};
  bool const ns_set = o.newton_schulz.num_iterations != ns_default.num_iterations ||
                      o.newton_schulz.a != ns_default.a || o.newton_schulz.b != ns_default.b ||
                      o.newton_schulz.c != ns_default.c ||
                      static_cast<bool>(o.newton_schulz.scale_by_dims);
  bool const spectral = o.preconditioner == PreconditionerType::spectral_descent;
  if (!spectral && o.orthogonalization != d.orthogonalization)
    note("orthogonalization ", orthogonalization_name(o.orthogonalization), " has no effect with ",
         preconditioner_name(o.preconditioner), " (spectral descent uses it).");
  if (!spectral && ns_set)
    note("the newton_schulz settings have no effect with ", preconditioner_name(o.preconditioner),
         " (spectral descent uses them).");
  if (spectral && ns_set && o.orthogonalization != OrthogonalizationMethod::newton_schulz)
    note("the newton_schulz settings have no effect with ",
         orthogonalization_name(o.orthogonalization),
         " orthogonalization (Newton-Schulz orthogonalization uses them).");
  bool const svd_set = o.svd.scale_by_nuclear_norm || static_cast<bool>(o.svd.scale_by_dims);
  if (!spectral && svd_set)
    note("the svd settings have no effect with ", preconditioner_name(o.preconditioner),
         " (spectral descent uses them).");
  if (spectral && svd_set && o.orthogonalization != OrthogonalizationMethod::svd)
    note("the svd settings have no effect with ", orthogonalization_name(o.orthogonalization),
         " orthogonalization (SVD orthogonalization uses them).");
  IterateAveragingConfig const& av = o.averaging;
  IterateAveragingConfig const av_default{};
  if (av.type != AveragingType::generalized_primal &&
      av.eval_interp_coeff != av_default.eval_interp_coeff)
    note("eval_interp_coeff ", av.eval_interp_coeff, " has no effect with iterate averaging ",
         averaging_name(av.type), " (generalized primal averaging uses it).");
  if (av.type != AveragingType::schedule_free &&
      av.eval_coeff_lr_power != av_default.eval_coeff_lr_power)
    note("eval_coeff_lr_power ", av.eval_coeff_lr_power, " has no effect with iterate averaging ",
         averaging_name(av.type), " (schedule-free uses it).");
  if (av.type == AveragingType::none && av.train_interp_coeff != av_default.train_interp_coeff)
    note("train_interp_coeff ", av.train_interp_coeff, " has no effect without iterate averaging.");
  if (!o.ignored_basis_change_dims.empty() &&
      o.preconditioner != PreconditionerType::eigenvalue_corrected)
    note("ignored_basis_change_dims has no effect with ", preconditioner_name(o.preconditioner),
         " (eigenvalue-corrected Shampoo uses it).");
  if (o.keep_rotated_filtered_grad && o.preconditioner != PreconditionerType::eigenvalue_corrected)
    note("keep_rotated_filtered_grad has no effect with ", preconditioner_name(o.preconditioner),
         " (eigenvalue-corrected Shampoo uses it).");
  else if (o.keep_rotated_filtered_grad && o.beta1 == 0.0)
    note(
        "keep_rotated_filtered_grad has no effect with beta1 0: the direction is the gradient, "
        "whose rotation the corrected eigenvalues already compute.");
  if (o.kl_shampoo && !keeps_factors(o.preconditioner))
    note("kl_shampoo has no effect with ", preconditioner_name(o.preconditioner),
         " (shampoo, eigendecomposed and eigenvalue-corrected Shampoo use it).");
  EigendecompositionConfig const& ed = o.root.eigendecomposition;
  EigendecompositionConfig const ed_default{};
  if (!decomposes_factors(o.preconditioner) &&
      (ed.method != ed_default.method || ed.tolerance != ed_default.tolerance ||
       ed.max_iterations != ed_default.max_iterations))
    note("the eigendecomposition settings (", eigendecomposition_name(ed.method), ", tolerance ",
         ed.tolerance, ", max_iterations ", ed.max_iterations, ") have no effect with ",
         preconditioner_name(o.preconditioner),
         " (eigenvalue-corrected and eigendecomposed Shampoo use them).");
  else if (ed.method == EigendecompositionMethod::eigh &&
           ed.max_iterations != ed_default.max_iterations)
    note("eigendecomposition max_iterations ", ed.max_iterations,
         " has no effect with eigh (the QR iteration uses it).");
  if (o.preconditioner == PreconditionerType::eigenvalue_corrected) {
    // Eigenvectors come from eigh alone; inverse_exponent_override is the corrected eigenvalues'
    // power.
    std::vector<std::string> set;
    if (o.root.method != d.root.method) set.emplace_back("root method coupled Newton");
    EigenConfig const& re = o.root.eigen;
    if (re.pseudo_inverse || re.rank_atol != 0.0 || re.rank_rtol != 0.0 ||
        re.perturb_before_computation != d.root.eigen.perturb_before_computation ||
        re.retry_double_precision != d.root.eigen.retry_double_precision)
      set.emplace_back("the eigen root settings");
    if (o.use_trace_scaling) set.emplace_back("use_trace_scaling");
    if (!set.empty()) {
      std::string list = set[0];
      for (std::size_t i = 1; i < set.size(); ++i) list += ", " + set[i];
      note(list, set.size() == 1 ? " has" : " have",
           " no effect with eigenvalue-corrected Shampoo, which computes eigenvectors, not "
           "roots.");
    }
    return out;
  }
  if (!takes_roots(o.preconditioner)) {
    // Every setting of the factors and their roots.
    std::vector<std::string> set;
    auto add = [&](auto const&... pieces) { set.push_back(detail::sentence(pieces...)); };
    if (o.beta2 != d.beta2) add("beta2 ", o.beta2);
    if (o.epsilon != d.epsilon) add("epsilon ", o.epsilon);
    if (o.precondition_frequency != d.precondition_frequency)
      add("precondition_frequency ", o.precondition_frequency);
    if (!o.inverse_exponent_override.empty()) add("inverse_exponent_override");
    if (o.root.method != d.root.method) add("root method coupled Newton");
    EigenConfig const& re = o.root.eigen;
    if (re.pseudo_inverse || re.rank_atol != 0.0 || re.rank_rtol != 0.0 ||
        re.perturb_before_computation != d.root.eigen.perturb_before_computation ||
        re.retry_double_precision != d.root.eigen.retry_double_precision ||
        o.root.coupled_newton.max_iterations != d.root.coupled_newton.max_iterations ||
        o.root.coupled_newton.tolerance != d.root.coupled_newton.tolerance)
      add("the eigen or coupled Newton root settings");
    if (o.factor_matrix_dtype != d.factor_matrix_dtype)
      add("factor_matrix_dtype ", dtype_name(o.factor_matrix_dtype));
    if (o.use_symmetric_packing) add("use_symmetric_packing");
    if (o.drop_weighting_factor_on_gsquare) add("drop_weighting_factor_on_gsquare");
    if (o.use_trace_scaling) add("use_trace_scaling");
    if (o.num_tolerated_failed_amortized_computations !=
        d.num_tolerated_failed_amortized_computations)
      add("num_tolerated_failed_amortized_computations ",
          o.num_tolerated_failed_amortized_computations);
    if (!set.empty()) {
      std::string list = set[0];
      for (std::size_t i = 1; i < set.size(); ++i) list += ", " + set[i];
      note(list, set.size() == 1 ? " has" : " have", " no effect with ",
           preconditioner_name(o.preconditioner), ", which keeps no factors.");
    }
    return out;
  }
  EigenConfig const& e = o.root.eigen;
  CoupledNewtonConfig const& n = o.root.coupled_newton;
  if (o.preconditioner == PreconditionerType::eigendecomposed) {
    // The eigen settings apply whatever the root method says.
    if (o.root.method != d.root.method ||
        n.max_iterations != d.root.coupled_newton.max_iterations ||
        n.tolerance != d.root.coupled_newton.tolerance)
      note(
          "the root method coupled Newton and its settings have no effect with eigendecomposed "
          "Shampoo, which decomposes the factors.");
    if (!e.pseudo_inverse && (e.rank_atol != 0.0 || e.rank_rtol != 0.0))
      note("rank_atol ", e.rank_atol, " and rank_rtol ", e.rank_rtol,
           " have no effect without the pseudo-inverse.");
    if (e.pseudo_inverse && !e.perturb_before_computation)
      note(
          "perturb_before_computation false has no effect with the pseudo-inverse, which never "
          "perturbs.");
    return out;
  }
  // No default: a new method must say which settings it reads.
  switch (o.root.method) {
    case RootMethod::eigen:
      if (n.max_iterations != d.root.coupled_newton.max_iterations ||
          n.tolerance != d.root.coupled_newton.tolerance)
        note("coupled Newton's max_iterations ", n.max_iterations, " and tolerance ", n.tolerance,
             " have no effect with the eigen root method.");
      if (!e.pseudo_inverse && (e.rank_atol != 0.0 || e.rank_rtol != 0.0))
        note("rank_atol ", e.rank_atol, " and rank_rtol ", e.rank_rtol,
             " have no effect without the pseudo-inverse.");
      if (e.pseudo_inverse && !e.perturb_before_computation)
        note(
            "perturb_before_computation false has no effect with the pseudo-inverse, which "
            "never perturbs.");
      break;
    case RootMethod::coupled_newton:
      if (e.pseudo_inverse || e.rank_atol != 0.0 || e.rank_rtol != 0.0 ||
          e.perturb_before_computation != d.root.eigen.perturb_before_computation ||
          e.retry_double_precision != d.root.eigen.retry_double_precision)
        note("the eigen root settings (pseudo_inverse ", e.pseudo_inverse, ", rank_atol ",
             e.rank_atol, ", rank_rtol ", e.rank_rtol, ", perturb_before_computation ",
             e.perturb_before_computation, ", retry_double_precision ", e.retry_double_precision,
             ") have no effect with the coupled Newton root method.");
      break;
  }
  return out;
}

// Throws tessel::Error naming the first invalid hyper-parameter and its value.
inline void validate(Options const& o) {
  auto bad = [](auto const&... pieces) {
    tessel::detail::throw_error(detail::sentence(pieces...));
  };
  // NaN fails every comparison below, so each check is written as "must hold".
  if (!(o.lr >= 0.0)) bad("lr must be >= 0, got ", o.lr, ".");
  if (!(o.beta1 >= 0.0 && o.beta1 < 1.0)) bad("beta1 must be in [0, 1), got ", o.beta1, ".");
  if (!(o.beta2 >= 0.0 && o.beta2 <= 1.0)) bad("beta2 must be in [0, 1], got ", o.beta2, ".");
  if (!(o.beta3 == -1.0 || (o.beta3 >= 0.0 && o.beta3 < 1.0)))
    bad("beta3 must be -1 (equal to beta1) or in [0, 1), got ", o.beta3, ".");
  if ((o.root.method == RootMethod::eigen ||
       o.preconditioner == PreconditionerType::eigendecomposed) &&
      o.root.eigen.pseudo_inverse) {
    if (o.epsilon != 0.0)
      bad("epsilon must be 0 when the pseudo-inverse is used, got ", o.epsilon, ".");
  } else if (!(o.epsilon > 0.0 && std::isfinite(o.epsilon))) {
    bad("epsilon must be > 0, got ", o.epsilon, ".");
  }
  if (!(o.momentum >= 0.0 && o.momentum < 1.0))
    bad("momentum must be in [0, 1), got ", o.momentum, ".");
  if (!(o.dampening >= 0.0 && o.dampening < 1.0))
    bad("dampening must be in [0, 1), got ", o.dampening, ".");
  if (!(o.weight_decay >= 0.0)) bad("weight_decay must be >= 0, got ", o.weight_decay, ".");
  bool known_decay = false;
  switch (o.weight_decay_type) {
    case WeightDecayType::decoupled:
    case WeightDecayType::l2:
      known_decay = true;
      break;
    case WeightDecayType::corrected:
    case WeightDecayType::independent:
      if (!(o.lr > 0.0))
        bad("lr must be > 0 with ", weight_decay_name(o.weight_decay_type),
            " weight decay, which divides by the lr the optimizer is built with, got ", o.lr, ".");
      known_decay = true;
      break;
  }
  if (!known_decay)
    bad("weight_decay_type ", static_cast<int>(o.weight_decay_type), " is not a WeightDecayType.");
  if (o.use_trace_scaling && !(o.trace_scaling_exponent > 0.0 && o.trace_scaling_exponent <= 1.0))
    bad("trace_scaling_exponent must be in (0, 1] with use_trace_scaling, got ",
        o.trace_scaling_exponent, ".");
  if (o.precondition_frequency < 1)
    bad("precondition_frequency must be >= 1, got ", o.precondition_frequency, ".");
  if (o.start_preconditioning_step < -1)
    bad("start_preconditioning_step must be >= -1, got ", o.start_preconditioning_step, ".");
  bool known_preconditioner = false;
  switch (o.preconditioner) {
    case PreconditionerType::shampoo:
    case PreconditionerType::eigenvalue_corrected:
    case PreconditionerType::eigendecomposed:
      if (resolved_start_step(o) < o.precondition_frequency)
        bad("start_preconditioning_step must be >= precondition_frequency (",
            o.precondition_frequency, "), got ", o.start_preconditioning_step, ".");
      known_preconditioner = true;
      break;
    case PreconditionerType::spectral_descent:
    case PreconditionerType::sign_descent:
      if (o.start_preconditioning_step == 0)
        bad("start_preconditioning_step must be >= 1 or -1, got 0.");
      known_preconditioner = true;
      break;
  }
  if (!known_preconditioner)
    bad("preconditioner ", static_cast<int>(o.preconditioner), " is not a PreconditionerType.");
  IterateAveragingConfig const& av = o.averaging;
  bool known_averaging = false;
  switch (av.type) {
    case AveragingType::none:
      known_averaging = true;
      break;
    case AveragingType::generalized_primal:
      if (!(av.eval_interp_coeff >= 0.0 && av.eval_interp_coeff < 1.0))
        bad("eval_interp_coeff must be in [0, 1), got ", av.eval_interp_coeff, ".");
      [[fallthrough]];
    case AveragingType::schedule_free:
      if (!(av.train_interp_coeff > 0.0 && av.train_interp_coeff <= 1.0))
        bad("train_interp_coeff must be in (0, 1], got ", av.train_interp_coeff, ".");
      if (!std::isfinite(av.eval_coeff_lr_power))
        bad("eval_coeff_lr_power must be finite, got ", av.eval_coeff_lr_power, ".");
      if (o.momentum != 0.0)
        bad("momentum ", o.momentum, " and iterate averaging ", averaging_name(av.type),
            " exclude each other (Distributed Shampoo's iterate_averaging_config is one of "
            "them); set momentum 0.");
      known_averaging = true;
      break;
  }
  if (!known_averaging)
    bad("iterate averaging type ", static_cast<int>(av.type), " is not an AveragingType.");
  bool known_orthogonalization = false;
  switch (o.orthogonalization) {
    case OrthogonalizationMethod::newton_schulz:
    case OrthogonalizationMethod::svd:
      known_orthogonalization = true;
      break;
  }
  if (!known_orthogonalization)
    bad("orthogonalization ", static_cast<int>(o.orthogonalization),
        " is not an OrthogonalizationMethod.");
  NewtonSchulzConfig const& ns = o.newton_schulz;
  if (ns.num_iterations < 0)
    bad("newton_schulz num_iterations must be >= 0, got ", ns.num_iterations, ".");
  if (!(std::isfinite(ns.a) && std::isfinite(ns.b) && std::isfinite(ns.c)))
    bad("newton_schulz coefficients must be finite, got (", ns.a, ", ", ns.b, ", ", ns.c, ").");
  // No default: a new enumerator is a compile error here; a value outside the enumeration (a cast)
  // matches no case and is refused after the switch.
  bool known_grafting = false;
  switch (o.grafting.type) {
    case GraftingType::none:
    case GraftingType::sgd:
      known_grafting = true;
      break;
    case GraftingType::rmsprop:
    case GraftingType::adam:
      if (!(o.grafting.beta2 > 0.0 && o.grafting.beta2 <= 1.0))
        bad("grafting beta2 must be in (0, 1], got ", o.grafting.beta2, ".");
      [[fallthrough]];
    case GraftingType::adagrad:
      if (!(o.grafting.epsilon > 0.0))
        bad("grafting epsilon must be > 0, got ", o.grafting.epsilon, ".");
      known_grafting = true;
      break;
  }
  if (!known_grafting)
    bad("grafting type ", static_cast<int>(o.grafting.type), " is not a GraftingType.");
  // Both maps name a block mode by (order, dimension), as Distributed Shampoo does; a 0-D block
  // counts as having the one dimension 0.
  auto check_order = [&](char const* name, index_t order) {
    if (order < 0) bad(name, " has the order ", order, "; orders must be >= 0.");
  };
  auto check_dim = [&](char const* name, index_t order, index_t dim) {
    index_t const last = order > 1 ? order - 1 : 0;
    if (dim < 0 || dim > last)
      bad(name, "[", order, "] names dimension ", dim, "; dimensions must be in [0, ", last, "].");
  };
  bool const corrected_eigenvalues = o.preconditioner == PreconditionerType::eigenvalue_corrected;
  for (auto const& [order, value] : o.inverse_exponent_override) {
    check_order("inverse_exponent_override", order);
    if (auto const* all = std::get_if<double>(&value)) {
      if (corrected_eigenvalues && !(*all > 0.0))
        bad("inverse_exponent_override[", order, "] is ", *all,
            "; eigenvalue-corrected Shampoo raises its corrected eigenvalues to this power, which "
            "must be > 0.");
      if (!(*all >= 0.0))
        bad("inverse_exponent_override[", order, "] is ", *all, "; exponents must be >= 0.");
    } else {
      if (corrected_eigenvalues)
        bad("inverse_exponent_override[", order,
            "] gives per-dimension exponents, but eigenvalue-corrected Shampoo takes one exponent "
            "per order (the power of its corrected eigenvalues).");
      for (auto const& [dim, e] : std::get<std::map<index_t, double>>(value)) {
        check_dim("inverse_exponent_override", order, dim);
        if (!(e >= 0.0))
          bad("inverse_exponent_override[", order, "][", dim, "] is ", e,
              "; exponents must be >= 0.");
      }
    }
  }
  for (auto const& [order, dims] : o.ignored_basis_change_dims) {
    check_order("ignored_basis_change_dims", order);
    for (std::size_t i = 0; i < dims.size(); ++i) {
      check_dim("ignored_basis_change_dims", order, dims[i]);
      for (std::size_t j = 0; j < i; ++j)
        if (dims[j] == dims[i])
          bad("ignored_basis_change_dims[", order, "] names dimension ", dims[i],
              " twice; each dimension once.");
    }
  }
  if (o.root.method == RootMethod::coupled_newton) {
    if (o.root.coupled_newton.max_iterations < 1)
      bad("coupled Newton max_iterations must be >= 1, got ", o.root.coupled_newton.max_iterations,
          ".");
    if (!(o.root.coupled_newton.tolerance > 0.0))
      bad("coupled Newton tolerance must be > 0, got ", o.root.coupled_newton.tolerance, ".");
  } else if (o.root.method != RootMethod::eigen) {
    bad("root method ", static_cast<int>(o.root.method), " is not a RootMethod.");
  }
  EigendecompositionConfig const& ed = o.root.eigendecomposition;
  bool known_eigendecomposition = false;
  switch (ed.method) {
    case EigendecompositionMethod::eigh:
    case EigendecompositionMethod::qr:
      known_eigendecomposition = true;
      break;
  }
  if (!known_eigendecomposition)
    bad("eigendecomposition method ", static_cast<int>(ed.method),
        " is not an EigendecompositionMethod.");
  if (!(ed.tolerance >= 0.0 && ed.tolerance <= 1.0))
    bad("eigendecomposition tolerance must be in [0, 1], got ", ed.tolerance, ".");
  if (ed.max_iterations < 0)
    bad("eigendecomposition max_iterations must be >= 0, got ", ed.max_iterations, ".");
  if (!(o.root.eigen.rank_atol >= 0.0))
    bad("rank_atol must be >= 0, got ", o.root.eigen.rank_atol, ".");
  if (!(o.root.eigen.rank_rtol >= 0.0))
    bad("rank_rtol must be >= 0, got ", o.root.eigen.rank_rtol, ".");
  if (o.factor_matrix_dtype != DType::bf16 && o.factor_matrix_dtype != DType::f16 &&
      o.factor_matrix_dtype != DType::f32 && o.factor_matrix_dtype != DType::f64)
    bad("factor_matrix_dtype must be bf16, f16, f32 or f64, got ",
        dtype_name(o.factor_matrix_dtype), ".");
  if (o.num_tolerated_failed_amortized_computations < 0)
    bad("num_tolerated_failed_amortized_computations must be >= 0, got ",
        o.num_tolerated_failed_amortized_computations, ".");
}

}  // namespace tessel::shampoo
