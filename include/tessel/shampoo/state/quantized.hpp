// Factor matrices stored in a narrower floating-point dtype (bf16, f16, f32 or f64) than the one
// the step computes in: a QuantizedTensorList holds the stored values, and dequantize_scope() gives
// the computation-dtype values for a scope and writes them back (rounding to nearest even) when
// the scope ends, as Distributed Shampoo's DequantizeQuantizedTensorListContext does. When the
// stored dtype is the computation dtype the scope hands out the stored values and copies nothing.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/float16.hpp"
#include "../../expr/element.hpp"
#include "../utils.hpp"

namespace tessel::shampoo {

// True for the dtypes factors may be stored in.
constexpr bool is_factor_dtype(DType d) {
  return d == DType::bf16 || d == DType::f16 || d == DType::f32 || d == DType::f64;
}

// f(U{}) with U the C++ type of a factor dtype (bf16, f16, f32, f64): the one dispatch from a
// factor's run-time dtype to its type.
// @pre is_factor_dtype(d) (validate() refuses other dtypes), else tessel::Error
template <class F>
decltype(auto) visit_factor_dtype(DType d, F&& f) {
  if (d == DType::bf16) return f(bfloat16{});
  if (d == DType::f16) return f(half{});
  if (d == DType::f32) return f(float{});
  if (d != DType::f64)
    tessel::detail::throw_error(tessel::detail::sentence(
        "factor matrices are stored as bf16, f16, f32 or f64, not ", dtype_name(d), "."));
  return f(double{});
}

namespace detail {

// Element i of a buffer of factor dtype d as a double (exact for every stored dtype).
inline double load_element(DType d, std::byte const* p, std::size_t i) {
  return visit_factor_dtype(d, [&](auto u) {
    using U = decltype(u);
    U v;
    std::memcpy(&v, p + sizeof(U) * i, sizeof(U));
    return static_cast<double>(tessel::load_element(v));
  });
}

// Rounds x to factor dtype d (to nearest even; half and bfloat16 go through float, as torch does
// for float32 sources) and stores it at element i.
template <class T>
void store_element(DType d, std::byte* p, std::size_t i, T x) {
  visit_factor_dtype(d, [&](auto u) {
    using U = decltype(u);
    U const v = tessel::store_element<U>(x);
    std::memcpy(p + sizeof(U) * i, &v, sizeof(U));
  });
}

}  // namespace detail

// One buffer of values stored as `dtype`, zero-initialized.
class QuantizedTensor {
 public:
  QuantizedTensor() = default;
  QuantizedTensor(DType dtype, index_t numel) : dtype_(dtype), numel_(numel) {
    if (!is_factor_dtype(dtype))
      tessel::detail::throw_error(tessel::detail::sentence(
          "quantized tensors are stored as bf16, f16, f32 or f64, not ", dtype_name(dtype), "."));
    if (numel < 0)
      tessel::detail::throw_error(
          tessel::detail::sentence("a quantized tensor cannot hold ", numel, " elements."));
    bytes_.assign(static_cast<std::size_t>(numel) * dtype_size(dtype), std::byte{0});
  }

  DType dtype() const noexcept { return dtype_; }
  index_t numel() const noexcept { return numel_; }
  std::span<std::byte> bytes() noexcept { return bytes_; }
  std::span<std::byte const> bytes() const noexcept { return bytes_; }

  // The stored values as T when T is the stored type; nullptr otherwise.
  template <class T>
  T* data_as() noexcept {
    return dtype_of_v<T> == dtype_ ? reinterpret_cast<T*>(bytes_.data()) : nullptr;
  }

  template <class T>
  void dequantize_into(std::span<T> out) const {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<T>(detail::load_element(dtype_, bytes_.data(), i));
  }
  template <class T>
  void quantize_from(std::span<T const> in) {
    for (std::size_t i = 0; i < in.size(); ++i)
      detail::store_element(dtype_, bytes_.data(), i, in[i]);
  }

 private:
  DType dtype_ = DType::f32;
  index_t numel_ = 0;
  std::vector<std::byte> bytes_;
};

// A list of quantized tensors viewed in the computation dtype T (float or double) between
// dequantize_() and quantize_().
template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double>
class QuantizedTensorList {
 public:
  explicit QuantizedTensorList(std::span<QuantizedTensor> tensors) : tensors_(tensors) {}

  std::size_t size() const noexcept { return tensors_.size(); }
  bool is_dequantized_stored() const noexcept { return stored_; }

  // Makes the T values available: the stored values themselves when their dtype is T, else
  // converted copies.
  void dequantize_() {
    values_.assign(tensors_.size(), {});
    copies_.assign(tensors_.size(), {});
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      if (T* direct = tensors_[i].template data_as<T>()) {
        values_[i] = std::span<T>(direct, static_cast<std::size_t>(tensors_[i].numel()));
      } else {
        copies_[i].resize(static_cast<std::size_t>(tensors_[i].numel()));
        tensors_[i].dequantize_into(std::span<T>(copies_[i]));
        values_[i] = copies_[i];
      }
    }
    stored_ = true;
  }

  // Writes converted copies back into their stored dtype and releases them.
  void quantize_() noexcept {
    if (!stored_) return;
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (!copies_[i].empty()) tensors_[i].quantize_from(std::span<T const>(copies_[i]));
    copies_.clear();
    values_.clear();
    stored_ = false;
  }

  // Tensor i in T. @pre is_dequantized_stored()
  std::span<T> dequantized_value(std::size_t i) const { return values_[i]; }

 private:
  std::span<QuantizedTensor> tensors_;
  std::vector<std::span<T>> values_;
  std::vector<std::vector<T>> copies_;
  bool stored_ = false;
};

namespace detail {
struct Dequantize {
  template <class L>
  void operator()(L& list) const {
    list.dequantize_();
  }
};
struct Quantize {
  template <class L>
  void operator()(L& list) const noexcept {
    list.quantize_();
  }
};
}  // namespace detail

// The list dequantized for the lifetime of the returned scope and written back when it ends.
template <class T>
auto dequantize_scope(QuantizedTensorList<T>& list) {
  return make_enter_exit_scope(list, detail::Dequantize{}, detail::Quantize{});
}

}  // namespace tessel::shampoo
