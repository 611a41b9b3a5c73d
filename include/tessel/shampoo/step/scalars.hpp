// The constants of one Shampoo step, computed once on the host from the options and the step
// number: weight decay (L2 into the gradient or decoupled into the update), the filtered
// gradient's betas and bias correction, the factors' beta2 and weight, the bias correction of the
// roots, whether this step recomputes them (amortized) or grafts alone (before preconditioning
// starts), the grafting constants (grafting.hpp) and the update's momentum constants.
#pragma once

#include <cmath>

#include "../options.hpp"
#include "grafting.hpp"

namespace tessel::shampoo {

template <class T>
struct StepScalars {
  T l2 = 0;         // gradient += l2 * parameter
  T decoupled = 0;  // update += decoupled * parameter
  T beta1 = 0, beta3 = 0, inv_bias1 = 1;
  T beta2 = 1, weight = 1;  // F <- beta2 F + weight G x G
  double bias_correction2 = 1.0;
  bool amortized = false;      // recompute the inverse roots at this step
  bool grafting_only = false;  // before preconditioning starts: the grafted direction alone
  GraftingScalars<T> grafting{};
  T lr = 0;
  T momentum = 0, dampening = 0;
  bool nesterov = false;
};

// The coefficient of the parameter in the update (decoupled, corrected and independent decay) or
// in the gradient (l2), at learning rate o.lr; peak_lr is the lr the optimizer was built with.
inline double decay_coefficient(Options const& o, double peak_lr) {
  switch (o.weight_decay_type) {
    case WeightDecayType::decoupled:
    case WeightDecayType::l2:
      return o.weight_decay;
    case WeightDecayType::corrected:
      return o.weight_decay * o.lr / peak_lr;
    case WeightDecayType::independent:
      return o.weight_decay / peak_lr;
  }
  return o.weight_decay;  // unreachable: validate() refuses other values
}

// The scalars of step number `step` (counted from 1); peak_lr as in decay_coefficient.
template <class T>
StepScalars<T> step_scalars(Options const& o, index_t step, double peak_lr) {
  StepScalars<T> s;
  bool const l2 = o.weight_decay_type == WeightDecayType::l2;
  double const decay = decay_coefficient(o, peak_lr);
  s.l2 = l2 ? T(decay) : T(0);
  s.decoupled = l2 ? T(0) : T(decay);
  s.beta1 = T(o.beta1);
  s.beta3 = T(resolved_beta3(o));
  auto const t = static_cast<double>(step);
  if (o.use_bias_correction && o.beta1 != 0.0)
    s.inv_bias1 = T(1.0 / (1.0 - resolved_beta3(o) * std::pow(o.beta1, t - 1.0)));
  s.beta2 = T(o.beta2);
  bool const unweighted = o.beta2 == 1.0 || o.drop_weighting_factor_on_gsquare;
  s.weight = unweighted ? T(1) : T(1.0 - o.beta2);
  if (o.use_bias_correction && !unweighted) s.bias_correction2 = 1.0 - std::pow(o.beta2, t);
  index_t const start = resolved_start_step(o);
  s.amortized = (step % o.precondition_frequency == 0 && step > start) || step == start;
  s.grafting_only = step < start && o.grafting.type != GraftingType::none;
  s.grafting = grafting_scalars<T>(o.grafting, step);
  s.lr = T(o.lr);
  s.momentum = T(o.momentum);
  s.dampening = T(o.dampening);
  s.nesterov = o.use_nesterov;
  return s;
}

}  // namespace tessel::shampoo
