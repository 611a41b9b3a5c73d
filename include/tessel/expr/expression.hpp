// What an expression is: a lazy node with a compute type, a rank and a run-time shape. Shapes
// combine by NumPy broadcasting; a mismatch throws tessel::Error naming both shapes.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../tensor/tensor.hpp"
#include "element.hpp"

namespace tessel {

namespace detail {
// Every expression node derives from this (empty) base.
struct ExprBase {};
}  // namespace detail

// A lazy expression node: has value_type (its compute type), rank, and shape().
template <class T>
concept Expression = std::derived_from<std::remove_cvref_t<T>, detail::ExprBase>;

// A tensor or an expression: what the user-facing functions take as array operands.
template <class T>
concept ArrayOperand = Expression<T> || TensorType<T>;

// A scalar operand (any arithmetic type, or a half / bfloat16 value).
template <class T>
concept ScalarOperand = Element<std::remove_cvref_t<T>>;

// Anything an elementwise operation accepts.
template <class T>
concept Operand = ArrayOperand<T> || ScalarOperand<T>;

// The extents of an expression's modes (a hierarchical tensor mode counts as one mode whose
// extent is its size).
template <std::size_t R>
using ExprShape = std::array<index_t, R>;

namespace detail {

template <std::size_t R>
constexpr index_t shape_size(ExprShape<R> const& s) {
  index_t n = 1;
  for (index_t x : s) n *= x;
  return n;
}

// NumPy broadcasting of two shapes, aligned at the last mode.
// @post each result extent equals the operands' extents where they are not 1
template <std::size_t A, std::size_t B>
ExprShape<(A > B ? A : B)> broadcast_shapes(ExprShape<A> const& a, ExprShape<B> const& b) {
  constexpr std::size_t R = A > B ? A : B;
  ExprShape<R> out{};
  // Two scalars (rank 0) have nothing to compare; nvcc would flag the loop's k + 0 >= 0.
  if constexpr (R > 0) {
    for (std::size_t k = 0; k != R; ++k) {
      index_t ea = k + A >= R ? a[k + A - R] : 1;
      index_t eb = k + B >= R ? b[k + B - R] : 1;
      if (ea != eb && ea != 1 && eb != 1)
        throw_error(
            sentence("cannot broadcast shape ", shape_text(a), " with shape ", shape_text(b), "."));
      out[k] = ea == 1 ? eb : ea;
    }
  }
  return out;
}

// True when `from` broadcasts to exactly `to` (one-directional, as in assignment).
template <std::size_t A, std::size_t B>
constexpr bool broadcasts_to(ExprShape<A> const& from, ExprShape<B> const& to) {
  if constexpr (A > B) {
    return false;
  } else {
    for (std::size_t k = 0; k != A; ++k) {
      index_t e = from[k], t = to[k + B - A];
      if (e != t && e != 1) return false;
    }
    return true;
  }
}

// Number of top-level modes of a tensor type (its rank must be known at compile time).
template <class T>
constexpr std::size_t tensor_rank() {
  using L = typename std::remove_cvref_t<T>::layout_type;
  using S = std::remove_cvref_t<decltype(std::declval<L const&>().shape())>;
  static_assert(!DynRank<S>,
                "tessel: expressions take tensors whose rank is known at compile time; this "
                "tensor's rank is only known at run time.");
  return static_cast<std::size_t>(decltype(rank(std::declval<L const&>()))::value);
}

// A tensor's mode extents, as an expression shape.
template <TensorType T>
ExprShape<tensor_rank<T>()> logical_shape(T const& t) {
  ExprShape<tensor_rank<T>()> out{};
  if constexpr (tensor_rank<T>() > 0) {
    auto extents = product_each(t.shape());
    std::size_t k = 0;
    for_each_leaf(extents, [&](auto e) { out[k++] = to_index(e); });
  }
  return out;
}

}  // namespace detail

}  // namespace tessel
