// tessel._tessel: the Python extension. A thin layer over the headers: arrays arrive through
// DLPack / the buffer protocol as nanobind ndarray views (never copied, never converted), become
// tessel tensor views over the caller's memory, and go to flce::forward. All validation of
// shapes, layouts, options and targets is tessel's own, so its sentences reach Python unchanged
// (tessel::Error -> ValueError). The binding only checks what tessel's types cannot see: an
// object's rank, device and dtype. Host only, float32 and float64 only (one instantiation each).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string_view.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "arrays.hpp"

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/flce/plan.hpp>

namespace nb = nanobind;

namespace {

using namespace tessel_python;

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

// A fresh C-contiguous NumPy array the binding owns until Python does; its elements are left for
// FLCE to write (every output is fully overwritten).
template <class T>
nb::ndarray<nb::numpy, T> new_array(std::initializer_list<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t e : shape) n *= e;
  T* data = new T[n == 0 ? 1 : n];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::ndarray<nb::numpy, T>(data, shape, owner);
}

// Which gradients to compute; each one left out is work and memory saved (a frozen LM head
// needs no (vocab, hidden) grad_weight). None: an evaluation pass.
struct WantedGradients {
  bool input = false;
  bool weight = false;
  bool bias = false;
};

template <class T>
nb::tuple run_linear_cross_entropy(InArray const& input, InArray const& weight,
                                   InArray const& target, InArray const& bias,
                                   tessel::flce::Options<T> options, InArray const& class_weights,
                                   InArray const& grad_output_rows, WantedGradients wanted) {
  DType const dtype = tessel::dtype_of_v<T>;
  check_array(weight, "weight", 2, "(vocab, hidden)", dtype, "input's");
  if (bias.is_valid()) {
    check_array(bias, "bias", 1, "(vocab)", dtype, "input's");
    options.bias = vector_view<T>(bias);
  }
  if (class_weights.is_valid()) {
    check_array(class_weights, "class_weights", 1, "(vocab)", dtype, "input's");
    options.class_weights = vector_view<T>(class_weights);
  }
  if (grad_output_rows.is_valid()) {
    check_array(grad_output_rows, "grad_output_rows", 1, "(rows)", dtype, "input's");
    options.grad_output_rows = vector_view<T>(grad_output_rows);
  }

  std::size_t const rows = input.shape(0), hidden = input.shape(1), vocab = weight.shape(0);
  bool const per_row = options.reduction == tessel::flce::Reduction::none;
  auto loss = per_row ? new_array<T>({rows}) : new_array<T>({});
  tessel::flce::Outputs<T> outputs{.loss = loss.data()};
  if (per_row) outputs.loss = tessel::make_tensor(loss.data(), tessel::make_shape(index_t(rows)));
  nb::object grad_input = nb::none(), grad_weight = nb::none(), grad_bias = nb::none();
  // Shaped like input and weight, so that a disagreement between those two is what tessel
  // reports.
  if (wanted.input) {
    auto dx = new_array<T>({rows, hidden});
    outputs.grad_input =
        tessel::make_tensor(dx.data(), tessel::make_shape(index_t(rows), index_t(hidden)));
    grad_input = nb::cast(dx);
  }
  if (wanted.weight) {
    auto dw = new_array<T>({vocab, weight.shape(1)});
    outputs.grad_weight = tessel::make_tensor(
        dw.data(), tessel::make_shape(index_t(vocab), index_t(weight.shape(1))));
    grad_weight = nb::cast(dw);
  }
  if (wanted.bias && bias.is_valid()) {
    auto db = new_array<T>({vocab});
    outputs.grad_bias = tessel::make_tensor(db.data(), tessel::make_shape(index_t(vocab)));
    grad_bias = nb::cast(db);
  }
  auto x = matrix_view<T>(input);
  auto w = matrix_view<T>(weight);
  auto y = vector_view<std::int64_t>(target);
  {
    // The views hold no Python objects; other Python threads (a DataLoader) run meanwhile.
    nb::gil_scoped_release released;
    tessel::flce::forward(x, w, y, options, outputs);
  }
  return nb::make_tuple(loss, grad_input, grad_weight, grad_bias);
}

