// What a preconditioner family is: the type that turns a batch group's (filtered) gradient into
// its search direction, with the state and the amortized work that takes. The optimizer
// (basic_shampoo.hpp) is the composition of one family with the parts every family shares
// (gradient filtering, grafting, momentum, weight decay, iterate averaging, the overflow pre-check,
// state dictionaries), and instantiates only the family it names: a program that steps SOAP
// compiles no inverse roots. docs/shampoo.md, "Writing a preconditioner", walks through one.
//
// A family F is a small copyable type (its settings are in Options; it reads the ones its header
// lists) with
//   F::type, F::kl                    the PreconditionerType and kl_shampoo that choose it at run
//                                     time (the state file and Options name it so)
//   F::State<T, X>                    what it keeps per batch group, in exec::Memory<X>; a family
//                                     that accumulates Kronecker factors keeps them as `factors`
//                                     (kronecker_factors.hpp), which the pre-check bounds
//   init(c, g, s)                     allocates s for group g (refusing a block it cannot step)
//   accumulate(c, g, s, scalars)      this step's statistics, and on amortized steps
//                                     (scalars.amortized) its amortized work; a slot that fails
//                                     writes its sentence to g.errors
//   direction(c, g, s, x, scalars)    the direction of x ((count, block...) at x), written to g's
//                                     search or spare buffer (or x itself); returns where it is
//   for_each_buffer(c, g, s, f)       f(StateBuffer) for each buffer of s that a state dictionary
//                                     holds, keyed under [param, "block_i", tail...]
// and optionally
//   prepare_factor_inputs(c, g, s)    before the pre-check: what its factors will accumulate
//   factor_input(g, s, j)             where factor j's input is (default: the gradient)
//   invalidate(s)                     state derived from other state is stale (a loaded state, a
//                                     block skipped this step)
// c is the StepContext (step/context.hpp), g the group's shared state (state/group_state.hpp).
#pragma once

#include <concepts>
#include <cstddef>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"
#include "../step/context.hpp"
#include "../step/scalars.hpp"
#include "kronecker_factors.hpp"

namespace tessel::shampoo {

template <class F, class T = float, class X = exec::Auto>
concept Preconditioner = std::copy_constructible<F> &&
    requires(F const& f, StepContext<T, X> const& c, GroupState<T, X>& g,
             typename F::template State<T, X>& s, StepScalars<T> const& sc, T* x) {
  { F::kl } -> std::convertible_to<bool>;
  f.init(c, g, s);
  f.accumulate(c, g, s, sc);
  { f.direction(c, g, s, x, sc) } -> std::same_as<T*>;
  f.for_each_buffer(c, g, s, [](StateBuffer const&) {});
};

// The optional members, with their defaults: the step calls these.
namespace family {

template <class F, class T, class X, class S>
T const* factor_input(F const& f, GroupState<T, X> const& g, S const& s, std::size_t j) {
  if constexpr (requires { f.factor_input(g, s, j); })
    return f.factor_input(g, s, j);
  else
    return g.grad.data();
}

template <class F, class T, class X, class S>
void prepare_factor_inputs(F const& f, StepContext<T, X> const& c, GroupState<T, X>& g, S& s) {
  if constexpr (requires { f.prepare_factor_inputs(c, g, s); }) f.prepare_factor_inputs(c, g, s);
}

template <class F, class S>
void invalidate(F const& f, S& s) {
  if constexpr (requires { f.invalidate(s); }) f.invalidate(s);
}

// The Kronecker factors of a family's state, or null for a family that keeps none.
template <class T, class X, class S>
KroneckerFactors<T, X>* kronecker(S& s) {
  if constexpr (requires { s.factors; })
    return &s.factors;
  else if constexpr (requires { s.kronecker(); })
    return s.kronecker();
  else
    return nullptr;
}
template <class T, class X, class S>
KroneckerFactors<T, X> const* kronecker(S const& s) {
  return kronecker<T, X>(const_cast<S&>(s));
}

}  // namespace family

}  // namespace tessel::shampoo
