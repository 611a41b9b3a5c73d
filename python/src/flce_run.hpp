// The definition of run_linear_cross_entropy<T> (flce.hpp): the caller's arrays become tessel
// tensor views over their memory, with their strides, and go to flce::forward. Included only by
// the per-storage-type translation units (flce_f32.cpp, ...), each of which instantiates it once.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "arrays.hpp"
#include "flce.hpp"

#include <tessel/core/dtype.hpp>
#include <tessel/core/float16.hpp>
#include <tessel/flce/forward.hpp>

namespace tessel_python {

namespace flce_detail {

// Tessel views over the caller's memory, with the caller's strides (in elements). FLCE reads
// inputs without writing them; its Options and Outputs share one non-const element type, hence
// the const_cast.
template <class T>
auto matrix_view(InArray const& a) {
  auto* data = const_cast<T*>(static_cast<T const*>(a.data()));
  return tessel::make_tensor(
      data, tessel::make_layout(tessel::make_shape(static_cast<index_t>(a.shape(0)),
                                                   static_cast<index_t>(a.shape(1))),
                                tessel::make_stride(a.stride(0), a.stride(1))));
}
template <class T>
auto vector_view(InArray const& a) {
  auto* data = const_cast<T*>(static_cast<T const*>(a.data()));
  return tessel::make_tensor(
      data, tessel::make_layout(tessel::make_shape(static_cast<index_t>(a.shape(0))),
                                tessel::make_stride(a.stride(0))));
}

// The NumPy dtype an output of element type E is returned as: its own, except bfloat16, which
// NumPy lacks, as uint16 (its bits; tessel.torch views them as torch.bfloat16).
template <class E>
constexpr nb::dlpack::dtype numpy_dtype() {
  using Code = nb::dlpack::dtype_code;
  if constexpr (std::is_same_v<E, tessel::half>) return {std::uint8_t(Code::Float), 16, 1};
  if constexpr (std::is_same_v<E, tessel::bfloat16>) return {std::uint8_t(Code::UInt), 16, 1};
  return nb::dtype<E>();
}

// A fresh C-contiguous NumPy array of element type E the binding owns until Python does; its
// elements are left for FLCE to write (every output is fully overwritten).
template <class E>
struct NewArray {
  nb::ndarray<nb::numpy> array;
  E* data;
};
template <class E>
NewArray<E> new_array(std::initializer_list<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t e : shape) n *= e;
  E* data = new E[n == 0 ? 1 : n];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<E*>(p); });
  return {nb::ndarray<nb::numpy>(data, shape, owner, {}, numpy_dtype<E>()), data};
}

