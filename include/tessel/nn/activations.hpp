// GELU (tanh form) and SwiGLU, forward and backward, as tessel expressions: lazy nodes built from
// the expression layer's arithmetic and tanh / exp, so they fuse into whatever assignment uses
// them (assign(h, nn::gelu(x + bias), executor) is one pass) and take the host's SIMD packet path
// (Eigen's packet tanh and exp) or the CUDA executor's elementwise kernel unchanged. Formulas and
// the order of their operations are PyTorch's (aten's GeluKernel and silu on the CPU), so float32
// results agree to rounding:
//   gelu(x)      = 0.5 x (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2 / pi)
//   gelu'(x)     = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2),  t = tanh(...)
//   silu(a)      = a / (1 + exp(-a))
//   silu'(a)     = s (1 + a (1 - s)),  s = 1 / (1 + exp(-a))
//   swiglu(a, b) = silu(a) b;  d/da = dy b silu'(a),  d/db = dy silu(a)
// Operands may be tensors or expressions; each is read where the formula needs it (the leaves
// repeat, the memory is read once per element pass). An owning temporary tensor is refused at
// compile time, as everywhere in expressions.
#pragma once

#include <utility>

#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../expr/arithmetic.hpp"
#include "../expr/assign.hpp"
#include "../expr/element.hpp"
#include "../expr/leaf.hpp"
#include "../expr/math.hpp"
#include "../tensor/tensor.hpp"
#include "detail/checks.hpp"

namespace tessel::nn {

namespace detail {

// The floating type an activation of e computes in (float for f32, half and bfloat16).
template <class E>
using activation_t = floating_t<typename E::value_type>;

// PyTorch's constants: kBeta = M_SQRT2 * M_2_SQRTPI * 0.5 and kKappa.
inline constexpr double gelu_beta = 0.7978845608028654;
inline constexpr double gelu_kappa = 0.044715;

}  // namespace detail

// GELU, tanh approximation (torch.nn.functional.gelu(x, approximate='tanh')).
template <ArrayOperand X>
auto gelu(X&& x) {
  auto const e = as_expr(std::forward<X>(x));
  using F = detail::activation_t<decltype(e)>;
  auto const inner = F(detail::gelu_beta) * (e + F(detail::gelu_kappa) * (e * e * e));
  return F(0.5) * e * (F(1) + tessel::tanh(inner));
}

// d gelu(x) / dx times dy (torch.ops.aten.gelu_backward(dy, x, approximate='tanh')).
template <ArrayOperand DY, ArrayOperand X>
auto gelu_backward(DY&& dy, X&& x) {
  auto const e = as_expr(std::forward<X>(x));
  auto const g = as_expr(std::forward<DY>(dy));
  using F = detail::activation_t<decltype(e)>;
  auto const t = tessel::tanh(F(detail::gelu_beta) * (e + F(detail::gelu_kappa) * (e * e * e)));
  auto const left_derivative = F(0.5) * (F(1) + t);
  auto const right_derivative = F(0.5) * e * (F(1) - t * t);
  auto const inner_derivative = F(detail::gelu_beta) * (F(1) + F(3 * detail::gelu_kappa) * (e * e));
  return g * (left_derivative + right_derivative * inner_derivative);
}

// SiLU (torch.nn.functional.silu): a * sigmoid(a), as a / (1 + exp(-a)).
template <ArrayOperand A>
auto silu(A&& a) {
  auto const e = as_expr(std::forward<A>(a));
  using F = detail::activation_t<decltype(e)>;
  return e / (F(1) + tessel::exp(-e));
}

// d silu(a) / da times dy (torch.ops.aten.silu_backward(dy, a)).
template <ArrayOperand DY, ArrayOperand A>
auto silu_backward(DY&& dy, A&& a) {
  auto const e = as_expr(std::forward<A>(a));
  using F = detail::activation_t<decltype(e)>;
  auto const s = F(1) / (F(1) + tessel::exp(-e));
  return as_expr(std::forward<DY>(dy)) * s * (F(1) + e * (F(1) - s));
}

// SwiGLU's gate: silu(a) * b (LLaMA's MLP, w2(silu(w1 x) * w3 x), between the two products).
template <ArrayOperand A, ArrayOperand B>
auto swiglu(A&& a, B&& b) {
  return silu(std::forward<A>(a)) * as_expr(std::forward<B>(b));
}

// da = dy * b * silu'(a) and db = dy * silu(a): two passes through the executor, after checking
// that every tensor has a's shape (tessel::Error naming both shapes, before anything is written).
// @pre da and db overlap none of a, b and dy (the second pass reads what the first would have
//      overwritten)
template <TensorType DA, TensorType DB, TensorType DY, TensorType A, TensorType B,
          exec::Executor Ex = exec::Auto>
void swiglu_backward(DA const& da, DB const& db, DY const& dy, A const& a, B const& b,
                     Ex const& executor = {}) {
  detail::check_spaces<Ex, DA, DB, DY, A, B>();
  detail::check_writable<DA, DB>();
  detail::check_same_shape("swiglu_backward", "b", b, "a", a);
  detail::check_same_shape("swiglu_backward", "dy", dy, "a", a);
  detail::check_same_shape("swiglu_backward", "da", da, "a", a);
  detail::check_same_shape("swiglu_backward", "db", db, "a", a);
  assign(da.view(), silu_backward(dy.view() * b.view(), a.view()), executor);
  assign(db.view(), dy.view() * silu(a.view()), executor);
}

}  // namespace tessel::nn
