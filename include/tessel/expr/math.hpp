// Elementwise math functions: exp, log, tanh, sqrt, pow, abs, sign. The transcendental ones compute
// in the operand's floating type (double for integers, as std::exp(int) does; float for half /
// bfloat16).
#pragma once

#include <utility>

#include "map.hpp"
#include "scalar_math.hpp"

namespace tessel {

namespace ops {

struct Exp {
  template <class A>
  TESSEL_HOST_DEVICE floating_t<A> operator()(A a) const {
    return math::exp(static_cast<floating_t<A>>(a));
  }
};
struct Log {
  template <class A>
  TESSEL_HOST_DEVICE floating_t<A> operator()(A a) const {
    return math::log(static_cast<floating_t<A>>(a));
  }
};
struct Tanh {
  template <class A>
  TESSEL_HOST_DEVICE floating_t<A> operator()(A a) const {
    return math::tanh(static_cast<floating_t<A>>(a));
  }
};
struct Sqrt {
  template <class A>
  TESSEL_HOST_DEVICE floating_t<A> operator()(A a) const {
    return math::sqrt(static_cast<floating_t<A>>(a));
  }
};
// a^p for a run-time scalar p (torch.pow(a, p)), in a's floating type.
struct Pow {
  double exponent;
  template <class A>
  TESSEL_HOST_DEVICE floating_t<A> operator()(A a) const {
    using F = floating_t<A>;
    return math::pow(static_cast<F>(a), static_cast<F>(exponent));
  }
};
struct Abs {
  template <class A>
  TESSEL_HOST_DEVICE constexpr A operator()(A a) const {
    return math::abs(a);
  }
};

// -1, 0 or 1 (torch.sign): zeros keep their sign bit and NaN stays NaN (both return a itself).
struct Sign {
  template <class A>
  TESSEL_HOST_DEVICE constexpr A operator()(A a) const {
    return a > A(0) ? A(1) : (a < A(0) ? A(-1) : a);
  }
};

}  // namespace ops

template <ArrayOperand A>
auto exp(A&& a) {
  return detail::make_map(ops::Exp{}, std::forward<A>(a));
}
template <ArrayOperand A>
auto log(A&& a) {
  return detail::make_map(ops::Log{}, std::forward<A>(a));
}
template <ArrayOperand A>
auto tanh(A&& a) {
  return detail::make_map(ops::Tanh{}, std::forward<A>(a));
}
template <ArrayOperand A>
auto sqrt(A&& a) {
  return detail::make_map(ops::Sqrt{}, std::forward<A>(a));
}
template <ArrayOperand A>
auto pow(A&& a, double exponent) {
  return detail::make_map(ops::Pow{exponent}, std::forward<A>(a));
}
template <ArrayOperand A>
auto abs(A&& a) {
  return detail::make_map(ops::Abs{}, std::forward<A>(a));
}
template <ArrayOperand A>
auto sign(A&& a) {
  return detail::make_map(ops::Sign{}, std::forward<A>(a));
}

}  // namespace tessel
