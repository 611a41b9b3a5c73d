// The elementwise stages of a Shampoo step as tessel expressions, each one assignment (one pass,
// one kernel on CUDA) run by the executor. A stage takes tensor views: the block views of a
// segment of a parameter and the matching slots of its group's state (plan/geometry.hpp), or a
// group's state as one flat vector where blocks do not matter. The host executor's run of these
// assignments is the host twin of every device stage.
#pragma once

#include "../../expr/arithmetic.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/reduce.hpp"
#include "scalars.hpp"

namespace tessel::shampoo::stages {

// G = grad + l2 * param over a segment (the parameter is not read without L2 decay).
template <class X, class G, class Grad, class Param, class T>
void gather_gradient(X const& x, G const& g, Grad const& grad, Param const& param, T l2) {
  if (l2 != T(0))
    assign(g, grad + l2 * param, x);
  else
    assign(g, grad, x);
}

// The filtered gradient (flat): the direction (state + (1 - beta3) (g - state)) times the bias
// correction 1 / (1 - beta3 beta1^(t - 1)), then state <- state + (1 - beta1) (g - state). With
// beta3 == beta1 the direction is the new state times the correction, computed by the same
// expression (so the same bits) from the old state.
template <class X, class S, class G, class D, class T>
void filter_gradient(X const& x, S const& state, G const& g, D const& direction,
                     StepScalars<T> const& s) {
  assign(direction, (state + (T(1) - s.beta3) * (g - state)) * s.inv_bias1, x);
  assign(state, state + (T(1) - s.beta1) * (g - state), x);
}

// The grafting accumulator (flat): a <- beta2 a + weight g^2.
template <class X, class A, class G, class T>
void accumulate_grafting(X const& x, A const& a, G const& g, StepScalars<T> const& s) {
  assign(a, grafting_accumulation(a, g, s.grafting), x);
}

// out(b) = the squared norm of row b of x (count, numel), in double.
template <class X, class Out, class Rows>
void squared_norms(X const& x, Out const& out, Rows const& rows) {
  assign(out, sum(cast<double>(rows) * cast<double>(rows), mode<1>), x);
}

// The grafting rescale (per slot): scale = |graft| / (|shampoo| + 1e-16), from squared norms.
template <class X, class Scale, class N, class T>
void grafting_scale(X const& x, Scale const& scale, N const& graft2, N const& shampoo2, T) {
  assign(scale, cast<T>(sqrt(graft2) / (sqrt(shampoo2) + 1e-16)), x);
}

// A block's update before momentum: the (scaled) direction plus decoupled weight decay.
template <class D, class Scale, class Param, class T>
auto plain_update(D const& direction, Scale const& scale, Param const& param,
                  StepScalars<T> const& s) {
  return direction * scale + s.decoupled * param;
}

// Momentum over a segment: m <- mu m + (1 - dampening) u, written to `out` (the momentum itself,
// or a distributed step's staging buffer).
template <class X, class Out, class M, class D, class Scale, class Param, class T>
void advance_momentum(X const& x, Out const& out, M const& momentum, D const& direction,
                      Scale const& scale, Param const& param, StepScalars<T> const& s) {
  assign(out,
         s.momentum * momentum + (T(1) - s.dampening) * plain_update(direction, scale, param, s),
         x);
}

// The update u a parameter moves by (-lr u) after momentum: m, or with Nesterov
// (1 - dampening) u + mu m; as one expression c_u u + c_m m.
template <class D, class Scale, class Param, class M, class T>
auto momentum_update(D const& direction, Scale const& scale, Param const& param, M const& momentum,
                     StepScalars<T> const& s) {
  T const c_u = s.nesterov ? T(1) - s.dampening : T(0);
  T const c_m = s.nesterov ? s.momentum : T(1);
  return c_u * plain_update(direction, scale, param, s) + c_m * momentum;
}

// w <- w - lr u over a segment, with u an update expression (plain_update / momentum_update) or
// the exchanged updates of a distributed step: the same expression everywhere, so every path
// rounds the same way.
template <class X, class Param, class U, class T>
void apply_update(X const& x, Param const& param, U const& update, T lr) {
  assign(param, param - lr * update, x);
}

}  // namespace tessel::shampoo::stages
