// View identity (sparsekit View parity): two tensors are the same view when they start at the same
// element and have the same shape and strides, by value. same_view and hash_view say so, and
// std::equal_to / std::hash specializations make any tensor type a key of unordered containers.
//
// There is deliberately no operator== on tensors: as in NumPy, PyTorch, Eigen and MatX, `a == b`
// between tensors belongs to the expression layer (an elementwise comparison), and an identity
// operator== here would silently win overload resolution for tensor == tensor only.
#pragma once

#include <cstddef>
#include <functional>
#include <type_traits>

#include "../core/int_tuple.hpp"
#include "tensor.hpp"

namespace tessel {

// True when a and b view the same elements the same way: same element type (ignoring const), same
// memory space, same first element, and equal shapes and strides by value (a static Int<4> equals
// a run-time 4; a hierarchical mode never equals a flat one). An owning tensor compares as its
// view, so same_view(owner, owner.view()) holds.
template <TensorType A, TensorType B>
constexpr bool same_view(A const& a, B const& b) {
  using An = std::remove_cvref_t<A>;
  using Bn = std::remove_cvref_t<B>;
  if constexpr (!std::is_same_v<typename An::value_type, typename Bn::value_type> ||
                !std::is_same_v<typename An::space, typename Bn::space>) {
    return false;
  } else {
    return static_cast<void const*>(a.data()) == static_cast<void const*>(b.data()) &&
           equal(a.shape(), b.shape()) && equal(a.stride(), b.stride());
  }
}

// A hash consistent with same_view: same_view(a, b) implies hash_view(a) == hash_view(b).
template <TensorType T>
std::size_t hash_view(T const& t) noexcept {
  std::size_t h = std::hash<void const*>{}(static_cast<void const*>(t.data()));
  auto mix = [&](index_t v) {
    // boost::hash_combine's mixing step; shapes and strides are small integers.
    h ^= std::hash<index_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  for_each_leaf(t.shape(), [&](auto v) { mix(to_index(v)); });
  for_each_leaf(t.stride(), [&](auto v) { mix(to_index(v)); });
  return h;
}

}  // namespace tessel

// std::unordered_map<View, ...> works with the default hasher and key equality.
template <class E, class L>
struct std::hash<tessel::Tensor<E, L>> {
  std::size_t operator()(tessel::Tensor<E, L> const& t) const noexcept {
    return tessel::hash_view(t);
  }
};

template <class E, class L>
struct std::equal_to<tessel::Tensor<E, L>> {
  constexpr bool operator()(tessel::Tensor<E, L> const& a, tessel::Tensor<E, L> const& b) const {
    return tessel::same_view(a, b);
  }
};
