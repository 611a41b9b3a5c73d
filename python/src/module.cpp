// tessel._tessel: the Python extension. A thin layer over the headers: arrays arrive through
// DLPack / the buffer protocol as nanobind ndarray views (never copied, never converted), become
// tessel tensor views over the caller's memory, and go to flce::forward. All validation of
// shapes, layouts, options and targets is tessel's own, so its sentences reach Python unchanged
// (tessel::Error -> ValueError). The binding only checks what tessel's types cannot see: an
// object's rank, device and dtype. Host only; f32, f64, f16 and bf16 storage, each instantiated in
// its own translation unit (flce.hpp), with i64 or i32 targets.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arrays.hpp"
#include "flce.hpp"

#include <tessel/core/dtype.hpp>
#include <tessel/core/error.hpp>
#include <tessel/core/float16.hpp>
#include <tessel/flce/plan.hpp>

namespace nb = nanobind;

namespace {

using namespace tessel_python;

// The extras named by `names` (flce::Outputs' field names, in any order, repeats allowed).
// @post an unknown name is refused with a sentence naming it and the known ones (ValueError)
FlceExtras parse_extras(std::vector<std::string> const& names) {
  FlceExtras extras;
  for (std::string const& name : names) {
    if (name == "z_loss")
      extras.z_loss = true;
    else if (name == "lse")
      extras.lse = true;
    else if (name == "target_logprob")
      extras.target_logprob = true;
    else if (name == "entropy")
      extras.entropy = true;
    else if (name == "argmax")
      extras.argmax = true;
    else if (name == "accuracy")
      extras.accuracy = true;
    else
      refuse(sentence("return_extras names '", name,
                      "', which is not an output of tessel's FLCE; the extras are z_loss, lse, "
                      "target_logprob, entropy, argmax and accuracy."));
  }
  return extras;
}

nb::tuple linear_cross_entropy(InArray const& input, InArray const& weight, InArray const& target,
                               InArray const& bias, std::string_view reduction,
                               std::int64_t ignore_index, double label_smoothing,
                               double lse_square_scale, double softcap, double temperature,
                               double entropy_bonus, std::int64_t shift_sequence_length,
                               InArray const& class_weights, InArray const& grad_output_rows,
                               InArray const& soft_target_indices, InArray const& soft_target_probs,
                               double soft_target_weight, bool grad_input, bool grad_weight,
                               bool grad_bias, std::vector<std::string> const& extras) {
  check_host(input, "input");
  check_rank(input, "input", 2, "(rows, hidden)");
  check_host(target, "target");
  check_rank(target, "target", 1, "(rows)");
  std::optional<DType> const target_dtype = dtype_of(target);
  if (target_dtype != DType::i64 && target_dtype != DType::i32)
    refuse(sentence("target has dtype ", dtype_text(target),
                    " but class indices must be i64 (int64) or i32 (int32)."));
  FlceCall const call{.input = input,
                      .weight = weight,
                      .target = target,
                      .bias = bias,
                      .class_weights = class_weights,
                      .grad_output_rows = grad_output_rows,
                      .soft_target_indices = soft_target_indices,
                      .soft_target_probs = soft_target_probs,
                      .reduction = tessel::flce::parse_reduction(reduction),
                      .ignore_index = ignore_index,
                      .shift_sequence_length = shift_sequence_length,
                      .label_smoothing = label_smoothing,
                      .lse_square_scale = lse_square_scale,
                      .softcap = softcap,
                      .temperature = temperature,
                      .entropy_bonus = entropy_bonus,
                      .soft_target_weight = soft_target_weight,
                      .grad_input = grad_input,
                      .grad_weight = grad_weight,
                      .grad_bias = grad_bias,
                      .extras = parse_extras(extras)};
  // One translation unit per storage type (flce.hpp); no fallback type.
  std::optional<DType> const dtype = dtype_of(input);
  if (dtype == DType::f32) return run_linear_cross_entropy<float>(call);
  if (dtype == DType::f64) return run_linear_cross_entropy<double>(call);
  if (dtype == DType::f16) return run_linear_cross_entropy<tessel::half>(call);
  if (dtype == DType::bf16) return run_linear_cross_entropy<tessel::bfloat16>(call);
  refuse(sentence("input has dtype ", dtype_text(input),
                  "; tessel's FLCE computes on f32 (float32), f64 (float64), f16 (float16) and "
                  "bf16 (bfloat16)."));
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
        nb::arg("softcap"), nb::arg("temperature"), nb::arg("entropy_bonus"),
        nb::arg("shift_sequence_length"), nb::arg("class_weights").none(),
        nb::arg("grad_output_rows").none(), nb::arg("soft_target_indices").none(),
        nb::arg("soft_target_probs").none(), nb::arg("soft_target_weight"), nb::arg("grad_input"),
        nb::arg("grad_weight"), nb::arg("grad_bias"), nb::arg("extras"),
        "(loss, grad_input, grad_weight, grad_bias, {extra name: array}) of flce::forward; see "
        "tessel.linear_cross_entropy.");
  m.def("flce_host_plan", &flce_host_plan, nb::arg("bt"), nb::arg("hidden"), nb::arg("vocab"),
        nb::arg("dtype"), "flce::make_host_plan as a dict; see tessel.plan.flce.");
  bind_shampoo(m);
}
