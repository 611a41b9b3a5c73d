// Sign descent (Distributed Shampoo's SignDescentPreconditionerConfig with its default scale 1):
// every block moves along sign(x), x its (filtered) gradient. No factors, no roots; grafting,
// momentum and weight decay apply as to every family. Reads no option of its own.
#pragma once

#include "../../expr/math.hpp"
#include "../step/context.hpp"

namespace tessel::shampoo {

struct SignDescent {
  static constexpr PreconditionerType type = PreconditionerType::sign_descent;
  static constexpr bool kl = false;

  template <class T, class X>
  struct State {};

  template <class T, class X>
  void init(StepContext<T, X> const&, GroupState<T, X> const&, State<T, X>&) const {}

  template <class T, class X>
  void accumulate(StepContext<T, X> const&, GroupState<T, X>&, State<T, X>&,
                  StepScalars<T> const&) const {}

  template <class T, class X>
  T* direction(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>&, T* x,
               StepScalars<T> const&) const {
    index_t const n = g.count * g.numel;
    assign(StepContext<T, X>::flat(g.search.data(), n), sign(StepContext<T, X>::flat(x, n)),
           c.executor);
    return g.search.data();
  }

  template <class T, class X, class F>
  void for_each_buffer(StepContext<T, X> const&, GroupState<T, X> const&, State<T, X> const&,
                       F&&) const {}
};

}  // namespace tessel::shampoo
