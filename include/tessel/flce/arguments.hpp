// VectorArg and MatrixArg: the run-time view of a 1-D or 2-D tessel tensor (pointer, extents,
// strides) that FLCE's optional inputs and outputs are passed as. Any flat rank-1 / rank-2 tensor
// view of the right element type and memory space converts implicitly, so callers write
// `{.loss = loss, .grad_input = dx}`; a default-constructed one means "not given".
#pragma once

#include <array>
#include <cstddef>
#include <ranges>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../core/int_tuple.hpp"
#include "../tensor/memory_space.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"

namespace tessel::flce {

namespace detail {

// The rank of a tensor whose shape is flat (every mode an integer); -1 otherwise.
template <class X>
consteval int flat_rank() {
  using S = std::remove_cvref_t<decltype(std::declval<X const&>().shape())>;
  if constexpr (Integer<S>) {
    return 1;
  } else if constexpr (DynRank<S> || !FlatIntTuple<S>) {
    return -1;
  } else {
    return static_cast<int>(tuple_size_v<S>);
  }
}

// Extent and stride of mode I of a flat tensor, as index_t.
template <std::size_t I, class X>
index_t extent_of(X const& t) {
  if constexpr (Integer<std::remove_cvref_t<decltype(t.shape())>>)
    return to_index(t.shape());
  else
    return to_index(get<I>(t.shape()));
}
template <std::size_t I, class X>
index_t stride_of(X const& t) {
  if constexpr (Integer<std::remove_cvref_t<decltype(t.stride())>>)
    return to_index(t.stride());
  else
    return to_index(get<I>(t.stride()));
}

}  // namespace detail

namespace detail {
template <class X, int R, class T, class Space>
consteval bool is_tensor_argument() {
  using U = std::remove_cvref_t<X>;
  if constexpr (!TensorType<U>) {
    return false;
  } else {
    return flat_rank<U>() == R && std::is_convertible_v<typename U::pointer, T*> &&
           std::is_same_v<typename U::space, Space>;
  }
}
}  // namespace detail

// A flat rank-R tessel tensor whose elements can be used as T (T may add const) in Space.
template <class X, int R, class T, class Space>
concept TensorArgument = detail::is_tensor_argument<X, R, T, Space>();

// A contiguous range of T the caller keeps alive: a std::vector or std::array lvalue, a span.
template <class R, class T>
concept BorrowedElements =
    std::ranges::contiguous_range<R> && !TensorType<std::remove_cvref_t<R>> &&
    (std::is_lvalue_reference_v<R> || std::ranges::borrowed_range<R>)&&std::is_convertible_v<
        decltype(std::ranges::data(std::declval<R&>())), T*>;

// What a VectorArg<T, Space> is made from (besides {}, "not given").
template <class X, class T, class Space>
concept VectorArgument =
    TensorArgument<X, 1, T, Space> || std::is_convertible_v<X, T*> || BorrowedElements<X, T>;

namespace detail {
// The diagnostic of an argument of the wrong kind: a template that is instantiated only when such
// a constructor is chosen, so that the compiler prints the one sentence, with X (what was given)
// and T (the element type wanted) in the instantiation context, rather than a list of candidates.
template <class X>
inline constexpr bool refused_argument = false;
}  // namespace detail

// (size) elements at data[i * stride].
template <class T, MemorySpace Space = HostSpace>
struct VectorArg {
  T* data = nullptr;
  index_t size = 0;
  index_t stride = 1;
  bool present = false;

  constexpr VectorArg() = default;

  template <class X>
  requires TensorArgument<X, 1, T, Space> VectorArg(X&& t)  // NOLINT: implicit on purpose
      : data(t.data()),
        size(detail::extent_of<0>(t)),
        stride(detail::stride_of<0>(t)),
        present(true) {
    tessel::detail::refuse_owning_temporary<X>();
  }

  // What users write for a scalar output (`.loss = &loss`): one element at p; a null pointer is
  // an absent argument.
  constexpr VectorArg(T* p) : data(p), size(p ? 1 : 0), present(p != nullptr) {}  // NOLINT

  // A contiguous range the caller keeps alive (a std::vector or std::array lvalue, a std::span):
  // its elements, stride 1. In Space, like every argument. A temporary container is refused (it
  // would dangle); a temporary span is fine (it borrows).
  template <class R>
  requires BorrowedElements<R, T> VectorArg(R&& r)  // NOLINT: implicit on purpose
      : data(std::ranges::data(r)),
        size(static_cast<index_t>(std::ranges::size(r))),
        present(true) {}

  // Anything else: one sentence saying what the field takes.
  template <class X>
  requires(!VectorArgument<X, T, Space>) VectorArg(X&&) {  // NOLINT: implicit on purpose
    static_assert(detail::refused_argument<X>,
                  "tessel::flce: this vector argument (loss, z_loss, grad_bias, bias, "
                  "class_weights, grad_output_rows) takes a rank-1 tessel tensor of T in the "
                  "call's memory space, a T* (one element), or a contiguous range of T the caller "
                  "keeps alive (a std::vector or std::array variable, a std::span); T is the "
                  "VectorArg's element type, X what was given (see 'with X = ..., T = ...').");
  }

  TESSEL_HOST_DEVICE constexpr T& operator[](index_t i) const { return data[i * stride]; }
};

// (rows, cols) elements at data[i * row_stride + j * col_stride].
template <class T, MemorySpace Space = HostSpace>
struct MatrixArg {
  T* data = nullptr;
  index_t rows = 0;
  index_t cols = 0;
  index_t row_stride = 0;
  index_t col_stride = 1;
  bool present = false;

  constexpr MatrixArg() = default;

  template <class X>
  requires TensorArgument<X, 2, T, Space> MatrixArg(X&& t)  // NOLINT: implicit on purpose
      : data(t.data()),
        rows(detail::extent_of<0>(t)),
        cols(detail::extent_of<1>(t)),
        row_stride(detail::stride_of<0>(t)),
        col_stride(detail::stride_of<1>(t)),
        present(true) {
    tessel::detail::refuse_owning_temporary<X>();
  }

  // Anything else: one sentence saying what the field takes.
  template <class X>
  requires(!TensorArgument<X, 2, T, Space>) MatrixArg(X&&) {  // NOLINT: implicit on purpose
    static_assert(detail::refused_argument<X>,
                  "tessel::flce: this matrix argument (input, weight, grad_input, grad_weight) "
                  "takes a rank-2 tessel tensor with a flat shape, of T, in the call's memory "
                  "space (make_tensor(ptr, make_shape(rows, cols)) over a std::vector's data, a "
                  "view, a slice); T is the MatrixArg's element type, X what was given (see "
                  "'with X = ..., T = ...').");
  }

  // The same elements, read-only.
  constexpr MatrixArg<T const, Space> as_const() const {
    MatrixArg<T const, Space> m;
    m.data = data;
    m.rows = rows;
    m.cols = cols;
    m.row_stride = row_stride;
    m.col_stride = col_stride;
    m.present = present;
    return m;
  }

  TESSEL_HOST_DEVICE constexpr T& operator()(index_t i, index_t j) const {
    return data[i * row_stride + j * col_stride];
  }
  TESSEL_HOST_DEVICE constexpr T* row(index_t i) const { return data + i * row_stride; }
};

}  // namespace tessel::flce