nb::tuple linear_cross_entropy(InArray const& input, InArray const& weight, InArray const& target,
                               InArray const& bias, std::string_view reduction,
                               std::int64_t ignore_index, double label_smoothing,
                               double lse_square_scale, double softcap, double temperature,
                               InArray const& class_weights, InArray const& grad_output_rows,
                               bool grad_input, bool grad_weight, bool grad_bias) {
  WantedGradients const wanted{.input = grad_input, .weight = grad_weight, .bias = grad_bias};
  check_host(input, "input");
  check_rank(input, "input", 2, "(rows, hidden)");
  check_array(target, "target", 1, "(rows)", DType::i64, "the class indices'");
  auto options = [&]<class T>(std::type_identity<T>) {
    return tessel::flce::Options<T>{.reduction = tessel::flce::parse_reduction(reduction),
                                    .ignore_index = ignore_index,
                                    .label_smoothing = label_smoothing,
                                    .lse_square_scale = lse_square_scale,
                                    .softcap = softcap,
                                    .temperature = temperature};
  };
  std::optional<DType> const dtype = dtype_of(input);
  if (dtype == DType::f32)
    return run_linear_cross_entropy<float>(input, weight, target, bias,
                                           options(std::type_identity<float>{}), class_weights,
                                           grad_output_rows, wanted);
  if (dtype == DType::f64)
    return run_linear_cross_entropy<double>(input, weight, target, bias,
                                            options(std::type_identity<double>{}), class_weights,
                                            grad_output_rows, wanted);
  refuse(sentence("input has dtype ", dtype_text(input),
                  "; tessel's Python module computes on f32 (float32) and f64 (float64)."));
}

// The host plan of a call: chunk rows, chunk count and scratch bytes for the storage dtype.
nb::dict flce_host_plan(index_t bt, index_t hidden, index_t vocab, std::string_view dtype) {
  tessel::flce::FlcePlan const plan = tessel::flce::make_host_plan(bt, hidden, vocab);
  nb::dict d;
  d["bt"] = plan.bt;
  d["hidden"] = plan.hidden;
  d["vocab"] = plan.vocab;
  d["chunk_size"] = plan.chunk_size;
  d["num_chunks"] = plan.num_chunks;
  d["scratch_bytes"] = plan.scratch_bytes(tessel::parse_dtype(dtype), tessel::flce::Device::host);
  return d;
}

}  // namespace

NB_MODULE(_tessel, m) {
  m.doc() = "tessel's C++ core; use the tessel package (tessel.linear_cross_entropy, tessel.plan).";
  nb::register_exception_translator([](std::exception_ptr const& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (tessel::Error const& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("linear_cross_entropy", &linear_cross_entropy, nb::arg("input"), nb::arg("weight"),
        nb::arg("target"), nb::arg("bias").none(), nb::kw_only(), nb::arg("reduction"),
        nb::arg("ignore_index"), nb::arg("label_smoothing"), nb::arg("lse_square_scale"),
        nb::arg("softcap"), nb::arg("temperature"), nb::arg("class_weights").none(),
        nb::arg("grad_output_rows").none(), nb::arg("grad_input"), nb::arg("grad_weight"),
        nb::arg("grad_bias"),
        "(loss, grad_input, grad_weight, grad_bias) of flce::forward; see "
        "tessel.linear_cross_entropy.");
  m.def("flce_host_plan", &flce_host_plan, nb::arg("bt"), nb::arg("hidden"), nb::arg("vocab"),
        nb::arg("dtype"), "flce::make_host_plan as a dict; see tessel.plan.flce.");
  bind_shampoo(m);
}
