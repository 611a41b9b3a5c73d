// The leaves of an expression: a tensor (by view: an owning tensor takes part through a view of
// its storage) and a scalar. as_expr turns any operand into a node.
#pragma once

#include <type_traits>
#include <utility>

#include "expression.hpp"

namespace tessel {

namespace detail {

// A tensor operand, held as a non-owning view.
template <TensorType V>
struct TensorLeaf : ExprBase {
  static_assert(!V::owning, "tessel: internal: a tensor leaf holds a view.");
  using tensor_type = V;
  using element_type = std::remove_cv_t<typename V::element_type>;
  static_assert(Element<element_type>,
                "tessel: expressions hold tensors of arithmetic, half or bfloat16 elements.");
  using value_type = compute_t<element_type>;
  static constexpr std::size_t rank = tensor_rank<V>();

  V tensor;
  ExprShape<rank> extents;

  explicit TensorLeaf(V const& v) : tensor(v), extents(logical_shape(v)) {}
  ExprShape<rank> const& shape() const noexcept { return extents; }
};

// A scalar operand (rank 0), stored in its compute type.
template <class T>
struct ScalarLeaf : ExprBase {
  using value_type = T;
  static constexpr std::size_t rank = 0;

  T value;

  explicit constexpr ScalarLeaf(T v) : value(v) {}
  ExprShape<0> shape() const noexcept { return {}; }
};

// A non-owning view of t. For an owning tensor it is built here, in host code: Tensor::view() is
// TESSEL_HOST_DEVICE and reaches the host-only storage engine, which nvcc rejects.
template <TensorType T>
auto view_of(T const& t) {
  if constexpr (T::owning) {
    using E = typename T::element_type;
    using V = ViewEngine<E, typename T::space>;
    auto const& engine = t.engine();
    return Tensor<V, typename T::layout_type>(V{engine.data(), engine.data(), engine.size()},
                                              t.layout());
  } else {
    return t;
  }
}

template <class T>
constexpr void refuse_owning_temporary_operand() {
  static_assert(!(OwningTensor<T> && !std::is_lvalue_reference_v<T>),
                "tessel: an expression would hold a view of an owning temporary tensor, which dies "
                "at the end of the statement; keep the owning tensor in a variable first.");
}

}  // namespace detail

// The node for an operand: an expression stays itself, a tensor becomes a leaf over its view, a
// scalar a scalar leaf in its compute type.
template <Operand X>
auto as_expr(X&& x) {
  using U = std::remove_cvref_t<X>;
  if constexpr (Expression<U>) {
    return U(x);
  } else if constexpr (TensorType<U>) {
    detail::refuse_owning_temporary_operand<X>();
    return detail::TensorLeaf<decltype(detail::view_of(x))>(detail::view_of(x));
  } else {
    return detail::ScalarLeaf<compute_t<U>>(load_element(x));
  }
}

namespace detail {

// The compute type of an operand.
template <class X>
using operand_value_t =
    typename decltype(as_expr(std::declval<std::remove_cvref_t<X>&>()))::value_type;

// An operand as a node, a scalar taking the type it adopts next to an array of compute type E.
template <class E, class X>
auto as_expr_next_to(X&& x) {
  if constexpr (ScalarOperand<X>) {
    using S = compute_t<std::remove_cvref_t<X>>;
    using T = promote_scalar_t<E, S>;
    return ScalarLeaf<T>(static_cast<T>(load_element(x)));
  } else {
    return as_expr(std::forward<X>(x));
  }
}

}  // namespace detail

}  // namespace tessel
