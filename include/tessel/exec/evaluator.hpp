// Bound expressions (evaluators): what a kernel body reads. An evaluator is positioned at one
// point of a loop nest; e(i) is the element at offset i along the innermost loop mode, and
// advance(m, n) moves it n steps along loop mode m. Leaves hold a pointer and per-mode strides, so
// the hot loop does no index arithmetic beyond i * stride. Trivially copyable; host and device.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "../core/tuple.hpp"
#include "../expr/element.hpp"

namespace tessel::exec {

// A tensor operand over a loop nest of at most K modes.
template <class T, std::size_t K>
struct LeafEval {
  using element_type = T;
  using value_type = compute_t<T>;

  T const* ptr = nullptr;
  index_t inner = 0;  // stride along the innermost loop mode
  index_t stride[K] = {};

  TESSEL_HOST_DEVICE value_type operator()(index_t i) const { return load_element(ptr[i * inner]); }
  TESSEL_HOST_DEVICE void advance(index_t m, index_t n) { ptr += n * stride[m]; }
  template <class F>
  void visit_leaves(F&& f) {
    f(*this);
  }
};

// A scalar operand.
template <class T>
struct ScalarEval {
  using value_type = T;
  T value;

  TESSEL_HOST_DEVICE constexpr T operator()(index_t) const { return value; }
  TESSEL_HOST_DEVICE constexpr void advance(index_t, index_t) {}
  template <class F>
  void visit_leaves(F&&) {}
};

// op applied to the children's elements.
template <class Op, class... Cs>
struct MapEval {
  using value_type =
      std::remove_cvref_t<std::invoke_result_t<Op const&, typename Cs::value_type...>>;
  using indices = std::index_sequence_for<Cs...>;
  static constexpr std::size_t arity = sizeof...(Cs);

  Op op;
  tuple<Cs...> children;

  TESSEL_HOST_DEVICE value_type operator()(index_t i) const { return eval(i, indices{}); }
  TESSEL_HOST_DEVICE void advance(index_t m, index_t n) { advance_all(m, n, indices{}); }
  template <class F>
  void visit_leaves(F&& f) {
    visit_all(f, indices{});
  }

 private:
  template <std::size_t... I>
  TESSEL_HOST_DEVICE value_type eval(index_t i, std::index_sequence<I...>) const {
    return op(get<I>(children)(i)...);
  }
  template <std::size_t... I>
  TESSEL_HOST_DEVICE void advance_all(index_t m, index_t n, std::index_sequence<I...>) {
    (get<I>(children).advance(m, n), ...);
  }
  template <class F, std::size_t... I>
  void visit_all(F& f, std::index_sequence<I...>) {
    (get<I>(children).visit_leaves(f), ...);
  }
};

// The destination of an assignment: dst.store(i, v) writes v, rounded to T, at offset i along the
// innermost loop mode.
template <class T, std::size_t K>
struct DstEval {
  using element_type = T;

  T* ptr = nullptr;
  index_t inner = 0;
  index_t stride[K] = {};

  template <class V>
  TESSEL_HOST_DEVICE void store(index_t i, V v) const {
    ptr[i * inner] = store_element<T>(v);
  }
  TESSEL_HOST_DEVICE void advance(index_t m, index_t n) { ptr += n * stride[m]; }
};

// ---- evaluator kinds (what a compile-time nest folds its strides into) ----

// An evaluator that holds strides: a tensor leaf or a destination.
template <class E>
inline constexpr bool is_leaf_eval_v = false;
template <class T, std::size_t K>
inline constexpr bool is_leaf_eval_v<LeafEval<T, K>> = true;
template <class T, std::size_t K>
inline constexpr bool is_leaf_eval_v<DstEval<T, K>> = true;

template <class E>
inline constexpr bool is_map_eval_v = false;
template <class Op, class... Cs>
inline constexpr bool is_map_eval_v<MapEval<Op, Cs...>> = true;

// Tensor leaves under E: the operands it reads (1, 2, ... of the nest, in binding order).
template <class E>
inline constexpr std::size_t eval_leaves_v = is_leaf_eval_v<E> ? 1 : 0;
template <class Op, class... Cs>
inline constexpr std::size_t eval_leaves_v<MapEval<Op, Cs...>> = (std::size_t{0} + ... +
                                                                  eval_leaves_v<Cs>);

}  // namespace tessel::exec
