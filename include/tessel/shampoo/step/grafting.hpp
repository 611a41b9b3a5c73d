// The grafting rule, in one place: which grafted methods keep a diagonal accumulator, their
// constants at a step (AdaGrad sums, RMSprop and Adam average, Adam bias-corrects), the
// accumulator update a <- beta2 a + w g^2, and the grafted direction g / (sqrt(a / bc2) + eps)
// (SGD: g itself, as the same expression). The step rescales each block's Shampoo direction to the
// norm of this direction, or uses it alone before preconditioning starts.
#pragma once

#include <cmath>

#include "../../core/error.hpp"
#include "../../expr/arithmetic.hpp"
#include "../../expr/math.hpp"
#include "../options.hpp"

namespace tessel::shampoo {

// True for the grafted methods that keep a per-element accumulator (state key "adagrad").
constexpr bool keeps_grafting_state(GraftingType t) {
  switch (t) {
    case GraftingType::none:
    case GraftingType::sgd:
      return false;
    case GraftingType::adagrad:
    case GraftingType::rmsprop:
    case GraftingType::adam:
      return true;
  }
  return false;  // unreachable: validate() refuses other values
}

// The grafting constants of one step.
template <class T>
struct GraftingScalars {
  T beta2 = 1;  // a <- beta2 a + weight g^2
  T weight = 1;
  T inv_bias_correction2 = 1;  // Adam: 1 / (1 - beta2^step)
  T epsilon = 0;
};

template <class T>
GraftingScalars<T> grafting_scalars(GraftingConfig const& g, index_t step) {
  GraftingScalars<T> s;
  s.epsilon = T(g.epsilon);
  switch (g.type) {
    case GraftingType::sgd:
      s.inv_bias_correction2 = T(0);  // the direction is x / (sqrt(0) + 1) = x
      s.epsilon = T(1);
      return s;
    case GraftingType::none:
    case GraftingType::adagrad:
      return s;
    case GraftingType::rmsprop:
      s.beta2 = T(g.beta2);
      s.weight = g.drop_weighting_factor_on_gsquare ? T(1) : T(1.0 - g.beta2);
      return s;
    case GraftingType::adam:
      s.beta2 = T(g.beta2);
      // Without the (1 - beta2) weight the accumulator is no average: no bias correction either.
      if (g.drop_weighting_factor_on_gsquare) return s;
      s.weight = T(1.0 - g.beta2);
      s.inv_bias_correction2 = T(1.0 / (1.0 - std::pow(g.beta2, static_cast<double>(step))));
      return s;
  }
  return s;  // unreachable: validate() refuses other values
}

// The accumulator update as an expression: beta2 a + weight g^2.
template <class A, class G, class T>
auto grafting_accumulation(A const& a, G const& g, GraftingScalars<T> const& s) {
  return s.beta2 * a + s.weight * g * g;
}

// The grafted direction of the (filtered) gradient x as one expression for every method:
// x / (sqrt(a * inv_bias_correction2) + epsilon) with the accumulator a. SGD grafts x itself: the
// same formula with SGD's constants (grafting_scalars gives inv_bias_correction2 = 0 and
// epsilon = 1, so the divisor is exactly 1 and x / 1 is x bit for bit) and a = x (finite, so
// a * 0 is a zero): one instantiation serves every method.
// @pre the grafting type is not none; a is the accumulator, or x for SGD
template <class A, class G, class T>
auto grafting_direction(A const& a, G const& x, GraftingScalars<T> const& s) {
  return x / (sqrt(a * s.inv_bias_correction2) + s.epsilon);
}

}  // namespace tessel::shampoo