template <class T, class Y>
nb::tuple run(FlceCall const& call) {
  using C = tessel::flce::accum_t<T>;
  DType const dtype = tessel::dtype_of_v<T>;
  tessel::flce::Options<T> options;
  call.scalars.apply_to(options);
  check_array(call.weight, "weight", 2, "(vocab, hidden)", dtype, "input's");
  if (call.bias.is_valid()) {
    check_array(call.bias, "bias", 1, "(vocab)", dtype, "input's");
    options.bias = vector_view<T>(call.bias);
  }
  if (call.class_weights.is_valid()) {
    check_array(call.class_weights, "class_weights", 1, "(vocab)", dtype, "input's");
    options.class_weights = vector_view<T>(call.class_weights);
  }
  if (call.grad_output_rows.is_valid()) {
    check_array(call.grad_output_rows, "grad_output_rows", 1, "(rows)", tessel::dtype_of_v<C>,
                "the computation's");
    options.grad_output_rows = vector_view<C>(call.grad_output_rows);
  }
  // Either alone is tessel's to refuse ("go together"); their shapes and values too.
  if (call.soft_target_indices.is_valid()) {
    check_array(call.soft_target_indices, "soft_target_indices", 2, "(rows, K)", DType::i64,
                "the class indices'");
    options.soft_target_indices = matrix_view<index_t>(call.soft_target_indices);
  }
  if (call.soft_target_probs.is_valid()) {
    check_array(call.soft_target_probs, "soft_target_probs", 2, "(rows, K)", tessel::dtype_of_v<C>,
                "the computation's");
    options.soft_target_probs = matrix_view<C>(call.soft_target_probs);
  }

  std::size_t const rows = call.input.shape(0), hidden = call.input.shape(1),
                    vocab = call.weight.shape(0);
  bool const per_row = options.reduction == tessel::flce::Reduction::none;
  tessel::flce::Outputs<T> outputs;
  // The loss and what is reduced like it (z_loss, accuracy): 0-d for mean and sum, (rows) for
  // none.
  auto const loss_like = [&](auto& arg) {
    using E = std::remove_pointer_t<decltype(arg.data)>;
    auto a = per_row ? new_array<E>({rows}) : new_array<E>({});
    if (per_row)
      arg = tessel::make_tensor(a.data, tessel::make_shape(index_t(rows)));
    else
      arg = a.data;
    return a.array;
  };
  // Per row whatever the reduction (lse, target_logprob, entropy, argmax).
  auto const row_wise = [&](auto& arg) {
    using E = std::remove_pointer_t<decltype(arg.data)>;
    auto a = new_array<E>({rows});
    arg = tessel::make_tensor(a.data, tessel::make_shape(index_t(rows)));
    return a.array;
  };
  auto const loss = loss_like(outputs.loss);
  nb::dict extras;
  if (call.extras.z_loss) extras["z_loss"] = loss_like(outputs.z_loss);
  if (call.extras.lse) extras["lse"] = row_wise(outputs.lse);
  if (call.extras.target_logprob) extras["target_logprob"] = row_wise(outputs.target_logprob);
  if (call.extras.entropy) extras["entropy"] = row_wise(outputs.entropy);
  if (call.extras.argmax) extras["argmax"] = row_wise(outputs.argmax);
  if (call.extras.accuracy) extras["accuracy"] = loss_like(outputs.accuracy);
  nb::object grad_input = nb::none(), grad_weight = nb::none(), grad_bias = nb::none();
  // Shaped like input and weight, so that a disagreement between those two is what tessel
  // reports.
  if (call.grad_input) {
    auto dx = new_array<T>({rows, hidden});
    outputs.grad_input =
        tessel::make_tensor(dx.data, tessel::make_shape(index_t(rows), index_t(hidden)));
    grad_input = nb::cast(dx.array);
  }
  if (call.grad_weight) {
    auto dw = new_array<C>({vocab, call.weight.shape(1)});
    outputs.grad_weight = tessel::make_tensor(
        dw.data, tessel::make_shape(index_t(vocab), index_t(call.weight.shape(1))));
    grad_weight = nb::cast(dw.array);
  }
  if (call.grad_bias && call.bias.is_valid()) {
    auto db = new_array<C>({vocab});
    outputs.grad_bias = tessel::make_tensor(db.data, tessel::make_shape(index_t(vocab)));
    grad_bias = nb::cast(db.array);
  }
  auto x = matrix_view<T>(call.input);
  auto w = matrix_view<T>(call.weight);
  auto y = vector_view<Y>(call.target);
  {
    // The views hold no Python objects; other Python threads (a DataLoader) run meanwhile.
    nb::gil_scoped_release released;
    tessel::flce::forward(x, w, y, options, outputs);
  }
  return nb::make_tuple(loss, grad_input, grad_weight, grad_bias, extras);
}

}  // namespace flce_detail

template <class T>
nb::tuple run_linear_cross_entropy(FlceCall const& call) {
  if (dtype_of(call.target) == DType::i32) return flce_detail::run<T, std::int32_t>(call);
  return flce_detail::run<T, std::int64_t>(call);
}

}  // namespace tessel_python
