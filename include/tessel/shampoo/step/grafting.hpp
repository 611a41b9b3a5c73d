// The grafting rule, in one place: which grafted methods keep a diagonal accumulator, their
// constants at a step (AdaGrad sums, RMSprop and Adam average, Adam bias-corrects), the
// accumulator update a <- beta2 a + w g^2, and the grafted direction g / (sqrt(a / bc2) + eps)
// (SGD: g itself). The step rescales each block's Shampoo direction to the norm of this direction,
// or uses it alone before preconditioning starts.
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
  T beta2 = 1;                 // a <- beta2 a + weight g^2
  T weight = 1;
  T inv_bias_correction2 = 1;  // Adam: 1 / (1 - beta2^step)
  T epsilon = 0;
};

template <class T>
GraftingScalars<T> grafting_scalars(GraftingConfig const& g, index_t step) {
  GraftingScalars<T> s;
  s.epsilon = T(g.epsilon);
  switch (g.type) {
    case GraftingType::none:
    case GraftingType::sgd:
    case GraftingType::adagrad:
      return s;
    case GraftingType::rmsprop:
      s.beta2 = T(g.beta2);
      s.weight = T(1.0 - g.beta2);
      return s;
    case GraftingType::adam:
      s.beta2 = T(g.beta2);
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

// f(direction): the grafted direction of the (filtered) gradient x as an expression, given the
// accumulator a (unused by SGD). @pre t != none
template <class A, class G, class T, class F>
void with_grafting_direction(GraftingType t, A const& a, G const& x, GraftingScalars<T> const& s,
                             F&& f) {
  switch (t) {
    case GraftingType::sgd:
      f(x);
      return;
    case GraftingType::adagrad:
    case GraftingType::rmsprop:
    case GraftingType::adam:
      f(x / (sqrt(a * s.inv_bias_correction2) + s.epsilon));
      return;
    case GraftingType::none:
      break;
  }
  tessel::detail::throw_error(tessel::detail::sentence(
      "grafting type ", static_cast<int>(t), " has no grafted direction."));
}

}  // namespace tessel::shampoo
